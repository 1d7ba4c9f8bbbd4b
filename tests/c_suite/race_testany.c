/* mpvis-label: race ; nprocs: 3
 * Two MPI_Irecv(MPI_ANY_SOURCE) polled with MPI_Testany; the value kept as
 * "first" depends on which sender's message arrives first.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, v, buf[2], first = -1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Request r[2];
        MPI_Irecv(&buf[0], 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(&buf[1], 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &r[1]);
        int done = 0;
        while (done < 2) {
            int idx, flag;
            MPI_Testany(2, r, &idx, &flag, MPI_STATUS_IGNORE);
            if (flag && idx != MPI_UNDEFINED) {
                if (first < 0)
                    first = buf[idx];
                done++;
            }
        }
        printf("first %d\n", first);
    } else {
        v = rank;
        MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
