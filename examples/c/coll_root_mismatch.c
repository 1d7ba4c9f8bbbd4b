/* coll_root_mismatch.c: the ranks disagree on the root of MPI_Bcast.
 *
 * Every rank calls MPI_Bcast with itself as the root. With two ranks MPICH
 * lets both "roots" return, each with its own value: the run finishes, the
 * data is wrong.
 *
 * mpvis reports: a "collective_mismatch" error (the root differs: 0 on rank
 * 0, 1 on rank 1) in the "errors" list, although the run finished.
 *
 * mpvis-label: collective_mismatch ; nprocs: 2
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, value;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    value = 10 + rank;
    MPI_Bcast(&value, 1, MPI_INT, rank, MPI_COMM_WORLD);
    printf("rank %d has %d\n", rank, value);
    MPI_Finalize();
    return 0;
}
