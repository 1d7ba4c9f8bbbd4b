/* mpvis-label: correct ; nprocs: 2
 * MPI_Alltoallw with per-peer datatypes that match pairwise, and MPI_Alltoall.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int sbuf[8], rbuf[8], c[8], d[8];
    MPI_Datatype t[8];
    for (int i = 0; i < size; i++) {
        sbuf[i] = rank;
        c[i] = 1;
        d[i] = i * (int)sizeof(int);
        t[i] = MPI_INT;
    }
    MPI_Alltoallw(sbuf, c, d, t, rbuf, c, d, t, MPI_COMM_WORLD);
    MPI_Alltoall(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
