/* mpvis-label: race ; nprocs: 4
 * Rank 0 posts three MPI_Irecv(MPI_ANY_SOURCE) and completes them with
 * MPI_Waitall; which buffer gets which sender's value is timing.
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
        for (int i = 0; i < 3; i++)
            MPI_Irecv(&buf[i], 1, MPI_INT, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, &r[i]);
        MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
        printf("%d %d %d\n", buf[0], buf[1], buf[2]);
    } else {
        v = rank;
        MPI_Send(&v, 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
