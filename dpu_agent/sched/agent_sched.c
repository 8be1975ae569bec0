/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The schedule engine's tables: communicators (members by world rank) and
 * ranks' schedules (common/dps_sched.h), cached by (world rank, id) until
 * SCHED_FREE, each indexed once so that the k-th SEND of s to d finds the
 * k-th RECV of d from s. The engine itself is in agent_inst.c (instances:
 * rounds and steps) and agent_post.c (posts and the messages between
 * agents); agent_sched.h explains how it works.
 */
#define _GNU_SOURCE
#include "dpu_agent/sched/agent_sched.h"
#include "dpu_agent/core/agent_chan.h"
#include "common/dps_log.h"
#include "common/dps_status.h"

#include <stdlib.h>
#include <string.h>

/* ---- communicators ----------------------------------------------------- */

void agent_comm_release(agent_t *a, agent_comm_t *c)
{
    if (c->freed && c->live == 0) {
        HASH_DEL(a->comms, c);
        free(c->members);
        free(c);
    }
}

/* Find a communicator, or create it from a member list (may be NULL). */
agent_comm_t *agent_comm_get(agent_t *a, uint64_t id, uint32_t size,
                             const uint32_t *members, int *bad)
{
    agent_comm_t *c;
    uint8_t      *seen;
    uint32_t      r;

    *bad = 0;
    HASH_FIND(hh, a->comms, &id, sizeof(id), c);
    if (c != NULL || members == NULL) {
        if (c != NULL && c->size != size) {
            *bad = 1;
            return NULL;
        }
        return c;
    }
    c = calloc(1, sizeof(*c));
    seen = calloc(a->nagents, 1);
    if (c == NULL || seen == NULL ||
        (c->members = malloc(sizeof(uint32_t) * size)) == NULL) {
        free(c);
        free(seen);
        *bad = 1;
        return NULL;
    }
    c->id = id;
    c->size = size;
    for (r = 0; r < size; r++) {
        c->members[r] = dps_msg_u32(members, r);
        if (c->members[r] >= a->nranks) {
            free(c->members);
            free(c);
            free(seen);
            *bad = 1;
            return NULL;
        }
        if (!seen[a->rank_agent[c->members[r]]]) {
            seen[a->rank_agent[c->members[r]]] = 1;
            c->nagents++;
        }
        if (a->rank_agent[c->members[r]] == a->self) {
            c->nlocal++;
        }
    }
    free(seen);
    c->refs = c->nlocal;
    HASH_ADD(hh, a->comms, id, sizeof(c->id), c);
    dps_debug("communicator %#llx: %u ranks, %u here, %u agents",
              (unsigned long long)id, size, c->nlocal, c->nagents);
    return c;
}

/* ---- schedules --------------------------------------------------------- */

void agent_sched_free(agent_sched_t *s)
{
    free(s->steps);
    free(s->round_start);
    free(s->send_start);
    free(s->send_idx);
    free(s->recv_start);
    free(s->recv_idx);
    free(s->sent);
    free(s);
}

void agent_sched_forget(agent_t *a, agent_sched_t *s)
{
    HASH_DEL(a->scheds, s);
    a->nscheds--;
    a->sched_steps -= s->nsteps;
}

void agent_sched_unref(agent_t *a, agent_sched_t *s)
{
    if (s != NULL && --s->refs == 0 && s->dropped) {
        agent_sched_forget(a, s);
        agent_sched_free(s);
    }
}

/* SCHED_FREE: a rank's schedules that it will not name again. From our
 * own rank: also to the agents we forwarded them to. */
int agent_handle_sched_free(agent_t *a, const dps_msg_t *msg)
{
    const dps_msg_reg_free_t *f = &msg->u.reg_free.fixed;
    uint8_t                  *peers = NULL;
    uint32_t                  i, ag;

    if (f->world_rank >= a->nranks) {
        dps_error("sched_free for unknown rank %u", f->world_rank);
        return DPS_ERR_PROTO;
    }
    if (a->rank_agent[f->world_rank] == a->self) {
        peers = calloc(a->nagents, 1);
    }
    for (i = 0; i < f->count; i++) {
        agent_sched_t probe, *s;

        memset(&probe.k, 0, sizeof(probe.k));
        probe.k.world = f->world_rank;
        probe.k.id = dps_msg_u64(msg->u.reg_free.ids, i);
        HASH_FIND(hh, a->scheds, &probe.k, sizeof(probe.k), s);
        if (s == NULL || s->dropped) {
            continue;
        }
        for (ag = 0; peers != NULL && ag < a->nagents; ag++) {
            peers[ag] |= s->sent[ag];
        }
        s->dropped = 1;
        s->refs++;
        agent_sched_unref(a, s);
    }
    for (ag = 0; peers != NULL && ag < a->nagents; ag++) {
        size_t len;
        void  *out;

        if (!peers[ag] || ag == a->self) {
            continue;
        }
        out = dps_msg_encode_sched_free(f->world_rank, f->count,
                                        msg->u.reg_free.ids, &len);
        if (out == NULL || agent_send_agent(a, ag, out, len) != DPS_OK) {
            dps_warn("cannot forward sched_free to agent %u", ag);
        }
    }
    free(peers);
    return DPS_OK;
}

/* Index a schedule: rounds, and per peer its sends and receives (CSR).
 * Rounds must not decrease along the steps. 0, or -1 (with err). */
static int sched_index(agent_sched_t *s, char *err, size_t err_len)
{
    uint32_t i, r, *fill;

    s->nrounds = s->nsteps ? (uint32_t)s->steps[s->nsteps - 1].round + 1 : 0;
    s->round_start = calloc((size_t)s->nrounds + 1, sizeof(uint32_t));
    s->send_start = calloc((size_t)s->size + 1, sizeof(uint32_t));
    s->recv_start = calloc((size_t)s->size + 1, sizeof(uint32_t));
    fill = calloc((size_t)s->size + 1, sizeof(uint32_t));
    if (!s->round_start || !s->send_start || !s->recv_start || !fill) {
        free(fill);
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    for (i = 0; i < s->nsteps; i++) {
        const dps_step_t *st = &s->steps[i];

        if (i > 0 && st->round < s->steps[i - 1].round) {
            free(fill);
            snprintf(err, err_len, "step %u: rounds decrease", i);
            return -1;
        }
        s->round_start[st->round + 1] = i + 1;
        if (st->kind == DPS_STEP_SEND) {
            s->send_start[st->peer + 1]++;
        } else if (st->kind == DPS_STEP_RECV ||
                   st->kind == DPS_STEP_RECV_REDUCE) {
            s->recv_start[st->peer + 1]++;
        }
    }
    for (r = 1; r <= s->nrounds; r++) { /* empty rounds: no steps */
        if (s->round_start[r] < s->round_start[r - 1]) {
            s->round_start[r] = s->round_start[r - 1];
        }
    }
    for (r = 0; r < s->size; r++) {
        s->send_start[r + 1] += s->send_start[r];
        s->recv_start[r + 1] += s->recv_start[r];
    }
    s->send_idx = malloc(sizeof(uint32_t) * (s->send_start[s->size] + 1));
    s->recv_idx = malloc(sizeof(uint32_t) * (s->recv_start[s->size] + 1));
    if (!s->send_idx || !s->recv_idx) {
        free(fill);
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    memset(fill, 0, sizeof(uint32_t) * ((size_t)s->size + 1));
    for (i = 0; i < s->nsteps; i++) {
        const dps_step_t *st = &s->steps[i];

        if (st->kind == DPS_STEP_SEND) {
            s->send_idx[s->send_start[st->peer] + fill[st->peer]++] = i;
        }
    }
    memset(fill, 0, sizeof(uint32_t) * ((size_t)s->size + 1));
    for (i = 0; i < s->nsteps; i++) {
        const dps_step_t *st = &s->steps[i];

        if (st->kind == DPS_STEP_RECV || st->kind == DPS_STEP_RECV_REDUCE) {
            s->recv_idx[s->recv_start[st->peer] + fill[st->peer]++] = i;
        }
    }
    free(fill);
    return 0;
}

/* The schedule of (world, id): cached, or taken from this post. NULL on a
 * malformed one or an id never sent (logged). */
agent_sched_t *agent_sched_take(agent_t *a, const dps_msg_t *msg)
{
    const dps_msg_post_t *f = &msg->u.post.fixed;
    agent_sched_t         probe, *s;
    char                  err[200];
    uint32_t              i;

    memset(&probe.k, 0, sizeof(probe.k));
    probe.k.world = f->world_rank;
    probe.k.id = f->sched_id;
    HASH_FIND(hh, a->scheds, &probe.k, sizeof(probe.k), s);
    if (s != NULL || !(f->flags & DPS_POST_SCHED)) {
        if (s == NULL) {
            dps_error("rank %u names schedule %llu, which this agent never "
                      "received",
                      f->world_rank, (unsigned long long)f->sched_id);
        } else if (s->size != f->comm_size) {
            dps_error("rank %u's schedule %llu is for %u ranks, not %u",
                      f->world_rank, (unsigned long long)f->sched_id, s->size,
                      f->comm_size);
            return NULL;
        }
        return s;
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL ||
        (s->steps = malloc(sizeof(dps_step_t) * (f->nsteps + 1))) == NULL ||
        (s->sent = calloc(a->nagents, 1)) == NULL) {
        if (s != NULL) {
            free(s->steps);
        }
        free(s);
        return NULL;
    }
    s->k = probe.k;
    s->nsteps = f->nsteps;
    s->size = f->comm_size;
    for (i = 0; i < f->nsteps; i++) {
        dps_msg_step(msg->u.post.steps, i, &s->steps[i]);
    }
    if (dps_sched_check(s->steps, s->nsteps, s->size, f->buf_len, err,
                        sizeof(err)) != DPS_OK ||
        sched_index(s, err, sizeof(err)) != 0) {
        dps_error("rank %u's schedule refused: %s", f->world_rank, err);
        agent_sched_free(s);
        return NULL;
    }
    HASH_ADD(hh, a->scheds, k, sizeof(s->k), s);
    a->sched_steps += s->nsteps;
    if (++a->nscheds > a->scheds_peak) {
        a->scheds_peak = a->nscheds;
    }
    if (a->sched_steps > a->steps_peak) {
        a->steps_peak = a->sched_steps;
    }
    return s;
}

/* Position of step i among its rank's steps with the same peer and
 * direction: the k of the k-th SEND to (or RECV from) that peer. */
uint32_t agent_step_k(const agent_sched_t *s, uint32_t i)
{
    const dps_step_t *st = &s->steps[i];
    const uint32_t   *start, *idx;
    uint32_t          k;

    if (st->kind == DPS_STEP_SEND) {
        start = s->send_start;
        idx = s->send_idx;
    } else {
        start = s->recv_start;
        idx = s->recv_idx;
    }
    for (k = 0; start[st->peer] + k < start[st->peer + 1]; k++) {
        if (idx[start[st->peer] + k] == i) {
            return k;
        }
    }
    return UINT32_MAX;
}
