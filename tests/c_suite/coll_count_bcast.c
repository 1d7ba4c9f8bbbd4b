/* mpvis-label: collective_mismatch ; nprocs: 3
 * The root broadcasts 8 doubles, the others expect 4.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank;
    double d[8] = {0};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Bcast(d, rank == 0 ? 8 : 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
