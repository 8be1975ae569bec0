/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Builders: every collective compiled into the schedule of one rank
 * (common/dps_sched.h). Pure functions of the arguments, with no MPI
 * calls: the shim gives them byte counts and offsets, and they give back
 * steps. One way down: compile/build.c picks the family, whose builders
 * are in compile/moves.c (data movement, neighbourhood collectives and
 * pattern groups) and compile/reductions.c; they write steps with
 * compile/steps.c, where the step buffer and the topology (which ranks
 * share an agent) are.
 *
 * Buffers of a schedule (DPS_BUF_*): SEND holds this rank's input and is
 * never written; RECV is its output; TMP is scratch the shim allocates
 * (bld_t.need[DPS_BUF_TMP] bytes). A schedule writes a region of RECV or
 * TMP before it reads it, so that running it again from the start gives
 * the same result: stock MPI can redo a schedule an agent left half done
 * (shim/core/redo.c).
 */
#ifndef BUILD_H
#define BUILD_H

#include "shim/compile/steps.h"
#include "common/dps_sched.h"

#include <stddef.h>
#include <stdint.h>

/* Reductions up to this many bytes: leaders exchange whole partial
 * results and each folds them in the same order (one round between
 * agents); above it, a ring reduce-scatter and an allgather (2 (G-1)/G
 * of the vector per agent, whatever the number of agents G). */
#define BLD_SMALL_REDUCE (64u * 1024)

/* A bcast among three agents or more goes down a chain of agents in up
 * to BLD_CHAIN_SEGS pieces of at least BLD_CHAIN_SEG bytes, or down a
 * binomial tree of agents, whichever a BlueField-2 with HDR100 finishes
 * first (scripts/bench/model.py's parameters): a hop between agents
 * costs BLD_HOP_NS and its bytes BLD_NS_PER_KB per KiB (12.5 GB/s). */
#define BLD_CHAIN_SEG  (64u * 1024)
#define BLD_CHAIN_SEGS 16u
#define BLD_HOP_NS     4000u
#define BLD_NS_PER_KB  82u

/* The number of pieces of an n-byte bcast's chain among ngroups agents,
 * or 0 where the tree is faster (the same on every rank). */
uint32_t bld_chain_pieces(uint64_t n, uint32_t ngroups);

/* What a builder is asked for. Counts and offsets are bytes. */
typedef struct bld_args {
    int             coll;       /* dps_coll_t */
    uint32_t        size, rank; /* the communicator */
    const uint32_t *agent;      /* agent index of each comm rank */
    uint32_t        root;
    uint8_t         op;    /* reductions: DPS_OP_* */
    uint16_t        dtype; /* reductions: DPS_T_* */
    uint64_t        bytes; /* a block (alltoall, allgather, gather,
                            * scatter), the message (bcast), the
                            * vector (reduce, allreduce, scan,
                            * exscan), a result block
                            * (reduce_scatter_block); for gatherv and
                            * scatterv this rank's own block */
    /* Per comm rank (v and w variants, reduce_scatter), else NULL:
     * bytes to / from each rank and where they lie in SEND / RECV.
     * reduce_scatter takes rcount alone, the same on every rank. */
    const uint64_t *scount, *soff, *rcount, *roff;
    int             in_place; /* gather(v) root, scatter(v) root,
                               * allgather(v): this rank's block is in
                               * RECV already (SEND empty) */
    /* Neighbourhood collectives and pattern groups: this rank's sends
     * then receives, (peer, offset, bytes) each, offsets into SEND and
     * RECV. The k-th send to a peer meets the peer's k-th receive from
     * this rank, so the caller lists them in the order that pairs them. */
    uint32_t        nsend, nrecv;
    const uint64_t *pairs;
} bld_args_t;

/*
 * Build the schedule of args->rank into b (zeroed by the caller; free
 * b->steps after). Returns DPS_OK; DPS_ERR_NOMEM; or DPS_ERR_INVALID
 * when the arguments are outside what the builders take (a bug in the
 * caller).
 */
int bld_build(const bld_args_t *args, bld_t *b);

/* The families (compile/moves.c, compile/reductions.c); b and topo set up. */
int bld_move(const bld_args_t *a, const bld_topo_t *t, bld_t *b);
int bld_reduction(const bld_args_t *a, const bld_topo_t *t, bld_t *b);

/* Transfers listed by the caller (bld_args_t.pairs), all at once. */
int bld_pairs(const bld_args_t *a, bld_t *b);

#endif
