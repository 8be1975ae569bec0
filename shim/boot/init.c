/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Init, MPI_Init_thread and MPI_Finalize: read the configuration,
 * cut the job into virtual nodes, get each an agent and connect it to
 * its ranks (the boot_*.c files; DESIGN.md, decisions 5 and 6), print
 * the statistics and tear down. Every decision that could split the job
 * (offload on or off) is agreed with an allreduce, so ranks never
 * disagree about whether a collective is offloaded.
 */
#define _GNU_SOURCE
#include "shim/core/shim.h"
#include "shim/boot/boot.h"
#include "shim/failover/failover.h"
#include "shim/args/args.h"
#include "shim/pers/start.h"
#include "shim/data/engine.h"
#include "shim/data/reg.h"
#include "shim/data/types.h"
#include "common/dps_log.h"
#include "common/dps_proto.h"
#include "common/dps_status.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

#define SHIM_FINALIZE_DRAIN_SEC 30

/*
 * Offload cannot be set up, for a reason every rank shares. Unless
 * DPUSHIM_REQUIRE asks otherwise the job goes on with stock MPI.
 */

/* fork(): a child takes no part in offload (it has none of the shim's
 * threads, and its agent is its parent's). */
static void inactive_in_child(void)
{
    shim.active = 0;
}

/* Offload is usable job-wide from here: boot owns shim.active (set here,
 * cleared at MPI_Finalize and in a forked child). */
static void set_active(void)
{
    static int atfork_done;

    if (!atfork_done) {
        pthread_atfork(NULL, NULL, inactive_in_child);
        atfork_done = 1;
    }
    shim.active = 1;
}

static void cannot_offload(const char *why)
{
    if (!shim.cfg.require) {
        if (shim.topo.world_rank == 0) {
            dps_error("%s: running on stock MPI", why);
        }
        return;
    }
    if (shim.topo.world_rank == 0) {
        dps_error("%s, and DPUSHIM_REQUIRE is set: aborting", why);
        fflush(stderr);
    }
    /* Let rank 0 say why first, and the launcher forward it: Hydra drops
     * output still in its pipes when it tears an aborted job down. */
    PMPI_Barrier(MPI_COMM_WORLD);
    usleep(300000);
    PMPI_Abort(MPI_COMM_WORLD, 1);
}

/* Read DPUSHIM_* (errors reported once, by rank 0); 1 if every rank
 * may offload. */
/*
 * DPUSHIM_AGENT_MAP unset: the cluster's agent services, where every host
 * of the job has the cluster-wide map (DPS_SITE_AGENT_MAP); and
 * DPUSHIM_AUTH=auto made explicit: MUNGE to the cluster's services, the
 * secret file to a map of the user's own.
 */
static void site_agents(void)
{
    int site = 0, all, none;

    if (shim.cfg.agent_map[0] == '\0') {
        site = access(DPS_SITE_AGENT_MAP, R_OK) == 0;
        all = boot_agree(site);
        none = boot_agree(!site);
        if (all) {
            snprintf(shim.cfg.agent_map, sizeof(shim.cfg.agent_map), "%s",
                     DPS_SITE_AGENT_MAP);
        } else if (!none && shim.topo.world_rank == 0) {
            dps_warn("%s is on some of the job's hosts only: agents are "
                     "started beside the ranks instead of the cluster's "
                     "agent services",
                     DPS_SITE_AGENT_MAP);
        }
        site = all;
    }
    if (shim.cfg.auth == DPS_AUTH_AUTO) {
        shim.cfg.auth = site ? DPS_AUTH_MUNGE : DPS_AUTH_SECRET;
    }
}

static int load_config(void)
{
    char        msgs[4096], who[32], *line, *save = NULL;
    const char *req = getenv("DPUSHIM_REQUIRE");
    int         nbad, v;

    snprintf(who, sizeof(who), "%d", shim.topo.world_rank);
    dps_log_set_who(who);
    nbad = dps_config_load(&shim.cfg, environ, msgs, sizeof(msgs), NULL);
    /* A DPUSHIM_REQUIRE that is not a boolean asks for strictness. */
    if (req != NULL &&
        dps_config_parse_value(DPS_CFG_BOOL, req, &v) != DPS_OK) {
        shim.cfg.require = 1;
    }
    dps_log_level = shim.cfg.log_level;
    shim.initialized = 1;
    /* Same environment everywhere: report once, from rank 0. */
    for (line = strtok_r(msgs, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        if (shim.topo.world_rank == 0) {
            if (nbad > 0 && strncmp(line, "unknown", 7) != 0) {
                dps_error("%s", line);
            } else {
                dps_warn("%s", line);
            }
        }
    }
    if (!boot_agree(shim.cfg.offload && nbad == 0)) {
        cannot_offload(nbad > 0 ? "invalid DPUSHIM_* values"
                                : "offload switched off (DPUSHIM_OFFLOAD=0)");
        return 0;
    }
    site_agents();
    return 1;
}

/* How the job is cut into virtual nodes (ranks sharing memory, in groups
 * of DPUSHIM_RANKS_PER_DPU), each served by one agent. */
typedef struct {
    MPI_Comm  node, vnode;
    int       node_id; /* the node's name: its first world rank */
    int       vidx;    /* this virtual node's index on its node */
    int       vsize;   /* ranks in it */
    int       rpd;     /* ranks per agent */
    cpu_set_t cpus;    /* union of its ranks' CPU masks */
} vnode_t;

static void make_vnodes(vnode_t *v)
{
    int node_rank = 0, node_size = 0, vrank = 0;

    PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED,
                         shim.topo.world_rank, MPI_INFO_NULL, &v->node);
    PMPI_Comm_rank(v->node, &node_rank);
    PMPI_Comm_size(v->node, &node_size);
    v->node_id = shim.topo.world_rank;
    PMPI_Bcast(&v->node_id, 1, MPI_INT, 0, v->node);
    v->rpd = shim.cfg.ranks_per_dpu ? (int)shim.cfg.ranks_per_dpu : node_size;
    v->vidx = node_rank / v->rpd;
    PMPI_Comm_split(v->node, v->vidx, node_rank, &v->vnode);
    PMPI_Comm_rank(v->vnode, &vrank);
    PMPI_Comm_size(v->vnode, &v->vsize);
    shim.topo.is_leader = (vrank == 0);
    boot_ranks_cpus(v->vnode, &v->cpus);
}

static void free_vnodes(vnode_t *v)
{
    if (v->vnode != MPI_COMM_NULL) {
        PMPI_Comm_free(&v->vnode);
    }
    PMPI_Comm_free(&v->node);
}

/*
 * The leader of each virtual node spawns or connects to its agent; every
 * rank of it learns the agent's pid, description and UCX address (*addr,
 * malloc'ed). Returns 1 when every virtual node of the job has an agent.
 */
static int get_agents(vnode_t *v, const job_secret_t *js, void **addr,
                      uint32_t *addr_len)
{
    size_t len = 0;
    struct {
        int               ok;
        uint32_t          len;
        shim_chan_agent_t who;
    } info = {0, 0, {.fd = -1}};

    if (shim.topo.is_leader) {
        info.ok =
            (shim.cfg.agent_map[0] != '\0'
                 ? boot_connect_listener(js, (unsigned)v->vidx, addr, &len,
                                         &info.who)
                 : boot_spawn_agent(addr, &len,
                                    boot_agent_has_core(&v->cpus, v->vsize),
                                    &info.who)) == DPS_OK;
        info.len = (uint32_t)len;
    }
    PMPI_Bcast(&info, (int)sizeof(info), MPI_BYTE, 0, v->vnode);
    if (!shim.topo.is_leader) {
        info.who.fd = -1; /* what the agent watches is its leader's */
        info.who.listening = 0;
    }
    /* Even when the leader failed: what it started is stopped. */
    shim_chan_agent(&info.who);
    boot_agent_affinity(&v->cpus);
    if (!shim.topo.is_leader && info.ok) {
        *addr = malloc(info.len);
        info.ok = *addr != NULL;
    }
    if (!boot_agree(info.ok)) {
        return 0;
    }
    PMPI_Bcast(*addr, (int)info.len, MPI_BYTE, 0, v->vnode);
    *addr_len = info.len;
    return 1;
}

/* DPUSHIM_MIN_BYTES=auto may leave nothing to offload: then no agent is
 * started. Returns 1 if offload goes on. */
static int worth_agents(const vnode_t *v)
{
    shim.min_bytes = boot_resolve_min_bytes(&v->cpus, v->vsize);
    if (shim.min_bytes != DPS_MIN_BYTES_AUTO) {
        return 1;
    }
    if (shim.cfg.require) {
        cannot_offload("DPUSHIM_MIN_BYTES=auto offloads nothing with "
                       "agents on the ranks' cores");
    }
    return 0;
}

/* Bring up the agent and UCX after PMPI_Init. Never fails the job: on
 * any problem the shim stays inactive and everything runs on stock MPI. */
static void shim_init(void)
{
    vnode_t      v = {.node = MPI_COMM_NULL, .vnode = MPI_COMM_NULL};
    job_secret_t js = {0};
    void        *addr = NULL;
    uint32_t     addr_len = 0;

    /* Before the attribute whose delete callback calls it exists. */
    shim_hooks.freeing = shim_pers_comm_free;
    PMPI_Comm_rank(MPI_COMM_WORLD, &shim.topo.world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &shim.topo.world_size);
    if (!load_config() ||
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, shim_comm_delete,
                                &shim.keyval, NULL) != MPI_SUCCESS) {
        return;
    }
    boot_allow_agent_access();
    make_vnodes(&v);
    if (!worth_agents(&v)) {
        free_vnodes(&v);
        return;
    }
    if (shim.cfg.agent_map[0] != '\0' && !boot_make_job_secret(&js)) {
        if (shim.topo.world_rank == 0) {
            dps_error("%s", js.why);
        }
        free_vnodes(&v);
        cannot_offload("no job secret for the listening agents");
        return;
    }
    if (!get_agents(&v, &js, &addr, &addr_len)) {
        boot_remove_job_secret(&js);
        cannot_offload("no agent available");
        goto err_agent;
    }
    /* Every agent has checked the secret: it has served its purpose. */
    boot_remove_job_secret(&js);
    if (!boot_connect_job(v.vnode, addr, addr_len, v.node_id)) {
        boot_teardown_ucx();
        shim_chan_stop_agent(0);
        cannot_offload("connecting ranks and agents failed");
        goto err_agent;
    }
    shim_rtypes_init(shim.chan.agent_formats);
    if (shim_fo_init() != DPS_OK) {
        dps_error("cannot create the communicators for taking over from "
                  "a failed agent");
    }
    shim_check_init();
    set_active();
    shim_chan_serving();
    if (shim.topo.world_rank == 0) {
        dps_info("offload active: %d ranks, %d per agent",
                 shim.topo.world_size, v.rpd);
    }
    free(addr);
    shim.topo.vnode = v.vnode;
    v.vnode = MPI_COMM_NULL;
    free_vnodes(&v);
    return;

err_agent:
    shim_chan_stop_agent(0);
    free(addr);
    free_vnodes(&v);
}

/* Leader: ask our agent for its counters (CPU time, collectives). */
static void fetch_agent_stats(void)
{
    double deadline = dps_now() + 2.0;
    size_t len;
    void  *msg;

    if (!shim.active || !shim.topo.is_leader || shim.chan.agent_dead) {
        return;
    }
    msg = dps_msg_encode_stats_req(&len);
    if (msg == NULL || shim_send_agent(msg, len) != DPS_OK) {
        return;
    }
    while (!shim.stat.have_agent && dps_now() < deadline) {
        if (shim_progress() == 0) {
            shim_idle(1);
        }
    }
    if (!shim.stat.have_agent) {
        dps_warn("agent %s sent no statistics", shim.chan.agent_desc);
    }
}

/* DPUSHIM_STATS=2: a collective's fallbacks by reason (SHIM_WHY_*). */
static void print_why(int coll, const uint64_t why[SHIM_NWHY])
{
    printf("dpushim: %s fallback: type=%llu op=%llu small=%llu comm=%llu "
           "off=%llu other=%llu\n",
           dps_coll_short(coll), (unsigned long long)why[SHIM_WHY_TYPE],
           (unsigned long long)why[SHIM_WHY_OP],
           (unsigned long long)why[SHIM_WHY_SMALL],
           (unsigned long long)why[SHIM_WHY_COMM],
           (unsigned long long)why[SHIM_WHY_OFF],
           (unsigned long long)why[SHIM_WHY_OTHER]);
}

/* One rank's part of the per-agent statistics (DPUSHIM_STATS=2). */
typedef struct {
    char    host[65];                           /* the rank's host name */
    char    desc[sizeof(shim.chan.agent_desc)]; /* its agent, as in messages */
    int32_t leader;     /* 1: the rank that talks to the agent */
    int32_t have;       /* leader: the agent's counters came */
    uint64_t offloaded; /* the rank's calls handed to its agent */
    uint64_t cpu_ns;    /* leader: the agent's CPU time */
} agent_row_t;

/* "0-1,4": the world ranks agent ag serves (shim.topo.rank_agent). */
static void agent_ranks(uint32_t ag, char *out, size_t len)
{
    size_t at = 0;
    int    r, first;

    out[0] = '\0';
    for (r = 0; r < shim.topo.world_size && at < len; r++) {
        if (shim.topo.rank_agent[r] != ag) {
            continue;
        }
        for (first = r;
             r + 1 < shim.topo.world_size && shim.topo.rank_agent[r + 1] == ag;
             r++) {
        }
        at +=
            (size_t)snprintf(out + at, len - at, "%s%d", at ? "," : "", first);
        if (r > first && at < len) {
            at += (size_t)snprintf(out + at, len - at, "-%d", r);
        }
    }
}

/*
 * DPUSHIM_STATS=2, every rank: its host, agent and counters to rank 0,
 * which gets an array of world_size rows (malloc'ed; NULL elsewhere or
 * without memory). Collective over MPI_COMM_WORLD.
 */
static agent_row_t *gather_agents(void)
{
    agent_row_t me, *rows = NULL;
    int         c;

    memset(&me, 0, sizeof(me));
    if (gethostname(me.host, sizeof(me.host) - 1) != 0) {
        snprintf(me.host, sizeof(me.host), "?");
    }
    memcpy(me.desc, shim.chan.agent_desc, sizeof(me.desc));
    me.desc[sizeof(me.desc) - 1] = '\0';
    me.leader = shim.topo.is_leader;
    me.have = shim.stat.have_agent;
    me.cpu_ns = shim.stat.agent[0];
    for (c = 1; c < DPS_COLL_MAX; c++) {
        me.offloaded += shim.stat.coll[c][SHIM_STAT_OFFLOADED];
    }
    if (shim.topo.world_rank == 0 &&
        (rows = calloc((size_t)shim.topo.world_size, sizeof(*rows))) == NULL) {
        dps_warn("no memory for the agents' statistics");
    }
    /* Every rank takes part, whatever rank 0 could allocate. */
    PMPI_Gather(&me, (int)sizeof(me), MPI_BYTE, rows, (int)sizeof(me),
                MPI_BYTE, 0, MPI_COMM_WORLD);
    return rows;
}

/*
 * Rank 0, DPUSHIM_STATS=2: a line for each agent, naming the host of its
 * ranks and the agent (its pid, or its address and the host it runs on),
 * with the calls its ranks handed it and its CPU time, so that a job
 * across hosts shows that every host offloaded. Frees rows.
 */
static void print_agents(agent_row_t *rows)
{
    char ranks[256];
    int  r, q;

    for (r = 0; rows != NULL && r < shim.topo.world_size; r++) {
        uint64_t offl = 0;

        if (!rows[r].leader) {
            continue;
        }
        for (q = 0; q < shim.topo.world_size; q++) {
            if (shim.topo.rank_agent[q] == shim.topo.rank_agent[r]) {
                offl += rows[q].offloaded;
            }
        }
        agent_ranks(shim.topo.rank_agent[r], ranks, sizeof(ranks));
        printf("dpushim: agent %u of %s (%s): ranks=%s offloaded=%llu ",
               shim.topo.rank_agent[r], rows[r].host, rows[r].desc, ranks,
               (unsigned long long)offl);
        if (shim.chan.agent_dead) {
            printf("failed\n");
        } else if (rows[r].have) {
            printf("cpu_ms=%.1f\n", rows[r].cpu_ns / 1e6);
        } else {
            printf("cpu_ms=?\n");
        }
    }
    free(rows);
}

/* Rank 0: a line for each collective the job called, and after an agent
 * failure what became of them; tot summed over ranks. */
static void print_colls(uint64_t tot[DPS_COLL_MAX][SHIM_NSTAT])
{
    int c;

    /* A line for each collective the job called. */
    for (c = 1; c < DPS_COLL_MAX; c++) {
        if (tot[c][SHIM_STAT_OFFLOADED] + tot[c][SHIM_STAT_FALLBACK] == 0) {
            continue;
        }
        printf("dpushim: %s offloaded=%llu fallback=%llu bytes=%llu\n",
               dps_coll_short(c),
               (unsigned long long)tot[c][SHIM_STAT_OFFLOADED],
               (unsigned long long)tot[c][SHIM_STAT_FALLBACK],
               (unsigned long long)tot[c][SHIM_STAT_BYTES]);
        if (shim.cfg.stats >= 2 && tot[c][SHIM_STAT_FALLBACK] > 0) {
            print_why(c, tot[c] + SHIM_STAT_WHY);
        }
    }
    for (c = 1; c < DPS_COLL_MAX; c++) {
        /* Only after an agent failure: summed over ranks. */
        if (tot[c][SHIM_STAT_REDONE] + tot[c][SHIM_STAT_FAILED] +
                tot[c][SHIM_STAT_AFTER] >
            0) {
            printf("dpushim: %s after agent failure: redone=%llu "
                   "failed=%llu stock=%llu\n",
                   dps_coll_short(c),
                   (unsigned long long)tot[c][SHIM_STAT_REDONE],
                   (unsigned long long)tot[c][SHIM_STAT_FAILED],
                   (unsigned long long)tot[c][SHIM_STAT_AFTER]);
        }
    }
}

/* DPUSHIM_STATS=2: what grows with the job, reduced to rank 0. */
typedef struct {
    uint64_t max[SHIM_NAGENT_STAT]; /* over the ranks (agents: leaders) */
    uint64_t wire_ns;               /* the slowest rank's MPI_Init part */
    uint64_t sched[DPS_COLL_MAX][3];
} growth_t;

/* Collective over MPI_COMM_WORLD; rank 0 gets a malloc'ed growth_t
 * (NULL elsewhere or without memory). */
static growth_t *gather_growth(void)
{
    growth_t *g = calloc(1, sizeof(*g));
    growth_t  dummy;

    PMPI_Reduce(shim.stat.agent, g ? g->max : dummy.max, SHIM_NAGENT_STAT,
                MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
    PMPI_Reduce(&shim.stat.wire_ns, g ? &g->wire_ns : &dummy.wire_ns, 1,
                MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
    PMPI_Reduce(shim.stat.sched, g ? g->sched : dummy.sched, DPS_COLL_MAX * 3,
                MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (shim.topo.world_rank != 0) {
        free(g);
        return NULL;
    }
    return g;
}

/* Rank 0: the growth line (agents: max over them and sum; wire time of
 * the slowest rank) and, per collective compiled, its schedules: how
 * many per rank, steps per schedule, compile time per schedule. Frees
 * g; ag is the sum over agents. */
static void print_growth(growth_t *g, const uint64_t *ag)
{
    int c;

    if (g == NULL || !shim.active) {
        free(g);
        return;
    }
    printf("dpushim: growth wire_ms_max=%.1f rss_kb_max=%llu "
           "rss_kb_sum=%llu endpoints_max=%llu endpoints_sum=%llu "
           "keys_max=%llu scheds_max=%llu steps_max=%llu\n",
           g->wire_ns / 1e6, (unsigned long long)g->max[8],
           (unsigned long long)ag[8], (unsigned long long)g->max[9],
           (unsigned long long)ag[9], (unsigned long long)g->max[10],
           (unsigned long long)g->max[11], (unsigned long long)g->max[12]);
    for (c = 1; c < DPS_COLL_MAX; c++) {
        const uint64_t *s = g->sched[c];

        if (s[0] == 0) {
            continue;
        }
        printf("dpushim: schedules %s compiled=%llu steps_per_rank=%.1f "
               "compile_us=%.1f\n",
               dps_coll_short(c), (unsigned long long)s[0],
               (double)s[1] / (double)s[0], s[2] / 1e3 / (double)s[0]);
    }
    free(g);
}

static void print_stats(void)
{
    uint64_t     tot[DPS_COLL_MAX][SHIM_NSTAT], ag[SHIM_NAGENT_STAT];
    growth_t    *growth = NULL;
    uint64_t     reg[SHIM_REG_NSTAT], regtot[SHIM_REG_NSTAT];
    uint64_t     eng[4], engtot[4], prg[4], prgtot[4];
    agent_row_t *rows = NULL;

    fetch_agent_stats();
    PMPI_Reduce(shim.stat.coll, tot, DPS_COLL_MAX * SHIM_NSTAT, MPI_UINT64_T,
                MPI_SUM, 0, MPI_COMM_WORLD);
    PMPI_Reduce(shim.stat.agent, ag, SHIM_NAGENT_STAT, MPI_UINT64_T, MPI_SUM,
                0, MPI_COMM_WORLD);
    if (shim.cfg.stats >= 2) {
        growth = gather_growth();
    }
    shim_reg_stats(reg);
    PMPI_Reduce(reg, regtot, SHIM_REG_NSTAT, MPI_UINT64_T, MPI_SUM, 0,
                MPI_COMM_WORLD);
    shim_engine_stats(&eng[0], &eng[1], &eng[2], &eng[3]);
    PMPI_Reduce(eng, engtot, 4, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    shim_prog_stats(&prg[0], &prg[1], &prg[2], &prg[3]);
    PMPI_Reduce(prg, prgtot, 4, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (shim.cfg.stats >= 2 && shim.active && shim.topo.rank_agent != NULL) {
        rows = gather_agents();
    }
    if (shim.topo.world_rank != 0) {
        return;
    }
    print_colls(tot);
    printf("dpushim: regcache hits=%llu misses=%llu invalidations=%llu\n",
           (unsigned long long)regtot[SHIM_REG_HITS],
           (unsigned long long)regtot[SHIM_REG_MISSES],
           (unsigned long long)regtot[SHIM_REG_INVALIDATIONS]);
    if (shim.active) {
        /* Blocks the ranks' DMA engines copied (direct data path). */
        printf("dpushim: dma engines copies=%llu bytes=%llu "
               "scattered=%llu gathered=%llu\n",
               (unsigned long long)engtot[0], (unsigned long long)engtot[1],
               (unsigned long long)engtot[2], (unsigned long long)engtot[3]);
    }
    if (prgtot[0] > 0) {
        /* Ranks whose progress thread ran, its wake-ups (those that
         * only the backstop brought), CPU time, summed
         * (DPUSHIM_PROGRESS_THREAD). */
        printf("dpushim: progress threads=%llu wakeups=%llu "
               "missed_wakeups=%llu cpu_ms=%.1f\n",
               (unsigned long long)prgtot[0], (unsigned long long)prgtot[1],
               (unsigned long long)prgtot[2], prgtot[3] / 1e6);
    }
    if (shim.active && shim.chan.agent_dead) {
        printf("dpushim: agents failed: no agent statistics\n");
    } else if (shim.active) {
        /* Every agent's CPU, user and system, from start to now; the
         * bytes they copied themselves (staged path) by CMA, by UCX
         * get/put that the ranks' workers serve, and by DMA through the
         * ranks' grants; the bytes agents sent each other (FETCH
         * answers, PUSH pieces), the FETCHes; the network messages
         * agents sent each other (a bundle of a pass counts once), per
         * collective, and the pushed pieces and their bytes. */
        printf("dpushim: agents cpu_ms=%.1f collectives=%llu "
               "cpu_us_per_collective=%.1f missed_wakeups=%llu "
               "cma_bytes=%llu ucx_bytes=%llu dma_bytes=%llu "
               "net_bytes=%llu fetches=%llu agent_msgs=%llu "
               "agent_msgs_per_collective=%.1f pushes=%llu "
               "pushed_bytes=%llu\n",
               ag[0] / 1e6, (unsigned long long)ag[1],
               ag[1] ? ag[0] / 1e3 / (double)ag[1] : 0.0,
               (unsigned long long)ag[2], (unsigned long long)ag[3],
               (unsigned long long)ag[4], (unsigned long long)ag[5],
               (unsigned long long)ag[6], (unsigned long long)ag[7],
               (unsigned long long)ag[13],
               ag[1] ? (double)ag[13] / (double)ag[1] : 0.0,
               (unsigned long long)ag[14], (unsigned long long)ag[15]);
    }
    print_agents(rows);
    print_growth(growth, ag);
    fflush(stdout);
}

/* Ops the application freed with MPI_Request_free, or never waited for,
 * may still be running: their memory registrations must outlive them.
 * The agent-death check bounds this wait. */
static void drain_ops(void)
{
    double deadline = dps_now() + SHIM_FINALIZE_DRAIN_SEC;

    while (shim_any_pending() && dps_now() < deadline) {
        if (shim_progress() == 0) {
            shim_idle(0);
        }
    }
    if (shim_any_pending()) {
        dps_warn("%u offloaded collectives still running %d s into "
                 "MPI_Finalize",
                 shim.live, SHIM_FINALIZE_DRAIN_SEC);
    }
}

/* Tear down before PMPI_Finalize; prints statistics when asked. */
static void shim_fini(void)
{
    if (!shim.initialized) {
        return;
    }
    if (shim.active) {
        drain_ops();
        shim_fo_fini();
        /* Our collectives are over: nothing is due to our buffers, and no
         * command is for the engine, nor any get or put for our worker.
         * No thread outlives MPI_Finalize; from here on this thread alone
         * uses the worker. */
        shim_engine_stop();
        shim_prog_stop();
    }
    if (shim.cfg.stats) {
        print_stats();
    }
    if (shim.active) {
        shim.active = 0;
        /* Nobody of this node talks to the agent any more. */
        PMPI_Barrier(shim.topo.vnode);
        if (shim.topo.is_leader && !shim.chan.agent_dead) {
            size_t len;
            void  *msg = dps_msg_encode_shutdown(&len);

            if (msg != NULL) {
                shim_send_agent(msg, len);
                ucp_worker_progress(shim.chan.ucx.worker);
            }
        }
        boot_teardown_ucx();
        shim_chan_stop_agent(0);
        PMPI_Comm_free(&shim.topo.vnode);
        shim_check_fini();
    }
    if (shim.keyval != MPI_KEYVAL_INVALID) {
        PMPI_Comm_free_keyval(&shim.keyval);
    }
    shim.initialized = 0;
}

/* shim_init, timed (DPUSHIM_STATS=2 prints the slowest rank's). */
static void shim_init_timed(void)
{
    double t0 = dps_now();

    shim_in_call++;
    shim_init();
    shim_in_call--;
    shim.stat.wire_ns = (uint64_t)((dps_now() - t0) * 1e9);
}

SHIM_API int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);

    if (rc == MPI_SUCCESS) {
        shim_init_timed();
    }
    return rc;
}

SHIM_API int MPI_Init_thread(int *argc, char ***argv, int required,
                             int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);

    if (rc == MPI_SUCCESS) {
        shim_init_timed();
    }
    return rc;
}

SHIM_API int MPI_Finalize(void)
{
    shim_in_call++;
    shim_fini();
    shim_in_call--;
    /* So that a hang in MPI's own finalize can be told from one in ours
     * (scripts/cluster_check.sh: MPICH's over UCX on TCP). */
    dps_info("MPI_Finalize: the shim's part is done, MPI's follows");
    return PMPI_Finalize();
}