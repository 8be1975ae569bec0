/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The collectives: one row each, the only list of them. Everything that
 * names every collective expands it (an X-macro, as LLNL's wrap.py and
 * mpiP generate their wrappers from one list): the ids (dps_proto.h),
 * their names here, the DPUSHIM_<SWITCH> variables (dps_config.c), the
 * shim's public nonblocking and persistent wrappers, stock MPI's calls
 * and the Fortran bindings (shim/wrap/). The row order is the wire's:
 * a row's id is its position (from 1), its persistent form's id that
 * plus DPS_COLL_GROUP; a new collective goes last, with a new protocol
 * version.
 *
 * X(ID, name, Name, family, shape, entry):
 *   ID      DPS_COLL_<ID>; switches DPUSHIM_I<ID> and DPUSHIM_<ID>_INIT
 *   name    MPI_I<name> is the nonblocking call, i<name> its short name
 *           (statistics, logs); <name>_init the persistent one's
 *   Name    MPI_<Name>_init (MPIX_ in Open MPI 4.1) is its persistent form
 *   family  MOVE (data moved, compile/moves.c), REDUCE (combined,
 *           compile/reductions.c) or NEIGHBOR (graph and cartesian
 *           neighbourhoods, compile pairs)
 *   shape   the arguments the MPI calls take (shim/wrap/shapes.h)
 *   entry   shim_coll_<entry>: the shim's offload of a call with those
 *           arguments (decide, describe, post; shim/wrap/coll.h)
 *
 * Adding a collective: docs/architecture.md's checklist.
 */
#ifndef DPS_COLLS_H
#define DPS_COLLS_H

/* One row per line, laid out by hand. */
/* clang-format off */
#define DPS_COLLS(X)                                                        \
    X(ALLTOALL, alltoall, Alltoall, MOVE, ALL, alltoall)                    \
    X(BCAST, bcast, Bcast, MOVE, BCAST, bcast)                              \
    X(BARRIER, barrier, Barrier, MOVE, BARRIER, barrier)                    \
    X(GATHER, gather, Gather, MOVE, ROOTED, rooted)                         \
    X(GATHERV, gatherv, Gatherv, MOVE, GATHERV, rooted)                     \
    X(SCATTER, scatter, Scatter, MOVE, ROOTED, rooted)                      \
    X(SCATTERV, scatterv, Scatterv, MOVE, SCATTERV, rooted)                 \
    X(ALLGATHER, allgather, Allgather, MOVE, ALL, allgather)                \
    X(ALLGATHERV, allgatherv, Allgatherv, MOVE, ALLV, allgatherv)           \
    X(ALLTOALLV, alltoallv, Alltoallv, MOVE, A2AV, alltoallv)               \
    X(ALLTOALLW, alltoallw, Alltoallw, MOVE, A2AW, alltoallv)               \
    X(REDUCE, reduce, Reduce, REDUCE, REDUCE, reduce)                       \
    X(ALLREDUCE, allreduce, Allreduce, REDUCE, ALLRED, allreduce)           \
    X(REDUCE_SCATTER, reduce_scatter, Reduce_scatter, REDUCE, REDSC,        \
      reduce_scatter)                                                       \
    X(REDUCE_SCATTER_BLOCK, reduce_scatter_block, Reduce_scatter_block,     \
      REDUCE, REDSCB, reduce_scatter_block)                                 \
    X(SCAN, scan, Scan, REDUCE, ALLRED, allreduce)                          \
    X(EXSCAN, exscan, Exscan, REDUCE, ALLRED, allreduce)                    \
    X(NEIGHBOR_ALLGATHER, neighbor_allgather, Neighbor_allgather, NEIGHBOR, \
      ALL, neighbor)                                                        \
    X(NEIGHBOR_ALLGATHERV, neighbor_allgatherv, Neighbor_allgatherv,        \
      NEIGHBOR, ALLV, neighbor)                                             \
    X(NEIGHBOR_ALLTOALL, neighbor_alltoall, Neighbor_alltoall, NEIGHBOR,    \
      ALL, neighbor)                                                        \
    X(NEIGHBOR_ALLTOALLV, neighbor_alltoallv, Neighbor_alltoallv, NEIGHBOR, \
      A2AV, neighbor)                                                       \
    X(NEIGHBOR_ALLTOALLW, neighbor_alltoallw, Neighbor_alltoallw, NEIGHBOR, \
      NA2AW, neighbor)
/* clang-format on */

/* The ids: the rows, the pattern group (dpushim.h), the rows' persistent
 * forms, the persistent pattern group. */
typedef enum {
    DPS_COLL_NONE = 0,
#define DPS_COLL_ID(ID, ...) DPS_COLL_##ID,
    DPS_COLLS(DPS_COLL_ID)
#undef DPS_COLL_ID
        DPS_COLL_GROUP,
#define DPS_COLL_ID(ID, ...) DPS_COLL_##ID##_INIT,
    DPS_COLLS(DPS_COLL_ID)
#undef DPS_COLL_ID
        DPS_COLL_GROUP_INIT,
    DPS_COLL_MAX
} dps_coll_t;

_Static_assert(DPS_COLL_GROUP_INIT == 2 * DPS_COLL_GROUP, "persistent ids");

/* The families (the table's column), and DPS_FAM_GROUP for pattern
 * groups; DPS_FAM_NONE out of range. */
typedef enum {
    DPS_FAM_NONE,
    DPS_FAM_MOVE,
    DPS_FAM_REDUCE,
    DPS_FAM_NEIGHBOR,
    DPS_FAM_GROUP
} dps_family_t;

/* The call a persistent collective starts (DPS_COLL_ALLTOALL for
 * DPS_COLL_ALLTOALL_INIT); coll itself for the others. */
static inline int dps_coll_base(int coll)
{
    return coll > DPS_COLL_GROUP ? coll - DPS_COLL_GROUP : coll;
}

/* Whether coll is a persistent form (DPS_COLL_*_INIT). */
static inline int dps_coll_persistent(int coll)
{
    return coll > DPS_COLL_GROUP && coll < DPS_COLL_MAX;
}

/* The family of coll or of the call its persistent form starts. */
static inline dps_family_t dps_coll_family(int coll)
{
    switch (dps_coll_base(coll)) {
#define DPS_COLL_FAM(ID, name, Name, fam, ...) \
    case DPS_COLL_##ID: return DPS_FAM_##fam;
        DPS_COLLS(DPS_COLL_FAM)
#undef DPS_COLL_FAM
    case DPS_COLL_GROUP: return DPS_FAM_GROUP;
    default: return DPS_FAM_NONE;
    }
}

/* "MPI_Ialltoall", "MPI_Alltoall_init", "dpushim_group_end" and so on;
 * "?" out of range. */
const char *dps_coll_str(unsigned coll);

/* "ialltoall", "alltoall_init", "group", "group_init" and so on (the
 * statistics' names); "?" out of range. */
const char *dps_coll_short(unsigned coll);

#endif
