/* mpvis PMPI trace library: communicators, datatypes and reduction operations.
 *
 * Every record names its communicator by an id that is the same on all its
 * members (`comm` in the trace; 0 is MPI_COMM_WORLD) and names ranks in
 * MPI_COMM_WORLD's numbering, so that the model matches messages and
 * collectives across ranks.  A communicator created collectively (dup, split,
 * create, cartesian and graph topologies, merge) gets its id as the mpi4py
 * path gives it (mpvis/instrument/traced_comm.py, _mv_derive): the members
 * agree on the largest next index k (an allreduce over the new communicator)
 * and the id is k * nprocs + the lowest world rank of the members, so the
 * disjoint communicators of one split share k but not their id.  Each one
 * also gets a duplicate for the in-rank ring check of collectives (coll.c).
 * Ids fit the model's 32-bit column.  Intercommunicators are not traced (their point-to-point traffic and
 * collectives go through untouched).
 */
#include "mvp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMAX 4096
static mvp_comm *comms[CMAX];   /* open addressing on the handle */
static int64_t next_index = 1;

static size_t slot_of(MPI_Comm c) {
    uint64_t k = 0;
    memcpy(&k, &c, sizeof c < sizeof k ? sizeof c : sizeof k);
    size_t i = (size_t)((k * 0x9E3779B97F4A7C15ull) >> 40) & (CMAX - 1);
    while (comms[i] && comms[i]->handle != c) i = (i + 1) & (CMAX - 1);
    return i;
}

static mvp_comm *add(MPI_Comm c, int64_t id, int inter) {
    mvp_comm *m = calloc(1, sizeof *m);
    m->handle = c;
    m->id = id;
    m->inter = inter;
    m->ring = MPI_COMM_NULL;
    if (!inter) {
        MPI_Group g, w;
        PMPI_Comm_size(c, &m->size);
        m->world = malloc(sizeof(int) * (size_t)m->size);
        int *in = malloc(sizeof(int) * (size_t)m->size);
        for (int i = 0; i < m->size; i++) in[i] = i;
        PMPI_Comm_group(c, &g);
        PMPI_Comm_group(MPI_COMM_WORLD, &w);
        PMPI_Group_translate_ranks(g, m->size, in, w, m->world);
        PMPI_Group_free(&g);
        PMPI_Group_free(&w);
        free(in);
    }
    mvp_table_lock();
    size_t i = slot_of(c);
    if (comms[i] == NULL) comms[i] = m;
    mvp_table_unlock();
    return m;
}

void mvp_comm_init(void) {
    mvp_comm *w = add(MPI_COMM_WORLD, 0, 0);
    w->group_sent = 1;
    if (mvp_nprocs > 1) PMPI_Comm_dup(MPI_COMM_WORLD, &w->ring);
}

/* A communicator created collectively by this rank: agree on its id. */
static void derived(MPI_Comm c) {
    if (c == MPI_COMM_NULL) return;
    int inter = 0;
    PMPI_Comm_test_inter(c, &inter);
    if (inter) { add(c, -1, 1); return; }
    int64_t k = next_index, agreed = k;
    PMPI_Allreduce(&k, &agreed, 1, MPI_INT64_T, MPI_MAX, c);
    next_index = agreed + 1;
    mvp_comm *m = add(c, 0, 0);
    int low = m->world[0];
    for (int i = 1; i < m->size; i++) if (m->world[i] < low) low = m->world[i];
    m->id = agreed * mvp_nprocs + low;
    if (m->size > 1) PMPI_Comm_dup(c, &m->ring);
}

static MVP_TLS MPI_Comm last_handle = MPI_COMM_NULL;
static MVP_TLS mvp_comm *last_comm;   /* the last lookup (the same comm, call after call) */

mvp_comm *mvp_comm_of(MPI_Comm c) {
    if (c == last_handle && last_comm) return last_comm;
    mvp_table_lock();
    mvp_comm *m = comms[slot_of(c)];
    mvp_table_unlock();
    if (m) {
        last_handle = c;
        last_comm = m;
        return m;
    }
    if (c == MPI_COMM_NULL) return NULL;
    /* Not made through a traced call (MPI_COMM_SELF, a predefined or
     * Sessions-made communicator): an id of this rank only. */
    int inter = 0;
    PMPI_Comm_test_inter(c, &inter);
    if (inter) return add(c, -1, 1);
    int size = 0;
    PMPI_Comm_size(c, &size);
    static int64_t next_local;
    m = add(c, ((int64_t)1 << 30) + (int64_t)mvp_rank * 4096 + next_local++ % 4096, 0);
    m->group_sent = size == 1 ? 0 : 1;
    return m;
}

int mvp_world_of(mvp_comm *c, int r) {
    if (r == MPI_ANY_SOURCE) return -1;
    if (r == MPI_PROC_NULL || r < 0 || !c || r >= c->size) return -2;
    return c->world[r];
}

void mvp_comm_forget(MPI_Comm c) {
    last_handle = MPI_COMM_NULL;  /* (other threads' caches: a freed handle is not used again) */
    last_comm = NULL;
    mvp_table_lock();
    size_t i = slot_of(c);
    mvp_comm *m = comms[i];
    if (!m) { mvp_table_unlock(); return; }
    comms[i] = NULL;
    /* re-insert the rest of the cluster (open addressing without tombstones) */
    for (size_t j = (i + 1) & (CMAX - 1); comms[j]; j = (j + 1) & (CMAX - 1)) {
        mvp_comm *x = comms[j];
        comms[j] = NULL;
        comms[slot_of(x->handle)] = x;
    }
    mvp_table_unlock();
    if (m->ring != MPI_COMM_NULL) PMPI_Comm_free(&m->ring);
    free(m->world);
    free(m);
}

/* -- the wrapped creation calls ------------------------------------------------ */
#define TRACED_NEW(call, out) do { int rc_ = (call); if (rc_ == MPI_SUCCESS && mvp_on) derived(*(out)); return rc_; } while (0)

int MPI_Comm_dup(MPI_Comm c, MPI_Comm *n) { TRACED_NEW(PMPI_Comm_dup(c, n), n); }
int MPI_Comm_dup_with_info(MPI_Comm c, MPI_Info i, MPI_Comm *n) { TRACED_NEW(PMPI_Comm_dup_with_info(c, i, n), n); }
int MPI_Comm_split(MPI_Comm c, int color, int key, MPI_Comm *n) { TRACED_NEW(PMPI_Comm_split(c, color, key, n), n); }
int MPI_Comm_split_type(MPI_Comm c, int t, int key, MPI_Info i, MPI_Comm *n) {
    TRACED_NEW(PMPI_Comm_split_type(c, t, key, i, n), n);
}
int MPI_Comm_create(MPI_Comm c, MPI_Group g, MPI_Comm *n) { TRACED_NEW(PMPI_Comm_create(c, g, n), n); }
int MPI_Comm_create_group(MPI_Comm c, MPI_Group g, int tag, MPI_Comm *n) {
    TRACED_NEW(PMPI_Comm_create_group(c, g, tag, n), n);
}
int MPI_Cart_create(MPI_Comm c, int nd, const int dims[], const int periods[], int reorder, MPI_Comm *n) {
    TRACED_NEW(PMPI_Cart_create(c, nd, dims, periods, reorder, n), n);
}
int MPI_Cart_sub(MPI_Comm c, const int remain[], MPI_Comm *n) { TRACED_NEW(PMPI_Cart_sub(c, remain, n), n); }
int MPI_Graph_create(MPI_Comm c, int nn, const int index[], const int edges[], int reorder, MPI_Comm *n) {
    TRACED_NEW(PMPI_Graph_create(c, nn, index, edges, reorder, n), n);
}
int MPI_Dist_graph_create_adjacent(MPI_Comm c, int ind, const int srcs[], const int sw[], int outd,
                                   const int dsts[], const int dw[], MPI_Info info, int reorder,
                                   MPI_Comm *n) {
    TRACED_NEW(PMPI_Dist_graph_create_adjacent(c, ind, srcs, sw, outd, dsts, dw, info, reorder, n), n);
}
int MPI_Dist_graph_create(MPI_Comm c, int nn, const int srcs[], const int deg[], const int dsts[],
                          const int w[], MPI_Info info, int reorder, MPI_Comm *n) {
    TRACED_NEW(PMPI_Dist_graph_create(c, nn, srcs, deg, dsts, w, info, reorder, n), n);
}
int MPI_Intercomm_create(MPI_Comm l, int ll, MPI_Comm p, int rl, int tag, MPI_Comm *n) {
    TRACED_NEW(PMPI_Intercomm_create(l, ll, p, rl, tag, n), n);
}
int MPI_Intercomm_merge(MPI_Comm c, int high, MPI_Comm *n) { TRACED_NEW(PMPI_Intercomm_merge(c, high, n), n); }

int MPI_Comm_free(MPI_Comm *c) {
    MPI_Comm old = *c;
    int rc = PMPI_Comm_free(c);
    if (rc == MPI_SUCCESS && mvp_on) mvp_comm_forget(old);
    return rc;
}

/* -- datatypes and operations ------------------------------------------------ */
typedef struct { MPI_Datatype t; const char *name; } tname;
const char *mvp_type_name(MPI_Datatype t) {
    static const tname names[] = {
        {MPI_CHAR, "char"}, {MPI_SIGNED_CHAR, "signed_char"}, {MPI_UNSIGNED_CHAR, "unsigned_char"},
        {MPI_BYTE, "byte"}, {MPI_SHORT, "short"}, {MPI_UNSIGNED_SHORT, "unsigned_short"},
        {MPI_INT, "int"}, {MPI_UNSIGNED, "unsigned"}, {MPI_LONG, "long"},
        {MPI_UNSIGNED_LONG, "unsigned_long"}, {MPI_LONG_LONG, "long_long"},
        {MPI_UNSIGNED_LONG_LONG, "unsigned_long_long"}, {MPI_FLOAT, "float"},
        {MPI_DOUBLE, "double"}, {MPI_LONG_DOUBLE, "long_double"}, {MPI_C_BOOL, "bool"},
        {MPI_INT8_T, "int8"}, {MPI_INT16_T, "int16"}, {MPI_INT32_T, "int32"},
        {MPI_INT64_T, "int64"}, {MPI_UINT8_T, "uint8"}, {MPI_UINT16_T, "uint16"},
        {MPI_UINT32_T, "uint32"}, {MPI_UINT64_T, "uint64"}, {MPI_WCHAR, "wchar"},
        {MPI_FLOAT_INT, "float_int"}, {MPI_DOUBLE_INT, "double_int"}, {MPI_LONG_INT, "long_int"},
        {MPI_2INT, "2int"}, {MPI_SHORT_INT, "short_int"}, {MPI_PACKED, "packed"},
        {MPI_C_FLOAT_COMPLEX, "float_complex"}, {MPI_C_DOUBLE_COMPLEX, "double_complex"},
        {MPI_AINT, "aint"}, {MPI_OFFSET, "offset"}, {MPI_COUNT, "count"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].t == t) return names[i].name;
    return t == MPI_DATATYPE_NULL ? "null" : "derived";
}

static MVP_TLS MPI_Datatype last_type = MPI_DATATYPE_NULL;
static MVP_TLS int64_t last_size;     /* its size, until MPI_Type_free */

int MPI_Type_free(MPI_Datatype *t) {
    last_type = MPI_DATATYPE_NULL;
    return PMPI_Type_free(t);
}

int mvp_type_bytes(MPI_Datatype t, MPI_Count count, int64_t *bytes) {
    if (t == last_type && t != MPI_DATATYPE_NULL) {
        *bytes = last_size * (int64_t)count;
        return 1;
    }
#if MPI_VERSION >= 4
    MPI_Count size = 0;
    if (t == MPI_DATATYPE_NULL || PMPI_Type_size_c(t, &size) != MPI_SUCCESS) return 0;
#else
    int size = 0;
    if (t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &size) != MPI_SUCCESS) return 0;
#endif
    last_type = t;
    last_size = (int64_t)size;
    *bytes = (int64_t)size * (int64_t)count;
    return 1;
}

typedef struct { MPI_Op op; const char *name; } oname;
const char *mvp_op_name(MPI_Op op) {
    static const oname names[] = {
        {MPI_SUM, "sum"}, {MPI_PROD, "prod"}, {MPI_MAX, "max"}, {MPI_MIN, "min"},
        {MPI_LAND, "land"}, {MPI_BAND, "band"}, {MPI_LOR, "lor"}, {MPI_BOR, "bor"},
        {MPI_LXOR, "lxor"}, {MPI_BXOR, "bxor"}, {MPI_MAXLOC, "maxloc"}, {MPI_MINLOC, "minloc"},
        {MPI_REPLACE, "replace"}, {MPI_NO_OP, "no_op"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].op == op) return names[i].name;
    return op == MPI_OP_NULL ? "null" : "user";
}
