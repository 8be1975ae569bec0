/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What one ISA makes of the wire: built for the host and for aarch64
 * (make agent-arm64), run on both (the aarch64 one under qemu-user) and
 * the outputs compared, so that an x86-64 rank and an Arm agent (a
 * BlueField's) read the same bytes the same way.
 *
 * usage: wire_dump --layout
 *          size and offset of every field of the wire's messages and of
 *          the shared-memory segment (common/dps_shm.h: mapped by the
 *          agent, never encoded)
 *        wire_dump FILE...
 *          each file, one wire message (tests/fuzz/mkseeds writes one of
 *          every type), decoded: every field, one per line
 *        wire_dump --hello FILE...
 *          each file, one listener hello, decoded
 * Exit status 0; 1 if a file cannot be read or does not decode.
 */
#include "common/dps_listen.h"
#include "common/dps_proto.h"
#include "common/dps_shm.h"
#include "common/dps_status.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Size and offset of field f of type t. */
#define FIELD(t, f)                                               \
    printf("%s.%s offset=%zu size=%zu\n", #t, #f, offsetof(t, f), \
           sizeof(((t *)0)->f))
#define SIZE(t) printf("%s size=%zu align=%zu\n", #t, sizeof(t), _Alignof(t))

static void layout(void)
{
    printf("DPS_PROTO_VERSION=%d DPS_SHM_VERSION=%d DPS_NBUF=%d\n",
           DPS_PROTO_VERSION, DPS_SHM_VERSION, DPS_NBUF);
    printf("DPS_MSG_TYPE_MAX=%d DPS_COLL_MAX=%d DPS_STEP_MAX=%d "
           "DPS_OP_COUNT=%d DPS_T_COUNT=%d\n",
           DPS_MSG_TYPE_MAX, DPS_COLL_MAX, DPS_STEP_MAX, DPS_OP_COUNT,
           DPS_T_COUNT);
    SIZE(dps_msg_hdr_t);
    FIELD(dps_msg_hdr_t, magic);
    FIELD(dps_msg_hdr_t, version);
    FIELD(dps_msg_hdr_t, type);
    FIELD(dps_msg_hdr_t, length);
    FIELD(dps_msg_hdr_t, reserved);
    SIZE(dps_msg_hello_t);
    FIELD(dps_msg_hello_t, world_rank);
    FIELD(dps_msg_hello_t, pid);
    SIZE(dps_msg_job_t);
    FIELD(dps_msg_job_t, nranks);
    FIELD(dps_msg_job_t, nagents);
    FIELD(dps_msg_job_t, agent_idx);
    FIELD(dps_msg_job_t, job_key);
    FIELD(dps_msg_job_t, flags);
    FIELD(dps_msg_job_t, pad);
    SIZE(dps_msg_procs_t);
    FIELD(dps_msg_procs_t, nranks);
    FIELD(dps_msg_procs_t, pad);
    SIZE(dps_msg_stats_t);
    FIELD(dps_msg_stats_t, cpu_ns);
    FIELD(dps_msg_stats_t, collectives);
    FIELD(dps_msg_stats_t, missed_wakeups);
    FIELD(dps_msg_stats_t, cma_bytes);
    FIELD(dps_msg_stats_t, ucx_bytes);
    FIELD(dps_msg_stats_t, dma_bytes);
    FIELD(dps_msg_stats_t, net_bytes);
    FIELD(dps_msg_stats_t, fetches);
    FIELD(dps_msg_stats_t, rss_kb);
    FIELD(dps_msg_stats_t, endpoints);
    FIELD(dps_msg_stats_t, keys_peak);
    FIELD(dps_msg_stats_t, scheds_peak);
    FIELD(dps_msg_stats_t, steps_peak);
    FIELD(dps_msg_stats_t, agent_msgs);
    FIELD(dps_msg_stats_t, pushes);
    FIELD(dps_msg_stats_t, pushed_bytes);
    SIZE(dps_msg_shm_t);
    FIELD(dps_msg_shm_t, world_rank);
    FIELD(dps_msg_shm_t, pid);
    FIELD(dps_msg_shm_t, fd);
    FIELD(dps_msg_shm_t, pad);
    SIZE(dps_msg_ready_t);
    FIELD(dps_msg_ready_t, status);
    FIELD(dps_msg_ready_t, formats);
    SIZE(dps_msg_post_t);
    FIELD(dps_msg_post_t, comm_id);
    FIELD(dps_msg_post_t, op_token);
    FIELD(dps_msg_post_t, sched_id);
    FIELD(dps_msg_post_t, buf_addr);
    FIELD(dps_msg_post_t, buf_len);
    FIELD(dps_msg_post_t, buf_reg);
    FIELD(dps_msg_post_t, seq);
    FIELD(dps_msg_post_t, coll);
    FIELD(dps_msg_post_t, comm_rank);
    FIELD(dps_msg_post_t, comm_size);
    FIELD(dps_msg_post_t, world_rank);
    FIELD(dps_msg_post_t, nsteps);
    FIELD(dps_msg_post_t, rkey_len);
    FIELD(dps_msg_post_t, nmembers);
    FIELD(dps_msg_post_t, error);
    FIELD(dps_msg_post_t, flags);
    FIELD(dps_msg_post_t, send_map);
    FIELD(dps_msg_post_t, send_nmap);
    SIZE(dps_seg_t);
    FIELD(dps_seg_t, off);
    FIELD(dps_seg_t, addr);
    FIELD(dps_seg_t, len);
    SIZE(dps_msg_reg_free_t);
    FIELD(dps_msg_reg_free_t, world_rank);
    FIELD(dps_msg_reg_free_t, count);
    SIZE(dps_msg_complete_t);
    FIELD(dps_msg_complete_t, op_token);
    FIELD(dps_msg_complete_t, status);
    FIELD(dps_msg_complete_t, pad);
    SIZE(dps_msg_comm_free_t);
    FIELD(dps_msg_comm_free_t, comm_id);
    FIELD(dps_msg_comm_free_t, world_rank);
    FIELD(dps_msg_comm_free_t, pad);
    SIZE(dps_msg_send_done_t);
    FIELD(dps_msg_send_done_t, comm_id);
    FIELD(dps_msg_send_done_t, seq);
    FIELD(dps_msg_send_done_t, src);
    FIELD(dps_msg_send_done_t, dst);
    FIELD(dps_msg_send_done_t, k);
    SIZE(dps_msg_round_t);
    FIELD(dps_msg_round_t, comm_id);
    FIELD(dps_msg_round_t, seq);
    FIELD(dps_msg_round_t, rank);
    FIELD(dps_msg_round_t, round);
    FIELD(dps_msg_round_t, pad);
    SIZE(dps_msg_fetch_t);
    FIELD(dps_msg_fetch_t, comm_id);
    FIELD(dps_msg_fetch_t, seq);
    FIELD(dps_msg_fetch_t, src);
    FIELD(dps_msg_fetch_t, dst);
    FIELD(dps_msg_fetch_t, k);
    FIELD(dps_msg_fetch_t, off);
    FIELD(dps_msg_fetch_t, len);
    FIELD(dps_msg_fetch_t, tag);
    SIZE(dps_msg_push_t);
    FIELD(dps_msg_push_t, comm_id);
    FIELD(dps_msg_push_t, seq);
    FIELD(dps_msg_push_t, src);
    FIELD(dps_msg_push_t, dst);
    FIELD(dps_msg_push_t, k);
    FIELD(dps_msg_push_t, off);
    FIELD(dps_msg_push_t, len);
    FIELD(dps_msg_push_t, total);
    FIELD(dps_msg_push_t, flags);
    FIELD(dps_msg_push_t, agent);
    printf("DPS_PUSH_HEAD=%zu DPS_PUSH_FETCH=%u DPS_PUSH_EARLY=%u "
           "DPS_JOB_PUSH=%u\n",
           (size_t)DPS_PUSH_HEAD, DPS_PUSH_FETCH, DPS_PUSH_EARLY,
           DPS_JOB_PUSH);
    SIZE(dps_msg_credit_t);
    FIELD(dps_msg_credit_t, agent);
    FIELD(dps_msg_credit_t, pad);
    FIELD(dps_msg_credit_t, bytes);
    SIZE(dps_msg_inst_fail_t);
    FIELD(dps_msg_inst_fail_t, comm_id);
    FIELD(dps_msg_inst_fail_t, seq);
    FIELD(dps_msg_inst_fail_t, status);
    SIZE(dps_step_t);
    FIELD(dps_step_t, kind);
    FIELD(dps_step_t, src_buf);
    FIELD(dps_step_t, dst_buf);
    FIELD(dps_step_t, op);
    FIELD(dps_step_t, round);
    FIELD(dps_step_t, dtype);
    FIELD(dps_step_t, peer);
    FIELD(dps_step_t, pad);
    FIELD(dps_step_t, src_off);
    FIELD(dps_step_t, dst_off);
    FIELD(dps_step_t, len);
    /* The shared-memory segment: both sides use it in place. */
    SIZE(dps_cmd_t);
    FIELD(dps_cmd_t, id);
    FIELD(dps_cmd_t, op);
    FIELD(dps_cmd_t, src_pid);
    FIELD(dps_cmd_t, src_addr);
    FIELD(dps_cmd_t, dst_addr);
    FIELD(dps_cmd_t, len);
    FIELD(dps_cmd_t, rop);
    FIELD(dps_cmd_t, dtype);
    FIELD(dps_cmd_t, pad);
    FIELD(dps_cmd_t, src_map);
    FIELD(dps_cmd_t, src_nmap);
    SIZE(dps_done_t);
    FIELD(dps_done_t, id);
    FIELD(dps_done_t, status);
    FIELD(dps_done_t, pad);
    SIZE(dps_ring_pos_t);
    FIELD(dps_ring_pos_t, head);
    FIELD(dps_ring_pos_t, tail);
    SIZE(dps_shm_t);
    FIELD(dps_shm_t, magic);
    FIELD(dps_shm_t, version);
    FIELD(dps_shm_t, size);
    FIELD(dps_shm_t, rank);
    FIELD(dps_shm_t, attached);
    FIELD(dps_shm_t, engine_up);
    FIELD(dps_shm_t, pad);
    FIELD(dps_shm_t, agent_sleeping);
    FIELD(dps_shm_t, rank_sleeping);
    FIELD(dps_shm_t, engine_sleeping);
    FIELD(dps_shm_t, engine_wake);
    FIELD(dps_shm_t, to_agent);
    FIELD(dps_shm_t, to_rank);
    FIELD(dps_shm_t, cmd);
    FIELD(dps_shm_t, done);
    FIELD(dps_shm_t, to_agent_buf);
    FIELD(dps_shm_t, to_rank_buf);
    FIELD(dps_shm_t, cmd_buf);
    FIELD(dps_shm_t, done_buf);
}

static void hex(const char *what, const uint8_t *p, size_t n)
{
    printf("  %s[%zu]=", what, n);
    for (size_t i = 0; i < n; i++) {
        printf("%02x", p[i]);
    }
    printf("\n");
}

/* A uint32_t table of a decoded message (unaligned: dps_msg_u32). */
static void table32(const char *what, const uint32_t *t, size_t n)
{
    printf("  %s[%zu]=", what, n);
    for (size_t i = 0; i < n; i++) {
        printf("%s%" PRIu32, i ? "," : "", dps_msg_u32(t, i));
    }
    printf("\n");
}

static void table64(const char *what, const uint64_t *t, size_t n)
{
    printf("  %s[%zu]=", what, n);
    for (size_t i = 0; i < n; i++) {
        printf("%s%" PRIu64, i ? "," : "", dps_msg_u64(t, i));
    }
    printf("\n");
}

static void post(const dps_msg_t *m)
{
    const dps_msg_post_t *f = &m->u.post.fixed;
    int                   b;

    printf("  comm_id=%" PRIu64 " op_token=%" PRIu64 " sched_id=%" PRIu64 "\n",
           f->comm_id, f->op_token, f->sched_id);
    for (b = 0; b < DPS_NBUF; b++) {
        printf("  buf[%d] addr=%#" PRIx64 " len=%" PRIu64 " reg=%" PRIu64
               " rkey_len=%" PRIu32 "\n",
               b, f->buf_addr[b], f->buf_len[b], f->buf_reg[b],
               f->rkey_len[b]);
        if (f->rkey_len[b] > 0) {
            hex("rkey", m->u.post.rkey[b], f->rkey_len[b]);
        }
    }
    printf("  seq=%" PRIu32 " coll=%" PRIu32 " comm_rank=%" PRIu32
           " comm_size=%" PRIu32 " world_rank=%" PRIu32 " nsteps=%" PRIu32
           " nmembers=%" PRIu32 " error=%" PRId32 " flags=%#" PRIx32
           " send_map=%#" PRIx64 " send_nmap=%" PRIu64 "\n",
           f->seq, f->coll, f->comm_rank, f->comm_size, f->world_rank,
           f->nsteps, f->nmembers, f->error, f->flags, f->send_map,
           f->send_nmap);
    for (uint32_t i = 0; i < f->nsteps; i++) {
        dps_step_t s;

        dps_msg_step(m->u.post.steps, i, &s);
        printf("  step[%" PRIu32 "] kind=%u src_buf=%u dst_buf=%u op=%u "
               "round=%u dtype=%u peer=%" PRIu32 " pad=%" PRIu32
               " src_off=%" PRIu64 " dst_off=%" PRIu64 " len=%" PRIu64 "\n",
               i, s.kind, s.src_buf, s.dst_buf, s.op, s.round, s.dtype, s.peer,
               s.pad, s.src_off, s.dst_off, s.len);
    }
    if (f->nmembers > 0) {
        table32("members", m->u.post.members, f->nmembers);
    }
}

static void job(const dps_msg_t *m)
{
    const dps_msg_job_t *f = &m->u.job.fixed;
    const uint8_t       *p;
    uint32_t             i;

    printf("  nranks=%" PRIu32 " nagents=%" PRIu32 " agent_idx=%" PRIu32
           " job_key=%" PRIu32 " flags=%#" PRIx32 " pad=%" PRIu32 "\n",
           f->nranks, f->nagents, f->agent_idx, f->job_key, f->flags, f->pad);
    table32("rank_agent", m->u.job.rank_agent, f->nranks);
    table32("rank_addr_len", m->u.job.rank_addr_len, f->nranks);
    table32("agent_addr_len", m->u.job.agent_addr_len, f->nagents);
    for (i = 0, p = m->u.job.rank_addrs; i < f->nranks; i++) {
        uint32_t n = dps_msg_u32(m->u.job.rank_addr_len, i);

        hex("rank_addr", p, n);
        p += n;
    }
    for (i = 0, p = m->u.job.agent_addrs; i < f->nagents; i++) {
        uint32_t n = dps_msg_u32(m->u.job.agent_addr_len, i);

        hex("agent_addr", p, n);
        p += n;
    }
}

static void stats(const dps_msg_stats_t *s)
{
    printf("  cpu_ns=%" PRIu64 " collectives=%" PRIu64
           " missed_wakeups=%" PRIu64 "\n",
           s->cpu_ns, s->collectives, s->missed_wakeups);
    printf("  cma_bytes=%" PRIu64 " ucx_bytes=%" PRIu64 " dma_bytes=%" PRIu64
           " net_bytes=%" PRIu64 " fetches=%" PRIu64 "\n",
           s->cma_bytes, s->ucx_bytes, s->dma_bytes, s->net_bytes, s->fetches);
    printf("  rss_kb=%" PRIu64 " endpoints=%" PRIu32 " keys_peak=%" PRIu32
           " scheds_peak=%" PRIu32 " steps_peak=%" PRIu32 "\n",
           s->rss_kb, s->endpoints, s->keys_peak, s->scheds_peak,
           s->steps_peak);
    printf("  agent_msgs=%" PRIu64 " pushes=%" PRIu64 " pushed_bytes=%" PRIu64
           "\n",
           s->agent_msgs, s->pushes, s->pushed_bytes);
}

static void push(const dps_msg_t *m)
{
    const dps_msg_push_t *f = &m->u.push.fixed;

    printf("  comm_id=%" PRIu64 " seq=%" PRIu32 " src=%" PRIu32 " dst=%" PRIu32
           " k=%" PRIu32 "\n",
           f->comm_id, f->seq, f->src, f->dst, f->k);
    printf("  off=%" PRIu64 " len=%" PRIu64 " total=%" PRIu64
           " flags=%#" PRIx32 " agent=%" PRIu32 "\n",
           f->off, f->len, f->total, f->flags, f->agent);
    hex("data", m->u.push.data, (size_t)f->len);
}

static int fields(const dps_msg_t *m);

/* Each part of a bundle: its type and length, then its fields. 0, or 1
 * if a part does not iterate or decode. */
static int bundle(const dps_msg_t *m)
{
    const uint8_t *p = m->u.bundle.parts;
    size_t         left = m->u.bundle.len, plen;
    const void    *part;
    char           err[256] = "";
    dps_msg_t      pm;
    unsigned       i;
    int            rc;

    printf("  len=%zu\n", m->u.bundle.len);
    for (i = 0;; i++) {
        rc = dps_bundle_next(&p, &left, &part, &plen, err, sizeof(err));
        if (rc == DPS_ERR_AGAIN) {
            return 0;
        }
        if (rc == DPS_OK) {
            rc = dps_msg_decode(part, plen, &pm, err, sizeof(err));
        }
        if (rc != DPS_OK) {
            printf("  part[%u] does not decode: %s\n", i, err);
            return 1;
        }
        printf("  part[%u]=%s, %zu bytes\n", i, dps_msg_type_str(pm.type),
               plen);
        if (fields(&pm) != 0) {
            return 1;
        }
    }
}

/* Every field of decoded message m: 0, or 1 if a bundle's part does not
 * decode. */
static int fields(const dps_msg_t *m)
{
    switch (m->type) {
    case DPS_MSG_HELLO:
    case DPS_MSG_PING:
        printf("  world_rank=%" PRIu32 " pid=%" PRIu32 "\n",
               m->u.hello.world_rank, m->u.hello.pid);
        break;
    case DPS_MSG_JOB_INFO: job(m); break;
    case DPS_MSG_READY:
        printf("  status=%" PRId32 " formats=%#" PRIx32 "\n",
               m->u.ready.status, m->u.ready.formats);
        break;
    case DPS_MSG_POST:
    case DPS_MSG_PEER_POST: post(m); break;
    case DPS_MSG_COMPLETE:
        printf("  op_token=%" PRIu64 " status=%" PRId32 " pad=%" PRIu32 "\n",
               m->u.complete.op_token, m->u.complete.status,
               m->u.complete.pad);
        break;
    case DPS_MSG_COMM_FREE:
        printf("  comm_id=%" PRIu64 " world_rank=%" PRIu32 "\n",
               m->u.comm_free.comm_id, m->u.comm_free.world_rank);
        break;
    case DPS_MSG_SEND_DONE:
        printf("  comm_id=%" PRIu64 " seq=%" PRIu32 " src=%" PRIu32
               " dst=%" PRIu32 " k=%" PRIu32 "\n",
               m->u.send_done.comm_id, m->u.send_done.seq, m->u.send_done.src,
               m->u.send_done.dst, m->u.send_done.k);
        break;
    case DPS_MSG_PROCS:
        table32("pid", m->u.procs.pid, m->u.procs.fixed.nranks);
        table32("node", m->u.procs.node, m->u.procs.fixed.nranks);
        break;
    case DPS_MSG_STATS: stats(&m->u.stats); break;
    case DPS_MSG_REG_FREE:
    case DPS_MSG_SCHED_FREE:
        printf("  world_rank=%" PRIu32 "\n", m->u.reg_free.fixed.world_rank);
        table64("ids", m->u.reg_free.ids, m->u.reg_free.fixed.count);
        break;
    case DPS_MSG_SHM:
        printf("  world_rank=%" PRIu32 " pid=%" PRIu32 " fd=%" PRId32 "\n",
               m->u.shm.world_rank, m->u.shm.pid, m->u.shm.fd);
        break;
    case DPS_MSG_INST_FAIL:
        printf("  comm_id=%" PRIu64 " seq=%" PRIu32 " status=%" PRId32 "\n",
               m->u.inst_fail.comm_id, m->u.inst_fail.seq,
               m->u.inst_fail.status);
        break;
    case DPS_MSG_ROUND:
        printf("  comm_id=%" PRIu64 " seq=%" PRIu32 " rank=%" PRIu32
               " round=%" PRIu32 "\n",
               m->u.round.comm_id, m->u.round.seq, m->u.round.rank,
               m->u.round.round);
        break;
    case DPS_MSG_FETCH:
        printf("  comm_id=%" PRIu64 " seq=%" PRIu32 " src=%" PRIu32
               " dst=%" PRIu32 " k=%" PRIu32 " off=%" PRIu64 " len=%" PRIu64
               " tag=%" PRIu64 "\n",
               m->u.fetch.comm_id, m->u.fetch.seq, m->u.fetch.src,
               m->u.fetch.dst, m->u.fetch.k, m->u.fetch.off, m->u.fetch.len,
               m->u.fetch.tag);
        break;
    case DPS_MSG_PUSH: push(m); break;
    case DPS_MSG_CREDIT:
        printf("  agent=%" PRIu32 " pad=%" PRIu32 " bytes=%" PRIu64 "\n",
               m->u.credit.agent, m->u.credit.pad, m->u.credit.bytes);
        break;
    case DPS_MSG_BUNDLE: return bundle(m);
    default: /* SHUTDOWN, STATS_REQ, PONG: the header alone */ break;
    }
    return 0;
}

/* The whole of file path, malloc'ed, its length in *len; NULL if it
 * cannot be read. */
static void *slurp(const char *path, size_t *len)
{
    FILE    *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t   cap = 0, n = 0;

    if (f == NULL) {
        perror(path);
        return NULL;
    }
    for (;;) {
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap = cap ? 2 * cap : 4096);

            if (nb == NULL) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);

        n += got;
        if (got == 0) {
            break;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

/* Decode one file: a wire message, or a listener hello. 0 or 1. */
static int dump(const char *path, int hello)
{
    char        err[256] = "", name[DPS_LISTEN_NAME_MAX + 1];
    uint8_t     secret[DPS_SECRET_LEN];
    const char *base = strrchr(path, '/');
    dps_msg_t   m;
    size_t      len;
    void       *buf;
    int         rc;

    base = base ? base + 1 : path;
    if ((buf = slurp(path, &len)) == NULL) {
        return 1;
    }
    if (hello) {
        rc = dps_listen_decode_hello(buf, len, name, sizeof(name), secret, err,
                                     sizeof(err));
        if (rc == DPS_OK) {
            printf("%s: listen hello, %zu bytes\n  job=%s\n", base, len, name);
            hex("secret", secret, sizeof(secret));
        }
    } else {
        rc = dps_msg_decode(buf, len, &m, err, sizeof(err));
        if (rc == DPS_OK) {
            printf("%s: %s, %zu bytes\n", base, dps_msg_type_str(m.type), len);
            if (fields(&m) != 0) {
                rc = DPS_ERR_PROTO;
                snprintf(err, sizeof(err), "a part does not decode");
            }
        }
    }
    free(buf);
    if (rc != DPS_OK) {
        printf("%s: does not decode: %s\n", base, err);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int hello = 0, bad = 0, i = 1;

    if (argc == 2 && strcmp(argv[1], "--layout") == 0) {
        layout();
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--hello") == 0) {
        hello = 1;
        i++;
    }
    if (i >= argc || argv[i][0] == '-') {
        fprintf(stderr, "usage: wire_dump --layout | [--hello] FILE...\n");
        return 2;
    }
    for (; i < argc; i++) {
        bad |= dump(argv[i], hello);
    }
    return bad;
}
