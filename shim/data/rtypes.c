/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which predefined datatypes' reductions the agents do, with which
 * operations: common/dps_rtypes.h's list (MPI 4.1 §6.9.2), each name
 * given its handle here. At start-up every type the MPI library has
 * (non-null handle, a size) is tried: which of its class's operations
 * the library accepts (a blocking call on a copy of MPI_COMM_SELF that
 * returns errors: MPICH's MPI_Reduce_local aborts on some it does not
 * implement), and which element type (DPS_T_*) gives bit for bit what
 * the library's MPI_Reduce_local gives, on vectors of ordinary values,
 * computed where every rank's agent computes it (x87, binary128). An
 * operation whose results differ goes to stock MPI (Open MPI 4.1.4's AVX
 * loops saturate 8- and 16-bit MPI_SUM and compare MPI_UNSIGNED_LONG as
 * signed; MPICH 4.0 compares unsigned types as signed in MPI_MAX and
 * MPI_MIN), and so does a type no candidate matches (MPICH 4.0's
 * MPI_REAL16, whose sums are neither binary128 nor x87 sums). The ranks
 * agree on the result, so every rank decides alike (DESIGN.md, decision
 * 8).
 *
 * The types of MPI_Type_create_f90_integer/real/complex are not named
 * (their combiner is MPI_COMBINER_F90_*) but MPI reduces them as the
 * named type of their class and size (MPI_Type_match_size), and so do
 * the agents.
 */
#include "shim/base/state.h"
#include "shim/data/types.h"
#include "common/dps_log.h"
#include "common/dps_rtypes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Optional types an MPI's mpi.h may not define: null handles, skipped. */
#ifndef MPI_INTEGER1
#define MPI_INTEGER1 MPI_DATATYPE_NULL
#endif
#ifndef MPI_INTEGER2
#define MPI_INTEGER2 MPI_DATATYPE_NULL
#endif
#ifndef MPI_INTEGER4
#define MPI_INTEGER4 MPI_DATATYPE_NULL
#endif
#ifndef MPI_INTEGER8
#define MPI_INTEGER8 MPI_DATATYPE_NULL
#endif
#ifndef MPI_INTEGER16
#define MPI_INTEGER16 MPI_DATATYPE_NULL
#endif
#ifndef MPI_REAL2
#define MPI_REAL2 MPI_DATATYPE_NULL
#endif
#ifndef MPI_REAL4
#define MPI_REAL4 MPI_DATATYPE_NULL
#endif
#ifndef MPI_REAL8
#define MPI_REAL8 MPI_DATATYPE_NULL
#endif
#ifndef MPI_REAL16
#define MPI_REAL16 MPI_DATATYPE_NULL
#endif
#ifndef MPI_COMPLEX4
#define MPI_COMPLEX4 MPI_DATATYPE_NULL
#endif
#ifndef MPI_COMPLEX8
#define MPI_COMPLEX8 MPI_DATATYPE_NULL
#endif
#ifndef MPI_COMPLEX16
#define MPI_COMPLEX16 MPI_DATATYPE_NULL
#endif
#ifndef MPI_COMPLEX32
#define MPI_COMPLEX32 MPI_DATATYPE_NULL
#endif
#ifndef MPI_CXX_BOOL
#define MPI_CXX_BOOL MPI_DATATYPE_NULL
#endif
#ifndef MPI_CXX_FLOAT_COMPLEX
#define MPI_CXX_FLOAT_COMPLEX MPI_DATATYPE_NULL
#endif
#ifndef MPI_CXX_DOUBLE_COMPLEX
#define MPI_CXX_DOUBLE_COMPLEX MPI_DATATYPE_NULL
#endif
#ifndef MPI_CXX_LONG_DOUBLE_COMPLEX
#define MPI_CXX_LONG_DOUBLE_COMPLEX MPI_DATATYPE_NULL
#endif

#define NPROBE 19 /* elements a probe: a vector loop and its tail */

typedef struct rtype {
    const char  *name;
    MPI_Datatype mpi;
    uint8_t      cls, kind, pair;
    uint8_t      dtype; /* chosen DPS_T_*; NONE: stock MPI reduces it */
    uint16_t     ops;   /* bit DPS_OP_x: offloaded with x */
} rtype_t;

static rtype_t tab[] = {
#define X(NAME, CLASS, KIND, PAIR)                                          \
    {"MPI_" #NAME, MPI_##NAME, DPS_CLS_##CLASS, DPS_K_##KIND, DPS_T_##PAIR, \
     DPS_T_NONE,   0},
    DPS_RTYPES(X)
#undef X
};
#define NTAB (sizeof(tab) / sizeof(tab[0]))

unsigned shim_op_of(MPI_Op op)
{
    static const struct {
        MPI_Op   mpi;
        unsigned dps;
    } ops[] = {
        {MPI_MAX, DPS_OP_MAX},       {MPI_MIN, DPS_OP_MIN},
        {MPI_SUM, DPS_OP_SUM},       {MPI_PROD, DPS_OP_PROD},
        {MPI_LAND, DPS_OP_LAND},     {MPI_BAND, DPS_OP_BAND},
        {MPI_LOR, DPS_OP_LOR},       {MPI_BOR, DPS_OP_BOR},
        {MPI_LXOR, DPS_OP_LXOR},     {MPI_BXOR, DPS_OP_BXOR},
        {MPI_MAXLOC, DPS_OP_MAXLOC}, {MPI_MINLOC, DPS_OP_MINLOC},
    };

    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        if (ops[i].mpi == op) {
            return ops[i].dps;
        }
    }
    return DPS_OP_NONE; /* user-defined, MPI_REPLACE, MPI_NO_OP */
}

static MPI_Op mpi_op(unsigned op)
{
    switch (op) {
    case DPS_OP_MAX: return MPI_MAX;
    case DPS_OP_MIN: return MPI_MIN;
    case DPS_OP_SUM: return MPI_SUM;
    case DPS_OP_PROD: return MPI_PROD;
    case DPS_OP_LAND: return MPI_LAND;
    case DPS_OP_BAND: return MPI_BAND;
    case DPS_OP_LOR: return MPI_LOR;
    case DPS_OP_BOR: return MPI_BOR;
    case DPS_OP_LXOR: return MPI_LXOR;
    case DPS_OP_BXOR: return MPI_BXOR;
    case DPS_OP_MAXLOC: return MPI_MAXLOC;
    case DPS_OP_MINLOC: return MPI_MINLOC;
    default: return MPI_OP_NULL;
    }
}

/* ---- probe vectors ----------------------------------------------------- */

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A finite nonzero double with a full mantissa, of modest magnitude (no
 * zeros: a +0/-0 tie is where Open MPI's vectorised MAX and its scalar
 * loop disagree with each other). */
static double rnd_real(uint64_t *s)
{
    double m = (double)(rnd(s) >> 11) * 0x1p-53 + 0.5; /* [0.5, 1.5) */
    int    e = (int)(rnd(s) % 21) - 10;

    return ((rnd(s) & 1) ? -m : m) * (double)(1 << (e + 10)) / 1024.0;
}

/* A floating-point value of element type t (F32, F64, X87, F128) into p:
 * t's bytes, an x87 value's padding set to pad. */
static void put_real(unsigned t, char *p, uint64_t *s, unsigned char pad)
{
    double d = rnd_real(s), lo = rnd_real(s) * 0x1p-30;

    switch (t) {
    case DPS_T_F32: {
        float f = (float)d;

        memcpy(p, &f, sizeof(f));
        break;
    }
    case DPS_T_F64: memcpy(p, &d, sizeof(d)); break;
#if (defined(__x86_64__) || defined(__i386__)) && __LDBL_MANT_DIG__ == 64
    case DPS_T_X87: {
        long double x = (long double)d + (long double)lo * 0x1p-30L;

        memset(p, pad, 16);
        memcpy(p, &x, 10);
        break;
    }
#endif
#ifdef __FLT128_MANT_DIG__
    case DPS_T_F128: {
        _Float128 q = (_Float128)d + (_Float128)lo * (_Float128)0x1p-60;

        memcpy(p, &q, sizeof(q));
        break;
    }
#endif
    default: memset(p, pad, dps_dtype_size(t)); break;
    }
}

/* The value part of a pair type, and its index's type (1: float,
 * 2: double, else int32). */
static void pair_parts(unsigned t, unsigned *vt, size_t *vs, int *ik)
{
    static const struct {
        uint8_t t, vt, vs, ik;
    } p[] = {
        {DPS_T_F32_I32, DPS_T_F32, 4, 0}, {DPS_T_F64_I32, DPS_T_F64, 8, 0},
        {DPS_T_I64_I32, DPS_T_I64, 8, 0}, {DPS_T_I32_I32, DPS_T_I32, 4, 0},
        {DPS_T_I16_I32, DPS_T_I16, 2, 0}, {DPS_T_X87_I32, DPS_T_X87, 16, 0},
        {DPS_T_F32_F32, DPS_T_F32, 4, 1}, {DPS_T_F64_F64, DPS_T_F64, 8, 2},
    };

    *vt = DPS_T_NONE;
    *vs = 0;
    *ik = 0;
    for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++) {
        if (p[i].t == t) {
            *vt = p[i].vt;
            *vs = p[i].vs;
            *ik = p[i].ik;
        }
    }
}

/*
 * NPROBE elements of type t into v (packed); side 1 is the in-out
 * vector, whose pairs tie with other's (side 0, made first) on every
 * third value.
 */
static void probe_fill(unsigned t, char *v, int side, const char *other,
                       uint64_t *s)
{
    size_t        es = dps_dtype_size(t), i;
    unsigned char pad = side ? 0xAA : 0x55;

    for (i = 0; i < NPROBE; i++) {
        char    *p = v + i * es;
        uint64_t r = rnd(s);

        switch (t) {
        case DPS_T_L8:
        case DPS_T_L32:
            memset(p, 0, es);
            p[0] = (char)(r & 1);
            break;
        case DPS_T_F32:
        case DPS_T_F64:
        case DPS_T_X87:
        case DPS_T_F128: put_real(t, p, s, pad); break;
        case DPS_T_C32:
            put_real(DPS_T_F32, p, s, pad);
            put_real(DPS_T_F32, p + 4, s, pad);
            break;
        case DPS_T_C64:
            put_real(DPS_T_F64, p, s, pad);
            put_real(DPS_T_F64, p + 8, s, pad);
            break;
        case DPS_T_CX87:
            put_real(DPS_T_X87, p, s, pad);
            put_real(DPS_T_X87, p + 16, s, pad);
            break;
        case DPS_T_C128:
            put_real(DPS_T_F128, p, s, pad);
            put_real(DPS_T_F128, p + 16, s, pad);
            break;
        default:
            if (t >= DPS_T_F32_I32 && t <= DPS_T_F64_F64) {
                unsigned vt;
                size_t   vs;
                int      ik, k = (int)(r % 8);

                pair_parts(t, &vt, &vs, &ik);
                if (vt == DPS_T_I16 || vt == DPS_T_I32 || vt == DPS_T_I64) {
                    for (size_t b = 0; b < vs; b++) {
                        p[b] = (char)(rnd(s) >> 24);
                    }
                } else {
                    put_real(vt, p, s, pad);
                }
                if (side && i % 3 == 0) {
                    memcpy(p, other + i * es, vs); /* a tie */
                }
                if (ik == 1) {
                    float f = (float)k;

                    memcpy(p + vs, &f, 4);
                } else if (ik == 2) {
                    double d = (double)k;

                    memcpy(p + vs, &d, 8);
                } else {
                    int32_t n = k;

                    memcpy(p + vs, &n, 4);
                }
            } else {
                for (size_t b = 0; b < es; b++) { /* integers */
                    p[b] = (char)(rnd(s) >> 32);
                }
            }
            break;
        }
    }
}

/* ---- the start-up probe ------------------------------------------------- */

/* Does the library accept op on dt? (A reduction on one rank: no data
 * moves; MPI's argument checks run.) */
static int accepts(MPI_Comm self, MPI_Datatype dt, unsigned op)
{
    char in[64] = {0}, out[64] = {0};

    return PMPI_Allreduce(in, out, 1, dt, mpi_op(op), self) == MPI_SUCCESS;
}

/*
 * Does element type t compute op on dt as the library does? The probe
 * vectors, packed, are unpacked into dt's layout, reduced by the library
 * (MPI_Reduce_local) and packed again, and compared with dps_reduce's.
 */
static int same_as_mpi(MPI_Comm self, MPI_Datatype dt, unsigned op, unsigned t,
                       uint64_t seed)
{
    size_t   es = dps_dtype_size(t), n = es * NPROBE;
    MPI_Aint lb, ext;
    char    *a = NULL, *b = NULL, *ma = NULL, *mb = NULL, *got = NULL;
    int      pos, ok = 0;

    if (PMPI_Type_get_extent(dt, &lb, &ext) != MPI_SUCCESS || lb != 0 ||
        ext < (MPI_Aint)es) {
        return 0;
    }
    a = malloc(n);
    b = malloc(n);
    got = malloc(n);
    ma = calloc(NPROBE, (size_t)ext);
    mb = calloc(NPROBE, (size_t)ext);
    if (a == NULL || b == NULL || got == NULL || ma == NULL || mb == NULL) {
        goto out;
    }
    probe_fill(t, a, 0, NULL, &seed);
    probe_fill(t, b, 1, a, &seed);
    pos = 0;
    if (PMPI_Unpack(a, (int)n, &pos, ma, NPROBE, dt, self) != MPI_SUCCESS) {
        goto out;
    }
    pos = 0;
    if (PMPI_Unpack(b, (int)n, &pos, mb, NPROBE, dt, self) != MPI_SUCCESS ||
        PMPI_Reduce_local(ma, mb, NPROBE, dt, mpi_op(op)) != MPI_SUCCESS) {
        goto out;
    }
    pos = 0;
    if (PMPI_Pack(mb, NPROBE, dt, got, (int)n, &pos, self) != MPI_SUCCESS ||
        dps_reduce(op, t, a, b, n) != DPS_OK) {
        goto out;
    }
    ok = memcmp(got, b, n) == 0;
out:
    free(a);
    free(b);
    free(got);
    free(ma);
    free(mb);
    return ok;
}

/*
 * Try entry e: its element type and operations, or why not (NULL: it is
 * offloaded, with *bad the operations that are not, because the library's
 * results differed from the candidate's). formats: the DPS_FMT_* every
 * rank and agent computes. Of two candidates, the one that gives the
 * library's results for more operations wins.
 */
static const char *probe(MPI_Comm self, rtype_t *e, unsigned formats,
                         unsigned *bad)
{
    unsigned cand[2], n, i, op, accepted = 0, fmt_missing = 0, best = 0;
    int      size = 0;

    if (e->mpi == MPI_DATATYPE_NULL) {
        return "not defined by this MPI";
    }
    if (PMPI_Type_size(e->mpi, &size) != MPI_SUCCESS || size <= 0) {
        return "no size in this MPI";
    }
    for (op = 1; op < DPS_OP_COUNT; op++) {
        if ((dps_class_ops(e->cls) & (1u << op)) &&
            accepts(self, e->mpi, op)) {
            accepted |= 1u << op;
        }
    }
    if (accepted == 0) {
        return "this MPI reduces it with none of its operations";
    }
    n = dps_rtype_candidates(e->kind, e->pair, (size_t)size, cand);
    for (i = 0; i < n; i++) {
        unsigned t = cand[i], good = 0;

        if ((dps_dtype_format(t) & ~formats) != 0) {
            fmt_missing = 1;
            continue;
        }
        for (op = 1; op < DPS_OP_COUNT; op++) {
            if ((accepted & (1u << op)) &&
                same_as_mpi(self, e->mpi, op, t, 0x9e3779b97f4a7c15ull + op)) {
                good |= 1u << op;
            }
        }
        if (__builtin_popcount(good) > __builtin_popcount(best)) {
            best = good;
            e->dtype = (uint8_t)t;
            e->ops = (uint16_t)good;
        }
    }
    if (best != 0) {
        *bad = accepted & ~best;
        return NULL;
    }
    *bad = accepted;
    return n == 0        ? "no element type of its size"
           : fmt_missing ? "its arithmetic is not computed by every agent"
                         : "this MPI's arithmetic on it is not reproduced";
}

void shim_rtypes_init(unsigned agent_formats)
{
    unsigned    formats = dps_reduce_formats() & agent_formats, all = 0;
    uint32_t    mine[NTAB], lo[NTAB], hi[NTAB];
    const char *why[NTAB];
    unsigned    bad[NTAB];
    MPI_Comm    self = MPI_COMM_NULL;
    size_t      i;

    PMPI_Allreduce(&formats, &all, 1, MPI_UNSIGNED, MPI_BAND, MPI_COMM_WORLD);
    if (PMPI_Comm_dup(MPI_COMM_SELF, &self) != MPI_SUCCESS ||
        PMPI_Comm_set_errhandler(self, MPI_ERRORS_RETURN) != MPI_SUCCESS) {
        dps_warn("cannot probe the MPI library's reductions: none is "
                 "offloaded");
        self = MPI_COMM_NULL;
    }
    for (i = 0; i < NTAB; i++) {
        tab[i].dtype = DPS_T_NONE;
        tab[i].ops = 0;
        bad[i] = 0;
        why[i] = self == MPI_COMM_NULL ? "no probe"
                                       : probe(self, &tab[i], all, &bad[i]);
        mine[i] = (uint32_t)tab[i].dtype << 16 | tab[i].ops;
    }
    if (self != MPI_COMM_NULL) {
        PMPI_Comm_free(&self);
    }
    /* Every rank decides alike: an entry found different anywhere goes
     * to stock MPI everywhere. */
    PMPI_Allreduce(mine, lo, (int)NTAB, MPI_UINT32_T, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(mine, hi, (int)NTAB, MPI_UINT32_T, MPI_MAX, MPI_COMM_WORLD);
    for (i = 0; i < NTAB; i++) {
        if (lo[i] != hi[i]) {
            tab[i].dtype = DPS_T_NONE;
            tab[i].ops = 0;
            why[i] = "the ranks' MPI libraries differ on it";
        }
        if ((why[i] != NULL || bad[i] != 0) && shim.topo.world_rank == 0) {
            char   ops[120] = "";
            size_t k = 0;

            for (unsigned op = 1; op < DPS_OP_COUNT && k < 100; op++) {
                if (bad[i] & (1u << op)) {
                    k += (size_t)snprintf(ops + k, sizeof(ops) - k, "%s%s",
                                          k ? ", " : "", dps_op_str(op));
                }
            }
            if (why[i] != NULL) {
                dps_info("reductions of %s go to stock MPI: %s%s%s%s",
                         tab[i].name, why[i], k ? " (" : "", ops,
                         k ? ")" : "");
            } else {
                dps_info("reductions of %s with %s go to stock MPI: this "
                         "MPI's results differ from the operation's",
                         tab[i].name, ops);
            }
        }
    }
}

/* The entry of dt, itself or the named type it stands for. */
static const rtype_t *lookup(MPI_Datatype dt)
{
    int          ni, na, nd, comb, size, cls;
    MPI_Datatype named;
    size_t       i;

    if (dt == MPI_DATATYPE_NULL) {
        return NULL;
    }
    for (i = 0; i < NTAB; i++) {
        if (tab[i].mpi == dt) {
            return &tab[i];
        }
    }
    if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS) {
        return NULL;
    }
    cls = comb == MPI_COMBINER_F90_INTEGER   ? MPI_TYPECLASS_INTEGER
          : comb == MPI_COMBINER_F90_REAL    ? MPI_TYPECLASS_REAL
          : comb == MPI_COMBINER_F90_COMPLEX ? MPI_TYPECLASS_COMPLEX
                                             : -1;
    if (cls < 0 || PMPI_Type_size(dt, &size) != MPI_SUCCESS || size <= 0 ||
        PMPI_Type_match_size(cls, size, &named) != MPI_SUCCESS) {
        return NULL;
    }
    for (i = 0; i < NTAB; i++) {
        if (tab[i].mpi == named && named != MPI_DATATYPE_NULL) {
            return &tab[i];
        }
    }
    return NULL;
}

int shim_rtype(MPI_Datatype dt, unsigned op, unsigned *dtype)
{
    const rtype_t *e;

    if (op == DPS_OP_NONE) {
        return SHIM_WHY_OP;
    }
    e = lookup(dt);
    if (e == NULL || e->dtype == DPS_T_NONE) {
        return SHIM_WHY_TYPE;
    }
    if (!(dps_class_ops(e->cls) & (1u << op))) {
        return SHIM_WHY_OP; /* not MPI's for the type: MPI says so */
    }
    if (!(e->ops & (1u << op))) {
        return SHIM_WHY_TYPE; /* the library's, but not the agents' */
    }
    *dtype = e->dtype;
    return 0;
}
