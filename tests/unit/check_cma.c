/* SPDX-License-Identifier: BSD-3-Clause */
/* Check tests of the CMA reachability proof (dps_cma.c): an agent copies
 * a rank's memory with CMA only when it reads the rank's token back at
 * the rank's pid; here the test process and its children play both. */
#define _GNU_SOURCE
#include "common/dps_cma.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile uint64_t token;

static uint64_t addr_of(volatile const void *p)
{
    return (uint64_t)(uintptr_t)p;
}

START_TEST(token_new)
{
    uint64_t a = 0, b = 0;
    int i;

    for (i = 0; i < 100; i++) {
        ck_assert_int_eq(dps_cma_token_new(&a), 0);
        ck_assert_uint_ne(a, 0);
        ck_assert_uint_ne(a, b);
        b = a;
    }
}
END_TEST

/* Our own token, at our own pid: verified. */
START_TEST(self_right_token)
{
    uint64_t t;

    ck_assert_int_eq(dps_cma_token_new(&t), 0);
    token = t;
    ck_assert_int_eq(dps_cma_check((uint32_t)getpid(), addr_of(&token), t),
                     0);
}
END_TEST

/* Another value there (a process that only shares the pid): refused. */
START_TEST(self_wrong_token)
{
    token = 0x1122334455667788ull;
    ck_assert_int_eq(dps_cma_check((uint32_t)getpid(), addr_of(&token),
                                   0x1122334455667789ull), DPS_CMA_OTHER);
    ck_assert_int_eq(dps_cma_check((uint32_t)getpid(), addr_of(&token),
                                   ~0x1122334455667788ull), DPS_CMA_OTHER);
    ck_assert_str_eq(dps_cma_why(DPS_CMA_OTHER),
                     "another process has that pid: token mismatch");
}
END_TEST

/* Nothing mapped at the address (a page just unmapped; the zero page;
 * a non-canonical address): refused, with EFAULT. */
START_TEST(bad_address)
{
    long pg = sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint64_t t = 0x5a5a5a5a5a5a5a5aull;

    ck_assert_ptr_ne(p, MAP_FAILED);
    memcpy(p, &t, sizeof(t));
    ck_assert_int_eq(dps_cma_check((uint32_t)getpid(), addr_of(p), t), 0);
    ck_assert_int_eq(munmap(p, (size_t)pg), 0);
    ck_assert_int_eq(dps_cma_check((uint32_t)getpid(), addr_of(p), t),
                     EFAULT);
    ck_assert_int_eq(dps_cma_check((uint32_t)getpid(), 8, t), EFAULT);
    ck_assert_int_eq(dps_cma_check((uint32_t)getpid(),
                                   0x8000000000000000ull, t), EFAULT);
}
END_TEST

/* A token whose last bytes lie on an unmapped page: the short read is
 * no proof. */
START_TEST(straddling)
{
    long pg = sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint64_t t = 0x0102030405060708ull;

    ck_assert_ptr_ne(p, MAP_FAILED);
    memcpy(p + pg - 4, &t, sizeof(t));
    ck_assert_int_eq(dps_cma_check((uint32_t)getpid(),
                                   addr_of(p + pg - 4), t), 0);
    ck_assert_int_eq(munmap(p + pg, (size_t)pg), 0);
    ck_assert_int_ne(dps_cma_check((uint32_t)getpid(),
                                   addr_of(p + pg - 4), t), 0);
    munmap(p, (size_t)pg);
}
END_TEST

/* Zero pid, address or token prove nothing. */
START_TEST(zeros)
{
    token = 77;
    ck_assert_int_eq(dps_cma_check(0, addr_of(&token), 77), EINVAL);
    ck_assert_int_eq(dps_cma_check((uint32_t)getpid(), 0, 77), EINVAL);
    token = 0;
    ck_assert_int_eq(dps_cma_check((uint32_t)getpid(), addr_of(&token), 0),
                     EINVAL);
    /* A pid no pid_t holds. */
    ck_assert_int_eq(dps_cma_check(0x80000000u, addr_of(&token), 77),
                     EINVAL);
}
END_TEST

/* A child's token is read back while it lives; once it has exited (and
 * been reaped) its pid names nothing: ESRCH, the error an agent in
 * another PID namespace sees. */
START_TEST(exited_child)
{
    int to_child[2], from_child[2];
    uint64_t t, got = 0;
    pid_t pid;
    int st;
    char c = 0;

    ck_assert_int_eq(pipe(to_child), 0);
    ck_assert_int_eq(pipe(from_child), 0);
    ck_assert_int_eq(dps_cma_token_new(&t), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* The child's own token, which the parent does not hold. */
        token = t ^ 0xffffffffull;
        got = token;
        if (write(from_child[1], &got, sizeof(got)) != sizeof(got) ||
            read(to_child[0], &c, 1) < 0) {
            _exit(1);
        }
        _exit(0);
    }
    ck_assert_int_eq(read(from_child[0], &got, sizeof(got)),
                     (ssize_t)sizeof(got));
    ck_assert_uint_eq(got, t ^ 0xffffffffull);
    token = t;   /* ours differs from the child's */
    ck_assert_int_eq(dps_cma_check((uint32_t)pid, addr_of(&token), got), 0);
    ck_assert_int_eq(dps_cma_check((uint32_t)pid, addr_of(&token), t),
                     DPS_CMA_OTHER);
    ck_assert_int_eq(write(to_child[1], "x", 1), 1);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ck_assert_int_eq(dps_cma_check((uint32_t)pid, addr_of(&token), got),
                     ESRCH);
    ck_assert_str_eq(dps_cma_why(ESRCH), strerror(ESRCH));
    close(to_child[0]);
    close(to_child[1]);
    close(from_child[0]);
    close(from_child[1]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cma");
    TCase *tc = tcase_create("proof");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, token_new);
    tcase_add_test(tc, self_right_token);
    tcase_add_test(tc, self_wrong_token);
    tcase_add_test(tc, bad_address);
    tcase_add_test(tc, straddling);
    tcase_add_test(tc, zeros);
    tcase_add_test(tc, exited_child);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
