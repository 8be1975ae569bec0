/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The registration cache (data/reg.h).
 *
 * Unmap events arrive in UCX's memory hook, inside munmap() and friends, in
 * any thread, possibly while this thread holds shim.lock or is itself in
 * the middle of the cache (ucp_mem_unmap and free() may unmap). The hook
 * therefore only records the range in a small ring under a spinlock that
 * guards nothing else; the next lookup applies the ring to the cache before
 * it searches. A ring overflow invalidates everything, so an event is never
 * lost. A buffer unmapped and mapped again before its next use is thus
 * always registered afresh.
 */
#define _GNU_SOURCE
#include "shim/base/state.h"
#include "shim/data/reg.h"
#include "common/dps_log.h"
#include "common/dps_proto.h"
#include "common/dps_status.h"

#include <stdlib.h>
#include <string.h>
#include <ucm/api/ucm.h>

#define RING_SIZE 256

static struct {
    /* the cache: */
    shim_reg_t      *by_range; /* uthash */
    shim_reg_t      *lru_head, *lru_tail;
    uint64_t         bytes; /* cached bytes */
    uint64_t         next_id;
    uint64_t         stats[SHIM_REG_NSTAT];
    uint64_t        *gone; /* ids to announce in REG_FREE */
    size_t           ngone, gone_cap;
    int              hooked;
    shim_reg_send_fn send; /* to the agent (shim_reg_init) */
    /* written by the hook, under ring_lock: */
    pthread_spinlock_t ring_lock;
    uint64_t           ring_addr[RING_SIZE], ring_len[RING_SIZE];
    unsigned           ring_n;
    int                ring_overflow;
    /* bounds of everything cached, for the hook's quick test */
    volatile uint64_t lo, hi;
} rc;

static void on_unmap(ucm_event_type_t type, ucm_event_t *ev, void *arg)
{
    uint64_t a = (uint64_t)(uintptr_t)ev->vm_unmapped.address;
    uint64_t l = ev->vm_unmapped.size;

    (void)type;
    (void)arg;
    if (l == 0 || a >= rc.hi || a + l <= rc.lo) {
        return; /* UCX's own and other unrelated memory: most events */
    }
    pthread_spin_lock(&rc.ring_lock);
    if (rc.ring_n < RING_SIZE) {
        rc.ring_addr[rc.ring_n] = a;
        rc.ring_len[rc.ring_n] = l;
        rc.ring_n++;
    } else {
        rc.ring_overflow = 1;
    }
    pthread_spin_unlock(&rc.ring_lock);
}

void shim_reg_init(shim_reg_send_fn send)
{
    ucs_status_t st;

    rc.send = send;
    pthread_spin_init(&rc.ring_lock, PTHREAD_PROCESS_PRIVATE);
    rc.lo = UINT64_MAX;
    rc.hi = 0;
    st = ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED, 0, on_unmap, NULL);
    if (st != UCS_OK) {
        /* Without unmap events a cached registration could outlive its
         * memory: register per call instead. */
        dps_warn("no memory unmap events from UCX (%s): registration "
                 "cache off",
                 ucs_status_string(st));
        shim.cfg.regcache_bytes = 0;
        return;
    }
    rc.hooked = 1;
}

static void lru_unlink(shim_reg_t *r)
{
    if (r->prev != NULL) {
        r->prev->next = r->next;
    } else {
        rc.lru_head = r->next;
    }
    if (r->next != NULL) {
        r->next->prev = r->prev;
    } else {
        rc.lru_tail = r->prev;
    }
    r->prev = r->next = NULL;
}

static void lru_push_front(shim_reg_t *r)
{
    r->prev = NULL;
    r->next = rc.lru_head;
    if (rc.lru_head != NULL) {
        rc.lru_head->prev = r;
    } else {
        rc.lru_tail = r;
    }
    rc.lru_head = r;
}

/* Free r's UCX resources and, if the agent has its key, queue its id. */
static void release(shim_reg_t *r)
{
    if (r->agent_has_key) {
        if (rc.ngone == rc.gone_cap) {
            size_t    cap = rc.gone_cap ? 2 * rc.gone_cap : 64;
            uint64_t *g = realloc(rc.gone, cap * sizeof(*g));

            if (g != NULL) {
                rc.gone = g;
                rc.gone_cap = cap;
            }
        }
        if (rc.ngone < rc.gone_cap) {
            rc.gone[rc.ngone++] = r->id;
        } /* else: the agent keeps a dead key until the job ends */
    }
    if (r->rkey != NULL) {
        ucp_rkey_buffer_release(r->rkey);
    }
    ucp_mem_unmap(shim.chan.ucx.context, r->memh);
    free(r);
}

/* Take r out of the cache; free it now if no op uses it. */
static void uncache(shim_reg_t *r)
{
    HASH_DEL(rc.by_range, r);
    lru_unlink(r);
    r->cached = 0;
    rc.bytes -= r->key.end - r->key.start;
    if (r->refs == 0) {
        release(r);
    }
}

static void update_bounds(void)
{
    uint64_t    lo = UINT64_MAX, hi = 0;
    shim_reg_t *r;

    for (r = rc.lru_head; r != NULL; r = r->next) {
        lo = r->key.start < lo ? r->key.start : lo;
        hi = r->key.end > hi ? r->key.end : hi;
    }
    rc.lo = lo;
    rc.hi = hi;
}

/* Apply the unmap events recorded since the last lookup. */
static void drain_events(void)
{
    uint64_t    addr[RING_SIZE], len[RING_SIZE];
    unsigned    n, i;
    int         overflow, changed = 0;
    shim_reg_t *r, *next;

    pthread_spin_lock(&rc.ring_lock);
    n = rc.ring_n;
    overflow = rc.ring_overflow;
    memcpy(addr, rc.ring_addr, n * sizeof(addr[0]));
    memcpy(len, rc.ring_len, n * sizeof(len[0]));
    rc.ring_n = 0;
    rc.ring_overflow = 0;
    pthread_spin_unlock(&rc.ring_lock);
    if (n == 0 && !overflow) {
        return;
    }
    for (r = rc.lru_head; r != NULL; r = next) {
        int hit = overflow;

        next = r->next;
        for (i = 0; i < n && !hit; i++) {
            hit = addr[i] < r->key.end && addr[i] + len[i] > r->key.start;
        }
        if (hit) {
            dps_debug("registration %llu [%#llx, %#llx) invalidated: "
                      "memory unmapped",
                      (unsigned long long)r->id,
                      (unsigned long long)r->key.start,
                      (unsigned long long)r->key.end);
            rc.stats[SHIM_REG_INVALIDATIONS]++;
            uncache(r);
            changed = 1;
        }
    }
    if (changed) {
        update_bounds();
    }
}

static int do_register(const void *addr, size_t len, shim_reg_t *r)
{
    ucp_mem_map_params_t mp;
    ucs_status_t         st;

    memset(&mp, 0, sizeof(mp));
    mp.field_mask =
        UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = (void *)addr;
    mp.length = len;
    st = ucp_mem_map(shim.chan.ucx.context, &mp, &r->memh);
    if (st != UCS_OK) {
        dps_error("cannot register %zu bytes at %p: %s", len, addr,
                  ucs_status_string(st));
        return DPS_ERR_UCX;
    }
    st = ucp_rkey_pack(shim.chan.ucx.context, r->memh, &r->rkey, &r->rkey_len);
    if (st != UCS_OK || r->rkey_len > DPS_MAX_RKEY) {
        dps_error("cannot pack the key of %zu bytes at %p: %s", len, addr,
                  st != UCS_OK ? ucs_status_string(st) : "key too long");
        if (st == UCS_OK) {
            ucp_rkey_buffer_release(r->rkey);
        }
        ucp_mem_unmap(shim.chan.ucx.context, r->memh);
        return DPS_ERR_UCX;
    }
    return DPS_OK;
}

/* Above the cap: drop idle entries, least recently used first. */
static void evict(void)
{
    shim_reg_t *r, *prev;

    for (r = rc.lru_tail; r != NULL && rc.bytes > shim.cfg.regcache_bytes;
         r = prev) {
        prev = r->prev;
        if (r->refs == 0) {
            dps_debug("registration %llu evicted (cache above %llu bytes)",
                      (unsigned long long)r->id,
                      (unsigned long long)shim.cfg.regcache_bytes);
            uncache(r);
        }
    }
}

int shim_reg_get(const void *addr, size_t len, shim_reg_t **out)
{
    uint64_t    a = (uint64_t)(uintptr_t)addr;
    shim_reg_t *r = NULL, key;
    int         err;

    drain_events();
    memset(&key, 0, sizeof(key));
    key.key.start = a;
    key.key.end = a + len;
    HASH_FIND(hh, rc.by_range, &key.key, sizeof(key.key), r);
    if (r == NULL) {
        /* A larger registration covering the range (a sub-buffer). */
        for (r = rc.lru_head; r != NULL; r = r->next) {
            if (r->key.start <= a && r->key.end >= a + len) {
                break;
            }
        }
    }
    if (r != NULL) {
        rc.stats[SHIM_REG_HITS]++;
        lru_unlink(r);
        lru_push_front(r);
        r->refs++;
        *out = r;
        return DPS_OK;
    }
    rc.stats[SHIM_REG_MISSES]++;
    r = calloc(1, sizeof(*r));
    err = r == NULL ? DPS_ERR_NOMEM : do_register(addr, len, r);
    if (err != DPS_OK) {
        free(r);
        return err;
    }
    r->key = key.key;
    r->id = ++rc.next_id;
    r->refs = 1;
    if (shim.cfg.regcache_bytes > 0 && rc.hooked) {
        r->cached = 1;
        HASH_ADD(hh, rc.by_range, key, sizeof(r->key), r);
        lru_push_front(r);
        rc.bytes += len;
        evict();
        update_bounds();
    }
    *out = r;
    return DPS_OK;
}

void shim_reg_put(shim_reg_t *r)
{
    if (r == NULL) {
        return;
    }
    r->refs--;
    if (r->refs == 0 && !r->cached) {
        release(r);
    }
}

void shim_reg_key_sent(shim_reg_t *r)
{
    r->agent_has_key = 1;
    if (r->rkey != NULL) {
        ucp_rkey_buffer_release(r->rkey);
        r->rkey = NULL;
        r->rkey_len = 0;
    }
}

void shim_reg_send_frees(void)
{
    size_t done = 0;

    while (done < rc.ngone && !shim.chan.agent_dead && rc.send != NULL) {
        size_t n = rc.ngone - done, len;
        void  *msg;

        n = n > DPS_MAX_REG_FREE ? DPS_MAX_REG_FREE : n;
        msg = dps_msg_encode_reg_free((uint32_t)shim.topo.world_rank,
                                      (uint32_t)n, rc.gone + done, &len);
        if (msg == NULL || rc.send(msg, len) != DPS_OK) {
            break; /* the agent keeps some dead keys: harmless */
        }
        done += n;
    }
    rc.ngone = 0;
}

void shim_reg_stats(uint64_t out[SHIM_REG_NSTAT])
{
    memcpy(out, rc.stats, sizeof(rc.stats));
}

void shim_reg_fini(void)
{
    shim_reg_t *r;

    if (rc.hooked) {
        ucm_unset_event_handler(UCM_EVENT_VM_UNMAPPED, on_unmap, NULL);
        rc.hooked = 0;
    }
    while ((r = rc.lru_head) != NULL) {
        r->agent_has_key = 0; /* the agent goes away with the job */
        r->refs = 0;
        uncache(r);
    }
    rc.lo = UINT64_MAX;
    rc.hi = 0;
    free(rc.gone);
    rc.gone = NULL;
    rc.ngone = rc.gone_cap = 0;
}
