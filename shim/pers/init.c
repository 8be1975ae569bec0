/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a persistent collective's init makes (pers/pers.h), and how its
 * request starts. The init keeps the call's arguments (copies of the
 * arrays, duplicates of derived datatypes, which the application may
 * free) and hands out a persistent request (pers/start.h). Each
 * MPI_Start runs the nonblocking collective with them, counted on the
 * persistent form's statistics line and switched by its own variable
 * (the start's context, wrap/coll.h): the schedule it compiled and
 * pinned the first time is posted by id (shim_sched_pinned), the
 * buffers' registrations come from the cache. With offload off or
 * switched off for it, the init is stock MPI's own.
 */
#include "shim/wrap/coll.h"
#include "shim/wrap/shapes.h"
#include "shim/pers/pers.h"
#include "shim/pers/start.h"
#include "common/dps_log.h"

#include <stdlib.h>
#include <string.h>

#ifdef SHIM_PERSISTENT

/* A persistent collective's arguments. */
typedef struct pargs {
    shim_coll_args_t a;        /* the nonblocking call's (a.coll its id) */
    int              fallback; /* starts run on stock MPI, on priv */
    int              why;      /* ... because (SHIM_WHY_*, of the init) */
    MPI_Comm         priv;     /* comm's duplicate (shim_pers_dup) */
    MPI_Request      priv_req; /* that duplication, until waited for */
    int              ns, nr;   /* entries of the send, receive arrays */
    int              kept;     /* the arrays are copies (keep_args) */
    shim_keep_t     *maps;     /* the starts' kept maps (data/types.h) */
    MPI_Datatype    *dups;     /* to free with it */
    int              ndups;
    int              oom;
} pargs_t;

static void pargs_free(void *arg)
{
    pargs_t *p = arg;

    if (p == NULL) {
        return;
    }
    shim_in_call++;
    for (int i = 0; i < p->ndups; i++) {
        PMPI_Type_free(&p->dups[i]);
    }
    if (p->fallback) {
        shim_pers_dup_wait(&p->priv_req);
    }
    if (p->priv != MPI_COMM_NULL) {
        PMPI_Comm_free(&p->priv);
    }
    shim_in_call--;
    free(p->dups);
    shim_keep_unref(p->maps);
    if (p->kept) { /* copies (keep_args); else the application's own */
        free((void *)p->a.scounts);
        free((void *)p->a.sdispls);
        free((void *)p->a.rcounts);
        free((void *)p->a.rdispls);
        free((void *)p->a.sad);
        free((void *)p->a.rad);
        free((void *)p->a.stypes);
        free((void *)p->a.rtypes);
    }
    free(p);
}

/* A derived datatype, duplicated: the application may free its own.
 * Not the types of MPI_Type_create_f90_*: MPI treats them as predefined
 * (never freed; reduced by predefined operations, a duplicate not).
 * Nor a datatype the call does not have (0, args/args.h). */
static MPI_Datatype keep(pargs_t *p, MPI_Datatype t)
{
    int          ni, na, nd, comb;
    MPI_Datatype d, *v;

    if (t == 0 || t == MPI_DATATYPE_NULL ||
        PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS ||
        comb == MPI_COMBINER_NAMED || comb == MPI_COMBINER_F90_INTEGER ||
        comb == MPI_COMBINER_F90_REAL || comb == MPI_COMBINER_F90_COMPLEX) {
        return t;
    }
    v = realloc(p->dups, sizeof(*v) * (size_t)(p->ndups + 1));
    if (v == NULL) {
        p->oom = 1;
        return t;
    }
    p->dups = v;
    if (PMPI_Type_dup(t, &d) != MPI_SUCCESS) {
        return t;
    }
    p->dups[p->ndups++] = d;
    return d;
}

static void *copy(pargs_t *p, const void *v, int n, size_t size)
{
    void *c;

    if (v == NULL || n < 0) {
        return NULL;
    }
    c = malloc(size * (size_t)n + 1);
    if (c == NULL) {
        p->oom = 1;
        return NULL;
    }
    memcpy(c, v, size * (size_t)n);
    return c;
}

/* The application's arrays copied and its derived datatypes duplicated,
 * once MPI's checks have seen them as they are (MPICH compares the
 * arrays' addresses; a duplicate of an uncommitted type may be
 * committed): the application may change or free its own after the
 * init. */
static void keep_args(pargs_t *p)
{
    shim_coll_args_t *a = &p->a;
    MPI_Datatype     *st, *rt;

    p->kept = 1;
    a->scounts = copy(p, a->scounts, p->ns, sizeof(int));
    a->sdispls = copy(p, a->sdispls, p->ns, sizeof(int));
    a->sad = copy(p, a->sad, p->ns, sizeof(MPI_Aint));
    a->stypes = st = copy(p, a->stypes, p->ns, sizeof(MPI_Datatype));
    a->rcounts = copy(p, a->rcounts, p->nr, sizeof(int));
    a->rdispls = copy(p, a->rdispls, p->nr, sizeof(int));
    a->rad = copy(p, a->rad, p->nr, sizeof(MPI_Aint));
    a->rtypes = rt = copy(p, a->rtypes, p->nr, sizeof(MPI_Datatype));
    a->stype = keep(p, a->stype);
    a->rtype = keep(p, a->rtype);
    for (int i = 0; st != NULL && i < p->ns; i++) {
        st[i] = keep(p, st[i]);
    }
    for (int i = 0; rt != NULL && i < p->nr; i++) {
        rt[i] = keep(p, rt[i]);
    }
}

/* The init's question (x->as the persistent form, req its request
 * argument, which MPI's checks judge): would its starts be offloaded?
 * The row's entry's decide phase, nothing done. */
static shim_verdict_t decide(const shim_coll_args_t *a, MPI_Request *req,
                             const shim_ctx_t *x)
{
    shim_coll_args_t b = *a;
    shim_verdict_t   none = {.go = 0, .chk.cls = MPI_SUCCESS};

    b.coll = dps_coll_base(a->coll);
    b.request = req;
#define DECIDE(ID, name, Name, family, shape, entry) \
    case DPS_COLL_##ID: return shim_decide_##entry(&b, x);

    switch (b.coll) {
        DPS_COLLS(DECIDE)
    default: return none; /* no entry answered */
    }
#undef DECIDE
}

/* The shim's nonblocking call with a's arguments, on m, made as x says:
 * a start is decided and offloaded as that call is (its row's entry). */
static int run(const shim_coll_args_t *a, MPI_Comm m, MPI_Request *req,
               const shim_ctx_t *x)
{
    shim_coll_args_t b = *a;

    b.coll = dps_coll_base(a->coll);
    b.comm = m;
    b.request = req;
#define RUN(ID, name, Name, family, shape, entry) \
    case DPS_COLL_##ID: return shim_coll_##entry(&b, x);

    switch (b.coll) {
        DPS_COLLS(RUN)
    default: return MPI_ERR_INTERN;
    }
#undef RUN
}

/* Stock MPI's persistent init with a's arguments. */
static int stock_init(const shim_coll_args_t *a)
{
#define INIT(ID, name, Name, family, shape, entry) \
    case DPS_COLL_##ID:                            \
        return PPERS(Name)(SHIM_C_##shape(a) a->comm, a->info, a->request);

    switch (dps_coll_base(a->coll)) {
        DPS_COLLS(INIT)
    default: return MPI_ERR_INTERN;
    }
#undef INIT
}

static int start(shim_pers_t *pers, MPI_Request *r, shim_ctx_t *x)
{
    pargs_t *p = pers->args;
    int      rc;

    if (!p->fallback) {
        if (p->maps == NULL) {
            p->maps = shim_keep_new(); /* none: maps made each start */
        }
        x->keep = p->maps;
        return run(&p->a, p->a.comm, r, x);
    }
    /* Stock MPI's nonblocking call, on a communicator of this request's
     * own: matched by its starts alone, so in init order. Its duplication
     * began at the init; the first start waits for it to end (every rank
     * has made, or will make, the init without waiting for this one). */
    shim_in_call++;
    if (p->priv_req != MPI_REQUEST_NULL) {
        shim_pers_dup_wait(&p->priv_req);
    }
    rc = run(&p->a, p->priv, r, x);
    shim_in_call--;
    return shim_fallback(x, p->why, pers->coll, rc);
}

/* Is this rank the root of a rooted collective? */
static int is_root(MPI_Comm comm, int root)
{
    int rank = -1;

    PMPI_Comm_rank(comm, &rank);
    return rank == root;
}

/*
 * Offload the persistent form a->coll? Then its arguments: a's, with
 * the number of send-side and receive-side entries in its arrays
 * (comm's size, or its neighbours' numbers). NULL: stock MPI's init.
 */
static pargs_t *wanted(const shim_coll_args_t *a, const shim_ctx_t *x,
                       int *why)
{
    int      in = 0, out = 0, cart, *s = NULL, *d = NULL;
    int      base = dps_coll_base(a->coll);
    pargs_t *p;

    if (shim_in_call || !shim.initialized ||
        !shim_coll_wanted(x, a->coll, a->comm, why)) {
        return NULL;
    }
    if (dps_coll_family(base) == DPS_FAM_NEIGHBOR) {
        if (shim_neighbors(a->comm, &in, &s, &out, &d, &cart) != 0) {
            return NULL;
        }
        free(s);
        free(d);
    } else {
        in = out = shim_comm_size(a->comm);
    }
    p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return NULL;
    }
    p->a = *a;
    p->a.coll = base;
    p->a.info = MPI_INFO_NULL;
    p->a.request = NULL;
    p->ns = out;
    p->nr = in;
    p->priv = MPI_COMM_NULL;
    p->priv_req = MPI_REQUEST_NULL;
    /* A rooted call's arrays mean something at the root only. */
    if (base == DPS_COLL_GATHERV && !is_root(a->comm, a->root)) {
        p->a.rcounts = p->a.rdispls = NULL;
    } else if (base == DPS_COLL_SCATTERV && !is_root(a->comm, a->root)) {
        p->a.scounts = p->a.sdispls = NULL;
    }
    return p;
}

/* A stock duplication made for a refused init: never used, never freed
 * (MPI forbids freeing a pending nonblocking collective's request). */
typedef struct orphan {
    MPI_Comm    comm;
    MPI_Request req;
} orphan_t;

/*
 * MPI refused this rank's init (chk): refuse it as MPI does, after the
 * communication every rank's init makes on the communicator (so that
 * later collectives there still match), the one the ranks whose calls
 * are right make (go: they offload). Offloaded, the stream's agreement
 * tells them of the refusal and their starts end with an error (MPI
 * would leave them waiting for this rank); with stock MPI, they wait as
 * they would under MPI.
 */
static int refuse(pargs_t *p, int pcoll, const shim_verdict_t *v,
                  MPI_Request *request)
{
    const shim_check_t *chk = &v->chk;
    shim_ctx_t          app = shim_ctx_app();
    int                 go = v->go == SHIM_OFFLOAD;
    shim_comm_t        *c, *s;
    orphan_t           *o;

    shim_in_call++;
    if (go) {
        c = shim_comm_get(p->a.comm);
        s = c != NULL ? shim_comm_stream_new(c, 1) : NULL;
        if (s != NULL) {
            shim_comm_unref(s); /* the agreement holds it until done */
        }
    } else if ((o = calloc(1, sizeof(*o))) == NULL ||
               shim_pers_dup(p->a.comm, &o->comm, &o->req) != MPI_SUCCESS) {
        free(o);
    }
    shim_in_call--;
    pargs_free(p);
    if (request != NULL) {
        *request = MPI_REQUEST_NULL;
    }
    shim_fallback(&app, v->why, pcoll, MPI_SUCCESS); /* nothing offloaded */
    dps_error("%s: %s", dps_coll_short(pcoll), chk->what);
    shim_in_call++;
    PMPI_Comm_call_errhandler(chk->raise_on, chk->cls);
    shim_in_call--;
    return chk->cls;
}

/*
 * The request. The nonblocking call decides, with the same answer at
 * every start, whether the starts are offloaded (asked here, doing
 * nothing else). When they are, the request gets its matching stream.
 * When not, its starts run stock MPI's nonblocking call on a duplicate
 * of the communicator begun here, in init order (on the communicator
 * itself, stock MPI would match them in start order; and MPICH 4.0's own
 * persistent collectives are unusable, see tests/mpi/t_persist.c).
 * MPI_ERR_NO_MEM when out of memory (every rank must take the same path:
 * no falling back to stock MPI here).
 */
static int made(pargs_t *p, int pcoll, MPI_Request *request)
{
    shim_ctx_t     x = {.as = pcoll};
    shim_verdict_t v;
    int            rc = MPI_SUCCESS;

    if (p->oom) {
        pargs_free(p);
        return MPI_ERR_NO_MEM;
    }
    v = decide(&p->a, request, &x); /* checked, never written */
    if (v.go != 0 && v.chk.cls != MPI_SUCCESS) {
        return refuse(p, pcoll, &v, request);
    }
    keep_args(p);
    if (p->oom) {
        pargs_free(p);
        return MPI_ERR_NO_MEM;
    }
    if (v.go == SHIM_TO_STOCK) {
        p->fallback = 1;
        p->why = v.why;
        shim_in_call++;
        rc = shim_pers_dup(p->a.comm, &p->priv, &p->priv_req);
        shim_in_call--;
    } else if (v.go != SHIM_OFFLOAD) {
        rc = MPI_ERR_INTERN; /* the entry did not answer */
    }
    if (rc != MPI_SUCCESS) {
        pargs_free(p);
        return rc;
    }
    return shim_pers_new(pcoll, p->a.comm, start, pargs_free, p, !p->fallback,
                         request);
}

int shim_pers_init(const shim_coll_args_t *a)
{
    shim_ctx_t x = shim_ctx_app();
    int        why = SHIM_WHY_OTHER;
    pargs_t   *p = wanted(a, &x, &why);
    int        counted, rc;

    if (p != NULL) {
        return made(p, a->coll, a->request);
    }
    counted = !shim_in_call && shim.initialized;
    rc = stock_init(a);
    return counted ? shim_fallback(&x, why, a->coll, rc) : rc;
}

#endif /* SHIM_PERSISTENT */
