/* SPDX-License-Identifier: BSD-3-Clause */
/* The ranks' registration keys, as the agent caches them (agent_keys.c). */
#ifndef AGENT_KEYS_H
#define AGENT_KEYS_H

#include "dpu_agent/core/agent.h"

/* The key of (world, id) cached, or taken from a message (buf, len > 0);
 * NULL if unknown (logged). The cache owns it. */
agent_key_t *agent_key_take(agent_t *a, uint32_t world, uint64_t id,
                            const uint8_t *buf, uint32_t len);

/* The unpacked key, for UCX get/put on its owner's memory, or NULL. */
ucp_rkey_h agent_key_rkey(agent_t *a, agent_key_t *k);

/* REG_FREE: drop the keys it names (from a rank of ours: forwarded to
 * the agents we gave them). DPS_OK or DPS_ERR_PROTO (logged). */
int agent_handle_reg_free(agent_t *a, const dps_msg_t *msg);

/* Drop every cached registration key. */
void agent_keys_fini(agent_t *a);

#endif
