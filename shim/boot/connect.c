/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wiring ranks and agents (DESIGN.md, decision 6): every rank learns which
 * agent serves which rank, the process table and every UCX worker
 * address; each leader sends its agent the job layout; each rank offers
 * its shared-memory channel, says hello and waits until its agent is
 * ready, then starts its DMA engine. Every failure is agreed on, so that
 * no rank offloads unless all do.
 */
#define _GNU_SOURCE
#include "shim/boot/boot.h"
#include "shim/data/engine.h"
#include "common/dps_grant.h"
#include "common/dps_log.h"
#include "common/dps_proto.h"
#include "common/dps_status.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int boot_agree(int ok)
{
    int all = 0;

    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

/* READY came: start the DMA engine where the data path is direct, the
 * ring is on and the agent copies our memory with CMA (it read our token
 * back: READY says so). */
static void engine_start(void)
{
    if (shim.chan.shm_on && shim.cfg.data_path == DPS_DATA_DIRECT &&
        shim.cfg.transport != DPS_TRANSPORT_UCX &&
        (shim.chan.agent_cma & DPS_READY_CMA)) {
        shim_engine_start(shim.chan.shm, shim.chan.agent_pid);
    }
}

/* What every rank learns about every other (indexed by world rank). */
typedef struct {
    int      *leader;     /* 1 if the rank leads a virtual node */
    int      *agent;      /* index of the rank's agent */
    int      *pid, *node; /* process id and node (CMA on the same node) */
    uint64_t *token;      /* CMA token address and value (dps_cma.h) */
    int      *apid;       /* a leader's agent pid */
    int      *after;      /* after READY: engine and agent reach the node
                           * (rank_direct), agent pid (as its ranks keep
                           * it: shim_chan_hello) */
    pid_t    *nagents;    /* the agents of this node */
    int      *rlen, *rdisp, *alen, *adisp;
    char     *rbuf, *abuf; /* ranks' and leaders' agents' UCX addresses */
    int       my_agent, job_key;
} job_tables_t;

static void tables_free(job_tables_t *t)
{
    free(t->leader);
    free(t->agent);
    free(t->pid);
    free(t->node);
    free(t->token);
    free(t->after);
    free(t->apid);
    free(t->nagents);
    free(t->rlen);
    free(t->rdisp);
    free(t->alen);
    free(t->adisp);
    free(t->rbuf);
    free(t->abuf);
}

static int tables_alloc(job_tables_t *t, int nr)
{
    int **v[] = {&t->leader, &t->agent, &t->pid,  &t->node, &t->apid,
                 &t->rlen,   &t->rdisp, &t->alen, &t->adisp};

    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        *v[i] = calloc((size_t)nr, sizeof(int));
        if (*v[i] == NULL) {
            return 0;
        }
    }
    t->token = calloc(2 * (size_t)nr, sizeof(uint64_t));
    t->after = calloc(2 * (size_t)nr, sizeof(int));
    t->nagents = calloc((size_t)nr, sizeof(pid_t));
    shim.topo.rank_agent = calloc((size_t)nr, sizeof(uint32_t));
    shim.topo.rank_node = calloc((size_t)nr, sizeof(int));
    shim.topo.rank_direct = calloc((size_t)nr, sizeof(int));
    return t->token != NULL && t->after != NULL && t->nagents != NULL &&
           shim.topo.rank_agent != NULL && shim.topo.rank_node != NULL &&
           shim.topo.rank_direct != NULL;
}

/*
 * A listening agent, which may not share our process space (a DPU), gets
 * our memory through a grant (common/dps_grant.h), before HELLO so that
 * it has it when it answers READY. Refused or unreachable: it serves us
 * over UCX, as without a grant.
 */
static void grant_offer(int job_key)
{
    double deadline = dps_now() + SHIM_GRANT_WAIT_MS / 1000.0;
    int    rc;

    if (shim.chan.grant_path[0] == '\0' ||
        shim.cfg.transport == DPS_TRANSPORT_UCX) {
        return;
    }
    /* The agent's socket holds a few grants at a time and takes them
     * while it wires up, which needs our UCX progress: keep it going. */
    while ((rc = dps_grant_send(shim.chan.grant_path,
                                (uint32_t)shim.topo.world_rank,
                                (uint32_t)job_key)) == DPS_ERR_AGAIN &&
           dps_now() < deadline) {
        shim_chan_idle_step();
    }
    if (rc != DPS_OK) {
        dps_info("cannot grant the agent our memory through %s: %s: it "
                 "reaches us over UCX",
                 shim.chan.grant_path,
                 rc == DPS_ERR_AGAIN ? "its queue stayed full"
                                     : strerror(errno));
    }
}

/* Leaders, agent indices (the order of leaders), pids, nodes, CMA
 * tokens, and the agents of this node: if one dies, collectives spanning
 * it stall, so every rank watches them all (core/op.c, check_agent). */
static void gather_ranks(job_tables_t *t, MPI_Comm vnode, int node_id)
{
    int             nr = shim.topo.world_size, i, v, n = 0;
    dps_msg_hello_t me;
    uint64_t        tok[2];

    PMPI_Allgather(&shim.topo.is_leader, 1, MPI_INT, t->leader, 1, MPI_INT,
                   MPI_COMM_WORLD);
    for (i = 0; i < shim.topo.world_rank; i++) {
        t->my_agent += t->leader[i];
    }
    PMPI_Bcast(&t->my_agent, 1, MPI_INT, 0, vnode);
    PMPI_Allgather(&t->my_agent, 1, MPI_INT, t->agent, 1, MPI_INT,
                   MPI_COMM_WORLD);
    for (i = 0; i < nr; i++) {
        shim.topo.rank_agent[i] = (uint32_t)t->agent[i]; /* for the builders */
    }
    v = (int)getpid();
    PMPI_Allgather(&v, 1, MPI_INT, t->pid, 1, MPI_INT, MPI_COMM_WORLD);
    PMPI_Allgather(&node_id, 1, MPI_INT, t->node, 1, MPI_INT, MPI_COMM_WORLD);
    /* Every agent of this node may copy our memory: each checks our
     * token (those of other agents see it in the process table). */
    shim_hello(&me);
    tok[0] = me.token_addr;
    tok[1] = me.token;
    PMPI_Allgather(tok, 2, MPI_UINT64_T, t->token, 2, MPI_UINT64_T,
                   MPI_COMM_WORLD);
    memcpy(shim.topo.rank_node, t->node, sizeof(int) * (size_t)nr);
    v = (int)shim.chan.agent_pid;
    PMPI_Allgather(&v, 1, MPI_INT, t->apid, 1, MPI_INT, MPI_COMM_WORLD);
    for (i = 0; i < nr; i++) {
        if (t->leader[i] && t->node[i] == node_id) {
            t->nagents[n++] = (pid_t)t->apid[i];
        }
    }
    shim_chan_node_agents(t->nagents, n);
    /* Agents name their wake-up sockets after agent 0's pid. */
    t->job_key = shim.chan.agent_pid > 0 ? (int)shim.chan.agent_pid
                                         : (int)(getpid() | 0x40000000);
    PMPI_Bcast(&t->job_key, 1, MPI_INT, 0, MPI_COMM_WORLD);
}

/* Worker addresses of every rank and of every agent; 1 if all have them. */
static int gather_addresses(job_tables_t *t, const void *mine, size_t mine_len,
                            const void *agent_addr, uint32_t agent_addr_len)
{
    size_t rt = 0, at = 0;
    int    i = (int)mine_len;

    PMPI_Allgather(&i, 1, MPI_INT, t->rlen, 1, MPI_INT, MPI_COMM_WORLD);
    i = shim.topo.is_leader ? (int)agent_addr_len : 0;
    PMPI_Allgather(&i, 1, MPI_INT, t->alen, 1, MPI_INT, MPI_COMM_WORLD);
    for (i = 0; i < shim.topo.world_size; i++) {
        t->rdisp[i] = (int)rt;
        t->adisp[i] = (int)at;
        rt += (size_t)t->rlen[i];
        at += (size_t)t->alen[i];
    }
    t->rbuf = malloc(rt + 1);
    t->abuf = malloc(at + 1);
    if (!boot_agree(t->rbuf != NULL && t->abuf != NULL)) {
        return 0;
    }
    PMPI_Allgatherv(mine, (int)mine_len, MPI_BYTE, t->rbuf, t->rlen, t->rdisp,
                    MPI_BYTE, MPI_COMM_WORLD);
    PMPI_Allgatherv((void *)agent_addr,
                    shim.topo.is_leader ? (int)agent_addr_len : 0, MPI_BYTE,
                    t->abuf, t->alen, t->adisp, MPI_BYTE, MPI_COMM_WORLD);
    return 1;
}

/* Leader: the job layout (every rank's agent and address, every agent's
 * address) and the process table to its agent; 1 on success. */
static int send_job(const job_tables_t *t)
{
    int           nr = shim.topo.world_size, i, k = 0, ok = 0;
    const void  **rp = calloc(nr, sizeof(void *));
    const void  **ap = calloc(nr, sizeof(void *));
    uint32_t     *rl = calloc(nr, sizeof(uint32_t));
    uint32_t     *al = calloc(nr, sizeof(uint32_t));
    uint32_t     *ra = calloc(nr, sizeof(uint32_t));
    uint64_t     *ta = calloc(nr, sizeof(uint64_t));
    uint64_t     *tv = calloc(nr, sizeof(uint64_t));
    dps_msg_job_t job;
    void         *msg = NULL;
    size_t        len;

    if (rp && ap && rl && al && ra && ta && tv) {
        for (i = 0; i < nr; i++) {
            rp[i] = t->rbuf + t->rdisp[i];
            rl[i] = (uint32_t)t->rlen[i];
            ra[i] = (uint32_t)t->agent[i];
            ta[i] = t->token[2 * i];
            tv[i] = t->token[2 * i + 1];
            if (t->leader[i]) {
                ap[k] = t->abuf + t->adisp[i];
                al[k++] = (uint32_t)t->alen[i];
            }
        }
        job.nranks = (uint32_t)nr;
        job.nagents = (uint32_t)k;
        job.agent_idx = (uint32_t)t->my_agent;
        job.job_key = (uint32_t)t->job_key;
        job.flags = shim.cfg.push ? DPS_JOB_PUSH : 0;
        job.pad = 0;
        msg = dps_msg_encode_job(&job, ra, rp, rl, ap, al, &len);
    }
    if (msg == NULL || shim_send_agent(msg, len) != DPS_OK) {
        dps_error("cannot send the job layout to the agent");
    } else {
        msg = dps_msg_encode_procs((uint32_t)nr, (uint32_t *)t->pid,
                                   (uint32_t *)t->node, ta, tv, &len);
        ok = msg != NULL && shim_send_agent(msg, len) == DPS_OK;
        if (!ok) {
            dps_error("cannot send the process table to the agent");
        }
    }
    free(rp);
    free(ap);
    free(rl);
    free(al);
    free(ra);
    free(ta);
    free(tv);
    return ok;
}

/* Agents finish wire-up with every rank: keep UCX progressing until all
 * ranks have heard from their agent. */
static void wait_all_wired(void)
{
    MPI_Request br;
    int         flag = 0;

    PMPI_Ibarrier(MPI_COMM_WORLD, &br);
    for (;;) {
        PMPI_Test(&br, &flag, MPI_STATUS_IGNORE);
        if (flag) {
            break;
        }
        shim_chan_idle_step();
    }
}

/*
 * Does an agent reach this rank's memory with UCX get/put (then the
 * progress thread must progress our worker while we are outside MPI)?
 * DPUSHIM_TRANSPORT=ucx: every agent, for every rank. Otherwise only our
 * own agent could, where neither CMA nor our grant reaches us (READY
 * says which); agents of other nodes ask ours for our bytes (FETCH).
 * Messages need no thread: without RDMA every one goes eagerly
 * (dps_ucx_open), and a COMPLETE waits for our next MPI call.
 */
static int prog_wanted(void)
{
    if (shim.cfg.progress_thread != DPS_AUTOBOOL_AUTO) {
        return shim.cfg.progress_thread == DPS_AUTOBOOL_ON;
    }
    /* Our own agent reaches us with UCX get/put (DPUSHIM_TRANSPORT=ucx,
     * or neither CMA nor a grant reaches us). Agents of other nodes
     * never do: they ask ours (FETCH). */
    if (shim.cfg.transport == DPS_TRANSPORT_UCX ||
        !(shim.chan.agent_cma & (DPS_READY_CMA | DPS_READY_DMA))) {
        return 1;
    }
    return 0;
}

/* Every agent is ready: who may send unpacked data to whom (wrap/call.c:
 * the same table on every rank, so that every rank decides alike), and
 * the agents of this node's pids as their ranks keep them
 * (agent_pid_check). */
static void after_ready(job_tables_t *t, int node_id)
{
    int mine[2], i, n = 0;

    mine[0] = shim_engine_running() &&
              (shim.chan.agent_cma & DPS_READY_CMA_NODE) != 0;
    mine[1] = (int)shim.chan.agent_pid;
    PMPI_Allgather(mine, 2, MPI_INT, t->after, 2, MPI_INT, MPI_COMM_WORLD);
    for (i = 0; i < shim.topo.world_size; i++) {
        shim.topo.rank_direct[i] = t->after[2 * i];
        if (t->leader[i] && t->node[i] == node_id) {
            t->nagents[n++] = (pid_t)t->after[2 * i + 1];
        }
    }
    shim_chan_node_agents(t->nagents, n);
}

/* Exchange addresses and bring every agent up; returns 1 on success. */
int boot_connect_job(MPI_Comm vnode, const void *agent_addr,
                     uint32_t agent_addr_len, int node_id)
{
    job_tables_t      t = {0};
    ucp_worker_attr_t wattr = {0};
    int               ok;

    ok = shim_chan_open(shim.topo.world_size) == DPS_OK;
    if (!boot_agree(ok)) {
        return 0;
    }
    wattr.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS;
    if (ucp_worker_query(shim.chan.ucx.worker, &wattr) != UCS_OK) {
        dps_error("ucp_worker_query failed");
        ok = 0;
        wattr.address = NULL;
        wattr.address_length = 0;
    }
    ok = tables_alloc(&t, shim.topo.world_size) && ok;
    if (!boot_agree(ok)) {
        goto out;
    }
    gather_ranks(&t, vnode, node_id);
    if (!gather_addresses(&t, wattr.address, wattr.address_length, agent_addr,
                          agent_addr_len)) {
        ok = 0;
        goto out;
    }
    ok = shim_chan_connect(agent_addr) == DPS_OK;
    if (ok && shim.topo.is_leader) {
        ok = send_job(&t);
    }
    if (ok) {
        shim_chan_shm_offer();
        grant_offer(t.job_key);
        ok = shim_chan_hello(SHIM_CONNECT_TIMEOUT_MS / 1000.0) == DPS_OK;
    }
    if (ok) {
        engine_start();
    }
    wait_all_wired();
    ok = boot_agree(ok);
    if (ok) {
        after_ready(&t, node_id);
    }
    if (ok && prog_wanted()) {
        shim_prog_start(); /* without it: in MPI calls only, as before */
    }
out:
    if (wattr.address != NULL) {
        ucp_worker_release_address(shim.chan.ucx.worker, wattr.address);
    }
    tables_free(&t);
    return ok;
}

void boot_teardown_ucx(void)
{
    shim_prog_stop(); /* before the worker goes */
    shim_engine_stop();
    shim_chan_close();
}
