/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Offloaded operations: registration, the POST to the agent, generalized
 * requests, and turning the agent's COMPLETE messages into completed MPI
 * requests. MPI calls are never made with shim.lock held (MPI may call our
 * generalized-request callbacks, which take it).
 */
#define _GNU_SOURCE
#include "shim.h"
#include "shim_engine.h"
#include "shim_reg.h"
#include "shim_redo.h"
#include "shim_sched.h"
#include "shim_types.h"
#include "../common/dps_log.h"
#include "../common/dps_proto.h"
#include "../common/dps_status.h"

#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SHIM_LIVENESS_PERIOD 0.1  /* s between agent liveness checks */
#define SHIM_UCX_POLL_SEC 200e-6    /* UCX polling with the shm channel on */
#define SHIM_WAIT_SPIN_SEC 50e-6    /* a wait polls this long, then sleeps */
#define SHIM_POKE_MAX_BYTES (256u * 1024) /* see op_send */

/* Into the shared-memory ring (tx_lock held): DPS_OK, DPS_ERR_INVALID
 * (too big: never fits), DPS_ERR_TIMEOUT (the agent takes nothing). */
static int shm_put(const void *msg, size_t len)
{
    dps_shm_t *s = shim.shm;
    double deadline = 0;
    int rc;

    for (;;) {
        rc = dps_shm_msg_put(&s->to_agent, s->to_agent_buf, msg, len);
        if (rc != DPS_ERR_AGAIN) {
            break;
        }
        /* Full: the agent is behind (or gone; the liveness check says). */
        if (deadline == 0) {
            deadline = dps_now() + shim.cfg.agent_timeout;
        } else if (dps_now() > deadline) {
            return DPS_ERR_TIMEOUT;
        }
        dps_kick((int)shim.agent_pid, DPS_KICK_AGENT);
        usleep(20);
    }
    if (rc == DPS_OK) {
        dps_shm_fence();
        if (__atomic_load_n(&s->agent_sleeping, __ATOMIC_RELAXED)) {
            dps_kick((int)shim.agent_pid, DPS_KICK_AGENT);
        }
    }
    return rc;
}

int shim_send_agent(void *msg, size_t len)
{
    int rc;

    if (shim.shm_on) {
        pthread_mutex_lock(&shim.tx_lock);
        rc = shim.shm_tx_ucx ? DPS_ERR_INVALID : shm_put(msg, len);
        if (rc == DPS_ERR_INVALID && !shim.shm_tx_ucx) {
            /* Too big for the ring (a huge communicator's member list):
             * once the agent has taken everything before it, this and
             * every later message go by UCX, so none overtakes another. */
            double deadline = dps_now() + shim.cfg.agent_timeout;

            while (!dps_shm_msg_empty(&shim.shm->to_agent) &&
                   dps_now() < deadline) {
                dps_kick((int)shim.agent_pid, DPS_KICK_AGENT);
                usleep(20);
            }
            shim.shm_tx_ucx = 1;
        }
        pthread_mutex_unlock(&shim.tx_lock);
        if (rc != DPS_ERR_INVALID) {
            free(msg);
            return rc;
        }
    }
    rc = dps_ucx_send(shim.agent_ep, msg, len);
    dps_kick((int)shim.agent_pid, DPS_KICK_AGENT);
    return rc;
}

/* Called with the lock held. */
static void op_release_memory(shim_op_t *op)
{
    int i;

    for (i = 0; i < DPS_NBUF; i++) {
        shim_reg_put(op->reg[i]);
        op->reg[i] = NULL;
    }
    if (op->tmp != NULL) {
        shim_sched_tmp_put(op->sched, op->tmp);
        op->tmp = NULL;
    }
    shim_sched_put(op->sched);
    op->sched = NULL;
    shim_redo_free(op->redo);
    op->redo = NULL;
}

static int query_fn(void *extra, MPI_Status *status)
{
    shim_op_t *op = extra;

    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    status->MPI_ERROR = op->error;
    return op->error;
}

static int free_fn(void *extra)
{
    shim_op_t *op = extra;
    int release;

    pthread_mutex_lock(&shim.lock);
    op->req_freed = 1;
    HASH_DELETE(hh_req, shim.by_req, op);
    release = op->agent_done;
    pthread_mutex_unlock(&shim.lock);
    if (release) {
        free(op);
    }
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS; /* collectives cannot be cancelled: no effect */
}

/* Send op's POST (its communicator id is known). Called with the lock. */
static void op_send(shim_op_t *op)
{
    shim_comm_t *c = op->comm;
    shim_sched_t *sc = op->sched;
    const shim_call_t *k = &op->call;
    const void *key[DPS_NBUF];
    void *base[DPS_NBUF] = {k->buf[0], k->buf[1], op->tmp};
    dps_msg_post_t f;
    size_t len = 0;
    void *msg;
    int b;

    memset(&f, 0, sizeof(f));
    f.comm_id = c->id;
    f.op_token = op->token;
    f.sched_id = sc != NULL ? sc->id : 0;
    f.seq = k->seq;
    f.coll = (uint32_t)k->coll;
    f.comm_rank = (uint32_t)c->rank;
    f.comm_size = (uint32_t)c->size;
    f.world_rank = (uint32_t)shim.world_rank;
    f.error = k->error;
    /* A key goes to the agent with the first post that uses it; later
     * posts name the registration by its id alone. Likewise the steps. */
    for (b = 0; b < DPS_NBUF; b++) {
        shim_reg_t *r = op->reg[b];

        f.buf_addr[b] = (uint64_t)(uintptr_t)base[b];
        f.buf_len[b] = b < 2 ? k->len[b]
                             : (sc != NULL ? sc->need[DPS_BUF_TMP] : 0);
        f.buf_reg[b] = r != NULL ? r->id : 0;
        key[b] = (r != NULL && !r->agent_has_key) ? r->rkey : NULL;
        f.rkey_len[b] = key[b] != NULL ? (uint32_t)r->rkey_len : 0;
    }
    if (sc != NULL && !sc->agent_has) {
        f.nsteps = sc->nsteps;
        f.flags = DPS_POST_SCHED;
    }
    if (k->gather != NULL) {
        f.flags |= DPS_POST_GATHER;
        f.send_map = (uint64_t)(uintptr_t)k->gather->seg;
        f.send_nmap = k->gather->nseg;
    }
    f.nmembers = c->agent_knows ? 0 : (uint32_t)c->size;
    msg = dps_msg_encode_post(DPS_MSG_POST, &f, key,
                              f.nsteps ? sc->steps : NULL, c->members, &len);
    if (msg != NULL && !shim.agent_dead &&
        shim_send_agent(msg, len) == DPS_OK) {
        msg = NULL;
        /* Small transfers: wake our engine now, so that it polls for the
         * commands to come (waking it later, on an idle core, costs more
         * than the copy). Not for large ones: the woken engine may get
         * the commands at once and copy for milliseconds on this core
         * before the post returns (4 MiB, MPICH: posts of 28-238 us
         * against 3.8 us), while its later wake-up is small beside the
         * copy. */
        if (k->len[1] < SHIM_POKE_MAX_BYTES) {
            shim_engine_poke();
        }
        c->agent_knows = 1;
        if (f.flags & DPS_POST_SCHED) {
            sc->agent_has = 1;
        }
        for (b = 0; b < DPS_NBUF; b++) {
            if (key[b] != NULL) {
                shim_reg_key_sent(op->reg[b]);
            }
        }
        return;
    }
    /* The agent is gone: stock MPI takes the op over (shim_failover.c). */
    free(msg);
    if (shim.fo_why[0] == '\0') {
        snprintf(shim.fo_why, sizeof(shim.fo_why),
                 "cannot hand a collective to agent %s", shim.agent_desc);
    }
}

int shim_op_start(shim_comm_t *c, shim_call_t *k, shim_sched_t *sc,
                  MPI_Request *req)
{
    shim_op_t *op;
    int rc = DPS_OK, stock = (shim.fo_state != SHIM_FO_NONE), b;

    op = calloc(1, sizeof(*op));
    if (op == NULL) {
        pthread_mutex_lock(&shim.lock);
        shim_sched_put(sc);
        pthread_mutex_unlock(&shim.lock);
        shim_call_clear(k);
        return MPI_ERR_NO_MEM;
    }
    op->call = *k;
    memset(k, 0, sizeof(*k));   /* the op owns what the call owned */
    op->comm = c;
    op->sched = sc;
    op->after = stock;
    pthread_mutex_lock(&shim.lock);
    if (sc != NULL && sc->need[DPS_BUF_TMP] > 0 &&
        (op->tmp = shim_sched_tmp(sc)) == NULL) {
        rc = DPS_ERR_NOMEM;
    }
    /* After an agent failure nothing is registered: stock MPI does it.
     * Nor for a post that only carries this rank's error. */
    for (b = 0; rc == DPS_OK && !stock && !op->call.error && b < DPS_NBUF;
         b++) {
        const void *p = b < 2 ? op->call.buf[b] : op->tmp;
        uint64_t n = b < 2 ? op->call.len[b] : sc->need[DPS_BUF_TMP];

        if (b == DPS_BUF_SEND && op->call.gather != NULL) {
            continue;   /* read in place through its map: no key */
        }
        if (p != NULL && n > 0 && shim_reg_get(p, n, &op->reg[b]) != 0) {
            rc = DPS_ERR_UCX;
        }
    }
    pthread_mutex_unlock(&shim.lock);
    if (rc != DPS_OK ||
        PMPI_Grequest_start(query_fn, free_fn, cancel_fn, op, &op->req) !=
        MPI_SUCCESS) {
        pthread_mutex_lock(&shim.lock);
        op_release_memory(op);
        pthread_mutex_unlock(&shim.lock);
        shim_call_clear(&op->call);
        free(op);
        dps_error("cannot offload a collective: %s",
                  dps_status_str(rc == DPS_OK ? DPS_ERR_NOMEM : rc));
        return MPI_ERR_OTHER;
    }
    pthread_mutex_lock(&shim.lock);
    op->token = ++shim.next_token;
    HASH_ADD(hh_req, shim.by_req, req, sizeof(MPI_Request), op);
    shim.live++;
    c->refs++;
    if (c->ops_tail != NULL) {
        c->ops_tail->next_in_comm = op;
    } else {
        c->ops_head = op;
    }
    c->ops_tail = op;
    *req = op->req;
    if (stock) {
        /* Started by shim_fo_progress, after the agreement. */
    } else if (c->id_known) {
        HASH_ADD(hh_token, shim.by_token, token, sizeof(op->token), op);
        op_send(op);
    } else {
        /* Sent, in order, once the communicator's id is agreed. */
        HASH_ADD(hh_token, shim.by_token, token, sizeof(op->token), op);
        if (c->wait_tail != NULL) {
            c->wait_tail->next_wait = op;
        } else {
            c->wait_head = op;
        }
        c->wait_tail = op;
    }
    pthread_mutex_unlock(&shim.lock);
    return MPI_SUCCESS;
}

void shim_comm_progress(void)
{
    shim_comm_t **cp, *c, *agreed = NULL;
    shim_op_t *op;

    /* PMPI_Test on the id broadcast never calls back into the shim. */
    pthread_mutex_lock(&shim.agree_lock);
    for (cp = &shim.agreeing; (c = *cp) != NULL;) {
        int flag = 0;

        PMPI_Test(&c->id_req, &flag, MPI_STATUS_IGNORE);
        if (!flag) {
            cp = &c->next_agreeing;
            continue;
        }
        *cp = c->next_agreeing;
        c->next_agreeing = agreed;
        agreed = c;
    }
    pthread_mutex_unlock(&shim.agree_lock);
    /* Oldest first is not needed: each communicator keeps its own order. */
    while ((c = agreed) != NULL) {
        agreed = c->next_agreeing;
        pthread_mutex_lock(&shim.lock);
        c->id = c->id_buf;
        c->id_known = 1;
        while ((op = c->wait_head) != NULL) {
            c->wait_head = op->next_wait;
            if (shim.fo_state == SHIM_FO_NONE) {
                op_send(op);
            }   /* else stock MPI takes it over */
        }
        c->wait_tail = NULL;
        pthread_mutex_unlock(&shim.lock);
        if (c->freed) {
            /* MPI freed the communicator while we agreed on its id. */
            shim_comm_unref(c);
        }
    }
}

int shim_pid_alive(pid_t pid)
{
    char path[64], buf[512], *p;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    /* A zombie is dead: its parent (our leader) has not reaped it yet. */
    return p != NULL && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/*
 * Called with the lock held, while agents serve: is our agent, or another
 * on this node, dead, or has ours stopped answering? Sets shim.fo_why.
 */
static void check_agent(void)
{
    double now = dps_now(), half = shim.cfg.agent_timeout / 2.0;
    pid_t dead;
    int i;

    if (shim.fo_why[0] != '\0' || shim.by_token == NULL ||
        now - shim.last_liveness < SHIM_LIVENESS_PERIOD) {
        return;
    }
    shim.last_liveness = now;
    /* Agents on this host: by pid (0: on a DPU, not ours to see). */
    if (shim.agent_pid > 0 && !shim_pid_alive(shim.agent_pid)) {
        snprintf(shim.fo_why, sizeof(shim.fo_why), "agent %s died",
                 shim.agent_desc);
        return;
    }
    for (i = 0; i < shim.n_node_agents; i++) {
        dead = shim.node_agents[i];
        if (dead > 0 && !shim_pid_alive(dead)) {
            snprintf(shim.fo_why, sizeof(shim.fo_why), "agent pid %d of "
                     "this node died", (int)dead);
            return;
        }
    }
    /* A listening agent's connection ends when its process does. */
    if (shim.listen_agent && shim.parent_fd >= 0) {
        struct pollfd pfd = {shim.parent_fd, POLLIN, 0};

        if (poll(&pfd, 1, 0) > 0) {
            snprintf(shim.fo_why, sizeof(shim.fo_why),
                     "the connection to agent %s ended", shim.agent_desc);
            return;
        }
    }
    /* Alive but silent: ping it; no answer within the timeout fails it. */
    if (shim.ping_sent > 0 && now - shim.ping_sent > half) {
        snprintf(shim.fo_why, sizeof(shim.fo_why),
                 "agent %s has not answered for %u s "
                 "(DPUSHIM_AGENT_TIMEOUT)", shim.agent_desc,
                 shim.cfg.agent_timeout);
    } else if (shim.ping_sent == 0 && now - shim.last_heard > half) {
        size_t len;
        void *msg = dps_msg_encode_ping((uint32_t)shim.world_rank,
                                        (uint32_t)getpid(), &len);

        if (msg != NULL && shim_send_agent(msg, len) == DPS_OK) {
            shim.ping_sent = now;
        }
    }
}

/* One message from the agent (lock held). */
static void agent_msg(const void *data, size_t len)
{
    char err[256];
    dps_msg_t msg;
    shim_op_t *op;

    shim.last_heard = dps_now();
    shim.ping_sent = 0;
    if (dps_msg_decode(data, len, &msg, err, sizeof(err)) != DPS_OK) {
        dps_error("malformed message from the agent: %s", err);
    } else if (msg.type == DPS_MSG_STATS) {
        shim.agent_stats[0] = msg.u.stats.cpu_ns;
        shim.agent_stats[1] = msg.u.stats.collectives;
        shim.agent_stats[2] = msg.u.stats.missed_wakeups;
        shim.have_agent_stats = 1;
    } else if (msg.type == DPS_MSG_PONG) {
        /* alive */
    } else if (msg.type != DPS_MSG_COMPLETE) {
        dps_warn("unexpected %s message from the agent",
                 dps_msg_type_str(msg.type));
    } else {
        HASH_FIND(hh_token, shim.by_token, &msg.u.complete.op_token,
                  sizeof(uint64_t), op);
        if (op == NULL) {
            dps_error("completion for unknown operation %llu",
                      (unsigned long long)msg.u.complete.op_token);
            return;
        }
        HASH_DELETE(hh_token, shim.by_token, op);
        if (msg.u.complete.status != DPS_OK) {
            int st = msg.u.complete.status;

            /* Arguments that do not match across ranks, or another
             * rank's erroneous ones: the agent said which; the error goes
             * to the communicator's handler at completion (shim_progress),
             * as MPI would raise it. */
            op->error = (st == DPS_ERR_MISMATCH || st == DPS_ERR_ARG)
                        ? MPI_ERR_TRUNCATE : MPI_ERR_OTHER;
            op->raise = (st == DPS_ERR_MISMATCH || st == DPS_ERR_ARG ||
                         st == DPS_ERR_BUFFER) && !op->call.error;
            if (!op->call.error) {
                dps_error("%s #%u ends with an error: %s%s",
                          dps_coll_str((unsigned)op->call.coll),
                          op->call.seq, dps_status_str(st), op->raise ?
                          " (the agent's message names the ranks and "
                          "sizes)" : "");
            }
        }
        /* Finished here, well or not: never to be redone. */
        dps_debug("%s #%u on communicator %#llx: completed by the agent",
                  dps_coll_str((unsigned)op->call.coll), op->call.seq,
                  (unsigned long long)op->comm->id);
        shim_comm_finished(op->comm, op->call.seq);
        op->finishing = 1;
        op->next_done = shim.done_list;
        shim.done_list = op;
    }
}

void shim_agent_msgs(void)
{
    static uint64_t buf[DPS_SHM_MAX_MSG / sizeof(uint64_t)];
    dps_inmsg_t *m;

    while (shim.shm_on) {
        long n = dps_shm_msg_get(&shim.shm->to_rank, shim.shm->to_rank_buf,
                                 buf, sizeof(buf));

        if (n == 0) {
            break;
        }
        if (n < 0) {
            dps_error("the shared-memory channel from agent %s is corrupt",
                      shim.agent_desc);
            if (shim.fo_why[0] == '\0') {
                snprintf(shim.fo_why, sizeof(shim.fo_why), "agent %s wrote "
                         "a corrupt message ring", shim.agent_desc);
            }
            break;
        }
        agent_msg(buf, (size_t)n);
    }
    while ((m = dps_inbox_pop(&shim.ucx.inbox)) != NULL) {
        agent_msg(m->data, m->len);
        free(m);
    }
}

/* Unlink op from its communicator's list (lock held). */
static void unlink_op(shim_op_t *op)
{
    shim_comm_t *c = op->comm;
    shim_op_t **pp, *prev = NULL;

    for (pp = &c->ops_head; *pp != NULL; pp = &(*pp)->next_in_comm) {
        if (*pp == op) {
            *pp = op->next_in_comm;
            if (c->ops_tail == op) {
                c->ops_tail = prev;
            }
            return;
        }
        prev = *pp;
    }
}

int shim_progress(void)
{
    shim_op_t *done, *op;
    int n = 0;

    if (!shim.active) {
        return 0;
    }
    if (shim.agreeing != NULL) {
        shim_comm_progress();
    }
    pthread_mutex_lock(&shim.lock);
    if (shim.fo_state == SHIM_FO_NONE) {
        /* With the shm channel, UCX carries only what did not fit. */
        double now = shim.shm_on ? dps_now() : 0;

        if (!shim.shm_on || shim.shm_tx_ucx || now >= shim.next_ucx_poll) {
            while (ucp_worker_progress(shim.ucx.worker)) {
            }
            shim.next_ucx_poll = now + SHIM_UCX_POLL_SEC;
        }
        shim_agent_msgs();
        check_agent();
        shim_reg_send_frees();
    }
    pthread_mutex_unlock(&shim.lock);
    shim_fo_progress();
    pthread_mutex_lock(&shim.lock);
    done = shim.done_list;
    shim.done_list = NULL;
    pthread_mutex_unlock(&shim.lock);

    while ((op = done) != NULL) {
        shim_comm_t *c = op->comm;
        MPI_Request r;
        int freed;

        done = op->next_done;
        if (op->call.unpack.from != NULL && op->error == MPI_SUCCESS) {
            op->error = shim_unpack_run(&op->call.unpack);
        }
        shim_call_clear(&op->call);
        if (op->raise && c->comm != MPI_COMM_NULL) {
            /* Fatal by default: the job ends here, as under MPI. */
            PMPI_Comm_call_errhandler(c->comm, op->error);
        }
        pthread_mutex_lock(&shim.lock);
        op_release_memory(op);
        shim_reg_send_frees();
        unlink_op(op);
        op->agent_done = 1;
        shim.live--;
        freed = op->req_freed;
        r = op->req;
        pthread_mutex_unlock(&shim.lock);
        if (freed) {
            free(op);  /* MPI already dropped the request */
        }
        shim_comm_unref(c);
        PMPI_Grequest_complete(r);
        n++;
    }
    return n;
}

int shim_req_pending(const MPI_Request *req)
{
    shim_op_t *op;
    int pending;

    if (shim.live == 0 || *req == MPI_REQUEST_NULL) {
        return 0;
    }
    pthread_mutex_lock(&shim.lock);
    HASH_FIND(hh_req, shim.by_req, req, sizeof(MPI_Request), op);
    pending = (op != NULL && !op->agent_done);
    pthread_mutex_unlock(&shim.lock);
    return pending;
}

int shim_any_pending(void)
{
    return shim.active && (shim.live > 0 || shim.agreeing != NULL ||
                           shim.fo_state == SHIM_FO_COUNTS ||
                           shim.fo_state == SHIM_FO_ENTRIES);
}

void shim_idle(int only_ours)
{
    /* A wait first polls (SHIM_WAIT_SPIN_SEC), running its own DMA
     * engine's commands meanwhile: completions then cost no wake-up.
     * Then it sleeps, so that an agent or engine sharing the core runs at
     * once. Only our requests pending: nothing but the agent can finish
     * them, and it kicks us when it sees rank_sleeping (the timeout is a
     * backstop that also lets the liveness check run). Mixed with MPI's
     * own requests: MPI needs PMPI_Test calls to progress them, so sleep
     * only briefly. */
    static __thread double since, last;
    struct pollfd pfd = {shim.kick_fd, POLLIN, 0};
    double now = dps_now();
    dps_shm_t *s = shim.shm_on ? shim.shm : NULL;
    int n;

    if (shim_engine_help() > 0) {
        last = now;
        return;
    }
    if (now - last > 1e-3) {
        since = now;     /* a new wait */
    }
    last = now;
    if (shim.fo_state != SHIM_FO_NONE) {
        only_ours = 0;   /* stock MPI does the work: keep testing */
    }
    if (now - since < SHIM_WAIT_SPIN_SEC) {
        sched_yield();   /* an agent or engine on this core runs now */
        return;
    }
    if (shim.kick_fd < 0) {
        sched_yield();
        return;
    }
    if (s != NULL) {
        __atomic_store_n(&s->rank_sleeping, 1, __ATOMIC_RELAXED);
        dps_shm_fence();
        /* Queued engine commands are no reason to stay up: if we could
         * not run them (shim_engine_help above), the engine thread has
         * them, and on this core it runs only once we sleep. */
        if (dps_shm_msg_ready(&s->to_rank)) {
            __atomic_store_n(&s->rank_sleeping, 0, __ATOMIC_RELAXED);
            return;
        }
    }
    n = poll(&pfd, 1, only_ours ? 1 : 0);
    if (s != NULL) {
        __atomic_store_n(&s->rank_sleeping, 0, __ATOMIC_RELAXED);
    }
    if (n > 0) {
        dps_kick_drain(shim.kick_fd);
    } else if (!only_ours) {
        usleep(50);
    }
}

void shim_comm_freed(uint64_t comm_id)
{
    size_t len;
    void *msg;

    if (!shim.active) {
        return;
    }
    msg = dps_msg_encode_comm_free(comm_id, (uint32_t)shim.world_rank, &len);
    pthread_mutex_lock(&shim.lock);
    if (msg != NULL && !shim.agent_dead) {
        shim_send_agent(msg, len);
    } else {
        free(msg);
    }
    pthread_mutex_unlock(&shim.lock);
}
