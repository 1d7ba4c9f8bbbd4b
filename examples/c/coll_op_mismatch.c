/* coll_op_mismatch.c: the ranks pass different reduction ops to MPI_Allreduce.
 *
 * Rank 0 reduces with MPI_SUM, the others with MPI_MAX. The run finishes; what
 * each rank gets is undefined.
 *
 * mpvis reports: a "collective_mismatch" error (redop MPI_SUM vs MPI_MAX).
 *
 * mpvis-label: collective_mismatch ; nprocs: 2
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, in, out = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    in = rank + 1;
    MPI_Allreduce(&in, &out, 1, MPI_INT, rank == 0 ? MPI_SUM : MPI_MAX, MPI_COMM_WORLD);
    printf("rank %d: %d\n", rank, out);
    MPI_Finalize();
    return 0;
}
