/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The job as the agent learns it: the layout (JOB_INFO: every rank's
 * agent and address, every agent's address), the process table (PROCS),
 * each rank's HELLO answered with READY once all is wired; statistics and
 * pings; and the dispatch of every message to its handler (collectives
 * go to the schedule engine, sched/agent_post.c).
 */
#define _GNU_SOURCE
#include "dpu_agent/job/agent_job.h"
#include "dpu_agent/sched/agent_sched.h"
#include "dpu_agent/core/agent_chan.h"
#include "common/dps_log.h"
#include "common/dps_status.h"

#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>

/* CPU time of this process (user + system), in ns. */
static uint64_t cpu_ns(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) *
           1000000000ull +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
}

/* Our counters, to the rank that spawned us (the first of our ranks). */
static int send_stats(agent_t *a)
{
    dps_msg_stats_t st;
    size_t len;
    uint32_t i;
    void *msg;

    if (!a->ready) {
        return DPS_ERR_PROTO;
    }
    /* Since set-up ended: the cost of serving collectives. */
    st.cpu_ns = cpu_ns() - a->cpu_base_ns;
    st.collectives = a->collectives;
    st.missed_wakeups = a->missed_wakeups;
    for (i = 0; i < a->nranks && a->rank_agent[i] != a->self; i++) {
    }
    msg = dps_msg_encode_stats(&st, &len);
    if (i == a->nranks || msg == NULL) {
        free(msg);
        return DPS_ERR_NOMEM;
    }
    agent_send_rank(a, i, msg, len);
    return DPS_OK;
}

/* A rank asks whether we are alive (it heard nothing for a while). */
static int send_pong(agent_t *a, uint32_t rank)
{
    size_t len;
    void *msg;

    if (!a->ready || rank >= a->nranks || a->rank_agent[rank] != a->self) {
        dps_error("ping from rank %u, not served here", rank);
        return DPS_ERR_PROTO;
    }
    msg = dps_msg_encode_pong(&len);
    agent_send_rank(a, rank, msg, len);
    return DPS_OK;
}

static void send_ready(agent_t *a, uint32_t rank)
{
    size_t len;
    void *msg = dps_msg_encode_ready(DPS_OK, dps_reduce_formats(), &len);

    if (msg == NULL || dps_ucx_send(a->rank_ep[rank], msg, len)) {
        dps_error("cannot tell rank %u that the agent is ready", rank);
    }
}

/* Once the job layout and the process table are both known (they may
 * arrive in either order), finish wire-up and tell the ranks. */
static int try_ready(agent_t *a)
{
    uint32_t i;
    int rc;

    if (!a->have_job || !a->have_procs || a->ready) {
        return DPS_OK;
    }
    if (a->procs_n != a->nranks) {
        dps_error("process table of %u ranks for a job of %u", a->procs_n,
                  a->nranks);
        return DPS_ERR_PROTO;
    }
    for (i = 0; i < a->nranks; i++) {
        if (a->rank_agent[i] == a->self) {
            a->my_node = a->rank_node[i];
            break;
        }
    }
    /* Finish wire-up with everyone now, while the ranks are still inside
     * MPI_Init and progressing, not at the first collective. */
    rc = dps_ucx_wait(a->ucx.worker, ucp_worker_flush_nbx(a->ucx.worker,
                      &(ucp_request_param_t){0}), 60000);
    if (rc != DPS_OK) {
        dps_error("connecting to the ranks and agents: %s",
                  dps_status_str(rc));
        return rc;
    }
    a->ready = 1;
    a->cpu_base_ns = cpu_ns();
    for (i = 0; i < a->nranks; i++) {
        if (a->hello[i]) {
            send_ready(a, i);
        }
    }
    return DPS_OK;
}

static int handle_job(agent_t *a, const dps_msg_t *msg)
{
    const dps_msg_job_t *f = &msg->u.job.fixed;
    const uint8_t *p;
    uint8_t *hello;
    uint32_t i;
    int rc;

    if (a->have_job) {
        dps_error("second job_info ignored");
        return DPS_ERR_PROTO;
    }
    /* HELLOs that came first are kept in a table sized by the highest
     * rank seen (a->nranks until now). */
    hello = calloc(f->nranks, sizeof(*hello));
    if (hello == NULL) {
        return DPS_ERR_NOMEM;
    }
    if (a->hello != NULL) {
        memcpy(hello, a->hello, sizeof(*hello) *
               (a->nranks < f->nranks ? a->nranks : f->nranks));
        free(a->hello);
    }
    a->hello = hello;
    a->nranks = f->nranks;
    a->nagents = f->nagents;
    a->self = f->agent_idx;
    a->rank_agent = calloc(a->nranks, sizeof(uint32_t));
    a->rank_ep = calloc(a->nranks, sizeof(ucp_ep_h));
    a->agent_ep = calloc(a->nagents, sizeof(ucp_ep_h));
    if (!a->rank_agent || !a->rank_ep || !a->agent_ep) {
        return DPS_ERR_NOMEM;
    }
    a->have_job = 1;
    a->job_key = f->job_key;
    a->kick_fd[1] = dps_kick_open((int)a->job_key, (int)a->self);
    if (a->kick_fd[1] >= 0 && a->epfd >= 0) {
        struct epoll_event ev = {.events = EPOLLIN};

        ev.data.fd = a->kick_fd[1];
        epoll_ctl(a->epfd, EPOLL_CTL_ADD, a->kick_fd[1], &ev);
    }
    p = msg->u.job.rank_addrs;
    for (i = 0; i < a->nranks; i++) {
        a->rank_agent[i] = dps_msg_u32(msg->u.job.rank_agent, i);
        rc = dps_ucx_ep_create(a->ucx.worker, p, NULL, NULL, &a->rank_ep[i]);
        if (rc != DPS_OK) {
            return rc;
        }
        p += dps_msg_u32(msg->u.job.rank_addr_len, i);
    }
    p = msg->u.job.agent_addrs;
    for (i = 0; i < a->nagents; i++) {
        if (i != a->self) {
            rc = dps_ucx_ep_create(a->ucx.worker, p, NULL, NULL,
                                   &a->agent_ep[i]);
            if (rc != DPS_OK) {
                return rc;
            }
        }
        p += dps_msg_u32(msg->u.job.agent_addr_len, i);
    }
    {
        char who[32];

        snprintf(who, sizeof(who), "agent %u", a->self);
        dps_log_set_who(who);
    }
    dps_info("job of %u ranks, %u agents", a->nranks, a->nagents);
    return try_ready(a);
}

static int handle_procs(agent_t *a, const dps_msg_t *msg)
{
    uint32_t i, n = msg->u.procs.fixed.nranks;

    if (a->have_procs) {
        dps_error("second procs message ignored");
        return DPS_ERR_PROTO;
    }
    a->rank_pid = malloc(sizeof(uint32_t) * n);
    a->rank_node = malloc(sizeof(uint32_t) * n);
    if (a->rank_pid == NULL || a->rank_node == NULL) {
        return DPS_ERR_NOMEM;
    }
    for (i = 0; i < n; i++) {
        a->rank_pid[i] = dps_msg_u32(msg->u.procs.pid, i);
        a->rank_node[i] = dps_msg_u32(msg->u.procs.node, i);
    }
    a->procs_n = n;
    a->have_procs = 1;
    return try_ready(a);
}

int agent_handle(agent_t *a, const dps_msg_t *msg)
{
    switch (msg->type) {
    case DPS_MSG_JOB_INFO:
        return handle_job(a, msg);
    case DPS_MSG_PROCS:
        return handle_procs(a, msg);
    case DPS_MSG_HELLO:
        if (!a->have_job) {
            /* Remember it; READY goes out once the job is known. The
             * table is sized when job_info arrives; until then keep a
             * growable copy. */
            uint32_t r = msg->u.hello.world_rank;
            uint8_t *h;
            size_t n = (size_t)r + 1 > a->nranks ? (size_t)r + 1
                                                 : a->nranks;

            if (r >= DPS_MAX_RANKS ||
                (h = realloc(a->hello, n * sizeof(*h))) == NULL) {
                return DPS_ERR_PROTO;
            }
            memset(h + a->nranks, 0, (n - a->nranks) * sizeof(*h));
            a->hello = h;
            a->nranks = (uint32_t)n;
            a->hello[r] = 1;
            return DPS_OK;
        }
        if (msg->u.hello.world_rank >= a->nranks ||
            a->rank_agent[msg->u.hello.world_rank] != a->self) {
            dps_error("hello from rank %u, not served here",
                      msg->u.hello.world_rank);
            return DPS_ERR_PROTO;
        }
        a->hello[msg->u.hello.world_rank] = 1;
        if (a->ready) {
            send_ready(a, msg->u.hello.world_rank);
        }
        return DPS_OK;
    case DPS_MSG_SHUTDOWN:
        a->quit = 1;
        return DPS_OK;
    case DPS_MSG_SHM:
        return agent_shm_attach(a, &msg->u.shm);
    case DPS_MSG_STATS_REQ:
        return send_stats(a);
    case DPS_MSG_PING:
        return send_pong(a, msg->u.hello.world_rank);
    case DPS_MSG_POST:
    case DPS_MSG_PEER_POST:
    case DPS_MSG_SEND_DONE:
    case DPS_MSG_ROUND:
    case DPS_MSG_INST_FAIL:
    case DPS_MSG_COMM_FREE:
    case DPS_MSG_REG_FREE:
    case DPS_MSG_SCHED_FREE:
        if (!a->ready) {
            dps_error("%s before the job is set up",
                      dps_msg_type_str(msg->type));
            return DPS_ERR_PROTO;
        }
        return agent_handle_coll(a, msg);
    default:
        dps_error("unexpected %s message", dps_msg_type_str(msg->type));
        return DPS_ERR_PROTO;
    }
}

void agent_job_init(agent_t *a)
{
    a->up.handle = agent_handle;
}
