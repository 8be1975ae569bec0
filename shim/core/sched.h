/* SPDX-License-Identifier: BSD-3-Clause */
/* Compiled schedules, cached per communicator (core/sched.c). */
#ifndef SHIM_SCHED_H
#define SHIM_SCHED_H

#include "shim/core/shim.h"

typedef struct shim_sched {
    struct shim_sched *next; /* in its communicator's cache */
    uint64_t           id;   /* unique among this rank's */
    const shim_comm_t *comm; /* whose (never dereferenced) */
    uint8_t           *key;  /* the builder's arguments, as bytes */
    size_t             key_len;
    dps_step_t        *steps;
    uint32_t           nsteps;
    uint64_t           need[DPS_NBUF]; /* bytes each buffer must hold */
    int                agent_has;      /* the steps went to our agent */
    int                reads_recv;     /* a step reads RECV (sends or reduces
                                        * from it): its bytes must be there */
    unsigned           refs;           /* the cache's, and each op's */
    void              *spare_tmp;      /* a TMP buffer no op uses */
} shim_sched_t;

/* The schedule of a for communicator c, from the cache or built now, with
 * a reference for the caller; NULL when out of memory (logged). Lock
 * held. */
shim_sched_t *shim_sched_get(shim_comm_t *c, const bld_args_t *a);

/* The same, for a persistent request that pins the schedule it last used
 * in *pin (NULL at first): that one while the arguments are the same,
 * whatever the cache evicted. Drop the pin with shim_sched_put. */
shim_sched_t *shim_sched_pinned(shim_comm_t *c, const bld_args_t *a,
                                shim_sched_t **pin);

/* Drop a reference (lock held): at the last, the agent is told. */
void shim_sched_put(shim_sched_t *s);

/* For the layers above core, which never take its lock: the lock taken
 * here, shim_sched_pinned if pin is not NULL, else shim_sched_get; and
 * shim_sched_put (NULL is fine). */
shim_sched_t *shim_sched_take(shim_comm_t *c, const bld_args_t *a,
                              shim_sched_t **pin);
void          shim_sched_release(shim_sched_t *s);

/* The communicator goes: drop its cache (lock held). */
void shim_sched_comm_free(shim_comm_t *c);

/* A TMP buffer for an op of s (need[DPS_BUF_TMP] bytes), and back. */
void *shim_sched_tmp(shim_sched_t *s);
void  shim_sched_tmp_put(shim_sched_t *s, void *p);

#endif
