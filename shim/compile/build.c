/* SPDX-License-Identifier: BSD-3-Clause */
/* The dispatch: a collective's arguments to the builders of its family. */
#include "shim/compile/build.h"
#include "common/dps_proto.h"

int bld_build(const bld_args_t *a, bld_t *b)
{
    bld_topo_t t;
    int rc;

    if (a->size == 0 || a->rank >= a->size || a->root >= a->size ||
        bld_topo_init(&t, a->size, a->agent) != 0) {
        return -1;
    }
    switch (a->coll) {
    case DPS_COLL_REDUCE:
    case DPS_COLL_ALLREDUCE:
    case DPS_COLL_REDUCE_SCATTER:
    case DPS_COLL_REDUCE_SCATTER_BLOCK:
    case DPS_COLL_SCAN:
    case DPS_COLL_EXSCAN:
        rc = bld_reduction(a, &t, b);
        break;
    case DPS_COLL_NEIGHBOR_ALLGATHER:
    case DPS_COLL_NEIGHBOR_ALLGATHERV:
    case DPS_COLL_NEIGHBOR_ALLTOALL:
    case DPS_COLL_NEIGHBOR_ALLTOALLV:
    case DPS_COLL_NEIGHBOR_ALLTOALLW:
    case DPS_COLL_GROUP:
        rc = bld_pairs(a, b);
        break;
    default:
        rc = bld_move(a, &t, b);
        break;
    }
    bld_topo_fini(&t);
    return (rc != 0 || b->oom) ? -1 : 0;
}
