/* mpvis-label: correct ; nprocs: 3
 * MPI_Waitany over receives with named sources: completion order varies but
 * each buffer always gets the same sender's value.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, v[2];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Request r[2];
        MPI_Irecv(&v[0], 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(&v[1], 1, MPI_INT, 2, 0, MPI_COMM_WORLD, &r[1]);
        for (int i = 0; i < 2; i++) {
            int idx;
            MPI_Waitany(2, r, &idx, MPI_STATUS_IGNORE);
        }
    } else {
        MPI_Send(&rank, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
