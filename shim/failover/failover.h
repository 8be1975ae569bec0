/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Agent failure, as the layers above it see it (failover/failover.c,
 * failover/take.c). Any rank that sees an agent fail tells every rank
 * (PMPI messages on a private communicator); each then stops its own
 * agent, and all agree, with nonblocking PMPI collectives, which
 * offloaded instances some rank finished. Pending instances no rank
 * finished are redone by stock MPI on a twin of their communicator; the
 * others fail with an error. Later collectives go to stock MPI.
 */
#ifndef SHIM_FAILOVER_H
#define SHIM_FAILOVER_H

#include "shim/core/shim.h"

/* MPI_Init, once offload is on: the private communicators, the first
 * notice receive, and core's hooks (shim_hooks: progress, finished,
 * dropped), which are set even if the rest fails. DPS_OK, or an error:
 * the takeover cannot happen then. */
int shim_fo_init(void);

/* Before a blocking call the takeover cannot reach into: drive a known
 * takeover until this rank's pending collectives run on stock MPI (or
 * the takeover's deadline aborts the job). */
void shim_fo_settle(void);

/* Take in failure notices and drive a takeover (lock not held); cheap
 * while nothing has failed. */
void shim_fo_progress(void);

/* MPI_Finalize, before teardown: every notice sent is received, and a
 * takeover a late one started is agreed. */
void shim_fo_fini(void);

/* After a failure, a new instance seq on c: 1 to run it on stock MPI on
 * *use (c's twin, or c itself) at once, or 0 to queue it (shim_op_start)
 * until it can run, or fail with an error. */
int shim_fo_direct(shim_comm_t *c, uint32_t seq, int coll, MPI_Comm *use);

#endif
