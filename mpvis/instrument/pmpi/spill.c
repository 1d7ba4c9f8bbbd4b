/* mpvis PMPI trace library: the spill file of a rank whose collector is gone.
 *
 * The rule is the mpi4py path's (mpvis/instrument/transport.py, the reference;
 * format read by mpvis/tracefile/spill.py): a rank that loses its collector
 * writes the records the collector may not have received to
 *
 *     $MPVIS_SPILL_DIR/spill-$MPVIS_RUN-rank-<r>.jsonl
 *
 * (MPVIS_SPILL_DIR defaults to $TMPDIR, else /tmp; MPVIS_RUN to "run"):
 * JSON Lines, first {"kind": "mpvis-spill", "version": 1, "rank": r,
 * "reason": "..."}, then the rank's records in seq order, one JSON object a
 * line, written in pieces of SPILL_PIECE records, each written out at once
 * (if mpiexec kills the rank midway, the lines written are kept; the reader
 * drops a cut last line).  No file when there is nothing to spill.
 *
 * The records are transcoded from the msgpack maps the flusher ships
 * (core.c: encode) with one change: a record's `site`, a small integer on the
 * wire, is written as the site's raw name "@BASE:PC:FUNC+0xOFF:PATH" (as the
 * batch's "sites" list names it for the collector).  `mpvis recover` and
 * `mpvis run` turn raw names into file:line and `func` when they merge the
 * spill (mpvis/collector/symbolize.py), as the collector does for shipped
 * records.  Runs off the program's path only (the flusher, or a thread that
 * found the connection broken); uses plain write(2), no stdio buffering.
 */
#define _GNU_SOURCE
#include "mvp.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SPILL_PIECE 2000

typedef struct { char *p; size_t len, cap; } jbuf;

static int jneed(jbuf *b, size_t n) {
    if (b->len + n <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 65536;
    while (cap < b->len + n) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}
static void jput(jbuf *b, const char *s, size_t n) {
    if (jneed(b, n) == 0) { memcpy(b->p + b->len, s, n); b->len += n; }
}
static void jputs(jbuf *b, const char *s) { jput(b, s, strlen(s)); }

/* The length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_len(const uint8_t *s, size_t n) {
    uint8_t c = s[0];
    size_t k;
    uint32_t cp;
    if (c < 0x80) return 1;
    if ((c & 0xe0) == 0xc0) { k = 2; cp = c & 0x1f; }
    else if ((c & 0xf0) == 0xe0) { k = 3; cp = c & 0x0f; }
    else if ((c & 0xf8) == 0xf0) { k = 4; cp = c & 0x07; }
    else return 0;
    if (k > n) return 0;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000)
        || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return k;
}

/* A JSON string: escapes as JSON needs; bytes that are not UTF-8 become U+FFFD. */
static void jstr(jbuf *b, const uint8_t *s, size_t n) {
    jput(b, "\"", 1);
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        if (c == '"' || c == '\\') { char e[2] = {'\\', (char)c}; jput(b, e, 2); i++; continue; }
        if (c < 0x20) { char e[8]; snprintf(e, sizeof e, "\\u%04x", c); jputs(b, e); i++; continue; }
        size_t k = utf8_len(s + i, n - i);
        if (k == 0) { jputs(b, "\\ufffd"); i++; continue; }
        jput(b, (const char *)s + i, k);
        i += k;
    }
    jput(b, "\"", 1);
}

static void jdouble(jbuf *b, double d) {
    char t[40];
    if (!isfinite(d)) { jputs(b, "null"); return; }  /* as the journal (orjson) writes them */
    snprintf(t, sizeof t, "%.17g", d);
    jputs(b, t);
    if (!strpbrk(t, ".e")) jputs(b, ".0");  /* stays a float for a JSON reader */
}

typedef struct { const uint8_t *p, *end; } rd;

static int be(rd *r, size_t n, uint64_t *v) {
    if ((size_t)(r->end - r->p) < n) return -1;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) x = (x << 8) | r->p[i];
    r->p += n;
    *v = x;
    return 0;
}

static int value(rd *r, jbuf *b, int depth, const char *(*site)(uint32_t));

/* A string's bytes (str8/16/32 or fixstr); -1 if the value is not a string. */
static int str_at(rd *r, const uint8_t **s, size_t *n) {
    if (r->p >= r->end) return -1;
    uint8_t c = *r->p++;
    uint64_t len;
    if ((c & 0xe0) == 0xa0) len = c & 0x1f;
    else if (c == 0xd9) { if (be(r, 1, &len)) return -1; }
    else if (c == 0xda) { if (be(r, 2, &len)) return -1; }
    else if (c == 0xdb) { if (be(r, 4, &len)) return -1; }
    else return -1;
    if ((uint64_t)(r->end - r->p) < len) return -1;
    *s = r->p;
    *n = (size_t)len;
    r->p += len;
    return 0;
}

static int map(rd *r, jbuf *b, uint64_t n, int depth, const char *(*site)(uint32_t)) {
    jput(b, "{", 1);
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *k;
        size_t kl;
        if (i) jput(b, ",", 1);
        if (str_at(r, &k, &kl)) return -1;
        jstr(b, k, kl);
        jput(b, ":", 1);
        /* the record's site id (top level only) becomes its raw name */
        if (depth == 0 && site && kl == 4 && memcmp(k, "site", 4) == 0 && r->p < r->end
            && (*r->p < 0x80 || *r->p == 0xcc || *r->p == 0xcd || *r->p == 0xce)) {
            rd save = *r;
            uint64_t id;
            uint8_t c = *r->p++;
            if (c < 0x80) id = c;
            else if (be(r, c == 0xcc ? 1 : c == 0xcd ? 2 : 4, &id)) return -1;
            const char *name = site((uint32_t)id);
            if (name) { jstr(b, (const uint8_t *)name, strlen(name)); continue; }
            *r = save;
        }
        if (value(r, b, depth + 1, site)) return -1;
    }
    jput(b, "}", 1);
    return 0;
}

static int array(rd *r, jbuf *b, uint64_t n, int depth, const char *(*site)(uint32_t)) {
    jput(b, "[", 1);
    for (uint64_t i = 0; i < n; i++) {
        if (i) jput(b, ",", 1);
        if (value(r, b, depth + 1, site)) return -1;
    }
    jput(b, "]", 1);
    return 0;
}

/* One msgpack value as JSON (the subset core.c writes). */
static int value(rd *r, jbuf *b, int depth, const char *(*site)(uint32_t)) {
    if (r->p >= r->end || depth > 64) return -1;
    uint8_t c = *r->p;
    uint64_t v;
    char t[32];
    if (c < 0x80) { r->p++; snprintf(t, sizeof t, "%u", c); jputs(b, t); return 0; }
    if (c >= 0xe0) { r->p++; snprintf(t, sizeof t, "%d", (int)(int8_t)c); jputs(b, t); return 0; }
    if ((c & 0xe0) == 0xa0 || c == 0xd9 || c == 0xda || c == 0xdb) {
        const uint8_t *s;
        size_t n;
        if (str_at(r, &s, &n)) return -1;
        jstr(b, s, n);
        return 0;
    }
    r->p++;
    if ((c & 0xf0) == 0x80) return map(r, b, c & 0x0f, depth, site);
    if ((c & 0xf0) == 0x90) return array(r, b, c & 0x0f, depth, site);
    switch (c) {
    case 0xc0: jputs(b, "null"); return 0;
    case 0xc2: jputs(b, "false"); return 0;
    case 0xc3: jputs(b, "true"); return 0;
    case 0xcc: case 0xcd: case 0xce: case 0xcf:
        if (be(r, (size_t)1 << (c - 0xcc), &v)) return -1;
        snprintf(t, sizeof t, "%llu", (unsigned long long)v);
        jputs(b, t);
        return 0;
    case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
        size_t n = (size_t)1 << (c - 0xd0);
        if (be(r, n, &v)) return -1;
        int64_t s = n == 8 ? (int64_t)v : (int64_t)(v << (64 - 8 * n)) >> (64 - 8 * n);
        snprintf(t, sizeof t, "%lld", (long long)s);
        jputs(b, t);
        return 0;
    }
    case 0xca: {
        float f;
        uint32_t u;
        if (be(r, 4, &v)) return -1;
        u = (uint32_t)v;
        memcpy(&f, &u, 4);
        jdouble(b, f);
        return 0;
    }
    case 0xcb: {
        double d;
        if (be(r, 8, &v)) return -1;
        memcpy(&d, &v, 8);
        jdouble(b, d);
        return 0;
    }
    case 0xde: if (be(r, 2, &v)) return -1; return map(r, b, v, depth, site);
    case 0xdf: if (be(r, 4, &v)) return -1; return map(r, b, v, depth, site);
    case 0xdc: if (be(r, 2, &v)) return -1; return array(r, b, v, depth, site);
    case 0xdd: if (be(r, 4, &v)) return -1; return array(r, b, v, depth, site);
    default: return -1;
    }
}

static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* mkdir -p of the directory `dir` (best effort: open() reports what fails). */
static void make_dirs(const char *dir) {
    char tmp[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof tmp) return;
    memcpy(tmp, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (tmp[i] == '/' || tmp[i] == 0) {
            char c = tmp[i];
            tmp[i] = 0;
            mkdir(tmp, 0777);
            tmp[i] = c;
        }
    }
}

int mvp_spill_path(int rank, char *out, size_t len) {
    const char *dir = getenv("MPVIS_SPILL_DIR");
    if (!dir || !*dir) dir = getenv("TMPDIR");   /* Python's tempfile.gettempdir() */
    if (!dir || !*dir) dir = "/tmp";
    const char *run = getenv("MPVIS_RUN");
    if (!run || !*run) run = "run";
    int n = snprintf(out, len, "%s/spill-%s-rank-%d.jsonl", dir, run, rank);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

int64_t mvp_spill_write(const mvp_spill_part *parts, int nparts, const char *reason,
                        const char *(*site)(uint32_t), char *path, size_t pathlen,
                        char *err, size_t errlen) {
    int64_t total = 0;
    for (int i = 0; i < nparts; i++) total += parts[i].nrec;
    if (total == 0) return 0;
    if (mvp_spill_path(mvp_rank, path, pathlen) != 0) {
        snprintf(err, errlen, "the spill path is too long");
        return -1;
    }
    char *slash = strrchr(path, '/');
    if (slash && slash != path) {
        *slash = 0;
        make_dirs(path);
        *slash = '/';
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    jbuf b = {0};
    char head[64];
    snprintf(head, sizeof head, "{\"kind\": \"mpvis-spill\", \"version\": 1, \"rank\": %d, ", mvp_rank);
    jputs(&b, head);
    jputs(&b, "\"reason\": ");
    jstr(&b, (const uint8_t *)reason, strlen(reason));
    jputs(&b, "}\n");
    int64_t written = 0, in_piece = 0;
    int failed = 0;
    for (int i = 0; i < nparts && !failed; i++) {
        rd r = {parts[i].p, parts[i].p + parts[i].len};
        for (int64_t k = 0; k < parts[i].nrec; k++) {
            size_t mark = b.len;
            if (value(&r, &b, 0, site) != 0) {  /* cannot happen: core.c wrote them */
                b.len = mark;
                failed = 1;  /* the records before it are kept, in order */
                break;
            }
            jput(&b, "\n", 1);
            written++;
            if (++in_piece == SPILL_PIECE) {
                if (write_all(fd, b.p, b.len) != 0) {
                    snprintf(err, errlen, "%s: %s", path, strerror(errno));
                    free(b.p);
                    close(fd);
                    return -1;
                }
                b.len = 0;
                in_piece = 0;
            }
        }
    }
    int bad = b.len && write_all(fd, b.p, b.len) != 0;
    if (bad) snprintf(err, errlen, "%s: %s", path, strerror(errno));
    free(b.p);
    if (close(fd) != 0 && !bad) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        bad = 1;
    }
    return bad ? -1 : written;
}
