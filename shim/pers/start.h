/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Persistent requests the shim runs (pers/start.c): persistent
 * collectives (wrap/colls.c, pers/init.c) and persistent pattern
 * groups (wrap/group.c).
 *
 * The application holds a handle MPI made: an inactive persistent receive
 * from MPI_PROC_NULL, which stock MPI's completion calls treat as an
 * inactive persistent request should be (at once, an empty status).
 * MPI_Start runs the request's start function, which posts it and gives
 * back the request doing the work (the generalized request of an
 * offloaded collective, or stock MPI's). The completion calls put that
 * request in the handle's place for the length of the call, and the
 * handle back after: inactive again once it completed.
 */
#ifndef SHIM_PERS_START_H
#define SHIM_PERS_START_H

#include "shim/core/shim.h"

typedef struct shim_pers shim_pers_t;

struct shim_ctx;

/* Post p once more, made as x says (wrap/coll.h: the persistent form,
 * where its schedule is pinned, its stream): MPI_SUCCESS and *inner, or
 * an MPI error code. */
typedef int (*shim_pers_start_t)(shim_pers_t *p, MPI_Request *inner,
                                 struct shim_ctx *x);

struct shim_pers {
    MPI_Request       handle; /* the application's */
    MPI_Request       inner;  /* while active: doing the work */
    int               active;
    int               coll; /* dps_coll_t of the persistent form */
    shim_pers_start_t start;
    void (*drop)(void *args);
    void              *args;   /* the start function's */
    struct shim_sched *pin;    /* the schedule it last used */
    shim_comm_t       *comm;   /* its communicator's state (a reference:
                                * freed by MPI, it says so) */
    shim_comm_t       *stream; /* its matching stream (a reference), or
                                * NULL: its starts never reach an agent */
    UT_hash_handle     hh;     /* keyed on the bytes of handle */
};

/* A new inactive persistent request on comm into *req, owning args
 * (freed by drop with the request; also when this fails). Called from
 * the *_init, in init order: with offload, the request's matching stream
 * is made here (shim_comm_stream_new). MPI_SUCCESS, or an MPI error
 * code. */
int shim_pers_new(int coll, MPI_Comm comm, shim_pers_start_t start,
                  void (*drop)(void *), void *args, int offload,
                  MPI_Request *req);

/* comm is being freed: end the nonblocking duplications of it that
 * persistent collectives began (pers/dup.c). */
void shim_pers_comm_free(MPI_Comm comm);

/* Requests of the shim's in place of handles, for one completion call. */
typedef struct shim_swap {
    shim_pers_t  *small[16];
    shim_pers_t **at; /* at[i]: reqs[i] was p's handle */
    int           n;
} shim_swap_t;

void shim_pers_swap(shim_swap_t *sw, int n, MPI_Request reqs[]);
void shim_pers_unswap(shim_swap_t *sw, MPI_Request reqs[]);

#endif
