/* The zoomed-out view's sorted columns and the grid made from them, in C.
 *
 * mpvis.scene.density_index keeps, per rank and activity, the sorted x of its
 * events (or of its intervals' begins and ends, with their prefix sums), and
 * makes each frame's grid with binary searches along the column edges.  Done
 * with NumPy those were about 15 calls per rank for a grid and about 10 per
 * rank for each update: at 256 ranks, 51 ms of the GUI thread for a redraw
 * and 30 ms for taking in a second of a loading 10M-event trace, most of it
 * call overhead.  Here a `Columns` object holds the columns; one call adds a
 * batch of values to all of them, one fills a grid.  Each does the same
 * floating-point operations in the same order as the NumPy code it replaced
 * (same grids to the bit).
 *
 * Columns(ncols, sums): ncols sorted columns of float64 (sums: with prefix
 *   sums, sums[i] the sum of the first i values);
 *   .add(keys, values): values[i] (float64, not NaN) into column keys[i]
 *     (int64): each column's new values, sorted, are appended (a column whose
 *     new values start below its last re-sorts); the prefix sums from the
 *     first changed value on are sums[first] + the running sum of the values
 *     from there;
 *   .size(i), .column(i) -> (values bytes, sums bytes or None), .trim() (no
 *     room left for growth), .nbytes();
 *   .counts(edges, per_row, out): out (len(out), len(edges) - 1) int64 +=
 *     events of column c in row c // per_row with edges[j] <= x < edges[j + 1],
 *     the last bin closed.
 * fill(points, begins, ends, row_of_rank, point_acts, span_acts, edges, scale,
 *      cover_eps, events, shares): the grid of DensityIndex.grid; rank r's
 *   point columns are r * len(point_acts) + a, its span columns (begins and
 *   ends) r * len(span_acts) + a; row_of_rank[r] < 0: not shown; events
 *   (nrows, width) int64 += counts, shares (nrows, width, activities)
 *   float64 += counts (points) or covered shares (spans: below cover_eps,
 *   none).
 * Bad arguments (types, shapes, keys, rows or activities out of range): a
 * TypeError or ValueError, nothing written.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ buffers */

typedef struct {
    Py_buffer view;
    int held;
} Buf;

/* A C-contiguous buffer of `fmt` ("d" float64, "q" int64) and `ndim` dimensions. */
static int get_buf(PyObject *obj, Buf *b, const char *fmt, int ndim, int writable,
                   const char *what)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &b->view, flags) < 0) {
        return -1;
    }
    b->held = 1;
    const char *f = b->view.format ? b->view.format : "B";
    if (f[0] == '<' || f[0] == '=' || f[0] == '@') {
        f++;
    }
    int same = strcmp(f, fmt) == 0 || (fmt[0] == 'q' && strcmp(f, "l") == 0 && sizeof(long) == 8);
    if (!same) {
        PyErr_Format(PyExc_TypeError, "%s: expected format '%s', got '%s'", what, fmt, f);
        return -1;
    }
    if (b->view.ndim != ndim) {
        PyErr_Format(PyExc_ValueError, "%s: expected %d dimensions, got %d", what, ndim,
                     b->view.ndim);
        return -1;
    }
    return 0;
}

static void drop(Buf *b)
{
    if (b->held) {
        PyBuffer_Release(&b->view);
        b->held = 0;
    }
}

static Py_ssize_t count_of(const Buf *b)
{
    return b->view.len / b->view.itemsize;
}

/* ------------------------------------------------------------ searches */

/* How many of v[0..n) are < t, given that those below `lo` are (t not below
 * the last t asked): a gallop from lo, then a bisection.  A NaN t counts every
 * value, as NumPy sorts NaN last. */
static Py_ssize_t below_from(const double *v, Py_ssize_t n, Py_ssize_t lo, double t)
{
    if (isnan(t)) {
        return n;
    }
    if (lo >= n || !(v[lo] < t)) {
        return lo;
    }
    Py_ssize_t good = lo, step = 1, hi = lo + 1; /* v[good] < t */
    while (hi < n && v[hi] < t) {
        good = hi;
        step *= 2;
        hi = good + step;
    }
    if (hi > n) {
        hi = n;
    }
    Py_ssize_t a = good + 1, b = hi; /* the answer is in [a, b] */
    while (a < b) {
        Py_ssize_t m = a + (b - a) / 2;
        if (v[m] < t) {
            a = m + 1;
        } else {
            b = m;
        }
    }
    return a;
}

/* How many of v[0..n) are <= t (from lo on, as below_from). */
static Py_ssize_t upto_from(const double *v, Py_ssize_t n, Py_ssize_t lo, double t)
{
    Py_ssize_t k = below_from(v, n, lo, t);
    while (k < n && v[k] == t) {
        k++;
    }
    return k;
}

/* ------------------------------------------------------------ columns */

typedef struct {
    double *v, *s; /* values; prefix sums (n + 1 of them) or NULL */
    Py_ssize_t n, cap;
} Col;

typedef struct {
    PyObject_HEAD
    Py_ssize_t ncols;
    int sums;
    Col *cols;
} Columns;

static PyTypeObject ColumnsType;

static int columns_init(Columns *self, PyObject *args, PyObject *kw)
{
    Py_ssize_t ncols;
    int sums;
    static char *names[] = {"ncols", "sums", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "np:Columns", names, &ncols, &sums)) {
        return -1;
    }
    if (self->cols != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Columns are made once");
        return -1;
    }
    if (ncols < 0) {
        PyErr_SetString(PyExc_ValueError, "ncols must be >= 0");
        return -1;
    }
    self->cols = PyMem_RawCalloc((size_t)(ncols ? ncols : 1), sizeof(Col));
    if (self->cols == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    self->ncols = ncols;
    self->sums = sums;
    return 0;
}

static void columns_dealloc(Columns *self)
{
    for (Py_ssize_t i = 0; self->cols != NULL && i < self->ncols; i++) {
        PyMem_RawFree(self->cols[i].v);
        PyMem_RawFree(self->cols[i].s);
    }
    PyMem_RawFree(self->cols);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Room for `need` values (by a quarter more, as the NumPy columns grew). */
static int col_reserve(Col *c, Py_ssize_t need, int sums)
{
    if (need <= c->cap && (!sums || c->s != NULL)) {
        return 0;
    }
    Py_ssize_t cap = c->cap + c->cap / 4;
    if (cap < need) {
        cap = need;
    }
    if (cap < 16) {
        cap = 16;
    }
    double *v = PyMem_RawRealloc(c->v, (size_t)cap * sizeof(double));
    if (v == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    c->v = v;
    if (sums) {
        int fresh = c->s == NULL;
        double *s = PyMem_RawRealloc(c->s, (size_t)(cap + 1) * sizeof(double));
        if (s == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        if (fresh) {
            s[0] = 0.0;
        }
        c->s = s;
    }
    c->cap = cap;
    return 0;
}

/* Append k values (sorted here) to c, as the module docstring says. */
static int col_add(Col *c, double *new, Py_ssize_t k, int sums)
{
    qsort(new, (size_t)k, sizeof(double), cmp_double);
    Py_ssize_t n = c->n;
    if (col_reserve(c, n + k, sums) < 0) {
        return -1;
    }
    int in_order = n == 0 || new[0] >= c->v[n - 1];
    memcpy(c->v + n, new, (size_t)k * sizeof(double));
    c->n = n + k;
    Py_ssize_t first = n;
    if (!in_order) { /* a clock went back: re-sort the column */
        qsort(c->v, (size_t)c->n, sizeof(double), cmp_double);
        first = 0;
    }
    if (sums) {
        double base = c->s[first], acc = 0.0;
        for (Py_ssize_t i = first; i < c->n; i++) {
            acc += c->v[i];
            c->s[i + 1] = base + acc;
        }
    }
    return 0;
}

static PyObject *columns_add(Columns *self, PyObject *args)
{
    PyObject *keys_obj, *values_obj;
    if (!PyArg_ParseTuple(args, "OO:add", &keys_obj, &values_obj)) {
        return NULL;
    }
    Buf keys = {0}, values = {0};
    PyObject *result = NULL;
    Py_ssize_t *start = NULL;
    double *grouped = NULL;
    if (get_buf(keys_obj, &keys, "q", 1, 0, "keys") < 0
        || get_buf(values_obj, &values, "d", 1, 0, "values") < 0) {
        goto done;
    }
    Py_ssize_t k = count_of(&keys);
    const int64_t *key = keys.view.buf;
    const double *val = values.view.buf;
    if (count_of(&values) != k) {
        PyErr_SetString(PyExc_ValueError, "keys and values differ in length");
        goto done;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        if (key[i] < 0 || key[i] >= self->ncols) {
            PyErr_Format(PyExc_ValueError, "key %lld out of range", (long long)key[i]);
            goto done;
        }
        if (isnan(val[i])) {
            PyErr_SetString(PyExc_ValueError, "a value is NaN");
            goto done;
        }
    }
    /* a counting sort of the values by column, in their order */
    start = PyMem_RawCalloc((size_t)self->ncols + 1, sizeof(Py_ssize_t));
    grouped = PyMem_RawMalloc((size_t)(k ? k : 1) * sizeof(double));
    if (start == NULL || grouped == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        start[key[i] + 1]++;
    }
    for (Py_ssize_t c = 0; c < self->ncols; c++) {
        start[c + 1] += start[c];
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        grouped[start[key[i]]++] = val[i];
    }
    /* start[c] is now the end of column c's group, start[c - 1] its beginning */
    Py_ssize_t lo = 0;
    for (Py_ssize_t c = 0; c < self->ncols; c++) {
        Py_ssize_t hi = start[c];
        if (hi > lo && col_add(&self->cols[c], grouped + lo, hi - lo, self->sums) < 0) {
            goto done;
        }
        lo = hi;
    }
    result = Py_NewRef(Py_None);
done:
    PyMem_RawFree(start);
    PyMem_RawFree(grouped);
    drop(&keys);
    drop(&values);
    return result;
}

static int col_index(const Columns *self, PyObject *arg, Py_ssize_t *i)
{
    *i = PyLong_AsSsize_t(arg);
    if (*i == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (*i < 0 || *i >= self->ncols) {
        PyErr_Format(PyExc_IndexError, "column %zd out of range", *i);
        return -1;
    }
    return 0;
}

static PyObject *columns_size(Columns *self, PyObject *arg)
{
    Py_ssize_t i;
    if (col_index(self, arg, &i) < 0) {
        return NULL;
    }
    return PyLong_FromSsize_t(self->cols[i].n);
}

static PyObject *columns_column(Columns *self, PyObject *arg)
{
    Py_ssize_t i;
    if (col_index(self, arg, &i) < 0) {
        return NULL;
    }
    const Col *c = &self->cols[i];
    static const double zero = 0.0;
    PyObject *v = PyBytes_FromStringAndSize((const char *)c->v,
                                            c->n * (Py_ssize_t)sizeof(double));
    if (v == NULL) {
        return NULL;
    }
    if (!self->sums) {
        return Py_BuildValue("(NO)", v, Py_None);
    }
    const double *s = c->s != NULL ? c->s : &zero;
    PyObject *sb = PyBytes_FromStringAndSize((const char *)s,
                                             (c->n + 1) * (Py_ssize_t)sizeof(double));
    if (sb == NULL) {
        Py_DECREF(v);
        return NULL;
    }
    return Py_BuildValue("(NN)", v, sb);
}

static PyObject *columns_trim(Columns *self, PyObject *Py_UNUSED(ignored))
{
    for (Py_ssize_t i = 0; i < self->ncols; i++) {
        Col *c = &self->cols[i];
        if (c->cap > c->n && c->n > 0) { /* shrinking in place: realloc keeps the values */
            double *v = PyMem_RawRealloc(c->v, (size_t)c->n * sizeof(double));
            if (v != NULL) {
                c->v = v;
            }
            if (c->s != NULL) {
                double *s = PyMem_RawRealloc(c->s, (size_t)(c->n + 1) * sizeof(double));
                if (s != NULL) {
                    c->s = s;
                }
            }
            if (v != NULL) {
                c->cap = c->n;
            }
        }
    }
    Py_RETURN_NONE;
}

static PyObject *columns_nbytes(Columns *self, PyObject *Py_UNUSED(ignored))
{
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < self->ncols; i++) {
        const Col *c = &self->cols[i];
        total += c->cap * (Py_ssize_t)sizeof(double) * (c->s != NULL ? 2 : 1);
    }
    return PyLong_FromSsize_t(total);
}

static PyObject *columns_counts(Columns *self, PyObject *args)
{
    PyObject *edges_obj, *out_obj;
    Py_ssize_t per_row;
    if (!PyArg_ParseTuple(args, "OnO:counts", &edges_obj, &per_row, &out_obj)) {
        return NULL;
    }
    Buf edges = {0}, out = {0};
    PyObject *result = NULL;
    if (get_buf(edges_obj, &edges, "d", 1, 0, "edges") < 0
        || get_buf(out_obj, &out, "q", 2, 1, "out") < 0) {
        goto done;
    }
    Py_ssize_t nbins = count_of(&edges) - 1, nrows = out.view.shape[0];
    if (per_row < 1 || out.view.shape[1] != (nbins > 0 ? nbins : 0)) {
        PyErr_SetString(PyExc_ValueError, "out must be (rows, len(edges) - 1), per_row >= 1");
        goto done;
    }
    const double *e = edges.view.buf;
    int64_t *o = out.view.buf;
    for (Py_ssize_t i = 0; nbins > 0 && i < self->ncols && i / per_row < nrows; i++) {
        const Col *c = &self->cols[i];
        int64_t *row = o + (i / per_row) * nbins;
        Py_ssize_t prev = below_from(c->v, c->n, 0, e[0]);
        for (Py_ssize_t j = 0; j < nbins; j++) {
            Py_ssize_t next = j + 1 < nbins ? below_from(c->v, c->n, prev, e[j + 1])
                                            : upto_from(c->v, c->n, prev, e[j + 1]);
            row[j] += (int64_t)(next - prev);
            prev = next;
        }
    }
    result = Py_NewRef(Py_None);
done:
    drop(&edges);
    drop(&out);
    return result;
}

/* ------------------------------------------------------------ the grid */

typedef struct {
    Py_ssize_t width, nact;
    const double *edges;
    double scale, eps;
} Grid;

static void fill_points(const Grid *g, const Col *c, int64_t *ev, double *sh)
{
    Py_ssize_t prev = below_from(c->v, c->n, 0, g->edges[0]);
    for (Py_ssize_t j = 0; j < g->width; j++) {
        Py_ssize_t next = below_from(c->v, c->n, prev, g->edges[j + 1]);
        int64_t k = (int64_t)(next - prev);
        ev[j] += k;
        sh[j * g->nact] += (double)k;
        prev = next;
    }
}

/* F(t) of mpvis.scene.density_index: (ca * t - sa[ca]) - (cb * t - sb[cb])
 * (a column never added to has no sums: its count is 0, its sum 0). */
static double covered(const Col *a, Py_ssize_t ca, const Col *b, Py_ssize_t cb, double t)
{
    double sa = a->s != NULL ? a->s[ca] : 0.0, sb = b->s != NULL ? b->s[cb] : 0.0;
    return ((double)ca * t - sa) - ((double)cb * t - sb);
}

static void fill_spans(const Grid *g, const Col *a, const Col *b, double *sh)
{
    double t = g->edges[0];
    Py_ssize_t ca = below_from(a->v, a->n, 0, t), cb = below_from(b->v, b->n, 0, t);
    double prev = covered(a, ca, b, cb, t);
    for (Py_ssize_t j = 0; j < g->width; j++) {
        t = g->edges[j + 1];
        ca = below_from(a->v, a->n, ca, t);
        cb = below_from(b->v, b->n, cb, t);
        double f = covered(a, ca, b, cb, t);
        double cover = (f - prev) * g->scale;
        if (cover < g->eps) { /* rounding of the prefix sums */
            cover = 0.0;
        }
        sh[j * g->nact] += cover;
        prev = f;
    }
}

static int check_acts(const Buf *acts, Py_ssize_t nact, const char *what)
{
    const int64_t *a = acts->view.buf;
    for (Py_ssize_t i = 0; i < count_of(acts); i++) {
        if (a[i] < 0 || a[i] >= nact) {
            PyErr_Format(PyExc_ValueError, "%s: activity %lld out of range", what,
                         (long long)a[i]);
            return -1;
        }
    }
    return 0;
}

static PyObject *fill(PyObject *Py_UNUSED(module), PyObject *args)
{
    Columns *points, *begins, *ends;
    PyObject *rows_obj, *pacts_obj, *sacts_obj, *edges_obj, *events_obj, *shares_obj;
    Grid g;
    if (!PyArg_ParseTuple(args, "O!O!O!OOOOddOO:fill", &ColumnsType, &points, &ColumnsType,
                          &begins, &ColumnsType, &ends, &rows_obj, &pacts_obj, &sacts_obj,
                          &edges_obj, &g.scale, &g.eps, &events_obj, &shares_obj)) {
        return NULL;
    }
    Buf rows = {0}, pacts = {0}, sacts = {0}, edges = {0}, events = {0}, shares = {0};
    PyObject *result = NULL;
    if (get_buf(rows_obj, &rows, "q", 1, 0, "row_of_rank") < 0
        || get_buf(pacts_obj, &pacts, "q", 1, 0, "point_acts") < 0
        || get_buf(sacts_obj, &sacts, "q", 1, 0, "span_acts") < 0
        || get_buf(edges_obj, &edges, "d", 1, 0, "edges") < 0
        || get_buf(events_obj, &events, "q", 2, 1, "events") < 0
        || get_buf(shares_obj, &shares, "d", 3, 1, "shares") < 0) {
        goto done;
    }
    Py_ssize_t nranks = count_of(&rows), np_ = count_of(&pacts), ns = count_of(&sacts);
    Py_ssize_t nrows = events.view.shape[0];
    g.width = count_of(&edges) - 1;
    g.nact = shares.view.shape[2];
    g.edges = edges.view.buf;
    if (g.width < 0 || events.view.shape[1] != g.width || shares.view.shape[1] != g.width
        || shares.view.shape[0] != nrows) {
        PyErr_SetString(PyExc_ValueError, "events must be (nrows, width), shares (nrows, "
                                          "width, activities), with width + 1 edges");
        goto done;
    }
    if (points->ncols < nranks * np_ || begins->ncols < nranks * ns
        || ends->ncols < nranks * ns || !begins->sums || !ends->sums) {
        PyErr_SetString(PyExc_ValueError,
                        "fewer columns than ranks times activities, or spans without sums");
        goto done;
    }
    if (check_acts(&pacts, g.nact, "point_acts") < 0
        || check_acts(&sacts, g.nact, "span_acts") < 0) {
        goto done;
    }
    const int64_t *row_of = rows.view.buf, *pa = pacts.view.buf, *sa = sacts.view.buf;
    int64_t *ev = events.view.buf;
    double *sh = shares.view.buf;
    for (Py_ssize_t r = 0; g.width > 0 && r < nranks; r++) {
        int64_t row = row_of[r];
        if (row < 0 || row >= nrows) {
            continue;
        }
        int64_t *ev_row = ev + row * g.width;
        double *sh_row = sh + row * g.width * g.nact;
        for (Py_ssize_t a = 0; a < np_; a++) {
            const Col *c = &points->cols[r * np_ + a];
            if (c->n) {
                fill_points(&g, c, ev_row, sh_row + pa[a]);
            }
        }
        for (Py_ssize_t a = 0; a < ns; a++) {
            const Col *b = &begins->cols[r * ns + a], *e = &ends->cols[r * ns + a];
            if (b->n) {
                fill_spans(&g, b, e, sh_row + sa[a]);
            }
        }
    }
    result = Py_NewRef(Py_None);
done:
    drop(&rows);
    drop(&pacts);
    drop(&sacts);
    drop(&edges);
    drop(&events);
    drop(&shares);
    return result;
}

/* ------------------------------------------------------------ module */

static PyMethodDef columns_methods[] = {
    {"add", (PyCFunction)columns_add, METH_VARARGS,
     "add(keys, values): each value into its column (int64 keys, float64 values)."},
    {"size", (PyCFunction)columns_size, METH_O, "size(i): how many values column i holds."},
    {"column", (PyCFunction)columns_column, METH_O,
     "column(i): its values and prefix sums (None without) as float64 bytes."},
    {"trim", (PyCFunction)columns_trim, METH_NOARGS, "Drop every column's room for growth."},
    {"nbytes", (PyCFunction)columns_nbytes, METH_NOARGS, "Bytes held by the columns."},
    {"counts", (PyCFunction)columns_counts, METH_VARARGS,
     "counts(edges, per_row, out): add each row's events per bin (the last bin closed)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ColumnsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mpvis.scene._cdensity.Columns",
    .tp_basicsize = sizeof(Columns),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Columns(ncols, sums): sorted float64 columns (see the module's C source).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)columns_init,
    .tp_dealloc = (destructor)columns_dealloc,
    .tp_methods = columns_methods,
};

static PyMethodDef methods[] = {
    {"fill", fill, METH_VARARGS,
     "fill(points, begins, ends, row_of_rank, point_acts, span_acts, edges, scale, "
     "cover_eps, events, shares): add the grid's counts and covered shares."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_cdensity",
    "The zoomed-out view's sorted columns and grid (mpvis.scene.density_index), in C.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__cdensity(void)
{
    if (PyType_Ready(&ColumnsType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "Columns", (PyObject *)&ColumnsType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
