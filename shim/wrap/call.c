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

__thread int shim_as;
__thread shim_keep_t *shim_keep_as;
__thread struct shim_sched **shim_pin;
__thread shim_comm_t *shim_stream;
__thread int shim_probing;
__thread shim_check_t *shim_probe_chk;
__thread int shim_why;

/* The statistics line a call counts on: its persistent form's while that
 * is being started. */
static void count(int coll, int stat, uint64_t n)
{
    if (shim_as != 0) {
        coll = shim_as;
    }
    pthread_mutex_lock(&shim.lock);
    shim.stats[coll][stat] += n;
    pthread_mutex_unlock(&shim.lock);
}

int shim_fallback(int coll, int rc)
{
    int why = shim_why >= 0 && shim_why < SHIM_NWHY ? shim_why
                                                    : SHIM_WHY_OTHER;

    count(coll, SHIM_STAT_FALLBACK, 1);
    count(coll, SHIM_STAT_WHY + why, 1);
    shim_why = SHIM_WHY_OTHER;
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

int shim_coll_wanted(int coll, MPI_Comm comm)
{
    int inter = 0;

    shim_why = SHIM_WHY_OTHER;   /* a new decision */
    if (shim_as != 0) {
        coll = shim_as;   /* a persistent collective's own switch */
    }
    if (!shim.active || !shim.cfg.coll[coll - 1]) {
        shim_why = SHIM_WHY_OFF;
        return 0;
    }
    if (comm != MPI_COMM_NULL) {
        PMPI_Comm_test_inter(comm, &inter);
    }
    if (comm == MPI_COMM_NULL || inter) {
        shim_why = SHIM_WHY_COMM;
        return 0;
    }
    return 1;
}

int shim_big_enough(uint64_t bytes)
{
    if (bytes > 0 && bytes >= shim.min_bytes) {
        return 1;
    }
    shim_why = SHIM_WHY_SMALL;
    return 0;
}

int shim_any_size(void)
{
    if (shim.min_bytes != DPS_MIN_BYTES_AUTO) {
        return 1;
    }
    shim_why = SHIM_WHY_SMALL;
    return 0;
}

int shim_size_offloads(MPI_Datatype dt, int count, int refused)
{
    shim_layout_t l;

    if (!shim_layout(dt, count, &l)) {
        return refused && shim_any_size();
    }
    return shim_big_enough(l.bytes);
}

int shim_coll_stock(const shim_coll_args_t *a, MPI_Comm m,
                    MPI_Request *req)
{
#define STOCK(ID, name, Name, family, shape, entry)                       \
    case DPS_COLL_##ID:                                                    \
        return PMPI_I##name(SHIM_C_##shape(a) m, req);

    switch (dps_coll_base(a->coll)) {
    DPS_COLLS(STOCK)
    default:
        return MPI_ERR_INTERN;
    }
#undef STOCK
}

/* May this call's send data stay unpacked, read in place by the DMA
 * engines? Only when every rank of c is on this node, has its engine
 * running and an agent that reaches every rank of the node with CMA
 * (shim.rank_direct, the same table on every rank: all decide alike),
 * and the data path is direct (the staged path, to other hosts, needs
 * packed data), and not for reductions (their elements are combined as
 * packed). */
static int gather_ok(shim_comm_t *c, int coll)
{
    int reduction = dps_coll_family(coll) == DPS_FAM_REDUCE;

    if (reduction || shim.fo_state != SHIM_FO_NONE || !shim_engine_running() ||
        shim.cfg.data_path != DPS_DATA_DIRECT ||
        shim.cfg.transport == DPS_TRANSPORT_UCX || shim.rank_node == NULL ||
        shim.rank_direct == NULL) {
        return 0;
    }
    if (c->one_node == 0) {
        int me = shim.rank_node[shim.world_rank];

        c->one_node = 1;
        for (int i = 0; i < c->size; i++) {
            if (shim.rank_node[c->members[i]] != me ||
                !shim.rank_direct[c->members[i]]) {
                c->one_node = -1;
            }
        }
    }
    return c->one_node == 1;
}

static int begin(int coll, MPI_Comm comm, shim_comm_t **cp, shim_call_t *k,
                 MPI_Comm *use, int direct_ok)
{
    shim_comm_t *c;
    int rc;

    if (shim_probing) {
        return SHIM_PROBED;
    }
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
    if (shim.fo_state != SHIM_FO_NONE || shim.fo_why[0] != '\0') {
        shim_fo_progress();
    }
    c = shim_stream != NULL ? shim_stream : shim_comm_get(comm);
    shim_in_call--;
    if (c == NULL) {
        return SHIM_FAIL;
    }
    *cp = c;
    k->coll = coll;
    k->stat = shim_as != 0 ? shim_as : coll;
    k->keep = shim_keep_as;
    k->seq = c->seq++;
    k->gather_ok = gather_ok(c, coll);
    /* A persistent collective's start never goes to a stock collective
     * call (matched in call order, not init order): it is queued, and
     * redone from its schedule under its stream's tag (failover/take.c). */
    if (shim.fo_state != SHIM_FO_NONE && direct_ok && c->stream == 0) {
        shim_in_call++;
        rc = shim_fo_direct(c, k->seq, k->stat, use);
        shim_in_call--;
        if (rc == 1) {
            return SHIM_STOCK;
        }
    }
    return SHIM_GO;
}

int shim_coll_begin(int coll, MPI_Comm comm, shim_comm_t **cp,
                    shim_call_t *k, MPI_Comm *use)
{
    return begin(coll, comm, cp, k, use, 1);
}

int shim_coll_begin_sched(int coll, MPI_Comm comm, shim_comm_t **cp,
                          shim_call_t *k)
{
    MPI_Comm use = comm;

    return begin(coll, comm, cp, k, &use, 0);
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
    uint64_t bytes;
    int rc, coll;

    k->args.coll = k->coll;
    k->args.size = (uint32_t)c->size;
    k->args.rank = (uint32_t)c->rank;
    k->args.agent = c->agent;
    pthread_mutex_lock(&shim.lock);
    s = shim_pin != NULL ? shim_sched_pinned(c, &k->args, shim_pin)
                         : shim_sched_get(c, &k->args);
    pthread_mutex_unlock(&shim.lock);
    if (s == NULL) {
        shim_call_clear(k);
        return MPI_ERR_NO_MEM;
    }
    if (s->need[DPS_BUF_SEND] > k->len[0] ||
        s->need[DPS_BUF_RECV] > k->len[1]) {
        /* Builder and wrapper disagree: a bug, never a silent overrun. */
        dps_error("%s: the schedule needs %llu and %llu bytes, the buffers "
                  "hold %llu and %llu", dps_coll_short(k->coll),
                  (unsigned long long)s->need[DPS_BUF_SEND],
                  (unsigned long long)s->need[DPS_BUF_RECV],
                  (unsigned long long)k->len[0],
                  (unsigned long long)k->len[1]);
        pthread_mutex_lock(&shim.lock);
        shim_sched_put(s);
        pthread_mutex_unlock(&shim.lock);
        shim_call_clear(k);
        return MPI_ERR_INTERN;
    }
    coll = k->coll;
    bytes = k->bytes;
    if (k->unpack.scat != NULL && !s->reads_recv) {
        /* Received bytes go straight into place (the engine reads them
         * there); the schedule never reads them back from RECV. */
        shim_engine_scatter_add(k->unpack.scat);
    }
    shim_in_call++;
    rc = shim_op_start(c, k, s, req);   /* takes k's contents */
    shim_in_call--;
    if (rc == MPI_SUCCESS && shim.fo_state == SHIM_FO_NONE) {
        count(coll, SHIM_STAT_OFFLOADED, 1);
        count(coll, SHIM_STAT_BYTES, bytes);
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

/* While probing (a persistent init): the decision, nothing done. */
static int probed(const shim_coll_args_t *a, shim_offloads_fn offloads,
                  int *rc)
{
    shim_coll_args_t init = *a;
    shim_check_t chk;

    if (!shim_coll_wanted(dps_coll_base(a->coll), a->comm)) {
        *rc = SHIM_PROBE_STOCK;
        return 1;
    }
    init.coll = shim_as != 0 ? shim_as : a->coll;   /* MPI's *_init checks */
    if (shim_coll_check(&init, &chk) != MPI_SUCCESS) {
        if (shim_probe_chk != NULL) {
            *shim_probe_chk = chk;
        }
        *rc = offloads(a, &chk) ? SHIM_PROBE_GO : SHIM_PROBE_STOCK;
        return 1;
    }
    *rc = offloads(a, NULL) ? SHIM_PROBE_GO : SHIM_PROBE_STOCK;
    return 1;
}

int shim_coll_start(const shim_coll_args_t *a, shim_offloads_fn offloads,
                    int *rc)
{
    shim_check_t chk;
    int coll = dps_coll_base(a->coll);

    if (shim_probing) {
        return probed(a, offloads, rc);
    }
    /* Off, or not an intracommunicator: stock MPI, checks and all, on
     * every rank alike. */
    if (!shim_coll_wanted(coll, a->comm)) {
        *rc = shim_fallback(coll, shim_coll_stock(a, a->comm, a->request));
        return 1;
    }
    if (shim_coll_check(a, &chk) != MPI_SUCCESS) {
        *rc = shim_call_rejected(a, &chk, offloads(a, &chk));
        return 1;
    }
    if (!offloads(a, NULL)) {
        *rc = shim_fallback(coll, shim_coll_stock(a, a->comm, a->request));
        return 1;
    }
    return 0;
}

int shim_coll_run(const shim_coll_args_t *a, shim_offloads_fn offloads,
                  shim_post_fn post)
{
    MPI_Comm use = a->comm;
    shim_comm_t *c;
    shim_call_t k;
    int rc;

    if (shim_in_call || !shim.initialized) {
        return shim_coll_stock(a, a->comm, a->request);
    }
    if (shim_coll_start(a, offloads, &rc)) {
        return rc;
    }
    switch (shim_coll_begin(a->coll, a->comm, &c, &k, &use)) {
    case SHIM_GO:
        return post(c, &k, a);
    case SHIM_PROBED:
        return SHIM_PROBE_GO;
    case SHIM_STOCK:
        return shim_coll_stock(a, use, a->request);
    default:
        return MPI_ERR_NO_MEM;
    }
}

int shim_call_rejected(const shim_coll_args_t *a, const shim_check_t *chk,
                       int offload)
{
    int coll = dps_coll_base(a->coll);
    MPI_Comm use = a->comm;
    shim_comm_t *c;
    shim_call_t k;
    char what[200];

    if (!offload) {
        return shim_fallback(coll, shim_coll_stock(a, a->comm, a->request));
    }
    snprintf(what, sizeof(what), "%s: %s", dps_coll_str((unsigned)coll),
             chk->what);
    switch (shim_coll_begin(coll, a->comm, &c, &k, &use)) {
    case SHIM_GO:
        /* Nothing runs: counted as left to MPI, as MPI's answer it is. */
        return shim_fallback(coll, shim_call_erroneous(c, &k, DPS_ERR_ARG,
                                                       chk->cls,
                                                       chk->raise_on,
                                                       a->request, what));
    case SHIM_STOCK:
        /* After an agent failure every rank runs this instance on stock
         * MPI, which refuses the call itself. */
        return shim_coll_stock(a, use, a->request);
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
        return shim_call_erroneous(c, k, DPS_ERR_ARG, MPI_ERR_TYPE, comm,
                                   req, "a count or datatype MPI would "
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
    for (size_t i = 0; i < g->nseg; i++) {   /* the data, where it is */
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
