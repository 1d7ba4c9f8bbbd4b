/* mpvis-label: request_lifecycle ; nprocs: 2
 * Rank 0's MPI_Isend request is never completed nor freed.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, v = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Request r;
        MPI_Isend(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &r);
    } else {
        MPI_Recv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
