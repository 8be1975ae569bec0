/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The schedule engine of the agent, inside: instances of collectives as
 * schedules of steps (common/dps_sched.h), whatever collective they came
 * from.
 *
 * Each rank posts its schedule with its buffers. An agent serves its own
 * ranks' steps and learns about the other ranks it exchanges with from
 * their agents (PEER_POST: schedule and buffers; ROUND: progress;
 * SEND_DONE: their sends were read). A local rank's steps of its current
 * round start as soon as they can: a COPY or REDUCE at once, a RECV or
 * RECV_REDUCE once the peer has posted and reached the round of the
 * matching SEND (the k-th SEND of s to d pairs with the k-th RECV of d
 * from s). Each becomes a move (move/agent_move.h), which ends with
 * a->up.move_done. A round ends when every
 * step of it is done, its SENDs included (their readers say so); the
 * rank completes after its last round, once what was written into it has
 * landed.
 *
 * Ranks that do not agree (different collectives, transfer counts or
 * sizes) fail the instance on every rank (INST_FAIL): a mismatch never
 * hangs and is never dropped silently.
 *
 *   agent_sched.c  communicators and cached schedules
 *   agent_inst.c   instances: rounds, steps, completion, failure
 *   agent_post.c   posts and the messages between agents
 */
#ifndef DPS_AGENT_SCHED_H
#define DPS_AGENT_SCHED_H

#include "dpu_agent/core/agent.h"

#include <stdio.h>

static inline int is_local(const agent_t *a, const agent_comm_t *c, uint32_t r)
{
    return a->rank_agent[c->members[r]] == a->self;
}

static inline uint32_t agent_of(const agent_t *a, const agent_comm_t *c,
                                uint32_t r)
{
    return a->rank_agent[c->members[r]];
}

/* Register what the movers call when a move ends (a->up.move_done), at
 * start-up (agent_inst.c). */
void agent_sched_init(agent_t *a);

/* Collective messages: POST, PEER_POST, SEND_DONE, ROUND, INST_FAIL,
 * COMM_FREE, REG_FREE, SCHED_FREE (agent_post.c). DPS_OK, DPS_ERR_AGAIN
 * (handle it again later) or an error (logged). */
int agent_handle_coll(agent_t *a, const dps_msg_t *msg);

/* Forward the posts held back so that a node's go together (those held
 * long enough, or all), agent_post.c. */
void agent_posts_release(agent_t *a, int all);
/* Instance in ends: drop its held posts (agent_inst.c). */
void agent_posts_forget(agent_t *a, agent_inst_t *in);
/* Are posts held back? 1 or 0. */
static inline int agent_posts_held(const agent_t *a)
{
    return a->held != NULL;
}

/* Print every live instance: each rank's round and steps (SIGUSR1;
 * agent_inst.c). */
void agent_dump(agent_t *a, FILE *out);

/* Release every instance, communicator, schedule and key (agent_post.c). */
void agent_sched_fini(agent_t *a);

/* agent_sched.c */
agent_comm_t  *agent_comm_get(agent_t *a, uint64_t id, uint32_t size,
                              const uint32_t *members, int *bad);
void           agent_comm_release(agent_t *a, agent_comm_t *c);
agent_sched_t *agent_sched_take(agent_t *a, const dps_msg_t *msg);
void           agent_sched_unref(agent_t *a, agent_sched_t *s);
/* Take s out of the cache (and out of its counts); it stays allocated. */
void agent_sched_forget(agent_t *a, agent_sched_t *s);
void agent_sched_free(agent_sched_t *s);
int  agent_handle_sched_free(agent_t *a, const dps_msg_t *msg);
/* Position of step i among its rank's steps with the same peer and
 * direction: the k of the k-th SEND to (or RECV from) that peer. */
uint32_t agent_step_k(const agent_sched_t *s, uint32_t i);

/* agent_inst.c */
int           agent_tomb_has(const agent_t *a, const agent_inst_key_t *key);
agent_inst_t *agent_inst_new(agent_t *a, agent_comm_t *c, agent_inst_key_t key,
                             uint32_t coll);
void          agent_inst_destroy(agent_t *a, agent_inst_t *in);
void          agent_inst_maybe_destroy(agent_t *a, agent_inst_t *in);
void          agent_begin_round(agent_rstate_t *rs);
void          agent_try_complete(agent_t *a, agent_inst_t *in, uint32_t r);
void          agent_step_done(agent_inst_t *in, uint32_t r, uint32_t i);
void          agent_inst_progress(agent_t *a, agent_inst_t *in);
void agent_inst_fail(agent_t *a, agent_inst_t *in, int status, int tell);

#endif
