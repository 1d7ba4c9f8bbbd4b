/* mpvis-label: request_lifecycle ; nprocs: 2
 * Every rank starts an MPI_Ibarrier and never completes it.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    MPI_Request r;
    MPI_Init(&argc, &argv);
    MPI_Ibarrier(MPI_COMM_WORLD, &r);
    MPI_Finalize();
    return 0;
}
