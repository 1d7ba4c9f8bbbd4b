/* mpvis-label: correct ; nprocs: 2
 * Both ranks "send first" with MPI_Isend, receive, then wait: safe even for
 * large messages.
 */
#include <mpi.h>
#include <stdlib.h>

#define N (1 << 18)

int main(int argc, char **argv)
{
    int rank;
    MPI_Request r;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int *a = calloc(N, sizeof(int)), *b = calloc(N, sizeof(int));
    MPI_Isend(a, N, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD, &r);
    MPI_Recv(b, N, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
