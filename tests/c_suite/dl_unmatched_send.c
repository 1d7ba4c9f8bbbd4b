/* mpvis-label: deadlock ; nprocs: 2
 * Rank 0 sends a message rank 1 never receives; buffering hides it at run
 * time (a lost message; with synchronous sends rank 0 would block forever).
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, v = 3;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        MPI_Send(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
