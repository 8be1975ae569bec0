/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shim's state (base/state.h), defined at the bottom so that every
 * layer reads it without depending on the one that fills it in (boot/
 * at MPI_Init), and the names of the collectives it counts.
 */
#include "shim/base/state.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

shim_state_t shim = {
    .chan = {.parent_fd = -1,
             .kick_fd = -1,
             .shm_fd = -1,
             .tx_lock = PTHREAD_MUTEX_INITIALIZER},
    .keyval = MPI_KEYVAL_INVALID,
    .fo = {.ctrl = MPI_COMM_NULL, .agree = MPI_COMM_NULL},
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .agree_lock = PTHREAD_MUTEX_INITIALIZER,
};
__thread int          shim_in_call;
__thread MPI_Request *shim_busy_req;

void shim_hello(dps_msg_hello_t *out)
{
    out->world_rank = (uint32_t)shim.topo.world_rank;
    out->pid = (uint32_t)getpid();
    out->token_addr = shim.chan.cma_token != 0
                          ? (uint64_t)(uintptr_t)&shim.chan.cma_token
                          : 0;
    out->token = shim.chan.cma_token;
}

int shim_fo_notice(shim_fo_cause_t cause, const char *fmt, ...)
{
    va_list ap;

    if (shim.fo.cause != SHIM_FO_NO_CAUSE || cause == SHIM_FO_NO_CAUSE) {
        return 0;
    }
    shim.fo.cause = cause;
    va_start(ap, fmt);
    vsnprintf(shim.fo.why, sizeof(shim.fo.why), fmt, ap);
    va_end(ap);
    return 1;
}

int shim_thread_start(pthread_t *thr, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    int      rc;

    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(thr, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

void shim_stat_add(int coll, int stat, uint64_t n)
{
    pthread_mutex_lock(&shim.lock);
    shim.stat.coll[coll][stat] += n;
    pthread_mutex_unlock(&shim.lock);
}

int shim_mpi_error(dps_status_t st)
{
    switch (st) {
    case DPS_OK: return MPI_SUCCESS;
    case DPS_ERR_ARG: return MPI_ERR_ARG;
    case DPS_ERR_TRUNCATE:
    case DPS_ERR_MISMATCH: return MPI_ERR_TRUNCATE;
    case DPS_ERR_NOMEM: return MPI_ERR_NO_MEM;
    case DPS_ERR_OP: return MPI_ERR_OP;
    case DPS_ERR_MPI:
    case DPS_ERR_PROTO: return MPI_ERR_INTERN;
    default: return MPI_ERR_OTHER;
    }
}
