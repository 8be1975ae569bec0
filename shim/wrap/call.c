/* SPDX-License-Identifier: BSD-3-Clause */
/* The MPI_I* wrappers' common path: decide, begin, post (wrap/coll.h). */
#include "shim/wrap/coll.h"
#include "shim/wrap/shapes.h"
#include "shim/data/engine.h"
#include "shim/failover/failover.h"
#include "shim/core/sched.h"
#include "common/dps_log.h"
#include "common/dps_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Add n to coll's statistic stat. */
static void count(int coll, int stat, uint64_t n)
{
    pthread_mutex_lock(&shim.lock);
    shim.stat.coll[coll][stat] += n;
    pthread_mutex_unlock(&shim.lock);
}

/* The decision says no, for this reason (x may be NULL: not recorded). */
static int say_no(shim_ctx_t *x, int why)
{
    if (x != NULL) {
        x->why = why;
    }
    return 0;
}

int shim_fallback(shim_ctx_t *x, int coll, int rc)
{
    int why = x->why >= 0 && x->why < SHIM_NWHY ? x->why : SHIM_WHY_OTHER;

    if (x->as != 0) {
        coll = x->as; /* the statistics line of the persistent form */
    }
    count(coll, SHIM_STAT_FALLBACK, 1);
    count(coll, SHIM_STAT_WHY + why, 1);
    x->why = SHIM_WHY_OTHER;
    return rc;
}

int shim_comm_size(MPI_Comm comm)
{
    int n = 0;

    if (comm != MPI_COMM_NULL) {
        PMPI_Comm_size(comm, &n);
    }
    return n;
}

int shim_coll_wanted(shim_ctx_t *x, int coll, MPI_Comm comm)
{
    int inter = 0;

    x->why = SHIM_WHY_OTHER; /* a new decision */
    if (x->as != 0) {
        coll = x->as; /* a persistent collective's own switch */
    }
    if (!shim.active || !shim.cfg.coll[coll - 1]) {
        return say_no(x, SHIM_WHY_OFF);
    }
    if (comm != MPI_COMM_NULL) {
        PMPI_Comm_test_inter(comm, &inter);
    }
    if (comm == MPI_COMM_NULL || inter) {
        return say_no(x, SHIM_WHY_COMM);
    }
    return 1;
}

int shim_big_enough(shim_ctx_t *x, uint64_t bytes)
{
    return (bytes > 0 && bytes >= shim.min_bytes) || say_no(x, SHIM_WHY_SMALL);
}

int shim_any_size(shim_ctx_t *x)
{
    return shim.min_bytes != DPS_MIN_BYTES_AUTO || say_no(x, SHIM_WHY_SMALL);
}

int shim_size_offloads(shim_ctx_t *x, MPI_Datatype dt, int count, int refused)
{
    shim_layout_t l;

    if (!shim_layout(dt, count, &l)) {
        return refused && shim_any_size(x);
    }
    return shim_big_enough(x, l.bytes);
}

int shim_coll_stock(const shim_coll_args_t *a, MPI_Comm m, MPI_Request *req)
{
#define STOCK(ID, name, Name, family, shape, entry) \
    case DPS_COLL_##ID: return PMPI_I##name(SHIM_C_##shape(a) m, req);

    switch (dps_coll_base(a->coll)) {
        DPS_COLLS(STOCK)
    default: return MPI_ERR_INTERN;
    }
#undef STOCK
}

int shim_coll_stock_as(const shim_coll_args_t *a, MPI_Comm use,
                       MPI_Request *req)
{
    int rc = shim_coll_stock(a, use, req);

    if (rc != MPI_SUCCESS && use != a->comm) {
        PMPI_Comm_call_errhandler(a->comm, rc);
    }
    return rc;
}

/* May this call's send data stay unpacked, read in place by the DMA
 * engines? Only when every rank of c is on this node, has its engine
 * running and an agent that reaches every rank of the node with CMA
 * (shim.topo.rank_direct, the same table on every rank: all decide alike),
 * and the data path is direct (the staged path, to other hosts, needs
 * packed data), and not for reductions (their elements are combined as
 * packed). */
static int gather_ok(shim_comm_t *c, int coll)
{
    int reduction = dps_coll_family(coll) == DPS_FAM_REDUCE;

    if (reduction || shim.fo.state != SHIM_FO_NONE || !shim_engine_running() ||
        shim.cfg.data_path != DPS_DATA_DIRECT ||
        shim.cfg.transport == DPS_TRANSPORT_UCX ||
        shim.topo.rank_node == NULL || shim.topo.rank_direct == NULL) {
        return 0;
    }
    if (c->one_node == 0) {
        int me = shim.topo.rank_node[shim.topo.world_rank];

        c->one_node = 1;
        for (int i = 0; i < c->size; i++) {
            if (shim.topo.rank_node[c->members[i]] != me ||
                !shim.topo.rank_direct[c->members[i]]) {
                c->one_node = -1;
            }
        }
    }
    return c->one_node == 1;
}

static int begin(shim_ctx_t *x, int coll, MPI_Comm comm, shim_comm_t **cp,
                 shim_call_t *k, MPI_Comm *use, int direct_ok)
{
    shim_comm_t *c;
    int          rc;

    memset(k, 0, sizeof(*k));
    shim_in_call++;
    /*
     * A failure already known here changes the path: drive its takeover.
     * Failure notices from other ranks are not looked for here: that
     * would run MPI's progress engine inside a call that starts a
     * collective, where stock MPI runs none, and at a moment that differs
     * from rank to rank (the look is timed). Open MPI starts the later
     * rounds of an MPI_Comm_idup from its progress engine, each under the
     * next tag of the parent communicator: run between two of the
     * application's calls on one rank and after them on another, a round
     * took a different tag on each and the ranks' collectives crossed
     * (MPICH's test comm/comm_idup_nb hung). The completion calls look
     * for notices, as they look for everything else.
     */
    if (shim.fo.state != SHIM_FO_NONE ||
        shim_fo_noticed() != SHIM_FO_NO_CAUSE) {
        shim_fo_progress();
    }
    c = x->stream != NULL ? x->stream : shim_comm_get(comm);
    shim_in_call--;
    if (c == NULL) {
        return SHIM_FAIL;
    }
    *cp = c;
    k->coll = coll;
    k->stat = x->as != 0 ? x->as : coll;
    k->keep = x->keep;
    k->pin = x->pin;
    k->seq = c->seq++;
    k->gather_ok = gather_ok(c, coll);
    /* A persistent collective's start never goes to a stock collective
     * call (matched in call order, not init order): it is queued, and
     * redone from its schedule under its stream's tag (failover/take.c). */
    if (shim.fo.state != SHIM_FO_NONE && direct_ok && c->stream == 0) {
        shim_in_call++;
        rc = shim_fo_direct(c, k->seq, k->stat, use);
        shim_in_call--;
        if (rc == 1) {
            return SHIM_STOCK;
        }
    }
    return SHIM_GO;
}

int shim_coll_begin(shim_ctx_t *x, int coll, MPI_Comm comm, shim_comm_t **cp,
                    shim_call_t *k, MPI_Comm *use)
{
    return begin(x, coll, comm, cp, k, use, 1);
}

int shim_coll_begin_sched(shim_ctx_t *x, int coll, MPI_Comm comm,
                          shim_comm_t **cp, shim_call_t *k)
{
    MPI_Comm use = comm;

    return begin(x, coll, comm, cp, k, &use, 0);
}

uint64_t *shim_call_arrays(shim_call_t *k, int size, int n)
{
    free(k->arrays);
    k->arrays = calloc((size_t)size * (size_t)n + 1, sizeof(uint64_t));
    return k->arrays;
}

int shim_call_post(shim_comm_t *c, shim_call_t *k, MPI_Request *req)
{
    shim_sched_t *s;
    uint64_t      bytes;
    int           rc, stat;

    k->args.coll = k->coll;
    k->args.size = (uint32_t)c->size;
    k->args.rank = (uint32_t)c->rank;
    k->args.agent = c->agent;
    pthread_mutex_lock(&shim.lock);
    s = k->pin != NULL ? shim_sched_pinned(c, &k->args, k->pin)
                       : shim_sched_get(c, &k->args);
    pthread_mutex_unlock(&shim.lock);
    if (s == NULL) {
        shim_call_clear(k);
        return MPI_ERR_NO_MEM;
    }
    if (s->need[DPS_BUF_SEND] > k->len[0] ||
        s->need[DPS_BUF_RECV] > k->len[1]) {
        /* Builder and wrapper disagree: a bug, never a silent overrun. */
        dps_error(
            "%s: the schedule needs %llu and %llu bytes, the buffers "
            "hold %llu and %llu",
            dps_coll_short(k->coll), (unsigned long long)s->need[DPS_BUF_SEND],
            (unsigned long long)s->need[DPS_BUF_RECV],
            (unsigned long long)k->len[0], (unsigned long long)k->len[1]);
        pthread_mutex_lock(&shim.lock);
        shim_sched_put(s);
        pthread_mutex_unlock(&shim.lock);
        shim_call_clear(k);
        return MPI_ERR_INTERN;
    }
    stat = k->stat; /* the persistent form's line while it starts */
    bytes = k->bytes;
    if (k->unpack.scat != NULL && !s->reads_recv) {
        /* Received bytes go straight into place (the engine reads them
         * there); the schedule never reads them back from RECV. */
        shim_engine_scatter_add(k->unpack.scat);
    }
    shim_in_call++;
    rc = shim_op_start(c, k, s, req); /* takes k's contents */
    shim_in_call--;
    if (rc == MPI_SUCCESS && shim.fo.state == SHIM_FO_NONE) {
        count(stat, SHIM_STAT_OFFLOADED, 1);
        count(stat, SHIM_STAT_BYTES, bytes);
    }
    return rc;
}

int shim_call_erroneous(shim_comm_t *c, shim_call_t *k, int status,
                        int mpi_class, MPI_Comm comm, MPI_Request *req,
                        const char *what)
{
    MPI_Request r = MPI_REQUEST_NULL, none;

    if (req == NULL) {
        req = &none;
    }
    dps_error("%s: %s", what, dps_status_str(status));
    shim_call_clear(k);
    k->error = status;
    k->buf[0] = k->buf[1] = NULL;
    k->len[0] = k->len[1] = 0;
    shim_in_call++;
    if (shim_op_start(c, k, NULL, &r) == MPI_SUCCESS) {
        PMPI_Request_free(&r);
    }
    shim_in_call--;
    *req = MPI_REQUEST_NULL;
    PMPI_Comm_call_errhandler(comm, mpi_class);
    return mpi_class;
}

/* Probing (a persistent init): the decision into x->verdict, MPI's
 * verdict on the call into x->chk, nothing done. */
static int probed(const shim_coll_args_t *a, shim_offloads_fn offloads,
                  shim_ctx_t *x)
{
    shim_coll_args_t    init = *a;
    const shim_check_t *refused = NULL;

    x->chk.cls = MPI_SUCCESS;
    x->verdict = SHIM_TO_STOCK;
    if (!shim_coll_wanted(x, dps_coll_base(a->coll), a->comm)) {
        return MPI_SUCCESS;
    }
    init.coll = x->as != 0 ? x->as : a->coll; /* MPI's *_init checks */
    if (shim_coll_check(&init, &x->chk) != MPI_SUCCESS) {
        refused = &x->chk;
    }
    if (offloads(a, refused, x)) {
        x->verdict = SHIM_OFFLOAD;
    }
    return MPI_SUCCESS;
}

int shim_coll_start(const shim_coll_args_t *a, shim_offloads_fn offloads,
                    shim_ctx_t *x, int *rc)
{
    shim_check_t chk;
    int          coll = dps_coll_base(a->coll);

    if (x->probe) {
        *rc = probed(a, offloads, x);
        return 1;
    }
    /* Off, or not an intracommunicator: stock MPI, checks and all, on
     * every rank alike. */
    if (!shim_coll_wanted(x, coll, a->comm)) {
        *rc = shim_fallback(x, coll, shim_coll_stock(a, a->comm, a->request));
        return 1;
    }
    if (shim_coll_check(a, &chk) != MPI_SUCCESS) {
        *rc = shim_call_rejected(a, &chk, offloads(a, &chk, x), x);
        return 1;
    }
    if (!offloads(a, NULL, x)) {
        *rc = shim_fallback(x, coll, shim_coll_stock(a, a->comm, a->request));
        return 1;
    }
    return 0;
}

int shim_coll_run(const shim_coll_args_t *a, shim_ctx_t *x,
                  shim_offloads_fn offloads, shim_post_fn post)
{
    MPI_Comm     use = a->comm;
    shim_comm_t *c;
    shim_call_t  k;
    int          rc;

    if (shim_in_call || !shim.initialized) {
        return shim_coll_stock(a, a->comm, a->request);
    }
    if (shim_coll_start(a, offloads, x, &rc)) {
        return rc;
    }
    switch (shim_coll_begin(x, a->coll, a->comm, &c, &k, &use)) {
    case SHIM_GO: return post(c, &k, a);
    case SHIM_STOCK: return shim_coll_stock_as(a, use, a->request);
    default: return MPI_ERR_NO_MEM;
    }
}

int shim_call_rejected(const shim_coll_args_t *a, const shim_check_t *chk,
                       int offload, shim_ctx_t *x)
{
    int          coll = dps_coll_base(a->coll);
    MPI_Comm     use = a->comm;
    shim_comm_t *c;
    shim_call_t  k;
    char         what[200];

    if (!offload) {
        return shim_fallback(x, coll, shim_coll_stock(a, a->comm, a->request));
    }
    snprintf(what, sizeof(what), "%s: %s", dps_coll_str((unsigned)coll),
             chk->what);
    switch (shim_coll_begin(x, coll, a->comm, &c, &k, &use)) {
    case SHIM_GO:
        /* Nothing runs: counted as left to MPI, as MPI's answer it is. */
        return shim_fallback(x, coll,
                             shim_call_erroneous(c, &k, DPS_ERR_ARG, chk->cls,
                                                 chk->raise_on, a->request,
                                                 what));
    case SHIM_STOCK:
        /* After an agent failure every rank runs this instance on stock
         * MPI, which refuses the call itself. */
        return shim_coll_stock_as(a, use, a->request);
    default:
        /* Out of memory: nothing can be posted. */
        dps_error("%s", what);
        PMPI_Comm_call_errhandler(chk->raise_on, chk->cls);
        return chk->cls;
    }
}

int shim_place_failed(shim_comm_t *c, shim_call_t *k, int rc, MPI_Comm comm,
                      MPI_Request *req)
{
    if (rc == MPI_ERR_TYPE) {
        return shim_call_erroneous(c, k, DPS_ERR_ARG, MPI_ERR_TYPE, comm, req,
                                   "a count or datatype MPI would "
                                   "refuse");
    }
    shim_call_clear(k);
    /* Nothing posted: the other ranks' instance cannot end well. */
    shim_call_erroneous(c, k, DPS_ERR_NOMEM, rc, comm, req,
                        "cannot stage the data of a collective");
    return rc;
}

int shim_send_overlaps(const shim_call_t *k)
{
    const shim_scatter_t *g = k->gather;

    if (g == NULL) {
        return shim_overlap(k->buf[0], k->len[0], k->buf[1], k->len[1]);
    }
    for (size_t i = 0; i < g->nseg; i++) { /* the data, where it is */
        if (shim_overlap(g->seg[i].addr, g->seg[i].len, k->buf[1],
                         k->len[1])) {
            return 1;
        }
    }
    return 0;
}

int shim_overlap(const void *a, size_t alen, const void *b, size_t blen)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

    return alen > 0 && blen > 0 && x < y + blen && y < x + alen;
}
