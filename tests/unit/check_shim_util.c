/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of the agent environment filter (shim/boot/env.c). */
#include "shim/boot/env.h"

#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

/* Entries the agent must not inherit. */
static const char *const stripped[] = {
    "LD_PRELOAD=/opt/dpushim/lib/libdpushim.so",
    "LD_PRELOAD=",
    "LD_AUDIT=/lib/audit.so",
    "OMPI_COMM_WORLD_RANK=0",
    "OMPI_MCA_pml=ucx",
    "OMPI_=x",
    "PMIX_RANK=3",
    "PMIX_NAMESPACE=prterun-host-1234@1",
    "PMIX_SERVER_URI=x",
    "PMI_RANK=1",
    "PMI_FD=7",
    "PMI_SIZE=4",
    "HYDRA_CONTROL_FD=9",
    "HYDI_CONTROL_FD=8",
    "MPIR_CVAR_CH3_NOLOCAL=1",
    "ORTE_HNP_URI=x",
    "OPAL_PREFIX=/usr",
    "PRTE_MCA_x=1",
    "MPICH_INTERFACE_HOSTNAME=h",
    "I_MPI_PIN=0"};
#define NSTRIPPED (sizeof(stripped) / sizeof(stripped[0]))

/* Entries the agent keeps, among them near misses of stripped ones. */
static const char *const kept[] = {"PATH=/usr/local/bin:/usr/bin",
                                   "HOME=/root",
                                   "USER=me",
                                   "DPUSHIM_OFFLOAD=1",
                                   "DPUSHIM_AGENT=/x/dpu_agent",
                                   "DPUSHIM_LOG=debug",
                                   "UCX_TLS=tcp,self",
                                   "UCX_NET_DEVICES=all",
                                   "LD_LIBRARY_PATH=/opt/lib",
                                   "MY_OMPI_X=1",
                                   "X_PMIX_RANK=1",
                                   "NOT_PMI_RANK=1",
                                   "AHYDRA_X=1",
                                   "MY_MPICH_X=1",
                                   "XI_MPI_Y=1",
                                   "LD_PRELOADX=1",
                                   "LD_PRELOAD_PATH=/x",
                                   "MY_LD_PRELOAD=/x",
                                   "OMPI=1",
                                   "PMI=1",
                                   "PMIX=1",
                                   "MPICH=1",
                                   "FOO=OMPI_X=1",
                                   "BAR=LD_PRELOAD=/x",
                                   "TERM=xterm",
                                   "A=",
                                   "B=b"};
#define NKEPT (sizeof(kept) / sizeof(kept[0]))

static size_t count(char **v)
{
    size_t n = 0;

    while (v[n] != NULL) {
        n++;
    }
    return n;
}

/* ------------------------------------------------------------------ */
/* shim_env_stripped                                                  */
/* ------------------------------------------------------------------ */

START_TEST(strip_launcher_vars)
{
    size_t i;

    for (i = 0; i < NSTRIPPED; i++) {
        ck_assert_msg(shim_env_stripped(stripped[i]), "%s kept", stripped[i]);
    }
}
END_TEST

START_TEST(keep_other_vars)
{
    size_t i;

    for (i = 0; i < NKEPT; i++) {
        ck_assert_msg(!shim_env_stripped(kept[i]), "%s stripped", kept[i]);
    }
}
END_TEST

/* Every listed prefix is stripped, whatever follows it. */
START_TEST(strip_every_prefix)
{
    static const char *const prefix[] = {"OMPI_", "PMIX_",  "PMI_",  "HYDRA_",
                                         "HYDI_", "MPIR_",  "ORTE_", "OPAL_",
                                         "PRTE_", "MPICH_", "I_MPI_"};
    size_t                   i;

    for (i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++) {
        char a[64], b[64], c[64];

        snprintf(a, sizeof(a), "%sX=1", prefix[i]);
        snprintf(b, sizeof(b), "%sSOME_LONG_NAME=a=b=c", prefix[i]);
        snprintf(c, sizeof(c), "MY_%sX=1", prefix[i]);
        ck_assert_msg(shim_env_stripped(a), "%s kept", a);
        ck_assert_msg(shim_env_stripped(b), "%s kept", b);
        ck_assert_msg(!shim_env_stripped(c), "%s stripped", c);
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* shim_agent_env                                                     */
/* ------------------------------------------------------------------ */

START_TEST(env_null_and_empty)
{
    char  *empty[] = {NULL};
    char **out;

    out = shim_agent_env(NULL, NULL);
    ck_assert_ptr_nonnull(out);
    ck_assert_ptr_null(out[0]);
    free(out);

    out = shim_agent_env(empty, NULL);
    ck_assert_ptr_nonnull(out);
    ck_assert_ptr_null(out[0]);
    ck_assert_ptr_ne(out, empty);
    free(out);
}
END_TEST

START_TEST(env_all_stripped)
{
    char  *env[NSTRIPPED + 1];
    char **out;
    size_t i;

    for (i = 0; i < NSTRIPPED; i++) {
        env[i] = (char *)stripped[i];
    }
    env[NSTRIPPED] = NULL;
    out = shim_agent_env(env, NULL);
    ck_assert_ptr_nonnull(out);
    ck_assert_ptr_null(out[0]);
    free(out);
}
END_TEST

START_TEST(env_all_kept)
{
    char  *env[NKEPT + 1];
    char **out;
    size_t i;

    for (i = 0; i < NKEPT; i++) {
        env[i] = (char *)kept[i];
    }
    env[NKEPT] = NULL;
    out = shim_agent_env(env, NULL);
    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(count(out), NKEPT);
    for (i = 0; i < NKEPT; i++) {
        ck_assert_ptr_eq(out[i], kept[i]);
    }
    free(out);
}
END_TEST

/* Mixed: kept entries come out in order, as the original strings. */
START_TEST(env_mixed_order)
{
    enum { N = NSTRIPPED + NKEPT };
    char  *env[N + 1], *save[N + 1];
    char **out;
    size_t i, s = 0, k = 0, n = 0;

    /* Interleave: two kept, one stripped, ... */
    for (i = 0; i < N; i++) {
        if ((i % 3 != 2 && k < NKEPT) || s == NSTRIPPED) {
            env[i] = (char *)kept[k++];
        } else {
            env[i] = (char *)stripped[s++];
        }
    }
    env[N] = NULL;
    memcpy(save, env, sizeof(env));
    out = shim_agent_env(env, NULL);
    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(count(out), NKEPT);
    for (i = 0; i < N; i++) {
        if (!shim_env_stripped(env[i])) {
            ck_assert_ptr_eq(out[n], env[i]);
            n++;
        }
    }
    ck_assert_uint_eq(n, NKEPT);
    for (i = 0; i < NKEPT; i++) {
        ck_assert_str_eq(out[i], kept[i]);
    }
    /* The input array is left alone. */
    ck_assert(memcmp(save, env, sizeof(env)) == 0);
    free(out);
}
END_TEST

START_TEST(env_typical_launch)
{
    char *env[] = {"LD_PRELOAD=/opt/dpushim/build/openmpi/libdpushim.so",
                   "PATH=/usr/bin",
                   "OMPI_COMM_WORLD_RANK=2",
                   "PMIX_RANK=2",
                   "HOME=/home/u",
                   "DPUSHIM_RANKS_PER_DPU=2",
                   "OMPI_MCA_btl=^openib",
                   "UCX_TLS=tcp",
                   "PMI_RANK=2",
                   "HYDRA_CONTROL_FD=5",
                   "MPICH_X=1",
                   "MY_OMPI_X=1",
                   "DPUSHIM_STATS=1",
                   NULL};
    static const char *const want[] = {
        "PATH=/usr/bin", "HOME=/home/u", "DPUSHIM_RANKS_PER_DPU=2",
        "UCX_TLS=tcp",   "MY_OMPI_X=1",  "DPUSHIM_STATS=1"};
    char **out = shim_agent_env(env, NULL);
    size_t i;

    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(count(out), sizeof(want) / sizeof(want[0]));
    for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        ck_assert_str_eq(out[i], want[i]);
    }
    free(out);
}
END_TEST

/* A large environment keeps its order. */
START_TEST(env_large)
{
    enum { N = 5000 };
    char **env = calloc(N + 1, sizeof(char *));
    char(*text)[32] = calloc(N, sizeof(*text));
    char **out;
    size_t i, n = 0;

    ck_assert_ptr_nonnull(env);
    ck_assert_ptr_nonnull(text);
    for (i = 0; i < N; i++) {
        snprintf(text[i], sizeof(text[i]), "%s%zu=%zu",
                 (i % 4 == 1)   ? "OMPI_V"
                 : (i % 4 == 3) ? "PMI_V"
                                : "KEEP_V",
                 i, i);
        env[i] = text[i];
    }
    out = shim_agent_env(env, NULL);
    ck_assert_ptr_nonnull(out);
    for (i = 0; i < N; i += 2) {
        ck_assert_ptr_eq(out[n], env[i]);
        n++;
    }
    ck_assert_ptr_null(out[n]);
    free(out);
    free(text);
    free(env);
}
END_TEST

/* The process's own environment: exactly its non-stripped entries. */
START_TEST(env_real)
{
    char **out = shim_agent_env(environ, NULL);
    size_t i, n = 0;

    ck_assert_ptr_nonnull(out);
    for (i = 0; environ[i] != NULL; i++) {
        if (!shim_env_stripped(environ[i])) {
            ck_assert_ptr_eq(out[n], environ[i]);
            n++;
        }
    }
    ck_assert_ptr_null(out[n]);
    free(out);
}
END_TEST

/* A set entry replaces the variable of the same name, wherever it was,
 * and is added when it was absent. */
START_TEST(env_set)
{
    char  *env[] = {"PATH=/bin",    "DPUSHIM_AGENT_SCHED=auto",
                    "LD_PRELOAD=x", "DPUSHIM_AGENT_SCHED_X=1",
                    "HOME=/root",   NULL};
    char  *none[] = {"PATH=/bin", NULL};
    char **out = shim_agent_env(env, "DPUSHIM_AGENT_SCHED=poll");
    size_t n = 0, seen = 0;

    ck_assert_ptr_nonnull(out);
    for (; out[n] != NULL; n++) {
        if (strncmp(out[n], "DPUSHIM_AGENT_SCHED=", 20) == 0) {
            ck_assert_str_eq(out[n], "DPUSHIM_AGENT_SCHED=poll");
            seen++;
        }
    }
    ck_assert_uint_eq(seen, 1);
    ck_assert_uint_eq(n, 4); /* PATH, ..._X, HOME and the set one */
    free(out);
    out = shim_agent_env(none, "DPUSHIM_AGENT_SCHED=eager");
    ck_assert_str_eq(out[0], "PATH=/bin");
    ck_assert_str_eq(out[1], "DPUSHIM_AGENT_SCHED=eager");
    ck_assert_ptr_null(out[2]);
    free(out);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *shim_util_suite(void)
{
    Suite *s = suite_create("shim_util");
    TCase *tc;

    tc = tcase_create("stripped");
    tcase_add_test(tc, strip_launcher_vars);
    tcase_add_test(tc, keep_other_vars);
    tcase_add_test(tc, strip_every_prefix);
    suite_add_tcase(s, tc);

    tc = tcase_create("agent_env");
    tcase_add_test(tc, env_null_and_empty);
    tcase_add_test(tc, env_all_stripped);
    tcase_add_test(tc, env_all_kept);
    tcase_add_test(tc, env_mixed_order);
    tcase_add_test(tc, env_typical_launch);
    tcase_add_test(tc, env_large);
    tcase_add_test(tc, env_real);
    tcase_add_test(tc, env_set);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(shim_util_suite());
    int      failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
