/* mpvis-label: collective_mismatch ; nprocs: 2
 * MPI_Allreduce of 4 ints on rank 0 and of 2 ints on rank 1.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, a[4] = {1, 2, 3, 4}, b[4];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(a, b, rank == 0 ? 4 : 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
