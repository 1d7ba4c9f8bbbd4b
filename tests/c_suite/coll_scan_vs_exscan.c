/* mpvis-label: collective_mismatch ; nprocs: 2
 * Rank 0 calls MPI_Scan, rank 1 MPI_Exscan: different collectives.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, a, b = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    a = rank + 1;
    if (rank == 0)
        MPI_Scan(&a, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    else
        MPI_Exscan(&a, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
