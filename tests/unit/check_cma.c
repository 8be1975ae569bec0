/* SPDX-License-Identifier: BSD-3-Clause */
/* Check tests of the CMA reachability proof (dps_cma.c): an agent copies
 * a rank's memory with CMA only when it reads the rank's token back at
 * the rank's pid; here the test process and its children play both. */
#define _GNU_SOURCE
#include "common/dps_cma.h"
#include "common/dps_grant.h"
#include "common/dps_status.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile uint64_t token;

static uint64_t addr_of(volatile const void *p)
{
    return (uint64_t)(uintptr_t)p;
}

/* dps_cma_check, and the errno it leaves in *err. */
static int cma_check(uint32_t pid, uint64_t addr, uint64_t t, int *err)
{
    int rc;

    errno = 0;
    rc = dps_cma_check(pid, addr, t);
    *err = errno;
    return rc;
}

/* A grant (dps_grant.h): a child sends its /proc/self/mem to our socket;
 * we read and write its memory through it, it sees our write; once it
 * has exited, nothing reads through it any more. */
START_TEST(grant_child)
{
    static char     buf[8192];
    char            path[108], dir[] = "/tmp/check_grant.XXXXXX", got[8192];
    int             sock, fd = -1, pipe_go[2], pipe_back[2], st = 0, rc, e;
    dps_grant_msg_t g;
    pid_t           pid;
    char            c = 0;
    size_t          i;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(
        dps_grant_path(dir, "job", "host", 42, path, sizeof(path)), DPS_OK);
    sock = dps_grant_listen(path);
    ck_assert_int_ge(sock, 0);
    ck_assert_int_eq(dps_grant_recv(sock, &g, &fd, NULL),
                     DPS_ERR_AGAIN); /* none */
    ck_assert_int_eq(pipe(pipe_go), 0);
    ck_assert_int_eq(pipe(pipe_back), 0);
    for (i = 0; i < sizeof(buf); i++) {
        buf[i] = (char)(i * 7 + 1);
    }
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int ok = dps_grant_send(path, 3, 77) == DPS_OK;

        memset(buf, 'x', 16); /* the child's own copy changes */
        ok = ok && write(pipe_back[1], "s", 1) == 1;
        ok = ok && read(pipe_go[0], &c, 1) == 1; /* we wrote into it */
        ok = ok && buf[100] == 'Q' && buf[101] == 'R';
        _exit(ok ? 0 : 1);
    }
    ck_assert_int_eq(read(pipe_back[0], &c, 1), 1);
    ck_assert_int_eq(dps_grant_recv(sock, &g, &fd, NULL), DPS_OK);
    ck_assert_uint_eq(g.world_rank, 3);
    ck_assert_uint_eq(g.job_key, 77);
    ck_assert_int_eq(dps_dma_read(fd, addr_of(buf), got, sizeof(got)), DPS_OK);
    for (i = 0; i < 16; i++) {
        ck_assert_int_eq(got[i], 'x');
    }
    for (i = 16; i < sizeof(buf); i++) {
        ck_assert_int_eq(got[i], buf[i]);
    }
    ck_assert_int_eq(dps_dma_write(fd, addr_of(buf) + 100, "QR", 2), DPS_OK);
    ck_assert_int_eq(write(pipe_go[1], "g", 1), 1);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* The process is gone: nothing to read (EIO), errno says so. */
    errno = 0;
    rc = dps_dma_read(fd, addr_of(buf), got, 8);
    e = errno;
    ck_assert_int_eq(rc, DPS_ERR_IO);
    ck_assert_int_eq(e, EIO);
    close(fd);
    close(sock);
    unlink(path);
    rmdir(dir);
    for (i = 0; i < 2; i++) {
        close(pipe_go[i]);
        close(pipe_back[i]);
    }
}
END_TEST

/* Socket names: the same for the same job, host and pid, different
 * otherwise; too long a directory gives none. */
START_TEST(grant_names)
{
    char a[108], b[108], longdir[120];
    int  rc, e;

    ck_assert_int_eq(dps_grant_path("/d", "j", "h", 1, a, sizeof(a)), DPS_OK);
    ck_assert_int_eq(dps_grant_path("/d", "j", "h", 1, b, sizeof(b)), DPS_OK);
    ck_assert_str_eq(a, b);
    ck_assert_int_eq(dps_grant_path("/d", "j", "h", 2, b, sizeof(b)), DPS_OK);
    ck_assert_str_ne(a, b);
    ck_assert_int_eq(dps_grant_path("/d", "j", "h2", 1, b, sizeof(b)), DPS_OK);
    ck_assert_str_ne(a, b);
    memset(longdir, 'd', sizeof(longdir) - 1);
    longdir[0] = '/';
    longdir[sizeof(longdir) - 1] = '\0';
    ck_assert_int_eq(dps_grant_path(longdir, "j", "h", 1, a, sizeof(a)),
                     DPS_ERR_INVALID);
    ck_assert_str_eq(a, "");
    /* Nor can a grant be sent to such a path. */
    errno = 0;
    rc = dps_grant_send(longdir, 0, 0);
    e = errno;
    ck_assert_int_eq(rc, DPS_ERR_INVALID);
    ck_assert_int_eq(e, ENAMETOOLONG);
}
END_TEST

/* A datagram without a descriptor is no grant: dropped, and said so. */
START_TEST(grant_malformed)
{
    char               path[108], dir[] = "/tmp/check_grant.XXXXXX";
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    dps_grant_msg_t    m = {DPS_GRANT_MAGIC, 3, 77, 0}, g;
    int                sock, s, fd = -1;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(
        dps_grant_path(dir, "job", "host", 42, path, sizeof(path)), DPS_OK);
    sock = dps_grant_listen(path);
    ck_assert_int_ge(sock, 0);
    s = socket(AF_UNIX, SOCK_DGRAM, 0);
    ck_assert_int_ge(s, 0);
    strcpy(sa.sun_path, path);
    ck_assert_int_eq(
        sendto(s, &m, sizeof(m), 0, (struct sockaddr *)&sa, sizeof(sa)),
        (ssize_t)sizeof(m));
    ck_assert_int_eq(dps_grant_recv(sock, &g, &fd, NULL), DPS_ERR_PROTO);
    ck_assert_int_eq(fd, -1);
    ck_assert_int_eq(dps_grant_recv(sock, &g, &fd, NULL), DPS_ERR_AGAIN);
    close(s);
    close(sock);
    unlink(path);
    rmdir(dir);
}
END_TEST

/* An agent that does not read its socket (it waits for the job layout):
 * grants fill the queue, and the next one is refused at once with
 * DPS_ERR_AGAIN, not blocked. Every queued one is then received whole,
 * in order, and a retry goes through. */
START_TEST(grant_full_queue)
{
    char            path[108], dir[] = "/tmp/check_grant.XXXXXX";
    dps_grant_msg_t g;
    int             sock, fd, rc = DPS_OK, e = 0;
    uint32_t        n = 0, i;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(
        dps_grant_path(dir, "job", "host", 42, path, sizeof(path)), DPS_OK);
    sock = dps_grant_listen(path);
    ck_assert_int_ge(sock, 0);
    while (n < 100000 && (rc = dps_grant_send(path, n, 5)) == DPS_OK) {
        n++;
    }
    e = errno;
    ck_assert_int_eq(rc, DPS_ERR_AGAIN);
    ck_assert_int_eq(e, EAGAIN);
    ck_assert_uint_gt(n, 0);
    for (i = 0; i < n; i++) {
        ck_assert_int_eq(dps_grant_recv(sock, &g, &fd, NULL), DPS_OK);
        ck_assert_uint_eq(g.world_rank, i);
        ck_assert_uint_eq(g.job_key, 5);
        close(fd);
    }
    ck_assert_int_eq(dps_grant_recv(sock, &g, &fd, NULL), DPS_ERR_AGAIN);
    ck_assert_int_eq(dps_grant_send(path, n, 5), DPS_OK);
    ck_assert_int_eq(dps_grant_recv(sock, &g, &fd, NULL), DPS_OK);
    ck_assert_uint_eq(g.world_rank, n);
    close(fd);
    close(sock);
    unlink(path);
    rmdir(dir);
}
END_TEST

START_TEST(token_new)
{
    uint64_t a = 0, b = 0;
    int      i;

    for (i = 0; i < 100; i++) {
        ck_assert_int_eq(dps_cma_token_new(&a), DPS_OK);
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

    ck_assert_int_eq(dps_cma_token_new(&t), DPS_OK);
    token = t;
    ck_assert_int_eq(dps_cma_check((uint32_t)getpid(), addr_of(&token), t),
                     DPS_OK);
}
END_TEST

/* Another value there (a process that only shares the pid): refused. */
START_TEST(self_wrong_token)
{
    token = 0x1122334455667788ull;
    ck_assert_int_eq(dps_cma_check((uint32_t)getpid(), addr_of(&token),
                                   0x1122334455667789ull),
                     DPS_ERR_TOKEN);
    ck_assert_int_eq(dps_cma_check((uint32_t)getpid(), addr_of(&token),
                                   ~0x1122334455667788ull),
                     DPS_ERR_TOKEN);
    ck_assert_str_eq(dps_cma_why(DPS_ERR_TOKEN, 0),
                     "another process has that pid: token mismatch");
    ck_assert_str_eq(dps_cma_why(DPS_OK, 0), "token read back");
}
END_TEST

/* Nothing mapped at the address (a page just unmapped; the zero page;
 * a non-canonical address): refused, with EFAULT. */
START_TEST(bad_address)
{
    long     pg = sysconf(_SC_PAGESIZE);
    char    *p = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint64_t t = 0x5a5a5a5a5a5a5a5aull;
    int      e;

    ck_assert_ptr_ne(p, MAP_FAILED);
    memcpy(p, &t, sizeof(t));
    ck_assert_int_eq(dps_cma_check((uint32_t)getpid(), addr_of(p), t), DPS_OK);
    ck_assert_int_eq(munmap(p, (size_t)pg), 0);
    ck_assert_int_eq(cma_check((uint32_t)getpid(), addr_of(p), t, &e),
                     DPS_ERR_IO);
    ck_assert_int_eq(e, EFAULT);
    ck_assert_int_eq(cma_check((uint32_t)getpid(), 8, t, &e), DPS_ERR_IO);
    ck_assert_int_eq(e, EFAULT);
    ck_assert_int_eq(
        cma_check((uint32_t)getpid(), 0x8000000000000000ull, t, &e),
        DPS_ERR_IO);
    ck_assert_int_eq(e, EFAULT);
}
END_TEST

/* A token whose last bytes lie on an unmapped page: the short read is
 * no proof. */
START_TEST(straddling)
{
    long     pg = sysconf(_SC_PAGESIZE);
    char    *p = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint64_t t = 0x0102030405060708ull;
    int      e;

    ck_assert_ptr_ne(p, MAP_FAILED);
    memcpy(p + pg - 4, &t, sizeof(t));
    ck_assert_int_eq(dps_cma_check((uint32_t)getpid(), addr_of(p + pg - 4), t),
                     DPS_OK);
    ck_assert_int_eq(munmap(p + pg, (size_t)pg), 0);
    ck_assert_int_eq(cma_check((uint32_t)getpid(), addr_of(p + pg - 4), t, &e),
                     DPS_ERR_IO);
    ck_assert_int_eq(e, EFAULT);
    munmap(p, (size_t)pg);
}
END_TEST

/* Zero pid, address or token prove nothing. */
START_TEST(zeros)
{
    token = 77;
    ck_assert_int_eq(dps_cma_check(0, addr_of(&token), 77), DPS_ERR_INVALID);
    ck_assert_int_eq(dps_cma_check((uint32_t)getpid(), 0, 77),
                     DPS_ERR_INVALID);
    token = 0;
    ck_assert_int_eq(dps_cma_check((uint32_t)getpid(), addr_of(&token), 0),
                     DPS_ERR_INVALID);
    /* A pid no pid_t holds. */
    ck_assert_int_eq(dps_cma_check(0x80000000u, addr_of(&token), 77),
                     DPS_ERR_INVALID);
    ck_assert_str_eq(dps_cma_why(DPS_ERR_INVALID, 0), strerror(EINVAL));
}
END_TEST

/* A child's token is read back while it lives; once it has exited (and
 * been reaped) its pid names nothing: ESRCH, the error an agent in
 * another PID namespace sees. */
START_TEST(exited_child)
{
    int      to_child[2], from_child[2];
    uint64_t t, got = 0;
    pid_t    pid;
    int      st, e;
    char     c = 0;

    ck_assert_int_eq(pipe(to_child), 0);
    ck_assert_int_eq(pipe(from_child), 0);
    ck_assert_int_eq(dps_cma_token_new(&t), DPS_OK);
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
    token = t; /* ours differs from the child's */
    ck_assert_int_eq(dps_cma_check((uint32_t)pid, addr_of(&token), got),
                     DPS_OK);
    ck_assert_int_eq(dps_cma_check((uint32_t)pid, addr_of(&token), t),
                     DPS_ERR_TOKEN);
    ck_assert_int_eq(write(to_child[1], "x", 1), 1);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ck_assert_int_eq(cma_check((uint32_t)pid, addr_of(&token), got, &e),
                     DPS_ERR_IO);
    ck_assert_int_eq(e, ESRCH);
    ck_assert_str_eq(dps_cma_why(DPS_ERR_IO, e), strerror(ESRCH));
    close(to_child[0]);
    close(to_child[1]);
    close(from_child[0]);
    close(from_child[1]);
}
END_TEST

int main(void)
{
    Suite   *s = suite_create("cma");
    TCase   *tc = tcase_create("proof");
    SRunner *sr;
    int      failed;

    tcase_add_test(tc, token_new);
    tcase_add_test(tc, self_right_token);
    tcase_add_test(tc, self_wrong_token);
    tcase_add_test(tc, bad_address);
    tcase_add_test(tc, straddling);
    tcase_add_test(tc, zeros);
    tcase_add_test(tc, exited_child);
    tcase_add_test(tc, grant_child);
    tcase_add_test(tc, grant_names);
    tcase_add_test(tc, grant_malformed);
    tcase_add_test(tc, grant_full_queue);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
