/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bootstrap, called from MPI_Init (boot/init.c) and MPI_Finalize:
 *   boot/env.c      the agent's environment (boot/env.h);
 *   boot/spawn.c    getting an agent: spawning dpu_agent, or connecting to
 *                   a listening one (DPUSHIM_AGENT_MAP) with a job secret;
 *                   what it got is the channel's (core/channel.c), which
 *                   boot/ opens and closes through core's calls;
 *   boot/place.c    CPU placement of agents and DPUSHIM_MIN_BYTES=auto;
 *   boot/connect.c  wiring every rank to its agent (UCX addresses, job
 *                   layout, shared-memory channel, DMA engine).
 * Every function that takes part in a collective is called by every rank.
 */
#ifndef DPS_BOOT_H
#define DPS_BOOT_H

#include "shim/core/shim.h"
#include "common/dps_listen.h"

#include <sched.h>
#include <stddef.h>
#include <stdint.h>

#define SHIM_CONNECT_TIMEOUT_MS 60000
/* How long a rank offers its grant to an agent whose socket is full. */
#define SHIM_GRANT_WAIT_MS      10000

/* DPUSHIM_MIN_BYTES=auto where agents have CPUs of their own. With the
 * direct data path and cores to spare (make bench, idle host), offload
 * beat stock MPI from 256 KiB on (0.64-0.82x overall), not at 128 KiB
 * (0.94-1.35x): below, stock MPI's own time (12-20 us at 128 KiB) is
 * within the shim's fixed cost (30-50 us). */
#define SHIM_AUTO_MIN_BYTES (256u * 1024)

/* The job's name and secret for listening agents (DPUSHIM_AGENT_MAP). */
typedef struct {
    int     ok;
    char    job[DPS_LISTEN_NAME_MAX + 1];
    uint8_t secret[DPS_SECRET_LEN];
    char    why[200]; /* rank 0's error, when !ok */
} job_secret_t;

/* ---- boot/spawn.c (leaders, except the secret functions: every rank) */

/* Start dpu_agent; *who is the agent as far as it started (its pid, the
 * pipe it watches: hand it to the channel, shim_chan_agent, even on a
 * failure, so that it is stopped); on success (DPS_OK) *addr (malloc'ed)
 * holds its UCX address. own_core: it has a CPU no rank uses
 * (DPUSHIM_AGENT_SCHED=auto: poll). */
int boot_spawn_agent(void **addr, size_t *addr_len, int own_core,
                     shim_chan_agent_t *who);

/* Rank 0 writes a fresh secret file; every rank learns name and secret
 * (in memory only). Returns 1 if the job has one. */
int boot_make_job_secret(job_secret_t *js);

/* Rank 0 removes the secret file (every agent has checked it). */
void boot_remove_job_secret(const job_secret_t *js);

/* Leader of virtual node vidx of this host: connect to the listening
 * agent DPUSHIM_AGENT_MAP names (*who, as for boot_spawn_agent); on
 * success (DPS_OK) *addr (malloc'ed) holds its address. */
int boot_connect_listener(const job_secret_t *js, unsigned vidx, void **addr,
                          size_t *addr_len, shim_chan_agent_t *who);

/* ---- boot/place.c --------------------------------------------------- */

/* The union of the CPU masks of the ranks of this virtual node. */
void boot_ranks_cpus(MPI_Comm vnode, cpu_set_t *all);

/* Leader: bind the agent to DPUSHIM_AGENT_CPUS, or to its ranks' CPUs. */
void boot_agent_affinity(const cpu_set_t *ranks);

/* Has the agent of these ranks a CPU of its own: one no rank of its
 * virtual node may use, or more CPUs than it has ranks? */
int boot_agent_has_core(const cpu_set_t *ranks, int vsize);

/* DPUSHIM_MIN_BYTES, with auto resolved alike on every rank (collective);
 * DPS_MIN_BYTES_AUTO still: nothing is worth offloading. */
uint64_t boot_resolve_min_bytes(const cpu_set_t *ranks, int vsize);

/* With Yama ptrace_scope 1, CMA reads by an agent need our permission. */
void boot_allow_agent_access(void);

/* ---- boot/connect.c ------------------------------------------------- */

/* Is ok true on every rank (collective over MPI_COMM_WORLD)? */
int boot_agree(int ok);

/* Exchange addresses and bring every agent up; returns 1 on success
 * (on every rank alike). */
int boot_connect_job(MPI_Comm vnode, const void *agent_addr,
                     uint32_t agent_addr_len, int node_id);

/* Stop the progress thread and the DMA engine, then close the channel
 * (shim_chan_close). */
void boot_teardown_ucx(void);

#endif
