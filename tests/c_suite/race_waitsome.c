/* mpvis-label: race ; nprocs: 4
 * Three MPI_Irecv(MPI_ANY_SOURCE) completed by an MPI_Waitsome loop; the
 * senders' values land in buffers in arrival order.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, v, buf[3];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Request r[3];
        int idx[3], left = 3;
        for (int i = 0; i < 3; i++)
            MPI_Irecv(&buf[i], 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &r[i]);
        while (left > 0) {
            int n;
            MPI_Waitsome(3, r, &n, idx, MPI_STATUSES_IGNORE);
            left -= n;
        }
        printf("%d %d %d\n", buf[0], buf[1], buf[2]);
    } else {
        v = rank;
        MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
