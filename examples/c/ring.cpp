/* ring.cpp: a correct C++ program (built with mpicxx): a token ring.
 *
 * A std::vector token travels around the ring of ranks twice: rank 0 sends it
 * to rank 1 and then receives it from the last rank; every other rank
 * receives from its left neighbour, adds its rank, and passes it on. The
 * ranks then check the total with MPI_Allreduce. Sources are named; each
 * send has a posted receive.
 *
 * mpvis reports: no race, no deadlock, no error.
 *
 * mpvis-label: correct ; nprocs: 3
 */
#include <mpi.h>

#include <cstdio>
#include <numeric>
#include <vector>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    std::vector<long> token(4, 0);
    for (int lap = 0; lap < 2; ++lap) {
        if (rank == 0) {
            MPI_Send(token.data(), static_cast<int>(token.size()), MPI_LONG, right, lap,
                     MPI_COMM_WORLD);
            MPI_Recv(token.data(), static_cast<int>(token.size()), MPI_LONG, left, lap,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(token.data(), static_cast<int>(token.size()), MPI_LONG, left, lap,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (long &x : token)
                x += rank;
            MPI_Send(token.data(), static_cast<int>(token.size()), MPI_LONG, right, lap,
                     MPI_COMM_WORLD);
        }
    }
    long mine = std::accumulate(token.begin(), token.end(), 0L), total = 0;
    MPI_Allreduce(&mine, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("token sum %ld, total %ld\n", mine, total);
    MPI_Finalize();
    return 0;
}
