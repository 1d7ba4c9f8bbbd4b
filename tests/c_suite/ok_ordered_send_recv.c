/* mpvis-label: correct ; nprocs: 2
 * A large exchange ordered by rank: rank 0 sends then receives, rank 1
 * receives then sends. No cycle.
 */
#include <mpi.h>
#include <stdlib.h>

#define N (1 << 18)

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int *a = calloc(N, sizeof(int)), *b = calloc(N, sizeof(int));
    if (rank == 0) {
        MPI_Send(a, N, MPI_INT, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(b, N, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(b, N, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(a, N, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
