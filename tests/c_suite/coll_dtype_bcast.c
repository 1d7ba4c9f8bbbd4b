/* mpvis-label: collective_mismatch ; nprocs: 2
 * The root broadcasts one MPI_FLOAT, the other rank receives one MPI_INT (the
 * same size: MPICH does not notice, the type signatures differ).
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        float f = 1.5f;
        MPI_Bcast(&f, 1, MPI_FLOAT, 0, MPI_COMM_WORLD);
    } else {
        int i = 0;
        MPI_Bcast(&i, 1, MPI_INT, 0, MPI_COMM_WORLD);
        printf("%d\n", i);
    }
    MPI_Finalize();
    return 0;
}
