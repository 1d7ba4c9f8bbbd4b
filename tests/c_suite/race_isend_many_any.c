/* mpvis-label: race ; nprocs: 4
 * Every worker MPI_Isends two values to rank 0, which folds them in arrival
 * order with a non-commutative formula using MPI_ANY_SOURCE receives.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, v[2];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        long acc = 0;
        for (int i = 0; i < 2 * (size - 1); i++) {
            int x;
            MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            acc = acc * 7 + x;
        }
        printf("%ld\n", acc);
    } else {
        MPI_Request r[2];
        v[0] = rank;
        v[1] = 10 * rank;
        MPI_Isend(&v[0], 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(&v[1], 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
