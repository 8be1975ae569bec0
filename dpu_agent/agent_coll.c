/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Collective instances and the schedule executor of dpu_agent.
 *
 * Pull model: the agent serving destination rank d copies every block d
 * must receive, reading it from the source rank's memory into a staging
 * slot (ucp_get) and writing it into d's receive buffer (ucp_put). A move
 * starts only when both its source and its destination have posted the same
 * instance (communicator id + sequence number), so nothing is written into
 * a buffer that does not yet belong to the collective. A rank's op completes
 * when its incoming blocks are written and flushed, and every agent that
 * reads its outgoing blocks has said it is done reading.
 */
#define _GNU_SOURCE
#include "agent.h"
#include "../common/dps_log.h"
#include "../common/dps_status.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

typedef struct agent_flush {
    struct agent_flush *next;
    agent_inst_t       *inst;
    uint32_t            rank;
    int                 completed;
    ucs_status_t        status;
} agent_flush_t;

static int is_local(const agent_t *a, const agent_comm_t *c, uint32_t r)
{
    return a->rank_agent[c->members[r]] == a->self;
}

static uint32_t agent_of(const agent_t *a, const agent_comm_t *c, uint32_t r)
{
    return a->rank_agent[c->members[r]];
}

/*
 * CMA copy threads. process_vm_readv/writev are synchronous, so with one
 * thread the agent reads a chunk, then writes it, then reads the next: two
 * copies' time per byte. With DPUSHIM_PIPELINE_DEPTH = n > 1, n threads
 * each take a chunk (read into its own staging slot, write out), so reads
 * and writes of different chunks run at once on the cores the agent may
 * use. The main thread keeps all the bookkeeping; a thread touches only
 * its slot and reads the move's addresses, which stay put while the slot
 * is out.
 */
static void copiers_stop(agent_t *a);

typedef struct agent_copiers {
    agent_t         *a;
    pthread_t       *thr;
    unsigned         nthr;
    pthread_mutex_t  lock;
    pthread_cond_t   cond;
    agent_slot_t   **ring;        /* jobs, nslots entries */
    unsigned         head, n;
    int              stop;
    int              done_fd;     /* eventfd: a slot finished */
} agent_copiers_t;

int agent_may_sleep(const agent_t *a)
{
    unsigned i, free_slot = 0;

    for (i = 0; i < a->nslots; i++) {
        agent_slot_t *s = &a->slots[i];

        if (s->state == 0) {
            free_slot = 1;
        } else if (__atomic_load_n(&s->completed, __ATOMIC_ACQUIRE)) {
            return 0;
        }
    }
    /* Work we could start, or UCX operations and flushes to progress. */
    return !(a->q_head != NULL && free_slot) && a->inflight == a->copy_jobs;
}

int agent_copy_fd(const agent_t *a)
{
    return a->copiers != NULL ? a->copiers->done_fd : -1;
}

int agent_coll_init(agent_t *a)
{
    ucp_mem_map_params_t mp;
    ucs_status_t st;
    unsigned i;

    a->slots = calloc(a->nslots, sizeof(*a->slots));
    if (a->slots == NULL) {
        return DPS_ERR_NOMEM;
    }
    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                    UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                    UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    mp.address = NULL;
    mp.length = (a->chunk + AGENT_ALIGN) * a->nslots;
    mp.flags = UCP_MEM_MAP_ALLOCATE;
    st = ucp_mem_map(a->ucx.context, &mp, &a->staging_memh);
    if (st != UCS_OK) {
        dps_error("cannot allocate %zu bytes of staging memory: %s",
                  mp.length, ucs_status_string(st));
        return DPS_ERR_NOMEM;
    }
    {
        ucp_mem_attr_t attr;

        attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
        ucp_mem_query(a->staging_memh, &attr);
        a->staging = attr.address;
    }
    for (i = 0; i < a->nslots; i++) {
        a->slots[i].buf = (char *)a->staging +
                          (size_t)i * (a->chunk + AGENT_ALIGN);
    }
    return DPS_OK;
}

static void comm_release(agent_t *a, agent_comm_t *c)
{
    if (c->freed && c->live == 0) {
        HASH_DEL(a->comms, c);
        free(c->members);
        free(c);
    }
}

static void inst_destroy(agent_t *a, agent_inst_t *in)
{
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
    in->comm->live--;
    comm_release(a, in->comm);
    free(in->ri);
    free(in->src_left);
    free(in);
}

void agent_coll_fini(agent_t *a)
{
    agent_inst_t *in, *itmp;
    agent_comm_t *c, *ctmp;
    agent_move_t *m;

    while ((m = a->q_head) != NULL) {
        a->q_head = m->next;
        free(m);
    }
    while (a->flushes != NULL) {
        agent_flush_t *f = a->flushes;

        a->flushes = f->next;
        free(f);
    }
    HASH_ITER(hh, a->insts, in, itmp) {
        in->comm->freed = 1;
        inst_destroy(a, in);
    }
    HASH_ITER(hh, a->comms, c, ctmp) {
        HASH_DEL(a->comms, c);
        free(c->members);
        free(c);
    }
    {
        agent_tomb_t *t, *ttmp;

        HASH_ITER(hh, a->tombs, t, ttmp) {
            HASH_DEL(a->tombs, t);
            free(t);
        }
    }
    agent_keys_fini(a);
    copiers_stop(a);
    free(a->slots);
    a->slots = NULL;
    if (a->staging_memh != NULL) {
        ucp_mem_unmap(a->ucx.context, a->staging_memh);
        a->staging_memh = NULL;
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

/* Number of agents that read the root's buffer in a bcast. */
static uint32_t bcast_readers(const agent_t *a, const agent_comm_t *c,
                              uint32_t root)
{
    uint8_t *seen = calloc(a->nagents, 1);
    uint32_t r, n = 0;

    if (seen == NULL) {
        return 0;
    }
    for (r = 0; r < c->size; r++) {
        if (r != root && !seen[agent_of(a, c, r)]) {
            seen[agent_of(a, c, r)] = 1;
            n++;
        }
    }
    free(seen);
    return n;
}

static const char *coll_name(uint32_t coll)
{
    return coll == DPS_COLL_BCAST ? "MPI_Ibcast" :
           coll == DPS_COLL_ALLTOALL ? "MPI_Ialltoall" : "a collective";
}

static void inst_fail(agent_t *a, agent_inst_t *in, int status, int tell);

static int tomb_has(const agent_t *a, const agent_inst_key_t *key)
{
    agent_tomb_t *t;

    HASH_FIND(hh, a->tombs, key, sizeof(*key), t);
    return t != NULL;
}

/* A failed instance without moves (told by another agent, or ended here
 * before a late post): our ranks complete with its error as they post. */
static agent_inst_t *inst_bare(agent_t *a, agent_comm_t *c,
                               agent_inst_key_t key, int error)
{
    agent_inst_t *in = calloc(1, sizeof(*in));

    if (in == NULL || (in->ri = calloc(c->size, sizeof(*in->ri))) == NULL ||
        (in->src_left = calloc(c->size, sizeof(*in->src_left))) == NULL) {
        if (in != NULL) {
            free(in->ri);
        }
        free(in);
        return NULL;
    }
    in->key = key;
    in->comm = c;
    in->local_left = c->nlocal;
    in->failed = 1;
    in->error = error;
    for (uint32_t r = 0; r < c->size; r++) {
        in->ri[r].landed = 1;
    }
    c->live++;
    HASH_ADD(hh, a->insts, key, sizeof(key), in);
    return in;
}

static agent_inst_t *inst_get(agent_t *a, agent_comm_t *c,
                              const dps_msg_post_t *f)
{
    agent_inst_key_t key = {f->comm_id, f->seq};
    agent_inst_t *in;
    uint32_t r, readers = 0;

    HASH_FIND(hh, a->insts, &key, sizeof(key), in);
    if (in != NULL) {
        if (!in->failed && f->error == 0 &&
            (in->coll != f->coll || in->root != f->root ||
             in->block_bytes != f->block_bytes)) {
            /* Never dropped: every rank's request ends with the error. */
            dps_error("%s #%u on communicator %#llx: rank %u posted %s of "
                      "%llu bytes (root %u) where rank %u posted %s of %llu "
                      "bytes (root %u): the ranks' arguments do not match; "
                      "it fails on every rank", coll_name(f->coll), f->seq,
                      (unsigned long long)f->comm_id, f->world_rank,
                      coll_name(f->coll), (unsigned long long)f->block_bytes,
                      f->root, in->first_world, coll_name(in->coll),
                      (unsigned long long)in->block_bytes, in->root);
            inst_fail(a, in, DPS_ERR_MISMATCH, 1);
        }
        return in;
    }
    {
        agent_tomb_t *t;

        HASH_FIND(hh, a->tombs, &key, sizeof(key), t);
        if (t != NULL) {
            return inst_bare(a, c, key, t->error);
        }
    }
    if (f->error != 0) {
        return inst_bare(a, c, key, f->error);
    }
    in = calloc(1, sizeof(*in));
    if (in == NULL) {
        return NULL;
    }
    in->ri = calloc(c->size, sizeof(*in->ri));
    in->src_left = calloc(c->size, sizeof(*in->src_left));
    if (in->ri == NULL || in->src_left == NULL) {
        free(in->ri);
        free(in->src_left);
        free(in);
        return NULL;
    }
    in->key = key;
    in->comm = c;
    in->coll = f->coll;
    in->root = f->root;
    in->block_bytes = f->block_bytes;
    in->first_world = f->world_rank;
    in->local_left = c->nlocal;
    if (in->coll == DPS_COLL_BCAST) {
        readers = bcast_readers(a, c, in->root);
        in->src_left[in->root] =
            c->nlocal - (is_local(a, c, in->root) ? 1 : 0);
    }
    for (r = 0; r < c->size; r++) {
        if (in->coll == DPS_COLL_ALLTOALL) {
            in->src_left[r] = c->nlocal;
        }
        if (!is_local(a, c, r)) {
            continue;
        }
        if (in->coll == DPS_COLL_ALLTOALL) {
            in->ri[r].in_left = c->size;
            in->ri[r].reads_left = c->nagents;
        } else {
            in->ri[r].in_left = (r == in->root) ? 0 : 1;
            in->ri[r].reads_left = (r == in->root) ? readers : 0;
        }
        in->ri[r].in_total = in->ri[r].in_left;
        in->ri[r].landed = (in->ri[r].in_left == 0);
    }
    c->live++;
    HASH_ADD(hh, a->insts, key, sizeof(key), in);
    return in;
}

/* Complete local rank r if everything it waits for has happened. */
static void check_done(agent_t *a, agent_inst_t *in, uint32_t r)
{
    agent_rinfo_t *ri = &in->ri[r];
    size_t len;
    void *msg;

    if (ri->done || !ri->posted || !ri->landed || ri->reads_left > 0) {
        return;
    }
    ri->done = 1;
    msg = dps_msg_encode_complete(ri->op_token, in->error, &len);
    agent_send_rank(a, in->comm->members[r], msg, len);
    in->local_left--;
}

static void maybe_destroy(agent_t *a, agent_inst_t *in)
{
    if (in->local_left == 0 && in->moves_live == 0) {
        inst_destroy(a, in);
    }
}

/*
 * The instance fails on every rank (mismatched or erroneous arguments):
 * no move starts any more; a rank of ours completes, with the error, once
 * the writes into its buffers already under way are done (a move handed
 * to an engine or a staging slot finishes; one still queued is dropped);
 * nobody waits for reads of its blocks any more (a read of memory the
 * application got back harms nothing, and the readers' own ranks fail
 * too). tell: let every other agent of the communicator know.
 */
static void inst_fail(agent_t *a, agent_inst_t *in, int status, int tell)
{
    agent_comm_t *c = in->comm;
    agent_move_t **mp = &a->q_head, *m, *prev = NULL;
    uint32_t r;

    if (in->failed) {
        return;
    }
    in->failed = 1;
    in->error = status;
    while ((m = *mp) != NULL) {
        if (m->inst != in || m->issued != 0) {
            prev = m;
            mp = &m->next;
            continue;
        }
        *mp = m->next;
        if (a->q_tail == m) {
            a->q_tail = prev;
        }
        in->moves_live--;
        in->ri[m->dst].in_left--;
        free(m);
    }
    for (r = 0; r < c->size; r++) {
        agent_rinfo_t *ri = &in->ri[r];

        if (!is_local(a, c, r)) {
            continue;
        }
        /* What remains to land: moves created and neither dropped nor
         * finished, i.e. those under way. */
        ri->in_left = ri->in_created - (ri->in_total - ri->in_left);
        if (ri->in_left == 0 && !ri->flushing) {
            ri->landed = 1;
        }
        ri->reads_left = 0;
        check_done(a, in, r);
    }
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
            msg = dps_msg_encode_inst_fail(in->key.comm_id,
                                           (uint32_t)in->key.seq, status,
                                           &len);
            if (msg == NULL || agent_send_agent(a, ag, msg, len) != DPS_OK) {
                dps_error("cannot tell agent %u that collective %u fails",
                          ag, (uint32_t)in->key.seq);
            }
        }
        free(told);
    }
    maybe_destroy(a, in);
}

static void move_add(agent_t *a, agent_inst_t *in, uint32_t s, uint32_t d)
{
    agent_move_t *m = calloc(1, sizeof(*m));

    if (m == NULL) {
        dps_error("out of memory queueing a block");
        return;
    }
    m->inst = in;
    m->src = s;
    m->dst = d;
    m->len = in->block_bytes;
    in->ri[d].in_created++;
    if (in->coll == DPS_COLL_ALLTOALL) {
        m->src_addr = in->ri[s].send_addr + (uint64_t)d * in->block_bytes;
        m->dst_addr = in->ri[d].recv_addr + (uint64_t)s * in->block_bytes;
    } else {
        m->src_addr = in->ri[s].send_addr;
        m->dst_addr = in->ri[d].send_addr;
    }
    in->moves_live++;
    if (a->q_tail != NULL) {
        a->q_tail->next = m;
    } else {
        a->q_head = m;
    }
    a->q_tail = m;
}

/* ---- registration keys ------------------------------------------------ */

static agent_key_t *key_find(agent_t *a, uint32_t world, uint64_t id)
{
    agent_key_t probe, *k;

    memset(&probe.k, 0, sizeof(probe.k));
    probe.k.world = world;
    probe.k.id = id;
    HASH_FIND(hh, a->keys, &probe.k, sizeof(probe.k), k);
    return k;
}

static void key_destroy(agent_t *a, agent_key_t *k)
{
    HASH_DEL(a->keys, k);
    if (k->rkey != NULL) {
        ucp_rkey_destroy(k->rkey);
    }
    free(k->packed);
    free(k->sent);
    free(k);
}

/*
 * The key of registration id of rank world: cached, or taken from this
 * message (buf, len > 0). A post naming an id this agent never received
 * is a protocol error: the sender sends each key before relying on it.
 */
static agent_key_t *key_take(agent_t *a, uint32_t world, uint64_t id,
                             const uint8_t *buf, uint32_t len)
{
    agent_key_t *k = key_find(a, world, id);

    if (k != NULL || len == 0) {
        if (k == NULL) {
            dps_error("rank %u names registration %llu, whose key this "
                      "agent never received", world,
                      (unsigned long long)id);
        }
        return k;
    }
    k = calloc(1, sizeof(*k));
    if (k == NULL || (k->packed = malloc(len)) == NULL ||
        (k->sent = calloc(a->nagents, 1)) == NULL) {
        if (k != NULL) {
            free(k->packed);
        }
        free(k);
        dps_error("out of memory for a registration key");
        return NULL;
    }
    memcpy(k->packed, buf, len);
    k->len = len;
    k->k.world = world;
    k->k.id = id;
    HASH_ADD(hh, a->keys, k, sizeof(k->k), k);
    return k;
}

/* The unpacked key for UCX get/put on the owner's memory. */
static ucp_rkey_h key_rkey(agent_t *a, agent_key_t *k)
{
    ucs_status_t st;

    if (k->rkey == NULL) {
        st = ucp_ep_rkey_unpack(a->rank_ep[k->k.world], k->packed, &k->rkey);
        if (st != UCS_OK) {
            dps_error("cannot unpack the memory key of rank %u: %s",
                      k->k.world, ucs_status_string(st));
            k->rkey = NULL;
        }
    }
    return k->rkey;
}

/* REG_FREE: from a rank of ours (forward to the agents we gave its keys),
 * or from the agent of the owner. Unknown ids are ignored. */
static int handle_reg_free(agent_t *a, const dps_msg_t *msg)
{
    const dps_msg_reg_free_t *f = &msg->u.reg_free.fixed;
    uint8_t *peers = NULL;
    int own;
    uint32_t i, ag;

    if (f->world_rank >= a->nranks) {
        dps_error("reg_free for unknown rank %u", f->world_rank);
        return DPS_ERR_PROTO;
    }
    own = (a->rank_agent[f->world_rank] == a->self);
    if (own) {
        peers = calloc(a->nagents, 1);
    }
    for (i = 0; i < f->count; i++) {
        agent_key_t *k = key_find(a, f->world_rank,
                                  dps_msg_u64(msg->u.reg_free.ids, i));

        if (k == NULL) {
            continue;
        }
        for (ag = 0; peers != NULL && ag < a->nagents; ag++) {
            peers[ag] |= k->sent[ag];
        }
        key_destroy(a, k);
    }
    for (ag = 0; peers != NULL && ag < a->nagents; ag++) {
        size_t len;
        void *out;

        if (!peers[ag] || ag == a->self) {
            continue;
        }
        out = dps_msg_encode_reg_free(f->world_rank, f->count,
                                      msg->u.reg_free.ids, &len);
        if (out == NULL || agent_send_agent(a, ag, out, len) != DPS_OK) {
            dps_warn("cannot forward reg_free to agent %u", ag);
        }
    }
    free(peers);
    return DPS_OK;
}

void agent_keys_fini(agent_t *a)
{
    agent_key_t *k, *tmp;

    HASH_ITER(hh, a->keys, k, tmp) {
        key_destroy(a, k);
    }
}

/* Tell the agents that read rank i's blocks about its post. They need
 * its send buffer's key, sent to each the first time only. */
static void forward_post(agent_t *a, agent_comm_t *c, const dps_msg_t *msg,
                         agent_key_t *send_key)
{
    dps_msg_post_t f = msg->u.post.fixed;
    uint8_t *sent = calloc(a->nagents, 1);
    uint32_t r;

    if (sent == NULL) {
        return;
    }
    f.nmembers = c->size;
    f.recv_rkey_len = 0; /* only the rank's own agent writes into it */
    sent[a->self] = 1;
    for (r = 0; r < c->size; r++) {
        uint32_t ag = agent_of(a, c, r);
        int with_key;
        size_t len;
        void *out;

        if (sent[ag] || (f.coll == DPS_COLL_BCAST && r == f.root)) {
            continue;
        }
        sent[ag] = 1;
        with_key = !send_key->sent[ag];
        f.send_rkey_len = with_key ? send_key->len : 0;
        out = dps_msg_encode_post(DPS_MSG_PEER_POST, &f,
                                  with_key ? send_key->packed : NULL, NULL,
                                  c->members, &len);
        if (out == NULL || agent_send_agent(a, ag, out, len) != DPS_OK) {
            dps_error("cannot forward a post to agent %u", ag);
        } else if (with_key) {
            send_key->sent[ag] = 1;
        }
    }
    free(sent);
}

static int handle_post(agent_t *a, const dps_msg_t *msg)
{
    const dps_msg_post_t *f = &msg->u.post.fixed;
    agent_comm_t *c;
    agent_inst_t *in;
    agent_rinfo_t *ri;
    agent_key_t *skey, *rkey = NULL;
    uint32_t i = f->comm_rank, r;
    int bad, local;

    if (f->world_rank >= a->nranks) {
        dps_error("post from unknown rank %u", f->world_rank);
        return DPS_ERR_PROTO;
    }
    /* Keys first: a post that must wait still delivered its keys, which
     * later posts of the same buffers no longer carry. A post carrying
     * its rank's error has no buffers. */
    skey = f->error != 0 ? NULL :
           key_take(a, f->world_rank, f->send_reg, msg->u.post.send_rkey,
                    f->send_rkey_len);
    if (skey == NULL && f->error == 0) {
        return DPS_ERR_PROTO;
    }
    if (msg->type == DPS_MSG_POST && f->coll == DPS_COLL_ALLTOALL &&
        f->error == 0) {
        rkey = key_take(a, f->world_rank, f->recv_reg,
                        msg->u.post.recv_rkey, f->recv_rkey_len);
        if (rkey == NULL) {
            return DPS_ERR_PROTO;
        }
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
    if (c->members[i] != f->world_rank) {
        dps_error("rank %u claims to be rank %u of communicator %#llx",
                  f->world_rank, i, (unsigned long long)f->comm_id);
        return DPS_ERR_PROTO;
    }
    local = is_local(a, c, i);
    if ((msg->type == DPS_MSG_POST) != local) {
        dps_error("%s for rank %u which is %sserved here",
                  dps_msg_type_str(msg->type), f->world_rank,
                  local ? "" : "not ");
        return DPS_ERR_PROTO;
    }
    in = inst_get(a, c, f);
    if (in == NULL) {
        return DPS_ERR_NOMEM;
    }
    ri = &in->ri[i];
    if (ri->posted) {
        dps_error("rank %u posted instance %u of communicator %#llx twice",
                  f->world_rank, f->seq, (unsigned long long)f->comm_id);
        return DPS_ERR_PROTO;
    }
    ri->send_key = skey;
    ri->recv_key = rkey;
    ri->posted = 1;
    ri->send_addr = f->send_addr;
    ri->recv_addr = f->recv_addr;
    ri->op_token = f->op_token;
    if (f->error != 0 && !in->failed) {
        dps_error("%s #%u on communicator %#llx: rank %u's own arguments "
                  "are erroneous (%s); it fails on every rank",
                  coll_name(f->coll), f->seq, (unsigned long long)f->comm_id,
                  f->world_rank, dps_status_str(f->error));
        inst_fail(a, in, f->error, 1);
    }
    if (in->failed) {
        /* Nothing to move: a rank of ours ends with the error now. */
        if (local) {
            ri->in_left = 0;
            ri->landed = 1;
            ri->reads_left = 0;
            check_done(a, in, i);
            maybe_destroy(a, in);
        }
        return DPS_OK;
    }
    if (msg->type == DPS_MSG_POST) {
        forward_post(a, c, msg, skey);
    }

    /* Create every move that just became possible. */
    if (in->coll == DPS_COLL_ALLTOALL) {
        if (local) {
            for (r = 0; r < c->size; r++) {
                if (in->ri[r].posted) {
                    move_add(a, in, r, i);
                }
            }
        }
        for (r = 0; r < c->size; r++) {
            if (r != i && is_local(a, c, r) && in->ri[r].posted) {
                move_add(a, in, i, r);
            }
        }
    } else if (i == in->root) {
        for (r = 0; r < c->size; r++) {
            if (r != i && is_local(a, c, r) && in->ri[r].posted) {
                move_add(a, in, i, r);
            }
        }
    } else if (local && in->ri[in->root].posted) {
        move_add(a, in, in->root, i);
    }
    if (local) {
        check_done(a, in, i);
        maybe_destroy(a, in);
    }
    return DPS_OK;
}

/* Source rank s of instance in has no more blocks to be read by us. */
static void source_read(agent_t *a, agent_inst_t *in, uint32_t s)
{
    agent_comm_t *c = in->comm;
    size_t len;
    void *msg;

    if (in->failed) {
        return;   /* nobody waits for reads of a failed instance */
    }
    if (is_local(a, c, s)) {
        in->ri[s].reads_left--;
        check_done(a, in, s);
        return;
    }
    msg = dps_msg_encode_read_done(in->key.comm_id, (uint32_t)in->key.seq,
                                   s, &len);
    if (msg == NULL ||
        agent_send_agent(a, agent_of(a, c, s), msg, len) != DPS_OK) {
        dps_error("cannot report a finished read to agent %u",
                  agent_of(a, c, s));
    }
}

static int handle_read_done(agent_t *a, const dps_msg_read_done_t *rd)
{
    agent_inst_key_t key = {rd->comm_id, rd->seq};
    agent_inst_t *in;

    HASH_FIND(hh, a->insts, &key, sizeof(key), in);
    if ((in != NULL && in->failed) ||
        (in == NULL && HASH_CNT(hh, a->tombs) > 0 && tomb_has(a, &key))) {
        return DPS_OK;   /* late news of a failed instance */
    }
    if (in == NULL || rd->src_comm_rank >= in->comm->size ||
        !is_local(a, in->comm, rd->src_comm_rank) ||
        in->ri[rd->src_comm_rank].reads_left == 0) {
        dps_error("unexpected read_done for rank %u of instance %u of "
                  "communicator %#llx", rd->src_comm_rank, rd->seq,
                  (unsigned long long)rd->comm_id);
        return DPS_ERR_PROTO;
    }
    in->ri[rd->src_comm_rank].reads_left--;
    check_done(a, in, rd->src_comm_rank);
    maybe_destroy(a, in);
    return DPS_OK;
}

/* INST_FAIL from another agent: fail the instance here too, creating it
 * failed if none of our ranks has posted it yet. */
static int handle_inst_fail(agent_t *a, const dps_msg_inst_fail_t *m)
{
    agent_inst_key_t key = {m->comm_id, m->seq};
    agent_inst_t *in;
    agent_comm_t *c;

    HASH_FIND(hh, a->insts, &key, sizeof(key), in);
    if (in != NULL) {
        inst_fail(a, in, m->status, 0);
        return DPS_OK;
    }
    if (tomb_has(a, &key)) {
        return DPS_OK;
    }
    HASH_FIND(hh, a->comms, &m->comm_id, sizeof(m->comm_id), c);
    if (c == NULL) {
        return DPS_ERR_AGAIN;   /* its members come with the first post */
    }
    return inst_bare(a, c, key, m->status) != NULL ? DPS_OK
                                                  : DPS_ERR_NOMEM;
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
    case DPS_MSG_READ_DONE:
        return handle_read_done(a, &msg->u.read_done);
    case DPS_MSG_INST_FAIL:
        return handle_inst_fail(a, &msg->u.inst_fail);
    case DPS_MSG_COMM_FREE:
        return handle_comm_free(a, &msg->u.comm_free);
    case DPS_MSG_REG_FREE:
        return handle_reg_free(a, msg);
    default:
        return DPS_ERR_PROTO;
    }
}

/* ---- DMA engines ------------------------------------------------------- */

/*
 * Direct path: a move whose destination rank has a DMA engine (its
 * segment says engine_up) and whose source shares this host goes to that
 * engine as one command: one copy, by the destination's own process,
 * straight from the source's memory. The agent keeps the bookkeeping.
 */
static int engine_takes(agent_t *a, agent_move_t *m, agent_link_t **lp)
{
    agent_inst_t *in = m->inst;
    uint32_t dw = in->comm->members[m->dst];
    uint32_t sw = in->comm->members[m->src];
    agent_link_t *l = agent_link(a, dw);

    if (l == NULL || m->issued != 0 || !agent_rank_cma(a, sw) ||
        !agent_rank_cma(a, dw) ||
        !__atomic_load_n(&l->shm->engine_up, __ATOMIC_ACQUIRE) ||
        l->cmds_out >= DPS_SHM_CMD_SLOTS) {
        return 0;
    }
    *lp = l;
    return 1;
}

void agent_dispatch_engines(agent_t *a)
{
    agent_move_t **mp = &a->q_head, *m, *prev = NULL;
    agent_link_t *l;

    while ((m = *mp) != NULL) {
        agent_inst_t *in = m->inst;
        dps_cmd_t c;

        if (!engine_takes(a, m, &l)) {
            prev = m;
            mp = &m->next;
            continue;
        }
        memset(&c, 0, sizeof(c));
        c.id = (uint64_t)(uintptr_t)m;
        c.op = DPS_CMD_READ;
        c.src_pid = a->rank_pid[in->comm->members[m->src]];
        c.src_addr = m->src_addr;
        c.dst_addr = m->dst_addr;
        c.len = m->len;
        if (!dps_shm_cmd_put(l->shm, &c)) {
            prev = m;
            mp = &m->next;
            continue;
        }
        l->cmds_out++;
        m->cmd_key = m;
        HASH_ADD(hh_cmd, l->cmds, cmd_key, sizeof(void *), m);
        l->woke_engine = 1;
        a->engine_cmds++;
        m->issued = m->len;
        *mp = m->next;   /* off the queue; the engine has it */
        if (a->q_tail == m) {
            a->q_tail = prev;
        }
    }
    /* Wake the engines that sleep and were given work. */
    for (l = a->links; l != NULL; l = l->next) {
        if (!l->woke_engine) {
            continue;
        }
        l->woke_engine = 0;
        dps_shm_fence();
        if (__atomic_load_n(&l->shm->engine_sleeping, __ATOMIC_RELAXED)) {
            __atomic_add_fetch(&l->shm->engine_wake, 1, __ATOMIC_RELEASE);
            dps_shm_futex_wake(&l->shm->engine_wake);
        }
    }
}

void agent_engine_done(agent_t *a, agent_link_t *l, const dps_done_t *d)
{
    void *key = (void *)(uintptr_t)d->id;
    agent_move_t *m;
    agent_inst_t *in;

    /* The id comes back through memory the rank can write: only one of
     * the commands given out is taken at its word. */
    HASH_FIND(hh_cmd, l->cmds, &key, sizeof(void *), m);
    if (m == NULL) {
        dps_error("rank %u's engine reports a command it was not given",
                  l->world);
        return;
    }
    HASH_DELETE(hh_cmd, l->cmds, m);
    l->cmds_out--;
    in = m->inst;
    if (d->status != DPS_OK) {
        dps_error("rank %u's DMA engine failed to read %llu bytes from "
                  "rank %u", l->world, (unsigned long long)m->len,
                  in->comm->members[m->src]);
        in->error = DPS_ERR_IO;
    }
    m->read = m->written = m->len;
    if (--in->src_left[m->src] == 0) {
        source_read(a, in, m->src);
    }
    in->moves_live--;
    if (--in->ri[m->dst].in_left == 0) {
        /* Written by the rank's own process, synchronously: in place. */
        in->ri[m->dst].landed = 1;
        check_done(a, in, m->dst);
    }
    free(m);
    maybe_destroy(a, in);
}

/* ---- executor ---------------------------------------------------------- */

static void slot_cb(void *request, ucs_status_t status, void *user_data)
{
    agent_slot_t *s = user_data;

    s->completed = 1;
    s->status = status;
    ucp_request_free(request);
}

static void flush_cb(void *request, ucs_status_t status, void *user_data)
{
    agent_flush_t *f = user_data;

    f->completed = 1;
    f->status = status;
    ucp_request_free(request);
}

/*
 * Same-node rank: process_vm_readv/writev copy between its memory and the
 * staging slot at once, truly one-sided (UCX 1.13 has no one-sided RMA
 * over CMA: ucp_get/put on such memory is emulated with messages that the
 * target rank must progress, which is exactly what offload must avoid).
 */
/* One CMA stage of slot s (1 read, 2 write) with rank world's memory. */
static ucs_status_t cma_stage(agent_t *a, agent_slot_t *s, int stage,
                              uint32_t world)
{
    agent_move_t *m = s->move;
    uint64_t raddr = (stage == 1 ? m->src_addr : m->dst_addr) + s->off;
    size_t done = 0;

    while (done < s->len) {
        struct iovec l = {s->data + done, s->len - done};
        struct iovec r = {(void *)(uintptr_t)(raddr + done), s->len - done};
        ssize_t n = (stage == 1)
            ? process_vm_readv((pid_t)a->rank_pid[world], &l, 1, &r, 1, 0)
            : process_vm_writev((pid_t)a->rank_pid[world], &l, 1, &r, 1, 0);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            dps_error("%s %zu bytes at %#llx of rank %u (pid %u): %s",
                      stage == 1 ? "reading" : "writing", s->len - done,
                      (unsigned long long)(raddr + done), world,
                      a->rank_pid[world], n < 0 ? strerror(errno) : "eof");
            return UCS_ERR_IO_ERROR;
        }
        done += (size_t)n;
    }
    return UCS_OK;
}

static void cma_copy(agent_t *a, agent_slot_t *s, uint32_t world)
{
    s->status = cma_stage(a, s, s->state, world);
    s->completed = 1;
}

static void *copier_main(void *arg)
{
    agent_copiers_t *cp = arg;
    agent_t *a = cp->a;

    for (;;) {
        agent_slot_t *s;
        agent_inst_t *in;
        uint64_t one = 1;

        pthread_mutex_lock(&cp->lock);
        while (cp->n == 0 && !cp->stop) {
            pthread_cond_wait(&cp->cond, &cp->lock);
        }
        if (cp->n == 0) {
            pthread_mutex_unlock(&cp->lock);
            return NULL;
        }
        s = cp->ring[cp->head];
        cp->head = (cp->head + 1) % a->nslots;
        cp->n--;
        pthread_mutex_unlock(&cp->lock);

        in = s->move->inst;
        s->status = cma_stage(a, s, 1, in->comm->members[s->move->src]);
        s->wstatus = s->status != UCS_OK ? s->status :
                     cma_stage(a, s, 2, in->comm->members[s->move->dst]);
        __atomic_store_n(&s->completed, 1, __ATOMIC_RELEASE);
        if (write(cp->done_fd, &one, sizeof(one)) != sizeof(one)) {
            /* the main thread also polls the flags */
        }
    }
}

static void copiers_stop(agent_t *a)
{
    agent_copiers_t *cp = a->copiers;
    unsigned i;

    if (cp == NULL) {
        return;
    }
    pthread_mutex_lock(&cp->lock);
    cp->stop = 1;
    pthread_cond_broadcast(&cp->cond);
    pthread_mutex_unlock(&cp->lock);
    for (i = 0; i < cp->nthr; i++) {
        pthread_join(cp->thr[i], NULL);
    }
    if (cp->done_fd >= 0) {
        close(cp->done_fd);
    }
    pthread_mutex_destroy(&cp->lock);
    pthread_cond_destroy(&cp->cond);
    free(cp->thr);
    free(cp->ring);
    free(cp);
    a->copiers = NULL;
}

/* Started at the first job, after the spawning rank set our CPU mask and
 * scheduling: threads inherit both from the main thread. */
static int copiers_start(agent_t *a)
{
    agent_copiers_t *cp = calloc(1, sizeof(*cp));
    unsigned i;

    if (cp == NULL) {
        return -1;
    }
    cp->a = a;
    cp->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    cp->thr = calloc(a->nslots, sizeof(*cp->thr));
    cp->ring = calloc(a->nslots, sizeof(*cp->ring));
    pthread_mutex_init(&cp->lock, NULL);
    pthread_cond_init(&cp->cond, NULL);
    a->copiers = cp;
    if (cp->done_fd < 0 || cp->thr == NULL || cp->ring == NULL) {
        copiers_stop(a);
        return -1;
    }
    for (i = 0; i < a->nslots; i++) {
        if (pthread_create(&cp->thr[i], NULL, copier_main, cp) != 0) {
            break;
        }
        cp->nthr++;
    }
    if (cp->nthr == 0) {
        copiers_stop(a);
        return -1;
    }
    agent_copiers_started(a);
    return 0;
}

/* Hand slot s (both sides copied with CMA) to a copy thread. */
static int copiers_submit(agent_t *a, agent_slot_t *s)
{
    agent_copiers_t *cp;

    if (a->copiers == NULL && copiers_start(a) != 0) {
        return -1;
    }
    cp = a->copiers;
    s->threaded = 1;
    __atomic_store_n(&s->completed, 0, __ATOMIC_RELAXED);
    pthread_mutex_lock(&cp->lock);
    cp->ring[(cp->head + cp->n) % a->nslots] = s;
    cp->n++;
    pthread_cond_signal(&cp->cond);
    pthread_mutex_unlock(&cp->lock);
    a->copy_jobs++;
    return 0;
}

static void slot_start(agent_t *a, agent_slot_t *s)
{
    agent_move_t *m = s->move;
    agent_inst_t *in = m->inst;
    ucp_request_param_t rp;
    ucs_status_ptr_t req;

    memset(&rp, 0, sizeof(rp));
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                      UCP_OP_ATTR_FIELD_USER_DATA;
    rp.cb.send = slot_cb;
    rp.user_data = s;
    if (s->state == 2 && s->threaded) {
        /* The copy thread wrote the chunk right after reading it. */
        s->threaded = 0;
        s->status = s->wstatus;
        s->completed = 1;
        return;
    }
    s->completed = 0;
    {
        uint32_t w = in->comm->members[s->state == 1 ? m->src : m->dst];

        if (agent_rank_cma(a, w)) {
            if (s->state == 1 && a->nslots > 1 &&
                agent_rank_cma(a, in->comm->members[m->dst]) &&
                copiers_submit(a, s) == 0) {
                return;
            }
            cma_copy(a, s, w);
            return;
        }
    }
    {
        agent_rinfo_t *ri = &in->ri[s->state == 1 ? m->src : m->dst];
        agent_key_t *k = (s->state == 2 && in->coll == DPS_COLL_ALLTOALL) ?
                         ri->recv_key : ri->send_key;
        ucp_rkey_h rkey = k != NULL ? key_rkey(a, k) : NULL;

        if (rkey == NULL) {
            s->completed = 1;
            s->status = UCS_ERR_INVALID_PARAM;
            return;
        }
        if (s->state == 1) {
            req = ucp_get_nbx(a->rank_ep[in->comm->members[m->src]],
                              s->data, s->len, m->src_addr + s->off, rkey,
                              &rp);
        } else {
            req = ucp_put_nbx(a->rank_ep[in->comm->members[m->dst]],
                              s->data, s->len, m->dst_addr + s->off, rkey,
                              &rp);
        }
    }
    if (req == NULL) {
        s->completed = 1;
        s->status = UCS_OK;
    } else if (UCS_PTR_IS_ERR(req)) {
        s->completed = 1;
        s->status = UCS_PTR_STATUS(req);
    }
}

static void flush_rank(agent_t *a, agent_inst_t *in, uint32_t r)
{
    agent_flush_t *f;
    ucp_request_param_t rp;
    ucs_status_ptr_t req;

    if (agent_rank_cma(a, in->comm->members[r])) {
        /* process_vm_writev has returned: the data is in place. */
        in->ri[r].landed = 1;
        check_done(a, in, r);
        return;
    }
    f = calloc(1, sizeof(*f));
    if (f == NULL) {
        in->ri[r].landed = 1; /* best effort: UCX completion is local */
        check_done(a, in, r);
        return;
    }
    f->inst = in;
    f->rank = r;
    in->ri[r].flushing = 1;
    memset(&rp, 0, sizeof(rp));
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                      UCP_OP_ATTR_FIELD_USER_DATA;
    rp.cb.send = flush_cb;
    rp.user_data = f;
    req = ucp_ep_flush_nbx(a->rank_ep[in->comm->members[r]], &rp);
    if (req == NULL || UCS_PTR_IS_ERR(req)) {
        f->completed = 1;
        f->status = (req == NULL) ? UCS_OK : UCS_PTR_STATUS(req);
    }
    f->next = a->flushes;
    a->flushes = f;
    a->inflight++;
}

/* A chunk finished its current stage; returns 1 if the slot is free. */
static int slot_advance(agent_t *a, agent_slot_t *s)
{
    agent_move_t *m = s->move;
    agent_inst_t *in = m->inst;

    if (s->status != UCS_OK) {
        dps_error("%s of %llu bytes for rank %u failed: %s",
                  s->state == 1 ? "read" : "write",
                  (unsigned long long)s->len,
                  in->comm->members[s->state == 1 ? m->src : m->dst],
                  ucs_status_string(s->status));
        in->error = DPS_ERR_UCX;
    }
    if (s->state == 1) {
        if (s->threaded) {
            a->copy_jobs--;
        }
        m->read += s->len;
        if (m->read == m->len && --in->src_left[m->src] == 0) {
            source_read(a, in, m->src);
        }
        s->state = 2;
        slot_start(a, s);
        return 0;
    }
    m->written += s->len;
    if (m->written == m->len) {
        in->moves_live--;
        if (--in->ri[m->dst].in_left == 0) {
            flush_rank(a, in, m->dst);
        }
        free(m);
        maybe_destroy(a, in); /* in may be gone from here on */
    }
    s->state = 0;
    s->move = NULL;
    a->inflight--;
    return 1;
}

void agent_schedule(agent_t *a)
{
    agent_flush_t **fp;
    int progress = 1, i;

    while (progress) {
        progress = 0;
        for (i = 0; i < (int)a->nslots; i++) {
            agent_slot_t *s = &a->slots[i];

            /* Keep this slot busy while its stages complete at once (CMA
             * copies are synchronous): one staging buffer, hot in cache,
             * instead of a walk over all of them. */
            for (;;) {
            if (s->state != 0 &&
                __atomic_load_n(&s->completed, __ATOMIC_ACQUIRE)) {
                slot_advance(a, s);
                progress = 1;
                continue;
            }
            if (s->state == 0 && a->q_head != NULL) {
                agent_move_t *m = a->q_head;

                s->move = m;
                s->off = m->issued;
                s->len = m->len - m->issued;
                if (s->len > a->chunk) {
                    s->len = a->chunk;
                }
                /* Stage the chunk at the destination's offset modulo
                 * 64: the kernel's copy (rep movsb) runs 2-6x slower
                 * between mutually misaligned buffers, and malloc'ed
                 * user buffers start 16 bytes into a page. */
                s->data = s->buf +
                          ((m->dst_addr + s->off) & (AGENT_ALIGN - 1));
                m->issued += s->len;
                if (m->issued == m->len) {
                    a->q_head = m->next;
                    if (a->q_head == NULL) {
                        a->q_tail = NULL;
                    }
                }
                s->state = 1;
                a->inflight++;
                slot_start(a, s);
                progress = 1;
                continue;
            }
            break;
            }
        }
        for (fp = &a->flushes; *fp != NULL;) {
            agent_flush_t *f = *fp;

            if (!f->completed) {
                fp = &f->next;
                continue;
            }
            *fp = f->next;
            a->inflight--;
            if (f->status != UCS_OK) {
                dps_error("flush to rank %u failed: %s",
                          f->inst->comm->members[f->rank],
                          ucs_status_string(f->status));
                f->inst->error = DPS_ERR_UCX;
            }
            f->inst->ri[f->rank].flushing = 0;
            f->inst->ri[f->rank].landed = 1;
            check_done(a, f->inst, f->rank);
            maybe_destroy(a, f->inst);
            free(f);
            progress = 1;
        }
    }
}
