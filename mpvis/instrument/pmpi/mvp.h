/* mpvis PMPI trace library: declarations shared by its modules.
 *
 * The library is preloaded (LD_PRELOAD) into every rank of an unmodified C,
 * C++ (or Fortran, where the MPI's Fortran layer calls the C one) program by
 * `mpvis run -- ./a.out`.  Each MPI_* function it defines records events and
 * calls its PMPI_* twin (the MPI standard's profiling interface).
 *
 * Records are those of the mpvis trace format (docs/trace-format.md), built
 * as fixed-size structs on the program's thread (core.c: mvp_append) and
 * encoded as msgpack RECORDS frames of the wire protocol
 * (mpvis/protocol/framing.py) by a flusher thread, which never calls MPI.
 * Call sites are return addresses, named by the flusher (dladdr: function and
 * offset) and turned into file:line by the collector (addr2line), both off
 * the program's path.
 */
#ifndef MVP_H
#define MVP_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* Record kinds (MVK_*), flags (MVF_*) and send modes (MVM_*): generated from
 * mpvis/protocol/codes.py, the one definition the Python side uses too. */
#include "mvcodes.h"

/* One record as the program's thread leaves it for the flusher.  `x`/`xlen`
 * are extra msgpack key/value pairs (`nx` of them) in the extras ring. */
typedef struct {
    uint8_t kind, flags, mode, nx;
    uint32_t site;
    int64_t seq;
    double t;
    int64_t comm;
    int32_t a, b;      /* send: dest, tag; recv/consume: src, tag */
    int64_t c, d;      /* consume: recv seq; send: size in bytes */
    int64_t call;      /* the MPI call's number on this rank (field `call`) */
    uint64_t x;        /* offset of the extras in the extras ring */
    uint32_t xlen;
} mvp_rec;

/* A communicator as the trace knows it. */
typedef struct mvp_comm {
    MPI_Comm handle;
    int64_t id;          /* same on every member */
    int size;
    int *world;          /* world rank of each member */
    int inter;           /* intercommunicator: traffic is not traced */
    int group_sent;      /* `group` already written on a coll record */
    int64_t ncoll;       /* collectives called so far (ring check) */
    MPI_Comm ring;       /* duplicate carrying the ring check, or MPI_COMM_NULL */
} mvp_comm;

/* A request the library follows. */
enum { MVR_SEND = 1, MVR_RECV, MVR_COLL, MVR_OTHER };
typedef struct mvp_req {
    struct mvp_req *next;  /* the next request with the same handle (see req.c) */
    int claimed;           /* a completion call holds it now (p2p.c: take, release) */
    MPI_Request handle;
    int64_t seq;          /* the post (or Start) record: the trace's `req` */
    int type, persistent, active, started, probed;
    int src, tag;         /* a receive's arguments, trace numbering (-1: any) */
    mvp_comm *comm;
    uint32_t site;
    const char *call;     /* the MPI function that made it */
    int mode;             /* persistent send: its mode */
    int64_t size;
    int dest;             /* persistent send: world rank */
    const char *coll_op;  /* nonblocking collective: its op */
} mvp_req;

/* Extras: a small msgpack writer over a caller's buffer. */
typedef struct { uint8_t *p; size_t len, cap; int n; } mvp_x;

/* -- core.c -------------------------------------------------------------------- */
extern int mvp_on;            /* tracing (initialised, connected, not finalised) */
extern int mvp_rank, mvp_nprocs;
extern int mvp_sync_sends;    /* MPVIS_SYNC_SENDS=1: standard sends made synchronous */
void mvp_start(int *argc, char ***argv, int provided);
void mvp_finish(void);
void mvp_abort(int code, const char *where);
uint32_t mvp_site(void *pc);
int64_t mvp_next_call(void);
void mvp_lock(void);
void mvp_unlock(void);
/* The request and communicator tables (MPI_THREAD_MULTIPLE only; not held across MPI calls). */
void mvp_table_lock(void);
void mvp_table_unlock(void);
/* Append one record (under mvp_lock); its seq is assigned and returned. */
int64_t mvp_append(mvp_rec *r, const mvp_x *x);
double mvp_now(void);
const char *mvp_site_label(uint32_t id);
int64_t mvp_peek_seq(void);   /* the seq the next record gets (single-threaded use) */

void mvp_x_int(mvp_x *x, const char *key, int64_t v);
void mvp_x_str(mvp_x *x, const char *key, const char *v);
void mvp_x_bool(mvp_x *x, const char *key, int v);
void mvp_x_key_array(mvp_x *x, const char *key, uint32_t n);
void mvp_x_key(mvp_x *x, const char *key);   /* its value follows (mvp_x_raw_*) */
void mvp_x_raw_int(mvp_x *x, int64_t v);
void mvp_x_raw_str(mvp_x *x, const char *v);
void mvp_x_raw_map(mvp_x *x, uint32_t n);
void mvp_x_raw_bool(mvp_x *x, int v);
void mvp_x_raw_nil(mvp_x *x);
void mvp_x_free(mvp_x *x);

/* -- comm.c -------------------------------------------------------------------- */
mvp_comm *mvp_comm_of(MPI_Comm c);
int mvp_world_of(mvp_comm *c, int r);   /* -1 for MPI_ANY_SOURCE, -2 PROC_NULL */
void mvp_comm_init(void);
void mvp_comm_forget(MPI_Comm c);

/* -- req.c --------------------------------------------------------------------- */
mvp_req *mvp_req_add(const mvp_req *init);   /* a copy of `init`, published whole */
mvp_req *mvp_req_find(MPI_Request h);          /* the oldest with this handle */
mvp_req *mvp_req_find_nth(MPI_Request h, int k); /* the k-th oldest (k from 0) */
void mvp_req_drop(mvp_req *q);
void mvp_req_leaks(mvp_x *x);        /* the `requests` field of `final` */
int64_t mvp_req_count(void);

/* -- p2p.c --------------------------------------------------------------------- */
/* Record a completed set: consumes of the receives, coll_exits, one wait. */
void mvp_completed(mvp_req **qs, MPI_Status *sts, int n, uint32_t site, int64_t call);
void mvp_waiting(mvp_req **qs, int n, int any, uint32_t site, int64_t call);

/* -- replay.c ------------------------------------------------------------------ */
void mvp_replay_init(void);
int mvp_replay_source(int64_t recv_seq, int *src, int *tag);
int mvp_replay_index(int64_t at_seq, int *index);
int mvp_replay_active(void);

/* -- spill.c ------------------------------------------------------------------- */
/* Encoded records (msgpack maps as core.c ships them), `nrec` of them. */
typedef struct { const uint8_t *p; size_t len; int64_t nrec; } mvp_spill_part;
/* $MPVIS_SPILL_DIR/spill-$MPVIS_RUN-rank-<rank>.jsonl; -1 if it does not fit. */
int mvp_spill_path(int rank, char *out, size_t len);
/* Write the spill file (path into `path`): the number of records written, 0
 * (no file) when there are none, -1 on an error described in `err`.  `site`
 * names a site id (the raw name the collector would get). */
int64_t mvp_spill_write(const mvp_spill_part *parts, int nparts, const char *reason,
                        const char *(*site)(uint32_t), char *path, size_t pathlen,
                        char *err, size_t errlen);

/* -- coll.c -------------------------------------------------------------------- */
void mvp_ring_final(void);

/* Thread-local state of the library.  The library is loaded with the program
 * (LD_PRELOAD), never dlopen'ed later, so the initial-exec model applies: a
 * plain offset from the thread pointer instead of a __tls_get_addr call. */
#define MVP_TLS __thread __attribute__((tls_model("initial-exec")))

/* Helpers. */
#define MVP_PC() __builtin_return_address(0)
#define MVP_LIKELY(x) __builtin_expect(!!(x), 1)
#define MVP_UNLIKELY(x) __builtin_expect(!!(x), 0)
int mvp_type_bytes(MPI_Datatype t, MPI_Count count, int64_t *bytes);
const char *mvp_type_name(MPI_Datatype t);
const char *mvp_op_name(MPI_Op op);

#endif
