/* mpvis-label: collective_mismatch ; nprocs: 2
 * Rank 0 calls MPI_Barrier on a duplicate of MPI_COMM_WORLD, rank 1 on
 * MPI_COMM_WORLD itself: the two barriers never meet.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank;
    MPI_Comm dup;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Barrier(rank == 0 ? dup : MPI_COMM_WORLD);
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return 0;
}
