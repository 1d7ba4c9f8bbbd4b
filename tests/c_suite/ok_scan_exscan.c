/* mpvis-label: correct ; nprocs: 3
 * MPI_Scan and MPI_Exscan, in the same order with the same op on all ranks.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, a, s = 0, e = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    a = rank + 1;
    MPI_Scan(&a, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Exscan(&a, &e, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
