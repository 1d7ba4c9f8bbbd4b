/* mpvis-label: correct ; nprocs: 2
 * Each rank MPI_Isends to itself, receives it, and waits.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, a, b;
    MPI_Request r;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    a = rank;
    MPI_Isend(&a, 1, MPI_INT, rank, 0, MPI_COMM_WORLD, &r);
    MPI_Recv(&b, 1, MPI_INT, rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
