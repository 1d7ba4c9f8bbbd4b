/* mpvis.tracefile._cscan: a trace file's event lines to the columns of a
 * Batch (mpvis/model/ingest.py), in C, without building a dict per record.
 *
 * The parser process (parse_worker.py) took 2.3 s for the 1M-event trace
 * of the benchmarks, nearly all of it in orjson's dicts and in
 * ingest.extract's grouping of them (issue 16).  This scanner reads the
 * lines of a chunk straight from the file's bytes and, for every line whose
 * record it fully understands, writes the record's columns as extract()
 * would and checks the per-record rules of
 * mpvis.protocol.records.check_record (shared/spec/trace-format.md); it
 * builds Python objects only for a record's extras (the fields outside the
 * columns: a wait's reqs, a collective's op, ...).
 *
 * It is strict on purpose.  A line it does not fully understand is handed
 * back whole ("fallback") to the Python path, orjson and extract(), which
 * decides (mpvis/tracefile/scan.py merges both): strings with escapes,
 * control characters or malformed UTF-8, lists of anything but integers,
 * objects holding lists, objects or more than MAX_OBJ_KEYS keys, integers
 * of more than 18 digits, floats that do not convert exactly and finitely,
 * duplicate keys, more than MAX_FIELDS keys, unknown kinds, and every
 * record that breaks a rule or holds a value too large for the model's
 * 32-bit columns (the Python path then names the error).  So the scanner
 * never decides an error, and every record it accepts is one that
 * check_record accepts and extract() puts in the same columns and extras.
 *
 * Lines: split at '\n' as readline() does; a line that holds only ASCII
 * whitespace (bytes.strip()) is blank and skipped; a line longer than
 * max_line_bytes (its newline included) ends the chunk (too_long); at the
 * end of the input a last line without newline is a line.  A chunk holds at
 * most max_lines lines.
 *
 * Scanner(nprocs, kinds, max_lines, max_line_bytes, f_blocking, f_sync,
 *         fallback_all, give_up):
 *   kinds: the kind names in model code order (codes.EVENT_KINDS), so
 *   that the codes written are the model's; f_blocking/f_sync: the flag
 *   bits (codes.F_BLOCKING, codes.F_SYNC); fallback_all: hand every line to
 *   the Python path; give_up: once more lines than this are handed back in a
 *   chunk, the scanner only splits its lines (the caller then reads the
 *   whole chunk by the Python path: fallback holds give_up + 1 lines).
 * scan(data, pos, eof) -> (pos, done): scan the complete lines of
 *   data[pos:] into the current chunk; done when the chunk is full, ended
 *   by a too-long line, or eof is set and data[pos:] is consumed.  When not
 *   done, call again with data[pos:] followed by more input.
 * take() -> (nlines, nbytes, nrec, cols, lines, names, first, fallback,
 *   extras, too_long, keys, irregular): the chunk, and a new empty chunk
 *   begins.  See _cscan.pyi for each element.
 * KEYS: the known keys' names, by bit of a keys word.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int64_t i64;

#define INT32_TOP 2147483647LL
#define MAX_FIELDS 32
#define MAX_INT_DIGITS 18
/* t as an integer is exact in a double up to 2**53. */
#define EXACT_INT_TOP 9007199254740992LL

/* ------------------------------------------------------------------ keys */

enum {
    K_RANK, K_SEQ, K_KIND, K_T, K_SITE, K_COMM, K_DEST, K_SRC, K_TAG, K_BLOCKING, K_SYNC,
    K_REQ, K_RECV, K_SEND, K_SIZE, K_CALL, K_OP, K_REQS, K_LOCK, K_ROOT, K_COUNT, K_DTYPE,
    K_REDOP, K_MODE, K_VARS, NKEYS, K_OTHER = NKEYS
};

static const char *const KEY_NAMES[NKEYS] = {
    "rank", "seq", "kind", "t", "site", "comm", "dest", "src", "tag", "blocking", "sync",
    "req", "recv", "send", "size", "call", "op", "reqs", "lock", "root", "count", "dtype",
    "redop", "mode", "vars",
};
static PyObject *key_objs[NKEYS];

#define BIT(k) (1u << (k))
/* ingest.COLUMN_FIELDS as each kind holds them in columns (ingest._KIND_FIELDS,
 * and call, which the scanner accepts only as a column value). */
#define OWN_COMMON (BIT(K_RANK) | BIT(K_SEQ) | BIT(K_KIND) | BIT(K_T) | BIT(K_SITE) | \
                    BIT(K_COMM) | BIT(K_CALL))
#define OWN_SEND (OWN_COMMON | BIT(K_DEST) | BIT(K_TAG) | BIT(K_BLOCKING) | BIT(K_SYNC) | \
                  BIT(K_REQ) | BIT(K_SIZE))
#define OWN_RECV (OWN_COMMON | BIT(K_SRC) | BIT(K_TAG) | BIT(K_BLOCKING) | BIT(K_REQ))
#define OWN_CONSUME (OWN_COMMON | BIT(K_RECV) | BIT(K_SRC) | BIT(K_TAG) | BIT(K_SEND))

static int key_is(const char *s, Py_ssize_t n, int k)
{
    const char *name = KEY_NAMES[k];
    return (Py_ssize_t)strlen(name) == n && memcmp(s, name, (size_t)n) == 0;
}

static int key_id(const char *s, Py_ssize_t n)
{
    if (n == 0)
        return K_OTHER;
    switch (s[0]) {
    case 'b': return key_is(s, n, K_BLOCKING) ? K_BLOCKING : K_OTHER;
    case 'c':
        if (key_is(s, n, K_COMM)) return K_COMM;
        if (key_is(s, n, K_CALL)) return K_CALL;
        return key_is(s, n, K_COUNT) ? K_COUNT : K_OTHER;
    case 'd':
        if (key_is(s, n, K_DEST)) return K_DEST;
        return key_is(s, n, K_DTYPE) ? K_DTYPE : K_OTHER;
    case 'k': return key_is(s, n, K_KIND) ? K_KIND : K_OTHER;
    case 'l': return key_is(s, n, K_LOCK) ? K_LOCK : K_OTHER;
    case 'm': return key_is(s, n, K_MODE) ? K_MODE : K_OTHER;
    case 'v': return key_is(s, n, K_VARS) ? K_VARS : K_OTHER;
    case 'o': return key_is(s, n, K_OP) ? K_OP : K_OTHER;
    case 'r':
        if (key_is(s, n, K_RANK)) return K_RANK;
        if (key_is(s, n, K_REQ)) return K_REQ;
        if (key_is(s, n, K_RECV)) return K_RECV;
        if (key_is(s, n, K_REQS)) return K_REQS;
        if (key_is(s, n, K_ROOT)) return K_ROOT;
        return key_is(s, n, K_REDOP) ? K_REDOP : K_OTHER;
    case 's':
        if (key_is(s, n, K_SEQ)) return K_SEQ;
        if (key_is(s, n, K_SITE)) return K_SITE;
        if (key_is(s, n, K_SRC)) return K_SRC;
        if (key_is(s, n, K_SYNC)) return K_SYNC;
        if (key_is(s, n, K_SEND)) return K_SEND;
        return key_is(s, n, K_SIZE) ? K_SIZE : K_OTHER;
    case 't':
        if (key_is(s, n, K_T)) return K_T;
        return key_is(s, n, K_TAG) ? K_TAG : K_OTHER;
    default: return K_OTHER;
    }
}

/* ------------------------------------------------------------ kinds (rules) */

enum { R_SEND, R_RECV, R_CONSUME, R_WAIT, R_COLL, R_COLL_EXIT, R_LOCK, R_FINAL, R_WAITING, R_STATE,
       R_NONE };

static const struct { const char *name; int rule; } RULES[] = {
    {"send", R_SEND}, {"recv", R_RECV}, {"consume", R_CONSUME}, {"wait", R_WAIT},
    {"coll", R_COLL}, {"coll_exit", R_COLL_EXIT}, {"lock", R_LOCK}, {"locked", R_LOCK},
    {"unlock", R_LOCK}, {"final", R_FINAL}, {"waiting", R_WAITING}, {"state", R_STATE},
    /* any other kind: R_NONE, the Python path */
};

#define MAX_KINDS 32

/* ------------------------------------------------------------------ values */

enum { V_INT, V_FLOAT, V_STR, V_TRUE, V_FALSE, V_NULL, V_LIST, V_OBJ };

/* The most keys a value that is an object (V_OBJ) may hold in C. */
#define MAX_OBJ_KEYS 64

typedef struct {
    const char *k;      /* the key's bytes */
    Py_ssize_t klen;
    int key;            /* K_* */
    int type;           /* V_* */
    const char *s;      /* V_STR: the string's bytes; V_LIST, V_OBJ: the value's text */
    Py_ssize_t slen;
    i64 i;              /* V_INT */
    double f;           /* V_FLOAT */
    Py_ssize_t count;   /* V_LIST: its integers (l0, l1: the first two); V_OBJ: its keys */
    i64 l0, l1;
} field;

static inline const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    return p;
}

/* The length of the UTF-8 sequence at q (its first byte c >= 0x80), or 0
 * when it is not well-formed (RFC 3629: no overlong form, no surrogate,
 * nothing above U+10FFFF; what orjson and Python's strict decoder accept). */
static int utf8_length(const unsigned char *q, const unsigned char *end)
{
    unsigned char c = q[0];
    int n;
    unsigned char lo = 0x80, hi = 0xBF;  /* the range of the second byte */
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (end - q < n || q[1] < lo || q[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if (q[i] < 0x80 || q[i] > 0xBF)
            return 0;
    return n;
}

/* A string without escapes: printable ASCII and well-formed UTF-8; p at its
 * opening quote.  Returns the position after the closing quote, or NULL
 * (fallback). */
static const char *scan_string(const char *p, const char *end, const char **s, Py_ssize_t *n)
{
    const unsigned char *q = (const unsigned char *)++p, *stop = (const unsigned char *)end;
    for (;;) {
        if (q >= stop)
            return NULL;
        unsigned char c = *q;
        if (c == '"')
            break;
        if (c < 0x20 || c == '\\')
            return NULL;
        if (c < 0x80) {
            q++;
            continue;
        }
        int len = utf8_length(q, stop);
        if (len == 0)
            return NULL;
        q += len;
    }
    *s = p;
    *n = (const char *)q - p;
    return (const char *)q + 1;
}

static const double POW10[] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* A JSON number.  An integer (no fraction, no exponent) of at most
 * MAX_INT_DIGITS digits is V_INT; a float is V_FLOAT when it converts to a
 * finite double without underflow: exactly by Clinger's fast path (at most
 * 15 significant digits and a power of ten up to 1e22: one rounding), else
 * by strtod (correctly rounded, as orjson).  Returns the position after the
 * number, or NULL (fallback: not JSON's grammar, too long, or odd). */
static const char *scan_number(const char *p, const char *end, field *f)
{
    const char *start = p;
    int neg = 0;
    if (p < end && *p == '-') {
        neg = 1;
        p++;
    }
    if (p >= end || *p < '0' || *p > '9')
        return NULL;
    uint64_t m = 0;
    int digits = 0;  /* significant digits in m (leading zeros skipped) */
    int intdigits = 0;
    if (*p == '0') {
        p++;
        intdigits = 1;
    } else {
        while (p < end && *p >= '0' && *p <= '9') {
            if (digits < 19)
                m = m * 10 + (uint64_t)(*p - '0');
            digits++;
            intdigits++;
            p++;
        }
    }
    if (p >= end || (*p != '.' && *p != 'e' && *p != 'E')) {
        if (intdigits > MAX_INT_DIGITS)
            return NULL;
        f->type = V_INT;
        f->i = neg ? -(i64)m : (i64)m;
        return p;
    }
    int frac = 0;
    if (*p == '.') {
        p++;
        if (p >= end || *p < '0' || *p > '9')
            return NULL;
        while (p < end && *p >= '0' && *p <= '9') {
            if (digits > 0 || *p != '0') {
                if (digits < 19)
                    m = m * 10 + (uint64_t)(*p - '0');
                digits++;
            }
            frac++;
            p++;
        }
    }
    int exp = 0, expdigits = 0, expneg = 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) {
            expneg = *p == '-';
            p++;
        }
        if (p >= end || *p < '0' || *p > '9')
            return NULL;
        while (p < end && *p >= '0' && *p <= '9') {
            if (expdigits < 6)
                exp = exp * 10 + (*p - '0');
            expdigits++;
            p++;
        }
    }
    f->type = V_FLOAT;
    int e10 = (expneg ? -exp : exp) - frac;
    if (expdigits <= 6 && digits <= 15 && e10 >= -22 && e10 <= 22) {
        double v = (double)m;
        v = e10 < 0 ? v / POW10[-e10] : v * POW10[e10];
        f->f = neg ? -v : v;
        return p;
    }
    char buf[80];
    Py_ssize_t n = p - start;
    if (n >= (Py_ssize_t)sizeof buf)
        return NULL;
    memcpy(buf, start, (size_t)n);
    buf[n] = 0;
    char *stop;
    errno = 0;
    double v = strtod(buf, &stop);
    if (stop != buf + n || errno != 0 || !isfinite(v) || (v == 0.0 && m != 0))
        return NULL;
    f->f = v;
    return p;
}

/* A list of integers (V_LIST); p at '['. */
static const char *scan_list(const char *p, const char *end, field *f)
{
    const char *start = p;
    field item;
    f->count = 0;
    f->l0 = f->l1 = 0;
    p = skip_ws(p + 1, end);
    if (p < end && *p == ']') {
        p++;
    } else {
        for (;;) {
            p = scan_number(p, end, &item);
            if (p == NULL || item.type != V_INT)
                return NULL;
            if (f->count == 0)
                f->l0 = item.i;
            else if (f->count == 1)
                f->l1 = item.i;
            f->count++;
            p = skip_ws(p, end);
            if (p >= end)
                return NULL;
            if (*p == ']') {
                p++;
                break;
            }
            if (*p != ',')
                return NULL;
            p = skip_ws(p + 1, end);
        }
    }
    f->type = V_LIST;
    f->s = start;
    f->slen = p - start;
    return p;
}

static const char *scan_literal(const char *p, const char *end, const char *lit, size_t n)
{
    if ((size_t)(end - p) < n || memcmp(p, lit, n) != 0)
        return NULL;
    return p + n;
}

static const char *scan_object_value(const char *p, const char *end, field *f);

static const char *scan_value(const char *p, const char *end, field *f)
{
    if (p >= end)
        return NULL;
    switch (*p) {
    case '"':
        f->type = V_STR;
        return scan_string(p, end, &f->s, &f->slen);
    case '[': return scan_list(p, end, f);
    case '{': return scan_object_value(p, end, f);
    case 't': f->type = V_TRUE; return scan_literal(p, end, "true", 4);
    case 'f': f->type = V_FALSE; return scan_literal(p, end, "false", 5);
    case 'n': f->type = V_NULL; return scan_literal(p, end, "null", 4);
    default: return scan_number(p, end, f);
    }
}

/* An object of at most MAX_OBJ_KEYS distinct keys whose values are scalars
 * (V_OBJ: a state record's vars); p at '{'.  A nested list or object, or a
 * duplicate key, is for the Python path. */
static const char *scan_object_value(const char *p, const char *end, field *f)
{
    const char *start = p, *keys[MAX_OBJ_KEYS];
    Py_ssize_t lens[MAX_OBJ_KEYS];
    field item;
    Py_ssize_t n = 0;
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}') {
        p++;
    } else {
        for (;;) {
            if (n == MAX_OBJ_KEYS || p >= end || *p != '"')
                return NULL;
            p = scan_string(p, end, &keys[n], &lens[n]);
            if (p == NULL)
                return NULL;
            for (Py_ssize_t j = 0; j < n; j++)
                if (lens[j] == lens[n] && memcmp(keys[j], keys[n], (size_t)lens[n]) == 0)
                    return NULL;
            n++;
            p = skip_ws(p, end);
            if (p >= end || *p != ':')
                return NULL;
            p = skip_ws(p + 1, end);
            if (p >= end || *p == '{' || *p == '[')
                return NULL;
            p = scan_value(p, end, &item);
            if (p == NULL)
                return NULL;
            p = skip_ws(p, end);
            if (p >= end)
                return NULL;
            if (*p == '}') {
                p++;
                break;
            }
            if (*p != ',')
                return NULL;
            p = skip_ws(p + 1, end);
        }
    }
    f->type = V_OBJ;
    f->s = start;
    f->slen = p - start;
    f->count = n;
    return p;
}

/* The object of a line into fields; 0 when the line is not such an object. */
static int scan_object(const char *p, const char *end, field *fs, int *nf, uint32_t *seen)
{
    int n = 0;
    *seen = 0;
    p = skip_ws(p, end);
    if (p >= end || *p != '{')
        return 0;
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}')
        return 0;  /* {}: no kind */
    for (;;) {
        if (n == MAX_FIELDS || p >= end || *p != '"')
            return 0;
        field *f = &fs[n];
        p = scan_string(p, end, &f->k, &f->klen);
        if (p == NULL)
            return 0;
        f->key = key_id(f->k, f->klen);
        if (f->key != K_OTHER) {
            if (*seen & BIT(f->key))
                return 0;  /* a duplicate key */
            *seen |= BIT(f->key);
        } else {
            for (int j = 0; j < n; j++)
                if (fs[j].key == K_OTHER && fs[j].klen == f->klen &&
                    memcmp(fs[j].k, f->k, (size_t)f->klen) == 0)
                    return 0;
        }
        p = skip_ws(p, end);
        if (p >= end || *p != ':')
            return 0;
        p = scan_value(skip_ws(p + 1, end), end, f);
        if (p == NULL)
            return 0;
        n++;
        p = skip_ws(p, end);
        if (p >= end)
            return 0;
        if (*p == '}')
            break;
        if (*p != ',')
            return 0;
        p = skip_ws(p + 1, end);
    }
    if (skip_ws(p + 1, end) != end)
        return 0;  /* something after the object */
    *nf = n;
    return 1;
}

/* ---------------------------------------------------------------- scanner */

enum { C_RANK, C_SEQ, C_COMM, C_PEER, C_TAG, C_REQ, C_REF, C_SSEQ, C_SIZE, C_CALL, C_SITE,
       NINTS };
static const char *const INT_NAMES[NINTS] = {
    "rank", "seq", "comm", "peer", "tag", "req", "ref", "sseq", "size", "call", "site",
};
static const i64 INT_DEFAULTS[NINTS] = {-1, -1, 0, -1, -1, -1, -1, -1, -1, -1, -1};

typedef struct {
    char *name;
    Py_ssize_t len;
    Py_hash_t hash;
    i64 id;
} site_entry;

/* A key sequence met in the chunk.  extract() orders a record's extras as
 * the first record of its kind and key count when all such records hold the
 * same keys (ingest._groups), else each keeps its own order: the scanner
 * says when two records of a kind and key count hold the same keys in
 * another order (irregular; also when it meets more than MAX_PATTERNS
 * sequences), and scan.py then orders the extras as extract() does. */
#define MAX_PATTERNS 64
typedef struct {
    int code, nf;
    uint32_t bits;                                /* its known keys */
    int8_t key[MAX_FIELDS];
    Py_ssize_t off[MAX_FIELDS], len[MAX_FIELDS];  /* K_OTHER: its name in names */
    char *names;
} key_pattern;

/* The keys word of a record: the bits of its known keys, KEYS_OTHER when it
 * has others, and its number of keys from bit KEYS_COUNT_SHIFT. */
#define KEYS_OTHER (1LL << 31)
#define KEYS_COUNT_SHIFT 32

typedef struct {
    PyObject_HEAD
    i64 nprocs;
    Py_ssize_t max_lines, max_line_bytes;
    int f_blocking, f_sync, fallback_all;
    Py_ssize_t give_up;
    int rule_of[MAX_KINDS];          /* R_* of each model code */
    const char *kind_names[MAX_KINDS];
    Py_ssize_t kind_lens[MAX_KINDS];
    PyObject *kinds;                 /* keeps kind_names alive */
    int nkinds;
    /* the current chunk */
    Py_ssize_t nlines, nbytes, nrec, too_long;
    int done;
    i64 *ints[NINTS];
    i64 *line;                       /* line offset of each record */
    double *t;
    int8_t *code, *flags;
    i64 *keys;                       /* the keys word of each record (0: handed back) */
    PyObject *names, *first, *fallback, *extras;
    site_entry *sites;
    Py_ssize_t site_cap, site_count;
    int irregular;
    key_pattern pats[MAX_PATTERNS];
    int npats;
    int hint[MAX_KINDS];             /* the pattern a kind's last record matched */
} Scanner;

static void clear_slots(Scanner *s)
{
    for (int i = 0; i < s->npats; i++) {
        PyMem_Free(s->pats[i].names);
        s->pats[i].names = NULL;
    }
    s->npats = 0;
    for (int c = 0; c < MAX_KINDS; c++)
        s->hint[c] = -1;
    s->irregular = 0;
}

static int other_is(const key_pattern *pat, int j, const field *f)
{
    return pat->len[j] == f->klen && memcmp(pat->names + pat->off[j], f->k, (size_t)f->klen) == 0;
}

/* Whether fs[:nf] is pat's key sequence (same keys, same order). */
static int same_order(const key_pattern *pat, int code, const field *fs, int nf)
{
    if (pat->code != code || pat->nf != nf)
        return 0;
    for (int j = 0; j < nf; j++)
        if (pat->key[j] != fs[j].key || (fs[j].key == K_OTHER && !other_is(pat, j, &fs[j])))
            return 0;
    return 1;
}

/* Whether fs[:nf] holds pat's keys (its known keys are bits; no key repeats). */
static int same_keys(const key_pattern *pat, uint32_t bits, const field *fs, int nf)
{
    if (pat->bits != bits)
        return 0;
    for (int j = 0; j < nf; j++) {
        if (fs[j].key != K_OTHER)
            continue;
        int found = 0;
        for (int i = 0; i < nf && !found; i++)
            found = pat->key[i] == K_OTHER && other_is(pat, i, &fs[j]);
        if (!found)
            return 0;
    }
    return 1;
}

/* Note the key sequence of a record of kind code: irregular when a record of
 * its kind and key count held the same keys in another order; -1 on an
 * exception. */
static int check_key_order(Scanner *s, int code, const field *fs, int nf, uint32_t bits)
{
    int h = s->hint[code];
    if (h >= 0 && same_order(&s->pats[h], code, fs, nf))
        return 0;
    for (int i = 0; i < s->npats; i++) {
        key_pattern *pat = &s->pats[i];
        if (pat->code != code || pat->nf != nf)
            continue;
        if (same_order(pat, code, fs, nf)) {
            s->hint[code] = i;
            return 0;
        }
        if (same_keys(pat, bits, fs, nf)) {
            s->irregular = 1;
            return 0;
        }
    }
    if (s->npats == MAX_PATTERNS) {
        s->irregular = 1;
        return 0;
    }
    key_pattern *slot = &s->pats[s->npats];
    Py_ssize_t total = 0;
    for (int j = 0; j < nf; j++)
        total += fs[j].key == K_OTHER ? fs[j].klen : 0;
    slot->names = PyMem_Malloc((size_t)total + 1);
    if (slot->names == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t at = 0;
    for (int j = 0; j < nf; j++) {
        slot->key[j] = (int8_t)fs[j].key;
        slot->off[j] = at;
        slot->len[j] = fs[j].key == K_OTHER ? fs[j].klen : 0;
        if (fs[j].key == K_OTHER) {
            memcpy(slot->names + at, fs[j].k, (size_t)fs[j].klen);
            at += fs[j].klen;
        }
    }
    slot->code = code;
    slot->nf = nf;
    slot->bits = bits;
    s->hint[code] = s->npats++;
    return 0;
}

static void clear_sites(Scanner *s)
{
    for (Py_ssize_t i = 0; i < s->site_cap; i++) {
        PyMem_Free(s->sites[i].name);
        s->sites[i].name = NULL;
    }
    s->site_count = 0;
}

static int new_chunk(Scanner *s)
{
    s->nlines = s->nbytes = s->nrec = 0;
    s->too_long = -1;
    s->done = 0;
    clear_sites(s);
    clear_slots(s);
    Py_XDECREF(s->names);
    Py_XDECREF(s->first);
    Py_XDECREF(s->fallback);
    Py_XDECREF(s->extras);
    s->names = PyList_New(0);
    s->first = PyList_New(0);
    s->fallback = PyList_New(0);
    s->extras = PyDict_New();
    return s->names && s->first && s->fallback && s->extras ? 0 : -1;
}

static Py_hash_t hash_bytes(const char *p, Py_ssize_t n)
{
    uint64_t h = 1469598103934665603ULL;  /* FNV-1a */
    for (Py_ssize_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ULL;
    }
    return (Py_hash_t)(h & 0x7fffffffffffffffULL);
}

static int grow_sites(Scanner *s)
{
    Py_ssize_t cap = s->site_cap ? s->site_cap * 2 : 64;
    site_entry *t = PyMem_Calloc((size_t)cap, sizeof *t);
    if (t == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < s->site_cap; i++) {
        site_entry *e = &s->sites[i];
        if (e->name == NULL)
            continue;
        Py_ssize_t j = e->hash & (cap - 1);
        while (t[j].name != NULL)
            j = (j + 1) & (cap - 1);
        t[j] = *e;
    }
    PyMem_Free(s->sites);
    s->sites = t;
    s->site_cap = cap;
    return 0;
}

/* The chunk-local id of site p[:n] (numbered in order of first appearance,
 * first seen at record r); -1 with an exception set on failure. */
static i64 site_id(Scanner *s, const char *p, Py_ssize_t n, Py_ssize_t r)
{
    if (2 * (s->site_count + 1) > s->site_cap && grow_sites(s) < 0)
        return -1;
    Py_hash_t h = hash_bytes(p, n);
    Py_ssize_t j = h & (s->site_cap - 1);
    for (;;) {
        site_entry *e = &s->sites[j];
        if (e->name == NULL)
            break;
        if (e->hash == h && e->len == n && memcmp(e->name, p, (size_t)n) == 0)
            return e->id;
        j = (j + 1) & (s->site_cap - 1);
    }
    site_entry *e = &s->sites[j];
    e->name = PyMem_Malloc((size_t)n + 1);
    if (e->name == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(e->name, p, (size_t)n);
    e->len = n;
    e->hash = h;
    e->id = s->site_count++;
    PyObject *name = PyUnicode_FromStringAndSize(p, n);
    PyObject *at = PyLong_FromSsize_t(r);
    int bad = name == NULL || at == NULL || PyList_Append(s->names, name) < 0 ||
              PyList_Append(s->first, at) < 0;
    Py_XDECREF(name);
    Py_XDECREF(at);
    return bad ? -1 : e->id;
}

/* ------------------------------------------------------------ one record */

static inline int is_int(const field *f, i64 lo, i64 hi)
{
    return f != NULL && f->type == V_INT && f->i >= lo && f->i <= hi;
}

static inline int is_bool(const field *f)
{
    return f != NULL && (f->type == V_TRUE || f->type == V_FALSE);
}

static inline int is_name(const field *f)
{
    return f != NULL && f->type == V_STR && f->slen > 0;
}

static PyObject *int_list(const field *f)
{
    PyObject *list = PyList_New(f->count);
    if (list == NULL)
        return NULL;
    const char *p = f->s + 1, *end = f->s + f->slen;
    field item;
    for (Py_ssize_t i = 0; i < f->count; i++) {
        p = scan_number(skip_ws(p, end), end, &item);  /* scanned before: cannot fail */
        PyObject *v = PyLong_FromLongLong(item.i);
        if (v == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, v);
        p = skip_ws(p, end) + 1;  /* past ',' (or ']') */
    }
    return list;
}

static PyObject *value_obj(const field *f);

/* The dict of a V_OBJ value (scanned before: cannot fail but for memory). */
static PyObject *obj_dict(const field *f)
{
    PyObject *d = PyDict_New();
    const char *p = f->s + 1, *end = f->s + f->slen;
    field item;
    for (Py_ssize_t i = 0; d != NULL && i < f->count; i++) {
        const char *k;
        Py_ssize_t klen;
        p = scan_string(skip_ws(p, end), end, &k, &klen);
        p = scan_value(skip_ws(skip_ws(p, end) + 1, end), end, &item);  /* past ':' */
        PyObject *key = PyUnicode_FromStringAndSize(k, klen);
        PyObject *v = key == NULL ? NULL : value_obj(&item);
        if (v == NULL || PyDict_SetItem(d, key, v) < 0)
            Py_CLEAR(d);
        Py_XDECREF(key);
        Py_XDECREF(v);
        p = skip_ws(p, end) + 1;  /* past ',' (or '}') */
    }
    return d;
}

static PyObject *value_obj(const field *f)
{
    switch (f->type) {
    case V_INT: return PyLong_FromLongLong(f->i);
    case V_FLOAT: return PyFloat_FromDouble(f->f);
    case V_STR: return PyUnicode_FromStringAndSize(f->s, f->slen);
    case V_TRUE: Py_RETURN_TRUE;
    case V_FALSE: Py_RETURN_FALSE;
    case V_NULL: Py_RETURN_NONE;
    case V_OBJ: return obj_dict(f);
    default: return int_list(f);
    }
}

/* The extras of a record: its fields outside the own mask, in record order. */
static int put_extras(Scanner *s, const field *fs, int nf, uint32_t own, Py_ssize_t r)
{
    PyObject *d = NULL;
    for (int j = 0; j < nf; j++) {
        const field *f = &fs[j];
        if (f->key != K_OTHER && (own & BIT(f->key)))
            continue;
        if (d == NULL && (d = PyDict_New()) == NULL)
            return -1;
        PyObject *k = f->key != K_OTHER ? Py_NewRef(key_objs[f->key])
                                        : PyUnicode_FromStringAndSize(f->k, f->klen);
        PyObject *v = k == NULL ? NULL : value_obj(f);
        int bad = v == NULL || PyDict_SetItem(d, k, v) < 0;
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (bad) {
            Py_DECREF(d);
            return -1;
        }
    }
    if (d == NULL)
        return 0;
    PyObject *at = PyLong_FromSsize_t(r);
    int bad = at == NULL || PyDict_SetItem(s->extras, at, d) < 0;
    Py_XDECREF(at);
    Py_DECREF(d);
    return bad ? -1 : 0;
}

/* Record r from line p[:end): 1 when written to the columns, 0 when it is
 * for the Python path, -1 on an exception. */
static int scan_record(Scanner *s, const char *p, const char *end, Py_ssize_t r)
{
    field fs[MAX_FIELDS];
    const field *by[NKEYS] = {0};
    int nf;
    uint32_t seen;
    if (!scan_object(p, end, fs, &nf, &seen))
        return 0;
    for (int j = 0; j < nf; j++)
        if (fs[j].key != K_OTHER)
            by[fs[j].key] = &fs[j];
    const field *kind = by[K_KIND];
    if (kind == NULL || kind->type != V_STR)
        return 0;
    int code = -1;
    for (int c = 0; c < s->nkinds; c++)
        if (s->kind_lens[c] == kind->slen &&
            memcmp(s->kind_names[c], kind->s, (size_t)kind->slen) == 0) {
            code = c;
            break;
        }
    if (code < 0 || s->rule_of[code] == R_NONE)
        return 0;
    int rule = s->rule_of[code];
    /* check_record's common rules, and the 32-bit columns' bounds */
    const field *t = by[K_T], *site = by[K_SITE], *comm = by[K_COMM], *call = by[K_CALL];
    if (!is_int(by[K_RANK], 0, s->nprocs - 1) || !is_int(by[K_SEQ], 0, INT32_TOP))
        return 0;
    if (t != NULL && t->type != V_NULL && t->type != V_FLOAT &&
        !is_int(t, -EXACT_INT_TOP, EXACT_INT_TOP))
        return 0;
    if (site != NULL && site->type != V_NULL && site->type != V_STR)
        return 0;
    if (comm != NULL && !is_int(comm, 0, INT32_TOP))
        return 0;
    if (call != NULL && !is_int(call, 0, INT32_TOP))
        return 0;  /* an odd call is an extra after the odd req: the Python path */
    uint32_t own = OWN_COMMON;
    const field *req = by[K_REQ];
    int flags = 0;
    i64 peer = -1, tag = -1, reqv = -1, ref = -1, sseq = -1, size = -1;
    switch (rule) {
    case R_SEND:
    case R_RECV: {
        const field *blocking = by[K_BLOCKING], *sync = by[K_SYNC];
        const field *pf = rule == R_SEND ? by[K_DEST] : by[K_SRC];
        i64 low = rule == R_SEND ? 0 : -1;
        if (!is_int(pf, low, s->nprocs - 1) || !is_int(by[K_TAG], low, INT32_TOP) ||
            !is_bool(blocking))
            return 0;
        if (req != NULL ? !is_int(req, -INT32_TOP - 1, INT32_TOP) : blocking->type != V_TRUE)
            return 0;  /* a blocking call's non-integer req is an odd extra */
        flags = blocking->type == V_TRUE ? s->f_blocking : 0;
        if (rule == R_SEND) {
            if (!is_bool(sync))
                return 0;
            if (by[K_SIZE] != NULL && !is_int(by[K_SIZE], 0, INT64_MAX))
                return 0;
            size = by[K_SIZE] ? by[K_SIZE]->i : -1;
            flags += sync->type == V_TRUE ? s->f_sync : 0;
            own = OWN_SEND;
        } else {
            own = OWN_RECV;
        }
        peer = pf->i;
        tag = by[K_TAG]->i;
        reqv = req ? req->i : -1;
        break;
    }
    case R_CONSUME: {
        const field *send = by[K_SEND], *src = by[K_SRC];
        if (!is_int(by[K_RECV], 0, INT32_TOP) || !is_int(src, 0, s->nprocs - 1) ||
            !is_int(by[K_TAG], 0, INT32_TOP))
            return 0;
        if (send != NULL && (send->type != V_LIST || send->count != 2 || send->l0 != src->i ||
                             send->l1 < 0 || send->l1 > INT32_TOP))
            return 0;
        own = OWN_CONSUME;
        ref = by[K_RECV]->i;
        peer = src->i;
        tag = by[K_TAG]->i;
        sseq = send ? send->l1 : -1;
        break;
    }
    case R_WAITING: {
        const field *mode = by[K_MODE];
        if (mode != NULL && !(mode->type == V_STR &&
                              ((mode->slen == 3 && memcmp(mode->s, "all", 3) == 0) ||
                               (mode->slen == 3 && memcmp(mode->s, "any", 3) == 0))))
            return 0;
    }
        /* fall through */
    case R_WAIT:
        if (by[K_REQS] == NULL || by[K_REQS]->type != V_LIST)
            return 0;
        break;
    case R_COLL: {
        const field *root = by[K_ROOT], *count = by[K_COUNT];
        if (!is_name(by[K_OP]) || (root != NULL && !is_int(root, 0, INT64_MAX)) ||
            (count != NULL && !is_int(count, 0, INT64_MAX)) ||
            (by[K_DTYPE] != NULL && by[K_DTYPE]->type != V_STR) ||
            (by[K_REDOP] != NULL && by[K_REDOP]->type != V_STR))
            return 0;
        break;
    }
    case R_COLL_EXIT:
        if (!is_name(by[K_OP]))
            return 0;
        break;
    case R_LOCK:
        if (!is_name(by[K_LOCK]))
            return 0;
        break;
    case R_STATE:
        if (by[K_VARS] == NULL || by[K_VARS]->type != V_OBJ)
            return 0;
        break;
    default: /* R_FINAL */
        break;
    }
    i64 sid = -1;
    if (site != NULL && site->type == V_STR && (sid = site_id(s, site->s, site->slen, r)) < 0)
        return -1;
    if (put_extras(s, fs, nf, own, r) < 0 || check_key_order(s, code, fs, nf, seen) < 0)
        return -1;
    i64 word = (i64)seen | ((i64)nf << KEYS_COUNT_SHIFT);
    for (int j = 0; j < nf; j++)
        if (fs[j].key == K_OTHER)
            word |= KEYS_OTHER;
    s->keys[r] = word;
    i64 **c = s->ints;
    c[C_RANK][r] = by[K_RANK]->i;
    c[C_SEQ][r] = by[K_SEQ]->i;
    c[C_COMM][r] = comm ? comm->i : 0;
    c[C_PEER][r] = peer;
    c[C_TAG][r] = tag;
    c[C_REQ][r] = reqv;
    c[C_REF][r] = ref;
    c[C_SSEQ][r] = sseq;
    c[C_SIZE][r] = size;
    c[C_CALL][r] = call ? call->i : -1;
    c[C_SITE][r] = sid;
    s->t[r] = t == NULL || t->type == V_NULL ? NAN : t->type == V_INT ? (double)t->i : t->f;
    s->code[r] = (int8_t)code;
    s->flags[r] = (int8_t)flags;
    return 1;
}

static void set_defaults(Scanner *s, Py_ssize_t r)
{
    for (int k = 0; k < NINTS; k++)
        s->ints[k][r] = INT_DEFAULTS[k];
    s->t[r] = NAN;
    s->code[r] = 0;
    s->flags[r] = 0;
    s->keys[r] = 0;
}

static int is_blank(const char *p, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        char c = p[i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\x0b' && c != '\x0c')
            return 0;
    }
    return 1;
}

/* ------------------------------------------------------------ the type */

static void scanner_free_arrays(Scanner *s)
{
    for (int k = 0; k < NINTS; k++) {
        PyMem_Free(s->ints[k]);
        s->ints[k] = NULL;
    }
    PyMem_Free(s->line);
    PyMem_Free(s->keys);
    PyMem_Free(s->t);
    PyMem_Free(s->code);
    PyMem_Free(s->flags);
    s->line = s->keys = NULL;
    s->t = NULL;
    s->code = s->flags = NULL;
}

static void scanner_dealloc(Scanner *s)
{
    scanner_free_arrays(s);
    clear_sites(s);
    clear_slots(s);
    PyMem_Free(s->sites);
    Py_XDECREF(s->names);
    Py_XDECREF(s->first);
    Py_XDECREF(s->fallback);
    Py_XDECREF(s->extras);
    Py_XDECREF(s->kinds);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static int scanner_init(Scanner *s, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"nprocs", "kinds", "max_lines", "max_line_bytes", "f_blocking",
                             "f_sync", "fallback_all", "give_up", NULL};
    long long nprocs;
    PyObject *kinds;
    Py_ssize_t max_lines, max_line_bytes, give_up;
    int f_blocking, f_sync, fallback_all;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "LO!nniipn", kwlist, &nprocs, &PyTuple_Type,
                                     &kinds, &max_lines, &max_line_bytes, &f_blocking, &f_sync,
                                     &fallback_all, &give_up))
        return -1;
    if (s->kinds != NULL) {
        PyErr_SetString(PyExc_TypeError, "Scanner is initialised once");
        return -1;
    }
    if (nprocs < 1 || nprocs > INT32_TOP || max_lines < 1 || max_line_bytes < 1 ||
        max_lines > PY_SSIZE_T_MAX / 16 || PyTuple_GET_SIZE(kinds) > MAX_KINDS || give_up < 0 ||
        f_blocking < 0 || f_blocking > 63 || f_sync < 0 || f_sync > 63) {
        PyErr_SetString(PyExc_ValueError, "Scanner: an argument is out of range");
        return -1;
    }
    s->nprocs = nprocs;
    s->max_lines = max_lines;
    s->max_line_bytes = max_line_bytes;
    s->f_blocking = f_blocking;
    s->f_sync = f_sync;
    s->fallback_all = fallback_all;
    s->give_up = give_up;
    s->nkinds = (int)PyTuple_GET_SIZE(kinds);
    for (int c = 0; c < s->nkinds; c++) {
        PyObject *name = PyTuple_GET_ITEM(kinds, c);
        const char *text = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &s->kind_lens[c])
                                                 : NULL;
        if (text == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "Scanner: kinds must be strings");
            return -1;
        }
        s->kind_names[c] = text;
        s->rule_of[c] = R_NONE;
        for (size_t j = 0; j < sizeof RULES / sizeof RULES[0]; j++)
            if (strcmp(RULES[j].name, text) == 0)
                s->rule_of[c] = RULES[j].rule;
    }
    s->kinds = Py_NewRef(kinds);
    size_t n = (size_t)max_lines;
    for (int k = 0; k < NINTS; k++)
        s->ints[k] = PyMem_Malloc(n * sizeof(i64));
    s->line = PyMem_Malloc(n * sizeof(i64));
    s->keys = PyMem_Malloc(n * sizeof(i64));
    s->t = PyMem_Malloc(n * sizeof(double));
    s->code = PyMem_Malloc(n);
    s->flags = PyMem_Malloc(n);
    int missing = s->line == NULL || s->keys == NULL || s->t == NULL || s->code == NULL || s->flags == NULL;
    for (int k = 0; k < NINTS; k++)
        missing |= s->ints[k] == NULL;
    if (missing) {
        scanner_free_arrays(s);
        PyErr_NoMemory();
        return -1;
    }
    return new_chunk(s);
}

static int ready(Scanner *s)
{
    if (s->kinds == NULL || s->names == NULL) {
        PyErr_SetString(PyExc_ValueError, "Scanner is not initialised");
        return 0;
    }
    return 1;
}

static int add_fallback(Scanner *s, Py_ssize_t r, const char *line, Py_ssize_t n)
{
    PyObject *item = Py_BuildValue("(nny#)", r, s->nlines, line, n);
    int bad = item == NULL || PyList_Append(s->fallback, item) < 0;
    Py_XDECREF(item);
    return bad ? -1 : 0;
}

static PyObject *scanner_scan(Scanner *s, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos;
    int eof;
    if (!PyArg_ParseTuple(args, "y*np", &view, &pos, &eof))
        return NULL;
    PyObject *result = NULL;
    if (!ready(s))
        goto out;
    if (pos < 0 || pos > view.len) {
        PyErr_SetString(PyExc_ValueError, "scan: pos is outside the data");
        goto out;
    }
    const char *base = view.buf;
    Py_ssize_t len = view.len, top = s->max_line_bytes;
    while (!s->done) {
        if (s->nlines >= s->max_lines) {
            s->done = 1;
            break;
        }
        Py_ssize_t rest = len - pos;
        if (rest == 0) {
            s->done = eof;
            break;
        }
        Py_ssize_t look = rest <= top ? rest : top + 1;
        const char *nl = memchr(base + pos, '\n', (size_t)look);
        Py_ssize_t n;
        if (nl != NULL)
            n = nl - (base + pos) + 1;
        else if (rest > top)
            n = top + 1;
        else if (eof)
            n = rest;
        else
            break;  /* an incomplete line: more input needed */
        if (n > top) {  /* readline(top + 1) gives top + 1 bytes: too long */
            s->too_long = s->nlines++;
            s->nbytes += top + 1;
            s->done = 1;
            pos += n;
            break;
        }
        const char *line = base + pos;
        pos += n;
        s->nbytes += n;
        if (is_blank(line, n)) {
            s->nlines++;
            continue;
        }
        Py_ssize_t r = s->nrec++;
        s->line[r] = s->nlines;
        if (PyList_GET_SIZE(s->fallback) <= s->give_up) {
            set_defaults(s, r);
            int rc = s->fallback_all ? 0 : scan_record(s, line, line + n, r);
            if (rc < 0 || (rc == 0 && add_fallback(s, r, line, n) < 0))
                goto out;
        }
        s->nlines++;
    }
    result = Py_BuildValue("(nO)", pos, s->done ? Py_True : Py_False);
out:
    PyBuffer_Release(&view);
    return result;
}

static PyObject *scanner_take(Scanner *s, PyObject *Py_UNUSED(ignored))
{
    if (!ready(s))
        return NULL;
    Py_ssize_t n = s->nrec;
    PyObject *cols = PyDict_New(), *lines = NULL, *keys = NULL, *result = NULL;
    if (cols == NULL)
        return NULL;
    for (int k = 0; k < NINTS; k++) {
        PyObject *b = PyBytes_FromStringAndSize((const char *)s->ints[k], n * (Py_ssize_t)sizeof(i64));
        int bad = b == NULL || PyDict_SetItemString(cols, INT_NAMES[k], b) < 0;
        Py_XDECREF(b);
        if (bad)
            goto out;
    }
    struct { const char *name; const void *data; Py_ssize_t size; } more[] = {
        {"t", s->t, (Py_ssize_t)sizeof(double)}, {"code", s->code, 1}, {"flags", s->flags, 1},
    };
    for (size_t j = 0; j < sizeof more / sizeof more[0]; j++) {
        PyObject *b = PyBytes_FromStringAndSize(more[j].data, n * more[j].size);
        int bad = b == NULL || PyDict_SetItemString(cols, more[j].name, b) < 0;
        Py_XDECREF(b);
        if (bad)
            goto out;
    }
    lines = PyBytes_FromStringAndSize((const char *)s->line, n * (Py_ssize_t)sizeof(i64));
    keys = PyBytes_FromStringAndSize((const char *)s->keys, n * (Py_ssize_t)sizeof(i64));
    if (lines == NULL || keys == NULL)
        goto out;
    result = Py_BuildValue("(nnnOOOOOOnOO)", s->nlines, s->nbytes, n, cols, lines, s->names,
                           s->first, s->fallback, s->extras, s->too_long, keys,
                           s->irregular ? Py_True : Py_False);
    if (result != NULL && new_chunk(s) < 0)
        Py_CLEAR(result);
out:
    Py_DECREF(cols);
    Py_XDECREF(lines);
    Py_XDECREF(keys);
    return result;
}

static PyMethodDef scanner_methods[] = {
    {"scan", (PyCFunction)scanner_scan, METH_VARARGS,
     "scan(data, pos, eof) -> (pos, done): the complete lines of data[pos:] into the chunk."},
    {"take", (PyCFunction)scanner_take, METH_NOARGS,
     "take() -> (nlines, nbytes, nrec, cols, lines, names, first, fallback, extras, too_long, "
     "keys, irregular): "
     "the chunk scanned; a new one begins."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mpvis.tracefile._cscan.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Scanner(nprocs, kinds, max_lines, max_line_bytes, f_blocking, f_sync, "
              "fallback_all, give_up): trace lines to a Batch's columns (see scan.py).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)scanner_init,
    .tp_dealloc = (destructor)scanner_dealloc,
    .tp_methods = scanner_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_cscan",
    "Trace-file lines to the columns of a Batch, in C (see mpvis/tracefile/scan.py).",
    -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__cscan(void)
{
    for (int k = 0; k < NKEYS; k++)
        if ((key_objs[k] = PyUnicode_InternFromString(KEY_NAMES[k])) == NULL)
            return NULL;
    if (PyType_Ready(&ScannerType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    PyObject *keys = PyTuple_New(NKEYS);
    if (keys == NULL) {
        Py_DECREF(m);
        return NULL;
    }
    for (int k = 0; k < NKEYS; k++)
        PyTuple_SET_ITEM(keys, k, Py_NewRef(key_objs[k]));
    if (PyModule_AddObjectRef(m, "Scanner", (PyObject *)&ScannerType) < 0 ||
        PyModule_AddObject(m, "KEYS", keys) < 0) {
        Py_XDECREF(keys);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
