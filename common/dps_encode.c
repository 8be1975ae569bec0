/* SPDX-License-Identifier: BSD-3-Clause */
/* Encoding of the wire messages of dps_proto.h (dps_proto.c reads them
 * back). */
#include "common/dps_proto.h"
#include "common/dps_wire.h"
#include "common/dps_status.h"

#include <stdlib.h>
#include <string.h>

static void *msg_alloc(dps_msg_type_t type, size_t body, size_t *len)
{
    dps_msg_hdr_t *h;
    size_t         total = sizeof(*h) + body;

    if (total > UINT32_MAX) {
        return NULL;
    }
    h = calloc(1, total);
    if (h == NULL) {
        return NULL;
    }
    h->magic = DPS_PROTO_MAGIC;
    h->version = DPS_PROTO_VERSION;
    h->type = (uint16_t)type;
    h->length = (uint32_t)total;
    *len = total;
    return h;
}

static void *msg_fixed(dps_msg_type_t type, const void *body, size_t blen,
                       size_t *len)
{
    char *m = msg_alloc(type, blen, len);

    if (m != NULL) {
        memcpy(m + sizeof(dps_msg_hdr_t), body, blen);
    }
    return m;
}

/* HELLO or PING: the same body. */
static void *encode_hello(dps_msg_type_t type, const dps_msg_hello_t *h,
                          size_t *len)
{
    dps_msg_hello_t b;

    if (h == NULL ||
        !dps_msg_token_ok(h->world_rank, h->token_addr, h->token)) {
        return NULL;
    }
    b.world_rank = h->world_rank;
    b.pid = h->pid;
    b.token_addr = h->token_addr;
    b.token = h->token;
    return msg_fixed(type, &b, sizeof(b), len);
}

void *dps_msg_encode_hello(const dps_msg_hello_t *hello, size_t *len)
{
    return encode_hello(DPS_MSG_HELLO, hello, len);
}

void *dps_msg_encode_ready(int32_t status, uint32_t formats, uint32_t cma,
                           size_t *len)
{
    dps_msg_ready_t b = {status, formats, cma, 0};

    return msg_fixed(DPS_MSG_READY, &b, sizeof(b), len);
}

void *dps_msg_encode_complete(uint64_t op_token, int32_t status, size_t *len)
{
    dps_msg_complete_t b = {op_token, status, 0};

    return msg_fixed(DPS_MSG_COMPLETE, &b, sizeof(b), len);
}

void *dps_msg_encode_comm_free(uint64_t comm_id, uint32_t world_rank,
                               size_t *len)
{
    dps_msg_comm_free_t b = {comm_id, world_rank, 0};

    return msg_fixed(DPS_MSG_COMM_FREE, &b, sizeof(b), len);
}

void *dps_msg_encode_send_done(uint64_t comm_id, uint32_t seq, uint32_t src,
                               uint32_t dst, uint32_t k, size_t *len)
{
    dps_msg_send_done_t b = {comm_id, seq, src, dst, k};

    return msg_fixed(DPS_MSG_SEND_DONE, &b, sizeof(b), len);
}

void *dps_msg_encode_round(uint64_t comm_id, uint32_t seq, uint32_t rank,
                           uint32_t round, size_t *len)
{
    dps_msg_round_t b = {comm_id, seq, rank, round, 0};

    return msg_fixed(DPS_MSG_ROUND, &b, sizeof(b), len);
}

void *dps_msg_encode_inst_fail(uint64_t comm_id, uint32_t seq, int32_t status,
                               size_t *len)
{
    dps_msg_inst_fail_t b = {comm_id, seq, status};

    return msg_fixed(DPS_MSG_INST_FAIL, &b, sizeof(b), len);
}

void *dps_msg_encode_shutdown(size_t *len)
{
    return msg_alloc(DPS_MSG_SHUTDOWN, 0, len);
}

void *dps_msg_encode_fetch(const dps_msg_fetch_t *f, size_t *len)
{
    return msg_fixed(DPS_MSG_FETCH, f, sizeof(*f), len);
}

int dps_msg_push_put(const dps_msg_push_t *f, void *out)
{
    dps_msg_hdr_t h;

    if (f->src >= DPS_MAX_RANKS || f->dst >= DPS_MAX_RANKS ||
        f->agent >= DPS_MAX_RANKS ||
        (f->flags & ~(DPS_PUSH_FETCH | DPS_PUSH_EARLY)) != 0 ||
        f->flags == (DPS_PUSH_FETCH | DPS_PUSH_EARLY) || f->off > f->total ||
        f->len > f->total - f->off ||
        ((f->flags & DPS_PUSH_FETCH) && (f->len != 0 || f->off != 0)) ||
        f->len > UINT32_MAX - DPS_PUSH_HEAD) {
        return DPS_ERR_INVALID;
    }
    memset(&h, 0, sizeof(h));
    h.magic = DPS_PROTO_MAGIC;
    h.version = DPS_PROTO_VERSION;
    h.type = DPS_MSG_PUSH;
    h.length = (uint32_t)(DPS_PUSH_HEAD + f->len);
    memcpy(out, &h, sizeof(h));
    memcpy((char *)out + sizeof(h), f, sizeof(*f));
    return DPS_OK;
}

void *dps_msg_encode_credit(uint32_t agent, uint64_t bytes, size_t *len)
{
    dps_msg_credit_t b = {agent, 0, bytes};

    if (agent >= DPS_MAX_RANKS) {
        return NULL;
    }
    return msg_fixed(DPS_MSG_CREDIT, &b, sizeof(b), len);
}

int dps_bundle_header(size_t body_len, void *out)
{
    dps_msg_hdr_t h;

    if (body_len < sizeof(h) || body_len > UINT32_MAX - sizeof(h)) {
        return DPS_ERR_INVALID;
    }
    memset(&h, 0, sizeof(h));
    h.magic = DPS_PROTO_MAGIC;
    h.version = DPS_PROTO_VERSION;
    h.type = DPS_MSG_BUNDLE;
    h.length = (uint32_t)(sizeof(h) + body_len);
    memcpy(out, &h, sizeof(h));
    return DPS_OK;
}

void *dps_msg_encode_stats_req(size_t *len)
{
    return msg_alloc(DPS_MSG_STATS_REQ, 0, len);
}

void *dps_msg_encode_ping(const dps_msg_hello_t *hello, size_t *len)
{
    return encode_hello(DPS_MSG_PING, hello, len);
}

void *dps_msg_encode_pong(size_t *len)
{
    return msg_alloc(DPS_MSG_PONG, 0, len);
}

void *dps_msg_encode_shm(const dps_msg_hello_t *who, int32_t fd, size_t *len)
{
    dps_msg_shm_t b;

    if (who == NULL || fd < 0 ||
        !dps_msg_token_ok(who->world_rank, who->token_addr, who->token)) {
        return NULL;
    }
    memset(&b, 0, sizeof(b));
    b.world_rank = who->world_rank;
    b.pid = who->pid;
    b.fd = fd;
    b.token_addr = who->token_addr;
    b.token = who->token;
    return msg_fixed(DPS_MSG_SHM, &b, sizeof(b), len);
}

void *dps_msg_encode_stats(const dps_msg_stats_t *stats, size_t *len)
{
    return msg_fixed(DPS_MSG_STATS, stats, sizeof(*stats), len);
}

void *dps_msg_encode_procs(uint32_t nranks, const uint32_t *pid,
                           const uint32_t *node, const uint64_t *token_addr,
                           const uint64_t *token, size_t *len)
{
    dps_msg_procs_t f = {nranks, 0};
    size_t          tab = sizeof(uint32_t) * (size_t)nranks;
    char           *m, *p;
    uint32_t        i;

    if (nranks == 0 || nranks > DPS_MAX_RANKS || pid == NULL || node == NULL ||
        token_addr == NULL || token == NULL) {
        return NULL;
    }
    for (i = 0; i < nranks; i++) {
        if (!dps_msg_token_ok(i, token_addr[i], token[i])) {
            return NULL;
        }
    }
    m = msg_alloc(DPS_MSG_PROCS, sizeof(f) + 6 * tab, len);
    if (m != NULL) {
        p = m + sizeof(dps_msg_hdr_t);
        memcpy(p, &f, sizeof(f));
        p += sizeof(f);
        memcpy(p, pid, tab);
        memcpy(p + tab, node, tab);
        memcpy(p + 2 * tab, token_addr, 2 * tab);
        memcpy(p + 4 * tab, token, 2 * tab);
    }
    return m;
}

void *dps_msg_encode_post(dps_msg_type_t type, const dps_msg_post_t *fixed,
                          const void *const rkey[DPS_NBUF],
                          const dps_step_t *steps, const uint32_t *members,
                          size_t *len)
{
    size_t mlen, slen;
    char  *m, *p;
    int    b;

    if ((type != DPS_MSG_POST && type != DPS_MSG_PEER_POST) ||
        dps_msg_post_check(fixed, NULL, 0) != DPS_OK ||
        (fixed->nmembers != 0 && members == NULL) ||
        (fixed->nsteps != 0 && steps == NULL)) {
        return NULL;
    }
    for (b = 0; b < DPS_NBUF; b++) {
        if (fixed->rkey_len[b] != 0 && (rkey == NULL || rkey[b] == NULL)) {
            return NULL;
        }
    }
    mlen = (size_t)fixed->nmembers * sizeof(uint32_t);
    slen = (size_t)fixed->nsteps * sizeof(dps_step_t);
    m = msg_alloc(type, dps_msg_post_body(fixed), len);
    if (m == NULL) {
        return NULL;
    }
    p = m + sizeof(dps_msg_hdr_t);
    memcpy(p, fixed, sizeof(*fixed));
    p += sizeof(*fixed);
    for (b = 0; b < DPS_NBUF; b++) {
        if (fixed->rkey_len[b]) {
            memcpy(p, rkey[b], fixed->rkey_len[b]);
        }
        p += fixed->rkey_len[b];
    }
    if (slen) {
        memcpy(p, steps, slen);
    }
    p += slen;
    if (mlen) {
        memcpy(p, members, mlen);
    }
    return m;
}

void *dps_msg_encode_sched_free(uint32_t world_rank, uint32_t count,
                                const uint64_t *ids, size_t *len)
{
    void *m = dps_msg_encode_reg_free(world_rank, count, ids, len);

    if (m != NULL) {
        ((dps_msg_hdr_t *)m)->type = DPS_MSG_SCHED_FREE;
    }
    return m;
}

void *dps_msg_encode_reg_free(uint32_t world_rank, uint32_t count,
                              const uint64_t *ids, size_t *len)
{
    dps_msg_reg_free_t f = {world_rank, count};
    char              *m;

    if (count == 0 || count > DPS_MAX_REG_FREE || ids == NULL) {
        return NULL;
    }
    m = msg_alloc(DPS_MSG_REG_FREE, sizeof(f) + count * sizeof(*ids), len);
    if (m != NULL) {
        memcpy(m + sizeof(dps_msg_hdr_t), &f, sizeof(f));
        memcpy(m + sizeof(dps_msg_hdr_t) + sizeof(f), ids,
               count * sizeof(*ids));
    }
    return m;
}

void *dps_msg_encode_job(const dps_msg_job_t *fixed,
                         const uint32_t      *rank_agent,
                         const void *const   *rank_addrs,
                         const uint32_t      *rank_addr_len,
                         const void *const   *agent_addrs,
                         const uint32_t *agent_addr_len, size_t *len)
{
    size_t   body, addrs = 0;
    uint32_t i;
    char    *m, *p;

    if (fixed->nranks == 0 || fixed->nranks > DPS_MAX_RANKS ||
        fixed->nagents == 0 || fixed->nagents > fixed->nranks ||
        fixed->agent_idx >= fixed->nagents ||
        (fixed->flags & ~DPS_JOB_PUSH) != 0 || fixed->pad != 0) {
        return NULL;
    }
    for (i = 0; i < fixed->nranks; i++) {
        if (rank_addr_len[i] == 0 || rank_addr_len[i] > DPS_MAX_ADDR ||
            rank_agent[i] >= fixed->nagents) {
            return NULL;
        }
        addrs += rank_addr_len[i];
    }
    for (i = 0; i < fixed->nagents; i++) {
        if (agent_addr_len[i] == 0 || agent_addr_len[i] > DPS_MAX_ADDR) {
            return NULL;
        }
        addrs += agent_addr_len[i];
    }
    body = sizeof(*fixed) +
           sizeof(uint32_t) * (2 * (size_t)fixed->nranks + fixed->nagents) +
           addrs;
    m = msg_alloc(DPS_MSG_JOB_INFO, body, len);
    if (m == NULL) {
        return NULL;
    }
    p = m + sizeof(dps_msg_hdr_t);
    memcpy(p, fixed, sizeof(*fixed));
    p += sizeof(*fixed);
    memcpy(p, rank_agent, sizeof(uint32_t) * fixed->nranks);
    p += sizeof(uint32_t) * fixed->nranks;
    memcpy(p, rank_addr_len, sizeof(uint32_t) * fixed->nranks);
    p += sizeof(uint32_t) * fixed->nranks;
    memcpy(p, agent_addr_len, sizeof(uint32_t) * fixed->nagents);
    p += sizeof(uint32_t) * fixed->nagents;
    for (i = 0; i < fixed->nranks; i++) {
        memcpy(p, rank_addrs[i], rank_addr_len[i]);
        p += rank_addr_len[i];
    }
    for (i = 0; i < fixed->nagents; i++) {
        memcpy(p, agent_addrs[i], agent_addr_len[i]);
        p += agent_addr_len[i];
    }
    return m;
}
