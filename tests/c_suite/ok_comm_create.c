/* mpvis-label: correct ; nprocs: 4
 * MPI_Comm_create from the group of even ranks; the even ranks reduce over
 * it, the odd ones get MPI_COMM_NULL and skip.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, size, a, b = 0;
    MPI_Group world, evens;
    MPI_Comm ecomm;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int ranks[4], n = 0;
    for (int i = 0; i < size && n < 4; i += 2)
        ranks[n++] = i;
    MPI_Group_incl(world, n, ranks, &evens);
    MPI_Comm_create(MPI_COMM_WORLD, evens, &ecomm);
    a = rank;
    if (ecomm != MPI_COMM_NULL) {
        MPI_Allreduce(&a, &b, 1, MPI_INT, MPI_SUM, ecomm);
        MPI_Comm_free(&ecomm);
    }
    MPI_Group_free(&evens);
    MPI_Group_free(&world);
    MPI_Finalize();
    return 0;
}
