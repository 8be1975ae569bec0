/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Reductions of every predefined datatype with every operation MPI 4.1
 * §6.9.2 allows on it (and the types of MPI_Type_create_f90_integer,
 * _real and _complex), against stock MPI: MPI_Iallreduce (also in
 * place), MPI_Ireduce (every root in turn, in place at the root),
 * MPI_Ireduce_scatter_block, MPI_Ireduce_scatter, MPI_Iscan, MPI_Iexscan
 * and a persistent allreduce (MPI_Allreduce_init; Open MPI 4.1's
 * MPIX_Allreduce_init) started twice. Every result is compared byte for
 * byte (gaps of the pair types and x87 padding included) with what the
 * blocking PMPI_* call gives on the same inputs (never in place: MPICH
 * 4.0's MPI_Reduce after an in-place one crashes, see t_colls.c).
 *
 * The order of combination: the shim's schedules reduce along a binomial
 * tree within an agent and in a fixed order across agents, stock MPI in
 * its own; floating-point SUM and PROD depend on that order. So their
 * inputs are values whose results are exact in any order: small integers
 * for SUM, powers of two for PROD; complex PROD multiplies 3+i, 4+i and
 * 5+i (no part of a product is ever zero: the sign of a zero made by
 * cancellation depends on the order). MAX, MIN, MAXLOC and MINLOC take
 * any values (fractions too) but no NaN and no +0/-0 (there Open MPI's
 * vectorised loops and its scalar ones return different operands);
 * integers and logicals any bits (MPI_LOGICAL also 2 and -1, true as 1
 * is).
 *
 * Which calls the shim must offload: those whose type this MPI has and
 * accepts the operation on, and whose results MPI_Reduce_local gives as
 * the operation is defined (this program's own model of each type,
 * independent of the shim's: for 16-byte reals the C long double). Where
 * the library differs from the definition the shim must leave the call
 * to it: Open MPI 4.1.4's AVX loops saturate 8- and 16-bit MPI_SUM, and
 * compare MPI_UNSIGNED_LONG as signed and MPI_OFFSET backwards in MPI_MAX
 * and MPI_MIN; MPICH 4.0 compares unsigned types as signed in MPI_MAX and
 * MPI_MIN, its MPI_REAL16 sums are not long double sums, and it reduces
 * MPI_COMPLEX32 with no operation. Those calls' results are not compared:
 * Open MPI's blocking and nonblocking reduce-scatters of 8-bit sums
 * differ from each other. Also left to stock MPI: a user
 * operation, MPI_CHAR (not in §6.9.2), a zero count. With
 * DPUSHIM_STATS=2 the program also expects the reasons line of each
 * collective with fallbacks.
 *
 * T_AGENT_NO_X87=1: the job's agents compute no x87 extended (aarch64
 * agents, a BlueField's: make agent-arm64). Then this host's 16-byte
 * reals, x87 on x86-64, must go to stock MPI (a type the agents do not
 * reduce).
 */
#include "tcommon.h"

/* Classes of §6.9.2 and element kinds. */
enum {
    C_CINT,
    C_FINT,
    C_FLOAT,
    C_LOGICAL,
    C_COMPLEX,
    C_BYTE,
    C_MULTI,
    C_PAIR,
    C_NONE
};
enum { K_SINT, K_UINT, K_REAL, K_CPLX, K_LOGI, K_PAIR };

typedef struct {
    const char  *name;
    MPI_Datatype dt;
    int          cls, kind;
    int          vkind, vsize, isize, ireal; /* pairs: value, index */
} ty_t;

#define TY(n, c, k)             \
    {                           \
#n, n, c, k, 0, 0, 0, 0 \
    }
#define PAIR(n, vk, vs, is, ir)               \
    {                                         \
#n, n, C_PAIR, K_PAIR, vk, vs, is, ir \
    }

static ty_t tys[80];
static int  nty;

static void ty_add(ty_t t)
{
    int size = 0;

    if (t.dt == MPI_DATATYPE_NULL ||
        MPI_Type_size(t.dt, &size) != MPI_SUCCESS || size <= 0) {
        return; /* this MPI lacks it */
    }
    tys[nty++] = t;
}

static void tys_make(void)
{
    static const ty_t named[] = {
        TY(MPI_INT, C_CINT, K_SINT),
        TY(MPI_LONG, C_CINT, K_SINT),
        TY(MPI_SHORT, C_CINT, K_SINT),
        TY(MPI_UNSIGNED_SHORT, C_CINT, K_UINT),
        TY(MPI_UNSIGNED, C_CINT, K_UINT),
        TY(MPI_UNSIGNED_LONG, C_CINT, K_UINT),
        TY(MPI_LONG_LONG_INT, C_CINT, K_SINT),
        TY(MPI_LONG_LONG, C_CINT, K_SINT),
        TY(MPI_UNSIGNED_LONG_LONG, C_CINT, K_UINT),
        TY(MPI_SIGNED_CHAR, C_CINT, K_SINT),
        TY(MPI_UNSIGNED_CHAR, C_CINT, K_UINT),
        TY(MPI_INT8_T, C_CINT, K_SINT),
        TY(MPI_INT16_T, C_CINT, K_SINT),
        TY(MPI_INT32_T, C_CINT, K_SINT),
        TY(MPI_INT64_T, C_CINT, K_SINT),
        TY(MPI_UINT8_T, C_CINT, K_UINT),
        TY(MPI_UINT16_T, C_CINT, K_UINT),
        TY(MPI_UINT32_T, C_CINT, K_UINT),
        TY(MPI_UINT64_T, C_CINT, K_UINT),
        TY(MPI_INTEGER, C_FINT, K_SINT),
#ifdef MPI_INTEGER1
        TY(MPI_INTEGER1, C_FINT, K_SINT),
#endif
#ifdef MPI_INTEGER2
        TY(MPI_INTEGER2, C_FINT, K_SINT),
#endif
#ifdef MPI_INTEGER4
        TY(MPI_INTEGER4, C_FINT, K_SINT),
#endif
#ifdef MPI_INTEGER8
        TY(MPI_INTEGER8, C_FINT, K_SINT),
#endif
        TY(MPI_FLOAT, C_FLOAT, K_REAL),
        TY(MPI_DOUBLE, C_FLOAT, K_REAL),
        TY(MPI_REAL, C_FLOAT, K_REAL),
        TY(MPI_DOUBLE_PRECISION, C_FLOAT, K_REAL),
        TY(MPI_LONG_DOUBLE, C_FLOAT, K_REAL),
#ifdef MPI_REAL4
        TY(MPI_REAL4, C_FLOAT, K_REAL),
#endif
#ifdef MPI_REAL8
        TY(MPI_REAL8, C_FLOAT, K_REAL),
#endif
#ifdef MPI_REAL16
        TY(MPI_REAL16, C_FLOAT, K_REAL),
#endif
        TY(MPI_LOGICAL, C_LOGICAL, K_LOGI),
        TY(MPI_C_BOOL, C_LOGICAL, K_LOGI),
        TY(MPI_CXX_BOOL, C_LOGICAL, K_LOGI),
        TY(MPI_COMPLEX, C_COMPLEX, K_CPLX),
        TY(MPI_C_COMPLEX, C_COMPLEX, K_CPLX),
        TY(MPI_C_FLOAT_COMPLEX, C_COMPLEX, K_CPLX),
        TY(MPI_C_DOUBLE_COMPLEX, C_COMPLEX, K_CPLX),
        TY(MPI_C_LONG_DOUBLE_COMPLEX, C_COMPLEX, K_CPLX),
        TY(MPI_CXX_FLOAT_COMPLEX, C_COMPLEX, K_CPLX),
        TY(MPI_CXX_DOUBLE_COMPLEX, C_COMPLEX, K_CPLX),
        TY(MPI_CXX_LONG_DOUBLE_COMPLEX, C_COMPLEX, K_CPLX),
        TY(MPI_DOUBLE_COMPLEX, C_COMPLEX, K_CPLX),
#ifdef MPI_COMPLEX8
        TY(MPI_COMPLEX8, C_COMPLEX, K_CPLX),
#endif
#ifdef MPI_COMPLEX16
        TY(MPI_COMPLEX16, C_COMPLEX, K_CPLX),
#endif
#ifdef MPI_COMPLEX32
        TY(MPI_COMPLEX32, C_COMPLEX, K_CPLX),
#endif
        TY(MPI_BYTE, C_BYTE, K_UINT),
        TY(MPI_AINT, C_MULTI, K_SINT),
        TY(MPI_OFFSET, C_MULTI, K_SINT),
        TY(MPI_COUNT, C_MULTI, K_SINT),
        PAIR(MPI_2REAL, K_REAL, 4, 4, 1),
        PAIR(MPI_2DOUBLE_PRECISION, K_REAL, 8, 8, 1),
        PAIR(MPI_2INTEGER, K_SINT, 4, 4, 0),
        PAIR(MPI_FLOAT_INT, K_REAL, 4, 4, 0),
        PAIR(MPI_DOUBLE_INT, K_REAL, 8, 4, 0),
        PAIR(MPI_LONG_INT, K_SINT, 8, 4, 0),
        PAIR(MPI_2INT, K_SINT, 4, 4, 0),
        PAIR(MPI_SHORT_INT, K_SINT, 2, 4, 0),
        PAIR(MPI_LONG_DOUBLE_INT, K_REAL, 16, 4, 0),
        /* Not in §6.9.2: stock MPI's (a fallback, type). */
        TY(MPI_CHAR, C_NONE, K_SINT),
    };
    MPI_Datatype f;

    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
        ty_add(named[i]);
    }
    if (MPI_Type_create_f90_integer(9, &f) == MPI_SUCCESS) {
        ty_add((ty_t){"f90_integer(9)", f, C_FINT, K_SINT, 0, 0, 0, 0});
    }
    if (MPI_Type_create_f90_real(15, MPI_UNDEFINED, &f) == MPI_SUCCESS) {
        ty_add((ty_t){"f90_real(15)", f, C_FLOAT, K_REAL, 0, 0, 0, 0});
    }
    if (MPI_Type_create_f90_complex(6, MPI_UNDEFINED, &f) == MPI_SUCCESS) {
        ty_add((ty_t){"f90_complex(6)", f, C_COMPLEX, K_CPLX, 0, 0, 0, 0});
    }
}

static const struct {
    MPI_Op      op;
    const char *name;
} ops[] = {
    {MPI_MAX, "max"},   {MPI_MIN, "min"},       {MPI_SUM, "sum"},
    {MPI_PROD, "prod"}, {MPI_LAND, "land"},     {MPI_LOR, "lor"},
    {MPI_LXOR, "lxor"}, {MPI_BAND, "band"},     {MPI_BOR, "bor"},
    {MPI_BXOR, "bxor"}, {MPI_MAXLOC, "maxloc"}, {MPI_MINLOC, "minloc"},
};
enum {
    O_MAX,
    O_MIN,
    O_SUM,
    O_PROD,
    O_LAND,
    O_LOR,
    O_LXOR,
    O_BAND,
    O_BOR,
    O_BXOR,
    O_MAXLOC,
    O_MINLOC,
    O_N
};

/* §6.9.2's table: the operations of each class. */
static int allowed(int cls, int o)
{
    switch (cls) {
    case C_CINT: return o <= O_BXOR;
    case C_FINT:
    case C_MULTI: return o <= O_PROD || (o >= O_BAND && o <= O_BXOR);
    case C_FLOAT: return o <= O_PROD;
    case C_LOGICAL: return o >= O_LAND && o <= O_LXOR;
    case C_COMPLEX: return o == O_SUM || o == O_PROD;
    case C_BYTE: return o >= O_BAND && o <= O_BXOR;
    case C_PAIR: return o == O_MAXLOC || o == O_MINLOC;
    case C_NONE: return o == O_SUM; /* MPI_CHAR: both MPIs take it */
    default: return 0;
    }
}

/* ---- this program's model of each type's arithmetic -------------------- */

static size_t tsize(const ty_t *t)
{
    int s = 0;

    MPI_Type_size(t->dt, &s);
    return (size_t)s;
}

static int64_t get_s(const char *p, size_t n)
{
    int8_t  a;
    int16_t b;
    int32_t c;
    int64_t d;

    switch (n) {
    case 1: memcpy(&a, p, 1); return a;
    case 2: memcpy(&b, p, 2); return b;
    case 4: memcpy(&c, p, 4); return c;
    default: memcpy(&d, p, 8); return d;
    }
}

static uint64_t get_u(const char *p, size_t n)
{
    uint64_t v = 0;

    memcpy(&v, p, n);
    return v;
}

static long double get_r(const char *p, size_t n)
{
    float       f;
    double      d;
    long double l = 0;

    switch (n) {
    case 4: memcpy(&f, p, 4); return f;
    case 8: memcpy(&d, p, 8); return d;
    default: memcpy(&l, p, 10); return l;
    }
}

static void put_r(char *p, size_t n, long double v)
{
    float  f = (float)v;
    double d = (double)v;

    switch (n) {
    case 4: memcpy(p, &f, 4); break;
    case 8: memcpy(p, &d, 8); break;
    default: memcpy(p, &v, 10); break;
    }
}

/* One real operation in the type's own precision (b = b op a). */
static void real_op(int o, char *b, const char *a, size_t n)
{
    if (n == 4) {
        float x = (float)get_r(b, 4), y = (float)get_r(a, 4);

        x = o == O_MAX   ? (x > y ? x : y)
            : o == O_MIN ? (x < y ? x : y)
            : o == O_SUM ? x + y
                         : x * y;
        memcpy(b, &x, 4);
    } else if (n == 8) {
        double x = (double)get_r(b, 8), y = (double)get_r(a, 8);

        x = o == O_MAX   ? (x > y ? x : y)
            : o == O_MIN ? (x < y ? x : y)
            : o == O_SUM ? x + y
                         : x * y;
        memcpy(b, &x, 8);
    } else {
        long double x = get_r(b, n), y = get_r(a, n);

        x = o == O_MAX   ? (x > y ? x : y)
            : o == O_MIN ? (x < y ? x : y)
            : o == O_SUM ? x + y
                         : x * y;
        put_r(b, n, x);
    }
}

/* b = b (o) a, one packed element of t of es bytes. */
static void model(const ty_t *t, int o, char *b, const char *a, size_t es)
{
    if (t->kind == K_SINT || t->kind == K_UINT) {
        int      s = t->kind == K_SINT;
        uint64_t x = get_u(b, es), y = get_u(a, es), r;
        int      gt = s ? get_s(b, es) > get_s(a, es) : x > y;
        int      lt = s ? get_s(b, es) < get_s(a, es) : x < y;

        switch (o) {
        case O_MAX: r = gt ? x : y; break;
        case O_MIN: r = lt ? x : y; break;
        case O_SUM: r = x + y; break;
        case O_PROD: r = x * y; break;
        case O_LAND: r = x && y; break;
        case O_LOR: r = x || y; break;
        case O_LXOR: r = !x != !y; break;
        case O_BAND: r = x & y; break;
        case O_BOR: r = x | y; break;
        default: r = x ^ y; break;
        }
        memcpy(b, &r, es);
    } else if (t->kind == K_LOGI) {
        uint64_t x = get_u(b, es), y = get_u(a, es), r;

        r = o == O_LAND ? (x && y) : o == O_LOR ? (x || y) : (!x != !y);
        memset(b, 0, es);
        memcpy(b, &r, 1);
    } else if (t->kind == K_REAL) {
        real_op(o, b, a, es);
    } else if (t->kind == K_CPLX) {
        size_t h = es / 2;

        if (o == O_SUM) {
            real_op(O_SUM, b, a, h);
            real_op(O_SUM, b + h, a + h, h);
        } else {
            long double br = get_r(b, h), bi = get_r(b + h, h);
            long double ar = get_r(a, h), ai = get_r(a + h, h);

            /* Exact for the inputs used: any precision will do. */
            put_r(b, h, br * ar - bi * ai);
            put_r(b + h, h, br * ai + bi * ar);
        }
    } else { /* pairs */
        size_t      vs = (size_t)t->vsize, is = (size_t)t->isize;
        long double bv, av, bk, ak;

        if (t->vkind == K_SINT) {
            bv = (long double)get_s(b, vs);
            av = (long double)get_s(a, vs);
        } else {
            bv = get_r(b, vs);
            av = get_r(a, vs);
        }
        bk = t->ireal ? get_r(b + vs, is) : (long double)get_s(b + vs, is);
        ak = t->ireal ? get_r(a + vs, is) : (long double)get_s(a + vs, is);
        if (o == O_MAXLOC ? av > bv : av < bv) {
            memcpy(b, a, vs);
            memcpy(b + vs, a + vs, is);
        } else if (av == bv && ak < bk) {
            memcpy(b + vs, a + vs, is);
        }
    }
}

/* A packed element's values for the operation: exact in any order. */
static void fill_elem(const ty_t *t, int o, char *p, size_t es, uint64_t r)
{
    long double v;

    memset(p, 0, es);
    switch (t->kind) {
    case K_SINT:
    case K_UINT: memcpy(p, &r, es > 8 ? 8 : es); break;
    case K_LOGI:
        if (es == 4) {
            static const int32_t lv[] = {0, 1, 2, -1, 1, 0};
            int32_t              x = lv[r % 6];

            memcpy(p, &x, 4);
        } else {
            p[0] = (char)(r & 1);
        }
        break;
    case K_REAL:
    case K_CPLX: {
        size_t h = t->kind == K_CPLX ? es / 2 : es;

        for (int part = 0; part < (t->kind == K_CPLX ? 2 : 1); part++) {
            uint64_t q = t_mix64(r + (uint64_t)part);

            if (o == O_SUM) {
                v = (long double)((int)(q % 201) - 100);
            } else if (o == O_PROD) {
                static const long double pw[] = {0.5L, 1.0L, 2.0L};

                /* Complex: 3+i, 4+i or 5+i, less than 22.5 degrees
                 * from the real axis: four of them multiply into parts
                 * that are never zero (a zero's sign would depend on
                 * the order). */
                v = t->kind == K_CPLX
                        ? (part ? 1.0L : (long double)(3 + q % 3))
                        : ((q & 1) ? -pw[(q >> 1) % 3] : pw[(q >> 1) % 3]);
            } else {
                v = (long double)((int64_t)(q >> 12) - (1ll << 51)) /
                    1048576.0L;
            }
            put_r(p + (size_t)part * h, h, v);
        }
        break;
    }
    default: { /* pairs: small values (ties), index the element's */
        size_t  vs = (size_t)t->vsize;
        int64_t k = (int64_t)(r % 5) - 2;

        if (t->vkind == K_SINT) {
            memcpy(p, &k, vs);
        } else {
            put_r(p, vs, (long double)k / 4);
        }
        k = (int64_t)((r >> 8) % 64);
        if (t->ireal) {
            put_r(p + vs, (size_t)t->isize, (long double)k);
        } else {
            int32_t ki = (int32_t)k;

            memcpy(p + vs, &ki, 4);
        }
        break;
    }
    }
}

/* n elements of t, packed, for rank me, into an MPI buffer buf (n
 * extents, gaps left as they are). */
static void fill(const ty_t *t, int o, void *buf, int n, int me, int salt,
                 int anybits)
{
    size_t es = tsize(t);
    char  *pk = t_xmalloc(es * (size_t)n + 1);
    int    pos = 0;

    for (int i = 0; i < n; i++) {
        uint64_t r = t_mix64(((uint64_t)(unsigned)salt << 32) ^
                             (uint64_t)(me * 1000003 + i));

        if (anybits && (t->kind == K_SINT || t->kind == K_UINT)) {
            memcpy(pk + (size_t)i * es, &r, es > 8 ? 8 : es);
        } else {
            fill_elem(t, o, pk + (size_t)i * es, es, r);
        }
    }
    T_MPI(MPI_Unpack(pk, (int)(es * (size_t)n), &pos, buf, n, t->dt,
                     MPI_COMM_WORLD));
    free(pk);
}

/* Does this MPI accept op on t (a call that returns errors)? */
static int accepts(const ty_t *t, int o)
{
    static MPI_Comm self = MPI_COMM_NULL;
    char            in[64] = {0}, out[64] = {0};

    if (self == MPI_COMM_NULL) {
        MPI_Comm_dup(MPI_COMM_SELF, &self);
        MPI_Comm_set_errhandler(self, MPI_ERRORS_RETURN);
    }
    return PMPI_Allreduce(in, out, 1, t->dt, ops[o].op, self) == MPI_SUCCESS;
}

/* Does MPI_Reduce_local give the model's results (127 elements: every
 * vector width of the MPI's loops and a tail)? */
static int as_defined(const ty_t *t, int o)
{
    enum { N = 127 };
    size_t   es = tsize(t);
    MPI_Aint lb, ext;
    char    *a, *b, *ma, *mb, *got;
    int      pos = 0, ok;

    MPI_Type_get_extent(t->dt, &lb, &ext);
    a = t_xmalloc(es * N);
    b = t_xmalloc(es * N);
    got = t_xmalloc(es * N);
    ma = calloc(N, (size_t)ext);
    mb = calloc(N, (size_t)ext);
    fill(t, o, ma, N, 1, 77, 1);
    fill(t, o, mb, N, 2, 78, 1);
    T_MPI(MPI_Pack(ma, N, t->dt, a, (int)(es * N), &pos, MPI_COMM_WORLD));
    pos = 0;
    T_MPI(MPI_Pack(mb, N, t->dt, b, (int)(es * N), &pos, MPI_COMM_WORLD));
    T_MPI(PMPI_Reduce_local(ma, mb, N, t->dt, ops[o].op));
    pos = 0;
    T_MPI(MPI_Pack(mb, N, t->dt, got, (int)(es * N), &pos, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++) {
        model(t, o, b + (size_t)i * es, a + (size_t)i * es, es);
    }
    ok = memcmp(got, b, es * N) == 0;
    free(a);
    free(b);
    free(got);
    free(ma);
    free(mb);
    return ok;
}

/* Do the agents compute t's arithmetic? All but x87 types (16-byte reals
 * of an x86-64 host) when T_AGENT_NO_X87 says they lack it. */
static int agents_reduce(const ty_t *t)
{
    const char *s = getenv("T_AGENT_NO_X87");
    size_t      es = tsize(t);
    int         x87;

    if (s == NULL || strcmp(s, "1") != 0 || __LDBL_MANT_DIG__ != 64) {
        return 1;
    }
    x87 = (t->kind == K_REAL && es == 16) || (t->kind == K_CPLX && es == 32) ||
          (t->kind == K_PAIR && t->vkind == K_REAL && t->vsize == 16);
    return !x87;
}

/* ---- the calls --------------------------------------------------------- */

enum {
    R_ALL,
    R_ALL_IP,
    R_RED,
    R_RED_IP,
    R_RSB,
    R_RS,
    R_SCAN,
    R_EXSCAN,
    R_PERS,
    R_N
};
static const char *rnames[R_N] = {"iallreduce",
                                  "iallreduce",
                                  "ireduce",
                                  "ireduce",
                                  "ireduce_scatter_block",
                                  "ireduce_scatter",
                                  "iscan",
                                  "iexscan",
                                  "allreduce_init"};
static const char *stat_names[] = {
    "iallreduce", "ireduce", "ireduce_scatter_block", "ireduce_scatter",
    "iscan",      "iexscan", "allreduce_init"};
#define NSTAT     ((int)(sizeof(stat_names) / sizeof(stat_names[0])))
#define ALL_KINDS ((1u << R_N) - 1)
enum { W_TYPE, W_OP, W_SMALL, W_N };
static unsigned long long whys[NSTAT][W_N];

static void count(const char *name, int off, int why)
{
    t_count(name, off);
    for (int i = 0; !off && i < NSTAT; i++) {
        if (strcmp(stat_names[i], name) == 0) {
            whys[i][why]++;
        }
    }
}

/* Stock MPICH 4.0's persistent collectives are wrong (t_persist.c). */
static int pers_ok(void)
{
#if !defined(HAVE_PERS)
    return 0;
#elif defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40100000
    return t_shim_loaded();
#else
    return 1;
#endif
}

/* One call and its reference. */
typedef struct {
    int         k, n, root, off, why, cmp, r1, r2, rcount, rc[64];
    const ty_t *ty;
    MPI_Aint    ext;
    size_t      rlen;
    char       *sb, *rb, *ref;
    MPI_Request req;
} call_t;

/*
 * Set up call c of kind k: ty reduced with op (an MPI_Op; o its index,
 * or -1 for a user operation), n elements a rank (a block for the
 * scatters); compute the blocking stock call's result, post the call
 * (a persistent one is started twice and checked here). off: the shim
 * must offload it; why: else why not (W_*); cmp: compare the results.
 */
static void post(call_t *c, int k, const ty_t *ty, MPI_Op op, int o, int n,
                 int root, int off, int why, int cmp, int salt)
{
    int      me = t.rank, p = t.size, tot = n, i;
    int      ip = k == R_ALL_IP || (k == R_RED_IP && me == root);
    MPI_Aint lb;
    size_t   slen;
    int     *rc = c->rc;

    memset(c, 0, sizeof(*c));
    c->k = k;
    c->ty = ty;
    c->n = n;
    c->root = root;
    c->off = off;
    c->why = why;
    c->cmp = cmp;
    c->req = MPI_REQUEST_NULL;
    c->rcount = n;
    MPI_Type_get_extent(ty->dt, &lb, &c->ext);
    if (k == R_RSB) {
        tot = n * p;
    } else if (k == R_RS) {
        for (i = 0, tot = 0; i < p; i++) {
            rc[i] = n + (i % 3) - 1;
            tot += rc[i];
        }
        c->rcount = rc[me];
    }
    slen = (size_t)tot * (size_t)c->ext;
    c->rlen = slen;
    c->sb = t_galloc(slen);
    c->rb = t_galloc(slen);
    c->ref = t_galloc(slen);
    fill(ty, o < 0 ? O_SUM : o, c->sb, tot, me, salt, 0);
    if (ip) {
        memcpy(c->rb, c->sb, slen);
    }
    switch (k) {
    case R_ALL:
    case R_ALL_IP:
    case R_PERS:
        c->r1 = PMPI_Allreduce(c->sb, c->ref, n, ty->dt, op, MPI_COMM_WORLD);
        break;
    case R_RED:
    case R_RED_IP:
        c->r1 =
            PMPI_Reduce(c->sb, c->ref, n, ty->dt, op, root, MPI_COMM_WORLD);
        break;
    case R_RSB:
        c->r1 = PMPI_Reduce_scatter_block(c->sb, c->ref, n, ty->dt, op,
                                          MPI_COMM_WORLD);
        break;
    case R_RS:
        c->r1 =
            PMPI_Reduce_scatter(c->sb, c->ref, rc, ty->dt, op, MPI_COMM_WORLD);
        break;
    case R_SCAN:
        c->r1 = PMPI_Scan(c->sb, c->ref, n, ty->dt, op, MPI_COMM_WORLD);
        break;
    default:
        c->r1 = PMPI_Exscan(c->sb, c->ref, n, ty->dt, op, MPI_COMM_WORLD);
        break;
    }
    switch (k) {
    case R_ALL:
    case R_ALL_IP:
        c->r2 = MPI_Iallreduce(ip ? MPI_IN_PLACE : c->sb, c->rb, n, ty->dt, op,
                               MPI_COMM_WORLD, &c->req);
        break;
    case R_RED:
    case R_RED_IP:
        c->r2 = MPI_Ireduce(ip ? MPI_IN_PLACE : c->sb, c->rb, n, ty->dt, op,
                            root, MPI_COMM_WORLD, &c->req);
        break;
    case R_RSB:
        c->r2 = MPI_Ireduce_scatter_block(c->sb, c->rb, n, ty->dt, op,
                                          MPI_COMM_WORLD, &c->req);
        break;
    case R_RS:
        c->r2 = MPI_Ireduce_scatter(c->sb, c->rb, rc, ty->dt, op,
                                    MPI_COMM_WORLD, &c->req);
        break;
    case R_SCAN:
        c->r2 =
            MPI_Iscan(c->sb, c->rb, n, ty->dt, op, MPI_COMM_WORLD, &c->req);
        break;
    case R_EXSCAN:
        c->r2 =
            MPI_Iexscan(c->sb, c->rb, n, ty->dt, op, MPI_COMM_WORLD, &c->req);
        break;
    default:
#ifdef HAVE_PERS
        c->r2 = PINIT(Allreduce)(c->sb, c->rb, n, ty->dt, op, MPI_COMM_WORLD,
                                 MPI_INFO_NULL, &c->req);
        for (i = 0; i < 2 && c->r2 == MPI_SUCCESS; i++) {
            if (i == 1) { /* again, into a poisoned buffer */
                memset(c->rb, T_POISON, c->rlen);
            }
            c->r2 = MPI_Start(&c->req);
            if (c->r2 == MPI_SUCCESS) {
                c->r2 = MPI_Wait(&c->req, MPI_STATUS_IGNORE);
            }
            count(rnames[k], off, why);
        }
        T_MPI(MPI_Request_free(&c->req));
        c->req = MPI_REQUEST_NULL;
#else
        c->r2 = MPI_ERR_OTHER;
#endif
        break;
    }
    if (k != R_PERS) {
        count(rnames[k], off, why);
    }
}

/* After completion: the result where it is significant. */
static void check(call_t *c)
{
    int me = t.rank;

    t_case("%s %s x%d root %d", rnames[c->k], c->ty->name, c->n, c->root);
    if (c->r1 != MPI_SUCCESS || c->r2 != MPI_SUCCESS) {
        t_fail("stock MPI returned %d, the call %d", c->r1, c->r2);
    } else if (!c->cmp) {
        /* The library's own arithmetic: not even its blocking and
         * nonblocking calls agree (header comment). */
    } else if ((c->k == R_RED || c->k == R_RED_IP) && me != c->root) {
        /* the root's result only */
    } else if (c->k == R_EXSCAN && me == 0) {
        /* undefined on rank 0 */
    } else if (c->k == R_RSB || c->k == R_RS) {
        t_same(rnames[c->k], c->rb, c->ref,
               (size_t)c->rcount * (size_t)c->ext);
    } else {
        t_same(rnames[c->k], c->rb, c->ref, (size_t)c->n * (size_t)c->ext);
    }
    t_gcheck("receive buffer", c->rb, c->rlen);
    t_gfree(c->sb);
    t_gfree(c->rb);
    t_gfree(c->ref);
}

/* Every kind of call (kinds: a bit each) on ty with op, at once; then
 * completed together and checked. */
static void batch(unsigned kinds, const ty_t *ty, MPI_Op op, int o, int n,
                  int root0, int off, int why, int cmp, int *salt)
{
    call_t      c[R_N];
    MPI_Request reqs[R_N];
    int         k, nc = 0;

    t_case("%s %s x%d", ty->name, o < 0 ? "user op" : ops[o].name, n);
    for (k = 0; k < R_N; k++) {
        if (kinds & (1u << k)) {
            post(&c[nc], k, ty, op, o, n, (root0 + k) % t.size, off, why, cmp,
                 (*salt)++);
            reqs[nc] = c[nc].req;
            nc++;
        }
    }
    T_MPI(MPI_Waitall(nc, reqs, t_statuses_ignore));
    for (k = 0; k < nc; k++) {
        check(&c[k]);
    }
}

static void user_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++) {
        ((double *)inout)[i] += ((double *)in)[i];
    }
}

int main(int argc, char **argv)
{
    int    ncombo = 0, noff = 0, salt = 1;
    MPI_Op user;

    t_init(&argc, &argv, "t_rtypes");
    tys_make();
    for (int ti = 0; ti < nty; ti++) {
        const ty_t *ty = &tys[ti];

        for (int o = 0; o < O_N; o++) {
            int off, def;

            if (!allowed(ty->cls, o) || !accepts(ty, o)) {
                continue;
            }
            def = as_defined(ty, o);
            off = ty->cls != C_NONE && def && agents_reduce(ty);
            ncombo++;
            noff += off;
            batch(pers_ok() ? ALL_KINDS : ALL_KINDS & ~(1u << R_PERS), ty,
                  ops[o].op, o, 13 + ti % 5, ti + o, off, W_TYPE, def, &salt);
        }
    }
    /* Past the small-message fold: the ring across agents. */
    for (int ti = 0; ti < nty; ti++) {
        const ty_t *ty = &tys[ti];
        int         o = ty->cls == C_PAIR      ? O_MINLOC
                        : ty->cls == C_LOGICAL ? O_LXOR
                        : ty->cls == C_BYTE    ? O_BXOR
                                               : O_SUM;

        if ((ty->dt == MPI_DOUBLE || ty->dt == MPI_DOUBLE_INT ||
             ty->dt == MPI_LONG_DOUBLE || ty->dt == MPI_C_DOUBLE_COMPLEX ||
             ty->dt == MPI_LOGICAL || ty->dt == MPI_INT) &&
            accepts(ty, o)) {
            int def = as_defined(ty, o);

            batch(1u << R_ALL | 1u << R_RSB, ty, ops[o].op, o, 9000, 0,
                  def && agents_reduce(ty), W_TYPE, def, &salt);
        }
    }
    /* Reasons: a user operation; a zero count. */
    MPI_Op_create(user_fn, 1, &user);
    for (int ti = 0; ti < nty; ti++) {
        if (tys[ti].dt == MPI_DOUBLE) {
            batch(1u << R_ALL, &tys[ti], user, -1, 8, 0, 0, W_OP, 1, &salt);
            batch(1u << R_SCAN, &tys[ti], MPI_SUM, O_SUM, 0, 0, 0, W_SMALL, 1,
                  &salt);
        }
    }
    MPI_Op_free(&user);
    if (t.rank == 0) {
        printf("note: %d type x operation pairs, %d offloaded\n", ncombo,
               noff);
    }
    {
        unsigned long long tot[NSTAT][W_N], fb[NSTAT];
        const char        *s = getenv("DPUSHIM_STATS");

        MPI_Reduce(whys, tot, NSTAT * W_N, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0,
                   MPI_COMM_WORLD);
        for (int i = 0; t.rank == 0 && s != NULL && strcmp(s, "2") == 0 &&
                        t_shim_loaded() && i < NSTAT;
             i++) {
            fb[i] = tot[i][W_TYPE] + tot[i][W_OP] + tot[i][W_SMALL];
            if (fb[i] > 0) {
                printf("expect: %s fallback: type=%llu op=%llu small=%llu "
                       "comm=0 off=0 other=0\n",
                       stat_names[i], tot[i][W_TYPE], tot[i][W_OP],
                       tot[i][W_SMALL]);
            }
        }
    }
    return t_finish();
}
