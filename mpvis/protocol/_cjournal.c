/* mpvis.protocol._cjournal: a rank's compact batch's journal lines, from its columns, in C.
 *
 * The central process journals every record before the model sees it
 * (MPVisualizer, section 2), so writing the trace lines of a batch is on its
 * hot path.  mpvis/protocol/compact_columns.py holds the records of a batch as
 * NumPy columns and describes each row's line by a template: the pieces of
 * the line in order, constant text (bytes) or a column's value (an index into
 * the columns), after a prefix common to every row (the rank).  lines() writes
 * every row's line by its template, one pass over the rows, with the GIL
 * released.
 *
 * A column is one of:
 *   - a C-contiguous int64 buffer, or a row of one (a triple (buffer, row, 8):
 *     its values are bytes row*n*8 on): the value in decimal;
 *   - a pair (ids, texts): ids (int64, uint8 or bool, a buffer or a row of one:
 *     (buffer, row, 8 or 1)) into a tuple of bytes, the text of the id (a
 *     site's JSON string, "true"/"false");
 *   - bytes: a JSON array of one number per row, as orjson wrote it (floats:
 *     orjson's text of each value is kept exactly, not formatted again).
 * A row whose template index is -1 takes the next line of `others` as it is
 * (the rows of other kinds, made one by one by the caller).
 *
 * Every index read (template, column, id, row of a text array, others) is
 * bounds-checked: inconsistent input raises ValueError (TypeError for
 * arguments of the wrong type), never reads out of bounds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "../instrument/pmpi/mvcodes.h"

enum { COL_INT = 0, COL_TEXT = 1, COL_ARRAY = 2 };

typedef struct {
    int kind;
    Py_buffer buf;         /* COL_INT, COL_TEXT: the int64 values or ids */
    int held;
    const char *base;      /* COL_INT, COL_TEXT: the first value */
    int itemsize;          /* 8: int64 values, 1: uint8 (ids only) */
    const char **texts;    /* COL_TEXT: the id's text and its length */
    Py_ssize_t *lens;
    Py_ssize_t ntexts;
    Py_ssize_t *starts;    /* COL_ARRAY: where each row's text starts (n + 1: ends) */
    const char *array;
    Py_ssize_t widest;     /* the longest text a row may take */
} Column;

typedef struct {
    const char *text;      /* a constant piece, or NULL: column `col` */
    Py_ssize_t len;
    Py_ssize_t col;
} Piece;

typedef struct {
    Piece *pieces;
    Py_ssize_t npieces;
    Py_ssize_t widest;     /* the longest line it may write (reserved once per row) */
} Template;

typedef struct {
    char *data;
    size_t len, cap;
} Out;

static int reserve(Out *out, size_t more)
{
    if (out->len + more <= out->cap) {
        return 0;
    }
    size_t cap = out->cap ? out->cap : 4096;
    while (cap < out->len + more) {
        cap *= 2;
    }
    char *data = realloc(out->data, cap);
    if (data == NULL) {
        return -1;
    }
    out->data = data;
    out->cap = cap;
    return 0;
}

/* "00".."99": two digits at a time. */
static const char DIGITS[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* Decimal text of v into p (at most 20 bytes); its length. */
static size_t int_text(char *p, int64_t v)
{
    char tmp[24];
    char *end = tmp + sizeof tmp, *q = end;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    while (u >= 100) {
        unsigned d = (unsigned)(u % 100) * 2;
        u /= 100;
        *--q = DIGITS[d + 1];
        *--q = DIGITS[d];
    }
    if (u >= 10) {
        *--q = DIGITS[u * 2 + 1];
        *--q = DIGITS[u * 2];
    } else {
        *--q = (char)('0' + u);
    }
    if (v < 0) {
        *--q = '-';
    }
    size_t len = (size_t)(end - q);
    memcpy(p, q, len);
    return len;
}

/* An int64 buffer of n values (any number if n < 0). */
static int get_int64(Py_buffer *buf, PyObject *obj, Py_ssize_t n, const char *what)
{
    if (PyObject_GetBuffer(obj, buf, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
        return -1;
    }
    const char *f = buf->format ? buf->format : "B";
    if (f[0] == '@' || f[0] == '=' || f[0] == '<') {
        f++;
    }
    if (buf->itemsize != 8 || strlen(f) != 1 || strchr("lqn", f[0]) == NULL) {
        PyErr_Format(PyExc_TypeError, "%s: expected an int64 buffer, got format '%s'", what,
                     buf->format ? buf->format : "B");
        PyBuffer_Release(buf);
        return -1;
    }
    if (n >= 0 && buf->len / 8 != n) {
        PyErr_Format(PyExc_ValueError, "%s: %zd values for %zd rows", what, buf->len / 8, n);
        PyBuffer_Release(buf);
        return -1;
    }
    return 0;
}

/* Where each of the n numbers of the JSON array `text` starts; -1 if it is not one. */
static int array_starts(Column *c, PyObject *text, Py_ssize_t n)
{
    const char *s = PyBytes_AS_STRING(text);
    Py_ssize_t len = PyBytes_GET_SIZE(text);
    c->starts = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
    if (c->starts == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    c->array = s;
    if (len < 2 || s[0] != '[' || s[len - 1] != ']') {
        goto bad;
    }
    Py_ssize_t row = 0;
    c->starts[0] = 1;
    for (Py_ssize_t i = 1; i < len - 1; i++) {
        char ch = s[i];
        if (ch == ',') {
            if (++row >= n) {
                goto bad;
            }
            c->starts[row] = i + 1;
            if (i - c->starts[row - 1] > c->widest) {
                c->widest = i - c->starts[row - 1];
            }
        } else if (ch == '"' || ch == '[' || ch == '{') {
            goto bad;  /* numbers only: no comma inside a value */
        }
    }
    if (n == 0 ? len != 2 : (row != n - 1 || len == 2)) {
        goto bad;
    }
    c->starts[n] = len; /* each row's text ends one before the next start */
    if (n > 0 && len - 1 - c->starts[n - 1] > c->widest) {
        c->widest = len - 1 - c->starts[n - 1];
    }
    return 0;
bad:
    PyErr_Format(PyExc_ValueError, "a text column must be a JSON array of %zd numbers", n);
    return -1;
}

/* The values of a column, into c->base and c->itemsize: a buffer of n int64 values
 * (or, with bytes_ok, of n uint8 or bool values), or a triple (buffer, row, size):
 * row `row` of a C-contiguous buffer holding rows of n values of `size` bytes each
 * (8: int64, 1: uint8), as compact_columns keeps its columns. */
static int get_values(Column *c, PyObject *obj, Py_ssize_t n, int bytes_ok, const char *what)
{
    if (PyTuple_Check(obj)) {
        Py_ssize_t row, size;
        if (PyTuple_GET_SIZE(obj) != 3 || !PyLong_Check(PyTuple_GET_ITEM(obj, 1))
                || !PyLong_Check(PyTuple_GET_ITEM(obj, 2))) {
            PyErr_Format(PyExc_TypeError, "%s: a row of a buffer is a triple (buffer, row, "
                         "size)", what);
            return -1;
        }
        row = PyLong_AsSsize_t(PyTuple_GET_ITEM(obj, 1));
        size = PyLong_AsSsize_t(PyTuple_GET_ITEM(obj, 2));
        if (PyErr_Occurred()) {
            return -1;
        }
        if (size != 8 && !(size == 1 && bytes_ok)) {
            PyErr_Format(PyExc_ValueError, "%s: values of %zd bytes", what, size);
            return -1;
        }
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(obj, 0), &c->buf, PyBUF_C_CONTIGUOUS) < 0) {
            return -1;
        }
        c->held = 1;
        if (row < 0 || n < 0 || c->buf.len / size / (n ? n : 1) <= row) {
            PyErr_Format(PyExc_ValueError, "%s: no row %zd of %zd values in %zd bytes", what,
                         row, n, c->buf.len);
            return -1;
        }
        c->base = (const char *)c->buf.buf + row * n * size;
        c->itemsize = (int)size;
        return 0;
    }
    if (bytes_ok) {
        if (PyObject_GetBuffer(obj, &c->buf, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
            return -1;
        }
        c->held = 1;
        const char *f = c->buf.format ? c->buf.format : "B";
        if (c->buf.itemsize == 1 && (strcmp(f, "B") == 0 || strcmp(f, "?") == 0)) {
            if (c->buf.len != n) {
                PyErr_Format(PyExc_ValueError, "%s: %zd values for %zd rows", what,
                             c->buf.len, n);
                return -1;
            }
            c->base = c->buf.buf;
            c->itemsize = 1;
            return 0;
        }
        PyBuffer_Release(&c->buf);
        c->held = 0;
    }
    if (get_int64(&c->buf, obj, n, what) < 0) {
        return -1;
    }
    c->held = 1;
    c->base = c->buf.buf;
    c->itemsize = 8;
    return 0;
}

static int get_column(Column *c, PyObject *obj, Py_ssize_t n)
{
    memset(c, 0, sizeof(*c));
    if (PyBytes_Check(obj)) {
        c->kind = COL_ARRAY;
        return array_starts(c, obj, n);
    }
    if (PyTuple_Check(obj) && PyTuple_GET_SIZE(obj) == 2) {
        if (!PyTuple_Check(PyTuple_GET_ITEM(obj, 1))) {
            PyErr_SetString(PyExc_TypeError, "a text column is a pair (ids, tuple of bytes)");
            return -1;
        }
        c->kind = COL_TEXT;
        PyObject *texts = PyTuple_GET_ITEM(obj, 1);
        c->ntexts = PyTuple_GET_SIZE(texts);
        c->texts = PyMem_Malloc(sizeof(char *) * (size_t)(c->ntexts + 1));
        c->lens = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(c->ntexts + 1));
        if (c->texts == NULL || c->lens == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = 0; i < c->ntexts; i++) {
            PyObject *t = PyTuple_GET_ITEM(texts, i);
            if (!PyBytes_Check(t)) {
                PyErr_SetString(PyExc_TypeError, "the texts of a text column must be bytes");
                return -1;
            }
            c->texts[i] = PyBytes_AS_STRING(t);
            c->lens[i] = PyBytes_GET_SIZE(t);
            if (c->lens[i] > c->widest) {
                c->widest = c->lens[i];
            }
        }
        return get_values(c, PyTuple_GET_ITEM(obj, 0), n, 1, "ids");
    }
    c->kind = COL_INT;
    c->widest = 20;
    return get_values(c, obj, n, 0, "column");
}

static void free_column(Column *c)
{
    if (c->held) {
        PyBuffer_Release(&c->buf);
    }
    PyMem_Free(c->texts);
    PyMem_Free(c->lens);
    PyMem_Free(c->starts);
}

/* The templates some row uses (used[k]), parsed; the others stay empty. */
static int get_templates(Template *tpl, PyObject *templates, const char *used,
                         const Column *cols, Py_ssize_t ncols)
{
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(templates); k++) {
        if (!used[k]) {
            continue;
        }
        PyObject *items = PyTuple_GET_ITEM(templates, k);
        if (!PyTuple_Check(items)) {
            PyErr_SetString(PyExc_TypeError, "a template is a tuple of bytes and column indices");
            return -1;
        }
        Py_ssize_t m = PyTuple_GET_SIZE(items);
        tpl[k].pieces = PyMem_Malloc(sizeof(Piece) * (size_t)(m + 1));
        if (tpl[k].pieces == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        tpl[k].npieces = m;
        tpl[k].widest = 0;
        for (Py_ssize_t i = 0; i < m; i++) {
            PyObject *item = PyTuple_GET_ITEM(items, i);
            Piece *p = &tpl[k].pieces[i];
            if (PyBytes_Check(item)) {
                p->text = PyBytes_AS_STRING(item);
                p->len = PyBytes_GET_SIZE(item);
                p->col = -1;
                tpl[k].widest += p->len;
            } else if (PyLong_Check(item)) {
                p->text = NULL;
                p->len = 0;
                p->col = PyLong_AsSsize_t(item);
                if (p->col == -1 && PyErr_Occurred()) {
                    return -1;
                }
                if (p->col < 0 || p->col >= ncols) {
                    PyErr_Format(PyExc_ValueError, "template %zd names column %zd of %zd", k,
                                 p->col, ncols);
                    return -1;
                }
                tpl[k].widest += cols[p->col].widest;
            } else {
                PyErr_SetString(PyExc_TypeError, "a template is a tuple of bytes and column indices");
                return -1;
            }
        }
    }
    return 0;
}

/* Rows from which lines() writes without the GIL (for fewer, handing it over and
 * taking it back costs more than it lets another thread do). */
#define RELEASE_ROWS 4096

/* Why write_rows stopped early. */
enum { WR_OK = 0, WR_MEMORY = 1, WR_SHAPE = 2, WR_ID = 3, WR_OTHERS = 4 };

/* The lines of rows 0..n-1 into out; WR_OK, or why not (the row in *at).  Runs
 * without the GIL: every index is checked here, as it is read. */
static int write_rows(Out *out, const char *prefix, Py_ssize_t prefix_len,
                      const int64_t *shape, Py_ssize_t n, const Template *tpl,
                      Py_ssize_t ntpl, const Column *cols, const char **other,
                      const Py_ssize_t *other_len, Py_ssize_t nothers, Py_ssize_t *at)
{
    Py_ssize_t next_other = 0;
    for (Py_ssize_t r = 0; r < n; r++) {
        *at = r;
        if (shape[r] < -1 || shape[r] >= ntpl) {
            return WR_SHAPE;
        }
        if (shape[r] == -1) {
            if (next_other >= nothers) {
                return WR_OTHERS;
            }
            if (reserve(out, (size_t)other_len[next_other] + 1) < 0) {
                return WR_MEMORY;
            }
            memcpy(out->data + out->len, other[next_other], (size_t)other_len[next_other]);
            out->len += (size_t)other_len[next_other];
            out->data[out->len++] = '\n';
            next_other++;
            continue;
        }
        const Template *t = &tpl[shape[r]];
        if (reserve(out, (size_t)(prefix_len + t->widest)) < 0) {
            return WR_MEMORY;
        }
        char *w = out->data + out->len;
        memcpy(w, prefix, (size_t)prefix_len);
        w += prefix_len;
        for (Py_ssize_t i = 0; i < t->npieces; i++) {
            const Piece *p = &t->pieces[i];
            if (p->text != NULL) {
                memcpy(w, p->text, (size_t)p->len);
                w += p->len;
                continue;
            }
            const Column *c = &cols[p->col];
            if (c->kind == COL_INT) {
                int64_t v;
                memcpy(&v, c->base + 8 * r, 8);
                w += int_text(w, v);
                continue;
            }
            const char *s;
            size_t len;
            if (c->kind == COL_TEXT) {
                int64_t id;
                if (c->itemsize == 1) {
                    id = ((const uint8_t *)c->base)[r];
                } else {
                    memcpy(&id, c->base + 8 * r, 8);
                }
                if (id < 0 || id >= c->ntexts) {
                    return WR_ID;
                }
                s = c->texts[id];
                len = (size_t)c->lens[id];
            } else {
                s = c->array + c->starts[r];
                len = (size_t)(c->starts[r + 1] - 1 - c->starts[r]);
            }
            memcpy(w, s, len);
            w += len;
        }
        out->len = (size_t)(w - out->data);
    }
    *at = n;
    return next_other == nothers ? WR_OK : WR_OTHERS;
}

PyDoc_STRVAR(lines_doc,
"lines(prefix, templates, shape, columns, others, /) -> bytes\n\n"
"The lines of the rows: row r written as prefix (bytes), then by templates[shape[r]] (a\n"
"tuple of bytes, written as they are, and indices into columns, written as the row's\n"
"value), or, where shape[r] is -1, as the next line of others followed by a newline.\n"
"shape is an int64 buffer; columns a tuple of int64 buffers (decimal), pairs (ids, tuple\n"
"of bytes; ids int64, uint8 or bool) and bytes (a JSON array of one number per row, each\n"
"number's text kept); see the file's comment.");

static PyObject *lines(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyBytes_Check(args[0]) || !PyTuple_Check(args[1])
            || !PyTuple_Check(args[3]) || !PyTuple_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "lines(prefix: bytes, templates: tuple, shape, "
                        "columns: tuple, others: tuple)");
        return NULL;
    }
    PyObject *prefix = args[0], *templates = args[1], *columns = args[3], *others = args[4];
    Py_ssize_t ntpl = PyTuple_GET_SIZE(templates), ncols = PyTuple_GET_SIZE(columns);
    Py_ssize_t nothers = PyTuple_GET_SIZE(others);
    PyObject *result = NULL;
    Py_buffer shape_buf;
    int shape_held = 0;
    Template *tpl = PyMem_Calloc((size_t)ntpl + 1, sizeof(Template));
    char *used = NULL;
    Column *cols = PyMem_Calloc((size_t)ncols + 1, sizeof(Column));
    const char **other = PyMem_Malloc(sizeof(char *) * (size_t)(nothers + 1));
    Py_ssize_t *other_len = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(nothers + 1));
    Out out = {NULL, 0, 0};
    if (tpl == NULL || cols == NULL || other == NULL || other_len == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (get_int64(&shape_buf, args[2], -1, "shape") < 0) {
        goto done;
    }
    shape_held = 1;
    const int64_t *shape = shape_buf.buf;
    Py_ssize_t n = shape_buf.len / 8;
    for (Py_ssize_t i = 0; i < nothers; i++) {
        PyObject *line = PyTuple_GET_ITEM(others, i);
        if (!PyBytes_Check(line)) {
            PyErr_SetString(PyExc_TypeError, "the lines of other rows must be bytes");
            goto done;
        }
        other[i] = PyBytes_AS_STRING(line);
        other_len[i] = PyBytes_GET_SIZE(line);
    }
    for (Py_ssize_t i = 0; i < ncols; i++) {
        if (get_column(&cols[i], PyTuple_GET_ITEM(columns, i), n) < 0) {
            goto done;
        }
    }
    used = PyMem_Calloc((size_t)ntpl + 1, 1);
    if (used == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t r = 0; r < n; r++) {  /* out of range: write_rows says which row */
        if (shape[r] >= 0 && shape[r] < ntpl) {
            used[shape[r]] = 1;
        }
    }
    if (get_templates(tpl, templates, used, cols, ncols) < 0) {
        goto done;
    }
    if (reserve(&out, (size_t)n * 100) < 0) {  /* a ring's line is about 120 bytes */
        PyErr_NoMemory();
        goto done;
    }
    int why;
    Py_ssize_t at = 0;
    if (n < RELEASE_ROWS) {
        why = write_rows(&out, PyBytes_AS_STRING(prefix), PyBytes_GET_SIZE(prefix), shape, n,
                         tpl, ntpl, cols, other, other_len, nothers, &at);
    } else {
        Py_BEGIN_ALLOW_THREADS
        why = write_rows(&out, PyBytes_AS_STRING(prefix), PyBytes_GET_SIZE(prefix), shape, n,
                         tpl, ntpl, cols, other, other_len, nothers, &at);
        Py_END_ALLOW_THREADS
    }
    switch (why) {
    case WR_OK: break;
    case WR_MEMORY: PyErr_NoMemory(); goto done;
    case WR_SHAPE:
        PyErr_Format(PyExc_ValueError, "row %zd: no template %lld (%zd templates)", at,
                     (long long)shape[at], ntpl);
        goto done;
    case WR_ID: PyErr_Format(PyExc_ValueError, "row %zd: an id has no text", at); goto done;
    default:
        PyErr_Format(PyExc_ValueError, "%zd lines of other rows do not match the rows of "
                     "template -1 (%zd rows read)", nothers, at);
        goto done;
    }
    result = PyBytes_FromStringAndSize(out.data ? out.data : "", (Py_ssize_t)out.len);
done:
    free(out.data);
    if (shape_held) {
        PyBuffer_Release(&shape_buf);
    }
    if (tpl != NULL) {
        for (Py_ssize_t k = 0; k < ntpl; k++) {
            PyMem_Free(tpl[k].pieces);
        }
    }
    if (cols != NULL) {
        for (Py_ssize_t i = 0; i < ncols; i++) {
            free_column(&cols[i]);
        }
    }
    PyMem_Free(tpl);
    PyMem_Free(used);
    PyMem_Free(cols);
    PyMem_Free(other);
    PyMem_Free(other_len);
    return result;
}

/* ---- expand(): a batch's 64-byte records as columns -------------------- */

/* One record of a COMPACT batch (mpvis.protocol.compact.RECORD, little-endian). */
typedef struct {
    uint8_t kind, flags;
    uint16_t zero;
    uint32_t site;
    int64_t seq;
    double t;
    int64_t comm;
    int32_t a, b;
    int64_t c, d, call;
} Rec;

/* Row shapes: compact_columns._SHAPES' order (a row's template is 2 * shape + has call). */
enum { S_SEND_B, S_SEND_NB, S_RECV_B, S_RECV_NB, S_CONS, S_MCONS_SEND, S_CONS_NOSEND, S_FINAL };
/* The int64 columns, in the order expand() returns them; then the uint8 ones. */
enum { I_SEQ, I_SITE, I_COMM, I_PEER, I_TAG, I_REF, I_SSEQ, I_CALL, I_SHAPE, N_INT };
enum { B_KIND, B_BLOCKING, B_SYNC, B_REQ, N_BOOL };
#define SEQ_MAX ((int64_t)1 << 62)

typedef struct {
    int64_t *i;    /* N_INT columns of `rows` values */
    double *t;
    uint8_t *b;    /* N_BOOL columns */
    Py_ssize_t rows;
    int64_t nprocs;
} Cols;

/* Write row r; 0 if it breaks a rule (compact_columns._rules_hold's). */
static int put_row(const Cols *c, Py_ssize_t r, int kind, int flags, int64_t seq, double t,
                   int64_t site, int64_t call, int64_t comm, int64_t peer, int64_t tag,
                   int64_t ref, int64_t sseq, int tail)
{
    Py_ssize_t n = c->rows;
    int is_send = kind == MVK_SEND, is_recv = kind == MVK_RECV, is_cons = kind == MVK_CONSUME;
    int blocking = (flags & MVC_BLOCKING) != 0;
    int has_send = is_cons && (flags & MVC_SEND);
    int shape = S_FINAL;
    if (is_send) {
        shape = blocking ? S_SEND_B : S_SEND_NB;
    } else if (is_recv) {
        shape = blocking ? S_RECV_B : S_RECV_NB;
    } else if (is_cons) {
        shape = !has_send ? S_CONS_NOSEND : tail ? S_MCONS_SEND : S_CONS;
    }
    int other = kind == MVK_WAIT || kind == MVK_COLL || kind == MVK_COLL_EXIT
        || kind == MVK_STATE;
    c->i[I_SEQ * n + r] = seq;
    c->i[I_SITE * n + r] = site;
    c->i[I_COMM * n + r] = comm;
    c->i[I_PEER * n + r] = peer;
    c->i[I_TAG * n + r] = tag;
    c->i[I_REF * n + r] = ref;
    c->i[I_SSEQ * n + r] = has_send ? sseq : -1;
    c->i[I_CALL * n + r] = call;
    c->i[I_SHAPE * n + r] = other ? -1 : 2 * shape + (call >= 0);
    c->t[r] = t;
    c->b[B_KIND * n + r] = (uint8_t)kind;
    c->b[B_BLOCKING * n + r] = (uint8_t)blocking;
    c->b[B_SYNC * n + r] = (flags & MVC_SYNC) != 0;
    c->b[B_REQ * n + r] = (is_send || is_recv) && !blocking;
    if (is_send || is_recv || is_cons) {
        int64_t low = is_recv ? -1 : 0;  /* a receive's src and tag may be wildcards */
        if (comm < 0 || peer < low || peer >= c->nprocs || tag < low) {
            return 0;
        }
        if (is_cons && (ref < 0 || (has_send && sseq < 0))) {
            return 0;
        }
    }
    return 1;
}

PyDoc_STRVAR(expand_doc,
"expand(recs, nprocs, nsites, /) -> (rows, ints, t, flags, others, final) | None\n\n"
"The records of a COMPACT batch (recs: 64-byte records) as columns, a merged receive\n"
"(kind 9) as its two rows, or None if the batch is not taken whole: an unknown kind, a\n"
"buffer send or a channel consume, a site id from nsites on, a row breaking a\n"
"per-record rule, seq values that do not follow one another or leave [0, 2**62].\n"
"ints: int64 columns seq, site, comm, peer, tag, ref, sseq, call, shape (one after the\n"
"other, rows values each); t: float64; flags: uint8 columns kind, blocking, sync, req;\n"
"others: how many rows are waits, collectives or states; final: whether one is a final.\n"
"See compact_columns._expanded, which this is.");

static PyObject *expand(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyBytes_Check(args[0]) || !PyLong_Check(args[1])
            || !PyLong_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "expand(recs: bytes, nprocs: int, nsites: int)");
        return NULL;
    }
    const char *raw = PyBytes_AS_STRING(args[0]);
    Py_ssize_t size = PyBytes_GET_SIZE(args[0]);
    int64_t nprocs = PyLong_AsLongLong(args[1]);
    int64_t nsites = PyLong_AsLongLong(args[2]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (size == 0 || size % (Py_ssize_t)sizeof(Rec)) {
        Py_RETURN_NONE;
    }
    Py_ssize_t n = size / (Py_ssize_t)sizeof(Rec), rows = n;
    for (Py_ssize_t k = 0; k < n; k++) {
        Rec rec;
        memcpy(&rec, raw + k * (Py_ssize_t)sizeof(Rec), sizeof rec);
        int known = rec.kind >= MVK_SEND && rec.kind <= MVK_RECV_CONSUME;
        if (!known || (rec.flags & (MVC_BUF | MVC_CHAN)) || (int64_t)rec.site >= nsites) {
            Py_RETURN_NONE;
        }
        rows += rec.kind == MVK_RECV_CONSUME;
    }
    PyObject *ints = PyByteArray_FromStringAndSize(NULL, rows * N_INT * 8);
    PyObject *ts = PyByteArray_FromStringAndSize(NULL, rows * 8);
    PyObject *bools = PyByteArray_FromStringAndSize(NULL, rows * N_BOOL);
    if (ints == NULL || ts == NULL || bools == NULL) {
        goto fail;
    }
    Cols c = {(int64_t *)(void *)PyByteArray_AS_STRING(ints),
              (double *)(void *)PyByteArray_AS_STRING(ts),
              (uint8_t *)PyByteArray_AS_STRING(bools), rows, nprocs};
    int ok = 1, has_final = 0;
    Py_ssize_t r = 0, others = 0;
    for (Py_ssize_t k = 0; k < n && ok; k++) {
        Rec m;
        memcpy(&m, raw + k * (Py_ssize_t)sizeof(Rec), sizeof m);
        others += m.kind == MVK_WAIT || m.kind == MVK_COLL || m.kind == MVK_COLL_EXIT
            || m.kind == MVK_STATE;
        has_final |= m.kind == MVK_FINAL;
        if (m.kind != MVK_RECV_CONSUME) {
            ok = put_row(&c, r++, m.kind, m.flags, m.seq, m.t, m.site, m.call, m.comm, m.a,
                         m.b, m.c, m.d, 0);
            continue;
        }
        /* the receive at seq, then its consume at seq + 1, (comm >> 32) ns later;
         * comm's low 32 bits are the communicator, c packs the src (low) and tag (high) */
        int64_t comm = (int32_t)(uint32_t)((uint64_t)m.comm & 0xFFFFFFFFu);
        double late = (double)(((uint64_t)m.comm >> 32) & 0xFFFFFFFFu) * 1e-9;
        ok = put_row(&c, r++, MVK_RECV, MVC_BLOCKING, m.seq, m.t, m.site, m.call, comm, m.a,
                     m.b, m.c, m.d, 0)
            && m.seq < SEQ_MAX
            && put_row(&c, r++, MVK_CONSUME, m.flags, m.seq + 1, m.t + late, m.site, m.call,
                       comm, (int32_t)(uint32_t)((uint64_t)m.c & 0xFFFFFFFFu), m.c >> 32,
                       m.seq, m.d, 1);
    }
    const int64_t *seq = c.i + I_SEQ * rows;
    ok = ok && seq[0] >= 0 && seq[rows - 1] <= SEQ_MAX;
    for (Py_ssize_t k = 1; k < rows && ok; k++) {
        ok = seq[k - 1] < SEQ_MAX && seq[k] == seq[k - 1] + 1;  /* no overflow */
    }
    if (!ok) {
        Py_DECREF(ints);
        Py_DECREF(ts);
        Py_DECREF(bools);
        Py_RETURN_NONE;
    }
    return Py_BuildValue("nNNNnO", rows, ints, ts, bools, others,
                         has_final ? Py_True : Py_False);
fail:
    Py_XDECREF(ints);
    Py_XDECREF(ts);
    Py_XDECREF(bools);
    return NULL;
}

#define FASTCALL(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL

static PyMethodDef methods[] = {
    {"lines", FASTCALL(lines), lines_doc},
    {"expand", FASTCALL(expand), expand_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_cjournal",
    "A compact batch's journal lines from its columns (see compact_columns.py).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__cjournal(void)
{
    return PyModule_Create(&module);
}
