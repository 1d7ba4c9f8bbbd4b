/* mpvis-label: correct ; nprocs: 3
 * A pipeline of synchronous sends: rank 0 -> 1 -> 2, each rank receiving
 * before it forwards with MPI_Ssend.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, size, v = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank > 0)
        MPI_Recv(&v, 1, MPI_INT, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    v += rank;
    if (rank < size - 1)
        MPI_Ssend(&v, 1, MPI_INT, rank + 1, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
