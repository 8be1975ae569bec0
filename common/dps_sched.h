/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Schedules: what one rank does in one collective, as rounds of primitive
 * steps (in the manner of LibNBC's schedules). The shim compiles every
 * collective into one per rank (shim/coll_*.c); agents execute them
 * (dpu_agent/agent_sched.h) without knowing which collective it was.
 *
 * Steps name regions of the rank's three buffers of the instance: the
 * send and receive buffers the application gave (or the shim's packed
 * copies) and a temporary buffer the shim allocates. A step of round r
 * starts once every step of the rank's rounds below r is done. Transfers
 * pair up: the k-th SEND of rank s to rank d matches the k-th RECV or
 * RECV_REDUCE of rank d from rank s, and their lengths must be equal. The
 * receiver's side pulls (its agent orders the copy into its memory); a
 * SEND is done when its reader says so.
 */
#ifndef DPS_SCHED_H
#define DPS_SCHED_H

#include <stddef.h>
#include <stdint.h>

enum {
    DPS_STEP_SEND = 1,     /* peer may read src region */
    DPS_STEP_RECV,         /* read peer's data into dst region */
    DPS_STEP_RECV_REDUCE,  /* dst = peer's data (op) dst, element-wise */
    DPS_STEP_COPY,         /* local: src region -> dst region */
    DPS_STEP_REDUCE,       /* local: dst = src (op) dst */
    DPS_STEP_MAX
};

enum { DPS_BUF_SEND = 0, DPS_BUF_RECV = 1, DPS_BUF_TMP = 2, DPS_NBUF = 3 };

/* Reduction operations (MPI's predefined ones). */
enum {
    DPS_OP_NONE = 0, DPS_OP_MAX, DPS_OP_MIN, DPS_OP_SUM, DPS_OP_PROD,
    DPS_OP_LAND, DPS_OP_BAND, DPS_OP_LOR, DPS_OP_BOR, DPS_OP_LXOR,
    DPS_OP_BXOR, DPS_OP_MAXLOC, DPS_OP_MINLOC, DPS_OP_COUNT
};

/* Element types of reductions, in their packed (type size) form. */
enum {
    DPS_T_NONE = 0,
    DPS_T_I8, DPS_T_U8, DPS_T_I16, DPS_T_U16, DPS_T_I32, DPS_T_U32,
    DPS_T_I64, DPS_T_U64, DPS_T_FLOAT, DPS_T_DOUBLE, DPS_T_LDOUBLE,
    DPS_T_BOOL, DPS_T_CFLOAT, DPS_T_CDOUBLE, DPS_T_CLDOUBLE, DPS_T_BYTE,
    /* pairs for MAXLOC/MINLOC: value then int index, packed */
    DPS_T_FLOAT_INT, DPS_T_DOUBLE_INT, DPS_T_LONG_INT, DPS_T_2INT,
    DPS_T_SHORT_INT, DPS_T_LDOUBLE_INT,
    DPS_T_COUNT
};

typedef struct dps_step {
    uint8_t  kind;      /* DPS_STEP_* */
    uint8_t  src_buf;   /* DPS_BUF_*: SEND, COPY, REDUCE */
    uint8_t  dst_buf;   /* DPS_BUF_*: RECV, RECV_REDUCE, COPY, REDUCE */
    uint8_t  op;        /* DPS_OP_*: the reductions */
    uint16_t round;
    uint16_t dtype;     /* DPS_T_*: the reductions */
    uint32_t peer;      /* communicator rank: SEND, RECV, RECV_REDUCE */
    uint32_t pad;
    uint64_t src_off;   /* bytes into src_buf */
    uint64_t dst_off;   /* bytes into dst_buf */
    uint64_t len;       /* bytes */
} dps_step_t;
_Static_assert(sizeof(dps_step_t) == 40, "step layout");

#define DPS_MAX_STEPS (1u << 22)

/* Bytes of one element of a reduction type (0: unknown type). */
size_t dps_dtype_size(unsigned dtype);

/* Does op apply to dtype (MPI's table of ops and type classes)? */
int dps_op_valid(unsigned op, unsigned dtype);

/*
 * dst[i] = src[i] (op) dst[i] for n bytes of elements of dtype (n a
 * multiple of its size). Returns 0, or -1 for an op/type pair that does
 * not apply. Deterministic: the same inputs give the same bits.
 */
int dps_reduce(unsigned op, unsigned dtype, const void *src, void *dst,
               size_t n);

/*
 * Check a schedule of nsteps steps for a rank of a communicator of size
 * ranks, with buffers of the given lengths: every kind, buffer, peer,
 * op/type, region known and in bounds. Returns 0, or -1 with a reason in
 * err.
 */
int dps_sched_check(const dps_step_t *steps, uint32_t nsteps, uint32_t size,
                    const uint64_t buf_len[DPS_NBUF], char *err,
                    size_t err_len);

const char *dps_step_kind_str(unsigned kind);

#endif
