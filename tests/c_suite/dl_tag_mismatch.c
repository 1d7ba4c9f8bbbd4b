/* mpvis-label: deadlock ; nprocs: 2
 * Rank 0 sends with tag 1, rank 1 waits for tag 2: the receive never matches.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, v = 5;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        MPI_Send(&v, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
    else
        MPI_Recv(&v, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
