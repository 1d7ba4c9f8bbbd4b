/* mpvis-label: request_lifecycle ; nprocs: 2
 * Rank 0 reuses one request variable for three MPI_Isend calls and waits
 * only on the last: the first two requests are lost.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, v[3] = {1, 2, 3};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Request r;
        for (int i = 0; i < 3; i++)
            MPI_Isend(&v[i], 1, MPI_INT, 1, i, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
        for (int i = 0; i < 3; i++)
            MPI_Recv(&v[i], 1, MPI_INT, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
