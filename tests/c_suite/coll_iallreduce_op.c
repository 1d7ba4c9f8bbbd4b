/* mpvis-label: collective_mismatch ; nprocs: 2
 * Nonblocking MPI_Iallreduce with MPI_SUM on rank 0 and MPI_MAX on rank 1.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, a, b = 0;
    MPI_Request r;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    a = rank + 1;
    MPI_Iallreduce(&a, &b, 1, MPI_INT, rank == 0 ? MPI_SUM : MPI_MAX, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
