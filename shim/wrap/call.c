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

/* The decision says no, for this reason (why may be NULL: not
 * recorded). */
static int say_no(int *why, int reason)
{
    if (why != NULL) {
        *why = reason;
    }
    return 0;
}

int shim_fallback(const shim_ctx_t *x, int why, int coll, int rc)
{
    if (why < 0 || why >= SHIM_NWHY) {
        why = SHIM_WHY_OTHER;
    }
    if (x->as != 0) {
        coll = x->as; /* the statistics line of the persistent form */
    }
    shim_stat_add(coll, SHIM_STAT_FALLBACK, 1);
    shim_stat_add(coll, SHIM_STAT_WHY + why, 1);
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

int shim_coll_wanted(const shim_ctx_t *x, int coll, MPI_Comm comm, int *why)
{
    int inter = 0;

    *why = SHIM_WHY_OTHER; /* a new decision */
    if (x->as != 0) {
        coll = x->as; /* a persistent collective's own switch */
    }
    if (!shim.active || !shim.cfg.coll[coll - 1]) {
        return say_no(why, SHIM_WHY_OFF);
    }
    if (comm != MPI_COMM_NULL) {
        PMPI_Comm_test_inter(comm, &inter);
    }
    if (comm == MPI_COMM_NULL || inter) {
        return say_no(why, SHIM_WHY_COMM);
    }
    return 1;
}

int shim_big_enough(int *why, uint64_t bytes)
{
    return (bytes > 0 && bytes >= shim.min_bytes) ||
           say_no(why, SHIM_WHY_SMALL);
}

int shim_any_size(int *why)
{
    return shim.min_bytes != DPS_MIN_BYTES_AUTO || say_no(why, SHIM_WHY_SMALL);
}

int shim_size_offloads(int *why, MPI_Datatype dt, int count, int refused)
{
    shim_layout_t l;

    if (!shim_layout(dt, count, &l)) {
        return refused && shim_any_size(why);
    }
    return shim_big_enough(why, l.bytes);
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

static int begin(const shim_ctx_t *x, int coll, MPI_Comm comm,
                 shim_comm_t **cp, shim_call_t *k, MPI_Comm *use,
                 int direct_ok)
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

int shim_coll_begin(const shim_ctx_t *x, int coll, MPI_Comm comm,
                    shim_comm_t **cp, shim_call_t *k, MPI_Comm *use)
{
    return begin(x, coll, comm, cp, k, use, 1);
}

int shim_coll_begin_sched(const shim_ctx_t *x, int coll, MPI_Comm comm,
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
    dps_status_t  st;
    int           stat;

    k->args.coll = k->coll;
    k->args.size = (uint32_t)c->size;
    k->args.rank = (uint32_t)c->rank;
    k->args.agent = c->agent;
    s = shim_sched_take(c, &k->args, k->pin);
    if (s == NULL) {
        shim_call_clear(k);
        return shim_mpi_error(DPS_ERR_NOMEM);
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
        shim_sched_release(s);
        shim_call_clear(k);
        return shim_mpi_error(DPS_ERR_PROTO);
    }
    stat = k->stat; /* the persistent form's line while it starts */
    bytes = k->bytes;
    if (k->unpack.scat != NULL && !s->reads_recv) {
        /* Received bytes go straight into place (the engine reads them
         * there); the schedule never reads them back from RECV. */
        shim_engine_scatter_add(k->unpack.scat);
    }
    shim_in_call++;
    st = shim_op_start(c, k, s, req); /* takes k's contents */
    shim_in_call--;
    if (st == DPS_OK && shim.fo.state == SHIM_FO_NONE) {
        shim_stat_add(stat, SHIM_STAT_OFFLOADED, 1);
        shim_stat_add(stat, SHIM_STAT_BYTES, bytes);
    }
    return shim_mpi_error(st);
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
    if (shim_op_start(c, k, NULL, &r) == DPS_OK) {
        PMPI_Request_free(&r);
    }
    shim_in_call--;
    *req = MPI_REQUEST_NULL;
    PMPI_Comm_call_errhandler(comm, mpi_class);
    return mpi_class;
}

shim_verdict_t shim_coll_decide(const shim_coll_args_t *a,
                                shim_offloads_fn offloads, const shim_ctx_t *x,
                                int init)
{
    const shim_coll_args_t *checked = a;
    shim_coll_args_t        init_form;
    shim_verdict_t          v;

    /* Every MPI_I* call comes here: no zeroing of the whole verdict (chk's
     * other fields are read only once chk.cls says MPI refuses, and then
     * shim_coll_check has filled them), no copy of the arguments but an
     * init's. */
    v.go = SHIM_TO_STOCK;
    v.chk.cls = MPI_SUCCESS;
    /* Off, or not an intracommunicator: stock MPI, checks and all, on
     * every rank alike. */
    if (!shim_coll_wanted(x, dps_coll_base(a->coll), a->comm, &v.why)) {
        return v;
    }
    if (init && x->as != 0) {
        init_form = *a;
        init_form.coll = x->as; /* MPI's *_init checks */
        checked = &init_form;
    }
    if (shim_coll_check(checked, &v.chk) != MPI_SUCCESS) {
        /* Decided without the inputs this call has wrong. */
        v.go = offloads(a, &v.chk, &v.why) ? SHIM_OFFLOAD : SHIM_TO_STOCK;
    } else if (offloads(a, NULL, &v.why)) {
        v.go = SHIM_OFFLOAD;
    }
    return v;
}

int shim_coll_not_offloaded(const shim_coll_args_t *a, const shim_verdict_t *v,
                            const shim_ctx_t *x)
{
    if (v->chk.cls != MPI_SUCCESS) {
        return shim_call_rejected(a, &v->chk, v->go == SHIM_OFFLOAD, x,
                                  v->why);
    }
    return shim_fallback(x, v->why, dps_coll_base(a->coll),
                         shim_coll_stock(a, a->comm, a->request));
}

int shim_coll_run(const shim_coll_args_t *a, const shim_ctx_t *x,
                  shim_offloads_fn offloads, shim_post_fn post)
{
    MPI_Comm       use = a->comm;
    shim_comm_t   *c;
    shim_call_t    k;
    shim_verdict_t v;

    if (shim_in_call || !shim.initialized) {
        return shim_coll_stock(a, a->comm, a->request);
    }
    v = shim_coll_decide(a, offloads, x, 0);
    if (v.go != SHIM_OFFLOAD || v.chk.cls != MPI_SUCCESS) {
        return shim_coll_not_offloaded(a, &v, x);
    }
    switch (shim_coll_begin(x, a->coll, a->comm, &c, &k, &use)) {
    case SHIM_GO: return post(c, &k, a);
    case SHIM_STOCK: return shim_coll_stock_as(a, use, a->request);
    default: return MPI_ERR_NO_MEM;
    }
}

int shim_call_rejected(const shim_coll_args_t *a, const shim_check_t *chk,
                       int offload, const shim_ctx_t *x, int why)
{
    int          coll = dps_coll_base(a->coll);
    MPI_Comm     use = a->comm;
    shim_comm_t *c;
    shim_call_t  k;
    char         what[200];

    if (!offload) {
        return shim_fallback(x, why, coll,
                             shim_coll_stock(a, a->comm, a->request));
    }
    snprintf(what, sizeof(what), "%s: %s", dps_coll_str((unsigned)coll),
             chk->what);
    switch (shim_coll_begin(x, coll, a->comm, &c, &k, &use)) {
    case SHIM_GO:
        /* Nothing runs: counted as left to MPI, as MPI's answer it is. */
        return shim_fallback(x, why, coll,
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

int shim_place_failed(shim_comm_t *c, shim_call_t *k, dps_status_t st,
                      MPI_Comm comm, MPI_Request *req)
{
    if (st == DPS_ERR_INVALID) {
        return shim_call_erroneous(c, k, DPS_ERR_ARG, MPI_ERR_TYPE, comm, req,
                                   "a count or datatype MPI would "
                                   "refuse");
    }
    shim_call_clear(k);
    /* Nothing posted: the other ranks' instance cannot end well. */
    return shim_call_erroneous(c, k, DPS_ERR_NOMEM, shim_mpi_error(st), comm,
                               req, "cannot stage the data of a collective");
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
