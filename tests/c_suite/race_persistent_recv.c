/* mpvis-label: race ; nprocs: 3
 * A persistent receive MPI_Recv_init(MPI_ANY_SOURCE) started twice takes the
 * two senders' messages in arrival order.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, v, acc = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Request r;
        MPI_Recv_init(&v, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &r);
        for (int i = 0; i < 2; i++) {
            MPI_Start(&r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            acc = acc * 10 + v;
        }
        MPI_Request_free(&r);
        printf("%d\n", acc);
    } else {
        v = rank;
        MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
