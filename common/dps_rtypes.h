/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The MPI datatypes whose reductions are offloaded, and the operations
 * on each: MPI 4.1 §6.9.2's table, in one list. The shim gives every name
 * its MPI handle and finds out at start-up which ones the MPI library
 * has and computes as the agents do (shim/data/rtypes.c); the list in
 * docs/reductions.md is printed from it (dpu_agent --types-markdown).
 * No MPI here.
 */
#ifndef DPS_RTYPES_H
#define DPS_RTYPES_H

#include "common/dps_sched.h"

#include <stddef.h>
#include <stdio.h>

/* The groups of §6.9.2 (which operations a type takes). */
enum {
    DPS_CLS_C_INT, /* C integer */
    DPS_CLS_F_INT, /* Fortran integer */
    DPS_CLS_FLOAT, /* floating point */
    DPS_CLS_LOGICAL,
    DPS_CLS_COMPLEX,
    DPS_CLS_BYTE,
    DPS_CLS_MULTI, /* multi-language types */
    DPS_CLS_PAIR,  /* MAXLOC/MINLOC pairs */
    DPS_NCLS
};

/* What an element is: with the MPI library's size of the type, this
 * says which DPS_T_ it may be (dps_rtype_candidates). */
enum {
    DPS_K_SINT,
    DPS_K_UINT,
    DPS_K_REAL,
    DPS_K_CPLX,
    DPS_K_LOGI,
    DPS_K_PAIR
};

/*
 * X(NAME, CLASS, KIND, PAIR): MPI_<NAME>, in DPS_CLS_<CLASS>, an element
 * DPS_K_<KIND>; pairs are DPS_T_<PAIR> (NONE for the others). Optional
 * types (MPI_INTEGER16, MPI_REAL2, ...) are listed: where an MPI lacks
 * one, the shim finds a null handle or no size, and skips it.
 */
/* One row per line, laid out by hand. */
/* clang-format off */
#define DPS_RTYPES(X)                                                      \
    X(INT, C_INT, SINT, NONE) X(LONG, C_INT, SINT, NONE)                   \
    X(SHORT, C_INT, SINT, NONE) X(UNSIGNED_SHORT, C_INT, UINT, NONE)       \
    X(UNSIGNED, C_INT, UINT, NONE) X(UNSIGNED_LONG, C_INT, UINT, NONE)     \
    X(LONG_LONG_INT, C_INT, SINT, NONE) X(LONG_LONG, C_INT, SINT, NONE)    \
    X(UNSIGNED_LONG_LONG, C_INT, UINT, NONE)                               \
    X(SIGNED_CHAR, C_INT, SINT, NONE) X(UNSIGNED_CHAR, C_INT, UINT, NONE)  \
    X(INT8_T, C_INT, SINT, NONE) X(INT16_T, C_INT, SINT, NONE)             \
    X(INT32_T, C_INT, SINT, NONE) X(INT64_T, C_INT, SINT, NONE)            \
    X(UINT8_T, C_INT, UINT, NONE) X(UINT16_T, C_INT, UINT, NONE)           \
    X(UINT32_T, C_INT, UINT, NONE) X(UINT64_T, C_INT, UINT, NONE)          \
    X(INTEGER, F_INT, SINT, NONE) X(INTEGER1, F_INT, SINT, NONE)           \
    X(INTEGER2, F_INT, SINT, NONE) X(INTEGER4, F_INT, SINT, NONE)          \
    X(INTEGER8, F_INT, SINT, NONE) X(INTEGER16, F_INT, SINT, NONE)         \
    X(FLOAT, FLOAT, REAL, NONE) X(DOUBLE, FLOAT, REAL, NONE)               \
    X(REAL, FLOAT, REAL, NONE) X(DOUBLE_PRECISION, FLOAT, REAL, NONE)      \
    X(LONG_DOUBLE, FLOAT, REAL, NONE) X(REAL2, FLOAT, REAL, NONE)          \
    X(REAL4, FLOAT, REAL, NONE) X(REAL8, FLOAT, REAL, NONE)                \
    X(REAL16, FLOAT, REAL, NONE)                                           \
    X(LOGICAL, LOGICAL, LOGI, NONE) X(C_BOOL, LOGICAL, LOGI, NONE)         \
    X(CXX_BOOL, LOGICAL, LOGI, NONE)                                       \
    X(COMPLEX, COMPLEX, CPLX, NONE) X(C_COMPLEX, COMPLEX, CPLX, NONE)      \
    X(C_FLOAT_COMPLEX, COMPLEX, CPLX, NONE)                                \
    X(C_DOUBLE_COMPLEX, COMPLEX, CPLX, NONE)                               \
    X(C_LONG_DOUBLE_COMPLEX, COMPLEX, CPLX, NONE)                          \
    X(CXX_FLOAT_COMPLEX, COMPLEX, CPLX, NONE)                              \
    X(CXX_DOUBLE_COMPLEX, COMPLEX, CPLX, NONE)                             \
    X(CXX_LONG_DOUBLE_COMPLEX, COMPLEX, CPLX, NONE)                        \
    X(DOUBLE_COMPLEX, COMPLEX, CPLX, NONE) X(COMPLEX4, COMPLEX, CPLX, NONE)\
    X(COMPLEX8, COMPLEX, CPLX, NONE) X(COMPLEX16, COMPLEX, CPLX, NONE)     \
    X(COMPLEX32, COMPLEX, CPLX, NONE)                                      \
    X(BYTE, BYTE, UINT, NONE)                                              \
    X(AINT, MULTI, SINT, NONE) X(OFFSET, MULTI, SINT, NONE)                \
    X(COUNT, MULTI, SINT, NONE)                                            \
    X(2REAL, PAIR, PAIR, F32_F32) X(2DOUBLE_PRECISION, PAIR, PAIR, F64_F64)\
    X(2INTEGER, PAIR, PAIR, I32_I32) X(FLOAT_INT, PAIR, PAIR, F32_I32)     \
    X(DOUBLE_INT, PAIR, PAIR, F64_I32) X(LONG_INT, PAIR, PAIR, I64_I32)    \
    X(2INT, PAIR, PAIR, I32_I32) X(SHORT_INT, PAIR, PAIR, I16_I32)         \
    X(LONG_DOUBLE_INT, PAIR, PAIR, X87_I32)
/* clang-format on */

/* Bit (1u << DPS_OP_x) for each operation MPI allows on the class. */
unsigned dps_class_ops(unsigned cls);

/* "C integer", "Fortran integer", ... */
const char *dps_class_str(unsigned cls);

/*
 * The element types (DPS_T_*) a type of kind (DPS_K_*) and size bytes
 * may be, best first, into out[0..1]; pair: the pair's DPS_T_, which
 * must have that size. Their number (0: none of that size; two: a 16-
 * byte real may be x87 or binary128, the MPI library's arithmetic says
 * which).
 */
unsigned dps_rtype_candidates(unsigned kind, unsigned pair, size_t size,
                              unsigned out[2]);

/* The list in docs/reductions.md: a Markdown table of the classes, their
 * types and operations. */
void dps_rtypes_markdown(FILE *out);

#endif
