/* mpvis.analysis._cexact: Cypher and Leu's on-the-fly exact race detector, in C.
 *
 * The algorithm, its mapping of records onto the paper's events, its
 * scheduling over the causally ordered stream and its storage bound are those
 * documented in mpvis/analysis/exact_races.py (the Python facade) and
 * docs/exact-races.md; this file is their only implementation.  Names follow
 * the paper and the facade's docstring: A clocks (section 3.1, one uint32 per
 * rank), sparse D clocks of wildcard-source matches (section 3.4, dense here:
 * 0 means absent), the match relation R_m, the per-(communicator, tag) table T
 * of the latest wildcard matches (section 4.4, Theorems 4.2 to 4.4).
 *
 * Input: the records of the stream as dicts, fed in batches (feed); each
 * communication record is read once, when it arrives, into a fixed struct
 * (a missing or ill-typed field raises ValueError/TypeError naming it, as
 * the model's validation would have), and queued per rank while it waits.
 * Everything is bounds-checked: a rank outside [0, nprocs) is ignored as the
 * protocol says, a send naming an unknown rank is a dropped match, seq must
 * fit a clock component (below 2**31 - 1).  Out of memory raises MemoryError
 * and leaves the detector unusable (later calls raise).
 *
 * Lifetimes: receives and sends are reference counted (holders: the per-rank
 * maps, the open lists, the prior and ancestor lists, the tables, a send's
 * match, the waiting and ready items); a receive is freed iteratively (no
 * recursion over long ancestor chains).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef int64_t i64;
typedef uint32_t clk;

#define ANY (-1)
#define SEQ_MAX ((i64)0x7FFFFFFE) /* seq + 1 must stay below 2**31 (a clock component) */

/* ------------------------------------------------------------------ memory */

/* Where an allocation failure jumps: set by each entry point that allocates, per
 * thread (Python code run while a record is read, a __bool__ or __eq__, may switch
 * threads or feed another detector: each entry saves and restores the outer one). */
static _Thread_local jmp_buf *oom_jump;

static void *xmalloc(size_t size)
{
    void *p = PyMem_RawMalloc(size ? size : 1);
    if (p == NULL) {
        longjmp(*oom_jump, 1);
    }
    return p;
}

static void *xcalloc(size_t count, size_t size)
{
    void *p = PyMem_RawCalloc(count ? count : 1, size ? size : 1);
    if (p == NULL) {
        longjmp(*oom_jump, 1);
    }
    return p;
}

static void *xrealloc(void *old, size_t size)
{
    void *p = PyMem_RawRealloc(old, size ? size : 1);
    if (p == NULL) {
        longjmp(*oom_jump, 1);
    }
    return p;
}

/* ---------------------------------------------------------------- hash map */
/* Open addressing, linear probing, backward-shift deletion.  Keys are six
 * int64 words (unused words zero); values a pointer or an int64. */

#define KW 6

typedef union {
    void *p;
    i64 i;
} Val;

typedef struct {
    i64 k[KW];
    Val v;
    uint64_t h; /* the key's hash, never 0; 0 marks a free slot */
} Slot;

typedef struct {
    Slot *slots;
    size_t cap; /* a power of two, or 0 */
    size_t len;
} Map;

typedef struct {
    i64 k[KW];
} Key;

static Key key3(i64 a, i64 b, i64 c)
{
    Key k = {{a, b, c, 0, 0, 0}};
    return k;
}

static uint64_t hash_key(const i64 *k)
{
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < KW; i++) {
        h ^= (uint64_t)k[i];
        h *= 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    h *= 0x94D049BB133111EBull;
    h ^= h >> 29;
    return h ? h : 1;
}

static bool key_eq(const i64 *a, const i64 *b)
{
    for (int i = 0; i < KW; i++) {
        if (a[i] != b[i]) {
            return false;
        }
    }
    return true;
}

static Slot *map_find(const Map *m, Key key)
{
    if (m->len == 0) {
        return NULL;
    }
    uint64_t h = hash_key(key.k);
    size_t mask = m->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        Slot *s = &m->slots[i];
        if (s->h == 0) {
            return NULL;
        }
        if (s->h == h && key_eq(s->k, key.k)) {
            return s;
        }
    }
}

static void map_grow(Map *m);

/* Insert or replace; returns the slot (its old value in *old when *had). */
static Slot *map_put(Map *m, Key key, Val v, Val *old, bool *had)
{
    if ((m->len + 1) * 10 > m->cap * 7) {
        map_grow(m);
    }
    uint64_t h = hash_key(key.k);
    size_t mask = m->cap - 1;
    size_t i = h & mask;
    for (; m->slots[i].h; i = (i + 1) & mask) {
        Slot *s = &m->slots[i];
        if (s->h == h && key_eq(s->k, key.k)) {
            if (old != NULL) {
                *old = s->v;
            }
            if (had != NULL) {
                *had = true;
            }
            s->v = v;
            return s;
        }
    }
    Slot *s = &m->slots[i];
    memcpy(s->k, key.k, sizeof key.k);
    s->v = v;
    s->h = h;
    m->len++;
    if (had != NULL) {
        *had = false;
    }
    return s;
}

static void map_grow(Map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 16;
    Slot *old = m->slots;
    size_t oldcap = m->cap;
    m->slots = xcalloc(cap, sizeof(Slot));
    m->cap = cap;
    size_t mask = cap - 1;
    for (size_t i = 0; i < oldcap; i++) {
        if (old[i].h) {
            size_t j = old[i].h & mask;
            while (m->slots[j].h) {
                j = (j + 1) & mask;
            }
            m->slots[j] = old[i];
        }
    }
    PyMem_RawFree(old);
}

static bool map_del(Map *m, Key key, Val *old)
{
    Slot *s = map_find(m, key);
    if (s == NULL) {
        return false;
    }
    if (old != NULL) {
        *old = s->v;
    }
    size_t mask = m->cap - 1;
    size_t i = (size_t)(s - m->slots);
    s->h = 0;
    m->len--;
    for (size_t j = (i + 1) & mask; m->slots[j].h; j = (j + 1) & mask) {
        size_t home = m->slots[j].h & mask;
        /* move j back to the hole i if its home is not in (i, j] cyclically */
        bool stay = (i < j) ? (i < home && home <= j) : (i < home || home <= j);
        if (!stay) {
            m->slots[i] = m->slots[j];
            m->slots[j].h = 0;
            i = j;
        }
    }
    return true;
}

static void map_clear(Map *m)
{
    PyMem_RawFree(m->slots);
    m->slots = NULL;
    m->cap = 0;
    m->len = 0;
}

/* ------------------------------------------------------- pointer vectors */

typedef struct {
    void **a;
    size_t n, cap;
} PVec;

static void pv_push(PVec *v, void *p)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 4;
        v->a = xrealloc(v->a, v->cap * sizeof(void *));
    }
    v->a[v->n++] = p;
}

static void pv_insert(PVec *v, size_t at, void *p)
{
    pv_push(v, NULL);
    memmove(v->a + at + 1, v->a + at, (v->n - 1 - at) * sizeof(void *));
    v->a[at] = p;
}

static void pv_free(PVec *v)
{
    PyMem_RawFree(v->a);
    v->a = NULL;
    v->n = v->cap = 0;
}

/* ----------------------------------------------------- sends and receives */

typedef struct Recv {
    i64 refs;
    i64 rank, seq, src, tag, comm;
    i64 srank, sseq; /* skey: the send matched, once its consume arrived */
    i64 mtag;        /* the tag of that message */
    i64 cseq;        /* seq of the consume (the WR) */
    bool has_skey, later, matched, dropped, ssync, fast;
    PVec prior; /* receives of the rank open when this one was posted (refs) */
    PVec anc;   /* wildcard matches whose D clock events after this update (refs) */
    clk *dclock; /* D^(s,r) for wildcard sources, 0 = absent; NULL until set */
    clk *clock;  /* A^r */
    clk *mclock; /* A^(s,r) (only A^s while fast) */
} Recv;

typedef struct Send {
    i64 refs;
    i64 rank, seq, dest, tag, comm, order;
    bool sync;
    Recv *match; /* a ref, once the match is processed */
    clk *clock;
} Send;

typedef struct {
    i64 srank, sseq, tag, seq;
} Early;

typedef struct {
    int cat; /* 0: no edge, 1: all to all, 2: from root, 3: to root */
    bool has_root;
    i64 root;
    i64 exits;
    i64 *entered;   /* ranks, in arrival order */
    size_t nentered;
    uint8_t *is_entered; /* per rank */
    clk **clocks;        /* per rank, NULL until its coll is processed */
    bool has_joined;
    size_t joined_n;
    clk *joined;
} Coll;

enum { K_SEND, K_RECV, K_CONSUME, K_WAIT, K_COLL, K_EXIT };

typedef struct {
    int kind;
    bool sync, blocking, has_send;
    i64 rank, seq, peer, tag, comm, req, recv, srank, sseq;
    i64 *reqs; /* wait: the int requests listed (others can name no send) */
    size_t nreqs;
} Rec;

typedef struct {
    Rec *a;
    size_t head, n, cap;
} RecQueue;

typedef struct {
    Recv *r; /* NULL: the item is a rank whose queue to drain */
    i64 rank;
} Item;

typedef struct {
    Item *a;
    size_t head, n, cap;
} ItemQueue;

typedef struct {
    i64 k[3];
    Item *items;
    size_t n, cap;
    bool live;
} Waiter;

enum { W_MS = 1, W_S, W_M, W_C }; /* "ms", "s", "m", "c" of the docs */

typedef struct {
    uint64_t h; /* 0: free */
    size_t idx;
} FoundSlot;

typedef struct {
    PyObject_HEAD
    Py_ssize_t n;
    PyObject *all_to_all, *from_root, *to_root;
    bool broken, final, lenient;
    clk **cur; /* per rank, NULL = all zero */
    i64 *own;
    RecQueue *queues;
    Map sends;     /* (rank, seq) -> Send*, unmatched */
    Map reqs;      /* (rank, req) -> Send* */
    Map recvs;     /* (rank, seq) -> Recv*, open */
    PVec *open;    /* per rank, Recv* (refs) */
    Send **join;   /* per rank, a blocking Ssend awaiting its match (ref) */
    Map tables;    /* (rank, comm, tag) -> PVec* of Recv* (refs) */
    i64 *ntables;  /* per rank: keys of its table */
    i64 tabled;    /* entries of all tables */
    Map early;     /* (rank, recv) -> Early*: consumes whose receive is not processed */
    Map claimed;   /* (rank, seq): at the end, sends named by an unread match */
    Map colls;     /* (comm, n) -> Coll* */
    Map coll_seen; /* (comm, rank) -> colls arrived */
    Map coll_done; /* (comm, rank) -> colls processed */
    Map members;   /* (comm, rank) -> 1 */
    Map nmembers;  /* comm -> members */
    Map windex;    /* waiter key -> index in waiters */
    Waiter *waiters;
    size_t nwaiters, capwaiters, livewaiters;
    ItemQueue ready;
    FoundSlot *found; /* a set of conflicts: their hash and index in foundlist */
    size_t capfoundset;
    /* The set's previous slots while it grows (found_add): those below `moved`
     * are in `found` too, the others only here; NULL when no growth is under way. */
    FoundSlot *oldfound;
    size_t oldcap, moved;
    /* found_bytes calls copying the conflicts without the GIL: feeding waits */
    int copying;
    i64 *foundlist; /* six numbers per conflict, in discovery order */
    size_t nfound, capfound;
    i64 send_order;
} Det;

static clk *clock_new(const Det *d)
{
    return xcalloc((size_t)d->n, sizeof(clk));
}

static void sup_into(const Det *d, clk *a, const clk *b)
{
    for (Py_ssize_t j = 0; j < d->n; j++) {
        a[j] = a[j] >= b[j] ? a[j] : b[j];
    }
}

static clk *cur_of(Det *d, i64 rank)
{
    if (d->cur[rank] == NULL) {
        d->cur[rank] = clock_new(d);
    }
    return d->cur[rank];
}

static Recv *recv_ref(Recv *r)
{
    r->refs++;
    return r;
}

static void recv_unref(Recv *r)
{
    PVec stack = {0};
    pv_push(&stack, r);
    while (stack.n) {
        Recv *x = stack.a[--stack.n];
        if (--x->refs > 0) {
            continue;
        }
        for (size_t i = 0; i < x->prior.n; i++) {
            pv_push(&stack, x->prior.a[i]);
        }
        for (size_t i = 0; i < x->anc.n; i++) {
            pv_push(&stack, x->anc.a[i]);
        }
        pv_free(&x->prior);
        pv_free(&x->anc);
        PyMem_RawFree(x->dclock);
        PyMem_RawFree(x);
    }
    pv_free(&stack);
}

static void send_unref(Send *s)
{
    if (--s->refs > 0) {
        return;
    }
    if (s->match != NULL) {
        recv_unref(s->match);
    }
    PyMem_RawFree(s);
}

static Recv *recv_new(Det *d)
{
    size_t n = (size_t)d->n;
    Recv *r = xcalloc(1, sizeof(Recv) + 2 * n * sizeof(clk));
    r->clock = (clk *)(r + 1);
    r->mclock = r->clock + n;
    r->refs = 1;
    return r;
}

static Send *send_new(Det *d)
{
    Send *s = xcalloc(1, sizeof(Send) + (size_t)d->n * sizeof(clk));
    s->clock = (clk *)(s + 1);
    s->refs = 1;
    return s;
}

/* The wildcard matches whose D clock the events after r's match update: its
 * own (a wildcard source) and r->anc.  Calls f for each. */
#define FOR_ANCESTORS(r, a, body)                                                \
    do {                                                                         \
        if ((r)->src == ANY) {                                                   \
            Recv *a = (r);                                                       \
            body                                                                 \
        }                                                                        \
        for (size_t _i = 0; _i < (r)->anc.n; _i++) {                             \
            Recv *a = (r)->anc.a[_i];                                            \
            body                                                                 \
        }                                                                        \
    } while (0)

static void dclock_setdefault(Det *d, Recv *a, i64 rank, i64 value)
{
    if (a->dclock == NULL) {
        a->dclock = clock_new(d);
    }
    if (a->dclock[rank] == 0) {
        a->dclock[rank] = (clk)value;
    }
}

/* ------------------------------------------------------------- scheduling */

static void ready_push(Det *d, Item it)
{
    ItemQueue *q = &d->ready;
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 64;
        Item *a = xmalloc(cap * sizeof(Item));
        for (size_t i = 0; i < q->n; i++) {
            a[i] = q->a[(q->head + i) % q->cap];
        }
        PyMem_RawFree(q->a);
        q->a = a;
        q->head = 0;
        q->cap = cap;
    }
    q->a[(q->head + q->n) % q->cap] = it;
    q->n++;
}

static Item ready_pop(Det *d)
{
    ItemQueue *q = &d->ready;
    Item it = q->a[q->head];
    q->head = (q->head + 1) % q->cap;
    q->n--;
    return it;
}

static void waiters_compact(Det *d)
{
    size_t k = 0;
    map_clear(&d->windex);
    for (size_t i = 0; i < d->nwaiters; i++) {
        if (d->waiters[i].live) {
            d->waiters[k] = d->waiters[i];
            Key key = key3(d->waiters[k].k[0], d->waiters[k].k[1], d->waiters[k].k[2]);
            map_put(&d->windex, key, (Val){.i = (i64)k}, NULL, NULL);
            k++;
        }
    }
    d->nwaiters = k;
}

static void wait_on(Det *d, int kind, i64 a, i64 b, Item it)
{
    Key key = key3(kind, a, b);
    Slot *s = map_find(&d->windex, key);
    Waiter *w;
    if (s == NULL) {
        if (d->nwaiters > 64 && d->nwaiters > 2 * d->livewaiters) {
            waiters_compact(d);
        }
        if (d->nwaiters == d->capwaiters) {
            d->capwaiters = d->capwaiters ? d->capwaiters * 2 : 16;
            d->waiters = xrealloc(d->waiters, d->capwaiters * sizeof(Waiter));
        }
        w = &d->waiters[d->nwaiters];
        memset(w, 0, sizeof *w);
        w->k[0] = kind;
        w->k[1] = a;
        w->k[2] = b;
        w->live = true;
        map_put(&d->windex, key, (Val){.i = (i64)d->nwaiters}, NULL, NULL);
        d->nwaiters++;
        d->livewaiters++;
    } else {
        w = &d->waiters[s->v.i];
    }
    if (w->n == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 2;
        w->items = xrealloc(w->items, w->cap * sizeof(Item));
    }
    if (it.r != NULL) {
        recv_ref(it.r);
    }
    w->items[w->n++] = it;
}

static void wait_rank(Det *d, int kind, i64 a, i64 b, i64 rank)
{
    wait_on(d, kind, a, b, (Item){NULL, rank});
}

static void wait_recv(Det *d, int kind, i64 a, i64 b, Recv *r)
{
    wait_on(d, kind, a, b, (Item){r, 0});
}

static void waiter_release(Det *d, Waiter *w)
{
    for (size_t i = 0; i < w->n; i++) {
        ready_push(d, w->items[i]); /* the ref moves with the item */
    }
    PyMem_RawFree(w->items);
    w->items = NULL;
    w->n = w->cap = 0;
    w->live = false;
    d->livewaiters--;
}

static void fire(Det *d, int kind, i64 a, i64 b)
{
    Val v;
    if (map_del(&d->windex, key3(kind, a, b), &v)) {
        waiter_release(d, &d->waiters[v.i]);
    }
}

/* Every waiting item onto the ready queue, in the order they waited; no waiter left. */
static void release_all(Det *d)
{
    for (size_t i = 0; i < d->nwaiters; i++) {
        if (d->waiters[i].live) {
            waiter_release(d, &d->waiters[i]);
        }
    }
    d->nwaiters = 0;
    map_clear(&d->windex);
}

/* ------------------------------------------------------------ race tests */

/* Slots of the set of conflicts moved to its new slots per conflict added while
 * it grows: a growth moves its old slots a few at a time, so that no single
 * conflict pays for them all (doubling a set of millions in one go took 60 ms
 * of one batch, and 330 ms in the window, most of it page faults of the new
 * slots); at 4 per conflict the move ends well before the set's next growth
 * (which needs 0.7 * oldcap conflicts more). */
#define FOUND_MOVE 4

/* The slot of key among `n` slots: where it is, or the free one to take. */
static FoundSlot *found_probe(const Det *d, FoundSlot *slots, size_t n, Key key, uint64_t h)
{
    size_t mask = n - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        FoundSlot *f = &slots[i];
        if (f->h == 0 || (f->h == h && key_eq(d->foundlist + f->idx * KW, key.k))) {
            return f;
        }
    }
}

/* Whether key is in the set (its new slots, or the old ones not moved yet: a
 * key is added to the new slots only if neither holds it, so it is never in
 * both unless moved, and the old slots are left as they are). */
static bool found_in(const Det *d, Key key, uint64_t h)
{
    if (found_probe(d, d->found, d->capfoundset, key, h)->h != 0) {
        return true;
    }
    return d->oldfound != NULL && found_probe(d, d->oldfound, d->oldcap, key, h)->h != 0;
}

static bool found_has(const Det *d, Key key)
{
    return d->nfound && found_in(d, key, hash_key(key.k));
}

/* Move up to `k` of the old slots of a growth under way to the new ones. */
static void found_move(Det *d, size_t k)
{
    size_t mask = d->capfoundset - 1;
    size_t end = d->moved + k < d->oldcap ? d->moved + k : d->oldcap;
    for (size_t i = d->moved; i < end; i++) {
        FoundSlot *o = &d->oldfound[i];
        if (o->h) {
            size_t j = o->h & mask;
            while (d->found[j].h) {
                j = (j + 1) & mask;
            }
            d->found[j] = *o;
        }
    }
    d->moved = end;
    if (end == d->oldcap) {
        PyMem_RawFree(d->oldfound);
        d->oldfound = NULL;
        d->oldcap = d->moved = 0;
    }
}

/* Whether key is new: then it is in the set, with index nfound (the caller appends it). */
static bool found_add(Det *d, Key key)
{
    if (d->oldfound != NULL) {
        found_move(d, FOUND_MOVE);
    }
    if ((d->nfound + 1) * 10 > d->capfoundset * 7) {
        if (d->oldfound != NULL) { /* not expected (FOUND_MOVE): end the last growth */
            found_move(d, d->oldcap);
        }
        /* fresh zeroed slots: a big block is mapped and faulted in as used */
        size_t cap = d->capfoundset ? d->capfoundset * 2 : 256;
        d->oldfound = d->found;
        d->oldcap = d->capfoundset;
        d->moved = 0;
        d->found = xcalloc(cap, sizeof(FoundSlot));
        d->capfoundset = cap;
        if (d->oldcap == 0) {
            PyMem_RawFree(d->oldfound);
            d->oldfound = NULL;
        }
    }
    uint64_t h = hash_key(key.k);
    FoundSlot *f = found_probe(d, d->found, d->capfoundset, key, h);
    if (f->h != 0) {
        return false;
    }
    if (d->oldfound != NULL && found_probe(d, d->oldfound, d->oldcap, key, h)->h != 0) {
        return false;
    }
    f->h = h;
    f->idx = d->nfound;
    return true;
}

static void conflict(Det *d, Recv *c, Send *s2)
{
    if (!c->matched || !c->has_skey || c->srank == s2->rank || c->comm != s2->comm) {
        return;
    }
    if (c->tag != ANY && c->tag != s2->tag) {
        return;
    }
    if (c->dclock != NULL) {
        for (Py_ssize_t j = 0; j < d->n; j++) {
            if (c->dclock[j] != 0 && s2->clock[j] >= c->dclock[j]) {
                return; /* R_h+((s1, r1), s2), Theorem 3.4 */
            }
        }
    }
    Key key = {{c->rank, c->seq, c->srank, c->sseq, s2->rank, s2->seq}};
    if (!found_add(d, key)) {
        return;
    }
    if (d->nfound == d->capfound) {
        d->capfound = d->capfound ? d->capfound * 2 : 256;
        d->foundlist = xrealloc(d->foundlist, d->capfound * KW * sizeof(i64));
    }
    memcpy(d->foundlist + d->nfound * KW, key.k, sizeof key.k);
    d->nfound++;
}

static PVec *table_get(Det *d, i64 rank, i64 comm, i64 tag)
{
    Slot *s = map_find(&d->tables, key3(rank, comm, tag));
    return s ? s->v.p : NULL;
}

/* Theorem 4.2: a match conflicting with s2 precedes (s2, r2) in R_m. */
static void test_matched(Det *d, Recv *r2, Send *s2, PVec *prior)
{
    for (size_t i = 0; i < prior->n; i++) {
        Recv *c = prior->a[i];
        if (c->matched && c->src == ANY) {
            conflict(d, c, s2);
        }
    }
    i64 tags[2] = {s2->tag, ANY};
    for (int t = 0; t < 2; t++) {
        PVec *entries = table_get(d, r2->rank, s2->comm, tags[t]);
        if (entries == NULL) {
            continue;
        }
        for (size_t i = entries->n; i-- > 0;) {
            Recv *c = entries->a[i];
            if (c->cseq < r2->seq) { /* the latest closed before r2 was posted */
                conflict(d, c, s2);
                break;
            }
        }
    }
}

/* Theorem 4.4: an unmatched s2 against the latest wildcard match per tag. */
static void test_unmatched(Det *d, Send *s2)
{
    if (s2->dest < 0 || s2->dest >= d->n) {
        return;
    }
    i64 tags[2] = {s2->tag, ANY};
    for (int t = 0; t < 2; t++) {
        PVec *entries = table_get(d, s2->dest, s2->comm, tags[t]);
        if (entries != NULL && entries->n) {
            conflict(d, entries->a[entries->n - 1], s2);
        }
    }
}

static i64 oldest_open_unmatched(Det *d, i64 rank, i64 dflt)
{
    PVec *opened = &d->open[rank];
    bool any = false;
    i64 best = 0;
    for (size_t i = 0; i < opened->n; i++) {
        Recv *p = opened->a[i];
        if (!p->matched && (!any || p->seq < best)) {
            best = p->seq;
            any = true;
        }
    }
    return any ? best : dflt;
}

/* Keep the wildcard match in T (section 4.4), pruning dominated entries. */
static void tabulate(Det *d, Recv *r)
{
    Key key = key3(r->rank, r->comm, r->tag);
    Slot *s = map_find(&d->tables, key);
    PVec *entries;
    if (s == NULL) {
        entries = xcalloc(1, sizeof(PVec));
        map_put(&d->tables, key, (Val){.p = entries}, NULL, NULL);
        d->ntables[r->rank]++;
    } else {
        entries = s->v.p;
    }
    size_t at = entries->n;
    while (at && ((Recv *)entries->a[at - 1])->seq > r->seq) {
        at--;
    }
    pv_insert(entries, at, recv_ref(r));
    d->tabled++;
    /* Pending queries: unmatched open receives, and receives not yet posted. */
    i64 oldest = oldest_open_unmatched(d, r->rank, d->own[r->rank]);
    size_t keep = 0;
    for (size_t k = 0; k < entries->n; k++) {
        if (((Recv *)entries->a[k])->cseq < oldest) {
            keep = k;
        }
    }
    if (keep) {
        for (size_t k = 0; k < keep; k++) {
            recv_unref(entries->a[k]);
        }
        memmove(entries->a, entries->a + keep, (entries->n - keep) * sizeof(void *));
        entries->n -= keep;
        d->tabled -= (i64)keep;
    }
}

/* ----------------------------------------------------------------- matches */

static void drop(Det *d, Recv *r)
{
    r->dropped = true;
    if (r->has_skey) {
        map_del(&d->claimed, key3(r->srank, r->sseq, 0), NULL);
        fire(d, W_MS, r->srank, r->sseq);
    }
    fire(d, W_M, r->rank, r->seq);
}

/* R_m((s', p), (s, r)) for p before r, p matched to s' (known), r to s. */
static bool related(const Recv *p, const Recv *r, i64 srank, i64 sseq, i64 stag)
{
    if (p->comm != r->comm || !p->has_skey) {
        return false;
    }
    if ((p->src == ANY || p->src == srank) && (p->tag == ANY || p->tag == stag)) {
        return true;
    }
    return p->srank == srank && p->sseq < sseq && (r->tag == ANY || r->tag == p->mtag);
}

static bool in_pvec(const PVec *v, const void *p)
{
    for (size_t i = 0; i < v->n; i++) {
        if (v->a[i] == p) {
            return true;
        }
    }
    return false;
}

/* Read the match (s, r): Type A clock, D-clock ancestors, race tests. */
static void process_match(Det *d, Recv *r, Send *s, PVec *preds)
{
    size_t n = (size_t)d->n;
    r->matched = true;
    r->ssync = s->sync;
    s->match = recv_ref(r);
    s->refs++; /* kept alive through this function */
    Val old;
    if (map_del(&d->sends, key3(s->rank, s->seq, 0), &old)) {
        send_unref(old.p);
    }
    if (d->final) {
        map_del(&d->claimed, key3(s->rank, s->seq, 0), NULL);
    }
    if (preds->n || r->later || s->sync) {
        memcpy(r->mclock, s->clock, n * sizeof(clk));
        sup_into(d, r->mclock, r->clock);
        for (size_t i = 0; i < preds->n; i++) {
            sup_into(d, r->mclock, ((Recv *)preds->a[i])->mclock);
        }
    } else { /* A^r is below the rank's clock at the consume; only A^s is new there */
        memcpy(r->mclock, s->clock, n * sizeof(clk));
        r->fast = true;
    }
    bool wild = r->src == ANY;
    PVec anc = {0}; /* r itself is implicit (FOR_ANCESTORS) */
    for (size_t i = 0; i < preds->n; i++) {
        Recv *p = preds->a[i];
        FOR_ANCESTORS(p, a, {
            if (!in_pvec(&anc, a) && in_pvec(&r->prior, a)) {
                pv_push(&anc, recv_ref(a));
            }
        });
    }
    for (size_t i = 0; i < r->anc.n; i++) {
        recv_unref(r->anc.a[i]);
    }
    pv_free(&r->anc);
    r->anc = anc;
    PVec prior = r->prior;
    r->prior = (PVec){0}; /* only needed until the match is read */
    if (d->ntables[r->rank] || anc.n || wild) {
        test_matched(d, r, s, &prior);
    }
    if (wild) {
        tabulate(d, r);
    }
    for (size_t i = 0; i < prior.n; i++) {
        recv_unref(prior.a[i]);
    }
    pv_free(&prior);
    if (d->livewaiters) {
        fire(d, W_M, r->rank, r->seq);
        fire(d, W_MS, s->rank, s->seq);
    }
    send_unref(s);
}

static void try_match(Det *d, Recv *r)
{
    if (r->matched || r->dropped || !r->has_skey) {
        return;
    }
    i64 srank = r->srank, sseq = r->sseq;
    bool known = 0 <= srank && srank < d->n;
    Send *s = NULL;
    if (known) {
        Slot *slot = map_find(&d->sends, key3(srank, sseq, 0));
        s = slot ? slot->v.p : NULL;
    }
    if (s == NULL || s->dest != r->rank) {
        bool unseen = s == NULL && known && sseq >= d->own[srank];
        if (unseen && !d->lenient) { /* the send is not processed yet */
            wait_recv(d, W_S, srank, sseq, r);
            return;
        }
        drop(d, r); /* names a send that is not there or already matched */
        return;
    }
    PVec preds = {0};
    for (size_t i = 0; i < r->prior.n; i++) {
        Recv *p = r->prior.a[i];
        if (p->matched) {
            if (related(p, r, srank, sseq, s->tag)) {
                pv_push(&preds, p);
            }
        } else if (p->dropped || d->lenient) {
            continue;
        } else if (!p->has_skey) {
            if (!d->final && p->comm == r->comm && (p->src == ANY || p->src == srank) &&
                (p->tag == ANY || r->tag == ANY || p->tag == r->tag)) {
                wait_recv(d, W_M, r->rank, p->seq, r);
                pv_free(&preds);
                return;
            }
        } else if (related(p, r, srank, sseq, s->tag)) {
            wait_recv(d, W_M, r->rank, p->seq, r);
            pv_free(&preds);
            return;
        }
    }
    process_match(d, r, s, &preds);
    pv_free(&preds);
}

static void know(Det *d, Recv *r, i64 srank, i64 sseq, i64 tag, i64 seq)
{
    r->has_skey = true;
    r->srank = srank;
    r->sseq = sseq;
    r->mtag = tag;
    r->cseq = seq;
    try_match(d, r);
    if (!r->matched && d->livewaiters) {
        fire(d, W_M, r->rank, r->seq);
    }
}

/* A consume arrived: its match (s, r) is known from now on. */
static void learn(Det *d, const Rec *rec)
{
    if (!rec->has_send) {
        return;
    }
    Slot *s = map_find(&d->recvs, key3(rec->rank, rec->recv, 0));
    if (s == NULL) {
        Early *e = xmalloc(sizeof(Early));
        e->srank = rec->srank;
        e->sseq = rec->sseq;
        e->tag = rec->tag;
        e->seq = rec->seq;
        Val old;
        bool had;
        map_put(&d->early, key3(rec->rank, rec->recv, 0), (Val){.p = e}, &old, &had);
        if (had) {
            PyMem_RawFree(old.p);
        }
    } else {
        know(d, s->v.p, rec->srank, rec->sseq, rec->tag, rec->seq);
    }
}

/* ----------------------------------------------------------------- records */

/* Whether a WS's successor must still wait for the match of s. */
static bool needs_match(Det *d, const Send *s)
{
    if (s->match != NULL || d->lenient) {
        return false;
    }
    return !d->final || map_find(&d->claimed, key3(s->rank, s->seq, 0)) != NULL;
}

/* The event after the WS of s (rule 3): inherit A^(s,r), update D clocks. */
static void complete(Det *d, Send *s, i64 rank, i64 seq)
{
    Recv *r = s->match;
    if (r == NULL) {
        return;
    }
    sup_into(d, cur_of(d, rank), r->mclock);
    i64 value = seq + 1;
    FOR_ANCESTORS(r, a, { dclock_setdefault(d, a, rank, value); });
}

static void begin(Det *d, i64 rank, i64 seq, Send *join)
{
    clk *cur = cur_of(d, rank);
    cur[rank] += (clk)(seq + 1 - d->own[rank]);
    d->own[rank] = seq + 1;
    if (join != NULL) {
        d->join[rank] = NULL;
        complete(d, join, rank, seq);
        send_unref(join);
    }
}

static bool on_send(Det *d, const Rec *rec, i64 rank, Send *join)
{
    i64 seq = rec->seq;
    begin(d, rank, seq, join);
    Send *s = send_new(d);
    s->rank = rank;
    s->seq = seq;
    s->dest = rec->peer;
    s->tag = rec->tag;
    s->comm = rec->comm;
    s->sync = rec->sync;
    s->order = d->send_order++;
    memcpy(s->clock, cur_of(d, rank), (size_t)d->n * sizeof(clk));
    Val old;
    bool had;
    map_put(&d->sends, key3(rank, seq, 0), (Val){.p = s}, &old, &had);
    if (had) {
        send_unref(old.p);
    }
    if (rec->blocking) {
        if (rec->sync) {
            s->refs++;
            d->join[rank] = s;
        }
    } else {
        s->refs++;
        map_put(&d->reqs, key3(rank, rec->req, 0), (Val){.p = s}, &old, &had);
        if (had) {
            send_unref(old.p);
        }
    }
    if (d->livewaiters) {
        fire(d, W_S, rank, seq);
    }
    return true;
}

static bool on_recv(Det *d, const Rec *rec, i64 rank, Send *join)
{
    i64 seq = rec->seq;
    begin(d, rank, seq, join);
    PVec *opened = &d->open[rank];
    Recv *r = recv_new(d);
    for (size_t i = 0; i < opened->n; i++) {
        Recv *p = opened->a[i];
        pv_push(&r->prior, recv_ref(p));
        if (!p->later) {
            p->later = true;
            if (p->fast) {
                sup_into(d, p->mclock, p->clock);
                p->fast = false;
            }
        }
    }
    r->rank = rank;
    r->seq = seq;
    r->src = rec->peer;
    r->tag = rec->tag;
    r->comm = rec->comm;
    r->cseq = INT64_MAX;
    memcpy(r->clock, cur_of(d, rank), (size_t)d->n * sizeof(clk));
    pv_push(opened, recv_ref(r));
    Val old;
    bool had;
    map_put(&d->recvs, key3(rank, seq, 0), (Val){.p = r}, &old, &had);
    if (had) {
        recv_unref(old.p);
    }
    if (d->early.len && map_del(&d->early, key3(rank, seq, 0), &old)) {
        Early e = *(Early *)old.p;
        PyMem_RawFree(old.p);
        know(d, r, e.srank, e.sseq, e.tag, e.seq);
    }
    return true;
}

static bool on_consume(Det *d, const Rec *rec, i64 rank, Send *join)
{
    Slot *slot = map_find(&d->recvs, key3(rank, rec->recv, 0));
    Recv *r = slot ? slot->v.p : NULL;
    if (r != NULL && !r->matched && !r->dropped && !d->lenient) {
        wait_rank(d, W_M, rank, r->seq, rank);
        return false;
    }
    i64 seq = rec->seq;
    begin(d, rank, seq, join);
    if (r == NULL) {
        return true;
    }
    PVec *opened = &d->open[rank];
    int held = 0; /* the refs of the open list and the map, dropped at the end */
    for (size_t i = 0; i < opened->n; i++) {
        if (opened->a[i] == r) {
            memmove(opened->a + i, opened->a + i + 1, (opened->n - i - 1) * sizeof(void *));
            opened->n--;
            held++;
            break;
        }
    }
    held += map_del(&d->recvs, key3(rank, r->seq, 0), NULL);
    if (r->matched) {
        sup_into(d, cur_of(d, rank), r->mclock);
        i64 value = seq + 1;
        size_t nanc = 0;
        FOR_ANCESTORS(r, a, {
            dclock_setdefault(d, a, rank, value);
            nanc++;
        });
        if (nanc > 1 && !r->ssync) {
            /* Later matches read r->anc only through receives still unmatched, and
             * keep from it only receives open when those were posted. */
            i64 oldest = oldest_open_unmatched(d, rank, seq);
            size_t k = 0;
            for (size_t i = 0; i < r->anc.n; i++) {
                Recv *a = r->anc.a[i];
                if (a->cseq > oldest) {
                    r->anc.a[k++] = a;
                } else {
                    recv_unref(a);
                }
            }
            r->anc.n = k;
        }
    }
    while (held--) {
        recv_unref(r);
    }
    return true;
}

static bool on_wait(Det *d, const Rec *rec, i64 rank, Send *join)
{
    size_t nd = 0;
    Send **done = rec->nreqs ? xmalloc(rec->nreqs * sizeof(Send *)) : NULL;
    i64 *qs = rec->nreqs ? xmalloc(rec->nreqs * sizeof(i64)) : NULL;
    for (size_t i = 0; i < rec->nreqs; i++) {
        Slot *slot = map_find(&d->reqs, key3(rank, rec->reqs[i], 0));
        if (slot != NULL) {
            qs[nd] = rec->reqs[i];
            done[nd++] = slot->v.p;
        }
    }
    for (size_t i = 0; i < nd; i++) {
        Send *s = done[i];
        if (s->sync && needs_match(d, s)) {
            wait_rank(d, W_MS, s->rank, s->seq, rank);
            PyMem_RawFree(done);
            PyMem_RawFree(qs);
            return false;
        }
    }
    i64 seq = rec->seq;
    begin(d, rank, seq, join);
    for (size_t i = 0; i < nd; i++) {
        Send *s = done[i];
        Val old;
        if (!map_del(&d->reqs, key3(rank, qs[i], 0), &old)) {
            continue; /* listed twice */
        }
        if (s->sync) {
            complete(d, s, rank, seq);
        }
        send_unref(old.p);
    }
    PyMem_RawFree(done);
    PyMem_RawFree(qs);
    return true;
}

static bool on_coll(Det *d, const Rec *rec, i64 rank, Send *join)
{
    begin(d, rank, rec->seq, join);
    i64 comm = rec->comm;
    Slot *slot = map_find(&d->coll_done, key3(comm, rank, 0));
    i64 n = slot ? slot->v.i : 0;
    map_put(&d->coll_done, key3(comm, rank, 0), (Val){.i = n + 1}, NULL, NULL);
    slot = map_find(&d->colls, key3(comm, n, 0));
    if (slot != NULL) {
        Coll *inst = slot->v.p;
        if (inst->clocks[rank] == NULL) {
            inst->clocks[rank] = xmalloc((size_t)d->n * sizeof(clk));
        }
        memcpy(inst->clocks[rank], cur_of(d, rank), (size_t)d->n * sizeof(clk));
        if (d->livewaiters) {
            fire(d, W_C, comm, n);
        }
    }
    return true;
}

static void coll_free(Coll *c, Py_ssize_t n)
{
    for (Py_ssize_t j = 0; j < n; j++) {
        PyMem_RawFree(c->clocks[j]);
    }
    PyMem_RawFree(c->clocks);
    PyMem_RawFree(c->entered);
    PyMem_RawFree(c->is_entered);
    PyMem_RawFree(c->joined);
    PyMem_RawFree(c);
}

/* The ranks whose coll happened before rank's coll_exit: exit_sources of
 * mpvis/analysis/exact_events.py (the spec's collective edges), into out. */
static size_t exit_sources(const Coll *c, i64 rank, i64 *out)
{
    size_t k = 0;
    if (c->cat == 1 || (c->cat == 3 && c->has_root && rank == c->root)) {
        for (size_t i = 0; i < c->nentered; i++) {
            out[k++] = c->entered[i];
        }
    } else if (c->cat == 2 && c->has_root) {
        out[k++] = c->root;
    }
    return k;
}

static bool coll_has_clock(const Det *d, const Coll *c, i64 q)
{
    return 0 <= q && q < d->n && c->clocks[q] != NULL;
}

static bool on_coll_exit(Det *d, const Rec *rec, i64 rank, Send *join)
{
    i64 comm = rec->comm;
    Slot *slot = map_find(&d->coll_done, key3(comm, rank, 0));
    i64 n = (slot ? slot->v.i : 0) - 1;
    slot = map_find(&d->colls, key3(comm, n, 0));
    Coll *inst = slot ? slot->v.p : NULL;
    i64 *sources = NULL;
    size_t ns = 0;
    if (inst != NULL) {
        sources = xmalloc((inst->nentered + 1) * sizeof(i64));
        ns = exit_sources(inst, rank, sources);
        if (d->final) { /* an entry that never arrived orders nothing */
            size_t k = 0;
            for (size_t i = 0; i < ns; i++) {
                i64 q = sources[i];
                if (0 <= q && q < d->n && inst->is_entered[q]) {
                    sources[k++] = q;
                }
            }
            ns = k;
        }
        if (!d->lenient) {
            for (size_t i = 0; i < ns; i++) {
                if (!coll_has_clock(d, inst, sources[i])) {
                    wait_rank(d, W_C, comm, n, rank);
                    PyMem_RawFree(sources);
                    return false;
                }
            }
        }
    }
    begin(d, rank, rec->seq, join);
    if (inst == NULL) {
        return true;
    }
    if (ns) {
        if (!inst->has_joined || inst->joined_n != ns) {
            if (inst->joined == NULL) {
                inst->joined = clock_new(d);
            } else {
                memset(inst->joined, 0, (size_t)d->n * sizeof(clk));
            }
            for (size_t i = 0; i < ns; i++) {
                if (coll_has_clock(d, inst, sources[i])) {
                    sup_into(d, inst->joined, inst->clocks[sources[i]]);
                }
            }
            inst->has_joined = true;
            inst->joined_n = ns;
        }
        sup_into(d, cur_of(d, rank), inst->joined);
    }
    PyMem_RawFree(sources);
    inst->exits++;
    i64 members = d->n;
    if (comm != 0) {
        Slot *m = map_find(&d->nmembers, key3(comm, 0, 0));
        members = m ? m->v.i : 0;
    }
    if (inst->exits >= (i64)inst->nentered && (i64)inst->nentered >= members) {
        map_del(&d->colls, key3(comm, n, 0), NULL);
        coll_free(inst, d->n);
    }
    return true;
}

/* A coll arrived: its rank is a member of the collective instance. */
static void announce(Det *d, const Rec *rec, i64 rank, int cat, bool has_root, i64 root)
{
    i64 comm = rec->comm;
    Slot *slot = map_find(&d->coll_seen, key3(comm, rank, 0));
    i64 n = slot ? slot->v.i : 0;
    map_put(&d->coll_seen, key3(comm, rank, 0), (Val){.i = n + 1}, NULL, NULL);
    slot = map_find(&d->colls, key3(comm, n, 0));
    Coll *inst;
    if (slot == NULL) {
        inst = xcalloc(1, sizeof(Coll));
        inst->cat = cat;
        inst->has_root = has_root;
        inst->root = root;
        inst->entered = xmalloc((size_t)d->n * sizeof(i64) + sizeof(i64));
        inst->is_entered = xcalloc((size_t)d->n, 1);
        inst->clocks = xcalloc((size_t)d->n, sizeof(clk *));
        map_put(&d->colls, key3(comm, n, 0), (Val){.p = inst}, NULL, NULL);
    } else {
        inst = slot->v.p;
    }
    if (inst->nentered < (size_t)d->n) { /* a rank enters an instance once */
        inst->entered[inst->nentered++] = rank;
    }
    inst->is_entered[rank] = 1;
    bool had;
    map_put(&d->members, key3(comm, rank, 0), (Val){.i = 1}, NULL, &had);
    if (!had) {
        Slot *m = map_find(&d->nmembers, key3(comm, 0, 0));
        i64 count = m ? m->v.i : 0;
        map_put(&d->nmembers, key3(comm, 0, 0), (Val){.i = count + 1}, NULL, NULL);
    }
}

/* Process one communication record if its R_h predecessors are processed. */
static bool step(Det *d, const Rec *rec)
{
    i64 rank = rec->rank;
    Send *join = d->join[rank];
    if (join != NULL && needs_match(d, join)) {
        wait_rank(d, W_MS, join->rank, join->seq, rank);
        return false;
    }
    switch (rec->kind) {
    case K_SEND:
        return on_send(d, rec, rank, join);
    case K_RECV:
        return on_recv(d, rec, rank, join);
    case K_CONSUME:
        return on_consume(d, rec, rank, join);
    case K_WAIT:
        return on_wait(d, rec, rank, join);
    case K_COLL:
        return on_coll(d, rec, rank, join);
    default:
        return on_coll_exit(d, rec, rank, join);
    }
}

static void rec_free(Rec *rec)
{
    PyMem_RawFree(rec->reqs);
    rec->reqs = NULL;
}

static void queue_push(RecQueue *q, const Rec *rec)
{
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 8;
        Rec *a = xmalloc(cap * sizeof(Rec));
        for (size_t i = 0; i < q->n; i++) {
            a[i] = q->a[(q->head + i) % q->cap];
        }
        PyMem_RawFree(q->a);
        q->a = a;
        q->head = 0;
        q->cap = cap;
    }
    q->a[(q->head + q->n) % q->cap] = *rec;
    q->n++;
}

static void queue_pop(RecQueue *q)
{
    rec_free(&q->a[q->head]);
    q->head = (q->head + 1) % q->cap;
    q->n--;
}

static void drain(Det *d, i64 rank)
{
    RecQueue *q = &d->queues[rank];
    while (q->n) {
        if (!step(d, &q->a[q->head])) {
            return;
        }
        queue_pop(q);
    }
}

static void run(Det *d)
{
    while (d->ready.n) {
        Item it = ready_pop(d);
        if (it.r == NULL) {
            drain(d, it.rank);
        } else {
            try_match(d, it.r);
            recv_unref(it.r);
        }
    }
}

/* Break a wait that cannot end (inconsistent input): drop a match, or skip a need. */
static void force_one(Det *d)
{
    size_t first = d->ready.n;
    release_all(d);
    for (size_t i = first; i < d->ready.n; i++) {
        Item it = d->ready.a[(d->ready.head + i) % d->ready.cap];
        if (it.r != NULL) {
            drop(d, it.r);
            return;
        }
    }
    if (first == d->ready.n) {
        return;
    }
    i64 rank = d->ready.a[(d->ready.head + first) % d->ready.cap].rank;
    RecQueue *q = &d->queues[rank];
    if (q->n) {
        d->lenient = true;
        step(d, &q->a[q->head]);
        d->lenient = false;
        queue_pop(q);
    }
}

/* ------------------------------------------------------- reading records */

static PyObject *s_kind, *s_rank, *s_seq, *s_dest, *s_src, *s_tag, *s_comm, *s_sync,
    *s_blocking, *s_req, *s_recv, *s_send, *s_reqs, *s_op, *s_root;
static PyObject *k_names[6];

/* dict lookup without raising; NULL when absent */
static PyObject *field(PyObject *rec, PyObject *name)
{
    return PyDict_GetItemWithError(rec, name);
}

static int as_i64(PyObject *v, PyObject *name, i64 *out)
{
    int overflow = 0;
    if (!PyLong_Check(v)) {
        PyErr_Format(PyExc_TypeError, "exact race detector: field '%U' must be an int", name);
        return -1;
    }
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow) {
        PyErr_Format(PyExc_ValueError, "exact race detector: field '%U' out of range", name);
        return -1;
    }
    if (x == -1 && PyErr_Occurred()) {
        return -1;
    }
    *out = (i64)x;
    return 0;
}

static int need_i64(PyObject *rec, PyObject *name, i64 *out)
{
    PyObject *v = field(rec, name);
    if (v == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_ValueError, "exact race detector: record lacks field '%U'", name);
        }
        return -1;
    }
    return as_i64(v, name, out);
}

static int opt_i64(PyObject *rec, PyObject *name, i64 dflt, i64 *out)
{
    PyObject *v = field(rec, name);
    if (v == NULL) {
        if (PyErr_Occurred()) {
            return -1;
        }
        *out = dflt;
        return 0;
    }
    return as_i64(v, name, out);
}

static int opt_bool(PyObject *rec, PyObject *name, bool dflt, bool *out)
{
    PyObject *v = field(rec, name);
    if (v == NULL) {
        if (PyErr_Occurred()) {
            return -1;
        }
        *out = dflt;
        return 0;
    }
    Py_INCREF(v); /* its __bool__ might drop it from the record */
    int t = PyObject_IsTrue(v);
    Py_DECREF(v);
    if (t < 0) {
        return -1;
    }
    *out = t != 0;
    return 0;
}

/* The int requests of a wait record (a request of any other type names no send). */
static int read_reqs(PyObject *rec, Rec *out)
{
    PyObject *v = field(rec, s_reqs);
    if (v == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *seq = PySequence_Fast(v, "exact race detector: field 'reqs' must be a list");
    if (seq == NULL) {
        return -1;
    }
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    out->reqs = PyMem_RawMalloc((size_t)(len ? len : 1) * sizeof(i64));
    if (out->reqs == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        PyObject *q = PySequence_Fast_GET_ITEM(seq, i);
        int overflow = 0;
        if (!PyLong_Check(q)) {
            continue;
        }
        long long x = PyLong_AsLongLongAndOverflow(q, &overflow);
        if (overflow || (x == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            continue;
        }
        out->reqs[out->nreqs++] = (i64)x;
    }
    Py_DECREF(seq);
    return 0;
}

static int read_send_value(PyObject *v, Rec *out);

static int read_send_field(PyObject *rec, Rec *out)
{
    PyObject *v = field(rec, s_send);
    if (v == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    return read_send_value(v, out);
}

/* A send's [rank, seq] (None: no send named). */
static int read_send_value(PyObject *v, Rec *out)
{
    if (v == Py_None) {
        return 0;
    }
    PyObject *seq = PySequence_Fast(v, "exact race detector: field 'send' must be [rank, seq]");
    if (seq == NULL) {
        return -1;
    }
    int rc = -1;
    if (PySequence_Fast_GET_SIZE(seq) < 2) {
        PyErr_SetString(PyExc_ValueError, "exact race detector: field 'send' must be [rank, seq]");
    } else if (as_i64(PySequence_Fast_GET_ITEM(seq, 0), s_send, &out->srank) == 0 &&
               as_i64(PySequence_Fast_GET_ITEM(seq, 1), s_send, &out->sseq) == 0) {
        out->has_send = true;
        rc = 0;
    }
    Py_DECREF(seq);
    return rc;
}

/* A coll's root and the category of its op (0 when it has none or no category),
 * from the dict holding its fields (the record, or the store's extras). */
static int read_coll(Det *d, PyObject *obj, int *cat, bool *has_root, i64 *root)
{
    PyObject *r = field(obj, s_root);
    if (r == NULL && PyErr_Occurred()) {
        return -1;
    }
    *has_root = r != NULL && r != Py_None;
    if (*has_root && as_i64(r, s_root, root) < 0) { /* runs no Python code */
        return -1;
    }
    PyObject *op = field(obj, s_op);
    if (op == NULL && PyErr_Occurred()) {
        return -1;
    }
    *cat = 0;
    if (op != NULL) {
        Py_INCREF(op); /* its __hash__ or __eq__ might drop it from the record */
        PyObject *sets[3] = {d->all_to_all, d->from_root, d->to_root};
        for (int i = 0; i < 3 && *cat == 0; i++) {
            int in = PySet_Contains(sets[i], op);
            if (in < 0) {
                Py_DECREF(op);
                return -1;
            }
            if (in) {
                *cat = i + 1;
            }
        }
        Py_DECREF(op);
    }
    return 0;
}

/* 1: a communication record of a rank in range (read into out), 0: ignored, -1: error */
static int read_record(Det *d, PyObject *obj, Rec *out, int *cat, bool *has_root, i64 *root)
{
    if (!PyDict_Check(obj)) {
        PyErr_SetString(PyExc_TypeError, "exact race detector: a record must be a dict");
        return -1;
    }
    PyObject *kind = field(obj, s_kind);
    if (kind == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    int k = -1;
    for (int i = 0; i < 6; i++) {
        if (kind == k_names[i]) {
            k = i;
            break;
        }
    }
    if (k < 0 && PyUnicode_Check(kind) && PyUnicode_IS_COMPACT_ASCII(kind)) {
        Py_ssize_t len = PyUnicode_GET_LENGTH(kind);
        const void *text = PyUnicode_DATA(kind);
        for (int i = 0; i < 6; i++) {
            if (PyUnicode_GET_LENGTH(k_names[i]) == len &&
                memcmp(PyUnicode_DATA(k_names[i]), text, (size_t)len) == 0) {
                k = i;
                break;
            }
        }
    }
    if (k < 0) {
        return 0;
    }
    memset(out, 0, sizeof *out);
    out->kind = k;
    if (need_i64(obj, s_rank, &out->rank) < 0) {
        return -1;
    }
    if (out->rank < 0 || out->rank >= d->n) {
        return 0;
    }
    if (need_i64(obj, s_seq, &out->seq) < 0 || opt_i64(obj, s_comm, 0, &out->comm) < 0) {
        return -1;
    }
    if (out->seq < 0 || out->seq > SEQ_MAX) {
        PyErr_Format(PyExc_ValueError, "exact race detector: seq %lld out of range",
                     (long long)out->seq);
        return -1;
    }
    switch (k) {
    case K_SEND:
        if (need_i64(obj, s_dest, &out->peer) < 0 || need_i64(obj, s_tag, &out->tag) < 0 ||
            opt_bool(obj, s_sync, false, &out->sync) < 0 ||
            opt_bool(obj, s_blocking, true, &out->blocking) < 0) {
            return -1;
        }
        if (!out->blocking && need_i64(obj, s_req, &out->req) < 0) {
            return -1;
        }
        break;
    case K_RECV:
        if (need_i64(obj, s_src, &out->peer) < 0 || need_i64(obj, s_tag, &out->tag) < 0) {
            return -1;
        }
        break;
    case K_CONSUME:
        if (need_i64(obj, s_recv, &out->recv) < 0 || read_send_field(obj, out) < 0) {
            return -1;
        }
        if (out->has_send && need_i64(obj, s_tag, &out->tag) < 0) {
            return -1;
        }
        break;
    case K_WAIT:
        if (read_reqs(obj, out) < 0) {
            return -1;
        }
        break;
    case K_COLL:
        if (read_coll(d, obj, cat, has_root, root) < 0) {
            return -1;
        }
        break;
    default:
        break;
    }
    return 1;
}

/* ---------------------------------------------------------- Python type */

/* A record read (it owns rec->reqs): learn its match or collective, then
 * process it, or queue it behind its rank's waiting records. */
static void take(Det *d, Rec *rec, int cat, bool has_root, i64 root)
{
    if (rec->kind == K_CONSUME) {
        learn(d, rec);
    } else if (rec->kind == K_COLL) {
        announce(d, rec, rec->rank, cat, has_root, root);
    }
    RecQueue *q = &d->queues[rec->rank];
    if (q->n || !step(d, rec)) {
        queue_push(q, rec); /* the queue owns rec->reqs now */
    } else {
        rec_free(rec);
    }
    rec->reqs = NULL;
    if (d->ready.n) {
        run(d);
    }
}

/* Whether the detector may not change now (its conflicts are being copied on
 * another thread): then a RuntimeError is set. */
static int busy_feeding(const Det *d)
{
    if (d->copying) {
        PyErr_SetString(PyExc_RuntimeError,
                        "the detector's conflicts are being copied on another thread");
        return 1;
    }
    return 0;
}

static PyObject *det_feed(Det *d, PyObject *batch)
{
    if (busy_feeding(d)) {
        return NULL;
    }
    if (d->broken) {
        PyErr_SetString(PyExc_RuntimeError, "exact race detector: unusable after an error");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(batch, "exact race detector: feed takes a list of records");
    if (seq == NULL) {
        return NULL;
    }
    jmp_buf env;
    jmp_buf *outer = oom_jump;
    Rec rec = {0};
    if (setjmp(env)) {
        oom_jump = outer;
        d->broken = true;
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    oom_jump = &env;
    /* The batch's size is read again at each record: Python code run while one is
     * read (a __bool__, an __eq__) could shrink the list. */
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        int cat = 0;
        bool has_root = false;
        i64 root = 0;
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        Py_INCREF(item);
        int got = read_record(d, item, &rec, &cat, &has_root, &root);
        Py_DECREF(item);
        if (got < 0) {
            rec_free(&rec);
            oom_jump = outer;
            Py_DECREF(seq);
            return NULL;
        }
        if (got == 0) {
            continue;
        }
        take(d, &rec, cat, has_root, root);
    }
    oom_jump = outer;
    Py_DECREF(seq);
    Py_RETURN_NONE;
}

/* The model's columns feed_columns reads (the store's, by global index; gidx is
 * the batch's global indices), with the item size each must have. */
enum { C_GIDX, C_KIND, C_RANK, C_SEQ, C_PEER, C_TAG, C_COMM, C_FLAGS, C_REQ, C_REF, C_PARTNER, NCOLS };
static const Py_ssize_t col_size[NCOLS] = {8, 1, 4, 4, 4, 4, 4, 1, 4, 4, 8};
static const char *const col_name[NCOLS] = {"gidx", "kind", "rank", "seq", "peer", "tag",
                                             "comm", "flags", "req", "ref", "partner"};
#define FLAG_BLOCKING 1 /* mpvis.protocol.codes.F_BLOCKING */
#define FLAG_SYNC 2     /* mpvis.protocol.codes.F_SYNC */

static i64 col_at(const Py_buffer *b, i64 i)
{
    switch (b->itemsize) {
    case 1:
        return ((const int8_t *)b->buf)[i];
    case 4:
        return ((const int32_t *)b->buf)[i];
    default:
        return ((const int64_t *)b->buf)[i];
    }
}

static void release_cols(Py_buffer *cols, int got)
{
    for (int c = 0; c < got; c++) {
        PyBuffer_Release(&cols[c]);
    }
}

/* Borrow the columns' buffers (one-dimensional, contiguous, signed integers of
 * the expected size); the number borrowed, NCOLS when all were. */
static int get_cols(PyObject *const *objs, Py_buffer *cols)
{
    for (int c = 0; c < NCOLS; c++) {
        if (PyObject_GetBuffer(objs[c], &cols[c], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            return c;
        }
        const char *f = cols[c].format ? cols[c].format : "B";
        if (*f == '@' || *f == '=') {
            f++;
        }
        if (cols[c].ndim != 1 || cols[c].itemsize != col_size[c] || strlen(f) != 1 ||
            strchr("bhilq", *f) == NULL) {
            PyErr_Format(PyExc_TypeError,
                         "exact race detector: column '%s' must hold %zd-byte signed integers",
                         col_name[c], col_size[c]);
            return c + 1;
        }
    }
    return NCOLS;
}

/* The waits held as arrays (the store's Extras.wait_buffers): global indices
 * (ascending), offsets (one more), requests. */
enum { W_GIDX, W_OFF, W_REQ, NWAITS };

/* Borrow the wait arrays' buffers (int64; offsets one more than indices) into
 * waits, *got of them; -1 (with *got borrowed, to release) on error. */
static int get_waits(PyObject *const *objs, Py_buffer *waits, int *got)
{
    *got = 0;
    for (int c = 0; c < NWAITS; c++) {
        if (PyObject_GetBuffer(objs[c], &waits[c], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            return -1;
        }
        *got = c + 1;
        const char *f = waits[c].format ? waits[c].format : "B";
        if (*f == '@' || *f == '=') {
            f++;
        }
        if (waits[c].ndim != 1 || waits[c].itemsize != 8 || strlen(f) != 1 ||
            strchr("lq", *f) == NULL) {
            PyErr_SetString(PyExc_TypeError,
                            "exact race detector: wait arrays must hold 8-byte signed integers");
            return -1;
        }
    }
    if (waits[W_OFF].len != waits[W_GIDX].len + 8) {
        PyErr_SetString(PyExc_ValueError,
                        "exact race detector: wait offsets must be one more than waits");
        return -1;
    }
    const int64_t *off = waits[W_OFF].buf;
    Py_ssize_t n = waits[W_GIDX].len / 8, nreq = waits[W_REQ].len / 8;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (off[i] < 0 || off[i] > off[i + 1] || off[i + 1] > nreq) {
            PyErr_SetString(PyExc_ValueError, "exact race detector: wait offsets out of range");
            return -1;
        }
    }
    return 0;
}

/* The dict mapping[g] (borrowed, NULL when absent or not a dict; -1 on error). */
static int lookup(PyObject *mapping, i64 g, PyObject **out)
{
    *out = NULL;
    PyObject *key = PyLong_FromLongLong((long long)g);
    if (key == NULL) {
        return -1;
    }
    PyObject *v = PyDict_GetItemWithError(mapping, key);
    Py_DECREF(key);
    if (v == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    *out = v;
    return 0;
}

/* A wait's requests from those arrays, if g is one of them. */
static void read_wait_reqs(const Py_buffer *waits, i64 g, Rec *out)
{
    const int64_t *wg = waits[W_GIDX].buf, *off = waits[W_OFF].buf, *req = waits[W_REQ].buf;
    Py_ssize_t lo = 0, hi = waits[W_GIDX].len / 8;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (wg[mid] < g) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo == waits[W_GIDX].len / 8 || wg[lo] != g) {
        return;
    }
    i64 a = off[lo], b = off[lo + 1];
    out->reqs = xmalloc((size_t)(b > a ? b - a : 1) * sizeof(i64));
    for (i64 i = a; i < b; i++) {
        out->reqs[out->nreqs++] = req[i];
    }
}

/* Read record g from the columns (1), or 0 when it is no communication record
 * of a rank in range; -1 on error.  A wait's requests and a coll's op and root
 * come from extras[g]; a consume's send is its partner's key, else named[g]. */
static int read_row(Det *d, const Py_buffer *cols, const Py_buffer *waits, i64 g,
                    Py_ssize_t rows, PyObject *extras, PyObject *named, Rec *out, int *cat,
                    bool *has_root, i64 *root)
{
    int k = (int)col_at(&cols[C_KIND], g);
    if (k < K_SEND || k > K_EXIT) {
        return 0;
    }
    memset(out, 0, sizeof *out);
    out->kind = k;
    out->rank = col_at(&cols[C_RANK], g);
    if (out->rank < 0 || out->rank >= d->n) {
        return 0;
    }
    out->seq = col_at(&cols[C_SEQ], g);
    out->comm = col_at(&cols[C_COMM], g);
    if (out->seq < 0 || out->seq > SEQ_MAX) {
        PyErr_Format(PyExc_ValueError, "exact race detector: seq %lld out of range",
                     (long long)out->seq);
        return -1;
    }
    i64 flags = col_at(&cols[C_FLAGS], g);
    PyObject *extra = NULL;
    switch (k) {
    case K_SEND:
        out->peer = col_at(&cols[C_PEER], g);
        out->tag = col_at(&cols[C_TAG], g);
        out->sync = (flags & FLAG_SYNC) != 0;
        out->blocking = (flags & FLAG_BLOCKING) != 0;
        if (!out->blocking) {
            out->req = col_at(&cols[C_REQ], g);
        }
        break;
    case K_RECV:
        out->peer = col_at(&cols[C_PEER], g);
        out->tag = col_at(&cols[C_TAG], g);
        break;
    case K_CONSUME: {
        out->recv = col_at(&cols[C_REF], g);
        i64 p = col_at(&cols[C_PARTNER], g);
        if (p >= 0 && p < rows) {
            out->srank = col_at(&cols[C_RANK], p);
            out->sseq = col_at(&cols[C_SEQ], p);
            out->has_send = true;
        } else if (lookup(named, g, &extra) < 0 ||
                   (extra != NULL && read_send_value(extra, out) < 0)) {
            return -1;
        }
        if (out->has_send) {
            out->tag = col_at(&cols[C_TAG], g);
        }
        break;
    }
    case K_WAIT:
        if (lookup(extras, g, &extra) < 0) {
            return -1;
        }
        if (extra == NULL) {
            read_wait_reqs(waits, g, out);
        } else if (PyDict_Check(extra)) {
            Py_INCREF(extra);
            int rc = read_reqs(extra, out);
            Py_DECREF(extra);
            if (rc < 0) {
                return -1;
            }
        }
        break;
    case K_COLL:
        if (lookup(extras, g, &extra) < 0) {
            return -1;
        }
        if (extra != NULL && PyDict_Check(extra)) {
            Py_INCREF(extra);
            int rc = read_coll(d, extra, cat, has_root, root);
            Py_DECREF(extra);
            if (rc < 0) {
                return -1;
            }
        }
        break;
    default:
        break;
    }
    return 1;
}

static PyObject *det_feed_columns(Det *d, PyObject *args)
{
    if (busy_feeding(d)) {
        return NULL;
    }
    PyObject *columns, *extras, *named, *wait_arrays;
    if (d->broken) {
        PyErr_SetString(PyExc_RuntimeError, "exact race detector: unusable after an error");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!O!O!O!:feed_columns", &PyTuple_Type, &columns, &PyDict_Type,
                          &extras, &PyDict_Type, &named, &PyTuple_Type, &wait_arrays)) {
        return NULL;
    }
    if (PyTuple_GET_SIZE(columns) != NCOLS || PyTuple_GET_SIZE(wait_arrays) != NWAITS) {
        PyErr_Format(PyExc_TypeError,
                     "exact race detector: feed_columns takes %d columns and %d wait arrays",
                     NCOLS, NWAITS);
        return NULL;
    }
    Py_buffer cols[NCOLS];
    int got = get_cols(&PyTuple_GET_ITEM(columns, 0), cols);
    if (got < NCOLS) {
        release_cols(cols, got);
        return NULL;
    }
    Py_buffer waits[NWAITS];
    int wgot;
    if (get_waits(&PyTuple_GET_ITEM(wait_arrays, 0), waits, &wgot) < 0) {
        release_cols(waits, wgot);
        release_cols(cols, NCOLS);
        return NULL;
    }
    Py_ssize_t rows = PY_SSIZE_T_MAX;
    for (int c = C_KIND; c < NCOLS; c++) {
        Py_ssize_t len = cols[c].len / cols[c].itemsize;
        rows = len < rows ? len : rows;
    }
    Py_ssize_t n = cols[C_GIDX].len / cols[C_GIDX].itemsize;
    jmp_buf env;
    jmp_buf *outer = oom_jump;
    Rec rec = {0};
    if (setjmp(env)) {
        oom_jump = outer;
        d->broken = true;
        release_cols(waits, NWAITS);
        release_cols(cols, NCOLS);
        return PyErr_NoMemory();
    }
    oom_jump = &env;
    for (Py_ssize_t i = 0; i < n; i++) {
        int cat = 0;
        bool has_root = false;
        i64 root = 0;
        i64 g = col_at(&cols[C_GIDX], i);
        int ok;
        if (g < 0 || g >= rows) {
            PyErr_Format(PyExc_ValueError, "exact race detector: global index %lld out of range",
                         (long long)g);
            ok = -1;
        } else {
            ok = read_row(d, cols, waits, g, rows, extras, named, &rec, &cat, &has_root, &root);
        }
        if (ok < 0) {
            rec_free(&rec);
            oom_jump = outer;
            release_cols(waits, NWAITS);
            release_cols(cols, NCOLS);
            return NULL;
        }
        if (ok) {
            take(d, &rec, cat, has_root, root);
        }
    }
    oom_jump = outer;
    release_cols(waits, NWAITS);
    release_cols(cols, NCOLS);
    Py_RETURN_NONE;
}

static int cmp_send_order(const void *a, const void *b)
{
    const Send *x = *(Send *const *)a, *y = *(Send *const *)b;
    if (x->rank != y->rank) {
        return x->rank < y->rank ? -1 : 1;
    }
    return (x->order > y->order) - (x->order < y->order);
}

static PyObject *det_finish(Det *d, PyObject *Py_UNUSED(ignored))
{
    if (busy_feeding(d)) {
        return NULL;
    }
    if (d->broken) {
        PyErr_SetString(PyExc_RuntimeError, "exact race detector: unusable after an error");
        return NULL;
    }
    jmp_buf env;
    jmp_buf *outer = oom_jump;
    if (setjmp(env)) {
        oom_jump = outer;
        d->broken = true;
        return PyErr_NoMemory();
    }
    oom_jump = &env;
    d->final = true;
    map_clear(&d->claimed);
    for (size_t i = 0; i < d->recvs.cap; i++) {
        if (d->recvs.slots[i].h) {
            Recv *r = d->recvs.slots[i].v.p;
            if (r->has_skey && !r->matched && !r->dropped) {
                map_put(&d->claimed, key3(r->srank, r->sseq, 0), (Val){.i = 1}, NULL, NULL);
            }
        }
    }
    for (size_t i = 0; i < d->early.cap; i++) {
        if (d->early.slots[i].h) {
            Early *e = d->early.slots[i].v.p;
            map_put(&d->claimed, key3(e->srank, e->sseq, 0), (Val){.i = 1}, NULL, NULL);
        }
    }
    for (;;) {
        release_all(d);
        run(d);
        if (!d->livewaiters) {
            break;
        }
        force_one(d);
    }
    size_t ns = 0;
    Send **sends = xmalloc((d->sends.len + 1) * sizeof(Send *));
    for (size_t i = 0; i < d->sends.cap; i++) {
        if (d->sends.slots[i].h) {
            sends[ns++] = d->sends.slots[i].v.p;
        }
    }
    qsort(sends, ns, sizeof(Send *), cmp_send_order);
    for (size_t i = 0; i < ns; i++) {
        test_unmatched(d, sends[i]);
    }
    PyMem_RawFree(sends);
    if (d->oldfound != NULL) { /* no conflict comes any more: end the set's growth */
        found_move(d, d->oldcap);
    }
    oom_jump = outer;
    Py_RETURN_NONE;
}

static PyObject *det_found(Det *d, PyObject *Py_UNUSED(ignored))
{
    PyObject *out = PyList_New((Py_ssize_t)d->nfound);
    if (out == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < d->nfound; i++) {
        const i64 *k = d->foundlist + i * KW;
        PyObject *t = Py_BuildValue("(LLLLLL)", (long long)k[0], (long long)k[1],
                                    (long long)k[2], (long long)k[3], (long long)k[4],
                                    (long long)k[5]);
        if (t == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, t);
    }
    return out;
}

/* The conflicts copied without the GIL held: at ten million events they are
 * 115 MB, whose copy (and its page faults) held the window's GUI thread for
 * 70 ms at the end of a load, the copy being on the loader's thread.  The
 * detector is not fed meanwhile (busy_feeding refuses). */
static PyObject *det_found_bytes(Det *d, PyObject *Py_UNUSED(ignored))
{
    size_t n = d->nfound * KW * sizeof(i64);
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
    if (out == NULL || n == 0) {
        return out;
    }
    d->copying++;
    Py_BEGIN_ALLOW_THREADS
    memcpy(PyBytes_AS_STRING(out), d->foundlist, n);
    Py_END_ALLOW_THREADS
    d->copying--;
    return out;
}

static PyObject *det_contains(Det *d, PyObject *arg)
{
    if (!PyTuple_Check(arg) || PyTuple_GET_SIZE(arg) != KW) {
        Py_RETURN_FALSE;
    }
    Key key;
    for (int i = 0; i < KW; i++) {
        PyObject *v = PyTuple_GET_ITEM(arg, i);
        int overflow = 0;
        if (!PyLong_Check(v)) {
            Py_RETURN_FALSE;
        }
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || (x == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            Py_RETURN_FALSE;
        }
        key.k[i] = (i64)x;
    }
    return PyBool_FromLong(found_has(d, key));
}

static PyObject *det_count(Det *d, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromSize_t(d->nfound);
}

static PyObject *det_held(Det *d, PyObject *Py_UNUSED(ignored))
{
    size_t queued = 0;
    for (Py_ssize_t j = 0; j < d->n; j++) {
        queued += d->queues[j].n;
    }
    return PyLong_FromSize_t(d->sends.len + d->recvs.len + queued + (size_t)d->tabled +
                             d->early.len + d->colls.len);
}

static void free_map_values(Map *m, void (*f)(void *))
{
    for (size_t i = 0; i < m->cap; i++) {
        if (m->slots[i].h) {
            f(m->slots[i].v.p);
        }
    }
    map_clear(m);
}

static void unref_send_void(void *p)
{
    send_unref(p);
}

static void unref_recv_void(void *p)
{
    recv_unref(p);
}

static void free_table_void(void *p)
{
    PVec *v = p;
    for (size_t i = 0; i < v->n; i++) {
        recv_unref(v->a[i]);
    }
    pv_free(v);
    PyMem_RawFree(v);
}

static Py_ssize_t coll_n_for_free;

static void free_coll_void(void *p)
{
    coll_free(p, coll_n_for_free);
}

static void det_dealloc(Det *d)
{
    /* Freeing receives may grow a work stack: out of memory there leaks the rest. */
    jmp_buf env;
    jmp_buf *outer = oom_jump;
    if (setjmp(env)) {
        oom_jump = outer;
        Py_TYPE(d)->tp_free((PyObject *)d);
        return;
    }
    oom_jump = &env;
    Py_XDECREF(d->all_to_all);
    Py_XDECREF(d->from_root);
    Py_XDECREF(d->to_root);
    if (d->queues != NULL) {
        for (Py_ssize_t j = 0; j < d->n; j++) {
            while (d->queues[j].n) {
                queue_pop(&d->queues[j]);
            }
            PyMem_RawFree(d->queues[j].a);
        }
    }
    PyMem_RawFree(d->queues);
    while (d->ready.n) {
        Item it = ready_pop(d);
        if (it.r != NULL) {
            recv_unref(it.r);
        }
    }
    PyMem_RawFree(d->ready.a);
    for (size_t i = 0; i < d->nwaiters; i++) {
        Waiter *w = &d->waiters[i];
        if (w->live) {
            for (size_t k = 0; k < w->n; k++) {
                if (w->items[k].r != NULL) {
                    recv_unref(w->items[k].r);
                }
            }
            PyMem_RawFree(w->items);
        }
    }
    PyMem_RawFree(d->waiters);
    map_clear(&d->windex);
    if (d->join != NULL) {
        for (Py_ssize_t j = 0; j < d->n; j++) {
            if (d->join[j] != NULL) {
                send_unref(d->join[j]);
            }
        }
    }
    PyMem_RawFree(d->join);
    free_map_values(&d->sends, unref_send_void);
    free_map_values(&d->reqs, unref_send_void);
    free_map_values(&d->recvs, unref_recv_void);
    if (d->open != NULL) {
        for (Py_ssize_t j = 0; j < d->n; j++) {
            for (size_t i = 0; i < d->open[j].n; i++) {
                recv_unref(d->open[j].a[i]);
            }
            pv_free(&d->open[j]);
        }
    }
    PyMem_RawFree(d->open);
    free_map_values(&d->tables, free_table_void);
    free_map_values(&d->early, PyMem_RawFree);
    coll_n_for_free = d->n;
    free_map_values(&d->colls, free_coll_void);
    map_clear(&d->claimed);
    map_clear(&d->coll_seen);
    map_clear(&d->coll_done);
    map_clear(&d->members);
    map_clear(&d->nmembers);
    PyMem_RawFree(d->found);
    PyMem_RawFree(d->oldfound);
    PyMem_RawFree(d->foundlist);
    if (d->cur != NULL) {
        for (Py_ssize_t j = 0; j < d->n; j++) {
            PyMem_RawFree(d->cur[j]);
        }
    }
    PyMem_RawFree(d->cur);
    PyMem_RawFree(d->own);
    PyMem_RawFree(d->ntables);
    oom_jump = outer;
    Py_TYPE(d)->tp_free((PyObject *)d);
}

static int det_init(Det *d, PyObject *args, PyObject *kwds)
{
    static char *names[] = {"nprocs", "all_to_all", "from_root", "to_root", NULL};
    Py_ssize_t n;
    PyObject *a, *f, *t;
    if (d->queues != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "exact race detector: already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "nO!O!O!", names, &n, &PyFrozenSet_Type, &a,
                                     &PyFrozenSet_Type, &f, &PyFrozenSet_Type, &t)) {
        return -1;
    }
    if (n < 0 || n > (1 << 20)) {
        PyErr_Format(PyExc_ValueError, "exact race detector: nprocs %zd out of range", n);
        return -1;
    }
    d->n = n;
    Py_INCREF(a);
    Py_INCREF(f);
    Py_INCREF(t);
    d->all_to_all = a;
    d->from_root = f;
    d->to_root = t;
    size_t un = (size_t)(n ? n : 1);
    d->cur = PyMem_RawCalloc(un, sizeof(clk *));
    d->own = PyMem_RawCalloc(un, sizeof(i64));
    d->queues = PyMem_RawCalloc(un, sizeof(RecQueue));
    d->open = PyMem_RawCalloc(un, sizeof(PVec));
    d->join = PyMem_RawCalloc(un, sizeof(Send *));
    d->ntables = PyMem_RawCalloc(un, sizeof(i64));
    if (!d->cur || !d->own || !d->queues || !d->open || !d->join || !d->ntables) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static PyMethodDef det_methods[] = {
    {"feed", (PyCFunction)det_feed, METH_O, "Take the next records of the causally ordered stream."},
    {"feed_columns", (PyCFunction)det_feed_columns, METH_VARARGS,
     "feed_columns((gidx, kind, rank, seq, peer, tag, comm, flags, req, ref, partner), extras, "
     "named, (wait gidx, offsets, requests)): the next records of the stream, read from the "
     "model's columns."},
    {"finish", (PyCFunction)det_finish, METH_NOARGS, "End of input: release waits, test unmatched sends."},
    {"found", (PyCFunction)det_found, METH_NOARGS,
     "The conflicts found, as (rank, recv, s1 rank, s1 seq, s2 rank, s2 seq), in discovery order."},
    {"found_bytes", (PyCFunction)det_found_bytes, METH_NOARGS,
     "found() as native int64s, six per conflict."},
    {"contains", (PyCFunction)det_contains, METH_O, "Whether a six-number conflict was found."},
    {"count", (PyCFunction)det_count, METH_NOARGS, "How many conflicts were found."},
    {"held", (PyCFunction)det_held, METH_NOARGS, "Sends, receives, matches and records held."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject DetType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mpvis.analysis._cexact.Detector",
    .tp_basicsize = sizeof(Det),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Detector(nprocs, all_to_all, from_root, to_root): the exact race detector's state.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)det_init,
    .tp_dealloc = (destructor)det_dealloc,
    .tp_methods = det_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_cexact", "Cypher and Leu's exact race detector (see exact_races.py).",
    -1, NULL, NULL, NULL, NULL, NULL,
};

#define INTERN(var, text)                        \
    do {                                         \
        var = PyUnicode_InternFromString(text);  \
        if (var == NULL) {                       \
            return NULL;                         \
        }                                        \
    } while (0)

PyMODINIT_FUNC PyInit__cexact(void)
{
    INTERN(s_kind, "kind");
    INTERN(s_rank, "rank");
    INTERN(s_seq, "seq");
    INTERN(s_dest, "dest");
    INTERN(s_src, "src");
    INTERN(s_tag, "tag");
    INTERN(s_comm, "comm");
    INTERN(s_sync, "sync");
    INTERN(s_blocking, "blocking");
    INTERN(s_req, "req");
    INTERN(s_recv, "recv");
    INTERN(s_send, "send");
    INTERN(s_reqs, "reqs");
    INTERN(s_op, "op");
    INTERN(s_root, "root");
    INTERN(k_names[K_SEND], "send");
    INTERN(k_names[K_RECV], "recv");
    INTERN(k_names[K_CONSUME], "consume");
    INTERN(k_names[K_WAIT], "wait");
    INTERN(k_names[K_COLL], "coll");
    INTERN(k_names[K_EXIT], "coll_exit");
    if (PyType_Ready(&DetType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&DetType);
    if (PyModule_AddObject(m, "Detector", (PyObject *)&DetType) < 0) {
        Py_DECREF(&DetType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
