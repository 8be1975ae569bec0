/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Check tests of the reduction kernels and element types (dps_sched.c,
 * dps_rtypes.c): fixed sizes, MPI's operand order and tie rules, x87
 * padding never written, logicals as 1 and 0, the classes' operations.
 */
#include "common/dps_rtypes.h"
#include "common/dps_sched.h"

#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* The wire sizes: the same on every ISA. */
START_TEST(sizes)
{
    static const struct {
        unsigned t;
        size_t   size;
    } want[] = {
        {DPS_T_I8, 1},       {DPS_T_U16, 2},      {DPS_T_I32, 4},
        {DPS_T_U64, 8},      {DPS_T_F32, 4},      {DPS_T_F64, 8},
        {DPS_T_X87, 16},     {DPS_T_F128, 16},    {DPS_T_L8, 1},
        {DPS_T_L32, 4},      {DPS_T_C32, 8},      {DPS_T_C64, 16},
        {DPS_T_CX87, 32},    {DPS_T_C128, 32},    {DPS_T_F32_I32, 8},
        {DPS_T_F64_I32, 12}, {DPS_T_I64_I32, 12}, {DPS_T_I32_I32, 8},
        {DPS_T_I16_I32, 6},  {DPS_T_X87_I32, 20}, {DPS_T_F32_F32, 8},
        {DPS_T_F64_F64, 16},
    };

    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        ck_assert_uint_eq(dps_dtype_size(want[i].t), want[i].size);
        ck_assert_str_ne(dps_dtype_str(want[i].t), "?");
    }
    ck_assert_uint_eq(dps_dtype_size(DPS_T_NONE), 0);
    ck_assert_uint_eq(dps_dtype_size(DPS_T_COUNT), 0);
    ck_assert_uint_eq(dps_dtype_format(DPS_T_CX87), DPS_FMT_X87);
    ck_assert_uint_eq(dps_dtype_format(DPS_T_C128), DPS_FMT_F128);
    ck_assert_uint_eq(dps_dtype_format(DPS_T_F64), 0);
}
END_TEST

/* Which operations apply to which element types. */
START_TEST(valid)
{
    ck_assert(dps_op_valid(DPS_OP_LAND, DPS_T_L32));
    ck_assert(!dps_op_valid(DPS_OP_SUM, DPS_T_L32));
    ck_assert(!dps_op_valid(DPS_OP_BAND, DPS_T_F64));
    ck_assert(!dps_op_valid(DPS_OP_MAX, DPS_T_C64));
    ck_assert(dps_op_valid(DPS_OP_MINLOC, DPS_T_F64_F64));
    ck_assert(!dps_op_valid(DPS_OP_SUM, DPS_T_I32_I32));
    ck_assert(!dps_op_valid(DPS_OP_NONE, DPS_T_I32));
    ck_assert(!dps_op_valid(DPS_OP_SUM, DPS_T_COUNT));
    /* A format the build does not compute is refused. */
    ck_assert_int_eq(dps_op_valid(DPS_OP_SUM, DPS_T_X87),
                     (dps_reduce_formats() & DPS_FMT_X87) != 0);
}
END_TEST

/* A reduction that does not apply is refused, and writes nothing. */
START_TEST(refused)
{
    double src[1] = {1.0}, dst[1] = {2.0};

    ck_assert_int_eq(dps_reduce(DPS_OP_BAND, DPS_T_F64, src, dst, sizeof(dst)),
                     DPS_ERR_INVALID);
    ck_assert_int_eq(
        dps_reduce(DPS_OP_SUM, DPS_T_COUNT, src, dst, sizeof(dst)),
        DPS_ERR_INVALID);
    ck_assert(dst[0] == 2.0);
}
END_TEST

/* A schedule's checks: a sound step passes; an unknown kind, a region
 * out of bounds, a peer outside the communicator and a reduction that
 * does not apply are malformed. */
START_TEST(sched_checked)
{
    const uint64_t len[DPS_NBUF] = {16, 16, 0};
    dps_step_t     st = {.kind = DPS_STEP_RECV_REDUCE,
                         .dst_buf = DPS_BUF_RECV,
                         .op = DPS_OP_SUM,
                         .dtype = DPS_T_F64,
                         .peer = 1,
                         .len = 16};
    char           err[128];

    ck_assert_int_eq(dps_sched_check(&st, 1, 2, len, err, sizeof(err)),
                     DPS_OK);
    st.kind = DPS_STEP_MAX;
    ck_assert_int_eq(dps_sched_check(&st, 1, 2, len, err, sizeof(err)),
                     DPS_ERR_PROTO);
    st.kind = DPS_STEP_RECV_REDUCE;
    st.dst_off = 8;
    ck_assert_int_eq(dps_sched_check(&st, 1, 2, len, err, sizeof(err)),
                     DPS_ERR_PROTO);
    st.dst_off = 0;
    ck_assert_int_eq(dps_sched_check(&st, 1, 1, len, err, sizeof(err)),
                     DPS_ERR_PROTO);
    st.op = DPS_OP_BAND;
    ck_assert_int_eq(dps_sched_check(&st, 1, 2, len, err, sizeof(err)),
                     DPS_ERR_PROTO);
    ck_assert_str_ne(err, "");
}
END_TEST

/* The operands as MPI's loops have them (inout = inout > in ? inout :
 * in): of two equal values, +0 and -0, MAX and MIN give src's. */
START_TEST(operand_order)
{
    double src[2] = {-0.0, 1.0}, dst[2] = {0.0, 2.0};

    ck_assert_int_eq(dps_reduce(DPS_OP_MAX, DPS_T_F64, src, dst, sizeof(dst)),
                     DPS_OK);
    ck_assert(signbit(dst[0]) && dst[1] == 2.0);
    dst[0] = -0.0;
    src[0] = 0.0;
    dps_reduce(DPS_OP_MIN, DPS_T_F64, src, dst, sizeof(dst));
    ck_assert(!signbit(dst[0]) && dst[1] == 1.0);
}
END_TEST

/* MAXLOC/MINLOC: the better value wins; on a tie dst's value stays and
 * the lesser index is taken. */
START_TEST(loc_ties)
{
    struct __attribute__((packed)) {
        double  v;
        int32_t k;
    } s[3] = {{2.0, 5}, {-0.0, 1}, {1.0, 9}},
      d[3] = {{1.0, 7}, {0.0, 3}, {1.0, 4}};

    ck_assert_uint_eq(sizeof(s), 36);
    ck_assert_int_eq(dps_reduce(DPS_OP_MAXLOC, DPS_T_F64_I32, s, d, sizeof(d)),
                     DPS_OK);
    ck_assert(d[0].v == 2.0 && d[0].k == 5);
    ck_assert(d[1].v == 0.0 && !signbit(d[1].v) && d[1].k == 1);
    ck_assert(d[2].v == 1.0 && d[2].k == 4);
    dps_reduce(DPS_OP_MINLOC, DPS_T_F64_I32, s, d, sizeof(d));
    ck_assert(d[0].v == 2.0 && d[0].k == 5);
}
END_TEST

/* Logicals: any nonzero is true, results are 1 or 0. */
START_TEST(logicals)
{
    int32_t a[4] = {2, 0, -1, 7}, b[4] = {5, 0, 0, 0};

    dps_reduce(DPS_OP_LAND, DPS_T_L32, a, b, sizeof(b));
    ck_assert(b[0] == 1 && b[1] == 0 && b[2] == 0 && b[3] == 0);
    b[0] = 3;
    b[1] = 0;
    b[2] = 9;
    b[3] = 0;
    dps_reduce(DPS_OP_LXOR, DPS_T_L32, a, b, sizeof(b));
    ck_assert(b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 1);
}
END_TEST

/* Integer sums wrap in the type's width, unsigned compares unsigned. */
START_TEST(integers)
{
    int8_t   a[2] = {100, -128}, b[2] = {100, -1};
    uint32_t u[1] = {0x80000000u}, v[1] = {1};
    int16_t  p[1] = {300}, q[1] = {300};

    dps_reduce(DPS_OP_SUM, DPS_T_I8, a, b, sizeof(b));
    ck_assert(b[0] == (int8_t)200 && b[1] == 127);
    dps_reduce(DPS_OP_MAX, DPS_T_U32, u, v, sizeof(v));
    ck_assert_uint_eq(v[0], 0x80000000u);
    dps_reduce(DPS_OP_PROD, DPS_T_I16, p, q, sizeof(q));
    ck_assert_int_eq(q[0], (int16_t)(300 * 300));
}
END_TEST

#if defined(__x86_64__) && LDBL_MANT_DIG == 64
/* x87: 10 value bytes; the 6 bytes of padding after them stay dst's. */
START_TEST(x87_padding)
{
    unsigned char s[32], d[32];
    long double   x = 1.5L, y = 2.25L, r;

    memset(s, 0xBB, sizeof(s));
    memset(d, 0xAA, sizeof(d));
    memcpy(s, &x, 10);
    memcpy(d, &y, 10);
    memcpy(s + 16, &y, 10);
    memcpy(d + 16, &x, 10);
    ck_assert_int_eq(dps_reduce(DPS_OP_SUM, DPS_T_X87, s, d, 32), DPS_OK);
    r = 0;
    memcpy(&r, d, 10);
    ck_assert(r == 3.75L);
    for (int i = 10; i < 16; i++) {
        ck_assert_uint_eq(d[i], 0xAA);
        ck_assert_uint_eq(d[16 + i], 0xAA);
    }
    ck_assert_int_eq(dps_reduce(DPS_OP_PROD, DPS_T_CX87, s, d, 32), DPS_OK);
    for (int i = 10; i < 16; i++) {
        ck_assert_uint_eq(d[i], 0xAA);
        ck_assert_uint_eq(d[16 + i], 0xAA);
    }
}
END_TEST
#endif

/* The classes of MPI 4.1 §6.9.2 and the element types of a size. */
START_TEST(classes)
{
    unsigned c[2];

    ck_assert_uint_eq(dps_class_ops(DPS_CLS_LOGICAL), (1u << DPS_OP_LAND) |
                                                          (1u << DPS_OP_LOR) |
                                                          (1u << DPS_OP_LXOR));
    ck_assert(!(dps_class_ops(DPS_CLS_F_INT) & (1u << DPS_OP_LAND)));
    ck_assert(dps_class_ops(DPS_CLS_MULTI) & (1u << DPS_OP_BXOR));
    ck_assert_uint_eq(dps_class_ops(DPS_CLS_BYTE), (1u << DPS_OP_BAND) |
                                                       (1u << DPS_OP_BOR) |
                                                       (1u << DPS_OP_BXOR));
    ck_assert_uint_eq(dps_rtype_candidates(DPS_K_REAL, DPS_T_NONE, 16, c), 2);
    ck_assert(c[0] == DPS_T_X87 && c[1] == DPS_T_F128);
    ck_assert_uint_eq(dps_rtype_candidates(DPS_K_REAL, DPS_T_NONE, 2, c), 0);
    ck_assert_uint_eq(dps_rtype_candidates(DPS_K_LOGI, DPS_T_NONE, 4, c), 1);
    ck_assert_uint_eq(c[0], DPS_T_L32);
    ck_assert_uint_eq(dps_rtype_candidates(DPS_K_PAIR, DPS_T_F64_I32, 16, c),
                      0);
    ck_assert_uint_eq(dps_rtype_candidates(DPS_K_PAIR, DPS_T_F64_I32, 12, c),
                      1);
}
END_TEST

int main(void)
{
    Suite   *s = suite_create("reduce");
    TCase   *tc = tcase_create("kernels");
    SRunner *sr;
    int      failed;

    tcase_add_test(tc, sizes);
    tcase_add_test(tc, valid);
    tcase_add_test(tc, refused);
    tcase_add_test(tc, sched_checked);
    tcase_add_test(tc, operand_order);
    tcase_add_test(tc, loc_ties);
    tcase_add_test(tc, logicals);
    tcase_add_test(tc, integers);
#if defined(__x86_64__) && LDBL_MANT_DIG == 64
    tcase_add_test(tc, x87_padding);
#endif
    tcase_add_test(tc, classes);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
