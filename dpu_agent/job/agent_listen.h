/* SPDX-License-Identifier: BSD-3-Clause */
/* dpu_agent --listen: the supervisor that forks one agent per job. */
#ifndef AGENT_LISTEN_H
#define AGENT_LISTEN_H

/*
 * Serve one accepted job in a forked child: fd is the job's connection
 * (write the "ok ..." line to it; its end of file means the job is gone),
 * job its name. Returns the child's exit status.
 */
typedef int (*agent_serve_fn)(int fd, const char *job, void *arg);

/*
 * Listen on hostport ("ADDR:PORT", "[IPv6]:PORT"; port 0 picks one), print
 * "dpu_agent: listening on ADDR:PORT" to stdout, and for each client whose
 * hello carries the secret of secret_dir/<job>.key fork a child that calls
 * serve(fd, job, arg) and exits. Runs until SIGTERM or SIGINT; jobs still
 * running keep their agents. Returns 0 after a signal, 1 if it could not
 * start.
 */
int agent_listen_run(const char *hostport, const char *secret_dir,
                     agent_serve_fn serve, void *arg);

#endif
