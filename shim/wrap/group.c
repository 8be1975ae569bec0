/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pattern groups (include/dpushim.h): a list of sends and receives
 * compiled into one schedule, like a neighbourhood collective whose
 * neighbours the program names (shim_pairs_post, wrap/neigh.c). Ending a
 * group is a collective call on its communicator: it takes the next
 * instance number there, so every rank ends one.
 */
#include "shim/wrap/coll.h"
#include "shim/pers/start.h"
#include "common/dps_log.h"
#include "include/dpushim.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DPUSHIM_API SHIM_API

typedef struct gop {
    const void  *buf;
    int          count;
    MPI_Datatype type;
    int          peer;
    int          tag;
    int          order; /* as added: ties keep it */
} gop_t;

typedef struct gside {
    gop_t *op;
    int    n, cap;
} gside_t;

struct dpushim_group {
    MPI_Comm      comm;
    int           size;
    gside_t       side[2]; /* sends, receives */
    MPI_Datatype *dups;    /* persistent: derived types duplicated */
    int           ndups;
};

DPUSHIM_API const char *dpushim_impl_error_string(int code)
{
    static char buf[MPI_MAX_ERROR_STRING];
    int         len = 0;

    switch (code) {
    case DPUSHIM_SUCCESS: return "success";
    case DPUSHIM_ERR_OFF:
        return "offload is not available (DPUSHIM_OFFLOAD, DPUSHIM_GROUP or "
               "DPUSHIM_GROUP_INIT is 0, no agent, or MPI not initialized): "
               "use MPI";
    case DPUSHIM_ERR_ARG: return "invalid argument";
    case DPUSHIM_ERR_NOMEM: return "out of memory";
    default:
        if (code > 0 && PMPI_Error_string(code, buf, &len) == MPI_SUCCESS) {
            return buf;
        }
        return "unknown error code";
    }
}

DPUSHIM_API int dpushim_impl_available(void)
{
    return shim.initialized && shim.active &&
           shim.cfg.coll[DPS_COLL_GROUP - 1];
}

DPUSHIM_API int dpushim_impl_group_begin(MPI_Comm comm, dpushim_group_t *group)
{
    shim_ctx_t            x = shim_ctx_app();
    struct dpushim_group *g;
    int                   why;

    if (group == NULL) {
        dps_error("dpushim_group_begin: group is NULL");
        return DPUSHIM_ERR_ARG;
    }
    *group = NULL;
    if (!shim.initialized || comm == MPI_COMM_NULL ||
        !shim_coll_wanted(&x, DPS_COLL_GROUP, comm, &why)) {
        return comm == MPI_COMM_NULL && shim.initialized ? DPUSHIM_ERR_ARG
                                                         : DPUSHIM_ERR_OFF;
    }
    g = calloc(1, sizeof(*g));
    if (g == NULL) {
        return DPUSHIM_ERR_NOMEM;
    }
    g->comm = comm;
    g->size = shim_comm_size(comm);
    *group = g;
    return DPUSHIM_SUCCESS;
}

static int add(dpushim_group_t g, int s, const void *buf, int count,
               MPI_Datatype type, int peer, int tag)
{
    const char *fn = s == 0 ? "dpushim_group_send" : "dpushim_group_recv";
    gside_t    *sd;

    if (g == NULL) {
        dps_error("%s: the group is NULL (not begun, or ended)", fn);
        return DPUSHIM_ERR_ARG;
    }
    if (count < 0 || type == MPI_DATATYPE_NULL) {
        dps_error("%s: count %d or datatype MPI_DATATYPE_NULL", fn, count);
        return DPUSHIM_ERR_ARG;
    }
    if (tag < 0) {
        dps_error("%s: tag %d (MPI_ANY_TAG is not allowed)", fn, tag);
        return DPUSHIM_ERR_ARG;
    }
    if (peer == MPI_PROC_NULL) {
        return DPUSHIM_SUCCESS; /* nothing moves */
    }
    if (peer < 0 || peer >= g->size) {
        dps_error("%s: peer %d is not a rank of the group's communicator "
                  "(size %d; MPI_ANY_SOURCE is not allowed)",
                  fn, peer, g->size);
        return DPUSHIM_ERR_ARG;
    }
    sd = &g->side[s];
    if (sd->n == sd->cap) {
        int    cap = sd->cap ? 2 * sd->cap : 16;
        gop_t *v = realloc(sd->op, sizeof(*v) * (size_t)cap);

        if (v == NULL) {
            return DPUSHIM_ERR_NOMEM;
        }
        sd->op = v;
        sd->cap = cap;
    }
    sd->op[sd->n] = (gop_t){buf, count, type, peer, tag, sd->n};
    sd->n++;
    return DPUSHIM_SUCCESS;
}

DPUSHIM_API int dpushim_impl_group_add(dpushim_group_t group, int recv,
                                       const void *buf, int count,
                                       MPI_Datatype datatype, int peer,
                                       int tag)
{
    return add(group, recv != 0, buf, count, datatype, peer, tag);
}

static void group_free(void *arg)
{
    struct dpushim_group *g = arg;

    if (g == NULL) {
        return;
    }
    shim_in_call++;
    for (int i = 0; i < g->ndups; i++) {
        PMPI_Type_free(&g->dups[i]);
    }
    shim_in_call--;
    free(g->dups);
    free(g->side[0].op);
    free(g->side[1].op);
    free(g);
}

DPUSHIM_API void dpushim_impl_group_free(dpushim_group_t *group)
{
    if (group != NULL) {
        group_free(*group);
        *group = NULL;
    }
}

/* By peer, then tag, then as added: the k-th send to a peer with a tag
 * meets the peer's k-th receive with it. */
static int op_cmp(const void *x, const void *y)
{
    const gop_t *a = x, *b = y;

    if (a->peer != b->peer) {
        return a->peer < b->peer ? -1 : 1;
    }
    if (a->tag != b->tag) {
        return a->tag < b->tag ? -1 : 1;
    }
    return (a->order > b->order) - (a->order < b->order);
}

/* One side as blocks at their own addresses (MPI_BOTTOM-relative). */
static int blocks(const gside_t *sd, shim_blocks_t *b, int **peer)
{
    int          *cnt = malloc(sizeof(int) * (size_t)(sd->n + 1));
    MPI_Aint     *disp = malloc(sizeof(MPI_Aint) * (size_t)(sd->n + 1));
    MPI_Datatype *t = malloc(sizeof(MPI_Datatype) * (size_t)(sd->n + 1));
    int          *p = malloc(sizeof(int) * (size_t)(sd->n + 1));

    memset(b, 0, sizeof(*b));
    if (cnt == NULL || disp == NULL || t == NULL || p == NULL) {
        free(cnt);
        free(disp);
        free(t);
        free(p);
        return DPS_ERR_NOMEM;
    }
    for (int i = 0; i < sd->n; i++) {
        cnt[i] = sd->op[i].count;
        disp[i] = (MPI_Aint)(uintptr_t)sd->op[i].buf;
        t[i] = sd->op[i].type;
        p[i] = sd->op[i].peer;
    }
    b->buf = NULL;
    b->n = sd->n;
    b->counts = cnt;
    b->adispls = disp;
    b->types = t;
    b->spread = 1;
    *peer = p;
    return DPS_OK;
}

static void blocks_free(shim_blocks_t *b, int *peer)
{
    free((void *)b->counts);
    free((void *)b->adispls);
    free((void *)b->types);
    free(peer);
}

/* Post the group (sorted): an MPI error code or MPI_SUCCESS. */
static int post(struct dpushim_group *g, MPI_Request *req, shim_ctx_t *x)
{
    shim_blocks_t sb, rb;
    int          *sp = NULL, *rp = NULL, go, rc;
    shim_comm_t  *c;
    shim_call_t   k;

    if (blocks(&g->side[0], &sb, &sp) != 0) {
        return MPI_ERR_NO_MEM;
    }
    if (blocks(&g->side[1], &rb, &rp) != 0) {
        blocks_free(&sb, sp);
        return MPI_ERR_NO_MEM;
    }
    /* After an agent failure too: stock MPI runs the schedule (no MPI
     * call does what a group does). */
    go = shim_coll_begin_sched(x, DPS_COLL_GROUP, g->comm, &c, &k);
    rc = go == SHIM_FAIL
             ? MPI_ERR_NO_MEM
             : shim_pairs_post(c, &k, &sb, sp, &rb, rp, g->comm, req);
    blocks_free(&sb, sp);
    blocks_free(&rb, rp);
    return rc;
}

/* Checks shared by both ends; sorts the group. */
static int ending(dpushim_group_t *group, MPI_Request *request, int coll)
{
    shim_ctx_t            x = shim_ctx_app();
    struct dpushim_group *g;
    int                   why;

    if (request == NULL || group == NULL || *group == NULL) {
        dps_error("dpushim_group_end: %s is NULL",
                  request == NULL ? "request" : "the group");
        if (group != NULL) {
            dpushim_impl_group_free(group);
        }
        return DPUSHIM_ERR_ARG;
    }
    *request = MPI_REQUEST_NULL;
    g = *group;
    if (!shim_coll_wanted(&x, coll, g->comm, &why)) {
        dpushim_impl_group_free(group);
        return DPUSHIM_ERR_OFF;
    }
    for (int s = 0; s < 2; s++) {
        qsort(g->side[s].op, (size_t)g->side[s].n, sizeof(gop_t), op_cmp);
    }
    return DPUSHIM_SUCCESS;
}

static int end_now(dpushim_group_t *group, MPI_Request *request)
{
    int rc = ending(group, request, DPS_COLL_GROUP);

    if (rc == DPUSHIM_SUCCESS) {
        shim_ctx_t x = shim_ctx_app();

        rc = post(*group, request, &x);
        dpushim_impl_group_free(group);
    }
    return rc;
}

static int start(shim_pers_t *p, MPI_Request *r, shim_ctx_t *x)
{
    return post(p->args, r, x);
}

/* Derived types duplicated: the program may free its own. */
static int keep_types(struct dpushim_group *g)
{
    int n = g->side[0].n + g->side[1].n;

    g->dups = malloc(sizeof(MPI_Datatype) * (size_t)(n + 1));
    if (g->dups == NULL) {
        return DPS_ERR_NOMEM;
    }
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < g->side[s].n; i++) {
            MPI_Datatype *t = &g->side[s].op[i].type;
            int           ni, na, nd, comb;

            if (PMPI_Type_get_envelope(*t, &ni, &na, &nd, &comb) ==
                    MPI_SUCCESS &&
                comb != MPI_COMBINER_NAMED &&
                PMPI_Type_dup(*t, &g->dups[g->ndups]) == MPI_SUCCESS) {
                *t = g->dups[g->ndups++];
            }
        }
    }
    return DPS_OK;
}

static int end_persistent(dpushim_group_t *group, MPI_Request *request)
{
    int                   rc = ending(group, request, DPS_COLL_GROUP_INIT);
    struct dpushim_group *g;

    if (rc != DPUSHIM_SUCCESS) {
        return rc;
    }
    g = *group;
    *group = NULL;
    if (keep_types(g) != 0) {
        group_free(g);
        return DPUSHIM_ERR_NOMEM;
    }
    return shim_pers_new(DPS_COLL_GROUP_INIT, g->comm, start, group_free, g, 1,
                         request);
}

DPUSHIM_API int dpushim_impl_group_end(dpushim_group_t *group,
                                       MPI_Request *request, int persistent)
{
    return persistent ? end_persistent(group, request)
                      : end_now(group, request);
}
