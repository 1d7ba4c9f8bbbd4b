/* mpvis-label: deadlock ; nprocs: 3
 * Each rank calls MPI_Sendrecv sending right but receiving from the right as
 * well (should be left): every receive waits for a message nobody sends it.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, size, a, b;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size;
    a = rank;
    MPI_Sendrecv(&a, 1, MPI_INT, right, 0, &b, 1, MPI_INT, right, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
