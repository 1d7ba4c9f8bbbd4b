/* request_leak.c: a nonblocking send that is never completed (missing MPI_Wait).
 *
 * Rank 0 starts an MPI_Isend and never waits for it nor frees its request;
 * rank 1 receives the message. The run finishes (the message is small), but
 * the MPI standard requires every request to be completed or freed: the
 * send buffer may be reused too early, and the request leaks.
 *
 * mpvis reports: a "request_leak" error on rank 0 (the MPI_Isend request,
 * still active at MPI_Finalize, with its site).
 *
 * mpvis-label: request_lifecycle ; nprocs: 2
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, value = 7;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Request req;
        MPI_Isend(&value, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &req);
        /* missing: MPI_Wait(&req, MPI_STATUS_IGNORE); */
    } else if (rank == 1) {
        MPI_Recv(&value, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
