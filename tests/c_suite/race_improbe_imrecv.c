/* mpvis-label: race ; nprocs: 3
 * MPI_Improbe(MPI_ANY_SOURCE) polled, then MPI_Imrecv + MPI_Wait: the order in
 * which the two senders are matched is timing.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, v;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        int got = 0;
        while (got < 2) {
            int flag;
            MPI_Message msg;
            MPI_Improbe(MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &flag, &msg, MPI_STATUS_IGNORE);
            if (flag) {
                MPI_Request r;
                MPI_Imrecv(&v, 1, MPI_INT, &msg, &r);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
                printf("got %d\n", v);
                got++;
            }
        }
    } else {
        v = rank;
        MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
