/* race_waitany.c: a race hidden in nonblocking receives completed by MPI_Waitany.
 *
 * Rank 0 posts two MPI_Irecv(MPI_ANY_SOURCE) and completes them with
 * MPI_Waitany. Ranks 1 and 2 send one message each. Which receive gets which
 * message, and which completes first, depends on timing: the program sums
 * "first * 10 + second", a result that changes with the arrival order.
 *
 * mpvis reports: a race on rank 0 between the two wildcard receives
 * (verdict "legitimate"). No deadlock, no error.
 *
 * mpvis-label: race ; nprocs: 3
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, buf[2], value;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Request req[2];
        int result = 0;
        for (int i = 0; i < 2; i++)
            MPI_Irecv(&buf[i], 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &req[i]);
        for (int done = 0; done < 2; done++) {
            int idx;
            MPI_Waitany(2, req, &idx, MPI_STATUS_IGNORE);
            result = result * 10 + buf[idx];
        }
        printf("result %d (depends on the arrival order)\n", result);
    } else if (rank <= 2) {
        value = rank;
        MPI_Send(&value, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
