/* mpvis-label: deadlock ; nprocs: 4
 * Every rank MPI_Sends one int to its right neighbour, then receives: it
 * finishes thanks to eager buffering only (a cycle of standard sends).
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, size, a, b;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    a = rank;
    MPI_Send(&a, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
    MPI_Recv(&b, 1, MPI_INT, (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
