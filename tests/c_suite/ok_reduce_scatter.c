/* mpvis-label: correct ; nprocs: 3
 * MPI_Reduce_scatter with counts {1,2,...} and MPI_Reduce_scatter_block.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int counts[8], in[64], out[8], total = 0;
    for (int i = 0; i < size; i++) {
        counts[i] = i + 1;
        total += counts[i];
    }
    for (int i = 0; i < total; i++)
        in[i] = rank;
    MPI_Reduce_scatter(in, out, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce_scatter_block(in, out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
