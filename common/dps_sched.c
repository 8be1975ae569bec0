/* SPDX-License-Identifier: BSD-3-Clause */
/* Schedule steps: checks, and the reduction kernels agents run. */
#include "dps_sched.h"

#include <complex.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Packed pair layouts: value, then int (no padding). */
#define PAIR_SIZE(vt) (sizeof(vt) + sizeof(int))

size_t dps_dtype_size(unsigned dtype)
{
    switch (dtype) {
    case DPS_T_I8: case DPS_T_U8: case DPS_T_BYTE: return 1;
    case DPS_T_BOOL: return sizeof(bool);
    case DPS_T_I16: case DPS_T_U16: return 2;
    case DPS_T_I32: case DPS_T_U32: case DPS_T_FLOAT: return 4;
    case DPS_T_I64: case DPS_T_U64: case DPS_T_DOUBLE: return 8;
    case DPS_T_LDOUBLE: return sizeof(long double);
    case DPS_T_CFLOAT: return sizeof(float _Complex);
    case DPS_T_CDOUBLE: return sizeof(double _Complex);
    case DPS_T_CLDOUBLE: return sizeof(long double _Complex);
    case DPS_T_FLOAT_INT: return PAIR_SIZE(float);
    case DPS_T_DOUBLE_INT: return PAIR_SIZE(double);
    case DPS_T_LONG_INT: return PAIR_SIZE(long);
    case DPS_T_2INT: return PAIR_SIZE(int);
    case DPS_T_SHORT_INT: return PAIR_SIZE(short);
    case DPS_T_LDOUBLE_INT: return PAIR_SIZE(long double);
    default: return 0;
    }
}

static int is_int(unsigned t)
{
    return t >= DPS_T_I8 && t <= DPS_T_U64;
}

static int is_float(unsigned t)
{
    return t == DPS_T_FLOAT || t == DPS_T_DOUBLE || t == DPS_T_LDOUBLE;
}

static int is_complex(unsigned t)
{
    return t == DPS_T_CFLOAT || t == DPS_T_CDOUBLE || t == DPS_T_CLDOUBLE;
}

static int is_pair(unsigned t)
{
    return t >= DPS_T_FLOAT_INT && t <= DPS_T_LDOUBLE_INT;
}

int dps_op_valid(unsigned op, unsigned t)
{
    switch (op) {
    case DPS_OP_MAX: case DPS_OP_MIN:
        return is_int(t) || is_float(t);
    case DPS_OP_SUM: case DPS_OP_PROD:
        return is_int(t) || is_float(t) || is_complex(t);
    case DPS_OP_LAND: case DPS_OP_LOR: case DPS_OP_LXOR:
        return is_int(t) || t == DPS_T_BOOL;
    case DPS_OP_BAND: case DPS_OP_BOR: case DPS_OP_BXOR:
        return is_int(t) || t == DPS_T_BYTE;
    case DPS_OP_MAXLOC: case DPS_OP_MINLOC:
        return is_pair(t);
    default:
        return 0;
    }
}

/* Element-wise loops. Values are copied in and out with memcpy: the
 * buffers may be unaligned (packed data, offsets into staging). */
#define LOOP(T, EXPR)                                                      \
    do {                                                                   \
        size_t i_, n_ = n / sizeof(T);                                     \
                                                                           \
        for (i_ = 0; i_ < n_; i_++) {                                      \
            T a, b;                                                        \
                                                                           \
            memcpy(&a, (const char *)src + i_ * sizeof(T), sizeof(T));     \
            memcpy(&b, (char *)dst + i_ * sizeof(T), sizeof(T));           \
            b = (EXPR);                                                    \
            memcpy((char *)dst + i_ * sizeof(T), &b, sizeof(T));           \
        }                                                                  \
    } while (0)

#define ARITH(T)                                                           \
    switch (op) {                                                          \
    case DPS_OP_MAX: LOOP(T, a > b ? a : b); return 0;                     \
    case DPS_OP_MIN: LOOP(T, a < b ? a : b); return 0;                     \
    case DPS_OP_SUM: LOOP(T, a + b); return 0;                             \
    case DPS_OP_PROD: LOOP(T, a * b); return 0;                            \
    default: break;                                                        \
    }

#define INTOPS(T)                                                          \
    ARITH(T)                                                               \
    switch (op) {                                                          \
    case DPS_OP_LAND: LOOP(T, (T)(a && b)); return 0;                      \
    case DPS_OP_LOR: LOOP(T, (T)(a || b)); return 0;                       \
    case DPS_OP_LXOR: LOOP(T, (T)(!a != !b)); return 0;                    \
    case DPS_OP_BAND: LOOP(T, (T)(a & b)); return 0;                       \
    case DPS_OP_BOR: LOOP(T, (T)(a | b)); return 0;                        \
    case DPS_OP_BXOR: LOOP(T, (T)(a ^ b)); return 0;                       \
    default: return -1;                                                    \
    }

#define CPLX(T)                                                            \
    switch (op) {                                                          \
    case DPS_OP_SUM: LOOP(T, a + b); return 0;                             \
    case DPS_OP_PROD: LOOP(T, a * b); return 0;                            \
    default: return -1;                                                    \
    }

/*
 * MAXLOC/MINLOC on packed (value, int) pairs: the better value wins; on a
 * tie the lower index (MPI's definition).
 */
#define PAIRS(VT)                                                          \
    do {                                                                   \
        size_t i_, es_ = PAIR_SIZE(VT), n_ = n / es_;                      \
                                                                           \
        for (i_ = 0; i_ < n_; i_++) {                                      \
            const char *s_ = (const char *)src + i_ * es_;                 \
            char *d_ = (char *)dst + i_ * es_;                             \
            VT av, bv;                                                     \
            int ai, bi, take;                                              \
                                                                           \
            memcpy(&av, s_, sizeof(VT));                                   \
            memcpy(&ai, s_ + sizeof(VT), sizeof(int));                     \
            memcpy(&bv, d_, sizeof(VT));                                   \
            memcpy(&bi, d_ + sizeof(VT), sizeof(int));                     \
            take = op == DPS_OP_MAXLOC ? av > bv : av < bv;                \
            if (take || (av == bv && ai < bi)) {                           \
                memcpy(d_, s_, es_);                                       \
            }                                                              \
        }                                                                  \
        return 0;                                                          \
    } while (0)

int dps_reduce(unsigned op, unsigned dtype, const void *src, void *dst,
               size_t n)
{
    if (!dps_op_valid(op, dtype)) {
        return -1;
    }
    switch (dtype) {
    case DPS_T_I8: { INTOPS(int8_t) }
    case DPS_T_U8: { INTOPS(uint8_t) }
    case DPS_T_I16: { INTOPS(int16_t) }
    case DPS_T_U16: { INTOPS(uint16_t) }
    case DPS_T_I32: { INTOPS(int32_t) }
    case DPS_T_U32: { INTOPS(uint32_t) }
    case DPS_T_I64: { INTOPS(int64_t) }
    case DPS_T_U64: { INTOPS(uint64_t) }
    case DPS_T_FLOAT: { ARITH(float) return -1; }
    case DPS_T_DOUBLE: { ARITH(double) return -1; }
    case DPS_T_LDOUBLE: { ARITH(long double) return -1; }
    case DPS_T_BOOL:
        switch (op) {
        case DPS_OP_LAND: LOOP(bool, a && b); return 0;
        case DPS_OP_LOR: LOOP(bool, a || b); return 0;
        case DPS_OP_LXOR: LOOP(bool, a != b); return 0;
        default: return -1;
        }
    case DPS_T_BYTE:
        switch (op) {
        case DPS_OP_BAND: LOOP(uint8_t, (uint8_t)(a & b)); return 0;
        case DPS_OP_BOR: LOOP(uint8_t, (uint8_t)(a | b)); return 0;
        case DPS_OP_BXOR: LOOP(uint8_t, (uint8_t)(a ^ b)); return 0;
        default: return -1;
        }
    case DPS_T_CFLOAT: { CPLX(float _Complex) }
    case DPS_T_CDOUBLE: { CPLX(double _Complex) }
    case DPS_T_CLDOUBLE: { CPLX(long double _Complex) }
    case DPS_T_FLOAT_INT: PAIRS(float);
    case DPS_T_DOUBLE_INT: PAIRS(double);
    case DPS_T_LONG_INT: PAIRS(long);
    case DPS_T_2INT: PAIRS(int);
    case DPS_T_SHORT_INT: PAIRS(short);
    case DPS_T_LDOUBLE_INT: PAIRS(long double);
    default:
        return -1;
    }
}

const char *dps_step_kind_str(unsigned kind)
{
    static const char *names[] = {"?", "send", "recv", "recv_reduce",
                                  "copy", "reduce"};

    return kind < DPS_STEP_MAX ? names[kind] : "?";
}

static int region_ok(unsigned buf, uint64_t off, uint64_t len,
                     const uint64_t buf_len[DPS_NBUF])
{
    return buf < DPS_NBUF && off <= buf_len[buf] &&
           len <= buf_len[buf] - off;
}

int dps_sched_check(const dps_step_t *steps, uint32_t nsteps, uint32_t size,
                    const uint64_t buf_len[DPS_NBUF], char *err,
                    size_t err_len)
{
    uint32_t i;

    if (nsteps > DPS_MAX_STEPS) {
        snprintf(err, err_len, "%u steps", nsteps);
        return -1;
    }
    for (i = 0; i < nsteps; i++) {
        const dps_step_t *s = &steps[i];
        int src = 0, dst = 0, peer = 0, red = 0;

        switch (s->kind) {
        case DPS_STEP_SEND: src = peer = 1; break;
        case DPS_STEP_RECV: dst = peer = 1; break;
        case DPS_STEP_RECV_REDUCE: dst = peer = red = 1; break;
        case DPS_STEP_COPY: src = dst = 1; break;
        case DPS_STEP_REDUCE: src = dst = red = 1; break;
        default:
            snprintf(err, err_len, "step %u: kind %u", i, s->kind);
            return -1;
        }
        if ((peer && s->peer >= size) ||
            (src && !region_ok(s->src_buf, s->src_off, s->len, buf_len)) ||
            (dst && !region_ok(s->dst_buf, s->dst_off, s->len, buf_len))) {
            snprintf(err, err_len, "step %u (%s): peer %u or region out of "
                     "bounds", i, dps_step_kind_str(s->kind), s->peer);
            return -1;
        }
        if (red && (!dps_op_valid(s->op, s->dtype) ||
                    s->len % dps_dtype_size(s->dtype) != 0)) {
            snprintf(err, err_len, "step %u: op %u does not apply to type "
                     "%u, or %llu bytes are not whole elements", i, s->op,
                     s->dtype, (unsigned long long)s->len);
            return -1;
        }
    }
    return 0;
}
