/* lost_message.c: a message that is sent and never received.
 *
 * Rank 0 sends two small messages (tags 1 and 2); rank 1 receives only the
 * one with tag 1. MPICH buffers the other eagerly, so MPI_Send returns, but the
 * message is lost: with synchronous sends the program would hang, and MPICH 5
 * fails in MPI_Finalize ("being freed has 1 unmatched message(s)").
 *
 * mpvis reports: a "lost_message" error (rank 0's send with tag 2 to rank 1
 * was never received by MPI_Finalize). It is filed under "deadlock" in the
 * suite's labels: an unmatched send is a deadlock of a synchronous run.
 *
 * mpvis-label: deadlock ; nprocs: 2
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, a = 1, b = 2;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Send(&a, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
        MPI_Send(&b, 1, MPI_INT, 1, 2, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Recv(&a, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
