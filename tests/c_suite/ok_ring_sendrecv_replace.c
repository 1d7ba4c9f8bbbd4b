/* mpvis-label: correct ; nprocs: 3
 * A ring shift with MPI_Sendrecv_replace on one buffer.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, buf[4];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < 4; i++)
        buf[i] = rank;
    for (int step = 0; step < size; step++)
        MPI_Sendrecv_replace(buf, 4, MPI_INT, (rank + 1) % size, 0, (rank + size - 1) % size,
                             0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("rank %d back to %d\n", rank, buf[0]);
    MPI_Finalize();
    return 0;
}
