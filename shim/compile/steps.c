/* SPDX-License-Identifier: BSD-3-Clause */
/* Writing a schedule: the step buffer and the topology (compile/steps.h). */
#include "shim/compile/steps.h"
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
        return DPS_ERR_NOMEM;
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
            t->members[t->ngroups++] = r; /* first members, for now */
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
            return DPS_ERR_NOMEM;
        }
        for (r = 0; r < size; r++) {
            g = t->group[r];
            k = fill[g]++;
            t->members[t->gstart[g] + k] = r;
            t->pos[r] = k;
        }
        free(fill);
    }
    return DPS_OK;
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
        uint32_t    cap = b->cap ? 2 * b->cap : 64;
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
    if (round > UINT16_MAX || (b->n > 1 && round < b->steps[b->n - 2].round)) {
        b->oom = 1; /* a builder bug: reported as a failure */
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
                     uint64_t off, uint64_t len, unsigned op, unsigned dtype)
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
