/* SPDX-License-Identifier: BSD-3-Clause */
/* Builders' common parts: the step buffer, the topology, the dispatch. */
#include "shim/compile/build.h"
#include "common/dps_proto.h"

#include <stdlib.h>
#include <string.h>

uint32_t bld_log2(uint32_t n)
{
    uint32_t k = 0;

    while (k < 32 && (1ull << k) < n) {
        k++;
    }
    return k;
}

int bld_topo_init(bld_topo_t *t, uint32_t size, const uint32_t *agent)
{
    uint32_t r, g, k;

    memset(t, 0, sizeof(*t));
    t->gstart = calloc((size_t)size + 1, sizeof(uint32_t));
    t->members = malloc(sizeof(uint32_t) * size);
    t->group = malloc(sizeof(uint32_t) * size);
    t->pos = malloc(sizeof(uint32_t) * size);
    if (t->gstart == NULL || t->members == NULL || t->group == NULL ||
        t->pos == NULL) {
        bld_topo_fini(t);
        return -1;
    }
    /* A group per agent, numbered by its lowest rank (the lookup is
     * linear in the number of groups). */
    for (r = 0; r < size; r++) {
        for (g = 0; g < t->ngroups; g++) {
            if (agent[t->members[g]] == agent[r]) {
                break;
            }
        }
        if (g == t->ngroups) {
            t->members[t->ngroups++] = r;   /* first members, for now */
        }
        t->group[r] = g;
    }
    /* Counting sort of the ranks by group. */
    for (r = 0; r < size; r++) {
        t->gstart[t->group[r] + 1]++;
    }
    for (g = 0; g < t->ngroups; g++) {
        t->gstart[g + 1] += t->gstart[g];
    }
    {
        uint32_t *fill = calloc((size_t)t->ngroups + 1, sizeof(uint32_t));

        if (fill == NULL) {
            bld_topo_fini(t);
            return -1;
        }
        for (r = 0; r < size; r++) {
            g = t->group[r];
            k = fill[g]++;
            t->members[t->gstart[g] + k] = r;
            t->pos[r] = k;
        }
        free(fill);
    }
    return 0;
}

void bld_topo_fini(bld_topo_t *t)
{
    free(t->gstart);
    free(t->members);
    free(t->group);
    free(t->pos);
    memset(t, 0, sizeof(*t));
}

static dps_step_t *append(bld_t *b, unsigned kind, uint32_t round)
{
    dps_step_t *s;

    if (b->n == b->cap) {
        uint32_t cap = b->cap ? 2 * b->cap : 64;
        dps_step_t *v = b->oom ? NULL : realloc(b->steps, sizeof(*v) * cap);

        if (v == NULL) {
            b->oom = 1;
            return NULL;
        }
        b->steps = v;
        b->cap = cap;
    }
    s = &b->steps[b->n++];
    memset(s, 0, sizeof(*s));
    s->kind = (uint8_t)kind;
    s->round = (uint16_t)round;
    if (round > UINT16_MAX ||
        (b->n > 1 && round < b->steps[b->n - 2].round)) {
        b->oom = 1;   /* a builder bug: reported as a failure */
    }
    return s;
}

static void need(bld_t *b, unsigned buf, uint64_t off, uint64_t len)
{
    if (buf < DPS_NBUF && off + len > b->need[buf]) {
        b->need[buf] = off + len;
    }
}

void bld_send(bld_t *b, uint32_t round, uint32_t peer, unsigned buf,
              uint64_t off, uint64_t len)
{
    dps_step_t *s = append(b, DPS_STEP_SEND, round);

    if (s != NULL) {
        s->peer = peer;
        s->src_buf = (uint8_t)buf;
        s->src_off = off;
        s->len = len;
        need(b, buf, off, len);
    }
}

void bld_recv(bld_t *b, uint32_t round, uint32_t peer, unsigned buf,
              uint64_t off, uint64_t len)
{
    dps_step_t *s = append(b, DPS_STEP_RECV, round);

    if (s != NULL) {
        s->peer = peer;
        s->dst_buf = (uint8_t)buf;
        s->dst_off = off;
        s->len = len;
        need(b, buf, off, len);
    }
}

void bld_recv_reduce(bld_t *b, uint32_t round, uint32_t peer, unsigned buf,
                     uint64_t off, uint64_t len, unsigned op,
                     unsigned dtype)
{
    dps_step_t *s = append(b, DPS_STEP_RECV_REDUCE, round);

    if (s != NULL) {
        s->peer = peer;
        s->dst_buf = (uint8_t)buf;
        s->dst_off = off;
        s->len = len;
        s->op = (uint8_t)op;
        s->dtype = (uint16_t)dtype;
        need(b, buf, off, len);
    }
}

void bld_copy(bld_t *b, uint32_t round, unsigned sbuf, uint64_t soff,
              unsigned dbuf, uint64_t doff, uint64_t len)
{
    dps_step_t *s = append(b, DPS_STEP_COPY, round);

    if (s != NULL) {
        s->src_buf = (uint8_t)sbuf;
        s->src_off = soff;
        s->dst_buf = (uint8_t)dbuf;
        s->dst_off = doff;
        s->len = len;
        need(b, sbuf, soff, len);
        need(b, dbuf, doff, len);
    }
}

void bld_reduce(bld_t *b, uint32_t round, unsigned sbuf, uint64_t soff,
                unsigned dbuf, uint64_t doff, uint64_t len, unsigned op,
                unsigned dtype)
{
    dps_step_t *s = append(b, DPS_STEP_REDUCE, round);

    if (s != NULL) {
        s->src_buf = (uint8_t)sbuf;
        s->src_off = soff;
        s->dst_buf = (uint8_t)dbuf;
        s->dst_off = doff;
        s->len = len;
        s->op = (uint8_t)op;
        s->dtype = (uint16_t)dtype;
        need(b, sbuf, soff, len);
        need(b, dbuf, doff, len);
    }
}

int bld_build(const bld_args_t *a, bld_t *b)
{
    bld_topo_t t;
    int rc;

    if (a->size == 0 || a->rank >= a->size || a->root >= a->size ||
        bld_topo_init(&t, a->size, a->agent) != 0) {
        return -1;
    }
    switch (a->coll) {
    case DPS_COLL_REDUCE:
    case DPS_COLL_ALLREDUCE:
    case DPS_COLL_REDUCE_SCATTER:
    case DPS_COLL_REDUCE_SCATTER_BLOCK:
    case DPS_COLL_SCAN:
    case DPS_COLL_EXSCAN:
        rc = bld_reduction(a, &t, b);
        break;
    case DPS_COLL_NEIGHBOR_ALLGATHER:
    case DPS_COLL_NEIGHBOR_ALLGATHERV:
    case DPS_COLL_NEIGHBOR_ALLTOALL:
    case DPS_COLL_NEIGHBOR_ALLTOALLV:
    case DPS_COLL_NEIGHBOR_ALLTOALLW:
    case DPS_COLL_GROUP:
        rc = bld_pairs(a, b);
        break;
    default:
        rc = bld_move(a, &t, b);
        break;
    }
    bld_topo_fini(&t);
    return (rc != 0 || b->oom) ? -1 : 0;
}

/*
 * Every transfer in round 0. A rank's transfers to itself become copies,
 * its k-th send to itself into its k-th receive from itself (lengths the
 * caller checked equal); the rest are SEND and RECV steps in list order.
 */
int bld_pairs(const bld_args_t *a, bld_t *b)
{
    const uint64_t *snd = a->pairs, *rcv = a->pairs + 3 * (size_t)a->nsend;
    uint32_t i, j = 0;

    if (a->pairs == NULL && a->nsend + a->nrecv > 0) {
        return -1;
    }
    for (i = 0; i < a->nsend; i++) {
        const uint64_t *s = snd + 3 * (size_t)i;

        if (s[0] >= a->size) {
            return -1;
        }
        if (s[0] != a->rank) {
            bld_send(b, 0, (uint32_t)s[0], DPS_BUF_SEND, s[1], s[2]);
            continue;
        }
        while (j < a->nrecv && rcv[3 * (size_t)j] != a->rank) {
            j++;
        }
        if (j == a->nrecv || rcv[3 * (size_t)j + 2] != s[2]) {
            return -1;   /* unpaired: the caller checks this */
        }
        bld_copy(b, 0, DPS_BUF_SEND, s[1], DPS_BUF_RECV,
                 rcv[3 * (size_t)j + 1], s[2]);
        j++;
    }
    for (i = 0; i < a->nrecv; i++) {
        const uint64_t *r = rcv + 3 * (size_t)i;

        if (r[0] >= a->size) {
            return -1;
        }
        if (r[0] != a->rank) {
            bld_recv(b, 0, (uint32_t)r[0], DPS_BUF_RECV, r[1], r[2]);
        }
    }
    return 0;
}
