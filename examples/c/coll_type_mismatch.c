/* coll_type_mismatch.c: MPI_Bcast with different type signatures.
 *
 * The root broadcasts two MPI_INTs, the other ranks receive one MPI_DOUBLE.
 * Both are 8 bytes, so MPICH copies the bytes without complaint, and the
 * receivers read two ints as a double: the type signatures do not match, which
 * the MPI standard forbids.
 *
 * mpvis reports: a "collective_mismatch" error (dtype MPI_INT x 2 vs
 * MPI_DOUBLE x 1).
 *
 * mpvis-label: collective_mismatch ; nprocs: 2
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        int pair[2] = {1, 2};
        MPI_Bcast(pair, 2, MPI_INT, 0, MPI_COMM_WORLD);
    } else {
        double d = 0.0;
        MPI_Bcast(&d, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        printf("rank %d read %g\n", rank, d);
    }
    MPI_Finalize();
    return 0;
}
