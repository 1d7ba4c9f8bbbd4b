/* mpvis-label: request_lifecycle ; nprocs: 2
 * Rank 0 tests its MPI_Irecv once, before the sender has sent, and then
 * forgets the request; the message arrives later and is never delivered.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, v = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Request r;
        int flag = 0;
        MPI_Irecv(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &r);
        MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        v = 1;
        MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
