/* SPDX-License-Identifier: BSD-3-Clause */
/* The dispatch: a collective's arguments to the builders of its family. */
#include "shim/compile/build.h"
#include "common/dps_proto.h"
#include "common/dps_status.h"

int bld_build(const bld_args_t *a, bld_t *b)
{
    bld_topo_t t;
    int        rc;

    if (a->size == 0 || a->rank >= a->size || a->root >= a->size) {
        return DPS_ERR_INVALID;
    }
    rc = bld_topo_init(&t, a->size, a->agent);
    if (rc != DPS_OK) {
        return rc;
    }
    switch (dps_coll_family(a->coll)) {
    case DPS_FAM_REDUCE: rc = bld_reduction(a, &t, b); break;
    case DPS_FAM_NEIGHBOR:
    case DPS_FAM_GROUP: rc = bld_pairs(a, b); break;
    default: rc = bld_move(a, &t, b); break;
    }
    bld_topo_fini(&t);
    return rc == DPS_OK && b->oom ? DPS_ERR_NOMEM : rc;
}
