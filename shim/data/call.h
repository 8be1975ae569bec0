/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One offloaded collective call as this rank describes it: what it moves,
 * from where to where (shim_call_t), with its staging and scatter maps
 * and a persistent request's kept maps. The wrappers fill it (wrap/,
 * through data/types.h), the core posts it (core/op.c).
 */
#ifndef SHIM_CALL_H
#define SHIM_CALL_H

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
    void  *to;
    size_t off;
    int    count;
    int    type;
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
    char             *base; /* the staging buffer the agent addresses */
    uint64_t          len;
    shim_seg_t       *seg; /* by packed offset, contiguous, covering len */
    size_t            nseg, seg_cap;
    uint64_t         *done; /* (off, len) pairs read into place */
    size_t            ndone, done_cap;
    int               registered; /* in the engine's table */
    struct shim_keep *keep;       /* seg belongs to it (a reference held) */
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
    int         none[2]; /* the first start found that no map pays */
    unsigned    refs;    /* the request's, and each map using seg (a
                          * request freed while active) */
} shim_keep_t;

/* A new shim_keep_t, one reference (the request's); NULL without memory. */
shim_keep_t *shim_keep_new(void);

/* Drop a reference; the last frees it. NULL is ignored. */
void shim_keep_unref(shim_keep_t *kp);

typedef struct shim_unpack {
    char              *from; /* the staging buffer: NULL, none */
    shim_scatter_t    *scat; /* its map onto the application's memory
                              * (else blk, unpacked with MPI_Unpack) */
    int                nblk;
    shim_unpack_blk_t *blk;
    int                ntypes;
    MPI_Datatype      *types; /* duplicates, freed after unpacking */
} shim_unpack_t;

/*
 * One collective call as this rank offloads it: the builder's arguments
 * and the buffers they refer to (the application's, or staging copies
 * the shim owns). Filled by the MPI_I* wrappers (wrap/).
 */
typedef struct shim_call {
    int                 coll; /* dps_coll_t */
    int                 stat; /* dps_coll_t of its statistics line (a
                               * persistent form's, or coll) */
    uint32_t            seq;
    bld_args_t          args;   /* rank, size and agent set at the post */
    uint64_t           *arrays; /* owned storage of args' arrays */
    void               *buf[2]; /* SEND, RECV: where the regions start */
    uint64_t            len[2];
    void               *owned;     /* a staging copy of the send data */
    int                 gather_ok; /* send data may stay unpacked (read in
                                    * place by DMA engines on this node) */
    shim_scatter_t     *gather;    /* ... and does: its map (buf[0] is the
                                    * map's segments, never data) */
    shim_unpack_t       unpack;    /* RECV staged, to unpack */
    shim_keep_t        *keep;      /* a persistent start's kept maps, or
                                    * NULL */
    struct shim_sched **pin;       /* where a persistent start pins its
                                    * schedule (shim_sched_pinned), or NULL */
    int                 error;     /* nonzero: this rank's arguments are
                                    * wrong (dps_status_t): the agent fails
                                    * the instance on every rank */
    uint64_t            bytes;     /* for the statistics */
} shim_call_t;

/* Unpack staged received data into the application's layout: DPS_OK, or
 * DPS_ERR_MPI (MPI_Unpack failed; logged). Then free what the unpack
 * holds. */
dps_status_t shim_unpack_run(shim_unpack_t *u);

/* Release what a call owns (staging, arrays, datatype duplicates). */
void shim_call_clear(shim_call_t *k);

#endif
