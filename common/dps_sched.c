/* SPDX-License-Identifier: BSD-3-Clause */
/* Schedule steps: checks, and the reduction kernels agents run. */
#include "common/dps_sched.h"

#include <stdio.h>
#include <string.h>

/* x87 extended: on x86 only, as long double (10 value bytes in 16). */
#if (defined(__x86_64__) || defined(__i386__)) && __LDBL_MANT_DIG__ == 64
#define HAVE_X87 1
typedef long double x87_t;
#else
#define HAVE_X87 0
#endif

/* binary128: GCC's _Float128 (x86-64: soft float in libgcc; aarch64:
 * its long double). */
#ifdef __FLT128_MANT_DIG__
#define HAVE_F128 1
typedef _Float128 f128_t;
#else
#define HAVE_F128 0
#endif

static const struct {
    const char *name;
    uint8_t     size;
    uint8_t     fmt;
} types[DPS_T_COUNT] = {
    [DPS_T_I8] = {"i8", 1, 0},
    [DPS_T_U8] = {"u8", 1, 0},
    [DPS_T_I16] = {"i16", 2, 0},
    [DPS_T_U16] = {"u16", 2, 0},
    [DPS_T_I32] = {"i32", 4, 0},
    [DPS_T_U32] = {"u32", 4, 0},
    [DPS_T_I64] = {"i64", 8, 0},
    [DPS_T_U64] = {"u64", 8, 0},
    [DPS_T_F32] = {"f32", 4, 0},
    [DPS_T_F64] = {"f64", 8, 0},
    [DPS_T_X87] = {"x87", 16, DPS_FMT_X87},
    [DPS_T_F128] = {"f128", 16, DPS_FMT_F128},
    [DPS_T_L8] = {"l8", 1, 0},
    [DPS_T_L32] = {"l32", 4, 0},
    [DPS_T_C32] = {"c32", 8, 0},
    [DPS_T_C64] = {"c64", 16, 0},
    [DPS_T_CX87] = {"cx87", 32, DPS_FMT_X87},
    [DPS_T_C128] = {"c128", 32, DPS_FMT_F128},
    [DPS_T_F32_I32] = {"f32_i32", 8, 0},
    [DPS_T_F64_I32] = {"f64_i32", 12, 0},
    [DPS_T_I64_I32] = {"i64_i32", 12, 0},
    [DPS_T_I32_I32] = {"i32_i32", 8, 0},
    [DPS_T_I16_I32] = {"i16_i32", 6, 0},
    [DPS_T_X87_I32] = {"x87_i32", 20, DPS_FMT_X87},
    [DPS_T_F32_F32] = {"f32_f32", 8, 0},
    [DPS_T_F64_F64] = {"f64_f64", 16, 0},
};

size_t dps_dtype_size(unsigned dtype)
{
    return dtype < DPS_T_COUNT ? types[dtype].size : 0;
}

unsigned dps_dtype_format(unsigned dtype)
{
    return dtype < DPS_T_COUNT ? types[dtype].fmt : 0;
}

unsigned dps_reduce_formats(void)
{
    return (HAVE_X87 ? DPS_FMT_X87 : 0) | (HAVE_F128 ? DPS_FMT_F128 : 0);
}

const char *dps_dtype_str(unsigned dtype)
{
    return dtype < DPS_T_COUNT && types[dtype].name != NULL ? types[dtype].name
                                                            : "?";
}

const char *dps_op_str(unsigned op)
{
    static const char *names[DPS_OP_COUNT] = {
        "?",   "max", "min",  "sum",  "prod",   "land",  "band",
        "lor", "bor", "lxor", "bxor", "maxloc", "minloc"};

    return op < DPS_OP_COUNT ? names[op] : "?";
}

static int is_int(unsigned t)
{
    return t >= DPS_T_I8 && t <= DPS_T_U64;
}

static int is_float(unsigned t)
{
    return t >= DPS_T_F32 && t <= DPS_T_F128;
}

static int is_logical(unsigned t)
{
    return t == DPS_T_L8 || t == DPS_T_L32;
}

static int is_complex(unsigned t)
{
    return t >= DPS_T_C32 && t <= DPS_T_C128;
}

static int is_pair(unsigned t)
{
    return t >= DPS_T_F32_I32 && t <= DPS_T_F64_F64;
}

int dps_op_valid(unsigned op, unsigned t)
{
    if (t >= DPS_T_COUNT || types[t].size == 0 ||
        (types[t].fmt & ~dps_reduce_formats()) != 0) {
        return 0;
    }
    switch (op) {
    case DPS_OP_MAX:
    case DPS_OP_MIN: return is_int(t) || is_float(t);
    case DPS_OP_SUM:
    case DPS_OP_PROD: return is_int(t) || is_float(t) || is_complex(t);
    case DPS_OP_LAND:
    case DPS_OP_LOR:
    case DPS_OP_LXOR: return is_int(t) || is_logical(t);
    case DPS_OP_BAND:
    case DPS_OP_BOR:
    case DPS_OP_BXOR: return is_int(t);
    case DPS_OP_MAXLOC:
    case DPS_OP_MINLOC: return is_pair(t);
    default: return 0;
    }
}

/*
 * Element access. The buffers may be unaligned (packed data, offsets into
 * staging): values are copied in and out. An x87 value is its first 10
 * bytes; the 6 after it are padding, never written.
 */
#define GETTER(T)                            \
    static inline T get_##T(const char *p)   \
    {                                        \
        T v;                                 \
                                             \
        memcpy(&v, p, sizeof(T));            \
        return v;                            \
    }                                        \
    static inline void put_##T(char *p, T v) \
    {                                        \
        memcpy(p, &v, sizeof(T));            \
    }

typedef float  f32_t;
typedef double f64_t;
GETTER(int8_t)
GETTER(uint8_t)
GETTER(int16_t)
GETTER(uint16_t)
GETTER(int32_t)
GETTER(uint32_t)
GETTER(int64_t)
GETTER(uint64_t)
GETTER(f32_t)
GETTER(f64_t)

#if HAVE_X87
#define X87_BYTES 10
static inline x87_t get_x87_t(const char *p)
{
    x87_t v = 0;

    memcpy(&v, p, X87_BYTES);
    return v;
}

static inline void put_x87_t(char *p, x87_t v)
{
    memcpy(p, &v, X87_BYTES);
}
#endif

#if HAVE_F128
GETTER(f128_t)
#endif

/* dst = dst (expr) src over n bytes of ES-byte elements: b is dst's
 * value, a src's, both of type T. */
#define LOOP(T, ES, EXPR)                                 \
    do {                                                  \
        size_t i_, n_ = n / (ES);                         \
                                                          \
        for (i_ = 0; i_ < n_; i_++) {                     \
            T a = get_##T((const char *)src + i_ * (ES)); \
            T b = get_##T((char *)dst + i_ * (ES));       \
                                                          \
            put_##T((char *)dst + i_ * (ES), (EXPR));     \
        }                                                 \
    } while (0)

#define ARITH(T, ES)                                            \
    switch (op) {                                               \
    case DPS_OP_MAX: LOOP(T, ES, b > a ? b : a); return DPS_OK; \
    case DPS_OP_MIN: LOOP(T, ES, b < a ? b : a); return DPS_OK; \
    case DPS_OP_SUM: LOOP(T, ES, b + a); return DPS_OK;         \
    case DPS_OP_PROD: LOOP(T, ES, b *a); return DPS_OK;         \
    default: return DPS_ERR_INVALID;                            \
    }

#define LOGIC(T)                                                      \
    case DPS_OP_LAND: LOOP(T, sizeof(T), (T)(b && a)); return DPS_OK; \
    case DPS_OP_LOR: LOOP(T, sizeof(T), (T)(b || a)); return DPS_OK;  \
    case DPS_OP_LXOR: LOOP(T, sizeof(T), (T)(!b != !a)); return DPS_OK;

/* Integers: SUM and PROD wrap in the type's width (computed in an
 * unsigned type UT at least as wide, where C's would overflow). */
#define INTOPS(T, UT)                                                       \
    switch (op) {                                                           \
    case DPS_OP_MAX: LOOP(T, sizeof(T), b > a ? b : a); return DPS_OK;      \
    case DPS_OP_MIN: LOOP(T, sizeof(T), b < a ? b : a); return DPS_OK;      \
    case DPS_OP_SUM: LOOP(T, sizeof(T), (T)((UT)b + (UT)a)); return DPS_OK; \
    case DPS_OP_PROD:                                                       \
        LOOP(T, sizeof(T), (T)((UT)b * (UT)a));                             \
        return DPS_OK;                                                      \
        LOGIC(T)                                                            \
    case DPS_OP_BAND: LOOP(T, sizeof(T), (T)(b & a)); return DPS_OK;        \
    case DPS_OP_BOR: LOOP(T, sizeof(T), (T)(b | a)); return DPS_OK;         \
    case DPS_OP_BXOR: LOOP(T, sizeof(T), (T)(b ^ a)); return DPS_OK;        \
    default: return DPS_ERR_INVALID;                                        \
    }

/*
 * Complex CT of parts T, each PS bytes apart (an element is 2 PS): C's
 * complex arithmetic (the MPIs' loops are C's complex operators, or the
 * textbook product, which gives the same bits for finite results).
 */
#define CPLX(T, CT, PS)                                         \
    do {                                                        \
        size_t i_, n_ = n / (2 * (PS));                         \
                                                                \
        if (op != DPS_OP_SUM && op != DPS_OP_PROD) {            \
            return DPS_ERR_INVALID;                             \
        }                                                       \
        for (i_ = 0; i_ < n_; i_++) {                           \
            const char *s_ = (const char *)src + i_ * 2 * (PS); \
            char       *d_ = (char *)dst + i_ * 2 * (PS);       \
            CT          a, b;                                   \
                                                                \
            __real__ a = get_##T(s_);                           \
            __imag__ a = get_##T(s_ + (PS));                    \
            __real__ b = get_##T(d_);                           \
            __imag__ b = get_##T(d_ + (PS));                    \
            b = op == DPS_OP_SUM ? b + a : b * a;               \
            put_##T(d_, __real__ b);                            \
            put_##T(d_ + (PS), __imag__ b);                     \
        }                                                       \
        return DPS_OK;                                          \
    } while (0)

/*
 * MAXLOC/MINLOC on packed (value VT at 0, index IT at VS) pairs of ES
 * bytes. src's pair replaces dst's when its value is better; on equal
 * values dst keeps its value and takes the lesser index (MPI's
 * definition, and both MPIs' loops: no write of the value on a tie).
 */
#define PAIRS(VT, VS, IT, ES)                                               \
    do {                                                                    \
        size_t i_, n_ = n / (ES);                                           \
                                                                            \
        if (op != DPS_OP_MAXLOC && op != DPS_OP_MINLOC) {                   \
            return DPS_ERR_INVALID;                                         \
        }                                                                   \
        for (i_ = 0; i_ < n_; i_++) {                                       \
            const char *s_ = (const char *)src + i_ * (ES);                 \
            char       *d_ = (char *)dst + i_ * (ES);                       \
            VT          av = get_##VT(s_), bv = get_##VT(d_);               \
            IT          ai = get_##IT(s_ + (VS)), bi = get_##IT(d_ + (VS)); \
                                                                            \
            if (op == DPS_OP_MAXLOC ? av > bv : av < bv) {                  \
                put_##VT(d_, av);                                           \
                put_##IT(d_ + (VS), ai);                                    \
            } else if (av == bv) {                                          \
                put_##IT(d_ + (VS), bi < ai ? bi : ai);                     \
            }                                                               \
        }                                                                   \
        return DPS_OK;                                                      \
    } while (0)

int dps_reduce(unsigned op, unsigned dtype, const void *src, void *dst,
               size_t n)
{
    if (!dps_op_valid(op, dtype)) {
        return DPS_ERR_INVALID;
    }
    switch (dtype) {
    case DPS_T_I8: INTOPS(int8_t, unsigned)
    case DPS_T_U8: INTOPS(uint8_t, unsigned)
    case DPS_T_I16: INTOPS(int16_t, unsigned)
    case DPS_T_U16: INTOPS(uint16_t, unsigned)
    case DPS_T_I32: INTOPS(int32_t, uint32_t)
    case DPS_T_U32: INTOPS(uint32_t, uint32_t)
    case DPS_T_I64: INTOPS(int64_t, uint64_t)
    case DPS_T_U64: INTOPS(uint64_t, uint64_t)
    case DPS_T_F32: ARITH(f32_t, 4)
    case DPS_T_F64: ARITH(f64_t, 8)
#if HAVE_X87
    case DPS_T_X87: ARITH(x87_t, 16)
    case DPS_T_CX87: CPLX(x87_t, long double _Complex, 16);
    case DPS_T_X87_I32: PAIRS(x87_t, 16, int32_t, 20);
#endif
#if HAVE_F128
    case DPS_T_F128: ARITH(f128_t, 16)
    case DPS_T_C128: CPLX(f128_t, _Float128 _Complex, 16);
#endif
    case DPS_T_L8:
        switch (op) {
            LOGIC(uint8_t)
        default: return DPS_ERR_INVALID;
        }
    case DPS_T_L32:
        switch (op) {
            LOGIC(uint32_t)
        default: return DPS_ERR_INVALID;
        }
    case DPS_T_C32: CPLX(f32_t, float _Complex, 4);
    case DPS_T_C64: CPLX(f64_t, double _Complex, 8);
    case DPS_T_F32_I32: PAIRS(f32_t, 4, int32_t, 8);
    case DPS_T_F64_I32: PAIRS(f64_t, 8, int32_t, 12);
    case DPS_T_I64_I32: PAIRS(int64_t, 8, int32_t, 12);
    case DPS_T_I32_I32: PAIRS(int32_t, 4, int32_t, 8);
    case DPS_T_I16_I32: PAIRS(int16_t, 2, int32_t, 6);
    case DPS_T_F32_F32: PAIRS(f32_t, 4, f32_t, 8);
    case DPS_T_F64_F64: PAIRS(f64_t, 8, f64_t, 16);
    default: return DPS_ERR_INVALID;
    }
}

const char *dps_step_kind_str(unsigned kind)
{
    static const char *names[] = {"?",           "send", "recv",
                                  "recv_reduce", "copy", "reduce"};

    return kind < DPS_STEP_MAX ? names[kind] : "?";
}

static int region_ok(unsigned buf, uint64_t off, uint64_t len,
                     const uint64_t buf_len[DPS_NBUF])
{
    return buf < DPS_NBUF && off <= buf_len[buf] && len <= buf_len[buf] - off;
}

int dps_sched_check(const dps_step_t *steps, uint32_t nsteps, uint32_t size,
                    const uint64_t buf_len[DPS_NBUF], char *err,
                    size_t err_len)
{
    uint32_t i;

    if (nsteps > DPS_MAX_STEPS) {
        snprintf(err, err_len, "%u steps", nsteps);
        return DPS_ERR_PROTO;
    }
    for (i = 0; i < nsteps; i++) {
        const dps_step_t *s = &steps[i];
        int               src = 0, dst = 0, peer = 0, red = 0;

        switch (s->kind) {
        case DPS_STEP_SEND: src = peer = 1; break;
        case DPS_STEP_RECV: dst = peer = 1; break;
        case DPS_STEP_RECV_REDUCE: dst = peer = red = 1; break;
        case DPS_STEP_COPY: src = dst = 1; break;
        case DPS_STEP_REDUCE: src = dst = red = 1; break;
        default:
            snprintf(err, err_len, "step %u: kind %u", i, s->kind);
            return DPS_ERR_PROTO;
        }
        if ((peer && s->peer >= size) ||
            (src && !region_ok(s->src_buf, s->src_off, s->len, buf_len)) ||
            (dst && !region_ok(s->dst_buf, s->dst_off, s->len, buf_len))) {
            snprintf(err, err_len,
                     "step %u (%s): peer %u or region out of "
                     "bounds",
                     i, dps_step_kind_str(s->kind), s->peer);
            return DPS_ERR_PROTO;
        }
        if (red && (!dps_op_valid(s->op, s->dtype) ||
                    s->len % dps_dtype_size(s->dtype) != 0)) {
            snprintf(err, err_len,
                     "step %u: op %u does not apply to type "
                     "%u, or %llu bytes are not whole elements",
                     i, s->op, s->dtype, (unsigned long long)s->len);
            return DPS_ERR_PROTO;
        }
    }
    return DPS_OK;
}
