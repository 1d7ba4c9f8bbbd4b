/* mpvis-label: correct ; nprocs: 3
 * Rank 0 matches one message from each named source with MPI_Mprobe and
 * receives it with MPI_Mrecv.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, size, v;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        for (int src = 1; src < size; src++) {
            MPI_Message m;
            MPI_Mprobe(src, 0, MPI_COMM_WORLD, &m, MPI_STATUS_IGNORE);
            MPI_Mrecv(&v, 1, MPI_INT, &m, MPI_STATUS_IGNORE);
        }
    } else {
        v = rank;
        MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
