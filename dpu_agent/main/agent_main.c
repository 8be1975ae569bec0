/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpu_agent: carries out offloaded MPI collectives for the ranks of one
 * (virtual) node. On a BlueField it runs on the DPU's Arm cores; elsewhere
 * it is an ordinary process spawned by the first rank of its node.
 */
#define _GNU_SOURCE
#include "dpu_agent/main/agent_loop.h"
#include "dpu_agent/main/agent_probe.h"
#include "dpu_agent/main/agent_service.h"
#include "dpu_agent/job/agent_job.h"
#include "dpu_agent/job/agent_listen.h"
#include "dpu_agent/sched/agent_sched.h"
#include "dpu_agent/move/agent_move.h"
#include "dpu_agent/core/agent_chan.h"
#include "common/dps_config.h"
#include "common/dps_listen.h"
#include "common/dps_grant.h"
#include "common/dps_log.h"
#include "common/dps_rtypes.h"
#include "common/dps_status.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <unistd.h>

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: dpu_agent --addr-fd N --parent-fd M\n"
        "       dpu_agent --listen ADDR:PORT [--secret-dir DIR] "
        "[--workers N]\n"
        "       dpu_agent --service [--config FILE] [--listen ADDR:PORT] "
        "[--workers N]\n"
        "                 [--munge-socket PATH] [--grant-dir DIR] "
        "[--allow-root yes|no]\n"
        "                 [--log-level LEVEL]\n"
        "       dpu_agent --probe | --help | --config-markdown | "
        "--types-markdown\n"
        "\n"
        "Carries out MPI's nonblocking collectives, compiled by the ranks "
        "into\n"
        "schedules of steps, for the ranks of one node (or emulated DPU).\n"
        "Either libdpushim.so starts it during MPI_Init (--addr-fd,\n"
        "--parent-fd), or it is started by hand, e.g. on a DPU's Arm cores, "
        "and\n"
        "listens for jobs: one user's (--listen), or every user's as a "
        "cluster\n"
        "service run by root (--service, authenticated by MUNGE).\n"
        "\n"
        "  --addr-fd N    write this agent's UCX worker address, in hex and\n"
        "                 followed by a newline, to file descriptor N, then "
        "close it\n"
        "  --parent-fd M  file descriptor whose end of file means the "
        "spawning\n"
        "                 rank is gone: the agent then exits at once\n"
        "  --listen ADDR:PORT  serve jobs that connect over TCP: ADDR is an "
        "IPv4\n"
        "                 address, [IPv6] address or host name, PORT 0 picks "
        "a\n"
        "                 free port; prints \"dpu_agent: listening on "
        "ADDR:PORT\"\n"
        "                 to stdout. Each job that proves its secret gets an "
        "agent\n"
        "                 process of its own, which ends when the job closes "
        "the\n"
        "                 connection. Runs until SIGTERM or SIGINT\n"
        "  --secret-dir DIR  with --listen: where a job's secret is, "
        "DIR/JOB.key\n"
        "                 (64 hex digits, mode 0600, owned by this user; DIR "
        "not\n"
        "                 writable by others, made 0700 if missing); default\n"
        "                 ${TMPDIR:-/tmp}/dpushim-UID\n"
        "  --service      serve every user's jobs (run as root, e.g. by "
        "systemd's\n"
        "                 dpushim-agent.service): each job proves its uid "
        "with a\n"
        "                 MUNGE credential bound to its connection and gets "
        "a\n"
        "                 worker process running as that user (its groups, "
        "no\n"
        "                 capability). Jobs of root are refused unless "
        "allowed.\n"
        "                 SIGTERM ends the workers (their jobs go on with "
        "stock MPI),\n"
        "                 then the service. Its settings: the file, then "
        "these flags\n"
        "  --config FILE  with --service: settings as 'key = value' lines "
        "(listen,\n"
        "                 workers, munge_socket, grant_dir, allow_root, "
        "log_level);\n"
        "                 default " AGENT_SERVICE_CONF " (missing: the "
        "defaults)\n"
        "  --listen ADDR:PORT  with --service: default " AGENT_SERVICE_LISTEN
        "\n"
        "  --munge-socket PATH  with --service: munged's socket; default "
        "MUNGE's\n"
        "  --grant-dir DIR  with --service: where each user's directory of "
        "grant\n"
        "                 sockets is made (DIR/UID, mode 0700); default\n"
        "                 " AGENT_SERVICE_GRANT_DIR "; empty: no DMA "
        "grants\n"
        "  --allow-root yes|no  with --service: serve jobs of root (default "
        "no)\n"
        "  --log-level LEVEL  with --service: error, warn, info (default) or "
        "debug\n"
        "  --workers N    with --listen or --service: threads that move each "
        "job's bytes\n"
        "                 (DMA and CMA copies, reductions, the reads of "
        "pushed\n"
        "                 pieces), 1 to 256; 1: the event loop moves them "
        "itself.\n"
        "                 Default: the CPUs of a BlueField's Arm cores, 1 "
        "elsewhere\n"
        "  --probe        list the RDMA devices rdma-core sees and say "
        "whether an\n"
        "                 NVIDIA BlueField DPU is among them; exit status 0 "
        "if one\n"
        "                 is, 1 if none, 2 if the devices cannot be listed\n"
        "  --help         this text\n"
        "  --config-markdown  print the DPUSHIM_* table as Markdown (for "
        "docs/)\n"
        "  --types-markdown   print the MPI datatypes and operations whose\n"
        "                 reductions are offloaded, as Markdown (for docs/)\n"
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
    char              head[320] = "", host[256];
    size_t            hl;
    char             *line;
    int               rc;

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
    line = malloc(hl + 2 * attr.address_length + sizeof(a->grant_path) + 3);
    if (line == NULL) {
        ucp_worker_release_address(a->ucx.worker, attr.address);
        return DPS_ERR_NOMEM;
    }
    memcpy(line, head, hl);
    dps_hex_encode(attr.address, attr.address_length, line + hl);
    /* Where the ranks grant us their memory: said, not computed by
     * them (a service's directory is its own). */
    if (on_socket && a->grant_path[0] != '\0') {
        strcat(line, " ");
        strcat(line, a->grant_path);
    }
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

/* A listener's --workers (0: the default). */
static unsigned listen_workers;

/* A listener's child: the socket our ranks grant us their memory
 * through (common/dps_grant.h), named for the job, this host and pid,
 * before the "ok" line that tells the ranks both. */
static void grant_open(agent_t *a, const char *job, const char *dir)
{
    char host[256];

    if (dir == NULL || dir[0] == '\0') {
        return;
    }
    if (gethostname(host, sizeof(host)) != 0) {
        snprintf(host, sizeof(host), "unknown");
    }
    host[sizeof(host) - 1] = '\0';
    if (dps_grant_path(dir, job, host, (uint32_t)getpid(), a->grant_path,
                       sizeof(a->grant_path)) != DPS_OK) {
        dps_warn("no DMA grants: %s is too long a directory for a socket",
                 dir);
        return;
    }
    a->grant_fd = dps_grant_listen(a->grant_path);
    if (a->grant_fd < 0) {
        dps_warn("no DMA grants: cannot bind %s: %m", a->grant_path);
        a->grant_path[0] = '\0';
    }
}

/* Serve one job: the whole life of a spawned agent, or of a listener's
 * child (addr_fd == parent_fd, the job's connection; job: its name). */
static int serve(const dps_config_t *cfg, int addr_fd, int parent_fd,
                 const char *job, const char *grant_dir)
{
    int      on_socket = job != NULL;
    agent_t  a;
    int      rc = 1;
    uint32_t i;

    memset(&a, 0, sizeof(a));
    a.parent_fd = parent_fd;
    a.kick_fd[0] = a.kick_fd[1] = -1;
    a.grant_fd = -1;
    a.force_ucx = (cfg->transport == DPS_TRANSPORT_UCX);
    /* What lower parts call up into (core/agent.h, agent_upcalls_t). */
    agent_job_init(&a);
    agent_sched_init(&a);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGUSR1, agent_loop_on_usr1);
    agent_loop_set_sched(&a, cfg->agent_sched);
    a.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (a.epfd < 0) {
        dps_error("epoll_create1: %m");
        goto out;
    }
    a.kick_fd[0] = dps_kick_open((int)getpid(), DPS_KICK_AGENT);
    /* Only the event loop's thread touches UCX (copy threads do CMA). */
    if (dps_ucx_open(&a.ucx, UCS_THREAD_MODE_SINGLE) != DPS_OK) {
        goto out;
    }
    if (agent_rx_init(&a) != DPS_OK) {
        goto out_exec;
    }
    a.chunk = cfg->chunk_bytes;
    a.nslots = cfg->pipeline_depth;
    /* A spawned agent's chunks go to one worker each (its copy threads,
     * DPUSHIM_PIPELINE_DEPTH of them); a listener's as asked. */
    a.nworkers = on_socket ? listen_workers : a.nslots;
    agent_push_init(&a);
    if (agent_exec_init(&a) != DPS_OK) {
        goto out_exec;
    }
    if (on_socket) {
        grant_open(&a, job, grant_dir);
    }
    if (publish_address(&a, addr_fd, on_socket) != DPS_OK) {
        goto out_exec;
    }
    rc = agent_loop_run(&a);

out_exec:
    agent_workers_stop(&a); /* nothing of theirs is freed under them */
    agent_push_fini(&a);    /* before the queue's moves are freed */
    agent_exec_fini(&a);
    agent_out_fini(&a);
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
    if (a.grant_fd >= 0) {
        close(a.grant_fd);
        unlink(a.grant_path);
    }
    agent_grants_drop(&a);
    for (i = 0; a.rank_memfd != NULL && i < a.nranks; i++) {
        if (a.rank_memfd[i] >= 0) {
            close(a.rank_memfd[i]);
        }
    }
    free(a.rank_memfd);
    free(a.rank_agent);
    free(a.rank_pid);
    free(a.rank_node);
    free(a.rank_ep);
    free(a.agent_ep);
    free(a.procs_token);
    free(a.rank_st);
    free(a.rank_why);
    free(a.rank_errno);
    return rc;
}

/* agent_listen_run's callback, in the child forked for a job. */
static int serve_listened(int fd, const char *job, const char *grant_dir,
                          void *arg)
{
    dps_info("serving job '%s'", job);
    return serve(arg, fd, fd, job, grant_dir);
}

/* The options go together; else says why (the caller prints usage). */
static int args_fit(int argc, char **argv, const char *listen_at,
                    const char *secret_dir, int addr_fd, int parent_fd,
                    int service, int svc_flags)
{
    const char *why = NULL;

    if (optind != argc) {
        fprintf(stderr, "dpu_agent: unexpected argument '%s'\n\n",
                argv[optind]);
        return 0;
    }
    if ((listen_at != NULL || service) && (addr_fd >= 0 || parent_fd >= 0)) {
        why = "--listen and --service do not go with --addr-fd or "
              "--parent-fd";
    } else if (service && secret_dir != NULL) {
        why = "--secret-dir is --listen's: a service authenticates jobs by "
              "MUNGE";
    } else if (!service && svc_flags) {
        why = "--config, --munge-socket, --grant-dir, --allow-root and "
              "--log-level need --service";
    } else if (listen_at == NULL && secret_dir != NULL) {
        why = "--secret-dir needs --listen";
    } else if (listen_at == NULL && !service &&
               (addr_fd < 0 || parent_fd < 0)) {
        why = "--addr-fd and --parent-fd (or --listen, --service) are "
              "required";
    }
    if (why != NULL) {
        fprintf(stderr, "dpu_agent: %s\n\n", why);
    }
    return why == NULL;
}

/* A listener's or service's scheduling and workers (defaults where 0). */
static void listener_tuning(dps_config_t *cfg, long workers)
{
    /* A listener serves ranks it was not placed among: it polls only on
     * a DPU's own cores (decision 10); elsewhere, an emulated DPU
     * included, it shares the cores with ranks and other agents, and a
     * polling agent there holds them off (8 emulated DPUs' polling
     * agents on 2 cores: 300-360 ms an Ialltoall at 8 x 4 ranks, against
     * 24-84 ms sleeping when idle; docs/results.md). */
    if (cfg->agent_sched == DPS_SCHED_AUTO) {
        cfg->agent_sched = agent_on_dpu() ? DPS_SCHED_POLL : DPS_SCHED_EAGER;
        dps_info("DPUSHIM_AGENT_SCHED=auto: %s",
                 cfg->agent_sched == DPS_SCHED_POLL
                     ? "poll (a BlueField's own cores)"
                     : "eager (not on a DPU: cores shared with ranks)");
    }
    if (workers == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);

        workers = agent_on_dpu() && n > 1 ? (n > 256 ? 256 : n) : 1;
    }
    listen_workers = (unsigned)workers;
    dps_info("%ld worker%s a job", workers, workers > 1 ? "s" : "");
}

/* The options of --service, in the order read: the file, then the flags
 * (kept as key/value pairs until the file is read). */
typedef struct svc_flag {
    const char *flag, *key, *value;
} svc_flag_t;

/* dpu_agent --service: settings from the file and flags, then serve. */
static int run_service(dps_config_t *cfg, const char *conf, int conf_given,
                       const svc_flag_t *flags, int nflags,
                       const char *listen_at, long workers)
{
    agent_service_conf_t sc;
    agent_service_t      svc;
    char                 err[1200], wbuf[16];
    int                  i;

    agent_service_conf_init(&sc);
    if (agent_service_conf_load(&sc, conf, conf_given, err, sizeof(err)) !=
        DPS_OK) {
        fprintf(stderr, "dpu_agent: %s\n", err);
        return 2;
    }
    if (listen_at != NULL &&
        agent_service_conf_set(&sc, "listen", listen_at, err, sizeof(err)) !=
            DPS_OK) {
        fprintf(stderr, "dpu_agent: --listen: %s\n", err);
        return 2;
    }
    if (workers != 0) {
        snprintf(wbuf, sizeof(wbuf), "%ld", workers);
        agent_service_conf_set(&sc, "workers", wbuf, err, sizeof(err));
    }
    for (i = 0; i < nflags; i++) {
        if (agent_service_conf_set(&sc, flags[i].key, flags[i].value, err,
                                   sizeof(err)) != DPS_OK) {
            fprintf(stderr, "dpu_agent: --%s: %s\n", flags[i].flag, err);
            return 2;
        }
    }
    dps_log_level = sc.log_level;
    cfg->log_level = sc.log_level;
    if (geteuid() != 0) {
        dps_warn("not root: this service can serve only its own user's jobs "
                 "(uid %u)",
                 (unsigned)geteuid());
    }
    listener_tuning(cfg, sc.workers);
    svc.munge_socket = sc.munge_socket;
    svc.grant_dir = sc.grant_dir;
    svc.allow_root = sc.allow_root;
    dps_info("configuration %s%s", conf,
             conf_given || access(conf, F_OK) == 0 ? ""
                                                   : " (absent: defaults)");
    return agent_listen_run(sc.listen, NULL, &svc, serve_listened, cfg);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"addr-fd", required_argument, NULL, 'a'},
        {"parent-fd", required_argument, NULL, 'p'},
        {"listen", required_argument, NULL, 'l'},
        {"secret-dir", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {"config-markdown", no_argument, NULL, 'M'},
        {"types-markdown", no_argument, NULL, 'T'},
        {"probe", no_argument, NULL, 'P'},
        {"workers", required_argument, NULL, 'w'},
        {"service", no_argument, NULL, 'S'},
        {"config", required_argument, NULL, 'c'},
        {"munge-socket", required_argument, NULL, 'm'},
        {"grant-dir", required_argument, NULL, 'g'},
        {"allow-root", required_argument, NULL, 'R'},
        {"log-level", required_argument, NULL, 'L'},
        {NULL, 0, NULL, 0}};
    extern char **environ;
    const char   *listen_at = NULL, *secret_dir = NULL;
    const char   *conf = AGENT_SERVICE_CONF;
    char          dir[4096], port[8], err[256];
    svc_flag_t    flags[8];
    dps_config_t  cfg;
    int           c, addr_fd = -1, parent_fd = -1, service = 0;
    int           nflags = 0, conf_given = 0;
    long          workers = 0;
    char         *end;

    dps_log_set_who("agent");
    /* The name the scripts and tests find agents by (/proc/PID/comm):
     * under qemu-user (an aarch64 agent here, scripts/arm64-agent.sh)
     * the process would otherwise be named qemu-aarch64. */
    (void)prctl(PR_SET_NAME, "dpu_agent", 0, 0, 0);
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'a': addr_fd = atoi(optarg); break;
        case 'p': parent_fd = atoi(optarg); break;
        case 'l': listen_at = optarg; break;
        case 's': secret_dir = optarg; break;
        case 'h': usage(stdout); return 0;
        case 'M': dps_config_print(stdout, 1); return 0;
        case 'T': dps_rtypes_markdown(stdout); return 0;
        case 'P': return agent_probe(stdout);
        case 'S': service = 1; break;
        case 'c':
            conf = optarg;
            conf_given = 1;
            break;
        case 'm':
            flags[nflags++] =
                (svc_flag_t){"munge-socket", "munge_socket", optarg};
            break;
        case 'g':
            flags[nflags++] = (svc_flag_t){"grant-dir", "grant_dir", optarg};
            break;
        case 'R':
            flags[nflags++] = (svc_flag_t){"allow-root", "allow_root", optarg};
            break;
        case 'L':
            flags[nflags++] = (svc_flag_t){"log-level", "log_level", optarg};
            break;
        case 'w':
            workers = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || workers < 1 ||
                workers > 256) {
                fprintf(stderr,
                        "dpu_agent: --workers '%s': expected 1 to "
                        "256\n\n",
                        optarg);
                usage(stderr);
                return 2;
            }
            break;
        default: usage(stderr); return 2;
        }
        if (nflags == (int)(sizeof(flags) / sizeof(flags[0]))) {
            fprintf(stderr, "dpu_agent: too many options\n");
            return 2;
        }
    }
    if (!args_fit(argc, argv, listen_at, secret_dir, addr_fd, parent_fd,
                  service, nflags > 0 || conf_given)) {
        usage(stderr);
        return 2;
    }
    if (workers != 0 && listen_at == NULL && !service) {
        fprintf(stderr, "dpu_agent: --workers needs --listen or --service (a "
                        "spawned agent has DPUSHIM_PIPELINE_DEPTH)\n\n");
        usage(stderr);
        return 2;
    }
    /* The ranks check the configuration and report problems; the agent
     * only takes its log level and tuning from it. */
    dps_config_load(&cfg, environ, NULL, 0, NULL);
    dps_log_level = cfg.log_level;
    if (service) {
        return run_service(&cfg, conf, conf_given, flags, nflags, listen_at,
                           workers);
    }
    if (listen_at == NULL) {
        return serve(&cfg, addr_fd, parent_fd, NULL, NULL);
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
    listener_tuning(&cfg, workers);
    /* No UCX here: each job's child creates its own after the fork. */
    return agent_listen_run(listen_at, secret_dir, NULL, serve_listened, &cfg);
}
