/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rank's channel to its agent, core's object (core/shim.h): opened
 * and closed by boot/ through its calls (the agent, UCX, the ring, HELLO
 * and READY), failed by failover/. Messages out (the shared-memory ring,
 * else UCX), messages in (COMPLETE turns an offloaded operation into a
 * finished one; statistics, pongs), and the agent's liveness (its pid on
 * this host, pings to one elsewhere): a failure starts the takeover by
 * stock MPI (failover/failover.c).
 */
#define _GNU_SOURCE
#include "shim/core/shim.h"
#include "shim/data/reg.h"
#include "common/dps_cma.h"
#include "common/dps_log.h"
#include "common/dps_proto.h"
#include "common/dps_status.h"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SHIM_LIVENESS_PERIOD 0.1 /* s between agent liveness checks */

/* Into the shared-memory ring (tx_lock held): DPS_OK, DPS_ERR_INVALID
 * (too big: never fits), DPS_ERR_TIMEOUT (the agent takes nothing). */
static int shm_put(const void *msg, size_t len)
{
    dps_shm_t *s = shim.chan.shm;
    double     deadline = 0;
    int        rc;

    for (;;) {
        rc = dps_shm_msg_put(&s->to_agent, s->to_agent_buf, msg, len);
        if (rc != DPS_ERR_AGAIN) {
            break;
        }
        /* Full: the agent is behind (or gone; the liveness check says). */
        if (deadline == 0) {
            deadline = dps_now() + shim.cfg.agent_timeout;
        } else if (dps_now() > deadline) {
            return DPS_ERR_TIMEOUT;
        }
        dps_kick((int)shim.chan.agent_pid, DPS_KICK_AGENT);
        usleep(20);
    }
    if (rc == DPS_OK) {
        dps_shm_fence();
        if (__atomic_load_n(&s->agent_sleeping, __ATOMIC_RELAXED)) {
            dps_kick((int)shim.chan.agent_pid, DPS_KICK_AGENT);
        }
    }
    return rc;
}

int shim_send_agent(void *msg, size_t len)
{
    int rc;

    if (shim.chan.shm_on) {
        pthread_mutex_lock(&shim.chan.tx_lock);
        rc = shim.chan.shm_tx_ucx ? DPS_ERR_INVALID : shm_put(msg, len);
        if (rc == DPS_ERR_INVALID && !shim.chan.shm_tx_ucx) {
            /* Too big for the ring (a huge communicator's member list):
             * once the agent has taken everything before it, this and
             * every later message go by UCX, so none overtakes another. */
            double deadline = dps_now() + shim.cfg.agent_timeout;

            while (!dps_shm_msg_empty(&shim.chan.shm->to_agent) &&
                   dps_now() < deadline) {
                dps_kick((int)shim.chan.agent_pid, DPS_KICK_AGENT);
                usleep(20);
            }
            shim.chan.shm_tx_ucx = 1;
        }
        pthread_mutex_unlock(&shim.chan.tx_lock);
        if (rc != DPS_ERR_INVALID) {
            free(msg);
            return rc;
        }
    }
    rc = dps_ucx_send(shim.chan.agent_ep, msg, len);
    dps_kick((int)shim.chan.agent_pid, DPS_KICK_AGENT);
    return rc;
}

int shim_pid_alive(pid_t pid)
{
    char   path[64], buf[512], *p;
    FILE  *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    /* A zombie is dead: its parent (our leader) has not reaped it yet. */
    return p != NULL && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/*
 * Called with the lock held, while agents serve: is our agent, or another
 * on this node, dead, or has ours stopped answering? Notices it
 * (shim_fo_notice).
 */
void shim_agent_check(void)
{
    double now = dps_now(), half = shim.cfg.agent_timeout / 2.0;
    pid_t  dead;
    int    i;

    if (shim_fo_noticed() != SHIM_FO_NO_CAUSE || shim.by_token == NULL ||
        now - shim.chan.last_liveness < SHIM_LIVENESS_PERIOD) {
        return;
    }
    /* This rank was away longer than the answer may take (computing, or
     * blocked in a stock MPI call): its ping may have sat in its own UCX
     * queue until now, so the agent gets a whole window from here. Seen
     * at 32 ranks on 2 cores, where a stock collective takes seconds. */
    if (now - shim.chan.last_liveness > half && shim.chan.ping_sent > 0) {
        shim.chan.ping_sent = now;
    }
    shim.chan.last_liveness = now;
    /* Agents on this host: by pid (0: on a DPU, not ours to see). */
    if (shim.chan.agent_pid > 0 && !shim_pid_alive(shim.chan.agent_pid)) {
        shim_fo_notice(SHIM_FO_AGENT_DIED, "agent %s died",
                       shim.chan.agent_desc);
        return;
    }
    for (i = 0; i < shim.chan.n_node_agents; i++) {
        dead = shim.chan.node_agents[i];
        if (dead > 0 && !shim_pid_alive(dead)) {
            shim_fo_notice(SHIM_FO_AGENT_DIED,
                           "agent pid %d of this node died", (int)dead);
            return;
        }
    }
    /* A listening agent's connection ends when its process does. */
    if (shim.chan.listen_agent && shim.chan.parent_fd >= 0) {
        struct pollfd pfd = {shim.chan.parent_fd, POLLIN, 0};

        if (poll(&pfd, 1, 0) > 0) {
            shim_fo_notice(SHIM_FO_AGENT_GONE,
                           "the connection to agent %s ended",
                           shim.chan.agent_desc);
            return;
        }
    }
    /* Alive but silent: ping it; no answer within the timeout fails it. */
    if (shim.chan.ping_sent > 0 && now - shim.chan.ping_sent > half) {
        shim_fo_notice(SHIM_FO_AGENT_SILENT,
                       "agent %s has not answered for %u s "
                       "(DPUSHIM_AGENT_TIMEOUT)",
                       shim.chan.agent_desc, shim.cfg.agent_timeout);
    } else if (shim.chan.ping_sent == 0 && now - shim.chan.last_heard > half) {
        dps_msg_hello_t me;
        size_t          len;
        void           *msg;

        shim_hello(&me);
        msg = dps_msg_encode_ping(&me, &len);

        if (msg != NULL && shim_send_agent(msg, len) == DPS_OK) {
            shim.chan.ping_sent = now;
        }
    }
}

/* One message from the agent (lock held). */
static void agent_msg(const void *data, size_t len)
{
    char         err[256];
    dps_msg_t    msg;
    shim_op_t   *op;
    dps_status_t end;

    shim.chan.last_heard = dps_now();
    shim.chan.ping_sent = 0;
    if (dps_msg_decode(data, len, &msg, err, sizeof(err)) != DPS_OK) {
        dps_error("malformed message from the agent: %s", err);
    } else if (msg.type == DPS_MSG_STATS) {
        shim.stat.agent[0] = msg.u.stats.cpu_ns;
        shim.stat.agent[1] = msg.u.stats.collectives;
        shim.stat.agent[2] = msg.u.stats.missed_wakeups;
        shim.stat.agent[3] = msg.u.stats.cma_bytes;
        shim.stat.agent[4] = msg.u.stats.ucx_bytes;
        shim.stat.agent[5] = msg.u.stats.dma_bytes;
        shim.stat.agent[6] = msg.u.stats.net_bytes;
        shim.stat.agent[7] = msg.u.stats.fetches;
        shim.stat.agent[8] = msg.u.stats.rss_kb;
        shim.stat.agent[9] = msg.u.stats.endpoints;
        shim.stat.agent[10] = msg.u.stats.keys_peak;
        shim.stat.agent[11] = msg.u.stats.scheds_peak;
        shim.stat.agent[12] = msg.u.stats.steps_peak;
        shim.stat.agent[13] = msg.u.stats.agent_msgs;
        shim.stat.agent[14] = msg.u.stats.pushes;
        shim.stat.agent[15] = msg.u.stats.pushed_bytes;
        shim.stat.have_agent = 1;
    } else if (msg.type == DPS_MSG_PONG) {
        /* alive */
    } else if (msg.type != DPS_MSG_COMPLETE) {
        dps_warn("unexpected %s message from the agent",
                 dps_msg_type_str(msg.type));
    } else {
        HASH_FIND(hh_token, shim.by_token, &msg.u.complete.op_token,
                  sizeof(uint64_t), op);
        if (op == NULL) {
            dps_error("completion for unknown operation %llu",
                      (unsigned long long)msg.u.complete.op_token);
            return;
        }
        if (msg.u.complete.status == DPS_ERR_UCX) {
            /* The agent could not reach another agent (or a rank) for
             * this collective: usually one died. Not finished here, so
             * stock MPI redoes it with the others (failover/). */
            shim_fo_notice(SHIM_FO_AGENT_LOST,
                           "%s #%u: agent %s lost its connection to another "
                           "agent mid-collective",
                           dps_coll_str((unsigned)op->call.coll), op->call.seq,
                           shim.chan.agent_desc);
            return;
        }
        HASH_DELETE(hh_token, shim.by_token, op);
        end = DPS_OK;
        if (msg.u.complete.status != DPS_OK) {
            int st = msg.u.complete.status;

            /* Arguments that do not match across ranks, or another
             * rank's erroneous ones: the agent said which; the error goes
             * to the communicator's handler at completion (shim_progress),
             * as MPI would raise it, as a truncation. Any other failure
             * ends with the agent's own reason. */
            end = (st == DPS_ERR_MISMATCH || st == DPS_ERR_ARG)
                      ? DPS_ERR_TRUNCATE
                      : (dps_status_t)st;
            op->raise = (st == DPS_ERR_MISMATCH || st == DPS_ERR_ARG ||
                         st == DPS_ERR_BUFFER) &&
                        !op->call.error;
            if (!op->call.error) {
                dps_error("%s #%u ends with an error: %s%s",
                          dps_coll_str((unsigned)op->call.coll), op->call.seq,
                          dps_status_str(st),
                          op->raise
                              ? " (the agent's message names the ranks and "
                                "sizes)"
                              : "");
            }
        }
        /* Finished here, well or not: never to be redone. */
        dps_debug("%s #%u on communicator %#llx: completed by the agent",
                  dps_coll_str((unsigned)op->call.coll), op->call.seq,
                  (unsigned long long)op->comm->id);
        if (shim_hooks.finished != NULL) {
            shim_hooks.finished(op->comm, op->call.seq);
        }
        shim_op_done(op, end);
    }
}

void shim_agent_msgs(void)
{
    static uint64_t buf[DPS_SHM_MAX_MSG / sizeof(uint64_t)];
    dps_inmsg_t    *m;

    while (shim.chan.shm_on) {
        long n = dps_shm_msg_get(&shim.chan.shm->to_rank,
                                 shim.chan.shm->to_rank_buf, buf, sizeof(buf));

        if (n == 0) {
            break;
        }
        if (n < 0) {
            dps_error("the shared-memory channel from agent %s is corrupt",
                      shim.chan.agent_desc);
            shim_fo_notice(SHIM_FO_AGENT_CORRUPT,
                           "agent %s wrote a corrupt message ring",
                           shim.chan.agent_desc);
            break;
        }
        agent_msg(buf, (size_t)n);
    }
    while ((m = dps_inbox_pop(&shim.chan.ucx.inbox)) != NULL) {
        agent_msg(m->data, m->len);
        free(m);
    }
}

/* A listening agent on another host (a DPU) exits when its connection
 * ends; we cannot see it go. Writes it had issued land well within this. */
#define CHAN_REMOTE_GRACE_US 200000
/* How long an agent has to exit by itself at MPI_Finalize. */
#define CHAN_EXIT_WAIT_S     2.0

void shim_chan_stop_agent(int force)
{
    pid_t  pid = shim.chan.agent_pid;
    int    ours = shim.topo.is_leader && !shim.chan.listen_agent, status;
    double deadline;

    if (!force && !shim.topo.is_leader) {
        return; /* the leader lets it go */
    }
    if (shim.chan.parent_fd >= 0) {
        close(shim.chan.parent_fd); /* the agent exits when it sees EOF */
        shim.chan.parent_fd = -1;
    }
    if (pid <= 0) {
        if (force) {
            usleep(CHAN_REMOTE_GRACE_US);
        }
        return;
    }
    if (!force) {
        /* It exits by itself: our child is reaped, and killed if it does
         * not; a listening agent's listener reaps it. */
        deadline = dps_now() + CHAN_EXIT_WAIT_S;
        while (shim_pid_alive(pid) && dps_now() < deadline) {
            if (ours) {
                waitpid(pid, &status, WNOHANG);
            }
            usleep(1000);
        }
        if (!ours || !shim_pid_alive(pid)) {
            goto out;
        }
        dps_warn("agent pid %d did not exit: killing it", (int)pid);
    }
    kill(pid, SIGKILL);
    deadline = dps_now() + shim.cfg.agent_timeout;
    while (shim_pid_alive(pid)) {
        if (ours) {
            waitpid(pid, &status, WNOHANG);
        }
        if (dps_now() > deadline) {
            dps_error("agent %s still running %u s after SIGKILL",
                      shim.chan.agent_desc, shim.cfg.agent_timeout);
            break;
        }
        usleep(1000);
    }
out:
    if (ours) {
        waitpid(pid, &status, WNOHANG); /* a zombie: reaped */
    }
    /* Never signalled again: its pid may name another process soon. */
    shim.chan.agent_pid = 0;
}

void shim_chan_fail(void)
{
    shim_op_t *op, *tmp;

    /* Completions the agent sent before it stopped still count. */
    while (ucp_worker_progress(shim.chan.ucx.worker)) {
    }
    shim_agent_msgs();
    shim.chan.agent_dead = 1;
    /* No COMPLETE is taken from here on. */
    HASH_ITER(hh_token, shim.by_token, op, tmp) {
        HASH_DELETE(hh_token, shim.by_token, op);
    }
}

/* ---- Opening and closing: boot/ at MPI_Init and MPI_Finalize ------- */

void shim_chan_agent(const shim_chan_agent_t *a)
{
    shim.chan.agent_pid = a->pid;
    shim.chan.parent_fd = a->fd;
    shim.chan.listen_agent = a->listening;
    snprintf(shim.chan.agent_desc, sizeof(shim.chan.agent_desc), "%.*s",
             (int)sizeof(a->desc) - 1, a->desc);
    snprintf(shim.chan.grant_path, sizeof(shim.chan.grant_path), "%.*s",
             (int)sizeof(a->grant) - 1, a->grant);
}

dps_status_t shim_chan_open(int nranks)
{
    dps_status_t rc;

    /* Serialized: the progress thread shares it, every user holds
     * shim.lock (core/progress.c). */
    rc = dps_ucx_open(&shim.chan.ucx, UCS_THREAD_MODE_SERIALIZED);
    if (rc != DPS_OK) {
        return rc;
    }
    shim_reg_init(shim_send_agent);
    shim.chan.node_agents = calloc((size_t)nranks, sizeof(pid_t));
    if (shim.chan.node_agents == NULL) {
        dps_error("out of memory for the node's agents (%d ranks)", nranks);
        return DPS_ERR_NOMEM;
    }
    shim.chan.max_node_agents = nranks;
    if (dps_cma_token_new(&shim.chan.cma_token) != DPS_OK) {
        dps_info("no CMA token (getrandom: %m): agents reach this rank "
                 "over UCX only");
    }
    shim.chan.kick_fd = dps_kick_open((int)getpid(), DPS_KICK_RANK);
    return DPS_OK;
}

dps_status_t shim_chan_connect(const void *addr)
{
    return dps_ucx_ep_create(shim.chan.ucx.worker, addr, NULL, NULL,
                             &shim.chan.agent_ep);
}

void shim_chan_shm_offer(void)
{
    dps_msg_hello_t me;
    size_t          len;
    void           *msg;

    if (shim.chan.agent_pid <= 0) {
        return;
    }
    shim.chan.shm =
        dps_shm_create((uint32_t)shim.topo.world_rank, &shim.chan.shm_fd);
    if (shim.chan.shm == NULL) {
        dps_info("no shared-memory channel to the agent (memfd: %m): "
                 "messages go by UCX");
        return;
    }
    shim_hello(&me);
    msg = dps_msg_encode_shm(&me, shim.chan.shm_fd, &len);
    if (msg == NULL || shim_send_agent(msg, len) != DPS_OK) {
        dps_warn("cannot offer the shared-memory channel to the agent");
    }
}

void shim_chan_idle_step(void)
{
    /* Ranks waiting to be wired share their host's cores with the agents
     * and, on emulated hosts, with the kernel threads that carry the
     * packets (ksoftirqd); 32 ranks spinning on 2 cores held them off. */
    struct timespec ts = {0, 50000};

    if (ucp_worker_progress(shim.chan.ucx.worker) == 0) {
        nanosleep(&ts, NULL);
    }
}

/* READY: DPS_OK, or the agent's own failure to set up. */
static dps_status_t chan_ready(const dps_msg_ready_t *r)
{
    shim.chan.agent_formats = r->formats;
    shim.chan.agent_cma = r->cma;
    if (r->status != DPS_OK) {
        dps_error("agent failed to set up: %s", dps_status_str(r->status));
        return (dps_status_t)r->status;
    }
    /* A listening agent that reports our host name gave us its pid (for
     * liveness checks, kicks and, on failover, SIGKILL). Kept only if
     * the agent proved it shares our process space (it read our token:
     * DPS_READY_SEEN); otherwise that pid here names some other process,
     * or none (a container or PID namespace of the same host name). */
    if (shim.cfg.agent_map[0] != '\0' && shim.chan.agent_pid > 0 &&
        !(shim.chan.agent_cma & DPS_READY_SEEN)) {
        dps_info("agent %s shares this host's name but not its process "
                 "space: its pid is not used here (no pid checks, kicks or "
                 "kills; its connection and pings tell)",
                 shim.chan.agent_desc);
        shim.chan.agent_pid = 0;
    }
    /* Messages go by the ring if the agent mapped it. */
    if (shim.chan.shm == NULL) {
        return DPS_OK;
    }
    if (!__atomic_load_n(&shim.chan.shm->attached, __ATOMIC_ACQUIRE)) {
        dps_info("agent %s did not map the shared-memory channel: "
                 "messages go by UCX",
                 shim.chan.agent_desc);
        return DPS_OK;
    }
    shim.chan.shm_on = 1;
    return DPS_OK;
}

dps_status_t shim_chan_hello(double timeout_s)
{
    double          deadline = dps_now() + timeout_s;
    dps_msg_hello_t me;
    dps_inmsg_t    *m;
    dps_msg_t       dm;
    dps_status_t    rc;
    size_t          len;
    void           *msg;

    shim_hello(&me);
    msg = dps_msg_encode_hello(&me, &len);
    if (msg == NULL || shim_send_agent(msg, len) != DPS_OK) {
        dps_error("cannot say hello to the agent");
        return DPS_ERR_IO;
    }
    for (;;) {
        shim_chan_idle_step();
        while ((m = dps_inbox_pop(&shim.chan.ucx.inbox)) != NULL) {
            if (dps_msg_decode(m->data, m->len, &dm, NULL, 0) == DPS_OK &&
                dm.type == DPS_MSG_READY) {
                rc = chan_ready(&dm.u.ready);
                free(m);
                return rc;
            }
            dps_warn("unexpected message while connecting; dropped");
            free(m);
        }
        if (dps_now() > deadline) {
            dps_error("agent %s not ready after %.0f s", shim.chan.agent_desc,
                      timeout_s);
            return DPS_ERR_TIMEOUT;
        }
    }
}

void shim_chan_node_agents(const pid_t *pids, int n)
{
    if (n > shim.chan.max_node_agents) {
        n = shim.chan.max_node_agents;
    }
    if (n > 0) {
        memcpy(shim.chan.node_agents, pids, sizeof(pid_t) * (size_t)n);
    }
    shim.chan.n_node_agents = n;
}

void shim_chan_serving(void)
{
    shim.chan.last_liveness = shim.chan.last_heard = dps_now();
}

void shim_chan_close(void)
{
    shim.chan.shm_on = 0;
    dps_shm_detach(shim.chan.shm);
    shim.chan.shm = NULL;
    if (shim.chan.shm_fd >= 0) {
        close(shim.chan.shm_fd);
        shim.chan.shm_fd = -1;
    }
    if (shim.chan.kick_fd >= 0) {
        close(shim.chan.kick_fd);
        shim.chan.kick_fd = -1;
    }
    if (shim.chan.agent_ep != NULL) {
        dps_ucx_ep_close(shim.chan.ucx.worker, shim.chan.agent_ep, 100);
        shim.chan.agent_ep = NULL;
    }
    if (shim.chan.ucx.worker != NULL && shim.live > 0) {
        /* Registrations still in use: destroying the context would
         * abort in UCX. The process is ending; leave it to exit. */
        dps_warn("leaving UCX context open: %u operations never ended",
                 shim.live);
    } else if (shim.chan.ucx.worker != NULL) {
        shim_reg_fini();
        dps_ucx_close(&shim.chan.ucx);
    }
    free(shim.chan.node_agents);
    shim.chan.node_agents = NULL;
    shim.chan.n_node_agents = shim.chan.max_node_agents = 0;
}
