/* mpvis-label: correct ; nprocs: 3
 * A persistent ring shift: an MPI_Recv_init and an MPI_Send_init request
 * started together with MPI_Startall, completed with MPI_Waitall, freed at
 * the end.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, size, out, in;
    MPI_Request r[2];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Recv_init(&in, 1, MPI_INT, (rank + size - 1) % size, 0, MPI_COMM_WORLD, &r[0]);
    MPI_Send_init(&out, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD, &r[1]);
    out = rank;
    for (int i = 0; i < 3; i++) {
        MPI_Startall(2, r);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        out = in;
    }
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);
    MPI_Finalize();
    return 0;
}
