/* mpvis-label: race ; nprocs: 3
 * Rank 0 receives twice with MPI_ANY_SOURCE and MPI_ANY_TAG; ranks 1 and 2
 * send with different tags. The order of the two values is timing.
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
        MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        int first = st.MPI_TAG;
        MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        printf("tags %d then %d\n", first, st.MPI_TAG);
    } else if (rank <= 2) {
        v = rank;
        MPI_Send(&v, 1, MPI_INT, 0, rank * 10, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
