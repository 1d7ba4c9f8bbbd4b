/* mpvis-label: collective_mismatch ; nprocs: 3
 * MPI_Reduce to rank 0 with MPI_MAX on rank 2 and MPI_MIN elsewhere.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, a, b = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    a = rank;
    MPI_Reduce(&a, &b, 1, MPI_INT, rank == 2 ? MPI_MAX : MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
