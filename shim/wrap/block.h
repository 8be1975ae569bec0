/* SPDX-License-Identifier: BSD-3-Clause */
/* Blocking calls watching for agent failures (wrap/block.c), as the
 * completion calls (wrap/wait.c) use them. */
#ifndef SHIM_BLOCK_H
#define SHIM_BLOCK_H

#include <mpi.h>

/* Do blocking calls watch for failures now (offload on, no takeover
 * decided, not re-entered)? */
int shim_watching(void);

/* Wait for req, which is not ours, watching for failures when that is
 * on (else PMPI_Wait). */
int shim_watch_wait(MPI_Request *req, MPI_Status *status);

#endif
