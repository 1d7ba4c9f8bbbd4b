/* mpvis-label: collective_mismatch ; nprocs: 3
 * MPI_Bcast with root 0 on ranks 0 and 1 but root 1 on rank 2.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, v;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    v = rank;
    MPI_Bcast(&v, 1, MPI_INT, rank == 2 ? 1 : 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
