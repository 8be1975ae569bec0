/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shim's state (base/state.h), defined at the bottom so that every
 * layer reads it without depending on the one that fills it in (boot/
 * at MPI_Init), and the names of the collectives it counts.
 */
#include "shim/base/state.h"

#include <stdarg.h>
#include <stdio.h>
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

int shim_fo_notice(shim_fo_cause_t cause, const char *fmt, ...)
{
    va_list ap;

    if (shim.fo_cause != SHIM_FO_NO_CAUSE || cause == SHIM_FO_NO_CAUSE) {
        return 0;
    }
    shim.fo_cause = cause;
    va_start(ap, fmt);
    vsnprintf(shim.fo_why, sizeof(shim.fo_why), fmt, ap);
    va_end(ap);
    return 1;
}
