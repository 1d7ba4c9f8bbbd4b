/* stencil_sendrecv.c: a correct 1-D stencil, halo exchange with MPI_Sendrecv.
 *
 * Each rank owns CELLS cells of a 1-D array with one ghost cell at each end.
 * Every step it exchanges its edge cells with its neighbours (MPI_PROC_NULL
 * at the ends of the line) with two MPI_Sendrecv calls, averages, and after
 * the last step the ranks agree on the total with MPI_Allreduce.
 * MPI_Sendrecv cannot deadlock here and no receive uses a wildcard.
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
        /* send my right edge to the right, get my left ghost from the left */
        MPI_Sendrecv(&u[CELLS], 1, MPI_DOUBLE, right, 0, &u[0], 1, MPI_DOUBLE, left, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        /* send my left edge to the left, get my right ghost from the right */
        MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 1, &u[CELLS + 1], 1, MPI_DOUBLE, right, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 1; i <= CELLS; i++)
            v[i] = (u[i - 1] + u[i] + u[i + 1]) / 3.0;
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
