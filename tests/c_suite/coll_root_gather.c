/* mpvis-label: collective_mismatch ; nprocs: 2
 * MPI_Gather where every rank names itself as the root.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, v, all[2] = {0, 0};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    v = rank;
    MPI_Gather(&v, 1, MPI_INT, all, 1, MPI_INT, rank, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
