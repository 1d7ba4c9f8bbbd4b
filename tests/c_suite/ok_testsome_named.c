/* mpvis-label: correct ; nprocs: 4
 * An MPI_Testsome loop over receives from named sources.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        int v[8], idx[8], left = size - 1;
        MPI_Request r[8];
        for (int s = 1; s < size; s++)
            MPI_Irecv(&v[s - 1], 1, MPI_INT, s, 0, MPI_COMM_WORLD, &r[s - 1]);
        while (left > 0) {
            int n;
            MPI_Testsome(size - 1, r, &n, idx, MPI_STATUSES_IGNORE);
            if (n != MPI_UNDEFINED)
                left -= n;
        }
    } else {
        MPI_Send(&rank, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
