/* coll_order_mismatch.c: the ranks call collectives in different orders.
 *
 * Rank 0 calls MPI_Bcast then MPI_Barrier; the other ranks call MPI_Barrier
 * then MPI_Bcast. Every rank of a communicator must call the same sequence of
 * collectives. On MPICH the run hangs or fails, depending on timing.
 *
 * mpvis reports: a collective deadlock (kind "collective") or a
 * "collective_mismatch" error naming the differing operations (bcast vs
 * barrier), before the job hangs.
 *
 * mpvis-label: collective_mismatch ; nprocs: 2
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, value = 42;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
