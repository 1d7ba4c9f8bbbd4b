/* send_cycle_small.c: a cycle of blocking sends that finishes by luck.
 *
 * Both ranks MPI_Send one int to each other, then MPI_Recv. MPICH buffers
 * small messages eagerly, so both sends return and the run finishes. The MPI
 * standard does not promise that buffering: the same code with larger
 * messages, or another MPI, hangs (see send_cycle_large.c). The program is
 * unsafe.
 *
 * mpvis reports: a deadlock (kind "p2p") of ranks 0 and 1 with
 * "potential": true, "deadlock if not buffered", with the cycle of sends,
 * although the run finished.
 *
 * mpvis-label: deadlock ; nprocs: 2
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, in = -1, out;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int peer = 1 - rank;
    out = rank;
    MPI_Send(&out, 1, MPI_INT, peer, 0, MPI_COMM_WORLD);
    MPI_Recv(&in, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("rank %d got %d\n", rank, in);
    MPI_Finalize();
    return 0;
}
