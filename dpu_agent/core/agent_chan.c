/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent's channels: to other agents by UCX; to ranks by UCX, or
 * through the agent's side of the shared-memory channels
 * (common/dps_shm.h): one segment per rank on this host, mapped when the
 * rank offers it. Posts and other messages come in through it,
 * completions go out through it (its DMA engine also takes commands and
 * reports them done through it: move/agent_engines.c). A rank is woken
 * (kicked) only when it says it sleeps.
 */
#define _GNU_SOURCE
#include "dpu_agent/core/agent_chan.h"
#include "common/dps_cma.h"
#include "common/dps_log.h"
#include "common/dps_status.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int agent_shm_attach(agent_t *a, const dps_msg_shm_t *m)
{
    char          err[300];
    agent_link_t *l;
    dps_shm_t    *s;
    int           why;

    if (m->world_rank >= DPS_MAX_RANKS || agent_link(a, m->world_rank)) {
        dps_error("shm offer from rank %u refused (unknown or repeated)",
                  m->world_rank);
        return DPS_ERR_PROTO;
    }
    if (m->world_rank >= a->nlinks_cap) {
        uint32_t       cap = m->world_rank + 1 > 2 * a->nlinks_cap
                                 ? m->world_rank + 1
                                 : 2 * a->nlinks_cap;
        agent_link_t **n = realloc(a->link_of, sizeof(*n) * cap);

        if (n == NULL) {
            return DPS_ERR_NOMEM;
        }
        memset(n + a->nlinks_cap, 0, sizeof(*n) * (cap - a->nlinks_cap));
        a->link_of = n;
        a->nlinks_cap = cap;
    }
    /* /proc/<pid>/fd of a process that only shares the rank's pid (the
     * rank lives in another PID namespace) could hold another job's
     * segment: map it only once the rank's token is read back there. */
    why = dps_cma_check(m->pid, m->token_addr, m->token);
    if (why != DPS_OK) {
        dps_info("rank %u: no shared-memory channel: it does not share "
                 "our process space (pid %u: %s)",
                 m->world_rank, m->pid, dps_cma_why(why, errno));
        return DPS_OK;
    }
    s = dps_shm_attach((int)m->pid, m->fd, m->world_rank, err, sizeof(err));
    if (s == NULL) {
        /* The rank sees no attached flag and keeps to UCX. */
        dps_info("rank %u: no shared-memory channel: %s", m->world_rank, err);
        return DPS_OK;
    }
    l = calloc(1, sizeof(*l));
    if (l == NULL) {
        dps_shm_detach(s);
        return DPS_ERR_NOMEM;
    }
    l->world = m->world_rank;
    l->shm = s;
    l->next = a->links;
    a->links = l;
    a->link_of[m->world_rank] = l;
    __atomic_store_n(&s->attached, 1, __ATOMIC_RELEASE);
    return DPS_OK;
}

/* Move what waits for room into the ring; 1 if something went in. */
static int flush_outq(agent_link_t *l)
{
    int moved = 0;

    while (l->outq_head != NULL) {
        dps_inmsg_t *m = l->outq_head;

        if (dps_shm_msg_put(&l->shm->to_rank, l->shm->to_rank_buf, m->data,
                            m->len) != DPS_OK) {
            break;
        }
        l->outq_head = m->next;
        if (l->outq_head == NULL) {
            l->outq_tail = NULL;
        }
        free(m);
        moved = 1;
    }
    return moved;
}

static void wake_rank(agent_t *a, agent_link_t *l)
{
    dps_shm_fence();
    if (__atomic_load_n(&l->shm->rank_sleeping, __ATOMIC_RELAXED) &&
        a->rank_pid != NULL) {
        dps_kick((int)a->rank_pid[l->world], DPS_KICK_RANK);
    }
}

/* ---- to other agents: one bundle a pass -------------------------------- */

/* Bundle buffers are used again (they hold a chunk of pushed bytes, and
 * a fresh one would cost the kernel its pages each time): at most this
 * many kept, each at least AGENT_POOL_MIN bytes. */
#define AGENT_POOL_MAX 16
#define AGENT_POOL_MIN 65536

typedef struct pooled {
    struct pooled *next;
    size_t         cap;
} pooled_t;

static void pool_put(agent_t *a, void *buf, size_t cap)
{
    pooled_t *p = buf;

    if (buf == NULL || cap < AGENT_POOL_MIN ||
        a->out_npool >= AGENT_POOL_MAX) {
        free(buf);
        return;
    }
    p->cap = cap;
    p->next = a->out_pool;
    a->out_pool = p;
    a->out_npool++;
}

/* A kept buffer of at least need bytes (its capacity in *cap), or NULL. */
static void *pool_get(agent_t *a, size_t need, size_t *cap)
{
    for (pooled_t **pp = (pooled_t **)&a->out_pool; *pp != NULL;
         pp = &(*pp)->next) {
        pooled_t *p = *pp;

        if (p->cap >= need) {
            *pp = p->next;
            a->out_npool--;
            *cap = p->cap;
            return p;
        }
    }
    return NULL;
}

int agent_out_init(agent_t *a)
{
    a->out = calloc(a->nagents, sizeof(*a->out));
    if (a->out == NULL) {
        return DPS_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < a->nagents; i++) {
        a->out[i].credit = a->window;
    }
    return DPS_OK;
}

int agent_out_room(agent_t *a, agent_out_t *o, size_t len)
{
    size_t need = (o->len ? o->len : sizeof(dps_msg_hdr_t)) + len;

    if (need > UINT32_MAX) {
        return DPS_ERR_INVALID;
    }
    if (o->buf == NULL && need > 4096) {
        size_t cap;
        void  *b = pool_get(a, need, &cap);

        if (b != NULL) {
            o->buf = b;
            o->cap = cap;
        }
    }
    if (need > o->cap) {
        size_t   cap = o->cap ? o->cap : 4096;
        uint8_t *b;

        while (cap < need) {
            cap *= 2;
        }
        if ((b = realloc(o->buf, cap)) == NULL) {
            return DPS_ERR_NOMEM;
        }
        o->buf = b;
        o->cap = cap;
    }
    if (o->len == 0) {
        o->len = sizeof(dps_msg_hdr_t); /* the bundle's header, at send */
    }
    return DPS_OK;
}

int agent_send_agent(agent_t *a, uint32_t idx, void *msg, size_t len)
{
    agent_out_t *o;
    int          rc;

    if (msg == NULL) {
        return DPS_ERR_NOMEM;
    }
    if (a->out == NULL || idx >= a->nagents || a->agent_ep[idx] == NULL) {
        free(msg);
        return DPS_ERR_UCX;
    }
    o = &a->out[idx];
    if (o->dead) {
        free(msg);
        return DPS_ERR_UCX;
    }
    if (!a->push) {
        /* The earlier plan (DPUSHIM_PUSH=0), kept to compare: every
         * message on its own. */
        rc = dps_ucx_send(a->agent_ep[idx], msg, len);
        a->agent_msgs++;
        dps_kick((int)a->job_key, (int)idx);
        return rc;
    }
    if ((rc = agent_out_room(a, o, len)) == DPS_OK) {
        memcpy(o->buf + o->len, msg, len);
        o->len += len;
        o->n++;
    }
    free(msg);
    return rc;
}

typedef struct out_sent {
    agent_t     *a;
    void        *buf;
    size_t       cap;
    agent_out_t *o; /* a bundle with pushed bytes: its o->inflight */
    uint32_t     to;
} out_sent_t;

static void out_sent_cb(void *request, ucs_status_t status, void *user_data)
{
    out_sent_t *c = user_data;

    if (status != UCS_OK && status != UCS_ERR_CANCELED) {
        dps_error("a message to agent %u was lost: %s", c->to,
                  ucs_status_string(status));
    }
    if (c->o != NULL) {
        c->o->inflight--;
    }
    pool_put(c->a, c->buf, c->cap);
    free(c);
    ucp_request_free(request);
}

int agent_out_send_buf(agent_t *a, uint32_t idx, uint8_t *buf, size_t len,
                       size_t cap, int data)
{
    agent_out_t        *o = &a->out[idx];
    ucp_request_param_t rp;
    ucs_status_ptr_t    req;
    out_sent_t         *c = malloc(sizeof(*c));

    if (data == 1) {
        o->inflight++; /* until UCX is done with it */
    }
    if (c == NULL ||
        dps_bundle_header(len - sizeof(dps_msg_hdr_t), buf) != DPS_OK) {
        free(c);
        pool_put(a, buf, cap);
        o->inflight -= data != 0;
        return DPS_ERR_NOMEM;
    }
    c->a = a;
    c->buf = buf;
    c->cap = cap;
    c->o = data ? o : NULL;
    c->to = idx;
    memset(&rp, 0, sizeof(rp));
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    rp.cb.send = out_sent_cb;
    rp.user_data = c;
    req = ucp_am_send_nbx(a->agent_ep[idx], DPS_AM_BUNDLE, NULL, 0, buf, len,
                          &rp);
    a->agent_msgs++;
    dps_kick((int)a->job_key, (int)idx);
    if (req == NULL || UCS_PTR_IS_ERR(req)) {
        pool_put(a, c->buf, c->cap);
        free(c);
        o->inflight -= data != 0;
        if (req != NULL) {
            dps_error("cannot send to agent %u: %s", idx,
                      ucs_status_string(UCS_PTR_STATUS(req)));
            o->dead = 1;
            return DPS_ERR_UCX;
        }
    }
    return DPS_OK;
}

int agent_out_send(agent_t *a, uint32_t idx, int data)
{
    agent_out_t *o = &a->out[idx];
    uint8_t     *buf = o->buf;
    size_t       len, cap;

    if (o->n == 0) {
        return DPS_OK;
    }
    len = o->len;
    cap = o->cap;
    o->buf = NULL;
    o->n = 0;
    o->len = o->cap = 0;
    return agent_out_send_buf(a, idx, buf, len, cap, data ? 1 : 0);
}

void agent_out_flush(agent_t *a)
{
    for (uint32_t i = 0; a->out != NULL && i < a->nagents; i++) {
        /* Not past a bundle a worker still reads into: in order. */
        if (a->out[i].n > 0 && a->out[i].filling == 0) {
            agent_out_send(a, i, 0);
        }
    }
}

int agent_out_pending(const agent_t *a)
{
    for (uint32_t i = 0; a->out != NULL && i < a->nagents; i++) {
        if (a->out[i].n > 0 || a->out[i].inflight > 0) {
            return 1;
        }
    }
    return 0;
}

void agent_out_fini(agent_t *a)
{
    for (uint32_t i = 0; a->out != NULL && i < a->nagents; i++) {
        free(a->out[i].buf);
    }
    free(a->out);
    a->out = NULL;
    while (a->out_pool != NULL) {
        pooled_t *p = a->out_pool;

        a->out_pool = p->next;
        free(p);
    }
    a->out_npool = 0;
    while (a->rx_head != NULL) {
        agent_rx_t *rx = a->rx_head;

        a->rx_head = rx->next;
        agent_rx_put(rx);
    }
    a->rx_tail = NULL;
}

/* ---- from other agents: bundles, kept where UCX put them ---------------- */

void agent_rx_put(agent_rx_t *rx)
{
    if (rx == NULL || --rx->refs > 0) {
        return;
    }
    if (rx->ucx != NULL) {
        ucp_am_data_release(rx->worker, rx->ucx);
    }
    free(rx->mem);
    free(rx);
}

static void rx_queue(agent_t *a, agent_rx_t *rx)
{
    rx->next = NULL;
    if (a->rx_tail != NULL) {
        a->rx_tail->next = rx;
    } else {
        a->rx_head = rx;
    }
    a->rx_tail = rx;
}

typedef struct rx_rndv {
    agent_t    *a;
    agent_rx_t *rx;
} rx_rndv_t;

static void rx_rndv_done(void *request, ucs_status_t status, size_t length,
                         void *user_data)
{
    rx_rndv_t *c = user_data;

    c->a->rx_rndv--;
    if (status == UCS_OK) {
        c->rx->len = length;
        rx_queue(c->a, c->rx);
    } else {
        dps_error("receiving another agent's bundle failed: %s",
                  ucs_status_string(status));
        agent_rx_put(c->rx);
    }
    free(c);
    ucp_request_free(request);
}

#define AGENT_RX_KEEP_MIN 65536

/* A bundle from another agent: kept in UCX's buffer where UCX lets us
 * (no copy: the pieces are written into the ranks from there), else
 * received or copied into one of ours. Handled in the loop
 * (agent_rx_pop), never here. */
static ucs_status_t bundle_am(void *arg, const void *header,
                              size_t header_length, void *data, size_t length,
                              const ucp_am_recv_param_t *prm)
{
    agent_t    *a = arg;
    agent_rx_t *rx = calloc(1, sizeof(*rx));

    (void)header;
    (void)header_length;
    if (rx == NULL) {
        dps_error("out of memory receiving another agent's bundle");
        return UCS_OK;
    }
    rx->refs = 1;
    rx->worker = a->ucx.worker;
    rx->len = length;
    if (prm->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        rx_rndv_t          *c = malloc(sizeof(*c));
        ucp_request_param_t rp;
        ucs_status_ptr_t    req;

        if (c == NULL || (rx->mem = malloc(length ? length : 1)) == NULL) {
            free(c);
            free(rx);
            return UCS_OK;
        }
        rx->data = rx->mem;
        c->a = a;
        c->rx = rx;
        memset(&rp, 0, sizeof(rp));
        rp.op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        rp.cb.recv_am = rx_rndv_done;
        rp.user_data = c;
        req = ucp_am_recv_data_nbx(a->ucx.worker, data, rx->mem, length, &rp);
        if (req == NULL) {
            free(c);
            rx_queue(a, rx);
        } else if (UCS_PTR_IS_ERR(req)) {
            dps_error("ucp_am_recv_data_nbx: %s",
                      ucs_status_string(UCS_PTR_STATUS(req)));
            free(c);
            agent_rx_put(rx);
        } else {
            a->rx_rndv++;
        }
        return UCS_OK;
    }
    /* Kept in UCX's buffer only when large (a message UCX assembled
     * from fragments, in memory of its own): a small one may lie in
     * the transport's receive pool, which pieces waiting for their
     * ranks could drain until the transport stops reading. */
    if ((prm->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) &&
        length >= AGENT_RX_KEEP_MIN) {
        rx->ucx = data;
        rx->data = data;
        rx_queue(a, rx);
        return UCS_INPROGRESS;
    }
    if ((rx->mem = malloc(length ? length : 1)) == NULL) {
        free(rx);
        return UCS_OK;
    }
    memcpy(rx->mem, data, length);
    rx->data = rx->mem;
    rx_queue(a, rx);
    return UCS_OK;
}

int agent_rx_init(agent_t *a)
{
    ucp_am_handler_param_t am;
    ucs_status_t           st;

    memset(&am, 0, sizeof(am));
    am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                    UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_ARG;
    am.id = DPS_AM_BUNDLE;
    am.cb = bundle_am;
    am.arg = a;
    st = ucp_worker_set_am_recv_handler(a->ucx.worker, &am);
    if (st != UCS_OK) {
        dps_error("ucp_worker_set_am_recv_handler: %s", ucs_status_string(st));
        return DPS_ERR_UCX;
    }
    return DPS_OK;
}

agent_rx_t *agent_rx_pop(agent_t *a)
{
    agent_rx_t *rx = a->rx_head;

    if (rx != NULL) {
        a->rx_head = rx->next;
        if (a->rx_head == NULL) {
            a->rx_tail = NULL;
        }
        rx->next = NULL;
    }
    return rx;
}

void agent_send_rank(agent_t *a, uint32_t w, void *msg, size_t len)
{
    agent_link_t *l = agent_link(a, w);

    if (msg == NULL) {
        dps_error("out of memory encoding a message for rank %u", w);
        return;
    }
    if (l == NULL || len > DPS_SHM_MAX_MSG) {
        if (dps_ucx_send(a->rank_ep[w], msg, len) != DPS_OK) {
            dps_warn("cannot send to rank %u (gone?)", w);
        }
        /* The rank may be asleep in MPI_Wait. */
        if (a->rank_pid != NULL) {
            dps_kick((int)a->rank_pid[w], DPS_KICK_RANK);
        }
        return;
    }
    if (l->outq_head != NULL ||
        dps_shm_msg_put(&l->shm->to_rank, l->shm->to_rank_buf, msg, len) !=
            DPS_OK) {
        /* The rank has not taken its earlier messages (it computes):
         * keep this one, in order, until there is room. */
        dps_inmsg_t *q = malloc(sizeof(*q) + len);

        if (q == NULL) {
            dps_error("out of memory queueing a message for rank %u", w);
            free(msg);
            return;
        }
        q->next = NULL;
        q->len = len;
        memcpy(q->data, msg, len);
        if (l->outq_tail != NULL) {
            l->outq_tail->next = q;
        } else {
            l->outq_head = q;
        }
        l->outq_tail = q;
        flush_outq(l);
    }
    free(msg);
    wake_rank(a, l);
}

int agent_shm_poll(agent_t *a, dps_inmsg_t **deferred)
{
    static uint64_t buf[DPS_SHM_MAX_MSG / sizeof(uint64_t)];
    agent_link_t   *l;
    int             handled = 0;

    for (l = a->links; l != NULL; l = l->next) {
        long n;

        if (l->outq_head != NULL && flush_outq(l)) {
            wake_rank(a, l);
        }
        while ((n = dps_shm_msg_get(&l->shm->to_agent, l->shm->to_agent_buf,
                                    buf, sizeof(buf))) != 0) {
            char      err[256];
            dps_msg_t msg;
            int       rc;

            if (n < 0) {
                dps_error("rank %u: corrupt message ring; ignoring it",
                          l->world);
                /* Nothing more is read from it; the rank's own checks
                 * find the agent silent and take over. */
                l->shm->to_agent.head = l->shm->to_agent.tail;
                break;
            }
            handled++;
            if (dps_msg_decode(buf, (size_t)n, &msg, err, sizeof(err)) !=
                DPS_OK) {
                dps_error("malformed message from rank %u dropped: %s",
                          l->world, err);
                continue;
            }
            rc = a->up.handle(a, &msg);
            if (rc == DPS_ERR_AGAIN) {
                dps_inmsg_t *m = malloc(sizeof(*m) + (size_t)n);

                if (m == NULL) {
                    dps_error("out of memory deferring a message");
                    continue;
                }
                m->len = (size_t)n;
                memcpy(m->data, buf, (size_t)n);
                m->next = *deferred;
                *deferred = m;
            } else if (rc == DPS_ERR_NOMEM) {
                dps_error("cannot serve the job: %s", dps_status_str(rc));
                a->quit = 1;
            }
        }
    }
    return handled;
}

static void set_sleeping(agent_t *a, uint32_t v)
{
    agent_link_t *l;

    for (l = a->links; l != NULL; l = l->next) {
        __atomic_store_n(&l->shm->agent_sleeping, v, __ATOMIC_RELAXED);
    }
}

int agent_shm_may_sleep(agent_t *a)
{
    agent_link_t *l;

    if (a->links == NULL) {
        return 1;
    }
    set_sleeping(a, 1);
    dps_shm_fence();
    for (l = a->links; l != NULL; l = l->next) {
        if (dps_shm_msg_ready(&l->shm->to_agent) ||
            __atomic_load_n(&l->shm->done.tail, __ATOMIC_ACQUIRE) !=
                l->shm->done.head ||
            l->outq_head != NULL) {
            set_sleeping(a, 0);
            return 0;
        }
    }
    return 1;
}

void agent_shm_awake(agent_t *a)
{
    set_sleeping(a, 0);
}

void agent_shm_fini(agent_t *a)
{
    agent_link_t *l;

    while ((l = a->links) != NULL) {
        a->links = l->next;
        while (l->outq_head != NULL) {
            dps_inmsg_t *m = l->outq_head;

            l->outq_head = m->next;
            free(m);
        }
        dps_shm_detach(l->shm);
        free(l);
    }
    free(a->link_of);
    a->link_of = NULL;
    a->nlinks_cap = 0;
}
