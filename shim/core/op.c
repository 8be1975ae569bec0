/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Offloaded operations: registration, the POST to the agent, generalized
 * requests, and turning the agent's COMPLETE messages into completed MPI
 * requests. MPI calls are never made with shim.lock held (MPI may call our
 * generalized-request callbacks, which take it).
 */
#define _GNU_SOURCE
#include "shim/core/shim.h"
#include "shim/data/engine.h"
#include "shim/data/reg.h"
#include "shim/core/redo.h"
#include "shim/core/sched.h"
#include "shim/data/call.h"
#include "common/dps_log.h"
#include "common/dps_proto.h"
#include "common/dps_status.h"

#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SHIM_UCX_POLL_SEC    200e-6 /* UCX polling with the shm channel on */
#define SHIM_WAIT_SPIN_SEC   50e-6  /* a wait polls this long, then sleeps */
/* a wait on a remote agent's COMPLETE sleeps on the worker at most this
 * long: the liveness check runs */
#define SHIM_REMOTE_SLEEP_MS 10
#define SHIM_POKE_MAX_BYTES  (256u * 1024) /* see op_send */
#define SHIM_APP_GAP_SEC     200e-6        /* a polling loop's longest step */

/* An application thread polls in MPI and will be back within `away`
 * seconds (it sleeps that long in shim_idle) and SHIM_APP_GAP_SEC: until
 * then the progress thread leaves the worker to it. Measured (1 MiB
 * Ialltoall over UCX, 2 ranks on 2 cores): a progress thread working
 * beside a rank that waits in MPI made the wait 1.3-4x longer. */
static void app_busy(double now, double away)
{
    double until = now + away + SHIM_APP_GAP_SEC;

    __atomic_store(&shim.chan.app_until, &until, __ATOMIC_RELAXED);
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

/*
 * MPI leaves the source and tag of a finished collective's status
 * undefined. Open MPI's own collectives say 0 and 0, and so does the
 * shim's there; MPICH 4.0's carry what its last internal message left
 * (a source, a tag, a count that change from call to call), no value to
 * copy: MPI_UNDEFINED.
 */
#if defined(OPEN_MPI) && OPEN_MPI
#define COLL_SOURCE 0
#define COLL_TAG    0
#else
#define COLL_SOURCE MPI_UNDEFINED
#define COLL_TAG    MPI_UNDEFINED
#endif

static int query_fn(void *extra, MPI_Status *status)
{
    shim_op_t *op = extra;

    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = COLL_SOURCE;
    status->MPI_TAG = COLL_TAG;
    status->MPI_ERROR = shim_mpi_error(op->status);
    return status->MPI_ERROR;
}

static int free_fn(void *extra)
{
    shim_op_t *op = extra;
    int        release;

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

/* A start of a persistent request that some rank's *_init could not
 * make (MPI refused its arguments there): that rank never starts it, so
 * it ends here with an error, raised as for a mismatch (lock held). */
static void op_refused(shim_op_t *op)
{
    dps_error("%s #%u ends with an error: another rank's call that "
              "initialised this persistent request was refused by MPI",
              dps_coll_short(op->call.stat), op->call.seq);
    op->raise = !op->call.error;
    HASH_DELETE(hh_token, shim.by_token, op); /* no agent answers it */
    if (shim_hooks.finished != NULL) {
        shim_hooks.finished(op->comm, op->call.seq);
    }
    shim_op_done(op, DPS_ERR_TRUNCATE);
}

/* Send op's POST (its communicator id is known). Called with the lock. */
static void op_send(shim_op_t *op)
{
    shim_comm_t       *c = op->comm;
    shim_sched_t      *sc = op->sched;
    const shim_call_t *k = &op->call;
    const void        *key[DPS_NBUF];
    void              *base[DPS_NBUF] = {k->buf[0], k->buf[1], op->tmp};
    dps_msg_post_t     f;
    size_t             len = 0;
    void              *msg;
    int                b;

    memset(&f, 0, sizeof(f));
    f.comm_id = c->id;
    f.op_token = op->token;
    f.sched_id = sc != NULL ? sc->id : 0;
    f.seq = k->seq;
    f.coll = (uint32_t)k->coll;
    f.comm_rank = (uint32_t)c->rank;
    f.comm_size = (uint32_t)c->size;
    f.world_rank = (uint32_t)shim.topo.world_rank;
    f.error = k->error;
    /* A key goes to the agent with the first post that uses it; later
     * posts name the registration by its id alone. Likewise the steps. */
    for (b = 0; b < DPS_NBUF; b++) {
        shim_reg_t *r = op->reg[b];

        f.buf_addr[b] = (uint64_t)(uintptr_t)base[b];
        f.buf_len[b] =
            b < 2 ? k->len[b] : (sc != NULL ? sc->need[DPS_BUF_TMP] : 0);
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
    if (msg != NULL && shim.chan.agent_dead) {
        free(msg);
        msg = NULL;
    }
    /* shim_send_agent takes msg, whether it sends it or not. */
    if (msg != NULL && shim_send_agent(msg, len) == DPS_OK) {
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
    /* The agent is gone: stock MPI takes the op over (failover/failover.c). */
    shim_fo_notice(SHIM_FO_POST_FAILED, "cannot hand a collective to agent %s",
                   shim.chan.agent_desc);
}

/* op's TMP buffer and the registrations of its buffers, taken under the
 * lock: DPS_OK, or an error (what was taken is op_release_memory's).
 * stock: after an agent failure, when nothing is registered. */
static int op_buffers(shim_op_t *op, int stock)
{
    shim_sched_t *sc = op->sched;
    int           rc = DPS_OK, b;

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
        uint64_t    n = b < 2 ? op->call.len[b] : sc->need[DPS_BUF_TMP];

        if (b == DPS_BUF_SEND && op->call.gather != NULL) {
            continue; /* read in place through its map: no key */
        }
        if (p != NULL && n > 0 && shim_reg_get(p, n, &op->reg[b]) != 0) {
            rc = DPS_ERR_UCX;
        }
    }
    pthread_mutex_unlock(&shim.lock);
    return rc;
}

/* A started op (its request made) becomes live on c, in seq order, and
 * goes to the agent: now, or once c's id is agreed; after an agent
 * failure (stock), the takeover starts it instead. Lock held. */
static void op_enlist(shim_op_t *op, shim_comm_t *c, int stock)
{
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
    if (stock) {
        /* Started by the takeover (failover/), after the agreement. */
    } else if (c->id_known) {
        HASH_ADD(hh_token, shim.by_token, token, sizeof(op->token), op);
        if (c->refused) {
            op_refused(op);
        } else {
            op_send(op);
        }
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
}

dps_status_t shim_op_redo(shim_op_t *op, MPI_Comm comm, int tag)
{
    op->redo = shim_redo_start(op, comm, tag);
    return op->redo != NULL ? DPS_OK : DPS_ERR_MPI;
}

dps_status_t shim_op_start(shim_comm_t *c, shim_call_t *k, shim_sched_t *sc,
                           MPI_Request *req)
{
    shim_op_t   *op;
    dps_status_t rc;
    int          stock = (shim.fo.state != SHIM_FO_NONE);

    op = calloc(1, sizeof(*op));
    if (op == NULL) {
        pthread_mutex_lock(&shim.lock);
        shim_sched_put(sc);
        pthread_mutex_unlock(&shim.lock);
        shim_call_clear(k);
        return DPS_ERR_NOMEM;
    }
    op->call = *k;
    memset(k, 0, sizeof(*k)); /* the op owns what the call owned */
    op->comm = c;
    op->sched = sc;
    op->after = stock;
    rc = op_buffers(op, stock);
    if (rc == DPS_OK && PMPI_Grequest_start(query_fn, free_fn, cancel_fn, op,
                                            &op->req) != MPI_SUCCESS) {
        rc = DPS_ERR_MPI;
    }
    if (rc != DPS_OK) {
        pthread_mutex_lock(&shim.lock);
        op_release_memory(op);
        pthread_mutex_unlock(&shim.lock);
        shim_call_clear(&op->call);
        free(op);
        dps_error("cannot offload a collective: %s%s", dps_status_str(rc),
                  rc == DPS_ERR_MPI ? " (MPI_Grequest_start)" : "");
        return rc;
    }
    pthread_mutex_lock(&shim.lock);
    op_enlist(op, c, stock);
    *req = op->req;
    pthread_mutex_unlock(&shim.lock);
    return DPS_OK;
}

void shim_comm_progress(void)
{
    shim_comm_t **cp, *c, *agreed = NULL;
    shim_op_t    *op;

    /* PMPI_Test on the id broadcast never calls back into the shim. */
    pthread_mutex_lock(&shim.agree_lock);
    for (cp = &shim.agreeing; (c = *cp) != NULL;) {
        int flag = 0;

        shim_busy_req = &c->id_req;
        PMPI_Test(&c->id_req, &flag, MPI_STATUS_IGNORE);
        shim_busy_req = NULL;
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
        if (c->parent != NULL) {
            c->id_buf = c->agree[0];
            c->refused = c->agree[1] != 0;
        }
        c->id = c->id_buf;
        c->id_known = 1;
        while ((op = c->wait_head) != NULL) {
            c->wait_head = op->next_wait;
            if (c->refused) {
                op_refused(op);
            } else if (shim.fo.state == SHIM_FO_NONE) {
                op_send(op);
            } /* else stock MPI takes it over */
        }
        c->wait_tail = NULL;
        pthread_mutex_unlock(&shim.lock);
        if (c->freed || c->agree_ref) {
            /* MPI freed the communicator while we agreed on its id, or
             * the agreement held a stream's state. */
            c->agree_ref = 0;
            shim_comm_unref(c);
        }
    }
}

/* Unlink op from its communicator's list (lock held). */
static void unlink_op(shim_op_t *op)
{
    shim_comm_t *c = op->comm;
    shim_op_t  **pp, *prev = NULL;

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
    int        n = 0;

    if (!shim.active) {
        return 0;
    }
    if (shim.agreeing != NULL) {
        shim_comm_progress();
    }
    pthread_mutex_lock(&shim.lock);
    if (shim.fo.state == SHIM_FO_NONE) {
        /* With the shm channel, UCX carries only what did not fit. */
        double now = dps_now();

        /* We are in MPI and poll the worker: the progress thread keeps
         * out of the way (core/progress.c). */
        app_busy(now, 0);
        if (!shim.chan.shm_on || shim.chan.shm_tx_ucx ||
            now >= shim.chan.next_ucx_poll) {
            while (ucp_worker_progress(shim.chan.ucx.worker)) {
            }
            shim.chan.next_ucx_poll = now + SHIM_UCX_POLL_SEC;
        }
        shim_agent_msgs();
        shim_agent_check();
        shim_reg_send_frees();
    }
    pthread_mutex_unlock(&shim.lock);
    if (shim_hooks.progress != NULL) {
        shim_hooks.progress(); /* the takeover: notices, stock MPI */
    }
    pthread_mutex_lock(&shim.lock);
    done = shim.done_list;
    shim.done_list = NULL;
    pthread_mutex_unlock(&shim.lock);

    while ((op = done) != NULL) {
        shim_comm_t *c = op->comm;
        MPI_Request  r;
        int          freed;

        done = op->next_done;
        if (op->call.unpack.from != NULL && op->status == DPS_OK) {
            op->status = shim_unpack_run(&op->call.unpack);
        }
        shim_call_clear(&op->call);
        if (op->raise && c->comm != MPI_COMM_NULL) {
            /* Fatal by default: the job ends here, as under MPI. */
            PMPI_Comm_call_errhandler(c->comm, shim_mpi_error(op->status));
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
            free(op); /* MPI already dropped the request */
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
    int        pending;

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
                           shim.fo.state == SHIM_FO_COUNTS ||
                           shim.fo.state == SHIM_FO_ENTRIES);
}

/*
 * A wait on our requests alone, whose agent talks to us over UCX (no
 * shared-memory channel: an agent on a DPU or another host). Its
 * COMPLETE arrives on the worker: sleep on the worker's event descriptor
 * (and our kick socket) rather than waking every millisecond, so that a
 * rank waiting for a long collective costs its host next to no CPU.
 * Returns 0 if events were already there (the caller progresses now).
 */
static int idle_on_worker(double now)
{
    struct pollfd pfd[2] = {{shim.chan.ucx.efd, POLLIN, 0},
                            {shim.chan.kick_fd, POLLIN, 0}};
    ucs_status_t  st;

    pthread_mutex_lock(&shim.lock);
    while (ucp_worker_progress(shim.chan.ucx.worker) != 0) {
    }
    st = shim.chan.ucx.inbox.head != NULL
             ? UCS_ERR_BUSY
             : ucp_worker_arm(shim.chan.ucx.worker);
    pthread_mutex_unlock(&shim.lock);
    if (st != UCS_OK) {
        return 0;
    }
    /* The progress thread keeps aside meanwhile: we watch the worker. */
    app_busy(now, SHIM_REMOTE_SLEEP_MS * 1e-3);
    if (poll(pfd, shim.chan.kick_fd >= 0 ? 2 : 1, SHIM_REMOTE_SLEEP_MS) > 0 &&
        (pfd[1].revents & POLLIN)) {
        dps_kick_drain(shim.chan.kick_fd);
    }
    return 1;
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
    struct pollfd          pfd = {shim.chan.kick_fd, POLLIN, 0};
    double                 now = dps_now();
    dps_shm_t             *s = shim.chan.shm_on ? shim.chan.shm : NULL;
    int                    n;

    if (shim_engine_help() > 0) {
        last = now;
        return;
    }
    if (now - last > 1e-3) {
        since = now; /* a new wait */
    }
    last = now;
    if (shim.fo.state != SHIM_FO_NONE) {
        only_ours = 0; /* stock MPI does the work: keep testing */
    }
    /* A remote agent's COMPLETE comes over the network: no use
     * polling for it, sleep at once. */
    if (s == NULL && only_ours && shim.chan.ucx.efd >= 0 &&
        !shim.chan.agent_dead && idle_on_worker(now)) {
        return;
    }
    if (now - since < SHIM_WAIT_SPIN_SEC) {
        sched_yield(); /* an agent or engine on this core runs now */
        return;
    }
    if (shim.chan.kick_fd < 0) {
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
    app_busy(now, only_ours ? 1e-3 : 50e-6);
    n = poll(&pfd, 1, only_ours ? 1 : 0);
    if (s != NULL) {
        __atomic_store_n(&s->rank_sleeping, 0, __ATOMIC_RELAXED);
    }
    if (n > 0) {
        dps_kick_drain(shim.chan.kick_fd);
    } else if (!only_ours) {
        usleep(50);
    }
}
