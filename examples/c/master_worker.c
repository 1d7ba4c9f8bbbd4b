/* master_worker.c: a correct master-worker task farm.
 *
 * Rank 0 hands out TASKS tasks. It first gives each worker one task, then
 * takes results with MPI_Recv(MPI_ANY_SOURCE) and gives the next task to
 * whichever worker answered (status.MPI_SOURCE), and finally sends each worker
 * a stop message (tag STOP). The final sum does not depend on the order in
 * which results arrive, and every message is received.
 *
 * mpvis reports: no deadlock and no error. The wildcard receives do race
 * (which worker answers first is timing), so races are listed with verdict
 * "legitimate": benign races, the result is order-independent. With a
 * single worker (-n 2) there is nothing to race with and nothing is reported.
 *
 * mpvis-label: correct ; nprocs: 3
 */
#include <mpi.h>
#include <stdio.h>

#define TASKS 10
#define WORK 1
#define STOP 2

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        int next = 0, sum = 0, result;
        for (int w = 1; w < size; w++) {
            int task = next < TASKS ? next++ : -1;
            MPI_Send(&task, 1, MPI_INT, w, task >= 0 ? WORK : STOP, MPI_COMM_WORLD);
        }
        int outstanding = next;
        while (outstanding > 0) {
            MPI_Status st;
            MPI_Recv(&result, 1, MPI_INT, MPI_ANY_SOURCE, WORK, MPI_COMM_WORLD, &st);
            sum += result;
            outstanding--;
            int task = next < TASKS ? next++ : -1;
            if (task >= 0)
                outstanding++;
            MPI_Send(&task, 1, MPI_INT, st.MPI_SOURCE, task >= 0 ? WORK : STOP,
                     MPI_COMM_WORLD);
        }
        printf("sum of squares 0..%d = %d\n", TASKS - 1, sum);
    } else {
        for (;;) {
            int task;
            MPI_Status st;
            MPI_Recv(&task, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            if (st.MPI_TAG == STOP)
                break;
            int result = task * task;
            MPI_Send(&result, 1, MPI_INT, 0, WORK, MPI_COMM_WORLD);
        }
    }
    MPI_Finalize();
    return 0;
}
