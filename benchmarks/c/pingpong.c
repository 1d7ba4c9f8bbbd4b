/* Ping-pong for benchmarks/overhead_c.py: traced and untraced rounds in one run.
 *
 * Traced rounds call MPI_Send/MPI_Recv (the trace library's wrappers when it
 * is preloaded); untraced rounds call PMPI_Send/PMPI_Recv, the same MPI
 * functions without the wrappers, so both kinds run in the same processes,
 * on the same connection, in alternation.  Rank 0 prints, per message size,
 *     RESULT SIZE PLAIN TRACED PAIRED
 * with the best round of each kind (seconds per round trip) and the median
 * over adjacent (untraced, traced) pairs of the ratio traced/untraced (the
 * order within a pair alternates).
 * Usage: pingpong REPS SIZE [SIZE ...]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*send_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm);
typedef int (*recv_fn)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *);

static double round_trip(int rank, char *buf, int size, int n, send_fn snd, recv_fn rcv) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    for (int i = 0; i < n; i++) {
        if (rank == 0) {
            snd(buf, size, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            rcv(buf, size, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            rcv(buf, size, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            snd(buf, size, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
    }
    t = (MPI_Wtime() - t) / n;
    PMPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return t;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int reps = argc > 1 ? atoi(argv[1]) : 15;
    for (int a = 2; a < argc; a++) {
        int size = atoi(argv[a]);
        /* a round lasts a few tenths of a second, several flush delays (50 ms) */
        int n = size <= 1024 ? 50000 : 300;
        char *buf = calloc((size_t)size + 1, 1);
        double best_p = 1e9, best_t = 1e9, *ratio = calloc((size_t)reps, sizeof(double));
        round_trip(rank, buf, size, n / 10 + 1, PMPI_Send, PMPI_Recv); /* warm up */
        round_trip(rank, buf, size, n / 10 + 1, MPI_Send, MPI_Recv);
        for (int r = 0; r < reps; r++) {
            /* alternate which kind goes first, so neither always runs on a warmer machine */
            double p, t;
            if (r % 2) {
                t = round_trip(rank, buf, size, n, MPI_Send, MPI_Recv);
                p = round_trip(rank, buf, size, n, PMPI_Send, PMPI_Recv);
            } else {
                p = round_trip(rank, buf, size, n, PMPI_Send, PMPI_Recv);
                t = round_trip(rank, buf, size, n, MPI_Send, MPI_Recv);
            }
            best_p = p < best_p ? p : best_p;
            best_t = t < best_t ? t : best_t;
            ratio[r] = t / p;
        }
        qsort(ratio, (size_t)reps, sizeof(double), cmp);
        if (rank == 0) printf("RESULT %d %.9g %.9g %.6f\n", size, best_p, best_t, ratio[reps / 2]);
        fflush(stdout);
        free(ratio);
        free(buf);
    }
    MPI_Finalize();
    return 0;
}
