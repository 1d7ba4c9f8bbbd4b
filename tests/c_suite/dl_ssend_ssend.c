/* mpvis-label: deadlock ; nprocs: 2
 * Both ranks MPI_Ssend first: a synchronous send completes only once matched,
 * so both block.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, a, b;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    a = rank;
    MPI_Ssend(&a, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD);
    MPI_Recv(&b, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
