/* mpvis-label: collective_mismatch ; nprocs: 2
 * MPI_Reduce_scatter_block with MPI_SUM on rank 0 and MPI_MIN on rank 1.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, in[2] = {1, 2}, out = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Reduce_scatter_block(in, &out, 1, MPI_INT, rank == 0 ? MPI_SUM : MPI_MIN,
                             MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
