/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What both MPIs' call-time checks share (args/args_int.h): their
 * settings, the refusal, the root and the neighbourhood degrees, and
 * the datatypes and operations as the MPI library judges them (whether a
 * datatype is refused; which predefined operations apply to which
 * predefined datatypes, where MPICH 4.0 and Open MPI 4.1 differ as their
 * sources say).
 */
#include "shim/args/args_int.h"

#include <stdarg.h>
#include <stdio.h>

ck_cfg_t ck_cfg = {MPI_COMM_NULL, 1, 1};

/* Refuse the call: class cls, raised on the call's communicator (or
 * MPI_COMM_WORLD: world), the message naming the argument. */
int ck_refuse(ck_t *k, int cls, int world, unsigned bad, const char *fmt, ...)
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

int ck_root(ck_t *k)
{
    if (k->a->root < 0 || k->a->root >= k->size) {
        return ck_refuse(k, MPI_ERR_ROOT, 0, SHIM_BAD_ROOT,
                         "root %d is not a "
                         "rank of the communicator (size %d)",
                         k->a->root, k->size);
    }
    return MPI_SUCCESS;
}

/* The neighbourhood calls' degrees; 0 with no topology. */
int ck_degrees(MPI_Comm comm, int rank, int *in, int *out)
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
    default: return 0;
    }
}

/* Does MPI refuse t, known not to be MPI_DATATYPE_NULL, as a datatype
 * (not committed, or freed)? Asked of MPI itself, by a call that checks
 * the type exactly as the collectives do and does nothing else: MPICH
 * MPI_Pack_size of 0 elements, Open MPI MPI_Send of 0 elements to
 * MPI_PROC_NULL; on our own communicator, whose handler returns. */
int ck_type_refused(MPI_Datatype t)
{
    int n = 0;

    if (ck_cfg.probe == MPI_COMM_NULL) {
        return 0; /* not judged */
    }
#if CHK_MPICH
    return PMPI_Pack_size(0, t, ck_cfg.probe, &n) != MPI_SUCCESS;
#else
    return PMPI_Send(&n, 0, t, MPI_PROC_NULL, 0, ck_cfg.probe) != MPI_SUCCESS;
#endif
}

/* What a predefined datatype is to the operations' tables. */
enum {
    G_UNKNOWN, /* not judged: left to the MPI library */
    G_NONE,    /* no predefined operation applies */
    G_CINT,    /* C integers */
    G_FINT,    /* Fortran integers */
    G_FP,      /* floating point */
    G_LOGICAL,
    G_COMPLEX,
    G_BYTE,
    G_PAIR /* MINLOC and MAXLOC pairs */
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
        MPI_CHAR,      MPI_SIGNED_CHAR,    MPI_UNSIGNED_CHAR,
        MPI_SHORT,     MPI_UNSIGNED_SHORT, MPI_INT,
        MPI_UNSIGNED,  MPI_LONG,           MPI_UNSIGNED_LONG,
        MPI_LONG_LONG, MPI_LONG_LONG_INT,  MPI_UNSIGNED_LONG_LONG,
        MPI_INT8_T,    MPI_INT16_T,        MPI_INT32_T,
        MPI_INT64_T,   MPI_UINT8_T,        MPI_UINT16_T,
        MPI_UINT32_T,  MPI_UINT64_T};
    static const MPI_Datatype fp[] = {MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE,
                                      MPI_REAL, MPI_DOUBLE_PRECISION};
    static const MPI_Datatype cpx[] = {
        MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX,
        MPI_COMPLEX, MPI_DOUBLE_COMPLEX};
    static const MPI_Datatype pair[] = {MPI_2INT,
                                        MPI_FLOAT_INT,
                                        MPI_DOUBLE_INT,
                                        MPI_LONG_DOUBLE_INT,
                                        MPI_LONG_INT,
                                        MPI_SHORT_INT,
                                        MPI_2INTEGER,
                                        MPI_2REAL,
                                        MPI_2DOUBLE_PRECISION};
    static const struct {
        const MPI_Datatype *types;
        size_t              n;
        int                 group;
    } lists[] = {{cint, sizeof(cint) / sizeof(cint[0]), G_CINT},
                 {fp, sizeof(fp) / sizeof(fp[0]), G_FP},
                 {cpx, sizeof(cpx) / sizeof(cpx[0]), G_COMPLEX},
                 {pair, sizeof(pair) / sizeof(pair[0]), G_PAIR}};

    for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
        for (size_t i = 0; i < lists[l].n; i++) {
            if (t == lists[l].types[i]) {
                return lists[l].group;
            }
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
    const unsigned logical =
        1u << G_CINT | 1u << G_LOGICAL | 1u << G_FINT | 1u << G_FP;
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
int ck_op(ck_t *k, MPI_Op op, MPI_Datatype t)
{
    const char *on = "op with this datatype";
    int         g, applies, n;

#if CHK_OMPI
    if (op == MPI_OP_NULL || op == NULL) {
#else
    if (op == MPI_OP_NULL) {
#endif
        return ck_refuse(k, MPI_ERR_OP, 0, SHIM_BAD_OP, "op is MPI_OP_NULL");
    }
    if (op == MPI_NO_OP || op == MPI_REPLACE) {
        return ck_refuse(k, MPI_ERR_OP, 0, SHIM_BAD_OP,
                         "op is %s, not for "
                         "reductions",
                         op == MPI_NO_OP ? "MPI_NO_OP" : "MPI_REPLACE");
    }
#if CHK_MPICH
    /* MPIR_ERRTEST_OP: a handle of the kind of operations. */
    if ((((unsigned)op >> 26) & 0xf) != 0x6 || ((unsigned)op >> 30) == 0) {
        return ck_refuse(k, MPI_ERR_OP, 0, SHIM_BAD_OP,
                         "op is not an "
                         "operation handle");
    }
#endif
    if (op_applies(op, G_NONE) < 0) {
        return MPI_SUCCESS; /* user-defined */
    }
    if (t == MPI_DATATYPE_NULL) {
        return ck_refuse(k, MPI_ERR_OP, 0, SHIM_BAD_OP,
                         "%s: the datatype is "
                         "MPI_DATATYPE_NULL",
                         on);
    }
#if CHK_MPICH
    /* Not a datatype handle: no operation's table has it. */
    if ((((unsigned)t >> 26) & 0xf) != 0x3 || ((unsigned)t >> 30) == 0) {
        return ck_refuse(k, MPI_ERR_OP, 0, SHIM_BAD_OP,
                         "%s: the datatype is "
                         "not a datatype handle",
                         on);
    }
#endif
    n = named(t);
    if (n < 0) {
        return MPI_SUCCESS;
    }
    if (n == 0) {
        return ck_refuse(k, MPI_ERR_OP, 0, SHIM_BAD_OP,
                         "%s: a predefined "
                         "operation on a derived datatype",
                         on);
    }
    g = group_of(t);
    applies = op_applies(op, g);
    if (g != G_UNKNOWN && !applies) {
        return ck_refuse(k, MPI_ERR_OP, 0, SHIM_BAD_OP,
                         "%s: the operation is "
                         "not defined for the datatype",
                         on);
    }
    return MPI_SUCCESS;
}
