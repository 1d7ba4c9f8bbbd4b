/* mpvis-label: race ; nprocs: 3
 * Rank 0 assumes that its MPI_ANY_SOURCE receive gets rank 1's message and
 * calls MPI_Abort otherwise: the run fails or not depending on timing.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, v;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Status st;
        MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &st);
        if (st.MPI_SOURCE != 1) {
            fprintf(stderr, "expected rank 1 first, got %d\n", st.MPI_SOURCE);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        MPI_Recv(&v, 1, MPI_INT, 2, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        v = rank;
        MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
