/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The collectives the shim wraps, one row each, with how their MPI calls
 * take a shim_coll_args_t (wrap/check.h says which field holds which
 * argument): an X-macro list, as LLNL's wrap.py and mpiP generate their
 * wrappers from one. The places that call every collective by its id
 * expand it: stock MPI's nonblocking call (shim_coll_stock), the
 * shim's own nonblocking call that a persistent request's start makes,
 * and stock MPI's persistent init (wrap/pers_init.c).
 */
#ifndef COLL_LIST_H
#define COLL_LIST_H

/*
 * X(id, nonblocking, persistent, arguments...): id is the DPS_COLL_*
 * name without its prefix; nonblocking the call's name without MPI_
 * (PMPI_, MPIX_), persistent its persistent form's without _init; the
 * arguments are those up to the communicator, taken from a (const
 * shim_coll_args_t *) and the communicator m. The nonblocking call adds
 * the request after them, the persistent init the info and the request.
 */
#define SHIM_COLLS(X)                                                      \
    X(ALLTOALL, Ialltoall, Alltoall, a->sbuf, a->scount, a->stype,         \
      a->rbuf, a->rcount, a->rtype, m)                                     \
    X(BCAST, Ibcast, Bcast, (void *)a->sbuf, a->scount, a->stype, a->root, \
      m)                                                                   \
    X(BARRIER, Ibarrier, Barrier, m)                                       \
    X(GATHER, Igather, Gather, a->sbuf, a->scount, a->stype, a->rbuf,      \
      a->rcount, a->rtype, a->root, m)                                     \
    X(GATHERV, Igatherv, Gatherv, a->sbuf, a->scount, a->stype, a->rbuf,   \
      a->rcounts, a->rdispls, a->rtype, a->root, m)                        \
    X(SCATTER, Iscatter, Scatter, a->sbuf, a->scount, a->stype, a->rbuf,   \
      a->rcount, a->rtype, a->root, m)                                     \
    X(SCATTERV, Iscatterv, Scatterv, a->sbuf, a->scounts, a->sdispls,      \
      a->stype, a->rbuf, a->rcount, a->rtype, a->root, m)                  \
    X(ALLGATHER, Iallgather, Allgather, a->sbuf, a->scount, a->stype,      \
      a->rbuf, a->rcount, a->rtype, m)                                     \
    X(ALLGATHERV, Iallgatherv, Allgatherv, a->sbuf, a->scount, a->stype,   \
      a->rbuf, a->rcounts, a->rdispls, a->rtype, m)                        \
    X(ALLTOALLV, Ialltoallv, Alltoallv, a->sbuf, a->scounts, a->sdispls,   \
      a->stype, a->rbuf, a->rcounts, a->rdispls, a->rtype, m)              \
    X(ALLTOALLW, Ialltoallw, Alltoallw, a->sbuf, a->scounts, a->sdispls,   \
      a->stypes, a->rbuf, a->rcounts, a->rdispls, a->rtypes, m)            \
    X(REDUCE, Ireduce, Reduce, a->sbuf, a->rbuf, a->scount, a->stype,      \
      a->op, a->root, m)                                                   \
    X(ALLREDUCE, Iallreduce, Allreduce, a->sbuf, a->rbuf, a->scount,       \
      a->stype, a->op, m)                                                  \
    X(REDUCE_SCATTER, Ireduce_scatter, Reduce_scatter, a->sbuf, a->rbuf,   \
      a->rcounts, a->stype, a->op, m)                                      \
    X(REDUCE_SCATTER_BLOCK, Ireduce_scatter_block, Reduce_scatter_block,   \
      a->sbuf, a->rbuf, a->rcount, a->stype, a->op, m)                     \
    X(SCAN, Iscan, Scan, a->sbuf, a->rbuf, a->scount, a->stype, a->op, m)  \
    X(EXSCAN, Iexscan, Exscan, a->sbuf, a->rbuf, a->scount, a->stype,      \
      a->op, m)                                                            \
    X(NEIGHBOR_ALLGATHER, Ineighbor_allgather, Neighbor_allgather,         \
      a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype, m)       \
    X(NEIGHBOR_ALLGATHERV, Ineighbor_allgatherv, Neighbor_allgatherv,      \
      a->sbuf, a->scount, a->stype, a->rbuf, a->rcounts, a->rdispls,       \
      a->rtype, m)                                                         \
    X(NEIGHBOR_ALLTOALL, Ineighbor_alltoall, Neighbor_alltoall, a->sbuf,   \
      a->scount, a->stype, a->rbuf, a->rcount, a->rtype, m)                \
    X(NEIGHBOR_ALLTOALLV, Ineighbor_alltoallv, Neighbor_alltoallv,         \
      a->sbuf, a->scounts, a->sdispls, a->stype, a->rbuf, a->rcounts,      \
      a->rdispls, a->rtype, m)                                             \
    X(NEIGHBOR_ALLTOALLW, Ineighbor_alltoallw, Neighbor_alltoallw,         \
      a->sbuf, a->scounts, a->sad, a->stypes, a->rbuf, a->rcounts, a->rad, \
      a->rtypes, m)

#endif
