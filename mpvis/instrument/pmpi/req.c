/* mpvis PMPI trace library: the requests this rank has open.
 *
 * One entry per request the library made or saw started (Isend, Irecv,
 * nonblocking collectives, persistent requests), found by its MPI_Request
 * handle when a completion call returns it.  Handles are not always unique:
 * MPICH hands out one shared, already-completed handle for small nonblocking
 * sends that finished at once.  So a handle leads to a list of entries, oldest
 * first, and a completion call whose array holds the same handle k times takes
 * the k oldest entries (requests that share a handle are complete sends, so
 * which of them a call completes changes no message).  A non-persistent entry
 * goes when its request completes or is freed; a persistent one when it is
 * freed.  At MPI_Finalize the entries left are the rank's request leaks (the
 * `requests` field of `final`, docs/c-programs.md): requests never completed
 * nor freed, and persistent requests never freed (or never started).
 */
#include "mvp.h"

#include <stdlib.h>
#include <string.h>

typedef struct { int used; MPI_Request h; mvp_req *first, *last; } slot_t;
static slot_t *tab;
static void drop(mvp_req *q);
static size_t cap, used;
static int64_t live;

static size_t slot(MPI_Request h) {
    uint64_t k = 0;
    memcpy(&k, &h, sizeof h < sizeof k ? sizeof h : sizeof k);
    size_t i = (size_t)((k * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
    while (tab[i].used && tab[i].h != h) i = (i + 1) & (cap - 1);
    return i;
}

static void grow(void) {
    slot_t *old = tab;
    size_t oldcap = cap;
    cap = cap ? cap * 2 : 256;
    tab = calloc(cap, sizeof *tab);
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].used) tab[slot(old[i].h)] = old[i];
    free(old);
}

/* The entry is filled before it is published: another thread's completion
 * call may look the handle up (a shared handle) the moment it is in the table,
 * and must never see a half-made entry (it would take it as inactive). */
mvp_req *mvp_req_add(const mvp_req *init) {
    mvp_req *q = malloc(sizeof *q);
    *q = *init;
    q->next = NULL;
    q->claimed = 0;
    MPI_Request h = q->handle;
    mvp_table_lock();
    if (2 * (used + 1) > cap) grow();
    size_t i = slot(h);
    if (!tab[i].used) {
        tab[i].used = 1;
        tab[i].h = h;
        tab[i].first = tab[i].last = q;
        used++;
    } else {
        tab[i].last->next = q;
        tab[i].last = q;
    }
    live++;
    mvp_table_unlock();
    return q;
}

mvp_req *mvp_req_find_nth(MPI_Request h, int k) {
    if (!cap || h == MPI_REQUEST_NULL) return NULL;
    mvp_table_lock();
    size_t i = slot(h);
    mvp_req *q = tab[i].used ? tab[i].first : NULL;
    while (q && k-- > 0) q = q->next;
    mvp_table_unlock();
    return q;
}

mvp_req *mvp_req_find(MPI_Request h) { return mvp_req_find_nth(h, 0); }

void mvp_req_drop(mvp_req *q) {
    mvp_table_lock();
    drop(q);
    mvp_table_unlock();
}

static void drop(mvp_req *q) {
    size_t i = slot(q->handle);
    if (!tab[i].used) return;
    mvp_req **p = &tab[i].first, *prev = NULL;
    while (*p && *p != q) { prev = *p; p = &(*p)->next; }
    if (!*p) return;
    *p = q->next;
    if (tab[i].last == q) tab[i].last = prev;
    free(q);
    live--;
    if (tab[i].first) return;
    /* the handle has no entry left: remove its slot (backward-shift deletion) */
    tab[i].used = 0;
    used--;
    for (size_t j = (i + 1) & (cap - 1); tab[j].used; j = (j + 1) & (cap - 1)) {
        slot_t x = tab[j];
        tab[j].used = 0;
        tab[slot(x.h)] = x;
    }
}

int64_t mvp_req_count(void) { return live; }

void mvp_req_leaks(mvp_x *x) {
    uint32_t n = 0;
    for (size_t i = 0; i < cap; i++)
        for (mvp_req *q = tab[i].used ? tab[i].first : NULL; q; q = q->next)
            if (q->active || q->persistent) n++;
    /* always written, empty too: it says the library followed the requests (a
     * freed one is gone from it, where the trace alone would show it open) */
    mvp_x_key_array(x, "requests", n);
    for (size_t i = 0; i < cap; i++) {
        for (mvp_req *q = tab[i].used ? tab[i].first : NULL; q; q = q->next) {
            if (!(q->active || q->persistent)) continue;
            mvp_x_raw_map(x, 5);
            mvp_x_raw_str(x, "req");
            mvp_x_raw_int(x, q->seq);
            mvp_x_raw_str(x, "call");
            mvp_x_raw_str(x, q->call ? q->call : "?");
            mvp_x_raw_str(x, "site");
            const char *s = mvp_site_label(q->site);
            if (s) mvp_x_raw_str(x, s); else mvp_x_raw_nil(x);
            mvp_x_raw_str(x, "state");
            mvp_x_raw_str(x, q->active ? "active" : "inactive");
            mvp_x_raw_str(x, "started");
            mvp_x_raw_bool(x, q->started);
        }
    }
}
