/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Getting an agent for a virtual node (DESIGN.md, decision 5): its leader
 * spawns dpu_agent and reads its UCX address from a pipe, or connects to
 * a listening agent named by DPUSHIM_AGENT_MAP, proving the job's secret.
 * What it got is the channel's agent (core/channel.c: shim_chan_agent),
 * which also ends it (shim_chan_stop_agent).
 */
#define _GNU_SOURCE
#include "shim/boot/boot.h"
#include "shim/boot/env.h"
#include "common/dps_grant.h"
#include "common/dps_listen.h"
#include "common/dps_log.h"
#include "common/dps_status.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Path of dpu_agent: DPUSHIM_AGENT, else beside this library. */
static int agent_path(char *out, size_t len)
{
    Dl_info info;
    char   *copy;

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
                  shim.cfg.agent[0]
                      ? ": check DPUSHIM_AGENT"
                      : ": set DPUSHIM_AGENT to the dpu_agent binary");
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
        int           left = (int)((deadline - dps_now()) * 1000);
        ssize_t       n;

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

/* Start the agent at path with argv and env: fd a becomes its
 * descriptor 3 (where it writes its address), fd p its 4 (its parent's
 * pipe), /dev/null its stdin, and no signal is blocked in it. 0 and
 * *pid, or an errno value. */
static int spawn(const char *path, char *const argv[], int a, int p,
                 char *const env[], pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t          attr;
    sigset_t                   none;
    int                        err;

    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, a, 3);
    posix_spawn_file_actions_adddup2(&fa, p, 4);
    posix_spawnattr_init(&attr);
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    err = posix_spawn(pid, path, &fa, &attr, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    return err;
}

/* The address the agent at path reports on fd, a hex line read into line
 * (2 * DPS_MAX_ADDR + 2 bytes): *addr (malloc'ed) and *addr_len; DPS_OK,
 * or an error (logged). */
static int read_addr(int fd, char *line, const char *path, pid_t pid,
                     void **addr, size_t *addr_len)
{
    long n;
    int  rc;

    rc = read_line(fd, line, 2 * DPS_MAX_ADDR + 2, 30000);
    if (rc != DPS_OK) {
        dps_error("agent %s (pid %d) did not report its address: %s", path,
                  (int)pid, dps_status_str(rc));
        return rc;
    }
    *addr = malloc(DPS_MAX_ADDR);
    n = (*addr == NULL) ? -1 : dps_hex_decode(line, *addr, DPS_MAX_ADDR);
    if (n <= 0) {
        dps_error("agent reported a malformed address");
        free(*addr);
        *addr = NULL;
        return DPS_ERR_PROTO;
    }
    *addr_len = (size_t)n;
    return DPS_OK;
}

/* Start dpu_agent (*who: it, as far as it started); on success *addr
 * (malloc'ed) holds its address. own_core: it has a CPU no rank uses
 * (DPUSHIM_AGENT_SCHED=auto: poll). */
int boot_spawn_agent(void **addr, size_t *addr_len, int own_core,
                     shim_chan_agent_t *who)
{
    char   path[4096], fd_a[] = "3", fd_p[] = "4";
    char  *argv[] = {path, "--addr-fd", fd_a, "--parent-fd", fd_p, NULL};
    int    ap[2] = {-1, -1}, pp[2] = {-1, -1}, rc, err;
    char **env = NULL, *line = NULL;

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
    env = shim_agent_env(environ, shim.cfg.agent_sched != DPS_SCHED_AUTO ? NULL
                                  : own_core ? "DPUSHIM_AGENT_SCHED=poll"
                                             : "DPUSHIM_AGENT_SCHED=eager");
    line = malloc(2 * DPS_MAX_ADDR + 2);
    if (ap[0] < 0 || ap[1] < 0 || pp[0] < 0 || pp[1] < 0 || env == NULL ||
        line == NULL) {
        dps_error("cannot prepare the agent's descriptors: %m");
        rc = DPS_ERR_IO;
        goto out;
    }
    err = spawn(path, argv, ap[1], pp[0], env, &who->pid);
    if (err != 0) {
        dps_error("cannot start agent %s: %s", path, strerror(err));
        who->pid = 0;
        rc = DPS_ERR_IO;
        goto out;
    }
    snprintf(who->desc, sizeof(who->desc), "pid %d", (int)who->pid);
    close(ap[1]);
    ap[1] = -1;
    close(pp[0]);
    pp[0] = -1;
    who->fd = pp[1]; /* kept open: its closing ends the agent */
    pp[1] = -1;
    rc = read_addr(ap[0], line, path, who->pid, addr, addr_len);
    if (rc == DPS_OK) {
        dps_info("started agent %s, pid %d", path, (int)who->pid);
    }
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
int boot_make_job_secret(job_secret_t *js)
{
    char     dir[4096];
    uint64_t r = 0;

    memset(js, 0, sizeof(*js));
    if (shim.topo.world_rank == 0) {
        if (getentropy(&r, sizeof(r)) != 0) {
            r = (uint64_t)getpid() * 2654435761u ^ (uint64_t)time(NULL);
        }
        snprintf(js->job, sizeof(js->job), "job-%016llx",
                 (unsigned long long)r);
        if (shim.cfg.auth == DPS_AUTH_MUNGE) {
            js->ok = 1; /* a name only: each leader proves itself by MUNGE */
        } else if (secret_dir(dir, sizeof(dir)) == NULL) {
            snprintf(js->why, sizeof(js->why),
                     "DPUSHIM_SECRET_DIR: path "
                     "too long");
        } else if (dps_secret_create(dir, js->job, js->secret, js->why,
                                     sizeof(js->why)) == DPS_OK) {
            js->ok = 1;
        }
    }
    PMPI_Bcast(js, (int)sizeof(*js), MPI_BYTE, 0, MPI_COMM_WORLD);
    return js->ok;
}

void boot_remove_job_secret(const job_secret_t *js)
{
    char dir[4096];

    if (shim.topo.world_rank == 0 && js->ok &&
        shim.cfg.auth != DPS_AUTH_MUNGE &&
        secret_dir(dir, sizeof(dir)) != NULL) {
        dps_secret_remove(dir, js->job);
    }
}

/* Leader of virtual node vidx of this host: connect to the listening
 * agent the map names (*who); on success *addr holds its address. */
int boot_connect_listener(const job_secret_t *js, unsigned vidx, void **addr,
                          size_t *addr_len, shim_chan_agent_t *who)
{
    char     host[256], ahost[256], hostport[DPS_LISTEN_HOSTPORT_MAX];
    char     err[512], dir[4096];
    uint32_t pid = 0;
    int      rc, fd = -1;

    if (gethostname(host, sizeof(host)) != 0) {
        snprintf(host, sizeof(host), "localhost");
    }
    host[sizeof(host) - 1] = '\0';
    rc = dps_agent_map_lookup(shim.cfg.agent_map, host, vidx, hostport,
                              sizeof(hostport), err, sizeof(err));
    if (rc == DPS_OK && shim.cfg.auth == DPS_AUTH_MUNGE) {
        rc = dps_service_connect(
            hostport, js->job, shim.cfg.munge_socket,
            SHIM_CONNECT_TIMEOUT_MS / 2, &fd, addr, addr_len, &pid, ahost,
            sizeof(ahost), who->grant, sizeof(who->grant), err, sizeof(err));
    } else if (rc == DPS_OK) {
        rc = dps_listen_connect(
            hostport, js->job, js->secret, SHIM_CONNECT_TIMEOUT_MS / 2, &fd,
            addr, addr_len, &pid, ahost, sizeof(ahost), err, sizeof(err));
    }
    if (rc != DPS_OK) {
        dps_error("%s (agent map %s, DPUSHIM_AUTH=%s)", err,
                  shim.cfg.agent_map,
                  shim.cfg.auth == DPS_AUTH_MUNGE ? "munge" : "secret");
        return rc;
    }
    who->fd = fcntl(fd, F_DUPFD_CLOEXEC, 10);
    close(fd);
    who->listening = 1;
    /* Same host (a test, or a host-side agent): pid checks and kicks
     * work. On a DPU the connection's end and pings tell. */
    who->pid = strcmp(ahost, host) == 0 ? (pid_t)pid : 0;
    snprintf(who->desc, sizeof(who->desc), "%s (pid %u on %s)", hostport, pid,
             ahost);
    /* Where our memory is granted to it (emulated PCIe DMA): a service
     * says where; a user's listener shares our secret directory. */
    if (shim.cfg.auth != DPS_AUTH_MUNGE &&
        (secret_dir(dir, sizeof(dir)) == NULL ||
         dps_grant_path(dir, js->job, ahost, pid, who->grant,
                        sizeof(who->grant)) != DPS_OK)) {
        dps_info("no DMA grant for agent %s: the secret directory's path "
                 "is too long for a socket",
                 hostport);
    }
    dps_info("connected to agent %s (pid %u on %s) for job %s", hostport, pid,
             ahost, js->job);
    return DPS_OK;
}
