/* mpvis-label: correct ; nprocs: 2
 * Nonblocking exchange completed by polling MPI_Testall, and a single request
 * polled with MPI_Test.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, a, b, c = 0, flag = 0;
    MPI_Request r[2], q;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    a = rank;
    MPI_Irecv(&b, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(&a, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD, &r[1]);
    while (!flag)
        MPI_Testall(2, r, &flag, MPI_STATUSES_IGNORE);
    flag = 0;
    if (rank == 0) {
        MPI_Irecv(&c, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, &q);
        while (!flag)
            MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
    } else {
        MPI_Send(&a, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
