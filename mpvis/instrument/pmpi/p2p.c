/* mpvis PMPI trace library: point-to-point calls and completions.
 *
 * Records mean what the mpi4py path's records mean (docs/trace-format.md):
 *  - a send is recorded before the call (`blocking`, `sync`, `mode`, `size`;
 *    nonblocking ones carry `req` = their seq); MPI_PROC_NULL traffic is not
 *    recorded;
 *  - a blocking receive is a `recv` before the call and a `consume` after it;
 *    a nonblocking one a `recv` with `req`, and its `consume` comes, with a
 *    `wait` listing every request the call completed, when MPI_Wait*,
 *    MPI_Test* (successful) returns it;
 *  - Sendrecv and Sendrecv_replace are a nonblocking send and receive
 *    completed together (their halves are unordered, as in MPI);
 *  - a matched probe (Mprobe, successful Improbe) is the message's match: its
 *    `recv` and `consume` are recorded there, Mrecv/Imrecv add nothing;
 *  - a receive that takes the message a wildcard Probe/Iprobe just found
 *    (same communicator, source and tag) is recorded with the probe's
 *    wildcards and `probed: true`: which message it gets was decided by the
 *    probe, so it races like a wildcard receive.
 * Consumes carry no `send`: the reader names it by MPI's non-overtaking rule
 * (on one channel, receives in posting order take the sends in send order),
 * which is exact for MPI matching: a receive that can take the channel's
 * k-th message can take every earlier one, and an earlier-posted receive that
 * matches it is served first (MPI 4.1, section 3.5, "Order").
 * MPVIS_SYNC_SENDS=1 runs standard-mode sends as synchronous ones (recorded
 * with `sync: true`), which turns unsafe send cycles into real deadlocks.
 */
#include "mvp.h"

#include <stdlib.h>
#include <string.h>

#define ON (MVP_LIKELY(mvp_on))
static void poll_reset(void);
static int poll_due(void);
#define TAG(t) ((t) == MPI_ANY_TAG ? -1 : (t))

static int64_t rec_send(mvp_comm *c, int dest, int tag, int flags, int mode, int64_t size,
                        uint32_t site, int64_t call) {
    poll_reset();
    mvp_rec r;
    r.kind = MVK_SEND;
    r.flags = (uint8_t)flags;
    r.mode = (uint8_t)mode;
    r.site = site;
    r.t = mvp_now();
    r.comm = c->id;
    r.a = dest;
    r.b = tag;
    r.c = 0;
    r.d = size;
    r.call = call;
    return mvp_append(&r, NULL);
}

static int64_t rec_recv(mvp_comm *c, int src, int tag, int flags, uint32_t site, int64_t call) {
    poll_reset();
    mvp_rec r;
    r.kind = MVK_RECV;
    r.flags = (uint8_t)flags;
    r.mode = 0;
    r.site = site;
    r.t = mvp_now();
    r.comm = c->id;
    r.a = src;
    r.b = tag;
    r.c = r.d = 0;
    r.call = call;
    return mvp_append(&r, NULL);
}

static void rec_consume(mvp_comm *c, int64_t recv, const MPI_Status *st, uint32_t site, int64_t call) {
    poll_reset();
    mvp_rec r;
    r.kind = MVK_CONSUME;
    r.flags = 0;
    r.mode = 0;
    r.site = site;
    r.t = mvp_now();
    r.comm = c->id;
    r.a = mvp_world_of(c, st->MPI_SOURCE);
    r.b = st->MPI_TAG;
    r.c = recv;
    r.d = 0;
    r.call = call;
    mvp_append(&r, NULL);
}

static int64_t bytes_of(MPI_Datatype t, MPI_Count n) {
    int64_t b = 0;
    return mvp_type_bytes(t, n, &b) ? b : -1;
}

/* A traceable intracommunicator and peer, or NULL (untraced). */
static mvp_comm *traced(MPI_Comm comm, int peer) {
    if (peer == MPI_PROC_NULL) return NULL;
    mvp_comm *c = mvp_comm_of(comm);
    return c && !c->inter ? c : NULL;
}

/* A rank that polls (MPI_Test*, MPI_Iprobe in a loop) makes no record while it
 * waits, so a deadlock among polling ranks would never be proven live.  With
 * MPVIS_POLL_WAITING=1 (`mpvis run --stop-on-deadlock` sets it), after POLLS
 * unsuccessful polls in a row lasting at least POLL_SECONDS, one `waiting`
 * record says what the rank polls for; any record of a send or receive starts
 * a new streak.  Off by default: where it falls depends on timing, which a
 * recorded run's event numbers must not (replay). */
#define POLLS 1000
#define POLL_SECONDS 0.2
static MVP_TLS struct { long n; double t0; int said; } poll_;
static int poll_waiting = -1;

static int poll_due(void) {
    if (poll_waiting < 0) {
        const char *v = getenv("MPVIS_POLL_WAITING");
        poll_waiting = v && strcmp(v, "1") == 0 && !mvp_replay_active();
    }
    if (!poll_waiting || poll_.said) return 0;
    double now = mvp_now();
    if (poll_.n++ == 0) poll_.t0 = now;
    if (poll_.n < POLLS || now - poll_.t0 < POLL_SECONDS) return 0;
    poll_.said = 1;
    return 1;
}

static void poll_reset(void) { poll_.n = 0; poll_.said = 0; }

/* The last wildcard probe's outcome, for the receive that takes its message. */
static MVP_TLS struct { int valid; MPI_Comm comm; int src, tag, psrc, ptag; } probe;

static void probed(MPI_Comm comm, int src, int tag, const MPI_Status *st) {
    probe.valid = src == MPI_ANY_SOURCE || tag == MPI_ANY_TAG;
    probe.comm = comm;
    probe.src = st->MPI_SOURCE;
    probe.tag = st->MPI_TAG;
    probe.psrc = src;
    probe.ptag = tag;
}

/* The receive's arguments as recorded: a probe's wildcards, replay's forcing. */
static int recv_args(MPI_Comm comm, int *src, int *tag, int *rsrc, int *rtag, mvp_comm *c) {
    int flags = 0;
    if (probe.valid && probe.comm == comm && probe.src == *src && probe.tag == *tag) {
        *rsrc = probe.psrc == MPI_ANY_SOURCE ? -1 : mvp_world_of(c, probe.psrc);
        *rtag = TAG(probe.ptag);
        flags |= MVF_PROBED;
    } else {
        *rsrc = mvp_world_of(c, *src);
        *rtag = TAG(*tag);
    }
    probe.valid = 0;
    if (*src == MPI_ANY_SOURCE && mvp_replay_active()) {
        int fsrc, ftag;
        if (mvp_replay_source(mvp_peek_seq(), &fsrc, &ftag)) {
            for (int i = 0; i < c->size; i++)
                if (c->world[i] == fsrc) { *src = i; break; }
        }
    }
    return flags;
}

/* -- blocking sends ------------------------------------------------------------- */
#define BLOCKING_SEND(NAME, PNAME, CT, MODE, SYNC, SSEND)                                             \
    int NAME(const void *buf, CT count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) {    \
        mvp_comm *c;                                                                             \
        if (!ON || !(c = traced(comm, dest))) return PNAME(buf, count, dt, dest, tag, comm);     \
        int sync = (SYNC) || ((MODE) == MVM_STANDARD && mvp_sync_sends);                         \
        rec_send(c, mvp_world_of(c, dest), tag, MVF_BLOCKING | (sync ? MVF_SYNC : 0), MODE,      \
                 bytes_of(dt, count), mvp_site(MVP_PC()), mvp_next_call());                      \
        if (sync && !(SYNC)) return SSEND(buf, count, dt, dest, tag, comm);                      \
        return PNAME(buf, count, dt, dest, tag, comm);                                           \
    }

BLOCKING_SEND(MPI_Send, PMPI_Send, int, MVM_STANDARD, 0, PMPI_Ssend)
BLOCKING_SEND(MPI_Bsend, PMPI_Bsend, int, MVM_BUFFERED, 0, PMPI_Ssend)
BLOCKING_SEND(MPI_Rsend, PMPI_Rsend, int, MVM_READY, 0, PMPI_Ssend)
BLOCKING_SEND(MPI_Ssend, PMPI_Ssend, int, MVM_SYNCHRONOUS, 1, PMPI_Ssend)
#if MPI_VERSION >= 4
BLOCKING_SEND(MPI_Send_c, PMPI_Send_c, MPI_Count, MVM_STANDARD, 0, PMPI_Ssend_c)
BLOCKING_SEND(MPI_Bsend_c, PMPI_Bsend_c, MPI_Count, MVM_BUFFERED, 0, PMPI_Ssend_c)
BLOCKING_SEND(MPI_Rsend_c, PMPI_Rsend_c, MPI_Count, MVM_READY, 0, PMPI_Ssend_c)
BLOCKING_SEND(MPI_Ssend_c, PMPI_Ssend_c, MPI_Count, MVM_SYNCHRONOUS, 1, PMPI_Ssend_c)
#endif

/* -- nonblocking sends ------------------------------------------------------------ */
static void new_send_req(MPI_Request *req, int64_t seq, mvp_comm *c, const char *call, uint32_t site) {
    mvp_req q = {.handle = *req, .seq = seq, .type = MVR_SEND, .active = 1, .started = 1,
                 .comm = c, .call = call, .site = site};
    mvp_req_add(&q);
}

#define NONBLOCKING_SEND(NAME, PNAME, CT, MODE, SYNC, ISSEND)                                            \
    int NAME(const void *buf, CT count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,        \
             MPI_Request *req) {                                                                   \
        mvp_comm *c;                                                                               \
        if (!ON || !(c = traced(comm, dest))) return PNAME(buf, count, dt, dest, tag, comm, req); \
        int sync = (SYNC) || ((MODE) == MVM_STANDARD && mvp_sync_sends);                           \
        uint32_t site = mvp_site(MVP_PC());                                                        \
        int64_t seq = rec_send(c, mvp_world_of(c, dest), tag,                                     \
                               MVF_NONBLOCKING_REQ | (sync ? MVF_SYNC : 0), MODE,                  \
                               bytes_of(dt, count), site, mvp_next_call());                        \
        int rc = sync && !(SYNC) ? ISSEND(buf, count, dt, dest, tag, comm, req)                   \
                                 : PNAME(buf, count, dt, dest, tag, comm, req);                    \
        if (rc == MPI_SUCCESS) new_send_req(req, seq, c, #NAME, site);                             \
        return rc;                                                                                 \
    }

NONBLOCKING_SEND(MPI_Isend, PMPI_Isend, int, MVM_STANDARD, 0, PMPI_Issend)
NONBLOCKING_SEND(MPI_Ibsend, PMPI_Ibsend, int, MVM_BUFFERED, 0, PMPI_Issend)
NONBLOCKING_SEND(MPI_Irsend, PMPI_Irsend, int, MVM_READY, 0, PMPI_Issend)
NONBLOCKING_SEND(MPI_Issend, PMPI_Issend, int, MVM_SYNCHRONOUS, 1, PMPI_Issend)
#if MPI_VERSION >= 4
NONBLOCKING_SEND(MPI_Isend_c, PMPI_Isend_c, MPI_Count, MVM_STANDARD, 0, PMPI_Issend_c)
NONBLOCKING_SEND(MPI_Ibsend_c, PMPI_Ibsend_c, MPI_Count, MVM_BUFFERED, 0, PMPI_Issend_c)
NONBLOCKING_SEND(MPI_Irsend_c, PMPI_Irsend_c, MPI_Count, MVM_READY, 0, PMPI_Issend_c)
NONBLOCKING_SEND(MPI_Issend_c, PMPI_Issend_c, MPI_Count, MVM_SYNCHRONOUS, 1, PMPI_Issend_c)
#endif

/* -- receives ------------------------------------------------------------------------ */
#define BLOCKING_RECV(NAME, PNAME, CT)                                                           \
    int NAME(void *buf, CT count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,              \
             MPI_Status *status) {                                                               \
        mvp_comm *c;                                                                             \
        if (!ON || !(c = traced(comm, src))) return PNAME(buf, count, dt, src, tag, comm, status); \
        MPI_Status local;                                                                        \
        MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;                          \
        int rsrc, rtag;                                                                          \
        int flags = recv_args(comm, &src, &tag, &rsrc, &rtag, c);                                \
        uint32_t site = mvp_site(MVP_PC());                                                      \
        int64_t call = mvp_next_call();                                                          \
        int64_t seq = rec_recv(c, rsrc, rtag, MVF_BLOCKING | flags, site, call);                 \
        int rc = PNAME(buf, count, dt, src, tag, comm, st);                                      \
        if (rc == MPI_SUCCESS && st->MPI_SOURCE != MPI_PROC_NULL) rec_consume(c, seq, st, site, call); \
        return rc;                                                                               \
    }

BLOCKING_RECV(MPI_Recv, PMPI_Recv, int)
#if MPI_VERSION >= 4
BLOCKING_RECV(MPI_Recv_c, PMPI_Recv_c, MPI_Count)
#endif

static void new_recv_req(MPI_Request *req, int64_t seq, mvp_comm *c, int src, int tag,
                         const char *call, uint32_t site) {
    mvp_req q = {.handle = *req, .seq = seq, .type = MVR_RECV, .active = 1, .started = 1,
                 .comm = c, .src = src, .tag = tag, .call = call, .site = site};
    mvp_req_add(&q);
}

#define NONBLOCKING_RECV(NAME, PNAME, CT)                                                           \
    int NAME(void *buf, CT count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,                 \
             MPI_Request *req) {                                                                    \
        mvp_comm *c;                                                                                \
        if (!ON || !(c = traced(comm, src))) return PNAME(buf, count, dt, src, tag, comm, req);     \
        int rsrc, rtag;                                                                             \
        int flags = recv_args(comm, &src, &tag, &rsrc, &rtag, c);                                   \
        uint32_t site = mvp_site(MVP_PC());                                                         \
        int64_t seq = rec_recv(c, rsrc, rtag, MVF_NONBLOCKING_REQ | flags, site, mvp_next_call()); \
        int rc = PNAME(buf, count, dt, src, tag, comm, req);                                        \
        if (rc == MPI_SUCCESS) new_recv_req(req, seq, c, rsrc, rtag, #NAME, site);                  \
        return rc;                                                                                  \
    }

NONBLOCKING_RECV(MPI_Irecv, PMPI_Irecv, int)
#if MPI_VERSION >= 4
NONBLOCKING_RECV(MPI_Irecv_c, PMPI_Irecv_c, MPI_Count)
#endif

/* -- Sendrecv: a nonblocking send and receive completed together ---------------------- */
/* The send and receive halves, and a `waiting` on both: the rank may block in
 * the call (the live deadlock check must see where). */
static void sendrecv_pre(mvp_comm *cs, mvp_comm *cr, int dest, int stag, int64_t bytes, int src,
                         int rtag, uint32_t site, int64_t call, int64_t *sseq, int64_t *rseq) {
    *sseq = *rseq = -1;
    if (cs) *sseq = rec_send(cs, mvp_world_of(cs, dest), stag, MVF_NONBLOCKING_REQ, MVM_STANDARD, bytes, site, call);
    if (cr) *rseq = rec_recv(cr, mvp_world_of(cr, src), TAG(rtag), MVF_NONBLOCKING_REQ, site, call);
    mvp_x x = {0};
    mvp_x_key_array(&x, "reqs", (uint32_t)((*sseq >= 0) + (*rseq >= 0)));
    if (*sseq >= 0) mvp_x_raw_int(&x, *sseq);
    if (*rseq >= 0) mvp_x_raw_int(&x, *rseq);
    mvp_rec r = {0};
    r.kind = MVK_WAITING;
    r.site = site;
    r.t = mvp_now();
    r.call = call;
    mvp_append(&r, &x);
    mvp_x_free(&x);
}

static void sendrecv_post(mvp_comm *cr, int64_t sseq, int64_t rseq, const MPI_Status *st, uint32_t site,
                          int64_t call) {
    if (rseq >= 0 && st->MPI_SOURCE != MPI_PROC_NULL) rec_consume(cr, rseq, st, site, call);
    mvp_x x = {0};
    int n = (sseq >= 0) + (rseq >= 0 && st->MPI_SOURCE != MPI_PROC_NULL);
    if (!n) return;
    mvp_x_key_array(&x, "reqs", (uint32_t)n);
    if (sseq >= 0) mvp_x_raw_int(&x, sseq);
    if (rseq >= 0 && st->MPI_SOURCE != MPI_PROC_NULL) mvp_x_raw_int(&x, rseq);
    mvp_rec r = {0};
    r.kind = MVK_WAIT;
    r.site = site;
    r.t = mvp_now();
    r.call = call;
    mvp_append(&r, &x);
    mvp_x_free(&x);
}

#define SENDRECV(NAME, PNAME, CT)                                                                  \
    int NAME(const void *sb, CT sc, MPI_Datatype st_, int dest, int stag, void *rb, CT rc_,        \
             MPI_Datatype rt, int src, int rtag, MPI_Comm comm, MPI_Status *status) {              \
        mvp_comm *cs, *cr;                                                                         \
        if (!ON) return PNAME(sb, sc, st_, dest, stag, rb, rc_, rt, src, rtag, comm, status);      \
        cs = traced(comm, dest);                                                                   \
        cr = traced(comm, src);                                                                    \
        if (!cs && !cr) return PNAME(sb, sc, st_, dest, stag, rb, rc_, rt, src, rtag, comm, status); \
        MPI_Status local;                                                                          \
        MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;                            \
        uint32_t site = mvp_site(MVP_PC());                                                        \
        int64_t call = mvp_next_call(), sseq, rseq;                                                \
        sendrecv_pre(cs, cr, dest, stag, bytes_of(st_, sc), src, rtag, site, call, &sseq, &rseq);  \
        int rc = PNAME(sb, sc, st_, dest, stag, rb, rc_, rt, src, rtag, comm, st);                 \
        if (rc == MPI_SUCCESS) sendrecv_post(cr, sseq, rseq, st, site, call);                      \
        return rc;                                                                                 \
    }

SENDRECV(MPI_Sendrecv, PMPI_Sendrecv, int)
#if MPI_VERSION >= 4
SENDRECV(MPI_Sendrecv_c, PMPI_Sendrecv_c, MPI_Count)
#endif

#define SENDRECV_REPLACE(NAME, PNAME, CT)                                                        \
    int NAME(void *b, CT n, MPI_Datatype t, int dest, int stag, int src, int rtag, MPI_Comm comm, \
             MPI_Status *status) {                                                               \
        mvp_comm *cs, *cr;                                                                       \
        if (!ON) return PNAME(b, n, t, dest, stag, src, rtag, comm, status);                     \
        cs = traced(comm, dest);                                                                 \
        cr = traced(comm, src);                                                                  \
        if (!cs && !cr) return PNAME(b, n, t, dest, stag, src, rtag, comm, status);              \
        MPI_Status local;                                                                        \
        MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;                          \
        uint32_t site = mvp_site(MVP_PC());                                                      \
        int64_t call = mvp_next_call(), sseq, rseq;                                              \
        sendrecv_pre(cs, cr, dest, stag, bytes_of(t, n), src, rtag, site, call, &sseq, &rseq);   \
        int rc = PNAME(b, n, t, dest, stag, src, rtag, comm, st);                                \
        if (rc == MPI_SUCCESS) sendrecv_post(cr, sseq, rseq, st, site, call);                    \
        return rc;                                                                               \
    }

SENDRECV_REPLACE(MPI_Sendrecv_replace, PMPI_Sendrecv_replace, int)
#if MPI_VERSION >= 4
SENDRECV_REPLACE(MPI_Sendrecv_replace_c, PMPI_Sendrecv_replace_c, MPI_Count)
#endif

/* -- probes ------------------------------------------------------------------------------- */
/* A blocking probe: `waiting` with the probe's arguments first, so that a rank
 * blocked there shows (and deadlocks in probes are found).  Written whether or
 * not the probe blocks, so a rank's event numbers do not depend on timing. */
static void probe_waits(mvp_comm *c, int src, int tag, uint32_t site, int64_t call) {
    mvp_x x = {0};
    mvp_x_key_array(&x, "reqs", 0);
    mvp_x_int(&x, "comm", c->id);
    mvp_x_key(&x, "probe");
    mvp_x_raw_map(&x, 2);
    mvp_x_raw_str(&x, "src");
    mvp_x_raw_int(&x, src == MPI_ANY_SOURCE ? -1 : mvp_world_of(c, src));
    mvp_x_raw_str(&x, "tag");
    mvp_x_raw_int(&x, TAG(tag));
    mvp_rec r = {0};
    r.kind = MVK_WAITING;
    r.site = site;
    r.t = mvp_now();
    r.call = call;
    mvp_append(&r, &x);
    mvp_x_free(&x);
}

/* Replay: the source a wildcard probe must find, when the receive that will
 * take its message (event `recv_seq`) is forced. */
static int forced_probe(mvp_comm *c, int src, int64_t recv_seq) {
    int fsrc, ftag;
    if (src != MPI_ANY_SOURCE || !mvp_replay_active() || !mvp_replay_source(recv_seq, &fsrc, &ftag))
        return src;
    for (int i = 0; i < c->size; i++)
        if (c->world[i] == fsrc) return i;
    return src;
}

int MPI_Probe(int src, int tag, MPI_Comm comm, MPI_Status *status) {
    mvp_comm *c;
    if (!ON || !(c = traced(comm, src))) return PMPI_Probe(src, tag, comm, status);
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    int psrc = forced_probe(c, src, mvp_peek_seq() + 1);  /* after the waiting record */
    probe_waits(c, src, tag, mvp_site(MVP_PC()), mvp_next_call());
    int rc = PMPI_Probe(psrc, tag, comm, st);
    if (rc == MPI_SUCCESS) probed(comm, src, tag, st);
    return rc;
}

int MPI_Iprobe(int src, int tag, MPI_Comm comm, int *flag, MPI_Status *status) {
    mvp_comm *c;
    if (!ON || !(c = traced(comm, src))) return PMPI_Iprobe(src, tag, comm, flag, status);
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    int rc = PMPI_Iprobe(forced_probe(c, src, mvp_peek_seq()), tag, comm, flag, st);
    if (rc == MPI_SUCCESS && *flag) {
        poll_reset();
        probed(comm, src, tag, st);
    } else if (rc == MPI_SUCCESS && poll_due()) {
        probe_waits(c, src, tag, mvp_site(MVP_PC()), mvp_next_call());
    }
    return rc;
}

static MVP_TLS int64_t last_matched = -1;   /* the recv of the last matched probe */

/* A matched probe is the match: recv and consume now. */
static void matched(mvp_comm *c, int src, int tag, const MPI_Status *st, uint32_t site, int64_t call) {
    if (st->MPI_SOURCE == MPI_PROC_NULL) return;
    int64_t seq = rec_recv(c, mvp_world_of(c, src), TAG(tag), MVF_BLOCKING, site, call);
    rec_consume(c, seq, st, site, call);
    last_matched = seq;
}

/* Imrecv: the message was matched (and recorded) at the probe; its request is
 * followed so that one never completed shows as a leak. */
#define IMRECV(NAME, PNAME, CT)                                                          \
    int NAME(void *buf, CT count, MPI_Datatype dt, MPI_Message *msg, MPI_Request *req) { \
        int rc = PNAME(buf, count, dt, msg, req);                                        \
        if (rc == MPI_SUCCESS && ON && *req != MPI_REQUEST_NULL) {                       \
            mvp_req q = {.handle = *req, .type = MVR_OTHER, .seq = last_matched,         \
                         .active = 1, .started = 1, .call = #NAME,                       \
                         .site = mvp_site(MVP_PC())};                                    \
            mvp_req_add(&q);                                                             \
        }                                                                                \
        return rc;                                                                       \
    }

IMRECV(MPI_Imrecv, PMPI_Imrecv, int)
#if MPI_VERSION >= 4
IMRECV(MPI_Imrecv_c, PMPI_Imrecv_c, MPI_Count)
#endif

int MPI_Mprobe(int src, int tag, MPI_Comm comm, MPI_Message *msg, MPI_Status *status) {
    mvp_comm *c;
    if (!ON || !(c = traced(comm, src))) return PMPI_Mprobe(src, tag, comm, msg, status);
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    uint32_t site = mvp_site(MVP_PC());
    int64_t call = mvp_next_call();
    int psrc = forced_probe(c, src, mvp_peek_seq() + 1);
    probe_waits(c, src, tag, site, call);
    int rc = PMPI_Mprobe(psrc, tag, comm, msg, st);
    if (rc == MPI_SUCCESS) matched(c, src, tag, st, site, call);
    return rc;
}

int MPI_Improbe(int src, int tag, MPI_Comm comm, int *flag, MPI_Message *msg, MPI_Status *status) {
    mvp_comm *c;
    if (!ON || !(c = traced(comm, src))) return PMPI_Improbe(src, tag, comm, flag, msg, status);
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    int rc = PMPI_Improbe(forced_probe(c, src, mvp_peek_seq()), tag, comm, flag, msg, st);
    if (rc == MPI_SUCCESS && *flag) matched(c, src, tag, st, mvp_site(MVP_PC()), mvp_next_call());
    else if (rc == MPI_SUCCESS && poll_due())
        probe_waits(c, src, tag, mvp_site(MVP_PC()), mvp_next_call());
    return rc;
}

/* -- persistent requests --------------------------------------------------------------------- */
static void persistent(MPI_Request *req, int type, mvp_comm *c, int peer, int tag, int mode,
                       int64_t size, const char *call, uint32_t site) {
    mvp_req q = {.handle = *req, .type = type, .persistent = 1, .comm = c, .mode = mode,
                 .size = size, .call = call, .site = site};
    if (type == MVR_SEND) { q.dest = mvp_world_of(c, peer); q.tag = tag; }
    else { q.src = mvp_world_of(c, peer); q.tag = TAG(tag); }
    mvp_req_add(&q);
}

#define SEND_INIT(NAME, PNAME, CT, MODE)                                                            \
    int NAME(const void *buf, CT count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,         \
             MPI_Request *req) {                                                                    \
        mvp_comm *c;                                                                                \
        int rc = PNAME(buf, count, dt, dest, tag, comm, req);                                       \
        if (rc == MPI_SUCCESS && ON && (c = traced(comm, dest)))                                   \
            persistent(req, MVR_SEND, c, dest, tag, MODE, bytes_of(dt, count), #NAME,               \
                       mvp_site(MVP_PC()));                                                         \
        return rc;                                                                                  \
    }

SEND_INIT(MPI_Send_init, PMPI_Send_init, int, MVM_STANDARD)
SEND_INIT(MPI_Bsend_init, PMPI_Bsend_init, int, MVM_BUFFERED)
SEND_INIT(MPI_Rsend_init, PMPI_Rsend_init, int, MVM_READY)
SEND_INIT(MPI_Ssend_init, PMPI_Ssend_init, int, MVM_SYNCHRONOUS)
#if MPI_VERSION >= 4
SEND_INIT(MPI_Send_init_c, PMPI_Send_init_c, MPI_Count, MVM_STANDARD)
SEND_INIT(MPI_Bsend_init_c, PMPI_Bsend_init_c, MPI_Count, MVM_BUFFERED)
SEND_INIT(MPI_Rsend_init_c, PMPI_Rsend_init_c, MPI_Count, MVM_READY)
SEND_INIT(MPI_Ssend_init_c, PMPI_Ssend_init_c, MPI_Count, MVM_SYNCHRONOUS)
#endif

#define RECV_INIT(NAME, PNAME, CT)                                                                  \
    int NAME(void *buf, CT count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,                 \
             MPI_Request *req) {                                                                    \
        mvp_comm *c;                                                                                \
        int rc = PNAME(buf, count, dt, src, tag, comm, req);                                        \
        if (rc == MPI_SUCCESS && ON && (c = traced(comm, src)))                                    \
            persistent(req, MVR_RECV, c, src, tag, 0, 0, #NAME, mvp_site(MVP_PC()));                \
        return rc;                                                                                  \
    }

RECV_INIT(MPI_Recv_init, PMPI_Recv_init, int)
#if MPI_VERSION >= 4
RECV_INIT(MPI_Recv_init_c, PMPI_Recv_init_c, MPI_Count)
#endif

/* A persistent request starts: a nonblocking send or receive of its own. */
static void started(MPI_Request *req, uint32_t site, int64_t call) {
    mvp_req *q = mvp_req_find(*req);
    if (!q || !q->persistent) return;
    if (q->type == MVR_SEND) {
        int sync = q->mode == MVM_SYNCHRONOUS;
        q->seq = rec_send(q->comm, q->dest, q->tag, MVF_NONBLOCKING_REQ | (sync ? MVF_SYNC : 0), q->mode,
                          q->size, site, call);
    } else if (q->type == MVR_RECV) {
        q->seq = rec_recv(q->comm, q->src, q->tag, MVF_NONBLOCKING_REQ, site, call);
    }
    q->active = q->started = 1;
}

int MPI_Start(MPI_Request *req) {
    if (ON) started(req, mvp_site(MVP_PC()), mvp_next_call());
    return PMPI_Start(req);
}

int MPI_Startall(int n, MPI_Request reqs[]) {
    if (ON) {
        uint32_t site = mvp_site(MVP_PC());
        int64_t call = mvp_next_call();
        for (int i = 0; i < n; i++) started(&reqs[i], site, call);
    }
    return PMPI_Startall(n, reqs);
}

int MPI_Request_free(MPI_Request *req) {
    if (ON) {
        mvp_req *q = mvp_req_find(*req);
        if (q) mvp_req_drop(q);
    }
    return PMPI_Request_free(req);
}

/* -- completions ------------------------------------------------------------------------------ */
typedef struct { mvp_req *q; int traced; } snap;

#define SNAP_MAX_STACK 64

/* Record the completion of snapshot entries `idx[0..n)` with their statuses. */
/* `any_index` >= 0: the call was Waitany/Testany and completed that entry of
 * its array (field `index` of the wait: replay forces it). */
static void completed(snap *s, const int *idx, MPI_Status *sts, int n, uint32_t site, int64_t call,
                      int any_index) {
    int nreq = 0;
    for (int k = 0; k < n; k++) {
        snap *e = &s[idx[k]];
        if (!e->traced) continue;
        if (e->q->type == MVR_RECV) {
            int cancelled = 0;
            PMPI_Test_cancelled(&sts[k], &cancelled);
            if (cancelled || sts[k].MPI_SOURCE == MPI_PROC_NULL) { e->traced = 2; continue; }
            rec_consume(e->q->comm, e->q->seq, &sts[k], site, call);
        }
        if (e->q->type == MVR_SEND || e->q->type == MVR_RECV) nreq++;
    }
    if (nreq) {
        mvp_x x = {0};
        mvp_x_key_array(&x, "reqs", (uint32_t)nreq);
        for (int k = 0; k < n; k++) {
            snap *e = &s[idx[k]];
            if (e->traced == 1 && (e->q->type == MVR_SEND || e->q->type == MVR_RECV)) mvp_x_raw_int(&x, e->q->seq);
        }
        if (any_index >= 0) mvp_x_int(&x, "index", any_index);
        mvp_rec r = {0};
        r.kind = MVK_WAIT;
        r.site = site;
        r.t = mvp_now();
        r.call = call;
        mvp_append(&r, &x);
        mvp_x_free(&x);
    }
    for (int k = 0; k < n; k++) {
        snap *e = &s[idx[k]];
        if (!e->traced) continue;
        if (e->q->persistent) {
            e->q->active = 0;
        } else {
            mvp_req_drop(e->q);
            e->traced = 3;  /* gone: release() must not touch it */
        }
    }
}

/* The traced requests among `reqs`: a handle that occurs k times takes its
 * k oldest entries (see req.c). */
static int take(snap *s, const MPI_Request *reqs, int n) {
    int any = 0;
    mvp_table_lock();   /* threads must not claim the same entry of a shared handle */
    for (int i = 0; i < n; i++) {
        mvp_req *q = mvp_req_find(reqs[i]);
        while (q && q->claimed) q = q->next;   /* held by another call (another thread) */
        s[i].q = q;
        s[i].traced = q && q->active;
        if (q) q->claimed = 1;
        any |= s[i].traced;
    }
    if (!any)
        for (int i = 0; i < n; i++)
            if (s[i].q) s[i].q->claimed = 0;
    mvp_table_unlock();
    return any;
}

/* The call no longer holds these entries (those it did not drop). */
static void release(snap *s, int n) {
    mvp_table_lock();
    for (int i = 0; i < n; i++)
        if (s[i].q && s[i].traced != 3) s[i].q->claimed = 0;
    mvp_table_unlock();
}

/* `waiting`: the rank enters a blocking wait on these requests (written whether
 * or not it blocks, so a rank's event numbers do not depend on timing). */
static void waiting(snap *s, int n, int any_mode, uint32_t site, int64_t call) {
    int m = 0;
    for (int i = 0; i < n; i++) if (s[i].traced && (s[i].q->type == MVR_SEND || s[i].q->type == MVR_RECV)) m++;
    if (!m) return;
    mvp_x x = {0};
    mvp_x_key_array(&x, "reqs", (uint32_t)m);
    for (int i = 0; i < n; i++)
        if (s[i].traced && (s[i].q->type == MVR_SEND || s[i].q->type == MVR_RECV)) mvp_x_raw_int(&x, s[i].q->seq);
    mvp_rec r = {0};
    r.kind = MVK_WAITING;
    r.flags = any_mode ? MVF_ANY : 0;
    r.site = site;
    r.t = mvp_now();
    r.call = call;
    mvp_append(&r, &x);
    mvp_x_free(&x);
}

int MPI_Wait(MPI_Request *req, MPI_Status *status) {
    snap s[1];
    if (!ON || !take(s, req, 1)) return PMPI_Wait(req, status);
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    uint32_t site = mvp_site(MVP_PC());
    int64_t call = mvp_next_call();
    waiting(s, 1, 0, site, call);
    int rc = PMPI_Wait(req, st);
    if (rc == MPI_SUCCESS) {
        int idx = 0;
        completed(s, &idx, st, 1, site, call, -1);
    }
    release(s, 1);
    return rc;
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status) {
    snap s[1];
    if (!ON || !take(s, req, 1)) return PMPI_Test(req, flag, status);
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    int rc = PMPI_Test(req, flag, st);
    if (rc == MPI_SUCCESS && *flag) {
        int idx = 0;
        completed(s, &idx, st, 1, mvp_site(MVP_PC()), mvp_next_call(), -1);
    } else if (rc == MPI_SUCCESS && poll_due()) {
        waiting(s, 1, 0, mvp_site(MVP_PC()), mvp_next_call());
    }
    release(s, 1);
    return rc;
}

/* Scratch arrays for the all/any/some forms (on the stack when small). */
typedef struct { snap *s; MPI_Status *st; int *idx; snap s0[SNAP_MAX_STACK]; MPI_Status st0[SNAP_MAX_STACK]; int i0[SNAP_MAX_STACK]; } scratch;

static void scratch_open(scratch *w, int n) {
    if (n <= SNAP_MAX_STACK) { w->s = w->s0; w->st = w->st0; w->idx = w->i0; return; }
    w->s = malloc(sizeof(snap) * (size_t)n);
    w->st = malloc(sizeof(MPI_Status) * (size_t)n);
    w->idx = malloc(sizeof(int) * (size_t)n);
}
static void scratch_close(scratch *w) {
    if (w->s != w->s0) { free(w->s); free(w->st); free(w->idx); }
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status sts[]) {
    if (!ON || n <= 0) return PMPI_Waitall(n, reqs, sts);
    scratch w;
    scratch_open(&w, n);
    if (!take(w.s, reqs, n)) { scratch_close(&w); return PMPI_Waitall(n, reqs, sts); }
    MPI_Status *st = sts == MPI_STATUSES_IGNORE ? w.st : sts;
    uint32_t site = mvp_site(MVP_PC());
    int64_t call = mvp_next_call();
    waiting(w.s, n, 0, site, call);
    int rc = PMPI_Waitall(n, reqs, st);
    if (rc == MPI_SUCCESS) {
        for (int i = 0; i < n; i++) w.idx[i] = i;
        completed(w.s, w.idx, st, n, site, call, -1);
    }
    release(w.s, n);
    scratch_close(&w);
    return rc;
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status sts[]) {
    if (!ON || n <= 0) return PMPI_Testall(n, reqs, flag, sts);
    scratch w;
    scratch_open(&w, n);
    if (!take(w.s, reqs, n)) { scratch_close(&w); return PMPI_Testall(n, reqs, flag, sts); }
    MPI_Status *st = sts == MPI_STATUSES_IGNORE ? w.st : sts;
    int rc = PMPI_Testall(n, reqs, flag, st);
    if (rc == MPI_SUCCESS && *flag) {
        for (int i = 0; i < n; i++) w.idx[i] = i;
        completed(w.s, w.idx, st, n, mvp_site(MVP_PC()), mvp_next_call(), -1);
    } else if (rc == MPI_SUCCESS && poll_due()) {
        waiting(w.s, n, 0, mvp_site(MVP_PC()), mvp_next_call());
    }
    release(w.s, n);
    scratch_close(&w);
    return rc;
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status) {
    if (!ON || n <= 0) return PMPI_Waitany(n, reqs, index, status);
    scratch w;
    scratch_open(&w, n);
    if (!take(w.s, reqs, n)) { scratch_close(&w); return PMPI_Waitany(n, reqs, index, status); }
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    uint32_t site = mvp_site(MVP_PC());
    int64_t call = mvp_next_call();
    int rc, forced;
    int64_t at = mvp_peek_seq();
    waiting(w.s, n, 1, site, call);
    if (mvp_replay_active() && mvp_replay_index(at, &forced) && forced >= 0 && forced < n) {
        *index = forced;
        rc = PMPI_Wait(&reqs[forced], st);
    } else {
        rc = PMPI_Waitany(n, reqs, index, st);
    }
    if (rc == MPI_SUCCESS && *index != MPI_UNDEFINED) completed(w.s, index, st, 1, site, call, *index);
    release(w.s, n);
    scratch_close(&w);
    return rc;
}

int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status) {
    if (!ON || n <= 0) return PMPI_Testany(n, reqs, index, flag, status);
    scratch w;
    scratch_open(&w, n);
    if (!take(w.s, reqs, n)) { scratch_close(&w); return PMPI_Testany(n, reqs, index, flag, status); }
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    int rc, forced;
    if (mvp_replay_active() && mvp_replay_index(mvp_peek_seq(), &forced) && forced >= 0 && forced < n) {
        rc = PMPI_Test(&reqs[forced], flag, st);
        *index = *flag ? forced : MPI_UNDEFINED;
    } else {
        rc = PMPI_Testany(n, reqs, index, flag, st);
    }
    if (rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED)
        completed(w.s, index, st, 1, mvp_site(MVP_PC()), mvp_next_call(), *index);
    else if (rc == MPI_SUCCESS && !*flag && poll_due())
        waiting(w.s, n, 1, mvp_site(MVP_PC()), mvp_next_call());
    release(w.s, n);
    scratch_close(&w);
    return rc;
}

static int some(int n, MPI_Request reqs[], int *outcount, int idx[], MPI_Status sts[], int wait,
                uint32_t site) {
    scratch w;
    scratch_open(&w, n);
    if (!take(w.s, reqs, n)) {
        scratch_close(&w);
        return wait ? PMPI_Waitsome(n, reqs, outcount, idx, sts) : PMPI_Testsome(n, reqs, outcount, idx, sts);
    }
    MPI_Status *st = sts == MPI_STATUSES_IGNORE ? w.st : sts;
    int64_t call = mvp_next_call();
    int rc;
    if (wait) {
        waiting(w.s, n, 1, site, call);
        rc = PMPI_Waitsome(n, reqs, outcount, idx, st);
    } else {
        rc = PMPI_Testsome(n, reqs, outcount, idx, st);
    }
    if (rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED && *outcount > 0)
        completed(w.s, idx, st, *outcount, site, call, -1);
    else if (rc == MPI_SUCCESS && !wait && *outcount == 0 && poll_due())
        waiting(w.s, n, 1, site, call);
    release(w.s, n);
    scratch_close(&w);
    return rc;
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int idx[], MPI_Status sts[]) {
    if (!ON || n <= 0) return PMPI_Waitsome(n, reqs, outcount, idx, sts);
    return some(n, reqs, outcount, idx, sts, 1, mvp_site(MVP_PC()));
}

int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int idx[], MPI_Status sts[]) {
    if (!ON || n <= 0) return PMPI_Testsome(n, reqs, outcount, idx, sts);
    return some(n, reqs, outcount, idx, sts, 0, mvp_site(MVP_PC()));
}
