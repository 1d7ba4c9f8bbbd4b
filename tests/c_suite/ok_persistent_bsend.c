/* mpvis-label: correct ; nprocs: 2
 * A persistent buffered send (MPI_Bsend_init) into an attached buffer,
 * started twice and freed; the receiver uses plain MPI_Recv.
 */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, v = 0, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Request r;
        MPI_Pack_size(1, MPI_INT, MPI_COMM_WORLD, &size);
        size = 2 * (size + MPI_BSEND_OVERHEAD);
        void *buf = malloc(size);
        MPI_Buffer_attach(buf, size);
        MPI_Bsend_init(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &r);
        for (int i = 0; i < 2; i++) {
            MPI_Start(&r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        MPI_Request_free(&r);
        MPI_Buffer_detach(&buf, &size);
        free(buf);
    } else {
        for (int i = 0; i < 2; i++)
            MPI_Recv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
