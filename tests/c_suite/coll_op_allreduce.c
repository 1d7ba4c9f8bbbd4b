/* mpvis-label: collective_mismatch ; nprocs: 2
 * MPI_Allreduce with MPI_SUM on rank 0 and MPI_PROD on rank 1.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, a, b = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    a = rank + 2;
    MPI_Allreduce(&a, &b, 1, MPI_INT, rank == 0 ? MPI_SUM : MPI_PROD, MPI_COMM_WORLD);
    printf("%d\n", b);
    MPI_Finalize();
    return 0;
}
