/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The job as the agent learns it: the layout (JOB_INFO: every rank's
 * agent and address, every agent's address), the process table (PROCS),
 * each rank's HELLO answered with READY once all is wired; which ranks
 * prove that CMA reaches them (their tokens, common/dps_cma.h);
 * statistics and pings; and the dispatch of every message to its handler
 * (collectives go to the schedule engine, sched/agent_post.c).
 */
#define _GNU_SOURCE
#include "dpu_agent/job/agent_job.h"
#include "dpu_agent/sched/agent_sched.h"
#include "dpu_agent/core/agent_chan.h"
#include "common/dps_cma.h"
#include "common/dps_grant.h"
#include "common/dps_log.h"
#include "common/dps_status.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

/* CPU time of this process (user + system), in ns. */
static uint64_t cpu_ns(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) *
               1000000000ull +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
}

/* Peak resident memory of this process, KiB. */
static uint64_t rss_kb(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_maxrss;
}

/* Our counters, to the rank that spawned us (the first of our ranks). */
static int send_stats(agent_t *a)
{
    dps_msg_stats_t st;
    size_t          len;
    uint32_t        i;
    void           *msg;

    if (!a->ready) {
        return DPS_ERR_PROTO;
    }
    /* Since set-up ended: the cost of serving collectives. */
    st.cpu_ns = cpu_ns() - a->cpu_base_ns;
    st.collectives = a->collectives;
    st.missed_wakeups = a->missed_wakeups;
    st.cma_bytes = a->cma_bytes;
    st.ucx_bytes = a->ucx_bytes;
    st.dma_bytes = a->dma_bytes;
    st.net_bytes = a->net_bytes;
    st.fetches = a->fetches;
    st.agent_msgs = a->agent_msgs;
    st.pushes = a->pushes;
    st.pushed_bytes = a->pushed_bytes;
    st.rss_kb = rss_kb();
    st.endpoints = 0;
    for (i = 0; i < a->nranks; i++) {
        st.endpoints += a->rank_ep != NULL && a->rank_ep[i] != NULL;
    }
    for (i = 0; i < a->nagents; i++) {
        st.endpoints += a->agent_ep != NULL && a->agent_ep[i] != NULL;
    }
    st.keys_peak = a->keys_peak;
    st.scheds_peak = a->scheds_peak;
    st.steps_peak =
        (uint32_t)(a->steps_peak > UINT32_MAX ? UINT32_MAX : a->steps_peak);
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
    void  *msg;

    if (!a->ready || rank >= a->nranks || a->rank_agent[rank] != a->self) {
        dps_error("ping from rank %u, not served here", rank);
        return DPS_ERR_PROTO;
    }
    msg = dps_msg_encode_pong(&len);
    agent_send_rank(a, rank, msg, len);
    return DPS_OK;
}

/* READY, and how we reach the rank's memory (DPS_READY_*). */
static void send_ready(agent_t *a, uint32_t rank)
{
    uint32_t cma = 0;
    size_t   len;
    void    *msg;

    if (a->rank_st[rank] & AGENT_RANK_SEEN) {
        cma |= DPS_READY_SEEN;
        if (!a->force_ucx) {
            cma |= DPS_READY_CMA | (a->node_seen ? DPS_READY_CMA_NODE : 0);
        }
    }
    if (agent_rank_dma(a, rank)) {
        cma |= DPS_READY_DMA;
    }
    msg = dps_msg_encode_ready(DPS_OK, dps_reduce_formats(), cma, &len);
    if (msg == NULL || dps_ucx_send(a->rank_ep[rank], msg, len) != DPS_OK) {
        dps_error("cannot tell rank %u that the agent is ready", rank);
    }
}

/* Is rank w of this node and, if seen (why DPS_OK), SEEN, else not SEEN
 * for that reason (why, and err for DPS_ERR_IO)? */
static int rank_is(const agent_t *a, uint32_t w, int why, int err)
{
    if (a->rank_node[w] != a->my_node) {
        return 0;
    }
    return why == DPS_OK
               ? (a->rank_st[w] & AGENT_RANK_SEEN) != 0
               : !(a->rank_st[w] & AGENT_RANK_SEEN) && a->rank_why[w] == why &&
                     a->rank_errno[w] == err;
}

/* The ranks rank_is picks, as "0-3,6" in buf (len >= 32; cut short
 * with "..."); returns how many. */
static uint32_t rank_list(const agent_t *a, int why, int err, char *buf,
                          size_t len)
{
    uint32_t i, j, n = 0;
    size_t   off = 0;
    int      cut = 0;

    buf[0] = '\0';
    for (i = 0; i < a->nranks; i = j) {
        if (!rank_is(a, i, why, err)) {
            j = i + 1;
            continue;
        }
        for (j = i + 1; j < a->nranks && rank_is(a, j, why, err); j++) {
        }
        n += j - i;
        if (off + 28 >= len) {
            /* Room is kept for one more range of two 10-digit ranks. */
            if (!cut) {
                snprintf(buf + off, len - off, "...");
                cut = 1;
            }
            continue;
        }
        off += (size_t)snprintf(buf + off, len - off,
                                j - i > 1 ? "%s%u-%u" : "%s%u", off ? "," : "",
                                i, j - 1);
    }
    return n;
}

/* Once every rank of ours said HELLO: which ranks of this node CMA
 * reaches (debug) and, once per job, which it does not and why. */
/* Is the memory of all the ranks rank_is(why, err) picks reached by DMA
 * through their grants: ours by us, the others' by their agents (FETCH)?
 * Else some are served by their own UCX workers. */
static int all_dma(const agent_t *a, int why, int err)
{
    uint32_t i;

    for (i = 0; i < a->nranks; i++) {
        if (rank_is(a, i, why, err) && !agent_rank_dma(a, i) &&
            !agent_rank_fetch(a, i)) {
            return 0;
        }
    }
    return 1;
}

static void cma_report(agent_t *a)
{
    uint32_t told[8]; /* a rank of each reason told */
    unsigned ntold = 0, k;
    uint32_t i, n;
    char     list[256];

    if (a->cma_told || !a->ready || a->nhello < a->nlocal) {
        return;
    }
    a->cma_told = 1;
    if (dps_log_level >= DPS_LOG_DEBUG &&
        rank_list(a, DPS_OK, 0, list, sizeof(list)) > 0) {
        dps_debug("ranks %s of this node proved they share our process "
                  "space (token read back at their pid)%s",
                  list, a->force_ucx ? "" : ": their data moves with CMA");
    }
    for (i = 0; i < a->nranks && ntold < sizeof(told) / sizeof(told[0]); i++) {
        int why = a->rank_why[i], err = a->rank_errno[i];

        if (!rank_is(a, i, why, err) || why == DPS_OK) {
            continue;
        }
        for (k = 0; k < ntold && !rank_is(a, told[k], why, err); k++) {
        }
        if (k < ntold) {
            continue;
        }
        told[ntold++] = i;
        n = rank_list(a, why, err, list, sizeof(list));
        dps_info(
            "%s %s share%s this agent's node name but not its process "
            "space (%s): %s",
            n > 1 ? "ranks" : "rank", list, n > 1 ? "" : "s",
            dps_cma_why(why, err),
            all_dma(a, why, err)
                ? "reached by DMA through their grants, by their own agent"
                : "served over UCX");
    }
}

/* Can we reach rank w's memory with CMA? Its token must be at its
 * address in the process that has its pid here. */
static void rank_check(agent_t *a, uint32_t w, uint32_t pid, uint64_t addr,
                       uint64_t token)
{
    int why = dps_cma_check(pid, addr, token);

    a->rank_why[w] = why;
    a->rank_errno[w] = why == DPS_ERR_IO ? errno : 0;
    if (why == DPS_OK) {
        a->rank_st[w] |= AGENT_RANK_SEEN;
    } else {
        a->rank_st[w] &= (uint8_t)~AGENT_RANK_SEEN;
        dps_debug("rank %u (pid %u): token not read back at %#llx: %s", w, pid,
                  (unsigned long long)addr,
                  dps_cma_why(why, a->rank_errno[w]));
    }
}

/* Once the job layout and the process table are both known (they may
 * arrive in either order), check which ranks of this node served by
 * other agents we reach with CMA (ours prove it in their HELLO), and
 * finish wire-up. HELLOs wait until then. */
static int try_ready(agent_t *a)
{
    uint32_t i;
    int      rc;

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
    a->node_seen = 1;
    for (i = 0; i < a->nranks; i++) {
        if (a->rank_agent[i] != a->self && a->rank_node[i] == a->my_node) {
            rank_check(a, i, a->rank_pid[i], a->procs_token[2 * i],
                       a->procs_token[2 * i + 1]);
            a->node_seen &= (a->rank_st[i] & AGENT_RANK_SEEN) != 0;
        }
    }
    free(a->procs_token);
    a->procs_token = NULL;
    /* Finish wire-up with everyone now, while the ranks are still inside
     * MPI_Init and progressing, not at the first collective. */
    rc = dps_ucx_wait(
        a->ucx.worker,
        ucp_worker_flush_nbx(a->ucx.worker, &(ucp_request_param_t){0}), 60000);
    if (rc != DPS_OK) {
        dps_error("connecting to the ranks and agents: %s",
                  dps_status_str(rc));
        return rc;
    }
    a->ready = 1;
    a->cpu_base_ns = cpu_ns();
    cma_report(a);
    return DPS_OK;
}

/* A grant that came before the job layout. */
typedef struct agent_grant {
    dps_grant_msg_t g;
    int             fd;
} agent_grant_t;

/* Grants kept aside at most: each holds a descriptor, and no node runs
 * more ranks than this. */
#define AGENT_EARLY_GRANTS_MAX 4096

/* Keep grant g (descriptor fd) if it is from a rank of ours in this job,
 * until its HELLO proves it; close it otherwise. */
static void grant_keep(agent_t *a, const dps_grant_msg_t *g, int fd)
{
    if (g->world_rank >= a->nranks || g->job_key != a->job_key ||
        a->rank_agent[g->world_rank] != a->self) {
        dps_warn("grant from rank %u of job key %#x refused: not a rank "
                 "of ours",
                 g->world_rank, g->job_key);
        close(fd);
        return;
    }
    if (a->rank_memfd[g->world_rank] >= 0) {
        close(a->rank_memfd[g->world_rank]);
    }
    a->rank_memfd[g->world_rank] = fd;
}

/* Keep grant g aside until the job layout comes. */
static void grant_early(agent_t *a, const dps_grant_msg_t *g, int fd)
{
    if (a->nearly == a->early_cap) {
        uint32_t       cap = a->early_cap ? 2 * a->early_cap : 16;
        agent_grant_t *n = cap <= AGENT_EARLY_GRANTS_MAX
                               ? realloc(a->early, cap * sizeof(*n))
                               : NULL;

        if (n == NULL) {
            dps_warn("grant from rank %u dropped: %u wait for the job "
                     "layout already",
                     g->world_rank, a->nearly);
            close(fd);
            return;
        }
        a->early = n;
        a->early_cap = cap;
    }
    a->early[a->nearly].g = *g;
    a->early[a->nearly++].fd = fd;
}

void agent_grants_take(agent_t *a)
{
    dps_grant_msg_t  g;
    dps_grant_from_t from;
    int              fd, rc;

    if (a->have_job) {
        for (uint32_t i = 0; i < a->nearly; i++) {
            grant_keep(a, &a->early[i].g, a->early[i].fd);
        }
        a->nearly = 0;
    }
    while (a->grant_fd >= 0 &&
           ((rc = dps_grant_recv(a->grant_fd, &g, &fd, &from)) == DPS_OK ||
            rc == DPS_ERR_PROTO || rc == DPS_ERR_INVALID)) {
        if (rc == DPS_ERR_PROTO) {
            dps_warn("malformed grant dropped");
        } else if (rc == DPS_ERR_INVALID) {
            dps_warn("grant refused: from pid %d, uid %d (or of memory of "
                     "that uid), not this job's user, uid %u",
                     (int)from.pid, (int)from.uid, (unsigned)geteuid());
        } else if (a->have_job) {
            grant_keep(a, &g, fd);
        } else {
            grant_early(a, &g, fd);
        }
    }
}

void agent_grants_drop(agent_t *a)
{
    for (uint32_t i = 0; i < a->nearly; i++) {
        close(a->early[i].fd);
    }
    free(a->early);
    a->early = NULL;
    a->nearly = a->early_cap = 0;
}

/* Rank r's grant, if it sent one: does its token read back through it?
 * Then its memory is ours to read and write (AGENT_RANK_DMA). */
static void grant_check(agent_t *a, uint32_t r, uint64_t addr, uint64_t token)
{
    uint64_t v = 0;
    int      rc;

    agent_grants_take(a);
    if (a->rank_memfd[r] < 0) {
        return;
    }
    rc = token != 0 ? dps_dma_read(a->rank_memfd[r], addr, &v, sizeof(v))
                    : DPS_ERR_INVALID;
    if (rc == DPS_OK && v == token) {
        a->rank_st[r] |= AGENT_RANK_DMA;
        return;
    }
    dps_warn("rank %u's grant refused: %s", r,
             rc == DPS_ERR_IO        ? strerror(errno)
             : rc == DPS_ERR_INVALID ? strerror(EINVAL)
                                     : "its token does not read back");
    close(a->rank_memfd[r]);
    a->rank_memfd[r] = -1;
}

/* A rank of ours says hello (once we are ready: until then it waits in
 * the loop's deferred messages): check its token, answer READY. */
static int handle_hello(agent_t *a, const dps_msg_hello_t *h)
{
    uint32_t r = h->world_rank;

    if (!a->ready) {
        return DPS_ERR_AGAIN;
    }
    if (r >= a->nranks || a->rank_agent[r] != a->self) {
        dps_error("hello from rank %u, not served here", r);
        return DPS_ERR_PROTO;
    }
    if (h->pid != a->rank_pid[r]) {
        dps_warn("rank %u says hello as pid %u, the process table has %u", r,
                 h->pid, a->rank_pid[r]);
        a->rank_why[r] = DPS_ERR_INVALID;
        a->rank_errno[r] = 0;
        a->rank_st[r] &= (uint8_t)~AGENT_RANK_SEEN;
    } else {
        rank_check(a, r, h->pid, h->token_addr, h->token);
    }
    if (!(a->rank_st[r] & AGENT_RANK_SEEN)) {
        grant_check(a, r, h->token_addr, h->token);
    }
    if (!(a->rank_st[r] & AGENT_RANK_HELLO)) {
        a->rank_st[r] |= AGENT_RANK_HELLO;
        a->nhello++;
    }
    send_ready(a, r);
    cma_report(a);
    return DPS_OK;
}

static int handle_job(agent_t *a, const dps_msg_t *msg)
{
    const dps_msg_job_t *f = &msg->u.job.fixed;
    const uint8_t       *p;
    uint32_t             i;
    int                  rc;

    if (a->have_job) {
        dps_error("second job_info ignored");
        return DPS_ERR_PROTO;
    }
    a->nranks = f->nranks;
    a->nagents = f->nagents;
    a->self = f->agent_idx;
    a->rank_agent = calloc(a->nranks, sizeof(uint32_t));
    a->rank_ep = calloc(a->nranks, sizeof(ucp_ep_h));
    a->agent_ep = calloc(a->nagents, sizeof(ucp_ep_h));
    a->rank_st = calloc(a->nranks, sizeof(*a->rank_st));
    a->rank_why = calloc(a->nranks, sizeof(*a->rank_why));
    a->rank_errno = calloc(a->nranks, sizeof(*a->rank_errno));
    a->rank_memfd = malloc(a->nranks * sizeof(*a->rank_memfd));
    if (!a->rank_agent || !a->rank_ep || !a->agent_ep || !a->rank_st ||
        !a->rank_why || !a->rank_errno || !a->rank_memfd) {
        return DPS_ERR_NOMEM;
    }
    for (i = 0; i < a->nranks; i++) {
        a->rank_memfd[i] = -1;
    }
    if (agent_out_init(a) != DPS_OK) {
        return DPS_ERR_NOMEM;
    }
    a->have_job = 1;
    a->job_key = f->job_key;
    a->push = (f->flags & DPS_JOB_PUSH) != 0;
    a->kick_fd[1] = dps_kick_open((int)a->job_key, (int)a->self);
    if (a->kick_fd[1] >= 0 && a->epfd >= 0) {
        struct epoll_event ev = {.events = EPOLLIN};

        ev.data.fd = a->kick_fd[1];
        epoll_ctl(a->epfd, EPOLL_CTL_ADD, a->kick_fd[1], &ev);
    }
    p = msg->u.job.rank_addrs;
    for (i = 0; i < a->nranks; i++) {
        a->rank_agent[i] = dps_msg_u32(msg->u.job.rank_agent, i);
        a->nlocal += a->rank_agent[i] == a->self;
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
    a->procs_token = malloc(2 * sizeof(uint64_t) * n);
    if (a->rank_pid == NULL || a->rank_node == NULL ||
        a->procs_token == NULL) {
        return DPS_ERR_NOMEM;
    }
    for (i = 0; i < n; i++) {
        a->rank_pid[i] = dps_msg_u32(msg->u.procs.pid, i);
        a->rank_node[i] = dps_msg_u32(msg->u.procs.node, i);
        a->procs_token[2 * i] = dps_msg_u64(msg->u.procs.token_addr, i);
        a->procs_token[2 * i + 1] = dps_msg_u64(msg->u.procs.token, i);
    }
    a->procs_n = n;
    a->have_procs = 1;
    return try_ready(a);
}

int agent_handle(agent_t *a, const dps_msg_t *msg)
{
    switch (msg->type) {
    case DPS_MSG_JOB_INFO: return handle_job(a, msg);
    case DPS_MSG_PROCS: return handle_procs(a, msg);
    case DPS_MSG_HELLO: return handle_hello(a, &msg->u.hello);
    case DPS_MSG_SHUTDOWN: a->quit = 1; return DPS_OK;
    case DPS_MSG_SHM: return agent_shm_attach(a, &msg->u.shm);
    case DPS_MSG_STATS_REQ: return send_stats(a);
    case DPS_MSG_PING: return send_pong(a, msg->u.hello.world_rank);
    case DPS_MSG_POST:
    case DPS_MSG_PEER_POST:
    case DPS_MSG_SEND_DONE:
    case DPS_MSG_ROUND:
    case DPS_MSG_FETCH:
    case DPS_MSG_PUSH:
    case DPS_MSG_CREDIT:
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
