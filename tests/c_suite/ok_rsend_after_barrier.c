/* mpvis-label: correct ; nprocs: 2
 * Ready mode used correctly: the receive is posted before the barrier, the
 * MPI_Rsend is issued after it.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, v = 0;
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1)
        MPI_Irecv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &r);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        v = 4;
        MPI_Rsend(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
    } else {
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
