/* mpvis-label: correct ; nprocs: 4
 * Looks like a root mismatch, is not: MPI_Comm_split by parity, and the two
 * groups broadcast from different roots, each group consistently.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, lsize, v;
    MPI_Comm half;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_size(half, &lsize);
    v = rank;
    MPI_Bcast(&v, 1, MPI_INT, rank % 2 == 0 ? 0 : lsize - 1, half);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return 0;
}
