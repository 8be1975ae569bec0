/* SPDX-License-Identifier: BSD-3-Clause */
/* The emulated DMA engine of a rank (data/engine.c). */
#ifndef SHIM_ENGINE_H
#define SHIM_ENGINE_H

#include "common/dps_shm.h"

#include <stdint.h>
#include <sys/types.h>

/* Start the engine thread on segment shm, whose agent is agent_pid (0:
 * not on this host: never kicked). Sets shm->engine_up. DPS_OK, or an
 * error (logged) and no engine: the agent then stages the data itself. */
int shim_engine_start(dps_shm_t *shm, pid_t agent_pid);

/* Stop it: no command runs after this returns, none is taken any more.
 * Safe when it never started. */
void shim_engine_stop(void);

/* 1 while the engine thread runs (the direct data path). */
int shim_engine_running(void);

/* Run queued commands on the calling thread, if no other executor is at
 * it; the number run. For ranks waiting in MPI. */
int shim_engine_help(void);

/* A collective was posted: wake the engine thread if it sleeps, so that
 * it polls for the commands that follow (cheap: same core, no IPI). */
void shim_engine_poke(void);

/* Commands run, bytes copied, commands read straight into a
 * non-contiguous datatype's memory (scatter regions) and straight from
 * another rank's unpacked send data (gathered regions) so far. */
void shim_engine_stats(uint64_t *copies, uint64_t *bytes, uint64_t *scattered,
                       uint64_t *gathered);

struct shim_scatter;

/* Received bytes of region m (a staging buffer mapped onto the
 * application's non-contiguous memory, data/flat.h) go straight into
 * place, from now until shim_engine_scatter_remove; only for regions no
 * step reads (shim_sched_t.reads_recv). 1 if registered (the engine
 * runs), else 0: everything is unpacked at completion. */
int  shim_engine_scatter_add(struct shim_scatter *m);
void shim_engine_scatter_remove(struct shim_scatter *m);

#endif
