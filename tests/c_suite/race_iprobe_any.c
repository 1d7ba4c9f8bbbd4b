/* mpvis-label: race ; nprocs: 3
 * Rank 0 polls MPI_Iprobe(MPI_ANY_SOURCE) and receives from whoever is there,
 * with a wildcard MPI_Recv: the service order is timing.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, v;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        int got = 0;
        while (got < 2) {
            int flag;
            MPI_Status st;
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
            if (flag) {
                MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
                printf("got %d\n", v);
                got++;
            }
        }
    } else {
        v = rank;
        MPI_Send(&v, 1, MPI_INT, 0, rank, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
