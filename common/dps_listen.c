/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Listening agents, the parts both sides share: the hello, the client's
 * connect, and the agent map (formats in dps_listen.h; the per-job secret
 * files are in dps_secret.c).
 */
#define _GNU_SOURCE
#include "common/dps_listen.h"
#include "common/dps_munge.h"
#include "common/dps_proto.h"
#include "common/dps_status.h"
#include "common/dps_ucx.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* "ok " pid ' ' host ' ' hex ' ' grant '\n', with room to spare. */
#define REPLY_MAX (64 + 256 + DPS_GRANT_PATH_MAX + 2 * DPS_MAX_ADDR)

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
    const char   *h, *he, *p;
    unsigned long v = 0;
    size_t        i, n;

    if (s == NULL || *s == '\0') {
        dps_seterr(err, errlen, "empty address (expected ADDR:PORT)");
        return DPS_ERR_INVALID;
    }
    if (s[0] == '[') {
        h = s + 1;
        he = strchr(h, ']');
        if (he == NULL || he[1] != ':') {
            dps_seterr(err, errlen, "expected [IPv6]:PORT, not '%s'", s);
            return DPS_ERR_INVALID;
        }
        p = he + 2;
    } else {
        h = s;
        he = strrchr(s, ':');
        if (he == NULL) {
            dps_seterr(err, errlen, "missing :PORT in '%s'", s);
            return DPS_ERR_INVALID;
        }
        if (memchr(h, ':', (size_t)(he - h)) != NULL) {
            dps_seterr(err, errlen,
                       "an IPv6 address goes in brackets, "
                       "[ADDR]:PORT, not '%s'",
                       s);
            return DPS_ERR_INVALID;
        }
        p = he + 1;
    }
    n = (size_t)(he - h);
    if (n == 0) {
        dps_seterr(err, errlen, "missing address in '%s'", s);
        return DPS_ERR_INVALID;
    }
    for (i = 0; p[i] != '\0'; i++) {
        if (!isdigit((unsigned char)p[i]) || i >= 5) {
            break;
        }
        v = v * 10 + (unsigned long)(p[i] - '0');
    }
    if (i == 0 || p[i] != '\0' || v > 65535 || (v == 0 && !allow_zero)) {
        dps_seterr(err, errlen, "bad port '%s' in '%s' (expected %d to 65535)",
                   p, s, allow_zero ? 0 : 1);
        return DPS_ERR_INVALID;
    }
    if (n >= hostlen || i >= portlen) {
        dps_seterr(err, errlen, "address too long: '%s'", s);
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

#define BAD_MAGIC "malformed hello: bad magic (not a dpushim client)"

/*
 * The 8 bytes both hellos begin with, as far as they have come: magic
 * (bad_magic: what to say when it is not this one), protocol version,
 * reserved 0. Every byte is judged as it arrives, so that garbage is
 * refused at once instead of when the hello deadline passes. DPS_OK, or
 * DPS_ERR_PROTO with the reason in err.
 */
static int hello_head(const uint8_t *p, size_t len, uint32_t magic,
                      const char *bad_magic, char *err, size_t errlen)
{
    uint8_t m[4];
    size_t  i;

    put_le32(m, magic);
    for (i = 0; i < len && i < 4; i++) {
        if (p[i] != m[i]) {
            dps_seterr(err, errlen, "%s", bad_magic);
            return DPS_ERR_PROTO;
        }
    }
    if (len >= 6 && get_le16(p + 4) != DPS_PROTO_VERSION) {
        dps_seterr(err, errlen, "protocol version %u, this agent speaks %u",
                   get_le16(p + 4), DPS_PROTO_VERSION);
        return DPS_ERR_PROTO;
    }
    if (len >= 8 && get_le16(p + 6) != 0) {
        dps_seterr(err, errlen, "malformed hello: reserved field is %u, not 0",
                   get_le16(p + 6));
        return DPS_ERR_PROTO;
    }
    return DPS_OK;
}

void *dps_listen_encode_hello(const char   *job,
                              const uint8_t secret[DPS_SECRET_LEN],
                              size_t       *len)
{
    size_t   n;
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
    uint32_t       name_len;
    size_t         i, have;
    char           c[16];

    if (joblen <= DPS_LISTEN_NAME_MAX) {
        dps_seterr(err, errlen, "job name buffer too small");
        return DPS_ERR_INVALID;
    }
    if (hello_head(p, len, DPS_LISTEN_MAGIC, BAD_MAGIC, err, errlen) !=
        DPS_OK) {
        return DPS_ERR_PROTO;
    }
    if (len < 12) {
        return DPS_ERR_AGAIN;
    }
    name_len = get_le32(p + 8);
    if (name_len == 0 || name_len > DPS_LISTEN_NAME_MAX) {
        dps_seterr(err, errlen,
                   "malformed hello: name length %u (expected 1 "
                   "to %d)",
                   name_len, DPS_LISTEN_NAME_MAX);
        return DPS_ERR_PROTO;
    }
    have = len > DPS_LISTEN_HDR_LEN ? len - DPS_LISTEN_HDR_LEN : 0;
    for (i = 0; i < have && i < name_len; i++) {
        if (!name_char_ok(p[DPS_LISTEN_HDR_LEN + i])) {
            byte_str(p[DPS_LISTEN_HDR_LEN + i], c, sizeof(c));
            dps_seterr(err, errlen, "malformed hello: name has %s", c);
            return DPS_ERR_PROTO;
        }
    }
    if (have < name_len) {
        return DPS_ERR_AGAIN;
    }
    if (have > name_len) {
        dps_seterr(err, errlen, "malformed hello: %zu bytes after the name",
                   have - name_len);
        return DPS_ERR_PROTO;
    }
    memcpy(job, p + DPS_LISTEN_HDR_LEN, name_len);
    job[name_len] = '\0';
    memcpy(secret, p + 12, DPS_SECRET_LEN);
    return DPS_OK;
}

void *dps_service_encode_hello(const char *job, const char *cred, size_t *len)
{
    size_t   n, m;
    uint8_t *buf;

    if (!dps_listen_name_ok(job) || cred == NULL) {
        return NULL;
    }
    n = strlen(job);
    m = strlen(cred);
    if (m == 0 || m > DPS_CRED_MAX) {
        return NULL;
    }
    buf = malloc(DPS_SERVICE_HDR_LEN + n + m);
    if (buf == NULL) {
        return NULL;
    }
    put_le32(buf, DPS_SERVICE_MAGIC);
    put_le16(buf + 4, DPS_PROTO_VERSION);
    put_le16(buf + 6, 0);
    put_le32(buf + 8, (uint32_t)n);
    put_le32(buf + 12, (uint32_t)m);
    memcpy(buf + DPS_SERVICE_HDR_LEN, job, n);
    memcpy(buf + DPS_SERVICE_HDR_LEN + n, cred, m);
    *len = DPS_SERVICE_HDR_LEN + n + m;
    return buf;
}

int dps_service_decode_hello(const void *buf, size_t len, char *job,
                             size_t joblen, char *cred, size_t credlen,
                             char *err, size_t errlen)
{
    const uint8_t *p = buf;
    uint8_t        listen_magic[4];
    uint32_t       name_len, cred_len;
    size_t         i, have;
    char           c[16];

    if (joblen <= DPS_LISTEN_NAME_MAX || credlen <= DPS_CRED_MAX) {
        dps_seterr(err, errlen, "job name or credential buffer too small");
        return DPS_ERR_INVALID;
    }
    /* A user's listener's client, at a service: told what to set. */
    put_le32(listen_magic, DPS_LISTEN_MAGIC);
    if (hello_head(p, len, DPS_SERVICE_MAGIC,
                   len >= 4 && memcmp(p, listen_magic, 4) == 0
                       ? "a job with a secret file, but this agent is a "
                         "service: it authenticates jobs by MUNGE "
                         "(DPUSHIM_AUTH=munge)"
                       : BAD_MAGIC,
                   err, errlen) != DPS_OK) {
        return DPS_ERR_PROTO;
    }
    if (len < DPS_SERVICE_HDR_LEN) {
        return DPS_ERR_AGAIN;
    }
    name_len = get_le32(p + 8);
    cred_len = get_le32(p + 12);
    if (name_len == 0 || name_len > DPS_LISTEN_NAME_MAX) {
        dps_seterr(err, errlen,
                   "malformed hello: name length %u (expected 1 to %d)",
                   name_len, DPS_LISTEN_NAME_MAX);
        return DPS_ERR_PROTO;
    }
    if (cred_len == 0) {
        dps_seterr(err, errlen,
                   "no credential: the job sent no MUNGE "
                   "credential");
        return DPS_ERR_PROTO;
    }
    if (cred_len > DPS_CRED_MAX) {
        dps_seterr(err, errlen,
                   "malformed hello: credential length %u (at most %d)",
                   cred_len, DPS_CRED_MAX);
        return DPS_ERR_PROTO;
    }
    have = len - DPS_SERVICE_HDR_LEN;
    for (i = 0; i < have && i < name_len + cred_len; i++) {
        uint8_t b = p[DPS_SERVICE_HDR_LEN + i];

        if (i < name_len ? !name_char_ok(b) : (b < 0x21 || b > 0x7e)) {
            byte_str(b, c, sizeof(c));
            dps_seterr(err, errlen, "malformed hello: %s has %s",
                       i < name_len ? "name" : "credential", c);
            return DPS_ERR_PROTO;
        }
    }
    if (have < (size_t)name_len + cred_len) {
        return DPS_ERR_AGAIN;
    }
    if (have > (size_t)name_len + cred_len) {
        dps_seterr(err, errlen,
                   "malformed hello: %zu bytes after the credential",
                   have - name_len - cred_len);
        return DPS_ERR_PROTO;
    }
    memcpy(job, p + DPS_SERVICE_HDR_LEN, name_len);
    job[name_len] = '\0';
    memcpy(cred, p + DPS_SERVICE_HDR_LEN + name_len, cred_len);
    cred[cred_len] = '\0';
    return DPS_OK;
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

/* Wait for events on fd until deadline: DPS_OK (ready), DPS_ERR_TIMEOUT,
 * or DPS_ERR_IO with errno set. */
static int wait_fd(int fd, short events, double deadline)
{
    struct pollfd pfd = {fd, events, 0};
    int           n;

    for (;;) {
        n = poll(&pfd, 1, ms_left(deadline));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n == 0 && ms_left(deadline) > 0) {
            continue;
        }
        return n < 0 ? DPS_ERR_IO : n > 0 ? DPS_OK : DPS_ERR_TIMEOUT;
    }
}

/* Non-blocking connect to one address. Returns the socket, or -1 with
 * errno set (ETIMEDOUT when the deadline passed). */
static int connect_one(const struct addrinfo *ai, double deadline)
{
    socklen_t sl = sizeof(int);
    int       s, e = 0, r;

    s = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
               ai->ai_protocol);
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
    if (r != DPS_OK) {
        e = (r == DPS_ERR_TIMEOUT) ? ETIMEDOUT : errno;
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

/* Parse "ok <pid> <host> <hex>[ <grant>]" (no newline): DPS_OK,
 * DPS_ERR_PROTO, or DPS_ERR_NOMEM. grant (grantlen bytes, "" if none) may
 * be NULL: then a grant field is ignored. */
static int parse_ok(const char *line, void **addr, size_t *addr_len,
                    uint32_t *pid, char *host, size_t hostlen, char *grant,
                    size_t grantlen)
{
    const char   *p = line + 3, *h, *x, *g;
    unsigned long v;
    char         *end, hex[2 * DPS_MAX_ADDR + 1];
    void         *a;
    long          n;

    if (!isdigit((unsigned char)*p)) {
        return DPS_ERR_PROTO;
    }
    errno = 0;
    v = strtoul(p, &end, 10);
    if (errno || *end != ' ' || v == 0 || v > UINT32_MAX) {
        return DPS_ERR_PROTO;
    }
    h = end + 1;
    x = strchr(h, ' ');
    if (x == NULL || x == h || (size_t)(x - h) >= hostlen) {
        return DPS_ERR_PROTO;
    }
    /* The grant socket, if any: one absolute path, no more fields. */
    g = strchr(x + 1, ' ');
    if (g != NULL && (g[1] != '/' || strchr(g + 1, ' ') != NULL ||
                      strlen(g + 1) >= DPS_GRANT_PATH_MAX)) {
        return DPS_ERR_PROTO;
    }
    n = g != NULL ? g - (x + 1) : (long)strlen(x + 1);
    if (n <= 0 || (size_t)n >= sizeof(hex)) {
        return DPS_ERR_PROTO;
    }
    memcpy(hex, x + 1, (size_t)n);
    hex[n] = '\0';
    a = malloc(DPS_MAX_ADDR);
    if (a == NULL) {
        return DPS_ERR_NOMEM;
    }
    n = dps_hex_decode(hex, a, DPS_MAX_ADDR);
    if (n <= 0) {
        free(a);
        return DPS_ERR_PROTO;
    }
    memcpy(host, h, (size_t)(x - h));
    host[x - h] = '\0';
    if (grant != NULL && grantlen > 0) {
        snprintf(grant, grantlen, "%s", g != NULL ? g + 1 : "");
    }
    *pid = (uint32_t)v;
    *addr = a;
    *addr_len = (size_t)n;
    return DPS_OK;
}

/* A connected, nonblocking socket to hostport (*s), or an error. */
static int connect_any(const char *hostport, const char *h, const char *port,
                       int timeout_ms, double deadline, int *s, char *err,
                       size_t errlen)
{
    struct addrinfo hints, *res = NULL, *ai;
    int             r, e = 0;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_ADDRCONFIG;
    r = getaddrinfo(h, port, &hints, &res);
    if (r != 0) {
        dps_seterr(err, errlen, "cannot resolve agent %s: %s", hostport,
                   r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
        return DPS_ERR_IO;
    }
    *s = -1;
    for (ai = res; ai != NULL && *s < 0; ai = ai->ai_next) {
        *s = connect_one(ai, deadline);
        if (*s < 0) {
            e = errno;
        }
    }
    freeaddrinfo(res);
    if (*s >= 0) {
        return DPS_OK;
    }
    if (e == ETIMEDOUT) {
        dps_seterr(err, errlen,
                   "cannot connect to agent %s: no answer "
                   "within %d ms",
                   hostport, timeout_ms);
        return DPS_ERR_TIMEOUT;
    }
    dps_seterr(err, errlen, "cannot connect to agent %s: %s", hostport,
               strerror(e));
    return DPS_ERR_IO;
}

static int send_hello(int s, const uint8_t *hello, size_t hello_len,
                      const char *hostport, double deadline, char *err,
                      size_t errlen)
{
    size_t off = 0;
    int    r, e;

    while (off < hello_len) {
        ssize_t n = send(s, hello + off, hello_len - off, MSG_NOSIGNAL);

        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            r = wait_fd(s, POLLOUT, deadline);
            if (r == DPS_OK) {
                continue;
            }
            e = (r == DPS_ERR_TIMEOUT) ? ETIMEDOUT : errno;
        } else {
            e = errno;
        }
        if (e == ETIMEDOUT) {
            dps_seterr(err, errlen, "agent %s: timed out sending the hello",
                       hostport);
            return DPS_ERR_TIMEOUT;
        }
        dps_seterr(err, errlen, "agent %s: cannot send the hello: %s",
                   hostport, strerror(e));
        return DPS_ERR_IO;
    }
    return DPS_OK;
}

/* The agent sends one line and then nothing until the job ends: read it
 * into line (REPLY_MAX + 1 bytes), without its newline. */
static int read_answer(int s, char *line, const char *hostport, int timeout_ms,
                       double deadline, char *err, size_t errlen)
{
    size_t got = 0;
    char  *nl = NULL;
    int    r;

    while (nl == NULL) {
        ssize_t n;

        if (got == REPLY_MAX) {
            dps_seterr(err, errlen, "agent %s sent an overlong answer",
                       hostport);
            return DPS_ERR_PROTO;
        }
        n = recv(s, line + got, REPLY_MAX - got, 0);
        if (n > 0) {
            line[got + (size_t)n] = '\0';
            nl = memchr(line + got, '\n', (size_t)n);
            got += (size_t)n;
            continue;
        }
        if (n == 0) {
            dps_seterr(err, errlen,
                       "agent %s closed the connection "
                       "without answering",
                       hostport);
            return DPS_ERR_DEAD;
        }
        if (errno == EAGAIN || errno == EINTR) {
            r = wait_fd(s, POLLIN, deadline);
            if (r == DPS_OK) {
                continue;
            }
            if (r == DPS_ERR_TIMEOUT) {
                dps_seterr(err, errlen,
                           "agent %s did not answer within "
                           "%d ms",
                           hostport, timeout_ms);
                return DPS_ERR_TIMEOUT;
            }
        }
        dps_seterr(err, errlen, "agent %s: cannot read the answer: %s",
                   hostport, strerror(errno));
        return DPS_ERR_IO;
    }
    *nl = '\0';
    return DPS_OK;
}

/* Judge the agent's answer line: DPS_OK with the "ok" line's fields, or
 * the error that says why. */
static int judge_answer(const char *line, const char *hostport, void **addr,
                        size_t *addr_len, uint32_t *pid, char *host,
                        size_t hostlen, char *grant, size_t grantlen,
                        char *err, size_t errlen)
{
    char why[256];

    if (strncmp(line, "refused ", 8) == 0) {
        printable(line + 8, why, sizeof(why));
        dps_seterr(err, errlen, "agent %s refused the job: %s", hostport, why);
        return DPS_ERR_INVALID;
    }
    if (strncmp(line, "ok ", 3) != 0 ||
        parse_ok(line, addr, addr_len, pid, host, hostlen, grant, grantlen) !=
            DPS_OK) {
        printable(line, why, 60);
        dps_seterr(err, errlen, "agent %s sent a malformed answer: '%s'",
                   hostport, why);
        return DPS_ERR_PROTO;
    }
    return DPS_OK;
}

int dps_listen_connect(const char *hostport, const char *job,
                       const uint8_t secret[DPS_SECRET_LEN], int timeout_ms,
                       int *fd, void **addr, size_t *addr_len, uint32_t *pid,
                       char *host, size_t hostlen, char *err, size_t errlen)
{
    char     h[DPS_LISTEN_HOSTPORT_MAX], port[8], *line = NULL, why[256];
    double   deadline = dps_now() + timeout_ms / 1000.0;
    size_t   hello_len = 0;
    uint8_t *hello = NULL;
    int      s = -1, rc;

    rc = dps_listen_split_hostport(hostport, 0, h, sizeof(h), port,
                                   sizeof(port), why, sizeof(why));
    if (rc != DPS_OK) {
        dps_seterr(err, errlen, "bad agent address: %s", why);
        return rc;
    }
    hello = dps_listen_encode_hello(job, secret, &hello_len);
    line = malloc(REPLY_MAX + 1);
    if (hello == NULL || line == NULL) {
        dps_seterr(err, errlen,
                   dps_listen_name_ok(job) ? "out of memory"
                                           : "invalid job name");
        rc = dps_listen_name_ok(job) ? DPS_ERR_NOMEM : DPS_ERR_INVALID;
    } else if ((rc = connect_any(hostport, h, port, timeout_ms, deadline, &s,
                                 err, errlen)) != DPS_OK ||
               (rc = send_hello(s, hello, hello_len, hostport, deadline, err,
                                errlen)) != DPS_OK ||
               (rc = read_answer(s, line, hostport, timeout_ms, deadline, err,
                                 errlen)) != DPS_OK) {
        /* err says why */
    } else if (strncmp(line, "challenge ", 10) == 0) {
        dps_seterr(err, errlen,
                   "agent %s is a service that authenticates jobs by MUNGE: "
                   "set DPUSHIM_AUTH=munge (this job used a secret file)",
                   hostport);
        rc = DPS_ERR_INVALID;
    } else if ((rc = judge_answer(line, hostport, addr, addr_len, pid, host,
                                  hostlen, NULL, 0, err, errlen)) == DPS_OK) {
        /* An ordinary blocking descriptor for the caller. */
        fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK);
        *fd = s;
        s = -1;
    }
    if (s >= 0) {
        close(s);
    }
    free(hello);
    free(line);
    return rc;
}

/* The service's "challenge <nonce> <uid>" line: nonce (DPS_NONCE_HEX + 1
 * bytes) and uid. DPS_OK or DPS_ERR_PROTO. */
static int parse_challenge(const char *line, char *nonce, uid_t *uid)
{
    unsigned long v;
    char         *end;
    int           i;

    if (strncmp(line, "challenge ", 10) != 0) {
        return DPS_ERR_PROTO;
    }
    line += 10;
    for (i = 0; i < DPS_NONCE_HEX; i++) {
        if (!isxdigit((unsigned char)line[i]) ||
            isupper((unsigned char)line[i])) {
            return DPS_ERR_PROTO;
        }
        nonce[i] = line[i];
    }
    nonce[i] = '\0';
    if (line[i] != ' ' || !isdigit((unsigned char)line[i + 1])) {
        return DPS_ERR_PROTO;
    }
    errno = 0;
    v = strtoul(line + i + 1, &end, 10);
    if (errno || *end != '\0' || v > UINT32_MAX - 1) {
        return DPS_ERR_PROTO;
    }
    *uid = (uid_t)v;
    return DPS_OK;
}

int dps_service_connect(const char *hostport, const char *job,
                        const char *munge_socket, int timeout_ms, int *fd,
                        void **addr, size_t *addr_len, uint32_t *pid,
                        char *host, size_t hostlen, char *grant,
                        size_t grantlen, char *err, size_t errlen)
{
    char     h[DPS_LISTEN_HOSTPORT_MAX], port[8], *line = NULL, why[512];
    char     nonce[DPS_NONCE_HEX + 1], payload[160], *cred = NULL;
    double   deadline = dps_now() + timeout_ms / 1000.0;
    size_t   hello_len = 0, plen;
    uint8_t *hello = NULL;
    uid_t    svc_uid = 0;
    int      s = -1, rc;

    rc = dps_listen_split_hostport(hostport, 0, h, sizeof(h), port,
                                   sizeof(port), why, sizeof(why));
    if (rc != DPS_OK) {
        dps_seterr(err, errlen, "bad agent address: %s", why);
        return rc;
    }
    if (!dps_listen_name_ok(job)) {
        dps_seterr(err, errlen, "invalid job name");
        return DPS_ERR_INVALID;
    }
    line = malloc(REPLY_MAX + 1);
    if (line == NULL) {
        dps_seterr(err, errlen, "out of memory");
        return DPS_ERR_NOMEM;
    }
    rc = connect_any(hostport, h, port, timeout_ms, deadline, &s, err, errlen);
    if (rc == DPS_OK) {
        rc = read_answer(s, line, hostport, timeout_ms, deadline, err, errlen);
    }
    if (rc != DPS_OK) {
        goto out;
    }
    if (strncmp(line, "refused ", 8) == 0) {
        rc = judge_answer(line, hostport, addr, addr_len, pid, host, hostlen,
                          grant, grantlen, err, errlen);
        goto out;
    }
    if (parse_challenge(line, nonce, &svc_uid) != DPS_OK) {
        printable(line, why, 60);
        dps_seterr(err, errlen,
                   "agent %s is not a dpushim service (it sent '%s'; a "
                   "per-user dpu_agent --listen takes DPUSHIM_AUTH=secret)",
                   hostport, why);
        rc = DPS_ERR_PROTO;
        goto out;
    }
    plen = dps_munge_payload(nonce, job, payload, sizeof(payload));
    rc = dps_munge_encode(munge_socket, payload, plen, svc_uid, &cred, why,
                          sizeof(why));
    if (rc != DPS_OK) {
        dps_seterr(err, errlen, "agent %s: %s", hostport, why);
        goto out;
    }
    hello = dps_service_encode_hello(job, cred, &hello_len);
    if (hello == NULL) {
        dps_seterr(err, errlen, "MUNGE credential of %zu bytes: at most %d",
                   strlen(cred), DPS_CRED_MAX);
        rc = DPS_ERR_INVALID;
        goto out;
    }
    rc = send_hello(s, hello, hello_len, hostport, deadline, err, errlen);
    if (rc == DPS_OK) {
        rc = read_answer(s, line, hostport, timeout_ms, deadline, err, errlen);
    }
    if (rc == DPS_OK) {
        rc = judge_answer(line, hostport, addr, addr_len, pid, host, hostlen,
                          grant, grantlen, err, errlen);
    }
    if (rc == DPS_OK) {
        fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK);
        *fd = s;
        s = -1;
    }
out:
    if (s >= 0) {
        close(s);
    }
    free(cred);
    free(hello);
    free(line);
    return rc;
}
