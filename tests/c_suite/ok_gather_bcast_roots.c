/* mpvis-label: correct ; nprocs: 3
 * A sequence of rooted collectives whose root changes every iteration, the
 * same on all ranks: MPI_Bcast, MPI_Reduce, MPI_Gather, MPI_Scatter.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, size, v, s, all[8];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int root = 0; root < size; root++) {
        v = rank;
        MPI_Bcast(&v, 1, MPI_INT, root, MPI_COMM_WORLD);
        MPI_Reduce(&v, &s, 1, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
        MPI_Gather(&v, 1, MPI_INT, all, 1, MPI_INT, root, MPI_COMM_WORLD);
        MPI_Scatter(all, 1, MPI_INT, &v, 1, MPI_INT, root, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
