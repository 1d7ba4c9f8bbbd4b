/* mpvis PMPI trace library: collectives and Roy et al.'s in-rank ring check.
 *
 * Each collective is a `coll` record on entry, with the single-valued
 * arguments every member must agree on (`root` as a world rank, `count` and
 * `dtype` of the side that is the same on every member, `bytes` = count x
 * type size, `redop`), and `group` (world ranks) the first time a
 * communicator is used; then a `coll_exit` on return.  Nonblocking
 * collectives (MPI_Ibarrier, ...) are recorded as entered and left at the
 * posting call (`nonblocking: true`): they do not block there, and the model
 * keeps one open collective per communicator.
 *
 * The ring check (Roy et al., "Collective deadlock detection", section III,
 * Algorithm A1; the mpi4py path's mpvis/instrument/ringcheck.py): before its
 * n-th blocking collective on a communicator, each member sends the
 * collective's signature to its right neighbour on a duplicate communicator
 * and compares it with its left neighbour's n-th.  If any two members differ,
 * some neighbour pair differs (Theorem 3.5) and one of them reports, names
 * both calls, flushes the trace and aborts the job before the collective
 * hangs or computes garbage.  At MPI_Finalize an end-of-execution signature
 * goes round MPI_COMM_WORLD's ring (check_final), so a rank waiting in a
 * collective that a finished neighbour never called is reported too.
 * MPVIS_RINGCHECK=0 turns the check off.
 */
#include "mvp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_RING 7
#define END_OP "end_of_execution"

typedef struct {
    int64_t n, count, bytes;
    int32_t root, site_id;
    char op[24], dtype[24], redop[12];
    char site[160];
} sig_t;

static int ringcheck = -1;

static int ring_on(void) {
    if (ringcheck < 0) {
        const char *v = getenv("MPVIS_RINGCHECK");
        ringcheck = !(v && strcmp(v, "0") == 0);
    }
    return ringcheck;
}

static void describe(char *out, size_t n, const sig_t *s) {
    if (strcmp(s->op, END_OP) == 0) { snprintf(out, n, "the end of the program (MPI_Finalize)"); return; }
    int k = snprintf(out, n, "%s(", s->op);
    const char *sep = "";
    if (s->root >= 0) { k += snprintf(out + k, n - k, "root=%d", s->root); sep = ", "; }
    if (s->count >= 0) { k += snprintf(out + k, n - k, "%scount=%lld", sep, (long long)s->count); sep = ", "; }
    if (s->dtype[0]) { k += snprintf(out + k, n - k, "%sdtype=%s", sep, s->dtype); sep = ", "; }
    if (s->redop[0]) { k += snprintf(out + k, n - k, "%sop=%s", sep, s->redop); }
    k += snprintf(out + k, n - k, ")");
    if (s->site[0]) snprintf(out + k, n - k, " at %s", s->site);
}

static int differs(const sig_t *a, const sig_t *b) {
    if (strcmp(a->op, b->op)) return 1;
    if (a->root != b->root) return 1;
    if (strcmp(a->redop, b->redop)) return 1;
    /* count and datatype compare only between predefined types: a derived type
     * of four ints matches four MPI_INTs (the type signature is what counts) */
    int predefined = strcmp(a->dtype, "derived") && strcmp(b->dtype, "derived");
    if (predefined && a->count >= 0 && b->count >= 0 &&
        (a->count != b->count || strcmp(a->dtype, b->dtype)))
        return 1;
    if (a->bytes >= 0 && b->bytes >= 0 && a->bytes != b->bytes) return 1;
    return 0;
}

static void ring_exchange(mvp_comm *c, const sig_t *mine) {
    if (c->ring == MPI_COMM_NULL || c->size < 2) return;
    int me;
    PMPI_Comm_rank(c->ring, &me);
    int right = (me + 1) % c->size, left = (me + c->size - 1) % c->size;
    sig_t theirs;
    PMPI_Sendrecv(mine, sizeof *mine, MPI_BYTE, right, TAG_RING, &theirs, sizeof theirs, MPI_BYTE, left,
                  TAG_RING, c->ring, MPI_STATUS_IGNORE);
    if (!differs(mine, &theirs)) return;
    char a[400], b[400], where[80];
    describe(a, sizeof a, mine);
    describe(b, sizeof b, &theirs);
    snprintf(where, sizeof where, "collective mismatch on communicator %lld", (long long)c->id);
    fprintf(stderr,
            "mpvis: collective mismatch on communicator %lld: as collective #%lld rank %d calls %s, "
            "rank %d calls %s\n",
            (long long)c->id, (long long)mine->n, mvp_world_of(c, me), a, mvp_world_of(c, left), b);
    fflush(stderr);
    char detail[1000];
    snprintf(detail, sizeof detail, "rank %d: %s; rank %d: %s", mvp_world_of(c, me), a, mvp_world_of(c, left), b);
    mvp_abort(1, detail);
    PMPI_Abort(MPI_COMM_WORLD, 1);
}

void mvp_ring_final(void) {
    if (!ring_on()) return;
    mvp_comm *w = mvp_comm_of(MPI_COMM_WORLD);
    sig_t s;
    memset(&s, 0, sizeof s);
    s.n = w->ncoll;
    s.count = s.bytes = -1;
    s.root = -1;
    strcpy(s.op, END_OP);
    ring_exchange(w, &s);
}

/* The collective's record and check; returns the call number for coll_exit.
 * `*seq` is the coll record's seq (the request of a nonblocking one). */
static int64_t enter(MPI_Comm comm, const char *op, int root, MPI_Count count, MPI_Datatype dt,
                     MPI_Op redop, int has_count, int nonblocking, void *pc, mvp_comm **out,
                     int64_t *seq) {
    mvp_comm *c = mvp_comm_of(comm);
    *out = NULL;
    if (!c || c->inter) return -1;
    *out = c;
    uint32_t site = mvp_site(pc);
    int64_t call = mvp_next_call();
    mvp_x x = {0};
    mvp_x_str(&x, "op", op);
    int wroot = root >= 0 ? mvp_world_of(c, root) : -1;
    if (root >= 0) mvp_x_int(&x, "root", wroot);
    int64_t bytes = -1;
    const char *dname = dt != MPI_DATATYPE_NULL ? mvp_type_name(dt) : NULL;
    if (has_count) {
        mvp_x_int(&x, "count", (int64_t)count);
        if (mvp_type_bytes(dt, count, &bytes)) mvp_x_int(&x, "bytes", bytes);
    }
    if (dname) mvp_x_str(&x, "dtype", dname);
    const char *rname = redop != MPI_OP_NULL ? mvp_op_name(redop) : NULL;
    if (rname) mvp_x_str(&x, "redop", rname);
    if (nonblocking) mvp_x_bool(&x, "nonblocking", 1);
    if (!c->group_sent) {
        mvp_x_key_array(&x, "group", (uint32_t)c->size);
        for (int i = 0; i < c->size; i++) mvp_x_raw_int(&x, c->world[i]);
        c->group_sent = 1;
    }
    mvp_rec r = {0};
    r.kind = MVK_COLL;
    r.site = site;
    r.t = mvp_now();
    r.comm = c->id;
    r.call = call;
    *seq = mvp_append(&r, &x);
    mvp_x_free(&x);
    int64_t n = c->ncoll++;
    if (!nonblocking && ring_on()) {
        sig_t s;
        memset(&s, 0, sizeof s);
        s.n = n;
        s.root = wroot;
        s.count = has_count ? (int64_t)count : -1;
        s.bytes = bytes;
        snprintf(s.op, sizeof s.op, "%s", op);
        if (has_count && dname) snprintf(s.dtype, sizeof s.dtype, "%s", dname);
        if (rname) snprintf(s.redop, sizeof s.redop, "%s", rname);
        const char *label = mvp_site_label(site);
        if (label) snprintf(s.site, sizeof s.site, "%s", label);
        ring_exchange(c, &s);
    }
    return call;
}

static void leave(mvp_comm *c, const char *op, int64_t call, void *pc) {
    mvp_x x = {0};
    mvp_x_str(&x, "op", op);
    mvp_rec r = {0};
    r.kind = MVK_COLL_EXIT;
    r.site = mvp_site(pc);
    r.t = mvp_now();
    r.comm = c->id;
    r.call = call;
    mvp_append(&r, &x);
    mvp_x_free(&x);
}

/* A nonblocking collective's request: followed until completed (or leaked). */
static void coll_request(MPI_Request *r, int64_t seq, const char *fn, void *pc) {
    mvp_req q = {.handle = *r, .type = MVR_COLL, .seq = seq, .active = 1, .started = 1,
                 .call = fn, .site = mvp_site(pc)};
    mvp_req_add(&q);
}

/* Record around PCALL; `nb` for nonblocking ones (entered and left at once,
 * their request `r` followed). */
#define AROUND(comm, op, root, count, dt, redop, has_count, nb, PCALL)                              \
    do {                                                                                            \
        if (!mvp_on) return PCALL;                                                                  \
        mvp_comm *c_;                                                                               \
        void *pc_ = MVP_PC();                                                                       \
        int64_t seq_;                                                                               \
        int64_t call_ = enter(comm, op, root, count, dt, redop, has_count, nb, pc_, &c_, &seq_);  \
        int rc_ = PCALL;                                                                            \
        if (c_) leave(c_, op, call_, pc_);                                                          \
        if (c_ && (nb) && rc_ == MPI_SUCCESS) coll_request(NB_REQ##nb, seq_, __func__, pc_);      \
        return rc_;                                                                                 \
    } while (0)
#define NB_REQ0 NULL
#define NB_REQ1 r

#define NOOP MPI_OP_NULL
#define NOTYPE MPI_DATATYPE_NULL
#define IN_PLACE(b) ((b) == MPI_IN_PLACE)

int MPI_Barrier(MPI_Comm comm) { AROUND(comm, "barrier", -1, 0, NOTYPE, NOOP, 0, 0, PMPI_Barrier(comm)); }
int MPI_Ibarrier(MPI_Comm comm, MPI_Request *r) {
    AROUND(comm, "barrier", -1, 0, NOTYPE, NOOP, 0, 1, PMPI_Ibarrier(comm, r));
}

/* The definitions below come in pairs (int counts, and MPI 4's large-count _c
 * forms) generated from one macro each. */
#define DEF_BCAST(N, P, CT, NB, ...)                                                               \
    int N(void *b, CT n, MPI_Datatype t, int root, MPI_Comm comm __VA_ARGS__) {                  \
        AROUND(comm, "bcast", root, n, t, NOOP, 1, NB, P(b, n, t, root, comm NB_ARG##NB));         \
    }
#define NB_ARG0
#define NB_ARG1 , r

DEF_BCAST(MPI_Bcast, PMPI_Bcast, int, 0)
DEF_BCAST(MPI_Ibcast, PMPI_Ibcast, int, 1, , MPI_Request *r)

#define DEF_REDUCE(N, P, CT, NB, ...)                                                                  \
    int N(const void *s, void *rb, CT n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm __VA_ARGS__) { \
        AROUND(comm, "reduce", root, n, t, op, 1, NB, P(s, rb, n, t, op, root, comm NB_ARG##NB));        \
    }
DEF_REDUCE(MPI_Reduce, PMPI_Reduce, int, 0)
DEF_REDUCE(MPI_Ireduce, PMPI_Ireduce, int, 1, , MPI_Request *r)

#define DEF_ALLRED(N, P, CT, OPN, NB, ...)                                                             \
    int N(const void *s, void *rb, CT n, MPI_Datatype t, MPI_Op op, MPI_Comm comm __VA_ARGS__) {       \
        AROUND(comm, OPN, -1, n, t, op, 1, NB, P(s, rb, n, t, op, comm NB_ARG##NB));                   \
    }
DEF_ALLRED(MPI_Allreduce, PMPI_Allreduce, int, "allreduce", 0)
DEF_ALLRED(MPI_Iallreduce, PMPI_Iallreduce, int, "allreduce", 1, , MPI_Request *r)
DEF_ALLRED(MPI_Scan, PMPI_Scan, int, "scan", 0)
DEF_ALLRED(MPI_Iscan, PMPI_Iscan, int, "scan", 1, , MPI_Request *r)
DEF_ALLRED(MPI_Exscan, PMPI_Exscan, int, "exscan", 0)
DEF_ALLRED(MPI_Iexscan, PMPI_Iexscan, int, "exscan", 1, , MPI_Request *r)

#define DEF_RSB(N, P, CT, NB, ...)                                                                     \
    int N(const void *s, void *rb, CT n, MPI_Datatype t, MPI_Op op, MPI_Comm comm __VA_ARGS__) {       \
        AROUND(comm, "reduce_scatter_block", -1, n, t, op, 1, NB, P(s, rb, n, t, op, comm NB_ARG##NB)); \
    }
DEF_RSB(MPI_Reduce_scatter_block, PMPI_Reduce_scatter_block, int, 0)
DEF_RSB(MPI_Ireduce_scatter_block, PMPI_Ireduce_scatter_block, int, 1, , MPI_Request *r)

#define DEF_RS(N, P, CT, NB, ...)                                                                      \
    int N(const void *s, void *rb, const CT ns[], MPI_Datatype t, MPI_Op op, MPI_Comm comm __VA_ARGS__) { \
        AROUND(comm, "reduce_scatter", -1, 0, t, op, 0, NB, P(s, rb, ns, t, op, comm NB_ARG##NB));    \
    }
DEF_RS(MPI_Reduce_scatter, PMPI_Reduce_scatter, int, 0)
DEF_RS(MPI_Ireduce_scatter, PMPI_Ireduce_scatter, int, 1, , MPI_Request *r)

/* Gather: every member sends sc x st (the root may send IN_PLACE: its recv side). */
#define DEF_GATHER(N, P, CT, NB, ...)                                                                  \
    int N(const void *s, CT sc, MPI_Datatype st, void *rb, CT rc, MPI_Datatype rt, int root,          \
          MPI_Comm comm __VA_ARGS__) {                                                                 \
        AROUND(comm, "gather", root, IN_PLACE(s) ? rc : sc, IN_PLACE(s) ? rt : st, NOOP, 1, NB,      \
               P(s, sc, st, rb, rc, rt, root, comm NB_ARG##NB));                                       \
    }
DEF_GATHER(MPI_Gather, PMPI_Gather, int, 0)
DEF_GATHER(MPI_Igather, PMPI_Igather, int, 1, , MPI_Request *r)

#define DEF_SCATTER(N, P, CT, NB, ...)                                                                 \
    int N(const void *s, CT sc, MPI_Datatype st, void *rb, CT rc, MPI_Datatype rt, int root,          \
          MPI_Comm comm __VA_ARGS__) {                                                                 \
        AROUND(comm, "scatter", root, IN_PLACE(rb) ? sc : rc, IN_PLACE(rb) ? st : rt, NOOP, 1, NB,   \
               P(s, sc, st, rb, rc, rt, root, comm NB_ARG##NB));                                       \
    }
DEF_SCATTER(MPI_Scatter, PMPI_Scatter, int, 0)
DEF_SCATTER(MPI_Iscatter, PMPI_Iscatter, int, 1, , MPI_Request *r)

#define DEF_ALLG(N, P, CT, OPN, NB, ...)                                                               \
    int N(const void *s, CT sc, MPI_Datatype st, void *rb, CT rc, MPI_Datatype rt,                    \
          MPI_Comm comm __VA_ARGS__) {                                                                 \
        AROUND(comm, OPN, -1, IN_PLACE(s) ? rc : sc, IN_PLACE(s) ? rt : st, NOOP, 1, NB,              \
               P(s, sc, st, rb, rc, rt, comm NB_ARG##NB));                                             \
    }
DEF_ALLG(MPI_Allgather, PMPI_Allgather, int, "allgather", 0)
DEF_ALLG(MPI_Iallgather, PMPI_Iallgather, int, "allgather", 1, , MPI_Request *r)
DEF_ALLG(MPI_Alltoall, PMPI_Alltoall, int, "alltoall", 0)
DEF_ALLG(MPI_Ialltoall, PMPI_Ialltoall, int, "alltoall", 1, , MPI_Request *r)

#define DEF_GATHERV(N, P, CT, DT, NB, ...)                                                             \
    int N(const void *s, CT sc, MPI_Datatype st, void *rb, const CT rcs[], const DT ds[],              \
          MPI_Datatype rt, int root, MPI_Comm comm __VA_ARGS__) {                                      \
        AROUND(comm, "gatherv", root, 0, IN_PLACE(s) ? rt : st, NOOP, 0, NB,                          \
               P(s, sc, st, rb, rcs, ds, rt, root, comm NB_ARG##NB));                                  \
    }
DEF_GATHERV(MPI_Gatherv, PMPI_Gatherv, int, int, 0)
DEF_GATHERV(MPI_Igatherv, PMPI_Igatherv, int, int, 1, , MPI_Request *r)

#define DEF_SCATTERV(N, P, CT, DT, NB, ...)                                                            \
    int N(const void *s, const CT scs[], const DT ds[], MPI_Datatype st, void *rb, CT rc,              \
          MPI_Datatype rt, int root, MPI_Comm comm __VA_ARGS__) {                                      \
        AROUND(comm, "scatterv", root, 0, IN_PLACE(rb) ? st : rt, NOOP, 0, NB,                        \
               P(s, scs, ds, st, rb, rc, rt, root, comm NB_ARG##NB));                                  \
    }
DEF_SCATTERV(MPI_Scatterv, PMPI_Scatterv, int, int, 0)
DEF_SCATTERV(MPI_Iscatterv, PMPI_Iscatterv, int, int, 1, , MPI_Request *r)

#define DEF_ALLGV(N, P, CT, DT, NB, ...)                                                               \
    int N(const void *s, CT sc, MPI_Datatype st, void *rb, const CT rcs[], const DT ds[],              \
          MPI_Datatype rt, MPI_Comm comm __VA_ARGS__) {                                                \
        AROUND(comm, "allgatherv", -1, 0, IN_PLACE(s) ? rt : st, NOOP, 0, NB,                         \
               P(s, sc, st, rb, rcs, ds, rt, comm NB_ARG##NB));                                        \
    }
DEF_ALLGV(MPI_Allgatherv, PMPI_Allgatherv, int, int, 0)
DEF_ALLGV(MPI_Iallgatherv, PMPI_Iallgatherv, int, int, 1, , MPI_Request *r)

#define DEF_ALLTOALLV(N, P, CT, DT, NB, ...)                                                           \
    int N(const void *s, const CT scs[], const DT sds[], MPI_Datatype st, void *rb, const CT rcs[],    \
          const DT rds[], MPI_Datatype rt, MPI_Comm comm __VA_ARGS__) {                                \
        AROUND(comm, "alltoallv", -1, 0, IN_PLACE(s) ? rt : st, NOOP, 0, NB,                          \
               P(s, scs, sds, st, rb, rcs, rds, rt, comm NB_ARG##NB));                                 \
    }
DEF_ALLTOALLV(MPI_Alltoallv, PMPI_Alltoallv, int, int, 0)
DEF_ALLTOALLV(MPI_Ialltoallv, PMPI_Ialltoallv, int, int, 1, , MPI_Request *r)

#define DEF_ALLTOALLW(N, P, CT, DT, NB, ...)                                                           \
    int N(const void *s, const CT scs[], const DT sds[], const MPI_Datatype sts[], void *rb,           \
          const CT rcs[], const DT rds[], const MPI_Datatype rts[], MPI_Comm comm __VA_ARGS__) {       \
        AROUND(comm, "alltoallw", -1, 0, NOTYPE, NOOP, 0, NB,                                         \
               P(s, scs, sds, sts, rb, rcs, rds, rts, comm NB_ARG##NB));                               \
    }
DEF_ALLTOALLW(MPI_Alltoallw, PMPI_Alltoallw, int, int, 0)
DEF_ALLTOALLW(MPI_Ialltoallw, PMPI_Ialltoallw, int, int, 1, , MPI_Request *r)

#if MPI_VERSION >= 4
DEF_BCAST(MPI_Bcast_c, PMPI_Bcast_c, MPI_Count, 0)
DEF_BCAST(MPI_Ibcast_c, PMPI_Ibcast_c, MPI_Count, 1, , MPI_Request *r)
DEF_REDUCE(MPI_Reduce_c, PMPI_Reduce_c, MPI_Count, 0)
DEF_REDUCE(MPI_Ireduce_c, PMPI_Ireduce_c, MPI_Count, 1, , MPI_Request *r)
DEF_ALLRED(MPI_Allreduce_c, PMPI_Allreduce_c, MPI_Count, "allreduce", 0)
DEF_ALLRED(MPI_Iallreduce_c, PMPI_Iallreduce_c, MPI_Count, "allreduce", 1, , MPI_Request *r)
DEF_ALLRED(MPI_Scan_c, PMPI_Scan_c, MPI_Count, "scan", 0)
DEF_ALLRED(MPI_Iscan_c, PMPI_Iscan_c, MPI_Count, "scan", 1, , MPI_Request *r)
DEF_ALLRED(MPI_Exscan_c, PMPI_Exscan_c, MPI_Count, "exscan", 0)
DEF_ALLRED(MPI_Iexscan_c, PMPI_Iexscan_c, MPI_Count, "exscan", 1, , MPI_Request *r)
DEF_RSB(MPI_Reduce_scatter_block_c, PMPI_Reduce_scatter_block_c, MPI_Count, 0)
DEF_RSB(MPI_Ireduce_scatter_block_c, PMPI_Ireduce_scatter_block_c, MPI_Count, 1, , MPI_Request *r)
DEF_RS(MPI_Reduce_scatter_c, PMPI_Reduce_scatter_c, MPI_Count, 0)
DEF_RS(MPI_Ireduce_scatter_c, PMPI_Ireduce_scatter_c, MPI_Count, 1, , MPI_Request *r)
DEF_GATHER(MPI_Gather_c, PMPI_Gather_c, MPI_Count, 0)
DEF_GATHER(MPI_Igather_c, PMPI_Igather_c, MPI_Count, 1, , MPI_Request *r)
DEF_SCATTER(MPI_Scatter_c, PMPI_Scatter_c, MPI_Count, 0)
DEF_SCATTER(MPI_Iscatter_c, PMPI_Iscatter_c, MPI_Count, 1, , MPI_Request *r)
DEF_ALLG(MPI_Allgather_c, PMPI_Allgather_c, MPI_Count, "allgather", 0)
DEF_ALLG(MPI_Iallgather_c, PMPI_Iallgather_c, MPI_Count, "allgather", 1, , MPI_Request *r)
DEF_ALLG(MPI_Alltoall_c, PMPI_Alltoall_c, MPI_Count, "alltoall", 0)
DEF_ALLG(MPI_Ialltoall_c, PMPI_Ialltoall_c, MPI_Count, "alltoall", 1, , MPI_Request *r)
DEF_GATHERV(MPI_Gatherv_c, PMPI_Gatherv_c, MPI_Count, MPI_Aint, 0)
DEF_GATHERV(MPI_Igatherv_c, PMPI_Igatherv_c, MPI_Count, MPI_Aint, 1, , MPI_Request *r)
DEF_SCATTERV(MPI_Scatterv_c, PMPI_Scatterv_c, MPI_Count, MPI_Aint, 0)
DEF_SCATTERV(MPI_Iscatterv_c, PMPI_Iscatterv_c, MPI_Count, MPI_Aint, 1, , MPI_Request *r)
DEF_ALLGV(MPI_Allgatherv_c, PMPI_Allgatherv_c, MPI_Count, MPI_Aint, 0)
DEF_ALLGV(MPI_Iallgatherv_c, PMPI_Iallgatherv_c, MPI_Count, MPI_Aint, 1, , MPI_Request *r)
DEF_ALLTOALLV(MPI_Alltoallv_c, PMPI_Alltoallv_c, MPI_Count, MPI_Aint, 0)
DEF_ALLTOALLV(MPI_Ialltoallv_c, PMPI_Ialltoallv_c, MPI_Count, MPI_Aint, 1, , MPI_Request *r)
DEF_ALLTOALLW(MPI_Alltoallw_c, PMPI_Alltoallw_c, MPI_Count, MPI_Aint, 0)
DEF_ALLTOALLW(MPI_Ialltoallw_c, PMPI_Ialltoallw_c, MPI_Count, MPI_Aint, 1, , MPI_Request *r)
#endif

/* -- the program's life -------------------------------------------------------------- */
int MPI_Init(int *argc, char ***argv) {
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) mvp_start(argc, argv, MPI_THREAD_SINGLE);
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) mvp_start(argc, argv, *provided);
    return rc;
}

int MPI_Finalize(void) {
    mvp_finish();
    return PMPI_Finalize();
}

int MPI_Abort(MPI_Comm comm, int code) {
    char where[200] = "";
    if (mvp_on) {
        const char *s = mvp_site_label(mvp_site(MVP_PC()));
        if (s) snprintf(where, sizeof where, "%s", s);
    }
    mvp_abort(code, where[0] ? where : NULL);
    return PMPI_Abort(comm, code);
}
