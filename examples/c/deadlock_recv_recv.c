/* deadlock_recv_recv.c: both ranks receive before they send.
 *
 * Rank 0 waits in MPI_Recv for rank 1, rank 1 waits in MPI_Recv for rank 0;
 * neither reaches its MPI_Send. The program hangs forever.
 *
 * mpvis reports: a point-to-point deadlock (kind "p2p") of ranks 0 and 1,
 * each blocked in MPI_Recv. With --stop-on-deadlock, `mpvis run` stops the
 * ranks as soon as it is proven.
 *
 * mpvis-label: deadlock ; nprocs: 2
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, in = 0, out;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int peer = 1 - rank;
    out = rank;
    MPI_Recv(&in, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(&out, 1, MPI_INT, peer, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
