/* mpvis-label: request_lifecycle ; nprocs: 3
 * Rank 0 collects from ranks 1 and 2 through two persistent receives and
 * MPI_Startall/MPI_Waitall, then frees only the first request.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, v[2];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Request r[2];
        MPI_Recv_init(&v[0], 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &r[0]);
        MPI_Recv_init(&v[1], 1, MPI_INT, 2, 0, MPI_COMM_WORLD, &r[1]);
        MPI_Startall(2, r);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        MPI_Request_free(&r[0]);
    } else {
        MPI_Send(&rank, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
