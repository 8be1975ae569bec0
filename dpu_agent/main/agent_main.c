/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpu_agent: carries out offloaded MPI collectives for the ranks of one
 * (virtual) node. On a BlueField it runs on the DPU's Arm cores; elsewhere
 * it is an ordinary process spawned by the first rank of its node.
 */
#define _GNU_SOURCE
#include "dpu_agent/core/agent.h"
#include "dpu_agent/job/agent_listen.h"
#include "common/dps_config.h"
#include "common/dps_listen.h"
#include "common/dps_log.h"
#include "common/dps_rtypes.h"
#include "common/dps_status.h"

#include <errno.h>
#include <getopt.h>
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


static void usage(FILE *out)
{
    fprintf(out,
"usage: dpu_agent --addr-fd N --parent-fd M\n"
"       dpu_agent --listen ADDR:PORT [--secret-dir DIR]\n"
"       dpu_agent --probe | --help | --config-markdown | --types-markdown\n"
"\n"
"Carries out MPI's nonblocking collectives, compiled by the ranks into\n"
"schedules of steps, for the ranks of one node (or emulated DPU).\n"
"Either libdpushim.so starts it during MPI_Init (--addr-fd,\n"
"--parent-fd), or it is started by hand, e.g. on a DPU's Arm cores, and\n"
"listens for jobs (--listen).\n"
"\n"
"  --addr-fd N    write this agent's UCX worker address, in hex and\n"
"                 followed by a newline, to file descriptor N, then close it\n"
"  --parent-fd M  file descriptor whose end of file means the spawning\n"
"                 rank is gone: the agent then exits at once\n"
"  --listen ADDR:PORT  serve jobs that connect over TCP: ADDR is an IPv4\n"
"                 address, [IPv6] address or host name, PORT 0 picks a\n"
"                 free port; prints \"dpu_agent: listening on ADDR:PORT\"\n"
"                 to stdout. Each job that proves its secret gets an agent\n"
"                 process of its own, which ends when the job closes the\n"
"                 connection. Runs until SIGTERM or SIGINT\n"
"  --secret-dir DIR  with --listen: where a job's secret is, DIR/JOB.key\n"
"                 (64 hex digits, mode 0600, owned by this user; DIR not\n"
"                 writable by others, made 0700 if missing); default\n"
"                 ${TMPDIR:-/tmp}/dpushim-UID\n"
"  --probe        list the RDMA devices rdma-core sees and say whether an\n"
"                 NVIDIA BlueField DPU is among them; exit status 0 if one\n"
"                 is, 1 if none, 2 if the devices cannot be listed\n"
"  --help         this text\n"
"  --config-markdown  print the DPUSHIM_* table as Markdown (for the README)\n"
"  --types-markdown   print the MPI datatypes and operations whose\n"
"                 reductions are offloaded, as Markdown (for the README)\n"
"\n"
"Environment (shared with libdpushim.so):\n");
    dps_config_print(out, 0);
}

static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Our UCX worker address, in hex, on fd. A spawned agent writes it alone
 * and closes the pipe; a listener's child (on_socket) writes
 * "ok <pid> <hostname> <hex>" on the job's connection and keeps it: the
 * connection's end is the job's end. */
static int publish_address(agent_t *a, int fd, int on_socket)
{
    ucp_worker_attr_t attr;
    char head[320] = "", host[256];
    size_t hl;
    char *line;
    int rc;

    attr.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS;
    if (ucp_worker_query(a->ucx.worker, &attr) != UCS_OK) {
        dps_error("ucp_worker_query failed");
        return DPS_ERR_UCX;
    }
    if (on_socket) {
        if (gethostname(host, sizeof(host)) != 0) {
            snprintf(host, sizeof(host), "unknown");
        }
        host[sizeof(host) - 1] = '\0';
        snprintf(head, sizeof(head), "ok %d %s ", (int)getpid(), host);
    }
    hl = strlen(head);
    line = malloc(hl + 2 * attr.address_length + 2);
    if (line == NULL) {
        ucp_worker_release_address(a->ucx.worker, attr.address);
        return DPS_ERR_NOMEM;
    }
    memcpy(line, head, hl);
    dps_hex_encode(attr.address, attr.address_length, line + hl);
    strcat(line, "\n");
    rc = write_all(fd, line, strlen(line));
    free(line);
    ucp_worker_release_address(a->ucx.worker, attr.address);
    if (!on_socket) {
        close(fd);
    }
    if (rc) {
        dps_error("cannot write the agent address to fd %d: %m", fd);
        return DPS_ERR_IO;
    }
    return DPS_OK;
}


/* Handle queued messages; messages that must wait go to *deferred. */
static int drain_inbox(agent_t *a, dps_inmsg_t **deferred)
{
    dps_inmsg_t *m;
    int handled = 0;

    while ((m = dps_inbox_pop(&a->ucx.inbox)) != NULL) {
        char err[256];
        dps_msg_t msg;
        int rc;

        handled++;
        rc = dps_msg_decode(m->data, m->len, &msg, err, sizeof(err));
        if (rc != DPS_OK) {
            dps_error("malformed message dropped: %s", err);
            free(m);
            continue;
        }
        rc = agent_handle(a, &msg);
        if (rc == DPS_ERR_AGAIN) {
            m->next = *deferred;
            *deferred = m;
            continue;
        }
        if (rc == DPS_ERR_NOMEM ||
            ((msg.type == DPS_MSG_JOB_INFO || msg.type == DPS_MSG_PROCS) &&
             rc)) {
            dps_error("cannot serve the job: %s", dps_status_str(rc));
            a->quit = 1;
        }
        free(m);
    }
    return handled;
}

/* Retry deferred posts (their communicator may be known now). */
static void retry_deferred(agent_t *a, dps_inmsg_t **deferred)
{
    dps_inmsg_t *list = *deferred, *m;

    *deferred = NULL;
    while ((m = list) != NULL) {
        dps_msg_t msg;

        list = m->next;
        if (dps_msg_decode(m->data, m->len, &msg, NULL, 0) == DPS_OK &&
            agent_handle(a, &msg) == DPS_ERR_AGAIN) {
            m->next = *deferred;
            *deferred = m;
            continue;
        }
        free(m);
    }
}

static int parent_gone(int fd)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    char buf[64];

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
#define AGENT_SPIN_SEC     0.0002
/* Eager mode: when a wake-up makes data ready to move, let the rank whose
 * post woke us return from MPI_I* first (we have just preempted it). */
#define AGENT_START_DELAY_NS 20000
/* Longest sleep: a backstop in case a wake-up is lost all the same. */
#define AGENT_BACKSTOP_MS  100

/* An emulated agent shares cores with computing ranks (a real DPU has its
 * own). Eager: nice -10, so that a wake-up preempts a computing rank and
 * the transfer overlaps the computation (the EEVDF scheduler otherwise
 * lets the rank finish its slice first, ~1 ms, by which time short
 * computations are over); the agent then sleeps briefly before moving
 * data, see AGENT_START_DELAY_NS. Batch: SCHED_BATCH, no wake-up
 * preemption at all; the agent runs on idle cores, e.g. once ranks wait.
 * Neither needs privilege beyond RLIMIT_NICE for the nice value. */
static void set_sched(agent_t *a, int mode)
{
    struct sched_param sp = {0};

    if (mode == DPS_SCHED_POLL || mode == DPS_SCHED_AUTO) {
        /* A core of its own (a DPU's, or one no rank uses); AUTO reaches
         * an agent unresolved only where nobody placed it among ranks: a
         * listening agent. It never sleeps, so it runs at normal
         * priority: nothing waits for it to be scheduled. */
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

void agent_copiers_started(agent_t *a)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    ev.data.fd = agent_copy_fd(a);
    if (epoll_ctl(a->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev) != 0) {
        dps_error("epoll_ctl(copy threads): %m");
    }
}

/* SIGUSR1: print what every live instance waits for (diagnostics). */
static volatile sig_atomic_t agent_dump_asked;

static void on_usr1(int sig)
{
    (void)sig;
    agent_dump_asked = 1;
}

static void watch_fds(agent_t *a)
{
    struct epoll_event ev;
    int fds[3] = {a->parent_fd, a->ucx.efd, a->kick_fd[0]};

    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    for (int i = 0; i < 3; i++) {
        if (fds[i] >= 0) {
            ev.data.fd = fds[i];
            epoll_ctl(a->epfd, EPOLL_CTL_ADD, fds[i], &ev);
        }
    }
}

#define SLEEP_ERROR  (-1)
#define SLEEP_NOT    (-2)    /* work came in before it could sleep */
#define SLEEP_EINTR  (-3)

/* Idle: sleep until UCX, a kick or the parent pipe says so (at most
 * AGENT_BACKSTOP_MS). Returns the number of events (0: the backstop ran
 * out) or one of SLEEP_*. */
static int sleep_for_work(agent_t *a)
{
    struct epoll_event evs[8];
    int n, i;

    if ((a->ucx.efd >= 0 &&
         ucp_worker_arm(a->ucx.worker) == UCS_ERR_BUSY) ||
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
        int fd = evs[i].data.fd;
        uint64_t v;

        if (fd == a->parent_fd && parent_gone(a->parent_fd)) {
            dps_info("spawning rank is gone: exiting");
            a->quit = 1;
        } else if (fd == a->kick_fd[0] || fd == a->kick_fd[1]) {
            dps_kick_drain(fd);
        } else if (fd == agent_copy_fd(a) && read(fd, &v, sizeof(v)) < 0) {
            /* EAGAIN: another wake-up took it */
        }
    }
    return n;
}

/* One pass over every source of work; returns 1 if there was some. */
static int poll_once(agent_t *a, dps_inmsg_t **deferred, int woke)
{
    int work = 0;

    if (agent_dump_asked) {
        agent_dump_asked = 0;
        agent_dump(a, stderr);
    }
    while (ucp_worker_progress(a->ucx.worker)) {
        work = 1;
    }
    if (drain_inbox(a, deferred) + agent_shm_poll(a, deferred)) {
        work = 1;
        if (*deferred != NULL) {
            retry_deferred(a, deferred);
        }
    }
    /* Work for DMA engines goes out at once: the copy runs in the
     * destination rank's process, not on the core we just took. */
    agent_dispatch_engines(a);
    if (woke && a->eager && a->q_head != NULL && a->inflight == 0) {
        struct timespec ts = {0, AGENT_START_DELAY_NS};

        nanosleep(&ts, NULL);
    }
    agent_schedule(a);
    return work;
}

static int run(agent_t *a)
{
    dps_inmsg_t *deferred = NULL;
    double last_work = dps_now();
    int n = 1, timed_out = 0, woke = 0;
    unsigned spins = 0;

    watch_fds(a);
    while (!a->quit) {
        int work = poll_once(a, &deferred, woke);

        woke = 0;
        if (timed_out && work) {
            a->missed_wakeups++;
            dps_debug("work found after a %d ms sleep: missed wake-up "
                      "(%lu so far)", AGENT_BACKSTOP_MS, a->missed_wakeups);
        }
        timed_out = 0;
        if ((++spins & 0xfff) == 0 && parent_gone(a->parent_fd)) {
            dps_info("spawning rank is gone: exiting");
            break;
        }
        if (work || a->ucx.inbox.rndv_pending) {
            last_work = dps_now();
        } else if (!agent_may_sleep(a)) {
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

/* Serve one job: the whole life of a spawned agent, or of a listener's
 * child (addr_fd == parent_fd, the job's connection; on_socket). */
static int serve(const dps_config_t *cfg, int addr_fd, int parent_fd,
                 int on_socket)
{
    agent_t a;
    int rc = 1;
    uint32_t i;

    memset(&a, 0, sizeof(a));
    a.parent_fd = parent_fd;
    a.kick_fd[0] = a.kick_fd[1] = -1;
    a.force_ucx = (cfg->transport == DPS_TRANSPORT_UCX);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGUSR1, on_usr1);
    set_sched(&a, cfg->agent_sched);
    a.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (a.epfd < 0) {
        dps_error("epoll_create1: %m");
        goto out;
    }
    a.kick_fd[0] = dps_kick_open((int)getpid(), DPS_KICK_AGENT);
    if (dps_ucx_open(&a.ucx) != DPS_OK) {
        goto out;
    }
    a.chunk = cfg->chunk_bytes;
    a.nslots = cfg->pipeline_depth;
    if (agent_exec_init(&a) != DPS_OK) {
        goto out_exec;
    }
    if (publish_address(&a, addr_fd, on_socket) != DPS_OK) {
        goto out_exec;
    }
    rc = run(&a);

out_exec:
    agent_exec_fini(&a);
    agent_sched_fini(&a);
    agent_shm_fini(&a);
    for (i = 0; a.rank_ep != NULL && i < a.nranks; i++) {
        dps_ucx_ep_close(a.ucx.worker, a.rank_ep[i], 100);
    }
    for (i = 0; a.agent_ep != NULL && i < a.nagents; i++) {
        dps_ucx_ep_close(a.ucx.worker, a.agent_ep[i], 100);
    }
    dps_ucx_close(&a.ucx);
out:
    for (i = 0; i < 2; i++) {
        if (a.kick_fd[i] >= 0) {
            close(a.kick_fd[i]);
        }
    }
    if (a.epfd >= 0) {
        close(a.epfd);
    }
    free(a.rank_agent);
    free(a.rank_pid);
    free(a.rank_node);
    free(a.rank_ep);
    free(a.agent_ep);
    free(a.hello);
    return rc;
}

/* agent_listen_run's callback, in the child forked for a job. */
static int serve_listened(int fd, const char *job, void *arg)
{
    dps_info("serving job '%s'", job);
    return serve(arg, fd, fd, 1);
}

/* The options go together; else says why (the caller prints usage). */
static int args_fit(int argc, char **argv, const char *listen_at,
                    const char *secret_dir, int addr_fd, int parent_fd)
{
    const char *why = NULL;

    if (optind != argc) {
        fprintf(stderr, "dpu_agent: unexpected argument '%s'\n\n",
                argv[optind]);
        return 0;
    }
    if (listen_at != NULL && (addr_fd >= 0 || parent_fd >= 0)) {
        why = "--listen does not go with --addr-fd or --parent-fd";
    } else if (listen_at == NULL && secret_dir != NULL) {
        why = "--secret-dir needs --listen";
    } else if (listen_at == NULL && (addr_fd < 0 || parent_fd < 0)) {
        why = "--addr-fd and --parent-fd (or --listen) are required";
    }
    if (why != NULL) {
        fprintf(stderr, "dpu_agent: %s\n\n", why);
    }
    return why == NULL;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"addr-fd",   required_argument, NULL, 'a'},
        {"parent-fd", required_argument, NULL, 'p'},
        {"listen",    required_argument, NULL, 'l'},
        {"secret-dir", required_argument, NULL, 's'},
        {"help",      no_argument,       NULL, 'h'},
        {"config-markdown", no_argument, NULL, 'M'},
        {"types-markdown", no_argument, NULL, 'T'},
        {"probe",     no_argument,       NULL, 'P'},
        {NULL, 0, NULL, 0}
    };
    extern char **environ;
    const char *listen_at = NULL, *secret_dir = NULL;
    char dir[4096], port[8], err[256];
    dps_config_t cfg;
    int c, addr_fd = -1, parent_fd = -1;

    dps_log_set_who("agent");
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'a':
            addr_fd = atoi(optarg);
            break;
        case 'p':
            parent_fd = atoi(optarg);
            break;
        case 'l':
            listen_at = optarg;
            break;
        case 's':
            secret_dir = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'M':
            dps_config_print(stdout, 1);
            return 0;
        case 'T':
            dps_rtypes_markdown(stdout);
            return 0;
        case 'P':
            return agent_probe(stdout);
        default:
            usage(stderr);
            return 2;
        }
    }
    if (!args_fit(argc, argv, listen_at, secret_dir, addr_fd, parent_fd)) {
        usage(stderr);
        return 2;
    }
    /* The ranks check the configuration and report problems; the agent
     * only takes its log level and tuning from it. */
    dps_config_load(&cfg, environ, NULL, 0, NULL);
    dps_log_level = cfg.log_level;
    if (listen_at == NULL) {
        return serve(&cfg, addr_fd, parent_fd, 0);
    }
    if (dps_listen_split_hostport(listen_at, 1, dir, sizeof(dir), port,
                                  sizeof(port), err, sizeof(err)) != DPS_OK) {
        fprintf(stderr, "dpu_agent: --listen: %s\n\n", err);
        usage(stderr);
        return 2;
    }
    if (secret_dir == NULL) {
        secret_dir = dps_secret_dir_default(dir, sizeof(dir));
        if (secret_dir == NULL) {
            fprintf(stderr, "dpu_agent: $TMPDIR is too long\n");
            return 2;
        }
    }
    /* No UCX here: each job's child creates its own after the fork. */
    return agent_listen_run(listen_at, secret_dir, serve_listened, &cfg);
}
