/* mpvis-label: correct ; nprocs: 3
 * MPI_Gatherv, MPI_Scatterv, MPI_Allgatherv and MPI_Alltoallv with rank-
 * dependent counts that agree across ranks.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int counts[8], displs[8], total = 0, mine[8], all[64];
    for (int i = 0; i < size; i++) {
        counts[i] = i + 1;
        displs[i] = total;
        total += counts[i];
    }
    for (int i = 0; i < rank + 1; i++)
        mine[i] = rank;
    MPI_Gatherv(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Scatterv(all, counts, displs, MPI_INT, mine, rank + 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Allgatherv(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
    int sc[8], sd[8], rc[8], rd[8], sbuf[8], rbuf[8];
    for (int i = 0; i < size; i++) {
        sc[i] = 1;
        sd[i] = i;
        rc[i] = 1;
        rd[i] = i;
        sbuf[i] = rank * 10 + i;
    }
    MPI_Alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
