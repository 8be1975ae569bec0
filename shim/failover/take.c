/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * After the agreement (failover/failover.c): each pending collective is
 * redone on stock MPI, on its communicator's twin, in seq order, or
 * fails when a rank finished it on an agent; and, when the takeover does
 * not end in time, the job is aborted with the reasons spelt out.
 */
#define _GNU_SOURCE
#include "shim/core/shim.h"
#include "shim/data/engine.h"
#include "shim/data/flat.h"
#include "shim/failover/fo.h"
#include "shim/core/redo.h"
#include "common/dps_log.h"
#include "common/dps_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int fo_stock_comm(shim_comm_t *c, uint32_t seq, int coll, MPI_Comm *use,
                  int quiet)
{
    const char *why = NULL;

    if (fo_agreed(c->id, seq, 1)) {
        why = "a rank finished it on an agent before the failure, so "
              "stock MPI cannot redo it";
    } else if (shim_comm_twin(c) != MPI_COMM_NULL) {
        *use = shim_comm_twin(c);
        return 1;
    } else if (fo_agreed(c->id, seq, 0)) {
        why = "it may have gone to an agent, and the communicator was made "
              "by a call the shim does not see (no twin to redo it on)";
    } else if (c->comm != MPI_COMM_NULL) {
        *use = c->comm; /* no rank offloaded it: the communicator's own */
        return 1;
    } else {
        why = "its communicator is freed";
    }
    if (quiet) {
        return 0;
    }
    dps_error("collective %u on communicator %#llx fails: %s", seq,
              (unsigned long long)c->id, why);
    shim.stat.coll[coll][SHIM_STAT_FAILED]++;
    return 0;
}

/* Send data left unpacked for the engines: stock MPI's redo sends from
 * a packed copy. DPS_OK, or DPS_ERR_NOMEM (logged). */
static int pack_gathered(shim_call_t *k)
{
    char *out = malloc(k->len[0] + 1);

    if (out == NULL) {
        dps_error("out of memory packing send data for stock MPI");
        return DPS_ERR_NOMEM;
    }
    k->gather->base = out;
    shim_scatter_copy(k->gather, 0, k->len[0], 0);
    k->owned = out;
    k->buf[0] = out;
    return DPS_OK;
}

/* The tag of a redo on the twin: distinct for the instances that can be
 * redone at once (the communicator's pending ones, and one of each
 * persistent request's stream). MPI's tags reach at least 32767. */
static int redo_tag(const shim_comm_t *c, uint32_t seq)
{
    return c->stream == 0 ? (int)(seq % 16384u)
                          : 16384 + (int)((c->stream - 1) % 16383u);
}

/* Start op on stock MPI (lock held): its schedule, run with PMPI
 * point-to-point on the twin of its communicator. DPS_OK, or why not:
 * DPS_ERR_ARG (this rank's own arguments were wrong), DPS_ERR_UNSUPP
 * (stock MPI cannot redo it: fo_stock_comm says why), DPS_ERR_NOMEM,
 * DPS_ERR_MPI (stock MPI cannot start it). */
static dps_status_t take_one(shim_op_t *op)
{
    shim_comm_t *c = op->comm;
    int          coll = op->call.stat;
    MPI_Comm     use;
    dps_status_t rc;

    op->fo.taken = 1;
    if (op->call.error) {
        return DPS_ERR_ARG; /* this rank's own arguments were wrong */
    }
    if (!fo_stock_comm(c, op->call.seq, coll, &use, 0)) {
        return DPS_ERR_UNSUPP;
    }
    if (use != shim_comm_twin(c)) {
        /* Point-to-point on the application's communicator could meet
         * its own receives: only a twin is safe. */
        dps_error("%s #%u on communicator %#llx fails: the communicator "
                  "was made by a call the shim does not see (no twin to "
                  "redo it on)",
                  dps_coll_short(coll), op->call.seq,
                  (unsigned long long)c->id);
        rc = DPS_ERR_UNSUPP;
        goto failed;
    }
    if (op->call.gather != NULL && pack_gathered(&op->call) != DPS_OK) {
        rc = DPS_ERR_NOMEM;
        goto failed;
    }
    if (op->call.unpack.scat != NULL) {
        /* The redo receives every byte into staging again: unpack all. */
        shim_engine_scatter_remove(op->call.unpack.scat);
        op->call.unpack.scat->ndone = 0;
    }
    rc = shim_op_redo(op, use, redo_tag(c, op->call.seq));
    if (rc != DPS_OK) {
        goto failed;
    }
    shim.stat.coll[coll][op->after ? SHIM_STAT_AFTER : SHIM_STAT_REDONE]++;
    dps_debug("%s #%u on communicator %#llx: %s on stock MPI",
              dps_coll_short(coll), op->call.seq, (unsigned long long)c->id,
              op->after ? "run" : "redone");
    return DPS_OK;
failed:
    shim.stat.coll[coll][SHIM_STAT_FAILED]++;
    return rc;
}

/* Start what waits for stock MPI, reap what stock MPI finished; note
 * whether the ops pending at the failure are all started, or all ended. */
void fo_drive_ops(void)
{
    int          unstarted = 0, unended = 0;
    shim_comm_t *c;
    shim_op_t   *op;

    pthread_mutex_lock(&shim.lock);
    for (c = shim.comms; c != NULL; c = c->next_all) {
        int ready = -1;

        for (op = c->ops_head; op != NULL; op = op->next_in_comm) {
            if (op->finishing) {
                continue;
            }
            if (!op->fo.taken) {
                dps_status_t rc;

                if (ready < 0) {
                    ready = fo_comm_ready(c);
                }
                if (!ready) {
                    break; /* in seq order: later ones wait too */
                }
                rc = take_one(op);
                if (rc != DPS_OK) {
                    shim_op_done(op, rc);
                }
                continue;
            }
            if (op->redo != NULL) {
                int          done = 0;
                dps_status_t rc = shim_redo_test(op->redo, &done);

                if (rc != DPS_OK || done) {
                    shim_op_done(op, rc);
                }
            }
        }
        for (op = c->ops_head; op != NULL; op = op->next_in_comm) {
            if (!op->after && !op->finishing) {
                unended++;
                unstarted += !op->fo.taken;
            }
        }
    }
    fo.all_started = (unstarted == 0);
    fo.settled = (unended == 0);
    pthread_mutex_unlock(&shim.lock);
}

/* "ranks 1, 3" (at most a few named), for messages. */
static void ranks_text(char *buf, size_t len, const unsigned char *in,
                       int want)
{
    size_t o = 0;
    int    i, n = 0;

    buf[0] = '\0';
    for (i = 0; i < shim.topo.world_size && o < len; i++) {
        if (i == shim.topo.world_rank || (in[i] != 0) != want) {
            continue;
        }
        if (++n <= 8) {
            o += (size_t)snprintf(buf + o, len - o, "%s%d", n == 1 ? "" : ", ",
                                  i);
        }
    }
    if (n > 8 && o < len) {
        snprintf(buf + o, len - o, " and %d more", n - 8);
    }
}

/* "ialltoall #3 on communicator 0x1 (4194304 bytes sent), ..." for
 * the ops pending at the failure that have not ended here (lock held). */
static void pending_text(char *buf, size_t len)
{
    size_t       o = 0;
    shim_comm_t *c;
    shim_op_t   *op;
    int          n = 0;

    buf[0] = '\0';
    for (c = shim.comms; c != NULL; c = c->next_all) {
        for (op = c->ops_head; op != NULL; op = op->next_in_comm) {
            if (op->after || op->finishing || o >= len) {
                continue;
            }
            char cname[40];

            if (c->id == SHIM_WORLD_ID) {
                snprintf(cname, sizeof(cname), "MPI_COMM_WORLD");
            } else {
                snprintf(cname, sizeof(cname), "communicator %#llx",
                         (unsigned long long)c->id);
            }
            n++;
            o += (size_t)snprintf(
                buf + o, len - o, "%s%s #%u on %s (%llu bytes sent)%s",
                n == 1 ? "" : ", ", dps_coll_short(op->call.stat),
                op->call.seq, cname, (unsigned long long)op->call.len[0],
                op->fo.taken ? ", started on stock MPI" : "");
        }
    }
    if (n == 0) {
        snprintf(buf, len, "none on this rank");
    }
}

/*
 * The takeover could not finish in time: some rank cannot take part
 * (blocked in an MPI call the shim does not see into, or not calling
 * MPI). Say what failed and what is lost, then abort the job, as MPI
 * itself does when a process dies.
 */
void fo_give_up(void)
{
    char who[160], what[600], why[700];

    ranks_text(who, sizeof(who), fo.heard, 0);
    pthread_mutex_lock(&shim.lock);
    pending_text(what, sizeof(what));
    pthread_mutex_unlock(&shim.lock);
    if (shim.fo.state != SHIM_FO_DECIDED && who[0] == '\0') {
        snprintf(why, sizeof(why),
                 "every rank joined it, but they did not agree in time on "
                 "what to redo (ranks starved of CPU, or one blocked in an "
                 "MPI call such as a blocking collective)");
    } else if (shim.fo.state != SHIM_FO_DECIDED) {
        snprintf(why, sizeof(why),
                 "rank%s %s never joined it (blocked in "
                 "an MPI call such as a blocking collective, or not "
                 "calling MPI)",
                 strchr(who, ',') ? "s" : "", who);
    } else {
        snprintf(why, sizeof(why),
                 "the collectives it redoes on stock "
                 "MPI did not end: a rank they need has not started them "
                 "(blocked in an MPI call such as a blocking collective, "
                 "or not calling MPI)");
    }
    dps_error("%s; stock MPI could not take over within %u s "
              "(DPUSHIM_AGENT_TIMEOUT): %s. Collectives that cannot be "
              "recovered: %s. Aborting the job",
              shim.fo.why, shim.cfg.agent_timeout, why, what);
    fflush(stderr);
    usleep(300000); /* let the launcher forward it (Hydra drops it) */
    PMPI_Abort(MPI_COMM_WORLD, 1);
}
