/* mpvis-label: correct ; nprocs: 3
 * MPI_Ibarrier, MPI_Iallreduce and MPI_Ibcast in the same order on every
 * rank, completed together with MPI_Waitall.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, a, b = 0, c = 0;
    MPI_Request r[3];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    a = rank;
    if (rank == 0)
        c = 11;
    MPI_Ibarrier(MPI_COMM_WORLD, &r[0]);
    MPI_Iallreduce(&a, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[1]);
    MPI_Ibcast(&c, 1, MPI_INT, 0, MPI_COMM_WORLD, &r[2]);
    MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
    MPI_Finalize();
    return 0;
}
