/* mpvis-label: correct ; nprocs: 4
 * A dynamic task farm: the master takes results with MPI_ANY_SOURCE and
 * feeds whoever answered; the sum is order-independent. A correctness
 * judge calls this correct; its wildcard receives race (benign).
 */
#include <mpi.h>

#define TASKS 9

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        int next = 0, busy = 0, res, sum = 0;
        for (int w = 1; w < size; w++) {
            int t = next < TASKS ? next++ : -1;
            busy += t >= 0;
            MPI_Send(&t, 1, MPI_INT, w, 0, MPI_COMM_WORLD);
        }
        while (busy > 0) {
            MPI_Status st;
            MPI_Recv(&res, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &st);
            sum += res;
            int t = next < TASKS ? next++ : -1;
            busy += (t >= 0) - 1;
            MPI_Send(&t, 1, MPI_INT, st.MPI_SOURCE, 0, MPI_COMM_WORLD);
        }
    } else {
        for (;;) {
            int t, res;
            MPI_Recv(&t, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (t < 0)
                break;
            res = t + 1;
            MPI_Send(&res, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
        }
    }
    MPI_Finalize();
    return 0;
}
