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

int agent_out_room(agent_out_t *o, size_t len)
{
    size_t need = (o->len ? o->len : sizeof(dps_msg_hdr_t)) + len;

    if (need > UINT32_MAX) {
        return DPS_ERR_INVALID;
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
    if ((rc = agent_out_room(o, len)) == DPS_OK) {
        memcpy(o->buf + o->len, msg, len);
        o->len += len;
        o->n++;
    }
    free(msg);
    return rc;
}

typedef struct out_sent {
    void        *buf;
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
    free(c->buf);
    free(c);
    ucp_request_free(request);
}

int agent_out_send(agent_t *a, uint32_t idx, int data)
{
    agent_out_t        *o = &a->out[idx];
    ucp_request_param_t rp;
    ucs_status_ptr_t    req;
    out_sent_t         *c;

    if (o->n == 0) {
        return DPS_OK;
    }
    c = malloc(sizeof(*c));
    if (c == NULL ||
        dps_bundle_header(o->len - sizeof(dps_msg_hdr_t), o->buf) != DPS_OK) {
        free(c);
        return DPS_ERR_NOMEM;
    }
    c->buf = o->buf;
    c->o = data ? o : NULL;
    c->to = idx;
    memset(&rp, 0, sizeof(rp));
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    rp.cb.send = out_sent_cb;
    rp.user_data = c;
    req = ucp_am_send_nbx(a->agent_ep[idx], DPS_AM_ID, NULL, 0, o->buf, o->len,
                          &rp);
    o->buf = NULL;
    o->len = o->cap = 0;
    o->n = 0;
    a->agent_msgs++;
    dps_kick((int)a->job_key, (int)idx);
    if (req == NULL || UCS_PTR_IS_ERR(req)) {
        free(c->buf);
        free(c);
        if (req != NULL) {
            dps_error("cannot send to agent %u: %s", idx,
                      ucs_status_string(UCS_PTR_STATUS(req)));
            o->dead = 1;
            return DPS_ERR_UCX;
        }
        return DPS_OK;
    }
    if (data) {
        o->inflight++;
    }
    return DPS_OK;
}

void agent_out_flush(agent_t *a)
{
    for (uint32_t i = 0; a->out != NULL && i < a->nagents; i++) {
        if (a->out[i].n > 0) {
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
