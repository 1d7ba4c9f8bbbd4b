/* mpvis-label: request_lifecycle ; nprocs: 2
 * Rank 0 creates a persistent MPI_Ssend_init request it never starts nor
 * frees (it sends with MPI_Send instead).
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, v = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Request r;
        MPI_Ssend_init(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &r);
        MPI_Send(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
    } else {
        MPI_Recv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
