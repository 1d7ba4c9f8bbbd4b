/* mpvis-label: request_lifecycle ; nprocs: 2
 * Rank 0's synchronous MPI_Issend is received by rank 1 but never completed
 * on rank 0.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, v = 8;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Request r;
        MPI_Issend(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &r);
    } else {
        MPI_Recv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
