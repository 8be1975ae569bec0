/* SPDX-License-Identifier: BSD-3-Clause */
/* Validating decoding of the wire messages of dps_proto.h (dps_encode.c
 * writes them), and the names of message types and collectives. */
#include "common/dps_proto.h"
#include "common/dps_wire.h"
#include "common/dps_status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *dps_msg_type_str(unsigned type)
{
    static const char *names[] = {
        "?",        "hello",     "job_info",  "ready",     "post",
        "complete", "comm_free", "peer_post", "send_done", "shutdown",
        "procs",    "stats_req", "stats",     "reg_free",  "ping",
        "pong",     "shm",       "inst_fail", "round",     "sched_free",
        "fetch",    "push",      "bundle",    "credit"};

    _Static_assert(sizeof(names) / sizeof(names[0]) == DPS_MSG_TYPE_MAX,
                   "a name for every message type");
    return (type < DPS_MSG_TYPE_MAX) ? names[type] : "?";
}

const char *dps_coll_str(unsigned coll)
{
#define NB(ID, name, ...)         "MPI_I" #name,
#define PERS(ID, name, Name, ...) "MPI_" #Name "_init",
    static const char *names[DPS_COLL_MAX] = {
        "?",
        DPS_COLLS(NB) "dpushim_group_end",
        DPS_COLLS(PERS) "dpushim_group_end_persistent"
    };
#undef NB
#undef PERS

    return coll < DPS_COLL_MAX ? names[coll] : "?";
}

const char *dps_coll_short(unsigned coll)
{
#define NB(ID, name, ...)   "i" #name,
#define PERS(ID, name, ...) #name "_init",
    static const char *names[DPS_COLL_MAX] = {
        "?",
        DPS_COLLS(NB) "group",
        DPS_COLLS(PERS) "group_init"
    };
#undef NB
#undef PERS

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

int dps_msg_post_check(const dps_msg_post_t *f, char *err, size_t err_len)
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
        return fail(err, err_len, "post: %u members for size %u", f->nmembers,
                    f->comm_size);
    }
    if (f->error == 0 && f->sched_id == 0) {
        return fail(err, err_len, "post: no schedule id");
    }
    return DPS_OK;
}

int dps_msg_token_ok(uint32_t world_rank, uint64_t token_addr, uint64_t token)
{
    return world_rank < DPS_MAX_RANKS && (token_addr == 0) == (token == 0);
}

size_t dps_msg_post_body(const dps_msg_post_t *f)
{
    return sizeof(*f) + (size_t)f->rkey_len[0] + f->rkey_len[1] +
           f->rkey_len[2] + (size_t)f->nsteps * sizeof(dps_step_t) +
           (size_t)f->nmembers * sizeof(uint32_t);
}

/* Copy the fixed part of a body, which must be exactly or at least n
 * bytes: 1 if it is (copied), else 0. */
static int fixed_ok(const char *body, size_t blen, void *out, size_t n,
                    int exact)
{
    if (blen < n || (exact && blen != n)) {
        return 0;
    }
    memcpy(out, body, n);
    return 1;
}

static int decode_job(const char *body, size_t blen, dps_msg_t *msg, char *err,
                      size_t err_len)
{
    dps_msg_job_t *f = &msg->u.job.fixed;
    size_t         need, addrs = 0;
    uint32_t       i;
    const char    *p;

    if (!fixed_ok(body, blen, f, sizeof(*f), 0)) {
        return fail(err, err_len, "job_info shorter than its fixed part");
    }
    if (f->nranks == 0 || f->nranks > DPS_MAX_RANKS || f->nagents == 0 ||
        f->nagents > f->nranks || f->agent_idx >= f->nagents) {
        return fail(err, err_len,
                    "job_info counts out of range "
                    "(nranks %u nagents %u agent %u)",
                    f->nranks, f->nagents, f->agent_idx);
    }
    if ((f->flags & ~DPS_JOB_PUSH) != 0) {
        return fail(err, err_len, "job_info: unknown flags %#x", f->flags);
    }
    if (f->pad != 0) {
        return fail(err, err_len, "job_info: pad %#x is not 0", f->pad);
    }
    need =
        sizeof(*f) + sizeof(uint32_t) * (2 * (size_t)f->nranks + f->nagents);
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
            return fail(err, err_len, "job_info: rank %u has agent %u", i,
                        dps_msg_u32(msg->u.job.rank_agent, i));
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
        return fail(err, err_len, "job_info length %zu, expected %zu", blen,
                    need + addrs);
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
    const char     *p;
    int             b;

    if (!fixed_ok(body, blen, f, sizeof(*f), 0)) {
        return fail(err, err_len, "post shorter than its fixed part");
    }
    if (dps_msg_post_check(f, err, err_len) != DPS_OK) {
        return DPS_ERR_PROTO;
    }
    if (blen != dps_msg_post_body(f)) {
        return fail(err, err_len, "post length %zu, expected %zu", blen,
                    dps_msg_post_body(f));
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

/* Messages of one fixed size: 1 if the body is one of them (copied into
 * msg), else 0. */
static int body_ok(const char *body, size_t blen, dps_msg_t *msg)
{
    switch (msg->type) {
    case DPS_MSG_HELLO:
    case DPS_MSG_PING:
        return fixed_ok(body, blen, &msg->u.hello, sizeof(dps_msg_hello_t), 1);
    case DPS_MSG_READY:
        return fixed_ok(body, blen, &msg->u.ready, sizeof(dps_msg_ready_t),
                        1) &&
               msg->u.ready.pad == 0;
    case DPS_MSG_SHM:
        return fixed_ok(body, blen, &msg->u.shm, sizeof(dps_msg_shm_t), 1) &&
               msg->u.shm.fd >= 0 && msg->u.shm.pad == 0;
    case DPS_MSG_COMPLETE:
        return fixed_ok(body, blen, &msg->u.complete,
                        sizeof(dps_msg_complete_t), 1);
    case DPS_MSG_COMM_FREE:
        return fixed_ok(body, blen, &msg->u.comm_free,
                        sizeof(dps_msg_comm_free_t), 1);
    case DPS_MSG_SEND_DONE:
        return fixed_ok(body, blen, &msg->u.send_done,
                        sizeof(dps_msg_send_done_t), 1) &&
               msg->u.send_done.src < DPS_MAX_RANKS &&
               msg->u.send_done.dst < DPS_MAX_RANKS;
    case DPS_MSG_ROUND:
        return fixed_ok(body, blen, &msg->u.round, sizeof(dps_msg_round_t),
                        1) &&
               msg->u.round.rank < DPS_MAX_RANKS;
    case DPS_MSG_FETCH:
        return fixed_ok(body, blen, &msg->u.fetch, sizeof(dps_msg_fetch_t),
                        1) &&
               msg->u.fetch.src < DPS_MAX_RANKS &&
               msg->u.fetch.dst < DPS_MAX_RANKS;
    case DPS_MSG_CREDIT:
        return fixed_ok(body, blen, &msg->u.credit, sizeof(dps_msg_credit_t),
                        1) &&
               msg->u.credit.agent < DPS_MAX_RANKS && msg->u.credit.pad == 0;
    case DPS_MSG_INST_FAIL:
        return fixed_ok(body, blen, &msg->u.inst_fail,
                        sizeof(dps_msg_inst_fail_t), 1) &&
               msg->u.inst_fail.status < 0; /* a failure, never OK */
    case DPS_MSG_SHUTDOWN:
    case DPS_MSG_STATS_REQ:
    case DPS_MSG_PONG: return blen == 0;
    case DPS_MSG_STATS:
        return fixed_ok(body, blen, &msg->u.stats, sizeof(dps_msg_stats_t), 1);
    default: return 0;
    }
}

/* The sender and token of a HELLO, PING or SHM. */
static int check_token(const dps_msg_t *msg, char *err, size_t err_len)
{
    const dps_msg_hello_t *h = &msg->u.hello;

    if (msg->type == DPS_MSG_SHM) {
        if (!dps_msg_token_ok(msg->u.shm.world_rank, msg->u.shm.token_addr,
                              msg->u.shm.token)) {
            return fail(err, err_len,
                        "shm from rank %u: token %#llx at "
                        "%#llx",
                        msg->u.shm.world_rank,
                        (unsigned long long)msg->u.shm.token,
                        (unsigned long long)msg->u.shm.token_addr);
        }
    } else if ((msg->type == DPS_MSG_HELLO || msg->type == DPS_MSG_PING) &&
               !dps_msg_token_ok(h->world_rank, h->token_addr, h->token)) {
        return fail(err, err_len, "%s from rank %u: token %#llx at %#llx",
                    dps_msg_type_str(msg->type), h->world_rank,
                    (unsigned long long)h->token,
                    (unsigned long long)h->token_addr);
    }
    return DPS_OK;
}

static int decode_procs(const char *body, size_t blen, dps_msg_t *msg,
                        char *err, size_t err_len)
{
    uint32_t i, n;

    if (!fixed_ok(body, blen, &msg->u.procs.fixed, sizeof(dps_msg_procs_t),
                  0) ||
        msg->u.procs.fixed.nranks == 0 ||
        msg->u.procs.fixed.nranks > DPS_MAX_RANKS ||
        blen !=
            sizeof(dps_msg_procs_t) + 24 * (size_t)msg->u.procs.fixed.nranks) {
        return fail(err, err_len,
                    "procs message of %zu bytes is "
                    "inconsistent",
                    blen);
    }
    n = msg->u.procs.fixed.nranks;
    msg->u.procs.pid = (const uint32_t *)(body + sizeof(dps_msg_procs_t));
    msg->u.procs.node = msg->u.procs.pid + n;
    msg->u.procs.token_addr = (const uint64_t *)(msg->u.procs.node + n);
    msg->u.procs.token = msg->u.procs.token_addr + n;
    for (i = 0; i < n; i++) {
        if (!dps_msg_token_ok(i, dps_msg_u64(msg->u.procs.token_addr, i),
                              dps_msg_u64(msg->u.procs.token, i))) {
            return fail(err, err_len,
                        "procs: rank %u has a token address "
                        "without a token, or a token without one",
                        i);
        }
    }
    return DPS_OK;
}

static int decode_id_list(const char *body, size_t blen, dps_msg_t *msg,
                          char *err, size_t err_len)
{
    if (!fixed_ok(body, blen, &msg->u.reg_free.fixed,
                  sizeof(dps_msg_reg_free_t), 0) ||
        msg->u.reg_free.fixed.count == 0 ||
        msg->u.reg_free.fixed.count > DPS_MAX_REG_FREE ||
        blen != sizeof(dps_msg_reg_free_t) +
                    8 * (size_t)msg->u.reg_free.fixed.count) {
        return fail(err, err_len,
                    "reg_free message of %zu bytes is "
                    "inconsistent",
                    blen);
    }
    msg->u.reg_free.ids =
        (const uint64_t *)(body + sizeof(dps_msg_reg_free_t));
    return DPS_OK;
}

static int decode_push(const char *body, size_t blen, dps_msg_t *msg,
                       char *err, size_t err_len)
{
    dps_msg_push_t *f = &msg->u.push.fixed;

    if (!fixed_ok(body, blen, f, sizeof(*f), 0)) {
        return fail(err, err_len, "push shorter than its fixed part");
    }
    if (f->src >= DPS_MAX_RANKS || f->dst >= DPS_MAX_RANKS ||
        f->agent >= DPS_MAX_RANKS) {
        return fail(err, err_len, "push from rank %u to rank %u by agent %u",
                    f->src, f->dst, f->agent);
    }
    if ((f->flags & ~(DPS_PUSH_FETCH | DPS_PUSH_EARLY)) != 0 ||
        f->flags == (DPS_PUSH_FETCH | DPS_PUSH_EARLY)) {
        return fail(err, err_len, "push with flags %#x", f->flags);
    }
    if (blen - sizeof(*f) != f->len || f->off > f->total ||
        f->len > f->total - f->off ||
        ((f->flags & DPS_PUSH_FETCH) && (f->len != 0 || f->off != 0))) {
        return fail(err, err_len,
                    "push of %llu bytes at %llu of %llu (flags %#x, %zu "
                    "bytes of data) does not fit",
                    (unsigned long long)f->len, (unsigned long long)f->off,
                    (unsigned long long)f->total, f->flags, blen - sizeof(*f));
    }
    msg->u.push.data = (const uint8_t *)body + sizeof(*f);
    return DPS_OK;
}

int dps_bundle_next(const uint8_t **p, size_t *left, const void **part,
                    size_t *part_len, char *err, size_t err_len)
{
    dps_msg_hdr_t h;

    if (*left == 0) {
        return DPS_ERR_AGAIN;
    }
    if (*left < sizeof(h)) {
        return fail(err, err_len, "bundle ends in %zu stray bytes", *left);
    }
    memcpy(&h, *p, sizeof(h));
    if (h.length < sizeof(h) || h.length > *left) {
        return fail(err, err_len, "bundle part of %u bytes where %zu are left",
                    h.length, *left);
    }
    if (h.type == DPS_MSG_BUNDLE) {
        return fail(err, err_len, "bundle inside a bundle");
    }
    *part = *p;
    *part_len = h.length;
    *p += h.length;
    *left -= h.length;
    return DPS_OK;
}

int dps_msg_decode(const void *buf, size_t len, dps_msg_t *msg, char *err,
                   size_t err_len)
{
    dps_msg_hdr_t h;
    const char   *body;
    size_t        blen;
    int           rc = check_header(buf, len, &h, err, err_len);

    if (rc != DPS_OK) {
        return rc;
    }
    memset(msg, 0, sizeof(*msg));
    msg->type = (dps_msg_type_t)h.type;
    body = (const char *)buf + sizeof(h);
    blen = len - sizeof(h);
    switch (msg->type) {
    case DPS_MSG_JOB_INFO: return decode_job(body, blen, msg, err, err_len);
    case DPS_MSG_PROCS: return decode_procs(body, blen, msg, err, err_len);
    case DPS_MSG_POST:
    case DPS_MSG_PEER_POST: return decode_post(body, blen, msg, err, err_len);
    case DPS_MSG_REG_FREE:
    case DPS_MSG_SCHED_FREE:
        return decode_id_list(body, blen, msg, err, err_len);
    case DPS_MSG_PUSH: return decode_push(body, blen, msg, err, err_len);
    case DPS_MSG_BUNDLE:
        if (blen < sizeof(h)) {
            return fail(err, err_len, "bundle of %zu bytes holds nothing",
                        blen);
        }
        msg->u.bundle.parts = (const uint8_t *)body;
        msg->u.bundle.len = blen;
        return DPS_OK;
    default: break;
    }
    if (!body_ok(body, blen, msg)) {
        return fail(err, err_len, "%s message with body of %zu bytes",
                    dps_msg_type_str(h.type), blen);
    }
    return check_token(msg, err, err_len);
}
