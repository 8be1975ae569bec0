/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent's event loop: messages from ranks and agents (UCX and the
 * ranks' segments), the engines' reports, the staged moves; polling while
 * there is work or the agent has a core of its own, otherwise sleeping in
 * epoll until UCX, a kick, a copy thread or the spawning rank's pipe
 * wakes it.
 */
#define _GNU_SOURCE
#include "dpu_agent/main/agent_loop.h"
#include "dpu_agent/job/agent_job.h"
#include "dpu_agent/sched/agent_sched.h"
#include "dpu_agent/move/agent_move.h"
#include "dpu_agent/core/agent_chan.h"
#include "common/dps_config.h"
#include "common/dps_log.h"
#include "common/dps_status.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* One decoded message m (lying in the received message rx, which a PUSH
 * may keep) handed to the job; DPS_ERR_AGAIN when it must wait. */
static int handle_one(agent_t *a, const dps_msg_t *msg, agent_rx_t *rx)
{
    int rc;

    a->rx_cur = rx;
    rc = agent_handle(a, msg);
    a->rx_cur = NULL;
    if (rc == DPS_ERR_NOMEM ||
        ((msg->type == DPS_MSG_JOB_INFO || msg->type == DPS_MSG_PROCS) &&
         rc != DPS_OK && rc != DPS_ERR_AGAIN)) {
        dps_error("cannot serve the job: %s", dps_status_str(rc));
        a->quit = 1;
    }
    return rc;
}

/* Keep a copy of part (len bytes) among the deferred messages. */
static void defer_copy(const void *part, size_t len, dps_inmsg_t **deferred)
{
    dps_inmsg_t *d = malloc(sizeof(*d) + len);

    if (d == NULL) {
        dps_error("out of memory deferring a message");
        return;
    }
    d->len = len;
    memcpy(d->data, part, len);
    d->next = *deferred;
    *deferred = d;
}

/* Every message of a received bundle (another agent's pass), in order;
 * rx is released after, kept while PUSH pieces of it wait. */
static void handle_bundle(agent_t *a, agent_rx_t *rx, dps_inmsg_t **deferred)
{
    const uint8_t *p;
    size_t         left, plen;
    const void    *part;
    char           err[256];
    dps_msg_t      b;
    int            rc;

    if (dps_msg_decode(rx->data, rx->len, &b, err, sizeof(err)) != DPS_OK ||
        (b.type != DPS_MSG_BUNDLE && b.type != DPS_MSG_PUSH)) {
        dps_error("malformed bundle dropped: %s",
                  b.type != DPS_MSG_BUNDLE ? "not a bundle" : err);
        agent_rx_put(rx);
        return;
    }
    if (b.type == DPS_MSG_PUSH) { /* a lone piece: kept the same way */
        handle_one(a, &b, rx);
        agent_rx_put(rx);
        return;
    }
    p = b.u.bundle.parts;
    left = b.u.bundle.len;
    while ((rc = dps_bundle_next(&p, &left, &part, &plen, err, sizeof(err))) ==
           DPS_OK) {
        dps_msg_t msg;

        if (dps_msg_decode(part, plen, &msg, err, sizeof(err)) != DPS_OK) {
            dps_error("malformed message in a bundle dropped: %s", err);
        } else if (handle_one(a, &msg, rx) == DPS_ERR_AGAIN) {
            defer_copy(part, plen, deferred);
        }
    }
    if (rc != DPS_ERR_AGAIN) {
        dps_error("the rest of a bundle dropped: %s", err);
    }
    agent_rx_put(rx);
}

/* Handle queued messages; messages that must wait go to *deferred. */
static int drain_inbox(agent_t *a, dps_inmsg_t **deferred)
{
    dps_inmsg_t *m;
    agent_rx_t  *rx;
    int          handled = 0;

    while ((m = dps_inbox_pop(&a->ucx.inbox)) != NULL) {
        char      err[256];
        dps_msg_t msg;
        int       rc;

        handled++;
        rc = dps_msg_decode(m->data, m->len, &msg, err, sizeof(err));
        if (rc != DPS_OK) {
            dps_error("malformed message dropped: %s", err);
            free(m);
            continue;
        }
        if (msg.type == DPS_MSG_BUNDLE || msg.type == DPS_MSG_PUSH) {
            /* Bundles come on their own id (agent_rx_init); one that
             * came here is handled the same way. */
            if ((rx = calloc(1, sizeof(*rx))) == NULL) {
                free(m);
                continue;
            }
            rx->refs = 1;
            rx->mem = m;
            rx->data = (const uint8_t *)m->data;
            rx->len = m->len;
            handle_bundle(a, rx, deferred);
            continue;
        }
        if (handle_one(a, &msg, NULL) == DPS_ERR_AGAIN) {
            m->next = *deferred;
            *deferred = m;
            continue;
        }
        free(m);
    }
    while ((rx = agent_rx_pop(a)) != NULL) {
        handled++;
        handle_bundle(a, rx, deferred);
    }
    return handled;
}

/* A deferred message, handled again: DPS_ERR_AGAIN while it must still
 * wait (a post whose communicator is not known, a ROUND or INST_FAIL
 * before its post). */
static int retry_one(void *ctx, dps_inmsg_t *m)
{
    dps_msg_t msg;
    int       rc = dps_msg_decode(m->data, m->len, &msg, NULL, 0);

    return rc == DPS_OK ? agent_handle(ctx, &msg) : rc;
}

/* Retry the deferred messages, oldest first and until none moves on: a
 * ROUND deferred after the forwarded post it follows must not wait for
 * a message that may never come, as every rank may wait for that round. */
static void retry_deferred(agent_t *a, dps_inmsg_t **deferred)
{
    dps_inmsg_retry(deferred, retry_one, a);
}

static int parent_gone(int fd)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    char          buf[64];

    if (poll(&pfd, 1, 0) <= 0) {
        return 0;
    }
    /* The parent never writes: readable means EOF or an error. */
    return read(fd, buf, sizeof(buf)) <= 0;
}

/* After activity, keep polling this long before sleeping: the next post
 * or engine report usually follows soon, and a wake-up of an idle core
 * costs ~28 us on this VM (tests: futex round trip 56 us across cores,
 * 6.5 us on one). The polling yields, so that a rank or engine sharing
 * the core runs. 1 KiB Ialltoall pure time: 45 us without it, 34 us. */
#define AGENT_SPIN_SEC       0.0002
/* Eager mode: when a wake-up makes data ready to move, let the rank whose
 * post woke us return from MPI_I* first (we have just preempted it). */
#define AGENT_START_DELAY_NS 20000
/* Longest sleep: a backstop in case a wake-up is lost all the same. */
#define AGENT_BACKSTOP_MS    100

/* An emulated agent shares cores with computing ranks (a real DPU has its
 * own). Eager: nice -10, so that a wake-up preempts a computing rank and
 * the transfer overlaps the computation (the EEVDF scheduler otherwise
 * lets the rank finish its slice first, ~1 ms, by which time short
 * computations are over); the agent then sleeps briefly before moving
 * data, see AGENT_START_DELAY_NS. Batch: SCHED_BATCH, no wake-up
 * preemption at all; the agent runs on idle cores, e.g. once ranks wait.
 * Neither needs privilege beyond RLIMIT_NICE for the nice value. */
void agent_loop_set_sched(agent_t *a, int mode)
{
    struct sched_param sp = {0};

    if (mode == DPS_SCHED_POLL || mode == DPS_SCHED_AUTO) {
        /* A core of its own (a DPU's, or one no rank uses; a listener
         * resolves AUTO before, agent_on_dpu). It never sleeps, so it
         * runs at normal priority: nothing waits for it to be
         * scheduled. */
        a->poll = 1;
        return;
    }
    if (mode == DPS_SCHED_BATCH) {
        if (sched_setscheduler(0, SCHED_BATCH, &sp) != 0) {
            dps_debug("sched_setscheduler(SCHED_BATCH): %m");
        }
        return;
    }
    a->eager = 1;
    /* The start delay is short: without this, the default 50 us timer
     * slack stretches it to ~70 us, with a core idle meanwhile. */
    if (prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0) != 0) {
        dps_debug("prctl(PR_SET_TIMERSLACK): %m");
    }
    if (setpriority(PRIO_PROCESS, 0, -10) != 0) {
        dps_info("cannot raise the agent's priority (setpriority: %m; needs "
                 "RLIMIT_NICE or CAP_SYS_NICE): it runs at nice 0 and "
                 "overlaps less while every core computes");
    }
}

/* SIGUSR1: print what every live instance waits for (diagnostics). */
static volatile sig_atomic_t agent_dump_asked;

void agent_loop_on_usr1(int sig)
{
    (void)sig;
    agent_dump_asked = 1;
}

static void watch_fds(agent_t *a)
{
    struct epoll_event ev;
    int fds[4] = {a->parent_fd, a->ucx.efd, a->kick_fd[0], a->grant_fd};

    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    for (int i = 0; i < 4; i++) {
        if (fds[i] >= 0) {
            ev.data.fd = fds[i];
            epoll_ctl(a->epfd, EPOLL_CTL_ADD, fds[i], &ev);
        }
    }
}

#define SLEEP_ERROR (-1)
#define SLEEP_NOT   (-2) /* work came in before it could sleep */
#define SLEEP_EINTR (-3)

/* Idle: sleep until UCX, a kick or the parent pipe says so (at most
 * AGENT_BACKSTOP_MS). Returns the number of events (0: the backstop ran
 * out) or one of SLEEP_*. */
static int sleep_for_work(agent_t *a)
{
    struct epoll_event evs[8];
    int                n, i;

    if ((a->ucx.efd >= 0 && ucp_worker_arm(a->ucx.worker) == UCS_ERR_BUSY) ||
        !agent_shm_may_sleep(a)) {
        return SLEEP_NOT;
    }
    n = epoll_wait(a->epfd, evs, 8, AGENT_BACKSTOP_MS);
    agent_shm_awake(a);
    if (n < 0) {
        if (errno == EINTR) {
            return SLEEP_EINTR;
        }
        dps_error("epoll_wait: %m");
        return SLEEP_ERROR;
    }
    for (i = 0; i < n; i++) {
        int      fd = evs[i].data.fd;
        uint64_t v;

        if (fd == a->parent_fd && parent_gone(a->parent_fd)) {
            dps_info("spawning rank is gone: exiting");
            a->quit = 1;
        } else if (fd == a->kick_fd[0] || fd == a->kick_fd[1]) {
            dps_kick_drain(fd);
        } else if (fd == a->grant_fd) {
            agent_grants_take(a);
        } else if (fd == agent_copy_fd(a) && read(fd, &v, sizeof(v)) < 0) {
            /* EAGAIN: another wake-up took it */
        }
    }
    return n;
}

/* The messages that wait for another (SIGUSR1 dump): the type of each
 * and, for a post, its collective, instance and rank. */
static void dump_deferred(const agent_t *a, const dps_inmsg_t *m, FILE *out)
{
    unsigned n = 0;

    for (const dps_inmsg_t *q = m; q != NULL; q = q->next) {
        n++;
    }
    fprintf(out, "dpushim[agent %u]: %u messages deferred\n", a->self, n);
    for (; m != NULL; m = m->next) {
        dps_msg_t msg;

        if (dps_msg_decode(m->data, m->len, &msg, NULL, 0) != DPS_OK) {
            fprintf(out, "  (undecodable, %zu bytes)\n", m->len);
        } else if (msg.type == DPS_MSG_POST || msg.type == DPS_MSG_PEER_POST) {
            fprintf(out, "  %s %s #%u on %#llx from rank %u\n",
                    dps_msg_type_str(msg.type),
                    dps_coll_str(msg.u.post.fixed.coll), msg.u.post.fixed.seq,
                    (unsigned long long)msg.u.post.fixed.comm_id,
                    msg.u.post.fixed.world_rank);
        } else {
            fprintf(out, "  %s\n", dps_msg_type_str(msg.type));
        }
    }
}

/* A pass of the loop longer than this is reported (info): ranks fail an
 * agent that does not answer them within DPUSHIM_AGENT_TIMEOUT. */
#define AGENT_SLOW_PASS_SEC 1.0

/* Report a slow pass: how long each part took (t: its start, the ends
 * of the network, the messages, the moves, the sends). */
static void slow_pass(const double t[5])
{
    dps_info("a pass of the loop took %.2f s (network %.2f, messages %.2f, "
             "moves %.2f, sends %.2f): the agent was slow to answer its "
             "ranks (they fail it after DPUSHIM_AGENT_TIMEOUT); seen when "
             "it did not get a core",
             t[4] - t[0], t[1] - t[0], t[2] - t[1], t[3] - t[2], t[4] - t[3]);
}

/* One pass over every source of work; returns 1 if there was some. */
static int poll_once(agent_t *a, dps_inmsg_t **deferred, int woke)
{
    int    work = 0;
    double t[5];

    t[0] = dps_now();

    if (agent_dump_asked) {
        agent_dump_asked = 0;
        agent_dump(a, stderr);
        dump_deferred(a, *deferred, stderr);
    }
    while (ucp_worker_progress(a->ucx.worker)) {
        work = 1;
    }
    t[1] = dps_now();
    /* Wiring up: our ranks send their grants before their HELLOs, which
     * wait until we are ready, and a socket left full would hold them up
     * (their datagrams queue 10 deep, net.unix.max_dgram_qlen). Once
     * ready, each HELLO takes the grants (grant_check). */
    if (!a->ready) {
        agent_grants_take(a);
    }
    if (drain_inbox(a, deferred) + agent_shm_poll(a, deferred) +
        agent_engines_reap(a)) {
        work = 1;
        if (*deferred != NULL) {
            retry_deferred(a, deferred);
        }
    }
    /* Work for DMA engines goes out at once: the copy runs in the
     * destination rank's process, not on the core we just took. */
    agent_dispatch_engines(a);
    t[2] = dps_now();
    if (woke && a->eager && a->q_head != NULL && a->inflight == 0) {
        struct timespec ts = {0, AGENT_START_DELAY_NS};

        nanosleep(&ts, NULL);
    }
    work |= agent_schedule(a);
    t[3] = dps_now();
    /* What goes to other agents this pass, in one message each: the
     * node's posts once they are together, pushed bytes and the pass's
     * other messages. */
    if (agent_posts_held(a)) {
        agent_posts_release(a, 0);
    }
    agent_push_flush(a);
    agent_out_flush(a);
    t[4] = dps_now();
    if (t[4] - t[0] > AGENT_SLOW_PASS_SEC) {
        slow_pass(t);
    }
    return work;
}

int agent_loop_run(agent_t *a)
{
    dps_inmsg_t *deferred = NULL;
    double       last_work = dps_now();
    int          n = 1, timed_out = 0, woke = 0;
    unsigned     spins = 0;

    watch_fds(a);
    while (!a->quit) {
        int work = poll_once(a, &deferred, woke);

        woke = 0;
        if (timed_out && work) {
            a->missed_wakeups++;
            dps_debug("work found after a %d ms sleep: missed wake-up "
                      "(%lu so far)",
                      AGENT_BACKSTOP_MS, a->missed_wakeups);
        }
        timed_out = 0;
        if ((++spins & 0xfff) == 0 && parent_gone(a->parent_fd)) {
            dps_info("spawning rank is gone: exiting");
            break;
        }
        if (work || a->ucx.inbox.rndv_pending || a->rx_rndv) {
            last_work = dps_now();
        } else if (!agent_may_sleep(a) || agent_posts_held(a)) {
            /* Only UCX operations to wait for (gets, puts, flushes):
             * over TCP they advance when the ranks at the other end
             * progress, and those may be waiting for this very core. */
            last_work = dps_now();
            if (!a->poll) {
                sched_yield();
            }
        } else if (a->poll) {
            dps_cpu_relax();
        } else if (dps_now() - last_work < AGENT_SPIN_SEC) {
            /* Poll a while after activity, yielding the core to whoever
             * shares it (a waiting rank, an engine). */
            sched_yield();
        } else if ((n = sleep_for_work(a)) == SLEEP_ERROR) {
            break;
        } else if (n != SLEEP_NOT) {
            timed_out = (n == 0);
            woke = (n > 0);
            last_work = dps_now(); /* woken: poll a little before sleeping */
        }
    }
    while (deferred != NULL) {
        dps_inmsg_t *m = deferred;

        deferred = m->next;
        free(m);
    }
    return 0;
}
