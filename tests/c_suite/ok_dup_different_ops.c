/* mpvis-label: correct ; nprocs: 2
 * MPI_Allreduce with MPI_SUM on MPI_COMM_WORLD and with MPI_MAX on a
 * duplicate: different ops, but on different communicators, and every rank
 * does both in the same order.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, a, s = 0, m = 0;
    MPI_Comm dup;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    a = rank;
    MPI_Allreduce(&a, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&a, &m, 1, MPI_INT, MPI_MAX, dup);
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return 0;
}
