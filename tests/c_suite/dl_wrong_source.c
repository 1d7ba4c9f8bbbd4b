/* mpvis-label: deadlock ; nprocs: 3
 * Rank 2 waits for a message from rank 1, but rank 1 sends to rank 0 only;
 * rank 2 blocks while the others finish.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, v = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1)
        MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    else if (rank == 0)
        MPI_Recv(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
        MPI_Recv(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
