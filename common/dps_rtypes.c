/* SPDX-License-Identifier: BSD-3-Clause */
/* The reducible MPI datatypes: classes, operations, element types. */
#include "common/dps_rtypes.h"

#include <ctype.h>

#define OPS(...) ops_mask((const unsigned[]){__VA_ARGS__, 0})

static unsigned ops_mask(const unsigned *ops)
{
    unsigned m = 0;

    for (; *ops != 0; ops++) {
        m |= 1u << *ops;
    }
    return m;
}

unsigned dps_class_ops(unsigned cls)
{
    switch (cls) {
    case DPS_CLS_C_INT:
        return OPS(DPS_OP_MAX, DPS_OP_MIN, DPS_OP_SUM, DPS_OP_PROD,
                   DPS_OP_LAND, DPS_OP_LOR, DPS_OP_LXOR, DPS_OP_BAND,
                   DPS_OP_BOR, DPS_OP_BXOR);
    case DPS_CLS_F_INT:
    case DPS_CLS_MULTI:
        return OPS(DPS_OP_MAX, DPS_OP_MIN, DPS_OP_SUM, DPS_OP_PROD,
                   DPS_OP_BAND, DPS_OP_BOR, DPS_OP_BXOR);
    case DPS_CLS_FLOAT:
        return OPS(DPS_OP_MAX, DPS_OP_MIN, DPS_OP_SUM, DPS_OP_PROD);
    case DPS_CLS_LOGICAL: return OPS(DPS_OP_LAND, DPS_OP_LOR, DPS_OP_LXOR);
    case DPS_CLS_COMPLEX: return OPS(DPS_OP_SUM, DPS_OP_PROD);
    case DPS_CLS_BYTE: return OPS(DPS_OP_BAND, DPS_OP_BOR, DPS_OP_BXOR);
    case DPS_CLS_PAIR: return OPS(DPS_OP_MAXLOC, DPS_OP_MINLOC);
    default: return 0;
    }
}

const char *dps_class_str(unsigned cls)
{
    static const char *names[DPS_NCLS] = {"C integer",
                                          "Fortran integer",
                                          "Floating point",
                                          "Logical",
                                          "Complex",
                                          "Byte",
                                          "Multi-language types",
                                          "MAXLOC/MINLOC pairs"};

    return cls < DPS_NCLS ? names[cls] : "?";
}

static unsigned by_size(size_t size, unsigned t1, unsigned t2, unsigned t4,
                        unsigned t8)
{
    switch (size) {
    case 1: return t1;
    case 2: return t2;
    case 4: return t4;
    case 8: return t8;
    default: return DPS_T_NONE;
    }
}

unsigned dps_rtype_candidates(unsigned kind, unsigned pair, size_t size,
                              unsigned out[2])
{
    unsigned n = 0, t = DPS_T_NONE;

    switch (kind) {
    case DPS_K_SINT:
        t = by_size(size, DPS_T_I8, DPS_T_I16, DPS_T_I32, DPS_T_I64);
        break;
    case DPS_K_UINT:
        t = by_size(size, DPS_T_U8, DPS_T_U16, DPS_T_U32, DPS_T_U64);
        break;
    case DPS_K_LOGI:
        t = by_size(size, DPS_T_L8, DPS_T_NONE, DPS_T_L32, DPS_T_NONE);
        break;
    case DPS_K_REAL:
        if (size == 16) {
            out[n++] = DPS_T_X87;
            t = DPS_T_F128;
        } else {
            t = by_size(size, DPS_T_NONE, DPS_T_NONE, DPS_T_F32, DPS_T_F64);
        }
        break;
    case DPS_K_CPLX:
        if (size == 32) {
            out[n++] = DPS_T_CX87;
            t = DPS_T_C128;
        } else {
            t = size == 8 ? DPS_T_C32 : size == 16 ? DPS_T_C64 : DPS_T_NONE;
        }
        break;
    case DPS_K_PAIR:
        t = dps_dtype_size(pair) == size && size > 0 ? pair : DPS_T_NONE;
        break;
    default: break;
    }
    if (t != DPS_T_NONE) {
        out[n++] = t;
    }
    return n;
}

void dps_rtypes_markdown(FILE *out)
{
    static const struct {
        const char *name;
        unsigned    cls;
    } list[] = {
#define X(NAME, CLASS, KIND, PAIR) {"MPI_" #NAME, DPS_CLS_##CLASS},
        DPS_RTYPES(X)
#undef X
    };
    unsigned cls, op;
    size_t   i;

    fprintf(out, "| Class (MPI 4.1 §6.9.2) | Datatypes | Operations |\n");
    fprintf(out, "|---|---|---|\n");
    for (cls = 0; cls < DPS_NCLS; cls++) {
        const char *sep = "";

        fprintf(out, "| %s | ", dps_class_str(cls));
        for (i = 0; i < sizeof(list) / sizeof(list[0]); i++) {
            if (list[i].cls == cls) {
                fprintf(out, "%s`%s`", sep, list[i].name);
                sep = ", ";
            }
        }
        if (cls == DPS_CLS_F_INT || cls == DPS_CLS_FLOAT ||
            cls == DPS_CLS_COMPLEX) {
            fprintf(out, ", `MPI_Type_create_f90_%s` types",
                    cls == DPS_CLS_F_INT   ? "integer"
                    : cls == DPS_CLS_FLOAT ? "real"
                                           : "complex");
        }
        fprintf(out, " | ");
        sep = "";
        for (op = 1; op < DPS_OP_COUNT; op++) {
            const char *c = dps_op_str(op);

            if (dps_class_ops(cls) & (1u << op)) {
                fprintf(out, "%s`MPI_", sep);
                for (; *c != '\0'; c++) {
                    fputc(toupper((unsigned char)*c), out);
                }
                fputc('`', out);
                sep = ", ";
            }
        }
        fprintf(out, " |\n");
    }
}
