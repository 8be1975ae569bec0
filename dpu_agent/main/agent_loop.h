/* SPDX-License-Identifier: BSD-3-Clause */
/* The agent's event loop (agent_loop.c). */
#ifndef AGENT_LOOP_H
#define AGENT_LOOP_H

#include "dpu_agent/core/agent.h"

/* How the agent waits for work, at start-up: DPUSHIM_AGENT_SCHED's mode
 * (DPS_SCHED_*): polling on a core of its own, or sleeping when idle at
 * a scheduling priority that suits cores shared with ranks. */
void agent_loop_set_sched(agent_t *a, int mode);

/* The SIGUSR1 handler: the loop prints every live instance (agent_dump)
 * at its next pass. */
void agent_loop_on_usr1(int sig);

/* Serve the job until a->quit, the spawning rank's end or an error.
 * Returns 0. */
int agent_loop_run(agent_t *a);

#endif
