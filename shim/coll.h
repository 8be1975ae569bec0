/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the MPI_I* wrappers (coll_move.c, coll_reduce.c) share
 * (coll_common.c). A wrapper decides between offload and stock MPI on
 * values the standard requires to be alike on every rank (the
 * communicator, root, operation, element type, the size where every rank
 * knows it) and on the environment, never on a rank's own layout or
 * counts: every rank takes the same path. It then describes where its
 * data lies (shim_types.h) and posts.
 */
#ifndef COLL_H
#define COLL_H

#include "shim.h"
#include "shim_types.h"

/* While a persistent collective starts (shim_pers.c): its dps_coll_t,
 * whose switch and statistics line the nonblocking call it runs uses. */
extern __thread int shim_as;

/* ... and where it pins its schedule (shim_sched_pinned). */
extern __thread struct shim_sched **shim_pin;

/* Offload considered for coll on comm: the shim is on, coll's switch is
 * on, comm an intracommunicator. */
int shim_coll_wanted(int coll, MPI_Comm comm);

/* Large enough to offload (DPUSHIM_MIN_BYTES), for a size every rank
 * knows; collectives whose sizes differ by rank offload whenever any
 * size would (shim_any_size). */
int shim_big_enough(uint64_t bytes);
int shim_any_size(void);

/*
 * Why the call being decided would go to stock MPI (SHIM_WHY_*): set by
 * the test that says no (shim_coll_wanted, which every decision makes
 * first, starts it at SHIM_WHY_OTHER; shim_big_enough, shim_any_size,
 * the reductions' type test), counted and reset by shim_fallback.
 */
extern __thread int shim_why;

/* Count a fallback to stock MPI, under shim_why; returns rc (the PMPI
 * call's). */
int shim_fallback(int coll, int rc);

enum { SHIM_GO, SHIM_STOCK, SHIM_FAIL,
       SHIM_PROBED };   /* shim_probing: the call would be offloaded */

/* While MPI_Start runs a persistent request: its matching stream
 * (shim_comm_stream_new), which the call uses in place of its
 * communicator's state. */
extern __thread shim_comm_t *shim_stream;

/*
 * While a persistent *_init asks whether its starts will be offloaded
 * (the answer is the same at every start: it depends on the arguments,
 * the switches and the sizes alone), a wrapper only decides: it returns
 * SHIM_PROBE_STOCK where it would call stock MPI, SHIM_PROBE_GO where it
 * would offload, and does nothing else. Stock MPI must then run every
 * start from its own persistent request, matched in init order.
 */
extern __thread int shim_probing;
#define SHIM_PROBE_STOCK (-1)
#define SHIM_PROBE_GO    (-2)

/* The fallback of a wrapper's decision: stock MPI's call, counted; only
 * the answer while probing. */
#define SHIM_FALLBACK(coll, call)                                          \
    (shim_probing ? SHIM_PROBE_STOCK : shim_fallback((coll), (call)))

/*
 * Offload it is: the communicator's state and the instance's number,
 * into *cp and k (zeroed here). SHIM_GO; SHIM_STOCK: after an agent
 * failure, run stock MPI on *use at once; SHIM_FAIL: out of memory (the
 * wrapper returns MPI_ERR_NO_MEM: other ranks may offload, so falling
 * back could hang).
 */
int shim_coll_begin(int coll, MPI_Comm comm, shim_comm_t **cp,
                    shim_call_t *k, MPI_Comm *use);

/* The same for a call no MPI collective does (a pattern group): after an
 * agent failure it is posted all the same, and stock MPI runs its
 * schedule. SHIM_GO or SHIM_FAIL. */
int shim_coll_begin_sched(int coll, MPI_Comm comm, shim_comm_t **cp,
                          shim_call_t *k);

#define SHIM_BEGIN(coll, comm, c, k, stock_call)                           \
    do {                                                                   \
        MPI_Comm use = (comm);                                             \
        int go_ = shim_coll_begin((coll), (comm), &(c), &(k), &use);       \
                                                                           \
        if (go_ == SHIM_PROBED) {                                          \
            return SHIM_PROBE_GO;                                          \
        }                                                                  \
        if (go_ == SHIM_STOCK) {                                           \
            return (stock_call);                                           \
        }                                                                  \
        if (go_ != SHIM_GO) {                                              \
            return MPI_ERR_NO_MEM;                                         \
        }                                                                  \
    } while (0)

/* Arrays of size entries for the builder's per-rank counts and offsets:
 * k->arrays holds them. NULL when out of memory. */
uint64_t *shim_call_arrays(shim_call_t *k, int size, int n);

/* Post k: MPI_SUCCESS and *req, or an MPI error code. Counts it. */
int shim_call_post(shim_comm_t *c, shim_call_t *k, MPI_Request *req);

/*
 * This rank's own arguments are erroneous in a way only it can see: post
 * the error all the same (the agent fails the instance on every rank, so
 * nobody waits for this one), and raise mpi_class on comm at once, as
 * MPI's own checks would.
 */
int shim_call_erroneous(shim_comm_t *c, shim_call_t *k, int status,
                        int mpi_class, MPI_Comm comm, MPI_Request *req,
                        const char *what);

/* A failed placement: MPI_ERR_TYPE becomes an erroneous post (a local
 * datatype MPI would refuse), anything else is returned. */
int shim_place_failed(shim_comm_t *c, shim_call_t *k, int rc, MPI_Comm comm,
                      MPI_Request *req);

/*
 * The neighbours of a communicator with a topology, in MPI's order
 * (coll_neigh.c): *indeg sources and *outdeg destinations, arrays the
 * caller frees; *cart set for a Cartesian one. 0, or -1 (no topology, or
 * out of memory).
 */
int shim_neighbors(MPI_Comm comm, int *indeg, int **srcs, int *outdeg,
                   int **dsts, int *cart);

/*
 * Post a list of transfers after shim_coll_begin: send i is block i of
 * *sb to comm rank speer[i], receive j block j of *rb from rpeer[j]
 * (MPI_PROC_NULL: none, its block empty). The k-th send to a peer meets
 * the peer's k-th receive from this rank: lists in that order.
 */
int shim_pairs_post(shim_comm_t *c, shim_call_t *k, const shim_blocks_t *sb,
                    const int *speer, const shim_blocks_t *rb,
                    const int *rpeer, MPI_Comm comm, MPI_Request *req);

/* Do [a, a + alen) and [b, b + blen) overlap? */
int shim_overlap(const void *a, size_t alen, const void *b, size_t blen);

/* Does k's send data (wherever it lies) overlap its receive region? */
int shim_send_overlaps(const shim_call_t *k);

/* The size of comm (0 for MPI_COMM_NULL). */
int shim_comm_size(MPI_Comm comm);

#endif
