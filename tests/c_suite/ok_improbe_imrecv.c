/* mpvis-label: correct ; nprocs: 2
 * MPI_Improbe polled on a named source, then MPI_Imrecv and MPI_Wait.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, v = 0, flag = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1) {
        v = 3;
        MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    } else {
        MPI_Message m;
        MPI_Request r;
        while (!flag)
            MPI_Improbe(1, 0, MPI_COMM_WORLD, &flag, &m, MPI_STATUS_IGNORE);
        MPI_Imrecv(&v, 1, MPI_INT, &m, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
