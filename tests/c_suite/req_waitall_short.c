/* mpvis-label: request_lifecycle ; nprocs: 2
 * Rank 0 posts three MPI_Isend but its MPI_Waitall covers only two of them.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, v[3] = {4, 5, 6};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Request r[3];
        for (int i = 0; i < 3; i++)
            MPI_Isend(&v[i], 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &r[i]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    } else {
        for (int i = 0; i < 3; i++)
            MPI_Recv(&v[i], 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
