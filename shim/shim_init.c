/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Init, MPI_Init_thread and MPI_Finalize: start the agents and connect
 * them to the ranks (DESIGN.md, decisions 5 and 6), and tear down.
 * Every decision that could split the job (offload on or off) is agreed
 * with an allreduce, so ranks never disagree about whether a collective
 * is offloaded.
 */
#define _GNU_SOURCE
#include "shim.h"
#include "shim_engine.h"
#include "shim_reg.h"
#include "../common/dps_listen.h"
#include "../common/dps_log.h"
#include "../common/dps_proto.h"
#include "../common/dps_status.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

shim_state_t shim = {
    .parent_fd = -1,
    .kick_fd = -1,
    .keyval = MPI_KEYVAL_INVALID,
    .fo_ctrl = MPI_COMM_NULL,
    .fo_agree = MPI_COMM_NULL,
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .agree_lock = PTHREAD_MUTEX_INITIALIZER,
    .tx_lock = PTHREAD_MUTEX_INITIALIZER,
    .shm_fd = -1,
};
__thread int shim_in_call;

#define SHIM_CONNECT_TIMEOUT_MS 60000
#define SHIM_FINALIZE_DRAIN_SEC 30

int shim_comm_delete(MPI_Comm comm, int keyval, void *attr, void *extra);

/* Path of dpu_agent: DPUSHIM_AGENT, else beside this library. */
static int agent_path(char *out, size_t len)
{
    Dl_info info;
    char *copy;

    if (shim.cfg.agent[0] != '\0') {
        snprintf(out, len, "%s", shim.cfg.agent);
    } else {
        if (!dladdr((void *)agent_path, &info) || info.dli_fname == NULL) {
            dps_error("cannot find where libdpushim.so is; set "
                      "DPUSHIM_AGENT to the dpu_agent binary");
            return DPS_ERR_INVALID;
        }
        copy = strdup(info.dli_fname);
        if (copy == NULL) {
            return DPS_ERR_NOMEM;
        }
        snprintf(out, len, "%s/dpu_agent", dirname(copy));
        free(copy);
    }
    if (access(out, X_OK) != 0) {
        dps_error("agent binary %s is not executable (%m)%s", out,
                  shim.cfg.agent[0] ? ": check DPUSHIM_AGENT" :
                  ": set DPUSHIM_AGENT to the dpu_agent binary");
        return DPS_ERR_INVALID;
    }
    return DPS_OK;
}

/* Move fd above the descriptors the agent expects (3, 4), close-on-exec. */
static int fd_high(int fd)
{
    int hi = fcntl(fd, F_DUPFD_CLOEXEC, 10);

    close(fd);
    return hi;
}

/* Read the agent's hex address line, within timeout_ms. */
static int read_line(int fd, char *buf, size_t len, int timeout_ms)
{
    double deadline = dps_now() + timeout_ms / 1000.0;
    size_t used = 0;

    while (used + 1 < len) {
        struct pollfd pfd = {fd, POLLIN, 0};
        int left = (int)((deadline - dps_now()) * 1000);
        ssize_t n;

        if (left <= 0 || poll(&pfd, 1, left) == 0) {
            return DPS_ERR_TIMEOUT;
        }
        n = read(fd, buf + used, len - used - 1);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return DPS_ERR_DEAD;
        }
        used += (size_t)n;
        buf[used] = '\0';
        if (strchr(buf, '\n') != NULL) {
            *strchr(buf, '\n') = '\0';
            return DPS_OK;
        }
    }
    return DPS_ERR_PROTO;
}

/* Start dpu_agent; on success *addr (malloc'ed) holds its address.
 * own_core: it has a CPU no rank uses (DPUSHIM_AGENT_SCHED=auto: poll). */
static int spawn_agent(void **addr, size_t *addr_len, int own_core)
{
    char path[4096], fd_a[] = "3", fd_p[] = "4";
    char *argv[] = {path, "--addr-fd", fd_a, "--parent-fd", fd_p, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    int ap[2] = {-1, -1}, pp[2] = {-1, -1}, rc, err;
    char **env = NULL, *line = NULL;
    sigset_t none;
    long n;

    rc = agent_path(path, sizeof(path));
    if (rc != DPS_OK) {
        return rc;
    }
    if (pipe(ap) || pipe(pp)) {
        dps_error("pipe: %m");
        rc = DPS_ERR_IO;
        goto out;
    }
    ap[0] = fd_high(ap[0]);
    ap[1] = fd_high(ap[1]);
    pp[0] = fd_high(pp[0]);
    pp[1] = fd_high(pp[1]);
    env = shim_agent_env(environ, shim.cfg.agent_sched != DPS_SCHED_AUTO ?
                         NULL : own_core ? "DPUSHIM_AGENT_SCHED=poll"
                                         : "DPUSHIM_AGENT_SCHED=eager");
    line = malloc(2 * DPS_MAX_ADDR + 2);
    if (ap[0] < 0 || ap[1] < 0 || pp[0] < 0 || pp[1] < 0 || env == NULL ||
        line == NULL) {
        dps_error("cannot prepare the agent's descriptors: %m");
        rc = DPS_ERR_IO;
        goto out;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, ap[1], 3);
    posix_spawn_file_actions_adddup2(&fa, pp[0], 4);
    posix_spawnattr_init(&attr);
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    err = posix_spawn(&shim.agent_pid, path, &fa, &attr, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (err != 0) {
        dps_error("cannot start agent %s: %s", path, strerror(err));
        shim.agent_pid = 0;
        rc = DPS_ERR_IO;
        goto out;
    }
    close(ap[1]);
    ap[1] = -1;
    close(pp[0]);
    pp[0] = -1;
    shim.parent_fd = pp[1]; /* kept open: its closing ends the agent */
    pp[1] = -1;
    rc = read_line(ap[0], line, 2 * DPS_MAX_ADDR + 2, 30000);
    if (rc != DPS_OK) {
        dps_error("agent %s (pid %d) did not report its address: %s",
                  path, (int)shim.agent_pid, dps_status_str(rc));
        goto out;
    }
    *addr = malloc(DPS_MAX_ADDR);
    n = (*addr == NULL) ? -1 : dps_hex_decode(line, *addr, DPS_MAX_ADDR);
    if (n <= 0) {
        dps_error("agent reported a malformed address");
        free(*addr);
        *addr = NULL;
        rc = DPS_ERR_PROTO;
        goto out;
    }
    *addr_len = (size_t)n;
    dps_info("started agent %s, pid %d", path, (int)shim.agent_pid);
out:
    for (int i = 0; i < 2; i++) {
        if (ap[i] >= 0) {
            close(ap[i]);
        }
        if (pp[i] >= 0) {
            close(pp[i]);
        }
    }
    free(env);
    free(line);
    return rc;
}

/* Leader: end the agent (politely, then by force) and reap it. */
static void stop_agent(void)
{
    double deadline = dps_now() + 2.0;
    int status;

    if (!shim.is_leader || (shim.agent_pid <= 0 && !shim.listen_agent)) {
        return;
    }
    if (shim.parent_fd >= 0) {
        close(shim.parent_fd);  /* EOF: the agent exits */
        shim.parent_fd = -1;
    }
    if (shim.listen_agent) {
        /* Not our child: its listener reaps it. */
        while (shim.agent_pid > 0 && shim_pid_alive(shim.agent_pid) &&
               dps_now() < deadline) {
            usleep(1000);
        }
        shim.agent_pid = 0;
        return;
    }
    while (waitpid(shim.agent_pid, &status, WNOHANG) == 0) {
        if (dps_now() > deadline) {
            dps_warn("agent pid %d did not exit: killing it",
                     (int)shim.agent_pid);
            kill(shim.agent_pid, SIGKILL);
            waitpid(shim.agent_pid, &status, 0);
            break;
        }
        usleep(1000);
    }
    shim.agent_pid = 0;
}

/* The union of the CPU masks of the ranks of this virtual node. */
static void ranks_cpus(MPI_Comm vnode, cpu_set_t *all)
{
    unsigned long mine[sizeof(cpu_set_t) / sizeof(unsigned long)];
    cpu_set_t set;

    memset(mine, 0, sizeof(mine));
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        memcpy(mine, &set, sizeof(mine));
    }
    PMPI_Allreduce(mine, all, (int)(sizeof(mine) / sizeof(mine[0])),
                   MPI_UNSIGNED_LONG, MPI_BOR, vnode);
}

/* The CPUs the agent gets: DPUSHIM_AGENT_CPUS, or where its ranks may run
 * (launchers bind each rank to one core; an agent confined to its
 * leader's core would fight that rank alone instead of using the node). */
static void agent_cpus(const cpu_set_t *ranks, cpu_set_t *set)
{
    if (shim.cfg.agent_cpus[0] != '\0') {
        CPU_ZERO(set); /* validated by the config parser */
        dps_cpulist_parse(shim.cfg.agent_cpus, (unsigned long *)set,
                          CPU_SETSIZE);
    } else {
        memcpy(set, ranks, sizeof(*set));
    }
}

static void agent_affinity(const cpu_set_t *ranks)
{
    cpu_set_t set;

    if (!shim.is_leader || shim.agent_pid <= 0) {
        return;
    }
    agent_cpus(ranks, &set);
    if (CPU_COUNT(&set) > 0 &&
        sched_setaffinity(shim.agent_pid, sizeof(set), &set) != 0) {
        dps_warn("cannot set the agent's CPU affinity: %m");
    } else if (shim.cfg.agent_cpus[0] != '\0') {
        dps_info("agent pid %d runs on CPUs %s", (int)shim.agent_pid,
                 shim.cfg.agent_cpus);
    } else {
        dps_info("agent pid %d runs on the %d CPUs of its ranks",
                 (int)shim.agent_pid, CPU_COUNT(&set));
    }
}

/* Has the agent of these ranks a CPU of its own: one no rank of its
 * virtual node may use, or more CPUs than it has ranks? */
static int agent_has_core(const cpu_set_t *ranks, int vsize)
{
    cpu_set_t set, spare;

    agent_cpus(ranks, &set);
    CPU_XOR(&spare, &set, ranks);
    CPU_AND(&spare, &spare, &set);
    return CPU_COUNT(&spare) > 0 || CPU_COUNT(&set) > vsize;
}

/*
 * DPUSHIM_MIN_BYTES=auto. Where an agent has a CPU of its own (one no rank
 * of its virtual node may use, or more CPUs than it has ranks), offload
 * pays from the size where stock MPI's own time exceeds the cost of a post
 * (SHIM_AUTO_MIN_BYTES). Where every CPU it may use runs a rank, `make
 * bench` found no size at which the shim's overall time came within 1.05x
 * of stock MPI's (README, measured results): nothing is offloaded. The
 * job takes the largest threshold of its virtual nodes, so that ranks
 * agree on every call.
 */
static uint64_t resolve_min_bytes(const cpu_set_t *ranks, int vsize)
{
    uint64_t mine = shim.cfg.min_bytes, all = 0;

    if (shim.cfg.min_bytes != DPS_MIN_BYTES_AUTO) {
        return shim.cfg.min_bytes; /* same environment everywhere */
    }
    if (agent_has_core(ranks, vsize)) {
        mine = SHIM_AUTO_MIN_BYTES;
    }
    PMPI_Allreduce(&mine, &all, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (all == DPS_MIN_BYTES_AUTO && shim.world_rank == 0 &&
        !shim.cfg.require) {
        dps_warn("DPUSHIM_MIN_BYTES=auto: the agents would share every "
                 "core with computing ranks, where offload was measured "
                 "to cost more than it saves at every size; running on "
                 "stock MPI. Give the agents a core of their own "
                 "(DPUSHIM_AGENT_CPUS) or set DPUSHIM_MIN_BYTES to offload "
                 "anyway");
    }
    return all;
}

/* With Yama ptrace_scope 1, CMA reads by an agent need our permission. */
static void allow_agent_access(void)
{
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    int scope = 0;

    if (f == NULL) {
        return;
    }
    if (fscanf(f, "%d", &scope) != 1) {
        scope = 0;
    }
    fclose(f);
    if (scope == 1) {
        /* Every agent of the job may read our buffers (pull model), so a
         * single-pid PR_SET_PTRACER is not enough. */
        if (prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) != 0) {
            dps_warn("prctl(PR_SET_PTRACER): %m; agents may fall back "
                     "to slower transports");
        }
    }
}

/*
 * Offload cannot be set up, for a reason every rank shares. Unless
 * DPUSHIM_REQUIRE asks otherwise the job goes on with stock MPI.
 */
static void cannot_offload(const char *why)
{
    if (!shim.cfg.require) {
        if (shim.world_rank == 0) {
            dps_error("%s: running on stock MPI", why);
        }
        return;
    }
    if (shim.world_rank == 0) {
        dps_error("%s, and DPUSHIM_REQUIRE is set: aborting", why);
        fflush(stderr);
    }
    /* Let rank 0 say why first, and the launcher forward it: Hydra drops
     * output still in its pipes when it tears an aborted job down. */
    PMPI_Barrier(MPI_COMM_WORLD);
    usleep(300000);
    PMPI_Abort(MPI_COMM_WORLD, 1);
}

static int agree(int ok)
{
    int all = 0;

    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

static void send_hello_wait_ready(int *ok)
{
    double deadline = dps_now() + SHIM_CONNECT_TIMEOUT_MS / 1000.0;
    size_t len;
    void *msg;

    msg = dps_msg_encode_hello((uint32_t)shim.world_rank, (uint32_t)getpid(),
                               &len);
    if (msg == NULL || shim_send_agent(msg, len) != DPS_OK) {
        dps_error("cannot say hello to the agent");
        *ok = 0;
        return;
    }
    while (*ok) {
        dps_inmsg_t *m;
        dps_msg_t dm;

        ucp_worker_progress(shim.ucx.worker);
        while ((m = dps_inbox_pop(&shim.ucx.inbox)) != NULL) {
            int rc = dps_msg_decode(m->data, m->len, &dm, NULL, 0);

            if (rc == DPS_OK && dm.type == DPS_MSG_READY) {
                if (dm.u.ready.status != DPS_OK) {
                    dps_error("agent failed to set up: %s",
                              dps_status_str(dm.u.ready.status));
                    *ok = 0;
                }
                free(m);
                return;
            }
            dps_warn("unexpected message while connecting; dropped");
            free(m);
        }
        if (dps_now() > deadline) {
            dps_error("agent (pid %d) not ready after %d s",
                      (int)shim.agent_pid, SHIM_CONNECT_TIMEOUT_MS / 1000);
            *ok = 0;
        }
    }
}

/*
 * An agent on this host gets our shared-memory segment (before HELLO, so
 * that it has mapped it when READY comes). Without one (an agent on a DPU,
 * or no memfd) messages stay on UCX.
 */
static void shm_offer(void)
{
    size_t len;
    void *msg;

    if (shim.agent_pid <= 0) {
        return;
    }
    shim.shm = dps_shm_create((uint32_t)shim.world_rank, &shim.shm_fd);
    if (shim.shm == NULL) {
        dps_info("no shared-memory channel to the agent (memfd: %m): "
                 "messages go by UCX");
        return;
    }
    msg = dps_msg_encode_shm((uint32_t)shim.world_rank, (uint32_t)getpid(),
                             shim.shm_fd, &len);
    if (msg == NULL || shim_send_agent(msg, len) != DPS_OK) {
        dps_warn("cannot offer the shared-memory channel to the agent");
    }
}

/* READY came: use the channel if the agent mapped it, and start the DMA
 * engine where the data path is direct. */
static void shm_accepted(void)
{
    if (shim.shm == NULL) {
        return;
    }
    if (!__atomic_load_n(&shim.shm->attached, __ATOMIC_ACQUIRE)) {
        dps_info("agent %s did not map the shared-memory channel: "
                 "messages go by UCX", shim.agent_desc);
        return;
    }
    shim.shm_on = 1;
    if (shim.cfg.data_path == DPS_DATA_DIRECT &&
        shim.cfg.transport != DPS_TRANSPORT_UCX) {
        shim_engine_start(shim.shm, shim.agent_pid);
    }
}

static void shm_close(void)
{
    shim_engine_stop();
    shim.shm_on = 0;
    dps_shm_detach(shim.shm);
    shim.shm = NULL;
    if (shim.shm_fd >= 0) {
        close(shim.shm_fd);
        shim.shm_fd = -1;
    }
}

/* Exchange addresses and bring every agent up; returns 1 on success. */
static int connect_job(MPI_Comm vnode, const void *agent_addr,
                       uint32_t agent_addr_len, int node_id)
{
    int nr = shim.world_size, ok = 1, rc, i, my_agent = 0, job_key;
    ucp_worker_attr_t wattr;
    int *alen = NULL, *adisp = NULL, *rlen = NULL, *rdisp = NULL;
    int *leader = NULL, *ragent = NULL, *rpid = NULL, *rnode = NULL;
    int *apid = NULL;
    char *rbuf = NULL, *abuf = NULL;
    MPI_Request br;

    if (dps_ucx_open(&shim.ucx) != DPS_OK) {
        ok = 0;
    } else {
        shim_reg_init();
    }
    if (!agree(ok)) {
        goto out;
    }
    wattr.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS;
    if (ucp_worker_query(shim.ucx.worker, &wattr) != UCS_OK) {
        dps_error("ucp_worker_query failed");
        ok = 0;
        wattr.address = NULL;
        wattr.address_length = 0;
    }
    alen = calloc(nr, sizeof(int));
    adisp = calloc(nr, sizeof(int));
    rlen = calloc(nr, sizeof(int));
    rdisp = calloc(nr, sizeof(int));
    leader = calloc(nr, sizeof(int));
    ragent = calloc(nr, sizeof(int));
    rpid = calloc(nr, sizeof(int));
    rnode = calloc(nr, sizeof(int));
    apid = calloc(nr, sizeof(int));
    shim.node_agents = calloc(nr, sizeof(pid_t));
    shim.rank_agent = calloc(nr, sizeof(uint32_t));
    if (!alen || !adisp || !rlen || !rdisp || !leader || !ragent || !rpid ||
        !rnode || !apid || !shim.node_agents || !shim.rank_agent) {
        ok = 0;
    }
    if (!agree(ok)) {
        goto out_addr;
    }
    /* Which ranks lead a virtual node: agent index = order of leaders. */
    PMPI_Allgather(&shim.is_leader, 1, MPI_INT, leader, 1, MPI_INT,
                   MPI_COMM_WORLD);
    for (i = 0; i < shim.world_rank; i++) {
        my_agent += leader[i];
    }
    PMPI_Bcast(&my_agent, 1, MPI_INT, 0, vnode);
    PMPI_Allgather(&my_agent, 1, MPI_INT, ragent, 1, MPI_INT,
                   MPI_COMM_WORLD);
    for (i = 0; i < nr; i++) {
        shim.rank_agent[i] = (uint32_t)ragent[i];   /* for the builders */
    }
    /* Process ids and nodes: agents copy same-node data with CMA. */
    i = (int)getpid();
    PMPI_Allgather(&i, 1, MPI_INT, rpid, 1, MPI_INT, MPI_COMM_WORLD);
    PMPI_Allgather(&node_id, 1, MPI_INT, rnode, 1, MPI_INT, MPI_COMM_WORLD);
    /* Agents on this node: if one dies, collectives spanning it stall,
     * so every rank watches them all (shim_op.c, check_agent). */
    i = (int)shim.agent_pid;
    PMPI_Allgather(&i, 1, MPI_INT, apid, 1, MPI_INT, MPI_COMM_WORLD);
    for (int k = 0; k < nr; k++) {
        if (leader[k] && rnode[k] == node_id) {
            shim.node_agents[shim.n_node_agents++] = (pid_t)apid[k];
        }
    }
    /* Agents name their wake-up sockets after agent 0's pid. */
    job_key = shim.agent_pid > 0 ? (int)shim.agent_pid
                                 : (int)(getpid() | 0x40000000);
    PMPI_Bcast(&job_key, 1, MPI_INT, 0, MPI_COMM_WORLD);
    /* Worker addresses of every rank and of every agent. */
    i = (int)wattr.address_length;
    PMPI_Allgather(&i, 1, MPI_INT, rlen, 1, MPI_INT, MPI_COMM_WORLD);
    i = shim.is_leader ? (int)agent_addr_len : 0;
    PMPI_Allgather(&i, 1, MPI_INT, alen, 1, MPI_INT, MPI_COMM_WORLD);
    {
        size_t rt = 0, at = 0;

        for (i = 0; i < nr; i++) {
            rdisp[i] = (int)rt;
            adisp[i] = (int)at;
            rt += (size_t)rlen[i];
            at += (size_t)alen[i];
        }
        rbuf = malloc(rt + 1);
        abuf = malloc(at + 1);
    }
    ok = (rbuf != NULL && abuf != NULL);
    if (!agree(ok)) {
        goto out_addr;
    }
    PMPI_Allgatherv(wattr.address, (int)wattr.address_length, MPI_BYTE,
                    rbuf, rlen, rdisp, MPI_BYTE, MPI_COMM_WORLD);
    PMPI_Allgatherv((void *)agent_addr, shim.is_leader ?
                    (int)agent_addr_len : 0, MPI_BYTE, abuf, alen, adisp,
                    MPI_BYTE, MPI_COMM_WORLD);

    shim.kick_fd = dps_kick_open((int)getpid(), DPS_KICK_RANK);
    rc = dps_ucx_ep_create(shim.ucx.worker, agent_addr, NULL, NULL,
                           &shim.agent_ep);
    ok = (rc == DPS_OK);
    if (ok && shim.is_leader) {
        int nagents = 0, k = 0;
        const void **rp = calloc(nr, sizeof(void *));
        const void **apt = calloc(nr, sizeof(void *));
        uint32_t *rl = calloc(nr, sizeof(uint32_t));
        uint32_t *al = calloc(nr, sizeof(uint32_t));
        uint32_t *ra = calloc(nr, sizeof(uint32_t));
        dps_msg_job_t job;
        void *msg = NULL;
        size_t len;

        if (rp && apt && rl && al && ra) {
            for (i = 0; i < nr; i++) {
                rp[i] = rbuf + rdisp[i];
                rl[i] = (uint32_t)rlen[i];
                ra[i] = (uint32_t)ragent[i];
                if (leader[i]) {
                    apt[k] = abuf + adisp[i];
                    al[k++] = (uint32_t)alen[i];
                }
            }
            nagents = k;
            job.nranks = (uint32_t)nr;
            job.nagents = (uint32_t)nagents;
            job.agent_idx = (uint32_t)my_agent;
            job.job_key = (uint32_t)job_key;
            msg = dps_msg_encode_job(&job, ra, rp, rl, apt, al, &len);
        }
        if (msg == NULL || shim_send_agent(msg, len) != DPS_OK) {
            dps_error("cannot send the job layout to the agent");
            ok = 0;
        }
        msg = (ok && ra != NULL) ?
              dps_msg_encode_procs((uint32_t)nr, (uint32_t *)rpid,
                                   (uint32_t *)rnode, &len) : NULL;
        if (ok && (msg == NULL || shim_send_agent(msg, len) != DPS_OK)) {
            dps_error("cannot send the process table to the agent");
            ok = 0;
        }
        free(rp);
        free(apt);
        free(rl);
        free(al);
        free(ra);
    }
    if (ok) {
        shm_offer();
        send_hello_wait_ready(&ok);
    }
    if (ok) {
        shm_accepted();
    }
    /* Agents finish wire-up with every rank: keep UCX progressing until
     * all ranks have heard from their agent. */
    PMPI_Ibarrier(MPI_COMM_WORLD, &br);
    for (;;) {
        int flag = 0;

        ucp_worker_progress(shim.ucx.worker);
        PMPI_Test(&br, &flag, MPI_STATUS_IGNORE);
        if (flag) {
            break;
        }
    }
    ok = agree(ok);

out_addr:
    if (wattr.address != NULL) {
        ucp_worker_release_address(shim.ucx.worker, wattr.address);
    }
out:
    free(alen);
    free(adisp);
    free(rlen);
    free(rdisp);
    free(leader);
    free(ragent);
    free(rpid);
    free(rnode);
    free(apid);
    free(rbuf);
    free(abuf);
    return ok;
}

static void teardown_ucx(void)
{
    shm_close();
    if (shim.kick_fd >= 0) {
        close(shim.kick_fd);
        shim.kick_fd = -1;
    }
    if (shim.agent_ep != NULL) {
        dps_ucx_ep_close(shim.ucx.worker, shim.agent_ep, 100);
        shim.agent_ep = NULL;
    }
    if (shim.ucx.worker != NULL && shim.live > 0) {
        /* Registrations still in use: destroying the context would
         * abort in UCX. The process is ending; leave it to exit. */
        dps_warn("leaving UCX context open: %u operations never ended",
                 shim.live);
    } else if (shim.ucx.worker != NULL) {
        shim_reg_fini();
        dps_ucx_close(&shim.ucx);
    }
}

/* The job's name and secret for listening agents (DPUSHIM_AGENT_MAP). */
typedef struct {
    int     ok;
    char    job[DPS_LISTEN_NAME_MAX + 1];
    uint8_t secret[DPS_SECRET_LEN];
    char    why[200];            /* rank 0's error, when !ok */
} job_secret_t;

static const char *secret_dir(char *buf, size_t len)
{
    if (shim.cfg.secret_dir[0] != '\0') {
        snprintf(buf, len, "%s", shim.cfg.secret_dir);
        return buf;
    }
    return dps_secret_dir_default(buf, len);
}

/* Rank 0 writes a fresh secret file; every rank learns name and secret
 * (in memory only). Returns 1 if the job has one. */
static int make_job_secret(job_secret_t *js)
{
    char dir[4096];
    uint64_t r = 0;

    memset(js, 0, sizeof(*js));
    if (shim.world_rank == 0) {
        if (getentropy(&r, sizeof(r)) != 0) {
            r = (uint64_t)getpid() * 2654435761u ^ (uint64_t)time(NULL);
        }
        snprintf(js->job, sizeof(js->job), "job-%016llx",
                 (unsigned long long)r);
        if (secret_dir(dir, sizeof(dir)) == NULL) {
            snprintf(js->why, sizeof(js->why), "DPUSHIM_SECRET_DIR: path "
                     "too long");
        } else if (dps_secret_create(dir, js->job, js->secret, js->why,
                                     sizeof(js->why)) == DPS_OK) {
            js->ok = 1;
        }
    }
    PMPI_Bcast(js, (int)sizeof(*js), MPI_BYTE, 0, MPI_COMM_WORLD);
    return js->ok;
}

static void remove_job_secret(const job_secret_t *js)
{
    char dir[4096];

    if (shim.world_rank == 0 && js->ok &&
        secret_dir(dir, sizeof(dir)) != NULL) {
        dps_secret_remove(dir, js->job);
    }
}

/* Leader of virtual node vidx of this host: connect to the listening
 * agent the map names; on success *addr holds its address. */
static int connect_listener(const job_secret_t *js, unsigned vidx,
                            void **addr, size_t *addr_len)
{
    char host[256], ahost[256], hostport[DPS_LISTEN_HOSTPORT_MAX];
    char err[512];
    uint32_t pid = 0;
    int rc, fd = -1;

    if (gethostname(host, sizeof(host)) != 0) {
        snprintf(host, sizeof(host), "localhost");
    }
    host[sizeof(host) - 1] = '\0';
    rc = dps_agent_map_lookup(shim.cfg.agent_map, host, vidx, hostport,
                              sizeof(hostport), err, sizeof(err));
    if (rc == DPS_OK) {
        rc = dps_listen_connect(hostport, js->job, js->secret,
                                SHIM_CONNECT_TIMEOUT_MS / 2, &fd, addr,
                                addr_len, &pid, ahost, sizeof(ahost), err,
                                sizeof(err));
    }
    if (rc != DPS_OK) {
        dps_error("%s (DPUSHIM_AGENT_MAP=%s)", err, shim.cfg.agent_map);
        return rc;
    }
    shim.parent_fd = fcntl(fd, F_DUPFD_CLOEXEC, 10);
    close(fd);
    shim.listen_agent = 1;
    /* Same host (a test, or a host-side agent): pid checks and kicks
     * work. On a DPU the connection's end and pings tell. */
    shim.agent_pid = strcmp(ahost, host) == 0 ? (pid_t)pid : 0;
    snprintf(shim.agent_desc, sizeof(shim.agent_desc), "%s (pid %u on %s)",
             hostport, pid, ahost);
    dps_info("connected to agent %s (pid %u on %s) for job %s", hostport,
             pid, ahost, js->job);
    return DPS_OK;
}

void shim_init(void)
{
    char msgs[4096], who[32], *line, *save = NULL;
    int nbad, ok, node_rank = 0, node_size = 0, vrank = 0, rpd, node_id;
    int vsize = 0;
    job_secret_t js = {0};
    cpu_set_t cpus;
    MPI_Comm node = MPI_COMM_NULL, vnode = MPI_COMM_NULL;
    void *addr = NULL;
    size_t addr_len = 0;
    struct {
        int      ok;
        int      pid;
        uint32_t len;
        char     desc[sizeof(shim.agent_desc)];
    } info = {0, 0, 0, ""};

    PMPI_Comm_rank(MPI_COMM_WORLD, &shim.world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &shim.world_size);
    snprintf(who, sizeof(who), "%d", shim.world_rank);
    dps_log_set_who(who);
    nbad = dps_config_load(&shim.cfg, environ, msgs, sizeof(msgs), NULL);
    {
        /* A DPUSHIM_REQUIRE that is not a boolean asks for strictness. */
        const char *req = getenv("DPUSHIM_REQUIRE");
        int v;

        if (req != NULL && dps_config_parse_value(DPS_CFG_BOOL, req, &v)) {
            shim.cfg.require = 1;
        }
    }
    dps_log_level = shim.cfg.log_level;
    shim.initialized = 1;
    /* Same environment everywhere: report once, from rank 0. */
    for (line = strtok_r(msgs, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        if (shim.world_rank == 0) {
            if (nbad > 0 && strncmp(line, "unknown", 7) != 0) {
                dps_error("%s", line);
            } else {
                dps_warn("%s", line);
            }
        }
    }
    ok = shim.cfg.offload && nbad == 0;
    if (!agree(ok)) {
        cannot_offload(nbad > 0 ? "invalid DPUSHIM_* values" :
                       "offload switched off (DPUSHIM_OFFLOAD=0)");
        return;
    }
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, shim_comm_delete,
                                &shim.keyval, NULL) != MPI_SUCCESS) {
        return;
    }
    allow_agent_access();

    /* Virtual nodes: ranks sharing memory, cut into groups of
     * DPUSHIM_RANKS_PER_DPU. */
    PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED,
                         shim.world_rank, MPI_INFO_NULL, &node);
    PMPI_Comm_rank(node, &node_rank);
    PMPI_Comm_size(node, &node_size);
    node_id = shim.world_rank; /* the node's name: its first world rank */
    PMPI_Bcast(&node_id, 1, MPI_INT, 0, node);
    rpd = shim.cfg.ranks_per_dpu ? (int)shim.cfg.ranks_per_dpu : node_size;
    PMPI_Comm_split(node, node_rank / rpd, node_rank, &vnode);
    PMPI_Comm_rank(vnode, &vrank);
    shim.is_leader = (vrank == 0);
    PMPI_Comm_size(vnode, &vsize);
    ranks_cpus(vnode, &cpus);
    shim.min_bytes = resolve_min_bytes(&cpus, vsize);
    if (shim.min_bytes == DPS_MIN_BYTES_AUTO) {
        /* Nothing would be offloaded: start no agent. */
        PMPI_Comm_free(&vnode);
        PMPI_Comm_free(&node);
        if (shim.cfg.require) {
            cannot_offload("DPUSHIM_MIN_BYTES=auto offloads nothing with "
                           "agents on the ranks' cores");
        }
        return;
    }

    if (shim.cfg.agent_map[0] != '\0' && !make_job_secret(&js)) {
        if (shim.world_rank == 0) {
            dps_error("%s", js.why);
        }
        PMPI_Comm_free(&vnode);
        PMPI_Comm_free(&node);
        cannot_offload("no job secret for the listening agents");
        return;
    }
    if (shim.is_leader) {
        info.ok = (shim.cfg.agent_map[0] != '\0'
                   ? connect_listener(&js, (unsigned)(node_rank / rpd),
                                      &addr, &addr_len)
                   : spawn_agent(&addr, &addr_len,
                                 agent_has_core(&cpus, vsize))) == DPS_OK;
        info.pid = (int)shim.agent_pid;
        info.len = (uint32_t)addr_len;
        if (!shim.listen_agent) {
            snprintf(shim.agent_desc, sizeof(shim.agent_desc), "pid %d",
                     info.pid);
        }
        memcpy(info.desc, shim.agent_desc, sizeof(info.desc));
    }
    PMPI_Bcast(&info, (int)sizeof(info), MPI_BYTE, 0, vnode);
    memcpy(shim.agent_desc, info.desc, sizeof(shim.agent_desc));
    agent_affinity(&cpus);
    if (!shim.is_leader && info.ok) {
        addr = malloc(info.len);
        if (addr == NULL) {
            info.ok = 0;
        }
    }
    if (!agree(info.ok)) {
        remove_job_secret(&js);
        cannot_offload("no agent available");
        goto err_agent;
    }
    /* Every agent has checked the secret: it has served its purpose. */
    remove_job_secret(&js);
    PMPI_Bcast(addr, (int)info.len, MPI_BYTE, 0, vnode);
    shim.agent_pid = (pid_t)info.pid;
    if (!connect_job(vnode, addr, info.len, node_id)) {
        teardown_ucx();
        stop_agent();
        cannot_offload("connecting ranks and agents failed");
        goto err_agent;
    }
    if (shim_fo_init() != DPS_OK) {
        dps_error("cannot create the communicators for taking over from "
                  "a failed agent");
    }
    shim.active = 1;
    shim.last_liveness = shim.last_heard = dps_now();
    if (shim.world_rank == 0) {
        dps_info("offload active: %d ranks, %d per agent", shim.world_size,
                 rpd);
    }
    free(addr);
    PMPI_Comm_free(&node);
    shim.vnode = vnode;
    return;

err_agent:
    stop_agent();
    free(addr);
    PMPI_Comm_free(&vnode);
    PMPI_Comm_free(&node);
}

/* Leader: ask our agent for its counters (CPU time, collectives). */
static void fetch_agent_stats(void)
{
    double deadline = dps_now() + 2.0;
    size_t len;
    void *msg;

    if (!shim.active || !shim.is_leader || shim.agent_dead) {
        return;
    }
    msg = dps_msg_encode_stats_req(&len);
    if (msg == NULL || shim_send_agent(msg, len) != DPS_OK) {
        return;
    }
    while (!shim.have_agent_stats && dps_now() < deadline) {
        if (shim_progress() == 0) {
            shim_idle(1);
        }
    }
    if (!shim.have_agent_stats) {
        dps_warn("agent %s sent no statistics", shim.agent_desc);
    }
}

static void print_stats(void)
{
    uint64_t tot[DPS_COLL_MAX][SHIM_NSTAT], ag[3];
    uint64_t reg[SHIM_REG_NSTAT], regtot[SHIM_REG_NSTAT];
    uint64_t eng[2], engtot[2];
    int c;

    fetch_agent_stats();
    PMPI_Reduce(shim.stats, tot, DPS_COLL_MAX * SHIM_NSTAT, MPI_UINT64_T,
                MPI_SUM, 0, MPI_COMM_WORLD);
    PMPI_Reduce(shim.agent_stats, ag, 3, MPI_UINT64_T, MPI_SUM, 0,
                MPI_COMM_WORLD);
    shim_reg_stats(reg);
    PMPI_Reduce(reg, regtot, SHIM_REG_NSTAT, MPI_UINT64_T, MPI_SUM, 0,
                MPI_COMM_WORLD);
    shim_engine_stats(&eng[0], &eng[1]);
    PMPI_Reduce(eng, engtot, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (shim.world_rank != 0) {
        return;
    }
    /* A line for each collective the job called. */
    for (c = 1; c < DPS_COLL_MAX; c++) {
        if (tot[c][SHIM_STAT_OFFLOADED] + tot[c][SHIM_STAT_FALLBACK] == 0) {
            continue;
        }
        printf("dpushim: %s offloaded=%llu fallback=%llu bytes=%llu\n",
               shim_coll_name(c),
               (unsigned long long)tot[c][SHIM_STAT_OFFLOADED],
               (unsigned long long)tot[c][SHIM_STAT_FALLBACK],
               (unsigned long long)tot[c][SHIM_STAT_BYTES]);
    }
    for (c = 1; c < DPS_COLL_MAX; c++) {
        /* Only after an agent failure: summed over ranks. */
        if (tot[c][SHIM_STAT_REDONE] + tot[c][SHIM_STAT_FAILED] +
            tot[c][SHIM_STAT_AFTER] > 0) {
            printf("dpushim: %s after agent failure: redone=%llu "
                   "failed=%llu stock=%llu\n", shim_coll_name(c),
                   (unsigned long long)tot[c][SHIM_STAT_REDONE],
                   (unsigned long long)tot[c][SHIM_STAT_FAILED],
                   (unsigned long long)tot[c][SHIM_STAT_AFTER]);
        }
    }
    printf("dpushim: regcache hits=%llu misses=%llu invalidations=%llu\n",
           (unsigned long long)regtot[SHIM_REG_HITS],
           (unsigned long long)regtot[SHIM_REG_MISSES],
           (unsigned long long)regtot[SHIM_REG_INVALIDATIONS]);
    if (shim.active) {
        /* Blocks the ranks' DMA engines copied (direct data path). */
        printf("dpushim: dma engines copies=%llu bytes=%llu\n",
               (unsigned long long)engtot[0], (unsigned long long)engtot[1]);
    }
    if (shim.active && shim.agent_dead) {
        printf("dpushim: agents failed: no agent statistics\n");
    } else if (shim.active) {
        /* Every agent's CPU, user and system, from start to now. */
        printf("dpushim: agents cpu_ms=%.1f collectives=%llu "
               "cpu_us_per_collective=%.1f missed_wakeups=%llu\n",
               ag[0] / 1e6, (unsigned long long)ag[1],
               ag[1] ? ag[0] / 1e3 / (double)ag[1] : 0.0,
               (unsigned long long)ag[2]);
    }
    fflush(stdout);
}

void shim_fini(void)
{
    if (!shim.initialized) {
        return;
    }
    if (shim.active) {
        /* Ops the application freed with MPI_Request_free, or never
         * waited for, may still be running: their memory registrations
         * must outlive them. The agent-death check bounds this wait. */
        double deadline = dps_now() + SHIM_FINALIZE_DRAIN_SEC;

        while (shim_any_pending() && dps_now() < deadline) {
            if (shim_progress() == 0) {
                shim_idle(0);
            }
        }
        if (shim_any_pending()) {
            dps_warn("%u offloaded collectives still running %d s into "
                     "MPI_Finalize", shim.live, SHIM_FINALIZE_DRAIN_SEC);
        }
        shim_fo_fini();
        /* Our collectives are over: nothing is due to our buffers, and no
         * command is for the engine. No thread outlives MPI_Finalize. */
        shim_engine_stop();
    }
    if (shim.cfg.stats) {
        print_stats();
    }
    if (shim.active) {
        shim.active = 0;
        /* Nobody of this node talks to the agent any more. */
        PMPI_Barrier(shim.vnode);
        if (shim.is_leader && !shim.agent_dead) {
            size_t len;
            void *msg = dps_msg_encode_shutdown(&len);

            if (msg != NULL) {
                shim_send_agent(msg, len);
                ucp_worker_progress(shim.ucx.worker);
            }
        }
        teardown_ucx();
        stop_agent();
        PMPI_Comm_free(&shim.vnode);
    }
    if (shim.keyval != MPI_KEYVAL_INVALID) {
        PMPI_Comm_free_keyval(&shim.keyval);
    }
    shim.initialized = 0;
}

SHIM_API int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);

    if (rc == MPI_SUCCESS) {
        shim_in_call++;
        shim_init();
        shim_in_call--;
    }
    return rc;
}

SHIM_API int MPI_Init_thread(int *argc, char ***argv, int required,
                             int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);

    if (rc == MPI_SUCCESS) {
        shim_in_call++;
        shim_init();
        shim_in_call--;
    }
    return rc;
}

SHIM_API int MPI_Finalize(void)
{
    shim_in_call++;
    shim_fini();
    shim_in_call--;
    return PMPI_Finalize();
}
