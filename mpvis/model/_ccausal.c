/* mpvis.model._ccausal: the walk of the ranks in causal order, and the
 * compact vector clock rows it writes, in C.
 *
 * CausalRelease (mpvis/model/causal.py) processes each rank's events in seq
 * order as far as their causes allow; ClockStore (mpvis/model/clocks.py) keeps
 * the vector clocks, one row per merge event.  This file is the only
 * implementation of what happens at each event of such a walk:
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
 *   - a consume whose send is not processed yet: the rank waits for the
 *     send's rank in the waiter table and is walked again, in the same call
 *     (advance(), "the work list" below), once that rank is processed past
 *     the send;
 *   - everything else is decided by CausalRelease: the walk stops there and
 *     hands it back (a consume whose send is unknown, a collective exit, the
 *     stop forced at the end of input); rows that must be widened or a new
 *     chunk of rows are asked of ClockStore during the call.  Python then
 *     resumes the walk with the cause it chose for that event: none (forced
 *     at the end of input), an event (a lost send's rank's last event) or a
 *     joined row (ClockStore.join, with the largest Lamport clock of the
 *     collective's entries).
 *
 * and of how the rows are stored and read back (clock_row, component, rows;
 * see "clock rows" below).  Dense rows are uint16 (format "H") until a count
 * exceeds the store's limit, then int32 ("i"); the walk stops with WIDEN
 * before writing a count the rows cannot hold.  Every index read from the
 * columns, the merge lists, the delta records and the rows is bounds-checked:
 * inconsistent input raises ValueError (TypeError for arguments of the wrong
 * type), never reads or writes out of bounds.
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
        PyErr_Format(PyExc_TypeError, "%s: expected a buffer of format '%s', got '%s'", what,
                     fmt, f);
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

/* ------------------------------------------------------------ clock rows
 *
 * Rank q's merges are numbered 0, 1, ... (its merge lists merge_seq[q] and
 * merge_row[q]).  A merge keeps either a dense row (merge_row[q][i] >= 0, the
 * row's id in the chunks of dense rows) or a delta record: the components
 * that differ from the rank's previous merge, its own component aside (that
 * is always seq + 1); merge_row[q][i] = -(offset + 1) of the record
 * [count, j1, v1, ..., jcount, vcount] in `deltas`.  A rank's first merge,
 * every every-th one after a dense row, and one that changes more than
 * record_max components (its record would outweigh the row) keep a dense row.
 * Row 0 of the chunks is all zeros; a collective's joined rows
 * (ClockStore.join) are dense rows too, and a collective exit whose row is
 * its joined row but for its own component refers to it (a dense row's own
 * component is read as seq + 1 of the merge referring to it).  A row is read
 * back by copying the last dense row at or before it and applying at most
 * every - 1 records.
 */
typedef struct {
    PyObject *chunks, *merge_seq, *merge_row; /* lists */
    Py_ssize_t nprocs, shift, nchunks, cap, every, record_max;
    int wide; /* dense rows are int32 (else uint16) */
    Buf deltas;
    unsigned long clock;
    Slot chunk[SLOTS]; /* chunks of dense rows, by chunk index */
    Slot list[SLOTS];  /* merge lists (seqs in buf, rows in buf2), by rank */
    /* a walk's merges of rank `own` not yet appended to its lists */
    Py_ssize_t own, own_n; /* own_n: its merges already in the lists */
    Py_ssize_t own_since;  /* its merges since its last dense row */
    int32_t *new_seq, *new_row, *new_delta;
    Py_ssize_t nnew, cap_seq, cap_row, ndelta, cap_delta, delta_base;
} Rows;

static int int_arg(PyObject *o, int64_t *out)
{
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    *out = v;
    return 0;
}

/* Are the dense rows int32 (1), uint16 (0); -1 with an exception. */
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

#define NQCTX 7 /* (chunks, shift, merge_seq, merge_row, deltas, every, record_max) */

/* Reads a ClockStore's context tuple; holds the deltas buffer. */
static int rows_open(Rows *R, PyObject *qctx)
{
    memset(R, 0, sizeof *R);
    R->own = -1;
    if (!PyTuple_Check(qctx) || PyTuple_GET_SIZE(qctx) != NQCTX) {
        PyErr_Format(PyExc_TypeError, "clock rows: a tuple of %d items expected", NQCTX);
        return -1;
    }
    int64_t shift, every, record_max;
    if (int_arg(PyTuple_GET_ITEM(qctx, 1), &shift) < 0
        || int_arg(PyTuple_GET_ITEM(qctx, 5), &every) < 0
        || int_arg(PyTuple_GET_ITEM(qctx, 6), &record_max) < 0) {
        return -1;
    }
    R->chunks = PyTuple_GET_ITEM(qctx, 0);
    R->merge_seq = PyTuple_GET_ITEM(qctx, 2);
    R->merge_row = PyTuple_GET_ITEM(qctx, 3);
    if (!PyList_Check(R->chunks) || !PyList_Check(R->merge_seq) || !PyList_Check(R->merge_row)) {
        PyErr_SetString(PyExc_TypeError, "clock rows: chunks and merge lists must be lists");
        return -1;
    }
    R->nprocs = PyList_GET_SIZE(R->merge_seq);
    R->nchunks = PyList_GET_SIZE(R->chunks);
    if (shift < 0 || shift > 24 || every < 1 || record_max < 0 || R->nchunks < 1
        || PyList_GET_SIZE(R->merge_row) != R->nprocs) {
        PyErr_SetString(PyExc_ValueError, "clock rows: inconsistent context");
        return -1;
    }
    R->shift = (Py_ssize_t)shift;
    R->every = (Py_ssize_t)every;
    R->record_max = record_max < PY_SSIZE_T_MAX ? (Py_ssize_t)record_max : PY_SSIZE_T_MAX;
    R->cap = R->nchunks << R->shift;
    R->wide = rows_wide(PyList_GET_ITEM(R->chunks, 0));
    if (R->wide < 0 || get_buf(&R->deltas, PyTuple_GET_ITEM(qctx, 4), "i", 0, "deltas") < 0) {
        return -1;
    }
    R->delta_base = R->deltas.b.len / 4;
    return 0;
}

static void rows_release(Rows *R)
{
    release(&R->deltas);
    for (int i = 0; i < SLOTS; i++) {
        release(&R->chunk[i].buf);
        release(&R->list[i].buf);
        release(&R->list[i].buf2);
    }
}

static void rows_free(Rows *R)
{
    rows_release(R);
    PyMem_Free(R->new_seq);
    PyMem_Free(R->new_row);
    PyMem_Free(R->new_delta);
}

/* Dense row `row` (an id below the chunks' capacity). */
static void *chunk_row(Rows *R, Py_ssize_t row)
{
    if (row < 0 || row >= R->cap) {
        PyErr_SetString(PyExc_ValueError, "clock rows: a row that does not exist");
        return NULL;
    }
    Py_ssize_t c = row >> R->shift;
    int hit;
    Slot *sl = slot_for(R->chunk, &R->clock, c, &hit);
    if (!hit) {
        if (get_buf(&sl->buf, PyList_GET_ITEM(R->chunks, c), R->wide ? "i" : "H", 1,
                    "clock rows") < 0) {
            return NULL;
        }
        if (sl->buf.b.ndim != 2 || sl->buf.b.shape[0] != ((Py_ssize_t)1 << R->shift)
            || sl->buf.b.shape[1] != R->nprocs) {
            PyErr_SetString(PyExc_ValueError, "clock rows: a chunk has the wrong shape");
            return NULL;
        }
    }
    Py_ssize_t off = (row & (((Py_ssize_t)1 << R->shift) - 1)) * R->nprocs;
    return (char *)sl->buf.b.buf + off * sl->buf.b.itemsize;
}

static int read_row(Rows *R, Py_ssize_t row, int32_t *out)
{
    const void *p = chunk_row(R, row);
    if (p == NULL) {
        return -1;
    }
    if (R->wide) {
        memcpy(out, p, (size_t)R->nprocs * sizeof(int32_t));
    } else {
        const uint16_t *x = p;
        for (Py_ssize_t j = 0; j < R->nprocs; j++) {
            out[j] = x[j];
        }
    }
    return 0;
}

/* Values fit the rows: the walk stops with WIDEN before a larger count. */
static int write_row(Rows *R, Py_ssize_t row, const int32_t *in)
{
    void *p = chunk_row(R, row);
    if (p == NULL) {
        return -1;
    }
    if (R->wide) {
        memcpy(p, in, (size_t)R->nprocs * sizeof(int32_t));
    } else {
        uint16_t *x = p;
        for (Py_ssize_t j = 0; j < R->nprocs; j++) {
            x[j] = (uint16_t)in[j];
        }
    }
    return 0;
}

/* Rank q's merge lists (seqs, rows) as buffers of equal length. */
static Slot *merge_lists(Rows *R, Py_ssize_t q)
{
    int hit;
    Slot *sl = slot_for(R->list, &R->clock, q, &hit);
    if (!hit) {
        if (get_buf(&sl->buf, PyList_GET_ITEM(R->merge_seq, q), "i", 0, "merge seqs") < 0
            || get_buf(&sl->buf2, PyList_GET_ITEM(R->merge_row, q), "i", 0, "merge rows") < 0) {
            return NULL;
        }
        if (sl->buf.b.len != sl->buf2.b.len) {
            PyErr_SetString(PyExc_ValueError, "merge lists of different lengths");
            return NULL;
        }
    }
    return sl;
}

/* Rank q's merges as arrays: the committed ones, then (for the walk's own
 * rank) the walk's new ones. */
typedef struct {
    const int32_t *seq, *ref;
    Py_ssize_t n;
    const int32_t *new_seq, *new_ref;
    Py_ssize_t nnew;
} View;

static int view_of(Rows *R, Py_ssize_t q, View *v)
{
    Slot *sl = merge_lists(R, q);
    if (sl == NULL) {
        return -1;
    }
    v->seq = sl->buf.b.buf;
    v->ref = sl->buf2.b.buf;
    v->n = sl->buf.b.len / 4;
    v->new_seq = R->new_seq;
    v->new_ref = R->new_row;
    v->nnew = q == R->own ? R->nnew : 0;
    return 0;
}

static inline Py_ssize_t view_len(const View *v)
{
    return v->n + v->nnew;
}

static inline int32_t view_seq(const View *v, Py_ssize_t i)
{
    return i < v->n ? v->seq[i] : v->new_seq[i - v->n];
}

static inline int32_t view_ref(const View *v, Py_ssize_t i)
{
    return i < v->n ? v->ref[i] : v->new_ref[i - v->n];
}

/* The index of the last merge at or before seq s (-1: none). */
static Py_ssize_t view_find(const View *v, int64_t s)
{
    Py_ssize_t lo = 0, hi = view_len(v); /* first merge with seq > s */
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (view_seq(v, mid) <= s) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo - 1;
}

/* The delta record of reference `ref` (< 0): its pairs and their count,
 * bounds-checked. */
static const int32_t *delta_at(Rows *R, int32_t ref, Py_ssize_t *count)
{
    int64_t off = -(int64_t)ref - 1;
    const int32_t *base;
    Py_ssize_t len;
    if (off >= R->delta_base) {
        base = R->new_delta;
        len = R->ndelta;
        off -= R->delta_base;
    } else {
        base = R->deltas.b.buf;
        len = R->delta_base;
    }
    if (off < 0 || off >= len || base[off] < 0 || base[off] > (len - off - 1) / 2) {
        PyErr_SetString(PyExc_ValueError, "clock rows: a delta record out of range");
        return NULL;
    }
    *count = base[off];
    return base + off + 1;
}

static int apply_delta(Rows *R, int32_t ref, int32_t *out)
{
    Py_ssize_t count;
    const int32_t *d = delta_at(R, ref, &count);
    if (d == NULL) {
        return -1;
    }
    for (Py_ssize_t k = 0; k < count; k++) {
        if (d[2 * k] < 0 || d[2 * k] >= R->nprocs) {
            PyErr_SetString(PyExc_ValueError, "clock rows: a delta names no rank");
            return -1;
        }
        out[d[2 * k]] = d[2 * k + 1];
    }
    return 0;
}

/* The last merge at or before i that keeps a dense row; -1 (exception set)
 * when there is none. */
static Py_ssize_t dense_before(Rows *R, const View *v, Py_ssize_t i)
{
    Py_ssize_t f = i;
    while (f >= 0 && view_ref(v, f) < 0) {
        f--;
        if (i - f > R->every) {
            f = -1;
            break;
        }
    }
    if (f < 0) {
        PyErr_SetString(PyExc_ValueError, "clock rows: no dense row before a delta record");
    }
    return f;
}

/* out = the row of rank q's merge i (its own component included). */
static int materialize(Rows *R, Py_ssize_t q, const View *v, Py_ssize_t i, int32_t *out)
{
    Py_ssize_t f = dense_before(R, v, i);
    if (f < 0 || read_row(R, view_ref(v, f), out) < 0) {
        return -1;
    }
    for (Py_ssize_t t = f + 1; t <= i; t++) {
        if (apply_delta(R, view_ref(v, t), out) < 0) {
            return -1;
        }
    }
    out[q] = view_seq(v, i) + 1;
    return 0;
}

/* out = the row governing the clock of event (q, s): its rank's last merge
 * row at or before s, zeros when none. */
static int governing(Rows *R, Py_ssize_t q, int64_t s, int32_t *out)
{
    View v;
    if (view_of(R, q, &v) < 0) {
        return -1;
    }
    Py_ssize_t i = view_find(&v, s);
    if (i < 0) {
        memset(out, 0, (size_t)R->nprocs * sizeof(int32_t));
        return 0;
    }
    return materialize(R, q, &v, i, out);
}

/* Record rank own's next merge (seq, row `now`, previous row `prev`): a
 * delta record, or a dense row (see "clock rows"); `shared` (when > 0) is a
 * dense row equal to `now` but for own's component, referred to instead.
 * Returns 1 (nothing recorded) when a dense row is due and the chunks are
 * full. */
static int rows_add(Rows *R, int64_t seq, const int32_t *now, const int32_t *prev,
                    Py_ssize_t *nrows, Py_ssize_t shared)
{
    int32_t ref;
    if (grow(&R->new_seq, R->nnew, &R->cap_seq) < 0
        || grow(&R->new_row, R->nnew, &R->cap_row) < 0) {
        return -1;
    }
    Py_ssize_t count = 0;
    for (Py_ssize_t j = 0; j < R->nprocs; j++) {
        count += now[j] != prev[j] && j != R->own;
    }
    if (shared > 0) { /* the row is that dense row, own component aside */
        ref = (int32_t)shared;
        R->own_since = 0;
    } else if (R->own_since + 1 >= R->every || count > R->record_max) {
        if (*nrows >= R->cap) {
            return 1;
        }
        if (write_row(R, *nrows, now) < 0) {
            return -1;
        }
        ref = (int32_t)*nrows;
        *nrows += 1;
        R->own_since = 0;
    } else {
        Py_ssize_t at = R->ndelta;
        while (R->ndelta + 1 + 2 * count > R->cap_delta) {
            if (grow(&R->new_delta, R->cap_delta, &R->cap_delta) < 0) {
                return -1;
            }
        }
        if (R->delta_base + at >= INT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "clock rows: more than 2**31 delta words");
            return -1;
        }
        R->new_delta[R->ndelta++] = (int32_t)count;
        for (Py_ssize_t j = 0; j < R->nprocs; j++) {
            if (now[j] != prev[j] && j != R->own) {
                R->new_delta[R->ndelta++] = (int32_t)j;
                R->new_delta[R->ndelta++] = now[j];
            }
        }
        ref = (int32_t)(-(R->delta_base + at) - 1);
        R->own_since++;
    }
    R->new_seq[R->nnew] = (int32_t)seq;
    R->new_row[R->nnew] = ref;
    R->nnew++;
    return 0;
}

/* Append the walk's new merges to rank own's lists and the deltas (no
 * buffer may be held: the arrays grow). */
static int rows_commit(Rows *R, PyObject *deltas)
{
    PyObject *targets[3] = {NULL, NULL, deltas};
    const int32_t *data[3] = {R->new_seq, R->new_row, R->new_delta};
    Py_ssize_t lens[3] = {R->nnew, R->nnew, R->ndelta};
    if (R->nnew == 0) {
        return 0;
    }
    targets[0] = PyList_GET_ITEM(R->merge_seq, R->own);
    targets[1] = PyList_GET_ITEM(R->merge_row, R->own);
    for (int i = 0; i < 3; i++) {
        if (lens[i] == 0) {
            continue;
        }
        PyObject *bytes = PyBytes_FromStringAndSize((const char *)data[i],
                                                    lens[i] * (Py_ssize_t)sizeof(int32_t));
        if (bytes == NULL) {
            return -1;
        }
        PyObject *res = PyObject_CallMethod(targets[i], "frombytes", "O", bytes);
        Py_DECREF(bytes);
        if (res == NULL) {
            return -1;
        }
        Py_DECREF(res);
    }
    return 0;
}
/* ------------------------------------------------------------ the walk */
typedef struct {
    Rows R;
    Py_ssize_t r, a, lo, nrows, limit;
    int64_t lam;
    int cause;
    int64_t cause_x, cause_lam;
    int k_consume, k_coll, k_exit;
    PyObject *done;
    Buf events, merge_at, kind, partner, crank, cseq, lamport;
    Buf pre; /* per rank (exit seq or -1, joined row, Lamport): exits decided ahead */
    int32_t *cur, *tmp; /* rank r's last row (once have_cur); scratch */
    int have_cur;
    int32_t *entered;   /* the walk's collective entries of rank r (their seqs) */
    Py_ssize_t nentered, cap_entered;
    /* collective instances counted here ("collectives" below) */
    PyObject *sink, *inst_wait; /* borrowed: the set of ranks woken, a list per instance */
    Buf coll_at, coll_iid;      /* rank r's registered collective events: seqs, instances */
    Buf inst_need, inst_count, inst_joined;
    Py_ssize_t ci;              /* the first of rank r's collective events not passed */
} Walk;

/* ------------------------------------------------------------ collectives
 *
 * CausalRelease numbers the collective instances whose members are known
 * when their first entry is registered (instance ids, iid): inst_need[iid]
 * entries complete one, inst_count[iid] have been processed, inst_joined[iid]
 * says CausalRelease made its joined row, inst_wait[iid] is None or the set
 * of ranks waiting at an exit of it for the last entry (CausalRelease's
 * "colldone" key).  coll_at[r] / coll_iid[r] list rank r's registered
 * collective entries and the exits of all-members operations (seqs, in
 * order) with their instance, -1 where CausalRelease decides in Python.
 * The walk counts an entry of a numbered instance when it passes it, and
 * when the instance is complete its waiting ranks join the sink (as
 * CausalRelease._entered does); it stops a rank at an exit of a numbered,
 * incomplete, not joined instance and adds it to the waiting set (as
 * CausalRelease._collective_clock does), without calling Python.  While
 * entries handed to Python are pending (w->nentered > 0) both are left to
 * Python, so the ranks woken join the sink in the order they did. */

/* The instance of rank r's collective event s (-1: none numbered). */
static int coll_instance(Walk *w, int64_t s, Py_ssize_t *iid)
{
    const int32_t *at = w->coll_at.b.buf, *ids = w->coll_iid.b.buf;
    Py_ssize_t n = w->coll_at.b.len / 4;
    while (w->ci < n && at[w->ci] < s) {
        w->ci++;
    }
    *iid = -1;
    if (w->ci < n && at[w->ci] == s) {
        int32_t x = ids[w->ci];
        if (x < -1 || x >= w->inst_need.b.len / 4) {
            PyErr_SetString(PyExc_ValueError, "advance(): a collective instance out of range");
            return -1;
        }
        *iid = x;
    }
    return 0;
}

/* The walk passed an entry of instance iid: count it; once complete, the
 * ranks waiting at its exits join the sink. */
static int count_entry(Walk *w, Py_ssize_t iid)
{
    int32_t *count = w->inst_count.b.buf;
    const int32_t *need = w->inst_need.b.buf;
    if (count[iid] == INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "advance(): a collective's entry count overflows");
        return -1;
    }
    if (++count[iid] < need[iid]) {
        return 0;
    }
    if (iid >= PyList_GET_SIZE(w->inst_wait)) {
        PyErr_SetString(PyExc_ValueError, "advance(): inst_wait lost entries");
        return -1;
    }
    PyObject *waiting = PyList_GET_ITEM(w->inst_wait, iid);
    if (waiting == Py_None) {
        return 0;
    }
    if (!PySet_Check(waiting)) {
        PyErr_SetString(PyExc_TypeError, "advance(): waiting ranks must be a set or None");
        return -1;
    }
    PyObject *res = PyNumber_InPlaceOr(w->sink, waiting);
    if (res == NULL) {
        return -1;
    }
    Py_DECREF(res);
    Py_INCREF(Py_None);
    return PyList_SetItem(w->inst_wait, iid, Py_None);
}

/* Rank r stopped at an exit of instance iid: 1 after it waits (the
 * instance is incomplete and not joined), 0 when Python decides. */
static int wait_exit(Walk *w, Py_ssize_t r, Py_ssize_t iid)
{
    const int32_t *count = w->inst_count.b.buf, *need = w->inst_need.b.buf;
    const int8_t *joined = w->inst_joined.b.buf;
    if (iid < 0 || joined[iid] || count[iid] >= need[iid]) {
        return 0;
    }
    if (iid >= PyList_GET_SIZE(w->inst_wait)) {
        PyErr_SetString(PyExc_ValueError, "advance(): inst_wait lost entries");
        return -1;
    }
    PyObject *waiting = PyList_GET_ITEM(w->inst_wait, iid);
    if (waiting == Py_None) {
        if ((waiting = PySet_New(NULL)) == NULL) {
            return -1;
        }
        if (PyList_SetItem(w->inst_wait, iid, waiting) < 0) {
            return -1;
        }
    } else if (!PySet_Check(waiting)) {
        PyErr_SetString(PyExc_TypeError, "advance(): waiting ranks must be a set or None");
        return -1;
    }
    PyObject *rr = PyLong_FromSsize_t(r);
    if (rr == NULL) {
        return -1;
    }
    int rc = PySet_Add(waiting, rr);
    Py_DECREF(rr);
    return rc < 0 ? -1 : 1;
}

/* Rank r's event seq merges the joined row `joined` (when > 0) or the clock
 * of event (q, qs): its row is the componentwise maximum of that and its
 * previous row, q's component at least qs + 1, its own seq + 1.  A joined
 * row that dominates the previous row (an all-members collective's: every
 * member's entry came after its previous merge) is the new row itself, but
 * for the own component: the merge refers to it, storing nothing.  Returns 1
 * (nothing done) when the chunks of dense rows are full. */
static int merge(Walk *w, int64_t seq, Py_ssize_t joined, Py_ssize_t q, int64_t qs)
{
    if (!w->have_cur) { /* rank r's last merge before the walk */
        View own;
        if (view_of(&w->R, w->r, &own) < 0
            || materialize(&w->R, w->r, &own, own.n - 1, w->cur) < 0) {
            return -1;
        }
        w->have_cur = 1;
    }
    int32_t *now = w->tmp, *cur = w->cur;
    if ((joined > 0 ? read_row(&w->R, joined, now) : governing(&w->R, q, qs, now)) < 0) {
        return -1;
    }
    int dominated = 1; /* the joined row is at least the previous one */
    for (Py_ssize_t j = 0; j < w->R.nprocs; j++) {
        if (cur[j] > now[j]) {
            now[j] = cur[j];
            dominated &= j == w->r;
        }
    }
    if (q >= 0 && now[q] <= qs) {
        now[q] = (int32_t)(qs + 1);
    }
    now[w->r] = (int32_t)(seq + 1);
    int full = rows_add(&w->R, seq, now, cur, &w->nrows, joined > 0 && dominated ? joined : 0);
    if (full != 0) {
        return full;
    }
    w->cur = now;
    w->tmp = cur;
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
            Py_ssize_t iid;
            if (coll_instance(w, s, &iid) < 0) {
                return -1;
            }
            if (iid >= 0 && w->nentered == 0) {
                if (count_entry(w, iid) < 0) {
                    return -1;
                }
            } else {
                if (grow(&w->entered, w->nentered, &w->cap_entered) < 0) {
                    return -1;
                }
                w->entered[w->nentered++] = (int32_t)s;
            }
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
            if (q < 0 || q >= w->R.nprocs || qs < 0) {
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
            int m = merge(w, s, 0, q, qs);
            if (m < 0) {
                return -1;
            }
            if (m > 0) {
                *status = ST_FULL;
                break;
            }
            if (lamport[sg] >= first) {
                first = (int64_t)lamport[sg] + 1;
            }
        } else {
            int64_t *pre = (int64_t *)w->pre.b.buf + 3 * w->r;
            int64_t row = w->cause_x, lmax = w->cause_lam;
            if (cause != C_JOINED) {
                if (pre[0] != s) {
                    *status = ST_COLL_EXIT;
                    break;
                }
                row = pre[1]; /* its collective's joined row, known before it came */
                lmax = pre[2];
            }
            if (s + 1 > w->limit) {
                *status = ST_WIDEN;
                break;
            }
            if (row <= 0 || row >= w->nrows) {
                PyErr_SetString(PyExc_ValueError, "a joined row that does not exist");
                return -1;
            }
            int m = merge(w, s, (Py_ssize_t)row, -1, 0);
            if (m < 0) {
                return -1;
            }
            if (m > 0) {
                *status = ST_FULL;
                break;
            }
            if (cause != C_JOINED) {
                pre[0] = -1;
            }
            if (lmax >= first) {
                first = lmax + 1;
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
    w->cause = cause; /* still the caller's when the walk stopped at its event */
    return 0;
}

/* ------------------------------------------------------------ entry points */

static void walk_release(Walk *w)
{
    release(&w->events);
    release(&w->merge_at);
    release(&w->kind);
    release(&w->partner);
    release(&w->crank);
    release(&w->cseq);
    release(&w->lamport);
    release(&w->pre);
    release(&w->inst_need);
    release(&w->inst_count);
    release(&w->inst_joined);
    rows_release(&w->R);
}

static int list_item(PyObject *list, Py_ssize_t i, PyObject **out, const char *what)
{
    if (!PyList_Check(list) || i >= PyList_GET_SIZE(list)) {
        PyErr_Format(PyExc_ValueError, "walk(): %s must be a list with an entry per rank", what);
        return -1;
    }
    *out = PyList_GET_ITEM(list, i);
    return 0;
}

enum { X_BY_RANK, X_AT, X_KIND, X_PARTNER, X_RANK, X_SEQ, X_LAMPORT, X_DONE, X_PRE, X_ROWS,
       X_KCONS, X_KCOLL, X_KEXIT, NCTX };

/* ------------------------------------------------------------ the work list
 *
 * advance() walks the ranks of a work set (a Python set, popped as
 * CausalRelease's Python loop popped it, so events are released in the same
 * order) until it is empty.  A rank whose walk stops at a consume whose send
 * is not processed waits in the waiter table (waiters[q]: seq -> set of the
 * ranks waiting for event (q, seq)); when a walk processes events a..b-1 of
 * rank q, the ranks waiting for one of them join the work set.  The walk
 * calls back into Python only where CausalRelease decides (decide(): a
 * collective exit, a consume whose send is unknown, the stop forced at the
 * end of input) and with the collective entries it passed (with the next
 * decision, or entered() at the end of the rank's walk), with
 * the rows committed and no buffer of them held (the decision may join rows,
 * widen them or add a chunk).  Ranks Python wakes meanwhile (the set `sink`)
 * join the work set after each rank's walk. */

typedef struct {
    Walk w;
    PyObject *ctx, *by_rank, *at_lists, *grow_cb, *decide_cb, *entered_cb, *out;
    PyObject *waiters, *sink, *work, *deltas_obj, *coll_at, *coll_iid;
    Buf lam_last;
    int64_t *released;  /* global indices released, in order */
    Py_ssize_t nreleased, cap_released;
} Drive;

static int set_done(PyObject *done, Py_ssize_t r, int64_t s)
{
    PyObject *v = PyLong_FromLongLong((long long)s);
    if (v == NULL) {
        return -1;
    }
    PyObject *old = PyList_GET_ITEM(done, r);
    PyList_SET_ITEM(done, r, v);
    Py_DECREF(old);
    return 0;
}

/* Commit rank own's new merges and hold no buffer of the rows (Python may
 * now grow or replace them). */
static int rows_sync(Drive *d)
{
    Rows *R = &d->w.R;
    rows_release(R);
    if (R->nnew > 0 && rows_commit(R, d->deltas_obj) < 0) {
        return -1;
    }
    R->own_n += R->nnew;
    R->nnew = 0;
    R->ndelta = 0;
    return 0;
}

/* After Python had the rows: read the chunks again, with the new limit. */
static int rows_reopen(Drive *d, PyObject *limit_obj)
{
    Walk *w = &d->w;
    int64_t limit;
    if (int_arg(limit_obj, &limit) < 0) {
        return -1;
    }
    w->R.nchunks = PyList_GET_SIZE(w->R.chunks);
    if (w->R.nchunks < 1) {
        PyErr_SetString(PyExc_ValueError, "advance(): the rows lost their chunks");
        return -1;
    }
    w->R.cap = w->R.nchunks << w->R.shift;
    w->R.wide = rows_wide(PyList_GET_ITEM(w->R.chunks, 0));
    if (w->R.wide < 0 || limit < 0 || limit > (w->R.wide ? INT32_MAX : UINT16_MAX)
        || w->nrows < 1 || w->nrows > w->R.cap) {
        PyErr_SetString(PyExc_ValueError, "advance(): rows inconsistent after Python had them");
        return -1;
    }
    w->limit = (Py_ssize_t)limit;
    if (get_buf(&w->R.deltas, d->deltas_obj, "i", 0, "deltas") < 0) {
        return -1;
    }
    w->R.delta_base = w->R.deltas.b.len / 4;
    return 0;
}

/* The walk stopped for a bigger row store: ask ClockStore. */
static int grow_rows(Drive *d, int status)
{
    if (rows_sync(d) < 0) {
        return -1;
    }
    PyObject *res = PyObject_CallFunction(d->grow_cb, "i", status);
    if (res == NULL) {
        return -1;
    }
    int rc = rows_reopen(d, res);
    Py_DECREF(res);
    return rc;
}

/* The collective entries passed and not handed to Python yet, as a list. */
static PyObject *take_entered(Walk *w)
{
    PyObject *lst = PyList_New(w->nentered);
    if (lst == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < w->nentered; i++) {
        PyObject *e = PyLong_FromLong(w->entered[i]);
        if (e == NULL) {
            Py_DECREF(lst);
            return NULL;
        }
        PyList_SET_ITEM(lst, i, e);
    }
    w->nentered = 0;
    return lst;
}

/* Hand the collective entries passed to Python (done[r] is set). */
static int flush_entered(Drive *d)
{
    Walk *w = &d->w;
    if (w->nentered == 0) {
        return 0;
    }
    PyObject *lst = take_entered(w);
    if (lst == NULL) {
        return -1;
    }
    if (rows_sync(d) < 0) {
        Py_DECREF(lst);
        return -1;
    }
    PyObject *res = PyObject_CallFunction(d->entered_cb, "nN", w->r, lst);
    if (res == NULL) {
        return -1;
    }
    Py_DECREF(res);
    PyObject *lim = PyLong_FromSsize_t(w->limit);
    if (lim == NULL) {
        return -1;
    }
    int rc = rows_reopen(d, lim);
    Py_DECREF(lim);
    return rc;
}

/* Ask Python the cause of event s of rank r (why: status), handing it the
 * collective entries passed first; 1 and the cause in w->cause..., or 0 (it
 * waits). */
static int decide(Drive *d, int status, Py_ssize_t s, int forced)
{
    Walk *w = &d->w;
    PyObject *entered = take_entered(w);
    if (entered == NULL || rows_sync(d) < 0) {
        Py_XDECREF(entered);
        return -1;
    }
    PyObject *res = PyObject_CallFunction(d->decide_cb, "ninOnN", w->r, status, s,
                                          forced ? Py_True : Py_False, w->nrows, entered);
    if (res == NULL) {
        return -1;
    }
    int64_t c[5];
    if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 5) {
        Py_DECREF(res);
        PyErr_SetString(PyExc_TypeError, "advance(): decide() must return 5 integers");
        return -1;
    }
    for (int i = 0; i < 4; i++) {
        if (int_arg(PyTuple_GET_ITEM(res, i), &c[i]) < 0) {
            Py_DECREF(res);
            return -1;
        }
    }
    if (c[3] < 1 || c[3] > PY_SSIZE_T_MAX) {
        Py_DECREF(res);
        PyErr_SetString(PyExc_ValueError, "advance(): decide() returned a bad row count");
        return -1;
    }
    w->nrows = (Py_ssize_t)c[3];
    int rc = rows_reopen(d, PyTuple_GET_ITEM(res, 4));
    Py_DECREF(res);
    if (rc < 0) {
        return -1;
    }
    if (c[0] < 0) {
        return 0;
    }
    if (c[0] > C_JOINED) {
        PyErr_SetString(PyExc_ValueError, "advance(): decide() returned an unknown cause");
        return -1;
    }
    w->cause = (int)c[0];
    w->cause_x = c[1];
    w->cause_lam = c[2];
    return 1;
}

/* Rank r waits until event (q, qs) is processed: waiters[q][qs] gets r. */
static int add_waiter(Drive *d, Py_ssize_t r, Py_ssize_t q, int64_t qs)
{
    PyObject *table = PyList_GET_ITEM(d->waiters, q), *key = PyLong_FromLongLong(qs);
    if (key == NULL) {
        return -1;
    }
    if (!PyDict_Check(table)) {
        Py_DECREF(key);
        PyErr_SetString(PyExc_TypeError, "advance(): waiters must be dicts");
        return -1;
    }
    PyObject *ranks = PyDict_GetItemWithError(table, key); /* borrowed */
    if (ranks == NULL) {
        if (PyErr_Occurred() || (ranks = PySet_New(NULL)) == NULL) {
            Py_DECREF(key);
            return -1;
        }
        int rc = PyDict_SetItem(table, key, ranks);
        Py_DECREF(ranks);
        if (rc < 0) {
            Py_DECREF(key);
            return -1;
        }
    }
    Py_DECREF(key);
    PyObject *rr = PyLong_FromSsize_t(r);
    if (rr == NULL) {
        return -1;
    }
    int rc = PySet_Check(ranks) ? PySet_Add(ranks, rr) : -1;
    Py_DECREF(rr);
    if (rc < 0 && !PyErr_Occurred()) {
        PyErr_SetString(PyExc_TypeError, "advance(): waiters' entries must be sets");
    }
    return rc;
}

/* Events a..b-1 of rank r are processed: who waits for one joins the work. */
static int wake(Drive *d, Py_ssize_t r, int64_t a, int64_t b)
{
    PyObject *table = PyList_GET_ITEM(d->waiters, r);
    if (!PyDict_Check(table)) {
        PyErr_SetString(PyExc_TypeError, "advance(): waiters must be dicts");
        return -1;
    }
    if (PyDict_GET_SIZE(table) == 0) {
        return 0;
    }
    PyObject *keys = PyList_New(0), *k, *val;
    Py_ssize_t pos = 0;
    if (keys == NULL) {
        return -1;
    }
    while (PyDict_Next(table, &pos, &k, &val)) {
        long long x = PyLong_AsLongLong(k);
        if (x == -1 && PyErr_Occurred()) {
            Py_DECREF(keys);
            return -1;
        }
        if (a <= x && x < b && PyList_Append(keys, k) < 0) {
            Py_DECREF(keys);
            return -1;
        }
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(keys); i++) {
        k = PyList_GET_ITEM(keys, i);
        val = PyDict_GetItemWithError(table, k);
        if (val == NULL) {
            continue;
        }
        Py_INCREF(val);
        if (PyDict_DelItem(table, k) < 0) {
            Py_DECREF(val);
            Py_DECREF(keys);
            return -1;
        }
        PyObject *res = PyNumber_InPlaceOr(d->work, val);
        Py_DECREF(val);
        if (res == NULL) {
            Py_DECREF(keys);
            return -1;
        }
        Py_DECREF(res);
    }
    Py_DECREF(keys);
    return 0;
}

/* Walk rank r from where it is processed; `forced`: its first merge stop is
 * forced (the end of input). */
static int visit(Drive *d, Py_ssize_t r, int forced)
{
    Walk *w = &d->w;
    int64_t *lam_last = d->lam_last.b.buf;
    Py_ssize_t nprocs = w->R.nprocs;
    int64_t a = done_of(w, r);
    if (a < 0) {
        return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *events, *at, *cat, *cid;
    if (list_item(d->by_rank, r, &events, "by_rank") < 0
        || list_item(d->at_lists, r, &at, "merge_at") < 0
        || list_item(d->coll_at, r, &cat, "coll_at") < 0
        || list_item(d->coll_iid, r, &cid, "coll_iid") < 0
        || get_buf(&w->events, events, "q", 0, "rank events") < 0
        || get_buf(&w->merge_at, at, "i", 0, "merge stops") < 0
        || get_buf(&w->coll_at, cat, "i", 0, "collective events") < 0
        || get_buf(&w->coll_iid, cid, "i", 0, "collective instances") < 0) {
        release(&w->events);
        release(&w->merge_at);
        release(&w->coll_at);
        release(&w->coll_iid);
        return -1;
    }
    if (w->coll_at.b.len != w->coll_iid.b.len) {
        PyErr_SetString(PyExc_ValueError, "advance(): coll_at and coll_iid differ in length");
        release(&w->events);
        release(&w->merge_at);
        release(&w->coll_at);
        release(&w->coll_iid);
        return -1;
    }
    const int64_t *ev = w->events.b.buf;
    const int32_t *stops = w->merge_at.b.buf;
    Py_ssize_t n = w->events.b.len / 8, nat = w->merge_at.b.len / 4;
    int rc = -1;
    if (a >= n) {
        rc = 0;
        goto out;
    }
    Py_ssize_t lo = 0, hi = nat; /* first merge stop at or after a */
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (stops[mid] < a) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    int64_t forced_seq = forced && lo < nat ? stops[lo] : -1;
    { /* the first collective event at or after a */
        const int32_t *cs = w->coll_at.b.buf;
        Py_ssize_t clo = 0, chi = w->coll_at.b.len / 4;
        while (clo < chi) {
            Py_ssize_t mid = clo + (chi - clo) / 2;
            if (cs[mid] < a) {
                clo = mid + 1;
            } else {
                chi = mid;
            }
        }
        w->ci = clo;
    }
    if (lam_last[r] < -1 || lam_last[r] >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "advance(): a Lamport clock out of range");
        goto out;
    }
    w->r = r;
    w->a = (Py_ssize_t)a;
    w->lo = lo;
    w->lam = lam_last[r] + 1;
    w->cause = C_WALK;
    /* rank r's rows: its last row is read when the walk first merges */
    View own;
    if (view_of(&w->R, r, &own) < 0) {
        goto out;
    }
    w->R.own = r;
    w->R.own_n = own.n;
    w->R.nnew = 0;
    w->R.ndelta = 0;
    w->have_cur = 0;
    if (own.n > 0) {
        Py_ssize_t f = dense_before(&w->R, &own, own.n - 1);
        if (f < 0) {
            goto out;
        }
        w->R.own_since = own.n - 1 - f;
    } else {
        memset(w->cur, 0, (size_t)nprocs * sizeof(int32_t));
        w->have_cur = 1;
        w->R.own_since = w->R.every; /* the first merge keeps a dense row */
    }
    int status = -1;
    const int64_t *pre = w->pre.b.buf;
    int64_t g0 = ev[a];
    if (lo < nat && stops[lo] == a && pre[3 * r] != a && g0 >= 0 && g0 < w->kind.b.len
        && ((const int8_t *)w->kind.b.buf)[g0] == w->k_exit) {
        status = ST_COLL_EXIT; /* woken at a collective exit: nothing to walk before it */
    }
    while (1) {
        if (status < 0) {
            while (1) {
                if (run(w, &status) < 0) {
                    goto out;
                }
                if (status < ST_WIDEN) {
                    break;
                }
                if (grow_rows(d, status) < 0) {
                    goto out;
                }
            }
            /* what is decided below may read it (own entries) */
            if (set_done(w->done, r, w->a) < 0) {
                goto out;
            }
            if (status == ST_END) {
                break;
            }
        }
        Py_ssize_t s = w->a;
        if (status == ST_SEND_LATE && s != forced_seq) {
            int64_t sg = ((const int64_t *)w->partner.b.buf)[ev[s]]; /* checked by the walk */
            if (add_waiter(d, r, ((const int32_t *)w->crank.b.buf)[sg],
                           ((const int32_t *)w->cseq.b.buf)[sg]) < 0) {
                goto out;
            }
            break;
        }
        if (status == ST_COLL_EXIT && s != forced_seq && w->nentered == 0) {
            Py_ssize_t iid;
            int waits = coll_instance(w, s, &iid) < 0 ? -1 : wait_exit(w, r, iid);
            if (waits < 0) {
                goto out;
            }
            if (waits > 0) {
                break;
            }
        }
        int got = decide(d, status, s, s == forced_seq);
        if (got < 0) {
            goto out;
        }
        if (got == 0) {
            break;
        }
        status = -1;
    }
    if (set_done(w->done, r, w->a) < 0 || flush_entered(d) < 0 || rows_sync(d) < 0) {
        goto out;
    }
    w->R.own = -1;
    int64_t s = w->a;
    if (set_done(w->done, r, s) < 0) {
        goto out;
    }
    if (s > a) {
        lam_last[r] = w->lam - 1;
        if (d->out != Py_None) {
            while (d->nreleased + (s - a) > d->cap_released) {
                Py_ssize_t cap2 = d->cap_released ? 2 * d->cap_released : 1024;
                int64_t *p = PyMem_Realloc(d->released, (size_t)cap2 * sizeof(int64_t));
                if (p == NULL) {
                    PyErr_NoMemory();
                    goto out;
                }
                d->released = p;
                d->cap_released = cap2;
            }
            memcpy(d->released + d->nreleased, ev + a, (size_t)(s - a) * sizeof(int64_t));
            d->nreleased += s - a;
        }
        if (wake(d, r, a, s) < 0) {
            goto out;
        }
    }
    if (get_buf(&w->R.deltas, d->deltas_obj, "i", 0, "deltas") < 0) {
        goto out;
    }
    w->R.delta_base = w->R.deltas.b.len / 4;
    rc = 0;
out:
    release(&w->events);
    release(&w->merge_at);
    release(&w->coll_at);
    release(&w->coll_iid);
    return rc;
}

PyDoc_STRVAR(advance_doc,
"advance(ctx, work, force, nrows, limit) -> nrows\n\n"
"ctx = (by_rank, merge_at, kind, partner, rank, seq, lamport, done, pre, rows,\n"
"       k_consume, k_coll, k_exit, lam_last, waiters, sink, out, grow, decide,\n"
"       entered, coll_at, coll_iid, inst_need, inst_count, inst_joined,\n"
"       inst_wait): the store's rank event lists and columns, each rank's merge\n"
"stops, how far each rank is processed (done, a list), the exits decided ahead\n"
"(int64, three per rank: the exit's seq or -1, its joined row and Lamport clock;\n"
"the walk passes such an exit and sets its seq to -1), the clock rows' context\n"
"(see clock_row), the kind codes, each rank's last Lamport clock (int64), the\n"
"waiter table (a dict per rank: seq -> set of the ranks waiting for it), the set\n"
"of ranks Python wakes, the array (int64) the released global indices are\n"
"appended to (or None), grow(status) -> limit (rows widened, 4, or a new chunk,\n"
"5), decide(r, why, seq, forced, nrows, seqs) -> (cause, cause_x, cause_lam,\n"
"nrows, limit) (cause -1: it waits; why 1 a consume without send, 2 a consume\n"
"whose send is not processed (forced only), 3 a collective exit; seqs: the\n"
"collective entries of r passed since Python last heard), entered(r, seqs) (the\n"
"entries passed, at the end of a rank's walk), each rank's collective events\n"
"counted here and their instances (lists of int32 arrays: seqs, instance ids or\n"
"-1) and the instances' sizes, entries processed (int32), joined flags (int8)\n"
"and waiting ranks (a list: None or a set; see \"collectives\").\n"
"Walks the ranks of the set `work` (popped) until it is empty; the first merge\n"
"stop of rank `force` (if >= 0) is forced.  Returns the dense row count.");

enum { X_LAMLAST = NCTX, X_WAITERS, X_SINK, X_OUT, X_GROW, X_DECIDE, X_ENTERED, X_COLL_AT,
       X_COLL_IID, X_INEED, X_ICOUNT, X_IJOINED, X_IWAIT, NCTX2 };

static PyObject *advance(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    enum { B_CTX, B_WORK, B_FORCE, B_NROWS, B_LIMIT, NB };
    if (nargs != NB) {
        PyErr_Format(PyExc_TypeError, "advance() takes %d arguments (%zd given)", NB, nargs);
        return NULL;
    }
    PyObject *ctx = args[B_CTX], *work = args[B_WORK];
    if (!PyTuple_Check(ctx) || PyTuple_GET_SIZE(ctx) != NCTX2 || !PySet_Check(work)) {
        PyErr_Format(PyExc_TypeError, "advance(): ctx must be a tuple of %d items, work a set",
                     NCTX2);
        return NULL;
    }
    int64_t v[NB], x[NCTX];
    static const int ints[] = {B_FORCE, B_NROWS, B_LIMIT};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (int_arg(args[ints[i]], &v[ints[i]]) < 0) {
            return NULL;
        }
    }
    static const int xints[] = {X_KCONS, X_KCOLL, X_KEXIT};
    for (size_t i = 0; i < sizeof xints / sizeof xints[0]; i++) {
        if (int_arg(PyTuple_GET_ITEM(ctx, xints[i]), &x[xints[i]]) < 0) {
            return NULL;
        }
    }
    Drive d;
    memset(&d, 0, sizeof d);
    Walk *w = &d.w;
    PyObject *result = NULL;
    d.ctx = ctx;
    d.work = work;
    d.by_rank = PyTuple_GET_ITEM(ctx, X_BY_RANK);
    d.at_lists = PyTuple_GET_ITEM(ctx, X_AT);
    d.waiters = PyTuple_GET_ITEM(ctx, X_WAITERS);
    d.sink = PyTuple_GET_ITEM(ctx, X_SINK);
    d.out = PyTuple_GET_ITEM(ctx, X_OUT);
    d.grow_cb = PyTuple_GET_ITEM(ctx, X_GROW);
    d.decide_cb = PyTuple_GET_ITEM(ctx, X_DECIDE);
    d.entered_cb = PyTuple_GET_ITEM(ctx, X_ENTERED);
    d.coll_at = PyTuple_GET_ITEM(ctx, X_COLL_AT);
    d.coll_iid = PyTuple_GET_ITEM(ctx, X_COLL_IID);
    w->sink = d.sink;
    w->inst_wait = PyTuple_GET_ITEM(ctx, X_IWAIT);
    d.deltas_obj = PyTuple_GET_ITEM(PyTuple_GET_ITEM(ctx, X_ROWS), 4);
    if (rows_open(&w->R, PyTuple_GET_ITEM(ctx, X_ROWS)) < 0) {
        goto done;
    }
    Py_ssize_t nprocs = w->R.nprocs;
    w->done = PyTuple_GET_ITEM(ctx, X_DONE);
    w->nrows = (Py_ssize_t)v[B_NROWS];
    w->limit = (Py_ssize_t)v[B_LIMIT];
    w->k_consume = (int)x[X_KCONS];
    w->k_coll = (int)x[X_KCOLL];
    w->k_exit = (int)x[X_KEXIT];
    if (!PyList_Check(w->done) || PyList_GET_SIZE(w->done) != nprocs
        || !PyList_Check(d.by_rank) || PyList_GET_SIZE(d.by_rank) != nprocs
        || !PyList_Check(d.at_lists) || PyList_GET_SIZE(d.at_lists) != nprocs
        || !PyList_Check(d.waiters) || PyList_GET_SIZE(d.waiters) != nprocs
        || !PyList_Check(d.coll_at) || PyList_GET_SIZE(d.coll_at) != nprocs
        || !PyList_Check(d.coll_iid) || PyList_GET_SIZE(d.coll_iid) != nprocs
        || !PyList_Check(w->inst_wait)
        || !PySet_Check(d.sink) || !PyCallable_Check(d.grow_cb)
        || !PyCallable_Check(d.decide_cb) || !PyCallable_Check(d.entered_cb)) {
        PyErr_SetString(PyExc_TypeError,
                        "advance(): done, by_rank, merge_at, waiters, coll_at and coll_iid must "
                        "be lists with an entry per rank, inst_wait a list, sink a set, grow, "
                        "decide and entered callables");
        goto done;
    }
    if (v[B_FORCE] < -1 || v[B_FORCE] >= nprocs || w->nrows < 1 || w->nrows > w->R.cap
        || w->limit < 0) {
        PyErr_SetString(PyExc_ValueError, "advance(): arguments out of range");
        goto done;
    }
    if (w->limit > (w->R.wide ? INT32_MAX : UINT16_MAX)) {
        PyErr_SetString(PyExc_ValueError, "advance(): limit larger than the rows can hold");
        goto done;
    }
    if (get_buf(&w->kind, PyTuple_GET_ITEM(ctx, X_KIND), "b", 0, "kinds") < 0
        || get_buf(&w->partner, PyTuple_GET_ITEM(ctx, X_PARTNER), "q", 0, "partners") < 0
        || get_buf(&w->crank, PyTuple_GET_ITEM(ctx, X_RANK), "i", 0, "ranks") < 0
        || get_buf(&w->cseq, PyTuple_GET_ITEM(ctx, X_SEQ), "i", 0, "seqs") < 0
        || get_buf(&w->lamport, PyTuple_GET_ITEM(ctx, X_LAMPORT), "i", 1, "Lamport clocks") < 0
        || get_buf(&w->pre, PyTuple_GET_ITEM(ctx, X_PRE), "q", 1, "exits decided ahead") < 0
        || get_buf(&d.lam_last, PyTuple_GET_ITEM(ctx, X_LAMLAST), "q", 1, "Lamport clocks") < 0
        || get_buf(&w->inst_need, PyTuple_GET_ITEM(ctx, X_INEED), "i", 0, "instance sizes") < 0
        || get_buf(&w->inst_count, PyTuple_GET_ITEM(ctx, X_ICOUNT), "i", 1, "instance counts") < 0
        || get_buf(&w->inst_joined, PyTuple_GET_ITEM(ctx, X_IJOINED), "b", 0, "instances joined")
               < 0) {
        goto done;
    }
    {
        Py_ssize_t ninst = w->inst_need.b.len / 4;
        if (w->inst_count.b.len / 4 != ninst || w->inst_joined.b.len != ninst
            || PyList_GET_SIZE(w->inst_wait) != ninst) {
            PyErr_SetString(PyExc_ValueError,
                            "advance(): the collective instances' arrays differ in length");
            goto done;
        }
    }
    if (w->pre.b.len != 3 * 8 * nprocs) {
        PyErr_SetString(PyExc_ValueError,
                        "advance(): three entries per rank of exits decided ahead");
        goto done;
    }
    if (d.lam_last.b.len != 8 * nprocs) {
        PyErr_SetString(PyExc_ValueError, "advance(): a Lamport clock per rank");
        goto done;
    }
    w->cur = PyMem_Malloc((size_t)nprocs * sizeof(int32_t) + 1);
    w->tmp = PyMem_Malloc((size_t)nprocs * sizeof(int32_t) + 1);
    if (w->cur == NULL || w->tmp == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t force = (Py_ssize_t)v[B_FORCE];
    while (PySet_GET_SIZE(work) > 0) {
        PyObject *item = PySet_Pop(work);
        if (item == NULL) {
            goto done;
        }
        Py_ssize_t r = PyLong_AsSsize_t(item);
        Py_DECREF(item);
        if (r == -1 && PyErr_Occurred()) {
            goto done;
        }
        if (r < 0 || r >= nprocs) {
            PyErr_SetString(PyExc_ValueError, "advance(): a rank out of range");
            goto done;
        }
        if (visit(&d, r, r == force) < 0) {
            goto done;
        }
        if (r == force) {
            force = -1;
        }
        if (PySet_GET_SIZE(d.sink) > 0) {
            PyObject *res = PyNumber_InPlaceOr(work, d.sink);
            if (res == NULL) {
                goto done;
            }
            Py_DECREF(res);
            if (PySet_Clear(d.sink) < 0) {
                goto done;
            }
        }
    }
    walk_release(w); /* the released indices' array grows */
    if (d.nreleased > 0) {
        PyObject *bytes = PyBytes_FromStringAndSize((const char *)d.released,
                                                    d.nreleased * (Py_ssize_t)sizeof(int64_t));
        if (bytes == NULL) {
            goto done;
        }
        PyObject *res = PyObject_CallMethod(d.out, "frombytes", "O", bytes);
        Py_DECREF(bytes);
        if (res == NULL) {
            goto done;
        }
        Py_DECREF(res);
    }
    result = PyLong_FromSsize_t(w->nrows);
done:
    walk_release(w);
    release(&d.lam_last);
    rows_free(&w->R);
    PyMem_Free(w->cur);
    PyMem_Free(w->tmp);
    PyMem_Free(w->entered);
    PyMem_Free(d.released);
    return result;
}

/* 0 when a function given nargs arguments takes want; else -1, a TypeError set. */
static int arg_count(Py_ssize_t nargs, Py_ssize_t want, const char *name)
{
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments", name, want);
        return -1;
    }
    return 0;
}

/* Parse (rows, q, s, ...) of a query: the context, a rank and a seq. */
static int query_args(PyObject *const *args, Rows *R, Py_ssize_t *q, int64_t *s)
{
    int64_t qq;
    if (rows_open(R, args[0]) < 0 || int_arg(args[1], &qq) < 0 || int_arg(args[2], s) < 0) {
        return -1;
    }
    if (qq < 0 || qq >= R->nprocs) {
        PyErr_SetString(PyExc_ValueError, "clock rows: a rank out of range");
        return -1;
    }
    *q = (Py_ssize_t)qq;
    return 0;
}

PyDoc_STRVAR(clock_row_doc,
"clock_row(rows, q, s, out) -> None\n\n"
"rows = (chunks, shift, merge_seq, merge_row, deltas, every, record_max): a\n"
"ClockStore's rows.\n"
"out (int32, one per rank) = the row governing the clock of event (q, s): rank\n"
"q's last merge row at or before s, zeros when none.");

static PyObject *clock_row(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (arg_count(nargs, 4, "clock_row") < 0) {
        return NULL;
    }
    Rows R;
    Buf out = {0};
    Py_ssize_t q;
    int64_t s;
    PyObject *result = NULL;
    if (query_args(args, &R, &q, &s) < 0 || get_buf(&out, args[3], "i", 1, "out") < 0) {
        goto done;
    }
    if (out.b.len != R.nprocs * 4) {
        PyErr_SetString(PyExc_ValueError, "clock_row(): out must have one entry per rank");
        goto done;
    }
    if (governing(&R, q, s, out.b.buf) == 0) {
        result = Py_NewRef(Py_None);
    }
done:
    release(&out);
    rows_free(&R);
    return result;
}

PyDoc_STRVAR(component_doc,
"component(rows, q, s, j) -> int\n\n"
"Component j of the row governing the clock of event (q, s) (see clock_row).");

/* *out = component j of the row governing the clock of event (q, s); 0 or -1
 * (an exception set). */
static int component_of(Rows *R, Py_ssize_t q, int64_t s, Py_ssize_t j, int64_t *out)
{
    View v;
    if (view_of(R, q, &v) < 0) {
        return -1;
    }
    Py_ssize_t i = view_find(&v, s);
    if (i < 0) {
        *out = 0;
        return 0;
    }
    if (j == q) {
        *out = (int64_t)view_seq(&v, i) + 1;
        return 0;
    }
    Py_ssize_t t = i;
    for (; t >= 0 && view_ref(&v, t) < 0 && i - t <= R->every; t--) { /* the latest naming j */
        Py_ssize_t count;
        const int32_t *d = delta_at(R, view_ref(&v, t), &count);
        if (d == NULL) {
            return -1;
        }
        for (Py_ssize_t k = 0; k < count; k++) {
            if (d[2 * k] == j) {
                *out = d[2 * k + 1];
                return 0;
            }
        }
    }
    if (t < 0 || view_ref(&v, t) < 0) {
        PyErr_SetString(PyExc_ValueError, "clock rows: no dense row before a delta record");
        return -1;
    }
    const void *row = chunk_row(R, view_ref(&v, t));
    if (row == NULL) {
        return -1;
    }
    *out = R->wide ? ((const int32_t *)row)[j] : ((const uint16_t *)row)[j];
    return 0;
}

static PyObject *component(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (arg_count(nargs, 4, "component") < 0) {
        return NULL;
    }
    Rows R;
    Py_ssize_t q;
    int64_t s, j, value;
    PyObject *result = NULL;
    if (query_args(args, &R, &q, &s) < 0 || int_arg(args[3], &j) < 0) {
        goto done;
    }
    if (j < 0 || j >= R.nprocs) {
        PyErr_SetString(PyExc_ValueError, "component(): a rank out of range");
        goto done;
    }
    if (component_of(&R, q, s, (Py_ssize_t)j, &value) == 0) {
        result = PyLong_FromLongLong((long long)value);
    }
done:
    rows_free(&R);
    return result;
}

PyDoc_STRVAR(components_doc,
"components(rows, q, s, j, out) -> None\n\n"
"out[i] (int32) = component j[i] of the vector clock of event (q[i], s[i]):\n"
"s[i] + 1 when j[i] == q[i], else as component() (q, s, j: int64 arrays of one\n"
"length; every rank is checked, s[i] >= 0).");

static PyObject *components(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (arg_count(nargs, 5, "components") < 0) {
        return NULL;
    }
    Rows R;
    Buf bq = {0}, bs = {0}, bj = {0}, out = {0};
    PyObject *result = NULL;
    if (rows_open(&R, args[0]) < 0 || get_buf(&bq, args[1], "q", 0, "ranks") < 0
        || get_buf(&bs, args[2], "q", 0, "seqs") < 0
        || get_buf(&bj, args[3], "q", 0, "components") < 0
        || get_buf(&out, args[4], "i", 1, "out") < 0) {
        goto done;
    }
    Py_ssize_t n = bq.b.len / 8;
    if (bs.b.len / 8 != n || bj.b.len / 8 != n || out.b.len / 4 != n) {
        PyErr_SetString(PyExc_ValueError, "components(): arrays of different lengths");
        goto done;
    }
    const int64_t *q = bq.b.buf, *s = bs.b.buf, *j = bj.b.buf;
    int32_t *o = out.b.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (q[i] < 0 || q[i] >= R.nprocs || j[i] < 0 || j[i] >= R.nprocs || s[i] < 0
            || s[i] >= INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "components(): a rank or seq out of range");
            goto done;
        }
        int64_t value = s[i] + 1;
        if (j[i] != q[i]
            && component_of(&R, (Py_ssize_t)q[i], s[i], (Py_ssize_t)j[i], &value) < 0) {
            goto done;
        }
        o[i] = (int32_t)value;
    }
    result = Py_NewRef(Py_None);
done:
    release(&bq);
    release(&bs);
    release(&bj);
    release(&out);
    rows_free(&R);
    return result;
}

PyDoc_STRVAR(rows_doc,
"rows(rows, q, start, out) -> None\n\n"
"out (int32, n - start rows of one entry per rank) = the rows of rank q's merges\n"
"start..n-1 (see clock_row).");

static PyObject *rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (arg_count(nargs, 4, "rows") < 0) {
        return NULL;
    }
    Rows R;
    Buf out = {0};
    Py_ssize_t q;
    int64_t start;
    PyObject *result = NULL;
    if (query_args(args, &R, &q, &start) < 0 || get_buf(&out, args[3], "i", 1, "out") < 0) {
        goto done;
    }
    View v;
    if (view_of(&R, q, &v) < 0) {
        goto done;
    }
    Py_ssize_t n = view_len(&v), np = R.nprocs;
    if (start < 0 || start > n || out.b.len != (n - start) * np * 4) {
        PyErr_SetString(PyExc_ValueError, "rows(): out must have a row per merge from start on");
        goto done;
    }
    int32_t *o = out.b.buf;
    for (Py_ssize_t t = start; t < n; t++, o += np) {
        int32_t ref = view_ref(&v, t);
        if (t == start) {
            if (materialize(&R, q, &v, t, o) < 0) {
                goto done;
            }
        } else if (ref >= 0) {
            if (read_row(&R, ref, o) < 0) {
                goto done;
            }
            o[q] = view_seq(&v, t) + 1;
        } else {
            memcpy(o, o - np, (size_t)np * sizeof(int32_t));
            if (apply_delta(&R, ref, o) < 0) {
                goto done;
            }
            o[q] = view_seq(&v, t) + 1;
        }
    }
    result = Py_NewRef(Py_None);
done:
    release(&out);
    rows_free(&R);
    return result;
}

PyDoc_STRVAR(join_doc,
"join(rows, ranks, seqs, out) -> None\n\n"
"out (int32, one per rank) = the componentwise maximum of the clocks of the\n"
"events (ranks[i], seqs[i]) (see clock_row), zeros when there are none.");

static PyObject *join(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (arg_count(nargs, 4, "join") < 0) {
        return NULL;
    }
    Rows R;
    Buf ranks = {0}, seqs = {0}, out = {0};
    int32_t *vec = NULL;
    PyObject *result = NULL;
    if (rows_open(&R, args[0]) < 0 || get_buf(&ranks, args[1], "i", 0, "ranks") < 0
        || get_buf(&seqs, args[2], "i", 0, "seqs") < 0
        || get_buf(&out, args[3], "i", 1, "out") < 0) {
        goto done;
    }
    Py_ssize_t n = ranks.b.len / 4, np = R.nprocs;
    if (seqs.b.len != ranks.b.len || out.b.len != np * 4) {
        PyErr_SetString(PyExc_ValueError, "join(): a seq per rank, out one entry per rank");
        goto done;
    }
    vec = PyMem_Malloc((size_t)np * sizeof(int32_t) + 1);
    if (vec == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int32_t *o = out.b.buf;
    memset(o, 0, (size_t)np * sizeof(int32_t));
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t q = ((const int32_t *)ranks.b.buf)[i], s = ((const int32_t *)seqs.b.buf)[i];
        if (q < 0 || q >= np || s < 0) {
            PyErr_SetString(PyExc_ValueError, "join(): an event out of range");
            goto done;
        }
        if (governing(&R, q, s, vec) < 0) {
            goto done;
        }
        if (vec[q] <= s) {
            vec[q] = s + 1;
        }
        for (Py_ssize_t j = 0; j < np; j++) {
            if (vec[j] > o[j]) {
                o[j] = vec[j];
            }
        }
    }
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(vec);
    release(&ranks);
    release(&seqs);
    release(&out);
    rows_free(&R);
    return result;
}

#define FASTCALL(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL

static PyMethodDef methods[] = {
    {"advance", FASTCALL(advance), advance_doc},
    {"clock_row", FASTCALL(clock_row), clock_row_doc},
    {"component", FASTCALL(component), component_doc},
    {"components", FASTCALL(components), components_doc},
    {"rows", FASTCALL(rows), rows_doc},
    {"join", FASTCALL(join), join_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ccausal",
    "The walk of one rank in causal order and the compact clock rows (see clocks.py).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__ccausal(void)
{
    return PyModule_Create(&module);
}
