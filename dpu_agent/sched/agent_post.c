/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Posts and the messages between agents: a rank's POST (or a peer
 * agent's PEER_POST) joins its instance, is checked against the ranks it
 * exchanges with and forwarded to the agents that serve them; SEND_DONE,
 * ROUND, INST_FAIL and COMM_FREE from other agents. See agent_sched.h.
 */
#define _GNU_SOURCE
#include "dpu_agent/sched/agent_sched.h"
#include "dpu_agent/keys/agent_keys.h"
#include "dpu_agent/core/agent_chan.h"
#include "dpu_agent/move/agent_move.h"
#include "common/dps_log.h"
#include "common/dps_status.h"

#include <stdlib.h>
#include <string.h>

/* Ranks of ours receiving from x while x sends them nothing, or the other
 * way round, would wait forever: a local rank d and a posted rank s must
 * agree on how many transfers go from s to d. */
static int pairs_agree(agent_t *a, agent_inst_t *in, uint32_t x)
{
    agent_comm_t *c = in->comm;
    uint32_t      d, s;

    for (uint32_t p = 0; p < c->size; p++) {
        for (int dir = 0; dir < 2; dir++) {
            uint32_t ns, nr;

            s = dir ? p : x;
            d = dir ? x : p;
            if (!is_local(a, c, d) || !in->rs[s].posted || !in->rs[d].posted ||
                (dir && p == x)) {
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
                          "every rank",
                          dps_coll_str(in->coll),
                          (unsigned long long)in->key.seq,
                          (unsigned long long)c->id, c->members[s], ns,
                          c->members[d], nr);
                agent_inst_fail(a, in, DPS_ERR_MISMATCH, 1);
                return 0;
            }
        }
    }
    return 1;
}

/* The steps of s another agent ag needs: the SENDs to its ranks, in
 * order (the k-th SEND to a rank stays the k-th). Their number. */
static uint32_t sends_to(const agent_t *a, const agent_comm_t *c,
                         const agent_sched_t *s, uint32_t ag, dps_step_t *out)
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
 * first time each). DPS_OK, or DPS_ERR_UCX if an agent could not be told
 * (its ranks would wait for the post for ever: the caller fails the
 * instance) or DPS_ERR_NOMEM. */
static int forward_post(agent_t *a, agent_inst_t *in, const dps_msg_post_t *pf,
                        uint32_t x)
{
    agent_rstate_t *rs = &in->rs[x];
    agent_sched_t  *s = rs->sched;
    agent_comm_t   *c = in->comm;
    dps_msg_post_t  f = *pf;
    uint8_t        *want = calloc(a->nagents, 1);
    dps_step_t     *fwd = malloc(sizeof(dps_step_t) * (s->nsteps + 1));
    uint32_t        i, ag;
    int             rc = DPS_OK;

    if (want == NULL || fwd == NULL) {
        free(want);
        free(fwd);
        dps_error("out of memory forwarding a post");
        return DPS_ERR_NOMEM;
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
        size_t      len;
        void       *out;
        int         b;

        if (!want[ag]) {
            continue;
        }
        for (b = 0; b < DPS_NBUF; b++) {
            agent_key_t *k = rs->key[b];

            f.rkey_len[b] = (k != NULL && !k->sent[ag]) ? k->len : 0;
            keys[b] = f.rkey_len[b] ? k->packed : NULL;
        }
        f.nsteps = 0;
        f.flags = pf->flags & DPS_POST_GATHER;
        if (!s->sent[ag]) {
            f.nsteps = sends_to(a, c, s, ag, fwd);
            f.flags |= DPS_POST_SCHED;
        }
        out = dps_msg_encode_post(DPS_MSG_PEER_POST, &f, keys,
                                  f.nsteps ? fwd : NULL, c->members, &len);
        if (out == NULL || agent_send_agent(a, ag, out, len) != DPS_OK) {
            dps_error("cannot forward %s #%u's post of rank %u to agent "
                      "%u: the collective fails",
                      dps_coll_str(in->coll), (unsigned)in->key.seq,
                      c->members[x], ag);
            rc = DPS_ERR_UCX;
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
    return rc;
}

/*
 * The posts of one node go to the other agents together: between nodes
 * (DPUSHIM_PUSH) a local rank's post is held back until every local
 * member of its communicator has posted the instance, or AGENT_HOLD_SEC
 * has passed since the first was held, so that the node's posts travel
 * in one bundle per agent (one message a node pair, not one a rank).
 * A rank whose post waits loses nothing when the others post with it
 * (a collective where every rank needs every other waits for the last
 * one anyway); the bound keeps a late rank from holding the others'
 * data back for long.
 */
#define AGENT_HOLD_SEC 0.0002

/* Forward every held post of in; DPS_OK or the first error (the
 * instance then fails: some agent would wait for a post for ever). */
static int release_held(agent_t *a, agent_inst_t *in)
{
    int rc = DPS_OK;

    for (uint32_t r = 0; r < in->comm->size; r++) {
        agent_rstate_t *rs = &in->rs[r];

        if (rs->held != NULL) {
            int e = in->failed ? DPS_OK : forward_post(a, in, rs->held, r);

            rc = rc != DPS_OK ? rc : e;
            free(rs->held);
            rs->held = NULL;
        }
    }
    in->held_since = 0;
    for (agent_inst_t **p = &a->held; *p != NULL; p = &(*p)->held_next) {
        if (*p == in) {
            *p = in->held_next;
            break;
        }
    }
    in->held_next = NULL;
    if (rc != DPS_OK && !in->failed) {
        agent_inst_fail(a, in, rc, 1);
    }
    return rc;
}

/* The held posts of in went out: its ranks' pushes may go now,
 * in the same message. */
static void release_and_push(agent_t *a, agent_inst_t *in)
{
    if (release_held(a, in) == DPS_OK && !in->failed) {
        agent_inst_progress(a, in);
    }
}

/* Local rank x posted in: forward its post now, or hold it back with
 * the node's others (see AGENT_HOLD_SEC). */
static int forward_or_hold(agent_t *a, agent_inst_t *in,
                           const dps_msg_post_t *pf, uint32_t x)
{
    agent_rstate_t *rs = &in->rs[x];

    in->local_posted++;
    if (!a->push || in->comm->nlocal < 2) {
        return forward_post(a, in, pf, x);
    }
    if (in->local_posted < in->comm->nlocal &&
        (rs->held = malloc(sizeof(*pf))) != NULL) {
        *rs->held = *pf;
        if (in->held_since == 0) {
            agent_inst_t **p = &a->held;

            while (*p != NULL) {
                p = &(*p)->held_next; /* oldest first, as they came */
            }
            in->held_since = dps_now();
            in->held_next = NULL;
            *p = in;
        }
        return DPS_OK;
    }
    if (in->held_since != 0 && release_held(a, in) != DPS_OK) {
        return DPS_OK; /* failed already */
    }
    return forward_post(a, in, pf, x);
}

void agent_posts_release(agent_t *a, int all)
{
    double now = dps_now();

    for (agent_inst_t *in = a->held, *next; in != NULL; in = next) {
        next = in->held_next;
        if (all || now - in->held_since >= AGENT_HOLD_SEC) {
            release_and_push(a, in);
        }
    }
}

/* A late post into a failed instance, or the first of one another agent
 * failed: a local rank completes with the error at once. */
static int post_failed(agent_t *a, agent_inst_t *in, uint32_t x, int local)
{
    if (local) {
        agent_try_complete(a, in, x);
        agent_inst_maybe_destroy(a, in);
    }
    return DPS_OK;
}

/* Keys and schedule first: a post that must wait still delivered them,
 * which later posts no longer carry. A post carrying its rank's error has
 * neither. */
static int post_take(agent_t *a, const dps_msg_t *msg,
                     agent_key_t *keys[DPS_NBUF], agent_sched_t **s)
{
    const dps_msg_post_t *f = &msg->u.post.fixed;

    for (int b = 0; f->error == 0 && b < DPS_NBUF; b++) {
        if (f->buf_reg[b] == 0) {
            continue;
        }
        keys[b] = agent_key_take(a, f->world_rank, f->buf_reg[b],
                                 msg->u.post.rkey[b], f->rkey_len[b]);
        if (keys[b] == NULL) {
            return DPS_ERR_PROTO;
        }
    }
    if (f->error == 0 && (*s = agent_sched_take(a, msg)) == NULL) {
        return DPS_ERR_PROTO;
    }
    return DPS_OK;
}

/* The post's communicator, checked against what its ranks said before;
 * DPS_ERR_AGAIN while its members are not known yet. */
static int post_comm(agent_t *a, const dps_msg_t *msg, agent_comm_t **cp)
{
    const dps_msg_post_t *f = &msg->u.post.fixed;
    agent_comm_t         *c;
    int                   bad, local;

    c = agent_comm_get(a, f->comm_id, f->comm_size, msg->u.post.members, &bad);
    if (bad) {
        dps_error("post for communicator %#llx with inconsistent members",
                  (unsigned long long)f->comm_id);
        return DPS_ERR_PROTO;
    }
    if (c == NULL) {
        return DPS_ERR_AGAIN;
    }
    if (c->members[f->comm_rank] != f->world_rank) {
        dps_error("rank %u claims to be rank %u of communicator %#llx",
                  f->world_rank, f->comm_rank, (unsigned long long)f->comm_id);
        return DPS_ERR_PROTO;
    }
    local = is_local(a, c, f->comm_rank);
    if ((msg->type == DPS_MSG_POST) != local) {
        dps_error("%s for rank %u which is %sserved here",
                  dps_msg_type_str(msg->type), f->world_rank,
                  local ? "" : "not ");
        return DPS_ERR_PROTO;
    }
    *cp = c;
    return DPS_OK;
}

/* The instance the post belongs to, new if it is the first post of it
 * here (failed at once if another agent already failed it). */
static agent_inst_t *post_inst(agent_t *a, agent_comm_t *c,
                               const dps_msg_post_t *f)
{
    agent_inst_key_t key = {f->comm_id, f->seq};
    agent_inst_t    *in;
    agent_tomb_t    *t;

    HASH_FIND(hh, a->insts, &key, sizeof(key), in);
    if (in != NULL) {
        return in;
    }
    HASH_FIND(hh, a->tombs, &key, sizeof(key), t);
    in = agent_inst_new(a, c, key, f->coll);
    if (in == NULL) {
        return NULL;
    }
    in->first_world = f->world_rank;
    if (t != NULL) {
        in->failed = 1;
        in->error = t->error;
    }
    return in;
}

/* A rank's own erroneous arguments, or calls that differ between ranks,
 * fail the instance on every rank. */
static void post_check(agent_t *a, agent_inst_t *in, const dps_msg_post_t *f)
{
    if (f->error != 0 && !in->failed) {
        dps_error("%s #%u on communicator %#llx: rank %u's own arguments "
                  "are erroneous (%s); it fails on every rank",
                  dps_coll_str(f->coll), f->seq,
                  (unsigned long long)f->comm_id, f->world_rank,
                  dps_status_str(f->error));
        agent_inst_fail(a, in, f->error, 1);
    } else if (!in->failed && f->coll != in->coll) {
        dps_error("%s #%u on communicator %#llx: rank %u posted it where "
                  "rank %u posted %s: the ranks' calls do not match; it "
                  "fails on every rank",
                  dps_coll_str(f->coll), f->seq,
                  (unsigned long long)f->comm_id, f->world_rank,
                  in->first_world, dps_coll_str(in->coll));
        agent_inst_fail(a, in, DPS_ERR_MISMATCH, 1);
    }
}

static int handle_post(agent_t *a, const dps_msg_t *msg)
{
    const dps_msg_post_t *f = &msg->u.post.fixed;
    agent_key_t          *keys[DPS_NBUF] = {NULL, NULL, NULL};
    agent_sched_t        *s = NULL;
    agent_comm_t         *c = NULL;
    agent_rstate_t       *rs;
    agent_inst_t         *in;
    uint32_t              x = f->comm_rank;
    int                   local, rc;

    if (f->world_rank >= a->nranks) {
        dps_error("post from unknown rank %u", f->world_rank);
        return DPS_ERR_PROTO;
    }
    if ((rc = post_take(a, msg, keys, &s)) != DPS_OK ||
        (rc = post_comm(a, msg, &c)) != DPS_OK) {
        return rc;
    }
    local = is_local(a, c, x);
    if ((in = post_inst(a, c, f)) == NULL) {
        return DPS_ERR_NOMEM;
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
    for (int b = 0; b < DPS_NBUF; b++) {
        rs->addr[b] = f->buf_addr[b];
        if (b == DPS_BUF_SEND && (f->flags & DPS_POST_GATHER)) {
            rs->send_map = f->send_map;
            rs->send_nmap = f->send_nmap;
        }
        rs->key[b] = keys[b];
    }
    if (local && s != NULL) {
        rs->st = calloc(s->nsteps + 1, 1);
        if (rs->st == NULL) {
            return DPS_ERR_NOMEM;
        }
        agent_begin_round(rs);
    }
    post_check(a, in, f);
    if (in->failed) {
        return post_failed(a, in, x, local);
    }
    if (local && (rc = forward_or_hold(a, in, f, x)) != DPS_OK) {
        /* Some agent will never see this post: nobody waits for it. */
        agent_inst_fail(a, in, rc, 1);
        return post_failed(a, in, x, local);
    }
    if (pairs_agree(a, in, x)) {
        agent_inst_progress(a, in);
    }
    return DPS_OK;
}

static agent_inst_t *inst_of(agent_t *a, uint64_t comm_id, uint32_t seq)
{
    agent_inst_key_t key = {comm_id, seq};
    agent_inst_t    *in;

    HASH_FIND(hh, a->insts, &key, sizeof(key), in);
    return in;
}

static int handle_send_done(agent_t *a, const dps_msg_send_done_t *m)
{
    agent_inst_key_t     key = {m->comm_id, m->seq};
    agent_inst_t        *in = inst_of(a, m->comm_id, m->seq);
    agent_rstate_t      *rs;
    const agent_sched_t *s;

    if ((in != NULL && in->failed) ||
        (in == NULL && agent_tomb_has(a, &key))) {
        return DPS_OK; /* late news of a failed instance */
    }
    if (in == NULL || m->src >= in->comm->size || m->dst >= in->comm->size ||
        !is_local(a, in->comm, m->src) || !(rs = &in->rs[m->src])->posted ||
        (s = rs->sched) == NULL ||
        m->k >= s->send_start[m->dst + 1] - s->send_start[m->dst]) {
        dps_error("unexpected send_done (%u -> %u, #%u) for instance %u of "
                  "communicator %#llx",
                  m->src, m->dst, m->k, m->seq,
                  (unsigned long long)m->comm_id);
        return DPS_ERR_PROTO;
    }
    agent_step_done(in, m->src, s->send_idx[s->send_start[m->dst] + m->k]);
    if (rs->left == 0) {
        agent_inst_progress(a, in);
    }
    return DPS_OK;
}

static int handle_round(agent_t *a, const dps_msg_round_t *m)
{
    agent_inst_key_t key = {m->comm_id, m->seq};
    agent_inst_t    *in = inst_of(a, m->comm_id, m->seq);

    if (in == NULL && agent_tomb_has(a, &key)) {
        return DPS_OK;
    }
    if (in == NULL) {
        return DPS_ERR_AGAIN; /* overtook the post it follows */
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
        agent_inst_progress(a, in);
    }
    return DPS_OK;
}

/*
 * FETCH from the agent of a receiver: the bytes of our rank's k-th SEND
 * to it, at an offset. The address is our rank's, from its own post and
 * schedule; anything that does not fit is answered with nothing (the
 * asker fails that collective), never with other memory.
 */
static int handle_fetch(agent_t *a, const dps_msg_fetch_t *f)
{
    agent_inst_key_t      key = {f->comm_id, f->seq};
    agent_inst_t         *in = inst_of(a, f->comm_id, f->seq);
    const agent_rstate_t *rs;
    const agent_sched_t  *s;
    const dps_step_t     *st;
    ucp_rkey_h            rkey = NULL;
    uint64_t              addr = 0;
    uint32_t              to;
    int                   ok = 0;

    if (in == NULL && !agent_tomb_has(a, &key)) {
        return DPS_ERR_AGAIN; /* overtook the post it follows */
    }
    if (in != NULL &&
        (f->dst >= in->comm->size || f->src >= in->comm->size ||
         !is_local(a, in->comm, f->src) || is_local(a, in->comm, f->dst))) {
        dps_error("unexpected fetch (%u -> %u) for instance %u of "
                  "communicator %#llx",
                  f->src, f->dst, f->seq, (unsigned long long)f->comm_id);
        return DPS_ERR_PROTO;
    }
    if (in == NULL) {
        /* Failed and ended here (the asker's fails too): answer with
         * nothing, so that its slot is freed. */
        agent_comm_t *c;

        HASH_FIND(hh, a->comms, &f->comm_id, sizeof(f->comm_id), c);
        if (c != NULL && f->dst < c->size) {
            agent_fetch_serve(a, agent_of(a, c, f->dst), 0, 0, 0, f->tag, NULL,
                              0);
        }
        return DPS_OK;
    }
    to = agent_of(a, in->comm, f->dst);
    rs = &in->rs[f->src];
    if (!in->failed && rs->posted && (s = rs->sched) != NULL &&
        f->k < s->send_start[f->dst + 1] - s->send_start[f->dst]) {
        st = &s->steps[s->send_idx[s->send_start[f->dst] + f->k]];
        ok = f->off <= st->len && f->len <= st->len - f->off &&
             !(st->src_buf == DPS_BUF_SEND && rs->send_map != 0);
        addr = rs->addr[st->src_buf] + st->src_off + f->off;
        if (ok && rs->key[st->src_buf] != NULL) {
            rkey = agent_key_rkey(a, rs->key[st->src_buf]);
        }
    }
    if (!ok) {
        dps_error("fetch of %llu bytes at %llu of rank %u's send #%u to "
                  "rank %u (instance %u of communicator %#llx) does not "
                  "fit its post: answered with nothing",
                  (unsigned long long)f->len, (unsigned long long)f->off,
                  in->comm->members[f->src], f->k, in->comm->members[f->dst],
                  f->seq, (unsigned long long)f->comm_id);
    }
    agent_fetch_serve(a, to, in->comm->members[f->src], addr, f->len, f->tag,
                      rkey, ok);
    return DPS_OK;
}

/*
 * PUSH from the agent of a sender on another node: bytes of its rank's
 * k-th SEND to our rank dst, kept until dst's matching RECV has begun
 * (move/agent_push.c). A piece for a failed instance is dropped; one
 * that names ranks the layout does not allow is an error.
 */
static int handle_push(agent_t *a, const dps_msg_t *msg)
{
    const dps_msg_push_t *f = &msg->u.push.fixed;
    agent_inst_key_t      key = {f->comm_id, f->seq};
    agent_inst_t         *in = inst_of(a, f->comm_id, f->seq);
    agent_comm_t         *c;

    if (f->agent >= a->nagents || f->agent == a->self) {
        dps_error("push from unknown agent %u", f->agent);
        return DPS_ERR_PROTO;
    }
    if ((in != NULL && in->failed) ||
        (in == NULL && agent_tomb_has(a, &key))) {
        /* Late news of a failed instance: dropped, its room given back
         * (the sender counts what it pushes against our window). */
        agent_push_dropped(a, f->agent, f->len);
        return DPS_OK;
    }
    c = in != NULL ? in->comm : NULL;
    if (c == NULL) {
        HASH_FIND(hh, a->comms, &f->comm_id, sizeof(f->comm_id), c);
    }
    if (c != NULL &&
        (f->src >= c->size || f->dst >= c->size || !is_local(a, c, f->dst) ||
         !agent_pushed(a, c->members[f->src], c->members[f->dst]))) {
        dps_error("unexpected push (%u -> %u) for instance %u of "
                  "communicator %#llx",
                  f->src, f->dst, f->seq, (unsigned long long)f->comm_id);
        return DPS_ERR_PROTO;
    }
    return agent_push_arrive(a, f, msg->u.push.data, a->rx_cur);
}

/* INST_FAIL from another agent: fail the instance here too, creating it
 * failed if none of our ranks has posted it yet. */
static int handle_inst_fail(agent_t *a, const dps_msg_inst_fail_t *m)
{
    agent_inst_key_t key = {m->comm_id, m->seq};
    agent_inst_t    *in = inst_of(a, m->comm_id, m->seq);
    agent_comm_t    *c;

    if (in != NULL) {
        agent_inst_fail(a, in, m->status, 0);
        agent_inst_maybe_destroy(a, in);
        return DPS_OK;
    }
    if (agent_tomb_has(a, &key)) {
        return DPS_OK;
    }
    HASH_FIND(hh, a->comms, &m->comm_id, sizeof(m->comm_id), c);
    if (c == NULL) {
        return DPS_ERR_AGAIN; /* its members come with the first post */
    }
    in = agent_inst_new(a, c, key, 0);
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
        agent_comm_release(a, c);
    }
    return DPS_OK;
}

int agent_handle_coll(agent_t *a, const dps_msg_t *msg)
{
    switch (msg->type) {
    case DPS_MSG_POST:
    case DPS_MSG_PEER_POST: return handle_post(a, msg);
    case DPS_MSG_SEND_DONE: return handle_send_done(a, &msg->u.send_done);
    case DPS_MSG_ROUND: return handle_round(a, &msg->u.round);
    case DPS_MSG_INST_FAIL: return handle_inst_fail(a, &msg->u.inst_fail);
    case DPS_MSG_FETCH: return handle_fetch(a, &msg->u.fetch);
    case DPS_MSG_PUSH: return handle_push(a, msg);
    case DPS_MSG_CREDIT: agent_push_credit(a, &msg->u.credit); return DPS_OK;
    case DPS_MSG_COMM_FREE: return handle_comm_free(a, &msg->u.comm_free);
    case DPS_MSG_REG_FREE:
    case DPS_MSG_SCHED_FREE:
        /* A held post may name what this drops (a persistent request's
         * schedule freed right after its start): it goes out first, so
         * that no agent hears of the drop before the post. */
        if (agent_posts_held(a)) {
            agent_posts_release(a, 1);
        }
        return msg->type == DPS_MSG_REG_FREE ? agent_handle_reg_free(a, msg)
                                             : agent_handle_sched_free(a, msg);
    default: return DPS_ERR_PROTO;
    }
}

void agent_sched_fini(agent_t *a)
{
    agent_inst_t  *in, *itmp;
    agent_comm_t  *c, *ctmp;
    agent_sched_t *s, *stmp;
    agent_tomb_t  *t, *ttmp;

    HASH_ITER(hh, a->insts, in, itmp) {
        in->comm->freed = 1;
        agent_inst_destroy(a, in);
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
        agent_sched_forget(a, s);
        agent_sched_free(s);
    }
    agent_keys_fini(a);
}
