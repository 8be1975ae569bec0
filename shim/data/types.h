/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A call's data: what one offloaded collective moves, from where to where
 * (shim_call_t, with its staging and scatter maps), and the datatypes and
 * operations the MPI_I* wrappers describe it with (data/types.c,
 * data/rtypes.c).
 */
#ifndef SHIM_TYPES_H
#define SHIM_TYPES_H

#include "shim/compile/build.h"

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Data received through a contiguous staging buffer for datatypes that are
 * not contiguous (ranks may describe one message with different layouts
 * of the same type signature, so every rank offloads alike and a
 * non-contiguous one packs and unpacks): at completion, each block's
 * bytes at from + off are unpacked as count elements of types[type] at to.
 */
typedef struct shim_unpack_blk {
    void   *to;
    size_t  off;
    int     count;
    int     type;
} shim_unpack_blk_t;

/* A piece of a scatter map: len bytes at packed offset off go to addr. */
typedef struct shim_seg {
    uint64_t off;
    char    *addr;
    uint64_t len;
} shim_seg_t;

/* A received region's scatter map (data/flat.c) and which of its byte
 * ranges the DMA engine already read into place (the rest is unpacked at
 * completion). */
typedef struct shim_scatter {
    char       *base;     /* the staging buffer the agent addresses */
    uint64_t    len;
    shim_seg_t *seg;      /* by packed offset, contiguous, covering len */
    size_t      nseg, seg_cap;
    uint64_t   *done;     /* (off, len) pairs read into place */
    size_t      ndone, done_cap;
    int         registered; /* in the engine's table */
    struct shim_keep *keep; /* seg belongs to it (a reference held) */
} shim_scatter_t;

/*
 * A persistent collective's maps, made by its first start and kept with
 * the request: its buffers, counts and datatypes cannot change, so later
 * starts reuse them instead of walking every run of every datatype again
 * (an FFT transpose's 147,456 runs per peer). By side: 0 the send data's
 * gather map, 1 the received data's scatter map.
 */
typedef struct shim_keep {
    shim_seg_t *seg[2];
    size_t      nseg[2];
    uint64_t    len[2];
    int         none[2];  /* the first start found that no map pays */
    unsigned    refs;     /* the request's, and each map using seg (a
                           * request freed while active) */
} shim_keep_t;

/* A new shim_keep_t, one reference (the request's); NULL without memory. */
shim_keep_t *shim_keep_new(void);

/* Drop a reference; the last frees it. NULL is ignored. */
void shim_keep_unref(shim_keep_t *kp);

typedef struct shim_unpack {
    char              *from;    /* the staging buffer: NULL, none */
    shim_scatter_t    *scat;    /* its map onto the application's memory
                                 * (else blk, unpacked with MPI_Unpack) */
    int                nblk;
    shim_unpack_blk_t *blk;
    int                ntypes;
    MPI_Datatype      *types;   /* duplicates, freed after unpacking */
} shim_unpack_t;

/*
 * One collective call as this rank offloads it: the builder's arguments
 * and the buffers they refer to (the application's, or staging copies
 * the shim owns). Filled by the MPI_I* wrappers (wrap/).
 */
typedef struct shim_call {
    int           coll;         /* dps_coll_t */
    int           stat;         /* dps_coll_t of its statistics line (a
                                 * persistent form's, or coll) */
    uint32_t      seq;
    bld_args_t    args;         /* rank, size and agent set at the post */
    uint64_t     *arrays;       /* owned storage of args' arrays */
    void         *buf[2];       /* SEND, RECV: where the regions start */
    uint64_t      len[2];
    void         *owned;        /* a staging copy of the send data */
    int           gather_ok;    /* send data may stay unpacked (read in
                                 * place by DMA engines on this node) */
    shim_scatter_t *gather;     /* ... and does: its map (buf[0] is the
                                 * map's segments, never data) */
    shim_unpack_t unpack;       /* RECV staged, to unpack */
    shim_keep_t  *keep;         /* a persistent start's kept maps, or
                                 * NULL */
    int           error;        /* nonzero: this rank's arguments are
                                 * wrong (dps_status_t): the agent fails
                                 * the instance on every rank */
    uint64_t      bytes;        /* for the statistics */
} shim_call_t;

/* Release what a call owns (staging, arrays, datatype duplicates). */
void shim_call_clear(shim_call_t *k);

/* How count elements of a datatype lie in memory. */
typedef struct shim_layout {
    size_t   bytes;        /* data bytes: type size x count */
    size_t   size;         /* of one element */
    int      contig;       /* back to back, no gaps */
    MPI_Aint offset;       /* of the first byte from the buffer (true lb) */
    MPI_Aint extent;       /* of one element */
} shim_layout_t;

/* The layout of (dt, count): 1, or 0 when the arguments are such that the
 * MPI library must judge them (a null type or a negative count). */
int shim_layout(MPI_Datatype dt, int count, shim_layout_t *l);

/*
 * A call's data on one side: n blocks, block i being counts[i] (or count)
 * elements of types[i] (or type) at buf + displs[i] (bytes with types,
 * else elements of type's extent; 0 without displs), or at buf +
 * adispls[i] bytes. copy: stage it even if contiguous (in place: the data
 * is overwritten while it is read). spread: the blocks may lie in
 * unrelated allocations, so they are one region only if that region is
 * mostly theirs (else they go as a map, or staged).
 */
typedef struct shim_blocks {
    const void         *buf;
    int                 n;
    int                 count;
    const int          *counts;
    const int          *displs;
    MPI_Datatype        type;
    const MPI_Datatype *types;
    int                 copy;
    const MPI_Aint     *adispls;
    int                 spread;
} shim_blocks_t;

/*
 * Place a call's send (receive) data: k->buf[0] (k->buf[1]) and len
 * become one byte region holding every block, cnt[i] and off[i] block i's
 * bytes and place in it. Contiguous blocks stay in the application's
 * memory; otherwise they are packed into a staging copy now (send, owned
 * by k) or received into one and unpacked at completion (k->unpack).
 * MPI_SUCCESS, MPI_ERR_TYPE (a block MPI must judge), or another error.
 */
int shim_place_send(shim_call_t *k, const shim_blocks_t *b, uint64_t *cnt,
                    uint64_t *off);
int shim_place_recv(shim_call_t *k, const shim_blocks_t *b, uint64_t *cnt,
                    uint64_t *off);

/* Unpack staged received data into the application's layout; an MPI
 * error code. Then free what the unpack holds. */
int  shim_unpack_run(shim_unpack_t *u);
void shim_unpack_free(shim_unpack_t *u);

/* DPS_OP_* of a predefined MPI_Op; DPS_OP_NONE for any other
 * (data/rtypes.c). */
unsigned shim_op_of(MPI_Op op);

/*
 * At start-up, on every rank once the agents are ready (collective over
 * MPI_COMM_WORLD): find which predefined datatypes' reductions the agents
 * do, and with which operations. agent_formats: the DPS_FMT_* this rank's
 * agent computes (its READY).
 */
void shim_rtypes_init(unsigned agent_formats);

/*
 * Do the agents reduce elements of dt with op (a DPS_OP_*)? 0, with
 * *dtype their element type (DPS_T_*); else why not: SHIM_WHY_OP (no
 * predefined operation, or one MPI does not define on dt's class) or
 * SHIM_WHY_TYPE (any other datatype, or one whose arithmetic in this MPI
 * the agents do not reproduce).
 */
int shim_rtype(MPI_Datatype dt, unsigned op, unsigned *dtype);

#endif
