/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Instances of collectives, whatever collective they came from: each
 * local rank's steps of its current round start as soon as they can, and
 * become moves (move/agent_move.h); rounds end, ranks complete, failures end
 * every rank's part. See agent_sched.h.
 */
#define _GNU_SOURCE
#include "dpu_agent/sched/agent_sched.h"
#include "dpu_agent/core/agent_chan.h"
#include "dpu_agent/move/agent_move.h"
#include "common/dps_log.h"
#include "common/dps_status.h"

#include <stdlib.h>
#include <string.h>

/* ---- instances --------------------------------------------------------- */

int agent_tomb_has(const agent_t *a, const agent_inst_key_t *key)
{
    agent_tomb_t *t;

    HASH_FIND(hh, a->tombs, key, sizeof(*key), t);
    return t != NULL;
}

agent_inst_t *agent_inst_new(agent_t *a, agent_comm_t *c, agent_inst_key_t key,
                             uint32_t coll)
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

void agent_posts_forget(agent_t *a, agent_inst_t *in)
{
    for (uint32_t r = 0; r < in->comm->size; r++) {
        free(in->rs[r].held);
        in->rs[r].held = NULL;
    }
    for (agent_inst_t **p = &a->held; *p != NULL; p = &(*p)->held_next) {
        if (*p == in) {
            *p = in->held_next;
            break;
        }
    }
}

void agent_inst_destroy(agent_t *a, agent_inst_t *in)
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
    agent_posts_forget(a, in);
    /* Pushed bytes that came for it and were never wanted (it failed). */
    for (agent_move_t *m = agent_push_drop(a, in), *next; m != NULL;
         m = next) {
        next = m->next;
        free(m);
    }
    for (r = 0; r < in->comm->size; r++) {
        free(in->rs[r].st);
        agent_sched_unref(a, in->rs[r].sched);
    }
    in->comm->live--;
    agent_comm_release(a, in->comm); /* perhaps freed now */
    free(in->rs);
    free(in);
}

void agent_inst_maybe_destroy(agent_t *a, agent_inst_t *in)
{
    if (in->local_left == 0 && in->moves_live == 0) {
        agent_inst_destroy(a, in);
    }
}

/* Steps of a rank's current round, all not done yet. */
void agent_begin_round(agent_rstate_t *rs)
{
    const agent_sched_t *s = rs->sched;

    rs->left = rs->round < s->nrounds
                   ? s->round_start[rs->round + 1] - s->round_start[rs->round]
                   : 0;
}

/* Local rank r: complete it if it can (done, or failed). No move
 * writing into it is under way: what they wrote is visible there
 * (move_done comes after the flush of UCX puts). */
void agent_try_complete(agent_t *a, agent_inst_t *in, uint32_t r)
{
    agent_rstate_t *rs = &in->rs[r];
    size_t          len;
    void           *msg;

    if (rs->done || !rs->posted || rs->moves_in > 0 ||
        (!in->failed && rs->round < rs->sched->nrounds)) {
        return;
    }
    rs->done = 1;
    msg = dps_msg_encode_complete(rs->op_token, in->error, &len);
    agent_send_rank(a, in->comm->members[r], msg, len);
    in->local_left--;
}

/* Tell the agents whose ranks read rank r's SENDs of its new round. */
static void announce_round(agent_t *a, agent_inst_t *in, uint32_t r)
{
    agent_rstate_t      *rs = &in->rs[r];
    const agent_sched_t *s = rs->sched;
    agent_comm_t        *c = in->comm;
    uint8_t             *told = NULL;
    uint32_t             i;

    if (rs->round >= s->nrounds) {
        return;
    }
    for (i = s->round_start[rs->round]; i < s->round_start[rs->round + 1];
         i++) {
        const dps_step_t *st = &s->steps[i];
        uint32_t          ag;
        size_t            len;
        void             *msg;

        if (st->kind != DPS_STEP_SEND || is_local(a, c, st->peer) ||
            agent_pushed(a, c->members[r], c->members[st->peer])) {
            continue; /* pushed: we move it ourselves */
        }
        if (told == NULL && (told = calloc(a->nagents, 1)) == NULL) {
            return;
        }
        ag = agent_of(a, c, st->peer);
        if (told[ag]) {
            continue;
        }
        told[ag] = 1;
        msg = dps_msg_encode_round(c->id, (uint32_t)in->key.seq, r, rs->round,
                                   &len);
        if (msg == NULL || agent_send_agent(a, ag, msg, len) != DPS_OK) {
            dps_error("cannot tell agent %u of rank %u's progress", ag,
                      c->members[r]);
        }
    }
    free(told);
}

/* A step of local rank r is done. */
void agent_step_done(agent_inst_t *in, uint32_t r, uint32_t i)
{
    agent_rstate_t *rs = &in->rs[r];

    if (rs->st[i] != 2) {
        rs->st[i] = 2;
        rs->left--;
    }
}

/* Tell the source's agent (or ourselves) that its k-th SEND to dst was
 * read. */
static void send_read(agent_t *a, agent_inst_t *in, uint32_t src, uint32_t dst,
                      uint32_t k, uint32_t src_step)
{
    agent_comm_t *c = in->comm;
    size_t        len;
    void         *msg;

    if (is_local(a, c, src)) {
        if (in->rs[src].st != NULL) {
            agent_step_done(in, src, src_step);
        }
        return;
    }
    msg = dps_msg_encode_send_done(c->id, (uint32_t)in->key.seq, src, dst, k,
                                   &len);
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

/* Where a move reads: from rank x's region buf at off (its address, or,
 * for unpacked send data, the packed offset and the segment map). */
static void move_source(agent_move_t *m, const agent_rstate_t *x, unsigned buf,
                        uint64_t off)
{
    m->src_addr = x->addr[buf] + off;
    if (buf == DPS_BUF_SEND && x->send_map != 0) {
        m->src_addr = off;
        m->src_map = x->send_map;
        m->src_nmap = x->send_nmap;
    }
}

/* The SEND step of rank s that RECV step i of rank r pairs with (*j);
 * 0 when the ranks disagree (the instance then fails). */
static int recv_pair(agent_t *a, agent_inst_t *in, uint32_t r, uint32_t i,
                     uint32_t *k, uint32_t *j)
{
    const agent_rstate_t *rs = &in->rs[r];
    const dps_step_t     *st = &rs->sched->steps[i];
    uint32_t              s = st->peer;
    const agent_sched_t  *ssc = in->rs[s].sched;
    uint32_t              n = ssc->send_start[r + 1] - ssc->send_start[r];

    *k = agent_step_k(rs->sched, i);
    if (*k >= n) {
        dps_error("%s #%llu on communicator %#llx: rank %u receives %u "
                  "transfers from rank %u, which sends it %u: the ranks' "
                  "arguments do not match; it fails on every rank",
                  dps_coll_str(in->coll), (unsigned long long)in->key.seq,
                  (unsigned long long)in->comm->id, in->comm->members[r],
                  *k + 1, in->comm->members[s], n);
        agent_inst_fail(a, in, DPS_ERR_MISMATCH, 1);
        return 0;
    }
    *j = ssc->send_idx[ssc->send_start[r] + *k];
    if (ssc->steps[*j].len != st->len) {
        dps_error("%s #%llu on communicator %#llx: rank %u sends %llu "
                  "bytes where rank %u receives %llu: the ranks' arguments "
                  "do not match; it fails on every rank",
                  dps_coll_str(in->coll), (unsigned long long)in->key.seq,
                  (unsigned long long)in->comm->id, in->comm->members[s],
                  (unsigned long long)ssc->steps[*j].len, in->comm->members[r],
                  (unsigned long long)st->len);
        agent_inst_fail(a, in, DPS_ERR_MISMATCH, 1);
        return 0;
    }
    return 1;
}

/* SEND step i of local rank r, whose reader d is on another node: once d
 * has posted (its post is its agent's grant of room), or before within
 * the room d's agent grants us ahead (credit), a move we push. Returns 1
 * if it started. */
static int try_push(agent_t *a, agent_inst_t *in, uint32_t r, uint32_t i)
{
    agent_rstate_t   *rs = &in->rs[r];
    const dps_step_t *st = &rs->sched->steps[i];
    agent_move_t     *m;
    int               posted, room;

    if (st->len == 0) {
        agent_step_done(in, r, i); /* nothing to send, nobody reads */
        return 1;
    }
    if (in->held_since != 0) {
        return 0; /* this node's posts are held: the bytes go with them,
                   * in one message */
    }
    /* Every pushed byte takes room at the receiver's agent (its window,
     * given back as it writes them): what it holds unasked stays
     * bounded. A transfer that finds no room is fetched by that agent
     * instead, once its rank's receive has begun (never waits: no
     * collective holds another's room); before the receiver has posted
     * it waits for the post. */
    posted = in->rs[st->peer].posted;
    room = agent_push_room(a, in->comm->members[st->peer], st->len);
    if (!posted && !room) {
        return 0;
    }
    if ((m = move_new(in, r, st->peer, i, 0)) == NULL) {
        if (room) {
            agent_push_unroom(a, in->comm->members[st->peer], st->len);
        }
        return 0;
    }
    m->early = (uint8_t)!posted;
    m->pull = (uint8_t)!room;
    m->k = agent_step_k(rs->sched, i);
    m->push = AGENT_PUSH_OUT;
    m->len = st->len;
    move_source(m, rs, st->src_buf, st->src_off);
    rs->st[i] = 1;
    in->moves_live++;
    agent_push_out(a, m);
    return 1;
}

/* Start step i of local rank r if it can. Returns 1 if it started. */
static int try_step(agent_t *a, agent_inst_t *in, uint32_t r, uint32_t i)
{
    agent_rstate_t   *rs = &in->rs[r], *sr;
    const dps_step_t *st = &rs->sched->steps[i], *ss;
    agent_move_t     *m;
    uint32_t          s = st->peer, k, j;
    int               pushed = 0;

    if (st->kind == DPS_STEP_SEND) {
        if (agent_pushed(a, in->comm->members[r], in->comm->members[s])) {
            return try_push(a, in, r, i);
        }
        return 0; /* its reader's agent moves it */
    }
    if (st->kind == DPS_STEP_COPY || st->kind == DPS_STEP_REDUCE) {
        if (st->len == 0) {
            agent_step_done(in, r, i);
            return 1;
        }
        if ((m = move_new(in, r, r, i, i)) == NULL) {
            return 0;
        }
        m->local = 1;
        m->op = st->kind == DPS_STEP_REDUCE ? st->op : DPS_OP_NONE;
        move_source(m, rs, st->src_buf, st->src_off);
    } else { /* RECV, RECV_REDUCE */
        sr = &in->rs[s];
        if (!sr->posted || !recv_pair(a, in, r, i, &k, &j)) {
            return 0;
        }
        ss = &sr->sched->steps[j];
        pushed = agent_pushed(a, in->comm->members[s], in->comm->members[r]);
        if (!pushed && sr->round < ss->round) {
            return 0; /* the source is not there yet (pushed: its agent
                       * sends once it is) */
        }
        if (st->len == 0) {
            agent_step_done(in, r, i);
            if (!pushed) {
                send_read(a, in, s, r, k, j);
            }
            return 1;
        }
        if ((m = move_new(in, s, r, j, i)) == NULL) {
            return 0;
        }
        m->k = k;
        m->op = st->kind == DPS_STEP_RECV_REDUCE ? st->op : DPS_OP_NONE;
        move_source(m, sr, ss->src_buf, ss->src_off);
    }
    m->dtype = st->dtype;
    m->dst_addr = rs->addr[st->dst_buf] + st->dst_off;
    m->len = st->len;
    rs->st[i] = 1;
    rs->moves_in++;
    in->moves_live++;
    if (!pushed) {
        agent_move_queue(a, m);
    } else if (agent_push_expect(a, m) != DPS_OK) {
        dps_error("out of memory waiting for pushed bytes");
        a->up.move_done(a, m, DPS_ERR_NOMEM);
    }
    return 1;
}

/* Drive local rank r as far as it goes now. 1 if anything changed. */
static int advance(agent_t *a, agent_inst_t *in, uint32_t r)
{
    agent_rstate_t      *rs = &in->rs[r];
    const agent_sched_t *s = rs->sched;
    int                  changed = 0;
    uint32_t             i;

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
        agent_begin_round(rs);
        announce_round(a, in, r);
        changed = 1;
    }
    agent_try_complete(a, in, r);
    return changed;
}

/* Drive every local rank of in until nothing moves; then perhaps free. */
void agent_inst_progress(agent_t *a, agent_inst_t *in)
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
    agent_inst_maybe_destroy(a, in);
}

/* Drop the queued, not yet started moves of in (and those waiting for
 * pushed bytes, or to be pushed): nothing will write through them. */
static void moves_drop(agent_t *a, agent_inst_t *in)
{
    agent_move_t *p = agent_push_drop(a, in); /* first: it unqueues its own */
    agent_move_t *m = agent_moves_unqueue(a, in), *next;

    for (; m != NULL; m = next) {
        next = m->next;
        in->moves_live--;
        in->rs[m->dst].moves_in--;
        free(m);
    }
    for (; p != NULL; p = next) {
        next = p->next;
        in->moves_live--;
        if (p->push != AGENT_PUSH_OUT) {
            in->rs[p->dst].moves_in--;
        }
        free(p);
    }
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
void agent_inst_fail(agent_t *a, agent_inst_t *in, int status, int tell)
{
    agent_comm_t *c = in->comm;
    uint32_t      r;

    if (in->failed) {
        return;
    }
    in->failed = 1;
    in->error = status;
    moves_drop(a, in);
    if (tell) {
        uint8_t *told = calloc(a->nagents, 1);

        for (r = 0; told != NULL && r < c->size; r++) {
            uint32_t ag = agent_of(a, c, r);
            size_t   len;
            void    *msg;

            if (ag == a->self || told[ag]) {
                continue;
            }
            told[ag] = 1;
            msg = dps_msg_encode_inst_fail(c->id, (uint32_t)in->key.seq,
                                           status, &len);
            if (msg == NULL || agent_send_agent(a, ag, msg, len) != DPS_OK) {
                dps_error("cannot tell agent %u that a collective fails", ag);
            }
        }
        free(told);
    }
    for (r = 0; r < c->size; r++) {
        if (is_local(a, c, r)) {
            agent_try_complete(a, in, r);
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

/* a->up.move_done: move m is finished, its bytes visible in the
 * destination (status: DPS_OK or an error): steps advance, ranks
 * complete. Frees m. */
/* A pushed-out move ended: its SEND step is done once read (and if it
 * was left to the reader's agent to fetch, once that says so); a read
 * that failed fails the instance everywhere, as the reader would wait. */
static void push_done(agent_t *a, agent_move_t *m, int status)
{
    agent_inst_t *in = m->inst;
    uint32_t      src = m->src, step = m->src_step;
    int           read = m->read == m->len;

    in->moves_live--;
    free(m);
    if (status != DPS_OK) {
        agent_inst_fail(a, in, status, 1);
    } else if (read && !in->failed && in->rs[src].st != NULL) {
        agent_step_done(in, src, step);
        if (round_over(a, in, src)) {
            agent_inst_progress(a, in);
            return;
        }
    }
    agent_inst_maybe_destroy(a, in);
}

static void move_done(agent_t *a, agent_move_t *m, int status)
{
    agent_inst_t   *in = m->inst;
    agent_rstate_t *rs = &in->rs[m->dst];
    uint32_t        src = m->src, dst = m->dst;

    if (m->push == AGENT_PUSH_OUT) {
        push_done(a, m, status);
        return;
    }
    in->moves_live--;
    rs->moves_in--;
    if (status != DPS_OK && in->error == 0) {
        in->error = status;
    }
    if (!in->failed) {
        agent_step_done(in, m->dst, m->dst_step);
        if (!m->local && m->push != AGENT_PUSH_IN) {
            send_read(a, in, m->src, m->dst, m->k, m->src_step);
        }
    }
    free(m);
    if (in->failed) {
        agent_try_complete(a, in, rs - in->rs);
        agent_inst_maybe_destroy(a, in);
        return;
    }
    /* Most moves end no round: then nothing else can start. */
    if (round_over(a, in, dst) || (src != dst && round_over(a, in, src))) {
        agent_inst_progress(a, in);
    }
}

void agent_dump(agent_t *a, FILE *out)
{
    agent_inst_t *in, *tmp;
    agent_move_t *m;
    unsigned      queued = 0;

    for (m = a->q_head; m != NULL; m = m->next) {
        queued++;
    }
    fprintf(out,
            "dpushim[agent %u]: %u instances, %u moves queued, %u "
            "slots busy\n",
            a->self, HASH_COUNT(a->insts), queued, a->inflight);
    HASH_ITER(hh, a->insts, in, tmp) {
        fprintf(out,
                "  %s #%llu on %#llx: %u ranks, %u local left, %u "
                "moves live%s\n",
                dps_coll_str(in->coll), (unsigned long long)in->key.seq,
                (unsigned long long)in->comm->id, in->comm->size,
                in->local_left, in->moves_live, in->failed ? ", failed" : "");
        for (uint32_t r = 0; r < in->comm->size; r++) {
            agent_rstate_t *rs = &in->rs[r];

            fprintf(out, "    rank %u (world %u)%s: %s round %u", r,
                    in->comm->members[r],
                    is_local(a, in->comm, r) ? " here" : "",
                    rs->posted ? "posted," : "not posted,", rs->round);
            if (rs->st != NULL && rs->sched != NULL) {
                fprintf(out, " of %u, %u left, done %d:", rs->sched->nrounds,
                        rs->left, rs->done);
                for (uint32_t i = 0; i < rs->sched->nsteps; i++) {
                    const dps_step_t *st = &rs->sched->steps[i];

                    fprintf(out, " %s(r%u,p%u,%llu)=%u",
                            dps_step_kind_str(st->kind), st->round, st->peer,
                            (unsigned long long)st->len, rs->st[i]);
                }
            }
            fprintf(out, "\n");
        }
    }
    fflush(out);
}

void agent_sched_init(agent_t *a)
{
    a->up.move_done = move_done;
}
