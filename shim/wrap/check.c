/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The MPI library's call-time argument checks of the nonblocking,
 * persistent and neighbourhood collectives (wrap/check.h), one MPI at a
 * time: what MPICH 4.0 and Open MPI 4.1 refuse before they start
 * anything, with the class they return and the handler they call.
 */
#include "shim/wrap/check.h"
#include "common/dps_proto.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#if defined(OPEN_MPI) && OPEN_MPI
#define CHK_OMPI 1
#elif defined(MPICH)
#define CHK_MPICH 1
#endif

/* Read once at shim start. */
static struct {
    MPI_Comm probe;   /* dup of MPI_COMM_SELF, MPI_ERRORS_RETURN */
    int      on;      /* Open MPI: mpi_param_check */
    int      alias;   /* MPICH: MPIR_CVAR_COLL_ALIAS_CHECK */
} chk = {MPI_COMM_NULL, 1, 1};

/* One call being checked. */
typedef struct ck {
    const shim_coll_args_t *a;
    shim_check_t           *out;
    int                     coll;   /* the nonblocking form's id */
    int                     pers;   /* a persistent form's checks */
    int                     rank, size;
} ck_t;

/* Refuse the call: class cls, raised on the call's communicator (or
 * MPI_COMM_WORLD: world), the message naming the argument. */
static int refuse(ck_t *k, int cls, int world, unsigned bad,
                  const char *fmt, ...)
{
    va_list ap;

    k->out->cls = cls;
    k->out->raise_on = world ? MPI_COMM_WORLD : k->a->comm;
    k->out->bad |= bad;
    va_start(ap, fmt);
    vsnprintf(k->out->what, sizeof(k->out->what), fmt, ap);
    va_end(ap);
    return cls;
}

#define TRY(call)                                                          \
    do {                                                                   \
        int rc_ = (call);                                                  \
                                                                           \
        if (rc_ != MPI_SUCCESS) {                                          \
            return rc_;                                                    \
        }                                                                  \
    } while (0)

/* ---- datatypes and operations, as the MPI library sees them ---------- */

/* Does MPI refuse t, known not to be MPI_DATATYPE_NULL, as a datatype
 * (not committed, or freed)? Asked of MPI itself, by a call that checks
 * the type exactly as the collectives do and does nothing else: MPICH
 * MPI_Pack_size of 0 elements, Open MPI MPI_Send of 0 elements to
 * MPI_PROC_NULL; on our own communicator, whose handler returns. */
static int type_refused(MPI_Datatype t)
{
    int n = 0;

    if (chk.probe == MPI_COMM_NULL) {
        return 0;   /* not judged */
    }
#if CHK_MPICH
    return PMPI_Pack_size(0, t, chk.probe, &n) != MPI_SUCCESS;
#else
    return PMPI_Send(&n, 0, t, MPI_PROC_NULL, 0, chk.probe) != MPI_SUCCESS;
#endif
}

/* What a predefined datatype is to the operations' tables. */
enum {
    G_UNKNOWN,   /* not judged: left to the MPI library */
    G_NONE,      /* no predefined operation applies */
    G_CINT,      /* C integers */
    G_FINT,      /* Fortran integers */
    G_FP,        /* floating point */
    G_LOGICAL,
    G_COMPLEX,
    G_BYTE,
    G_PAIR       /* MINLOC and MAXLOC pairs */
};

static int group_of(MPI_Datatype t)
{
    /* Where MPICH and Open MPI differ, as their sources say: MPICH's
     * MPIR_OP_TYPE_GROUP lists (mpir_op_util.h), Open MPI's type ids
     * (ompi_datatype_internal.h: MPI_CHAR and MPI_BYTE are 8-bit
     * integers, MPI_AINT, MPI_OFFSET and MPI_COUNT sized ones) mapped
     * by ompi_op_ddt_map (op.c). */
#if CHK_OMPI
    const int aint = G_CINT, byte = G_CINT, character = G_CINT;
#else
    const int aint = G_FINT, byte = G_BYTE, character = G_FINT;
#endif
    static const MPI_Datatype cint[] = {
        MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_SHORT,
        MPI_UNSIGNED_SHORT, MPI_INT, MPI_UNSIGNED, MPI_LONG,
        MPI_UNSIGNED_LONG, MPI_LONG_LONG, MPI_LONG_LONG_INT,
        MPI_UNSIGNED_LONG_LONG, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T,
        MPI_INT64_T, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T
    };
    static const MPI_Datatype fp[] = {
        MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_REAL,
        MPI_DOUBLE_PRECISION
    };
    static const MPI_Datatype cpx[] = {
        MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX,
        MPI_C_LONG_DOUBLE_COMPLEX, MPI_COMPLEX, MPI_DOUBLE_COMPLEX
    };
    static const MPI_Datatype pair[] = {
        MPI_2INT, MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_DOUBLE_INT,
        MPI_LONG_INT, MPI_SHORT_INT, MPI_2INTEGER, MPI_2REAL,
        MPI_2DOUBLE_PRECISION
    };
    size_t i;

    for (i = 0; i < sizeof(cint) / sizeof(cint[0]); i++) {
        if (t == cint[i]) {
            return G_CINT;
        }
    }
    for (i = 0; i < sizeof(fp) / sizeof(fp[0]); i++) {
        if (t == fp[i]) {
            return G_FP;
        }
    }
    for (i = 0; i < sizeof(cpx) / sizeof(cpx[0]); i++) {
        if (t == cpx[i]) {
            return G_COMPLEX;
        }
    }
    for (i = 0; i < sizeof(pair) / sizeof(pair[0]); i++) {
        if (t == pair[i]) {
            return G_PAIR;
        }
    }
    if (t == MPI_AINT || t == MPI_OFFSET || t == MPI_COUNT) {
        return aint;
    }
    if (t == MPI_BYTE) {
        return byte;
    }
    if (t == MPI_CHARACTER) {
        return character;
    }
    if (t == MPI_INTEGER) {
        return G_FINT;
    }
    if (t == MPI_C_BOOL || t == MPI_LOGICAL) {
        return G_LOGICAL;
    }
    if (t == MPI_WCHAR || t == MPI_PACKED) {
        return G_NONE;
    }
    return G_UNKNOWN;
}

/* Is group g in the domain of the predefined operation op (MPI_MAX to
 * MPI_MINLOC)? -1: op is none of them. */
static int op_applies(MPI_Op op, int g)
{
    unsigned m = 1u << g;
#if CHK_OMPI
    /* op_base_functions.c: logical operations on C integers and
     * logicals only; bitwise ones on integers (MPI_BYTE is one). */
    const unsigned logical = 1u << G_CINT | 1u << G_LOGICAL;
    const unsigned bitwise = 1u << G_CINT | 1u << G_FINT;
#else
    /* opland.c, opband.c: logical operations on integers, logicals and
     * floating point; bitwise ones on integers and MPI_BYTE. */
    const unsigned logical = 1u << G_CINT | 1u << G_LOGICAL |
                             1u << G_FINT | 1u << G_FP;
    const unsigned bitwise = 1u << G_CINT | 1u << G_FINT | 1u << G_BYTE;
#endif
    const unsigned order = 1u << G_CINT | 1u << G_FINT | 1u << G_FP;
    const unsigned arith = order | 1u << G_COMPLEX;

    if (op == MPI_MAX || op == MPI_MIN) {
        return (order & m) != 0;
    }
    if (op == MPI_SUM || op == MPI_PROD) {
        return (arith & m) != 0;
    }
    if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR) {
        return (logical & m) != 0;
    }
    if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR) {
        return (bitwise & m) != 0;
    }
    if (op == MPI_MAXLOC || op == MPI_MINLOC) {
        return g == G_PAIR;
    }
    return -1;
}

/* Is t a named (predefined) datatype? -1: a kind MPI turns into its
 * basic type for operations (MPI_Type_create_f90_*): not judged. */
static int named(MPI_Datatype t)
{
    int ni, na, nd, comb;

    if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS) {
        return -1;
    }
    if (comb == MPI_COMBINER_F90_REAL || comb == MPI_COMBINER_F90_COMPLEX ||
        comb == MPI_COMBINER_F90_INTEGER) {
        return -1;
    }
    return comb == MPI_COMBINER_NAMED;
}

/*
 * The operation with the datatype, as both MPIs judge it before any
 * datatype check: MPI_OP_NULL; MPI_NO_OP and MPI_REPLACE (MPICH refuses
 * them outright, Open MPI finds no function for them); a predefined
 * operation on a derived datatype, on MPI_DATATYPE_NULL, or on a
 * predefined one outside its domain. User-defined operations pass.
 */
static int check_op(ck_t *k, MPI_Op op, MPI_Datatype t)
{
    const char *on = "op with this datatype";
    int g, applies, n;

#if CHK_OMPI
    if (op == MPI_OP_NULL || op == NULL) {
#else
    if (op == MPI_OP_NULL) {
#endif
        return refuse(k, MPI_ERR_OP, 0, SHIM_BAD_OP, "op is MPI_OP_NULL");
    }
    if (op == MPI_NO_OP || op == MPI_REPLACE) {
        return refuse(k, MPI_ERR_OP, 0, SHIM_BAD_OP, "op is %s, not for "
                      "reductions", op == MPI_NO_OP ? "MPI_NO_OP"
                                                    : "MPI_REPLACE");
    }
#if CHK_MPICH
    /* MPIR_ERRTEST_OP: a handle of the kind of operations. */
    if ((((unsigned)op >> 26) & 0xf) != 0x6 || ((unsigned)op >> 30) == 0) {
        return refuse(k, MPI_ERR_OP, 0, SHIM_BAD_OP, "op is not an "
                      "operation handle");
    }
#endif
    if (op_applies(op, G_NONE) < 0) {
        return MPI_SUCCESS;   /* user-defined */
    }
    if (t == MPI_DATATYPE_NULL) {
        return refuse(k, MPI_ERR_OP, 0, SHIM_BAD_OP, "%s: the datatype is "
                      "MPI_DATATYPE_NULL", on);
    }
#if CHK_MPICH
    /* Not a datatype handle: no operation's table has it. */
    if ((((unsigned)t >> 26) & 0xf) != 0x3 || ((unsigned)t >> 30) == 0) {
        return refuse(k, MPI_ERR_OP, 0, SHIM_BAD_OP, "%s: the datatype is "
                      "not a datatype handle", on);
    }
#endif
    n = named(t);
    if (n < 0) {
        return MPI_SUCCESS;
    }
    if (n == 0) {
        return refuse(k, MPI_ERR_OP, 0, SHIM_BAD_OP, "%s: a predefined "
                      "operation on a derived datatype", on);
    }
    g = group_of(t);
    applies = op_applies(op, g);
    if (g != G_UNKNOWN && !applies) {
        return refuse(k, MPI_ERR_OP, 0, SHIM_BAD_OP, "%s: the operation is "
                      "not defined for the datatype", on);
    }
    return MPI_SUCCESS;
}

static int check_root(ck_t *k)
{
    if (k->a->root < 0 || k->a->root >= k->size) {
        return refuse(k, MPI_ERR_ROOT, 0, SHIM_BAD_ROOT, "root %d is not a "
                      "rank of the communicator (size %d)", k->a->root,
                      k->size);
    }
    return MPI_SUCCESS;
}

/* The neighbourhood calls' degrees; 0 with no topology. */
static int degrees(MPI_Comm comm, int rank, int *in, int *out)
{
    int topo = MPI_UNDEFINED, n = 0, w = 0;

    *in = *out = 0;
    if (PMPI_Topo_test(comm, &topo) != MPI_SUCCESS) {
        return 0;
    }
    switch (topo) {
    case MPI_CART:
        PMPI_Cartdim_get(comm, &n);
        *in = *out = 2 * n;
        return 1;
    case MPI_GRAPH:
        PMPI_Graph_neighbors_count(comm, rank, &n);
        *in = *out = n;
        return 1;
    case MPI_DIST_GRAPH:
        PMPI_Dist_graph_neighbors_count(comm, in, out, &w);
        return 1;
    default:
        return 0;
    }
}

static int is_neighbor(int coll)
{
    return coll >= DPS_COLL_NEIGHBOR_ALLGATHER &&
           coll <= DPS_COLL_NEIGHBOR_ALLTOALLW;
}

#if CHK_MPICH
/* ---- MPICH 4.0: src/binding/c/coll/<call>.c --------------------------- */

#define M_BUILTIN(t) ((((unsigned)(t)) >> 30) == 0x1)

/* MPIR_ERRTEST_DATATYPE, then (not builtin) valid and committed. */
static int m_type(ck_t *k, MPI_Datatype t, const char *name)
{
    unsigned h = (unsigned)t;

    if (t == MPI_DATATYPE_NULL) {
        return refuse(k, MPI_ERR_TYPE, 0, 0, "%s is MPI_DATATYPE_NULL",
                      name);
    }
    if (((h >> 26) & 0xf) != 0x3 || (h >> 30) == 0) {
        return refuse(k, MPI_ERR_TYPE, 0, 0, "%s is not a datatype", name);
    }
    if (!M_BUILTIN(t) && type_refused(t)) {
        return refuse(k, MPI_ERR_TYPE, 0, 0, "%s is not committed", name);
    }
    return MPI_SUCCESS;
}

static int m_count(ck_t *k, int count, const char *name)
{
    if (count < 0) {
        return refuse(k, MPI_ERR_COUNT, 0, 0, "%s is negative (%d)", name,
                      count);
    }
    return MPI_SUCCESS;
}

static int m_counti(ck_t *k, int count, const char *name, int i)
{
    if (count < 0) {
        return refuse(k, MPI_ERR_COUNT, 0, 0, "%s[%d] is negative (%d)",
                      name, i, count);
    }
    return MPI_SUCCESS;
}

/* MPIR_ERRTEST_USERBUFFER: a null buffer (MPI_BOTTOM too) for data that
 * would start at it. */
static int m_userbuf(ck_t *k, const void *buf, int count, MPI_Datatype t,
                     const char *name)
{
    MPI_Aint lb = 0, ext = 0;
    int size = 0;

    if (count <= 0 || buf != NULL) {
        return MPI_SUCCESS;
    }
    if (!M_BUILTIN(t)) {
        PMPI_Type_get_true_extent(t, &lb, &ext);
        PMPI_Type_size(t, &size);
        if (lb != 0 || size <= 0) {
            return MPI_SUCCESS;
        }
    }
    return refuse(k, MPI_ERR_BUFFER, 0, 0, "%s is NULL with a nonzero count",
                  name);
}

/* MPIR_ERRTEST_SENDBUF_INPLACE, _RECVBUF_INPLACE */
static int m_inplace(ck_t *k, const void *buf, int count, const char *name)
{
    if (count > 0 && buf == MPI_IN_PLACE) {
        return refuse(k, MPI_ERR_BUFFER, 0, 0, "%s is MPI_IN_PLACE", name);
    }
    return MPI_SUCCESS;
}

/* MPIR_ERRTEST_ALIAS_COLL */
static int m_alias(ck_t *k, const void *p, const void *q, const char *what)
{
    if (chk.alias && p == q) {
        return refuse(k, MPI_ERR_BUFFER, 0, 0, "%s (aliased buffers; "
                      "MPI_IN_PLACE is the way)", what);
    }
    return MPI_SUCCESS;
}

static MPI_Aint m_size(MPI_Datatype t)
{
    int size = 0;

    PMPI_Type_size(t, &size);
    return size;
}

/* The root's own block of a gathered (scattered) buffer. */
static const void *m_own(const void *buf, int count, MPI_Datatype t, int i)
{
    return (const char *)buf + (MPI_Aint)i * count * m_size(t);
}

/* Igather, Igatherv, Iallgather, Iallgatherv: the send side. */
static int m_gather_send(ck_t *k, int rooted, int v)
{
    const shim_coll_args_t *a = k->a;
    int me = k->rank;

    if (a->sbuf == MPI_IN_PLACE) {
        return MPI_SUCCESS;
    }
    TRY(m_type(k, a->stype, "sendtype"));
    TRY(m_count(k, a->scount, "sendcount"));
    TRY(m_userbuf(k, a->sbuf, a->scount, a->stype, "sendbuf"));
    if (rooted && me != a->root) {
        return MPI_SUCCESS;
    }
    if (!v && a->stype == a->rtype && a->scount == a->rcount &&
        a->scount != 0) {
        TRY(m_alias(k, a->sbuf, m_own(a->rbuf, a->rcount, a->rtype, me),
                    "sendbuf is this rank's block of recvbuf"));
    } else if (v && a->stype == a->rtype && a->scount != 0 &&
               a->rcounts != NULL && a->rdispls != NULL &&
               a->rcounts[me] != 0) {
        TRY(m_alias(k, a->sbuf, m_own(a->rbuf, 1, a->rtype, a->rdispls[me]),
                    "sendbuf is this rank's block of recvbuf"));
    }
    return MPI_SUCCESS;
}

/* Igather(v) at the root, Iallgather(v): the receive side. */
static int m_gather_recv(ck_t *k, int v)
{
    const shim_coll_args_t *a = k->a;

    TRY(m_type(k, a->rtype, "recvtype"));
    if (!v) {
        TRY(m_inplace(k, a->rbuf, a->rcount, "recvbuf"));
        TRY(m_count(k, a->rcount, "recvcount"));
        return m_userbuf(k, a->rbuf, a->rcount, a->rtype, "recvbuf");
    }
    for (int i = 0; a->rcounts != NULL && i < k->size; i++) {
        TRY(m_inplace(k, a->rbuf, a->rcounts[i], "recvbuf"));
        TRY(m_counti(k, a->rcounts[i], "recvcounts", i));
        if (a->rdispls != NULL && a->rdispls[i] == 0) {
            TRY(m_userbuf(k, a->rbuf, a->rcounts[i], a->rtype, "recvbuf"));
        }
    }
    return MPI_SUCCESS;
}

/* Iscatter(v): the root's send side, everyone's receive side. */
static int m_scatter(ck_t *k, int v)
{
    const shim_coll_args_t *a = k->a;
    int me = k->rank;

    if (me == a->root) {
        TRY(m_type(k, a->stype, "sendtype"));
        if (!v) {
            TRY(m_inplace(k, a->sbuf, a->scount, "sendbuf"));
            TRY(m_count(k, a->scount, "sendcount"));
            TRY(m_userbuf(k, a->sbuf, a->scount, a->stype, "sendbuf"));
        }
        for (int i = 0; v && a->scounts != NULL && i < k->size; i++) {
            TRY(m_inplace(k, a->sbuf, a->scounts[i], "sendbuf"));
            TRY(m_counti(k, a->scounts[i], "sendcounts", i));
            if (a->sdispls != NULL && a->sdispls[i] == 0) {
                TRY(m_userbuf(k, a->sbuf, a->scounts[i], a->stype,
                              "sendbuf"));
            }
        }
    }
    if (a->rbuf == MPI_IN_PLACE) {
        return MPI_SUCCESS;
    }
    TRY(m_type(k, a->rtype, "recvtype"));
    TRY(m_count(k, a->rcount, "recvcount"));
    TRY(m_userbuf(k, a->rbuf, a->rcount, a->rtype, "recvbuf"));
    if (me != a->root) {
        return MPI_SUCCESS;
    }
    if (!v && a->stype == a->rtype && a->scount == a->rcount &&
        a->scount != 0) {
        TRY(m_alias(k, a->rbuf, m_own(a->sbuf, a->scount, a->stype, me),
                    "recvbuf is the root's block of sendbuf"));
    } else if (v && a->stype == a->rtype && a->rcount != 0 &&
               a->scounts != NULL && a->sdispls != NULL &&
               a->scounts[me] != 0) {
        TRY(m_alias(k, a->rbuf, m_own(a->sbuf, 1, a->stype, a->sdispls[me]),
                    "recvbuf is the root's block of sendbuf"));
    }
    return MPI_SUCCESS;
}

/* Ialltoall(v)(w). */
static int m_alltoall(ck_t *k)
{
    const shim_coll_args_t *a = k->a;
    int v = k->coll != DPS_COLL_ALLTOALL, w = k->coll == DPS_COLL_ALLTOALLW;
    int i;

    if (a->sbuf != MPI_IN_PLACE) {
        if (!v) {
            TRY(m_type(k, a->stype, "sendtype"));
            TRY(m_count(k, a->scount, "sendcount"));
            TRY(m_userbuf(k, a->sbuf, a->scount, a->stype, "sendbuf"));
            if (a->stype == a->rtype && a->scount == a->rcount &&
                a->scount != 0) {
                TRY(m_alias(k, a->sbuf, a->rbuf, "sendbuf is recvbuf"));
            }
        } else {
            if (!w) {
                TRY(m_type(k, a->stype, "sendtype"));
            }
            for (i = 0; a->scounts != NULL && (!w || a->stypes != NULL) &&
                        i < k->size; i++) {
                MPI_Datatype t = w ? a->stypes[i] : a->stype;

                if (w && a->scounts[i] > 0) {
                    TRY(m_type(k, t, "sendtypes[i]"));
                }
                TRY(m_counti(k, a->scounts[i], "sendcounts", i));
                if (a->sdispls != NULL && a->sdispls[i] == 0) {
                    TRY(m_userbuf(k, a->sbuf, a->scounts[i], t, "sendbuf"));
                }
            }
            /* The same arrays: MPICH's test for the same call. */
            if ((w ? a->stypes == a->rtypes : a->stype == a->rtype) &&
                a->scounts == a->rcounts) {
                TRY(m_alias(k, a->sbuf, a->rbuf, "sendbuf is recvbuf"));
            }
        }
    }
    if (!v) {
        TRY(m_type(k, a->rtype, "recvtype"));
        TRY(m_inplace(k, a->rbuf, a->rcount, "recvbuf"));
        TRY(m_count(k, a->rcount, "recvcount"));
        return m_userbuf(k, a->rbuf, a->rcount, a->rtype, "recvbuf");
    }
    if (!w) {
        TRY(m_type(k, a->rtype, "recvtype"));
    }
    for (i = 0; a->rcounts != NULL && (!w || a->rtypes != NULL) &&
                i < k->size; i++) {
        MPI_Datatype t = w ? a->rtypes[i] : a->rtype;

        if (w && a->rcounts[i] > 0) {
            TRY(m_type(k, t, "recvtypes[i]"));
        }
        TRY(m_inplace(k, a->rbuf, a->rcounts[i], "recvbuf"));
        TRY(m_counti(k, a->rcounts[i], "recvcounts", i));
        if (a->rdispls != NULL && a->rdispls[i] == 0) {
            TRY(m_userbuf(k, a->rbuf, a->rcounts[i], t, "recvbuf"));
        }
    }
    return MPI_SUCCESS;
}

/* Ireduce, Iallreduce, Ireduce_scatter(_block), Iscan, Iexscan. MPICH
 * checks no count of these. */
static int m_reduce(ck_t *k)
{
    const shim_coll_args_t *a = k->a;
    int in_place = a->sbuf == MPI_IN_PLACE, rn, sn, i;

    if (k->coll == DPS_COLL_REDUCE) {
        TRY(check_root(k));
    }
    TRY(check_op(k, a->op, a->stype));
    TRY(m_type(k, a->stype, "datatype"));
    switch (k->coll) {
    case DPS_COLL_REDUCE:
        if (k->rank == a->root) {
            TRY(m_inplace(k, a->rbuf, a->scount, "recvbuf"));
            TRY(m_userbuf(k, a->rbuf, a->scount, a->stype, "recvbuf"));
            if (a->scount > 0 && !in_place) {
                TRY(m_alias(k, a->sbuf, a->rbuf, "sendbuf is recvbuf"));
            }
        }
        if (a->scount > 0 && !in_place) {
            TRY(m_userbuf(k, a->sbuf, a->scount, a->stype, "sendbuf"));
        }
        return MPI_SUCCESS;
    case DPS_COLL_REDUCE_SCATTER:
        sn = 0;
        for (i = 0; a->rcounts != NULL && i < k->size; i++) {
            TRY(m_counti(k, a->rcounts[i], "recvcounts", i));
            sn += a->rcounts[i];
        }
        rn = a->rcounts != NULL ? a->rcounts[k->rank] : 0;
        break;
    case DPS_COLL_REDUCE_SCATTER_BLOCK:
        rn = sn = a->rcount;   /* sic: MPICH checks recvcount elements */
        break;
    default:
        rn = sn = a->scount;
        break;
    }
    TRY(m_inplace(k, a->rbuf, rn, "recvbuf"));
    if (!in_place && sn != 0) {
        TRY(m_alias(k, a->sbuf, a->rbuf, "sendbuf is recvbuf"));
    }
    TRY(m_userbuf(k, a->rbuf, rn, a->stype, "recvbuf"));
    return m_userbuf(k, a->sbuf, sn, a->stype, "sendbuf");
}

/* Ineighbor_*. */
static int m_neighbor(ck_t *k, int in, int out)
{
    const shim_coll_args_t *a = k->a;
    int v = k->coll == DPS_COLL_NEIGHBOR_ALLTOALLV ||
            k->coll == DPS_COLL_NEIGHBOR_ALLTOALLW;
    int w = k->coll == DPS_COLL_NEIGHBOR_ALLTOALLW, i;

    if (!v) {
        TRY(m_count(k, a->scount, "sendcount"));
        if (a->scount > 0) {
            TRY(m_type(k, a->stype, "sendtype"));
            TRY(m_userbuf(k, a->sbuf, a->scount, a->stype, "sendbuf"));
        }
    } else {
        if (!w) {
            TRY(m_type(k, a->stype, "sendtype"));
        }
        for (i = 0; a->scounts != NULL && (!w || a->stypes != NULL) &&
                    i < out; i++) {
            MPI_Datatype t = w ? a->stypes[i] : a->stype;
            int at0 = w ? a->sad != NULL && a->sad[i] == 0
                        : a->sdispls != NULL && a->sdispls[i] == 0;

            if (w && a->scounts[i] > 0) {
                TRY(m_type(k, t, "sendtypes[i]"));
            }
            TRY(m_counti(k, a->scounts[i], "sendcounts", i));
            if (at0) {
                TRY(m_userbuf(k, a->sbuf, a->scounts[i], t, "sendbuf"));
            }
        }
    }
    if (k->coll == DPS_COLL_NEIGHBOR_ALLGATHER ||
        k->coll == DPS_COLL_NEIGHBOR_ALLTOALL) {
        TRY(m_count(k, a->rcount, "recvcount"));
        if (a->rcount > 0) {
            TRY(m_type(k, a->rtype, "recvtype"));
            TRY(m_userbuf(k, a->rbuf, a->rcount, a->rtype, "recvbuf"));
        }
        return MPI_SUCCESS;
    }
    if (!w) {
        TRY(m_type(k, a->rtype, "recvtype"));
    }
    for (i = 0; a->rcounts != NULL && (!w || a->rtypes != NULL) &&
                i < in; i++) {
        MPI_Datatype t = w ? a->rtypes[i] : a->rtype;
        int at0 = w ? a->rad != NULL && a->rad[i] == 0
                    : a->rdispls != NULL && a->rdispls[i] == 0;

        if (w && a->rcounts[i] > 0) {
            TRY(m_type(k, t, "recvtypes[i]"));
        }
        TRY(m_counti(k, a->rcounts[i], "recvcounts", i));
        if (at0) {
            TRY(m_userbuf(k, a->rbuf, a->rcounts[i], t, "recvbuf"));
        }
    }
    return MPI_SUCCESS;
}

static int check_mpi(ck_t *k)
{
    const shim_coll_args_t *a = k->a;
    int in = 0, out = 0;

    switch (k->coll) {
    case DPS_COLL_BARRIER:
        break;
    case DPS_COLL_BCAST:
        TRY(check_root(k));
        TRY(m_count(k, a->scount, "count"));
        if (a->scount > 0) {
            TRY(m_type(k, a->stype, "datatype"));
            TRY(m_userbuf(k, a->sbuf, a->scount, a->stype, "buffer"));
        }
        break;
    case DPS_COLL_GATHER:
    case DPS_COLL_GATHERV:
        TRY(check_root(k));
        TRY(m_gather_send(k, 1, k->coll == DPS_COLL_GATHERV));
        if (k->rank == a->root) {
            TRY(m_gather_recv(k, k->coll == DPS_COLL_GATHERV));
        }
        break;
    case DPS_COLL_SCATTER:
    case DPS_COLL_SCATTERV:
        TRY(check_root(k));
        TRY(m_scatter(k, k->coll == DPS_COLL_SCATTERV));
        break;
    case DPS_COLL_ALLGATHER:
    case DPS_COLL_ALLGATHERV:
        TRY(m_gather_send(k, 0, k->coll == DPS_COLL_ALLGATHERV));
        TRY(m_gather_recv(k, k->coll == DPS_COLL_ALLGATHERV));
        break;
    case DPS_COLL_ALLTOALL:
    case DPS_COLL_ALLTOALLV:
    case DPS_COLL_ALLTOALLW:
        TRY(m_alltoall(k));
        break;
    case DPS_COLL_REDUCE:
    case DPS_COLL_ALLREDUCE:
    case DPS_COLL_REDUCE_SCATTER:
    case DPS_COLL_REDUCE_SCATTER_BLOCK:
    case DPS_COLL_SCAN:
    case DPS_COLL_EXSCAN:
        TRY(m_reduce(k));
        break;
    default:
        if (!is_neighbor(k->coll) || !degrees(a->comm, k->rank, &in, &out)) {
            return MPI_SUCCESS;
        }
        TRY(m_neighbor(k, in, out));
        break;
    }
    if (a->request == NULL) {
        return refuse(k, MPI_ERR_ARG, 0, 0, "request is NULL");
    }
    return MPI_SUCCESS;
}

#elif CHK_OMPI
/* ---- Open MPI 4.1: ompi/mpi/c/<call>.c, the MPI_PARAM_CHECK blocks ---- */

/* OMPI_CHECK_DATATYPE_FOR_SEND (and _FOR_RECV: the same tests). */
static int o_type(ck_t *k, MPI_Datatype t, int count, const char *tname,
                  const char *cname)
{
    if (t == MPI_DATATYPE_NULL || t == NULL) {
        return refuse(k, MPI_ERR_TYPE, 0, 0, "%s is MPI_DATATYPE_NULL",
                      tname);
    }
    if (count < 0) {
        return refuse(k, MPI_ERR_COUNT, 0, 0, "%s is negative (%d)", cname,
                      count);
    }
    if (type_refused(t)) {
        return refuse(k, MPI_ERR_TYPE, 0, 0, "%s is not committed", tname);
    }
    return MPI_SUCCESS;
}

/* The same for entry i of a count array (and of a type array). */
static int o_typei(ck_t *k, MPI_Datatype t, int count, const char *tname,
                   const char *cname, int i)
{
    char cn[40];

    snprintf(cn, sizeof(cn), "%s[%d]", cname, i);
    return o_type(k, t, count, tname, cn);
}

static int o_null_type(ck_t *k, MPI_Datatype t, const char *name)
{
    if (t == MPI_DATATYPE_NULL || t == NULL) {
        return refuse(k, MPI_ERR_TYPE, 0, 0, "%s is MPI_DATATYPE_NULL",
                      name);
    }
    return MPI_SUCCESS;
}

static MPI_Aint o_bytes(MPI_Datatype t, int count)
{
    int size = 0;

    PMPI_Type_size(t, &size);
    return (MPI_Aint)size * count;
}

static int o_rooted(ck_t *k)
{
    const shim_coll_args_t *a = k->a;
    int gather = k->coll == DPS_COLL_GATHER || k->coll == DPS_COLL_GATHERV;
    int v = k->coll == DPS_COLL_GATHERV || k->coll == DPS_COLL_SCATTERV;
    int root = k->rank == a->root, i;
    const void *many = gather ? a->rbuf : a->sbuf;
    const void *one = gather ? a->sbuf : a->rbuf;

    if ((!root && one == MPI_IN_PLACE) || (root && many == MPI_IN_PLACE)) {
        return refuse(k, MPI_ERR_ARG, 0, 0, "%s is MPI_IN_PLACE %s",
                      gather ? (root ? "recvbuf" : "sendbuf")
                             : (root ? "sendbuf" : "recvbuf"),
                      root ? "at the root" : "on a rank other than the root");
    }
    TRY(check_root(k));
    if (gather) {
        if (a->sbuf != MPI_IN_PLACE) {
            TRY(o_type(k, a->stype, a->scount, "sendtype", "sendcount"));
        }
        if (!root) {
            return MPI_SUCCESS;
        }
        if (!v) {
            TRY(o_null_type(k, a->rtype, "recvtype"));
            if (a->rcount < 0) {
                return refuse(k, MPI_ERR_COUNT, 0, 0, "recvcount is "
                              "negative (%d)", a->rcount);
            }
            return MPI_SUCCESS;
        }
        if (a->rdispls == NULL) {
            return refuse(k, MPI_ERR_ARG, 0, 0, "displs is NULL");
        }
        if (a->rcounts == NULL) {
            return refuse(k, MPI_ERR_COUNT, 0, 0, "recvcounts is NULL");
        }
        for (i = 0; i < k->size; i++) {
            if (a->rcounts[i] < 0) {
                return refuse(k, MPI_ERR_COUNT, 0, 0, "recvcounts[%d] is "
                              "negative (%d)", i, a->rcounts[i]);
            }
            TRY(o_null_type(k, a->rtype, "recvtype"));
        }
        return MPI_SUCCESS;
    }
    /* Scatter. Regular: the root's send side only with an in-place
     * receive (sic, an else-if chain in iscatter.c). */
    if (a->rbuf != MPI_IN_PLACE) {
        if (a->rcount < 0) {
            return refuse(k, MPI_ERR_COUNT, 0, 0, "recvcount is negative "
                          "(%d)", a->rcount);
        }
        TRY(o_null_type(k, a->rtype, "recvtype"));
        if (!v) {
            return MPI_SUCCESS;
        }
    }
    if (!root) {
        return MPI_SUCCESS;
    }
    if (!v) {
        return o_type(k, a->stype, a->scount, "sendtype", "sendcount");
    }
    if (a->sdispls == NULL) {
        return refuse(k, MPI_ERR_ARG, 0, 0, "displs is NULL");
    }
    if (a->scounts == NULL) {
        return refuse(k, MPI_ERR_COUNT, 0, 0, "sendcounts is NULL");
    }
    for (i = 0; i < k->size; i++) {
        TRY(o_typei(k, a->stype, a->scounts[i], "sendtype", "sendcounts",
                    i));
    }
    return MPI_SUCCESS;
}

static int o_allgather(ck_t *k)
{
    const shim_coll_args_t *a = k->a;

    if (k->coll == DPS_COLL_ALLGATHER) {
        TRY(o_null_type(k, a->rtype, "recvtype"));
        if (a->rcount < 0) {
            return refuse(k, MPI_ERR_COUNT, 0, 0, "recvcount is negative "
                          "(%d)", a->rcount);
        }
        if (a->rbuf == MPI_IN_PLACE) {
            return refuse(k, MPI_ERR_ARG, 0, 0, "recvbuf is MPI_IN_PLACE");
        }
        if (a->sbuf != MPI_IN_PLACE) {
            TRY(o_type(k, a->stype, a->scount, "sendtype", "sendcount"));
        }
        return MPI_SUCCESS;
    }
    if (a->rbuf == MPI_IN_PLACE) {
        return refuse(k, MPI_ERR_ARG, 0, 0, "recvbuf is MPI_IN_PLACE");
    }
    if (a->rtype == MPI_DATATYPE_NULL) {
        return refuse(k, MPI_ERR_TYPE, 0, 0, "recvtype is "
                      "MPI_DATATYPE_NULL");
    }
    if (a->sbuf != MPI_IN_PLACE) {
        TRY(o_type(k, a->stype, a->scount, "sendtype", "sendcount"));
    }
    /* Its recvcounts loop runs to ompi_comm_remote_size(), which is 0 on
     * an intracommunicator: no count is checked. */
    if (a->rdispls == NULL) {
        return refuse(k, MPI_ERR_BUFFER, 0, 0, "displs is NULL");
    }
    return MPI_SUCCESS;
}

static int o_alltoall(ck_t *k)
{
    const shim_coll_args_t *a = k->a;
    int w = k->coll == DPS_COLL_ALLTOALLW, me = k->rank, i;
    const int *sc = a->scounts, *sd = a->sdispls;
    const MPI_Datatype *sts = a->stypes;
    MPI_Datatype st = a->stype;

    if (k->coll == DPS_COLL_ALLTOALL) {
        if (a->rbuf == MPI_IN_PLACE) {
            return refuse(k, MPI_ERR_ARG, 1, 0, "recvbuf is MPI_IN_PLACE");
        }
        if (a->sbuf != MPI_IN_PLACE) {
            TRY(o_type(k, a->stype, a->scount, "sendtype", "sendcount"));
        }
        TRY(o_type(k, a->rtype, a->rcount, "recvtype", "recvcount"));
        if (a->sbuf != MPI_IN_PLACE &&
            o_bytes(a->stype, a->scount) != o_bytes(a->rtype, a->rcount)) {
            return refuse(k, MPI_ERR_TRUNCATE, 0, 0, "sendcount x sendtype "
                          "and recvcount x recvtype differ in size");
        }
        return MPI_SUCCESS;
    }
    if (a->sbuf == MPI_IN_PLACE) {
        sc = a->rcounts;
        sd = a->rdispls;
        st = a->rtype;
        sts = a->rtypes;
    }
    if (sc == NULL || sd == NULL || a->rcounts == NULL ||
        a->rdispls == NULL || (w && (sts == NULL || a->rtypes == NULL)) ||
        a->rbuf == MPI_IN_PLACE) {
        return refuse(k, MPI_ERR_ARG, 0, 0, a->rbuf == MPI_IN_PLACE
                      ? "recvbuf is MPI_IN_PLACE" : "a count, displacement "
                      "or type array is NULL");
    }
    for (i = 0; i < k->size; i++) {
        TRY(o_typei(k, w ? sts[i] : st, sc[i], w ? "sendtypes[i]" : "sendtype",
                    "sendcounts", i));
        TRY(o_typei(k, w ? a->rtypes[i] : a->rtype, a->rcounts[i],
                    w ? "recvtypes[i]" : "recvtype", "recvcounts", i));
    }
    if (a->sbuf != MPI_IN_PLACE &&
        o_bytes(w ? sts[me] : st, sc[me]) !=
        o_bytes(w ? a->rtypes[me] : a->rtype, a->rcounts[me])) {
        return refuse(k, MPI_ERR_TRUNCATE, 0, 0, "this rank's block to "
                      "itself differs in size from the one it receives");
    }
    return MPI_SUCCESS;
}

static int o_reduce(ck_t *k)
{
    const shim_coll_args_t *a = k->a;
    int root = k->rank == a->root, i;

    if (k->coll == DPS_COLL_SCAN && a->rbuf == MPI_IN_PLACE) {
        /* iscan.c tests op null, then recvbuf, then op with type */
        if (a->op == MPI_OP_NULL || a->op == NULL) {
            return check_op(k, a->op, a->stype);
        }
        return refuse(k, MPI_ERR_ARG, 0, 0, "recvbuf is MPI_IN_PLACE");
    }
    TRY(check_op(k, a->op, a->stype));
    switch (k->coll) {
    case DPS_COLL_REDUCE:
        if ((!root && a->sbuf == MPI_IN_PLACE) ||
            (root && (a->rbuf == MPI_IN_PLACE ||
                      (a->sbuf == a->rbuf && (a->scount != 0 || k->pers))))) {
            return refuse(k, MPI_ERR_ARG, 0, 0, !root
                          ? "sendbuf is MPI_IN_PLACE on a rank other than "
                            "the root"
                          : a->rbuf == MPI_IN_PLACE
                          ? "recvbuf is MPI_IN_PLACE at the root"
                          : "sendbuf is recvbuf at the root (aliased "
                            "buffers; MPI_IN_PLACE is the way)");
        }
        TRY(o_type(k, a->stype, a->scount, "datatype", "count"));
        return check_root(k);
    case DPS_COLL_ALLREDUCE:
        if (a->rbuf == MPI_IN_PLACE) {
            return refuse(k, MPI_ERR_BUFFER, 1, 0, "recvbuf is "
                          "MPI_IN_PLACE");
        }
        if (a->sbuf == a->rbuf && a->sbuf != MPI_BOTTOM && a->scount > 1) {
            return refuse(k, MPI_ERR_BUFFER, 1, 0, "sendbuf is recvbuf "
                          "(aliased buffers; MPI_IN_PLACE is the way)");
        }
        return o_type(k, a->stype, a->scount, "datatype", "count");
    case DPS_COLL_REDUCE_SCATTER:
        if (a->rcounts == NULL) {
            return refuse(k, MPI_ERR_COUNT, 0, 0, "recvcounts is NULL");
        }
        if (a->rbuf == MPI_IN_PLACE) {
            return refuse(k, MPI_ERR_ARG, 0, 0, "recvbuf is MPI_IN_PLACE");
        }
        for (i = 0; i < k->size; i++) {
            TRY(o_typei(k, a->stype, a->rcounts[i], "datatype",
                        "recvcounts", i));
        }
        return MPI_SUCCESS;
    case DPS_COLL_REDUCE_SCATTER_BLOCK:
        if (a->rbuf == MPI_IN_PLACE) {
            return refuse(k, MPI_ERR_ARG, 0, 0, "recvbuf is MPI_IN_PLACE");
        }
        return o_type(k, a->stype, a->rcount, "datatype", "recvcount");
    default:   /* scan, exscan */
        return o_type(k, a->stype, a->scount, "datatype", "count");
    }
}

static int o_neighbor(ck_t *k, int in, int out)
{
    const shim_coll_args_t *a = k->a;
    int w = k->coll == DPS_COLL_NEIGHBOR_ALLTOALLW, i, nulls;
    int inplace = a->sbuf == MPI_IN_PLACE || a->rbuf == MPI_IN_PLACE;

    switch (k->coll) {
    case DPS_COLL_NEIGHBOR_ALLGATHER:
        TRY(o_null_type(k, a->rtype, "recvtype"));
        if (a->rcount < 0) {
            return refuse(k, MPI_ERR_COUNT, 0, 0, "recvcount is negative "
                          "(%d)", a->rcount);
        }
        if (inplace) {
            return refuse(k, MPI_ERR_ARG, 0, 0, "a buffer is MPI_IN_PLACE");
        }
        return o_type(k, a->stype, a->scount, "sendtype", "sendcount");
    case DPS_COLL_NEIGHBOR_ALLGATHERV:
        if (inplace) {
            return refuse(k, MPI_ERR_ARG, 0, 0, "a buffer is MPI_IN_PLACE");
        }
        if (a->rtype == MPI_DATATYPE_NULL) {
            return refuse(k, MPI_ERR_TYPE, 0, 0, "recvtype is "
                          "MPI_DATATYPE_NULL");
        }
        TRY(o_type(k, a->stype, a->scount, "sendtype", "sendcount"));
        /* recvcounts: as in iallgatherv.c, a loop to the remote size,
         * 0 here. */
        if (a->rdispls == NULL) {
            return refuse(k, MPI_ERR_BUFFER, 0, 0, "displs is NULL");
        }
        return MPI_SUCCESS;
    case DPS_COLL_NEIGHBOR_ALLTOALL:
        if (inplace) {
            return refuse(k, MPI_ERR_ARG, 1, 0, "a buffer is MPI_IN_PLACE");
        }
        TRY(o_type(k, a->stype, a->scount, "sendtype", "sendcount"));
        TRY(o_type(k, a->rtype, a->rcount, "recvtype", "recvcount"));
        if (o_bytes(a->stype, a->scount) != o_bytes(a->rtype, a->rcount)) {
            return refuse(k, MPI_ERR_TRUNCATE, 0, 0, "sendcount x sendtype "
                          "and recvcount x recvtype differ in size");
        }
        return MPI_SUCCESS;
    default:
        break;
    }
    /* v and w: the persistent forms test the arrays whatever the
     * degrees. */
    nulls = ((out > 0 || k->pers) &&
             (a->scounts == NULL ||
              (w ? a->sad == NULL : a->sdispls == NULL) ||
              (w && a->stypes == NULL))) ||
            ((in > 0 || k->pers) &&
             (a->rcounts == NULL ||
              (w ? a->rad == NULL : a->rdispls == NULL) ||
              (w && a->rtypes == NULL)));
    if (nulls || inplace) {
        return refuse(k, MPI_ERR_ARG, 0, 0, inplace ? "a buffer is "
                      "MPI_IN_PLACE" : "a count, displacement or type array "
                      "is NULL");
    }
    for (i = 0; i < out; i++) {
        TRY(o_typei(k, w ? a->stypes[i] : a->stype, a->scounts[i],
                    w ? "sendtypes[i]" : "sendtype", "sendcounts", i));
    }
    for (i = 0; i < in; i++) {
        TRY(o_typei(k, w ? a->rtypes[i] : a->rtype, a->rcounts[i],
                    w ? "recvtypes[i]" : "recvtype", "recvcounts", i));
    }
    return MPI_SUCCESS;
}

static int check_mpi(ck_t *k)
{
    const shim_coll_args_t *a = k->a;
    int in = 0, out = 0;

    if (!chk.on) {
        return MPI_SUCCESS;   /* mpi_param_check off: no checks at all */
    }
    switch (k->coll) {
    case DPS_COLL_BARRIER:
        return MPI_SUCCESS;
    case DPS_COLL_BCAST:
        TRY(o_type(k, a->stype, a->scount, "datatype", "count"));
        if (a->sbuf == MPI_IN_PLACE) {
            return refuse(k, MPI_ERR_ARG, 0, 0, "buffer is MPI_IN_PLACE");
        }
        return check_root(k);
    case DPS_COLL_GATHER:
    case DPS_COLL_GATHERV:
    case DPS_COLL_SCATTER:
    case DPS_COLL_SCATTERV:
        return o_rooted(k);
    case DPS_COLL_ALLGATHER:
    case DPS_COLL_ALLGATHERV:
        return o_allgather(k);
    case DPS_COLL_ALLTOALL:
    case DPS_COLL_ALLTOALLV:
    case DPS_COLL_ALLTOALLW:
        return o_alltoall(k);
    case DPS_COLL_REDUCE:
    case DPS_COLL_ALLREDUCE:
    case DPS_COLL_REDUCE_SCATTER:
    case DPS_COLL_REDUCE_SCATTER_BLOCK:
    case DPS_COLL_SCAN:
    case DPS_COLL_EXSCAN:
        return o_reduce(k);
    default:
        if (!is_neighbor(k->coll) || !degrees(a->comm, k->rank, &in, &out)) {
            return MPI_SUCCESS;
        }
        return o_neighbor(k, in, out);
    }
}

#else
static int check_mpi(ck_t *k)
{
    (void)k;
    return MPI_SUCCESS;   /* an MPI we know nothing of: it judges */
}
#endif

int shim_coll_check(const shim_coll_args_t *a, shim_check_t *out)
{
    ck_t k = {a, out, dps_coll_base(a->coll), a->coll > DPS_COLL_GROUP,
              0, 0};
    int inter = 0;

    memset(out, 0, sizeof(*out));
    out->raise_on = a->comm;
    if (a->comm == MPI_COMM_NULL ||
        PMPI_Comm_test_inter(a->comm, &inter) != MPI_SUCCESS || inter ||
        k.coll < DPS_COLL_ALLTOALL || k.coll > DPS_COLL_NEIGHBOR_ALLTOALLW) {
        return MPI_SUCCESS;   /* left to the MPI library */
    }
    PMPI_Comm_rank(a->comm, &k.rank);
    PMPI_Comm_size(a->comm, &k.size);
    return check_mpi(&k);
}

/* An MPI_T control variable's value as a truth value; dflt when the MPI
 * has no such variable. */
static int cvar_on(const char *name, int dflt)
{
    unsigned char v[64];
    char nm[128];
    int provided, idx, n, nlen = (int)sizeof(nm), verb, bind, scope;
    int dlen = 0, on = dflt;
    MPI_Datatype dt;
    MPI_T_enum en;
    MPI_T_cvar_handle h;

    if (PMPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
        return dflt;
    }
    if (PMPI_T_cvar_get_index(name, &idx) == MPI_SUCCESS &&
        PMPI_T_cvar_get_info(idx, nm, &nlen, &verb, &dt, &en, NULL, &dlen,
                             &bind, &scope) == MPI_SUCCESS &&
        (dt == MPI_INT || dt == MPI_UNSIGNED || dt == MPI_C_BOOL) &&
        PMPI_T_cvar_handle_alloc(idx, NULL, &h, &n) == MPI_SUCCESS) {
        memset(v, 0, sizeof(v));
        if (n == 1 && PMPI_T_cvar_read(h, v) == MPI_SUCCESS) {
            on = 0;
            for (size_t i = 0; i < sizeof(int); i++) {
                on |= v[i] != 0;
            }
        }
        PMPI_T_cvar_handle_free(&h);
    }
    PMPI_T_finalize();
    return on;
}

void shim_check_init(void)
{
#if CHK_OMPI
    chk.on = cvar_on("mpi_param_check", 1);
#elif CHK_MPICH
    chk.alias = cvar_on("MPIR_CVAR_COLL_ALIAS_CHECK", 1);
#endif
    if (PMPI_Comm_dup(MPI_COMM_SELF, &chk.probe) != MPI_SUCCESS ||
        PMPI_Comm_set_errhandler(chk.probe, MPI_ERRORS_RETURN) !=
        MPI_SUCCESS) {
        chk.probe = MPI_COMM_NULL;   /* datatypes not judged */
    }
}

void shim_check_fini(void)
{
    if (chk.probe != MPI_COMM_NULL) {
        PMPI_Comm_free(&chk.probe);
    }
}
