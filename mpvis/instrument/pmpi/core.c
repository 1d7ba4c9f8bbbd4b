/* mpvis PMPI trace library: the rank's recorder, its flusher thread and the wire.
 *
 * Contract (see mvp.h and docs/c-programs.md):
 *  - mvp_append numbers a record (`seq`: 0, 1, 2, ... per rank, no gaps) and
 *    leaves it in a single-producer ring; the program's thread never encodes,
 *    allocates or writes a socket unless the ring is full (then it ships the
 *    pending records itself: back-pressure, never loss).
 *  - The flusher thread ships pending records as RECORDS frames of the wire
 *    protocol (mpvis/protocol/framing.py: b"MV", version 1, type, big-endian
 *    length, one msgpack map) when the rank has recorded nothing for
 *    MPVIS_FLUSH_QUIET_MS (default 5: it is blocked or computing) or at the
 *    latest every MPVIS_FLUSH_MS (default 50), the policy of the mpi4py path
 *    (mpvis/instrument/transport.py).
 *  - The rank talks to its machine's collector (MPVIS_COLLECTOR=host:port,
 *    MPVIS_TOKEN): HELLO, HEADER (rank 0), RECORDS batches numbered from 0,
 *    BYE final|crashed.  Without MPVIS_COLLECTOR it runs untraced.  A
 *    record's `site` is a small integer; a batch lists the names of the sites
 *    it uses for the first time ("sites": [[id, name], ...]) and the collector
 *    puts the names back (mpvis/collector/symbolize.py).
 *  - No orphans (the mpi4py path's rule, mpvis/instrument/transport.py, the
 *    reference): the flusher checks every WATCH_EVERY (0.5 s) that the
 *    collector's connection is open (recv(MSG_PEEK | MSG_DONTWAIT): end of
 *    stream, data (the collector only writes to refuse) or an error other than
 *    EAGAIN/EINTR mean it is gone); a failed send means the same.  Then the
 *    rank writes the records the collector may not have received to its spill
 *    file (spill.c): those not shipped and those shipped in the last
 *    KEEP_SHIPPED (10 s) seconds, at most KEEP_BYTES (32 MiB) of them (each
 *    batch is kept before it is sent, so a batch whose send failed is spilled
 *    too), says so on stderr, lingers ORPHAN_LINGER (1.5 s: MPICH kills every
 *    rank once one leaves, the peers need the time to spill) and leaves with
 *    status 75, so a killed `mpvis run` leaves no rank behind.
 *    MPVIS_STAY_ON_LOSS=1 spills and lets the program go on untraced instead.
 *  - SIGTERM (mpiexec stopping the job) and SIGINT (Ctrl-C), unless the
 *    program installed its own handler: the handler only notes the signal; the flusher watches
 *    TERM_LOOK (0.5 s) for the connection to close, then spills and lingers
 *    as above if it did, else ships everything, says BYE crashed and lingers
 *    too (its peers got the signal as well); the rank leaves with 128 + the
 *    signal's number.
 */
#define _GNU_SOURCE
#include "mvp.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/membarrier.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

int mvp_on = 0;
int mvp_rank = 0, mvp_nprocs = 1;
int mvp_sync_sends = 0;

static const char *KIND_NAMES[] = MVK_NAMES;   /* by code (mvcodes.h) */
static const char *MODE_NAMES[] = MVM_NAMES;

/* -- the rings ---------------------------------------------------------------- */
#define RCAP (1u << 16)          /* records */
#define XCAP (1u << 22)          /* bytes of extras */
static mvp_rec *ring;
static uint8_t *xring;
static _Atomic uint64_t head, tail;     /* records: produced, shipped */
static uint64_t xhead;                  /* extras produced (producer only) */
static _Atomic uint64_t xtail;          /* extras shipped */
static int64_t next_seq, next_call;
static int multi;                       /* MPI_THREAD_MULTIPLE: lock the producers */
static pthread_mutex_t tlock;           /* request and communicator tables (recursive) */
static pthread_spinlock_t plock;
static pthread_mutex_t dlock = PTHREAD_MUTEX_INITIALIZER;  /* one drainer at a time */

/* -- sites -------------------------------------------------------------------- */
#define MAXSITES 65536
static void *site_pc[MAXSITES];
static char *site_name[MAXSITES];
static _Atomic uint32_t nsites = 1;     /* id 0: no site */
static uint32_t named = 1;              /* sites named so far (under dlock) */
static uint32_t sent_sites = 1;         /* sites whose names went out (under dlock) */
static struct { void *pc; uint32_t id; } site_tab[2 * MAXSITES];

/* -- the wire ------------------------------------------------------------------ */
static int sock = -1;
static int64_t batch_no;
static int said_bye, lost;
static double t0;                       /* monotonic time of the run's origin */
static double quiet_s = 0.005, longest_s = 0.05;
static pthread_t flusher;
static _Atomic int stop_flusher;
static _Atomic int term_signal;         /* SIGTERM noted by on_term, handled by the flusher */
static int spilled;                     /* the orphan rule ran (under dlock) */
/* Halting the program's threads before the last drain (halt_producers): a
 * record not published by then is never published, and its MPI call never
 * made, so no peer sees a message whose send the trace lacks. */
static _Atomic int halted, in_append;
static int membarrier_ok;

/* The mpi4py path's constants (mpvis/instrument/transport.py). */
#define WATCH_EVERY 0.5                 /* seconds between connection checks */
#define KEEP_SHIPPED 10.0               /* shipped batches kept this long for a spill ... */
#define KEEP_BYTES ((size_t)32 << 20)   /* ... and at most this many bytes of them */
#define ORPHAN_EXIT 75                  /* EX_TEMPFAIL */
#define ORPHAN_LINGER 1.5
#define TERM_LOOK 0.5

/* Batches kept for a spill, oldest first (under dlock): the encoded records
 * of each RECORDS frame, copied before the frame is sent. */
typedef struct { uint8_t *p; size_t len; int64_t nrec; double at; } kept_t;
#define MAXKEPT 8192
static kept_t kept[MAXKEPT];
static unsigned kfirst, kcount;
static size_t kbytes;

double mvp_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9 - t0;
}

void mvp_lock(void) { if (multi) pthread_spin_lock(&plock); }
void mvp_unlock(void) { if (multi) pthread_spin_unlock(&plock); }
void mvp_table_lock(void) { if (multi) pthread_mutex_lock(&tlock); }
void mvp_table_unlock(void) { if (multi) pthread_mutex_unlock(&tlock); }

int64_t mvp_next_call(void) {
    mvp_lock();
    int64_t c = next_call++;
    mvp_unlock();
    return c;
}

/* -- a growable byte buffer and msgpack ----------------------------------------- */
typedef struct { uint8_t *p; size_t len, cap; } buf_t;

static void need(buf_t *b, size_t n) {
    if (b->len + n <= b->cap) return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) { fprintf(stderr, "mpvis: out of memory\n"); _exit(3); }
    b->p = p;
    b->cap = cap;
}
static void put(buf_t *b, const void *s, size_t n) { need(b, n); memcpy(b->p + b->len, s, n); b->len += n; }
static void put1(buf_t *b, uint8_t v) { need(b, 1); b->p[b->len++] = v; }
static void putbe(buf_t *b, uint64_t v, int n) {
    need(b, n);
    for (int i = n - 1; i >= 0; i--) b->p[b->len++] = (uint8_t)(v >> (8 * i));
}
static void mp_int(buf_t *b, int64_t v) {
    if (v >= 0) {
        if (v < 128) put1(b, (uint8_t)v);
        else if (v < 256) { put1(b, 0xcc); putbe(b, v, 1); }
        else if (v < 65536) { put1(b, 0xcd); putbe(b, v, 2); }
        else if (v <= 0xffffffffLL) { put1(b, 0xce); putbe(b, v, 4); }
        else { put1(b, 0xcf); putbe(b, (uint64_t)v, 8); }
    } else {
        if (v >= -32) put1(b, (uint8_t)(int8_t)v);
        else if (v >= -128) { put1(b, 0xd0); putbe(b, (uint8_t)(int8_t)v, 1); }
        else if (v >= -32768) { put1(b, 0xd1); putbe(b, (uint16_t)(int16_t)v, 2); }
        else if (v >= INT32_MIN) { put1(b, 0xd2); putbe(b, (uint32_t)(int32_t)v, 4); }
        else { put1(b, 0xd3); putbe(b, (uint64_t)v, 8); }
    }
}
static void mp_str(buf_t *b, const char *s) {
    size_t n = strlen(s);
    if (n < 32) put1(b, 0xa0 | (uint8_t)n);
    else if (n < 256) { put1(b, 0xd9); putbe(b, n, 1); }
    else if (n < 65536) { put1(b, 0xda); putbe(b, n, 2); }
    else { put1(b, 0xdb); putbe(b, n, 4); }
    put(b, s, n);
}
static void mp_map(buf_t *b, uint32_t n) {
    if (n < 16) put1(b, 0x80 | (uint8_t)n);
    else if (n < 65536) { put1(b, 0xde); putbe(b, n, 2); }
    else { put1(b, 0xdf); putbe(b, n, 4); }
}
static void mp_array(buf_t *b, uint32_t n) {
    if (n < 16) put1(b, 0x90 | (uint8_t)n);
    else if (n < 65536) { put1(b, 0xdc); putbe(b, n, 2); }
    else { put1(b, 0xdd); putbe(b, n, 4); }
}
static void mp_bool(buf_t *b, int v) { put1(b, v ? 0xc3 : 0xc2); }
static void mp_nil(buf_t *b) { put1(b, 0xc0); }
static void mp_double(buf_t *b, double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    put1(b, 0xcb);
    putbe(b, u, 8);
}

/* Extras: the same writer over an mvp_x. */
#define XB(x) ((buf_t *)(void *)(x))
_Static_assert(offsetof(mvp_x, p) == offsetof(buf_t, p) && offsetof(mvp_x, len) == offsetof(buf_t, len)
               && offsetof(mvp_x, cap) == offsetof(buf_t, cap), "mvp_x is a buf_t");
void mvp_x_int(mvp_x *x, const char *k, int64_t v) { mp_str(XB(x), k); mp_int(XB(x), v); x->n++; }
void mvp_x_str(mvp_x *x, const char *k, const char *v) { mp_str(XB(x), k); mp_str(XB(x), v); x->n++; }
void mvp_x_bool(mvp_x *x, const char *k, int v) { mp_str(XB(x), k); mp_bool(XB(x), v); x->n++; }
void mvp_x_key_array(mvp_x *x, const char *k, uint32_t n) { mp_str(XB(x), k); mp_array(XB(x), n); x->n++; }
void mvp_x_key(mvp_x *x, const char *k) { mp_str(XB(x), k); x->n++; }
void mvp_x_raw_int(mvp_x *x, int64_t v) { mp_int(XB(x), v); }
void mvp_x_raw_str(mvp_x *x, const char *v) { mp_str(XB(x), v); }
void mvp_x_raw_map(mvp_x *x, uint32_t n) { mp_map(XB(x), n); }
void mvp_x_raw_bool(mvp_x *x, int v) { mp_bool(XB(x), v); }
void mvp_x_raw_nil(mvp_x *x) { mp_nil(XB(x)); }
void mvp_x_free(mvp_x *x) { free(x->p); x->p = NULL; x->len = x->cap = 0; x->n = 0; }

/* -- frames ------------------------------------------------------------------ */
enum { T_HELLO = 1, T_HEADER = 2, T_RECORDS = 3, T_BYE = 4 };

static void frame_begin(buf_t *b, int type) {
    b->len = 0;
    put(b, "MV", 2);
    put1(b, 1);
    put1(b, (uint8_t)type);
    putbe(b, 0, 4);
}
static void frame_end(buf_t *b) {
    uint32_t n = (uint32_t)(b->len - 8);
    for (int i = 0; i < 4; i++) b->p[4 + i] = (uint8_t)(n >> (8 * (3 - i)));
}

static void orphaned_locked(const char *why, int leave);

static int send_all(const uint8_t *p, size_t n) {
    while (n) {
        ssize_t k = send(sock, p, n, MSG_NOSIGNAL);
        if (k < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Send a frame (under dlock); a failed send is the collector gone. */
static void ship(buf_t *b) {
    if (sock < 0 || lost) return;
    if (send_all(b->p, b->len) != 0) {
        char why[160];
        snprintf(why, sizeof why, "sending to the collector failed: %s", strerror(errno));
        orphaned_locked(why, !atomic_load(&stop_flusher));
    }
}

/* -- sites ----------------------------------------------------------------------- */
static uint32_t site_of(void *pc);

/* Address ranges of the MPI libraries and of this library: a call made from
 * inside one (MPICH's Fortran binding calls MPI_Recv for the program's
 * MPI_RECV) is named by the first frame of the stack outside them, the
 * program's own line. */
#define MAXRANGES 16
static struct { uintptr_t lo, hi; } ranges[MAXRANGES];
static int nranges;

static int in_mpi(uintptr_t pc) {
    for (int i = 0; i < nranges; i++)
        if (pc >= ranges[i].lo && pc < ranges[i].hi) return 1;
    return 0;
}

static int note_library(struct dl_phdr_info *info, size_t size, void *self) {
    (void)size;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    int mine = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (uintptr_t)self >= lo && (uintptr_t)self < lo + ph->p_memsz) mine = 1;
    }
    if (!mine && strncmp(base, "libmpi", 6) != 0 && strncmp(base, "libpmpi", 7) != 0) return 0;
    for (int i = 0; i < info->dlpi_phnum && nranges < MAXRANGES; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        ranges[nranges].lo = info->dlpi_addr + ph->p_vaddr;
        ranges[nranges].hi = ranges[nranges].lo + ph->p_memsz;
        nranges++;
    }
    return 0;
}

static void find_libraries(void) {
    dl_iterate_phdr(note_library, (void *)&find_libraries);
    void *warm[4];
    backtrace(warm, 4);  /* loads the unwinder now, not inside a traced call */
}

/* The program's frame above an MPI library's (a binding's) call. */
static void *program_frame(void *pc) {
    void *frames[24];
    int n = backtrace(frames, 24);
    for (int i = 0; i < n; i++)
        if (!in_mpi((uintptr_t)frames[i])) return frames[i];
    return pc;
}

uint32_t mvp_site(void *pc) {
    if (MVP_UNLIKELY(in_mpi((uintptr_t)pc))) pc = program_frame(pc);
    mvp_lock();
    uint32_t id = site_of(pc);
    mvp_unlock();
    return id;
}

static uint32_t site_of(void *pc) {
    uintptr_t h = ((uintptr_t)pc >> 2) * 0x9E3779B97F4A7C15ull;
    size_t mask = 2 * MAXSITES - 1, i = (size_t)(h >> 40) & mask;
    for (;;) {
        if (site_tab[i].pc == pc) return site_tab[i].id;
        if (site_tab[i].pc == NULL) break;
        i = (i + 1) & mask;
    }
    uint32_t id = atomic_load_explicit(&nsites, memory_order_relaxed);
    if (id >= MAXSITES) return 0;
    site_pc[id] = pc;
    site_tab[i].pc = pc;
    site_tab[i].id = id;
    atomic_store_explicit(&nsites, id + 1, memory_order_release);
    return id;
}

/* The site's name for the collector: "@BASE:PC:FUNC+OFF:PATH" (hex numbers);
 * the collector symbolizes it (mpvis/collector/symbolize.py). */
static void name_sites(uint32_t upto) {
    for (; named < upto; named++) {
        Dl_info info;
        void *pc = site_pc[named];
        char tmp[8192];
        if (dladdr(pc, &info) && info.dli_fname) {
            const char *fn = info.dli_sname ? info.dli_sname : "?";
            char real[4096];
            /* the main program's name is as it was invoked: make it a path */
            if (info.dli_fname[0] != '/' && realpath(info.dli_fname[0] ? info.dli_fname : "/proc/self/exe", real))
                info.dli_fname = real;
            else if (!info.dli_fname[0] && realpath("/proc/self/exe", real))
                info.dli_fname = real;
            uintptr_t off = info.dli_saddr ? (uintptr_t)pc - (uintptr_t)info.dli_saddr : 0;
            snprintf(tmp, sizeof tmp, "@%lx:%lx:%s+0x%lx:%s", (unsigned long)(uintptr_t)info.dli_fbase,
                     (unsigned long)(uintptr_t)pc, fn, (unsigned long)off, info.dli_fname);
        } else {
            snprintf(tmp, sizeof tmp, "@0:%lx:?+0x0:?", (unsigned long)(uintptr_t)pc);
        }
        site_name[named] = strdup(tmp);
    }
}

/* The name of a site for fields the flusher does not fill in itself. */
const char *mvp_site_label(uint32_t id) {
    if (!id) return NULL;
    pthread_mutex_lock(&dlock);
    name_sites(atomic_load_explicit(&nsites, memory_order_acquire));
    pthread_mutex_unlock(&dlock);
    return site_name[id];
}

int64_t mvp_peek_seq(void) { return next_seq; }

/* -- appending -------------------------------------------------------------------- */
static void drain(void);

int64_t mvp_append(mvp_rec *r, const mvp_x *x) {
    mvp_lock();
    if (x && x->len) {
        while (xhead + x->len - atomic_load_explicit(&xtail, memory_order_acquire) > XCAP) {
            if (x->len > XCAP / 2) { r->nx = 0; r->xlen = 0; goto no_extras; }
            drain();
        }
        size_t at = xhead % XCAP, first = XCAP - at < x->len ? XCAP - at : x->len;
        memcpy(xring + at, x->p, first);
        memcpy(xring, x->p + first, x->len - first);
        r->x = xhead;
        r->xlen = (uint32_t)x->len;
        r->nx = (uint8_t)x->n;
        xhead += x->len;
    } else {
        r->xlen = 0;
        r->nx = 0;
    }
no_extras:;
    uint64_t h = atomic_load_explicit(&head, memory_order_relaxed);
    while (h - atomic_load_explicit(&tail, memory_order_acquire) >= RCAP) drain();
    /* Asymmetric Dekker with halt_producers: plain accesses here, the full
     * barrier on the other side (membarrier). */
    atomic_store_explicit(&in_append, 1, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    if (MVP_UNLIKELY(atomic_load_explicit(&halted, memory_order_relaxed))) {
        atomic_store_explicit(&in_append, 0, memory_order_relaxed);
        mvp_unlock();
        for (;;) pause();  /* the flusher ends the process */
    }
    int64_t seq = r->seq = next_seq++;
    ring[h % RCAP] = *r;
    atomic_store_explicit(&head, h + 1, memory_order_release);
    atomic_store_explicit(&in_append, 0, memory_order_release);
    mvp_unlock();
    return seq;
}

/* Stop the program's threads at their next record (the flusher, before the
 * last drain of a rank that leaves): every record published so far is in the
 * ring, and no later one will be, nor will its MPI call be made. */
static void halt_producers(void) {
    atomic_store(&halted, 1);
    /* A full barrier on every thread of the process: the producer's in_append
     * store is visible here, or it sees `halted`. */
    if (!membarrier_ok || syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
        syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0);
    struct timespec ms = {0, 1000000};
    while (atomic_load(&in_append)) nanosleep(&ms, NULL);
}

/* -- encoding ----------------------------------------------------------------------- */
/* Raw writers for encode(): the caller made room first (no per-field checks). */
static inline uint8_t *w_int(uint8_t *o, int64_t v) {
    if (v >= 0 && v < 128) { *o++ = (uint8_t)v; return o; }
    if (v < 0 && v >= -32) { *o++ = (uint8_t)(int8_t)v; return o; }
    uint64_t u = (uint64_t)v;
    int n;
    if (v >= 0) {
        if (v < 256) { *o++ = 0xcc; n = 1; }
        else if (v < 65536) { *o++ = 0xcd; n = 2; }
        else if (v <= 0xffffffffLL) { *o++ = 0xce; n = 4; }
        else { *o++ = 0xcf; n = 8; }
    } else {
        if (v >= -128) { *o++ = 0xd0; n = 1; }
        else if (v >= -32768) { *o++ = 0xd1; n = 2; }
        else if (v >= INT32_MIN) { *o++ = 0xd2; n = 4; }
        else { *o++ = 0xd3; n = 8; }
    }
    for (int i = n - 1; i >= 0; i--) *o++ = (uint8_t)(u >> (8 * i));
    return o;
}
static inline uint8_t *w_double(uint8_t *o, double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    *o++ = 0xcb;
    u = __builtin_bswap64(u);
    memcpy(o, &u, 8);
    return o + 8;
}
/* A short string literal (under 32 bytes) as a msgpack fixstr. */
#define W_STR(o, lit) (*(o)++ = (uint8_t)(0xa0 | (sizeof(lit) - 1)), memcpy((o), (lit), sizeof(lit) - 1), (o) += sizeof(lit) - 1)
#define W_BOOL(o, v) (*(o)++ = (v) ? 0xc3 : 0xc2)

/* One record as a msgpack map with the trace format's field names.  Fields at
 * their default are left out: `comm` 0, a send's `mode` "standard". */
static void encode(buf_t *b, const mvp_rec *r) {
    int k = r->kind;
    uint32_t n = 4 + (r->call >= 0) + r->nx + (r->site != 0);  /* state: no MPI call */
    int has_comm = k == MVK_SEND || k == MVK_RECV || k == MVK_CONSUME || k == MVK_COLL || k == MVK_COLL_EXIT;
    int req = (r->flags & MVF_NONBLOCKING_REQ) != 0;
    has_comm = has_comm && r->comm != 0;  /* 0 (MPI_COMM_WORLD) is the field's default */
    int mode = k == MVK_SEND && r->mode != MVM_STANDARD;  /* standard: left out */
    n += has_comm;
    if (k == MVK_SEND) n += 5 + mode + req;
    else if (k == MVK_RECV) n += 3 + req + ((r->flags & MVF_PROBED) != 0);
    else if (k == MVK_CONSUME) n += 3;
    else if (k == MVK_WAITING) n += 1;
    need(b, 192 + r->xlen);   /* the fixed fields take at most about 170 bytes */
    uint8_t *o = b->p + b->len;
    if (n < 16) *o++ = (uint8_t)(0x80 | n);
    else { *o++ = 0xde; *o++ = (uint8_t)(n >> 8); *o++ = (uint8_t)n; }
    W_STR(o, "rank"); o = w_int(o, mvp_rank);
    W_STR(o, "seq"); o = w_int(o, r->seq);
    W_STR(o, "kind");
    const char *kn = KIND_NAMES[k];
    size_t kl = strlen(kn);
    *o++ = (uint8_t)(0xa0 | kl);
    memcpy(o, kn, kl);
    o += kl;
    W_STR(o, "t"); o = w_double(o, r->t);
    if (r->call >= 0) { W_STR(o, "call"); o = w_int(o, r->call); }
    if (r->site) { W_STR(o, "site"); o = w_int(o, r->site); }  /* an id: its name goes in "sites" */
    if (has_comm) { W_STR(o, "comm"); o = w_int(o, r->comm); }
    switch (k) {
    case MVK_SEND: {
        W_STR(o, "dest"); o = w_int(o, r->a);
        W_STR(o, "tag"); o = w_int(o, r->b);
        W_STR(o, "blocking"); W_BOOL(o, r->flags & MVF_BLOCKING);
        W_STR(o, "sync"); W_BOOL(o, r->flags & MVF_SYNC);
        if (mode) {
            W_STR(o, "mode");
            const char *mn = MODE_NAMES[r->mode & 3];
            size_t ml = strlen(mn);
            *o++ = (uint8_t)(0xa0 | ml);
            memcpy(o, mn, ml);
            o += ml;
        }
        W_STR(o, "size"); o = w_int(o, r->d);
        if (req) { W_STR(o, "req"); o = w_int(o, r->seq); }
        break;
    }
    case MVK_RECV:
        W_STR(o, "src"); o = w_int(o, r->a);
        W_STR(o, "tag"); o = w_int(o, r->b);
        W_STR(o, "blocking"); W_BOOL(o, r->flags & MVF_BLOCKING);
        if (req) { W_STR(o, "req"); o = w_int(o, r->seq); }
        if (r->flags & MVF_PROBED) { W_STR(o, "probed"); W_BOOL(o, 1); }
        break;
    case MVK_CONSUME:
        W_STR(o, "recv"); o = w_int(o, r->c);
        W_STR(o, "src"); o = w_int(o, r->a);
        W_STR(o, "tag"); o = w_int(o, r->b);
        break;
    case MVK_WAITING:
        W_STR(o, "mode");
        if (r->flags & MVF_ANY) W_STR(o, "any"); else W_STR(o, "all");
        break;
    default:
        break;
    }
    b->len = (size_t)(o - b->p);
    if (r->xlen) {
        size_t at = r->x % XCAP, first = XCAP - at < r->xlen ? XCAP - at : r->xlen;
        put(b, xring + at, first);
        put(b, xring, r->xlen - first);
    }
}

#define BATCH 8192

/* Keep a copy of one batch's encoded records for a spill (under dlock).  While
 * shipping (`evict`), batches older than KEEP_SHIPPED or beyond KEEP_BYTES are
 * let go, the newest always kept (the mpi4py path's SocketSink.compact). */
static void keep(const uint8_t *p, size_t len, int64_t nrec, int evict) {
    double now = mvp_now();
    if (kcount == MAXKEPT) {  /* more batches than a 10 s window can hold at 5 ms each */
        kbytes -= kept[kfirst].len;
        free(kept[kfirst].p);
        kfirst = (kfirst + 1) % MAXKEPT;
        kcount--;
    }
    uint8_t *c = malloc(len ? len : 1);
    if (!c) return;  /* out of memory: this batch cannot be spilled */
    memcpy(c, p, len);
    kept[(kfirst + kcount) % MAXKEPT] = (kept_t){c, len, nrec, now};
    kcount++;
    kbytes += len;
    while (evict && kcount > 1 && (kept[kfirst].at < now - KEEP_SHIPPED || kbytes > KEEP_BYTES)) {
        kbytes -= kept[kfirst].len;
        free(kept[kfirst].p);
        kfirst = (kfirst + 1) % MAXKEPT;
        kcount--;
    }
}

/* Move every pending record out of the ring (under dlock): as RECORDS frames
 * to the collector (`send`), each kept first for a spill; or only into the
 * kept batches (the spill).  Once the collector is lost and the spill written,
 * records are dropped (the rank runs untraced, MPVIS_STAY_ON_LOSS). */
static void drain_locked(buf_t *fb, int send) {
    for (;;) {
        uint64_t t = atomic_load_explicit(&tail, memory_order_relaxed);
        uint64_t h = atomic_load_explicit(&head, memory_order_acquire);
        if (t == h) break;
        if (h - t > BATCH) h = t + BATCH;
        uint64_t xt = atomic_load_explicit(&xtail, memory_order_relaxed);
        if (send && (lost || sock < 0)) {
            for (uint64_t i = t; i < h; i++)
                if (ring[i % RCAP].xlen) xt = ring[i % RCAP].x + ring[i % RCAP].xlen;
            atomic_store_explicit(&xtail, xt, memory_order_release);
            atomic_store_explicit(&tail, h, memory_order_release);
            continue;
        }
        name_sites(atomic_load_explicit(&nsites, memory_order_acquire));
        frame_begin(fb, T_RECORDS);
        mp_map(fb, sent_sites < named ? 3 : 2);
        mp_str(fb, "batch"); mp_int(fb, batch_no++);
        if (sent_sites < named) {  /* the names of the sites not sent yet */
            mp_str(fb, "sites"); mp_array(fb, named - sent_sites);
            for (uint32_t id = sent_sites; id < named; id++) {
                mp_array(fb, 2);
                mp_int(fb, id);
                mp_str(fb, site_name[id]);
            }
            sent_sites = named;
        }
        mp_str(fb, "records"); mp_array(fb, (uint32_t)(h - t));
        size_t at = fb->len;
        for (uint64_t i = t; i < h; i++) {
            const mvp_rec *r = &ring[i % RCAP];
            encode(fb, r);
            if (r->xlen) xt = r->x + r->xlen;
        }
        frame_end(fb);
        /* Kept before it is sent: if the send fails, the batch is spilled. */
        keep(fb->p + at, fb->len - at, (int64_t)(h - t), send);
        atomic_store_explicit(&xtail, xt, memory_order_release);
        atomic_store_explicit(&tail, h, memory_order_release);
        if (send) ship(fb);
    }
}

/* Ship every pending record (caller: the flusher, a full ring, the end). */
static void drain(void) {
    static buf_t fb;
    pthread_mutex_lock(&dlock);
    drain_locked(&fb, 1);
    pthread_mutex_unlock(&dlock);
}

/* Whether the collector's connection is gone (under dlock): the collector
 * never writes to a rank except to refuse it, so end of stream, data or an
 * error other than "would block" all mean it (transport.py SocketSink.gone). */
static int gone_locked(void) {
    if (lost || sock < 0) return 1;
    char c;
    ssize_t k = recv(sock, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (k < 0) return !(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
    return 1;
}

static int is_gone(void) {
    pthread_mutex_lock(&dlock);
    int g = gone_locked();
    pthread_mutex_unlock(&dlock);
    return g;
}

static const char *raw_site(uint32_t id) { return id && id < named ? site_name[id] : NULL; }

static void nap(double seconds) {
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* The collector is gone (under dlock): spill what it may not have received,
 * say so, and (`leave`) end the process with ORPHAN_EXIT after ORPHAN_LINGER;
 * at the rank's own end, only spill (transport.py Flusher._orphaned). */
static void orphaned_locked(const char *why, int leave) {
    if (spilled) return;
    spilled = 1;
    leave = leave && getenv("MPVIS_STAY_ON_LOSS") == NULL;
    /* Leaving (or stopped by a signal): no record, no MPI call after the spill.
     * Not at the rank's own end (its thread is the caller) nor when the
     * program goes on untraced. */
    if ((leave || atomic_load(&term_signal)) && !atomic_load(&stop_flusher)) halt_producers();
    lost = 1;
    int fd = sock;
    sock = -1;
    if (fd >= 0) close(fd);
    static buf_t fs;
    if (ring) drain_locked(&fs, 0);
    static mvp_spill_part parts[MAXKEPT];
    for (unsigned i = 0; i < kcount; i++) {
        const kept_t *k = &kept[(kfirst + i) % MAXKEPT];
        parts[i] = (mvp_spill_part){k->p, k->len, k->nrec};
    }
    char path[4200], err[4400], where[4600];
    int64_t n = mvp_spill_write(parts, (int)kcount, why, raw_site, path, sizeof path, err, sizeof err);
    if (n > 0) snprintf(where, sizeof where, "%lld records spilled to %s", (long long)n, path);
    else if (n == 0) snprintf(where, sizeof where, "nothing to spill");
    else snprintf(where, sizeof where, "the spill file could not be written (%s)", err);
    fprintf(stderr, "mpvis: rank %d: %s; %s%s\n", mvp_rank, why, where,
            leave ? "; leaving (its run is gone)" : "");
    fflush(stderr);
    if (leave) {
        nap(ORPHAN_LINGER);
        _exit(ORPHAN_EXIT);
    }
}

static void say_bye(const char *status, const char *detail);

/* SIGTERM or SIGINT noted by on_term (run by the flusher, never returns):
 * ship everything and say BYE crashed if the collector is there, else spill;
 * linger; then leave with 128 + sig (transport.py Flusher.terminated). */
static void terminated(int sig) {
    pthread_mutex_lock(&dlock);
    int done = said_bye;
    pthread_mutex_unlock(&dlock);
    if (!done) {
        /* When mpvis run dies, mpiexec's SIGTERM may come before the kernel
         * has closed the dying process's sockets: look a little longer. */
        double deadline = mvp_now() + TERM_LOOK;
        int g = is_gone();
        while (!g && mvp_now() < deadline) {
            nap(0.02);
            g = is_gone();
        }
        char text[80];
        if (g) {
            snprintf(text, sizeof text, "got signal %d and the collector is gone", sig);
            pthread_mutex_lock(&dlock);
            orphaned_locked(text, 0);
            pthread_mutex_unlock(&dlock);
            nap(ORPHAN_LINGER);
        } else {
            halt_producers();  /* what the BYE ends with is all there is */
            mvp_on = 0;
            atomic_store(&stop_flusher, 1);  /* a failing send now spills, never leaves with 75 */
            snprintf(text, sizeof text, "stopped by signal %d", sig);
            say_bye("crashed", text);
            /* The peers got the signal too: MPICH kills them once one rank
             * leaves, so give them the time to ship theirs. */
            nap(ORPHAN_LINGER);
        }
    }
    _exit(128 + sig);
}

static _Atomic int flusher_live;

static void *flusher_main(void *arg) {
    (void)arg;
    uint64_t seen = atomic_load(&head);
    double last_flush = mvp_now(), last_change = last_flush;
    double next_watch = last_flush + WATCH_EVERY;
    struct timespec nap_ts = {0, (long)(quiet_s * 1e9)};
    while (!atomic_load(&stop_flusher)) {
        nanosleep(&nap_ts, NULL);
        int sig = atomic_load(&term_signal);
        if (sig) terminated(sig);
        double now = mvp_now();
        if (now >= next_watch) {
            next_watch = now + WATCH_EVERY;
            pthread_mutex_lock(&dlock);
            int g = !said_bye && gone_locked();
            if (g) orphaned_locked("the collector closed the connection", 1);
            pthread_mutex_unlock(&dlock);
            if (g) break;  /* MPVIS_STAY_ON_LOSS: the program goes on untraced */
        }
        uint64_t h = atomic_load_explicit(&head, memory_order_acquire);
        if (h != seen) { seen = h; last_change = now; }
        int pending = h != atomic_load_explicit(&tail, memory_order_relaxed);
        if (pending && (now - last_change >= quiet_s || now - last_flush >= longest_s)) {
            drain();
            last_flush = now;
        }
    }
    /* A SIGTERM noted now or before is handled here; one that comes later finds
     * no flusher and kills the process as the default action would. */
    atomic_store(&flusher_live, 0);
    int sig = atomic_load(&term_signal);
    if (sig) terminated(sig);
    return NULL;
}

/* The SIGTERM handler: async-signal-safe, it only notes the signal for the
 * flusher (which handles it within about MPVIS_FLUSH_QUIET_MS), even while
 * the program's thread is blocked inside MPI. */
static void on_term(int sig) {
    int saved = errno;
    int none = 0;
    atomic_compare_exchange_strong(&term_signal, &none, sig);  /* the first one decides */
    if (!atomic_load(&flusher_live)) {
        signal(sig, SIG_DFL);
        raise(sig);
    }
    errno = saved;
}

/* -- start and end ------------------------------------------------------------------- */
/* Connects to "host:port"; on failure returns -1 with why it failed in `why`
 * (the last connect's errno, or the address's problem). */
static int connect_to(const char *addr, char *why, size_t why_n) {
    char host[256];
    const char *colon = strrchr(addr, ':');
    if (!colon || (size_t)(colon - addr) >= sizeof host) {
        snprintf(why, why_n, "not host:port");
        return -1;
    }
    memcpy(host, addr, colon - addr);
    host[colon - addr] = 0;
    char *h = host;
    if (h[0] == '[') { h++; char *e = strchr(h, ']'); if (e) *e = 0; }
    if (!*h) h = "127.0.0.1";
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(h, colon + 1, &hints, &res);
    if (gai != 0) {
        snprintf(why, why_n, "%s", gai_strerror(gai));
        return -1;
    }
    int fd = -1;
    snprintf(why, why_n, "no address");
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
        snprintf(why, why_n, "%s", strerror(errno));
        if (fd >= 0) close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

static char *program_line(void) {
    FILE *f = fopen("/proc/self/cmdline", "rb");
    static char line[4096];
    size_t n = 0;
    if (f) {
        n = fread(line, 1, sizeof line - 1, f);
        fclose(f);
    }
    for (size_t i = 0; i + 1 < n; i++) if (!line[i]) line[i] = ' ';
    line[n] = 0;
    return line;
}

static void say_bye(const char *status, const char *detail) {
    if (said_bye) return;
    drain();
    pthread_mutex_lock(&dlock);
    said_bye = 1;
    if (sock >= 0 && !lost) {
        buf_t b = {0};
        frame_begin(&b, T_BYE);
        mp_map(&b, 3);
        mp_str(&b, "rank"); mp_int(&b, mvp_rank);
        mp_str(&b, "status"); mp_str(&b, status);
        mp_str(&b, "detail"); mp_str(&b, detail);
        frame_end(&b);
        ship(&b);
        free(b.p);
        shutdown(sock, SHUT_WR);
    }
    pthread_mutex_unlock(&dlock);
}

static void stop_thread(void) {
    if (!atomic_exchange(&stop_flusher, 1)) pthread_join(flusher, NULL);
}

static void at_exit(void) {
    if (!mvp_on) return;
    mvp_on = 0;
    stop_thread();
    say_bye("crashed", "the program exited without calling MPI_Finalize");
}

static void on_fatal(int sig) {
    /* Best effort: the records so far and a BYE naming the signal. */
    if (mvp_on && !said_bye) {
        mvp_on = 0;
        atomic_store(&stop_flusher, 1);
        char detail[64];
        snprintf(detail, sizeof detail, "killed by signal %d (%s)", sig, strsignal(sig));
        if (pthread_mutex_trylock(&dlock) == 0) {
            pthread_mutex_unlock(&dlock);
            say_bye("crashed", detail);
        }
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void catch_fatal(int sig) {
    struct sigaction old;
    if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
        struct sigaction sa = {0};
        sa.sa_handler = on_fatal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND;
        sigaction(sig, &sa, NULL);
    }
}

static double env_ms(const char *name, double dflt) {
    const char *v = getenv(name);
    double ms = v ? atof(v) : dflt;
    return (ms > 0.5 ? ms : 0.5) / 1000.0;
}

static void check_mpi(void) {
    /* A library built for another MPI must not run: compare the library's
     * version string with the one this library was compiled against. */
    char got[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    PMPI_Get_library_version(got, &n);
#if defined(MPICH_VERSION)
    const char *want = "MPICH Version:";
    const char *ver = MPICH_VERSION;
#elif defined(OMPI_MAJOR_VERSION)
    const char *want = "Open MPI";
    const char *ver = NULL;
#else
    const char *want = NULL;
    const char *ver = NULL;
#endif
    if (want && !strstr(got, want)) {
        fprintf(stderr,
                "mpvis: the trace library was built for another MPI (%s%s); this program "
                "runs with: %.120s\nmpvis: rebuild it with this MPI's mpicc "
                "(mpvis run --mpicc PATH), or run with the MPI it was built for\n",
                want, ver ? ver : "", got);
        PMPI_Abort(MPI_COMM_WORLD, 3);
    }
}

void mvp_start(int *argc, char ***argv, int provided) {
    (void)argc; (void)argv;
    check_mpi();
    PMPI_Comm_rank(MPI_COMM_WORLD, &mvp_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &mvp_nprocs);
    multi = provided == MPI_THREAD_MULTIPLE;
    pthread_spin_init(&plock, PTHREAD_PROCESS_PRIVATE);
    pthread_mutexattr_t recursive;
    pthread_mutexattr_init(&recursive);
    pthread_mutexattr_settype(&recursive, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&tlock, &recursive);
    /* One time origin for the run: rank 0's wall clock, mapped onto each rank's
     * monotonic clock (as the mpi4py path does). */
    struct timespec wall, mono;
    clock_gettime(CLOCK_REALTIME, &wall);
    double origin = wall.tv_sec + wall.tv_nsec * 1e-9;
    PMPI_Bcast(&origin, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    clock_gettime(CLOCK_REALTIME, &wall);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    double behind = wall.tv_sec + wall.tv_nsec * 1e-9 - origin;
    t0 = mono.tv_sec + mono.tv_nsec * 1e-9 - (behind > 0 ? behind : 0);
    mvp_sync_sends = getenv("MPVIS_SYNC_SENDS") && strcmp(getenv("MPVIS_SYNC_SENDS"), "1") == 0;
    find_libraries();
    mvp_comm_init();
    mvp_replay_init();
    const char *addr = getenv("MPVIS_COLLECTOR");
    if (!addr || !*addr) return;
    char why[128];
    sock = connect_to(addr, why, sizeof why);
    if (sock < 0) {
        fprintf(stderr, "mpvis: rank %d: cannot reach collector %s (%s); running untraced\n",
                mvp_rank, addr, why);
        return;
    }
    ring = calloc(RCAP, sizeof *ring);
    xring = malloc(XCAP);
    if (!ring || !xring) { fprintf(stderr, "mpvis: out of memory\n"); PMPI_Abort(MPI_COMM_WORLD, 3); }
    quiet_s = env_ms("MPVIS_FLUSH_QUIET_MS", 5);
    longest_s = env_ms("MPVIS_FLUSH_MS", 50);
    buf_t b = {0};
    char hostname[256] = "";
    gethostname(hostname, sizeof hostname - 1);
    const char *token = getenv("MPVIS_TOKEN");
    frame_begin(&b, T_HELLO);
    mp_map(&b, 5);
    mp_str(&b, "role"); mp_str(&b, "rank");
    mp_str(&b, "token"); if (token && *token) mp_str(&b, token); else mp_nil(&b);
    mp_str(&b, "rank"); mp_int(&b, mvp_rank);
    mp_str(&b, "pid"); mp_int(&b, getpid());
    mp_str(&b, "host"); mp_str(&b, hostname);
    frame_end(&b);
    pthread_mutex_lock(&dlock);  /* ship() runs under dlock */
    ship(&b);
    if (mvp_rank == 0) {
        char started[32];
        time_t now = time(NULL);
        strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
        frame_begin(&b, T_HEADER);
        mp_map(&b, 6);
        mp_str(&b, "kind"); mp_str(&b, "header");
        mp_str(&b, "format"); mp_str(&b, "mpvis-trace");
        mp_str(&b, "version"); mp_int(&b, 1);
        mp_str(&b, "nprocs"); mp_int(&b, mvp_nprocs);
        mp_str(&b, "program"); mp_str(&b, program_line());
        mp_str(&b, "started"); mp_str(&b, started);
        frame_end(&b);
        ship(&b);
    }
    pthread_mutex_unlock(&dlock);
    free(b.p);
    mvp_on = 1;
    membarrier_ok = syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    atomic_store(&flusher_live, 1);
    pthread_create(&flusher, NULL, flusher_main, NULL);
    atexit(at_exit);
    /* SIGTERM, and SIGINT (Ctrl-C: an mpi4py rank's KeyboardInterrupt ships
     * its records too): ship or spill, then leave (terminated); a program that
     * installs its own handler (before or after this) keeps it. */
    static const int stops[] = {SIGTERM, SIGINT};
    for (int i = 0; i < 2; i++) {
        struct sigaction old;
        if (sigaction(stops[i], NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO)
            && old.sa_handler == SIG_DFL) {
            struct sigaction sa = {0};
            sa.sa_handler = on_term;
            sigemptyset(&sa.sa_mask);
            sigaddset(&sa.sa_mask, SIGTERM);
            sigaddset(&sa.sa_mask, SIGINT);
            sa.sa_flags = SA_RESTART;
            sigaction(stops[i], &sa, NULL);
        }
    }
    catch_fatal(SIGSEGV);
    catch_fatal(SIGBUS);
    catch_fatal(SIGFPE);
    catch_fatal(SIGILL);
    catch_fatal(SIGABRT);
}

void mvp_finish(void) {
    if (!mvp_on) return;
    mvp_x x = {0};
    mvp_req_leaks(&x);
    mvp_rec r = {0};
    r.kind = MVK_FINAL;
    r.t = mvp_now();
    r.call = mvp_next_call();
    mvp_append(&r, &x);
    mvp_x_free(&x);
    mvp_ring_final();
    mvp_on = 0;
    stop_thread();
    say_bye("final", "");
}

void mvp_abort(int code, const char *where) {
    if (!mvp_on) return;
    mvp_on = 0;
    stop_thread();
    char detail[512];
    snprintf(detail, sizeof detail, "MPI_Abort(errorcode=%d)%s%s", code, where ? " at " : "",
             where ? where : "");
    say_bye("crashed", detail);
    /* Let the other ranks' flushers ship their last records before the job ends:
     * twice the longest flush delay, at least 100 ms. */
    double wait = 2 * longest_s > 0.1 ? 2 * longest_s : 0.1;
    struct timespec grace = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
    nanosleep(&grace, NULL);
}

/* -- program variables (include/mpvis.h) ---------------------------------------------- */
static void state(const char *name, void (*value)(mvp_x *, const void *), const void *v, void *pc) {
    if (!mvp_on || !name) return;
    mvp_x x = {0};
    mvp_x_key(&x, "vars");
    mvp_x_raw_map(&x, 1);
    mvp_x_raw_str(&x, name);
    value(&x, v);
    mvp_rec r = {0};
    r.kind = MVK_STATE;
    r.site = mvp_site(pc);
    r.t = mvp_now();
    r.call = -1;
    mvp_append(&r, &x);
    mvp_x_free(&x);
}
static void put_int(mvp_x *x, const void *v) { mvp_x_raw_int(x, *(const long long *)v); }
static void put_double(mvp_x *x, const void *v) { mp_double(XB(x), *(const double *)v); }
static void put_str(mvp_x *x, const void *v) { mvp_x_raw_str(x, v ? (const char *)v : ""); }

void mpvis_state_int(const char *name, long long value) { state(name, put_int, &value, MVP_PC()); }
void mpvis_state_double(const char *name, double value) { state(name, put_double, &value, MVP_PC()); }
void mpvis_state_str(const char *name, const char *value) { state(name, put_str, value, MVP_PC()); }
