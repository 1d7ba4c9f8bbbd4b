/* mpvis-label: request_lifecycle ; nprocs: 2
 * Rank 1 matches the message with MPI_Mprobe and starts MPI_Imrecv but never
 * completes the receive request.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, v = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        v = 2;
        MPI_Send(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
    } else {
        MPI_Message m;
        MPI_Request r;
        MPI_Mprobe(0, 0, MPI_COMM_WORLD, &m, MPI_STATUS_IGNORE);
        MPI_Imrecv(&v, 1, MPI_INT, &m, &r);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
