/* SPDX-License-Identifier: BSD-3-Clause */
/* The DMA engine's moves through iovecs (data/iov.c). */
#ifndef SHIM_IOV_H
#define SHIM_IOV_H

#include "shim/data/call.h"
#include "common/dps_shm.h"

#include <stdint.h>
#include <sys/types.h>

/* At the engine's start: self is this process (its reads need no
 * process_vm_readv). */
void shim_iov_init(pid_t self);

/* The registered scatter region holding [addr, addr + len), or NULL. */
shim_scatter_t *shim_iov_region(uint64_t addr, uint64_t len);

/* Register a scatter region (1), or not (0: out of memory). */
int shim_iov_add(shim_scatter_t *m);

/* Command c, whose destination lies in region m: straight into place. */
int shim_iov_scatter_in(shim_scatter_t *m, const dps_cmd_t *c);

/* Command c (READ_GATHER): from the source's unpacked send data. Called
 * by one executor at a time (the engine's lock). */
int shim_iov_gather_in(const dps_cmd_t *c);

/* Commands read straight into scatter regions, and from gathered ones,
 * so far (shim_engine_stats). */
void shim_iov_stats(uint64_t *scattered, uint64_t *gathered);

#endif
