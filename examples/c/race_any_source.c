/* race_any_source.c: a message race on MPI_ANY_SOURCE.
 *
 * Ranks 1 and 2 each send rank 0 one number; rank 0 takes them with two
 * MPI_Recv(MPI_ANY_SOURCE) and prints them in the order it got them. Which
 * message the first receive takes depends on timing alone, so the printed
 * order changes from run to run.
 *
 * mpvis reports: a race on rank 0 between its two wildcard receives
 * (classifier situation 16, verdict "legitimate"; the exact test confirms it).
 * No deadlock, no error.
 *
 * mpvis-label: race ; nprocs: 3
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, value;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        for (int i = 0; i < 2; i++) {
            MPI_Status st;
            MPI_Recv(&value, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &st);
            printf("receive %d got %d from rank %d\n", i, value, st.MPI_SOURCE);
        }
    } else if (rank <= 2) {
        value = 100 * rank;
        MPI_Send(&value, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
