/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Call-time argument errors of the nonblocking and neighbourhood
 * collectives: a call MPI refuses must be refused under the shim too,
 * with the error class stock MPI returns, through the same error handler,
 * and must leave no other rank's request pending.
 *
 * Cases: every collective with each error its MPI checks at call time
 * (sendbuf aliasing recvbuf, negative counts, MPI_DATATYPE_NULL, an
 * uncommitted datatype, a root out of range, MPI_OP_NULL, MPI_NO_OP,
 * operations outside their datatype's domain, MPI_IN_PLACE where it is
 * not allowed, a null buffer with a nonzero count, null count or
 * displacement arrays, send and receive sizes that differ, a null
 * request), made erroneous on one rank (the root, or for errors only a
 * non-root can make the last rank) and on every rank the error applies
 * to. Which errors an MPI checks at call time is what its sources say
 * (MPICH 4.0's generated bindings, Open MPI 4.1's MPI_PARAM_CHECK
 * blocks; see checked()); a case the MPI does not check is not run
 * (the erroneous call would start, and may crash or hang, under stock
 * MPI as under the shim).
 *
 * The reference is stock MPI itself, in the same run: each erroneous
 * rank first makes the same call through PMPI_* (not through the shim)
 * on a duplicate of the communicator, alone. A refused call starts
 * nothing, so this cannot hang; the class it returns, and whether MPI
 * called the communicator's or MPI_COMM_WORLD's error handler (a
 * handler that records, on both), is what the shim must give. A checked
 * case that stock MPI accepts fails the test (its request is left). All
 * references are taken before the first call through the shim (see
 * main: MPICH 4.0's answers change once a request has failed).
 *
 * Under the shim every rank then makes the call on the communicator:
 * the erroneous ranks must get the reference's class on the same
 * handler, and no request; the others' calls are offloaded
 * (DPUSHIM_MIN_BYTES=1) and their requests must end within T_END_S (the
 * shim posts the refused call's instance as erroneous, the agent fails
 * it on every rank), with an error where their part needs an erroneous
 * rank (needs_bad: a non-root's part of a gather whose erroneous rank is
 * another non-root may be done first). Without the shim only the
 * reference runs: the right ranks' stock calls would wait for ever for
 * the erroneous one. Statistics: the right ranks' calls offloaded, the
 * refused ones counted as fallbacks. Nothing may be left running at
 * MPI_Finalize (scripts/check.sh looks for the shim's warning).
 *
 * The same again with the persistent forms (MPI_<Coll>_init on MPICH,
 * MPIX_<Coll>_init on Open MPI): the reference is stock MPI's init
 * through PMPI; under the shim the erroneous ranks' init must be refused
 * alike, and the right ranks' requests, started, must end within
 * T_END_S (a refused init's stream tells them) and are then freed.
 */
#include "tcommon.h"

static int pers; /* the persistent forms */

#define N       8    /* elements per block */
#define T_END_S 20.0 /* s for a right rank's request to end */

enum {
    C_BARRIER,
    C_BCAST,
    C_GATHER,
    C_GATHERV,
    C_SCATTER,
    C_SCATTERV,
    C_ALLGATHER,
    C_ALLGATHERV,
    C_ALLTOALL,
    C_ALLTOALLV,
    C_ALLTOALLW,
    C_REDUCE,
    C_ALLREDUCE,
    C_RS,
    C_RSB,
    C_SCAN,
    C_EXSCAN,
    C_NAG,
    C_NAGV,
    C_NA2A,
    C_NA2AV,
    C_NA2AW,
    C_N
};

static const char *cname[C_N] = {"ibarrier",
                                 "ibcast",
                                 "igather",
                                 "igatherv",
                                 "iscatter",
                                 "iscatterv",
                                 "iallgather",
                                 "iallgatherv",
                                 "ialltoall",
                                 "ialltoallv",
                                 "ialltoallw",
                                 "ireduce",
                                 "iallreduce",
                                 "ireduce_scatter",
                                 "ireduce_scatter_block",
                                 "iscan",
                                 "iexscan",
                                 "ineighbor_allgather",
                                 "ineighbor_allgatherv",
                                 "ineighbor_alltoall",
                                 "ineighbor_alltoallv",
                                 "ineighbor_alltoallw"};

enum {
    K_ALIAS,
    K_COUNT,
    K_TYPE_NULL,
    K_UNCOMMITTED,
    K_ROOT,
    K_OP_NULL,
    K_OP_NOOP,
    K_OP_LOC,
    K_OP_LAND_FLOAT,
    K_OP_SUM_BYTE,
    K_INPLACE_RECV,
    K_INPLACE_SEND,
    K_NULLBUF,
    K_NULL_ARRAY,
    K_TRUNC,
    K_REQNULL,
    K_N
};

static const char *kname[K_N] = {"sendbuf aliases recvbuf",
                                 "negative count",
                                 "MPI_DATATYPE_NULL",
                                 "uncommitted datatype",
                                 "root out of range",
                                 "MPI_OP_NULL",
                                 "MPI_NO_OP",
                                 "MPI_MAXLOC on MPI_INT",
                                 "MPI_LAND on MPI_FLOAT",
                                 "MPI_SUM on MPI_BYTE",
                                 "recvbuf MPI_IN_PLACE",
                                 "sendbuf MPI_IN_PLACE",
                                 "null buffer",
                                 "null count or displacement array",
                                 "send and receive sizes differ",
                                 "null request"};

#define B(c) (1u << (c))
#define ROOTED                                                                \
    (B(C_BCAST) | B(C_GATHER) | B(C_GATHERV) | B(C_SCATTER) | B(C_SCATTERV) | \
     B(C_REDUCE))
#define REDS                                                         \
    (B(C_REDUCE) | B(C_ALLREDUCE) | B(C_RS) | B(C_RSB) | B(C_SCAN) | \
     B(C_EXSCAN))
#define NBRS (B(C_NAG) | B(C_NAGV) | B(C_NA2A) | B(C_NA2AV) | B(C_NA2AW))

#define ALL_BUT_BARRIER ((B(C_N) - 1) & ~B(C_BARRIER))

/*
 * The collectives whose call MPI refuses for kind k: from MPICH 4.0's
 * src/binding/c/coll/<call>.c and Open MPI 4.1's ompi/mpi/c/<call>.c.
 * Where MPI returns an error is all these say; which class, the stock
 * call itself tells.
 */
static unsigned checked(int k)
{
#if defined(OPEN_MPI) && OPEN_MPI
    static const unsigned tab[K_N] = {
        [K_ALIAS] = B(C_REDUCE) | B(C_ALLREDUCE),
        /* iallgatherv and ineighbor_allgatherv loop over recvcounts to
         * ompi_comm_remote_size(), 0 on an intracommunicator */
        [K_COUNT] = ALL_BUT_BARRIER & ~B(C_ALLGATHERV) & ~B(C_NAGV),
        [K_TYPE_NULL] = ALL_BUT_BARRIER,
        /* iscatter checks the root's sendtype only with an in-place
         * receive */
        [K_UNCOMMITTED] = ALL_BUT_BARRIER & ~B(C_SCATTER),
        [K_ROOT] = ROOTED,
        [K_OP_NULL] = REDS,
        [K_OP_NOOP] = REDS,
        [K_OP_LOC] = REDS,
        [K_OP_LAND_FLOAT] = REDS,
        [K_INPLACE_RECV] =
            (B(C_GATHER) | B(C_GATHERV) | B(C_SCATTER) | B(C_SCATTERV) |
             B(C_ALLGATHER) | B(C_ALLGATHERV) | B(C_ALLTOALL) |
             B(C_ALLTOALLV) | B(C_ALLTOALLW) | REDS | NBRS) &
            ~B(C_EXSCAN),
        [K_INPLACE_SEND] = ROOTED | NBRS,
        [K_NULL_ARRAY] = B(C_GATHERV) | B(C_SCATTERV) | B(C_ALLGATHERV) |
                         B(C_ALLTOALLV) | B(C_ALLTOALLW) | B(C_RS) |
                         B(C_NAGV) | B(C_NA2AV) | B(C_NA2AW),
        [K_TRUNC] =
            B(C_ALLTOALL) | B(C_ALLTOALLV) | B(C_ALLTOALLW) | B(C_NA2A),
    };
#else
    static const unsigned tab[K_N] = {
        [K_ALIAS] = (ALL_BUT_BARRIER & ~NBRS & ~B(C_BCAST)),
        /* no count is checked for the reductions but recvcounts */
        [K_COUNT] = ALL_BUT_BARRIER & ~(REDS & ~B(C_RS)),
        [K_TYPE_NULL] = ALL_BUT_BARRIER,
        [K_UNCOMMITTED] = ALL_BUT_BARRIER,
        [K_ROOT] = ROOTED,
        [K_OP_NULL] = REDS,
        [K_OP_NOOP] = REDS,
        [K_OP_LOC] = REDS,
        [K_OP_SUM_BYTE] = REDS,
        [K_INPLACE_RECV] = B(C_GATHER) | B(C_GATHERV) | B(C_ALLGATHER) |
                           B(C_ALLGATHERV) | B(C_ALLTOALL) | B(C_ALLTOALLV) |
                           B(C_ALLTOALLW) | REDS,
        [K_INPLACE_SEND] = B(C_SCATTER) | B(C_SCATTERV),
        [K_NULLBUF] = ALL_BUT_BARRIER,
        [K_REQNULL] = B(C_N) - 1,
    };
#endif
    return tab[k];
}

/* Who can make error k in collective c: 1 the root only, 2 a non-root
 * only, 0 any rank. */
static int role(int c, int k)
{
    unsigned gath = B(C_GATHER) | B(C_GATHERV),
             scat = B(C_SCATTER) | B(C_SCATTERV);

    switch (k) {
    case K_ALIAS: return (gath | scat | B(C_REDUCE)) & B(c) ? 1 : 0;
    case K_UNCOMMITTED: return scat & B(c) ? 1 : 0; /* the root's sendtype */
    case K_INPLACE_RECV:
        return (gath | B(C_REDUCE)) & B(c) ? 1 : scat & B(c) ? 2 : 0;
    case K_INPLACE_SEND:
        return (gath | B(C_REDUCE)) & B(c) ? 2 : scat & B(c) ? 1 : 0;
    case K_NULL_ARRAY: return (B(C_GATHERV) | B(C_SCATTERV)) & B(c) ? 1 : 0;
    default: return 0;
    }
}

/* One call's arguments. */
typedef struct {
    const void  *sbuf;
    void        *rbuf;
    int          scount, rcount, root;
    int         *scounts, *sdispls, *rcounts, *rdispls;
    MPI_Aint    *sad, *rad;
    MPI_Datatype stype, rtype, *stypes, *rtypes;
    MPI_Op       op;
    MPI_Request *req;
} args_t;

static struct {
    int         *sbuf, *rbuf;
    int          deg;                    /* neighbours: everyone else */
    int          cnt[2][64], dsp[2][64]; /* send, receive */
    MPI_Aint     ad[2][64];
    MPI_Datatype ty[2][64];
    MPI_Datatype loose; /* never committed */
    MPI_Request  req;
} g;

/* The right arguments of collective c on a communicator of size p. */
static void right(int c, int p, args_t *a)
{
    int n = c >= C_NAG ? g.deg : p, v, i;

    memset(a, 0, sizeof(*a));
    for (v = 0; v < 2; v++) {
        for (i = 0; i < n; i++) {
            g.cnt[v][i] = N;
            g.dsp[v][i] = i * N;
            g.ad[v][i] = (MPI_Aint)i * N * (MPI_Aint)sizeof(int);
            g.ty[v][i] = MPI_INT;
        }
    }
    a->sbuf = g.sbuf;
    a->rbuf = g.rbuf;
    a->scount = a->rcount = N;
    a->stype = a->rtype = MPI_INT;
    a->op = MPI_SUM;
    a->root = 0;
    a->req = &g.req;
    switch (c) {
    case C_GATHERV:
    case C_ALLGATHERV:
    case C_NAGV:
        a->rcounts = g.cnt[1];
        a->rdispls = g.dsp[1];
        break;
    case C_SCATTERV:
        a->scounts = g.cnt[0];
        a->sdispls = g.dsp[0];
        break;
    case C_ALLTOALLV:
    case C_NA2AV:
        /* The same arrays on both sides, as MPICH's alias test wants. */
        a->scounts = a->rcounts = g.cnt[0];
        a->sdispls = a->rdispls = g.dsp[0];
        break;
    case C_ALLTOALLW:
        a->scounts = a->rcounts = g.cnt[0];
        for (i = 0; i < n; i++) {
            g.dsp[1][i] = i * N * (int)sizeof(int);
        }
        a->sdispls = a->rdispls = g.dsp[1];
        a->stypes = a->rtypes = g.ty[0];
        break;
    case C_NA2AW:
        a->scounts = a->rcounts = g.cnt[0];
        a->sad = a->rad = g.ad[0];
        a->stypes = a->rtypes = g.ty[0];
        break;
    case C_RS: a->rcounts = g.cnt[1]; break;
    default: break;
    }
}

/* Make error k in a (collective c, rank me). */
static void wrong(int c, int k, int me, args_t *a)
{
    switch (k) {
    case K_ALIAS:
        if (c == C_SCATTER || c == C_SCATTERV) {
            a->rbuf = g.sbuf; /* the root's block 0 */
        } else if (c == C_ALLGATHER || c == C_ALLGATHERV) {
            a->sbuf = g.rbuf + me * N; /* its own block */
        } else {
            a->sbuf = g.rbuf;
        }
        break;
    case K_COUNT:
        if (c == C_BCAST || c == C_GATHER || c == C_GATHERV || c == C_NAG ||
            c == C_NA2A || REDS & B(c) & ~B(C_RS)) {
            a->scount = -1;
            a->rcount = c == C_RSB ? -1 : a->rcount;
        } else if (c == C_ALLGATHERV || c == C_RS || c == C_NAGV) {
            memcpy(g.cnt[1], a->rcounts, sizeof(g.cnt[1]));
            a->rcounts = g.cnt[1];
            a->rcounts[c == C_NAGV ? 0 : 1] = -1;
        } else if (c == C_ALLTOALLV || c == C_ALLTOALLW || c == C_NA2AV ||
                   c == C_NA2AW) {
            memcpy(g.cnt[1], a->scounts, sizeof(g.cnt[1]));
            a->scounts = g.cnt[1];
            a->scounts[c >= C_NAG ? 0 : 1] = -1;
        } else {
            a->rcount = -1; /* scatter(v), allgather, alltoall */
        }
        break;
    case K_TYPE_NULL:
    case K_UNCOMMITTED: {
        MPI_Datatype t = k == K_TYPE_NULL ? MPI_DATATYPE_NULL : g.loose;

        if (c == C_ALLTOALLW || c == C_NA2AW) {
            memcpy(g.ty[1], a->stypes, sizeof(g.ty[1]));
            a->stypes = g.ty[1];
            a->stypes[c == C_NA2AW ? 0 : 1] = t;
        } else if (k == K_TYPE_NULL &&
                   (c == C_SCATTER || c == C_SCATTERV || c == C_ALLGATHER ||
                    c == C_ALLGATHERV || c == C_ALLTOALL || c == C_NAGV ||
                    c == C_NA2A)) {
            a->rtype = t;
        } else {
            a->stype = t; /* and the reductions' datatype */
        }
        break;
    }
    case K_ROOT: a->root = 1 << 20; break;
    case K_OP_NULL: a->op = MPI_OP_NULL; break;
    case K_OP_NOOP: a->op = MPI_NO_OP; break;
    case K_OP_LOC: a->op = MPI_MAXLOC; break;
    case K_OP_LAND_FLOAT:
        a->op = MPI_LAND;
        a->stype = MPI_FLOAT;
        break;
    case K_OP_SUM_BYTE: a->stype = MPI_BYTE; break;
    case K_INPLACE_RECV: a->rbuf = MPI_IN_PLACE; break;
    case K_INPLACE_SEND: a->sbuf = MPI_IN_PLACE; break;
    case K_NULLBUF:
        if (c == C_SCATTER || c == C_SCATTERV) {
            a->rbuf = NULL;
        } else {
            a->sbuf = NULL; /* and ibcast's buffer */
        }
        break;
    case K_NULL_ARRAY:
        if (c == C_RS) {
            a->rcounts = NULL;
        } else if (c == C_GATHERV || c == C_ALLGATHERV || c == C_NAGV) {
            a->rdispls = NULL;
        } else if (c == C_NA2AW) {
            a->sad = NULL;
        } else {
            a->sdispls = NULL;
        }
        break;
    case K_TRUNC:
        if (c == C_ALLTOALL || c == C_NA2A) {
            a->scount = N + 1;
        } else {
            memcpy(g.cnt[1], a->scounts, sizeof(g.cnt[1]));
            a->scounts = g.cnt[1];
            a->scounts[me] = N + 1;
        }
        break;
    case K_REQNULL: a->req = NULL; break;
    default: break;
    }
}

/* Collective c with a's arguments on comm, through the shim (MPI_*) or
 * straight to the library (PMPI_*). */
#define CALL(pm, f, ...) ((pm) ? P##f(__VA_ARGS__) : f(__VA_ARGS__))

#ifdef HAVE_PERS
/* The persistent form of collective c: its *_init. */
#define PCALL(pm, f, ...)                                 \
    ((pm) ? PPINIT(f)(__VA_ARGS__, MPI_INFO_NULL, a->req) \
          : PINIT(f)(__VA_ARGS__, MPI_INFO_NULL, a->req))
static int pcall(int pm, int c, const args_t *a, MPI_Comm comm)
{
    switch (c) {
    case C_BARRIER: return PCALL(pm, Barrier, comm);
    case C_BCAST:
        return PCALL(pm, Bcast, (void *)a->sbuf, a->scount, a->stype, a->root,
                     comm);
    case C_GATHER:
        return PCALL(pm, Gather, a->sbuf, a->scount, a->stype, a->rbuf,
                     a->rcount, a->rtype, a->root, comm);
    case C_GATHERV:
        return PCALL(pm, Gatherv, a->sbuf, a->scount, a->stype, a->rbuf,
                     a->rcounts, a->rdispls, a->rtype, a->root, comm);
    case C_SCATTER:
        return PCALL(pm, Scatter, a->sbuf, a->scount, a->stype, a->rbuf,
                     a->rcount, a->rtype, a->root, comm);
    case C_SCATTERV:
        return PCALL(pm, Scatterv, a->sbuf, a->scounts, a->sdispls, a->stype,
                     a->rbuf, a->rcount, a->rtype, a->root, comm);
    case C_ALLGATHER:
        return PCALL(pm, Allgather, a->sbuf, a->scount, a->stype, a->rbuf,
                     a->rcount, a->rtype, comm);
    case C_ALLGATHERV:
        return PCALL(pm, Allgatherv, a->sbuf, a->scount, a->stype, a->rbuf,
                     a->rcounts, a->rdispls, a->rtype, comm);
    case C_ALLTOALL:
        return PCALL(pm, Alltoall, a->sbuf, a->scount, a->stype, a->rbuf,
                     a->rcount, a->rtype, comm);
    case C_ALLTOALLV:
        return PCALL(pm, Alltoallv, a->sbuf, a->scounts, a->sdispls, a->stype,
                     a->rbuf, a->rcounts, a->rdispls, a->rtype, comm);
    case C_ALLTOALLW:
        return PCALL(pm, Alltoallw, a->sbuf, a->scounts, a->sdispls, a->stypes,
                     a->rbuf, a->rcounts, a->rdispls, a->rtypes, comm);
    case C_REDUCE:
        return PCALL(pm, Reduce, a->sbuf, a->rbuf, a->scount, a->stype, a->op,
                     a->root, comm);
    case C_ALLREDUCE:
        return PCALL(pm, Allreduce, a->sbuf, a->rbuf, a->scount, a->stype,
                     a->op, comm);
    case C_RS:
        return PCALL(pm, Reduce_scatter, a->sbuf, a->rbuf, a->rcounts,
                     a->stype, a->op, comm);
    case C_RSB:
        return PCALL(pm, Reduce_scatter_block, a->sbuf, a->rbuf, a->rcount,
                     a->stype, a->op, comm);
    case C_SCAN:
        return PCALL(pm, Scan, a->sbuf, a->rbuf, a->scount, a->stype, a->op,
                     comm);
    case C_EXSCAN:
        return PCALL(pm, Exscan, a->sbuf, a->rbuf, a->scount, a->stype, a->op,
                     comm);
    case C_NAG:
        return PCALL(pm, Neighbor_allgather, a->sbuf, a->scount, a->stype,
                     a->rbuf, a->rcount, a->rtype, comm);
    case C_NAGV:
        return PCALL(pm, Neighbor_allgatherv, a->sbuf, a->scount, a->stype,
                     a->rbuf, a->rcounts, a->rdispls, a->rtype, comm);
    case C_NA2A:
        return PCALL(pm, Neighbor_alltoall, a->sbuf, a->scount, a->stype,
                     a->rbuf, a->rcount, a->rtype, comm);
    case C_NA2AV:
        return PCALL(pm, Neighbor_alltoallv, a->sbuf, a->scounts, a->sdispls,
                     a->stype, a->rbuf, a->rcounts, a->rdispls, a->rtype,
                     comm);
    default:
        return PCALL(pm, Neighbor_alltoallw, a->sbuf, a->scounts, a->sad,
                     a->stypes, a->rbuf, a->rcounts, a->rad, a->rtypes, comm);
    }
}
#endif

static int call(int pm, int c, const args_t *a, MPI_Comm comm)
{
#ifdef HAVE_PERS
    if (pers) {
        return pcall(pm, c, a, comm);
    }
#endif
    switch (c) {
    case C_BARRIER: return CALL(pm, MPI_Ibarrier, comm, a->req);
    case C_BCAST:
        return CALL(pm, MPI_Ibcast, (void *)a->sbuf, a->scount, a->stype,
                    a->root, comm, a->req);
    case C_GATHER:
        return CALL(pm, MPI_Igather, a->sbuf, a->scount, a->stype, a->rbuf,
                    a->rcount, a->rtype, a->root, comm, a->req);
    case C_GATHERV:
        return CALL(pm, MPI_Igatherv, a->sbuf, a->scount, a->stype, a->rbuf,
                    a->rcounts, a->rdispls, a->rtype, a->root, comm, a->req);
    case C_SCATTER:
        return CALL(pm, MPI_Iscatter, a->sbuf, a->scount, a->stype, a->rbuf,
                    a->rcount, a->rtype, a->root, comm, a->req);
    case C_SCATTERV:
        return CALL(pm, MPI_Iscatterv, a->sbuf, a->scounts, a->sdispls,
                    a->stype, a->rbuf, a->rcount, a->rtype, a->root, comm,
                    a->req);
    case C_ALLGATHER:
        return CALL(pm, MPI_Iallgather, a->sbuf, a->scount, a->stype, a->rbuf,
                    a->rcount, a->rtype, comm, a->req);
    case C_ALLGATHERV:
        return CALL(pm, MPI_Iallgatherv, a->sbuf, a->scount, a->stype, a->rbuf,
                    a->rcounts, a->rdispls, a->rtype, comm, a->req);
    case C_ALLTOALL:
        return CALL(pm, MPI_Ialltoall, a->sbuf, a->scount, a->stype, a->rbuf,
                    a->rcount, a->rtype, comm, a->req);
    case C_ALLTOALLV:
        return CALL(pm, MPI_Ialltoallv, a->sbuf, a->scounts, a->sdispls,
                    a->stype, a->rbuf, a->rcounts, a->rdispls, a->rtype, comm,
                    a->req);
    case C_ALLTOALLW:
        return CALL(pm, MPI_Ialltoallw, a->sbuf, a->scounts, a->sdispls,
                    a->stypes, a->rbuf, a->rcounts, a->rdispls, a->rtypes,
                    comm, a->req);
    case C_REDUCE:
        return CALL(pm, MPI_Ireduce, a->sbuf, a->rbuf, a->scount, a->stype,
                    a->op, a->root, comm, a->req);
    case C_ALLREDUCE:
        return CALL(pm, MPI_Iallreduce, a->sbuf, a->rbuf, a->scount, a->stype,
                    a->op, comm, a->req);
    case C_RS:
        return CALL(pm, MPI_Ireduce_scatter, a->sbuf, a->rbuf, a->rcounts,
                    a->stype, a->op, comm, a->req);
    case C_RSB:
        return CALL(pm, MPI_Ireduce_scatter_block, a->sbuf, a->rbuf, a->rcount,
                    a->stype, a->op, comm, a->req);
    case C_SCAN:
        return CALL(pm, MPI_Iscan, a->sbuf, a->rbuf, a->scount, a->stype,
                    a->op, comm, a->req);
    case C_EXSCAN:
        return CALL(pm, MPI_Iexscan, a->sbuf, a->rbuf, a->scount, a->stype,
                    a->op, comm, a->req);
    case C_NAG:
        return CALL(pm, MPI_Ineighbor_allgather, a->sbuf, a->scount, a->stype,
                    a->rbuf, a->rcount, a->rtype, comm, a->req);
    case C_NAGV:
        return CALL(pm, MPI_Ineighbor_allgatherv, a->sbuf, a->scount, a->stype,
                    a->rbuf, a->rcounts, a->rdispls, a->rtype, comm, a->req);
    case C_NA2A:
        return CALL(pm, MPI_Ineighbor_alltoall, a->sbuf, a->scount, a->stype,
                    a->rbuf, a->rcount, a->rtype, comm, a->req);
    case C_NA2AV:
        return CALL(pm, MPI_Ineighbor_alltoallv, a->sbuf, a->scounts,
                    a->sdispls, a->stype, a->rbuf, a->rcounts, a->rdispls,
                    a->rtype, comm, a->req);
    default:
        return CALL(pm, MPI_Ineighbor_alltoallw, a->sbuf, a->scounts, a->sad,
                    a->stypes, a->rbuf, a->rcounts, a->rad, a->rtypes, comm,
                    a->req);
    }
}

/* The error handler that records, on every communicator involved. */
static struct {
    MPI_Comm comm;
    int      cls, n;
} rec;

static void rec_fn(MPI_Comm *comm, int *code, ...)
{
    rec.comm = *comm;
    MPI_Error_class(*code, &rec.cls);
    rec.n++;
}

/* Whose handler ran: "comm" (the call's), "world", "none". */
static const char *handler(MPI_Comm comm)
{
    if (rec.n == 0) {
        return "none";
    }
    return rec.comm == MPI_COMM_WORLD ? "world"
           : rec.comm == comm         ? "comm"
                                      : "another";
}

/* The class's name; two at a time in one message. */
static const char *cls_name(int cls)
{
    static char s[2][MPI_MAX_ERROR_STRING];
    static int  next;
    int         len = 0;

    next ^= 1;
    MPI_Error_string(cls, s[next], &len);
    return s[next];
}

/* One case: collective c, error k, on one rank or on all it applies to;
 * stock MPI's answer on this rank (erroneous ranks). */
typedef struct {
    int         c, k, all, pers;
    int         bad;     /* this rank's call is erroneous */
    int         cls;     /* stock MPI's class */
    const char *handler; /* whose handler stock MPI called */
} case_t;

static case_t cases[C_N * K_N * 4];
static int    ncases, nskip;

static void case_name(const case_t *x, int p)
{
    int who = role(x->c, x->k);

    t_case("%s%s, %s, %s", x->pers ? "persistent " : "", cname[x->c],
           kname[x->k],
           x->all     ? "on every rank it applies to"
           : who == 2 ? (p == 2 ? "on rank 1" : "on the last rank")
                      : "on rank 0");
}

/* Is rank r's call erroneous in case x (p ranks)? */
static int bad_rank(const case_t *x, int r, int p)
{
    int who = role(x->c, x->k);

    return x->all ? (who == 0 || (who == 1) == (r == 0))
                  : r == (who == 2 ? p - 1 : 0);
}

/*
 * Must right rank me's request end with an error, or may its part be
 * done before the erroneous call is seen? Its part needs an erroneous
 * rank: the root needs everyone; the others of a rooted call the root's
 * data, or the root reading theirs (an Ireduce's may go through other
 * ranks first); a scan needs the ranks below; the rest need everyone.
 */
static int needs_bad(const case_t *x, int me, int p)
{
    int r;

    if (ROOTED & B(x->c) && me != 0) {
        return x->c != C_REDUCE && bad_rank(x, 0, p);
    }
    for (r = 0; r < p; r++) {
        if (bad_rank(x, r, p) &&
            (!(B(x->c) & (B(C_SCAN) | B(C_EXSCAN))) || r < me)) {
            return 1;
        }
    }
    return 0;
}

/* Stock MPI's answer: the erroneous ranks' call through PMPI_*, alone,
 * on ref (a refused call starts nothing). */
static void reference(case_t *x, MPI_Comm ref)
{
    int    p, me, rc;
    args_t a;

    MPI_Comm_size(ref, &p);
    MPI_Comm_rank(ref, &me);
    x->bad = bad_rank(x, me, p);
    x->cls = MPI_SUCCESS;
    x->handler = "none";
    if (!x->bad) {
        return;
    }
    case_name(x, p);
    right(x->c, p, &a);
    wrong(x->c, x->k, me, &a);
    rec.n = 0;
    g.req = MPI_REQUEST_NULL;
    pers = x->pers;
    rc = call(1, x->c, &a, ref);
    x->handler = handler(ref);
    MPI_Error_class(rc, &x->cls);
    if (rc == MPI_SUCCESS) {
        t_fail("stock MPI accepts the call at call time (the list says it "
               "refuses it)");
    } else if (rec.n != 1 || rec.cls != x->cls) {
        t_fail("stock MPI returned %s, its handler saw %d calls (class %d)",
               cls_name(x->cls), rec.n, rec.cls);
    }
    if (t.verbose) {
        printf("rank %d: %s / %s: stock MPI: %s, handler: %s\n", me,
               cname[x->c], kname[x->k], cls_name(x->cls), x->handler);
    }
}

/* The same call through the shim, on every rank. */
static void through_shim(const case_t *x, MPI_Comm comm)
{
    int         p, me, rc, cls;
    const char *h;
    args_t      a;

    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    case_name(x, p);
    right(x->c, p, &a);
    if (x->bad) {
        wrong(x->c, x->k, me, &a);
    }
    rec.n = 0;
    g.req = MPI_REQUEST_NULL;
    pers = x->pers;
    rc = call(0, x->c, &a, comm);
    h = handler(comm);
    MPI_Error_class(rc, &cls);
    if (x->pers) {
        char pn[64];

        snprintf(pn, sizeof(pn), "%s_init", cname[x->c] + 1);
        t_count(pn, !x->bad);
    } else if (x->c == C_BCAST || x->c == C_ALLTOALL) {
        int t_coll = x->c == C_BCAST ? T_BCAST : T_A2A;

        if (x->bad) {
            t.stat[t_coll][T_FB]++;
        } else {
            t_expect(t_coll, comm, N, MPI_INT, 1);
        }
    } else {
        t_count(cname[x->c], !x->bad);
    }
    if (x->bad) {
        if (cls != x->cls || strcmp(h, x->handler) != 0) {
            t_fail("the shim returned %s (handler: %s), stock MPI %s "
                   "(handler: %s)",
                   cls_name(cls), h, cls_name(x->cls), x->handler);
        }
        if (g.req != MPI_REQUEST_NULL) {
            t_fail("a refused call left a request");
        }
        return;
    }
    if (rc != MPI_SUCCESS) {
        t_fail("a right call returned %s", cls_name(cls));
        return;
    }
    if (x->pers && (rc = MPI_Start(&g.req)) != MPI_SUCCESS) {
        t_fail("a right rank's MPI_Start returned %s", cls_name(rc));
        MPI_Request_free(&g.req);
        return;
    }
    /* The right ranks' offloaded request must end; with an error where
     * it needs an erroneous rank. */
    {
        double     t0 = t_now();
        int        flag = 0;
        MPI_Status st;

        st.MPI_ERROR = MPI_SUCCESS;
        while (!flag && t_now() - t0 < T_END_S) {
            rc = MPI_Test(&g.req, &flag, &st);
            if (rc != MPI_SUCCESS) {
                flag = 1;
            }
        }
        if (!flag) {
            t_fail("a right rank's request is still pending after %.0f s",
                   T_END_S);
        } else if (rc == MPI_SUCCESS && st.MPI_ERROR == MPI_SUCCESS &&
                   needs_bad(x, me, p)) {
            t_fail("a right rank's request ended without an error");
        }
        if (x->pers && flag) {
            MPI_Request_free(&g.req);
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Errhandler eh;
    MPI_Comm       comm[2], ref[2];
    int            shim, p, me, i, c, k, all;
    int           *srcs;
    case_t        *x;

    t_init(&argc, &argv, "t_argerr");
    shim = t_shim_loaded();
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (p < 2 || p > 63) {
        if (me == 0) {
            printf("result: ok (nothing run: 2 to 63 ranks wanted)\n");
        }
        MPI_Finalize();
        return 0;
    }
    g.sbuf = t_xmalloc(sizeof(int) * 4 * (size_t)p * N);
    g.rbuf = t_xmalloc(sizeof(int) * 4 * (size_t)p * N);
    for (i = 0; i < 4 * p * N; i++) {
        g.sbuf[i] = i;
        g.rbuf[i] = -i;
    }
    MPI_Type_contiguous(1, MPI_INT, &g.loose); /* never committed */
    /* comm[0] for the collectives, comm[1] a distributed graph in which
     * every rank is every other's neighbour; ref[] their duplicates for
     * the reference calls. */
    srcs = t_xmalloc(sizeof(int) * (size_t)p);
    for (i = 0, g.deg = 0; i < p; i++) {
        if (i != me) {
            srcs[g.deg++] = i;
        }
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comm[0]);
    /* (MPI_UNWEIGHTED hidden from the compiler, whose array size
     * checks take it for an empty array) */
    MPI_Dist_graph_create_adjacent(
        MPI_COMM_WORLD, g.deg, srcs, p < 0 ? srcs : MPI_UNWEIGHTED, g.deg,
        srcs, p < 0 ? srcs : MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &comm[1]);
    MPI_Comm_dup(comm[0], &ref[0]);
    MPI_Comm_dup(comm[1], &ref[1]);
    MPI_Comm_create_errhandler(rec_fn, &eh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);
    for (i = 0; i < 2; i++) {
        MPI_Comm_set_errhandler(comm[i], eh);
        MPI_Comm_set_errhandler(ref[i], eh);
    }
    for (c = 0; c < C_N; c++) {
        for (k = 0; k < K_N; k++) {
            if (!(checked(k) & B(c))) {
                nskip++;
                continue;
            }
            for (all = 0; all < 4; all++) {
                /* 1: only the root; 2, 3: the persistent forms */
                if (!(all & 1) || role(c, k) != 1) {
#ifndef HAVE_PERS
                    if (all >= 2) {
                        continue;
                    }
#endif
                    cases[ncases++] =
                        (case_t){c, k, all & 1, all >> 1, 0, 0, NULL};
                }
            }
        }
    }
    /* Every reference first: once an offloaded request has failed, MPICH
     * 4.0 may answer later errors with that request's error code (its
     * error ring keeps a slot's "user code" mark when the slot is
     * reused), and the reference would be wrong. */
    for (x = cases; x < cases + ncases; x++) {
        reference(x, ref[x->c >= C_NAG]);
    }
    for (x = cases; shim && x < cases + ncases; x++) {
        MPI_Barrier(MPI_COMM_WORLD);
        through_shim(x, comm[x->c >= C_NAG]);
    }
    t_case("summary");
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        printf("%d cases run (%s), %d kinds of error not checked by this "
               "MPI for a collective\n",
               ncases,
               shim ? "stock MPI's reference, then the shim"
                    : "stock MPI only: the reference",
               nskip);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);
    for (i = 0; i < 2; i++) {
        MPI_Comm_free(&comm[i]);
        MPI_Comm_free(&ref[i]);
    }
    MPI_Type_free(&g.loose);
    free(srcs);
    free(g.sbuf);
    free(g.rbuf);
    return t_finish();
}
