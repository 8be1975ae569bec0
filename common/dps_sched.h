/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Schedules: what one rank does in one collective, as rounds of primitive
 * steps (in the manner of LibNBC's schedules). The shim compiles every
 * collective into one per rank (shim/compile/); agents execute them
 * (dpu_agent/sched/agent_sched.h) without knowing which collective it was.
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

#include "common/dps_status.h"

#include <stddef.h>
#include <stdint.h>

enum {
    DPS_STEP_SEND = 1,    /* peer may read src region */
    DPS_STEP_RECV,        /* read peer's data into dst region */
    DPS_STEP_RECV_REDUCE, /* dst = peer's data (op) dst, element-wise */
    DPS_STEP_COPY,        /* local: src region -> dst region */
    DPS_STEP_REDUCE,      /* local: dst = src (op) dst */
    DPS_STEP_MAX
};

enum { DPS_BUF_SEND = 0, DPS_BUF_RECV = 1, DPS_BUF_TMP = 2, DPS_NBUF = 3 };

/* Reduction operations (MPI's predefined ones). */
enum {
    DPS_OP_NONE = 0,
    DPS_OP_MAX,
    DPS_OP_MIN,
    DPS_OP_SUM,
    DPS_OP_PROD,
    DPS_OP_LAND,
    DPS_OP_BAND,
    DPS_OP_LOR,
    DPS_OP_BOR,
    DPS_OP_LXOR,
    DPS_OP_BXOR,
    DPS_OP_MAXLOC,
    DPS_OP_MINLOC,
    DPS_OP_COUNT
};

/*
 * Element types of reductions: what the bytes are, the same on every ISA
 * (an agent may be an aarch64 DPU serving x86-64 hosts), never "the C
 * type of this machine". Integers are little-endian two's complement;
 * floating point IEEE 754 binary32, binary64, binary128, or x87 80-bit
 * extended in 16 bytes (x86-64's long double: its 6 padding bytes are
 * never written, as MPI's own loops leave them). Logicals: nonzero is
 * true, results are 1 or 0. Complex: (real, imaginary) of the type
 * before. Pairs for MAXLOC/MINLOC: value then index, packed (no padding
 * between or after). Codes are wire values: append only, and bump
 * DPS_PROTO_VERSION when a meaning changes.
 */
enum {
    DPS_T_NONE = 0,
    DPS_T_I8,
    DPS_T_U8,
    DPS_T_I16,
    DPS_T_U16,
    DPS_T_I32,
    DPS_T_U32,
    DPS_T_I64,
    DPS_T_U64,
    DPS_T_F32,
    DPS_T_F64,
    DPS_T_X87,
    DPS_T_F128,
    DPS_T_L8,
    DPS_T_L32,
    DPS_T_C32,
    DPS_T_C64,
    DPS_T_CX87,
    DPS_T_C128,
    DPS_T_F32_I32,
    DPS_T_F64_I32,
    DPS_T_I64_I32,
    DPS_T_I32_I32,
    DPS_T_I16_I32,
    DPS_T_X87_I32,
    DPS_T_F32_F32,
    DPS_T_F64_F64,
    DPS_T_COUNT
};

/* Floating-point formats a build may not compute (dps_reduce_formats):
 * the types built on them need every agent and rank to compute them. */
#define DPS_FMT_X87  1u /* x87 80-bit extended (x86 only) */
#define DPS_FMT_F128 2u /* IEEE 754 binary128 (_Float128) */

typedef struct dps_step {
    uint8_t  kind;    /* DPS_STEP_* */
    uint8_t  src_buf; /* DPS_BUF_*: SEND, COPY, REDUCE */
    uint8_t  dst_buf; /* DPS_BUF_*: RECV, RECV_REDUCE, COPY, REDUCE */
    uint8_t  op;      /* DPS_OP_*: the reductions */
    uint16_t round;
    uint16_t dtype; /* DPS_T_*: the reductions */
    uint32_t peer;  /* communicator rank: SEND, RECV, RECV_REDUCE */
    uint32_t pad;
    uint64_t src_off; /* bytes into src_buf */
    uint64_t dst_off; /* bytes into dst_buf */
    uint64_t len;     /* bytes */
} dps_step_t;
_Static_assert(sizeof(dps_step_t) == 40, "step layout");

#define DPS_MAX_STEPS (1u << 22)

/* Bytes of one element of a reduction type (0: unknown type). */
size_t dps_dtype_size(unsigned dtype);

/* The DPS_FMT_* a type needs (0: none beyond binary32/64 and integers). */
unsigned dps_dtype_format(unsigned dtype);

/* The DPS_FMT_* formats this build computes. */
unsigned dps_reduce_formats(void);

/* "f64", "x87_i32", ...; "?" when unknown. */
const char *dps_dtype_str(unsigned dtype);

/* "sum", "maxloc", ...; "?" when unknown. */
const char *dps_op_str(unsigned op);

/* Does op apply to dtype, and does this build compute it (1 or 0)?
 * (Integers: every op but MAXLOC/MINLOC; floating point: MAX, MIN, SUM,
 * PROD; logicals: LAND, LOR, LXOR; complex: SUM, PROD; pairs: MAXLOC,
 * MINLOC. Which MPI types may use which ops is the shim's business.) */
int dps_op_valid(unsigned op, unsigned dtype);

/*
 * dst[i] = dst[i] (op) src[i] for n bytes of elements of dtype (n a
 * multiple of its size), with dst the left operand, as both MPIs' loops
 * have it (inout = inout > in ? inout : in): MAX takes src's value
 * unless dst's is greater (so of +0 and -0, src's), MIN unless dst's is
 * less; MAXLOC/MINLOC take src's pair when its value is better, and on
 * equal values keep dst's value with the lesser index. Returns DPS_OK, or
 * DPS_ERR_INVALID for an op/type pair that does not apply.
 * Deterministic: the same inputs give the same bits, on any ISA whose
 * build computes the type (no contraction into FMA: -ffp-contract=off).
 */
int dps_reduce(unsigned op, unsigned dtype, const void *src, void *dst,
               size_t n);

/*
 * Check a schedule of nsteps steps for a rank of a communicator of size
 * ranks, with buffers of the given lengths: every kind, buffer, peer,
 * op/type, region known and in bounds. Returns DPS_OK, or DPS_ERR_PROTO
 * (a malformed schedule) with a reason in err.
 */
int dps_sched_check(const dps_step_t *steps, uint32_t nsteps, uint32_t size,
                    const uint64_t buf_len[DPS_NBUF], char *err,
                    size_t err_len);

const char *dps_step_kind_str(unsigned kind);

#endif
