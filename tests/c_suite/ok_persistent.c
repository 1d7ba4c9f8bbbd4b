/* mpvis-label: correct ; nprocs: 2
 * Persistent send and receive requests started five times and freed.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, v = 0;
    MPI_Request r;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        MPI_Send_init(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &r);
    else
        MPI_Recv_init(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &r);
    for (int i = 0; i < 5; i++) {
        v = i;
        MPI_Start(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    MPI_Request_free(&r);
    MPI_Finalize();
    return 0;
}
