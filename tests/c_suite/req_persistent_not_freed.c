/* mpvis-label: request_lifecycle ; nprocs: 2
 * MPI_Send_init / MPI_Recv_init used in a loop, never freed.
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
    for (int i = 0; i < 4; i++) {
        MPI_Start(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
