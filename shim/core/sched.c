/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine's client side: a collective call becomes a schedule
 * (shim/compile/), cached on its communicator keyed by the builder's
 * arguments, and a POST naming it. A schedule's steps go to the agent
 * with the first post that uses it; later posts name its id. A
 * communicator keeps its SHIM_SCHED_CACHE most recently used schedules;
 * the agent is told to drop the others (SCHED_FREE) once no op uses them.
 */
#include "shim/core/shim.h"
#include "shim/core/sched.h"
#include "common/dps_log.h"
#include "common/dps_proto.h"
#include "common/dps_status.h"

#include <stdlib.h>
#include <string.h>

#define SHIM_SCHED_CACHE 16

/* The builder's arguments as bytes: equal keys, equal schedules. */
static uint8_t *key_of(const bld_args_t *a, size_t *len)
{
    const uint64_t *arr[4] = {a->scount, a->soff, a->rcount, a->roff};
    uint64_t        head[10];
    size_t          n = sizeof(head), o;
    size_t          npairs = 3 * ((size_t)a->nsend + a->nrecv);
    uint8_t        *k;
    int             i;

    for (i = 0; i < 4; i++) {
        n += arr[i] != NULL ? sizeof(uint64_t) * a->size : 0;
    }
    n += a->pairs != NULL ? sizeof(uint64_t) * npairs : 0;
    k = malloc(n);
    if (k == NULL) {
        return NULL;
    }
    head[0] = (uint64_t)a->coll;
    head[1] = a->root;
    head[2] = a->op;
    head[3] = a->dtype;
    head[4] = a->bytes;
    head[5] = (uint64_t)a->in_place;
    head[6] = (arr[0] != NULL) | (arr[1] != NULL) << 1 |
              (arr[2] != NULL) << 2 | (arr[3] != NULL) << 3;
    head[7] = a->size;
    head[8] = a->nsend;
    head[9] = a->pairs != NULL ? a->nrecv : UINT64_MAX;
    memcpy(k, head, sizeof(head));
    o = sizeof(head);
    for (i = 0; i < 4; i++) {
        if (arr[i] != NULL) {
            memcpy(k + o, arr[i], sizeof(uint64_t) * a->size);
            o += sizeof(uint64_t) * a->size;
        }
    }
    if (a->pairs != NULL) {
        memcpy(k + o, a->pairs, sizeof(uint64_t) * npairs);
    }
    *len = n;
    return k;
}

static void sched_free(shim_sched_t *s)
{
    if (s->agent_has && !shim.chan.agent_dead && shim.active) {
        size_t len;
        void  *msg = dps_msg_encode_sched_free((uint32_t)shim.topo.world_rank,
                                               1, &s->id, &len);

        if (msg == NULL || shim_send_agent(msg, len) != DPS_OK) {
            dps_debug("cannot tell the agent to drop schedule %llu",
                      (unsigned long long)s->id);
        }
    }
    free(s->spare_tmp);
    free(s->key);
    free(s->steps);
    free(s);
}

void shim_sched_put(shim_sched_t *s)
{
    if (s != NULL && --s->refs == 0) {
        sched_free(s);
    }
}

/* Keep at most SHIM_SCHED_CACHE on c (lock held). */
static void trim(shim_comm_t *c)
{
    shim_sched_t **sp = &c->scheds, *s;
    unsigned       n = 0;

    while ((s = *sp) != NULL) {
        if (++n <= SHIM_SCHED_CACHE) {
            sp = &s->next;
            continue;
        }
        *sp = s->next;
        c->nscheds--;
        shim_sched_put(s); /* the cache's reference */
    }
}

/* Does a step read the RECV region: a SEND, COPY or REDUCE from it, or a
 * reduction into it? Then received bytes must land in it, not only in
 * the application's memory (see shim_engine_scatter_add). */
static int reads_recv(const shim_sched_t *s)
{
    for (uint32_t i = 0; i < s->nsteps; i++) {
        const dps_step_t *st = &s->steps[i];
        int               reduce =
            st->kind == DPS_STEP_REDUCE || st->kind == DPS_STEP_RECV_REDUCE;

        if ((st->kind != DPS_STEP_RECV && st->kind != DPS_STEP_RECV_REDUCE &&
             st->src_buf == DPS_BUF_RECV) ||
            (reduce && st->dst_buf == DPS_BUF_RECV)) {
            return 1;
        }
    }
    return 0;
}

shim_sched_t *shim_sched_get(shim_comm_t *c, const bld_args_t *a)
{
    shim_sched_t **sp, *s;
    bld_t          b;
    size_t         klen;
    double         t0;
    uint8_t       *key = key_of(a, &klen);

    if (key == NULL) {
        return NULL;
    }
    for (sp = &c->scheds; (s = *sp) != NULL; sp = &s->next) {
        if (s->key_len == klen && memcmp(s->key, key, klen) == 0) {
            *sp = s->next; /* to the front */
            s->next = c->scheds;
            c->scheds = s;
            s->refs++;
            free(key);
            return s;
        }
    }
    memset(&b, 0, sizeof(b));
    s = calloc(1, sizeof(*s));
    t0 = dps_now();
    if (s == NULL || bld_build(a, &b) != 0) {
        dps_error("cannot compile %s for %u ranks: out of memory",
                  dps_coll_str((unsigned)a->coll), a->size);
        free(b.steps);
        free(s);
        free(key);
        return NULL;
    }
    if (a->coll > 0 && a->coll < DPS_COLL_MAX) {
        shim.stat.sched[a->coll][0]++;
        shim.stat.sched[a->coll][1] += b.n;
        shim.stat.sched[a->coll][2] += (uint64_t)((dps_now() - t0) * 1e9);
    }
    s->id = ++shim.next_sched;
    s->comm = c;
    s->key = key;
    s->key_len = klen;
    s->steps = b.steps;
    s->nsteps = b.n;
    memcpy(s->need, b.need, sizeof(s->need));
    s->reads_recv = reads_recv(s);
    s->refs = 2; /* the cache's and the caller's */
    s->next = c->scheds;
    c->scheds = s;
    c->nscheds++;
    trim(c);
    return s;
}

shim_sched_t *shim_sched_pinned(shim_comm_t *c, const bld_args_t *a,
                                shim_sched_t **pin)
{
    shim_sched_t *s = *pin;
    size_t        klen;
    uint8_t      *key;

    if (s != NULL) {
        key = key_of(a, &klen);
        if (key == NULL) {
            return NULL;
        }
        if (s->comm == c && s->key_len == klen &&
            memcmp(s->key, key, klen) == 0) {
            free(key);
            s->refs++;
            return s;
        }
        free(key);
    }
    s = shim_sched_get(c, a);
    if (s != NULL) {
        shim_sched_put(*pin);
        s->refs++; /* the pin's */
        *pin = s;
    }
    return s;
}

shim_sched_t *shim_sched_take(shim_comm_t *c, const bld_args_t *a,
                              shim_sched_t **pin)
{
    shim_sched_t *s;

    pthread_mutex_lock(&shim.lock);
    s = pin != NULL ? shim_sched_pinned(c, a, pin) : shim_sched_get(c, a);
    pthread_mutex_unlock(&shim.lock);
    return s;
}

void shim_sched_release(shim_sched_t *s)
{
    if (s == NULL) {
        return;
    }
    pthread_mutex_lock(&shim.lock);
    shim_sched_put(s);
    pthread_mutex_unlock(&shim.lock);
}

void shim_sched_comm_free(shim_comm_t *c)
{
    shim_sched_t *s;

    while ((s = c->scheds) != NULL) {
        c->scheds = s->next;
        shim_sched_put(s);
    }
    c->nscheds = 0;
}

void *shim_sched_tmp(shim_sched_t *s)
{
    void *p = s->spare_tmp;

    if (p != NULL) {
        s->spare_tmp = NULL;
        return p;
    }
    return malloc(s->need[DPS_BUF_TMP] + 1);
}

void shim_sched_tmp_put(shim_sched_t *s, void *p)
{
    if (s->spare_tmp == NULL) {
        s->spare_tmp = p; /* its registration stays cached too */
    } else {
        free(p);
    }
}
