/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Listening agents, the parts both sides share: the hello, per-job secret
 * files, the client's connect, and the agent map (formats in
 * dps_listen.h).
 */
#define _GNU_SOURCE
#include "dps_listen.h"
#include "dps_proto.h"
#include "dps_status.h"
#include "dps_ucx.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define SECRET_FILE_LEN (2 * DPS_SECRET_LEN + 1)  /* hex digits + '\n' */
/* "ok " pid ' ' host ' ' hex '\n', with room to spare. */
#define REPLY_MAX       (64 + 256 + 2 * DPS_MAX_ADDR)

static void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Little-endian fields, whatever the host's byte order. */
static void put_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put_le32(uint8_t *p, uint32_t v)
{
    put_le16(p, (uint16_t)v);
    put_le16(p + 2, (uint16_t)(v >> 16));
}

static uint16_t get_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)get_le16(p) | (uint32_t)get_le16(p + 2) << 16;
}

static int name_char_ok(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

int dps_listen_name_ok(const char *name)
{
    size_t i;

    if (name == NULL) {
        return 0;
    }
    for (i = 0; name[i] != '\0'; i++) {
        if (i >= DPS_LISTEN_NAME_MAX ||
            !name_char_ok((unsigned char)name[i])) {
            return 0;
        }
    }
    return i > 0;
}

/* Describe a byte for a message: 'c' if printable, else 0xNN. */
static void byte_str(uint8_t c, char *out, size_t len)
{
    if (c > ' ' && c < 0x7f && c != '\'') {
        snprintf(out, len, "'%c'", c);
    } else {
        snprintf(out, len, "byte 0x%02x", c);
    }
}

int dps_listen_split_hostport(const char *s, int allow_zero, char *host,
                              size_t hostlen, char *port, size_t portlen,
                              char *err, size_t errlen)
{
    const char *h, *he, *p;
    unsigned long v = 0;
    size_t i, n;

    if (s == NULL || *s == '\0') {
        seterr(err, errlen, "empty address (expected ADDR:PORT)");
        return DPS_ERR_INVALID;
    }
    if (s[0] == '[') {
        h = s + 1;
        he = strchr(h, ']');
        if (he == NULL || he[1] != ':') {
            seterr(err, errlen, "expected [IPv6]:PORT, not '%s'", s);
            return DPS_ERR_INVALID;
        }
        p = he + 2;
    } else {
        h = s;
        he = strrchr(s, ':');
        if (he == NULL) {
            seterr(err, errlen, "missing :PORT in '%s'", s);
            return DPS_ERR_INVALID;
        }
        if (memchr(h, ':', (size_t)(he - h)) != NULL) {
            seterr(err, errlen, "an IPv6 address goes in brackets, "
                   "[ADDR]:PORT, not '%s'", s);
            return DPS_ERR_INVALID;
        }
        p = he + 1;
    }
    n = (size_t)(he - h);
    if (n == 0) {
        seterr(err, errlen, "missing address in '%s'", s);
        return DPS_ERR_INVALID;
    }
    for (i = 0; p[i] != '\0'; i++) {
        if (!isdigit((unsigned char)p[i]) || i >= 5) {
            break;
        }
        v = v * 10 + (unsigned long)(p[i] - '0');
    }
    if (i == 0 || p[i] != '\0' || v > 65535 || (v == 0 && !allow_zero)) {
        seterr(err, errlen, "bad port '%s' in '%s' (expected %d to 65535)",
               p, s, allow_zero ? 0 : 1);
        return DPS_ERR_INVALID;
    }
    if (n >= hostlen || i >= portlen) {
        seterr(err, errlen, "address too long: '%s'", s);
        return DPS_ERR_INVALID;
    }
    memcpy(host, h, n);
    host[n] = '\0';
    snprintf(port, portlen, "%lu", v);
    return DPS_OK;
}

/* ------------------------------------------------------------------ */
/* Hello                                                              */
/* ------------------------------------------------------------------ */

void *dps_listen_encode_hello(const char *job,
                              const uint8_t secret[DPS_SECRET_LEN],
                              size_t *len)
{
    size_t n;
    uint8_t *buf;

    if (!dps_listen_name_ok(job)) {
        return NULL;
    }
    n = strlen(job);
    buf = malloc(DPS_LISTEN_HDR_LEN + n);
    if (buf == NULL) {
        return NULL;
    }
    put_le32(buf, DPS_LISTEN_MAGIC);
    put_le16(buf + 4, DPS_PROTO_VERSION);
    put_le16(buf + 6, 0);
    put_le32(buf + 8, (uint32_t)n);
    memcpy(buf + 12, secret, DPS_SECRET_LEN);
    memcpy(buf + DPS_LISTEN_HDR_LEN, job, n);
    *len = DPS_LISTEN_HDR_LEN + n;
    return buf;
}

int dps_listen_decode_hello(const void *buf, size_t len, char *job,
                            size_t joblen, uint8_t secret[DPS_SECRET_LEN],
                            char *err, size_t errlen)
{
    const uint8_t *p = buf;
    uint8_t magic[4];
    uint32_t name_len;
    size_t i, have;
    char c[16];

    if (joblen <= DPS_LISTEN_NAME_MAX) {
        seterr(err, errlen, "job name buffer too small");
        return DPS_ERR_INVALID;
    }
    /* Judge every byte as it arrives, so that garbage is refused at
     * once instead of when the hello deadline passes. */
    put_le32(magic, DPS_LISTEN_MAGIC);
    for (i = 0; i < len && i < 4; i++) {
        if (p[i] != magic[i]) {
            seterr(err, errlen, "malformed hello: bad magic (not a "
                   "dpushim client)");
            return DPS_ERR_PROTO;
        }
    }
    if (len >= 6 && get_le16(p + 4) != DPS_PROTO_VERSION) {
        seterr(err, errlen, "protocol version %u, this agent speaks %u",
               get_le16(p + 4), DPS_PROTO_VERSION);
        return DPS_ERR_PROTO;
    }
    if (len >= 8 && get_le16(p + 6) != 0) {
        seterr(err, errlen, "malformed hello: reserved field is %u, not 0",
               get_le16(p + 6));
        return DPS_ERR_PROTO;
    }
    if (len < 12) {
        return DPS_ERR_AGAIN;
    }
    name_len = get_le32(p + 8);
    if (name_len == 0 || name_len > DPS_LISTEN_NAME_MAX) {
        seterr(err, errlen, "malformed hello: name length %u (expected 1 "
               "to %d)", name_len, DPS_LISTEN_NAME_MAX);
        return DPS_ERR_PROTO;
    }
    have = len > DPS_LISTEN_HDR_LEN ? len - DPS_LISTEN_HDR_LEN : 0;
    for (i = 0; i < have && i < name_len; i++) {
        if (!name_char_ok(p[DPS_LISTEN_HDR_LEN + i])) {
            byte_str(p[DPS_LISTEN_HDR_LEN + i], c, sizeof(c));
            seterr(err, errlen, "malformed hello: name has %s", c);
            return DPS_ERR_PROTO;
        }
    }
    if (have < name_len) {
        return DPS_ERR_AGAIN;
    }
    if (have > name_len) {
        seterr(err, errlen, "malformed hello: %zu bytes after the name",
               have - name_len);
        return DPS_ERR_PROTO;
    }
    memcpy(job, p + DPS_LISTEN_HDR_LEN, name_len);
    job[name_len] = '\0';
    memcpy(secret, p + 12, DPS_SECRET_LEN);
    return DPS_OK;
}

/* ------------------------------------------------------------------ */
/* Secret files                                                       */
/* ------------------------------------------------------------------ */

const char *dps_secret_dir_default(char *buf, size_t len)
{
    const char *tmp = getenv("TMPDIR");
    size_t n;
    int w;

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
    int fd;

    fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) {
            seterr(err, errlen, "no secret directory %s", dir);
            *rc = DPS_ERR_INVALID;
        } else if (errno == ELOOP || errno == ENOTDIR) {
            seterr(err, errlen, "secret directory %s is a symbolic link "
                   "or not a directory", dir);
            *rc = DPS_ERR_INVALID;
        } else {
            seterr(err, errlen, "cannot open secret directory %s: %s", dir,
                   strerror(errno));
            *rc = DPS_ERR_IO;
        }
        return -1;
    }
    if (fstat(fd, &st) != 0) {
        seterr(err, errlen, "cannot stat %s: %s", dir, strerror(errno));
        *rc = DPS_ERR_IO;
        goto err_close;
    }
    if (st.st_uid != geteuid()) {
        seterr(err, errlen, "secret directory %s is owned by uid %u, not "
               "%u", dir, (unsigned)st.st_uid, (unsigned)geteuid());
        *rc = DPS_ERR_INVALID;
        goto err_close;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        seterr(err, errlen, "secret directory %s is writable by group or "
               "others (mode %04o)", dir, (unsigned)(st.st_mode & 07777));
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
                seterr(err, errlen, "cannot chmod %s: %s", dir,
                       strerror(errno));
                rmdir(dir);
                return DPS_ERR_IO;
            }
        } else if (errno != EEXIST) {
            seterr(err, errlen, "cannot create secret directory %s: %s",
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
        seterr(err, errlen, "invalid job name '%.80s' (1 to %d characters "
               "of A-Z a-z 0-9 . _ -)", job ? job : "(null)",
               DPS_LISTEN_NAME_MAX);
        return DPS_ERR_INVALID;
    }
    snprintf(name, len, "%s.key", job);
    return DPS_OK;
}

static void hex_lower(const uint8_t *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    size_t i;

    for (i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
}

/* Strictly lowercase hex, as written by dps_secret_create. */
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
            return -1;
        }
        if (i % 2 == 0) {
            out[i / 2] = (uint8_t)(v << 4);
        } else {
            out[i / 2] |= (uint8_t)v;
        }
    }
    return 0;
}

int dps_secret_create(const char *dir, const char *job,
                      uint8_t secret[DPS_SECRET_LEN], char *err,
                      size_t errlen)
{
    uint8_t s[DPS_SECRET_LEN];
    char name[DPS_LISTEN_NAME_MAX + 8], text[SECRET_FILE_LEN];
    size_t got = 0, off = 0;
    int rc, dfd, fd, created = 0;

    rc = key_name(job, name, sizeof(name), err, errlen);
    if (rc != DPS_OK) {
        return rc;
    }
    if (mkdir(dir, 0700) == 0) {
        created = 1;
        chmod(dir, 0700);   /* whatever the umask; checked just below */
    } else if (errno != EEXIST) {
        seterr(err, errlen, "cannot create secret directory %s: %s", dir,
               strerror(errno));
        return DPS_ERR_IO;
    }
    rc = dps_secret_dir_prepare(dir, 0, err, errlen);
    if (rc != DPS_OK) {
        if (created) {
            rmdir(dir);
        }
        return rc;
    }
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        seterr(err, errlen, "cannot open %s: %s", dir, strerror(errno));
        rc = DPS_ERR_IO;
        goto err_dir;
    }
    while (got < sizeof(s)) {
        ssize_t n = getrandom(s + got, sizeof(s) - got, 0);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            seterr(err, errlen, "getrandom: %s", strerror(errno));
            rc = DPS_ERR_IO;
            goto err_dfd;
        }
        got += (size_t)n;
    }
    fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
                O_CLOEXEC, 0600);
    if (fd < 0) {
        rc = (errno == EEXIST) ? DPS_ERR_INVALID : DPS_ERR_IO;
        seterr(err, errlen, "cannot create %s/%s: %s", dir, name,
               strerror(errno));
        goto err_dfd;
    }
    hex_lower(s, sizeof(s), text);
    text[SECRET_FILE_LEN - 1] = '\n';
    /* 0600 whatever the umask: the listener refuses anything else. */
    if (fchmod(fd, 0600) != 0) {
        goto err_write;
    }
    while (off < sizeof(text)) {
        ssize_t n = write(fd, text + off, sizeof(text) - off);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (n == 0) {
                errno = ENOSPC;
            }
            goto err_write;
        }
        off += (size_t)n;
    }
    if (close(fd) != 0) {
        fd = -1;
        goto err_write;
    }
    close(dfd);
    memset(text, 0, sizeof(text));
    memcpy(secret, s, sizeof(s));
    memset(s, 0, sizeof(s));
    return DPS_OK;

err_write:
    seterr(err, errlen, "cannot write %s/%s: %s", dir, name,
           strerror(errno));
    rc = DPS_ERR_IO;
    if (fd >= 0) {
        close(fd);
    }
    unlinkat(dfd, name, 0);
err_dfd:
    close(dfd);
err_dir:
    if (created) {
        rmdir(dir);
    }
    memset(text, 0, sizeof(text));
    memset(s, 0, sizeof(s));
    return rc;
}

int dps_secret_check(const char *dir, const char *job,
                     const uint8_t secret[DPS_SECRET_LEN], char *err,
                     size_t errlen)
{
    uint8_t want[DPS_SECRET_LEN];
    char name[DPS_LISTEN_NAME_MAX + 8], text[SECRET_FILE_LEN + 1];
    volatile uint8_t diff = 0;
    size_t off = 0, i;
    struct stat st;
    int rc, dfd, fd;

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
            seterr(err, errlen, "no secret file %s/%s", dir, name);
            return DPS_ERR_INVALID;
        }
        if (errno == ELOOP) {
            seterr(err, errlen, "secret file %s/%s is a symbolic link", dir,
                   name);
            return DPS_ERR_INVALID;
        }
        seterr(err, errlen, "cannot open secret file %s/%s: %s", dir, name,
               strerror(errno));
        return DPS_ERR_IO;
    }
    rc = DPS_ERR_INVALID;
    if (fstat(fd, &st) != 0) {
        seterr(err, errlen, "cannot stat %s/%s: %s", dir, name,
               strerror(errno));
        rc = DPS_ERR_IO;
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        seterr(err, errlen, "secret file %s/%s is not a regular file", dir,
               name);
        goto out;
    }
    if (st.st_uid != geteuid()) {
        seterr(err, errlen, "secret file %s/%s is owned by uid %u, not %u",
               dir, name, (unsigned)st.st_uid, (unsigned)geteuid());
        goto out;
    }
    if (st.st_mode & 077) {
        seterr(err, errlen, "secret file %s/%s is open to group or others "
               "(mode %04o, expected 0600)", dir, name,
               (unsigned)(st.st_mode & 07777));
        goto out;
    }
    /* One byte more than a good file has, to see a longer one. */
    while (off < sizeof(text)) {
        ssize_t n = read(fd, text + off, sizeof(text) - off);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            seterr(err, errlen, "cannot read %s/%s: %s", dir, name,
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
        unhex_lower(text, DPS_SECRET_LEN, want) != 0) {
        seterr(err, errlen, "secret file %s/%s is malformed (expected %d "
               "lowercase hex digits and a newline)", dir, name,
               2 * DPS_SECRET_LEN);
        goto out;
    }
    /* Constant time: how much of the secret matched must not leak. */
    for (i = 0; i < DPS_SECRET_LEN; i++) {
        diff |= (uint8_t)(want[i] ^ secret[i]);
    }
    if (diff != 0) {
        seterr(err, errlen, "wrong secret");
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

/* ------------------------------------------------------------------ */
/* Client                                                             */
/* ------------------------------------------------------------------ */

/* Milliseconds left until deadline (seconds, dps_now()), at least 0. */
static int ms_left(double deadline)
{
    double left = (deadline - dps_now()) * 1000.0;

    return left <= 0 ? 0 : (left > 1e9 ? 1000000000 : (int)left + 1);
}

/* Wait for events on fd until deadline: 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, double deadline)
{
    struct pollfd pfd = {fd, events, 0};
    int n;

    for (;;) {
        n = poll(&pfd, 1, ms_left(deadline));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n == 0 && ms_left(deadline) > 0) {
            continue;
        }
        return n < 0 ? -1 : (n > 0);
    }
}

/* Non-blocking connect to one address. Returns the socket, or -1 with
 * errno set (ETIMEDOUT when the deadline passed). */
static int connect_one(const struct addrinfo *ai, double deadline)
{
    socklen_t sl = sizeof(int);
    int s, e = 0, r;

    s = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
               SOCK_CLOEXEC, ai->ai_protocol);
    if (s < 0) {
        return -1;
    }
    if (connect(s, ai->ai_addr, ai->ai_addrlen) == 0) {
        return s;
    }
    if (errno != EINPROGRESS && errno != EINTR) {
        e = errno;
        goto err;
    }
    r = wait_fd(s, POLLOUT, deadline);
    if (r <= 0) {
        e = (r == 0) ? ETIMEDOUT : errno;
        goto err;
    }
    if (getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &sl) != 0) {
        e = errno;
    }
    if (e == 0) {
        return s;
    }
err:
    close(s);
    errno = e;
    return -1;
}

/* Copy text into out, replacing anything unprintable. */
static void printable(const char *text, char *out, size_t len)
{
    size_t i;

    for (i = 0; text[i] != '\0' && i + 1 < len; i++) {
        out[i] = (text[i] >= ' ' && text[i] < 0x7f) ? text[i] : '?';
    }
    out[i] = '\0';
}

/* Parse "ok <pid> <host> <hex>" (no newline). */
static int parse_ok(const char *line, void **addr, size_t *addr_len,
                    uint32_t *pid, char *host, size_t hostlen)
{
    const char *p = line + 3, *h, *x;
    unsigned long v;
    char *end;
    void *a;
    long n;

    if (!isdigit((unsigned char)*p)) {
        return -1;
    }
    errno = 0;
    v = strtoul(p, &end, 10);
    if (errno || *end != ' ' || v == 0 || v > UINT32_MAX) {
        return -1;
    }
    h = end + 1;
    x = strchr(h, ' ');
    if (x == NULL || x == h || (size_t)(x - h) >= hostlen ||
        strchr(x + 1, ' ') != NULL) {
        return -1;
    }
    a = malloc(DPS_MAX_ADDR);
    if (a == NULL) {
        return -1;
    }
    n = dps_hex_decode(x + 1, a, DPS_MAX_ADDR);
    if (n <= 0) {
        free(a);
        return -1;
    }
    memcpy(host, h, (size_t)(x - h));
    host[x - h] = '\0';
    *pid = (uint32_t)v;
    *addr = a;
    *addr_len = (size_t)n;
    return 0;
}

int dps_listen_connect(const char *hostport, const char *job,
                       const uint8_t secret[DPS_SECRET_LEN], int timeout_ms,
                       int *fd, void **addr, size_t *addr_len,
                       uint32_t *pid, char *host, size_t hostlen,
                       char *err, size_t errlen)
{
    struct addrinfo hints, *res = NULL, *ai;
    char h[DPS_LISTEN_HOSTPORT_MAX], port[8], *line = NULL, *nl = NULL;
    char why[256];
    double deadline = dps_now() + timeout_ms / 1000.0;
    size_t hello_len = 0, off = 0, got = 0;
    uint8_t *hello = NULL;
    int s = -1, rc, e = 0, r;

    rc = dps_listen_split_hostport(hostport, 0, h, sizeof(h), port,
                                   sizeof(port), why, sizeof(why));
    if (rc != DPS_OK) {
        seterr(err, errlen, "bad agent address: %s", why);
        return rc;
    }
    hello = dps_listen_encode_hello(job, secret, &hello_len);
    line = malloc(REPLY_MAX + 1);
    if (hello == NULL || line == NULL) {
        seterr(err, errlen, dps_listen_name_ok(job) ? "out of memory" :
               "invalid job name");
        rc = dps_listen_name_ok(job) ? DPS_ERR_NOMEM : DPS_ERR_INVALID;
        goto out;
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_ADDRCONFIG;
    r = getaddrinfo(h, port, &hints, &res);
    if (r != 0) {
        seterr(err, errlen, "cannot resolve agent %s: %s", hostport,
               r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
        rc = DPS_ERR_IO;
        goto out;
    }
    for (ai = res; ai != NULL && s < 0; ai = ai->ai_next) {
        s = connect_one(ai, deadline);
        if (s < 0) {
            e = errno;
        }
    }
    if (s < 0) {
        if (e == ETIMEDOUT) {
            seterr(err, errlen, "cannot connect to agent %s: no answer "
                   "within %d ms", hostport, timeout_ms);
            rc = DPS_ERR_TIMEOUT;
        } else {
            seterr(err, errlen, "cannot connect to agent %s: %s", hostport,
                   strerror(e));
            rc = DPS_ERR_IO;
        }
        goto out;
    }
    while (off < hello_len) {
        ssize_t n = send(s, hello + off, hello_len - off, MSG_NOSIGNAL);

        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            r = wait_fd(s, POLLOUT, deadline);
            if (r > 0) {
                continue;
            }
            e = (r == 0) ? ETIMEDOUT : errno;
        } else {
            e = errno;
        }
        if (e == ETIMEDOUT) {
            seterr(err, errlen, "agent %s: timed out sending the hello",
                   hostport);
            rc = DPS_ERR_TIMEOUT;
        } else {
            seterr(err, errlen, "agent %s: cannot send the hello: %s",
                   hostport, strerror(e));
            rc = DPS_ERR_IO;
        }
        goto out;
    }
    /* The agent sends one line and then nothing until the job ends. */
    while (nl == NULL) {
        ssize_t n;

        if (got == REPLY_MAX) {
            seterr(err, errlen, "agent %s sent an overlong answer",
                   hostport);
            rc = DPS_ERR_PROTO;
            goto out;
        }
        n = recv(s, line + got, REPLY_MAX - got, 0);
        if (n > 0) {
            line[got + (size_t)n] = '\0';
            nl = memchr(line + got, '\n', (size_t)n);
            got += (size_t)n;
            continue;
        }
        if (n == 0) {
            seterr(err, errlen, "agent %s closed the connection without "
                   "answering", hostport);
            rc = DPS_ERR_DEAD;
            goto out;
        }
        if (errno == EAGAIN || errno == EINTR) {
            r = wait_fd(s, POLLIN, deadline);
            if (r > 0) {
                continue;
            }
            if (r == 0) {
                seterr(err, errlen, "agent %s did not answer within %d ms",
                       hostport, timeout_ms);
                rc = DPS_ERR_TIMEOUT;
                goto out;
            }
        }
        seterr(err, errlen, "agent %s: cannot read the answer: %s",
               hostport, strerror(errno));
        rc = DPS_ERR_IO;
        goto out;
    }
    *nl = '\0';
    if (strncmp(line, "refused ", 8) == 0) {
        printable(line + 8, why, sizeof(why));
        seterr(err, errlen, "agent %s refused the job: %s", hostport, why);
        rc = DPS_ERR_INVALID;
        goto out;
    }
    if (strncmp(line, "ok ", 3) != 0 ||
        parse_ok(line, addr, addr_len, pid, host, hostlen) != 0) {
        printable(line, why, 60);
        seterr(err, errlen, "agent %s sent a malformed answer: '%s'",
               hostport, why);
        rc = DPS_ERR_PROTO;
        goto out;
    }
    /* An ordinary blocking descriptor for the caller. */
    fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK);
    *fd = s;
    s = -1;
    rc = DPS_OK;
out:
    if (s >= 0) {
        close(s);
    }
    if (res != NULL) {
        freeaddrinfo(res);
    }
    free(hello);
    free(line);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Agent map                                                          */
/* ------------------------------------------------------------------ */

/* Length of the short name (up to the first '.'). */
static size_t short_len(const char *name)
{
    return strcspn(name, ".");
}

/* How well a map HOST applies to hostname: 3 exact, 2 short, 1 "*". */
static int host_match(const char *pat, const char *hostname)
{
    size_t n;

    if (strcmp(pat, "*") == 0) {
        return 1;
    }
    if (strcasecmp(pat, hostname) == 0) {
        return 3;
    }
    n = short_len(pat);
    if (n > 0 && n == short_len(hostname) &&
        strncasecmp(pat, hostname, n) == 0) {
        return 2;
    }
    return 0;
}

typedef struct map_host {
    char     *name;
    unsigned  line;
} map_host_t;

int dps_agent_map_lookup(const char *path, const char *hostname,
                         unsigned vnode_idx, char *hostport, size_t len,
                         char *err, size_t errlen)
{
    char *line = NULL, *best = NULL, *save, *tok, *agents[256];
    char h[DPS_LISTEN_HOSTPORT_MAX], port[8], why[512];
    map_host_t *hosts = NULL;
    size_t cap = 0, nhosts = 0, i;
    unsigned lineno = 0, n;
    int rc = DPS_OK, best_level = 0, level;
    FILE *f;

    if (path == NULL || hostname == NULL || *hostname == '\0') {
        seterr(err, errlen, "agent map lookup: no %s given",
               path == NULL ? "file" : "host name");
        return DPS_ERR_INVALID;
    }
    f = fopen(path, "re");
    if (f == NULL) {
        seterr(err, errlen, "cannot read agent map %s: %s", path,
               strerror(errno));
        return DPS_ERR_IO;
    }
    while (getline(&line, &cap, f) >= 0) {
        lineno++;
        line[strcspn(line, "#\r\n")] = '\0';
        tok = strtok_r(line, " \t", &save);
        if (tok == NULL) {
            continue;
        }
        n = 0;
        while ((agents[n] = strtok_r(NULL, " \t", &save)) != NULL) {
            if (++n == sizeof(agents) / sizeof(agents[0])) {
                seterr(err, errlen, "%s:%u: more than %u agents on a line",
                       path, lineno, n - 1);
                rc = DPS_ERR_INVALID;
                goto out;
            }
        }
        if (n == 0) {
            seterr(err, errlen, "%s:%u: expected HOST ADDR:PORT "
                   "[ADDR:PORT...]", path, lineno);
            rc = DPS_ERR_INVALID;
            goto out;
        }
        for (i = 0; i < n; i++) {
            if (dps_listen_split_hostport(agents[i], 0, h, sizeof(h), port,
                                          sizeof(port), why,
                                          sizeof(why)) != DPS_OK) {
                seterr(err, errlen, "%s:%u: %s", path, lineno, why);
                rc = DPS_ERR_INVALID;
                goto out;
            }
        }
        for (i = 0; i < nhosts; i++) {
            if (strcasecmp(hosts[i].name, tok) == 0) {
                seterr(err, errlen, "%s:%u: host %s already has line %u",
                       path, lineno, tok, hosts[i].line);
                rc = DPS_ERR_INVALID;
                goto out;
            }
        }
        if (nhosts % 16 == 0) {
            map_host_t *nh = realloc(hosts, (nhosts + 16) * sizeof(*nh));

            if (nh == NULL) {
                rc = DPS_ERR_NOMEM;
                seterr(err, errlen, "out of memory");
                goto out;
            }
            hosts = nh;
        }
        hosts[nhosts].name = strdup(tok);
        hosts[nhosts].line = lineno;
        if (hosts[nhosts++].name == NULL) {
            rc = DPS_ERR_NOMEM;
            seterr(err, errlen, "out of memory");
            goto out;
        }
        level = host_match(tok, hostname);
        if (level > best_level) {
            free(best);
            best = strdup(agents[vnode_idx % n]);
            best_level = level;
            if (best == NULL) {
                rc = DPS_ERR_NOMEM;
                seterr(err, errlen, "out of memory");
                goto out;
            }
        }
    }
    if (ferror(f)) {
        seterr(err, errlen, "cannot read agent map %s: %s", path,
               strerror(errno));
        rc = DPS_ERR_IO;
        goto out;
    }
    if (best == NULL) {
        seterr(err, errlen, "agent map %s has no line for host %s", path,
               hostname);
        rc = DPS_ERR_INVALID;
        goto out;
    }
    if (strlen(best) >= len) {
        seterr(err, errlen, "agent map %s: agent address %s too long",
               path, best);
        rc = DPS_ERR_INVALID;
        goto out;
    }
    strcpy(hostport, best);
out:
    for (i = 0; i < nhosts; i++) {
        free(hosts[i].name);
    }
    free(hosts);
    free(best);
    free(line);
    fclose(f);
    return rc;
}
