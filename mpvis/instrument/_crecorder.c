/* mpvis.instrument._crecorder: the in-rank event recorder, in C.
 *
 * One Recorder lives in each traced rank (see recorder.py for the contract).
 * Each record method numbers the event, takes the time, finds the caller's
 * site (the first frame whose code is outside the library and mpi4py; cached
 * per code object and instruction, interned to a small id) and appends one
 * fixed-size binary record to a growable buffer.  drain() hands the buffer
 * over as bytes, with the site strings interned since the last drain and the
 * variable-size payloads (wait's request list, a collective's arguments,
 * state's variables): the flusher thread does no per-record Python work.
 *
 * The record layout is mpvis.protocol.compact's (64 bytes, little-endian):
 *   u8 kind, u8 flags, u16 zero, u32 site, i64 seq, f64 t, i64 comm,
 *   i32 a, i32 b, i64 c, i64 d, i64 call
 * ``call`` numbers the rank's MPI calls (from 0; -1 for a record of no call, a
 * state): a record either starts a call (a new number) or continues the call
 * its thread has open (the consume of a blocking receive, a collective's exit,
 * a Sendrecv's receive half, a wait and the consumes it completes...); see
 * call_of().
 * Every method runs with the GIL held and never releases it, so a drain
 * (flusher thread) and an append (program thread) never interleave.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* CPython 3.11: walk the interpreter's frames directly, without creating a frame
 * object per call (about half the cost of a record); other versions use the
 * public frame API. */
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#define MV_FAST_FRAMES 1
#define Py_BUILD_CORE
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "the compact record layout is little-endian"
#endif

/* Record kinds and flags: generated from mpvis/protocol/codes.py (the numbers
 * mpvis.protocol.compact decodes); short local names for them. */
#include "pmpi/mvcodes.h"
enum { K_SEND = MVK_SEND, K_RECV = MVK_RECV, K_CONSUME = MVK_CONSUME, K_WAIT = MVK_WAIT,
       K_COLL = MVK_COLL, K_COLL_EXIT = MVK_COLL_EXIT, K_STATE = MVK_STATE,
       K_FINAL = MVK_FINAL, K_RECV_CONSUME = MVK_RECV_CONSUME };
enum { F_BLOCKING = MVC_BLOCKING, F_SYNC = MVC_SYNC, F_SEND = MVC_SEND, F_CHAN = MVC_CHAN,
       F_BUF = MVC_BUF, F_PAIR = MVC_PAIR };
/* send()/recv() argument flag (not on the wire): the record continues the open call. */
enum { A_CONT = MVA_CONT };
/* How a record's ``call`` is chosen (call_of). */
enum { CALL_NEW, CALL_CONT, CALL_NONE };

typedef struct {
    uint8_t kind;
    uint8_t flags;
    uint16_t zero;
    uint32_t site;
    int64_t seq;
    double t;
    int64_t comm;
    int32_t a;
    int32_t b;
    int64_t c;
    int64_t d;
    int64_t call;
} rec_t;

_Static_assert(sizeof(rec_t) == 64, "compact record is 64 bytes");

/* Open-addressing tables keyed by pointers / small tuples (capacity: power of 2). */
typedef struct { PyObject *code; int internal; } code_slot;
typedef struct { PyObject *code; int lasti; uint32_t site; } site_slot;
typedef struct { int64_t comm; int32_t src; int32_t tag; int64_t count; int used; } chan_slot;

typedef struct {
    PyObject_HEAD
    int64_t rank;
    int64_t seq;
    int64_t ncall;         /* the next MPI call's number */
    uint64_t ident;        /* this recorder's number in the process (thread-local state's owner) */
    double t0;
    char *buf;
    Py_ssize_t len, cap;
    PyObject *extras;      /* list: payloads of variable-size records not drained yet */
    int64_t extras_base;   /* the (absolute) index of extras[0] */
    uint64_t drains;       /* drains that took records (a record's offset is stale after one) */
    int wake;              /* idle_wait() should return now (set by wake()) */
    PyObject *new_sites;   /* list: site strings interned since the last drain */
    PyObject *site_ids;    /* dict: site string -> id */
    PyObject *site_list;   /* list: id - 1 -> site string */
    uint32_t nsites;       /* ids handed out so far (ids start at 1) */
    PyObject *prefixes;    /* tuple of str: internal path prefixes */
    code_slot *codes; size_t ncodes, capcodes;
    site_slot *sites; size_t nsitekeys, capsites;
    chan_slot *chans; size_t nchans, capchans;
} Recorder;

/* seq, len and wake are read by idle_wait() without the GIL (relaxed atomics: a
 * stale value only delays a flush by one poll). */
#define STORE(field, value) __atomic_store_n(&(field), (value), __ATOMIC_RELAXED)
#define LOAD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline size_t hash_ptr(const void *p, int extra) {
    uintptr_t x = (uintptr_t)p ^ ((uintptr_t)(unsigned)extra * 0x9E3779B97F4A7C15ull);
    x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33;
    return (size_t)x;
}

static inline size_t hash_chan(int64_t comm, int32_t src, int32_t tag) {
    uint64_t x = (uint64_t)comm * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uint32_t)src * 0xC2B2AE3D27D4EB4Full
                 ^ (uint64_t)(uint32_t)tag;
    x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33;
    return (size_t)x;
}

/* -- the code table: is a code object internal? ------------------------------------ */

static int codes_grow(Recorder *self) {
    size_t cap = self->capcodes ? self->capcodes * 2 : 64;
    code_slot *t = PyMem_Calloc(cap, sizeof(code_slot));
    if (!t) { PyErr_NoMemory(); return -1; }
    for (size_t i = 0; i < self->capcodes; i++) {
        code_slot *s = &self->codes[i];
        if (!s->code) continue;
        size_t j = hash_ptr(s->code, 0) & (cap - 1);
        while (t[j].code) j = (j + 1) & (cap - 1);
        t[j] = *s;
    }
    PyMem_Free(self->codes);
    self->codes = t;
    self->capcodes = cap;
    return 0;
}

/* 1 if internal, 0 if not, -1 on error.  ``code`` is a borrowed reference. */
static int code_internal(Recorder *self, PyCodeObject *code) {
    if (self->capcodes) {
        size_t j = hash_ptr(code, 0) & (self->capcodes - 1);
        while (self->codes[j].code) {
            if (self->codes[j].code == (PyObject *)code) return self->codes[j].internal;
            j = (j + 1) & (self->capcodes - 1);
        }
    }
    if ((self->ncodes + 1) * 2 > self->capcodes && codes_grow(self) < 0) return -1;
    PyObject *fn = code->co_filename;
    PyObject *r = PyObject_CallMethod(fn, "startswith", "(O)", self->prefixes);
    if (!r) return -1;
    int internal = PyObject_IsTrue(r);
    Py_DECREF(r);
    if (internal < 0) return -1;
    size_t j = hash_ptr(code, 0) & (self->capcodes - 1);
    while (self->codes[j].code) j = (j + 1) & (self->capcodes - 1);
    Py_INCREF(code);  /* kept alive: its address stays a valid key */
    self->codes[j].code = (PyObject *)code;
    self->codes[j].internal = internal;
    self->ncodes++;
    return internal;
}

/* -- the site table: (code, instruction) -> site id ---------------------------------- */

static int sites_grow(Recorder *self) {
    size_t cap = self->capsites ? self->capsites * 2 : 64;
    site_slot *t = PyMem_Calloc(cap, sizeof(site_slot));
    if (!t) { PyErr_NoMemory(); return -1; }
    for (size_t i = 0; i < self->capsites; i++) {
        site_slot *s = &self->sites[i];
        if (!s->code) continue;
        size_t j = hash_ptr(s->code, s->lasti) & (cap - 1);
        while (t[j].code) j = (j + 1) & (cap - 1);
        t[j] = *s;
    }
    PyMem_Free(self->sites);
    self->sites = t;
    self->capsites = cap;
    return 0;
}

/* The id of site string ``text`` (new reference consumed), interning it. */
static int64_t intern_site(Recorder *self, PyObject *text) {
    PyObject *id = PyDict_GetItemWithError(self->site_ids, text);
    if (id) { Py_DECREF(text); return PyLong_AsLongLong(id); }
    if (PyErr_Occurred()) { Py_DECREF(text); return -1; }
    uint32_t sid = ++self->nsites;
    PyObject *pid = PyLong_FromUnsignedLong(sid);
    if (!pid || PyDict_SetItem(self->site_ids, text, pid) < 0 ||
        PyList_Append(self->new_sites, text) < 0 || PyList_Append(self->site_list, text) < 0) {
        Py_XDECREF(pid); Py_DECREF(text); return -1;
    }
    Py_DECREF(pid);
    Py_DECREF(text);
    return sid;
}

/* The site id of instruction ``lasti`` (bytes) of ``code`` (not internal, in the code table). */
static int64_t frame_site(Recorder *self, PyCodeObject *code, int lasti) {
    if (self->capsites) {
        size_t j = hash_ptr(code, lasti) & (self->capsites - 1);
        while (self->sites[j].code) {
            site_slot *s = &self->sites[j];
            if (s->code == (PyObject *)code && s->lasti == lasti) return s->site;
            j = (j + 1) & (self->capsites - 1);
        }
    }
    PyObject *text = PyUnicode_FromFormat("%U:%d", code->co_filename, PyCode_Addr2Line(code, lasti));
    if (!text) return -1;
    int64_t sid = intern_site(self, text);
    if (sid < 0) return -1;
    if ((self->nsitekeys + 1) * 2 > self->capsites && sites_grow(self) < 0) return -1;
    size_t j = hash_ptr(code, lasti) & (self->capsites - 1);
    while (self->sites[j].code) j = (j + 1) & (self->capsites - 1);
    self->sites[j].code = (PyObject *)code;  /* owned by the code table */
    self->sites[j].lasti = lasti;
    self->sites[j].site = (uint32_t)sid;
    self->nsitekeys++;
    return sid;
}

/* The id of the caller's site: the innermost frame outside the internal prefixes. */
#ifdef MV_FAST_FRAMES
static int64_t caller_site(Recorder *self) {
    _PyInterpreterFrame *f = PyThreadState_GET()->cframe->current_frame;
    for (; f; f = f->previous) {
        if (_PyFrame_IsIncomplete(f)) continue;
        int internal = code_internal(self, f->f_code);
        if (internal < 0) return -1;
        if (!internal)
            return frame_site(self, f->f_code,
                              _PyInterpreterFrame_LASTI(f) * (int)sizeof(_Py_CODEUNIT));
    }
    PyObject *text = PyUnicode_FromString("<unknown>:0");
    return text ? intern_site(self, text) : -1;
}
#else
static int64_t caller_site(Recorder *self) {
    PyFrameObject *f = PyEval_GetFrame();  /* borrowed */
    Py_XINCREF(f);
    while (f) {
        PyCodeObject *code = PyFrame_GetCode(f);
        int internal = code_internal(self, code);
        if (internal == 0) {
            int64_t sid = frame_site(self, code, PyFrame_GetLasti(f));
            Py_DECREF(code);
            Py_DECREF(f);
            return sid;
        }
        Py_DECREF(code);
        if (internal < 0) { Py_DECREF(f); return -1; }
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    PyObject *text = PyUnicode_FromString("<unknown>:0");
    return text ? intern_site(self, text) : -1;
}
#endif

/* -- call numbers ------------------------------------------------------------------------- */

/* The call each thread has open: records of one MPI call are made by the thread
 * that called it, and another thread may record meanwhile (while this one is
 * blocked in MPI without the GIL), so the open call is per thread.  ``t_owner``
 * is the ident of the recorder the open call belongs to (0: none). */
static uint64_t n_recorders;
static _Thread_local uint64_t t_owner;
static _Thread_local int64_t t_call;

/* The ``call`` of a new record: CALL_NEW numbers a new call and opens it for this
 * thread; CALL_CONT joins the thread's open call (or starts one if none is open);
 * CALL_NONE is -1 (a record of no MPI call). */
static inline int64_t call_of(Recorder *self, int mode) {
    if (mode == CALL_NONE) return -1;
    if (mode == CALL_CONT && t_owner == self->ident) return t_call;
    t_owner = self->ident;
    t_call = self->ncall++;
    return t_call;
}

/* -- appending records ------------------------------------------------------------------ */

static rec_t *append(Recorder *self, int kind, int with_site, int call_mode) {
    uint32_t site = 0;
    if (with_site) {
        int64_t sid = caller_site(self);
        if (sid < 0) return NULL;
        site = (uint32_t)sid;
    }
    if (self->len + (Py_ssize_t)sizeof(rec_t) > self->cap) {
        Py_ssize_t cap = self->cap ? self->cap * 2 : 4096 * (Py_ssize_t)sizeof(rec_t);
        char *b = PyMem_Realloc(self->buf, (size_t)cap);
        if (!b) { PyErr_NoMemory(); return NULL; }
        self->buf = b;
        self->cap = cap;
    }
    rec_t *r = (rec_t *)(self->buf + self->len);
    STORE(self->len, self->len + (Py_ssize_t)sizeof(rec_t));
    memset(r, 0, sizeof(rec_t));
    r->kind = (uint8_t)kind;
    r->site = site;
    r->seq = self->seq;
    STORE(self->seq, self->seq + 1);
    r->t = now() - self->t0;
    r->call = call_of(self, call_mode);
    return r;
}

/* Store ``obj`` (borrowed) as the payload of record ``r``. */
static int add_extra(Recorder *self, rec_t *r, PyObject *obj) {
    r->c = self->extras_base + PyList_GET_SIZE(self->extras);
    return PyList_Append(self->extras, obj);
}

static int get_i64(PyObject *o, int64_t *out) {
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    *out = v;
    return 0;
}

static int get_i32(PyObject *o, int32_t *out) {
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < INT32_MIN || v > INT32_MAX) {
        PyErr_Format(PyExc_OverflowError, "%ld does not fit a 32-bit rank or tag", v);
        return -1;
    }
    *out = (int32_t)v;
    return 0;
}

static int nargs_ok(const char *name, Py_ssize_t n, Py_ssize_t want) {
    if (n == want) return 1;
    PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (%zd given)", name, want, n);
    return 0;
}

static PyObject *seq_of(rec_t *r) { return PyLong_FromLongLong(r->seq); }

/* send(comm, dest, tag, flags) -> seq; flags: 1 blocking, 2 sync, 16 buffer message,
 * 32 the send half of a Sendrecv, 64 the record continues the open call (Startall). */
static PyObject *R_send(Recorder *self, PyObject *const *args, Py_ssize_t n) {
    int64_t comm, flags; int32_t dest, tag;
    if (!nargs_ok("send", n, 4) || get_i64(args[0], &comm) || get_i32(args[1], &dest) ||
        get_i32(args[2], &tag) || get_i64(args[3], &flags))
        return NULL;
    rec_t *r = append(self, K_SEND, 1, flags & A_CONT ? CALL_CONT : CALL_NEW);
    if (!r) return NULL;
    r->flags = (uint8_t)(flags & (F_BLOCKING | F_SYNC | F_BUF | F_PAIR));
    r->comm = comm; r->a = dest; r->b = tag;
    return seq_of(r);
}

/* recv(comm, src, tag, flags) -> seq (src/tag already -1 for wildcards); flags (an int
 * or a bool): 1 blocking, 64 the record continues the open call (a Sendrecv's receive
 * half, Startall). */
static PyObject *R_recv(Recorder *self, PyObject *const *args, Py_ssize_t n) {
    int64_t comm, flags; int32_t src, tag;
    if (!nargs_ok("recv", n, 4) || get_i64(args[0], &comm) || get_i32(args[1], &src) ||
        get_i32(args[2], &tag) || get_i64(args[3], &flags))
        return NULL;
    rec_t *r = append(self, K_RECV, 1, flags & A_CONT ? CALL_CONT : CALL_NEW);
    if (!r) return NULL;
    r->flags = flags & F_BLOCKING ? F_BLOCKING : 0;
    r->comm = comm; r->a = src; r->b = tag;
    return seq_of(r);
}

/* consume(comm, recv, src, tag, send_seq or None) -> seq */
static PyObject *R_consume(Recorder *self, PyObject *const *args, Py_ssize_t n) {
    int64_t comm, recv, sseq = 0; int32_t src, tag;
    if (!nargs_ok("consume", n, 5) || get_i64(args[0], &comm) || get_i64(args[1], &recv) ||
        get_i32(args[2], &src) || get_i32(args[3], &tag))
        return NULL;
    int has = args[4] != Py_None;
    if (has && get_i64(args[4], &sseq)) return NULL;
    rec_t *r = append(self, K_CONSUME, 1, CALL_CONT);
    if (!r) return NULL;
    r->flags = has ? F_SEND : 0;
    r->comm = comm; r->a = src; r->b = tag; r->c = recv; r->d = sseq;
    return seq_of(r);
}

/* The consume of object message msg = (send seq or None, obj[, extra]) of receive ``recv``
 * on ``comm``, from world rank ``src`` with ``tag``: returns obj (a new reference).
 * ``site``: the consume's site id if the caller knows it (the receive's), else 0. */
static PyObject *unwrap_msg(Recorder *self, int64_t comm, int64_t recv, PyObject *msg,
                            int32_t src, int32_t tag, uint32_t site) {
    int64_t sseq = 0;
    if (!PyTuple_CheckExact(msg) || PyTuple_GET_SIZE(msg) < 2 || PyTuple_GET_SIZE(msg) > 3) {
        PyErr_SetString(PyExc_TypeError,
                        "mpvis: a traced receive got a message without the trace library's "
                        "piggyback (sent by an untraced communicator?)");
        return NULL;
    }
    PyObject *first = PyTuple_GET_ITEM(msg, 0);
    int has = first != Py_None;
    if (has && get_i64(first, &sseq)) return NULL;
    rec_t *r = append(self, K_CONSUME, site == 0, CALL_CONT);
    if (!r) return NULL;
    if (site) r->site = site;
    r->flags = has ? F_SEND : 0;
    r->comm = comm; r->a = src; r->b = tag; r->c = recv; r->d = sseq;
    PyObject *obj = PyTuple_GET_ITEM(msg, 1);
    Py_INCREF(obj);
    return obj;
}

/* unwrap(comm, recv, msg, src, tag) -> obj */
static PyObject *R_unwrap(Recorder *self, PyObject *const *args, Py_ssize_t n) {
    int64_t comm, recv; int32_t src, tag;
    if (!nargs_ok("unwrap", n, 5) || get_i64(args[0], &comm) || get_i64(args[1], &recv) ||
        get_i32(args[3], &src) || get_i32(args[4], &tag))
        return NULL;
    return unwrap_msg(self, comm, recv, args[2], src, tag, 0);
}

static int chans_grow(Recorder *self) {
    size_t cap = self->capchans ? self->capchans * 2 : 64;
    chan_slot *t = PyMem_Calloc(cap, sizeof(chan_slot));
    if (!t) { PyErr_NoMemory(); return -1; }
    for (size_t i = 0; i < self->capchans; i++) {
        chan_slot *s = &self->chans[i];
        if (!s->used) continue;
        size_t j = hash_chan(s->comm, s->src, s->tag) & (cap - 1);
        while (t[j].used) j = (j + 1) & (cap - 1);
        t[j] = *s;
    }
    PyMem_Free(self->chans);
    self->chans = t;
    self->capchans = cap;
    return 0;
}

/* consume_chan(comm, recv, src, tag, exact) -> seq: the consume of a buffer message
 * from world rank src; the channel's counter says which of its messages this is.
 * With exact false (completion order unknown) the ordinal is counted, not recorded. */
/* The consume of a buffer message (see consume_chan below); ``site`` as for
 * unwrap_msg.  Returns the record or NULL. */
/* The next ordinal of channel (comm, src, tag) (counted from 0), or -1 (no memory). */
static int64_t chan_next(Recorder *self, int64_t comm, int32_t src, int32_t tag) {
    if ((self->nchans + 1) * 2 > self->capchans && chans_grow(self) < 0) return -1;
    size_t j = hash_chan(comm, src, tag) & (self->capchans - 1);
    while (self->chans[j].used &&
           !(self->chans[j].comm == comm && self->chans[j].src == src && self->chans[j].tag == tag))
        j = (j + 1) & (self->capchans - 1);
    chan_slot *s = &self->chans[j];
    if (!s->used) {
        s->used = 1; s->comm = comm; s->src = src; s->tag = tag; s->count = 0;
        self->nchans++;
    }
    return s->count++;
}

static rec_t *chan_consume(Recorder *self, int64_t comm, int64_t recv, int32_t src, int32_t tag,
                           int exact, uint32_t site) {
    int64_t ordinal = chan_next(self, comm, src, tag);
    if (ordinal < 0) return NULL;
    rec_t *r = append(self, K_CONSUME, site == 0, CALL_CONT);
    if (!r) return NULL;
    if (site) r->site = site;
    r->flags = exact ? F_CHAN : 0;
    r->comm = comm; r->a = src; r->b = tag; r->c = recv; r->d = ordinal;
    return r;
}

static PyObject *R_consume_chan(Recorder *self, PyObject *const *args, Py_ssize_t n) {
    int64_t comm, recv; int32_t src, tag;
    if (!nargs_ok("consume_chan", n, 5) || get_i64(args[0], &comm) || get_i64(args[1], &recv) ||
        get_i32(args[2], &src) || get_i32(args[3], &tag))
        return NULL;
    int exact = PyObject_IsTrue(args[4]);
    if (exact < 0) return NULL;
    rec_t *r = chan_consume(self, comm, recv, src, tag, exact, 0);
    return r ? seq_of(r) : NULL;
}

/* wait(reqs) -> seq: the requests (a list of ints) completed by one call. */
static PyObject *R_wait(Recorder *self, PyObject *const *args, Py_ssize_t n) {
    if (!nargs_ok("wait", n, 1)) return NULL;
    rec_t *r = append(self, K_WAIT, 1, CALL_CONT);
    if (!r || add_extra(self, r, args[0]) < 0) return NULL;
    return seq_of(r);
}

/* coll(comm, op, fields) -> seq: a collective's entry; fields: root/count/dtype/redop/group. */
static PyObject *R_coll(Recorder *self, PyObject *const *args, Py_ssize_t n) {
    int64_t comm;
    if (!nargs_ok("coll", n, 3) || get_i64(args[0], &comm)) return NULL;
    PyObject *payload = PyTuple_Pack(2, args[1], args[2]);
    if (!payload) return NULL;
    rec_t *r = append(self, K_COLL, 1, CALL_NEW);
    int bad = !r || add_extra(self, r, payload) < 0;
    Py_DECREF(payload);
    if (bad) return NULL;
    r->comm = comm;
    return seq_of(r);
}

/* coll_exit(comm, op) -> seq */
static PyObject *R_coll_exit(Recorder *self, PyObject *const *args, Py_ssize_t n) {
    int64_t comm;
    if (!nargs_ok("coll_exit", n, 2) || get_i64(args[0], &comm)) return NULL;
    rec_t *r = append(self, K_COLL_EXIT, 1, CALL_CONT);
    if (!r || add_extra(self, r, args[1]) < 0) return NULL;
    r->comm = comm;
    return seq_of(r);
}

/* state(variables) -> seq: variables is a dict of JSON scalars. */
static PyObject *R_state(Recorder *self, PyObject *const *args, Py_ssize_t n) {
    if (!nargs_ok("state", n, 1)) return NULL;
    rec_t *r = append(self, K_STATE, 1, CALL_NONE);
    if (!r || add_extra(self, r, args[0]) < 0) return NULL;
    return seq_of(r);
}

/* final() -> seq */
static PyObject *R_final(Recorder *self, PyObject *unused) {
    rec_t *r = append(self, K_FINAL, 0, CALL_NEW);
    return r ? seq_of(r) : NULL;
}

/* site() -> "file:line" of the caller (first frame outside the internal prefixes). */
static PyObject *R_site(Recorder *self, PyObject *unused) {
    int64_t sid = caller_site(self);
    if (sid < 0) return NULL;
    PyObject *text = PyList_GetItem(self->site_list, (Py_ssize_t)sid - 1);
    Py_XINCREF(text);
    return text;
}

/* drain(max) -> (records: bytes, first new site id, new sites, first extra's index, extras):
 * the oldest ``max`` records (at most), the site strings interned since the last drain,
 * and the payloads those records refer to (by absolute index). */
static PyObject *R_drain(Recorder *self, PyObject *arg) {
    Py_ssize_t max = PyLong_AsSsize_t(arg);
    if (max == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t total = self->len / (Py_ssize_t)sizeof(rec_t);
    Py_ssize_t n = max < 0 || max > total ? total : max;
    Py_ssize_t upto = 0;  /* extras used by the drained records */
    if (n == total) {
        upto = PyList_GET_SIZE(self->extras);
    } else {
        for (Py_ssize_t i = 0; i < n; i++) {
            rec_t *r = (rec_t *)(self->buf + i * (Py_ssize_t)sizeof(rec_t));
            if (r->kind == K_WAIT || r->kind == K_COLL || r->kind == K_COLL_EXIT || r->kind == K_STATE)
                upto = (Py_ssize_t)(r->c - self->extras_base) + 1;
        }
    }
    Py_ssize_t nbytes = n * (Py_ssize_t)sizeof(rec_t);
    PyObject *data = PyBytes_FromStringAndSize(self->buf, nbytes);
    PyObject *sites = PyList_New(0);
    PyObject *extras = PyList_GetSlice(self->extras, 0, upto);
    PyObject *rest = PyList_GetSlice(self->extras, upto, PyList_GET_SIZE(self->extras));
    if (!data || !sites || !extras || !rest) {
        Py_XDECREF(data); Py_XDECREF(sites); Py_XDECREF(extras); Py_XDECREF(rest);
        return NULL;
    }
    Py_ssize_t first = (Py_ssize_t)self->nsites - PyList_GET_SIZE(self->new_sites) + 1;
    PyObject *out = Py_BuildValue("(NnOLN)", data, first, self->new_sites,
                                  (long long)self->extras_base, extras);
    if (!out) { Py_DECREF(sites); Py_DECREF(rest); return NULL; }
    Py_SETREF(self->new_sites, sites);
    Py_SETREF(self->extras, rest);
    self->extras_base += upto;
    memmove(self->buf, self->buf + nbytes, (size_t)(self->len - nbytes));
    STORE(self->len, self->len - nbytes);
    if (n) self->drains++;
    return out;
}

/* idle_wait(quiet, longest): sleep, without the GIL, until records are pending and
 * either the rank has recorded nothing for ``quiet`` seconds (it is blocked, or
 * computing: its view should be current) or ``longest`` seconds have passed since
 * the call; or until wake().  Polls every ``quiet`` (0.5 to 10 ms), so a blocked
 * rank is flushed within two: a busy rank pays a wake-up of this thread per
 * poll (no GIL) and a GIL hand-over per flush. */
static PyObject *R_idle_wait(Recorder *self, PyObject *const *args, Py_ssize_t n) {
    if (!nargs_ok("idle_wait", n, 2)) return NULL;
    double quiet = PyFloat_AsDouble(args[0]), longest = PyFloat_AsDouble(args[1]);
    if (PyErr_Occurred()) return NULL;
    double poll = quiet < 0.0005 ? 0.0005 : quiet > 0.01 ? 0.01 : quiet;
    struct timespec nap = {0, (long)(poll * 1e9)};
    Py_BEGIN_ALLOW_THREADS
    double start = now(), changed = start;
    int64_t seq = LOAD(self->seq);
    while (!__atomic_exchange_n(&self->wake, 0, __ATOMIC_RELAXED)) {
        nanosleep(&nap, NULL);
        double t = now();
        int64_t s = LOAD(self->seq);
        if (s != seq) {
            seq = s;
            changed = t;
        }
        if (LOAD(self->len) > 0 && (t - changed >= quiet || t - start >= longest)) break;
    }
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* wake(): make a current or the next idle_wait() return at once. */
static PyObject *R_wake(Recorder *self, PyObject *unused) {
    __atomic_store_n(&self->wake, 1, __ATOMIC_RELAXED);
    Py_RETURN_NONE;
}

/* close_call(): the thread's open call is over; its next record that would
 * continue a call starts one (the consumes a completion records, before its wait). */
static PyObject *R_close_call(Recorder *self, PyObject *unused) {
    if (t_owner == self->ident) t_owner = 0;
    Py_RETURN_NONE;
}

static PyObject *R_pending(Recorder *self, PyObject *unused) {
    return PyLong_FromSsize_t(self->len / (Py_ssize_t)sizeof(rec_t));
}

/* -- type ------------------------------------------------------------------------------- */

static int R_init(Recorder *self, PyObject *args, PyObject *kwds) {
    static char *kw[] = {"rank", "internal_dirs", NULL};
    long long rank;
    PyObject *prefixes;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "LO!", kw, &rank, &PyTuple_Type, &prefixes))
        return -1;
    if (self->extras) {
        PyErr_SetString(PyExc_RuntimeError, "a Recorder is initialised once");
        return -1;
    }
    self->rank = rank;
    self->seq = 0;
    self->ncall = 0;
    self->ident = ++n_recorders;  /* under the GIL */
    self->t0 = now();
    Py_INCREF(prefixes);
    self->prefixes = prefixes;
    self->extras = PyList_New(0);
    self->new_sites = PyList_New(0);
    self->site_ids = PyDict_New();
    self->site_list = PyList_New(0);
    if (!self->extras || !self->new_sites || !self->site_ids || !self->site_list) return -1;
    return 0;
}

static void R_dealloc(Recorder *self) {
    for (size_t i = 0; i < self->capcodes; i++) Py_XDECREF(self->codes[i].code);
    PyMem_Free(self->codes);
    PyMem_Free(self->sites);
    PyMem_Free(self->chans);
    PyMem_Free(self->buf);
    Py_XDECREF(self->extras);
    Py_XDECREF(self->new_sites);
    Py_XDECREF(self->site_ids);
    Py_XDECREF(self->site_list);
    Py_XDECREF(self->prefixes);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *R_get_rank(Recorder *self, void *c) { return PyLong_FromLongLong(self->rank); }
static PyObject *R_get_seq(Recorder *self, void *c) { return PyLong_FromLongLong(self->seq); }
static PyObject *R_get_call(Recorder *self, void *c) { return PyLong_FromLongLong(self->ncall); }
static PyObject *R_get_t0(Recorder *self, void *c) { return PyFloat_FromDouble(self->t0); }
static int R_set_t0(Recorder *self, PyObject *value, void *c) {
    double t0 = value ? PyFloat_AsDouble(value) : -1.0;
    if (!value) PyErr_SetString(PyExc_AttributeError, "t0 cannot be deleted");
    if (PyErr_Occurred()) return -1;
    self->t0 = t0;
    return 0;
}

static PyGetSetDef R_getset[] = {
    {"rank", (getter)R_get_rank, NULL, "This rank (MPI_COMM_WORLD).", NULL},
    {"seq", (getter)R_get_seq, NULL, "The seq the next event will get.", NULL},
    {"call", (getter)R_get_call, NULL, "The number the next MPI call will get.", NULL},
    {"t0", (getter)R_get_t0, (setter)R_set_t0,
     "the monotonic clock's reading at t = 0 (at creation unless set); records' t count from it.",
     NULL},
    {NULL},
};

#define FAST(name, doc) {#name, (PyCFunction)(void (*)(void))R_##name, METH_FASTCALL, doc}
static PyMethodDef R_methods[] = {
    FAST(send, "send(comm, dest, tag, flags) -> seq; flags: 1 blocking, 2 sync, 16 buffer, "
               "32 Sendrecv's send half, 64 continues the open call"),
    FAST(recv, "recv(comm, src, tag, flags) -> seq; flags: 1 blocking, 64 continues the open call"),
    FAST(consume, "consume(comm, recv, src, tag, send_seq | None) -> seq"),
    FAST(unwrap, "unwrap(comm, recv, msg, src, tag) -> obj: consume of an object message"),
    FAST(consume_chan, "consume_chan(comm, recv, src, tag, exact) -> seq (buffer messages)"),
    FAST(wait, "wait(reqs) -> seq"),
    FAST(coll, "coll(comm, op, fields) -> seq"),
    FAST(coll_exit, "coll_exit(comm, op) -> seq"),
    FAST(state, "state(variables) -> seq"),
    {"final", (PyCFunction)R_final, METH_NOARGS, "final() -> seq"},
    {"site", (PyCFunction)R_site, METH_NOARGS, "site() -> 'file:line' of the caller"},
    {"drain", (PyCFunction)R_drain, METH_O,
     "drain(max) -> (records, first new site id, new sites, first extra's index, extras)"},
    {"pending", (PyCFunction)R_pending, METH_NOARGS, "pending() -> records not drained yet"},
    FAST(idle_wait, "idle_wait(quiet, longest): sleep (no GIL) until a flush is due or wake()"),
    {"wake", (PyCFunction)R_wake, METH_NOARGS, "wake(): end the current or next idle_wait()"},
    {"close_call", (PyCFunction)R_close_call, METH_NOARGS,
     "close_call(): this thread's open MPI call is over (the next consume or wait starts one)"},
    {NULL},
};

static PyTypeObject RecorderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mpvis.instrument._crecorder.Recorder",
    .tp_basicsize = sizeof(Recorder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Recorder(rank, internal_dirs): numbers one rank's events into compact records.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)R_init,
    .tp_dealloc = (destructor)R_dealloc,
    .tp_methods = R_methods,
    .tp_getset = R_getset,
};

/* -- the piggyback of object messages: a trailer after the pickle ------------------- */
/*
 * mpi4py pickles every object message with the functions of its global
 * MPI.pickle; the trace library installs dumps()/loads() below there (see
 * mpvis.instrument.piggyback).  While a traced send is armed (call() or the fast
 * path), dumps() appends a 12-byte trailer to the pickle of the user's object:
 *     i64 send seq (little-endian), then the magic b"\0MV1"
 * (b"\0MV2": the pickle is of the pair (obj, hooks' extra data)).  pickle.loads
 * ignores bytes after the pickle's STOP opcode, so any receiver unpickles the
 * user's object; a pickle ends with STOP ('.'), never with the magic, so a
 * message without a trailer is never mistaken for one.  Compared with pickling
 * the pair (seq, obj), this saves a tuple on both sides and the pickling of it,
 * and the bytes are appended in place (no copy for a fresh pickle).
 *
 * loads() reads the trailer and hands the send number to the traced receive
 * according to this thread's mode: RX_PLAIN returns the object (any untraced
 * receive, a collective); RX_PAIR returns (seq or None, obj[, extra]) for the
 * Python receive paths (call() with wrap); RX_STASH returns the object and
 * leaves the number in rx_seq/rx_has for the C fast path.
 */
#define TRAILER_LEN 12
static const char MAGIC_PLAIN[4] = {'\0', 'M', 'V', '1'};
static const char MAGIC_EXTRA[4] = {'\0', 'M', 'V', '2'};
enum { RX_PLAIN = 0, RX_PAIR = 1, RX_STASH = 2 };

/* This thread's piggyback state; one struct, so that a function finds it with one
 * lookup (a module's thread-local variables cost a __tls_get_addr call each). */
typedef struct {
    int64_t tx_seq;      /* the armed send's number, -1: none */
    PyObject *tx_extra;  /* its hooks' data (borrowed) or NULL */
    int rx_mode;
    int rx_seen;         /* loads() ran (stash mode) */
    int rx_has;          /* ... and found a trailer */
    int64_t rx_seq;
} piggy_t;
static _Thread_local piggy_t piggy = {-1, NULL, RX_PLAIN, 0, 0, 0};

/* &piggy, looked up once per call: the empty asm hides where the pointer comes
 * from, so the compiler keeps it instead of redoing the lookup after each call. */
static inline piggy_t *piggy_state(void) {
    piggy_t *pg = &piggy;
    __asm__("" : "+r"(pg));
    return pg;
}
static PyObject *g_dumps, *g_loads;         /* the pickle functions wrapped */
static PyObject *g_pickle_loads;            /* pickle.loads: ignores trailing bytes */

/* dumps(obj, *args, **kwargs): g_dumps's bytes, with the trailer if a send is armed. */
static PyObject *P_dumps(PyObject *mod, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames) {
    piggy_t *pg = piggy_state();
    if (!g_dumps) { PyErr_SetString(PyExc_RuntimeError, "mpvis: pickle not bound"); return NULL; }
    if (pg->tx_seq < 0 || nargs < 1) return PyObject_Vectorcall(g_dumps, args, nargs, kwnames);
    int64_t seq = pg->tx_seq;
    PyObject *pair = NULL;
    PyObject *const *call = args;
    PyObject *buf[8];
    Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    if (pg->tx_extra) {
        if (total > 8) { PyErr_SetString(PyExc_TypeError, "dumps(): too many arguments"); return NULL; }
        pair = PyTuple_Pack(2, args[0], pg->tx_extra);
        if (!pair) return NULL;
        buf[0] = pair;
        for (Py_ssize_t i = 1; i < total; i++) buf[i] = args[i];
        call = buf;
    }
    PyObject *extra = pg->tx_extra;
    pg->tx_seq = -1;  /* a pickle made while pickling this one (a __reduce__) gets no trailer */
    PyObject *data = PyObject_Vectorcall(g_dumps, call, nargs, kwnames);
    pg->tx_seq = seq;
    pg->tx_extra = extra;
    Py_XDECREF(pair);
    if (!data) return NULL;
    if (!PyBytes_CheckExact(data)) {
        PyErr_SetString(PyExc_TypeError, "mpvis: the pickle dumps function did not return bytes");
        Py_DECREF(data);
        return NULL;
    }
    Py_ssize_t n = PyBytes_GET_SIZE(data);
    if (Py_REFCNT(data) == 1) {
        if (_PyBytes_Resize(&data, n + TRAILER_LEN) < 0) return NULL;
    } else {  /* shared (b"" or a cached object): copy */
        PyObject *copy = PyBytes_FromStringAndSize(NULL, n + TRAILER_LEN);
        if (copy) memcpy(PyBytes_AS_STRING(copy), PyBytes_AS_STRING(data), (size_t)n);
        Py_DECREF(data);
        if (!(data = copy)) return NULL;
    }
    char *end = PyBytes_AS_STRING(data) + n;
    memcpy(end, &seq, 8);
    memcpy(end + 8, pg->tx_extra ? MAGIC_EXTRA : MAGIC_PLAIN, 4);
    return data;
}

/* loads(data, *args, **kwargs): see the section comment for what it returns. */
static PyObject *P_loads(PyObject *mod, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames) {
    piggy_t *pg = piggy_state();
    if (!g_loads) { PyErr_SetString(PyExc_RuntimeError, "mpvis: pickle not bound"); return NULL; }
    if (nargs < 1) return PyObject_Vectorcall(g_loads, args, nargs, kwnames);
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    int has = 0;
    int64_t seq = 0;
    const char *p = (const char *)view.buf;
    if (view.len >= TRAILER_LEN) {
        const char *magic = p + view.len - 4;
        if (memcmp(magic, MAGIC_PLAIN, 4) == 0) has = 1;
        else if (memcmp(magic, MAGIC_EXTRA, 4) == 0) has = 2;
        if (has) memcpy(&seq, magic - 8, 8);
    }
    PyObject *obj;
    if (has && g_loads != g_pickle_loads) {  /* another unpickler may not ignore the trailer */
        PyObject *trimmed = PyMemoryView_FromMemory((char *)p, view.len - TRAILER_LEN, PyBUF_READ);
        PyObject *buf[8];
        Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
        if (!trimmed || total > 8) {
            if (trimmed) PyErr_SetString(PyExc_TypeError, "loads(): too many arguments");
            Py_XDECREF(trimmed);
            PyBuffer_Release(&view);
            return NULL;
        }
        buf[0] = trimmed;
        for (Py_ssize_t i = 1; i < total; i++) buf[i] = args[i];
        obj = PyObject_Vectorcall(g_loads, buf, nargs, kwnames);
        Py_DECREF(trimmed);
    } else {
        obj = PyObject_Vectorcall(g_loads, args, nargs, kwnames);
    }
    PyBuffer_Release(&view);
    if (!obj) return NULL;
    PyObject *extra = NULL;
    if (has == 2) {  /* (obj, extra) */
        if (!PyTuple_CheckExact(obj) || PyTuple_GET_SIZE(obj) != 2) {
            Py_DECREF(obj);
            PyErr_SetString(PyExc_ValueError, "mpvis: malformed piggyback (extra data)");
            return NULL;
        }
        PyObject *pair = obj;
        obj = PyTuple_GET_ITEM(pair, 0);
        extra = PyTuple_GET_ITEM(pair, 1);
        Py_INCREF(obj);
        Py_INCREF(extra);
        Py_DECREF(pair);
    }
    if (pg->rx_mode == RX_STASH) {
        pg->rx_seen = 1;
        pg->rx_has = has != 0;
        pg->rx_seq = seq;
    } else if (pg->rx_mode == RX_PAIR) {
        PyObject *s = has ? PyLong_FromLongLong(seq) : (Py_INCREF(Py_None), Py_None);
        PyObject *out = s ? (extra ? PyTuple_Pack(3, s, obj, extra) : PyTuple_Pack(2, s, obj))
                          : NULL;
        Py_XDECREF(s);
        Py_DECREF(obj);
        obj = out;
    }
    Py_XDECREF(extra);
    return obj;
}

/* call(seq, extra, wrap, fn, *args): fn(*args) with the send ``seq`` armed (None:
 * not armed; ``extra``: the hooks' data or None) and, if ``wrap``, every message
 * loaded meanwhile returned as (seq or None, obj[, extra]). */
static PyObject *P_call(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    piggy_t *pg = piggy_state();
    if (nargs < 4) {
        PyErr_SetString(PyExc_TypeError, "call(seq, extra, wrap, fn, *args)");
        return NULL;
    }
    int64_t seq = -1;
    if (args[0] != Py_None && get_i64(args[0], &seq)) return NULL;
    int wrap = PyObject_IsTrue(args[2]);
    if (wrap < 0) return NULL;
    int64_t saved_seq = pg->tx_seq;
    PyObject *saved_extra = pg->tx_extra;
    int saved_mode = pg->rx_mode;
    pg->tx_seq = seq;
    pg->tx_extra = args[1] == Py_None ? NULL : args[1];
    pg->rx_mode = wrap ? RX_PAIR : RX_PLAIN;
    PyObject *res = PyObject_Vectorcall(args[3], args + 4, nargs - 4, NULL);
    pg->tx_seq = saved_seq;
    pg->tx_extra = saved_extra;
    pg->rx_mode = saved_mode;
    return res;
}

/* bind_pickle(dumps, loads, pickle_loads): the functions dumps()/loads() wrap. */
static PyObject *P_bind(PyObject *mod, PyObject *const *args, Py_ssize_t n) {
    if (!nargs_ok("bind_pickle", n, 3)) return NULL;
    Py_INCREF(args[0]); Py_XSETREF(g_dumps, args[0]);
    Py_INCREF(args[1]); Py_XSETREF(g_loads, args[1]);
    Py_INCREF(args[2]); Py_XSETREF(g_pickle_loads, args[2]);
    Py_RETURN_NONE;
}

/* -- FastP2P: blocking object send/recv wrapped entirely in C ------------------------- */
/*
 * TracedIntracomm (traced_comm.py) derives from FastP2P and mpi4py's Intracomm.
 * FastP2P's send/recv are method descriptors: a call costs no Python frame, and
 * the record is appended without a second call.  The common case only -- the
 * recorder bound, no record/replay hooks, a communicator whose ranks are world
 * ranks, a real peer -- runs here; anything else goes to the Python methods
 * _mv_send_slow / _mv_recv_slow, which implement every case.  configure()
 * binds the recorder and the originals (MPI.Intracomm.send / recv).
 */
static Recorder *g_rec;
static PyObject *g_orig_send, *g_orig_recv, *g_orig_Send, *g_orig_Recv, *g_hooks, *g_status;
static long g_proc_null, g_any_source, g_any_tag;
static PyObject *s_mv_id, *s_mv_w, *s_mv_pending, *s_send_slow, *s_recv_slow, *s_Send_slow,
    *s_Recv_slow, *s_source, *s_tag;
static PyObject *s_send_names[3], *s_recv_names[4], *s_Send_names[3];  /* interned names */

/* The source and tag of an mpi4py Status. */
static int status_source_tag(PyObject *status, int32_t *source, int32_t *tag) {
    PyObject *so = PyObject_GetAttr(status, s_source);
    if (!so) return -1;
    int bad = get_i32(so, source);
    Py_DECREF(so);
    if (bad) return -1;
    PyObject *to = PyObject_GetAttr(status, s_tag);
    if (!to) return -1;
    bad = get_i32(to, tag);
    Py_DECREF(to);
    return bad ? -1 : 0;
}

/* Bind positional and keyword arguments to ``out`` (``nnames`` parameters, the
 * first ``required`` of them required; missing optional ones keep their value). */
static int bind_args(const char *fn, const char *const *names, PyObject *const *interned,
                     int nnames, int required, PyObject *const *args, Py_ssize_t nargs,
                     PyObject *kwnames, PyObject **out) {
    if (nargs > nnames) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d arguments (%zd given)", fn, nnames,
                     nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) out[i] = args[i];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int j = 0;
        while (j < nnames && key != interned[j]) j++;  /* kwnames are usually interned */
        if (j == nnames) {
            j = 0;
            while (j < nnames && PyUnicode_CompareWithASCIIString(key, names[j]) != 0) j++;
        }
        if (j == nnames) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", fn, key);
            return -1;
        }
        if (j < nargs) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", fn,
                         names[j]);
            return -1;
        }
        out[j] = args[nargs + k];
    }
    for (int j = 0; j < required; j++)
        if (!out[j]) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", fn, names[j]);
            return -1;
        }
    return 0;
}

/* The last communicator the fast path saw (a strong reference, so the cache can
 * never name a freed object) and what fast_comm found for it: a traced
 * communicator's id and rank mapping are set at its creation and never change. */
static PyObject *g_last_comm;
static PyObject *g_last_pending;  /* its _mv_pending dict (kept alive by the communicator) */
static int64_t g_last_cid;
static int g_last_identity;

/* 1 if the fast path applies to this communicator (its ranks are world ranks),
 * with its id in ``cid``; 0 if not; -1 on error. */
static int fast_comm(PyObject *self, int64_t *cid) {
    if (!g_rec || PyList_GET_ITEM(g_hooks, 0) != Py_None) return 0;
    if (self != g_last_comm) {
        PyObject *w = PyObject_GetAttr(self, s_mv_w);
        if (!w) return -1;
        int identity = w == Py_None;
        Py_DECREF(w);
        int64_t id = -1;
        PyObject *pending = NULL;
        if (identity) {
            PyObject *ido = PyObject_GetAttr(self, s_mv_id);
            if (!ido) return -1;
            int bad = get_i64(ido, &id);
            Py_DECREF(ido);
            if (bad) return -1;
            pending = PyObject_GetAttr(self, s_mv_pending);
            if (!pending) return -1;
            Py_DECREF(pending);  /* borrowed: the communicator holds it */
            if (!PyDict_Check(pending)) identity = 0;
        }
        Py_INCREF(self);
        Py_XSETREF(g_last_comm, self);
        g_last_pending = pending;
        g_last_cid = id;
        g_last_identity = identity;
    }
    *cid = g_last_cid;
    return g_last_identity;
}

static PyObject *F_send(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                        PyObject *kwnames) {
    piggy_t *pg = piggy_state();
    static const char *const names[] = {"obj", "dest", "tag"};
    PyObject *a[3] = {NULL, NULL, NULL};
    if (bind_args("send", names, s_send_names, 3, 2, args, nargs, kwnames, a) < 0) return NULL;
    PyObject *tag_o = a[2];
    int64_t cid;
    int32_t dest, tag = 0;
    if (get_i32(a[1], &dest) || (tag_o && get_i32(tag_o, &tag))) return NULL;
    int fast = dest == g_proc_null ? 0 : fast_comm(self, &cid);
    if (fast < 0) return NULL;
    PyObject *tag_obj = tag_o ? (Py_INCREF(tag_o), tag_o) : PyLong_FromLong(0);
    if (!tag_obj) return NULL;
    PyObject *res = NULL;
    if (!fast) {
        PyObject *call[4] = {self, a[0], a[1], tag_obj};
        res = PyObject_VectorcallMethod(s_send_slow, call, 4, NULL);
        Py_DECREF(tag_obj);
        return res;
    }
    rec_t *r = append(g_rec, K_SEND, 1, CALL_NEW);
    if (r) {
        r->flags = F_BLOCKING;
        r->comm = cid; r->a = dest; r->b = tag;
        int64_t saved_seq = pg->tx_seq;
        PyObject *saved_extra = pg->tx_extra;
        pg->tx_seq = r->seq;
        pg->tx_extra = NULL;
        PyObject *call[4] = {self, a[0], a[1], tag_obj};
        res = PyObject_Vectorcall(g_orig_send, call, 4, NULL);
        pg->tx_seq = saved_seq;
        pg->tx_extra = saved_extra;
    }
    Py_DECREF(tag_obj);
    return res;
}

/* A blocking receive's call in progress: mpi4py's arguments (``call``), and on the
 * fast path the receive's record (seq, site) and the message's source and tag. */
typedef struct {
    PyObject *call[5];        /* self, buf, source, tag, status (new refs: source, tag) */
    int fast, wild;
    int64_t cid, rseq;
    uint32_t site;
    int32_t source, tag;
    Py_ssize_t roff;          /* the recv record's offset in the buffer ... */
    uint64_t repoch;          /* ... valid while the recorder's drains are this */
} recv_call;

/* Bind (buf, source, tag, status) and decide the path; 0 or -1 (error). */
static int recv_prepare(const char *fn, int buf_required, PyObject *self, PyObject *const *args,
                        Py_ssize_t nargs, PyObject *kwnames, recv_call *rc) {
    static const char *const names[] = {"buf", "source", "tag", "status"};
    PyObject *a[4] = {NULL, NULL, NULL, NULL};
    if (bind_args(fn, names, s_recv_names, 4, buf_required, args, nargs, kwnames, a) < 0)
        return -1;
    rc->source = (int32_t)g_any_source;
    rc->tag = (int32_t)g_any_tag;
    if ((a[1] && get_i32(a[1], &rc->source)) || (a[2] && get_i32(a[2], &rc->tag))) return -1;
    rc->fast = rc->source == g_proc_null ? 0 : fast_comm(self, &rc->cid);
    if (rc->fast < 0) return -1;
    rc->wild = rc->source == g_any_source || rc->tag == g_any_tag;
    PyObject *src = a[1] ? (Py_INCREF(a[1]), a[1]) : PyLong_FromLong(g_any_source);
    PyObject *tag = a[2] ? (Py_INCREF(a[2]), a[2]) : PyLong_FromLong(g_any_tag);
    if (!src || !tag) {
        Py_XDECREF(src);
        Py_XDECREF(tag);
        return -1;
    }
    rc->call[0] = self;
    rc->call[1] = a[0] ? a[0] : Py_None;
    rc->call[2] = src;
    rc->call[3] = tag;
    rc->call[4] = a[3] ? a[3] : Py_None;
    return 0;
}

/* Fast path: record the receive (the status a wildcard needs is ours if the
 * caller gave none); 0 or -1. */
static int recv_record(recv_call *rc) {
    rec_t *r = append(g_rec, K_RECV, 1, CALL_NEW);
    if (!r) return -1;
    r->flags = F_BLOCKING;
    r->comm = rc->cid;
    r->a = rc->source == g_any_source ? -1 : rc->source;
    r->b = rc->tag == g_any_tag ? -1 : rc->tag;
    rc->rseq = r->seq;
    rc->site = r->site;  /* the consume's too: same call */
    rc->roff = (char *)r - g_rec->buf;
    rc->repoch = g_rec->drains;
    if (rc->wild && rc->call[4] == Py_None) rc->call[4] = g_status;
    return 0;
}

/* After the receive: the message's real source and tag; 0 or -1. */
static int recv_matched(recv_call *rc) {
    return rc->wild ? status_source_tag(rc->call[4], &rc->source, &rc->tag) : 0;
}

/* The consume of the fast path's receive ``rc`` from ``src`` with ``tag``; ``flags``
 * F_SEND (``d`` is the send's seq), F_CHAN (``d`` is the channel ordinal) or 0.
 * While the recv record is still the buffer's last record (the receive did not
 * block past a flush, and no other thread recorded meanwhile), the consume is
 * merged into it: kind K_RECV_CONSUME (mpvis.protocol.compact), one record
 * instead of two.  0 or -1. */
static int recv_consumed(recv_call *rc, int32_t src, int32_t tag, int flags, int64_t d) {
    Recorder *self = g_rec;
    rec_t *r = (rec_t *)(self->buf + rc->roff);
    if (self->drains == rc->repoch && self->seq == rc->rseq + 1 &&
        rc->roff + (Py_ssize_t)sizeof(rec_t) == self->len && r->comm == (int32_t)r->comm) {
        double ns = (now() - self->t0 - r->t) * 1e9 + 0.5;
        if (ns >= 0 && ns < 4294967295.0) {
            r->kind = K_RECV_CONSUME;
            r->flags |= (uint8_t)flags;
            r->comm = (int64_t)(((uint64_t)(uint32_t)ns << 32) | (uint32_t)(int32_t)r->comm);
            r->c = (int64_t)(((uint64_t)(uint32_t)tag << 32) | (uint32_t)src);
            r->d = d;
            STORE(self->seq, self->seq + 1);
            return 0;
        }
    }
    r = append(self, K_CONSUME, 0, CALL_CONT);
    if (!r) return -1;
    r->site = rc->site;
    r->flags = (uint8_t)flags;
    r->comm = rc->cid; r->a = src; r->b = tag; r->c = rc->rseq; r->d = d;
    return 0;
}

static PyObject *recv_done(recv_call *rc, PyObject *res) {
    Py_DECREF(rc->call[2]);
    Py_DECREF(rc->call[3]);
    return res;
}

static PyObject *F_recv(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                        PyObject *kwnames) {
    piggy_t *pg = piggy_state();
    recv_call rc;
    if (recv_prepare("recv", 0, self, args, nargs, kwnames, &rc) < 0) return NULL;
    if (!rc.fast)
        return recv_done(&rc, PyObject_VectorcallMethod(s_recv_slow, rc.call, 5, NULL));
    PyObject *res = NULL;
    if (recv_record(&rc) == 0) {
        int saved_mode = pg->rx_mode;
        pg->rx_mode = RX_STASH;
        pg->rx_seen = 0;
        res = PyObject_Vectorcall(g_orig_recv, rc.call, 5, NULL);
        pg->rx_mode = saved_mode;
        int known = pg->rx_seen && pg->rx_has;  /* else an untraced sender: the reader infers the send */
        if (res && (recv_matched(&rc) < 0 ||
                    recv_consumed(&rc, rc.source, rc.tag, known ? F_SEND : 0,
                                  known ? pg->rx_seq : 0) < 0))
            Py_CLEAR(res);
    }
    return recv_done(&rc, res);
}

/* Send(buf, dest, tag=0): the buffer goes alone; the send is marked a buffer send. */
static PyObject *F_Send(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                        PyObject *kwnames) {
    static const char *const names[] = {"buf", "dest", "tag"};
    PyObject *a[3] = {NULL, NULL, NULL};
    if (bind_args("Send", names, s_Send_names, 3, 2, args, nargs, kwnames, a) < 0) return NULL;
    int64_t cid;
    int32_t dest, tag = 0;
    if (get_i32(a[1], &dest) || (a[2] && get_i32(a[2], &tag))) return NULL;
    int fast = dest == g_proc_null ? 0 : fast_comm(self, &cid);
    if (fast < 0) return NULL;
    PyObject *tag_obj = a[2] ? (Py_INCREF(a[2]), a[2]) : PyLong_FromLong(0);
    if (!tag_obj) return NULL;
    PyObject *call[4] = {self, a[0], a[1], tag_obj};
    PyObject *res = NULL;
    if (!fast) {
        res = PyObject_VectorcallMethod(s_Send_slow, call, 4, NULL);
    } else {
        rec_t *r = append(g_rec, K_SEND, 1, CALL_NEW);
        if (r) {
            r->flags = F_BLOCKING | F_BUF;
            r->comm = cid; r->a = dest; r->b = tag;
            res = PyObject_Vectorcall(g_orig_Send, call, 4, NULL);
        }
    }
    Py_DECREF(tag_obj);
    return res;
}

/* Recv(buf, source=ANY_SOURCE, tag=ANY_TAG, status=None): the consume records the
 * channel ordinal (exact: no receive of this communicator is pending). */
static PyObject *F_Recv(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                        PyObject *kwnames) {
    recv_call rc;
    if (recv_prepare("Recv", 1, self, args, nargs, kwnames, &rc) < 0) return NULL;
    if (rc.fast && PyDict_GET_SIZE(g_last_pending)) rc.fast = 0;  /* needs completion order */
    if (!rc.fast)
        return recv_done(&rc, PyObject_VectorcallMethod(s_Recv_slow, rc.call, 5, NULL));
    PyObject *res = NULL;
    if (recv_record(&rc) == 0) {
        res = PyObject_Vectorcall(g_orig_Recv, rc.call, 5, NULL);
        int64_t ordinal = -1;
        if (res && (recv_matched(&rc) < 0 ||
                    (ordinal = chan_next(g_rec, rc.cid, rc.source, rc.tag)) < 0 ||
                    recv_consumed(&rc, rc.source, rc.tag, F_CHAN, ordinal) < 0))
            Py_CLEAR(res);
    }
    return recv_done(&rc, res);
}

static PyMethodDef F_methods[] = {
    {"send", (PyCFunction)(void (*)(void))F_send, METH_FASTCALL | METH_KEYWORDS,
     "send(obj, dest, tag=0): mpi4py's send, traced (piggyback and record)"},
    {"recv", (PyCFunction)(void (*)(void))F_recv, METH_FASTCALL | METH_KEYWORDS,
     "recv(buf=None, source=ANY_SOURCE, tag=ANY_TAG, status=None): mpi4py's recv, traced"},
    {"Send", (PyCFunction)(void (*)(void))F_Send, METH_FASTCALL | METH_KEYWORDS,
     "Send(buf, dest, tag=0): mpi4py's Send, traced (the buffer goes alone)"},
    {"Recv", (PyCFunction)(void (*)(void))F_Recv, METH_FASTCALL | METH_KEYWORDS,
     "Recv(buf, source=ANY_SOURCE, tag=ANY_TAG, status=None): mpi4py's Recv, traced"},
    {NULL},
};

static PyTypeObject FastP2PType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mpvis.instrument._crecorder.FastP2P",
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Mixin: traced blocking send/recv and Send/Recv in C (see configure()).",
    .tp_methods = F_methods,
};

/* configure(recorder, orig_send, orig_recv, hooks, proc_null, any_source, any_tag, status,
 *           orig_Send, orig_Recv) */
static PyObject *M_configure(PyObject *mod, PyObject *const *args, Py_ssize_t n) {
    if (!nargs_ok("configure", n, 10)) return NULL;
    if (!PyObject_TypeCheck(args[0], &RecorderType) || !PyList_Check(args[3]) ||
        PyList_GET_SIZE(args[3]) != 1) {
        PyErr_SetString(PyExc_TypeError, "configure(recorder, send, recv, [hooks], ...)");
        return NULL;
    }
    long pn = PyLong_AsLong(args[4]), as = PyLong_AsLong(args[5]), at = PyLong_AsLong(args[6]);
    if (PyErr_Occurred()) return NULL;
    Py_INCREF(args[7]); Py_XSETREF(g_status, args[7]);
    Py_INCREF(args[8]); Py_XSETREF(g_orig_Send, args[8]);
    Py_INCREF(args[9]); Py_XSETREF(g_orig_Recv, args[9]);
    Py_INCREF(args[0]); Py_XSETREF(g_rec, (Recorder *)args[0]);
    Py_INCREF(args[1]); Py_XSETREF(g_orig_send, args[1]);
    Py_INCREF(args[2]); Py_XSETREF(g_orig_recv, args[2]);
    Py_INCREF(args[3]); Py_XSETREF(g_hooks, args[3]);
    g_proc_null = pn; g_any_source = as; g_any_tag = at;
    Py_RETURN_NONE;
}

static PyMethodDef M_methods[] = {
    {"dumps", (PyCFunction)(void (*)(void))P_dumps, METH_FASTCALL | METH_KEYWORDS,
     "dumps(obj, *args, **kwargs): the bound dumps, with the armed send's trailer"},
    {"loads", (PyCFunction)(void (*)(void))P_loads, METH_FASTCALL | METH_KEYWORDS,
     "loads(data, *args, **kwargs): the bound loads; hands a trailer's send number on"},
    {"call", (PyCFunction)(void (*)(void))P_call, METH_FASTCALL,
     "call(seq, extra, wrap, fn, *args): fn(*args) with a send armed / messages wrapped"},
    {"bind_pickle", (PyCFunction)(void (*)(void))P_bind, METH_FASTCALL,
     "bind_pickle(dumps, loads, pickle_loads): the pickle functions to wrap"},
    {"configure", (PyCFunction)(void (*)(void))M_configure, METH_FASTCALL,
     "configure(recorder, orig_send, orig_recv, hooks, PROC_NULL, ANY_SOURCE, ANY_TAG, "
     "status, orig_Send, orig_Recv)"},
    {NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_crecorder",
    "The in-rank recorder in C (see mpvis.instrument.recorder).", -1, M_methods, NULL, NULL, NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__crecorder(void) {
    if (PyType_Ready(&RecorderType) < 0 || PyType_Ready(&FastP2PType) < 0) return NULL;
    s_mv_id = PyUnicode_InternFromString("_mv_id");
    s_mv_w = PyUnicode_InternFromString("_mv_w");
    s_send_slow = PyUnicode_InternFromString("_mv_send_slow");
    s_recv_slow = PyUnicode_InternFromString("_mv_recv_slow");
    s_Send_slow = PyUnicode_InternFromString("_mv_Send_slow");
    s_Recv_slow = PyUnicode_InternFromString("_mv_Recv_slow");
    s_mv_pending = PyUnicode_InternFromString("_mv_pending");
    if (!s_Send_slow || !s_Recv_slow || !s_mv_pending) return NULL;
    s_source = PyUnicode_InternFromString("source");
    s_tag = PyUnicode_InternFromString("tag");
    if (!s_mv_id || !s_mv_w || !s_send_slow || !s_recv_slow || !s_source || !s_tag) return NULL;
    const char *send_names[] = {"obj", "dest", "tag"};
    const char *Send_names[] = {"buf", "dest", "tag"};
    for (int i = 0; i < 3; i++)
        if (!(s_Send_names[i] = PyUnicode_InternFromString(Send_names[i]))) return NULL;
    const char *recv_names[] = {"buf", "source", "tag", "status"};
    for (int i = 0; i < 3; i++)
        if (!(s_send_names[i] = PyUnicode_InternFromString(send_names[i]))) return NULL;
    for (int i = 0; i < 4; i++)
        if (!(s_recv_names[i] = PyUnicode_InternFromString(recv_names[i]))) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&RecorderType);
    Py_INCREF(&FastP2PType);
    if (PyModule_AddObject(m, "Recorder", (PyObject *)&RecorderType) < 0 ||
        PyModule_AddObject(m, "FastP2P", (PyObject *)&FastP2PType) < 0 ||
        PyModule_AddIntConstant(m, "RECORD_SIZE", (long)sizeof(rec_t)) < 0) {
        Py_DECREF(&RecorderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
