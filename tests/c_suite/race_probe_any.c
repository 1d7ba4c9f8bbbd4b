/* mpvis-label: race ; nprocs: 3
 * Rank 0 MPI_Probe(MPI_ANY_SOURCE)s, then MPI_Recv()s from the probed source:
 * which sender is served first is timing.
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
            MPI_Status st;
            MPI_Probe(MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &st);
            MPI_Recv(&v, 1, MPI_INT, st.MPI_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            printf("served %d\n", st.MPI_SOURCE);
        }
    } else {
        v = rank;
        MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
