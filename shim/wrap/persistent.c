/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Persistent collectives: MPI-4's MPI_<Coll>_init where the MPI has them
 * (MPICH 4), Open MPI 4.1's MPIX_<Coll>_init from mpi-ext.h. The init
 * call keeps its arguments (copies of the arrays, duplicates of derived
 * datatypes, which the application may free) and hands out a persistent
 * request (wrap/start.h). Each MPI_Start runs the nonblocking collective
 * with them, counted on the persistent form's statistics line and
 * switched by its own variable (shim_as): the schedule it compiled and
 * pinned the first time is posted by id (shim_sched_pinned), the
 * buffers' registrations come from the cache. With offload off or
 * switched off for it, the init is stock MPI's own.
 */
#include "shim/wrap/coll.h"
#include "shim/wrap/start.h"
#include "common/dps_log.h"

#include <stdlib.h>
#include <string.h>

#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define PERS(name) MPIX_##name##_init
#define PPERS(name) PMPIX_##name##_init
#define SHIM_PERSISTENT 1
#elif MPI_VERSION >= 4
#define PERS(name) MPI_##name##_init
#define PPERS(name) PMPI_##name##_init
#define SHIM_PERSISTENT 1
#endif

#ifdef SHIM_PERSISTENT

/* A persistent collective's arguments. */
typedef struct pargs {
    int           coll;     /* the nonblocking call: dps_coll_t */
    const void   *sbuf;
    void         *rbuf;
    int           scount, rcount, root;
    int          *scounts, *sdispls, *rcounts, *rdispls;
    MPI_Aint     *sad, *rad;
    MPI_Datatype  stype, rtype;
    MPI_Datatype *stypes, *rtypes;
    MPI_Op        op;
    MPI_Comm      comm;
    int           fallback; /* starts run on stock MPI, on priv */
    int           why;      /* ... because (SHIM_WHY_*, of the init) */
    MPI_Comm      priv;     /* comm's duplicate (PMPI_Comm_idup) */
    MPI_Request   priv_req; /* that duplication, until waited for */
    int           ns, nr;   /* entries of the send, receive arrays */
    int           kept;     /* the arrays are copies (keep_args) */
    MPI_Datatype *dups;     /* to free with it */
    int           ndups;
    int           oom;
} pargs_t;

/*
 * Duplications under way (PMPI_Comm_idup of a persistent collective's
 * communicator), which must end before MPI frees the communicator:
 * shim_pers_comm_free waits for them.
 */
typedef struct pend {
    struct pend *next;
    MPI_Comm     comm;
    MPI_Request *req;
} pend_t;
static pend_t *pends;
static pthread_mutex_t pend_lock = PTHREAD_MUTEX_INITIALIZER;

static void pend_add(MPI_Comm comm, MPI_Request *req)
{
    pend_t *p = malloc(sizeof(*p));

    if (p == NULL) {
        return;   /* then only a communicator freed early can suffer */
    }
    p->comm = comm;
    p->req = req;
    pthread_mutex_lock(&pend_lock);
    p->next = pends;
    pends = p;
    pthread_mutex_unlock(&pend_lock);
}

/* Wait for *req (if pending) and forget it. */
static void pend_wait(MPI_Request *req)
{
    pend_t **pp, *p;

    if (*req != MPI_REQUEST_NULL && req != shim_busy_req) {
        MPI_Request *was = shim_busy_req;

        shim_busy_req = req;
        PMPI_Wait(req, MPI_STATUS_IGNORE);
        shim_busy_req = was;
    }
    pthread_mutex_lock(&pend_lock);
    for (pp = &pends; (p = *pp) != NULL; pp = &p->next) {
        if (p->req == req) {
            *pp = p->next;
            free(p);
            break;
        }
    }
    pthread_mutex_unlock(&pend_lock);
}

void shim_pers_comm_free(MPI_Comm comm)
{
    pend_t *p;

    for (;;) {
        MPI_Request *req = NULL;

        pthread_mutex_lock(&pend_lock);
        for (p = pends; p != NULL && req == NULL; p = p->next) {
            if (p->comm == comm) {
                req = p->req;
            }
        }
        pthread_mutex_unlock(&pend_lock);
        if (req == NULL) {
            return;
        }
        pend_wait(req);
    }
}

static void pargs_free(void *arg)
{
    pargs_t *a = arg;

    if (a == NULL) {
        return;
    }
    shim_in_call++;
    for (int i = 0; i < a->ndups; i++) {
        PMPI_Type_free(&a->dups[i]);
    }
    if (a->fallback) {
        pend_wait(&a->priv_req);
    }
    if (a->priv != MPI_COMM_NULL) {
        PMPI_Comm_free(&a->priv);
    }
    shim_in_call--;
    free(a->dups);
    if (a->kept) {   /* else the application's own */
        free(a->scounts);
        free(a->sdispls);
        free(a->rcounts);
        free(a->rdispls);
        free(a->sad);
        free(a->rad);
        free(a->stypes);
        free(a->rtypes);
    }
    free(a);
}

/* A derived datatype, duplicated: the application may free its own.
 * Not the types of MPI_Type_create_f90_*: MPI treats them as predefined
 * (never freed; reduced by predefined operations, a duplicate not). */
static MPI_Datatype keep(pargs_t *a, MPI_Datatype t)
{
    int ni, na, nd, comb;
    MPI_Datatype d, *v;

    if (t == MPI_DATATYPE_NULL ||
        PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS ||
        comb == MPI_COMBINER_NAMED || comb == MPI_COMBINER_F90_INTEGER ||
        comb == MPI_COMBINER_F90_REAL || comb == MPI_COMBINER_F90_COMPLEX) {
        return t;
    }
    v = realloc(a->dups, sizeof(*v) * (size_t)(a->ndups + 1));
    if (v == NULL) {
        a->oom = 1;
        return t;
    }
    a->dups = v;
    if (PMPI_Type_dup(t, &d) != MPI_SUCCESS) {
        return t;
    }
    a->dups[a->ndups++] = d;
    return d;
}

static void *copy(pargs_t *a, const void *v, int n, size_t size)
{
    void *c;

    if (v == NULL || n < 0) {
        return NULL;
    }
    c = malloc(size * (size_t)n + 1);
    if (c == NULL) {
        a->oom = 1;
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
static void keep_args(pargs_t *a)
{
    a->kept = 1;
    a->scounts = copy(a, a->scounts, a->ns, sizeof(int));
    a->sdispls = copy(a, a->sdispls, a->ns, sizeof(int));
    a->sad = copy(a, a->sad, a->ns, sizeof(MPI_Aint));
    a->stypes = copy(a, a->stypes, a->ns, sizeof(MPI_Datatype));
    a->rcounts = copy(a, a->rcounts, a->nr, sizeof(int));
    a->rdispls = copy(a, a->rdispls, a->nr, sizeof(int));
    a->rad = copy(a, a->rad, a->nr, sizeof(MPI_Aint));
    a->rtypes = copy(a, a->rtypes, a->nr, sizeof(MPI_Datatype));
    a->stype = keep(a, a->stype);
    a->rtype = keep(a, a->rtype);
    for (int i = 0; a->stypes != NULL && i < a->ns; i++) {
        a->stypes[i] = keep(a, a->stypes[i]);
    }
    for (int i = 0; a->rtypes != NULL && i < a->nr; i++) {
        a->rtypes[i] = keep(a, a->rtypes[i]);
    }
}


/* The nonblocking call with a's arguments, on m. */
static int run(const pargs_t *a, MPI_Comm m, MPI_Request *r)
{
    switch (a->coll) {
    case DPS_COLL_ALLTOALL:
        return MPI_Ialltoall(a->sbuf, a->scount, a->stype, a->rbuf,
                             a->rcount, a->rtype, m, r);
    case DPS_COLL_BCAST:
        return MPI_Ibcast(a->rbuf, a->rcount, a->rtype, a->root, m, r);
    case DPS_COLL_BARRIER:
        return MPI_Ibarrier(m, r);
    case DPS_COLL_GATHER:
        return MPI_Igather(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount,
                           a->rtype, a->root, m, r);
    case DPS_COLL_GATHERV:
        return MPI_Igatherv(a->sbuf, a->scount, a->stype, a->rbuf,
                            a->rcounts, a->rdispls, a->rtype, a->root,
                            m, r);
    case DPS_COLL_SCATTER:
        return MPI_Iscatter(a->sbuf, a->scount, a->stype, a->rbuf,
                            a->rcount, a->rtype, a->root, m, r);
    case DPS_COLL_SCATTERV:
        return MPI_Iscatterv(a->sbuf, a->scounts, a->sdispls, a->stype,
                             a->rbuf, a->rcount, a->rtype, a->root, m,
                             r);
    case DPS_COLL_ALLGATHER:
        return MPI_Iallgather(a->sbuf, a->scount, a->stype, a->rbuf,
                              a->rcount, a->rtype, m, r);
    case DPS_COLL_ALLGATHERV:
        return MPI_Iallgatherv(a->sbuf, a->scount, a->stype, a->rbuf,
                               a->rcounts, a->rdispls, a->rtype, m, r);
    case DPS_COLL_ALLTOALLV:
        return MPI_Ialltoallv(a->sbuf, a->scounts, a->sdispls, a->stype,
                              a->rbuf, a->rcounts, a->rdispls, a->rtype,
                              m, r);
    case DPS_COLL_ALLTOALLW:
        return MPI_Ialltoallw(a->sbuf, a->scounts, a->sdispls, a->stypes,
                              a->rbuf, a->rcounts, a->rdispls, a->rtypes,
                              m, r);
    case DPS_COLL_REDUCE:
        return MPI_Ireduce(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op,
                           a->root, m, r);
    case DPS_COLL_ALLREDUCE:
        return MPI_Iallreduce(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op,
                              m, r);
    case DPS_COLL_REDUCE_SCATTER:
        return MPI_Ireduce_scatter(a->sbuf, a->rbuf, a->rcounts, a->rtype,
                                   a->op, m, r);
    case DPS_COLL_REDUCE_SCATTER_BLOCK:
        return MPI_Ireduce_scatter_block(a->sbuf, a->rbuf, a->rcount,
                                         a->rtype, a->op, m, r);
    case DPS_COLL_SCAN:
        return MPI_Iscan(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op,
                         m, r);
    case DPS_COLL_EXSCAN:
        return MPI_Iexscan(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op,
                           m, r);
    case DPS_COLL_NEIGHBOR_ALLGATHER:
        return MPI_Ineighbor_allgather(a->sbuf, a->scount, a->stype, a->rbuf,
                                       a->rcount, a->rtype, m, r);
    case DPS_COLL_NEIGHBOR_ALLGATHERV:
        return MPI_Ineighbor_allgatherv(a->sbuf, a->scount, a->stype,
                                        a->rbuf, a->rcounts, a->rdispls,
                                        a->rtype, m, r);
    case DPS_COLL_NEIGHBOR_ALLTOALL:
        return MPI_Ineighbor_alltoall(a->sbuf, a->scount, a->stype, a->rbuf,
                                      a->rcount, a->rtype, m, r);
    case DPS_COLL_NEIGHBOR_ALLTOALLV:
        return MPI_Ineighbor_alltoallv(a->sbuf, a->scounts, a->sdispls,
                                       a->stype, a->rbuf, a->rcounts,
                                       a->rdispls, a->rtype, m, r);
    case DPS_COLL_NEIGHBOR_ALLTOALLW:
        return MPI_Ineighbor_alltoallw(a->sbuf, a->scounts, a->sad,
                                       a->stypes, a->rbuf, a->rcounts,
                                       a->rad, a->rtypes, m, r);
    default:
        return MPI_ERR_INTERN;
    }
}

static int start(shim_pers_t *p, MPI_Request *r)
{
    pargs_t *a = p->args;
    int rc = MPI_SUCCESS;

    if (!a->fallback) {
        return run(a, a->comm, r);
    }
    /* Stock MPI's nonblocking call, on a communicator of this request's
     * own: matched by its starts alone, so in init order. Its duplication
     * began at the init; the first start waits for it to end (every rank
     * has made, or will make, the init without waiting for this one). */
    shim_in_call++;
    if (a->priv_req != MPI_REQUEST_NULL) {
        pend_wait(&a->priv_req);
    }
    if (rc == MPI_SUCCESS) {
        rc = run(a, a->priv, r);
    }
    shim_in_call--;
    shim_why = a->why;
    return shim_fallback(p->coll, rc);
}

/*
 * Offload the persistent form pcoll on comm? Then its arguments, to fill
 * (with ns send-side and nr receive-side entries in its arrays: comm's
 * size, or its neighbours' numbers). NULL: stock MPI's init.
 */
static pargs_t *wanted(int pcoll, MPI_Comm comm, int *ns, int *nr)
{
    int in = 0, out = 0, cart, *s = NULL, *d = NULL;
    int base = dps_coll_base(pcoll);
    pargs_t *a;

    if (shim_in_call || !shim.initialized ||
        !shim_coll_wanted(pcoll, comm)) {
        return NULL;
    }
    if (base >= DPS_COLL_NEIGHBOR_ALLGATHER &&
        base <= DPS_COLL_NEIGHBOR_ALLTOALLW) {
        if (shim_neighbors(comm, &in, &s, &out, &d, &cart) != 0) {
            return NULL;
        }
        free(s);
        free(d);
        *ns = out;
        *nr = in;
    } else {
        *ns = *nr = shim_comm_size(comm);
    }
    a = calloc(1, sizeof(*a));
    if (a != NULL) {
        a->coll = base;
        a->comm = comm;
        a->ns = *ns;
        a->nr = *nr;
        a->priv = MPI_COMM_NULL;
        a->priv_req = MPI_REQUEST_NULL;
        a->op = MPI_OP_NULL;
        a->stype = a->rtype = MPI_DATATYPE_NULL;
    }
    return a;
}

/*
 * The request. The nonblocking call decides, with the same answer at every
 * start, whether the starts are offloaded (asked here, doing nothing
 * else). When they are, the request gets its matching stream. When not,
 * its starts run stock MPI's nonblocking call on a duplicate of the
 * communicator begun here, in init order (on the communicator itself,
 * stock MPI would match them in start order; and MPICH 4.0's own
 * persistent collectives are unusable, see tests/mpi/t_persist.c).
 * MPI_ERR_NO_MEM when out of memory (every rank must take the same path:
 * no falling back to stock MPI here).
 */
/* A stock duplication made for a refused init: never used, never freed
 * (MPI forbids freeing a pending nonblocking collective's request). */
typedef struct orphan {
    MPI_Comm       comm;
    MPI_Request    req;
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
static int refuse(pargs_t *a, int pcoll, int go, const shim_check_t *chk,
                  MPI_Request *request)
{
    shim_comm_t *c, *s;
    orphan_t *o;

    shim_in_call++;
    if (go) {
        c = shim_comm_get(a->comm);
        s = c != NULL ? shim_comm_stream_new(c, 1) : NULL;
        if (s != NULL) {
            shim_comm_unref(s);   /* the agreement holds it until done */
        }
    } else if ((o = calloc(1, sizeof(*o))) != NULL &&
               PMPI_Comm_idup(a->comm, &o->comm, &o->req) == MPI_SUCCESS) {
        pend_add(a->comm, &o->req);
    } else {
        free(o);
    }
    shim_in_call--;
    pargs_free(a);
    if (request != NULL) {
        *request = MPI_REQUEST_NULL;
    }
    shim_fallback(pcoll, MPI_SUCCESS);   /* nothing offloaded */
    dps_error("%s: %s", shim_coll_name(pcoll), chk->what);
    shim_in_call++;
    PMPI_Comm_call_errhandler(chk->raise_on, chk->cls);
    shim_in_call--;
    return chk->cls;
}

static int made(pargs_t *a, int pcoll, MPI_Request *request)
{
    shim_check_t chk;
    int rc;

    if (a->oom) {
        pargs_free(a);
        return MPI_ERR_NO_MEM;
    }
    chk.cls = MPI_SUCCESS;
    shim_as = pcoll;
    shim_probing = 1;
    shim_probe_chk = &chk;
    rc = run(a, a->comm, request);   /* checked, never written */
    shim_probing = 0;
    shim_probe_chk = NULL;
    shim_as = 0;
    if (chk.cls != MPI_SUCCESS &&
        (rc == SHIM_PROBE_GO || rc == SHIM_PROBE_STOCK)) {
        return refuse(a, pcoll, rc == SHIM_PROBE_GO, &chk, request);
    }
    keep_args(a);
    if (a->oom) {
        pargs_free(a);
        return MPI_ERR_NO_MEM;
    }
    if (rc == SHIM_PROBE_STOCK) {
        a->fallback = 1;
        a->why = shim_why;
        shim_in_call++;
        rc = PMPI_Comm_idup(a->comm, &a->priv, &a->priv_req);
        shim_in_call--;
        if (rc == MPI_SUCCESS) {
            pend_add(a->comm, &a->priv_req);
        }
    } else if (rc == SHIM_PROBE_GO) {
        rc = MPI_SUCCESS;
    }
    if (rc != MPI_SUCCESS) {
        pargs_free(a);
        return rc;
    }
    return shim_pers_new(pcoll, a->comm, start, pargs_free, a, !a->fallback,
                         request);
}

/* Is this rank the root of a rooted collective? */
static int is_root(MPI_Comm comm, int root)
{
    int rank = -1;

    PMPI_Comm_rank(comm, &rank);
    return rank == root;
}

#define STOCK(pcoll, call)                                                 \
    do {                                                                   \
        if (shim_in_call || !shim.initialized) {                           \
            return (call);                                                 \
        }                                                                  \
        return shim_fallback((pcoll), (call));                             \
    } while (0)

SHIM_API int PERS(Barrier)(MPI_Comm comm, MPI_Info info,
                           MPI_Request *request)
{
    const int P = DPS_COLL_BARRIER_INIT;
    int ns, nr;
    pargs_t *a = wanted(P, comm, &ns, &nr);

    if (a == NULL) {
        STOCK(P, PPERS(Barrier)(comm, info, request));
    }
    return made(a, P, request);
}

SHIM_API int PERS(Bcast)(void *buffer, int count, MPI_Datatype datatype,
                         int root, MPI_Comm comm, MPI_Info info,
                         MPI_Request *request)
{
    const int P = DPS_COLL_BCAST_INIT;
    int ns, nr;
    pargs_t *a = wanted(P, comm, &ns, &nr);

    if (a == NULL) {
        STOCK(P, PPERS(Bcast)(buffer, count, datatype, root, comm, info,
                              request));
    }
    a->rbuf = buffer;
    a->rcount = count;
    a->rtype = datatype;
    a->root = root;
    return made(a, P, request);
}

/* Gather, scatter, allgather, alltoall: one count and type a side. */
static int regular(int P, const void *sendbuf, int sendcount,
                   MPI_Datatype sendtype, void *recvbuf, int recvcount,
                   MPI_Datatype recvtype, int root, MPI_Comm comm,
                   pargs_t *a, MPI_Request *request)
{
    a->sbuf = sendbuf;
    a->scount = sendcount;
    a->stype = sendtype;
    a->rbuf = recvbuf;
    a->rcount = recvcount;
    a->rtype = recvtype;
    a->root = root;
    (void)comm;
    return made(a, P, request);
}

#define REGULAR(Name, P, rooted)                                           \
    SHIM_API int PERS(Name)(const void *sendbuf, int sendcount,            \
                            MPI_Datatype sendtype, void *recvbuf,          \
                            int recvcount, MPI_Datatype recvtype,          \
                            rooted MPI_Comm comm, MPI_Info info,           \
                            MPI_Request *request)

#define ROOT_ARG int root,
#define NO_ROOT

REGULAR(Gather, DPS_COLL_GATHER_INIT, ROOT_ARG)
{
    int ns, nr;
    pargs_t *a = wanted(DPS_COLL_GATHER_INIT, comm, &ns, &nr);

    if (a == NULL) {
        STOCK(DPS_COLL_GATHER_INIT,
              PPERS(Gather)(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                            recvtype, root, comm, info, request));
    }
    return regular(DPS_COLL_GATHER_INIT, sendbuf, sendcount, sendtype,
                   recvbuf, recvcount, recvtype, root, comm, a, request);
}

REGULAR(Scatter, DPS_COLL_SCATTER_INIT, ROOT_ARG)
{
    int ns, nr;
    pargs_t *a = wanted(DPS_COLL_SCATTER_INIT, comm, &ns, &nr);

    if (a == NULL) {
        STOCK(DPS_COLL_SCATTER_INIT,
              PPERS(Scatter)(sendbuf, sendcount, sendtype, recvbuf,
                             recvcount, recvtype, root, comm, info,
                             request));
    }
    return regular(DPS_COLL_SCATTER_INIT, sendbuf, sendcount, sendtype,
                   recvbuf, recvcount, recvtype, root, comm, a, request);
}

REGULAR(Allgather, DPS_COLL_ALLGATHER_INIT, NO_ROOT)
{
    int ns, nr;
    pargs_t *a = wanted(DPS_COLL_ALLGATHER_INIT, comm, &ns, &nr);

    if (a == NULL) {
        STOCK(DPS_COLL_ALLGATHER_INIT,
              PPERS(Allgather)(sendbuf, sendcount, sendtype, recvbuf,
                               recvcount, recvtype, comm, info, request));
    }
    return regular(DPS_COLL_ALLGATHER_INIT, sendbuf, sendcount, sendtype,
                   recvbuf, recvcount, recvtype, 0, comm, a, request);
}

REGULAR(Alltoall, DPS_COLL_ALLTOALL_INIT, NO_ROOT)
{
    int ns, nr;
    pargs_t *a = wanted(DPS_COLL_ALLTOALL_INIT, comm, &ns, &nr);

    if (a == NULL) {
        STOCK(DPS_COLL_ALLTOALL_INIT,
              PPERS(Alltoall)(sendbuf, sendcount, sendtype, recvbuf,
                              recvcount, recvtype, comm, info, request));
    }
    return regular(DPS_COLL_ALLTOALL_INIT, sendbuf, sendcount, sendtype,
                   recvbuf, recvcount, recvtype, 0, comm, a, request);
}

REGULAR(Neighbor_allgather, DPS_COLL_NEIGHBOR_ALLGATHER_INIT, NO_ROOT)
{
    const int P = DPS_COLL_NEIGHBOR_ALLGATHER_INIT;
    int ns, nr;
    pargs_t *a = wanted(P, comm, &ns, &nr);

    if (a == NULL) {
        STOCK(P, PPERS(Neighbor_allgather)(sendbuf, sendcount, sendtype,
                                           recvbuf, recvcount, recvtype,
                                           comm, info, request));
    }
    return regular(P, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                   recvtype, 0, comm, a, request);
}

REGULAR(Neighbor_alltoall, DPS_COLL_NEIGHBOR_ALLTOALL_INIT, NO_ROOT)
{
    const int P = DPS_COLL_NEIGHBOR_ALLTOALL_INIT;
    int ns, nr;
    pargs_t *a = wanted(P, comm, &ns, &nr);

    if (a == NULL) {
        STOCK(P, PPERS(Neighbor_alltoall)(sendbuf, sendcount, sendtype,
                                          recvbuf, recvcount, recvtype,
                                          comm, info, request));
    }
    return regular(P, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                   recvtype, 0, comm, a, request);
}

SHIM_API int PERS(Gatherv)(const void *sendbuf, int sendcount,
                           MPI_Datatype sendtype, void *recvbuf,
                           const int recvcounts[], const int displs[],
                           MPI_Datatype recvtype, int root, MPI_Comm comm,
                           MPI_Info info, MPI_Request *request)
{
    const int P = DPS_COLL_GATHERV_INIT;
    int ns, nr;
    pargs_t *a = wanted(P, comm, &ns, &nr);

    if (a == NULL) {
        STOCK(P, PPERS(Gatherv)(sendbuf, sendcount, sendtype, recvbuf,
                                recvcounts, displs, recvtype, root, comm,
                                info, request));
    }
    if (is_root(comm, root)) {   /* significant there only */
        a->rcounts = (int *)recvcounts;
        a->rdispls = (int *)displs;
    }
    return regular(P, sendbuf, sendcount, sendtype, recvbuf, 0, recvtype,
                   root, comm, a, request);
}

SHIM_API int PERS(Scatterv)(const void *sendbuf, const int sendcounts[],
                            const int displs[], MPI_Datatype sendtype,
                            void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, int root, MPI_Comm comm,
                            MPI_Info info, MPI_Request *request)
{
    const int P = DPS_COLL_SCATTERV_INIT;
    int ns, nr;
    pargs_t *a = wanted(P, comm, &ns, &nr);

    if (a == NULL) {
        STOCK(P, PPERS(Scatterv)(sendbuf, sendcounts, displs, sendtype,
                                 recvbuf, recvcount, recvtype, root, comm,
                                 info, request));
    }
    if (is_root(comm, root)) {
        a->scounts = (int *)sendcounts;
        a->sdispls = (int *)displs;
    }
    return regular(P, sendbuf, 0, sendtype, recvbuf, recvcount, recvtype,
                   root, comm, a, request);
}

/* Allgatherv, both kinds: v arrays on the receive side. */
#define GATHERV_ALL(Name, P)                                               \
    SHIM_API int PERS(Name)(const void *sendbuf, int sendcount,            \
                            MPI_Datatype sendtype, void *recvbuf,          \
                            const int recvcounts[], const int displs[],    \
                            MPI_Datatype recvtype, MPI_Comm comm,          \
                            MPI_Info info, MPI_Request *request)           \
    {                                                                      \
        int ns, nr;                                                        \
        pargs_t *a = wanted(P, comm, &ns, &nr);                            \
                                                                           \
        if (a == NULL) {                                                   \
            STOCK(P, PPERS(Name)(sendbuf, sendcount, sendtype, recvbuf,    \
                                 recvcounts, displs, recvtype, comm, info, \
                                 request));                                \
        }                                                                  \
        a->rcounts = (int *)recvcounts;                 \
        a->rdispls = (int *)displs;                     \
        return regular(P, sendbuf, sendcount, sendtype, recvbuf, 0,        \
                       recvtype, 0, comm, a, request);                     \
    }

GATHERV_ALL(Allgatherv, DPS_COLL_ALLGATHERV_INIT)
GATHERV_ALL(Neighbor_allgatherv, DPS_COLL_NEIGHBOR_ALLGATHERV_INIT)

#define ALLTOALLV(Name, P)                                                 \
    SHIM_API int PERS(Name)(const void *sendbuf, const int sendcounts[],   \
                            const int sdispls[], MPI_Datatype sendtype,    \
                            void *recvbuf, const int recvcounts[],         \
                            const int rdispls[], MPI_Datatype recvtype,    \
                            MPI_Comm comm, MPI_Info info,                  \
                            MPI_Request *request)                          \
    {                                                                      \
        int ns, nr;                                                        \
        pargs_t *a = wanted(P, comm, &ns, &nr);                            \
                                                                           \
        if (a == NULL) {                                                   \
            STOCK(P, PPERS(Name)(sendbuf, sendcounts, sdispls, sendtype,   \
                                 recvbuf, recvcounts, rdispls, recvtype,   \
                                 comm, info, request));                    \
        }                                                                  \
        a->scounts = (int *)sendcounts;                 \
        a->sdispls = (int *)sdispls;                    \
        a->rcounts = (int *)recvcounts;                 \
        a->rdispls = (int *)rdispls;                    \
        return regular(P, sendbuf, 0, sendtype, recvbuf, 0, recvtype, 0,   \
                       comm, a, request);                                  \
    }

ALLTOALLV(Alltoallv, DPS_COLL_ALLTOALLV_INIT)
ALLTOALLV(Neighbor_alltoallv, DPS_COLL_NEIGHBOR_ALLTOALLV_INIT)

SHIM_API int PERS(Alltoallw)(const void *sendbuf, const int sendcounts[],
                             const int sdispls[],
                             const MPI_Datatype sendtypes[], void *recvbuf,
                             const int recvcounts[], const int rdispls[],
                             const MPI_Datatype recvtypes[], MPI_Comm comm,
                             MPI_Info info, MPI_Request *request)
{
    const int P = DPS_COLL_ALLTOALLW_INIT;
    int ns, nr;
    pargs_t *a = wanted(P, comm, &ns, &nr);

    if (a == NULL) {
        STOCK(P, PPERS(Alltoallw)(sendbuf, sendcounts, sdispls, sendtypes,
                                  recvbuf, recvcounts, rdispls, recvtypes,
                                  comm, info, request));
    }
    a->sbuf = sendbuf;
    a->rbuf = recvbuf;
    a->scounts = (int *)sendcounts;
    a->sdispls = (int *)sdispls;
    a->stypes = (MPI_Datatype *)sendtypes;
    a->rcounts = (int *)recvcounts;
    a->rdispls = (int *)rdispls;
    a->rtypes = (MPI_Datatype *)recvtypes;
    return made(a, P, request);
}

SHIM_API int PERS(Neighbor_alltoallw)(const void *sendbuf,
                                      const int sendcounts[],
                                      const MPI_Aint sdispls[],
                                      const MPI_Datatype sendtypes[],
                                      void *recvbuf, const int recvcounts[],
                                      const MPI_Aint rdispls[],
                                      const MPI_Datatype recvtypes[],
                                      MPI_Comm comm, MPI_Info info,
                                      MPI_Request *request)
{
    const int P = DPS_COLL_NEIGHBOR_ALLTOALLW_INIT;
    int ns, nr;
    pargs_t *a = wanted(P, comm, &ns, &nr);

    if (a == NULL) {
        STOCK(P, PPERS(Neighbor_alltoallw)(sendbuf, sendcounts, sdispls,
                                           sendtypes, recvbuf, recvcounts,
                                           rdispls, recvtypes, comm, info,
                                           request));
    }
    a->sbuf = sendbuf;
    a->rbuf = recvbuf;
    a->scounts = (int *)sendcounts;
    a->sad = (MPI_Aint *)sdispls;
    a->stypes = (MPI_Datatype *)sendtypes;
    a->rcounts = (int *)recvcounts;
    a->rad = (MPI_Aint *)rdispls;
    a->rtypes = (MPI_Datatype *)recvtypes;
    return made(a, P, request);
}

/* Reductions: the element type and op; count or counts. */
static int reduction(int P, const void *sendbuf, void *recvbuf, int count,
                     MPI_Datatype datatype, MPI_Op op, int root, pargs_t *a,
                     MPI_Request *request)
{
    a->sbuf = sendbuf;
    a->rbuf = recvbuf;
    a->rcount = count;
    a->rtype = datatype;
    a->op = op;
    a->root = root;
    return made(a, P, request);
}

#define REDUCTION(Name, P)                                                 \
    SHIM_API int PERS(Name)(const void *sendbuf, void *recvbuf, int count, \
                            MPI_Datatype datatype, MPI_Op op,              \
                            MPI_Comm comm, MPI_Info info,                  \
                            MPI_Request *request)                          \
    {                                                                      \
        int ns, nr;                                                        \
        pargs_t *a = wanted(P, comm, &ns, &nr);                            \
                                                                           \
        if (a == NULL) {                                                   \
            STOCK(P, PPERS(Name)(sendbuf, recvbuf, count, datatype, op,    \
                                 comm, info, request));                    \
        }                                                                  \
        return reduction(P, sendbuf, recvbuf, count, datatype, op, 0, a,   \
                         request);                                         \
    }

REDUCTION(Allreduce, DPS_COLL_ALLREDUCE_INIT)
REDUCTION(Reduce_scatter_block, DPS_COLL_REDUCE_SCATTER_BLOCK_INIT)
REDUCTION(Scan, DPS_COLL_SCAN_INIT)
REDUCTION(Exscan, DPS_COLL_EXSCAN_INIT)

SHIM_API int PERS(Reduce)(const void *sendbuf, void *recvbuf, int count,
                          MPI_Datatype datatype, MPI_Op op, int root,
                          MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    const int P = DPS_COLL_REDUCE_INIT;
    int ns, nr;
    pargs_t *a = wanted(P, comm, &ns, &nr);

    if (a == NULL) {
        STOCK(P, PPERS(Reduce)(sendbuf, recvbuf, count, datatype, op, root,
                               comm, info, request));
    }
    return reduction(P, sendbuf, recvbuf, count, datatype, op, root, a,
                     request);
}

SHIM_API int PERS(Reduce_scatter)(const void *sendbuf, void *recvbuf,
                                  const int recvcounts[],
                                  MPI_Datatype datatype, MPI_Op op,
                                  MPI_Comm comm, MPI_Info info,
                                  MPI_Request *request)
{
    const int P = DPS_COLL_REDUCE_SCATTER_INIT;
    int ns, nr;
    pargs_t *a = wanted(P, comm, &ns, &nr);

    if (a == NULL) {
        STOCK(P, PPERS(Reduce_scatter)(sendbuf, recvbuf, recvcounts,
                                       datatype, op, comm, info, request));
    }
    a->rcounts = (int *)recvcounts;
    return reduction(P, sendbuf, recvbuf, 0, datatype, op, 0, a, request);
}

#else

void shim_pers_comm_free(MPI_Comm comm)
{
    (void)comm;   /* no persistent collectives: nothing begun */
}

#endif /* SHIM_PERSISTENT */
