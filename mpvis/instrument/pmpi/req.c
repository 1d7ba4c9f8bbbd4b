/* mpvis PMPI trace library: the requests this rank has open.
 *
 * One entry per MPI_Request handle the library made or saw started (Isend,
 * Irecv, Imrecv, nonblocking collectives, persistent requests), found by the
 * handle when a completion call returns it.  A non-persistent entry goes when
 * its request completes or is freed; a persistent one when it is freed.  At
 * MPI_Finalize the entries left are the rank's request leaks (the `requests`
 * field of `final`, docs/c-programs.md): requests never completed nor freed,
 * and persistent requests never freed (or never started).
 */
#include "mvp.h"

#include <stdlib.h>
#include <string.h>

static mvp_req *tab;
static size_t cap, used;

static uint64_t key_of(MPI_Request h) {
    uint64_t k = 0;
    memcpy(&k, &h, sizeof h < sizeof k ? sizeof h : sizeof k);
    return k;
}

static size_t slot(MPI_Request h) {
    uint64_t k = key_of(h);
    size_t i = (size_t)((k * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
    while (tab[i].used && tab[i].handle != h) i = (i + 1) & (cap - 1);
    return i;
}

static void grow(void) {
    mvp_req *old = tab;
    size_t oldcap = cap;
    cap = cap ? cap * 2 : 256;
    tab = calloc(cap, sizeof *tab);
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].used) tab[slot(old[i].handle)] = old[i];
    free(old);
}

mvp_req *mvp_req_new(MPI_Request h) {
    if (2 * (used + 1) > cap) grow();
    size_t i = slot(h);
    if (!tab[i].used) used++;
    memset(&tab[i], 0, sizeof tab[i]);
    tab[i].used = 1;
    tab[i].handle = h;
    return &tab[i];
}

mvp_req *mvp_req_find(MPI_Request h) {
    if (!cap || h == MPI_REQUEST_NULL) return NULL;
    size_t i = slot(h);
    return tab[i].used ? &tab[i] : NULL;
}

void mvp_req_drop(mvp_req *q) {
    size_t i = (size_t)(q - tab);
    tab[i].used = 0;
    used--;
    for (size_t j = (i + 1) & (cap - 1); tab[j].used; j = (j + 1) & (cap - 1)) {
        mvp_req x = tab[j];
        tab[j].used = 0;
        tab[slot(x.handle)] = x;
    }
}

int64_t mvp_req_count(void) { return (int64_t)used; }

void mvp_req_leaks(mvp_x *x) {
    uint32_t n = 0;
    for (size_t i = 0; i < cap; i++)
        if (tab[i].used && (tab[i].active || tab[i].persistent)) n++;
    if (!n) return;
    mvp_x_key_array(x, "requests", n);
    for (size_t i = 0; i < cap; i++) {
        mvp_req *q = &tab[i];
        if (!q->used || !(q->active || q->persistent)) continue;
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
