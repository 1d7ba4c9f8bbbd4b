/* mpvis-label: correct ; nprocs: 4
 * MPI_ANY_SOURCE inside communicators of two ranks (MPI_Comm_split): the
 * only possible sender is the partner, so nothing can race.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, lrank, v;
    MPI_Comm pair;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
    MPI_Comm_rank(pair, &lrank);
    v = rank;
    if (lrank == 0) {
        for (int i = 0; i < 2; i++)
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, pair, MPI_STATUS_IGNORE);
    } else {
        MPI_Send(&v, 1, MPI_INT, 0, 0, pair);
        MPI_Send(&v, 1, MPI_INT, 0, 1, pair);
    }
    MPI_Comm_free(&pair);
    MPI_Finalize();
    return 0;
}
