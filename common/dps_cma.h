/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Proof that an agent reaches a rank's memory with CMA
 * (process_vm_readv/writev on the rank's pid). A shared node name is no
 * such proof: an agent on a BlueField's Arm cores, in another PID
 * namespace or on another host may find that pid unused, or in use by an
 * unrelated process. So each rank keeps a random token in its memory and
 * sends its pid, the token's address and its value (HELLO, SHM, PROCS);
 * the agent reads 8 bytes at that address of that pid and copies with
 * CMA only if it finds the same value.
 *
 * This guards against mistaken identity, not against a hostile rank: the
 * job's ranks are trusted (they hold the job's secret), and a rank could
 * name any value it knows to lie in another process.
 */
#ifndef DPS_CMA_H
#define DPS_CMA_H

#include "common/dps_status.h"

#include <stdint.h>

/*
 * A fresh token: random, never 0 (0 means "no token" on the wire).
 * Returns DPS_OK, or DPS_ERR_IO with errno set (getrandom failed; *token
 * is then 0).
 */
int dps_cma_token_new(uint64_t *token);

/*
 * Does process pid, as this process sees it, hold token at addr? Returns
 * DPS_OK if so; otherwise why not: DPS_ERR_INVALID (a zero pid, address
 * or token), DPS_ERR_IO with errno set by the failed read (ESRCH no such
 * process, EPERM not allowed, EFAULT nothing mapped there) or
 * DPS_ERR_TOKEN (the read worked and found another value: the pid is
 * some other process, or the address holds something else). Never
 * writes.
 */
int dps_cma_check(uint32_t pid, uint64_t addr, uint64_t token);

/* A phrase for a dps_cma_check result and, for DPS_ERR_IO, the errno it
 * left ("No such process", "another process has that pid"). */
const char *dps_cma_why(int status, int err);

#endif
