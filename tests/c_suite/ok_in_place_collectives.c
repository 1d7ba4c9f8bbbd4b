/* mpvis-label: correct ; nprocs: 3
 * MPI_IN_PLACE at the root of MPI_Reduce and MPI_Gather, and in MPI_Allreduce.
 */
#include <mpi.h>
#include <stddef.h>

int main(int argc, char **argv)
{
    int rank, a, all[8];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    a = rank;
    if (rank == 0)
        MPI_Reduce(MPI_IN_PLACE, &a, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    else
        MPI_Reduce(&a, NULL, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    all[rank] = rank;
    if (rank == 0)
        MPI_Gather(MPI_IN_PLACE, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    else
        MPI_Gather(&all[rank], 1, MPI_INT, NULL, 0, MPI_INT, 0, MPI_COMM_WORLD);
    a = rank;
    MPI_Allreduce(MPI_IN_PLACE, &a, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
