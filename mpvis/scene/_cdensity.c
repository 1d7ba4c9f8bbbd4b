/* The zoomed-out view's grid from a density index's sorted columns, in C.
 *
 * mpvis.scene.density_index.DensityIndex.grid asks, for every rank and every
 * column edge, how many of the rank's sorted values of a point activity lie
 * below the edge, and how much of the time left of the edge its blocked and
 * collective intervals cover.  Done with NumPy that was about 15 calls a rank
 * (searchsorted, diff, sums): 51 ms of the GUI thread for 256 ranks at each
 * redraw of a loading 10M-event trace, most of it call overhead.  Here each
 * column is walked once along the (ascending) edges, from where the last edge
 * stopped, with the same floating-point operations in the same order as the
 * NumPy code it replaces, so the grid is the same to the bit.
 *
 * fill(points, spans, edges, scale, cover_eps, events, shares):
 *   points  list of (row, activity, values): values float64, sorted;
 *   spans   list of (row, activity, begins, begin_sums, ends, end_sums):
 *           begins/ends sorted float64, *_sums their prefix sums (one more
 *           entry: sums[i] is the sum of the first i values);
 *   edges   float64, ascending (width + 1 of them);
 *   events  int64 (nrows, width), C-contiguous: a point column's counts added;
 *   shares  float64 (nrows, width, activities), C-contiguous: a point
 *           column's counts, or a span's covered share of each column
 *           (below cover_eps: none), added at its activity.
 * Rows and activities out of range, arrays of the wrong type or shape: a
 * ValueError / TypeError, nothing written past the arrays.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

/* How many of v[0..n) are < t, given that those below `lo` are (t not below
 * the last edge's): a gallop from lo, then a bisection.  NaN counts every
 * value, as NumPy sorts it last. */
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

typedef struct {
    Py_buffer view;
    int held;
} Buf;

static int get_buf(PyObject *obj, Buf *b, const char *fmt, int writable, const char *what)
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
    if (strcmp(f, fmt) != 0 && !(fmt[0] == 'q' && strcmp(f, "l") == 0 && sizeof(long) == 8)) {
        PyErr_Format(PyExc_TypeError, "%s: expected format '%s', got '%s'", what, fmt, f);
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

typedef struct {
    Py_ssize_t nrows, width, nact;
    const double *edges;
    int64_t *events;
    double *shares;
} Grid;

/* Row and activity of an item, checked. */
static int cell(const Grid *g, PyObject *row_obj, PyObject *act_obj, Py_ssize_t *row,
                Py_ssize_t *act)
{
    *row = PyLong_AsSsize_t(row_obj);
    *act = PyLong_AsSsize_t(act_obj);
    if (PyErr_Occurred()) {
        return -1;
    }
    if (*row < 0 || *row >= g->nrows || *act < 0 || *act >= g->nact) {
        PyErr_Format(PyExc_ValueError, "row %zd or activity %zd out of range", *row, *act);
        return -1;
    }
    return 0;
}

static int add_points(const Grid *g, PyObject *item)
{
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3) {
        PyErr_SetString(PyExc_TypeError, "a point column is (row, activity, values)");
        return -1;
    }
    Py_ssize_t row, act;
    if (cell(g, PyTuple_GET_ITEM(item, 0), PyTuple_GET_ITEM(item, 1), &row, &act) < 0) {
        return -1;
    }
    Buf v = {0};
    if (get_buf(PyTuple_GET_ITEM(item, 2), &v, "d", 0, "values") < 0) {
        drop(&v);
        return -1;
    }
    const double *x = v.view.buf;
    Py_ssize_t n = v.view.len / (Py_ssize_t)sizeof(double);
    int64_t *ev = g->events + row * g->width;
    double *sh = g->shares + row * g->width * g->nact + act;
    Py_ssize_t prev = below_from(x, n, 0, g->edges[0]);
    for (Py_ssize_t c = 0; c < g->width; c++) {
        Py_ssize_t next = below_from(x, n, prev, g->edges[c + 1]);
        int64_t k = (int64_t)(next - prev);
        ev[c] += k;
        sh[c * g->nact] += (double)k;
        prev = next;
    }
    drop(&v);
    return 0;
}

/* F(t) of mpvis.scene.density_index: (ca * t - sa[ca]) - (cb * t - sb[cb]). */
static double covered(const double *sa, Py_ssize_t ca, const double *sb, Py_ssize_t cb,
                      double t)
{
    return ((double)ca * t - sa[ca]) - ((double)cb * t - sb[cb]);
}

static int add_spans(const Grid *g, PyObject *item, double scale, double eps)
{
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 6) {
        PyErr_SetString(PyExc_TypeError,
                        "a span column is (row, activity, begins, begin_sums, ends, end_sums)");
        return -1;
    }
    Py_ssize_t row, act;
    if (cell(g, PyTuple_GET_ITEM(item, 0), PyTuple_GET_ITEM(item, 1), &row, &act) < 0) {
        return -1;
    }
    Buf bufs[4];
    memset(bufs, 0, sizeof bufs);
    const char *names[4] = {"begins", "begin_sums", "ends", "end_sums"};
    int rc = -1;
    for (int i = 0; i < 4; i++) {
        if (get_buf(PyTuple_GET_ITEM(item, 2 + i), &bufs[i], "d", 0, names[i]) < 0) {
            goto done;
        }
    }
    const double *a = bufs[0].view.buf, *sa = bufs[1].view.buf;
    const double *b = bufs[2].view.buf, *sb = bufs[3].view.buf;
    Py_ssize_t na = bufs[0].view.len / (Py_ssize_t)sizeof(double);
    Py_ssize_t nb = bufs[2].view.len / (Py_ssize_t)sizeof(double);
    if (bufs[1].view.len / (Py_ssize_t)sizeof(double) != na + 1
        || bufs[3].view.len / (Py_ssize_t)sizeof(double) != nb + 1) {
        PyErr_SetString(PyExc_ValueError, "prefix sums need one entry more than their values");
        goto done;
    }
    double *sh = g->shares + row * g->width * g->nact + act;
    double t = g->edges[0];
    Py_ssize_t ca = below_from(a, na, 0, t), cb = below_from(b, nb, 0, t);
    double prev = covered(sa, ca, sb, cb, t);
    for (Py_ssize_t c = 0; c < g->width; c++) {
        t = g->edges[c + 1];
        ca = below_from(a, na, ca, t);
        cb = below_from(b, nb, cb, t);
        double f = covered(sa, ca, sb, cb, t);
        double cover = (f - prev) * scale;
        if (cover < eps) { /* rounding of the prefix sums */
            cover = 0.0;
        }
        sh[c * g->nact] += cover;
        prev = f;
    }
    rc = 0;
done:
    for (int i = 0; i < 4; i++) {
        drop(&bufs[i]);
    }
    return rc;
}

static PyObject *fill(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *points, *spans, *edges_obj, *events_obj, *shares_obj;
    double scale, eps;
    if (!PyArg_ParseTuple(args, "O!O!OddOO:fill", &PyList_Type, &points, &PyList_Type, &spans,
                          &edges_obj, &scale, &eps, &events_obj, &shares_obj)) {
        return NULL;
    }
    Buf edges = {0}, events = {0}, shares = {0};
    PyObject *result = NULL;
    if (get_buf(edges_obj, &edges, "d", 0, "edges") < 0
        || get_buf(events_obj, &events, "q", 1, "events") < 0
        || get_buf(shares_obj, &shares, "d", 1, "shares") < 0) {
        goto done;
    }
    Grid g;
    g.width = edges.view.len / (Py_ssize_t)sizeof(double) - 1;
    if (events.view.ndim != 2 || shares.view.ndim != 3 || g.width < 0
        || events.view.shape[1] != g.width || shares.view.shape[1] != g.width
        || shares.view.shape[0] != events.view.shape[0]) {
        PyErr_SetString(PyExc_ValueError,
                        "events must be (nrows, width), shares (nrows, width, activities), "
                        "with width + 1 edges");
        goto done;
    }
    g.nrows = events.view.shape[0];
    g.nact = shares.view.shape[2];
    g.edges = edges.view.buf;
    g.events = events.view.buf;
    g.shares = shares.view.buf;
    if (g.width > 0) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(points); i++) {
            if (add_points(&g, PyList_GET_ITEM(points, i)) < 0) {
                goto done;
            }
        }
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(spans); i++) {
            if (add_spans(&g, PyList_GET_ITEM(spans, i), scale, eps) < 0) {
                goto done;
            }
        }
    }
    result = Py_NewRef(Py_None);
done:
    drop(&edges);
    drop(&events);
    drop(&shares);
    return result;
}

static PyMethodDef methods[] = {
    {"fill", fill, METH_VARARGS,
     "fill(points, spans, edges, scale, cover_eps, events, shares): add the columns' "
     "counts and covered shares to the grid (see the module's C source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_cdensity",
    "The zoomed-out view's grid from sorted columns (DensityIndex.grid), in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__cdensity(void)
{
    return PyModule_Create(&module);
}
