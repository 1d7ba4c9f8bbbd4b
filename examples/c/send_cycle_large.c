/* send_cycle_large.c: a cycle of blocking sends of large messages (hangs).
 *
 * Both ranks MPI_Send 4 MiB to each other, then MPI_Recv. A message this
 * large is not buffered eagerly by MPICH (rendezvous protocol): each MPI_Send
 * waits for the peer's receive, which is never posted. The program hangs.
 *
 * mpvis reports: a point-to-point deadlock (kind "p2p") of ranks 0 and 1,
 * both blocked in MPI_Send (proven; not "potential").
 *
 * mpvis-label: deadlock ; nprocs: 2
 */
#include <mpi.h>
#include <stdlib.h>

#define N (1 << 20) /* ints: 4 MiB */

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int *out = calloc(N, sizeof(int)), *in = calloc(N, sizeof(int));
    int peer = 1 - rank;
    MPI_Send(out, N, MPI_INT, peer, 0, MPI_COMM_WORLD);
    MPI_Recv(in, N, MPI_INT, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
