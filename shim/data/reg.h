/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Registration cache of a rank: each buffer an offloaded collective uses is
 * registered with UCX once, its key packed once and sent to the agent once,
 * and reused while the memory stays mapped. Unmapped memory (munmap,
 * mremap, brk shrinking, as UCX's memory hooks report it) invalidates every
 * entry it touches before the next lookup; above DPUSHIM_REGCACHE_BYTES the
 * least recently used idle entries are dropped. The agent is told with
 * REG_FREE which ids are gone, so that it drops their keys.
 *
 * Every function but the memory-event hook runs with shim.lock held.
 */
#ifndef SHIM_REG_H
#define SHIM_REG_H

#include <stddef.h>
#include <stdint.h>
#include <ucp/api/ucp.h>
#include <uthash.h>

enum {
    SHIM_REG_HITS,
    SHIM_REG_MISSES,
    SHIM_REG_INVALIDATIONS,
    SHIM_REG_NSTAT
};

typedef struct shim_reg {
    UT_hash_handle hh; /* by exact range, while cached */
    struct {
        uint64_t start, end; /* [start, end) as registered */
    } key;
    uint64_t         id; /* never reused by this rank */
    ucp_mem_h        memh;
    void            *rkey; /* packed key, until the agent has it */
    size_t           rkey_len;
    int              agent_has_key;
    unsigned         refs;        /* ops in flight using it */
    int              cached;      /* findable by lookups */
    struct shim_reg *prev, *next; /* LRU list, most recent first */
} shim_reg_t;

/* How REG_FREE reaches the agent: send a message (ownership taken) to
 * it; DPS_OK or an error (core/channel.c's shim_send_agent). */
typedef int (*shim_reg_send_fn)(void *msg, size_t len);

/* Install the memory-event hook (after the UCX context exists); send
 * carries REG_FREE messages from then on (the channel is above the cache,
 * so it is handed down here). */
void shim_reg_init(shim_reg_send_fn send);

/* Drop every entry (at finalize; no messages are sent). */
void shim_reg_fini(void);

/*
 * A registration covering [addr, addr + len), with one more reference.
 * Counts a hit or a miss. Returns DPS_OK; DPS_ERR_UCX if UCX could not
 * register it (logged); DPS_ERR_NOMEM.
 */
int shim_reg_get(const void *addr, size_t len, shim_reg_t **out);

/* Drop a reference taken by shim_reg_get. */
void shim_reg_put(shim_reg_t *r);

/* The agent now has r's key (sent in a POST): release the packed copy. */
void shim_reg_key_sent(shim_reg_t *r);

/* Send REG_FREE for ids whose keys the agent holds and which are gone. */
void shim_reg_send_frees(void);

/* hits, misses, invalidations of this rank. */
void shim_reg_stats(uint64_t out[SHIM_REG_NSTAT]);

#endif
