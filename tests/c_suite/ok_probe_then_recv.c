/* mpvis-label: correct ; nprocs: 2
 * MPI_Probe a named source, size the buffer with MPI_Get_count, MPI_Recv.
 */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1) {
        int data[5] = {1, 2, 3, 4, 5};
        MPI_Send(data, 5, MPI_INT, 0, 4, MPI_COMM_WORLD);
    } else {
        MPI_Status st;
        int n;
        MPI_Probe(1, 4, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_INT, &n);
        int *buf = malloc(n * sizeof(int));
        MPI_Recv(buf, n, MPI_INT, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        free(buf);
    }
    MPI_Finalize();
    return 0;
}
