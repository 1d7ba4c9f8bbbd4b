/* mpvis-label: collective_mismatch ; nprocs: 4
 * In one of the two communicators made by MPI_Comm_split, the members pass
 * different roots to MPI_Bcast (the other group is consistent).
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, lrank, v;
    MPI_Comm half;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_rank(half, &lrank);
    v = rank;
    int root = (rank % 2 == 1) ? lrank : 0; /* odd group: each names itself */
    MPI_Bcast(&v, 1, MPI_INT, root, half);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return 0;
}
