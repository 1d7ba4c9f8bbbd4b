/* mpvis.analysis._cjson: the JSON text of a race table's rows, in C.
 *
 * race_rows(columns, text, lo, hi) -> bytes gives rows lo..hi-1 of a
 * RaceTable (mpvis/analysis/race_table.py) as the report's JSON entries
 * joined by commas: exactly the bytes orjson gives for the entries'
 * dicts, i.e. the bytes of RaceTable._json_rows' templates, which this
 * file replaces (issue 16: 330,000 entries of a 1M-event trace took 0.5 s
 * formatted one Python bytes template at a time).  The shapes and key
 * orders are the module docstring's of race_table.py:
 *
 *   exact:      {"method":"exact","rank":R,"recvs":[A],"messages":[[r,s],[r,s]],
 *                "verdict":V[,"suppressed":true][,"group":G]}
 *   classifier: {"method":"classifier","scope":S,"rank":R,"recvs":[A,B],
 *                "situation":N|null,"messages":[[r,s]|null,[r,s]|null],
 *                "verdict":V,"comm":C|null,"consumption":U,"sites":[X,Y]
 *                [,"confirmed":false|true][,"suppressed":true][,"group":G]}
 *
 * Inputs: columns, a sequence of the table's 18 columns in COLUMNS order
 * (one-dimensional buffers of signed integers of 1, 2, 4 or 8 bytes, any
 * stride; NONE = INT64_MIN is an integer column's null); text, a list of
 * bytes where text[id + 1] is the JSON of string id (text[0] is null);
 * 0 <= lo <= hi <= every column's length.  Everything is checked: rows
 * outside a column, a column of another type, a string id outside the list,
 * a confirmed other than -1, 0, 1 raise ValueError or TypeError, never a
 * read out of bounds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef int64_t i64;

#define NCOLS 18
/* Column positions (race_table.COLUMNS). */
enum { EXACT, SCOPE, RANK, RECV1, RECV2, SITUATION, M1R, M1S, M2R, M2S, VERDICT, COMM,
       CONSUMPTION, SITE1, SITE2, CONFIRMED, SUPPRESSED, GROUP };
#define NONE INT64_MIN

typedef struct {
    Py_buffer view;
    int held;
} column;

/* The longest row, string texts aside: the templates' literal text (under 250
 * bytes) and 13 integers of at most 20 characters. */
#define ROW_FIXED 600

typedef struct {
    char *data;
    Py_ssize_t len, cap;
} out_buf;

static int reserve(out_buf *o, Py_ssize_t more) {
    if (more > PY_SSIZE_T_MAX - o->len) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t need = o->len + more;
    if (need <= o->cap)
        return 0;
    Py_ssize_t cap = o->cap ? o->cap : 1 << 16;
    while (cap < need)
        cap = cap > PY_SSIZE_T_MAX / 2 ? need : cap * 2;
    char *data = PyMem_Realloc(o->data, (size_t)cap);
    if (!data) {
        PyErr_NoMemory();
        return -1;
    }
    o->data = data;
    o->cap = cap;
    return 0;
}

/* Writers below assume reserve() made room (ROW_FIXED plus the strings). */
static inline char *put(char *p, const char *s, size_t n) {
    memcpy(p, s, n);
    return p + n;
}
#define PUT(p, lit) put((p), (lit), sizeof(lit) - 1)

static char *put_int(char *p, i64 v) {
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v; /* INT64_MIN too */
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *p++ = '-';
    while (n)
        *p++ = tmp[--n];
    return p;
}

static inline i64 value(const column *c, Py_ssize_t i) {
    const char *at = (const char *)c->view.buf + i * c->view.strides[0];
    switch (c->view.itemsize) {
    case 1: { int8_t x; memcpy(&x, at, 1); return x; }
    case 2: { int16_t x; memcpy(&x, at, 2); return x; }
    case 4: { int32_t x; memcpy(&x, at, 4); return x; }
    default: { int64_t x; memcpy(&x, at, 8); return x; }
    }
}

/* The JSON text of string id ``id`` (text[id + 1]), or NULL with an error set. */
static PyObject *string_of(PyObject *text, i64 id) {
    if (id < -1 || id + 1 >= (i64)PyList_GET_SIZE(text)) {
        PyErr_Format(PyExc_ValueError, "race table: string id %lld outside the table", (long long)id);
        return NULL;
    }
    PyObject *s = PyList_GET_ITEM(text, (Py_ssize_t)(id + 1));
    if (!PyBytes_Check(s)) {
        PyErr_SetString(PyExc_TypeError, "race table: a string's JSON text must be bytes");
        return NULL;
    }
    return s;
}

static int open_column(PyObject *obj, column *c, Py_ssize_t hi, int k) {
    if (PyObject_GetBuffer(obj, &c->view, PyBUF_STRIDES | PyBUF_FORMAT) < 0)
        return -1;
    c->held = 1;
    const char *f = c->view.format ? c->view.format : "B";
    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    Py_ssize_t size = c->view.itemsize;
    int ok = c->view.ndim == 1 && f[0] && !f[1] && strchr("bhilq", f[0]) != NULL
             && (size == 1 || size == 2 || size == 4 || size == 8);
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "race table: column %d is not one-dimensional signed integers",
                     k);
        return -1;
    }
    if (c->view.shape[0] < hi) {
        PyErr_Format(PyExc_ValueError, "race table: column %d has %zd rows, %zd asked for", k,
                     c->view.shape[0], hi);
        return -1;
    }
    return 0;
}

static PyObject *race_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *columns, *text;
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "OO!nn:race_rows", &columns, &PyList_Type, &text, &lo, &hi))
        return NULL;
    PyObject *seq = PySequence_Fast(columns, "race_rows: columns must be a sequence");
    if (!seq)
        return NULL;
    if (PySequence_Fast_GET_SIZE(seq) != NCOLS) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError, "race_rows: %d columns expected", NCOLS);
    }
    column cols[NCOLS];
    memset(cols, 0, sizeof cols);
    out_buf o = {NULL, 0, 0};
    PyObject *result = NULL;
    if (lo < 0 || hi < lo) {
        PyErr_Format(PyExc_ValueError, "race_rows: rows %zd..%zd", lo, hi);
        goto done;
    }
    for (int k = 0; k < NCOLS; k++)
        if (open_column(PySequence_Fast_GET_ITEM(seq, k), &cols[k], hi, k) < 0)
            goto done;
    for (Py_ssize_t i = lo; i < hi; i++) {
        i64 exact = value(&cols[EXACT], i);
        i64 conf = exact ? -1 : value(&cols[CONFIRMED], i);
        if (conf < -1 || conf > 1) {
            PyErr_Format(PyExc_ValueError, "race table: confirmed %lld is not -1, 0 or 1",
                         (long long)conf);
            goto done;
        }
        PyObject *str[5];
        int nstr = exact ? 1 : 5;
        static const int string_cols[5] = {VERDICT, SCOPE, CONSUMPTION, SITE1, SITE2};
        Py_ssize_t extra = 0;
        for (int k = 0; k < nstr; k++) {
            str[k] = string_of(text, value(&cols[string_cols[k]], i));
            if (!str[k])
                goto done;
            extra += PyBytes_GET_SIZE(str[k]);
        }
        if (reserve(&o, ROW_FIXED + extra) < 0)
            goto done;
        char *p = o.data + o.len;
        if (i > lo)
            *p++ = ',';
#define STR(k) put(p, PyBytes_AS_STRING(str[k]), (size_t)PyBytes_GET_SIZE(str[k]))
        if (exact) {
            p = PUT(p, "{\"method\":\"exact\",\"rank\":");
            p = put_int(p, value(&cols[RANK], i));
            p = PUT(p, ",\"recvs\":[");
            p = put_int(p, value(&cols[RECV1], i));
            p = PUT(p, "],\"messages\":[[");
            p = put_int(p, value(&cols[M1R], i));
            *p++ = ',';
            p = put_int(p, value(&cols[M1S], i));
            p = PUT(p, "],[");
            p = put_int(p, value(&cols[M2R], i));
            *p++ = ',';
            p = put_int(p, value(&cols[M2S], i));
            p = PUT(p, "]],\"verdict\":");
            p = STR(0);
        } else {
            p = PUT(p, "{\"method\":\"classifier\",\"scope\":");
            p = STR(1);
            p = PUT(p, ",\"rank\":");
            p = put_int(p, value(&cols[RANK], i));
            p = PUT(p, ",\"recvs\":[");
            p = put_int(p, value(&cols[RECV1], i));
            *p++ = ',';
            p = put_int(p, value(&cols[RECV2], i));
            p = PUT(p, "],\"situation\":");
            i64 v = value(&cols[SITUATION], i);
            p = v == NONE ? PUT(p, "null") : put_int(p, v);
            p = PUT(p, ",\"messages\":[");
            for (int m = 0; m < 2; m++) {
                i64 r = value(&cols[m ? M2R : M1R], i);
                if (m)
                    *p++ = ',';
                if (r == NONE) {
                    p = PUT(p, "null");
                    continue;
                }
                *p++ = '[';
                p = put_int(p, r);
                *p++ = ',';
                p = put_int(p, value(&cols[m ? M2S : M1S], i));
                *p++ = ']';
            }
            p = PUT(p, "],\"verdict\":");
            p = STR(0);
            p = PUT(p, ",\"comm\":");
            v = value(&cols[COMM], i);
            p = v == NONE ? PUT(p, "null") : put_int(p, v);
            p = PUT(p, ",\"consumption\":");
            p = STR(2);
            p = PUT(p, ",\"sites\":[");
            p = STR(3);
            *p++ = ',';
            p = STR(4);
            *p++ = ']';
            if (conf == 0)
                p = PUT(p, ",\"confirmed\":false");
            else if (conf == 1)
                p = PUT(p, ",\"confirmed\":true");
        }
#undef STR
        if (value(&cols[SUPPRESSED], i))
            p = PUT(p, ",\"suppressed\":true");
        i64 group = value(&cols[GROUP], i);
        if (group >= 0) {
            p = PUT(p, ",\"group\":");
            p = put_int(p, group);
        }
        *p++ = '}';
        o.len = p - o.data;
    }
    result = PyBytes_FromStringAndSize(o.data ? o.data : "", o.len);
done:
    for (int k = 0; k < NCOLS; k++)
        if (cols[k].held)
            PyBuffer_Release(&cols[k].view);
    PyMem_Free(o.data);
    Py_DECREF(seq);
    return result;
}

static PyMethodDef methods[] = {
    {"race_rows", race_rows, METH_VARARGS,
     "race_rows(columns, text, lo, hi) -> bytes: rows lo..hi-1 of a race table as JSON "
     "entries joined by commas (see race_table.RaceTable.json_chunks)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_cjson", "The JSON text of a race table's rows (see race_table.py).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__cjson(void) { return PyModule_Create(&module); }
