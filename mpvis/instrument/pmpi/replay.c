/* mpvis PMPI trace library: forcing recorded deliveries (replay and flip).
 *
 * Netzer and Miller (section 4.2): a replay need only enforce the racing
 * deliveries.  `mpvis replay` (mpvis/cli/replay_native.py) turns a record
 * into one plan file per rank, MPVIS_REPLAY_DIR/plan-<rank>.txt, lines of
 *
 *     recv SEQ SRC     the wildcard-source receive recorded as event SEQ
 *                      takes its message from world rank SRC;
 *     any SEQ INDEX    the Waitany/Testany whose completion is event SEQ
 *                      completes request INDEX of its array.
 *
 * A receive forced to a source takes, by MPI's non-overtaking rule, the
 * first message of that source that matches its tag: the recorded one when
 * everything before it went as recorded.  Event numbers are the trace's seq,
 * which stay the same in a replay up to the first difference.  Plain text
 * integers only: nothing in the file is executed or evaluated.
 */
#include "mvp.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct { int64_t seq; int kind, value; } entry;
static entry *plan;
static size_t nplan, cursor;

void mvp_replay_init(void) {
    const char *dir = getenv("MPVIS_REPLAY_DIR");
    if (!dir || !*dir) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/plan-%d.txt", dir, mvp_rank);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "mpvis: rank %d: no replay plan %s; running unforced\n", mvp_rank, path);
        return;
    }
    char kind[16];
    long long seq;
    int value;
    size_t cap = 0;
    while (fscanf(f, "%15s %lld %d", kind, &seq, &value) == 3) {
        if (nplan == cap) {
            cap = cap ? 2 * cap : 64;
            plan = realloc(plan, cap * sizeof *plan);
        }
        plan[nplan].seq = seq;
        plan[nplan].kind = kind[0] == 'r' ? 0 : 1;
        plan[nplan].value = value;
        nplan++;
    }
    fclose(f);
}

int mvp_replay_active(void) { return nplan > 0; }

static const entry *at(int64_t seq, int kind) {
    /* Lookups come in increasing seq order: move a cursor, fall back to a scan. */
    while (cursor < nplan && plan[cursor].seq < seq) cursor++;
    for (size_t i = cursor; i < nplan && plan[i].seq == seq; i++)
        if (plan[i].kind == kind) return &plan[i];
    for (size_t i = 0; i < nplan; i++)
        if (plan[i].seq == seq && plan[i].kind == kind) return &plan[i];
    return NULL;
}

int mvp_replay_source(int64_t recv_seq, int *src, int *tag) {
    const entry *e = at(recv_seq, 0);
    if (!e) return 0;
    *src = e->value;
    *tag = -1;
    return 1;
}

int mvp_replay_index(int64_t at_seq, int *index) {
    const entry *e = at(at_seq, 1);
    if (!e) return 0;
    *index = e->value;
    return 1;
}
