/* mpvis-label: correct ; nprocs: 3
 * A master-worker farm in rounds with named sources: the master sends a task
 * to every worker, then receives each worker's result by name.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, size, task, result;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int round = 0; round < 3; round++) {
        if (rank == 0) {
            for (int w = 1; w < size; w++) {
                task = round * size + w;
                MPI_Send(&task, 1, MPI_INT, w, 1, MPI_COMM_WORLD);
            }
            for (int w = 1; w < size; w++)
                MPI_Recv(&result, 1, MPI_INT, w, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&task, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            result = task * 2;
            MPI_Send(&result, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
        }
    }
    MPI_Finalize();
    return 0;
}
