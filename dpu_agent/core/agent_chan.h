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

/* Send a message (ownership taken) to another agent: it is appended to
 * what goes to that agent this pass, sent as one BUNDLE by
 * agent_out_flush at the pass's end (in order). DPS_OK, DPS_ERR_NOMEM,
 * or DPS_ERR_UCX when that agent cannot be reached (a send to it
 * failed before). */
int agent_send_agent(agent_t *a, uint32_t idx, void *msg, size_t len);

/* The per-agent bundles (a->out), made once the job's agents are known;
 * DPS_OK or DPS_ERR_NOMEM. agent_out_fini frees them. */
int  agent_out_init(agent_t *a);
void agent_out_fini(agent_t *a);

/* Room for len more bytes at o->buf + o->len (the bundle's header is
 * kept room for first; a large one in a buffer used before); DPS_OK,
 * DPS_ERR_NOMEM or DPS_ERR_INVALID. */
int agent_out_room(agent_t *a, agent_out_t *o, size_t len);

/* Take other agents' bundles (DPS_AM_BUNDLE) on our worker; DPS_OK or
 * DPS_ERR_UCX. They queue until agent_rx_pop takes them, oldest first
 * (NULL: none). */
int         agent_rx_init(agent_t *a);
agent_rx_t *agent_rx_pop(agent_t *a);
/* Drop a reference to a received bundle (freed, or given back to UCX,
 * at the last). */
void agent_rx_put(agent_rx_t *rx);

/* Send what is gathered for agent idx as one message and wake it;
 * data: it carries pushed bytes (in o->inflight until UCX is done with
 * it). DPS_OK, DPS_ERR_NOMEM or DPS_ERR_UCX. */
int agent_out_send(agent_t *a, uint32_t idx, int data);

/* Send buf (len bytes of messages after room for the bundle's header,
 * cap its capacity; taken) to agent idx as one BUNDLE. data: 1, it
 * carries pushed bytes (in o->inflight until UCX is done with it); 2,
 * the same, counted there already; 0, messages only. DPS_OK,
 * DPS_ERR_NOMEM or DPS_ERR_UCX. */
int agent_out_send_buf(agent_t *a, uint32_t idx, uint8_t *buf, size_t len,
                       size_t cap, int data);

/* End of a pass: send every agent its bundle (not past a bundle a worker
 * still fills: o->filling). */
void agent_out_flush(agent_t *a);

/* Is anything gathered, or a bundle with pushed bytes still being sent?
 * 1 or 0. */
int agent_out_pending(const agent_t *a);

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
