/* SPDX-License-Identifier: BSD-3-Clause */
/* Between the files of move/: the staged path's CMA copies and copy
 * threads (agent_cma.c), the engines' commands (agent_engines.c). */
#ifndef AGENT_MOVERS_H
#define AGENT_MOVERS_H

#include "dpu_agent/core/agent.h"
#include "common/dps_sched.h"

#define world_of agent_move_world

/* Stage `stage` of slot s (1: read the source, 3: read the destination,
 * 2: write the destination; as agent_slot_t.state) with CMA,
 * synchronously, from/to world's memory. UCS_OK, or UCS_ERR_IO_ERROR
 * (logged). */
ucs_status_t agent_cma_stage(agent_t *a, agent_slot_t *s, int stage,
                             uint32_t world);

/* The same through the rank's grant (emulated PCIe DMA, agent_fetch.c);
 * counts dma_bytes. */
ucs_status_t agent_dma_stage(agent_t *a, agent_slot_t *s, int stage,
                             uint32_t world);

/* A fetch's answer was short: the source's agent would not serve it
 * (it does not fit the post there, or the instance failed there). Not
 * a transport error, which UCX reports with its own statuses. */
#define AGENT_FETCH_REFUSED UCS_ERR_REJECTED

/* Stage 1 of slot s, whose source rank is another agent's: post the
 * tagged receive into the slot and send that agent a FETCH. The slot
 * completes when the answer came (status: AGENT_FETCH_REFUSED if it is
 * short, or UCX's error). */
void agent_fetch_start(agent_t *a, agent_slot_t *s);

/* Read len bytes at addr of our rank `world` into buf, now, by CMA or
 * DMA through its grant (it must be reached one way or the other:
 * agent_rank_cma, agent_rank_dma): DPS_OK, or DPS_ERR_IO with errno set
 * (agent_fetch.c). */
int agent_read_rank(agent_t *a, uint32_t world, uint64_t addr, void *buf,
                    size_t len);

/* The next pushed piece of s->move into slot s (s->off, len, data;
 * the slot holds its message until written): DPS_OK, or DPS_ERR_PROTO
 * when it is not the piece due (agent_push.c). */
int agent_push_take(agent_t *a, agent_slot_t *s);
/* Slot s wrote its pushed piece: release its message, return the
 * credit of early bytes to their sender. */
void agent_push_written(agent_t *a, agent_slot_t *s);
/* Are more pieces of m here already? 1 or 0. */
int agent_push_more(const agent_move_t *m);
/* A pushed-in move is written whole: forget its meeting point. */
void agent_push_finished(agent_t *a, agent_move_t *m);

/* Workers (agent_workers.c): job j to the worker hint picks (the same
 * hint, the same worker: its jobs end in order), starting them the first
 * time; 0, or -1 if there are none or its ring is full (do it here). */
int agent_workers_submit(agent_t *a, unsigned hint, agent_job_t *j);
/* Take the workers' signals (the flags say which jobs ended). */
void agent_workers_drain(agent_t *a);
/* A rank's memory through its grant (emulated PCIe DMA), as
 * agent_dma_stage, without counting (a worker's). */
ucs_status_t agent_dma_rw(agent_t *a, agent_slot_t *s, int stage,
                          uint32_t world);

/* Free the moves given to engines and not reported done. */
void agent_engines_fini(agent_t *a);

/* A reduction's chunk: aux (the destination's) = data (op) aux. */
static inline ucs_status_t agent_slot_reduce(agent_slot_t *s)
{
    agent_move_t *m = s->move;

    return dps_reduce(m->op, m->dtype, s->data, s->aux, s->len) == DPS_OK
               ? UCS_OK
               : UCS_ERR_INVALID_PARAM;
}

#endif
