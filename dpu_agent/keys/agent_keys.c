/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ranks' registration keys as an agent keeps them: each packed key
 * arrives with the first post that names its registration id, is cached
 * by (world rank, id), forwarded once to each agent that needs it, and
 * dropped when a REG_FREE names the id.
 */
#include "dpu_agent/keys/agent_keys.h"
#include "dpu_agent/core/agent_chan.h"
#include "common/dps_log.h"
#include "common/dps_status.h"

#include <stdlib.h>
#include <string.h>

static agent_key_t *key_find(agent_t *a, uint32_t world, uint64_t id)
{
    agent_key_t probe, *k;

    memset(&probe.k, 0, sizeof(probe.k));
    probe.k.world = world;
    probe.k.id = id;
    HASH_FIND(hh, a->keys, &probe.k, sizeof(probe.k), k);
    return k;
}

static void key_destroy(agent_t *a, agent_key_t *k)
{
    HASH_DEL(a->keys, k);
    a->nkeys--;
    if (k->rkey != NULL) {
        ucp_rkey_destroy(k->rkey);
    }
    free(k->packed);
    free(k->sent);
    free(k);
}

/*
 * The key of registration id of rank world: cached, or taken from this
 * message (buf, len > 0). A post naming an id this agent never received
 * is a protocol error: the sender sends each key before relying on it.
 */
agent_key_t *agent_key_take(agent_t *a, uint32_t world, uint64_t id,
                            const uint8_t *buf, uint32_t len)
{
    agent_key_t *k = key_find(a, world, id);

    if (k != NULL || len == 0) {
        if (k == NULL) {
            dps_error("rank %u names registration %llu, whose key this "
                      "agent never received",
                      world, (unsigned long long)id);
        }
        return k;
    }
    k = calloc(1, sizeof(*k));
    if (k == NULL || (k->packed = malloc(len)) == NULL ||
        (k->sent = calloc(a->nagents, 1)) == NULL) {
        if (k != NULL) {
            free(k->packed);
        }
        free(k);
        dps_error("out of memory for a registration key");
        return NULL;
    }
    memcpy(k->packed, buf, len);
    k->len = len;
    k->k.world = world;
    k->k.id = id;
    HASH_ADD(hh, a->keys, k, sizeof(k->k), k);
    if (++a->nkeys > a->keys_peak) {
        a->keys_peak = a->nkeys;
    }
    return k;
}

/* The unpacked key for UCX get/put on the owner's memory. */
ucp_rkey_h agent_key_rkey(agent_t *a, agent_key_t *k)
{
    ucs_status_t st;

    if (k->rkey == NULL) {
        st = ucp_ep_rkey_unpack(a->rank_ep[k->k.world], k->packed, &k->rkey);
        if (st != UCS_OK) {
            dps_error("cannot unpack the memory key of rank %u: %s",
                      k->k.world, ucs_status_string(st));
            k->rkey = NULL;
        }
    }
    return k->rkey;
}

/* REG_FREE: from a rank of ours (forward to the agents we gave its keys),
 * or from the agent of the owner. Unknown ids are ignored. */
int agent_handle_reg_free(agent_t *a, const dps_msg_t *msg)
{
    const dps_msg_reg_free_t *f = &msg->u.reg_free.fixed;
    uint8_t                  *peers = NULL;
    int                       own;
    uint32_t                  i, ag;

    if (f->world_rank >= a->nranks) {
        dps_error("reg_free for unknown rank %u", f->world_rank);
        return DPS_ERR_PROTO;
    }
    own = (a->rank_agent[f->world_rank] == a->self);
    if (own) {
        peers = calloc(a->nagents, 1);
    }
    for (i = 0; i < f->count; i++) {
        agent_key_t *k =
            key_find(a, f->world_rank, dps_msg_u64(msg->u.reg_free.ids, i));

        if (k == NULL) {
            continue;
        }
        for (ag = 0; peers != NULL && ag < a->nagents; ag++) {
            peers[ag] |= k->sent[ag];
        }
        key_destroy(a, k);
    }
    for (ag = 0; peers != NULL && ag < a->nagents; ag++) {
        size_t len;
        void  *out;

        if (!peers[ag] || ag == a->self) {
            continue;
        }
        out = dps_msg_encode_reg_free(f->world_rank, f->count,
                                      msg->u.reg_free.ids, &len);
        if (out == NULL || agent_send_agent(a, ag, out, len) != DPS_OK) {
            dps_warn("cannot forward reg_free to agent %u", ag);
        }
    }
    free(peers);
    return DPS_OK;
}

void agent_keys_fini(agent_t *a)
{
    agent_key_t *k, *tmp;

    HASH_ITER(hh, a->keys, k, tmp) {
        key_destroy(a, k);
    }
}
