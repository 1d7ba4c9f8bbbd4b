/* mpvis-label: request_lifecycle ; nprocs: 2
 * Rank 1 posts MPI_Irecv and never waits for it (the data is read anyway,
 * after a barrier: undefined).
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, v = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        v = 9;
        MPI_Send(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
    } else {
        MPI_Request r;
        MPI_Irecv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &r);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1)
        printf("%d\n", v);
    MPI_Finalize();
    return 0;
}
