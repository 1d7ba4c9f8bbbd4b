/* mpvis-label: correct ; nprocs: 2
 * MPI_ANY_TAG receives from one named source: messages from one sender are
 * non-overtaking, so the order is fixed.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, v;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1) {
        for (int t = 0; t < 3; t++) {
            v = t;
            MPI_Send(&v, 1, MPI_INT, 0, t, MPI_COMM_WORLD);
        }
    } else {
        for (int t = 0; t < 3; t++) {
            MPI_Status st;
            MPI_Recv(&v, 1, MPI_INT, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            printf("tag %d\n", st.MPI_TAG);
        }
    }
    MPI_Finalize();
    return 0;
}
