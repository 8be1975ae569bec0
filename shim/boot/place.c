/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where agents run: CPU affinity from the ranks' masks or
 * DPUSHIM_AGENT_CPUS, whether an agent has a core of its own, and the
 * DPUSHIM_MIN_BYTES=auto threshold that follows from it.
 */
#define _GNU_SOURCE
#include "shim/boot/boot.h"
#include "common/dps_log.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

/* The union of the CPU masks of the ranks of this virtual node. */
void boot_ranks_cpus(MPI_Comm vnode, cpu_set_t *all)
{
    unsigned long mine[sizeof(cpu_set_t) / sizeof(unsigned long)];
    cpu_set_t     set;

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

void boot_agent_affinity(const cpu_set_t *ranks)
{
    cpu_set_t set;

    /* A listening agent runs where whoever started it put it; and the
     * pid it reports may name another process here (another PID
     * namespace of the same host name: connect.c, agent_pid_check). */
    if (!shim.topo.is_leader || shim.chan.agent_pid <= 0 ||
        shim.chan.listen_agent) {
        return;
    }
    agent_cpus(ranks, &set);
    if (CPU_COUNT(&set) > 0 &&
        sched_setaffinity(shim.chan.agent_pid, sizeof(set), &set) != 0) {
        dps_warn("cannot set the agent's CPU affinity: %m");
    } else if (shim.cfg.agent_cpus[0] != '\0') {
        dps_info("agent pid %d runs on CPUs %s", (int)shim.chan.agent_pid,
                 shim.cfg.agent_cpus);
    } else {
        dps_info("agent pid %d runs on the %d CPUs of its ranks",
                 (int)shim.chan.agent_pid, CPU_COUNT(&set));
    }
}

/* Has the agent of these ranks a CPU of its own: one no rank of its
 * virtual node may use, or more CPUs than it has ranks? */
int boot_agent_has_core(const cpu_set_t *ranks, int vsize)
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
 * of stock MPI's (docs/results.md): nothing is offloaded. The
 * job takes the largest threshold of its virtual nodes, so that ranks
 * agree on every call.
 */
uint64_t boot_resolve_min_bytes(const cpu_set_t *ranks, int vsize)
{
    uint64_t mine = shim.cfg.min_bytes, all = 0;

    if (shim.cfg.min_bytes != DPS_MIN_BYTES_AUTO) {
        return shim.cfg.min_bytes; /* same environment everywhere */
    }
    /* Listening agents (a DPU's, a service's) run on cores no rank of
     * ours uses. */
    if (shim.cfg.agent_map[0] != '\0' || boot_agent_has_core(ranks, vsize)) {
        mine = SHIM_AUTO_MIN_BYTES;
    }
    PMPI_Allreduce(&mine, &all, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (all == DPS_MIN_BYTES_AUTO && shim.topo.world_rank == 0 &&
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
void boot_allow_agent_access(void)
{
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    int   scope = 0;

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
