/* mpvis-label: correct ; nprocs: 4
 * A ring shift with MPI_Sendrecv: every rank sends right and receives from
 * the left in one call, three times.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, size, a, b;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    a = rank;
    for (int i = 0; i < 3; i++) {
        MPI_Sendrecv(&a, 1, MPI_INT, (rank + 1) % size, i, &b, 1, MPI_INT,
                     (rank + size - 1) % size, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        a = b;
    }
    MPI_Finalize();
    return 0;
}
