/* SPDX-License-Identifier: BSD-3-Clause */
/* dpu_agent --probe: RDMA devices and BlueField DPUs (agent_probe.c). */
#ifndef AGENT_PROBE_H
#define AGENT_PROBE_H

#include <stdint.h>
#include <stdio.h>

/* --probe: print the RDMA devices and whether a BlueField is among them.
 * Returns 0 if one is, 1 if none, 2 if the devices cannot be listed. */
int agent_probe(FILE *out);

/* Does this agent run on a BlueField's Arm cores (an aarch64 machine
 * that sees a BlueField among its RDMA devices)? 1 or 0. There its cores
 * are its own; anywhere else (a host, an emulated DPU sharing the host's
 * cores, qemu-user) it shares them with ranks. */
int agent_on_dpu(void);

/* "BlueField-2" etc. for a verbs vendor OUI and part id, else NULL. */
const char *agent_bluefield_name(uint32_t vendor_id, uint32_t part_id);

#endif
