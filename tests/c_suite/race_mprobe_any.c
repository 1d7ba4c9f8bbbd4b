/* mpvis-label: race ; nprocs: 3
 * Matched probes: MPI_Mprobe(MPI_ANY_SOURCE) then MPI_Mrecv. The message
 * matched first is whichever arrives first.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, v;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        for (int i = 0; i < 2; i++) {
            MPI_Message msg;
            MPI_Status st;
            MPI_Mprobe(MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &msg, &st);
            MPI_Mrecv(&v, 1, MPI_INT, &msg, MPI_STATUS_IGNORE);
            printf("matched %d from %d\n", v, st.MPI_SOURCE);
        }
    } else {
        v = rank;
        MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
