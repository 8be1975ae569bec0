/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The path between hosts that leaves the ranks' CPUs alone: each agent
 * touches only the memory of its own ranks (by CMA, or by DMA through
 * their grants: common/dps_grant.h), and agents carry the bytes between
 * them.
 *
 * - The agent of a move's destination, whose source rank is another
 *   agent's, posts a tagged receive into its staging slot and sends that
 *   agent a FETCH naming the bytes (the k-th SEND of src to dst, an
 *   offset and a length) and the tag.
 * - The source's agent reads them from its rank (CMA, DMA, or, for a
 *   rank it reaches neither way, UCX get from the rank) and sends them
 *   back as one tagged message; any other length means failure.
 * - The destination's agent writes the chunk into its rank as any staged
 *   chunk (agent_exec.c).
 *
 * On a BlueField this is the staged DPU-to-DPU path of MVAPICH2-DPU:
 * DMA from host memory into DPU memory, the network between DPUs, DMA
 * into the other host's memory. Tags are the receiver's own counter, so
 * they are unique in its worker whichever agent answers.
 */
#define _GNU_SOURCE
#include "dpu_agent/move/agent_move.h"
#include "dpu_agent/move/agent_movers.h"
#include "dpu_agent/core/agent_chan.h"
#include "common/dps_grant.h"
#include "common/dps_log.h"
#include "common/dps_proto.h"
#include "common/dps_status.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

/* A FETCH being answered: read from our rank, then sent. */
typedef struct agent_serve {
    struct agent_serve *next;
    uint32_t            to; /* the asking agent */
    uint64_t            tag;
    size_t              len;
    int                 read_done; /* the UCX get completed (atomic) */
    ucs_status_t        status;
    char                buf[];
} agent_serve_t;

/* ---- DMA through a grant ------------------------------------------------ */

ucs_status_t agent_dma_stage(agent_t *a, agent_slot_t *s, int stage,
                             uint32_t world)
{
    ucs_status_t st = agent_dma_rw(a, s, stage, world);

    if (st == UCS_OK) {
        a->dma_bytes += s->len;
    }
    return st;
}

ucs_status_t agent_dma_rw(agent_t *a, agent_slot_t *s, int stage,
                          uint32_t world)
{
    agent_move_t *m = s->move;
    uint64_t      raddr = (stage == 1 ? m->src_addr : m->dst_addr) + s->off;
    char         *local =
        stage == 1 ? s->data : (m->op != DPS_OP_NONE ? s->aux : s->data);
    int fd = a->rank_memfd[world];
    int rc = stage != 2 ? dps_dma_read(fd, raddr, local, s->len)
                        : dps_dma_write(fd, raddr, local, s->len);

    if (rc != DPS_OK) {
        dps_error("DMA %s %llu bytes at %#llx of rank %u: %m",
                  stage != 2 ? "reading" : "writing",
                  (unsigned long long)s->len, (unsigned long long)raddr,
                  world);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

/* ---- the destination's side ------------------------------------------- */

static void fetch_recv_cb(void *request, ucs_status_t status,
                          const ucp_tag_recv_info_t *info, void *user_data)
{
    agent_slot_t *s = user_data;

    s->got = (status == UCS_OK && info != NULL) ? info->length : 0;
    s->status = status;
    if (status == UCS_OK && s->got != s->len) {
        s->status = AGENT_FETCH_REFUSED; /* the source's agent would not */
    }
    __atomic_store_n(&s->completed, 1, __ATOMIC_RELEASE);
    ucp_request_free(request);
}

void agent_fetch_start(agent_t *a, agent_slot_t *s)
{
    agent_move_t       *m = s->move;
    uint32_t            sw = agent_move_world(m, m->src);
    uint32_t            ag = a->rank_agent[sw];
    dps_msg_fetch_t     f;
    ucp_request_param_t rp;
    ucs_status_ptr_t    req;
    ucp_tag_recv_info_t info;
    size_t              len;
    void               *msg;

    memset(&f, 0, sizeof(f));
    f.comm_id = m->inst->key.comm_id;
    f.seq = (uint32_t)m->inst->key.seq;
    f.src = m->src;
    f.dst = m->dst;
    f.k = m->k;
    f.off = s->off;
    f.len = s->len;
    f.tag = ++a->next_tag;
    memset(&rp, 0, sizeof(rp));
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                      UCP_OP_ATTR_FIELD_USER_DATA |
                      UCP_OP_ATTR_FIELD_RECV_INFO;
    rp.cb.recv = fetch_recv_cb;
    rp.user_data = s;
    rp.recv_info.tag_info = &info;
    s->got = 0;
    req = ucp_tag_recv_nbx(a->ucx.worker, s->data, s->len, f.tag,
                           ~(ucp_tag_t)0, &rp);
    if (UCS_PTR_IS_ERR(req)) {
        s->status = UCS_PTR_STATUS(req);
        s->completed = 1;
        return;
    }
    if (req == NULL) { /* it had come already */
        s->got = info.length;
        s->status = s->got == s->len ? UCS_OK : AGENT_FETCH_REFUSED;
        s->completed = 1;
        return;
    }
    /* Waiting on the network alone: the agent may sleep meanwhile
     * (agent_may_sleep), leaving the core to whoever moves the packets. */
    s->fetching = 1;
    a->fetch_wait++;
    msg = dps_msg_encode_fetch(&f, &len);
    if (msg == NULL || agent_send_agent(a, ag, msg, len) != DPS_OK) {
        dps_error("cannot ask agent %u for %llu bytes of rank %u", ag,
                  (unsigned long long)s->len, sw);
        /* The receive ends with an error, the slot with it. */
        ucp_request_cancel(a->ucx.worker, req);
        return;
    }
    a->fetches++;
}

/* ---- the source's side -------------------------------------------------- */

static void serve_sent_cb(void *request, ucs_status_t status, void *user_data)
{
    agent_serve_t *v = user_data;

    if (status != UCS_OK) {
        dps_error("sending %zu bytes to agent %u failed: %s", v->len, v->to,
                  ucs_status_string(status));
    }
    free(v);
    ucp_request_free(request);
}

/* Send v's bytes (or, after a failed read, nothing: the asker sees the
 * short answer) to the agent that asked; v is freed when sent. */
static void serve_send(agent_t *a, agent_serve_t *v)
{
    ucp_request_param_t rp;
    ucs_status_ptr_t    req;
    size_t              len = v->status == UCS_OK ? v->len : 0;

    memset(&rp, 0, sizeof(rp));
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    rp.cb.send = serve_sent_cb;
    rp.user_data = v;
    req = ucp_tag_send_nbx(a->agent_ep[v->to], v->buf, len, v->tag, &rp);
    a->net_bytes += len;
    a->agent_msgs++;
    if (req == NULL) {
        free(v);
    } else if (UCS_PTR_IS_ERR(req)) {
        dps_error("cannot send %zu bytes to agent %u: %s", len, v->to,
                  ucs_status_string(UCS_PTR_STATUS(req)));
        free(v);
    }
}

static void serve_get_cb(void *request, ucs_status_t status, void *user_data)
{
    agent_serve_t *v = user_data;

    v->status = status;
    __atomic_store_n(&v->read_done, 1, __ATOMIC_RELEASE);
    ucp_request_free(request);
}

int agent_read_rank(agent_t *a, uint32_t world, uint64_t addr, void *buf,
                    size_t len)
{
    size_t done = 0;

    if (!agent_rank_cma(a, world)) {
        return dps_dma_read(a->rank_memfd[world], addr, buf, len);
    }
    while (done < len) {
        struct iovec l = {(char *)buf + done, len - done};
        struct iovec r = {(void *)(uintptr_t)(addr + done), len - done};
        ssize_t      n =
            process_vm_readv((pid_t)a->rank_pid[world], &l, 1, &r, 1, 0);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (n == 0) {
                errno = EIO;
            }
            return DPS_ERR_IO;
        }
        done += (size_t)n;
    }
    return DPS_OK;
}

void agent_fetch_serve(agent_t *a, uint32_t to, uint32_t world, uint64_t addr,
                       uint64_t len, uint64_t tag, ucp_rkey_h rkey, int ok)
{
    agent_serve_t      *v = malloc(sizeof(*v) + (ok ? len : 0));
    ucp_request_param_t rp;
    ucs_status_ptr_t    req;

    if (v == NULL) {
        dps_error("no memory to answer agent %u's fetch of %llu bytes", to,
                  (unsigned long long)len);
        return; /* the asker's collective stalls: its ranks fail over */
    }
    memset(v, 0, sizeof(*v));
    v->to = to;
    v->tag = tag;
    v->len = ok ? len : 0;
    v->status = ok ? UCS_OK : UCS_ERR_INVALID_PARAM;
    if (!ok || len == 0) {
        serve_send(a, v);
        return;
    }
    if (agent_rank_cma(a, world) || agent_rank_dma(a, world)) {
        if (agent_read_rank(a, world, addr, v->buf, len) != DPS_OK) {
            dps_error("reading %llu bytes at %#llx of rank %u for agent "
                      "%u: %m",
                      (unsigned long long)len, (unsigned long long)addr, world,
                      to);
            v->status = UCS_ERR_IO_ERROR;
        } else if (agent_rank_cma(a, world)) {
            a->cma_bytes += len;
        } else {
            a->dma_bytes += len;
        }
        serve_send(a, v);
        return;
    }
    /* Neither: our rank's worker serves a UCX get, as on the old path. */
    if (rkey == NULL) {
        v->status = UCS_ERR_INVALID_PARAM;
        serve_send(a, v);
        return;
    }
    memset(&rp, 0, sizeof(rp));
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    rp.cb.send = serve_get_cb;
    rp.user_data = v;
    a->ucx_bytes += len;
    req = ucp_get_nbx(a->rank_ep[world], v->buf, len, addr, rkey, &rp);
    if (req == NULL || UCS_PTR_IS_ERR(req)) {
        v->status = req == NULL ? UCS_OK : UCS_PTR_STATUS(req);
        serve_send(a, v);
        return;
    }
    v->next = a->serves;
    a->serves = v;
}

int agent_serves_progress(agent_t *a)
{
    agent_serve_t **vp = &a->serves;
    int             progress = 0;

    while (*vp != NULL) {
        agent_serve_t *v = *vp;

        if (!__atomic_load_n(&v->read_done, __ATOMIC_ACQUIRE)) {
            vp = &v->next;
            continue;
        }
        *vp = v->next;
        serve_send(a, v);
        progress = 1;
    }
    return progress;
}

void agent_serves_fini(agent_t *a)
{
    while (a->serves != NULL) {
        agent_serve_t *v = a->serves;

        a->serves = v->next;
        free(v);
    }
}
