/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The collectives' table (common/dps_colls.h) against the MPI library's
 * own names: built with an MPI's compiler wrapper (build/<mpi>/check_colls,
 * run with the path of that MPI's libdpushim.so), it fails if any list
 * made from the table disagrees with the names MPI exports, with the
 * others, or with the shim's wrappers: ids, dps_coll_str, dps_coll_short,
 * the DPUSHIM_* switches, the families, the shim's C and (Open MPI)
 * Fortran symbols.
 */
#define _GNU_SOURCE 1 /* dladdr */
#include "common/dps_colls.h"
#include "common/dps_config.h"

#include <check.h>
#include <ctype.h>
#include <dlfcn.h>
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static const char *shim_path;
static void       *shim_lib;

/* Whether the shim's own library defines name. */
static int in_shim(const char *name)
{
    Dl_info self, it;
    void   *p = dlsym(shim_lib, name);

    return p != NULL &&
           dladdr(dlsym(shim_lib, "dpushim_impl_available"), &self) != 0 &&
           dladdr(p, &it) != 0 && it.dli_fbase == self.dli_fbase;
}

static int is_group(unsigned c)
{
    return c == DPS_COLL_GROUP || c == DPS_COLL_GROUP_INIT;
}

/* The MPI library's symbol for c's C call: MPI-4's name, or Open MPI
 * 4.1's MPIX_ for a persistent form. */
static void *mpi_symbol(unsigned c, char *name, size_t len)
{
    void *p;

    snprintf(name, len, "%s", dps_coll_str(c));
    p = dlsym(RTLD_DEFAULT, name);
    if (p == NULL && dps_coll_persistent((int)c)) {
        snprintf(name, len, "MPIX_%s", dps_coll_str(c) + 4);
        p = dlsym(RTLD_DEFAULT, name);
    }
    return p;
}

static void lower(char *s)
{
    for (; *s != '\0'; s++) {
        *s = (char)tolower((unsigned char)*s);
    }
}

START_TEST(ids)
{
    ck_assert_int_eq(DPS_COLL_ALLTOALL, 1);
    ck_assert_int_eq(DPS_COLL_GROUP_INIT, 2 * DPS_COLL_GROUP);
    ck_assert_int_eq(DPS_COLL_MAX, DPS_COLL_GROUP_INIT + 1);
    for (int c = 1; c < DPS_COLL_GROUP; c++) {
        ck_assert_int_eq(dps_coll_base(c + DPS_COLL_GROUP), c);
        ck_assert(!dps_coll_persistent(c));
        ck_assert(dps_coll_persistent(c + DPS_COLL_GROUP));
    }
    ck_assert_str_eq(dps_coll_str(0), "?");
    ck_assert_str_eq(dps_coll_str(DPS_COLL_MAX), "?");
    ck_assert_str_eq(dps_coll_short(0), "?");
    ck_assert_str_eq(dps_coll_short(DPS_COLL_MAX), "?");
    ck_assert_int_eq(dps_coll_family(0), DPS_FAM_NONE);
}
END_TEST

/* Every MPI name is one the MPI library exports, and the shim wraps it. */
START_TEST(mpi_names)
{
    char     name[128];
    unsigned c;

    for (c = 1; c < DPS_COLL_MAX; c++) {
        if (is_group(c)) {
            continue;
        }
        ck_assert_msg(strncmp(dps_coll_str(c), "MPI_", 4) == 0, "%u: %s", c,
                      dps_coll_str(c));
        ck_assert_msg(mpi_symbol(c, name, sizeof(name)) != NULL,
                      "%s: not in the MPI library", dps_coll_str(c));
        ck_assert_msg(in_shim(name), "%s: the shim does not wrap it (%s)",
                      name, shim_path);
        if (!dps_coll_persistent((int)c)) {
            ck_assert_msg(strncmp(dps_coll_str(c), "MPI_I", 5) == 0,
                          "%s is not nonblocking", dps_coll_str(c));
        }
    }
}
END_TEST

/* A persistent form's name is its nonblocking call's: MPI_Ialltoall,
 * MPI_Alltoall_init. */
START_TEST(persistent_names)
{
    char want[128];

    for (unsigned c = 1; c < DPS_COLL_GROUP; c++) {
        snprintf(want, sizeof(want), "MPI_%c%s_init",
                 toupper((unsigned char)dps_coll_str(c)[5]),
                 dps_coll_str(c) + 6);
        ck_assert_str_eq(dps_coll_str(c + DPS_COLL_GROUP), want);
    }
}
END_TEST

/* The short names: the MPI name, lower case, without MPI_. */
START_TEST(short_names)
{
    char want[128];

    for (unsigned c = 1; c < DPS_COLL_MAX; c++) {
        if (is_group(c)) {
            continue;
        }
        snprintf(want, sizeof(want), "%s", dps_coll_str(c) + 4);
        lower(want);
        ck_assert_str_eq(dps_coll_short(c), want);
    }
    ck_assert_str_eq(dps_coll_short(DPS_COLL_GROUP), "group");
    ck_assert_str_eq(dps_coll_short(DPS_COLL_GROUP_INIT), "group_init");
}
END_TEST

/* Each switch DPUSHIM_<SHORT NAME> sets its own collective's flag. */
START_TEST(switches)
{
    int seen[DPS_COLL_MAX] = {0};

    for (const dps_cfg_entry_t *e = dps_config_table; e->name != NULL; e++) {
        size_t   first = offsetof(dps_config_t, coll);
        char     want[128];
        unsigned c;

        if (e->offset < first ||
            e->offset >= first + sizeof(((dps_config_t *)0)->coll)) {
            continue;
        }
        c = (unsigned)((e->offset - first) / sizeof(int)) + 1;
        snprintf(want, sizeof(want), "%s", e->name);
        lower(want);
        ck_assert_str_eq(dps_coll_short(c), want);
        ck_assert_int_eq(e->type, DPS_CFG_BOOL);
        seen[c]++;
    }
    for (unsigned c = 1; c < DPS_COLL_MAX; c++) {
        ck_assert_msg(seen[c] == 1, "%s: %d switches", dps_coll_str(c),
                      seen[c]);
    }
}
END_TEST

/* The families by name: reductions reduce or scan, the neighbourhood
 * calls say so, the rest move data. */
START_TEST(families)
{
    for (unsigned c = 1; c < DPS_COLL_MAX; c++) {
        const char  *n = dps_coll_short(c);
        dps_family_t want = is_group(c)             ? DPS_FAM_GROUP
                            : strstr(n, "neighbor") ? DPS_FAM_NEIGHBOR
                            : strstr(n, "reduce") || strstr(n, "scan")
                                ? DPS_FAM_REDUCE
                                : DPS_FAM_MOVE;

        ck_assert_msg(dps_coll_family((int)c) == want, "%s: family %d", n,
                      (int)dps_coll_family((int)c));
    }
}
END_TEST

#if defined(OPEN_MPI) && OPEN_MPI
/* Open MPI's Fortran bindings of each nonblocking call: the shim's. */
START_TEST(fortran_names)
{
    char name[128];

    for (unsigned c = 1; c < DPS_COLL_GROUP; c++) {
        snprintf(name, sizeof(name), "%s_", dps_coll_str(c));
        lower(name);
        ck_assert_msg(in_shim(name), "%s: not in %s", name, shim_path);
    }
}
END_TEST
#endif

int main(int argc, char **argv)
{
    Suite   *s = suite_create("colls");
    TCase   *tc = tcase_create("table");
    SRunner *sr;
    int      failed, up;

    if (argc != 2) {
        fprintf(stderr, "usage: %s build/<mpi>/libdpushim.so\n", argv[0]);
        return 2;
    }
    MPI_Initialized(&up); /* links the MPI library, which names the calls */
    shim_path = argv[1];
    shim_lib = dlopen(shim_path, RTLD_NOW | RTLD_LOCAL);
    if (shim_lib == NULL) {
        fprintf(stderr, "%s: %s\n", shim_path, dlerror());
        return 2;
    }
    tcase_add_test(tc, ids);
    tcase_add_test(tc, mpi_names);
    tcase_add_test(tc, persistent_names);
    tcase_add_test(tc, short_names);
    tcase_add_test(tc, switches);
    tcase_add_test(tc, families);
#if defined(OPEN_MPI) && OPEN_MPI
    tcase_add_test(tc, fortran_names);
#endif
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
