/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shim's state (base/state.h), defined at the bottom so that every
 * layer reads it without depending on the one that fills it in (boot/
 * at MPI_Init), and the names of the collectives it counts.
 */
#include "shim/base/state.h"

#include <unistd.h>

shim_state_t shim = {
    .parent_fd = -1,
    .kick_fd = -1,
    .keyval = MPI_KEYVAL_INVALID,
    .fo_ctrl = MPI_COMM_NULL,
    .fo_agree = MPI_COMM_NULL,
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .agree_lock = PTHREAD_MUTEX_INITIALIZER,
    .tx_lock = PTHREAD_MUTEX_INITIALIZER,
    .shm_fd = -1,
};
__thread int shim_in_call;
__thread MPI_Request *shim_busy_req;

void shim_hello(dps_msg_hello_t *out)
{
    out->world_rank = (uint32_t)shim.world_rank;
    out->pid = (uint32_t)getpid();
    out->token_addr = shim.cma_token != 0
                      ? (uint64_t)(uintptr_t)&shim.cma_token : 0;
    out->token = shim.cma_token;
}

const char *shim_coll_name(int coll)
{
    static const char *names[DPS_COLL_MAX] = {
        "?", "ialltoall", "ibcast", "ibarrier", "igather", "igatherv",
        "iscatter", "iscatterv", "iallgather", "iallgatherv", "ialltoallv",
        "ialltoallw", "ireduce", "iallreduce", "ireduce_scatter",
        "ireduce_scatter_block", "iscan", "iexscan", "ineighbor_allgather",
        "ineighbor_allgatherv", "ineighbor_alltoall", "ineighbor_alltoallv",
        "ineighbor_alltoallw", "group", "alltoall_init", "bcast_init",
        "barrier_init", "gather_init", "gatherv_init", "scatter_init",
        "scatterv_init", "allgather_init", "allgatherv_init",
        "alltoallv_init", "alltoallw_init", "reduce_init", "allreduce_init",
        "reduce_scatter_init", "reduce_scatter_block_init", "scan_init",
        "exscan_init", "neighbor_allgather_init", "neighbor_allgatherv_init",
        "neighbor_alltoall_init", "neighbor_alltoallv_init",
        "neighbor_alltoallw_init", "group_init"
    };

    return coll > 0 && coll < DPS_COLL_MAX ? names[coll] : "?";
}
