/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-job secret files for listening agents (formats in dps_listen.h):
 * rank 0 creates one in a directory only its user may write, the agent
 * checks a job's hello against it, rank 0 removes it once every agent has
 * checked. Every refusal says why.
 */
#define _GNU_SOURCE
#include "common/dps_listen.h"
#include "common/dps_status.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define SECRET_FILE_LEN (2 * DPS_SECRET_LEN + 1) /* hex digits + '\n' */

/* ------------------------------------------------------------------ */
/* Secret files                                                       */
/* ------------------------------------------------------------------ */

const char *dps_secret_dir_default(char *buf, size_t len)
{
    const char *tmp = getenv("TMPDIR");
    size_t      n;
    int         w;

    if (tmp == NULL || *tmp == '\0') {
        tmp = "/tmp";
    }
    n = strlen(tmp);
    while (n > 1 && tmp[n - 1] == '/') {
        n--;
    }
    w = snprintf(buf, len, "%.*s/dpushim-%u", (int)n, tmp,
                 (unsigned)geteuid());
    return (w < 0 || (size_t)w >= len) ? NULL : buf;
}

/* Open dir (no symlink) and check it is ours and not writable by others.
 * Returns the descriptor, or -1 with *rc and err set. */
static int dir_open(const char *dir, int *rc, char *err, size_t errlen)
{
    struct stat st;
    int         fd;

    fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) {
            dps_seterr(err, errlen, "no secret directory %s", dir);
            *rc = DPS_ERR_INVALID;
        } else if (errno == ELOOP || errno == ENOTDIR) {
            dps_seterr(err, errlen,
                       "secret directory %s is a symbolic link "
                       "or not a directory",
                       dir);
            *rc = DPS_ERR_INVALID;
        } else {
            dps_seterr(err, errlen, "cannot open secret directory %s: %s", dir,
                       strerror(errno));
            *rc = DPS_ERR_IO;
        }
        return -1;
    }
    if (fstat(fd, &st) != 0) {
        dps_seterr(err, errlen, "cannot stat %s: %s", dir, strerror(errno));
        *rc = DPS_ERR_IO;
        goto err_close;
    }
    if (st.st_uid != geteuid()) {
        dps_seterr(err, errlen,
                   "secret directory %s is owned by uid %u, not "
                   "%u",
                   dir, (unsigned)st.st_uid, (unsigned)geteuid());
        *rc = DPS_ERR_INVALID;
        goto err_close;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        dps_seterr(err, errlen,
                   "secret directory %s is writable by group or "
                   "others (mode %04o)",
                   dir, (unsigned)(st.st_mode & 07777));
        *rc = DPS_ERR_INVALID;
        goto err_close;
    }
    return fd;

err_close:
    close(fd);
    return -1;
}

int dps_secret_dir_prepare(const char *dir, int create, char *err,
                           size_t errlen)
{
    int rc = DPS_OK, fd;

    if (create) {
        if (mkdir(dir, 0700) == 0) {
            /* Exactly 0700 whatever the umask: the owner needs it all. */
            if (chmod(dir, 0700) != 0) {
                dps_seterr(err, errlen, "cannot chmod %s: %s", dir,
                           strerror(errno));
                rmdir(dir);
                return DPS_ERR_IO;
            }
        } else if (errno != EEXIST) {
            dps_seterr(err, errlen, "cannot create secret directory %s: %s",
                       dir, strerror(errno));
            return DPS_ERR_IO;
        }
    }
    fd = dir_open(dir, &rc, err, errlen);
    if (fd < 0) {
        return rc;
    }
    close(fd);
    return DPS_OK;
}

static int key_name(const char *job, char *name, size_t len, char *err,
                    size_t errlen)
{
    if (!dps_listen_name_ok(job)) {
        dps_seterr(err, errlen,
                   "invalid job name '%.80s' (1 to %d characters "
                   "of A-Z a-z 0-9 . _ -)",
                   job ? job : "(null)", DPS_LISTEN_NAME_MAX);
        return DPS_ERR_INVALID;
    }
    snprintf(name, len, "%s.key", job);
    return DPS_OK;
}

static void hex_lower(const uint8_t *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    size_t            i;

    for (i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
}

/* Strictly lowercase hex, as written by dps_secret_create: DPS_OK, or
 * DPS_ERR_INVALID. */
static int unhex_lower(const char *in, size_t n, uint8_t *out)
{
    size_t i;

    for (i = 0; i < 2 * n; i++) {
        int c = (unsigned char)in[i], v;

        if (c >= '0' && c <= '9') {
            v = c - '0';
        } else if (c >= 'a' && c <= 'f') {
            v = c - 'a' + 10;
        } else {
            return DPS_ERR_INVALID;
        }
        if (i % 2 == 0) {
            out[i / 2] = (uint8_t)(v << 4);
        } else {
            out[i / 2] |= (uint8_t)v;
        }
    }
    return DPS_OK;
}

/* n random bytes: DPS_OK, or DPS_ERR_IO with errno set. */
static int random_bytes(uint8_t *s, size_t n)
{
    size_t got = 0;

    while (got < n) {
        ssize_t r = getrandom(s + got, n - got, 0);

        if (r < 0 && errno != EINTR) {
            return DPS_ERR_IO;
        }
        got += r > 0 ? (size_t)r : 0;
    }
    return DPS_OK;
}

/* DPS_OK, or DPS_ERR_IO with errno set (ENOSPC when nothing more could
 * be written). */
static int write_all(int fd, const char *text, size_t len)
{
    size_t off = 0;

    while (off < len) {
        ssize_t n = write(fd, text + off, len - off);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (n == 0) {
                errno = ENOSPC;
            }
            return DPS_ERR_IO;
        }
        off += (size_t)n;
    }
    return DPS_OK;
}

/* Make dir (0700) if it is missing, and check it (dps_secret_dir_prepare);
 * *created says whether it was made here. A directory made here and then
 * refused is removed again. DPS_OK, or DPS_ERR_* with err set. */
static int secret_dir_make(const char *dir, int *created, char *err,
                           size_t errlen)
{
    int rc;

    *created = 0;
    if (mkdir(dir, 0700) == 0) {
        *created = 1;
        chmod(dir, 0700); /* whatever the umask; checked just below */
    } else if (errno != EEXIST) {
        dps_seterr(err, errlen, "cannot create secret directory %s: %s", dir,
                   strerror(errno));
        return DPS_ERR_IO;
    }
    rc = dps_secret_dir_prepare(dir, 0, err, errlen);
    if (rc != DPS_OK && *created) {
        rmdir(dir);
    }
    return rc;
}

/* Write secret s, in hex, to the new file name in dfd (dir's), mode
 * 0600. DPS_OK; DPS_ERR_INVALID if it exists, DPS_ERR_IO, with err set
 * and no file left behind. */
static int secret_file_write(int dfd, const char *dir, const char *name,
                             const uint8_t s[DPS_SECRET_LEN], char *err,
                             size_t errlen)
{
    char text[SECRET_FILE_LEN];
    int  rc, fd;

    fd = openat(dfd, name,
                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        rc = (errno == EEXIST) ? DPS_ERR_INVALID : DPS_ERR_IO;
        dps_seterr(err, errlen, "cannot create %s/%s: %s", dir, name,
                   strerror(errno));
        return rc;
    }
    hex_lower(s, DPS_SECRET_LEN, text);
    text[SECRET_FILE_LEN - 1] = '\n';
    /* 0600 whatever the umask: the listener refuses anything else. */
    if (fchmod(fd, 0600) != 0) {
        goto err_write;
    }
    if (write_all(fd, text, sizeof(text)) != DPS_OK) {
        goto err_write;
    }
    if (close(fd) != 0) {
        fd = -1;
        goto err_write;
    }
    memset(text, 0, sizeof(text));
    return DPS_OK;

err_write:
    dps_seterr(err, errlen, "cannot write %s/%s: %s", dir, name,
               strerror(errno));
    if (fd >= 0) {
        close(fd);
    }
    unlinkat(dfd, name, 0);
    memset(text, 0, sizeof(text));
    return DPS_ERR_IO;
}

int dps_secret_create(const char *dir, const char *job,
                      uint8_t secret[DPS_SECRET_LEN], char *err, size_t errlen)
{
    uint8_t s[DPS_SECRET_LEN];
    char    name[DPS_LISTEN_NAME_MAX + 8];
    int     rc, dfd, created;

    rc = key_name(job, name, sizeof(name), err, errlen);
    if (rc != DPS_OK) {
        return rc;
    }
    rc = secret_dir_make(dir, &created, err, errlen);
    if (rc != DPS_OK) {
        return rc;
    }
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        dps_seterr(err, errlen, "cannot open %s: %s", dir, strerror(errno));
        rc = DPS_ERR_IO;
        goto err_dir;
    }
    if (random_bytes(s, sizeof(s)) != DPS_OK) {
        dps_seterr(err, errlen, "getrandom: %s", strerror(errno));
        rc = DPS_ERR_IO;
        goto err_dfd;
    }
    rc = secret_file_write(dfd, dir, name, s, err, errlen);
    if (rc != DPS_OK) {
        goto err_dfd;
    }
    close(dfd);
    memcpy(secret, s, sizeof(s));
    memset(s, 0, sizeof(s));
    return DPS_OK;

err_dfd:
    close(dfd);
err_dir:
    if (created) {
        rmdir(dir);
    }
    memset(s, 0, sizeof(s));
    return rc;
}

/* A secret file must be a regular file of ours that only we may read. */
static int file_ok(int fd, const char *dir, const char *name, char *err,
                   size_t errlen)
{
    struct stat st;

    if (fstat(fd, &st) != 0) {
        dps_seterr(err, errlen, "cannot stat %s/%s: %s", dir, name,
                   strerror(errno));
        return DPS_ERR_IO;
    }
    if (!S_ISREG(st.st_mode)) {
        dps_seterr(err, errlen, "secret file %s/%s is not a regular file", dir,
                   name);
        return DPS_ERR_INVALID;
    }
    if (st.st_uid != geteuid()) {
        dps_seterr(err, errlen, "secret file %s/%s is owned by uid %u, not %u",
                   dir, name, (unsigned)st.st_uid, (unsigned)geteuid());
        return DPS_ERR_INVALID;
    }
    if (st.st_mode & 077) {
        dps_seterr(err, errlen,
                   "secret file %s/%s is open to group or others "
                   "(mode %04o, expected 0600)",
                   dir, name, (unsigned)(st.st_mode & 07777));
        return DPS_ERR_INVALID;
    }
    return DPS_OK;
}

int dps_secret_check(const char *dir, const char *job,
                     const uint8_t secret[DPS_SECRET_LEN], char *err,
                     size_t errlen)
{
    uint8_t          want[DPS_SECRET_LEN];
    char             name[DPS_LISTEN_NAME_MAX + 8], text[SECRET_FILE_LEN + 1];
    volatile uint8_t diff = 0;
    size_t           off = 0, i;
    int              rc, dfd, fd;

    rc = key_name(job, name, sizeof(name), err, errlen);
    if (rc != DPS_OK) {
        return rc;
    }
    dfd = dir_open(dir, &rc, err, errlen);
    if (dfd < 0) {
        return rc;
    }
    /* O_NONBLOCK: a FIFO planted under the name must not block us. */
    fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    close(dfd);
    if (fd < 0) {
        if (errno == ENOENT) {
            dps_seterr(err, errlen, "no secret file %s/%s", dir, name);
            return DPS_ERR_INVALID;
        }
        if (errno == ELOOP) {
            dps_seterr(err, errlen, "secret file %s/%s is a symbolic link",
                       dir, name);
            return DPS_ERR_INVALID;
        }
        dps_seterr(err, errlen, "cannot open secret file %s/%s: %s", dir, name,
                   strerror(errno));
        return DPS_ERR_IO;
    }
    rc = file_ok(fd, dir, name, err, errlen);
    if (rc != DPS_OK) {
        goto out;
    }
    rc = DPS_ERR_INVALID;
    /* One byte more than a good file has, to see a longer one. */
    while (off < sizeof(text)) {
        ssize_t n = read(fd, text + off, sizeof(text) - off);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            dps_seterr(err, errlen, "cannot read %s/%s: %s", dir, name,
                       strerror(errno));
            rc = DPS_ERR_IO;
            goto out;
        }
        if (n == 0) {
            break;
        }
        off += (size_t)n;
    }
    if (off != SECRET_FILE_LEN || text[SECRET_FILE_LEN - 1] != '\n' ||
        unhex_lower(text, DPS_SECRET_LEN, want) != DPS_OK) {
        dps_seterr(err, errlen,
                   "secret file %s/%s is malformed (expected %d "
                   "lowercase hex digits and a newline)",
                   dir, name, 2 * DPS_SECRET_LEN);
        goto out;
    }
    /* Constant time: how much of the secret matched must not leak. */
    for (i = 0; i < DPS_SECRET_LEN; i++) {
        diff |= (uint8_t)(want[i] ^ secret[i]);
    }
    if (diff != 0) {
        dps_seterr(err, errlen, "wrong secret");
        goto out;
    }
    rc = DPS_OK;
out:
    memset(text, 0, sizeof(text));
    memset(want, 0, sizeof(want));
    close(fd);
    return rc;
}

void dps_secret_remove(const char *dir, const char *job)
{
    char path[PATH_MAX];

    if (dir == NULL || !dps_listen_name_ok(job)) {
        return;
    }
    if (snprintf(path, sizeof(path), "%s/%s.key", dir, job) <
        (int)sizeof(path)) {
        unlink(path);
    }
}
