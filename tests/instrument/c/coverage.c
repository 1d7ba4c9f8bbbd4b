/* Every kind of MPI call the PMPI trace library wraps, on 3 ranks, with a
 * deterministic outcome (no message can race), for tests/instrument/test_pmpi.py. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int provided, rank, size, x = 0, y = 0, buf[4] = {0, 0, 0, 0};
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Status st;
    MPI_Request rq[4];

    /* blocking modes around the ring, each matched by a tagged receive */
    char bsend_buf[1024 + MPI_BSEND_OVERHEAD];
    MPI_Buffer_attach(bsend_buf, sizeof bsend_buf);
    MPI_Irecv(&y, 1, MPI_INT, left, 1, MPI_COMM_WORLD, &rq[0]);
    MPI_Irecv(&y, 1, MPI_INT, left, 2, MPI_COMM_WORLD, &rq[1]);
    MPI_Irecv(&y, 1, MPI_INT, left, 3, MPI_COMM_WORLD, &rq[2]);
    MPI_Barrier(MPI_COMM_WORLD);               /* every receive is posted: Rsend is legal */
    MPI_Send(&x, 1, MPI_INT, right, 1, MPI_COMM_WORLD);
    MPI_Bsend(&x, 1, MPI_INT, right, 2, MPI_COMM_WORLD);
    MPI_Rsend(&x, 1, MPI_INT, right, 3, MPI_COMM_WORLD);
    MPI_Waitall(3, rq, MPI_STATUSES_IGNORE);
    int bsize;
    void *bptr;
    MPI_Buffer_detach(&bptr, &bsize);
    MPI_Irecv(&y, 1, MPI_INT, left, 4, MPI_COMM_WORLD, &rq[0]);
    MPI_Ssend(&x, 1, MPI_INT, right, 4, MPI_COMM_WORLD);
    MPI_Wait(&rq[0], &st);

    /* nonblocking sends, completed by Waitany/Testall/Waitsome */
    MPI_Isend(&x, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &rq[0]);
    MPI_Issend(&x, 1, MPI_INT, right, 6, MPI_COMM_WORLD, &rq[1]);
    MPI_Recv(&y, 1, MPI_INT, left, 5, MPI_COMM_WORLD, &st);
    MPI_Recv(&y, 1, MPI_INT, left, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int idx, flag = 0, out, idxs[2];
    MPI_Waitany(2, rq, &idx, &st);
    MPI_Waitsome(2, rq, &out, idxs, MPI_STATUSES_IGNORE);
    while (!flag) MPI_Testall(2, rq, &flag, MPI_STATUSES_IGNORE);

    /* Sendrecv and Sendrecv_replace around the ring */
    MPI_Sendrecv(&x, 1, MPI_INT, right, 7, &y, 1, MPI_INT, left, 7, MPI_COMM_WORLD, &st);
    MPI_Sendrecv_replace(&x, 1, MPI_INT, right, 8, left, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    /* probes: Probe then Recv, Mprobe/Mrecv, Improbe/Imrecv */
    MPI_Isend(&x, 1, MPI_INT, right, 9, MPI_COMM_WORLD, &rq[2]);
    MPI_Probe(left, 9, MPI_COMM_WORLD, &st);
    MPI_Recv(&y, 1, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Message msg;
    MPI_Isend(&x, 1, MPI_INT, right, 10, MPI_COMM_WORLD, &rq[3]);
    MPI_Mprobe(left, 10, MPI_COMM_WORLD, &msg, &st);
    MPI_Mrecv(&y, 1, MPI_INT, &msg, MPI_STATUS_IGNORE);
    MPI_Waitall(2, rq + 2, MPI_STATUSES_IGNORE);
    MPI_Isend(&x, 1, MPI_INT, right, 11, MPI_COMM_WORLD, &rq[0]);
    flag = 0;
    while (!flag) MPI_Improbe(left, 11, MPI_COMM_WORLD, &flag, &msg, &st);
    MPI_Imrecv(&y, 1, MPI_INT, &msg, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);

    /* persistent requests, started twice */
    MPI_Send_init(&x, 1, MPI_INT, right, 12, MPI_COMM_WORLD, &rq[0]);
    MPI_Recv_init(&y, 1, MPI_INT, left, 12, MPI_COMM_WORLD, &rq[1]);
    for (int i = 0; i < 2; i++) {
        MPI_Startall(2, rq);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    }
    MPI_Request_free(&rq[0]);
    MPI_Request_free(&rq[1]);

    /* collectives, blocking and not, on the world and on derived communicators */
    MPI_Bcast(buf, 4, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce(&x, &y, 1, MPI_INT, MPI_MAX, 1, MPI_COMM_WORLD);
    int all[16];
    MPI_Gather(&x, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Allgather(&x, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Alltoall(all, 1, MPI_INT, all + 8, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Scan(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Exscan(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int counts[16] = {1, 1, 1, 1, 1, 1, 1, 1}, displs[16] = {0, 1, 2, 3, 4, 5, 6, 7};
    MPI_Gatherv(&x, 1, MPI_INT, all, counts, displs, MPI_INT, 2, MPI_COMM_WORLD);
    MPI_Reduce_scatter(all, &y, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Ibarrier(MPI_COMM_WORLD, &rq[0]);
    MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    MPI_Comm half, dup;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Barrier(half);
    int hrank, hsize;
    MPI_Comm_rank(half, &hrank);
    MPI_Comm_size(half, &hsize);
    if (hsize > 1) {
        if (hrank == 0) MPI_Send(&x, 1, MPI_INT, 1, 13, half);
        else if (hrank == 1) MPI_Recv(&y, 1, MPI_INT, 0, 13, half, MPI_STATUS_IGNORE);
    }
    MPI_Sendrecv(&x, 1, MPI_INT, right, 14, &y, 1, MPI_INT, left, 14, dup, MPI_STATUS_IGNORE);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    /* traffic to MPI_PROC_NULL is not recorded */
    MPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 15, MPI_COMM_WORLD);
    if (rank == 0) printf("coverage done\n");
    MPI_Finalize();
    return 0;
}
