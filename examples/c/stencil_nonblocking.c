/* stencil_nonblocking.c: a correct 1-D stencil, halo exchange with
 * MPI_Irecv/MPI_Isend/MPI_Waitall.
 *
 * The same computation as stencil_sendrecv.c: every step each rank posts its
 * two ghost-cell receives and its two edge sends, updates the interior cells
 * that need no ghost while the messages travel, completes all four requests
 * with MPI_Waitall, then updates the two edge cells. Sources are named, every
 * request is completed.
 *
 * mpvis reports: no race, no deadlock, no error.
 *
 * mpvis-label: correct ; nprocs: 4
 */
#include <mpi.h>
#include <stdio.h>

#define CELLS 8
#define STEPS 5

int main(int argc, char **argv)
{
    int rank, size;
    double u[CELLS + 2], v[CELLS + 2];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    int right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    for (int i = 0; i < CELLS + 2; i++)
        u[i] = rank * CELLS + i;
    for (int step = 0; step < STEPS; step++) {
        MPI_Request req[4];
        MPI_Irecv(&u[0], 1, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(&u[CELLS + 1], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[1]);
        MPI_Isend(&u[CELLS], 1, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &req[2]);
        MPI_Isend(&u[1], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[3]);
        for (int i = 2; i < CELLS; i++)
            v[i] = (u[i - 1] + u[i] + u[i + 1]) / 3.0;
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
        v[1] = (u[0] + u[1] + u[2]) / 3.0;
        v[CELLS] = (u[CELLS - 1] + u[CELLS] + u[CELLS + 1]) / 3.0;
        for (int i = 1; i <= CELLS; i++)
            u[i] = v[i];
    }
    double local = 0.0, total = 0.0;
    for (int i = 1; i <= CELLS; i++)
        local += u[i];
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("total %.3f\n", total);
    MPI_Finalize();
    return 0;
}
