/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stock MPI running a schedule (core/redo.c): after an agent failure, an
 * offloaded collective no rank finished is redone from its start with
 * PMPI point-to-point calls on its communicator's twin. Schedules write a
 * region before they read it (compile/build.h), so what an agent did before it
 * failed does not matter.
 */
#ifndef SHIM_REDO_H
#define SHIM_REDO_H

#include "shim/core/shim.h"

typedef struct shim_redo shim_redo_t;

/* Start op's schedule on comm with tag: its first round is posted. NULL
 * when out of memory or MPI refuses (logged). */
shim_redo_t *shim_redo_start(const shim_op_t *op, MPI_Comm comm, int tag);

/* Progress it: DPS_OK with *done set when every round has run; or
 * DPS_ERR_NOMEM, DPS_ERR_OP (a reduction failed), DPS_ERR_MPI (an MPI
 * call failed, logged) or DPS_ERR_PROTO (a step no schedule has). */
dps_status_t shim_redo_test(shim_redo_t *r, int *done);

/* Free it; requests still out are cancelled first. NULL is fine. */
void shim_redo_free(shim_redo_t *r);

#endif
