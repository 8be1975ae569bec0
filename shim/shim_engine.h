/* SPDX-License-Identifier: BSD-3-Clause */
/* The emulated DMA engine of a rank (shim_engine.c). */
#ifndef SHIM_ENGINE_H
#define SHIM_ENGINE_H

#include "../common/dps_shm.h"

#include <stdint.h>
#include <sys/types.h>

/* Start the engine thread on segment shm, whose agent is agent_pid (0:
 * not on this host: never kicked). Sets shm->engine_up. DPS_OK, or an
 * error (logged) and no engine: the agent then stages the data itself. */
int shim_engine_start(dps_shm_t *shm, pid_t agent_pid);

/* Stop it: no command runs after this returns, none is taken any more.
 * Safe when it never started. */
void shim_engine_stop(void);

/* Run queued commands on the calling thread, if no other executor is at
 * it; the number run. For ranks waiting in MPI. */
int shim_engine_help(void);

/* A collective was posted: wake the engine thread if it sleeps, so that
 * it polls for the commands that follow (cheap: same core, no IPI). */
void shim_engine_poke(void);

/* Commands run and bytes copied so far. */
void shim_engine_stats(uint64_t *copies, uint64_t *bytes);

#endif
