/* mpvis-label: collective_mismatch ; nprocs: 3
 * The last rank calls MPI_Allreduce where the others call MPI_Reduce.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, size, a, b = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    a = rank;
    if (rank == size - 1)
        MPI_Allreduce(&a, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    else
        MPI_Reduce(&a, &b, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
