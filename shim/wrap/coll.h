/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the MPI_I* wrappers (wrap/move.c, wrap/reduce.c) share
 * (wrap/call.c). A wrapper decides between offload and stock MPI on
 * values the standard requires to be alike on every rank (the
 * communicator, root, operation, element type, the size where every rank
 * knows it) and on the environment, never on a rank's own layout or
 * counts: every rank takes the same path. It then describes where its
 * data lies (data/types.h) and posts.
 */
#ifndef COLL_H
#define COLL_H

#include "shim/args/args.h"
#include "shim/core/shim.h"
#include "shim/data/types.h"

/*
 * How a call is made, passed down its phases (decide, begin, post) by
 * whoever makes it, read only: the application through a public wrapper
 * (all zero: shim_ctx_app), a persistent init (as) or a persistent
 * request's start (as, keep, pin, stream). What a phase finds is its
 * return value, never written here.
 */
typedef struct shim_ctx {
    int                 as;     /* a persistent form's dps_coll_t, whose
                                 * switch and statistics line the call
                                 * uses; 0: the call's own */
    shim_keep_t        *keep;   /* a start's kept maps, or NULL */
    struct shim_sched **pin;    /* where a start pins its schedule */
    shim_comm_t        *stream; /* a start's matching stream
                                 * (shim_comm_stream_new), used in place
                                 * of its communicator's state */
} shim_ctx_t;

enum { SHIM_OFFLOAD = 1, SHIM_TO_STOCK };

/* The decide phase's answer for one call (shim_coll_decide). */
typedef struct shim_verdict {
    int          go;  /* SHIM_OFFLOAD or SHIM_TO_STOCK */
    int          why; /* why stock MPI (SHIM_WHY_*): set by the test that
                       * says no, counted by shim_fallback */
    shim_check_t chk; /* MPI's verdict on the arguments (chk.cls
                       * MPI_SUCCESS: none, or not checked); refused, go
                       * is what the ranks whose calls are right do */
} shim_verdict_t;

/* The application's own call's context. */
static inline shim_ctx_t shim_ctx_app(void)
{
    shim_ctx_t x = {0};

    return x;
}

/* Offload considered for coll on comm (x->as's switch while a persistent
 * form starts): the shim is on, the switch is on, comm an
 * intracommunicator. Sets *why (SHIM_WHY_OTHER when yes: a new
 * decision). */
int shim_coll_wanted(const shim_ctx_t *x, int coll, MPI_Comm comm, int *why);

/* Large enough to offload (DPUSHIM_MIN_BYTES), for a size every rank
 * knows; collectives whose sizes differ by rank offload whenever any
 * size would (shim_any_size). No: *why says so (why may be NULL). */
int shim_big_enough(int *why, uint64_t bytes);
int shim_any_size(int *why);

/* Large enough to offload: count elements of dt by the type signature
 * (shim_big_enough). For a call MPI refuses (refused), whose count or
 * datatype may be the wrong input and say nothing of the other ranks'
 * sizes: whenever some size offloads (shim_any_size). */
int shim_size_offloads(int *why, MPI_Datatype dt, int count, int refused);

/* Count a fallback of coll (x->as's while a persistent form starts) to
 * stock MPI, under why (SHIM_WHY_*); returns rc (the PMPI call's). */
int shim_fallback(const shim_ctx_t *x, int why, int coll, int rc);

/* The entries of common/dps_colls.h: shim_coll_<entry>(a, x) offloads
 * the call a describes (a->coll one of the row's ids, nonblocking), made
 * as x says, or leaves it to stock MPI: the public wrapper MPI_I<name>
 * (wrap/colls.c) calls it, and so do a persistent request's starts
 * (pers/init.c). An MPI return code. shim_decide_<entry>(a, x) is
 * its decide phase alone, for a persistent init's question (the answer is
 * the same at every start: it depends on the arguments, the switches and
 * the sizes alone): MPI's checks of the *_init form x->as, nothing done. */
#define SHIM_COLL_ENTRY(ID, name, Name, family, shape, entry)              \
    int shim_coll_##entry(const shim_coll_args_t *a, const shim_ctx_t *x); \
    shim_verdict_t shim_decide_##entry(const shim_coll_args_t *a,          \
                                       const shim_ctx_t       *x);
DPS_COLLS(SHIM_COLL_ENTRY)
#undef SHIM_COLL_ENTRY

/* Stock MPI's nonblocking call for a's collective, on comm, into *req
 * (never counted). */
int shim_coll_stock(const shim_coll_args_t *a, MPI_Comm comm,
                    MPI_Request *req);

/* The same on use, a's communicator or its twin after an agent failure:
 * an error is raised on a's communicator, as without the shim (twins
 * return errors, shim_comm_state_new). */
int shim_coll_stock_as(const shim_coll_args_t *a, MPI_Comm use,
                       MPI_Request *req);

/* Whether the ranks offload a call with a's arguments, on what they know
 * alike. chk NULL: the call passed MPI's checks. Else MPI refuses it
 * (chk says why): decide without the inputs it has wrong, as the ranks
 * whose calls are right would (shim_call_rejected). */
typedef int (*shim_offloads_fn)(const shim_coll_args_t *a,
                                const shim_check_t *chk, int *why);

/*
 * The decide phase of every entry, after the re-entry test: is the call
 * wanted (shim_coll_wanted), does MPI refuse it (shim_coll_check; init:
 * the checks of the persistent init x->as), and does offloads say yes.
 * Nothing is done.
 */
shim_verdict_t shim_coll_decide(const shim_coll_args_t *a,
                                shim_offloads_fn offloads, const shim_ctx_t *x,
                                int init);

/*
 * A call the verdict v does not offload as it is: MPI refuses it
 * (shim_call_rejected), or stock MPI's call, counted as a fallback. The
 * call's result.
 */
int shim_coll_not_offloaded(const shim_coll_args_t *a, const shim_verdict_t *v,
                            const shim_ctx_t *x);

/*
 * A nonblocking call MPI refuses at call time (shim_coll_check said so
 * in *chk): refuse it as MPI does, and let no other rank wait for it.
 * offload is the decision the ranks whose calls are right make (wrap/coll.h's
 * rule: on what every rank knows alike), taken by the wrapper without
 * the inputs this call has wrong (chk->bad; an unknown size: any size
 * that offloads). Offload: the instance is posted as erroneous (the
 * agent fails it on every rank: their requests end with an error) and
 * chk->cls is raised on chk->raise_on, as MPI's own check does. Else:
 * stock MPI's call, which refuses it itself. Either way nothing is
 * offloaded: counted as a fallback.
 *
 * Where the guess is wrong (the others' sizes, unknown here, fall below
 * DPUSHIM_MIN_BYTES and they run stock MPI), this rank's erroneous
 * instance has no partner: nothing waits for it in the shim, and it ends
 * at once here; the others' stock call waits for this rank as it would
 * under stock MPI, and their next offloaded call on the communicator
 * meets the failed instance and fails (the instance numbers then differ
 * by one: after an error the communicator is not usable, as under MPI).
 */
int shim_call_rejected(const shim_coll_args_t *a, const shim_check_t *chk,
                       int offload, const shim_ctx_t *x, int why);

enum { SHIM_GO, SHIM_STOCK, SHIM_FAIL };

/*
 * Offload it is: the communicator's state and the instance's number,
 * into *cp and k (zeroed here). SHIM_GO; SHIM_STOCK: after an agent
 * failure, run stock MPI on *use at once; SHIM_FAIL: out of memory (the
 * wrapper returns MPI_ERR_NO_MEM: other ranks may offload, so falling
 * back could hang).
 */
int shim_coll_begin(const shim_ctx_t *x, int coll, MPI_Comm comm,
                    shim_comm_t **cp, shim_call_t *k, MPI_Comm *use);

/* The same for a call no MPI collective does (a pattern group): after an
 * agent failure it is posted all the same, and stock MPI runs its
 * schedule. SHIM_GO or SHIM_FAIL. */
int shim_coll_begin_sched(const shim_ctx_t *x, int coll, MPI_Comm comm,
                          shim_comm_t **cp, shim_call_t *k);

/* What a wrapper does once the call is to be offloaded: place a's data
 * in k (begun on c by shim_coll_begin) and post it (shim_call_post).
 * Returns the call's result. */
typedef int (*shim_post_fn)(shim_comm_t *c, shim_call_t *k,
                            const shim_coll_args_t *a);

/*
 * Every MPI_I* wrapper's skeleton (the house style's), for the call with
 * a's arguments: the shim inactive or re-entered, stock MPI's call; else
 * shim_coll_decide's verdict by offloads; not offloaded,
 * shim_coll_not_offloaded; offloaded, shim_coll_begin and post. The
 * call's result.
 */
int shim_coll_run(const shim_coll_args_t *a, const shim_ctx_t *x,
                  shim_offloads_fn offloads, shim_post_fn post);

/* Define the entry shim_coll_<entry> of a row (common/dps_colls.h) as
 * shim_coll_run with its decision and post functions, and its decide
 * phase shim_decide_<entry>. */
#define SHIM_COLL_ENTRY_RUN(entry, offloads, post)                        \
    int shim_coll_##entry(const shim_coll_args_t *a, const shim_ctx_t *x) \
    {                                                                     \
        return shim_coll_run(a, x, offloads, post);                       \
    }                                                                     \
    shim_verdict_t shim_decide_##entry(const shim_coll_args_t *a,         \
                                       const shim_ctx_t       *x)         \
    {                                                                     \
        return shim_coll_decide(a, offloads, x, 1);                       \
    }

/* Arrays of size entries for the builder's per-rank counts and offsets:
 * k->arrays holds them. NULL when out of memory. */
uint64_t *shim_call_arrays(shim_call_t *k, int size, int n);

/* Post k: MPI_SUCCESS and *req, or an MPI error code. Counts it. */
int shim_call_post(shim_comm_t *c, shim_call_t *k, MPI_Request *req);

/*
 * This rank's own arguments are erroneous in a way only it can see: post
 * the error all the same (the agent fails the instance on every rank, so
 * nobody waits for this one), and raise mpi_class on comm (the handler's
 * communicator) at once, as MPI's own checks would. req may be NULL.
 */
int shim_call_erroneous(shim_comm_t *c, shim_call_t *k, int status,
                        int mpi_class, MPI_Comm comm, MPI_Request *req,
                        const char *what);

/* A failed placement (shim_place_send/recv's status st), as an erroneous
 * post: DPS_ERR_INVALID raises MPI_ERR_TYPE (a local datatype MPI would
 * refuse), anything else its own class (shim_mpi_error), returned. */
int shim_place_failed(shim_comm_t *c, shim_call_t *k, dps_status_t st,
                      MPI_Comm comm, MPI_Request *req);

/*
 * The neighbours of a communicator with a topology, in MPI's order
 * (wrap/neigh.c): *indeg sources and *outdeg destinations, arrays the
 * caller frees; *cart set for a Cartesian one. DPS_OK; DPS_ERR_INVALID
 * (no topology, or MPI refused); DPS_ERR_NOMEM.
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
