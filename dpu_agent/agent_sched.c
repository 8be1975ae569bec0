/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The schedule executor: instances of collectives as schedules of steps
 * (common/dps_sched.h), whatever collective they came from.
 *
 * Each rank posts its schedule with its buffers. An agent serves its own
 * ranks' steps and learns about the other ranks it exchanges with from
 * their agents (PEER_POST: schedule and buffers; ROUND: progress;
 * SEND_DONE: their sends were read). A local rank's steps of its current
 * round start as soon as they can: a COPY or REDUCE at once, a RECV or
 * RECV_REDUCE once the peer has posted and reached the round of the
 * matching SEND (the k-th SEND of s to d pairs with the k-th RECV of d
 * from s). Each becomes a move (agent_exec.c). A round ends when every
 * step of it is done, its SENDs included (their readers say so); the
 * rank completes after its last round, once what was written into it has
 * landed.
 *
 * Ranks that do not agree (different collectives, transfer counts or
 * sizes) fail the instance on every rank (INST_FAIL): a mismatch never
 * hangs and is never dropped silently.
 */
#define _GNU_SOURCE
#include "agent.h"
#include "../common/dps_log.h"
#include "../common/dps_status.h"

#include <stdlib.h>
#include <string.h>

static int is_local(const agent_t *a, const agent_comm_t *c, uint32_t r)
{
    return a->rank_agent[c->members[r]] == a->self;
}

static uint32_t agent_of(const agent_t *a, const agent_comm_t *c, uint32_t r)
{
    return a->rank_agent[c->members[r]];
}

/* ---- communicators ----------------------------------------------------- */

static void comm_release(agent_t *a, agent_comm_t *c)
{
    if (c->freed && c->live == 0) {
        HASH_DEL(a->comms, c);
        free(c->members);
        free(c);
    }
}

/* Find a communicator, or create it from a member list (may be NULL). */
static agent_comm_t *comm_get(agent_t *a, uint64_t id, uint32_t size,
                              const uint32_t *members, int *bad)
{
    agent_comm_t *c;
    uint8_t *seen;
    uint32_t r;

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

static void sched_free(agent_sched_t *s)
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

static void sched_unref(agent_t *a, agent_sched_t *s)
{
    if (s != NULL && --s->refs == 0 && s->dropped) {
        HASH_DEL(a->scheds, s);
        sched_free(s);
    }
}

/* SCHED_FREE: a rank's schedules that it will not name again. From our
 * own rank: also to the agents we forwarded them to. */
static int handle_sched_free(agent_t *a, const dps_msg_t *msg)
{
    const dps_msg_reg_free_t *f = &msg->u.reg_free.fixed;
    uint8_t *peers = NULL;
    uint32_t i, ag;

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
        sched_unref(a, s);
    }
    for (ag = 0; peers != NULL && ag < a->nagents; ag++) {
        size_t len;
        void *out;

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
    for (r = 1; r <= s->nrounds; r++) {   /* empty rounds: no steps */
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
static agent_sched_t *sched_take(agent_t *a, const dps_msg_t *msg)
{
    const dps_msg_post_t *f = &msg->u.post.fixed;
    agent_sched_t probe, *s;
    char err[200];
    uint32_t i;

    memset(&probe.k, 0, sizeof(probe.k));
    probe.k.world = f->world_rank;
    probe.k.id = f->sched_id;
    HASH_FIND(hh, a->scheds, &probe.k, sizeof(probe.k), s);
    if (s != NULL || !(f->flags & DPS_POST_SCHED)) {
        if (s == NULL) {
            dps_error("rank %u names schedule %llu, which this agent never "
                      "received", f->world_rank,
                      (unsigned long long)f->sched_id);
        } else if (s->size != f->comm_size) {
            dps_error("rank %u's schedule %llu is for %u ranks, not %u",
                      f->world_rank, (unsigned long long)f->sched_id,
                      s->size, f->comm_size);
            return NULL;
        }
        return s;
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL || (s->steps = malloc(sizeof(dps_step_t) *
                                        (f->nsteps + 1))) == NULL ||
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
                        sizeof(err)) != 0 ||
        sched_index(s, err, sizeof(err)) != 0) {
        dps_error("rank %u's schedule refused: %s", f->world_rank, err);
        sched_free(s);
        return NULL;
    }
    HASH_ADD(hh, a->scheds, k, sizeof(s->k), s);
    return s;
}

/* Position of step i among its rank's steps with the same peer and
 * direction: the k of the k-th SEND to (or RECV from) that peer. */
static uint32_t step_k(const agent_sched_t *s, uint32_t i)
{
    const dps_step_t *st = &s->steps[i];
    const uint32_t *start, *idx;
    uint32_t k;

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

/* ---- instances --------------------------------------------------------- */

static int tomb_has(const agent_t *a, const agent_inst_key_t *key)
{
    agent_tomb_t *t;

    HASH_FIND(hh, a->tombs, key, sizeof(*key), t);
    return t != NULL;
}

static agent_inst_t *inst_new(agent_t *a, agent_comm_t *c,
                              agent_inst_key_t key, uint32_t coll)
{
    agent_inst_t *in = calloc(1, sizeof(*in));

    if (in == NULL || (in->rs = calloc(c->size, sizeof(*in->rs))) == NULL) {
        free(in);
        return NULL;
    }
    in->key = key;
    in->comm = c;
    in->coll = coll;
    in->local_left = c->nlocal;
    c->live++;
    HASH_ADD(hh, a->insts, key, sizeof(key), in);
    return in;
}

static void inst_destroy(agent_t *a, agent_inst_t *in)
{
    uint32_t r;

    if (in->failed) {
        agent_tomb_t *t;

        HASH_FIND(hh, a->tombs, &in->key, sizeof(in->key), t);
        if (t == NULL && (t = calloc(1, sizeof(*t))) != NULL) {
            t->key = in->key;
            t->error = in->error;
            HASH_ADD(hh, a->tombs, key, sizeof(t->key), t);
        }
    } else if (is_local(a, in->comm, 0)) {
        a->collectives++; /* exactly one agent counts each instance */
    }
    HASH_DEL(a->insts, in);
    for (r = 0; r < in->comm->size; r++) {
        free(in->rs[r].st);
        sched_unref(a, in->rs[r].sched);
    }
    in->comm->live--;
    comm_release(a, in->comm);   /* perhaps freed now */
    free(in->rs);
    free(in);
}

static void maybe_destroy(agent_t *a, agent_inst_t *in)
{
    if (in->local_left == 0 && in->moves_live == 0) {
        inst_destroy(a, in);
    }
}

/* Steps of a rank's current round, all not done yet. */
static void begin_round(agent_rstate_t *rs)
{
    const agent_sched_t *s = rs->sched;

    rs->left = rs->round < s->nrounds
               ? s->round_start[rs->round + 1] - s->round_start[rs->round]
               : 0;
}

/* Local rank r: complete it if it can (done, or failed), flushing what
 * UCX put into it first. */
static void try_complete(agent_t *a, agent_inst_t *in, uint32_t r)
{
    agent_rstate_t *rs = &in->rs[r];
    size_t len;
    void *msg;

    if (rs->done || !rs->posted || rs->moves_in > 0 || rs->flushing ||
        (!in->failed && rs->round < rs->sched->nrounds)) {
        return;
    }
    if (rs->needs_flush) {
        rs->needs_flush = 0;
        agent_flush_rank(a, in, r);
        return;
    }
    rs->done = 1;
    msg = dps_msg_encode_complete(rs->op_token, in->error, &len);
    agent_send_rank(a, in->comm->members[r], msg, len);
    in->local_left--;
}

void agent_flush_done(agent_t *a, agent_inst_t *in, uint32_t r, int status)
{
    if (status != DPS_OK && in->error == 0) {
        in->error = status;
    }
    try_complete(a, in, r);
    maybe_destroy(a, in);
}

/* Tell the agents whose ranks read rank r's SENDs of its new round. */
static void announce_round(agent_t *a, agent_inst_t *in, uint32_t r)
{
    agent_rstate_t *rs = &in->rs[r];
    const agent_sched_t *s = rs->sched;
    agent_comm_t *c = in->comm;
    uint8_t *told = NULL;
    uint32_t i;

    if (rs->round >= s->nrounds) {
        return;
    }
    for (i = s->round_start[rs->round]; i < s->round_start[rs->round + 1];
         i++) {
        const dps_step_t *st = &s->steps[i];
        uint32_t ag;
        size_t len;
        void *msg;

        if (st->kind != DPS_STEP_SEND || is_local(a, c, st->peer)) {
            continue;
        }
        if (told == NULL && (told = calloc(a->nagents, 1)) == NULL) {
            return;
        }
        ag = agent_of(a, c, st->peer);
        if (told[ag]) {
            continue;
        }
        told[ag] = 1;
        msg = dps_msg_encode_round(c->id, (uint32_t)in->key.seq, r,
                                   rs->round, &len);
        if (msg == NULL || agent_send_agent(a, ag, msg, len) != DPS_OK) {
            dps_error("cannot tell agent %u of rank %u's progress", ag,
                      c->members[r]);
        }
    }
    free(told);
}

static void inst_fail(agent_t *a, agent_inst_t *in, int status, int tell);

/* A step of local rank r is done. */
static void step_done(agent_inst_t *in, uint32_t r, uint32_t i)
{
    agent_rstate_t *rs = &in->rs[r];

    if (rs->st[i] != 2) {
        rs->st[i] = 2;
        rs->left--;
    }
}

/* Tell the source's agent (or ourselves) that its k-th SEND to dst was
 * read. */
static void send_read(agent_t *a, agent_inst_t *in, uint32_t src,
                      uint32_t dst, uint32_t k, uint32_t src_step)
{
    agent_comm_t *c = in->comm;
    size_t len;
    void *msg;

    if (is_local(a, c, src)) {
        if (in->rs[src].st != NULL) {
            step_done(in, src, src_step);
        }
        return;
    }
    msg = dps_msg_encode_send_done(c->id, (uint32_t)in->key.seq, src, dst,
                                   k, &len);
    if (msg == NULL ||
        agent_send_agent(a, agent_of(a, c, src), msg, len) != DPS_OK) {
        dps_error("cannot report a finished read to agent %u",
                  agent_of(a, c, src));
    }
}

static agent_move_t *move_new(agent_inst_t *in, uint32_t src, uint32_t dst,
                              uint32_t src_step, uint32_t dst_step)
{
    agent_move_t *m = calloc(1, sizeof(*m));

    if (m == NULL) {
        return NULL;
    }
    m->inst = in;
    m->src = src;
    m->dst = dst;
    m->src_step = src_step;
    m->dst_step = dst_step;
    return m;
}

/* Start step i of local rank r if it can. Returns 1 if it started. */
static int try_step(agent_t *a, agent_inst_t *in, uint32_t r, uint32_t i)
{
    agent_rstate_t *rs = &in->rs[r];
    const dps_step_t *st = &rs->sched->steps[i];
    agent_rstate_t *sr;
    const dps_step_t *ss;
    agent_move_t *m;
    uint32_t s = st->peer, k, j, n;

    switch (st->kind) {
    case DPS_STEP_SEND:
        return 0;   /* its reader's agent moves it */
    case DPS_STEP_COPY:
    case DPS_STEP_REDUCE:
        if (st->len == 0) {
            step_done(in, r, i);
            return 1;
        }
        m = move_new(in, r, r, i, i);
        if (m == NULL) {
            return 0;
        }
        m->local = 1;
        m->op = st->kind == DPS_STEP_REDUCE ? st->op : DPS_OP_NONE;
        m->dtype = st->dtype;
        m->src_addr = rs->addr[st->src_buf] + st->src_off;
        m->dst_addr = rs->addr[st->dst_buf] + st->dst_off;
        m->len = st->len;
        break;
    default:   /* RECV, RECV_REDUCE */
        sr = &in->rs[s];
        if (!sr->posted) {
            return 0;
        }
        k = step_k(rs->sched, i);
        n = sr->sched->send_start[r + 1] - sr->sched->send_start[r];
        if (k >= n) {
            dps_error("%s #%llu on communicator %#llx: rank %u receives %u "
                      "transfers from rank %u, which sends it %u: the ranks' "
                      "arguments do not match; it fails on every rank",
                      dps_coll_str(in->coll),
                      (unsigned long long)in->key.seq,
                      (unsigned long long)in->comm->id, in->comm->members[r],
                      k + 1, in->comm->members[s], n);
            inst_fail(a, in, DPS_ERR_MISMATCH, 1);
            return 0;
        }
        j = sr->sched->send_idx[sr->sched->send_start[r] + k];
        ss = &sr->sched->steps[j];
        if (ss->len != st->len) {
            dps_error("%s #%llu on communicator %#llx: rank %u sends %llu "
                      "bytes where rank %u receives %llu: the ranks' "
                      "arguments do not match; it fails on every rank",
                      dps_coll_str(in->coll),
                      (unsigned long long)in->key.seq,
                      (unsigned long long)in->comm->id, in->comm->members[s],
                      (unsigned long long)ss->len, in->comm->members[r],
                      (unsigned long long)st->len);
            inst_fail(a, in, DPS_ERR_MISMATCH, 1);
            return 0;
        }
        if (sr->round < ss->round) {
            return 0;   /* the source is not there yet */
        }
        if (st->len == 0) {
            step_done(in, r, i);
            send_read(a, in, s, r, k, j);
            return 1;
        }
        m = move_new(in, s, r, j, i);
        if (m == NULL) {
            return 0;
        }
        m->k = k;
        m->op = st->kind == DPS_STEP_RECV_REDUCE ? st->op : DPS_OP_NONE;
        m->dtype = st->dtype;
        m->src_addr = sr->addr[ss->src_buf] + ss->src_off;
        m->dst_addr = rs->addr[st->dst_buf] + st->dst_off;
        m->len = st->len;
        break;
    }
    rs->st[i] = 1;
    rs->moves_in++;
    in->moves_live++;
    agent_move_queue(a, m);
    return 1;
}

/* Drive local rank r as far as it goes now. 1 if anything changed. */
static int advance(agent_t *a, agent_inst_t *in, uint32_t r)
{
    agent_rstate_t *rs = &in->rs[r];
    const agent_sched_t *s = rs->sched;
    int changed = 0;
    uint32_t i;

    if (!rs->posted || rs->done || in->failed) {
        return 0;
    }
    while (rs->round < s->nrounds) {
        for (i = s->round_start[rs->round];
             i < s->round_start[rs->round + 1] && !in->failed; i++) {
            if (rs->st[i] == 0) {
                changed |= try_step(a, in, r, i);
            }
        }
        if (in->failed || rs->left > 0) {
            break;
        }
        rs->round++;
        begin_round(rs);
        announce_round(a, in, r);
        changed = 1;
    }
    try_complete(a, in, r);
    return changed;
}

/* Drive every local rank of in until nothing moves; then perhaps free. */
static void progress(agent_t *a, agent_inst_t *in)
{
    int changed = 1;

    while (changed && !in->failed) {
        changed = 0;
        for (uint32_t r = 0; r < in->comm->size; r++) {
            if (is_local(a, in->comm, r)) {
                changed |= advance(a, in, r);
            }
        }
    }
    maybe_destroy(a, in);
}

/*
 * The instance fails on every rank (mismatched or erroneous arguments):
 * no move starts any more; a rank of ours completes, with the error, once
 * the moves writing into it are done (one handed to an engine or a
 * staging slot finishes; one still queued is dropped); nobody waits for
 * reads of its data any more (a read of memory the application got back
 * harms nothing, and the readers' ranks fail too). tell: let every other
 * agent of the communicator know.
 */
static void inst_fail(agent_t *a, agent_inst_t *in, int status, int tell)
{
    agent_comm_t *c = in->comm;
    uint32_t r;

    if (in->failed) {
        return;
    }
    in->failed = 1;
    in->error = status;
    agent_moves_drop(a, in);
    if (tell) {
        uint8_t *told = calloc(a->nagents, 1);

        for (r = 0; told != NULL && r < c->size; r++) {
            uint32_t ag = agent_of(a, c, r);
            size_t len;
            void *msg;

            if (ag == a->self || told[ag]) {
                continue;
            }
            told[ag] = 1;
            msg = dps_msg_encode_inst_fail(c->id, (uint32_t)in->key.seq,
                                           status, &len);
            if (msg == NULL || agent_send_agent(a, ag, msg, len) != DPS_OK) {
                dps_error("cannot tell agent %u that a collective fails",
                          ag);
            }
        }
        free(told);
    }
    for (r = 0; r < c->size; r++) {
        if (is_local(a, c, r)) {
            try_complete(a, in, r);
        }
    }
}

/* Has local rank r finished every step of its round (or must it
 * complete)? */
static int round_over(const agent_t *a, const agent_inst_t *in, uint32_t r)
{
    const agent_rstate_t *rs = &in->rs[r];

    return is_local(a, in->comm, r) && rs->st != NULL && rs->left == 0;
}

void agent_move_dropped(agent_t *a, agent_move_t *m)
{
    (void)a;
    m->inst->moves_live--;
    m->inst->rs[m->dst].moves_in--;
    free(m);
}

void agent_move_done(agent_t *a, agent_move_t *m, int status)
{
    agent_inst_t *in = m->inst;
    agent_rstate_t *rs = &in->rs[m->dst];
    uint32_t src = m->src, dst = m->dst;

    in->moves_live--;
    rs->moves_in--;
    if (status != DPS_OK && in->error == 0) {
        in->error = status;
    }
    if (!in->failed) {
        step_done(in, m->dst, m->dst_step);
        if (!m->local) {
            send_read(a, in, m->src, m->dst, m->k, m->src_step);
        }
    }
    free(m);
    if (in->failed) {
        try_complete(a, in, rs - in->rs);
        maybe_destroy(a, in);
        return;
    }
    /* Most moves end no round: then nothing else can start. */
    if (round_over(a, in, dst) || (src != dst && round_over(a, in, src))) {
        progress(a, in);
    }
}

/* Ranks of ours receiving from x while x sends them nothing, or the other
 * way round, would wait forever: a local rank d and a posted rank s must
 * agree on how many transfers go from s to d. */
static int pairs_agree(agent_t *a, agent_inst_t *in, uint32_t x)
{
    agent_comm_t *c = in->comm;
    uint32_t d, s;

    for (uint32_t p = 0; p < c->size; p++) {
        for (int dir = 0; dir < 2; dir++) {
            uint32_t ns, nr;

            s = dir ? p : x;
            d = dir ? x : p;
            if (!is_local(a, c, d) || !in->rs[s].posted ||
                !in->rs[d].posted || (dir && p == x)) {
                continue;
            }
            ns = in->rs[s].sched->send_start[d + 1] -
                 in->rs[s].sched->send_start[d];
            nr = in->rs[d].sched->recv_start[s + 1] -
                 in->rs[d].sched->recv_start[s];
            if (ns != nr) {
                dps_error("%s #%llu on communicator %#llx: rank %u sends "
                          "%u transfers to rank %u, which receives %u: the "
                          "ranks' arguments do not match; it fails on "
                          "every rank", dps_coll_str(in->coll),
                          (unsigned long long)in->key.seq,
                          (unsigned long long)c->id, c->members[s], ns,
                          c->members[d], nr);
                inst_fail(a, in, DPS_ERR_MISMATCH, 1);
                return 0;
            }
        }
    }
    return 1;
}

/* The steps of s another agent ag needs: the SENDs to its ranks, in
 * order (the k-th SEND to a rank stays the k-th). Their number. */
static uint32_t sends_to(const agent_t *a, const agent_comm_t *c,
                         const agent_sched_t *s, uint32_t ag,
                         dps_step_t *out)
{
    uint32_t i, n = 0;

    for (i = 0; i < s->nsteps; i++) {
        if (s->steps[i].kind == DPS_STEP_SEND &&
            agent_of(a, c, s->steps[i].peer) == ag) {
            out[n++] = s->steps[i];
        }
    }
    return n;
}

/* Tell the agents of every rank x's schedule names about x's post: they
 * need its schedule (the first time), its buffers and their keys (the
 * first time each). */
static void forward_post(agent_t *a, agent_inst_t *in, const dps_msg_t *msg,
                         uint32_t x)
{
    agent_rstate_t *rs = &in->rs[x];
    agent_sched_t *s = rs->sched;
    agent_comm_t *c = in->comm;
    dps_msg_post_t f = msg->u.post.fixed;
    uint8_t *want = calloc(a->nagents, 1);
    dps_step_t *fwd = malloc(sizeof(dps_step_t) * (s->nsteps + 1));
    uint32_t i, ag;

    if (want == NULL || fwd == NULL) {
        free(want);
        free(fwd);
        dps_error("out of memory forwarding a post");
        return;
    }
    for (i = 0; i < s->nsteps; i++) {
        const dps_step_t *st = &s->steps[i];

        if (st->kind == DPS_STEP_SEND || st->kind == DPS_STEP_RECV ||
            st->kind == DPS_STEP_RECV_REDUCE) {
            want[agent_of(a, c, st->peer)] = 1;
        }
    }
    want[a->self] = 0;
    f.nmembers = c->size;
    for (ag = 0; ag < a->nagents; ag++) {
        const void *keys[DPS_NBUF] = {NULL, NULL, NULL};
        size_t len;
        void *out;
        int b;

        if (!want[ag]) {
            continue;
        }
        for (b = 0; b < DPS_NBUF; b++) {
            agent_key_t *k = rs->key[b];

            f.rkey_len[b] = (k != NULL && !k->sent[ag]) ? k->len : 0;
            keys[b] = f.rkey_len[b] ? k->packed : NULL;
        }
        f.nsteps = 0;
        f.flags = 0;
        if (!s->sent[ag]) {
            f.nsteps = sends_to(a, c, s, ag, fwd);
            f.flags = DPS_POST_SCHED;
        }
        out = dps_msg_encode_post(DPS_MSG_PEER_POST, &f, keys,
                                  f.nsteps ? fwd : NULL, c->members, &len);
        if (out == NULL || agent_send_agent(a, ag, out, len) != DPS_OK) {
            dps_error("cannot forward a post to agent %u", ag);
            continue;
        }
        s->sent[ag] = 1;
        for (b = 0; b < DPS_NBUF; b++) {
            if (f.rkey_len[b]) {
                rs->key[b]->sent[ag] = 1;
            }
        }
    }
    free(want);
    free(fwd);
}

/* A late post into a failed instance, or the first of one another agent
 * failed: a local rank completes with the error at once. */
static int post_failed(agent_t *a, agent_inst_t *in, uint32_t x, int local)
{
    if (local) {
        try_complete(a, in, x);
        maybe_destroy(a, in);
    }
    return DPS_OK;
}

static int handle_post(agent_t *a, const dps_msg_t *msg)
{
    const dps_msg_post_t *f = &msg->u.post.fixed;
    agent_inst_key_t key = {f->comm_id, f->seq};
    agent_key_t *keys[DPS_NBUF] = {NULL, NULL, NULL};
    agent_sched_t *s = NULL;
    agent_rstate_t *rs;
    agent_inst_t *in;
    agent_comm_t *c;
    uint32_t x = f->comm_rank;
    int bad, local, b;

    if (f->world_rank >= a->nranks) {
        dps_error("post from unknown rank %u", f->world_rank);
        return DPS_ERR_PROTO;
    }
    /* Keys and schedule first: a post that must wait still delivered
     * them, which later posts no longer carry. A post carrying its rank's
     * error has neither. */
    for (b = 0; f->error == 0 && b < DPS_NBUF; b++) {
        if (f->buf_reg[b] == 0) {
            continue;
        }
        keys[b] = agent_key_take(a, f->world_rank, f->buf_reg[b],
                                 msg->u.post.rkey[b], f->rkey_len[b]);
        if (keys[b] == NULL) {
            return DPS_ERR_PROTO;
        }
    }
    if (f->error == 0 && (s = sched_take(a, msg)) == NULL) {
        return DPS_ERR_PROTO;
    }
    c = comm_get(a, f->comm_id, f->comm_size, msg->u.post.members, &bad);
    if (bad) {
        dps_error("post for communicator %#llx with inconsistent members",
                  (unsigned long long)f->comm_id);
        return DPS_ERR_PROTO;
    }
    if (c == NULL) {
        return DPS_ERR_AGAIN; /* members not known yet */
    }
    if (c->members[x] != f->world_rank) {
        dps_error("rank %u claims to be rank %u of communicator %#llx",
                  f->world_rank, x, (unsigned long long)f->comm_id);
        return DPS_ERR_PROTO;
    }
    local = is_local(a, c, x);
    if ((msg->type == DPS_MSG_POST) != local) {
        dps_error("%s for rank %u which is %sserved here",
                  dps_msg_type_str(msg->type), f->world_rank,
                  local ? "" : "not ");
        return DPS_ERR_PROTO;
    }
    HASH_FIND(hh, a->insts, &key, sizeof(key), in);
    if (in == NULL) {
        agent_tomb_t *t;

        HASH_FIND(hh, a->tombs, &key, sizeof(key), t);
        in = inst_new(a, c, key, f->coll);
        if (in == NULL) {
            return DPS_ERR_NOMEM;
        }
        in->first_world = f->world_rank;
        if (t != NULL) {
            in->failed = 1;
            in->error = t->error;
        }
    }
    rs = &in->rs[x];
    if (rs->posted) {
        dps_error("rank %u posted instance %u of communicator %#llx twice",
                  f->world_rank, f->seq, (unsigned long long)f->comm_id);
        return DPS_ERR_PROTO;
    }
    rs->posted = 1;
    rs->sched = s;
    if (s != NULL) {
        s->refs++;
    }
    rs->op_token = f->op_token;
    for (b = 0; b < DPS_NBUF; b++) {
        rs->addr[b] = f->buf_addr[b];
        rs->key[b] = keys[b];
    }
    if (local && s != NULL) {
        rs->st = calloc(s->nsteps + 1, 1);
        if (rs->st == NULL) {
            return DPS_ERR_NOMEM;
        }
        begin_round(rs);
    }
    if (f->error != 0 && !in->failed) {
        dps_error("%s #%u on communicator %#llx: rank %u's own arguments "
                  "are erroneous (%s); it fails on every rank",
                  dps_coll_str(f->coll), f->seq,
                  (unsigned long long)f->comm_id, f->world_rank,
                  dps_status_str(f->error));
        inst_fail(a, in, f->error, 1);
    } else if (!in->failed && f->coll != in->coll) {
        dps_error("%s #%u on communicator %#llx: rank %u posted it where "
                  "rank %u posted %s: the ranks' calls do not match; it "
                  "fails on every rank", dps_coll_str(f->coll), f->seq,
                  (unsigned long long)f->comm_id, f->world_rank,
                  in->first_world, dps_coll_str(in->coll));
        inst_fail(a, in, DPS_ERR_MISMATCH, 1);
    }
    if (in->failed) {
        return post_failed(a, in, x, local);
    }
    if (local) {
        forward_post(a, in, msg, x);
    }
    if (pairs_agree(a, in, x)) {
        progress(a, in);
    }
    return DPS_OK;
}

static agent_inst_t *inst_of(agent_t *a, uint64_t comm_id, uint32_t seq)
{
    agent_inst_key_t key = {comm_id, seq};
    agent_inst_t *in;

    HASH_FIND(hh, a->insts, &key, sizeof(key), in);
    return in;
}

static int handle_send_done(agent_t *a, const dps_msg_send_done_t *m)
{
    agent_inst_key_t key = {m->comm_id, m->seq};
    agent_inst_t *in = inst_of(a, m->comm_id, m->seq);
    agent_rstate_t *rs;
    const agent_sched_t *s;

    if ((in != NULL && in->failed) || (in == NULL && tomb_has(a, &key))) {
        return DPS_OK;   /* late news of a failed instance */
    }
    if (in == NULL || m->src >= in->comm->size || m->dst >= in->comm->size ||
        !is_local(a, in->comm, m->src) || !(rs = &in->rs[m->src])->posted ||
        (s = rs->sched) == NULL ||
        m->k >= s->send_start[m->dst + 1] - s->send_start[m->dst]) {
        dps_error("unexpected send_done (%u -> %u, #%u) for instance %u of "
                  "communicator %#llx", m->src, m->dst, m->k, m->seq,
                  (unsigned long long)m->comm_id);
        return DPS_ERR_PROTO;
    }
    step_done(in, m->src, s->send_idx[s->send_start[m->dst] + m->k]);
    if (rs->left == 0) {
        progress(a, in);
    }
    return DPS_OK;
}

static int handle_round(agent_t *a, const dps_msg_round_t *m)
{
    agent_inst_key_t key = {m->comm_id, m->seq};
    agent_inst_t *in = inst_of(a, m->comm_id, m->seq);

    if (in == NULL && tomb_has(a, &key)) {
        return DPS_OK;
    }
    if (in == NULL) {
        return DPS_ERR_AGAIN;   /* overtook the post it follows */
    }
    if (m->rank >= in->comm->size || is_local(a, in->comm, m->rank)) {
        dps_error("unexpected round message for rank %u", m->rank);
        return DPS_ERR_PROTO;
    }
    if (!in->rs[m->rank].posted) {
        return DPS_ERR_AGAIN;
    }
    if (m->round > in->rs[m->rank].round) {
        in->rs[m->rank].round = m->round;
    }
    if (!in->failed) {
        progress(a, in);
    }
    return DPS_OK;
}

/* INST_FAIL from another agent: fail the instance here too, creating it
 * failed if none of our ranks has posted it yet. */
static int handle_inst_fail(agent_t *a, const dps_msg_inst_fail_t *m)
{
    agent_inst_key_t key = {m->comm_id, m->seq};
    agent_inst_t *in = inst_of(a, m->comm_id, m->seq);
    agent_comm_t *c;

    if (in != NULL) {
        inst_fail(a, in, m->status, 0);
        maybe_destroy(a, in);
        return DPS_OK;
    }
    if (tomb_has(a, &key)) {
        return DPS_OK;
    }
    HASH_FIND(hh, a->comms, &m->comm_id, sizeof(m->comm_id), c);
    if (c == NULL) {
        return DPS_ERR_AGAIN;   /* its members come with the first post */
    }
    in = inst_new(a, c, key, 0);
    if (in == NULL) {
        return DPS_ERR_NOMEM;
    }
    in->failed = 1;
    in->error = m->status;
    return DPS_OK;
}

static int handle_comm_free(agent_t *a, const dps_msg_comm_free_t *cf)
{
    agent_comm_t *c;

    HASH_FIND(hh, a->comms, &cf->comm_id, sizeof(cf->comm_id), c);
    if (c == NULL || c->refs == 0) {
        dps_debug("free of unknown communicator %#llx ignored",
                  (unsigned long long)cf->comm_id);
        return DPS_OK;
    }
    if (--c->refs == 0) {
        c->freed = 1;
        comm_release(a, c);
    }
    return DPS_OK;
}

int agent_handle_coll(agent_t *a, const dps_msg_t *msg)
{
    switch (msg->type) {
    case DPS_MSG_POST:
    case DPS_MSG_PEER_POST:
        return handle_post(a, msg);
    case DPS_MSG_SEND_DONE:
        return handle_send_done(a, &msg->u.send_done);
    case DPS_MSG_ROUND:
        return handle_round(a, &msg->u.round);
    case DPS_MSG_INST_FAIL:
        return handle_inst_fail(a, &msg->u.inst_fail);
    case DPS_MSG_COMM_FREE:
        return handle_comm_free(a, &msg->u.comm_free);
    case DPS_MSG_REG_FREE:
        return agent_handle_reg_free(a, msg);
    case DPS_MSG_SCHED_FREE:
        return handle_sched_free(a, msg);
    default:
        return DPS_ERR_PROTO;
    }
}

void agent_dump(agent_t *a, FILE *out)
{
    agent_inst_t *in, *tmp;
    agent_move_t *m;
    unsigned queued = 0;

    for (m = a->q_head; m != NULL; m = m->next) {
        queued++;
    }
    fprintf(out, "dpushim[agent %u]: %u instances, %u moves queued, %u "
            "slots busy\n", a->self, HASH_COUNT(a->insts), queued,
            a->inflight);
    HASH_ITER(hh, a->insts, in, tmp) {
        fprintf(out, "  %s #%llu on %#llx: %u ranks, %u local left, %u "
                "moves live%s\n", dps_coll_str(in->coll),
                (unsigned long long)in->key.seq,
                (unsigned long long)in->comm->id, in->comm->size,
                in->local_left, in->moves_live, in->failed ? ", failed" : "");
        for (uint32_t r = 0; r < in->comm->size; r++) {
            agent_rstate_t *rs = &in->rs[r];

            fprintf(out, "    rank %u (world %u)%s: %s round %u", r,
                    in->comm->members[r], is_local(a, in->comm, r)
                    ? " here" : "", rs->posted ? "posted," : "not posted,",
                    rs->round);
            if (rs->st != NULL && rs->sched != NULL) {
                fprintf(out, " of %u, %u left, done %d:", rs->sched->nrounds,
                        rs->left, rs->done);
                for (uint32_t i = 0; i < rs->sched->nsteps; i++) {
                    const dps_step_t *st = &rs->sched->steps[i];

                    fprintf(out, " %s(r%u,p%u,%llu)=%u",
                            dps_step_kind_str(st->kind), st->round,
                            st->peer, (unsigned long long)st->len,
                            rs->st[i]);
                }
            }
            fprintf(out, "\n");
        }
    }
    fflush(out);
}

void agent_sched_fini(agent_t *a)
{
    agent_inst_t *in, *itmp;
    agent_comm_t *c, *ctmp;
    agent_sched_t *s, *stmp;
    agent_tomb_t *t, *ttmp;

    HASH_ITER(hh, a->insts, in, itmp) {
        in->comm->freed = 1;
        inst_destroy(a, in);
    }
    HASH_ITER(hh, a->comms, c, ctmp) {
        HASH_DEL(a->comms, c);
        free(c->members);
        free(c);
    }
    HASH_ITER(hh, a->tombs, t, ttmp) {
        HASH_DEL(a->tombs, t);
        free(t);
    }
    HASH_ITER(hh, a->scheds, s, stmp) {
        HASH_DEL(a->scheds, s);
        sched_free(s);
    }
    agent_keys_fini(a);
}
