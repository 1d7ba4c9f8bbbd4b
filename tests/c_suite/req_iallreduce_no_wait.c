/* mpvis-label: request_lifecycle ; nprocs: 3
 * MPI_Iallreduce started on every rank; only rank 0 waits for it.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, a, b = 0;
    MPI_Request r;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    a = rank;
    MPI_Iallreduce(&a, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
    if (rank == 0)
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
