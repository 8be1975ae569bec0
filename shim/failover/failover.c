/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Taking over from a failed agent with stock MPI (failover/failover.h).
 *
 * Every rank learns of the failure: from its own checks (the agent died,
 * or stopped answering pings) or from a notice another rank sent it on
 * fo_ctrl. It then sends its own notice to everyone (once), stops its
 * agent and waits until the agent is gone, so no late write can land in
 * a buffer stock MPI is about to fill. From then on it ignores agents.
 *
 * The ranks then agree, job-wide and with nonblocking collectives on
 * fo_agree, on which instances (seq) of each communicator any rank's
 * agent had finished: an Iallgather of entry counts, an Iallgatherv of
 * entries. A rank's entries for a communicator say "every seq below L"
 * (L: its lowest unfinished one) and "seq s" for each it finished above
 * L (instances finish out of order: a small Ibcast overtakes a large
 * Ialltoall), and "every seq below P may have gone to an agent" (P: its
 * seq at the failure). After it, a rank redoes each of its pending
 * instances that no rank finished with the stock collective on the
 * communicator's twin, in seq order, and fails the others (some rank
 * finished them and will not take part again). A communicator without a
 * twin (made by a call the shim does not see) cannot redo anything: its
 * instances that some rank may have offloaded fail, and later ones run
 * on the communicator itself. A communicator that some rank freed has every
 * instance finished there, so its pending instances elsewhere fail:
 * freed communicators leave a record behind.
 *
 * Posts after the failure wait for the agreement and then go the same
 * way. MPI_Finalize settles the notices: see shim_fo_fini.
 *
 * The takeover needs every rank, and a rank blocked inside the MPI
 * library (a blocking collective, which stays MPI's own call) cannot take
 * part. So it is bounded: a rank whose takeover (agreement, and its
 * collectives pending at the failure ended on stock MPI) is not done
 * DPUSHIM_AGENT_TIMEOUT seconds after it saw the failure aborts the job,
 * naming the failed agent, the ranks that never joined and the
 * collectives it could not recover, as MPI does when a process dies.
 * Before entering a blocking collective a rank that knows of a failure
 * first starts its pending collectives on stock MPI (shim_fo_settle), so
 * ranks waiting for those are not left waiting for it.
 */
#define _GNU_SOURCE
#include "shim/core/shim.h"
#include "shim/data/engine.h"
#include "shim/failover/fo.h"
#include "shim/core/redo.h"
#include "common/dps_log.h"
#include "common/dps_proto.h"
#include "common/dps_status.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One thread at a time drives the takeover; others go on. */
static pthread_mutex_t fo_lock = PTHREAD_MUTEX_INITIALIZER;

int shim_fo_init(void)
{
    MPI_Comm sh[2];

    /* Before anything can fail: core then calls them whenever offload
     * is on, as it called these functions before they were hooks. */
    shim_hooks.progress = shim_fo_progress;
    shim_hooks.finished = fo_comm_finished;
    shim_hooks.dropped = fo_comm_dropped;
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &shim.fo.ctrl) != MPI_SUCCESS ||
        PMPI_Comm_dup(MPI_COMM_WORLD, &shim.fo.agree) != MPI_SUCCESS ||
        PMPI_Comm_dup(MPI_COMM_WORLD, &sh[0]) != MPI_SUCCESS ||
        PMPI_Comm_dup(MPI_COMM_SELF, &sh[1]) != MPI_SUCCESS ||
        shim_comm_state_new(MPI_COMM_WORLD, sh[0]) == NULL ||
        shim_comm_state_new(MPI_COMM_SELF, sh[1]) == NULL) {
        return DPS_ERR_INVALID;
    }
    fo.heard = calloc((size_t)shim.topo.world_size, 1);
    if (fo.heard == NULL) {
        return DPS_ERR_NOMEM;
    }
    PMPI_Irecv(fo.recv_buf, FO_WHY_LEN, MPI_CHAR, MPI_ANY_SOURCE, FO_TAG,
               shim.fo.ctrl, &fo.recv_req);
    return DPS_OK;
}

static void send_notices(void)
{
    int i, n = shim.topo.world_size - 1, k = 0;

    if (fo.sent || fo.quiet || n == 0) {
        return;
    }
    fo.send_reqs = malloc(sizeof(MPI_Request) * (size_t)n);
    fo.send_buf = calloc(1, FO_WHY_LEN);
    if (fo.send_reqs == NULL || fo.send_buf == NULL) {
        /* Untold, the others would wait for us forever. */
        dps_error("out of memory telling the other ranks of an agent "
                  "failure: aborting the job");
        PMPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* What we saw, passed on as it came: "agent pid N died", or "rank R
     * reports: agent pid N died" from the notice that told us. */
    memcpy(fo.send_buf, shim.fo.why, FO_WHY_LEN - 1);
    for (i = 0; i < shim.topo.world_size; i++) {
        if (i != shim.topo.world_rank) {
            PMPI_Isend(fo.send_buf, FO_WHY_LEN, MPI_CHAR, i, FO_TAG,
                       shim.fo.ctrl, &fo.send_reqs[k++]);
        }
    }
    fo.sent = 1;
}

/* A failure seen here or told of (shim_fo_noticed; shim.fo.why says
 * which): tell the others, stop our agent, and begin the agreement. */
static void fo_start(void)
{
    const char  *why = shim.fo.why;
    shim_comm_t *c;

    if (shim.fo.state != SHIM_FO_NONE || !shim.active) {
        return;
    }
    fo.started = dps_now();
    send_notices();
    shim_chan_stop_agent(1);
    /* The agent is gone: no command is left to give, and none must run
     * once stock MPI starts writing into the same buffers; nor may an
     * agent's emulated put land (the progress thread's last progress is
     * over when this returns; from here the worker moves below, once). */
    shim_engine_stop();
    shim_prog_stop();

    pthread_mutex_lock(&shim.lock);
    shim_chan_fail();
    shim.fo.state = SHIM_FO_COUNTS;
    /* Said once by each rank that saw it; the others follow quietly. */
    if (fo.received > 0) {
        dps_info("%s: offload is off", why);
    } else {
        dps_error("%s: offload is off; pending collectives (%u) are "
                  "redone by stock MPI or fail, later ones run on stock "
                  "MPI",
                  why, shim.live);
    }
    {
        int cap = 0;

        for (c = shim.comms; c != NULL; c = c->next_all) {
            fo_comm_entries(c, &fo.mine, &fo.nmine, &cap);
        }
        for (int i = 0; i < fo.nfreed; i++) {
            *fo_entry_add(&fo.mine, &fo.nmine, &cap) = fo.freed[i];
        }
    }
    fo.counts = malloc(sizeof(int) * (size_t)shim.topo.world_size);
    fo.displs = malloc(sizeof(int) * (size_t)shim.topo.world_size);
    if (fo.counts == NULL || fo.displs == NULL) {
        pthread_mutex_unlock(&shim.lock);
        dps_error("out of memory: aborting the job");
        PMPI_Abort(MPI_COMM_WORLD, 1);
        return;
    }
    pthread_mutex_unlock(&shim.lock);
    PMPI_Iallgather(&fo.nmine, 1, MPI_INT, fo.counts, 1, MPI_INT,
                    shim.fo.agree, &fo.req);
}

static void agree_step(void)
{
    int flag = 0, i, total = 0;

    if (fo.req == MPI_REQUEST_NULL) {
        return;
    }
    PMPI_Test(&fo.req, &flag, MPI_STATUS_IGNORE);
    if (!flag) {
        return;
    }
    if (shim.fo.state == SHIM_FO_COUNTS) {
        for (i = 0; i < shim.topo.world_size; i++) {
            fo.displs[i] = 3 * total;
            total += fo.counts[i];
            fo.counts[i] *= 3;
        }
        fo.all = malloc(sizeof(fo_entry_t) * (size_t)(total + 1));
        if (fo.all == NULL) {
            dps_error("out of memory: aborting the job");
            PMPI_Abort(MPI_COMM_WORLD, 1);
        }
        fo.nall = total;
        shim.fo.state = SHIM_FO_ENTRIES;
        PMPI_Iallgatherv(fo.mine, 3 * fo.nmine, MPI_UINT64_T, fo.all,
                         fo.counts, fo.displs, MPI_UINT64_T, shim.fo.agree,
                         &fo.req);
        return;
    }
    qsort(fo.all, (size_t)fo.nall, sizeof(fo_entry_t), fo_entry_cmp);
    for (i = 0; i < fo.nall && dps_log_level >= DPS_LOG_DEBUG; i++) {
        static const char *kind[] = {"finished", "finished below",
                                     "posted below"};

        dps_debug("agreed: communicator %#llx: %s %llu",
                  (unsigned long long)fo.all[i].id,
                  fo.all[i].kind < 3 ? kind[fo.all[i].kind] : "?",
                  (unsigned long long)fo.all[i].seq);
    }
    shim.fo.state = SHIM_FO_DECIDED;
    dps_info("stock MPI takes over, %.3f s after the failure was seen",
             dps_now() - fo.started);
}

/* A notice came in (fo.recv_st: its sender, fo.recv_buf: what it saw);
 * post the receive for the next of the expected ones. */
static void notice_taken(int expected)
{
    int from = fo.recv_st.MPI_SOURCE;

    fo.received++;
    if (from >= 0 && from < shim.topo.world_size) {
        fo.heard[from] = 1;
    }
    fo.recv_buf[FO_WHY_LEN - 1] = '\0';
    if (shim.fo.state == SHIM_FO_NONE) {
        shim_fo_notice(SHIM_FO_REPORTED, "rank %d reports: %.600s", from,
                       strncmp(fo.recv_buf, "rank ", 5) == 0
                           ? strstr(fo.recv_buf, ": ")
                                 ? strstr(fo.recv_buf, ": ") + 2
                                 : fo.recv_buf
                           : fo.recv_buf);
    }
    fo.recv_req = MPI_REQUEST_NULL;
    if (fo.received < expected) {
        PMPI_Irecv(fo.recv_buf, FO_WHY_LEN, MPI_CHAR, MPI_ANY_SOURCE, FO_TAG,
                   shim.fo.ctrl, &fo.recv_req);
    }
}

static void poll_notices(void)
{
    int flag = 0;

    while (fo.recv_req != MPI_REQUEST_NULL) {
        PMPI_Test(&fo.recv_req, &flag, &fo.recv_st);
        if (!flag) {
            break;
        }
        notice_taken(shim.topo.world_size - 1);
    }
}

void shim_fo_progress(void)
{
    /* Every watched MPI call comes here: while nothing has failed, look
     * for notices only every FO_POLL_SEC, at the cost of a clock read. */
    if (shim.fo.state == SHIM_FO_NONE &&
        shim_fo_noticed() == SHIM_FO_NO_CAUSE) {
        double now = dps_now();

        if (now < fo.next_poll) {
            return;
        }
        fo.next_poll = now + FO_POLL_SEC;
    }
    if (shim.fo.ctrl == MPI_COMM_NULL || pthread_mutex_trylock(&fo_lock)) {
        return;
    }
    poll_notices();
    if (shim.fo.state == SHIM_FO_NONE &&
        shim_fo_noticed() != SHIM_FO_NO_CAUSE) {
        fo_start();
    }
    if (shim.fo.state == SHIM_FO_COUNTS || shim.fo.state == SHIM_FO_ENTRIES) {
        agree_step();
    }
    if (shim.fo.state == SHIM_FO_DECIDED) {
        fo_drive_ops();
    }
    if (shim.fo.state != SHIM_FO_NONE && !fo.settled &&
        dps_now() > fo.started + shim.cfg.agent_timeout) {
        fo_give_up();
    }
    pthread_mutex_unlock(&fo_lock);
}

void shim_fo_settle(void)
{
    if (shim_in_call || !shim.active) {
        return;
    }
    shim_in_call++;
    for (;;) {
        if (shim.agreeing != NULL) {
            shim_comm_progress();
        }
        shim_fo_progress(); /* gives up at the takeover's deadline */
        if (shim.fo.state == SHIM_FO_DECIDED && fo.all_started) {
            break;
        }
        if (shim.fo.state == SHIM_FO_NONE &&
            shim_fo_noticed() == SHIM_FO_NO_CAUSE) {
            break; /* nothing known here after all */
        }
        usleep(20);
    }
    shim_in_call--;
}

/*
 * MPI_Finalize, after this rank's collectives are done. A notice may
 * still be on its way to any rank, and each must be received. First an
 * Ibarrier (taking notices meanwhile; failures seen before it are acted
 * on); after it nobody sends a notice any more. Then the number of
 * senders, summed: each rank receives that many notices minus its own,
 * and finishes the agreement if a notice made it start one late.
 */
void shim_fo_fini(void)
{
    MPI_Request bar;
    int         flag = 0, senders = 0;

    if (shim.fo.ctrl == MPI_COMM_NULL) {
        return;
    }
    PMPI_Ibarrier(shim.fo.ctrl, &bar);
    while (!flag) {
        shim_fo_progress();
        PMPI_Test(&bar, &flag, MPI_STATUS_IGNORE);
        if (!flag) {
            usleep(100);
        }
    }
    fo.quiet = 1;
    PMPI_Allreduce(&fo.sent, &senders, 1, MPI_INT, MPI_SUM, shim.fo.ctrl);
    while (fo.received < senders - fo.sent) {
        PMPI_Wait(&fo.recv_req, &fo.recv_st);
        notice_taken(senders - fo.sent);
    }
    if (fo.recv_req != MPI_REQUEST_NULL) {
        PMPI_Cancel(&fo.recv_req);
        PMPI_Wait(&fo.recv_req, MPI_STATUS_IGNORE);
    }
    if (shim.fo.state == SHIM_FO_NONE &&
        shim_fo_noticed() != SHIM_FO_NO_CAUSE) {
        fo_start();
    }
    while (shim.fo.state == SHIM_FO_COUNTS ||
           shim.fo.state == SHIM_FO_ENTRIES) {
        agree_step();
        usleep(100);
    }
    for (int i = 0; fo.sent && i < shim.topo.world_size - 1; i++) {
        PMPI_Wait(&fo.send_reqs[i], MPI_STATUS_IGNORE);
    }
    free(fo.send_reqs);
    free(fo.send_buf);
    free(fo.heard);
    free(fo.mine);
    free(fo.all);
    free(fo.counts);
    free(fo.displs);
    free(fo.freed);
    fo.freed = NULL;
    fo.nfreed = fo.freed_cap = 0;
    PMPI_Comm_free(&shim.fo.ctrl);
    PMPI_Comm_free(&shim.fo.agree);
}

/* Wait until the takeover is agreed and c's id known (progressing both);
 * bounded: shim_fo_progress gives up at the takeover's deadline. */
static void wait_decided(shim_comm_t *c)
{
    while (!fo_comm_ready(c)) {
        if (shim.agreeing != NULL) {
            shim_comm_progress();
        }
        shim_fo_progress();
        if (!fo_comm_ready(c)) {
            usleep(20);
        }
    }
}

/*
 * A collective posted after the failure. Every rank must take the same
 * path for a given (communicator, seq), whatever it had pending: below
 * the highest seq any rank had posted when it saw the failure, some rank
 * may be redoing it from its schedule (or failing it), so it goes the
 * same way here (0: queued, shim_op_start); from there on no rank gave
 * it to an agent and every rank posts it after the agreement: stock
 * MPI's own collective, on the twin (1, *use).
 */
int shim_fo_direct(shim_comm_t *c, uint32_t seq, int coll, MPI_Comm *use)
{
    int direct;

    wait_decided(c);
    pthread_mutex_lock(&shim.lock);
    direct =
        seq >= fo_posted_max(c->id) && fo_stock_comm(c, seq, coll, use, 1);
    if (direct) {
        shim.stat.coll[coll][SHIM_STAT_AFTER]++;
    }
    pthread_mutex_unlock(&shim.lock);
    return direct;
}
