/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The datatypes and operations the MPI_I* wrappers describe a call's data
 * with (data/types.c, data/rtypes.c), placing it in the call
 * (data/call.h).
 */
#ifndef SHIM_TYPES_H
#define SHIM_TYPES_H

#include "shim/data/call.h"

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* How count elements of a datatype lie in memory. */
typedef struct shim_layout {
    size_t   bytes;  /* data bytes: type size x count */
    size_t   size;   /* of one element */
    int      contig; /* back to back, no gaps */
    MPI_Aint offset; /* of the first byte from the buffer (true lb) */
    MPI_Aint extent; /* of one element */
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
 * DPS_OK; DPS_ERR_INVALID (a block MPI must judge: a count or datatype
 * it would refuse), DPS_ERR_NOMEM, or DPS_ERR_MPI (MPI could not pack,
 * logged).
 */
dps_status_t shim_place_send(shim_call_t *k, const shim_blocks_t *b,
                             uint64_t *cnt, uint64_t *off);
dps_status_t shim_place_recv(shim_call_t *k, const shim_blocks_t *b,
                             uint64_t *cnt, uint64_t *off);

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
