/* mpvis-label: deadlock ; nprocs: 3
 * Every rank sends 1 MiB to its right neighbour, then receives from its left:
 * a cycle of blocking sends too large for eager buffering.
 */
#include <mpi.h>
#include <stdlib.h>

#define N (1 << 18) /* ints */

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *a = calloc(N, sizeof(int)), *b = calloc(N, sizeof(int));
    MPI_Send(a, N, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
    MPI_Recv(b, N, MPI_INT, (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
