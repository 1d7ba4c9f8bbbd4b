/* mpvis-label: correct ; nprocs: 2
 * MPI_ANY_SOURCE receives, but only one rank ever sends: no race.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, v;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < 3; i++) {
        if (rank == 1) {
            v = i;
            MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
        } else {
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    MPI_Finalize();
    return 0;
}
