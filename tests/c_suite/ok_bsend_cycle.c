/* mpvis-label: correct ; nprocs: 2
 * Both ranks send first, but with MPI_Bsend into an attached buffer: buffered
 * mode guarantees the send returns, so the cycle is safe.
 */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, a, b, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Pack_size(1, MPI_INT, MPI_COMM_WORLD, &size);
    size += MPI_BSEND_OVERHEAD;
    void *buf = malloc(size);
    MPI_Buffer_attach(buf, size);
    a = rank;
    MPI_Bsend(&a, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD);
    MPI_Recv(&b, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Buffer_detach(&buf, &size);
    free(buf);
    MPI_Finalize();
    return 0;
}
