/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of the listening-agent library (dps_listen.c, dps_secret.c,
 * dps_agentmap.c): the hello, secret files, the client's connect and the
 * agent map. */
#define _GNU_SOURCE
#include "common/dps_listen.h"
#include "common/dps_proto.h"
#include "common/dps_status.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define ERR_LEN 512

/* ------------------------------------------------------------------ */
/* Helpers                                                            */
/* ------------------------------------------------------------------ */

static void fill_secret(uint8_t s[DPS_SECRET_LEN], unsigned seed)
{
    unsigned i;

    for (i = 0; i < DPS_SECRET_LEN; i++) {
        s[i] = (uint8_t)(seed * 31u + i * 7u + 3u);
    }
}

/* The hello for job, as a malloc'ed buffer of exactly *len bytes. */
static uint8_t *make_hello(const char *job, unsigned seed, size_t *len)
{
    uint8_t  s[DPS_SECRET_LEN];
    uint8_t *h;

    fill_secret(s, seed);
    h = dps_listen_encode_hello(job, s, len);
    ck_assert_ptr_nonnull(h);
    return h;
}

/* Decode must refuse buf with DPS_ERR_PROTO and a reason containing
 * want. */
static void refuse_at(const void *buf, size_t len, const char *want, int line)
{
    uint8_t s[DPS_SECRET_LEN];
    char    job[DPS_LISTEN_NAME_MAX + 1], err[ERR_LEN] = "";
    void   *copy = malloc(len ? len : 1);
    int     rc;

    ck_assert_ptr_nonnull(copy);
    memcpy(copy, buf, len); /* exact size: reads past len overflow */
    rc = dps_listen_decode_hello(copy, len, job, sizeof(job), s, err,
                                 sizeof(err));
    ck_assert_msg(rc == DPS_ERR_PROTO,
                  "line %d: gave %d, expected "
                  "DPS_ERR_PROTO",
                  line, rc);
    ck_assert_msg(strstr(err, want) != NULL,
                  "line %d: reason '%s' lacks "
                  "'%s'",
                  line, err, want);
    rc = dps_listen_decode_hello(copy, len, job, sizeof(job), s, NULL, 0);
    ck_assert_int_eq(rc, DPS_ERR_PROTO);
    free(copy);
}
#define REFUSE(_b, _l, _w) refuse_at((_b), (_l), (_w), __LINE__)

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)v);
    put16(p + 2, (uint16_t)(v >> 16));
}

/* A fresh empty directory; *base is the temporary parent to clean. */
static char tmpbase[256];

static void tmp_setup(void)
{
    snprintf(tmpbase, sizeof(tmpbase), "/tmp/check_listen.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpbase));
}

static void tmp_teardown(void)
{
    char cmd[300];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpbase);
    if (system(cmd) != 0) {
        /* a leftover temporary directory is harmless */
    }
}

static void path_in(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", tmpbase, name);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (int)strlen(text));
    ck_assert_int_eq(fchmod(fd, mode), 0);
    close(fd);
}

/* ------------------------------------------------------------------ */
/* Hello                                                              */
/* ------------------------------------------------------------------ */

START_TEST(hello_roundtrip)
{
    static const char *names[] = {"j", "job-1.x_Y",
                                  "0123456789012345678901234567890123456789"
                                  "012345678901234567890123",
                                  "..", NULL};
    uint8_t            s[DPS_SECRET_LEN], got[DPS_SECRET_LEN];
    char               job[DPS_LISTEN_NAME_MAX + 1], err[ERR_LEN];
    unsigned           i;

    for (i = 0; names[i] != NULL; i++) {
        size_t   len;
        uint8_t *h;

        fill_secret(s, i);
        h = dps_listen_encode_hello(names[i], s, &len);
        ck_assert_ptr_nonnull(h);
        ck_assert_uint_eq(len, DPS_LISTEN_HDR_LEN + strlen(names[i]));
        /* The layout, byte for byte (little-endian). */
        ck_assert_uint_eq(h[0], 'D');
        ck_assert_uint_eq(h[1], 'P');
        ck_assert_uint_eq(h[2], 'S');
        ck_assert_uint_eq(h[3], 'L');
        ck_assert_uint_eq(h[4] | h[5] << 8, DPS_PROTO_VERSION);
        ck_assert_uint_eq(h[6] | h[7] << 8, 0);
        ck_assert_uint_eq(h[8], strlen(names[i]));
        ck_assert_int_eq(memcmp(h + 12, s, DPS_SECRET_LEN), 0);
        memset(got, 0, sizeof(got));
        ck_assert_int_eq(dps_listen_decode_hello(h, len, job, sizeof(job), got,
                                                 err, sizeof(err)),
                         DPS_OK);
        ck_assert_str_eq(job, names[i]);
        ck_assert_int_eq(memcmp(got, s, DPS_SECRET_LEN), 0);
        free(h);
    }
}
END_TEST

START_TEST(hello_encode_bad_names)
{
    static const char *bad[] = {
        "",
        "a/b",
        "a b",
        "x\n",
        "j\xc3\xa9",
        "01234567890123456789012345678901234567890123456789012345678901234",
        NULL};
    uint8_t  s[DPS_SECRET_LEN] = {0};
    size_t   len = 0;
    unsigned i;

    for (i = 0; bad[i] != NULL; i++) {
        ck_assert_msg(dps_listen_encode_hello(bad[i], s, &len) == NULL,
                      "name '%s' encoded", bad[i]);
        ck_assert(!dps_listen_name_ok(bad[i]));
    }
    ck_assert(dps_listen_encode_hello(NULL, s, &len) == NULL);
}
END_TEST

START_TEST(hello_refusals)
{
    uint8_t *h, b[200];
    size_t   len;
    char     want[80];

    h = make_hello("job", 1, &len);
    /* Bad magic: the whole word, and its first byte alone. */
    memcpy(b, h, len);
    b[3] ^= 0x20;
    REFUSE(b, len, "bad magic");
    REFUSE(b, 4, "bad magic");
    b[3] ^= 0x20;
    b[0] = 'G';
    REFUSE(b, 1, "bad magic");
    REFUSE("GET / HTTP/1.0\r\n\r\n", 18, "bad magic");
    memcpy(b, h, len);
    /* Version: its own reason, as soon as the field is in. */
    put16(b + 4, DPS_PROTO_VERSION - 1);
    snprintf(want, sizeof(want),
             "protocol version %d, this agent speaks "
             "%d",
             DPS_PROTO_VERSION - 1, DPS_PROTO_VERSION);
    REFUSE(b, len, want);
    REFUSE(b, 6, want);
    put16(b + 4, 0xffff);
    REFUSE(b, len, "protocol version 65535,");
    memcpy(b, h, len);
    put16(b + 6, 1);
    REFUSE(b, len, "reserved field");
    /* Name length 0 and 65 (and absurd). */
    memcpy(b, h, len);
    put32(b + 8, 0);
    REFUSE(b, 12, "name length 0 ");
    put32(b + 8, DPS_LISTEN_NAME_MAX + 1);
    REFUSE(b, 12, "name length 65 ");
    put32(b + 8, 0xffffffffu);
    REFUSE(b, len, "name length 4294967295");
    /* Bad characters, found before the name is complete. */
    memcpy(b, h, len);
    b[DPS_LISTEN_HDR_LEN + 1] = '/';
    REFUSE(b, len, "name has '/'");
    REFUSE(b, DPS_LISTEN_HDR_LEN + 2, "name has '/'");
    b[DPS_LISTEN_HDR_LEN + 1] = 0;
    REFUSE(b, len, "name has byte 0x00");
    b[DPS_LISTEN_HDR_LEN + 1] = ' ';
    REFUSE(b, len, "name has byte 0x20");
    b[DPS_LISTEN_HDR_LEN + 1] = (char)0xff;
    REFUSE(b, len, "name has byte 0xff");
    /* Trailing bytes. */
    memcpy(b, h, len);
    b[len] = 'x';
    REFUSE(b, len + 1, "1 bytes after the name");
    memset(b + len, 0, 50);
    REFUSE(b, len + 50, "50 bytes after the name");
    free(h);
}
END_TEST

START_TEST(hello_prefixes)
{
    uint8_t  s[DPS_SECRET_LEN];
    char     job[DPS_LISTEN_NAME_MAX + 1], err[ERR_LEN];
    size_t   len, n;
    uint8_t *h = make_hello("a-job.name_1", 7, &len);

    for (n = 0; n < len; n++) {
        uint8_t *copy = malloc(n ? n : 1);

        memcpy(copy, h, n);
        err[0] = '\0';
        ck_assert_msg(dps_listen_decode_hello(copy, n, job, sizeof(job), s,
                                              err,
                                              sizeof(err)) == DPS_ERR_AGAIN,
                      "prefix of %zu bytes: %s", n, err);
        free(copy);
    }
    ck_assert_int_eq(
        dps_listen_decode_hello(h, len, job, sizeof(job), s, err, sizeof(err)),
        DPS_OK);
    /* A job buffer that cannot hold every name is refused up front. */
    ck_assert_int_eq(dps_listen_decode_hello(h, len, job, DPS_LISTEN_NAME_MAX,
                                             s, err, sizeof(err)),
                     DPS_ERR_INVALID);
    free(h);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Secret files                                                       */
/* ------------------------------------------------------------------ */

START_TEST(secret_create_check)
{
    uint8_t     s[DPS_SECRET_LEN], s2[DPS_SECRET_LEN], z[DPS_SECRET_LEN] = {0};
    char        dir[300], key[400], text[80], err[ERR_LEN];
    struct stat st;
    unsigned    i;
    int         fd;

    path_in(dir, sizeof(dir), "secrets");
    umask(022);
    ck_assert_int_eq(dps_secret_create(dir, "job1", s, err, sizeof(err)),
                     DPS_OK);
    ck_assert_int_ne(memcmp(s, z, sizeof(z)), 0);
    ck_assert_int_eq(stat(dir, &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0700);
    snprintf(key, sizeof(key), "%s/job1.key", dir);
    ck_assert_int_eq(stat(key, &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0600);
    ck_assert_uint_eq(st.st_size, 65);
    fd = open(key, O_RDONLY);
    ck_assert_int_eq(read(fd, text, sizeof(text)), 65);
    close(fd);
    for (i = 0; i < 64; i++) {
        ck_assert(strchr("0123456789abcdef", text[i]) != NULL);
    }
    ck_assert_int_eq(text[64], '\n');
    /* The right secret passes, a wrong one does not. */
    ck_assert_int_eq(dps_secret_check(dir, "job1", s, err, sizeof(err)),
                     DPS_OK);
    memcpy(s2, s, sizeof(s));
    s2[31] ^= 1;
    ck_assert_int_eq(dps_secret_check(dir, "job1", s2, err, sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_str_eq(err, "wrong secret");
    /* Two jobs get different secrets. */
    ck_assert_int_eq(dps_secret_create(dir, "job2", s2, err, sizeof(err)),
                     DPS_OK);
    ck_assert_int_ne(memcmp(s, s2, sizeof(s)), 0);
    /* Removed: gone, and the check says so. */
    dps_secret_remove(dir, "job1");
    ck_assert_int_ne(access(key, F_OK), 0);
    ck_assert_int_eq(dps_secret_check(dir, "job1", s, err, sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_msg(strstr(err, "no secret file ") != NULL &&
                      strstr(err, "/job1.key") != NULL,
                  "%s", err);
}
END_TEST

START_TEST(secret_excl)
{
    uint8_t s[DPS_SECRET_LEN], s2[DPS_SECRET_LEN];
    char    dir[300], err[ERR_LEN] = "";

    path_in(dir, sizeof(dir), "d");
    ck_assert_int_eq(dps_secret_create(dir, "j", s, err, sizeof(err)), DPS_OK);
    memset(s2, 0xee, sizeof(s2));
    ck_assert_int_eq(dps_secret_create(dir, "j", s2, err, sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_msg(strstr(err, "/d/j.key: File exists") != NULL, "%s", err);
    /* The output is untouched and the first file still valid. */
    ck_assert_uint_eq(s2[0], 0xee);
    ck_assert_int_eq(dps_secret_check(dir, "j", s, err, sizeof(err)), DPS_OK);
}
END_TEST

START_TEST(secret_mode_refused)
{
    uint8_t s[DPS_SECRET_LEN];
    char    dir[300], key[400], err[ERR_LEN];

    path_in(dir, sizeof(dir), "d");
    ck_assert_int_eq(dps_secret_create(dir, "j", s, err, sizeof(err)), DPS_OK);
    snprintf(key, sizeof(key), "%s/j.key", dir);
    ck_assert_int_eq(chmod(key, 0644), 0);
    ck_assert_int_eq(dps_secret_check(dir, "j", s, err, sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_msg(strstr(err, "mode 0644") != NULL, "%s", err);
    ck_assert_int_eq(chmod(key, 0640), 0);
    ck_assert_int_eq(dps_secret_check(dir, "j", s, err, sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_int_eq(chmod(key, 0400), 0);
    ck_assert_int_eq(dps_secret_check(dir, "j", s, err, sizeof(err)), DPS_OK);
}
END_TEST

START_TEST(secret_symlink_refused)
{
    uint8_t s[DPS_SECRET_LEN];
    char    dir[300], key[400], lnk[400], err[ERR_LEN];

    path_in(dir, sizeof(dir), "d");
    ck_assert_int_eq(dps_secret_create(dir, "real", s, err, sizeof(err)),
                     DPS_OK);
    snprintf(key, sizeof(key), "%s/real.key", dir);
    snprintf(lnk, sizeof(lnk), "%s/link.key", dir);
    ck_assert_int_eq(symlink(key, lnk), 0);
    ck_assert_int_eq(dps_secret_check(dir, "link", s, err, sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_msg(strstr(err, "symbolic link") != NULL, "%s", err);
    /* Nor is a symlink created in place of a new key followed. */
    ck_assert_int_ne(dps_secret_create(dir, "link", s, err, sizeof(err)),
                     DPS_OK);
    ck_assert_int_eq(dps_secret_check(dir, "real", s, err, sizeof(err)),
                     DPS_OK);
}
END_TEST

START_TEST(secret_bad_files)
{
    uint8_t           s[DPS_SECRET_LEN];
    char              dir[300], p[400], err[ERR_LEN], good[70];
    static const char hex[] = "0123456789abcdef";
    unsigned          i;
    int               fd;

    path_in(dir, sizeof(dir), "d");
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    fill_secret(s, 3);
    for (i = 0; i < DPS_SECRET_LEN; i++) {
        good[2 * i] = hex[s[i] >> 4];
        good[2 * i + 1] = hex[s[i] & 15];
    }
    good[64] = '\n';
    good[65] = '\0';
    snprintf(p, sizeof(p), "%s/j.key", dir);
    write_file(p, good, 0600);
    ck_assert_int_eq(dps_secret_check(dir, "j", s, err, sizeof(err)), DPS_OK);
    /* No newline; one byte more; upper case: all malformed. */
    good[64] = '\0';
    write_file(p, good, 0600);
    ck_assert_int_eq(dps_secret_check(dir, "j", s, err, sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_msg(strstr(err, "malformed") != NULL, "%s", err);
    good[64] = '\n';
    good[65] = '\n';
    good[66] = '\0';
    write_file(p, good, 0600);
    ck_assert_int_eq(dps_secret_check(dir, "j", s, err, sizeof(err)),
                     DPS_ERR_INVALID);
    good[65] = '\0';
    for (i = 0; i < 64 && !(good[i] >= 'a' && good[i] <= 'f'); i++) {
    }
    ck_assert_uint_lt(i, 64);
    good[i] = (char)(good[i] - 'a' + 'A');
    write_file(p, good, 0600);
    ck_assert_int_eq(dps_secret_check(dir, "j", s, err, sizeof(err)),
                     DPS_ERR_INVALID);
    /* A FIFO under the name: refused, without blocking. */
    snprintf(p, sizeof(p), "%s/f.key", dir);
    ck_assert_int_eq(mkfifo(p, 0600), 0);
    ck_assert_int_eq(dps_secret_check(dir, "f", s, err, sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_msg(strstr(err, "not a regular file") != NULL, "%s", err);
    /* A directory under the name. */
    snprintf(p, sizeof(p), "%s/sub.key", dir);
    ck_assert_int_eq(mkdir(p, 0700), 0);
    ck_assert_int_eq(dps_secret_check(dir, "sub", s, err, sizeof(err)),
                     DPS_ERR_INVALID);
    /* Invalid job names are refused before any file is touched. */
    ck_assert_int_eq(dps_secret_check(dir, "../d/j", s, err, sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_msg(strstr(err, "invalid job name") != NULL, "%s", err);
    ck_assert_int_eq(dps_secret_create(dir, "a/b", s, err, sizeof(err)),
                     DPS_ERR_INVALID);
    fd = open(dir, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    close(fd);
}
END_TEST

START_TEST(secret_unsafe_dir)
{
    uint8_t s[DPS_SECRET_LEN];
    char    dir[300], lnk[300], key[400], err[ERR_LEN];

    path_in(dir, sizeof(dir), "d");
    ck_assert_int_eq(dps_secret_create(dir, "j", s, err, sizeof(err)), DPS_OK);
    /* Writable by the group: both sides refuse it. */
    ck_assert_int_eq(chmod(dir, 0770), 0);
    ck_assert_int_eq(dps_secret_check(dir, "j", s, err, sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_msg(strstr(err, "writable by group or others (mode 0770)") !=
                      NULL,
                  "%s", err);
    ck_assert_int_eq(dps_secret_create(dir, "k", s, err, sizeof(err)),
                     DPS_ERR_INVALID);
    snprintf(key, sizeof(key), "%s/k.key", dir);
    ck_assert_int_ne(access(key, F_OK), 0);
    ck_assert_int_eq(chmod(dir, 0700), 0);
    /* A symlink to a good directory is not the directory. */
    path_in(lnk, sizeof(lnk), "lnk");
    ck_assert_int_eq(symlink(dir, lnk), 0);
    ck_assert_int_eq(dps_secret_check(lnk, "j", s, err, sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_msg(strstr(err, "symbolic link") != NULL, "%s", err);
    /* Owned by someone else (only root can arrange that here). */
    if (geteuid() == 0) {
        snprintf(key, sizeof(key), "%s/j.key", dir);
        ck_assert_int_eq(chown(key, 4321, (gid_t)-1), 0);
        ck_assert_int_eq(dps_secret_check(dir, "j", s, err, sizeof(err)),
                         DPS_ERR_INVALID);
        ck_assert_msg(strstr(err, "owned by uid 4321") != NULL, "%s", err);
        ck_assert_int_eq(chown(dir, 4321, (gid_t)-1), 0);
        ck_assert_int_eq(dps_secret_create(dir, "m", s, err, sizeof(err)),
                         DPS_ERR_INVALID);
        ck_assert_msg(strstr(err, "owned by uid 4321") != NULL, "%s", err);
    }
    /* Missing directory, for the check. */
    path_in(dir, sizeof(dir), "nonexistent");
    ck_assert_int_eq(dps_secret_check(dir, "j", s, err, sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_msg(strstr(err, "no secret directory") != NULL, "%s", err);
    /* A parent that does not exist, for the create. */
    path_in(dir, sizeof(dir), "no/such");
    ck_assert_int_eq(dps_secret_create(dir, "j", s, err, sizeof(err)),
                     DPS_ERR_IO);
    ck_assert_msg(strstr(err, "No such file or directory") != NULL, "%s", err);
}
END_TEST

/* A write that fails (here: over the file size limit, as ENOSPC would)
 * is reported with the path and leaves nothing behind. */
START_TEST(secret_write_error)
{
    struct rlimit rl = {10, 10};
    uint8_t       s[DPS_SECRET_LEN];
    char          dir[300], key[400], err[ERR_LEN] = "";

    signal(SIGXFSZ, SIG_IGN);
    path_in(dir, sizeof(dir), "d");
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    ck_assert_int_eq(dps_secret_create(dir, "j", s, err, sizeof(err)),
                     DPS_ERR_IO);
    ck_assert_msg(strstr(err, "cannot write ") != NULL &&
                      strstr(err, "/d/j.key: File too large") != NULL,
                  "%s", err);
    snprintf(key, sizeof(key), "%s/j.key", dir);
    ck_assert_int_ne(access(key, F_OK), 0);
    /* The directory it made for the key is gone too. */
    ck_assert_int_ne(access(dir, F_OK), 0);
}
END_TEST

START_TEST(secret_dir_default)
{
    char buf[300], want[300];

    unsetenv("TMPDIR");
    snprintf(want, sizeof(want), "/tmp/dpushim-%u", (unsigned)geteuid());
    ck_assert_ptr_eq(dps_secret_dir_default(buf, sizeof(buf)), buf);
    ck_assert_str_eq(buf, want);
    setenv("TMPDIR", "", 1);
    ck_assert_str_eq(dps_secret_dir_default(buf, sizeof(buf)), want);
    setenv("TMPDIR", "/scratch/u/", 1);
    snprintf(want, sizeof(want), "/scratch/u/dpushim-%u", (unsigned)geteuid());
    ck_assert_str_eq(dps_secret_dir_default(buf, sizeof(buf)), want);
    ck_assert_ptr_null(dps_secret_dir_default(buf, 10));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Host:port                                                          */
/* ------------------------------------------------------------------ */

START_TEST(hostport_split)
{
    char h[64], p[8], err[ERR_LEN];

    ck_assert_int_eq(dps_listen_split_hostport("10.1.2.3:7420", 0, h,
                                               sizeof(h), p, sizeof(p), err,
                                               sizeof(err)),
                     DPS_OK);
    ck_assert_str_eq(h, "10.1.2.3");
    ck_assert_str_eq(p, "7420");
    ck_assert_int_eq(dps_listen_split_hostport("[fe80::1%eth0]:1", 0, h,
                                               sizeof(h), p, sizeof(p), err,
                                               sizeof(err)),
                     DPS_OK);
    ck_assert_str_eq(h, "fe80::1%eth0");
    ck_assert_str_eq(p, "1");
    ck_assert_int_eq(dps_listen_split_hostport("dpu-01.cluster:65535", 0, h,
                                               sizeof(h), p, sizeof(p), err,
                                               sizeof(err)),
                     DPS_OK);
    ck_assert_str_eq(h, "dpu-01.cluster");
    ck_assert_int_eq(dps_listen_split_hostport("localhost:0", 1, h, sizeof(h),
                                               p, sizeof(p), err, sizeof(err)),
                     DPS_OK);
    ck_assert_str_eq(p, "0");
    ck_assert_int_eq(dps_listen_split_hostport("localhost:0", 0, h, sizeof(h),
                                               p, sizeof(p), err, sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_msg(strstr(err, "bad port '0'") != NULL, "%s", err);
    ck_assert_int_eq(dps_listen_split_hostport("h:65536", 0, h, sizeof(h), p,
                                               sizeof(p), err, sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_int_eq(dps_listen_split_hostport("h:7x", 0, h, sizeof(h), p,
                                               sizeof(p), err, sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_int_eq(dps_listen_split_hostport("h:", 0, h, sizeof(h), p,
                                               sizeof(p), err, sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_int_eq(dps_listen_split_hostport("h", 0, h, sizeof(h), p,
                                               sizeof(p), err, sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_msg(strstr(err, "missing :PORT") != NULL, "%s", err);
    ck_assert_int_eq(dps_listen_split_hostport(":80", 0, h, sizeof(h), p,
                                               sizeof(p), err, sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_int_eq(dps_listen_split_hostport("::1:80", 0, h, sizeof(h), p,
                                               sizeof(p), err, sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_msg(strstr(err, "brackets") != NULL, "%s", err);
    ck_assert_int_eq(dps_listen_split_hostport("[::1]80", 0, h, sizeof(h), p,
                                               sizeof(p), err, sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_int_eq(dps_listen_split_hostport("[]:80", 0, h, sizeof(h), p,
                                               sizeof(p), err, sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_int_eq(dps_listen_split_hostport("", 0, h, sizeof(h), p,
                                               sizeof(p), err, sizeof(err)),
                     DPS_ERR_INVALID);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Agent map                                                          */
/* ------------------------------------------------------------------ */

static char mapfile[400];

static void map_write(const char *text)
{
    path_in(mapfile, sizeof(mapfile), "agents.map");
    write_file(mapfile, text, 0644);
}

/* Look hostname up; the answer must be want. */
static void map_is_at(const char *hostname, unsigned vnode, const char *want,
                      int line)
{
    char hp[DPS_LISTEN_HOSTPORT_MAX] = "", err[ERR_LEN] = "";
    int  rc = dps_agent_map_lookup(mapfile, hostname, vnode, hp, sizeof(hp),
                                   err, sizeof(err));

    ck_assert_msg(rc == DPS_OK, "line %d: %s: %s", line, hostname, err);
    ck_assert_msg(strcmp(hp, want) == 0,
                  "line %d: %s vnode %u -> %s, "
                  "expected %s",
                  line, hostname, vnode, hp, want);
}
#define MAP_IS(_h, _v, _w) map_is_at((_h), (_v), (_w), __LINE__)

/* The lookup must fail with rc and an error equal to want (with the
 * file's path in front when want starts with ':'). */
static void map_err_at(const char *hostname, int rc_want, const char *want,
                       int line)
{
    char hp[DPS_LISTEN_HOSTPORT_MAX] = "unset", err[ERR_LEN] = "";
    char full[ERR_LEN + 400];
    int  rc = dps_agent_map_lookup(mapfile, hostname, 0, hp, sizeof(hp), err,
                                   sizeof(err));

    if (want[0] == ':') {
        snprintf(full, sizeof(full), "%s%s", mapfile, want);
    } else {
        snprintf(full, sizeof(full), "%s", want);
    }
    ck_assert_msg(rc == rc_want, "line %d: gave %d (%s)", line, rc, err);
    ck_assert_msg(strncmp(err, full, strlen(full)) == 0,
                  "line %d: error '%s', expected '%s...'", line, err, full);
    ck_assert_str_eq(hp, "unset");
}
#define MAP_ERR(_h, _rc, _w) map_err_at((_h), (_rc), (_w), __LINE__)

START_TEST(map_matching)
{
    map_write("# agents of the test cluster\n"
              "\n"
              "node01.cluster.org  10.0.0.1:7420 10.0.0.2:7421   # 2 DPUs\n"
              "\tnode02\t10.0.1.1:7420\n"
              "node03 [fd00::3]:7000 dpu03:7001 # ipv6 and a name\n"
              "   # indented comment\n"
              "*  [fd00::1]:7000\n");
    /* Exact, each virtual node, modulo the agent count. */
    MAP_IS("node01.cluster.org", 0, "10.0.0.1:7420");
    MAP_IS("node01.cluster.org", 1, "10.0.0.2:7421");
    MAP_IS("node01.cluster.org", 2, "10.0.0.1:7420");
    MAP_IS("node01.cluster.org", 7, "10.0.0.2:7421");
    MAP_IS("NODE01.Cluster.ORG", 0, "10.0.0.1:7420");
    /* Short names, either side. */
    MAP_IS("node01", 1, "10.0.0.2:7421");
    MAP_IS("node01.other", 0, "10.0.0.1:7420");
    MAP_IS("node02.cluster.org", 5, "10.0.1.1:7420");
    /* IPv6 kept in brackets, ready for dps_listen_connect. */
    MAP_IS("node03", 0, "[fd00::3]:7000");
    MAP_IS("node03", 1, "dpu03:7001");
    /* Anything else: the "*" line. */
    MAP_IS("node04", 0, "[fd00::1]:7000");
    MAP_IS("node0", 3, "[fd00::1]:7000");
}
END_TEST

START_TEST(map_rules)
{
    char want[600];

    /* One line for a cluster whose DPUs are named after their hosts. */
    map_write("* {short}-dpu:7420\n"
              "n1.a {host}:7000\n");
    MAP_IS("node7.cluster.org", 0, "node7-dpu:7420");
    MAP_IS("node7", 3, "node7-dpu:7420");
    MAP_IS("n1.a", 0, "n1.a:7000");
    map_write("* {short}-dpu:74{x}\n");
    snprintf(want, sizeof(want),
             ":1: {short}-dpu:74{x}: only {host} and {short} may be "
             "replaced");
    MAP_ERR("n1", DPS_ERR_INVALID, want);
    /* What a rule gives is checked as if written out. */
    map_write("* {short}:7420\n");
    MAP_ERR("n1:9", DPS_ERR_INVALID, ":1: ");
}
END_TEST

START_TEST(service_hello)
{
    char     job[DPS_LISTEN_NAME_MAX + 1], cred[DPS_CRED_MAX + 1];
    char     err[ERR_LEN], big[DPS_CRED_MAX + 2];
    size_t   len, i;
    uint8_t *h = dps_service_encode_hello("job-1", "MUNGE:abc=:", &len);
    uint8_t  secret[DPS_SECRET_LEN] = {0};

    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(len, DPS_SERVICE_HDR_LEN + 5 + 11);
    /* Every prefix is "more to come", the whole a hello. */
    for (i = 0; i < len; i++) {
        ck_assert_int_eq(dps_service_decode_hello(h, i, job, sizeof(job), cred,
                                                  sizeof(cred), err,
                                                  sizeof(err)),
                         DPS_ERR_AGAIN);
    }
    ck_assert_int_eq(dps_service_decode_hello(h, len, job, sizeof(job), cred,
                                              sizeof(cred), err, sizeof(err)),
                     DPS_OK);
    ck_assert_str_eq(job, "job-1");
    ck_assert_str_eq(cred, "MUNGE:abc=:");
    /* No credential. */
    h[12] = 0;
    ck_assert_int_eq(dps_service_decode_hello(h, len, job, sizeof(job), cred,
                                              sizeof(cred), err, sizeof(err)),
                     DPS_ERR_PROTO);
    ck_assert_msg(strstr(err, "no credential") != NULL, "%s", err);
    free(h);
    /* A blank in the credential: refused as it arrives. */
    h = dps_service_encode_hello("job-1", "MUNGE:a c:", &len);
    ck_assert_int_eq(dps_service_decode_hello(h, len - 1, job, sizeof(job),
                                              cred, sizeof(cred), err,
                                              sizeof(err)),
                     DPS_ERR_PROTO);
    ck_assert_msg(strstr(err, "credential has") != NULL, "%s", err);
    free(h);
    /* A secret-file job at a service: told what to do. */
    h = dps_listen_encode_hello("job-1", secret, &len);
    ck_assert_int_eq(dps_service_decode_hello(h, len, job, sizeof(job), cred,
                                              sizeof(cred), err, sizeof(err)),
                     DPS_ERR_PROTO);
    ck_assert_msg(strstr(err, "DPUSHIM_AUTH=munge") != NULL, "%s", err);
    free(h);
    /* Too long a credential is never encoded. */
    memset(big, 'A', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    ck_assert_ptr_null(dps_service_encode_hello("job-1", big, &len));
    ck_assert_ptr_null(dps_service_encode_hello("job 1", "x", &len));
    ck_assert_ptr_null(dps_service_encode_hello("job-1", "", &len));
}
END_TEST

START_TEST(map_order)
{
    char want[600];

    /* Exact beats short beats "*", whatever the order of the lines. */
    map_write("* 1.1.1.1:1\n"
              "n1.b 2.2.2.2:2\n"
              "n1 3.3.3.3:3\n"
              "n1.a 4.4.4.4:4\n");
    MAP_IS("n1", 0, "3.3.3.3:3");
    MAP_IS("n1.a", 0, "4.4.4.4:4");
    MAP_IS("n1.b", 0, "2.2.2.2:2");
    MAP_IS("n1.c", 0, "2.2.2.2:2"); /* first short match */
    MAP_IS("n2", 0, "1.1.1.1:1");
    map_write("n1 3.3.3.3:3\n");
    snprintf(want, sizeof(want), "agent map %s has no line for host n2.x",
             mapfile);
    MAP_ERR("n2.x", DPS_ERR_INVALID, want);
}
END_TEST

START_TEST(map_errors)
{
    char want[600];

    map_write("n1 1.1.1.1:1\n"
              "# fine so far\n"
              "n3\n"
              "n4 4.4.4.4:4\n");
    MAP_ERR("n1", DPS_ERR_INVALID, ":3: expected HOST ADDR:PORT");
    map_write("n1 1.1.1.1:1\nn2 2.2.2.2:99999\n");
    MAP_ERR("n1", DPS_ERR_INVALID, ":2: bad port '99999'");
    map_write("n1 1.1.1.1\n");
    MAP_ERR("n1", DPS_ERR_INVALID, ":1: missing :PORT");
    map_write("n1 fd00::1:80\n");
    MAP_ERR("n1", DPS_ERR_INVALID, ":1: an IPv6 address goes in brackets");
    map_write("n1 1.1.1.1:1\nN1 2.2.2.2:2\n");
    MAP_ERR("n1", DPS_ERR_INVALID, ":2: host N1 already has line 1");
    map_write("# only comments\n\n");
    snprintf(want, sizeof(want), "agent map %s has no line for host node01",
             mapfile);
    MAP_ERR("node01", DPS_ERR_INVALID, want);
    path_in(mapfile, sizeof(mapfile), "missing.map");
    snprintf(want, sizeof(want),
             "cannot read agent map %s: No such file "
             "or directory",
             mapfile);
    MAP_ERR("node01", DPS_ERR_IO, want);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Client against a stand-in listener                                 */
/* ------------------------------------------------------------------ */

typedef struct fake {
    int         lfd;
    int         port;
    const char *reply;    /* NULL: say nothing; "" close at once */
    int         hello_rc; /* decode result of what the client sent */
    char        job[DPS_LISTEN_NAME_MAX + 1];
    uint8_t     secret[DPS_SECRET_LEN];
    int         saw_eof; /* the client closed after an "ok" */
} fake_t;

static void *fake_run(void *arg)
{
    fake_t *f = arg;
    uint8_t buf[256];
    size_t  len = 0;
    ssize_t n;
    int     fd = accept(f->lfd, NULL, NULL);

    if (fd < 0) {
        return NULL;
    }
    f->hello_rc = DPS_ERR_AGAIN;
    while (f->hello_rc == DPS_ERR_AGAIN &&
           (n = read(fd, buf + len, sizeof(buf) - len)) > 0) {
        len += (size_t)n;
        f->hello_rc = dps_listen_decode_hello(buf, len, f->job, sizeof(f->job),
                                              f->secret, NULL, 0);
    }
    if (f->reply == NULL) {
        sleep(2);
    } else if (f->reply[0] != '\0') {
        if (write(fd, f->reply, strlen(f->reply)) < 0) {
            /* the client's problem */
        }
        f->saw_eof = (read(fd, buf, sizeof(buf)) == 0);
    }
    close(fd);
    return NULL;
}

static void fake_start(fake_t *f, pthread_t *t, const char *reply)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t          sl = sizeof(sa);

    memset(f, 0, sizeof(*f));
    f->reply = reply;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->lfd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(f->lfd, 0);
    ck_assert_int_eq(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(f->lfd, 4), 0);
    ck_assert_int_eq(getsockname(f->lfd, (struct sockaddr *)&sa, &sl), 0);
    f->port = ntohs(sa.sin_port);
    ck_assert_int_eq(pthread_create(t, NULL, fake_run, f), 0);
}

/* Connect to the stand-in; returns the status, err filled. */
static int fake_connect(fake_t *f, int timeout_ms, int *fd, void **addr,
                        size_t *alen, uint32_t *pid, char *host, char *err)
{
    uint8_t s[DPS_SECRET_LEN];
    char    hp[64];

    fill_secret(s, 9);
    snprintf(hp, sizeof(hp), "127.0.0.1:%d", f->port);
    return dps_listen_connect(hp, "myjob", s, timeout_ms, fd, addr, alen, pid,
                              host, 64, err, ERR_LEN);
}

START_TEST(connect_ok)
{
    uint8_t   s[DPS_SECRET_LEN];
    char      host[64], err[ERR_LEN] = "";
    void     *addr = NULL;
    size_t    alen = 0;
    uint32_t  pid = 0;
    pthread_t t;
    fake_t    f;
    int       fd = -1;

    fake_start(&f, &t, "ok 4242 dpu-7 00ab10ff\n");
    ck_assert_int_eq(
        fake_connect(&f, 3000, &fd, &addr, &alen, &pid, host, err), DPS_OK);
    ck_assert_int_ge(fd, 0);
    ck_assert_uint_eq(pid, 4242);
    ck_assert_str_eq(host, "dpu-7");
    ck_assert_uint_eq(alen, 4);
    ck_assert_int_eq(memcmp(addr, "\x00\xab\x10\xff", 4), 0);
    /* The listener saw a well-formed hello for our job and secret. */
    fill_secret(s, 9);
    ck_assert_int_eq(f.hello_rc, DPS_OK);
    ck_assert_str_eq(f.job, "myjob");
    ck_assert_int_eq(memcmp(f.secret, s, sizeof(s)), 0);
    /* Blocking, close-on-exec; closing it is the job's end. */
    ck_assert_int_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    close(fd);
    pthread_join(t, NULL);
    ck_assert_int_eq(f.saw_eof, 1);
    free(addr);
    close(f.lfd);
}
END_TEST

START_TEST(connect_refused_by_agent)
{
    char      host[64], err[ERR_LEN] = "", want[128];
    void     *addr = NULL;
    size_t    alen = 0;
    uint32_t  pid = 0;
    pthread_t t;
    fake_t    f;
    int       fd = -1;

    fake_start(&f, &t, "refused wrong secret\n");
    ck_assert_int_eq(
        fake_connect(&f, 3000, &fd, &addr, &alen, &pid, host, err),
        DPS_ERR_INVALID);
    snprintf(want, sizeof(want),
             "agent 127.0.0.1:%d refused the job: "
             "wrong secret",
             f.port);
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(fd, -1);
    ck_assert_ptr_null(addr);
    pthread_join(t, NULL);
    close(f.lfd);
}
END_TEST

START_TEST(connect_bad_answers)
{
    static const char *answers[] = {"ok\n",
                                    "ok 12 host\n",
                                    "ok x host ab\n",
                                    "ok 12 host zz\n",
                                    "ok 12 host abc\n",
                                    "ok 0 host ab\n",
                                    "hello\n",
                                    "ok 1  ab\n",
                                    "ok 12 host ab relative/grant\n",
                                    "ok 12 host ab /grant /more\n",
                                    "ok 12 host ab \n",
                                    NULL};
    char               host[64], err[ERR_LEN];
    void              *addr = NULL;
    size_t             alen = 0;
    uint32_t           pid = 0;
    pthread_t          t;
    fake_t             f;
    int                fd = -1, i;

    for (i = 0; answers[i] != NULL; i++) {
        fake_start(&f, &t, answers[i]);
        err[0] = '\0';
        ck_assert_msg(fake_connect(&f, 3000, &fd, &addr, &alen, &pid, host,
                                   err) == DPS_ERR_PROTO,
                      "answer %d", i);
        ck_assert_msg(strstr(err, "malformed answer") != NULL, "%s", err);
        ck_assert_int_eq(fd, -1);
        pthread_join(t, NULL);
        close(f.lfd);
    }
    /* Closed without a word. */
    fake_start(&f, &t, "");
    ck_assert_int_eq(
        fake_connect(&f, 3000, &fd, &addr, &alen, &pid, host, err),
        DPS_ERR_DEAD);
    ck_assert_msg(strstr(err, "closed the connection without answering") !=
                      NULL,
                  "%s", err);
    pthread_join(t, NULL);
    close(f.lfd);
}
END_TEST

START_TEST(connect_timeout)
{
    char      host[64], err[ERR_LEN] = "";
    void     *addr = NULL;
    size_t    alen = 0;
    uint32_t  pid = 0;
    pthread_t t;
    fake_t    f;
    int       fd = -1;

    fake_start(&f, &t, NULL);
    ck_assert_int_eq(fake_connect(&f, 300, &fd, &addr, &alen, &pid, host, err),
                     DPS_ERR_TIMEOUT);
    ck_assert_msg(strstr(err, "did not answer within 300 ms") != NULL, "%s",
                  err);
    pthread_join(t, NULL);
    close(f.lfd);
}
END_TEST

START_TEST(connect_errors)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t          sl = sizeof(sa);
    uint8_t            s[DPS_SECRET_LEN] = {0};
    char               hp[64], host[64], err[ERR_LEN] = "", want[128];
    void              *addr = NULL;
    size_t             alen;
    uint32_t           pid;
    int                fd = -1, sfd;

    /* A port nobody listens on (bound, then released). */
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sfd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_eq(bind(sfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(getsockname(sfd, (struct sockaddr *)&sa, &sl), 0);
    close(sfd);
    snprintf(hp, sizeof(hp), "127.0.0.1:%d", ntohs(sa.sin_port));
    ck_assert_int_eq(dps_listen_connect(hp, "j", s, 2000, &fd, &addr, &alen,
                                        &pid, host, sizeof(host), err,
                                        sizeof(err)),
                     DPS_ERR_IO);
    snprintf(want, sizeof(want),
             "cannot connect to agent %s: Connection "
             "refused",
             hp);
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(dps_listen_connect("127.0.0.1", "j", s, 2000, &fd, &addr,
                                        &alen, &pid, host, sizeof(host), err,
                                        sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_msg(strstr(err, "bad agent address: missing :PORT") != NULL,
                  "%s", err);
    ck_assert_int_eq(dps_listen_connect(hp, "a/b", s, 2000, &fd, &addr, &alen,
                                        &pid, host, sizeof(host), err,
                                        sizeof(err)),
                     DPS_ERR_INVALID);
    ck_assert_int_eq(dps_listen_connect("no-such-host.invalid:1", "j", s, 2000,
                                        &fd, &addr, &alen, &pid, host,
                                        sizeof(host), err, sizeof(err)),
                     DPS_ERR_IO);
    ck_assert_msg(strstr(err, "cannot resolve agent no-such-host.invalid:1") !=
                      NULL,
                  "%s", err);
    ck_assert_int_eq(fd, -1);
}
END_TEST

static Suite *listen_suite(void)
{
    Suite *s = suite_create("listen");
    TCase *tc;

    tc = tcase_create("hello");
    tcase_add_test(tc, hello_roundtrip);
    tcase_add_test(tc, hello_encode_bad_names);
    tcase_add_test(tc, hello_refusals);
    tcase_add_test(tc, hello_prefixes);
    suite_add_tcase(s, tc);

    tc = tcase_create("secret");
    tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
    tcase_add_test(tc, secret_create_check);
    tcase_add_test(tc, secret_excl);
    tcase_add_test(tc, secret_mode_refused);
    tcase_add_test(tc, secret_symlink_refused);
    tcase_add_test(tc, secret_bad_files);
    tcase_add_test(tc, secret_unsafe_dir);
    tcase_add_test(tc, secret_write_error);
    tcase_add_test(tc, secret_dir_default);
    suite_add_tcase(s, tc);

    tc = tcase_create("hostport");
    tcase_add_test(tc, hostport_split);
    suite_add_tcase(s, tc);

    tc = tcase_create("map");
    tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
    tcase_add_test(tc, map_matching);
    tcase_add_test(tc, map_order);
    tcase_add_test(tc, map_rules);
    tcase_add_test(tc, service_hello);
    tcase_add_test(tc, map_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("connect");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, connect_ok);
    tcase_add_test(tc, connect_refused_by_agent);
    tcase_add_test(tc, connect_bad_answers);
    tcase_add_test(tc, connect_timeout);
    tcase_add_test(tc, connect_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(listen_suite());
    int      failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
