/* mpvis-label: collective_mismatch ; nprocs: 2
 * MPI_Allgather of MPI_INT on rank 0 and MPI_FLOAT on rank 1 (same size,
 * different type signatures).
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, in = 1, out[2];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Datatype t = rank == 0 ? MPI_INT : MPI_FLOAT;
    MPI_Allgather(&in, 1, t, out, 1, t, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
