/* mpvis-label: race ; nprocs: 6
 * MPI_Comm_split makes two groups of three; in each, local rank 0 receives
 * with MPI_ANY_SOURCE from the two others: one race per group.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, lrank, v;
    MPI_Comm half;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_rank(half, &lrank);
    if (lrank == 0) {
        int sum = 0;
        for (int i = 0; i < 2; i++) {
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 0, half, MPI_STATUS_IGNORE);
            sum = sum * 10 + v;
        }
        printf("group %d: %d\n", rank % 2, sum);
    } else {
        v = lrank;
        MPI_Send(&v, 1, MPI_INT, 0, 0, half);
    }
    MPI_Comm_free(&half);
    MPI_Finalize();
    return 0;
}
