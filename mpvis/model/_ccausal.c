/* mpvis.model._ccausal: the walk of one rank in causal order, in C.
 *
 * CausalRelease (mpvis/model/causal.py) processes each rank's events in seq
 * order as far as their causes allow; ClockStore (mpvis/model/clocks.py) keeps
 * the vector clocks as one row per merge event in chunks of rows.  This file
 * is the only implementation of what happens at each event of such a walk:
 *
 *   - an event that merges nothing gets the Lamport clock one more than its
 *     predecessor's;
 *   - a consume whose send is processed gets a new clock row, the
 *     componentwise maximum of its rank's previous row and the row governing
 *     the send (its rank's last row at or before it), with the send's own
 *     component raised to seq + 1 and the consume's to seq + 1, and the Lamport
 *     clock one more than the larger of its predecessor's and the send's;
 *   - a collective entry merges nothing; its seq is handed back, for the
 *     collective book-keeping CausalRelease does;
 *   - everything else is decided by CausalRelease: the walk stops there and
 *     says why (a consume whose send is unknown or not processed yet, a
 *     collective exit, rows that must be widened or a new chunk of rows).
 *     Python then resumes the walk with the cause it chose for that event:
 *     none (forced at the end of input), an event (a lost send's rank's last
 *     event) or a joined row (ClockStore.join, with the largest Lamport clock
 *     of the collective's entries).
 *
 * Rows are stored as uint16 (format "H") until a count exceeds the store's
 * limit, then as int32 ("i"); the walk stops with WIDEN before writing a count
 * the rows cannot hold.  Every index read from the columns, the merge lists
 * and the rows is bounds-checked: inconsistent input raises ValueError (or
 * TypeError for arguments of the wrong type), never reads or writes out of
 * bounds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Why walk() returned. */
enum { ST_END = 0, ST_NO_SEND = 1, ST_SEND_LATE = 2, ST_COLL_EXIT = 3, ST_WIDEN = 4, ST_FULL = 5 };
/* The cause Python chose for the event the walk resumes at. */
enum { C_WALK = 0, C_NONE = 1, C_EVENT = 2, C_JOINED = 3 };

typedef struct {
    Py_buffer b;
    int held;
} Buf;

static int get_buf(Buf *buf, PyObject *obj, const char *fmt, int writable, const char *what)
{
    int flags = PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &buf->b, flags) < 0) {
        return -1;
    }
    buf->held = 1;
    const char *f = buf->b.format ? buf->b.format : "B";
    if (f[0] == '@' || f[0] == '=') {
        f++;
    }
    size_t want = 0;
    switch (fmt[0]) {
    case 'b': want = 1; break;
    case 'H': want = 2; break;
    case 'i': want = 4; break;
    case 'q': want = 8; break;
    default: break;
    }
    /* numpy names int64 "l" on LP64; accept any integer format of the right size */
    int ok = strlen(f) == 1 && (size_t)buf->b.itemsize == want;
    if (ok && fmt[0] == 'H') {
        ok = f[0] == 'H';
    } else if (ok && fmt[0] == 'b') {
        ok = f[0] == 'b';
    } else if (ok) {
        ok = strchr("ilqn", f[0]) != NULL;
    }
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s: expected a buffer of format '%s', got '%s'", what, fmt, f);
        return -1;
    }
    return 0;
}

static void release(Buf *buf)
{
    if (buf->held) {
        PyBuffer_Release(&buf->b);
        buf->held = 0;
    }
}

/* A few buffers held during one walk, least recently used evicted: a walk
 * touches few chunks of rows and few ranks' merge lists, so acquiring each
 * once per walk (not once per merge, nor all of them) is what it costs. */
#define SLOTS 8

typedef struct {
    Py_ssize_t key;
    unsigned long used;
    Buf buf, buf2;
} Slot;

static Slot *slot_for(Slot *slots, unsigned long *clock, Py_ssize_t key, int *hit)
{
    Slot *victim = &slots[0];
    for (int i = 0; i < SLOTS; i++) {
        Slot *sl = &slots[i];
        if (sl->buf.held && sl->key == key) {
            sl->used = ++*clock;
            *hit = 1;
            return sl;
        }
        if (victim->buf.held && (!sl->buf.held || sl->used < victim->used)) {
            victim = sl;
        }
    }
    release(&victim->buf);
    release(&victim->buf2);
    victim->key = key;
    victim->used = ++*clock;
    *hit = 0;
    return victim;
}

typedef struct {
    /* arguments */
    Py_ssize_t r, a, lo, nrows, limit, shift, nprocs;
    int64_t lam;
    int cause;
    int64_t cause_x, cause_lam;
    int k_consume, k_coll, k_exit;
    PyObject *done, *chunks, *merge_seq, *merge_row;
    Buf events, merge_at, kind, partner, crank, cseq, lamport;
    Py_ssize_t nchunks, rows_cap;
    int wide; /* rows are int32 (else uint16) */
    unsigned long clock;
    Slot chunk[SLOTS]; /* chunks of rows, by chunk index */
    Slot list[SLOTS];  /* merge lists (seqs in buf, rows in buf2), by rank */
    /* this walk's new merges of rank r (appended to its lists at the end) */
    int32_t *new_seq, *new_row;
    Py_ssize_t nnew, cap_seq, cap_row;
    int32_t prev_row; /* rank r's last row */
    /* this walk's collective entries of rank r (their seqs) */
    int32_t *entered;
    Py_ssize_t nentered, cap_entered;
} Walk;

/* Make room for one more int32 in *buf (capacity *cap); -1 on no memory. */
static int grow(int32_t **buf, Py_ssize_t n, Py_ssize_t *cap)
{
    if (n < *cap) {
        return 0;
    }
    Py_ssize_t cap2 = *cap ? 2 * *cap : 64;
    int32_t *p = PyMem_Realloc(*buf, (size_t)cap2 * sizeof(int32_t));
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *buf = p;
    *cap = cap2;
    return 0;
}

static void *chunk_row(Walk *w, Py_ssize_t row)
{
    Py_ssize_t c = row >> w->shift;
    int hit;
    Slot *sl = slot_for(w->chunk, &w->clock, c, &hit);
    if (!hit) {
        PyObject *obj = PyList_GET_ITEM(w->chunks, c);
        if (get_buf(&sl->buf, obj, w->wide ? "i" : "H", 1, "clock rows") < 0) {
            return NULL;
        }
        if (sl->buf.b.ndim != 2 || sl->buf.b.shape[0] != ((Py_ssize_t)1 << w->shift)
            || sl->buf.b.shape[1] != w->nprocs) {
            PyErr_SetString(PyExc_ValueError, "clock rows: a chunk has the wrong shape");
            return NULL;
        }
    }
    Py_ssize_t off = (row & (((Py_ssize_t)1 << w->shift) - 1)) * w->nprocs;
    return (char *)sl->buf.b.buf + off * sl->buf.b.itemsize;
}

/* Rank q's merge lists (seqs, rows) as buffers of equal length. */
static Slot *merge_lists(Walk *w, Py_ssize_t q)
{
    int hit;
    Slot *sl = slot_for(w->list, &w->clock, q, &hit);
    if (!hit) {
        if (get_buf(&sl->buf, PyList_GET_ITEM(w->merge_seq, q), "i", 0, "merge seqs") < 0
            || get_buf(&sl->buf2, PyList_GET_ITEM(w->merge_row, q), "i", 0, "merge rows") < 0) {
            return NULL;
        }
        if (sl->buf.b.len != sl->buf2.b.len) {
            PyErr_SetString(PyExc_ValueError, "merge lists of different lengths");
            return NULL;
        }
    }
    return sl;
}

/* The row governing the clock of event (q, s): q's last merge row at or
 * before s (row 0, all zeros, when none); -1 with an exception set. */
static int64_t governing(Walk *w, Py_ssize_t q, int64_t s)
{
    if (q == w->r && w->nnew > 0 && w->new_seq[0] <= s) {
        Py_ssize_t lo = 0, hi = w->nnew; /* last new_seq <= s */
        while (hi - lo > 1) {
            Py_ssize_t mid = (lo + hi) / 2;
            if (w->new_seq[mid] <= s) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        return w->new_row[lo];
    }
    Slot *sl = merge_lists(w, q);
    if (sl == NULL) {
        return -1;
    }
    const int32_t *seqs = sl->buf.b.buf;
    Py_ssize_t lo = 0, hi = sl->buf.b.len / 4; /* first seq > s */
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (seqs[mid] <= s) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    int64_t row = lo > 0 ? ((const int32_t *)sl->buf2.b.buf)[lo - 1] : 0;
    if (row < 0 || row >= w->nrows) {
        PyErr_SetString(PyExc_ValueError, "merge list names a row that does not exist");
        return -1;
    }
    return row;
}

/* A new row for event (r, seq): max(prev row, row `other`), then the
 * components of q (when q >= 0) and r raised to qs + 1 and seq + 1. */
static int merge(Walk *w, int64_t seq, int64_t other, Py_ssize_t q, int64_t qs)
{
    Py_ssize_t row = w->nrows;
    if (grow(&w->new_seq, w->nnew, &w->cap_seq) < 0
        || grow(&w->new_row, w->nnew, &w->cap_row) < 0) {
        return -1;
    }
    void *out = chunk_row(w, row);
    const void *pa = out ? chunk_row(w, w->prev_row) : NULL;
    const void *pb = pa ? chunk_row(w, other) : NULL;
    if (pb == NULL) {
        return -1;
    }
    Py_ssize_t n = w->nprocs;
    if (w->wide) {
        int32_t *o = out;
        const int32_t *x = pa, *y = pb;
        for (Py_ssize_t j = 0; j < n; j++) {
            o[j] = x[j] > y[j] ? x[j] : y[j];
        }
        if (q >= 0 && o[q] <= qs) {
            o[q] = (int32_t)(qs + 1);
        }
        o[w->r] = (int32_t)(seq + 1);
    } else {
        uint16_t *o = out;
        const uint16_t *x = pa, *y = pb;
        for (Py_ssize_t j = 0; j < n; j++) {
            o[j] = x[j] > y[j] ? x[j] : y[j];
        }
        if (q >= 0 && o[q] <= qs) {
            o[q] = (uint16_t)(qs + 1);
        }
        o[w->r] = (uint16_t)(seq + 1);
    }
    w->new_seq[w->nnew] = (int32_t)seq;
    w->new_row[w->nnew] = (int32_t)row;
    w->nnew++;
    w->prev_row = (int32_t)row;
    w->nrows = row + 1;
    return 0;
}

static int64_t done_of(Walk *w, Py_ssize_t q)
{
    PyObject *o = PyList_GET_ITEM(w->done, q);
    Py_ssize_t v = PyNumber_AsSsize_t(o, PyExc_OverflowError);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    return v;
}

#define CHECK_G(g, what)                                                      \
    if ((g) < 0 || (g) >= nev) {                                              \
        PyErr_Format(PyExc_ValueError, "%s: event index %lld out of range",   \
                     what, (long long)(g));                                   \
        return -1;                                                            \
    }


/* Walk rank r from event w->a (see the header comment); sets *status. */
static int run(Walk *w, int *status)
{
    const int64_t *events = w->events.b.buf;
    Py_ssize_t n = w->events.b.len / 8;
    const int32_t *at = w->merge_at.b.buf;
    Py_ssize_t nat = w->merge_at.b.len / 4;
    const int8_t *kind = w->kind.b.buf;
    const int64_t *partner = w->partner.b.buf;
    const int32_t *crank = w->crank.b.buf, *cseq = w->cseq.b.buf;
    int32_t *lamport = w->lamport.b.buf;
    Py_ssize_t nev = w->kind.b.len;
    if (w->partner.b.len / 8 != nev || w->crank.b.len / 4 != nev || w->cseq.b.len / 4 != nev
        || w->lamport.b.len / 4 != nev) {
        PyErr_SetString(PyExc_ValueError, "event columns of different lengths");
        return -1;
    }
    Py_ssize_t s = w->a, lo = w->lo;
    if (s > n || lo > nat || (lo > 0 && at[lo - 1] >= s) || (lo < nat && at[lo] < s)) {
        PyErr_SetString(PyExc_ValueError, "the walk starts outside the rank's events");
        return -1;
    }
    int64_t lam = w->lam;
    int cause = w->cause;
    if (cause != C_WALK && (lo >= nat || at[lo] != s || s >= n)) {
        PyErr_SetString(PyExc_ValueError, "a cause given for an event that merges nothing");
        return -1;
    }
    *status = ST_END;
    while (s < n) {
        Py_ssize_t stop = lo < nat ? at[lo] : n;
        if (stop > n) {
            stop = n;
        }
        if (stop < s) {
            PyErr_SetString(PyExc_ValueError, "merge stops out of seq order");
            return -1;
        }
        for (; s < stop; s++) { /* events that merge nothing */
            int64_t g = events[s];
            CHECK_G(g, "rank events");
            if (lam > INT32_MAX) {
                PyErr_SetString(PyExc_OverflowError, "Lamport clock past 2**31 - 1");
                return -1;
            }
            lamport[g] = (int32_t)lam++;
        }
        if (s >= n) {
            break;
        }
        int64_t g = events[s];
        CHECK_G(g, "rank events");
        int k = kind[g];
        int64_t first = lam;
        if (k != w->k_coll && k != w->k_exit && k != w->k_consume) {
            PyErr_Format(PyExc_ValueError, "event %zd of rank %zd merges no clock (kind %d)",
                         s, w->r, k);
            return -1;
        }
        if (k == w->k_coll) {
            if (cause != C_WALK) {
                PyErr_SetString(PyExc_ValueError, "a cause given for a collective entry");
                return -1;
            }
            if (grow(&w->entered, w->nentered, &w->cap_entered) < 0) {
                return -1;
            }
            w->entered[w->nentered++] = (int32_t)s;
        } else if (cause == C_NONE) {
            /* forced at the end of input: nothing to merge */
        } else if (k == w->k_consume ? cause == C_JOINED : cause == C_EVENT) {
            PyErr_SetString(PyExc_ValueError, "a cause of the wrong kind for this event");
            return -1;
        } else if (k == w->k_consume) {
            int64_t sg;
            if (cause == C_EVENT) {
                sg = w->cause_x;
            } else {
                sg = partner[g];
                if (sg < 0) {
                    *status = ST_NO_SEND;
                    break;
                }
            }
            CHECK_G(sg, "the send of a consume");
            Py_ssize_t q = crank[sg];
            int64_t qs = cseq[sg];
            if (q < 0 || q >= w->nprocs || qs < 0) {
                PyErr_SetString(PyExc_ValueError, "a send's rank or seq out of range");
                return -1;
            }
            if (cause == C_WALK) {
                int64_t dq = q == w->r ? s : done_of(w, q);
                if (dq < 0) {
                    return -1;
                }
                if (dq <= qs) {
                    *status = ST_SEND_LATE;
                    break;
                }
            }
            if ((qs >= s ? qs : s) + 1 > w->limit) {
                *status = ST_WIDEN;
                break;
            }
            if (w->nrows >= w->rows_cap) {
                *status = ST_FULL;
                break;
            }
            int64_t other = governing(w, q, qs);
            if (other < 0 || merge(w, s, other, q, qs) < 0) {
                return -1;
            }
            if (lamport[sg] >= first) {
                first = (int64_t)lamport[sg] + 1;
            }
        } else {
            if (cause != C_JOINED) {
                *status = ST_COLL_EXIT;
                break;
            }
            if (s + 1 > w->limit) {
                *status = ST_WIDEN;
                break;
            }
            if (w->nrows >= w->rows_cap) {
                *status = ST_FULL;
                break;
            }
            if (w->cause_x <= 0 || w->cause_x >= w->nrows) {
                PyErr_SetString(PyExc_ValueError, "a joined row that does not exist");
                return -1;
            }
            if (merge(w, s, w->cause_x, -1, 0) < 0) {
                return -1;
            }
            if (w->cause_lam >= first) {
                first = w->cause_lam + 1;
            }
        }
        if (first > INT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "Lamport clock past 2**31 - 1");
            return -1;
        }
        lamport[g] = (int32_t)first;
        lam = first + 1;
        cause = C_WALK;
        s++;
        lo++;
    }
    w->a = s;
    w->lo = lo;
    w->lam = lam;
    return 0;
}

/* Appends the walk's new merges to rank r's merge lists (no buffer held). */
static int commit(Walk *w)
{
    if (w->nnew == 0) {
        return 0;
    }
    const char *names[2] = {"merge_seq", "merge_row"};
    PyObject *lists[2] = {w->merge_seq, w->merge_row};
    int32_t *data[2] = {w->new_seq, w->new_row};
    for (int i = 0; i < 2; i++) {
        PyObject *bytes = PyBytes_FromStringAndSize((const char *)data[i],
                                                    w->nnew * (Py_ssize_t)sizeof(int32_t));
        if (bytes == NULL) {
            return -1;
        }
        PyObject *res = PyObject_CallMethod(PyList_GET_ITEM(lists[i], w->r), "frombytes", "O",
                                            bytes);
        Py_DECREF(bytes);
        if (res == NULL) {
            PyErr_Format(PyExc_RuntimeError, "could not extend %s of rank %zd", names[i], w->r);
            return -1;
        }
        Py_DECREF(res);
    }
    return 0;
}

static void release_all(Walk *w)
{
    release(&w->events);
    release(&w->merge_at);
    release(&w->kind);
    release(&w->partner);
    release(&w->crank);
    release(&w->cseq);
    release(&w->lamport);
    for (int i = 0; i < SLOTS; i++) {
        release(&w->chunk[i].buf);
        release(&w->list[i].buf);
        release(&w->list[i].buf2);
    }
}

static void free_all(Walk *w)
{
    PyMem_Free(w->new_seq);
    PyMem_Free(w->new_row);
    PyMem_Free(w->entered);
}

static int int_arg(PyObject *o, int64_t *out)
{
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    *out = v;
    return 0;
}

/* Is the first chunk of rows int32 (1), uint16 (0); -1 with an exception. */
static int rows_wide(PyObject *chunk)
{
    Py_buffer b;
    if (PyObject_GetBuffer(chunk, &b, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
        return -1;
    }
    const char *f = b.format ? b.format : "B";
    if (f[0] == '@' || f[0] == '=') {
        f++;
    }
    int wide = b.itemsize == 4 && strlen(f) == 1 && strchr("il", f[0]) ? 1
             : b.itemsize == 2 && strcmp(f, "H") == 0                 ? 0
                                                                       : -1;
    PyBuffer_Release(&b);
    if (wide < 0) {
        PyErr_SetString(PyExc_TypeError, "clock rows must be uint16 or int32");
    }
    return wide;
}

PyDoc_STRVAR(walk_doc,
"walk(ctx, r, a, lo, lam, cause, cause_x, cause_lam, nrows, limit)\n"
"    -> (status, a, lo, lam, nrows, entered)\n\n"
"ctx = (by_rank, merge_at, kind, partner, rank, seq, lamport, done, chunks, shift,\n"
"       merge_seq, merge_row, k_consume, k_coll, k_exit): the store's rank event\n"
"lists and columns, each rank's merge stops, how far each rank is processed,\n"
"the clock rows' chunks and merge lists, the kind codes.\n"
"Walk rank r's events from seq a (merge_at[r][lo] its first merge stop at or\n"
"after a, lam its Lamport clock before jumps), with `cause` (0 walk, 1 none,\n"
"2 event cause_x, 3 joined row cause_x with Lamport cause_lam) for the event\n"
"at a.  Returns why it stopped (0 end of the rank's events, 1 a consume without\n"
"send, 2 a consume whose send is not processed, 3 a collective exit, 4 rows must\n"
"be widened, 5 rows must grow), where (seq a, merge stop lo, Lamport lam), the\n"
"row count and the collective entries passed (seqs).");

enum { X_BY_RANK, X_AT, X_KIND, X_PARTNER, X_RANK, X_SEQ, X_LAMPORT, X_DONE, X_CHUNKS, X_SHIFT,
       X_MSEQ, X_MROW, X_KCONS, X_KCOLL, X_KEXIT, NCTX };
enum { A_CTX, A_R, A_A, A_LO, A_LAM, A_CAUSE, A_CX, A_CLAM, A_NROWS, A_LIMIT, NARGS };

static int list_item(PyObject *list, Py_ssize_t i, PyObject **out, const char *what)
{
    if (!PyList_Check(list) || i >= PyList_GET_SIZE(list)) {
        PyErr_Format(PyExc_ValueError, "walk(): %s must be a list with an entry per rank", what);
        return -1;
    }
    *out = PyList_GET_ITEM(list, i);
    return 0;
}

static PyObject *walk(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != NARGS) {
        PyErr_Format(PyExc_TypeError, "walk() takes %d arguments (%zd given)", NARGS, nargs);
        return NULL;
    }
    PyObject *ctx = args[A_CTX];
    if (!PyTuple_Check(ctx) || PyTuple_GET_SIZE(ctx) != NCTX) {
        PyErr_Format(PyExc_TypeError, "walk(): ctx must be a tuple of %d items", NCTX);
        return NULL;
    }
    Walk w;
    memset(&w, 0, sizeof w);
    PyObject *result = NULL;
    int64_t v[NARGS], x[NCTX];
    static const int ints[] = {A_R, A_A, A_LO, A_LAM, A_CAUSE, A_CX, A_CLAM, A_NROWS, A_LIMIT};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (int_arg(args[ints[i]], &v[ints[i]]) < 0) {
            return NULL;
        }
    }
    static const int xints[] = {X_SHIFT, X_KCONS, X_KCOLL, X_KEXIT};
    for (size_t i = 0; i < sizeof xints / sizeof xints[0]; i++) {
        if (int_arg(PyTuple_GET_ITEM(ctx, xints[i]), &x[xints[i]]) < 0) {
            return NULL;
        }
    }
    w.done = PyTuple_GET_ITEM(ctx, X_DONE);
    w.chunks = PyTuple_GET_ITEM(ctx, X_CHUNKS);
    w.merge_seq = PyTuple_GET_ITEM(ctx, X_MSEQ);
    w.merge_row = PyTuple_GET_ITEM(ctx, X_MROW);
    if (!PyList_Check(w.done) || !PyList_Check(w.chunks) || !PyList_Check(w.merge_seq)
        || !PyList_Check(w.merge_row)) {
        PyErr_SetString(PyExc_TypeError, "walk(): done, chunks and the merge lists must be lists");
        return NULL;
    }
    w.nprocs = PyList_GET_SIZE(w.done);
    w.nchunks = PyList_GET_SIZE(w.chunks);
    w.r = (Py_ssize_t)v[A_R];
    w.a = (Py_ssize_t)v[A_A];
    w.lo = (Py_ssize_t)v[A_LO];
    w.lam = v[A_LAM];
    w.cause = (int)v[A_CAUSE];
    w.cause_x = v[A_CX];
    w.cause_lam = v[A_CLAM];
    w.nrows = (Py_ssize_t)v[A_NROWS];
    w.limit = (Py_ssize_t)v[A_LIMIT];
    w.shift = (Py_ssize_t)x[X_SHIFT];
    w.k_consume = (int)x[X_KCONS];
    w.k_coll = (int)x[X_KCOLL];
    w.k_exit = (int)x[X_KEXIT];
    if (PyList_GET_SIZE(w.merge_seq) != w.nprocs || PyList_GET_SIZE(w.merge_row) != w.nprocs
        || w.r < 0 || w.r >= w.nprocs || w.a < 0 || w.lo < 0 || w.lam < 0 || w.cause < C_WALK
        || w.cause > C_JOINED || w.shift < 0 || w.shift > 24 || w.nchunks < 1 || w.nrows < 1
        || w.nrows > (w.nchunks << w.shift) || w.limit < 0) {
        PyErr_SetString(PyExc_ValueError, "walk(): arguments out of range");
        return NULL;
    }
    w.rows_cap = w.nchunks << w.shift;
    w.wide = rows_wide(PyList_GET_ITEM(w.chunks, 0));
    if (w.wide < 0) {
        return NULL;
    }
    if (w.limit > (w.wide ? INT32_MAX : UINT16_MAX)) {
        PyErr_SetString(PyExc_ValueError, "walk(): limit larger than the rows can hold");
        return NULL;
    }
    PyObject *events, *at;
    if (list_item(PyTuple_GET_ITEM(ctx, X_BY_RANK), w.r, &events, "by_rank") < 0
        || list_item(PyTuple_GET_ITEM(ctx, X_AT), w.r, &at, "merge_at") < 0) {
        return NULL;
    }
    if (get_buf(&w.events, events, "q", 0, "rank events") < 0
        || get_buf(&w.merge_at, at, "i", 0, "merge stops") < 0
        || get_buf(&w.kind, PyTuple_GET_ITEM(ctx, X_KIND), "b", 0, "kinds") < 0
        || get_buf(&w.partner, PyTuple_GET_ITEM(ctx, X_PARTNER), "q", 0, "partners") < 0
        || get_buf(&w.crank, PyTuple_GET_ITEM(ctx, X_RANK), "i", 0, "ranks") < 0
        || get_buf(&w.cseq, PyTuple_GET_ITEM(ctx, X_SEQ), "i", 0, "seqs") < 0
        || get_buf(&w.lamport, PyTuple_GET_ITEM(ctx, X_LAMPORT), "i", 1, "Lamport clocks") < 0) {
        goto done;
    }
    /* rank r's last row: the end of its merge list */
    Slot *own = merge_lists(&w, w.r);
    if (own == NULL) {
        goto done;
    }
    Py_ssize_t nr = own->buf2.b.len / 4;
    w.prev_row = nr > 0 ? ((const int32_t *)own->buf2.b.buf)[nr - 1] : 0;
    if (w.prev_row < 0 || w.prev_row >= w.nrows) {
        PyErr_SetString(PyExc_ValueError, "merge list names a row that does not exist");
        goto done;
    }
    int status = ST_END;
    if (run(&w, &status) < 0) {
        goto done;
    }
    release_all(&w); /* the merge lists may now be resized */
    if (commit(&w) < 0) {
        goto done;
    }
    PyObject *entered = PyList_New(w.nentered);
    if (entered == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < w.nentered; i++) {
        PyObject *e = PyLong_FromLong(w.entered[i]);
        if (e == NULL) {
            Py_DECREF(entered);
            goto done;
        }
        PyList_SET_ITEM(entered, i, e);
    }
    result = Py_BuildValue("(innLnN)", status, w.a, w.lo, (long long)w.lam, w.nrows, entered);
done:
    release_all(&w);
    free_all(&w);
    return result;
}

static PyMethodDef methods[] = {
    {"walk", (PyCFunction)(void (*)(void))walk, METH_FASTCALL, walk_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ccausal",
    "The walk of one rank in causal order: vector and Lamport clocks (see causal.py).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__ccausal(void)
{
    return PyModule_Create(&module);
}
