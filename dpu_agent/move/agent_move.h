/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Moves: the bytes of a transfer or local step carried out, by the
 * destination rank's DMA engine (agent_engines.c) or staged through the
 * agent (agent_exec.c, with CMA copies in agent_cma.c). Whoever queues a
 * move hears of its end through a->up.move_done. Nothing here knows which
 * collective a move belongs to.
 */
#ifndef AGENT_MOVE_H
#define AGENT_MOVE_H

#include "dpu_agent/core/agent.h"

/* Set up staging memory (a->chunk, a->nslots set); DPS_OK or DPS_ERR_*. */
int agent_exec_init(agent_t *a);

/* Stop the copy threads, free the staging memory and every move not
 * finished (queued, being flushed, or given to an engine). */
void agent_exec_fini(agent_t *a);

/* Queue a move (taken); the executor carries it out and ends it with
 * a->up.move_done. */
void agent_move_queue(agent_t *a, agent_move_t *m);

/* Take the queued, not yet started moves of instance in off the queue:
 * the caller gets them, in queue order, linked through next (NULL if
 * none). */
agent_move_t *agent_moves_unqueue(agent_t *a, agent_inst_t *in);

/* Stop the workers, if started (agent_workers.c): after it no thread
 * touches a slot, a bundle or a rank's memory any more. */
void agent_workers_stop(agent_t *a);

/* Take move m off the queue, wherever it is in it. */
void agent_move_unqueue(agent_t *a, agent_move_t *m);

/* ---- between nodes (agent_push.c) ---- */

/* Work out a->push_unit (at start-up). */
void agent_push_init(agent_t *a);
/* Is there room for len more bytes at world rank world_dst's agent (its
 * window for us)? Then it is taken (1); else 0. agent_push_unroom gives
 * it back (the move could not be made). */
int  agent_push_room(agent_t *a, uint32_t world_dst, uint64_t len);
void agent_push_unroom(agent_t *a, uint32_t world_dst, uint64_t len);
/* CREDIT from another agent: room there again. */
void agent_push_credit(agent_t *a, const dps_msg_credit_t *c);
/* The sender's side: queue pushed-out move m (AGENT_PUSH_OUT: its
 * source is ours, its destination another node's) for its destination's
 * agent. It ends (a->up.move_done) once its bytes are read into a
 * bundle (m->read == m->len), or, if we cannot read that rank, once it
 * is left to the receiver's agent to fetch (m->read 0), or failed. */
void agent_push_out(agent_t *a, agent_move_t *m);
/* End of a pass: read the queued pushed-out moves into each agent's
 * bundle and send it (at most DPUSHIM_CHUNK_BYTES of pieces a bundle,
 * DPUSHIM_PIPELINE_DEPTH bundles on their way to one agent). */
void agent_push_flush(agent_t *a);
/* Is there pushing to do that may start now? 1 or 0. */
int agent_push_pending(const agent_t *a);
/* The receiver's side: a PUSH piece came (data in rx, which is kept
 * while the piece waits). DPS_OK or DPS_ERR_NOMEM. */
int agent_push_arrive(agent_t *a, const dps_msg_push_t *f, const uint8_t *data,
                      agent_rx_t *rx);
/* n pushed bytes of agent `from` were dropped on arrival (their
 * instance had failed here): their room is its again. */
void agent_push_dropped(agent_t *a, uint32_t from, uint64_t n);
/* Move m (its source another node's rank) began: its bytes come pushed;
 * it is queued once some have come. DPS_OK or DPS_ERR_NOMEM. */
int agent_push_expect(agent_t *a, agent_move_t *m);
/* Instance in fails or ends: its pieces are dropped; its moves that wait
 * for pieces or are to be pushed, and are in no slot, are returned
 * (linked through next) for the caller to end. */
agent_move_t *agent_push_drop(agent_t *a, agent_inst_t *in);
/* Free what is kept and queued (at exit). */
void agent_push_fini(agent_t *a);

/* Give queued moves whose destination has a DMA engine (and whose source
 * is on this host) to that engine (agent_engines.c). */
void agent_dispatch_engines(agent_t *a);

/* Take in the engines' done reports, each ending its move; the number
 * taken (agent_engines.c). */
int agent_engines_reap(agent_t *a);

/* Issue staging reads/writes for queued moves; reap finished slots.
 * At most AGENT_SCHED_SLICE_SEC at a time, so that the loop keeps
 * answering the network and its ranks (a rank's ping, another agent's
 * bundle) however much work is queued: 1 when it stopped with work left
 * to do now, else 0. */
#define AGENT_SCHED_SLICE_SEC 0.002
int agent_schedule(agent_t *a);

/* Nothing to do but wait for UCX or copy threads: may sleep. */
int agent_may_sleep(const agent_t *a);

/* eventfd the workers signal, or -1 (none yet); once they exist it is
 * watched in a->epfd (agent_workers.c). */
int agent_copy_fd(const agent_t *a);

/* Answer agent `to`'s FETCH: read len bytes at addr of our rank world
 * (by CMA or DMA now, else by UCX get with rkey) and send them with
 * tag; ok 0 answers with nothing, which the asker takes for a failure
 * (agent_fetch.c). */
void agent_fetch_serve(agent_t *a, uint32_t to, uint32_t world, uint64_t addr,
                       uint64_t len, uint64_t tag, ucp_rkey_h rkey, int ok);

/* Send the answers whose UCX get completed; 1 if any did. */
int agent_serves_progress(agent_t *a);

/* Free answers not yet sent. */
void agent_serves_fini(agent_t *a);

#endif
