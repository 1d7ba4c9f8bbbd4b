/* mpvis-label: deadlock ; nprocs: 2
 * Both ranks MPI_Send 2 MiB to each other before receiving: too large to be
 * buffered eagerly, both block in MPI_Send.
 */
#include <mpi.h>
#include <stdlib.h>

#define N (1 << 18) /* doubles */

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double *a = calloc(N, sizeof(double)), *b = calloc(N, sizeof(double));
    MPI_Send(a, N, MPI_DOUBLE, 1 - rank, 0, MPI_COMM_WORLD);
    MPI_Recv(b, N, MPI_DOUBLE, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
