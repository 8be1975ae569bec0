/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writing a schedule (compile/steps.c): the step buffer the builders
 * append to, and the topology they read (which ranks share an agent).
 * The bottom of compile/: the builders (compile/moves.c,
 * compile/reductions.c) call these, these call no builder.
 */
#ifndef BLD_STEPS_H
#define BLD_STEPS_H

#include "common/dps_sched.h"
#include "common/dps_status.h"

#include <stdint.h>

/* A schedule under construction. */
typedef struct bld {
    dps_step_t *steps;
    uint32_t    n, cap;
    int         oom;            /* an append failed */
    uint64_t    need[DPS_NBUF]; /* bytes each buffer must hold */
} bld_t;

/* The ranks of a communicator grouped by agent: groups in order of their
 * lowest rank, members of each in rank order. */
typedef struct bld_topo {
    uint32_t  ngroups;
    uint32_t *gstart;  /* ngroups + 1: where each group's members start */
    uint32_t *members; /* size: comm ranks, group after group */
    uint32_t *group;   /* size: the group of each rank */
    uint32_t *pos;     /* size: the rank's index among its group's */
} bld_topo_t;

/* The topology of a communicator of size ranks whose rank r is served by
 * agent[r]: DPS_OK, or DPS_ERR_NOMEM. Free it with bld_topo_fini. */
int  bld_topo_init(bld_topo_t *t, uint32_t size, const uint32_t *agent);
void bld_topo_fini(bld_topo_t *t);

/* The k-th member of group g. */
static inline uint32_t bld_member(const bld_topo_t *t, uint32_t g, uint32_t k)
{
    return t->members[t->gstart[g] + k];
}

static inline uint32_t bld_gsize(const bld_topo_t *t, uint32_t g)
{
    return t->gstart[g + 1] - t->gstart[g];
}

/* Appending steps. Rounds must not decrease. Zero-length transfers are
 * kept: they carry order (barriers) and let agents see that two ranks
 * agree. */
void bld_send(bld_t *b, uint32_t round, uint32_t peer, unsigned buf,
              uint64_t off, uint64_t len);
void bld_recv(bld_t *b, uint32_t round, uint32_t peer, unsigned buf,
              uint64_t off, uint64_t len);
void bld_recv_reduce(bld_t *b, uint32_t round, uint32_t peer, unsigned buf,
                     uint64_t off, uint64_t len, unsigned op, unsigned dtype);
void bld_copy(bld_t *b, uint32_t round, unsigned sbuf, uint64_t soff,
              unsigned dbuf, uint64_t doff, uint64_t len);
void bld_reduce(bld_t *b, uint32_t round, unsigned sbuf, uint64_t soff,
                unsigned dbuf, uint64_t doff, uint64_t len, unsigned op,
                unsigned dtype);

/* ceil(log2(n)), 0 for n <= 1. */
uint32_t bld_log2(uint32_t n);

#endif
