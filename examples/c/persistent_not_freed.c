/* persistent_not_freed.c: persistent requests used correctly but never freed.
 *
 * Rank 0 builds an MPI_Send_init request and rank 1 an MPI_Recv_init
 * request; each starts and completes its request three times, then neither
 * calls MPI_Request_free. The run finishes; the requests leak.
 *
 * mpvis reports: "request_leak" errors on ranks 0 and 1 (persistent
 * requests, state "inactive", started).
 *
 * mpvis-label: request_lifecycle ; nprocs: 2
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, value = 0;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        MPI_Send_init(&value, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &req);
    else if (rank == 1)
        MPI_Recv_init(&value, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &req);
    if (rank <= 1) {
        for (int i = 0; i < 3; i++) {
            value = i;
            MPI_Start(&req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        /* missing: MPI_Request_free(&req); */
    }
    MPI_Finalize();
    return 0;
}
