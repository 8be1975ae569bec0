/* SPDX-License-Identifier: BSD-3-Clause */
/* dpu_agent --listen and --service: the supervisor that forks one agent
 * per job. */
#ifndef AGENT_LISTEN_H
#define AGENT_LISTEN_H

#include <sys/types.h>

/*
 * Serve one accepted job in a forked child: fd is the job's connection
 * (write the "ok ..." line to it; its end of file means the job is gone),
 * job its name, grant_dir where to put the socket the job's ranks grant
 * their memory through ("": none). Returns the child's exit status.
 */
typedef int (*agent_serve_fn)(int fd, const char *job, const char *grant_dir,
                              void *arg);

/* A service's settings (dpu_agent --service, /etc/dpushim/agent.conf). */
typedef struct agent_service {
    const char *munge_socket; /* munged's socket; "": MUNGE's default */
    const char *grant_dir;    /* per-uid grant directories; "": none */
    int         allow_root;   /* serve jobs of uid 0 */
} agent_service_t;

/* Seconds a service gives its workers to end after SIGTERM, before
 * SIGKILL. */
#define AGENT_SERVICE_STOP_SEC 5.0

/*
 * Listen on hostport ("ADDR:PORT", "[IPv6]:PORT"; port 0 picks one), print
 * "dpu_agent: listening on ADDR:PORT" to stdout, and fork a child that
 * calls serve(fd, job, grant_dir, arg) and exits for each client that
 * proves itself:
 * - svc NULL (--listen): its hello carries the secret of
 *   secret_dir/<job>.key; the child runs as we do. Runs until SIGTERM or
 *   SIGINT; jobs still running keep their agents.
 * - svc set (--service, as root): its MUNGE credential answers this
 *   connection's challenge (common/dps_listen.h); the child, the job's
 *   worker, becomes the credential's uid, gid and groups, with no
 *   capabilities, before it reads anything of the job. On SIGTERM or
 *   SIGINT the workers get SIGTERM (their jobs go on with stock MPI),
 *   SIGKILL after AGENT_SERVICE_STOP_SEC.
 * Returns 0 after a signal, 1 if it could not start.
 */
int agent_listen_run(const char *hostport, const char *secret_dir,
                     const agent_service_t *svc, agent_serve_fn serve,
                     void *arg);

#endif
