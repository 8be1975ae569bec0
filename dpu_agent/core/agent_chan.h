/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How the agent reaches the ranks and the other agents: each rank on this
 * host through its shared-memory segment (common/dps_shm.h) once it
 * offered one, otherwise, and every other agent, by UCX (agent_chan.c).
 */
#ifndef AGENT_CHAN_H
#define AGENT_CHAN_H

#include "dpu_agent/core/agent.h"

/* SHM: map a rank's segment, if its token proves that its pid names it
 * here (common/dps_cma.h). DPS_OK (also when it is not mapped: the rank
 * then keeps to UCX) or DPS_ERR_*. */
int agent_shm_attach(agent_t *a, const dps_msg_shm_t *m);

/* Send a message (ownership taken) to world rank w: through its segment
 * (waking it if it sleeps) or by UCX. */
void agent_send_rank(agent_t *a, uint32_t w, void *msg, size_t len);

/* Send a message (ownership taken) to another agent and wake it up. */
int agent_send_agent(agent_t *a, uint32_t idx, void *msg, size_t len);

/* Take in every rank's messages through its segment, each handed to
 * a->up.handle; the number taken. Messages it cannot handle yet (their
 * communicator is not known) go to *deferred. */
int agent_shm_poll(agent_t *a, dps_inmsg_t **deferred);

/* Before sleeping: set our flag in every segment; 0 if work came in
 * meanwhile (flags cleared again). After waking: agent_shm_awake. */
int  agent_shm_may_sleep(agent_t *a);
void agent_shm_awake(agent_t *a);

/* Unmap every segment (the engines' commands are freed before,
 * agent_exec_fini). */
void agent_shm_fini(agent_t *a);

#endif
