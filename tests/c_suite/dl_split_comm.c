/* mpvis-label: deadlock ; nprocs: 4
 * Inside the communicators made by MPI_Comm_split (two pairs), both members
 * of each pair receive before sending.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, lrank, v = 0;
    MPI_Comm pair;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
    MPI_Comm_rank(pair, &lrank);
    MPI_Recv(&v, 1, MPI_INT, 1 - lrank, 0, pair, MPI_STATUS_IGNORE);
    MPI_Send(&v, 1, MPI_INT, 1 - lrank, 0, pair);
    MPI_Comm_free(&pair);
    MPI_Finalize();
    return 0;
}
