/* SPDX-License-Identifier: BSD-3-Clause */
/* Encoding and validating decoding of the wire messages of dps_proto.h. */
#include "common/dps_proto.h"
#include "common/dps_status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *dps_msg_type_str(unsigned type)
{
    static const char *names[] = {
        "?", "hello", "job_info", "ready", "post", "complete", "comm_free",
        "peer_post", "send_done", "shutdown", "procs", "stats_req",
        "stats", "reg_free", "ping", "pong", "shm", "inst_fail", "round",
        "sched_free"
    };

    return (type < DPS_MSG_TYPE_MAX) ? names[type] : "?";
}

const char *dps_coll_str(unsigned coll)
{
    static const char *names[DPS_COLL_MAX] = {
        "?", "MPI_Ialltoall", "MPI_Ibcast", "MPI_Ibarrier", "MPI_Igather",
        "MPI_Igatherv", "MPI_Iscatter", "MPI_Iscatterv", "MPI_Iallgather",
        "MPI_Iallgatherv", "MPI_Ialltoallv", "MPI_Ialltoallw", "MPI_Ireduce",
        "MPI_Iallreduce", "MPI_Ireduce_scatter", "MPI_Ireduce_scatter_block",
        "MPI_Iscan", "MPI_Iexscan", "MPI_Ineighbor_allgather",
        "MPI_Ineighbor_allgatherv", "MPI_Ineighbor_alltoall",
        "MPI_Ineighbor_alltoallv", "MPI_Ineighbor_alltoallw",
        "dpushim_group_end", "MPI_Alltoall_init", "MPI_Bcast_init",
        "MPI_Barrier_init", "MPI_Gather_init", "MPI_Gatherv_init",
        "MPI_Scatter_init", "MPI_Scatterv_init", "MPI_Allgather_init",
        "MPI_Allgatherv_init", "MPI_Alltoallv_init", "MPI_Alltoallw_init",
        "MPI_Reduce_init", "MPI_Allreduce_init", "MPI_Reduce_scatter_init",
        "MPI_Reduce_scatter_block_init", "MPI_Scan_init", "MPI_Exscan_init",
        "MPI_Neighbor_allgather_init", "MPI_Neighbor_allgatherv_init",
        "MPI_Neighbor_alltoall_init", "MPI_Neighbor_alltoallv_init",
        "MPI_Neighbor_alltoallw_init", "dpushim_group_end_persistent"
    };

    return coll < DPS_COLL_MAX ? names[coll] : "?";
}

static int fail(char *err, size_t err_len, const char *fmt, ...)
{
    va_list ap;

    if (err != NULL && err_len > 0) {
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return DPS_ERR_PROTO;
}

/* The fixed part of a post, checked the same way by encoder and decoder. */
static int post_check(const dps_msg_post_t *f, char *err, size_t err_len)
{
    int b;

    if (f->coll == 0 || f->coll >= DPS_COLL_MAX) {
        return fail(err, err_len, "post: unknown collective %u", f->coll);
    }
    if (f->comm_size == 0 || f->comm_size > DPS_MAX_RANKS ||
        f->comm_rank >= f->comm_size) {
        return fail(err, err_len, "post: rank %u of size %u", f->comm_rank,
                    f->comm_size);
    }
    for (b = 0; b < DPS_NBUF; b++) {
        if (f->rkey_len[b] > DPS_MAX_RKEY) {
            return fail(err, err_len, "post: rkey too long");
        }
        if (f->rkey_len[b] != 0 && f->buf_reg[b] == 0) {
            return fail(err, err_len, "post: a key for no registration");
        }
    }
    if (f->nsteps > DPS_MAX_STEPS) {
        return fail(err, err_len, "post: %u steps", f->nsteps);
    }
    if ((f->flags & ~(uint32_t)(DPS_POST_SCHED | DPS_POST_GATHER)) != 0 ||
        (!(f->flags & DPS_POST_GATHER) &&
         (f->send_map != 0 || f->send_nmap != 0)) ||
        ((f->flags & DPS_POST_GATHER) &&
         (f->send_map == 0 || f->send_nmap == 0 || f->buf_reg[0] != 0)) ||
        (f->nsteps != 0 && !(f->flags & DPS_POST_SCHED))) {
        return fail(err, err_len, "post: flags %#x with %u steps", f->flags,
                    f->nsteps);
    }
    if (f->nmembers != 0 && f->nmembers != f->comm_size) {
        return fail(err, err_len, "post: %u members for size %u",
                    f->nmembers, f->comm_size);
    }
    if (f->error == 0 && f->sched_id == 0) {
        return fail(err, err_len, "post: no schedule id");
    }
    return DPS_OK;
}

static size_t post_body(const dps_msg_post_t *f)
{
    return sizeof(*f) + (size_t)f->rkey_len[0] + f->rkey_len[1] +
           f->rkey_len[2] + (size_t)f->nsteps * sizeof(dps_step_t) +
           (size_t)f->nmembers * sizeof(uint32_t);
}

static void *msg_alloc(dps_msg_type_t type, size_t body, size_t *len)
{
    dps_msg_hdr_t *h;
    size_t total = sizeof(*h) + body;

    if (total > UINT32_MAX) {
        return NULL;
    }
    h = calloc(1, total);
    if (h == NULL) {
        return NULL;
    }
    h->magic   = DPS_PROTO_MAGIC;
    h->version = DPS_PROTO_VERSION;
    h->type    = (uint16_t)type;
    h->length  = (uint32_t)total;
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

void *dps_msg_encode_hello(uint32_t world_rank, uint32_t pid, size_t *len)
{
    dps_msg_hello_t b = {world_rank, pid};

    return msg_fixed(DPS_MSG_HELLO, &b, sizeof(b), len);
}

void *dps_msg_encode_ready(int32_t status, uint32_t formats, size_t *len)
{
    dps_msg_ready_t b = {status, formats};

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

void *dps_msg_encode_inst_fail(uint64_t comm_id, uint32_t seq,
                               int32_t status, size_t *len)
{
    dps_msg_inst_fail_t b = {comm_id, seq, status};

    return msg_fixed(DPS_MSG_INST_FAIL, &b, sizeof(b), len);
}

void *dps_msg_encode_shutdown(size_t *len)
{
    return msg_alloc(DPS_MSG_SHUTDOWN, 0, len);
}

void *dps_msg_encode_stats_req(size_t *len)
{
    return msg_alloc(DPS_MSG_STATS_REQ, 0, len);
}

void *dps_msg_encode_ping(uint32_t world_rank, uint32_t pid, size_t *len)
{
    dps_msg_hello_t b = {world_rank, pid};

    return msg_fixed(DPS_MSG_PING, &b, sizeof(b), len);
}

void *dps_msg_encode_pong(size_t *len)
{
    return msg_alloc(DPS_MSG_PONG, 0, len);
}

void *dps_msg_encode_shm(uint32_t world_rank, uint32_t pid, int32_t fd,
                         size_t *len)
{
    dps_msg_shm_t b = {world_rank, pid, fd, 0};

    return msg_fixed(DPS_MSG_SHM, &b, sizeof(b), len);
}

void *dps_msg_encode_stats(const dps_msg_stats_t *stats, size_t *len)
{
    return msg_fixed(DPS_MSG_STATS, stats, sizeof(*stats), len);
}

void *dps_msg_encode_procs(uint32_t nranks, const uint32_t *pid,
                           const uint32_t *node, size_t *len)
{
    dps_msg_procs_t f = {nranks, 0};
    size_t tab = sizeof(uint32_t) * (size_t)nranks;
    char *m;

    if (nranks == 0 || nranks > DPS_MAX_RANKS || pid == NULL ||
        node == NULL) {
        return NULL;
    }
    m = msg_alloc(DPS_MSG_PROCS, sizeof(f) + 2 * tab, len);
    if (m != NULL) {
        memcpy(m + sizeof(dps_msg_hdr_t), &f, sizeof(f));
        memcpy(m + sizeof(dps_msg_hdr_t) + sizeof(f), pid, tab);
        memcpy(m + sizeof(dps_msg_hdr_t) + sizeof(f) + tab, node, tab);
    }
    return m;
}

void *dps_msg_encode_post(dps_msg_type_t type, const dps_msg_post_t *fixed,
                          const void *const rkey[DPS_NBUF],
                          const dps_step_t *steps, const uint32_t *members,
                          size_t *len)
{
    size_t mlen, slen;
    char *m, *p;
    int b;

    if ((type != DPS_MSG_POST && type != DPS_MSG_PEER_POST) ||
        post_check(fixed, NULL, 0) != DPS_OK ||
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
    m = msg_alloc(type, post_body(fixed), len);
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
    char *m;

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
                         const uint32_t *rank_agent,
                         const void *const *rank_addrs,
                         const uint32_t *rank_addr_len,
                         const void *const *agent_addrs,
                         const uint32_t *agent_addr_len, size_t *len)
{
    size_t body, addrs = 0;
    uint32_t i;
    char *m, *p;

    if (fixed->nranks == 0 || fixed->nranks > DPS_MAX_RANKS ||
        fixed->nagents == 0 || fixed->nagents > fixed->nranks ||
        fixed->agent_idx >= fixed->nagents) {
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


/* Copy the fixed part of a body; the body must be exactly or at least n. */
static int take_fixed(const char *body, size_t blen, void *out, size_t n,
                      int exact)
{
    if (blen < n || (exact && blen != n)) {
        return -1;
    }
    memcpy(out, body, n);
    return 0;
}

static int decode_job(const char *body, size_t blen, dps_msg_t *msg,
                      char *err, size_t err_len)
{
    dps_msg_job_t *f = &msg->u.job.fixed;
    size_t need, addrs = 0;
    uint32_t i;
    const char *p;

    if (take_fixed(body, blen, f, sizeof(*f), 0)) {
        return fail(err, err_len, "job_info shorter than its fixed part");
    }
    if (f->nranks == 0 || f->nranks > DPS_MAX_RANKS || f->nagents == 0 ||
        f->nagents > f->nranks || f->agent_idx >= f->nagents) {
        return fail(err, err_len, "job_info counts out of range "
                    "(nranks %u nagents %u agent %u)", f->nranks,
                    f->nagents, f->agent_idx);
    }
    need = sizeof(*f) +
           sizeof(uint32_t) * (2 * (size_t)f->nranks + f->nagents);
    if (blen < need) {
        return fail(err, err_len, "job_info tables truncated");
    }
    p = body + sizeof(*f);
    /* Tables are read through dps_msg_u32: no alignment is assumed. */
    msg->u.job.rank_agent = (const uint32_t *)p;
    p += sizeof(uint32_t) * f->nranks;
    msg->u.job.rank_addr_len = (const uint32_t *)p;
    p += sizeof(uint32_t) * f->nranks;
    msg->u.job.agent_addr_len = (const uint32_t *)p;
    p += sizeof(uint32_t) * f->nagents;
    for (i = 0; i < f->nranks; i++) {
        if (dps_msg_u32(msg->u.job.rank_agent, i) >= f->nagents) {
            return fail(err, err_len, "job_info: rank %u has agent %u",
                        i, dps_msg_u32(msg->u.job.rank_agent, i));
        }
        uint32_t l = dps_msg_u32(msg->u.job.rank_addr_len, i);

        if (l == 0 || l > DPS_MAX_ADDR) {
            return fail(err, err_len, "job_info: bad address length");
        }
        addrs += l;
    }
    for (i = 0; i < f->nagents; i++) {
        uint32_t l = dps_msg_u32(msg->u.job.agent_addr_len, i);

        if (l == 0 || l > DPS_MAX_ADDR) {
            return fail(err, err_len, "job_info: bad address length");
        }
        addrs += l;
    }
    if (blen != need + addrs) {
        return fail(err, err_len, "job_info length %zu, expected %zu",
                    blen, need + addrs);
    }
    msg->u.job.rank_addrs = (const uint8_t *)p;
    for (i = 0; i < f->nranks; i++) {
        p += dps_msg_u32(msg->u.job.rank_addr_len, i);
    }
    msg->u.job.agent_addrs = (const uint8_t *)p;
    return DPS_OK;
}

static int decode_post(const char *body, size_t blen, dps_msg_t *msg,
                       char *err, size_t err_len)
{
    dps_msg_post_t *f = &msg->u.post.fixed;
    const char *p;
    int b;

    if (take_fixed(body, blen, f, sizeof(*f), 0)) {
        return fail(err, err_len, "post shorter than its fixed part");
    }
    if (post_check(f, err, err_len) != DPS_OK) {
        return DPS_ERR_PROTO;
    }
    if (blen != post_body(f)) {
        return fail(err, err_len, "post length %zu, expected %zu", blen,
                    post_body(f));
    }
    p = body + sizeof(*f);
    for (b = 0; b < DPS_NBUF; b++) {
        msg->u.post.rkey[b] = (const uint8_t *)p;
        p += f->rkey_len[b];
    }
    msg->u.post.steps = f->nsteps ? (const uint8_t *)p : NULL;
    p += (size_t)f->nsteps * sizeof(dps_step_t);
    /* rkey lengths may be odd: members are read with dps_msg_u32. */
    msg->u.post.members = f->nmembers ? (const uint32_t *)p : NULL;
    return DPS_OK;
}

static int check_header(const void *buf, size_t len, dps_msg_hdr_t *h,
                        char *err, size_t err_len)
{
    if (len < sizeof(*h)) {
        return fail(err, err_len, "message of %zu bytes is too short", len);
    }
    memcpy(h, buf, sizeof(*h));
    if (h->magic != DPS_PROTO_MAGIC) {
        return fail(err, err_len, "bad magic 0x%08x", h->magic);
    }
    if (h->version != DPS_PROTO_VERSION) {
        return fail(err, err_len, "protocol version %u, expected %u",
                    h->version, DPS_PROTO_VERSION);
    }
    if (h->length != len) {
        return fail(err, err_len, "length field %u but %zu bytes received",
                    h->length, len);
    }
    if (h->type == 0 || h->type >= DPS_MSG_TYPE_MAX) {
        return fail(err, err_len, "unknown message type %u", h->type);
    }
    return DPS_OK;
}

/* Messages of one fixed size; 1 if the body is not one of them. */
static int decode_fixed(const char *body, size_t blen, dps_msg_t *msg)
{
    switch (msg->type) {
    case DPS_MSG_HELLO:
    case DPS_MSG_PING:
        return take_fixed(body, blen, &msg->u.hello,
                          sizeof(dps_msg_hello_t), 1);
    case DPS_MSG_READY:
        return take_fixed(body, blen, &msg->u.ready,
                          sizeof(dps_msg_ready_t), 1);
    case DPS_MSG_SHM:
        return take_fixed(body, blen, &msg->u.shm, sizeof(dps_msg_shm_t),
                          1) || msg->u.shm.fd < 0;
    case DPS_MSG_COMPLETE:
        return take_fixed(body, blen, &msg->u.complete,
                          sizeof(dps_msg_complete_t), 1);
    case DPS_MSG_COMM_FREE:
        return take_fixed(body, blen, &msg->u.comm_free,
                          sizeof(dps_msg_comm_free_t), 1);
    case DPS_MSG_SEND_DONE:
        return take_fixed(body, blen, &msg->u.send_done,
                          sizeof(dps_msg_send_done_t), 1) ||
               msg->u.send_done.src >= DPS_MAX_RANKS ||
               msg->u.send_done.dst >= DPS_MAX_RANKS;
    case DPS_MSG_ROUND:
        return take_fixed(body, blen, &msg->u.round,
                          sizeof(dps_msg_round_t), 1) ||
               msg->u.round.rank >= DPS_MAX_RANKS;
    case DPS_MSG_INST_FAIL:
        return take_fixed(body, blen, &msg->u.inst_fail,
                          sizeof(dps_msg_inst_fail_t), 1) ||
               msg->u.inst_fail.status >= 0;   /* a failure, never OK */
    case DPS_MSG_SHUTDOWN:
    case DPS_MSG_STATS_REQ:
    case DPS_MSG_PONG:
        return blen != 0;
    case DPS_MSG_STATS:
        return take_fixed(body, blen, &msg->u.stats,
                          sizeof(dps_msg_stats_t), 1);
    default:
        return 1;
    }
}

static int decode_procs(const char *body, size_t blen, dps_msg_t *msg,
                        char *err, size_t err_len)
{
    if (take_fixed(body, blen, &msg->u.procs.fixed,
                   sizeof(dps_msg_procs_t), 0) ||
        msg->u.procs.fixed.nranks == 0 ||
        msg->u.procs.fixed.nranks > DPS_MAX_RANKS ||
        blen != sizeof(dps_msg_procs_t) +
                8 * (size_t)msg->u.procs.fixed.nranks) {
        return fail(err, err_len, "procs message of %zu bytes is "
                    "inconsistent", blen);
    }
    msg->u.procs.pid = (const uint32_t *)(body + sizeof(dps_msg_procs_t));
    msg->u.procs.node = msg->u.procs.pid + msg->u.procs.fixed.nranks;
    return DPS_OK;
}

static int decode_id_list(const char *body, size_t blen, dps_msg_t *msg,
                          char *err, size_t err_len)
{
    if (take_fixed(body, blen, &msg->u.reg_free.fixed,
                   sizeof(dps_msg_reg_free_t), 0) ||
        msg->u.reg_free.fixed.count == 0 ||
        msg->u.reg_free.fixed.count > DPS_MAX_REG_FREE ||
        blen != sizeof(dps_msg_reg_free_t) +
                8 * (size_t)msg->u.reg_free.fixed.count) {
        return fail(err, err_len, "reg_free message of %zu bytes is "
                    "inconsistent", blen);
    }
    msg->u.reg_free.ids = (const uint64_t *)(body +
                                             sizeof(dps_msg_reg_free_t));
    return DPS_OK;
}

int dps_msg_decode(const void *buf, size_t len, dps_msg_t *msg,
                   char *err, size_t err_len)
{
    dps_msg_hdr_t h;
    const char *body;
    size_t blen;
    int rc = check_header(buf, len, &h, err, err_len);

    if (rc != DPS_OK) {
        return rc;
    }
    memset(msg, 0, sizeof(*msg));
    msg->type = (dps_msg_type_t)h.type;
    body = (const char *)buf + sizeof(h);
    blen = len - sizeof(h);
    switch (msg->type) {
    case DPS_MSG_JOB_INFO:
        return decode_job(body, blen, msg, err, err_len);
    case DPS_MSG_PROCS:
        return decode_procs(body, blen, msg, err, err_len);
    case DPS_MSG_POST:
    case DPS_MSG_PEER_POST:
        return decode_post(body, blen, msg, err, err_len);
    case DPS_MSG_REG_FREE:
    case DPS_MSG_SCHED_FREE:
        return decode_id_list(body, blen, msg, err, err_len);
    default:
        break;
    }
    if (decode_fixed(body, blen, msg)) {
        return fail(err, err_len, "%s message with body of %zu bytes",
                    dps_msg_type_str(h.type), blen);
    }
    return DPS_OK;
}
