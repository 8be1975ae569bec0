/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of the wire protocol (dps_proto.c, dps_encode.c) and the hex
 * helpers. */
#include "common/dps_proto.h"
#include "common/dps_status.h"
#include "common/dps_ucx.h"

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#define HDR     sizeof(dps_msg_hdr_t)
#define POSTF   sizeof(dps_msg_post_t)
#define STEP    sizeof(dps_step_t)
#define JOBF    sizeof(dps_msg_job_t)
#define ERR_LEN 256

/* ------------------------------------------------------------------ */
/* Helpers                                                            */
/* ------------------------------------------------------------------ */

/* Byte i of a deterministic test pattern; seed makes streams differ. */
static uint8_t pat(unsigned seed, size_t i)
{
    return (uint8_t)(seed * 131u + i * 7u + (i >> 8) * 3u + 1u);
}

static void put16(void *buf, size_t off, uint16_t v)
{
    memcpy((char *)buf + off, &v, sizeof(v));
}

static void put32(void *buf, size_t off, uint32_t v)
{
    memcpy((char *)buf + off, &v, sizeof(v));
}

static void put64(void *buf, size_t off, uint64_t v)
{
    memcpy((char *)buf + off, &v, sizeof(v));
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    ck_assert_ptr_nonnull(p);
    return p;
}

/* A malloc'ed copy of exactly n bytes of buf: reads past n overflow. */
static void *dup_bytes(const void *buf, size_t n)
{
    void *p = xmalloc(n);

    if (n) {
        memcpy(p, buf, n);
    }
    return p;
}

/* Decode must fail with DPS_ERR_PROTO and say why. */
static void reject_at(const void *buf, size_t len, const char *what, int line)
{
    char      err[ERR_LEN];
    dps_msg_t msg;
    void     *copy = dup_bytes(buf, len);
    int       rc;

    memset(err, 0, sizeof(err));
    rc = dps_msg_decode(copy, len, &msg, err, sizeof(err));
    ck_assert_msg(rc == DPS_ERR_PROTO,
                  "line %d (%s): decode of %zu bytes gave %d, "
                  "expected DPS_ERR_PROTO",
                  line, what, len, rc);
    ck_assert_msg(err[0] != '\0', "line %d (%s): empty error text", line,
                  what);
    /* No error buffer at all must work too. */
    rc = dps_msg_decode(copy, len, &msg, NULL, 0);
    ck_assert_msg(rc == DPS_ERR_PROTO, "line %d (%s): without err: %d", line,
                  what, rc);
    free(copy);
}
#define REJECT(_b, _l, _w) reject_at((_b), (_l), (_w), __LINE__)

static void decode_ok_at(const void *buf, size_t len, dps_msg_t *msg, int line)
{
    char err[ERR_LEN] = "";
    int  rc = dps_msg_decode(buf, len, msg, err, sizeof(err));

    ck_assert_msg(rc == DPS_OK, "line %d: decode gave %d: %s", line, rc, err);
}
#define DECODE_OK(_b, _l, _m) decode_ok_at((_b), (_l), (_m), __LINE__)

/* The header an encoder produced. */
static void check_hdr(const void *buf, size_t len, unsigned type)
{
    dps_msg_hdr_t h;

    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_ge(len, HDR);
    memcpy(&h, buf, HDR);
    ck_assert_uint_eq(h.magic, DPS_PROTO_MAGIC);
    ck_assert_uint_eq(h.version, DPS_PROTO_VERSION);
    ck_assert_uint_eq(h.type, type);
    ck_assert_uint_eq(h.length, len);
    ck_assert_uint_eq(h.reserved, 0);
}

/* A message with a correct header around any body. */
static void *raw_msg(unsigned type, const void *body, size_t blen, size_t *len)
{
    dps_msg_hdr_t h = {DPS_PROTO_MAGIC, DPS_PROTO_VERSION, (uint16_t)type,
                       (uint32_t)(HDR + blen), 0};
    char         *m = xmalloc(HDR + blen);

    memcpy(m, &h, HDR);
    if (blen) {
        memcpy(m + HDR, body, blen);
    }
    *len = HDR + blen;
    return m;
}

/* Copy of msg with its last byte dropped or one zero byte appended, and
 * the header length patched to match. */
static void *resized(const void *msg, size_t len, int delta, size_t *nlen)
{
    size_t n = (size_t)((long)len + delta);
    char  *m = xmalloc(n);

    memset(m, 0, n);
    memcpy(m, msg, n < len ? n : len);
    put32(m, offsetof(dps_msg_hdr_t, length), (uint32_t)n);
    *nlen = n;
    return m;
}

/* ------------------------------------------------------------------ */
/* Fixed-size messages                                                */
/* ------------------------------------------------------------------ */

enum {
    FX_HELLO,
    FX_READY,
    FX_COMPLETE,
    FX_COMM_FREE,
    FX_SEND_DONE,
    FX_ROUND,
    FX_SHUTDOWN,
    FX_PING,
    FX_PONG,
    FX_SHM,
    FX_INST_FAIL,
    FX_FETCH,
    FX_CREDIT,
    FX_COUNT
};

static const unsigned fx_type[FX_COUNT] = {
    DPS_MSG_HELLO,     DPS_MSG_READY, DPS_MSG_COMPLETE,  DPS_MSG_COMM_FREE,
    DPS_MSG_SEND_DONE, DPS_MSG_ROUND, DPS_MSG_SHUTDOWN,  DPS_MSG_PING,
    DPS_MSG_PONG,      DPS_MSG_SHM,   DPS_MSG_INST_FAIL, DPS_MSG_FETCH,
    DPS_MSG_CREDIT};
static const size_t fx_body[FX_COUNT] = {sizeof(dps_msg_hello_t),
                                         sizeof(dps_msg_ready_t),
                                         sizeof(dps_msg_complete_t),
                                         sizeof(dps_msg_comm_free_t),
                                         sizeof(dps_msg_send_done_t),
                                         sizeof(dps_msg_round_t),
                                         0,
                                         sizeof(dps_msg_hello_t),
                                         0,
                                         sizeof(dps_msg_shm_t),
                                         sizeof(dps_msg_inst_fail_t),
                                         sizeof(dps_msg_fetch_t),
                                         sizeof(dps_msg_credit_t)};

/* A valid encoded message of a fixed-size type. */
static void *make_fixed(int which, size_t *len)
{
    void *m = NULL;

    switch (which) {
    case FX_HELLO: {
        dps_msg_hello_t h = {3, 4242, 0x7ffd12345678ull,
                             0x1122334455667788ull};

        m = dps_msg_encode_hello(&h, len);
        break;
    }
    case FX_READY:
        m = dps_msg_encode_ready(DPS_OK, DPS_FMT_X87,
                                 DPS_READY_SEEN | DPS_READY_CMA, len);
        break;
    case FX_COMPLETE: m = dps_msg_encode_complete(99, DPS_ERR_UCX, len); break;
    case FX_COMM_FREE:
        m = dps_msg_encode_comm_free(0x1122334455667788ull, 5, len);
        break;
    case FX_SEND_DONE:
        m = dps_msg_encode_send_done(7, 8, 9, 10, 11, len);
        break;
    case FX_ROUND: m = dps_msg_encode_round(7, 8, 9, 3, len); break;
    case FX_FETCH: {
        dps_msg_fetch_t f = {7, 8, 9, 10, 11, 1u << 20, 4096, 77};

        m = dps_msg_encode_fetch(&f, len);
        break;
    }
    case FX_SHUTDOWN: m = dps_msg_encode_shutdown(len); break;
    case FX_PING: {
        dps_msg_hello_t h = {5, 777, 0x1000, 0xabc};

        m = dps_msg_encode_ping(&h, len);
        break;
    }
    case FX_PONG: m = dps_msg_encode_pong(len); break;
    case FX_SHM: {
        dps_msg_hello_t h = {6, 888, 0x2000, 0xdef};

        m = dps_msg_encode_shm(&h, 17, len);
        break;
    }
    case FX_INST_FAIL:
        m = dps_msg_encode_inst_fail(0x55, 9, DPS_ERR_MISMATCH, len);
        break;
    case FX_CREDIT: m = dps_msg_encode_credit(5, 1u << 20, len); break;
    }
    ck_assert_ptr_nonnull(m);
    check_hdr(m, *len, fx_type[which]);
    ck_assert_uint_eq(*len, HDR + fx_body[which]);
    return m;
}

START_TEST(rt_inst_fail)
{
    static const int32_t st[] = {DPS_ERR_MISMATCH, DPS_ERR_ARG, DPS_ERR_BUFFER,
                                 INT32_MIN};
    dps_msg_t            msg;
    size_t               len, i;

    for (i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
        char *m = dps_msg_encode_inst_fail(0x1122334455667788ull + i,
                                           (uint32_t)i * 7, st[i], &len);

        ck_assert_ptr_nonnull(m);
        ck_assert_int_eq(dps_msg_decode(m, len, &msg, NULL, 0), DPS_OK);
        ck_assert_int_eq(msg.type, DPS_MSG_INST_FAIL);
        ck_assert_uint_eq(msg.u.inst_fail.comm_id, 0x1122334455667788ull + i);
        ck_assert_uint_eq(msg.u.inst_fail.seq, i * 7);
        ck_assert_int_eq(msg.u.inst_fail.status, st[i]);
        free(m);
    }
    /* A "failure" with success status is refused. */
    {
        char *m = dps_msg_encode_inst_fail(1, 2, DPS_OK, &len);

        ck_assert_int_eq(dps_msg_decode(m, len, &msg, NULL, 0), DPS_ERR_PROTO);
        free(m);
    }
}
END_TEST

START_TEST(rt_shm)
{
    static const int32_t fds[] = {0, 3, 17, INT32_MAX};
    dps_msg_t            msg;
    size_t               len, i;

    for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
        dps_msg_hello_t who = {40 + (uint32_t)i, 9000,
                               i ? 0x7f0000001000ull + i : 0,
                               i ? UINT64_MAX - i : 0};
        char           *m = dps_msg_encode_shm(&who, fds[i], &len);

        ck_assert_ptr_nonnull(m);
        ck_assert_uint_eq(len, HDR + 32);
        ck_assert_int_eq(dps_msg_decode(m, len, &msg, NULL, 0), DPS_OK);
        ck_assert_int_eq(msg.type, DPS_MSG_SHM);
        ck_assert_uint_eq(msg.u.shm.world_rank, 40 + i);
        ck_assert_uint_eq(msg.u.shm.pid, 9000);
        ck_assert_int_eq(msg.u.shm.fd, fds[i]);
        ck_assert_uint_eq(msg.u.shm.token_addr, who.token_addr);
        ck_assert_uint_eq(msg.u.shm.token, who.token);
        free(m);
    }
    /* A negative descriptor, a token without its address or an address
     * without a token, and a non-zero pad are refused, by the encoder
     * and by the decoder. */
    {
        dps_msg_hello_t who = {1, 2, 0x1000, 0x55};
        dps_msg_shm_t   raw = {1, 2, -1, 0, 0x1000, 0x55};
        char            err[128] = "";
        char           *m;

        ck_assert_ptr_null(dps_msg_encode_shm(&who, -1, &len));
        m = raw_msg(DPS_MSG_SHM, &raw, sizeof(raw), &len);
        ck_assert_int_eq(dps_msg_decode(m, len, &msg, err, sizeof(err)),
                         DPS_ERR_PROTO);
        ck_assert_str_ne(err, "");
        free(m);
        who.token = 0;
        ck_assert_ptr_null(dps_msg_encode_shm(&who, 3, &len));
        raw.fd = 3;
        raw.token = 0;
        m = raw_msg(DPS_MSG_SHM, &raw, sizeof(raw), &len);
        REJECT(m, len, "shm: token address without a token");
        free(m);
        raw.token = 0x55;
        raw.token_addr = 0;
        m = raw_msg(DPS_MSG_SHM, &raw, sizeof(raw), &len);
        REJECT(m, len, "shm: token without its address");
        free(m);
        raw.token_addr = 0x1000;
        raw.pad = 1;
        m = raw_msg(DPS_MSG_SHM, &raw, sizeof(raw), &len);
        REJECT(m, len, "shm: pad not 0");
        free(m);
        raw.pad = 0;
        m = raw_msg(DPS_MSG_SHM, &raw, sizeof(raw), &len);
        DECODE_OK(m, len, &msg);
        free(m);
    }
}
END_TEST

/* HELLO and PING: rank, pid and CMA token (address and value) go
 * through, at their fixed offsets. */
START_TEST(rt_hello)
{
    static const dps_msg_hello_t v[] = {
        {0, 0, 0, 0}, /* no token offered */
        {1, 2, 0x1000, 1},
        {12345, 67890, 0x7ffd5e8a1230ull, 0x8000000000000000ull},
        {DPS_MAX_RANKS - 1, UINT32_MAX, UINT64_MAX, UINT64_MAX},
        {7, 0x7fffffff, 0xffff800000000008ull, 0x0123456789abcdefull}};
    static const unsigned types[] = {DPS_MSG_HELLO, DPS_MSG_PING};
    size_t                i, t, len;

    for (t = 0; t < 2; t++) {
        for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
            dps_msg_t msg;
            char     *m = types[t] == DPS_MSG_HELLO
                              ? dps_msg_encode_hello(&v[i], &len)
                              : dps_msg_encode_ping(&v[i], &len);
            uint64_t  a, k;
            uint32_t  r, p;

            check_hdr(m, len, types[t]);
            ck_assert_uint_eq(len, HDR + 24);
            /* Little-endian, fixed offsets: rank 0, pid 4, address 8,
             * token 16 (what an x86-64 rank and an aarch64 agent both
             * read). */
            memcpy(&r, m + HDR, 4);
            memcpy(&p, m + HDR + 4, 4);
            memcpy(&a, m + HDR + 8, 8);
            memcpy(&k, m + HDR + 16, 8);
            ck_assert_uint_eq(r, v[i].world_rank);
            ck_assert_uint_eq(p, v[i].pid);
            ck_assert_uint_eq(a, v[i].token_addr);
            ck_assert_uint_eq(k, v[i].token);
            DECODE_OK(m, len, &msg);
            ck_assert_int_eq(msg.type, types[t]);
            ck_assert_uint_eq(msg.u.hello.world_rank, v[i].world_rank);
            ck_assert_uint_eq(msg.u.hello.pid, v[i].pid);
            ck_assert_uint_eq(msg.u.hello.token_addr, v[i].token_addr);
            ck_assert_uint_eq(msg.u.hello.token, v[i].token);
            free(m);
        }
    }
}
END_TEST

/* A short or garbled HELLO (or PING) is refused: the encoder will not
 * make one, the decoder says why. */
START_TEST(bad_hello)
{
    static const dps_msg_hello_t bad[] = {
        {1, 2, 0x1000, 0}, /* an address, no token */
        {1, 2, 0, 0x1234}, /* a token, no address */
        {DPS_MAX_RANKS, 2, 0x1000, 0x1234},
        {UINT32_MAX, 2, 0, 0}};
    static const unsigned types[] = {DPS_MSG_HELLO, DPS_MSG_PING};
    dps_msg_hello_t       good = {4, 5, 0x1000, 0x1234};
    char                  err[ERR_LEN];
    dps_msg_t             msg;
    size_t                i, t, len, n;
    char                 *m;

    for (t = 0; t < 2; t++) {
        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            ck_assert_ptr_null(types[t] == DPS_MSG_HELLO
                                   ? dps_msg_encode_hello(&bad[i], &len)
                                   : dps_msg_encode_ping(&bad[i], &len));
            m = raw_msg(types[t], &bad[i], sizeof(bad[i]), &len);
            REJECT(m, len, "garbled hello");
            free(m);
        }
        /* Every shorter body, the 8 bytes of protocol 7's among them,
         * and a longer one. */
        for (n = 0; n < sizeof(good); n++) {
            m = raw_msg(types[t], &good, n, &len);
            REJECT(m, len, "short hello");
            free(m);
        }
        {
            uint8_t body[sizeof(good) + 8] = {0};

            memcpy(body, &good, sizeof(good));
            m = raw_msg(types[t], body, sizeof(body), &len);
            REJECT(m, len, "long hello");
            free(m);
        }
    }
    ck_assert_ptr_null(dps_msg_encode_hello(NULL, &len));
    /* A rank of the previous protocol gets the clear version error. */
    m = dps_msg_encode_hello(&good, &len);
    put16(m, offsetof(dps_msg_hdr_t, version), DPS_PROTO_VERSION - 1);
    ck_assert_int_eq(dps_msg_decode(m, len, &msg, err, sizeof(err)),
                     DPS_ERR_PROTO);
    {
        char want[64];

        snprintf(want, sizeof(want), "protocol version %d, expected %d",
                 DPS_PROTO_VERSION - 1, DPS_PROTO_VERSION);
        ck_assert_str_eq(err, want);
    }
    free(m);
}
END_TEST

START_TEST(rt_ready)
{
    static const int32_t v[] = {DPS_OK,         DPS_ERR_INVALID, DPS_ERR_UCX,
                                DPS_ERR_UNSUPP, INT32_MIN,       INT32_MAX};
    size_t               i, len;

    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        dps_msg_ready_t want = {v[i], (uint32_t)i * 0x01010101u,
                                (uint32_t)i & 7u, 0};
        dps_msg_t       msg;
        char *m = dps_msg_encode_ready(v[i], want.formats, want.cma, &len);

        check_hdr(m, len, DPS_MSG_READY);
        ck_assert_uint_eq(len, HDR + sizeof(want));
        ck_assert_mem_eq(m + HDR, &want, sizeof(want));
        DECODE_OK(m, len, &msg);
        ck_assert_int_eq(msg.type, DPS_MSG_READY);
        ck_assert_int_eq(msg.u.ready.status, v[i]);
        ck_assert_uint_eq(msg.u.ready.formats, want.formats);
        ck_assert_uint_eq(msg.u.ready.cma, want.cma);
        free(m);
    }
    /* A non-zero pad is refused. */
    {
        dps_msg_ready_t raw = {DPS_OK, 0, DPS_READY_SEEN, 1};
        char           *m = raw_msg(DPS_MSG_READY, &raw, sizeof(raw), &len);

        REJECT(m, len, "ready: pad not 0");
        free(m);
    }
}
END_TEST

START_TEST(rt_complete)
{
    static const uint64_t tok[] = {0, 1, 0x8000000000000000ull, UINT64_MAX,
                                   0x0123456789abcdefull};
    static const int32_t  st[] = {DPS_OK, DPS_ERR_PROTO, DPS_ERR_DEAD,
                                  INT32_MIN, INT32_MAX};
    size_t                i, len;

    for (i = 0; i < sizeof(tok) / sizeof(tok[0]); i++) {
        dps_msg_complete_t want = {tok[i], st[i], 0};
        dps_msg_t          msg;
        char              *m = dps_msg_encode_complete(tok[i], st[i], &len);

        check_hdr(m, len, DPS_MSG_COMPLETE);
        ck_assert_uint_eq(len, HDR + sizeof(want));
        ck_assert_mem_eq(m + HDR, &want, sizeof(want));
        DECODE_OK(m, len, &msg);
        ck_assert_int_eq(msg.type, DPS_MSG_COMPLETE);
        ck_assert_uint_eq(msg.u.complete.op_token, tok[i]);
        ck_assert_int_eq(msg.u.complete.status, st[i]);
        ck_assert_uint_eq(msg.u.complete.pad, 0);
        free(m);
    }
}
END_TEST

START_TEST(rt_comm_free)
{
    static const uint64_t id[] = {0, 42, UINT64_MAX, 0xfedcba9876543210ull};
    static const uint32_t wr[] = {0, 1, UINT32_MAX, 1048575};
    size_t                i, len;

    for (i = 0; i < sizeof(id) / sizeof(id[0]); i++) {
        dps_msg_comm_free_t want = {id[i], wr[i], 0};
        dps_msg_t           msg;
        char               *m = dps_msg_encode_comm_free(id[i], wr[i], &len);

        check_hdr(m, len, DPS_MSG_COMM_FREE);
        ck_assert_uint_eq(len, HDR + sizeof(want));
        ck_assert_mem_eq(m + HDR, &want, sizeof(want));
        DECODE_OK(m, len, &msg);
        ck_assert_int_eq(msg.type, DPS_MSG_COMM_FREE);
        ck_assert_uint_eq(msg.u.comm_free.comm_id, id[i]);
        ck_assert_uint_eq(msg.u.comm_free.world_rank, wr[i]);
        ck_assert_uint_eq(msg.u.comm_free.pad, 0);
        free(m);
    }
}
END_TEST

START_TEST(rt_send_done)
{
    static const uint64_t id[] = {0, 7, UINT64_MAX, 0x0102030405060708ull};
    static const uint32_t seq[] = {0, 1, UINT32_MAX, 0xdeadbeef};
    static const uint32_t src[] = {0, 3, DPS_MAX_RANKS - 1, 12345};
    static const uint32_t dst[] = {0, 4, 1, DPS_MAX_RANKS - 1};
    static const uint32_t k[] = {0, 1, UINT32_MAX, 0x7fffffff};
    size_t                i, len;

    for (i = 0; i < sizeof(id) / sizeof(id[0]); i++) {
        dps_msg_send_done_t want = {id[i], seq[i], src[i], dst[i], k[i]};
        dps_msg_t           msg;
        char *m = dps_msg_encode_send_done(id[i], seq[i], src[i], dst[i], k[i],
                                           &len);

        check_hdr(m, len, DPS_MSG_SEND_DONE);
        ck_assert_uint_eq(len, HDR + sizeof(want));
        ck_assert_mem_eq(m + HDR, &want, sizeof(want));
        DECODE_OK(m, len, &msg);
        ck_assert_int_eq(msg.type, DPS_MSG_SEND_DONE);
        ck_assert_uint_eq(msg.u.send_done.comm_id, id[i]);
        ck_assert_uint_eq(msg.u.send_done.seq, seq[i]);
        ck_assert_uint_eq(msg.u.send_done.src, src[i]);
        ck_assert_uint_eq(msg.u.send_done.dst, dst[i]);
        ck_assert_uint_eq(msg.u.send_done.k, k[i]);
        free(m);
    }
}
END_TEST

/* SEND_DONE names communicator ranks: none at or above DPS_MAX_RANKS. */
START_TEST(bad_send_done)
{
    static const uint32_t bad[] = {DPS_MAX_RANKS, DPS_MAX_RANKS + 1,
                                   UINT32_MAX};
    size_t                i, len;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *m = dps_msg_encode_send_done(1, 2, bad[i], 0, 0, &len);

        ck_assert_ptr_nonnull(m);
        REJECT(m, len, "send_done src out of range");
        free(m);
        m = dps_msg_encode_send_done(1, 2, 0, bad[i], 0, &len);
        ck_assert_ptr_nonnull(m);
        REJECT(m, len, "send_done dst out of range");
        free(m);
    }
}
END_TEST

START_TEST(rt_round)
{
    static const uint64_t id[] = {0, 7, UINT64_MAX, 0x0102030405060708ull};
    static const uint32_t seq[] = {0, 1, UINT32_MAX, 0xdeadbeef};
    static const uint32_t rank[] = {0, 3, DPS_MAX_RANKS - 1, 1048575};
    static const uint32_t round[] = {0, 1, UINT32_MAX, 65535};
    size_t                i, len;

    for (i = 0; i < sizeof(id) / sizeof(id[0]); i++) {
        dps_msg_round_t want = {id[i], seq[i], rank[i], round[i], 0};
        dps_msg_t       msg;
        char *m = dps_msg_encode_round(id[i], seq[i], rank[i], round[i], &len);

        check_hdr(m, len, DPS_MSG_ROUND);
        ck_assert_uint_eq(len, HDR + sizeof(want));
        ck_assert_mem_eq(m + HDR, &want, sizeof(want));
        DECODE_OK(m, len, &msg);
        ck_assert_int_eq(msg.type, DPS_MSG_ROUND);
        ck_assert_uint_eq(msg.u.round.comm_id, id[i]);
        ck_assert_uint_eq(msg.u.round.seq, seq[i]);
        ck_assert_uint_eq(msg.u.round.rank, rank[i]);
        ck_assert_uint_eq(msg.u.round.round, round[i]);
        ck_assert_uint_eq(msg.u.round.pad, 0);
        free(m);
    }
}
END_TEST

/* FETCH: every field through, byte for byte as laid out. */
START_TEST(rt_fetch)
{
    static const uint64_t big[] = {0, 1, UINT64_MAX, 0x0102030405060708ull};
    size_t                i, len;

    for (i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
        dps_msg_fetch_t want = {big[i],
                                (uint32_t)i,
                                DPS_MAX_RANKS - 1,
                                (uint32_t)i * 3,
                                UINT32_MAX - (uint32_t)i,
                                big[3 - i],
                                big[i] ^ 5,
                                big[3 - i] + 1};
        dps_msg_t       msg;
        char           *m = dps_msg_encode_fetch(&want, &len);

        check_hdr(m, len, DPS_MSG_FETCH);
        ck_assert_uint_eq(len, HDR + 48);
        ck_assert_mem_eq(m + HDR, &want, sizeof(want));
        DECODE_OK(m, len, &msg);
        ck_assert_int_eq(msg.type, DPS_MSG_FETCH);
        ck_assert_mem_eq(&msg.u.fetch, &want, sizeof(want));
        free(m);
    }
}
END_TEST

/* FETCH names communicator ranks: none at or above DPS_MAX_RANKS. */
START_TEST(bad_fetch)
{
    static const uint32_t bad[] = {DPS_MAX_RANKS, UINT32_MAX};
    size_t                i, len;

    for (i = 0; i < 4; i++) {
        dps_msg_fetch_t f = {
            1, 2, i & 1 ? 0 : bad[i / 2], i & 1 ? bad[i / 2] : 0, 0, 0, 8, 1};
        char *m = dps_msg_encode_fetch(&f, &len);

        ck_assert_ptr_nonnull(m);
        REJECT(m, len, "fetch rank out of range");
        free(m);
    }
}
END_TEST

/* ROUND names a communicator rank: none at or above DPS_MAX_RANKS. */
START_TEST(bad_round)
{
    static const uint32_t bad[] = {DPS_MAX_RANKS, DPS_MAX_RANKS + 1,
                                   UINT32_MAX};
    size_t                i, len;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *m = dps_msg_encode_round(1, 2, bad[i], 0, &len);

        ck_assert_ptr_nonnull(m);
        REJECT(m, len, "round rank out of range");
        free(m);
    }
}
END_TEST

START_TEST(rt_shutdown)
{
    dps_msg_t msg;
    size_t    len = 0;
    char     *m = dps_msg_encode_shutdown(&len);

    check_hdr(m, len, DPS_MSG_SHUTDOWN);
    ck_assert_uint_eq(len, HDR);
    DECODE_OK(m, len, &msg);
    ck_assert_int_eq(msg.type, DPS_MSG_SHUTDOWN);
    free(m);
}
END_TEST

/* The header is little-endian on the wire: "DPSH", 1, type, length. */
START_TEST(rt_ping_pong)
{
    dps_msg_hello_t h = {12, 3456, 0x4000, 99};
    dps_msg_t       msg;
    size_t          len = 0;
    char           *m = dps_msg_encode_ping(&h, &len);

    check_hdr(m, len, DPS_MSG_PING);
    ck_assert_uint_eq(len, HDR + sizeof(dps_msg_hello_t));
    DECODE_OK(m, len, &msg);
    ck_assert_int_eq(msg.type, DPS_MSG_PING);
    ck_assert_uint_eq(msg.u.hello.world_rank, 12);
    ck_assert_uint_eq(msg.u.hello.pid, 3456);
    ck_assert_uint_eq(msg.u.hello.token_addr, 0x4000);
    ck_assert_uint_eq(msg.u.hello.token, 99);
    free(m);
    m = dps_msg_encode_pong(&len);
    check_hdr(m, len, DPS_MSG_PONG);
    ck_assert_uint_eq(len, HDR);
    DECODE_OK(m, len, &msg);
    ck_assert_int_eq(msg.type, DPS_MSG_PONG);
    free(m);
}
END_TEST

START_TEST(rt_header_bytes)
{
    static const uint8_t want[HDR] = {'D',
                                      'P',
                                      'S',
                                      'H',
                                      DPS_PROTO_VERSION,
                                      0,
                                      DPS_MSG_HELLO,
                                      0,
                                      HDR + 24,
                                      0,
                                      0,
                                      0,
                                      0,
                                      0,
                                      0,
                                      0};
    dps_msg_hello_t      h = {0x00030201u, 0x08070605u, 0x100f0e0d0c0b0a09ull,
                              0x1817161514131211ull};
    size_t               len;
    char                *m = dps_msg_encode_hello(&h, &len);
    static const uint8_t body[24] = {
        1,  2,  3,  0,  5,    6,    7,    8,    9,    10,   11,   12,
        13, 14, 15, 16, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18};

    ck_assert_ptr_nonnull(m);
    ck_assert_mem_eq(m, want, HDR);
    ck_assert_mem_eq(m + HDR, body, sizeof(body));
    free(m);
}
END_TEST

START_TEST(rt_type_str)
{
    static const struct {
        unsigned    type;
        const char *name;
    } names[] = {
        {DPS_MSG_HELLO, "hello"},
        {DPS_MSG_JOB_INFO, "job_info"},
        {DPS_MSG_READY, "ready"},
        {DPS_MSG_POST, "post"},
        {DPS_MSG_COMPLETE, "complete"},
        {DPS_MSG_COMM_FREE, "comm_free"},
        {DPS_MSG_PEER_POST, "peer_post"},
        {DPS_MSG_SEND_DONE, "send_done"},
        {DPS_MSG_SHUTDOWN, "shutdown"},
        {DPS_MSG_REG_FREE, "reg_free"},
        {DPS_MSG_PING, "ping"},
        {DPS_MSG_PONG, "pong"},
        {DPS_MSG_SHM, "shm"},
        {DPS_MSG_INST_FAIL, "inst_fail"},
        {DPS_MSG_ROUND, "round"},
        {DPS_MSG_SCHED_FREE, "sched_free"},
        {DPS_MSG_FETCH, "fetch"},
        {DPS_MSG_PUSH, "push"},
        {DPS_MSG_BUNDLE, "bundle"},
        {DPS_MSG_CREDIT, "credit"},
    };
    unsigned t, u;

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        ck_assert_str_eq(dps_msg_type_str(names[i].type), names[i].name);
    }
    /* The types' numbers travel: the new one comes last, none moves. */
    ck_assert_int_eq(DPS_MSG_PUSH, 21);
    ck_assert_int_eq(DPS_MSG_BUNDLE, 22);
    ck_assert_int_eq(DPS_MSG_CREDIT, 23);
    ck_assert_int_eq(DPS_MSG_CREDIT + 1, DPS_MSG_TYPE_MAX);
    /* Every type has a name of its own: none left out of the table. */
    for (t = 1; t < DPS_MSG_TYPE_MAX; t++) {
        ck_assert_str_ne(dps_msg_type_str(t), "?");
        for (u = 1; u < t; u++) {
            ck_assert_str_ne(dps_msg_type_str(t), dps_msg_type_str(u));
        }
    }
    ck_assert_str_eq(dps_msg_type_str(0), "?");
    ck_assert_str_eq(dps_msg_type_str(DPS_MSG_TYPE_MAX), "?");
    ck_assert_str_eq(dps_msg_type_str(0xffffu), "?");
    ck_assert_str_eq(dps_msg_type_str(UINT32_MAX), "?");
}
END_TEST

START_TEST(rt_coll_str)
{
    unsigned c;

    ck_assert_str_eq(dps_coll_str(DPS_COLL_ALLTOALL), "MPI_Ialltoall");
    ck_assert_str_eq(dps_coll_str(DPS_COLL_BCAST), "MPI_Ibcast");
    ck_assert_str_eq(dps_coll_str(DPS_COLL_REDUCE_SCATTER_BLOCK),
                     "MPI_Ireduce_scatter_block");
    ck_assert_str_eq(dps_coll_str(DPS_COLL_EXSCAN), "MPI_Iexscan");
    for (c = 1; c < DPS_COLL_GROUP; c++) {
        ck_assert_msg(strncmp(dps_coll_str(c), "MPI_I", 5) == 0,
                      "collective %u is %s", c, dps_coll_str(c));
    }
    for (c = DPS_COLL_GROUP + 1; c < DPS_COLL_GROUP_INIT; c++) {
        const char *n = dps_coll_str(c);

        /* The persistent form of the call DPS_COLL_GROUP before. */
        ck_assert_msg(strncmp(n, "MPI_", 4) == 0 &&
                          strcmp(n + strlen(n) - 5, "_init") == 0 &&
                          strncasecmp(n + 4,
                                      dps_coll_str(c - DPS_COLL_GROUP) + 5,
                                      strlen(n) - 9) == 0,
                      "collective %u is %s", c, n);
    }
    ck_assert_str_eq(dps_coll_str(DPS_COLL_NEIGHBOR_ALLTOALLW),
                     "MPI_Ineighbor_alltoallw");
    ck_assert_str_eq(dps_coll_str(DPS_COLL_GROUP), "dpushim_group_end");
    ck_assert_str_eq(dps_coll_str(DPS_COLL_ALLTOALL_INIT),
                     "MPI_Alltoall_init");
    ck_assert_str_eq(dps_coll_str(DPS_COLL_GROUP_INIT),
                     "dpushim_group_end_persistent");
    ck_assert_int_eq(dps_coll_base(DPS_COLL_NEIGHBOR_ALLTOALLV_INIT),
                     DPS_COLL_NEIGHBOR_ALLTOALLV);
    ck_assert_int_eq(dps_coll_base(DPS_COLL_BARRIER), DPS_COLL_BARRIER);
    ck_assert_str_eq(dps_coll_str(0), "?");
    ck_assert_str_eq(dps_coll_str(DPS_COLL_MAX), "?");
    ck_assert_str_eq(dps_coll_str(UINT32_MAX), "?");
}
END_TEST

/* ------------------------------------------------------------------ */
/* POST and PEER_POST                                                 */
/* ------------------------------------------------------------------ */

/* A fixed part with every field set to a distinct non-trivial value:
 * keys of k0, k1, k2 bytes for the three buffers, nsteps steps (the
 * schedule travels, DPS_POST_SCHED, when there are any). */
static dps_msg_post_t post_fixed(uint32_t coll, uint32_t size, uint32_t k0,
                                 uint32_t k1, uint32_t k2, uint32_t nsteps,
                                 uint32_t nmembers)
{
    dps_msg_post_t f;
    int            b;

    memset(&f, 0, sizeof(f));
    f.comm_id = 0x0123456789abcdefull;
    f.op_token = 0xfedcba9876543210ull;
    f.sched_id = 0x5eed00000000002aull;
    for (b = 0; b < DPS_NBUF; b++) {
        f.buf_addr[b] = 0x00007f0012345678ull + 0x100000000ull * (unsigned)b;
        f.buf_len[b] = 0x100000001ull + 4096u * (unsigned)b;
        f.buf_reg[b] = 0x1122334455667788ull + 0x1111u * (unsigned)b;
    }
    f.seq = 0xdeadbeefu;
    f.coll = coll;
    f.comm_size = size;
    f.comm_rank = size - 1;
    f.world_rank = 77777;
    f.nsteps = nsteps;
    f.rkey_len[0] = k0;
    f.rkey_len[1] = k1;
    f.rkey_len[2] = k2;
    f.nmembers = nmembers;
    f.flags = nsteps ? DPS_POST_SCHED : 0;
    return f;
}

static size_t post_keys(const dps_msg_post_t *f)
{
    return (size_t)f->rkey_len[0] + f->rkey_len[1] + f->rkey_len[2];
}

static size_t post_tail(const dps_msg_post_t *f)
{
    return post_keys(f) + (size_t)f->nsteps * STEP +
           (size_t)f->nmembers * sizeof(uint32_t);
}

/* n steps of a plausible schedule of a rank of a communicator of size
 * ranks; every byte, pad included, from a pattern of seed. */
static dps_step_t *make_steps(uint32_t n, uint32_t size, unsigned seed)
{
    dps_step_t *s = xmalloc((size_t)n * STEP);
    uint32_t    i;
    size_t      k;

    for (k = 0; k < (size_t)n * STEP; k++) {
        ((uint8_t *)s)[k] = pat(seed, k);
    }
    for (i = 0; i < n; i++) {
        s[i].kind = (uint8_t)(DPS_STEP_SEND + i % (DPS_STEP_MAX - 1));
        s[i].src_buf = (uint8_t)(i % DPS_NBUF);
        s[i].dst_buf = (uint8_t)((i + 1) % DPS_NBUF);
        s[i].op = (uint8_t)(i % DPS_OP_COUNT);
        s[i].round = (uint16_t)(i / 3);
        s[i].dtype = (uint16_t)(i % DPS_T_COUNT);
        s[i].peer = (i * 7 + seed) % size;
        s[i].src_off = 0x100000000ull * i + seed;
        s[i].dst_off = 8ull * i;
        /* High bytes set: the last byte on the wire is never 0. */
        s[i].len = 0xa500000000000001ull + i;
    }
    return s;
}

/* A post of the given type whose body is *f then tail pattern bytes,
 * whatever *f says: malformed bodies behind a correct header. */
static void *raw_post(unsigned type, const dps_msg_post_t *f, size_t tail,
                      size_t *len)
{
    size_t blen = POSTF + tail, i;
    char  *body = xmalloc(blen), *m;

    memcpy(body, f, POSTF);
    for (i = 0; i < tail; i++) {
        body[POSTF + i] = (char)pat(9, i);
    }
    m = raw_msg(type, body, blen, len);
    free(body);
    return m;
}

/* Encode, check the wire bytes, decode (aligned and not), check fields,
 * keys, steps (byte for byte, and through dps_msg_step) and members. */
static void roundtrip_post(dps_msg_type_t type, uint32_t coll, uint32_t size,
                           const uint32_t klen[DPS_NBUF], uint32_t nsteps,
                           uint32_t flags, int with_members)
{
    uint32_t       nm = with_members ? size : 0, i;
    dps_msg_post_t f =
        post_fixed(coll, size, klen[0], klen[1], klen[2], nsteps, nm);
    uint8_t    *key[DPS_NBUF];
    const void *keys[DPS_NBUF];
    dps_step_t *steps = make_steps(nsteps, size, coll);
    uint32_t   *members = xmalloc(size * sizeof(uint32_t));
    size_t      len, off, koff[DPS_NBUF], soff, moff, k;
    char       *m, *shifted;
    dps_msg_t   msg;
    int         pass, b, nokeys = 1;

    f.flags = flags;
    /* Every second size carries a poster's error, which must survive;
     * such a post needs no schedule id. */
    f.error = (size % 2) ? DPS_ERR_BUFFER : 0;
    if (f.error != 0 && nsteps == 0) {
        f.sched_id = 0;
    }
    for (b = 0; b < DPS_NBUF; b++) {
        key[b] = xmalloc(klen[b]);
        for (k = 0; k < klen[b]; k++) {
            key[b][k] = pat(1 + (unsigned)b, k);
        }
        /* No key: none is needed (NULL), and some buffers are empty. */
        keys[b] = klen[b] ? key[b] : NULL;
        if (klen[b] == 0 && (size + (unsigned)b) % 2) {
            f.buf_addr[b] = f.buf_len[b] = f.buf_reg[b] = 0;
        }
        nokeys &= klen[b] == 0;
    }
    for (i = 0; i < size; i++) {
        members[i] = 0x01000000u + i * 2654435761u % 1000003u;
    }
    m = dps_msg_encode_post(type, &f, (nokeys && size % 2) ? NULL : keys,
                            nsteps ? steps : NULL,
                            with_members ? members : NULL, &len);
    check_hdr(m, len, type);
    ck_assert_uint_eq(len, HDR + POSTF + post_tail(&f));

    /* Wire layout: fixed part, the three keys, steps, members. */
    off = HDR;
    ck_assert_mem_eq(m + off, &f, POSTF);
    off += POSTF;
    for (b = 0; b < DPS_NBUF; b++) {
        koff[b] = off;
        ck_assert(memcmp(m + off, key[b], klen[b]) == 0);
        off += klen[b];
    }
    soff = off;
    ck_assert(memcmp(m + off, steps, nsteps * STEP) == 0);
    off += nsteps * STEP;
    moff = off;
    ck_assert(memcmp(m + off, members, nm * sizeof(uint32_t)) == 0);
    off += nm * sizeof(uint32_t);
    ck_assert_uint_eq(off, len);

    /* Decode in place and from an odd address (tables unaligned). */
    shifted = xmalloc(len + 1);
    memcpy(shifted + 1, m, len);
    for (pass = 0; pass < 2; pass++) {
        const char           *buf = pass ? shifted + 1 : m;
        const dps_msg_post_t *g = &msg.u.post.fixed;

        memset(&msg, 0xa5, sizeof(msg));
        DECODE_OK(buf, len, &msg);
        ck_assert_int_eq(msg.type, type);
        ck_assert_mem_eq(g, &f, POSTF);
        ck_assert_uint_eq(g->comm_id, f.comm_id);
        ck_assert_uint_eq(g->op_token, f.op_token);
        ck_assert_uint_eq(g->sched_id, f.sched_id);
        for (b = 0; b < DPS_NBUF; b++) {
            ck_assert_uint_eq(g->buf_addr[b], f.buf_addr[b]);
            ck_assert_uint_eq(g->buf_len[b], f.buf_len[b]);
            ck_assert_uint_eq(g->buf_reg[b], f.buf_reg[b]);
            ck_assert_uint_eq(g->rkey_len[b], klen[b]);
        }
        ck_assert_uint_eq(g->seq, f.seq);
        ck_assert_uint_eq(g->coll, coll);
        ck_assert_uint_eq(g->comm_rank, f.comm_rank);
        ck_assert_uint_eq(g->comm_size, size);
        ck_assert_uint_eq(g->world_rank, f.world_rank);
        ck_assert_uint_eq(g->nsteps, nsteps);
        ck_assert_uint_eq(g->nmembers, nm);
        ck_assert_int_eq(g->error, f.error);
        ck_assert_uint_eq(g->flags, flags);

        for (b = 0; b < DPS_NBUF; b++) {
            ck_assert_ptr_eq(msg.u.post.rkey[b],
                             (const uint8_t *)buf + koff[b]);
            for (k = 0; k < klen[b]; k++) {
                ck_assert_uint_eq(msg.u.post.rkey[b][k],
                                  pat(1 + (unsigned)b, k));
            }
        }
        if (nsteps) {
            ck_assert_ptr_eq(msg.u.post.steps, (const uint8_t *)buf + soff);
            ck_assert(memcmp(msg.u.post.steps, steps, nsteps * STEP) == 0);
            for (i = 0; i < nsteps; i++) {
                dps_step_t st;

                memset(&st, 0xee, sizeof(st));
                dps_msg_step(msg.u.post.steps, i, &st);
                ck_assert_mem_eq(&st, &steps[i], STEP);
                ck_assert_uint_eq(st.kind, steps[i].kind);
                ck_assert_uint_eq(st.round, steps[i].round);
                ck_assert_uint_eq(st.peer, steps[i].peer);
                ck_assert_uint_eq(st.src_off, steps[i].src_off);
                ck_assert_uint_eq(st.len, 0xa500000000000001ull + i);
            }
        } else {
            ck_assert_ptr_null(msg.u.post.steps);
        }
        if (with_members) {
            ck_assert_ptr_eq(msg.u.post.members, (const void *)(buf + moff));
            for (i = 0; i < size; i++) {
                ck_assert_uint_eq(dps_msg_u32(msg.u.post.members, i),
                                  members[i]);
            }
        } else {
            ck_assert_ptr_null(msg.u.post.members);
        }
    }
    free(shifted);
    free(m);
    for (b = 0; b < DPS_NBUF; b++) {
        free(key[b]);
    }
    free(steps);
    free(members);
}

START_TEST(rt_post)
{
    static const uint32_t klens[][DPS_NBUF] = {
        {1, 1, 1}, {3, 17, 0}, {0, 0, 0}, {17, 0, 3}, {0, 5, 1}};
    static const uint32_t sizes[] = {1, 2, 5, 64};
    /* nsteps, flags: schedule cached; an empty one; 1 step; 7 steps */
    static const uint32_t sched[][2] = {
        {0, 0}, {0, DPS_POST_SCHED}, {1, DPS_POST_SCHED}, {7, DPS_POST_SCHED}};
    static const dps_msg_type_t types[] = {DPS_MSG_POST, DPS_MSG_PEER_POST};
    uint32_t                    coll = 0;
    size_t                      t, s, k, n;
    int                         mem;

    for (t = 0; t < 2; t++) {
        for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            for (k = 0; k < sizeof(klens) / sizeof(klens[0]); k++) {
                for (n = 0; n < sizeof(sched) / sizeof(sched[0]); n++) {
                    for (mem = 0; mem < 2; mem++) {
                        /* Every collective in turn. */
                        coll = coll % (DPS_COLL_MAX - 1) + 1;
                        roundtrip_post(types[t], coll, sizes[s], klens[k],
                                       sched[n][0], sched[n][1], mem);
                    }
                }
            }
        }
    }
}
END_TEST

/* The largest keys, long schedules, the first and last collectives. */
START_TEST(rt_post_edges)
{
    static const uint32_t kmax[DPS_NBUF] = {DPS_MAX_RKEY, DPS_MAX_RKEY,
                                            DPS_MAX_RKEY};
    static const uint32_t kodd[DPS_NBUF] = {DPS_MAX_RKEY, 0, DPS_MAX_RKEY - 1};
    static const uint32_t kone[DPS_NBUF] = {1, 0, 0};
    int                   mem;

    for (mem = 0; mem < 2; mem++) {
        roundtrip_post(DPS_MSG_POST, DPS_COLL_ALLTOALL, 7, kmax, 3,
                       DPS_POST_SCHED, mem);
        roundtrip_post(DPS_MSG_PEER_POST, DPS_COLL_MAX - 1, 2, kodd, 0,
                       DPS_POST_SCHED, mem);
        roundtrip_post(DPS_MSG_POST, DPS_COLL_BCAST, 3, kone, 4096,
                       DPS_POST_SCHED, mem);
        roundtrip_post(DPS_MSG_PEER_POST, DPS_COLL_MAX - 1, 33, kodd, 1000,
                       DPS_POST_SCHED, mem);
    }
}
END_TEST

/* The test's raw builder lays out posts exactly like the encoder. */
START_TEST(rt_raw_post_sane)
{
    dps_msg_post_t f = post_fixed(DPS_COLL_ALLTOALL, 4, 3, 17, 5, 2, 4);
    dps_msg_t      msg;
    size_t         len;
    char          *m = raw_post(DPS_MSG_PEER_POST, &f, post_tail(&f), &len);

    DECODE_OK(m, len, &msg);
    ck_assert_int_eq(msg.type, DPS_MSG_PEER_POST);
    ck_assert_uint_eq(msg.u.post.fixed.nsteps, 2);
    ck_assert_ptr_eq(msg.u.post.steps,
                     (const uint8_t *)m + HDR + POSTF + 3 + 17 + 5);
    ck_assert_ptr_eq(msg.u.post.members,
                     (const void *)(m + HDR + POSTF + 25 + 2 * STEP));
    free(m);
}
END_TEST

/* ------------------------------------------------------------------ */
/* REG_FREE and SCHED_FREE (the same body)                            */
/* ------------------------------------------------------------------ */

typedef void *(*free_enc_t)(uint32_t, uint32_t, const uint64_t *, size_t *);

static void roundtrip_free(unsigned type, free_enc_t enc)
{
    static const uint32_t counts[] = {1, 2, 7, DPS_MAX_REG_FREE};
    size_t                c, len, i, off;

    for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        uint64_t *ids = xmalloc(counts[c] * sizeof(uint64_t));
        dps_msg_t msg;
        char     *m, *shifted;

        for (i = 0; i < counts[c]; i++) {
            ids[i] = 0x0102030405060708ull * (i + 1) ^ counts[c];
        }
        m = enc(4242, counts[c], ids, &len);
        ck_assert_ptr_nonnull(m);
        check_hdr(m, len, type);
        ck_assert_uint_eq(len, HDR + 8 + 8 * counts[c]);
        for (off = 0; off < 8; off += 3) { /* aligned and not */
            shifted = xmalloc(len + off);
            memcpy(shifted + off, m, len);
            DECODE_OK(shifted + off, len, &msg);
            ck_assert_int_eq(msg.type, type);
            ck_assert_uint_eq(msg.u.reg_free.fixed.world_rank, 4242);
            ck_assert_uint_eq(msg.u.reg_free.fixed.count, counts[c]);
            for (i = 0; i < counts[c]; i++) {
                ck_assert_uint_eq(dps_msg_u64(msg.u.reg_free.ids, i), ids[i]);
            }
            free(shifted);
        }
        free(m);
        free(ids);
    }
}

static void bad_free(unsigned type, free_enc_t enc)
{
    uint64_t ids[3] = {1, 2, 3};
    struct {
        uint32_t world, count;
        uint64_t id[3];
    } b = {0, 0, {1, 2, 3}};
    size_t len;
    char  *m;

    ck_assert_ptr_null(enc(0, 0, ids, &len));
    ck_assert_ptr_null(enc(0, DPS_MAX_REG_FREE + 1, ids, &len));
    ck_assert_ptr_null(enc(0, 2, NULL, &len));
    /* count 0; count larger than the body; smaller; over the maximum */
    m = raw_msg(type, &b, 8, &len);
    REJECT(m, len, "no ids");
    free(m);
    b.count = 3;
    m = raw_msg(type, &b, 8 + 16, &len);
    REJECT(m, len, "shorter than its ids");
    free(m);
    b.count = 2;
    m = raw_msg(type, &b, 8 + 24, &len);
    REJECT(m, len, "longer than its ids");
    free(m);
    b.count = DPS_MAX_REG_FREE + 1;
    m = raw_msg(type, &b, 8 + 24, &len);
    REJECT(m, len, "too many ids");
    free(m);
    m = raw_msg(type, &b, 4, &len);
    REJECT(m, len, "shorter than its fixed part");
    free(m);
    /* The raw layout is the encoder's. */
    b.count = 3;
    m = raw_msg(type, &b, 8 + 24, &len);
    {
        dps_msg_t msg;

        DECODE_OK(m, len, &msg);
        ck_assert_int_eq(msg.type, type);
        ck_assert_uint_eq(dps_msg_u64(msg.u.reg_free.ids, 2), 3);
    }
    free(m);
}

START_TEST(rt_reg_free)
{
    roundtrip_free(DPS_MSG_REG_FREE, dps_msg_encode_reg_free);
}
END_TEST

START_TEST(rt_sched_free)
{
    roundtrip_free(DPS_MSG_SCHED_FREE, dps_msg_encode_sched_free);
}
END_TEST

START_TEST(bad_reg_free)
{
    bad_free(DPS_MSG_REG_FREE, dps_msg_encode_reg_free);
}
END_TEST

START_TEST(bad_sched_free)
{
    bad_free(DPS_MSG_SCHED_FREE, dps_msg_encode_sched_free);
}
END_TEST

/* ------------------------------------------------------------------ */
/* JOB_INFO                                                           */
/* ------------------------------------------------------------------ */

typedef struct job_fix {
    dps_msg_job_t fixed;
    uint32_t     *rank_agent, *rank_addr_len, *agent_addr_len;
    const void  **rank_addrs, **agent_addrs;
} job_fix_t;

static uint32_t cap_addr(uint32_t l)
{
    return l > DPS_MAX_ADDR ? DPS_MAX_ADDR : l;
}

/* A valid job: lengths base.. (odd ones included), distinct bytes. */
static void job_init(job_fix_t *j, uint32_t nranks, uint32_t nagents,
                     uint32_t agent_idx, uint32_t base)
{
    uint32_t i, k;

    memset(j, 0, sizeof(*j));
    j->fixed.nranks = nranks;
    j->fixed.nagents = nagents;
    j->fixed.agent_idx = agent_idx;
    j->rank_agent = xmalloc(nranks * sizeof(uint32_t));
    j->rank_addr_len = xmalloc(nranks * sizeof(uint32_t));
    j->agent_addr_len = xmalloc(nagents * sizeof(uint32_t));
    j->rank_addrs = xmalloc(nranks * sizeof(void *));
    j->agent_addrs = xmalloc(nagents * sizeof(void *));
    for (i = 0; i < nranks; i++) {
        uint8_t *a;

        j->rank_agent[i] = (i * 7 + 3) % nagents;
        j->rank_addr_len[i] = cap_addr(base + (i * 5) % 11);
        a = xmalloc(j->rank_addr_len[i]);
        for (k = 0; k < j->rank_addr_len[i]; k++) {
            a[k] = pat(100 + i, k);
        }
        j->rank_addrs[i] = a;
    }
    for (i = 0; i < nagents; i++) {
        uint8_t *a;

        j->agent_addr_len[i] = cap_addr(base + 3 + (i * 7) % 13);
        a = xmalloc(j->agent_addr_len[i]);
        for (k = 0; k < j->agent_addr_len[i]; k++) {
            a[k] = pat(200 + i, k);
        }
        j->agent_addrs[i] = a;
    }
}

static void job_free(job_fix_t *j)
{
    uint32_t i;

    for (i = 0; i < j->fixed.nranks; i++) {
        free((void *)j->rank_addrs[i]);
    }
    for (i = 0; i < j->fixed.nagents; i++) {
        free((void *)j->agent_addrs[i]);
    }
    free(j->rank_agent);
    free(j->rank_addr_len);
    free(j->agent_addr_len);
    free(j->rank_addrs);
    free(j->agent_addrs);
}

static void *job_encode(const job_fix_t *j, size_t *len)
{
    return dps_msg_encode_job(&j->fixed, j->rank_agent, j->rank_addrs,
                              j->rank_addr_len, j->agent_addrs,
                              j->agent_addr_len, len);
}

/* A job_info with a correct header: *f, rank tables of nr entries, an
 * agent table of na entries, then as many address bytes as the tables
 * say plus extra bytes; nothing is validated. */
static void *raw_job(const dps_msg_job_t *f, const uint32_t *rank_agent,
                     const uint32_t *rank_addr_len, uint32_t nr,
                     const uint32_t *agent_addr_len, uint32_t na, size_t extra,
                     size_t *len)
{
    size_t addrs = 0, blen, off, i;
    char  *body, *m;

    for (i = 0; i < nr; i++) {
        addrs += rank_addr_len[i];
    }
    for (i = 0; i < na; i++) {
        addrs += agent_addr_len[i];
    }
    blen = JOBF + sizeof(uint32_t) * (2 * (size_t)nr + na) + addrs + extra;
    body = xmalloc(blen);
    memcpy(body, f, JOBF);
    off = JOBF;
    memcpy(body + off, rank_agent, nr * sizeof(uint32_t));
    off += nr * sizeof(uint32_t);
    memcpy(body + off, rank_addr_len, nr * sizeof(uint32_t));
    off += nr * sizeof(uint32_t);
    memcpy(body + off, agent_addr_len, na * sizeof(uint32_t));
    off += na * sizeof(uint32_t);
    for (i = 0; off < blen; i++, off++) {
        body[off] = (char)pat(5, i);
    }
    m = raw_msg(DPS_MSG_JOB_INFO, body, blen, len);
    free(body);
    return m;
}

static void *raw_job_fix(const job_fix_t *j, size_t extra, size_t *len)
{
    return raw_job(&j->fixed, j->rank_agent, j->rank_addr_len, j->fixed.nranks,
                   j->agent_addr_len, j->fixed.nagents, extra, len);
}

static void roundtrip_job(uint32_t nranks, uint32_t nagents,
                          uint32_t agent_idx, uint32_t base)
{
    job_fix_t j;
    size_t    len, off, want, i;
    char     *m, *shifted;
    dps_msg_t msg;
    int       pass;

    job_init(&j, nranks, nagents, agent_idx, base);
    /* Every second job pushes between nodes. */
    j.fixed.flags = (nranks % 2) ? DPS_JOB_PUSH : 0;
    j.fixed.job_key = 0x5eed0000u + nranks;
    m = job_encode(&j, &len);
    check_hdr(m, len, DPS_MSG_JOB_INFO);

    /* Wire layout: fixed part, three tables, rank then agent addresses. */
    off = HDR;
    ck_assert_mem_eq(m + off, &j.fixed, JOBF);
    off += JOBF;
    ck_assert(memcmp(m + off, j.rank_agent, 4 * nranks) == 0);
    off += 4 * nranks;
    ck_assert(memcmp(m + off, j.rank_addr_len, 4 * nranks) == 0);
    off += 4 * nranks;
    ck_assert(memcmp(m + off, j.agent_addr_len, 4 * nagents) == 0);
    off += 4 * nagents;
    for (i = 0; i < nranks; i++) {
        ck_assert(memcmp(m + off, j.rank_addrs[i], j.rank_addr_len[i]) == 0);
        off += j.rank_addr_len[i];
    }
    for (i = 0; i < nagents; i++) {
        ck_assert(memcmp(m + off, j.agent_addrs[i], j.agent_addr_len[i]) == 0);
        off += j.agent_addr_len[i];
    }
    ck_assert_uint_eq(off, len);

    shifted = xmalloc(len + 3);
    memcpy(shifted + 3, m, len);
    for (pass = 0; pass < 2; pass++) {
        const char    *buf = pass ? shifted + 3 : m;
        const uint8_t *ra, *aa;

        memset(&msg, 0x5a, sizeof(msg));
        DECODE_OK(buf, len, &msg);
        ck_assert_int_eq(msg.type, DPS_MSG_JOB_INFO);
        ck_assert_uint_eq(msg.u.job.fixed.nranks, nranks);
        ck_assert_uint_eq(msg.u.job.fixed.nagents, nagents);
        ck_assert_uint_eq(msg.u.job.fixed.agent_idx, agent_idx);
        ck_assert_uint_eq(msg.u.job.fixed.job_key, j.fixed.job_key);
        ck_assert_uint_eq(msg.u.job.fixed.flags, j.fixed.flags);
        ck_assert_uint_eq(msg.u.job.fixed.pad, 0);
        ck_assert_mem_eq(&msg.u.job.fixed, &j.fixed, JOBF);
        off = HDR + JOBF;
        ck_assert_ptr_eq(msg.u.job.rank_agent, (const void *)(buf + off));
        off += 4 * nranks;
        ck_assert_ptr_eq(msg.u.job.rank_addr_len, (const void *)(buf + off));
        off += 4 * nranks;
        ck_assert_ptr_eq(msg.u.job.agent_addr_len, (const void *)(buf + off));
        off += 4 * nagents;
        ck_assert_ptr_eq(msg.u.job.rank_addrs, (const void *)(buf + off));
        want = 0;
        for (i = 0; i < nranks; i++) {
            ck_assert_uint_eq(dps_msg_u32(msg.u.job.rank_agent, i),
                              j.rank_agent[i]);
            ck_assert_uint_eq(dps_msg_u32(msg.u.job.rank_addr_len, i),
                              j.rank_addr_len[i]);
            want += j.rank_addr_len[i];
        }
        ck_assert_ptr_eq(msg.u.job.agent_addrs,
                         (const void *)(buf + off + want));
        for (i = 0; i < nagents; i++) {
            ck_assert_uint_eq(dps_msg_u32(msg.u.job.agent_addr_len, i),
                              j.agent_addr_len[i]);
        }
        ra = msg.u.job.rank_addrs;
        for (i = 0; i < nranks; i++) {
            ck_assert_msg(memcmp(ra, j.rank_addrs[i], j.rank_addr_len[i]) == 0,
                          "rank address %zu differs", i);
            ra += j.rank_addr_len[i];
        }
        aa = msg.u.job.agent_addrs;
        for (i = 0; i < nagents; i++) {
            ck_assert_msg(memcmp(aa, j.agent_addrs[i], j.agent_addr_len[i]) ==
                              0,
                          "agent address %zu differs", i);
            aa += j.agent_addr_len[i];
        }
        ck_assert_ptr_eq(aa, (const uint8_t *)buf + len);
    }
    free(shifted);
    free(m);
    job_free(&j);
}

START_TEST(rt_job)
{
    /* nranks, nagents, agent_idx, base (job_init) */
    static const struct {
        uint32_t nranks, nagents, agent_idx, base;
    } jobs[] = {
        {1, 1, 0, 1},
        {2, 1, 0, 2},
        {4, 2, 1, 1},
        {5, 1, 0, 3},
        {7, 3, 2, 17},
        {8, 4, 0, 60},
        {16, 16, 15, 40},
        {33, 5, 4, 9},
        {3, 2, 0, DPS_MAX_ADDR},
        {2, 2, 1, DPS_MAX_ADDR - 4},
    };

    for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
        roundtrip_job(jobs[i].nranks, jobs[i].nagents, jobs[i].agent_idx,
                      jobs[i].base);
    }
}
END_TEST

START_TEST(rt_raw_job_sane)
{
    job_fix_t j;
    dps_msg_t msg;
    size_t    len;
    char     *m;

    job_init(&j, 6, 3, 2, 5);
    m = raw_job_fix(&j, 0, &len);
    DECODE_OK(m, len, &msg);
    ck_assert_uint_eq(msg.u.job.fixed.nranks, 6);
    free(m);
    job_free(&j);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Header checks                                                      */
/* ------------------------------------------------------------------ */

START_TEST(hdr_too_short)
{
    size_t len, n;
    int    w;

    for (w = 0; w < FX_COUNT; w++) {
        char *m = make_fixed(w, &len);

        for (n = 0; n < HDR; n++) {
            char *c = dup_bytes(m, n);

            if (n >= offsetof(dps_msg_hdr_t, length) + 4) {
                put32(c, offsetof(dps_msg_hdr_t, length), (uint32_t)n);
            }
            REJECT(c, n, "shorter than a header");
            free(c);
        }
        free(m);
    }
}
END_TEST

START_TEST(hdr_bad_magic)
{
    static const uint32_t bad[] = {0, DPS_PROTO_MAGIC + 1,
                                   DPS_PROTO_MAGIC ^ 0x80000000u,
                                   0x44505348u /* byte-swapped */, UINT32_MAX};
    size_t                len, i;
    int                   w;

    for (w = 0; w < FX_COUNT; w++) {
        char *m = make_fixed(w, &len);

        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            put32(m, offsetof(dps_msg_hdr_t, magic), bad[i]);
            REJECT(m, len, "bad magic");
        }
        free(m);
    }
}
END_TEST

START_TEST(hdr_bad_version)
{
    static const uint16_t bad[] = {0, DPS_PROTO_VERSION + 1, 0x100, 0xffff};
    size_t                len, i;
    int                   w;

    for (w = 0; w < FX_COUNT; w++) {
        char *m = make_fixed(w, &len);

        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            put16(m, offsetof(dps_msg_hdr_t, version), bad[i]);
            REJECT(m, len, "bad version");
        }
        free(m);
    }
}
END_TEST

/* The length field must equal the number of bytes received. */
START_TEST(hdr_bad_length)
{
    size_t len, i;
    int    w;

    for (w = 0; w < FX_COUNT; w++) {
        char          *m = make_fixed(w, &len);
        const uint32_t bad[] = {0,
                                1,
                                (uint32_t)HDR - 1,
                                (uint32_t)len - 1,
                                (uint32_t)len + 1,
                                (uint32_t)len * 2,
                                UINT32_MAX};

        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            put32(m, offsetof(dps_msg_hdr_t, length), bad[i]);
            REJECT(m, len, "length field");
        }
        free(m);
    }
    {
        /* A valid post received with one byte more or less. */
        dps_msg_post_t f = post_fixed(DPS_COLL_BCAST, 4, 3, 0, 2, 2, 4);
        uint32_t       members[4] = {9, 8, 7, 6};
        uint8_t        key[3] = {1, 2, 3};
        const void    *keys[DPS_NBUF] = {key, NULL, key};
        dps_step_t    *steps = make_steps(2, 4, 1);
        char          *m =
            dps_msg_encode_post(DPS_MSG_POST, &f, keys, steps, members, &len);
        char *big = xmalloc(len + 1);

        ck_assert_ptr_nonnull(m);
        memcpy(big, m, len);
        big[len] = 0;
        REJECT(big, len + 1, "one byte more than the length field");
        REJECT(m, len - 1, "one byte less than the length field");
        free(big);
        free(m);
        free(steps);
    }
}
END_TEST

START_TEST(hdr_bad_type)
{
    static const uint16_t bad[] = {0, DPS_MSG_TYPE_MAX, DPS_MSG_TYPE_MAX + 1,
                                   0x100, 0xffff};
    size_t                len, i;
    int                   w;

    for (w = 0; w < FX_COUNT; w++) {
        char *m = make_fixed(w, &len);

        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            put16(m, offsetof(dps_msg_hdr_t, type), bad[i]);
            REJECT(m, len, "bad type");
        }
        free(m);
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* Fixed-size bodies                                                  */
/* ------------------------------------------------------------------ */

START_TEST(fixed_one_byte_off)
{
    size_t len, nlen;
    int    w;

    for (w = 0; w < FX_COUNT; w++) {
        char *m = make_fixed(w, &len), *r;

        r = resized(m, len, +1, &nlen);
        REJECT(r, nlen, "body one byte too long");
        free(r);
        if (fx_body[w] > 0) {
            r = resized(m, len, -1, &nlen);
            REJECT(r, nlen, "body one byte too short");
            free(r);
            r = resized(m, len, -(int)fx_body[w], &nlen);
            REJECT(r, nlen, "no body");
            free(r);
        }
        r = resized(m, len, 8, &nlen);
        REJECT(r, nlen, "body 8 bytes too long");
        free(r);
        free(m);
    }
}
END_TEST

/* A body of one fixed type under another type's header of other size. */
START_TEST(fixed_type_mismatch)
{
    size_t len;
    int    w, t;

    for (w = 0; w < FX_COUNT; w++) {
        char *m = make_fixed(w, &len);

        for (t = 0; t < FX_COUNT; t++) {
            if (fx_body[t] == fx_body[w]) {
                continue;
            }
            put16(m, offsetof(dps_msg_hdr_t, type), (uint16_t)fx_type[t]);
            REJECT(m, len, "body size of another type");
        }
        /* No fixed body is long enough for post or job_info. */
        put16(m, offsetof(dps_msg_hdr_t, type), DPS_MSG_POST);
        REJECT(m, len, "short post");
        put16(m, offsetof(dps_msg_hdr_t, type), DPS_MSG_PEER_POST);
        REJECT(m, len, "short peer_post");
        if (fx_body[w] < JOBF) {
            put16(m, offsetof(dps_msg_hdr_t, type), DPS_MSG_JOB_INFO);
            REJECT(m, len, "short job_info");
        }
        /* Nor for a push's fixed part. */
        ck_assert_uint_lt(fx_body[w], sizeof(dps_msg_push_t));
        put16(m, offsetof(dps_msg_hdr_t, type), DPS_MSG_PUSH);
        REJECT(m, len, "short push");
        free(m);
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* Malformed posts                                                    */
/* ------------------------------------------------------------------ */

static const unsigned post_types[] = {DPS_MSG_POST, DPS_MSG_PEER_POST};

/* Reject *f as both post types, with a body length matching *f. */
static void reject_post_at(const dps_msg_post_t *f, const char *what, int line)
{
    size_t len, t, tail = post_tail(f);

    /* Absurd lengths: a short body is enough to be rejected. */
    if (tail > 1u << 20) {
        tail = 64;
    }
    for (t = 0; t < 2; t++) {
        char *m = raw_post(post_types[t], f, tail, &len);

        reject_at(m, len, what, line);
        free(m);
    }
}
#define REJECT_POST(_f, _w) reject_post_at((_f), (_w), __LINE__)

/* Accept *f as both post types, with a body length matching *f. */
static void accept_post_at(const dps_msg_post_t *f, int line)
{
    size_t len, t;

    for (t = 0; t < 2; t++) {
        char     *m = raw_post(post_types[t], f, post_tail(f), &len);
        dps_msg_t msg;

        decode_ok_at(m, len, &msg, line);
        ck_assert_mem_eq(&msg.u.post.fixed, f, POSTF);
        free(m);
    }
}
#define ACCEPT_POST(_f) accept_post_at((_f), __LINE__)

/* A valid encoded post (3 keys, nsteps steps, members) for patching. */
static char *encoded_post(uint32_t nsteps, size_t *len)
{
    static const uint8_t key[17] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    const void          *keys[DPS_NBUF] = {key, key, key};
    dps_msg_post_t f = post_fixed(DPS_COLL_ALLTOALL, 5, 3, 17, 1, nsteps, 5);
    uint32_t       members[5] = {10, 20, 30, 40, 50};
    dps_step_t    *steps = make_steps(nsteps, 5, 4);
    char *m = dps_msg_encode_post(DPS_MSG_POST, &f, keys, steps, members, len);

    ck_assert_ptr_nonnull(m);
    DECODE_OK(m, *len, &(dps_msg_t){0});
    free(steps);
    return m;
}

START_TEST(post_bad_ranks)
{
    dps_msg_post_t f;

    f = post_fixed(DPS_COLL_ALLTOALL, 4, 3, 17, 0, 2, 0);
    f.comm_rank = 4;
    REJECT_POST(&f, "comm_rank == comm_size");
    f.comm_rank = UINT32_MAX;
    REJECT_POST(&f, "comm_rank huge");
    f = post_fixed(DPS_COLL_BCAST, 4, 3, 17, 1, 0, 4);
    f.comm_rank = 5;
    REJECT_POST(&f, "comm_rank > comm_size, with members");
    f = post_fixed(DPS_COLL_ALLTOALL, 1, 1, 1, 1, 1, 1);
    f.comm_rank = 1;
    REJECT_POST(&f, "rank 1 of size 1");

    f = post_fixed(DPS_COLL_ALLTOALL, 1, 1, 1, 0, 1, 0);
    f.comm_size = 0;
    f.comm_rank = 0;
    REJECT_POST(&f, "comm_size 0");
    f = post_fixed(DPS_COLL_BCAST, DPS_MAX_RANKS + 1, 1, 1, 0, 0, 0);
    REJECT_POST(&f, "comm_size above DPS_MAX_RANKS");
    f.comm_rank = 0;
    REJECT_POST(&f, "comm_size above DPS_MAX_RANKS, rank 0");
    /* The largest communicator is fine. */
    f = post_fixed(DPS_COLL_BCAST, DPS_MAX_RANKS, 1, 1, 0, 0, 0);
    ACCEPT_POST(&f);
}
END_TEST

START_TEST(post_bad_coll)
{
    static const uint32_t bad[] = {0, DPS_COLL_MAX, DPS_COLL_MAX + 1, 0x100,
                                   UINT32_MAX};
    dps_msg_post_t        f;
    size_t                i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        f = post_fixed(bad[i], 4, 3, 17, 0, 0, 0);
        REJECT_POST(&f, "unknown collective");
        f = post_fixed(bad[i], 4, 3, 17, 5, 3, 4);
        REJECT_POST(&f, "unknown collective, with steps and members");
    }
    /* Every known one is fine. */
    for (i = 1; i < DPS_COLL_MAX; i++) {
        f = post_fixed((uint32_t)i, 4, 3, 17, 5, 3, 4);
        ACCEPT_POST(&f);
    }
}
END_TEST

START_TEST(post_bad_nmembers)
{
    static const uint32_t bad[] = {1, 3, 5, 8, UINT32_MAX};
    dps_msg_post_t        f;
    size_t                i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        f = post_fixed(DPS_COLL_ALLTOALL, 4, 3, 17, 0, 0, bad[i]);
        REJECT_POST(&f, "nmembers neither 0 nor comm_size");
        f = post_fixed(DPS_COLL_BCAST, 4, 1, 0, 2, 3, bad[i]);
        REJECT_POST(&f, "nmembers neither 0 nor comm_size, with steps");
    }
}
END_TEST

START_TEST(post_bad_rkeys)
{
    dps_msg_post_t f;
    int            b;

    for (b = 0; b < DPS_NBUF; b++) {
        f = post_fixed(DPS_COLL_ALLTOALL, 2, 3, 17, 5, 1, 0);
        f.rkey_len[b] = DPS_MAX_RKEY + 1;
        REJECT_POST(&f, "rkey too long");
        f.rkey_len[b] = UINT32_MAX;
        REJECT_POST(&f, "rkey length UINT32_MAX");
        f = post_fixed(DPS_COLL_BCAST, 2, 1, 1, 1, 0, 2);
        f.rkey_len[b] = DPS_MAX_RKEY + 1;
        REJECT_POST(&f, "rkey too long, with members");

        /* A key must name a registration; an empty buffer has none. */
        f = post_fixed(DPS_COLL_ALLTOALL, 2, 3, 17, 5, 2, 0);
        f.buf_reg[b] = 0;
        REJECT_POST(&f, "a key for no registration");
        f.rkey_len[b] = 0;
        f.buf_len[b] = 0;
        ACCEPT_POST(&f);
    }
    f = post_fixed(DPS_COLL_ALLTOALL, 2, UINT32_MAX, UINT32_MAX, UINT32_MAX, 0,
                   0);
    REJECT_POST(&f, "rkey lengths that overflow 32 bits");
    f = post_fixed(DPS_COLL_ALLTOALL, 2, DPS_MAX_RKEY, DPS_MAX_RKEY,
                   DPS_MAX_RKEY, 1, 2);
    ACCEPT_POST(&f);
}
END_TEST

/* sched_id names the schedule: required unless the post is an error. */
START_TEST(post_no_sched_id)
{
    dps_msg_post_t f;
    size_t         len;
    char          *m;

    f = post_fixed(DPS_COLL_ALLTOALL, 4, 3, 17, 0, 2, 0);
    f.sched_id = 0;
    REJECT_POST(&f, "no schedule id, with steps");
    f = post_fixed(DPS_COLL_BCAST, 4, 0, 0, 0, 0, 4);
    f.sched_id = 0;
    REJECT_POST(&f, "no schedule id, schedule cached");
    f.flags = DPS_POST_SCHED;
    REJECT_POST(&f, "no schedule id, empty schedule");
    /* A poster's error needs none: it fails the instance. */
    f.error = DPS_ERR_ARG;
    ACCEPT_POST(&f);

    /* Patched in place in an encoder's message. */
    m = encoded_post(3, &len);
    put64(m, HDR + offsetof(dps_msg_post_t, sched_id), 0);
    REJECT(m, len, "sched_id patched to 0");
    put32(m, HDR + offsetof(dps_msg_post_t, error), (uint32_t)DPS_ERR_ARG);
    DECODE_OK(m, len, &(dps_msg_t){0});
    free(m);
}
END_TEST

/* flags: DPS_POST_SCHED alone, and always with steps. */
START_TEST(post_bad_flags)
{
    static const uint32_t bad[] = {
        2,         4, 0x80000000u, DPS_POST_SCHED | 2, DPS_POST_SCHED | 0x100,
        UINT32_MAX};
    static const uint32_t nsteps[] = {0, 1, 3};
    dps_msg_post_t        f;
    size_t                i, n, len;
    char                 *m;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        for (n = 0; n < sizeof(nsteps) / sizeof(nsteps[0]); n++) {
            f = post_fixed(DPS_COLL_ALLTOALL, 4, 3, 17, 5, nsteps[n], 4);
            f.flags = bad[i];
            REJECT_POST(&f, "unknown flags");
        }
    }
    /* Steps without DPS_POST_SCHED. */
    for (n = 1; n < sizeof(nsteps) / sizeof(nsteps[0]); n++) {
        f = post_fixed(DPS_COLL_ALLTOALL, 4, 3, 17, 5, nsteps[n], 0);
        f.flags = 0;
        REJECT_POST(&f, "steps without DPS_POST_SCHED");
        f.flags = DPS_POST_SCHED;
        ACCEPT_POST(&f);
    }
    /* No steps: with the flag (an empty schedule) or without (cached). */
    f = post_fixed(DPS_COLL_ALLTOALL, 4, 3, 17, 5, 0, 4);
    ACCEPT_POST(&f);
    f.flags = DPS_POST_SCHED;
    ACCEPT_POST(&f);

    /* More steps than any schedule has. */
    f = post_fixed(DPS_COLL_ALLTOALL, 4, 3, 17, 5, DPS_MAX_STEPS + 1, 0);
    REJECT_POST(&f, "nsteps above DPS_MAX_STEPS");
    f.nsteps = UINT32_MAX;
    REJECT_POST(&f, "nsteps UINT32_MAX");

    /* A body that really holds DPS_MAX_STEPS + 1 steps: refused for the
     * count, not the length; one step fewer is accepted. */
    f = post_fixed(DPS_COLL_ALLTOALL, 4, 0, 0, 0, DPS_MAX_STEPS + 1, 0);
    m = raw_post(DPS_MSG_POST, &f, post_tail(&f), &len);
    REJECT(m, len, "DPS_MAX_STEPS + 1 steps, all present");
    put32(m, offsetof(dps_msg_hdr_t, length), (uint32_t)(len - STEP));
    put32(m, HDR + offsetof(dps_msg_post_t, nsteps), DPS_MAX_STEPS);
    DECODE_OK(m, len - STEP, &(dps_msg_t){0});
    free(m);

    /* Patched in place in an encoder's message. */
    m = encoded_post(3, &len);
    put32(m, HDR + offsetof(dps_msg_post_t, flags), 0);
    REJECT(m, len, "flag cleared on a post with steps");
    put32(m, HDR + offsetof(dps_msg_post_t, flags), DPS_POST_SCHED | 2);
    REJECT(m, len, "unknown flag set on a post with steps");
    put32(m, HDR + offsetof(dps_msg_post_t, flags), DPS_POST_SCHED);
    DECODE_OK(m, len, &(dps_msg_t){0});
    free(m);
    m = encoded_post(0, &len);
    put32(m, HDR + offsetof(dps_msg_post_t, flags), 2);
    REJECT(m, len, "unknown flag set on a post without steps");
    free(m);
}
END_TEST

/* The body must hold exactly the keys, steps and members announced. */
START_TEST(post_bad_body_length)
{
    static const long     delta[] = {-40, -5, -1, +1, +3, +4, +40};
    static const uint32_t nsteps[] = {0, 3};
    dps_msg_post_t        f;
    size_t                len, i, t, n, keys;
    uint32_t              v;
    int                   mem;
    char                 *m;

    for (mem = 0; mem < 2; mem++) {
        for (n = 0; n < 2; n++) {
            f = post_fixed(DPS_COLL_ALLTOALL, 5, 3, 17, 1, nsteps[n],
                           mem ? 5 : 0);
            for (i = 0; i < sizeof(delta) / sizeof(delta[0]); i++) {
                long tl = (long)post_tail(&f) + delta[i];

                if (tl < 0) {
                    continue;
                }
                for (t = 0; t < 2; t++) {
                    m = raw_post(post_types[t], &f, (size_t)tl, &len);
                    REJECT(m, len, "body length not keys + steps + members");
                    free(m);
                }
            }
        }
    }
    keys = 3 + 17 + 1;
    for (t = 0; t < 2; t++) {
        /* Members announced but absent, and present but not announced. */
        f = post_fixed(DPS_COLL_ALLTOALL, 5, 3, 17, 1, 2, 5);
        m = raw_post(post_types[t], &f, keys + 2 * STEP, &len);
        REJECT(m, len, "members missing");
        free(m);
        f = post_fixed(DPS_COLL_ALLTOALL, 5, 3, 17, 1, 2, 0);
        m = raw_post(post_types[t], &f, keys + 2 * STEP + 5 * 4, &len);
        REJECT(m, len, "members not announced");
        free(m);
        /* Steps announced but absent, and present but not announced. */
        f = post_fixed(DPS_COLL_ALLTOALL, 5, 3, 17, 1, 4, 5);
        m = raw_post(post_types[t], &f, keys + 5 * 4, &len);
        REJECT(m, len, "steps missing");
        free(m);
        f = post_fixed(DPS_COLL_ALLTOALL, 5, 3, 17, 1, 0, 5);
        f.flags = DPS_POST_SCHED;
        m = raw_post(post_types[t], &f, keys + 4 * STEP + 5 * 4, &len);
        REJECT(m, len, "steps not announced");
        free(m);
        /* Steps up to the limit announced, a few present. */
        f = post_fixed(DPS_COLL_ALLTOALL, 5, 3, 17, 1, DPS_MAX_STEPS, 0);
        m = raw_post(post_types[t], &f, keys + 4 * STEP, &len);
        REJECT(m, len, "DPS_MAX_STEPS steps announced, 4 present");
        free(m);
    }
    /* nsteps and key lengths inconsistent with an encoded body. */
    m = encoded_post(4, &len);
    for (v = 0; v <= 8; v++) {
        if (v == 4) {
            continue;
        }
        put32(m, HDR + offsetof(dps_msg_post_t, nsteps), v);
        REJECT(m, len, "nsteps inconsistent with the length");
    }
    put32(m, HDR + offsetof(dps_msg_post_t, nsteps), DPS_MAX_STEPS);
    REJECT(m, len, "nsteps DPS_MAX_STEPS, 4 present");
    put32(m, HDR + offsetof(dps_msg_post_t, nsteps), 4);
    DECODE_OK(m, len, &(dps_msg_t){0});
    for (i = 0; i < DPS_NBUF; i++) {
        size_t   at = HDR + offsetof(dps_msg_post_t, rkey_len) + 4 * i;
        uint32_t was;

        memcpy(&was, m + at, 4);
        put32(m, at, was + 1);
        REJECT(m, len, "key one byte longer than the body holds");
        put32(m, at, was - 1);
        REJECT(m, len, "key one byte shorter than the body holds");
        put32(m, at, was + STEP);
        REJECT(m, len, "key a step longer than the body holds");
        put32(m, at, was);
    }
    DECODE_OK(m, len, &(dps_msg_t){0});
    free(m);
    /* Shorter than the fixed part. */
    f = post_fixed(DPS_COLL_ALLTOALL, 5, 3, 17, 1, 2, 0);
    for (i = 0; i < POSTF; i++) {
        char body[POSTF];

        memset(body, 0, sizeof(body));
        memcpy(body, &f, sizeof(f));
        m = raw_msg(DPS_MSG_POST, body, i, &len);
        REJECT(m, len, "post shorter than its fixed part");
        free(m);
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* Malformed job_info                                                 */
/* ------------------------------------------------------------------ */

START_TEST(job_bad_counts)
{
    job_fix_t     j;
    dps_msg_job_t f;
    uint32_t     *big_agent, *big_len, i;
    size_t        len;
    char         *m;

    job_init(&j, 6, 3, 2, 5);

    f = j.fixed;
    f.agent_idx = 3;
    m = raw_job(&f, j.rank_agent, j.rank_addr_len, 6, j.agent_addr_len, 3, 0,
                &len);
    REJECT(m, len, "agent_idx == nagents");
    free(m);
    f.agent_idx = UINT32_MAX;
    m = raw_job(&f, j.rank_agent, j.rank_addr_len, 6, j.agent_addr_len, 3, 0,
                &len);
    REJECT(m, len, "agent_idx huge");
    free(m);

    f = j.fixed;
    f.nagents = 0;
    f.agent_idx = 0;
    m = raw_job(&f, j.rank_agent, j.rank_addr_len, 6, j.agent_addr_len, 0, 0,
                &len);
    REJECT(m, len, "no agents");
    free(m);

    f = j.fixed;
    f.nranks = 0;
    m = raw_job(&f, j.rank_agent, j.rank_addr_len, 0, j.agent_addr_len, 3, 0,
                &len);
    REJECT(m, len, "no ranks");
    free(m);

    f = j.fixed;
    f.nranks = DPS_MAX_RANKS + 1;
    m = raw_job(&f, j.rank_agent, j.rank_addr_len, 6, j.agent_addr_len, 3, 0,
                &len);
    REJECT(m, len, "nranks above DPS_MAX_RANKS");
    free(m);

    /* nagents > nranks, with tables and addresses that match it. */
    big_agent = xmalloc(7 * sizeof(uint32_t));
    big_len = xmalloc(7 * sizeof(uint32_t));
    for (i = 0; i < 7; i++) {
        big_agent[i] = i % 3;
        big_len[i] = 4 + i;
    }
    f.nranks = 6;
    f.nagents = 7;
    f.agent_idx = 0;
    m = raw_job(&f, big_agent, j.rank_addr_len, 6, big_len, 7, 0, &len);
    REJECT(m, len, "nagents > nranks");
    free(m);
    f.nranks = 1;
    f.nagents = 2;
    m = raw_job(&f, big_agent, big_len, 1, big_len, 2, 0, &len);
    REJECT(m, len, "2 agents for 1 rank");
    free(m);
    free(big_agent);
    free(big_len);
    job_free(&j);
}
END_TEST

START_TEST(job_bad_rank_agent)
{
    job_fix_t j;
    size_t    len;
    uint32_t  r, save;
    char     *m;

    job_init(&j, 6, 3, 1, 5);
    for (r = 0; r < 6; r++) {
        save = j.rank_agent[r];
        j.rank_agent[r] = 3;
        m = raw_job_fix(&j, 0, &len);
        REJECT(m, len, "rank_agent == nagents");
        free(m);
        j.rank_agent[r] = UINT32_MAX;
        m = raw_job_fix(&j, 0, &len);
        REJECT(m, len, "rank_agent huge");
        free(m);
        j.rank_agent[r] = save;
    }
    job_free(&j);
}
END_TEST

START_TEST(job_bad_addr_len)
{
    static const uint32_t bad[] = {0, DPS_MAX_ADDR + 1, 100000};
    job_fix_t             j;
    size_t                len, b;
    uint32_t              i, save;
    char                 *m;

    job_init(&j, 4, 2, 0, 7);
    for (b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
        for (i = 0; i < 4; i++) {
            save = j.rank_addr_len[i];
            j.rank_addr_len[i] = bad[b];
            m = raw_job_fix(&j, 0, &len);
            REJECT(m, len, "bad rank address length");
            free(m);
            j.rank_addr_len[i] = save;
        }
        for (i = 0; i < 2; i++) {
            save = j.agent_addr_len[i];
            j.agent_addr_len[i] = bad[b];
            m = raw_job_fix(&j, 0, &len);
            REJECT(m, len, "bad agent address length");
            free(m);
            j.agent_addr_len[i] = save;
        }
    }
    job_free(&j);
}
END_TEST

START_TEST(job_truncated_or_trailing)
{
    job_fix_t j;
    size_t    len, nlen, tables, cut;
    char     *m, *r;

    job_init(&j, 5, 2, 1, 6);
    m = job_encode(&j, &len);
    ck_assert_ptr_nonnull(m);
    tables = HDR + JOBF + 4 * (2 * 5 + 2);

    /* Cut inside the fixed part, each table, and the addresses. */
    for (cut = HDR; cut < len; cut++) {
        r = resized(m, len, (int)cut - (int)len, &nlen);
        REJECT(r, nlen,
               cut < tables ? "tables truncated" : "addresses truncated");
        free(r);
    }
    /* Trailing bytes. */
    for (cut = 1; cut <= 9; cut++) {
        r = resized(m, len, (int)cut, &nlen);
        REJECT(r, nlen, "trailing bytes");
        free(r);
    }
    free(m);
    job_free(&j);
}
END_TEST

/* flags (DPS_JOB_PUSH alone) and pad (0) follow job_key; anything else
 * is refused, and says so. */
START_TEST(job_flags)
{
    static const uint32_t bad[] = {2, DPS_JOB_PUSH | 2, 0x100, 0x80000000u,
                                   UINT32_MAX};
    const size_t          at_flags = HDR + offsetof(dps_msg_job_t, flags);
    const size_t          at_pad = HDR + offsetof(dps_msg_job_t, pad);
    char                  err[ERR_LEN];
    job_fix_t             j;
    dps_msg_t             msg;
    size_t                len, i;
    uint32_t              v;
    char                 *m;

    ck_assert_uint_eq(offsetof(dps_msg_job_t, flags), 16);
    ck_assert_uint_eq(offsetof(dps_msg_job_t, pad), 20);
    ck_assert_uint_eq(JOBF, 24);
    job_init(&j, 4, 2, 1, 5);
    j.fixed.flags = DPS_JOB_PUSH;
    m = job_encode(&j, &len);
    ck_assert_ptr_nonnull(m);
    memcpy(&v, m + at_flags, 4);
    ck_assert_uint_eq(v, DPS_JOB_PUSH);
    memcpy(&v, m + at_pad, 4);
    ck_assert_uint_eq(v, 0);
    DECODE_OK(m, len, &msg);
    ck_assert_uint_eq(msg.u.job.fixed.flags, DPS_JOB_PUSH);
    ck_assert_uint_eq(msg.u.job.fixed.pad, 0);

    /* Patched in place. */
    put32(m, at_flags, 2);
    REJECT(m, len, "job_info flags 2");
    memset(err, 0, sizeof(err));
    ck_assert_int_eq(dps_msg_decode(m, len, &msg, err, sizeof(err)),
                     DPS_ERR_PROTO);
    ck_assert_msg(strstr(err, "unknown flags") != NULL, "error: %s", err);
    put32(m, at_flags, DPS_JOB_PUSH);
    put32(m, at_pad, 1);
    REJECT(m, len, "job_info pad 1");
    put32(m, at_flags, 0);
    REJECT(m, len, "job_info pad 1, no flags");
    put32(m, at_pad, 0);
    DECODE_OK(m, len, &msg);
    ck_assert_uint_eq(msg.u.job.fixed.flags, 0);
    free(m);

    /* Built raw, tables and addresses right. */
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        j.fixed.flags = bad[i];
        m = raw_job_fix(&j, 0, &len);
        REJECT(m, len, "job_info unknown flags");
        free(m);
    }
    j.fixed.flags = DPS_JOB_PUSH;
    j.fixed.pad = UINT32_MAX;
    m = raw_job_fix(&j, 0, &len);
    REJECT(m, len, "job_info pad not 0");
    free(m);
    j.fixed.pad = 0;
    m = raw_job_fix(&j, 0, &len);
    DECODE_OK(m, len, &msg);
    ck_assert_uint_eq(msg.u.job.fixed.flags, DPS_JOB_PUSH);
    free(m);

    /* Whatever the encoder makes of unknown flags, no agent takes it. */
    j.fixed.flags = 2;
    m = job_encode(&j, &len);
    if (m != NULL) {
        REJECT(m, len, "encoded job_info with flags 2");
        free(m);
    }
    j.fixed.flags = 0;
    job_free(&j);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Every truncation of valid messages                                 */
/* ------------------------------------------------------------------ */

/* Every prefix is rejected, with the length field patched to the prefix
 * length and left as it was. Runs forked: a crash fails the test. */
static void reject_every_prefix(const char *m, size_t len, const char *what)
{
    size_t n;

    for (n = 0; n < len; n++) {
        char *c = dup_bytes(m, n);

        REJECT(c, n, what);
        if (n >= offsetof(dps_msg_hdr_t, length) + 4) {
            put32(c, offsetof(dps_msg_hdr_t, length), (uint32_t)n);
            REJECT(c, n, what);
        }
        free(c);
    }
}

START_TEST(trunc_post)
{
    /* key lengths of the three buffers, steps */
    static const uint32_t       cfg[][4] = {{1, 1, 1, 1},
                                            {3, 17, 0, 0},
                                            {17, 3, 5, 2},
                                            {5, 0, 0, 3},
                                            {0, 0, 0, 0}};
    static const dps_msg_type_t types[] = {DPS_MSG_POST, DPS_MSG_PEER_POST};
    uint32_t                    members[5] = {10, 20, 30, 40, 50};
    dps_step_t                 *steps = make_steps(3, 5, 6);
    uint8_t                     key[17];
    const void                 *keys[DPS_NBUF] = {key, key, key};
    size_t                      len, i, t;
    int                         mem;

    for (i = 0; i < sizeof(key); i++) {
        key[i] = pat(3, i);
    }
    for (t = 0; t < 2; t++) {
        for (i = 0; i < sizeof(cfg) / sizeof(cfg[0]); i++) {
            for (mem = 0; mem < 2; mem++) {
                uint32_t       coll = (uint32_t)(1 + i);
                dps_msg_post_t f =
                    post_fixed(coll, 5, cfg[i][0], cfg[i][1], cfg[i][2],
                               cfg[i][3], mem ? 5 : 0);
                char *m = dps_msg_encode_post(types[t], &f, keys, steps,
                                              mem ? members : NULL, &len);

                ck_assert_ptr_nonnull(m);
                reject_every_prefix(m, len, "truncated post");
                free(m);
            }
        }
    }
    free(steps);
}
END_TEST

START_TEST(trunc_job)
{
    static const uint32_t cfg[][4] = {
        {1, 1, 0, 1}, {4, 2, 1, 1}, {5, 2, 0, 6}, {7, 3, 2, 3}, {3, 3, 2, 2}};
    size_t len, i;

    for (i = 0; i < sizeof(cfg) / sizeof(cfg[0]); i++) {
        job_fix_t j;
        char     *m;

        job_init(&j, cfg[i][0], cfg[i][1], cfg[i][2], cfg[i][3]);
        m = job_encode(&j, &len);
        ck_assert_ptr_nonnull(m);
        reject_every_prefix(m, len, "truncated job_info");
        free(m);
        job_free(&j);
    }
}
END_TEST

START_TEST(trunc_fixed)
{
    size_t len;
    int    w;

    for (w = 0; w < FX_COUNT; w++) {
        char *m = make_fixed(w, &len);

        reject_every_prefix(m, len, "truncated fixed message");
        free(m);
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* Encoders refuse out-of-range input                                 */
/* ------------------------------------------------------------------ */

/* PROCS: round trip, and every truncation or padding is refused. */
START_TEST(rt_procs)
{
    uint32_t  pid[5] = {101, 202, 303, 404, 0xffffffffu};
    uint32_t  node[5] = {0, 0, 3, 3, 7};
    uint64_t  taddr[5] = {0x7ffd00001000ull, 0, 0x1000, UINT64_MAX, 8};
    uint64_t  tok[5] = {0x1122334455667788ull, 0, 1, UINT64_MAX, 42};
    dps_msg_t msg;
    size_t    len, cut, i;
    char      err[128];
    uint8_t  *m, *big;

    m = dps_msg_encode_procs(5, pid, node, taddr, tok, &len);
    ck_assert_ptr_nonnull(m);
    ck_assert_uint_eq(len, 16 + 8 + 40 + 80);
    ck_assert_int_eq(dps_msg_decode(m, len, &msg, err, sizeof(err)), DPS_OK);
    ck_assert_int_eq(msg.type, DPS_MSG_PROCS);
    ck_assert_uint_eq(msg.u.procs.fixed.nranks, 5);
    for (i = 0; i < 5; i++) {
        ck_assert_uint_eq(dps_msg_u32(msg.u.procs.pid, i), pid[i]);
        ck_assert_uint_eq(dps_msg_u32(msg.u.procs.node, i), node[i]);
        ck_assert_uint_eq(dps_msg_u64(msg.u.procs.token_addr, i), taddr[i]);
        ck_assert_uint_eq(dps_msg_u64(msg.u.procs.token, i), tok[i]);
    }
    /* The tables' places: pids, nodes, addresses, tokens. */
    {
        uint64_t v;

        memcpy(&v, m + 16 + 8 + 40 + 3 * 8, 8);
        ck_assert_uint_eq(v, taddr[3]);
        memcpy(&v, m + 16 + 8 + 40 + 40 + 4 * 8, 8);
        ck_assert_uint_eq(v, tok[4]);
    }
    for (cut = 0; cut < len; cut++) {
        uint8_t *t = malloc(len);
        uint32_t l32 = (uint32_t)cut;

        memcpy(t, m, len);
        if (cut >= 12) {
            memcpy(t + 8, &l32, sizeof(l32)); /* header length = prefix */
        }
        ck_assert_int_eq(dps_msg_decode(t, cut, &msg, err, sizeof(err)),
                         DPS_ERR_PROTO);
        free(t);
    }
    big = calloc(1, len + 4);
    memcpy(big, m, len);
    {
        uint32_t l32 = (uint32_t)(len + 4);

        memcpy(big + 8, &l32, sizeof(l32));
    }
    ck_assert_int_eq(dps_msg_decode(big, len + 4, &msg, err, sizeof(err)),
                     DPS_ERR_PROTO);
    ck_assert_ptr_null(dps_msg_encode_procs(0, pid, node, taddr, tok, &len));
    ck_assert_ptr_null(dps_msg_encode_procs(5, NULL, node, taddr, tok, &len));
    ck_assert_ptr_null(dps_msg_encode_procs(5, pid, node, NULL, tok, &len));
    ck_assert_ptr_null(dps_msg_encode_procs(5, pid, node, taddr, NULL, &len));
    /* A token without its address, or the reverse: refused both ways. */
    tok[1] = 7;
    ck_assert_ptr_null(dps_msg_encode_procs(5, pid, node, taddr, tok, &len));
    {
        uint64_t z = 0;

        memcpy(m + 16 + 8 + 40 + 40 + 8, &tok[1], 8);
        ck_assert_int_eq(dps_msg_decode(m, len, &msg, err, sizeof(err)),
                         DPS_ERR_PROTO);
        memcpy(m + 16 + 8 + 40 + 40 + 8, &z, 8);
        memcpy(m + 16 + 8 + 40, &z, 8); /* rank 0: token, no address */
        ck_assert_int_eq(dps_msg_decode(m, len, &msg, err, sizeof(err)),
                         DPS_ERR_PROTO);
    }
    ck_assert_str_eq(dps_msg_type_str(DPS_MSG_PROCS), "procs");
    free(big);
    free(m);
}
END_TEST

/* STATS_REQ and STATS: round trip; wrong body sizes refused. */
START_TEST(rt_stats)
{
    dps_msg_stats_t st = {123456789012345ull,
                          42,
                          7,
                          1ull << 40,
                          3,
                          5ull << 33,
                          9,
                          11,
                          1ull << 35,
                          40,
                          1000,
                          77,
                          123456,
                          0x0102030405060708ull,
                          1ull << 50,
                          UINT64_MAX - 1};
    dps_msg_t       msg;
    char            err[128];
    size_t          len;
    uint8_t        *m, *t;
    uint32_t        l32;

    m = dps_msg_encode_stats(&st, &len);
    ck_assert_ptr_nonnull(m);
    ck_assert_uint_eq(len, 16 + 112);
    /* The wire's bytes are the struct's, the new counters last. */
    ck_assert_mem_eq(m + 16, &st, sizeof(st));
    ck_assert_int_eq(dps_msg_decode(m, len, &msg, err, sizeof(err)), DPS_OK);
    ck_assert_int_eq(msg.type, DPS_MSG_STATS);
    ck_assert_uint_eq(msg.u.stats.cpu_ns, st.cpu_ns);
    ck_assert_uint_eq(msg.u.stats.collectives, 42);
    ck_assert_uint_eq(msg.u.stats.missed_wakeups, 7);
    ck_assert_uint_eq(msg.u.stats.cma_bytes, 1ull << 40);
    ck_assert_uint_eq(msg.u.stats.ucx_bytes, 3);
    ck_assert_uint_eq(msg.u.stats.dma_bytes, 5ull << 33);
    ck_assert_uint_eq(msg.u.stats.net_bytes, 9);
    ck_assert_uint_eq(msg.u.stats.fetches, 11);
    ck_assert_uint_eq(msg.u.stats.rss_kb, 1ull << 35);
    ck_assert_uint_eq(msg.u.stats.endpoints, 40);
    ck_assert_uint_eq(msg.u.stats.keys_peak, 1000);
    ck_assert_uint_eq(msg.u.stats.scheds_peak, 77);
    ck_assert_uint_eq(msg.u.stats.steps_peak, 123456);
    ck_assert_uint_eq(msg.u.stats.agent_msgs, 0x0102030405060708ull);
    ck_assert_uint_eq(msg.u.stats.pushes, 1ull << 50);
    ck_assert_uint_eq(msg.u.stats.pushed_bytes, UINT64_MAX - 1);
    {
        uint64_t v;

        memcpy(&v, m + 16 + 88, 8);
        ck_assert_uint_eq(v, st.agent_msgs);
        memcpy(&v, m + 16 + 96, 8);
        ck_assert_uint_eq(v, st.pushes);
        memcpy(&v, m + 16 + 104, 8);
        ck_assert_uint_eq(v, st.pushed_bytes);
    }
    t = malloc(len - 1);
    memcpy(t, m, len - 1);
    l32 = (uint32_t)(len - 1);
    memcpy(t + 8, &l32, sizeof(l32));
    ck_assert_int_eq(dps_msg_decode(t, len - 1, &msg, err, sizeof(err)),
                     DPS_ERR_PROTO);
    /* A protocol 10 agent's 88 bytes (with a version 11 header). */
    l32 = 16 + 88;
    memcpy(t + 8, &l32, sizeof(l32));
    ck_assert_int_eq(dps_msg_decode(t, 16 + 88, &msg, err, sizeof(err)),
                     DPS_ERR_PROTO);
    free(t);
    free(m);
    m = dps_msg_encode_stats_req(&len);
    ck_assert_ptr_nonnull(m);
    ck_assert_uint_eq(len, 16);
    ck_assert_int_eq(dps_msg_decode(m, len, &msg, err, sizeof(err)), DPS_OK);
    ck_assert_int_eq(msg.type, DPS_MSG_STATS_REQ);
    ck_assert_str_eq(dps_msg_type_str(DPS_MSG_STATS_REQ), "stats_req");
    ck_assert_str_eq(dps_msg_type_str(DPS_MSG_STATS), "stats");
    free(m);
}
END_TEST

/* The encoder refuses every post the decoder would refuse, so a bad
 * post is caught where it is made, not by the agent. */
START_TEST(enc_post_matches_decoder)
{
    uint8_t        key[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const void    *keys[DPS_NBUF] = {key, key, key};
    const void    *some[DPS_NBUF];
    uint32_t       members[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    dps_step_t    *steps = make_steps(2, 4, 5);
    dps_msg_post_t f;
    dps_msg_t      msg;
    size_t         len;
    void          *m;
    int            i, b;

    for (i = 0; i < 14; i++) {
        f = post_fixed(DPS_COLL_ALLTOALL, 4, 3, 3, 3, 2, 0);
        switch (i) {
        case 0: f.coll = 99; break;
        case 1: f.coll = 0; break;
        case 2: f.coll = DPS_COLL_MAX; break;
        case 3:
            f.comm_size = 0;
            f.comm_rank = 0;
            break;
        case 4: f.comm_rank = 4; break;
        case 5: f.sched_id = 0; break;
        case 6: f.flags = 0; break;
        case 7: f.flags = DPS_POST_SCHED | 2; break;
        case 8: f.buf_reg[0] = 0; break;
        case 9: f.buf_reg[2] = 0; break;
        case 10: f.nsteps = DPS_MAX_STEPS + 1; break;
        case 11: f.nmembers = 3; break;
        case 12: f.rkey_len[1] = DPS_MAX_RKEY + 1; break;
        case 13:
            f.nsteps = 0;
            f.flags = 4;
            break;
        }
        ck_assert_msg(dps_msg_encode_post(DPS_MSG_POST, &f, keys, steps,
                                          members, &len) == NULL,
                      "case %d encoded", i);
        REJECT_POST(&f, "refused by the encoder");
    }
    /* Non-zero key lengths with NULL keys. */
    f = post_fixed(DPS_COLL_ALLTOALL, 4, 3, 3, 3, 2, 0);
    ck_assert_ptr_null(
        dps_msg_encode_post(DPS_MSG_POST, &f, NULL, steps, NULL, &len));
    for (b = 0; b < DPS_NBUF; b++) {
        memcpy(some, keys, sizeof(some));
        some[b] = NULL;
        ck_assert_ptr_null(
            dps_msg_encode_post(DPS_MSG_POST, &f, some, steps, NULL, &len));
    }
    /* Steps announced, none given. */
    ck_assert_ptr_null(
        dps_msg_encode_post(DPS_MSG_POST, &f, keys, NULL, NULL, &len));
    /* Keys the agent has cached are not sent, nor a schedule it has: ids
     * alone. */
    f = post_fixed(DPS_COLL_ALLTOALL, 4, 0, 0, 0, 0, 0);
    m = dps_msg_encode_post(DPS_MSG_POST, &f, NULL, NULL, NULL, &len);
    ck_assert_ptr_nonnull(m);
    ck_assert_uint_eq(len, HDR + POSTF);
    DECODE_OK(m, len, &msg);
    ck_assert_uint_eq(msg.u.post.fixed.flags, 0);
    ck_assert_ptr_null(msg.u.post.steps);
    free(m);
    /* An empty schedule travels with the flag alone. */
    f.flags = DPS_POST_SCHED;
    m = dps_msg_encode_post(DPS_MSG_PEER_POST, &f, NULL, NULL, NULL, &len);
    ck_assert_ptr_nonnull(m);
    DECODE_OK(m, len, &msg);
    ck_assert_uint_eq(msg.u.post.fixed.flags, DPS_POST_SCHED);
    ck_assert_uint_eq(msg.u.post.fixed.nsteps, 0);
    free(m);
    /* Empty buffers have neither registration nor key. */
    f = post_fixed(DPS_COLL_BCAST, 4, 3, 0, 0, 2, 0);
    for (b = 1; b < DPS_NBUF; b++) {
        f.buf_addr[b] = f.buf_len[b] = f.buf_reg[b] = 0;
        some[b] = NULL;
    }
    some[0] = key;
    m = dps_msg_encode_post(DPS_MSG_POST, &f, some, steps, NULL, &len);
    ck_assert_ptr_nonnull(m);
    DECODE_OK(m, len, &msg);
    free(m);
    /* A poster's error needs no schedule id. */
    f = post_fixed(DPS_COLL_BCAST, 4, 0, 0, 0, 0, 4);
    f.sched_id = 0;
    f.error = DPS_ERR_ARG;
    m = dps_msg_encode_post(DPS_MSG_POST, &f, NULL, NULL, members, &len);
    ck_assert_ptr_nonnull(m);
    DECODE_OK(m, len, &msg);
    ck_assert_int_eq(msg.u.post.fixed.error, DPS_ERR_ARG);
    free(m);
    free(steps);
}
END_TEST

START_TEST(enc_post_null)
{
    uint32_t       members[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    uint8_t       *key = xmalloc(DPS_MAX_RKEY + 1);
    const void    *keys[DPS_NBUF] = {key, key, key};
    dps_step_t    *steps = make_steps(3, 4, 7);
    dps_msg_post_t f;
    size_t         len;
    unsigned       t;
    int            b;
    void          *m;

    memset(key, 0x3c, DPS_MAX_RKEY + 1);
    /* Every type but the two posts, 0 and the first unknown one. */
    for (t = 0; t <= DPS_MSG_TYPE_MAX; t++) {
        if (t == DPS_MSG_POST || t == DPS_MSG_PEER_POST) {
            continue;
        }
        f = post_fixed(DPS_COLL_ALLTOALL, 4, 3, 3, 3, 3, 4);
        ck_assert_msg(dps_msg_encode_post((dps_msg_type_t)t, &f, keys, steps,
                                          members, &len) == NULL,
                      "post encoded as type %u", t);
    }
    f = post_fixed(DPS_COLL_ALLTOALL, 4, 3, 3, 3, 3, 3);
    ck_assert_ptr_null(
        dps_msg_encode_post(DPS_MSG_POST, &f, keys, steps, members, &len));
    f = post_fixed(DPS_COLL_ALLTOALL, 4, 3, 3, 3, 3, 5);
    ck_assert_ptr_null(
        dps_msg_encode_post(DPS_MSG_POST, &f, keys, steps, members, &len));
    f = post_fixed(DPS_COLL_BCAST, 4, 3, 0, 0, 0, 1);
    ck_assert_ptr_null(
        dps_msg_encode_post(DPS_MSG_PEER_POST, &f, keys, NULL, members, &len));
    /* Members announced, none given. */
    f = post_fixed(DPS_COLL_ALLTOALL, 4, 3, 3, 3, 3, 4);
    ck_assert_ptr_null(
        dps_msg_encode_post(DPS_MSG_POST, &f, keys, steps, NULL, &len));
    ck_assert_ptr_null(
        dps_msg_encode_post(DPS_MSG_PEER_POST, &f, keys, steps, NULL, &len));
    for (b = 0; b < DPS_NBUF; b++) {
        f = post_fixed(DPS_COLL_ALLTOALL, 4, 3, 3, 3, 3, 0);
        f.rkey_len[b] = DPS_MAX_RKEY + 1;
        ck_assert_ptr_null(
            dps_msg_encode_post(DPS_MSG_POST, &f, keys, steps, NULL, &len));
    }
    f = post_fixed(DPS_COLL_ALLTOALL, DPS_MAX_RANKS + 1, 3, 3, 3, 3, 0);
    ck_assert_ptr_null(
        dps_msg_encode_post(DPS_MSG_POST, &f, keys, steps, NULL, &len));

    /* The limits themselves are fine. */
    f = post_fixed(DPS_COLL_ALLTOALL, 4, DPS_MAX_RKEY, DPS_MAX_RKEY,
                   DPS_MAX_RKEY, 3, 0);
    m = dps_msg_encode_post(DPS_MSG_POST, &f, keys, steps, NULL, &len);
    ck_assert_ptr_nonnull(m);
    free(m);
    f = post_fixed(DPS_COLL_MAX - 1, 4, 3, 3, 3, 3, 4);
    m = dps_msg_encode_post(DPS_MSG_PEER_POST, &f, keys, steps, members, &len);
    ck_assert_ptr_nonnull(m);
    free(m);
    free(steps);
    free(key);
}
END_TEST

START_TEST(enc_job_null)
{
    job_fix_t     j;
    dps_msg_job_t save;
    size_t        len;
    uint32_t      s;

    job_init(&j, 4, 2, 1, 5);
    save = j.fixed;

#define JOB_NULL(_what) \
    ck_assert_msg(job_encode(&j, &len) == NULL, "encoded: %s", _what)

    j.fixed.nranks = 0;
    JOB_NULL("no ranks");
    j.fixed = save;
    j.fixed.nranks = DPS_MAX_RANKS + 1;
    JOB_NULL("nranks above DPS_MAX_RANKS");
    j.fixed = save;
    j.fixed.nagents = 0;
    j.fixed.agent_idx = 0;
    JOB_NULL("no agents");
    j.fixed = save;
    j.fixed.nranks = 1;
    JOB_NULL("2 agents for 1 rank");
    j.fixed = save;
    j.fixed.agent_idx = 2;
    JOB_NULL("agent_idx == nagents");
    j.fixed = save;

    s = j.rank_agent[3];
    j.rank_agent[3] = 2;
    JOB_NULL("rank_agent == nagents");
    j.rank_agent[3] = s;

    s = j.rank_addr_len[2];
    j.rank_addr_len[2] = 0;
    JOB_NULL("rank address length 0");
    j.rank_addr_len[2] = DPS_MAX_ADDR + 1;
    JOB_NULL("rank address too long");
    j.rank_addr_len[2] = s;

    s = j.agent_addr_len[1];
    j.agent_addr_len[1] = 0;
    JOB_NULL("agent address length 0");
    j.agent_addr_len[1] = DPS_MAX_ADDR + 1;
    JOB_NULL("agent address too long");
    j.agent_addr_len[1] = s;
#undef JOB_NULL

    {
        void *m = job_encode(&j, &len);

        ck_assert_ptr_nonnull(m);
        free(m);
    }
    job_free(&j);
}
END_TEST

/* A job whose addresses exceed the 32-bit length field is refused. */
START_TEST(enc_job_too_big)
{
    const uint32_t n = 600000; /* 600000 * 8192 bytes > 4 GiB */
    static uint8_t addr[DPS_MAX_ADDR];
    uint32_t      *ra = xmalloc(n * sizeof(uint32_t));
    uint32_t      *rl = xmalloc(n * sizeof(uint32_t));
    const void   **rp = xmalloc(n * sizeof(void *));
    const void    *ap[1] = {addr};
    uint32_t       al[1] = {DPS_MAX_ADDR}, i;
    dps_msg_job_t  f = {n, 1, 0, 0, 0, 0};
    size_t         len;

    for (i = 0; i < n; i++) {
        ra[i] = 0;
        rl[i] = DPS_MAX_ADDR;
        rp[i] = addr;
    }
    ck_assert_ptr_null(dps_msg_encode_job(&f, ra, rp, rl, ap, al, &len));
    free(ra);
    free(rl);
    free(rp);
}
END_TEST

/* ------------------------------------------------------------------ */
/* PUSH                                                               */
/* ------------------------------------------------------------------ */

#define PUSHF sizeof(dps_msg_push_t)

static uint32_t get32(const void *buf, size_t off)
{
    uint32_t v;

    memcpy(&v, (const char *)buf + off, sizeof(v));
    return v;
}

static uint64_t get64(const void *buf, size_t off)
{
    uint64_t v;

    memcpy(&v, (const char *)buf + off, sizeof(v));
    return v;
}

/* A piece [off, off + len) of total bytes, every other field set (no
 * flags, sent by agent 6). */
static dps_msg_push_t push_fixed(uint64_t off, uint64_t len, uint64_t total)
{
    dps_msg_push_t f;

    memset(&f, 0, sizeof(f));
    f.comm_id = 0x0123456789abcdefull;
    f.seq = 0xdeadbeefu;
    f.src = 3;
    f.dst = DPS_MAX_RANKS - 1;
    f.k = 0x7fffffffu;
    f.off = off;
    f.len = len;
    f.total = total;
    f.agent = 6;
    return f;
}

/* A PUSH as an agent builds one: dps_msg_push_put, then the f->len
 * bytes of pattern seed right after. */
static char *push_msg(const dps_msg_push_t *f, unsigned seed, size_t *len)
{
    size_t n = DPS_PUSH_HEAD + (size_t)f->len, i;
    char  *m = xmalloc(n);

    ck_assert_int_eq(dps_msg_push_put(f, m), DPS_OK);
    for (i = 0; i < f->len; i++) {
        m[DPS_PUSH_HEAD + i] = (char)pat(seed, i);
    }
    *len = n;
    return m;
}

/* A PUSH with a correct header: *f then ndata pattern bytes, whatever
 * *f says. */
static char *raw_push(const dps_msg_push_t *f, size_t ndata, size_t *len)
{
    char  *body = xmalloc(PUSHF + ndata), *m;
    size_t i;

    memcpy(body, f, PUSHF);
    for (i = 0; i < ndata; i++) {
        body[PUSHF + i] = (char)pat(11, i);
    }
    m = raw_msg(DPS_MSG_PUSH, body, PUSHF + ndata, len);
    free(body);
    return m;
}

/* Header, fixed part and data through, byte for byte, decoded in place
 * and from an odd address. */
START_TEST(rt_push)
{
    /* off, len, total */
    static const uint64_t cases[][3] = {{0, 0, 0},
                                        {0, 1, 1},
                                        {0, 5, 4096},
                                        {4091, 5, 4096},
                                        {4096, 0, 4096},
                                        {1u << 20, 4096, (1u << 20) + 8192},
                                        {UINT64_MAX - 3, 3, UINT64_MAX}};
    /* The sending agent's index: any below DPS_MAX_RANKS. */
    static const uint32_t agents[] = {
        0, 1, 6, 0x12345, DPS_MAX_RANKS - 2, DPS_MAX_RANKS - 1, 1000};
    size_t i, k, len;
    int    pass;

    _Static_assert(sizeof(agents) / sizeof(agents[0]) ==
                       sizeof(cases) / sizeof(cases[0]),
                   "an agent for every case");
    ck_assert_uint_eq(PUSHF, 56);
    ck_assert_uint_eq(DPS_PUSH_HEAD, HDR + 56);
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        dps_msg_push_t f = push_fixed(cases[i][0], cases[i][1], cases[i][2]);
        char          *m, *shifted;

        f.seq += (uint32_t)i;
        f.src = (uint32_t)i * 1000;
        f.agent = agents[i];
        m = push_msg(&f, (unsigned)i, &len);
        check_hdr(m, len, DPS_MSG_PUSH);
        ck_assert_uint_eq(len, HDR + PUSHF + f.len);
        /* Little-endian, fixed offsets (both ISAs read these). */
        ck_assert_mem_eq(m + HDR, &f, PUSHF);
        ck_assert_uint_eq(get64(m, HDR + 0), f.comm_id);
        ck_assert_uint_eq(get32(m, HDR + 8), f.seq);
        ck_assert_uint_eq(get32(m, HDR + 12), f.src);
        ck_assert_uint_eq(get32(m, HDR + 16), f.dst);
        ck_assert_uint_eq(get32(m, HDR + 20), f.k);
        ck_assert_uint_eq(get64(m, HDR + 24), f.off);
        ck_assert_uint_eq(get64(m, HDR + 32), f.len);
        ck_assert_uint_eq(get64(m, HDR + 40), f.total);
        ck_assert_uint_eq(get32(m, HDR + 48), 0);
        ck_assert_uint_eq(get32(m, HDR + 52), agents[i]);
        shifted = xmalloc(len + 1);
        memcpy(shifted + 1, m, len);
        for (pass = 0; pass < 2; pass++) {
            const char *buf = pass ? shifted + 1 : m;
            dps_msg_t   msg;

            memset(&msg, 0xa5, sizeof(msg));
            DECODE_OK(buf, len, &msg);
            ck_assert_int_eq(msg.type, DPS_MSG_PUSH);
            ck_assert_mem_eq(&msg.u.push.fixed, &f, PUSHF);
            ck_assert_uint_eq(msg.u.push.fixed.comm_id, f.comm_id);
            ck_assert_uint_eq(msg.u.push.fixed.seq, f.seq);
            ck_assert_uint_eq(msg.u.push.fixed.src, f.src);
            ck_assert_uint_eq(msg.u.push.fixed.dst, f.dst);
            ck_assert_uint_eq(msg.u.push.fixed.k, f.k);
            ck_assert_uint_eq(msg.u.push.fixed.off, cases[i][0]);
            ck_assert_uint_eq(msg.u.push.fixed.len, cases[i][1]);
            ck_assert_uint_eq(msg.u.push.fixed.total, cases[i][2]);
            ck_assert_uint_eq(msg.u.push.fixed.flags, 0);
            ck_assert_uint_eq(msg.u.push.fixed.agent, agents[i]);
            /* The data in place, right after the fixed part. */
            ck_assert_ptr_eq(msg.u.push.data,
                             (const uint8_t *)buf + DPS_PUSH_HEAD);
            for (k = 0; k < f.len; k++) {
                ck_assert_uint_eq(msg.u.push.data[k], pat((unsigned)i, k));
            }
        }
        free(shifted);
        free(m);
    }
}
END_TEST

/* DPS_PUSH_FETCH: no data, the receiver's agent fetches the transfer. */
START_TEST(rt_push_fetch)
{
    dps_msg_push_t f = push_fixed(0, 0, 1u << 20);
    dps_msg_t      msg;
    size_t         len;
    char          *m;

    f.flags = DPS_PUSH_FETCH;
    f.agent = DPS_MAX_RANKS - 1;
    m = push_msg(&f, 0, &len);
    check_hdr(m, len, DPS_MSG_PUSH);
    ck_assert_uint_eq(len, DPS_PUSH_HEAD);
    ck_assert_uint_eq(get32(m, HDR + 48), 1); /* DPS_PUSH_FETCH */
    ck_assert_uint_eq(get32(m, HDR + 52), DPS_MAX_RANKS - 1);
    DECODE_OK(m, len, &msg);
    ck_assert_int_eq(msg.type, DPS_MSG_PUSH);
    ck_assert_mem_eq(&msg.u.push.fixed, &f, PUSHF);
    ck_assert_uint_eq(msg.u.push.fixed.flags, DPS_PUSH_FETCH);
    ck_assert_uint_eq(msg.u.push.fixed.len, 0);
    ck_assert_uint_eq(msg.u.push.fixed.off, 0);
    ck_assert_uint_eq(msg.u.push.fixed.total, 1u << 20);
    ck_assert_uint_eq(msg.u.push.fixed.agent, DPS_MAX_RANKS - 1);
    ck_assert_ptr_eq(msg.u.push.data, (const uint8_t *)m + len);
    free(m);
    /* Of an empty transfer too. */
    f.total = 0;
    m = push_msg(&f, 0, &len);
    DECODE_OK(m, len, &msg);
    ck_assert_uint_eq(msg.u.push.fixed.flags, DPS_PUSH_FETCH);
    free(m);
}
END_TEST

/* DPS_PUSH_EARLY: a piece pushed before the receiver posted, on credit;
 * otherwise a piece like any other (data, any offset, even empty). */
START_TEST(rt_push_early)
{
    /* off, len, total, agent */
    static const uint64_t cases[][4] = {
        {0, 5, 4096, 0},
        {4091, 5, 4096, 1},
        {0, 0, 0, 2},
        {4096, 0, 4096, DPS_MAX_RANKS - 1},
        {1u << 20, 4096, (1u << 20) + 8192, 77},
        {UINT64_MAX - 3, 3, UINT64_MAX, DPS_MAX_RANKS - 1}};
    dps_msg_t msg;
    size_t    i, k, len;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        dps_msg_push_t f = push_fixed(cases[i][0], cases[i][1], cases[i][2]);
        char          *m;

        f.flags = DPS_PUSH_EARLY;
        f.agent = (uint32_t)cases[i][3];
        f.k = (uint32_t)i;
        m = push_msg(&f, 40 + (unsigned)i, &len);
        check_hdr(m, len, DPS_MSG_PUSH);
        ck_assert_uint_eq(len, DPS_PUSH_HEAD + cases[i][1]);
        ck_assert_mem_eq(m + HDR, &f, PUSHF);
        ck_assert_uint_eq(get32(m, HDR + 48), 2); /* DPS_PUSH_EARLY */
        ck_assert_uint_eq(get32(m, HDR + 52), cases[i][3]);
        memset(&msg, 0xa5, sizeof(msg));
        DECODE_OK(m, len, &msg);
        ck_assert_int_eq(msg.type, DPS_MSG_PUSH);
        ck_assert_mem_eq(&msg.u.push.fixed, &f, PUSHF);
        ck_assert_uint_eq(msg.u.push.fixed.flags, DPS_PUSH_EARLY);
        ck_assert_uint_eq(msg.u.push.fixed.agent, cases[i][3]);
        ck_assert_uint_eq(msg.u.push.fixed.off, cases[i][0]);
        ck_assert_uint_eq(msg.u.push.fixed.len, cases[i][1]);
        ck_assert_uint_eq(msg.u.push.fixed.total, cases[i][2]);
        ck_assert_ptr_eq(msg.u.push.data, (const uint8_t *)m + DPS_PUSH_HEAD);
        for (k = 0; k < cases[i][1]; k++) {
            ck_assert_uint_eq(msg.u.push.data[k], pat(40 + (unsigned)i, k));
        }
        free(m);
    }
}
END_TEST

/* Decode must refuse buf with a reason containing want. */
static void reject_why_at(const void *buf, size_t len, const char *want,
                          int line)
{
    char      err[ERR_LEN] = "";
    dps_msg_t msg;

    ck_assert_msg(dps_msg_decode(buf, len, &msg, err, sizeof(err)) ==
                      DPS_ERR_PROTO,
                  "line %d: %s: not refused", line, want);
    ck_assert_msg(strstr(err, want) != NULL, "line %d: '%s', not '%s'", line,
                  err, want);
}
#define REJECT_WHY(_b, _l, _w) reject_why_at((_b), (_l), (_w), __LINE__)

/* Each of the decoder's refusals, alone in an otherwise valid piece. */
START_TEST(bad_push)
{
    const dps_msg_push_t good = push_fixed(8, 4, 16);
    dps_msg_push_t       f;
    dps_msg_t            msg;
    size_t               len, n;
    char                *m;

    /* The raw builder lays a piece out as the encoder does. */
    m = raw_push(&good, 4, &len);
    DECODE_OK(m, len, &msg);
    ck_assert_mem_eq(&msg.u.push.fixed, &good, PUSHF);
    ck_assert_uint_eq(msg.u.push.data[3], pat(11, 3));
    free(m);

#define PUSH_REJECT(_f, _n, _what)       \
    do {                                 \
        m = raw_push(&(_f), (_n), &len); \
        REJECT(m, len, _what);           \
        free(m);                         \
    } while (0)

    f = good;
    f.src = DPS_MAX_RANKS;
    PUSH_REJECT(f, 4, "push src out of range");
    f = good;
    f.dst = DPS_MAX_RANKS;
    PUSH_REJECT(f, 4, "push dst out of range");
    f = good;
    f.src = UINT32_MAX;
    PUSH_REJECT(f, 4, "push src UINT32_MAX");
    f = good;
    f.agent = DPS_MAX_RANKS;
    PUSH_REJECT(f, 4, "push agent out of range");
    f = good;
    f.agent = DPS_MAX_RANKS + 1;
    PUSH_REJECT(f, 4, "push agent DPS_MAX_RANKS + 1");
    f = good;
    f.agent = UINT32_MAX;
    PUSH_REJECT(f, 4, "push agent UINT32_MAX");
    /* Every bit but DPS_PUSH_FETCH's and DPS_PUSH_EARLY's, alone or
     * beside either: of an empty piece at 0, which each of the two
     * flags alone takes. */
    for (n = 2; n < 32; n++) {
        f = push_fixed(0, 0, 16);
        f.flags = 1u << n;
        PUSH_REJECT(f, 0, "push unknown flag");
        f.flags = DPS_PUSH_FETCH | (1u << n);
        PUSH_REJECT(f, 0, "push unknown flag beside DPS_PUSH_FETCH");
        f.flags = DPS_PUSH_EARLY | (1u << n);
        PUSH_REJECT(f, 0, "push unknown flag beside DPS_PUSH_EARLY");
    }
    /* FETCH and EARLY together: never (a fetched transfer is not pushed,
     * early or not). */
    f = push_fixed(0, 0, 16);
    f.flags = DPS_PUSH_FETCH | DPS_PUSH_EARLY;
    PUSH_REJECT(f, 0, "push DPS_PUSH_FETCH | DPS_PUSH_EARLY");
    f.total = 0;
    PUSH_REJECT(f, 0, "push DPS_PUSH_FETCH | DPS_PUSH_EARLY, empty");
    f = good;
    f.flags = DPS_PUSH_FETCH | DPS_PUSH_EARLY;
    PUSH_REJECT(f, 4, "push DPS_PUSH_FETCH | DPS_PUSH_EARLY with data");
    f = push_fixed(0, 0, 16);
    f.flags = UINT32_MAX;
    PUSH_REJECT(f, 0, "push every flag");
    PUSH_REJECT(good, 3, "push data one byte shorter than len");
    PUSH_REJECT(good, 5, "push data one byte longer than len");
    PUSH_REJECT(good, 0, "push without the data len announces");
    f = push_fixed(0, 0, 16);
    PUSH_REJECT(f, 1, "push data where len is 0");
    f = push_fixed(17, 0, 16);
    PUSH_REJECT(f, 0, "push off > total");
    f = push_fixed(8, 9, 16);
    PUSH_REJECT(f, 9, "push len > total - off");
    /* off + len wraps to below total: refused all the same. */
    f = push_fixed(UINT64_MAX - 2, 5, UINT64_MAX);
    PUSH_REJECT(f, 5, "push off + len past 2^64");
    f = push_fixed(0, 4, 16);
    f.flags = DPS_PUSH_FETCH;
    PUSH_REJECT(f, 4, "push DPS_PUSH_FETCH with data");
    f = push_fixed(8, 0, 16);
    f.flags = DPS_PUSH_FETCH;
    PUSH_REJECT(f, 0, "push DPS_PUSH_FETCH at an offset");
#undef PUSH_REJECT
    for (n = 0; n < PUSHF; n++) {
        m = raw_msg(DPS_MSG_PUSH, &good, n, &len);
        REJECT(m, len, "push shorter than its fixed part");
        free(m);
    }

    /* The edges are fine: an empty piece at the end, the last piece,
     * the last ranks. */
    f = push_fixed(16, 0, 16);
    m = raw_push(&f, 0, &len);
    DECODE_OK(m, len, &msg);
    free(m);
    f = push_fixed(0, 16, 16);
    f.src = f.dst = DPS_MAX_RANKS - 1;
    f.agent = DPS_MAX_RANKS - 1;
    m = raw_push(&f, 16, &len);
    DECODE_OK(m, len, &msg);
    ck_assert_uint_eq(msg.u.push.fixed.src, DPS_MAX_RANKS - 1);
    ck_assert_uint_eq(msg.u.push.fixed.agent, DPS_MAX_RANKS - 1);
    free(m);
    /* Each flag alone, at the edges of what it takes. */
    f = push_fixed(0, 0, 16);
    f.flags = DPS_PUSH_FETCH;
    f.agent = 0;
    m = raw_push(&f, 0, &len);
    DECODE_OK(m, len, &msg);
    ck_assert_uint_eq(msg.u.push.fixed.flags, DPS_PUSH_FETCH);
    free(m);
    f.flags = DPS_PUSH_EARLY;
    m = raw_push(&f, 0, &len);
    DECODE_OK(m, len, &msg);
    ck_assert_uint_eq(msg.u.push.fixed.flags, DPS_PUSH_EARLY);
    free(m);
    f = push_fixed(12, 4, 16);
    f.flags = DPS_PUSH_EARLY;
    m = raw_push(&f, 4, &len);
    DECODE_OK(m, len, &msg);
    ck_assert_uint_eq(msg.u.push.fixed.flags, DPS_PUSH_EARLY);
    ck_assert_uint_eq(msg.u.push.data[3], pat(11, 3));
    free(m);

    /* The reasons name what is wrong. */
    f = good;
    f.agent = DPS_MAX_RANKS;
    m = raw_push(&f, 4, &len);
    REJECT_WHY(m, len, "push from rank 3 to rank 1048575 by agent 1048576");
    free(m);
    f = good;
    f.src = DPS_MAX_RANKS;
    f.agent = DPS_MAX_RANKS - 1;
    m = raw_push(&f, 4, &len);
    REJECT_WHY(m, len,
               "push from rank 1048576 to rank 1048575 by agent "
               "1048575");
    free(m);
    f = push_fixed(0, 0, 16);
    f.flags = DPS_PUSH_FETCH | DPS_PUSH_EARLY;
    m = raw_push(&f, 0, &len);
    REJECT_WHY(m, len, "push with flags 0x3");
    free(m);
    f.flags = DPS_PUSH_EARLY | 4;
    m = raw_push(&f, 0, &len);
    REJECT_WHY(m, len, "push with flags 0x6");
    free(m);
}
END_TEST

/* dps_msg_push_put refuses a piece out of range and then writes
 * nothing; it writes DPS_PUSH_HEAD bytes, never more. */
START_TEST(enc_push_put)
{
    const dps_msg_push_t good = push_fixed(8, 4, 16);
    uint8_t              out[DPS_PUSH_HEAD + 8];
    dps_msg_push_t       f;
    dps_msg_hdr_t        h;
    size_t               i;
    unsigned             n;

#define PUT_BAD(_f, _what)                                             \
    do {                                                               \
        memset(out, 0xee, sizeof(out));                                \
        ck_assert_msg(dps_msg_push_put(&(_f), out) == DPS_ERR_INVALID, \
                      "put: %s", _what);                               \
        for (i = 0; i < sizeof(out); i++) {                            \
            ck_assert_msg(out[i] == 0xee, "put wrote byte %zu: %s", i, \
                          _what);                                      \
        }                                                              \
    } while (0)

    f = good;
    f.src = DPS_MAX_RANKS;
    PUT_BAD(f, "src out of range");
    f = good;
    f.dst = DPS_MAX_RANKS;
    PUT_BAD(f, "dst out of range");
    f = good;
    f.agent = DPS_MAX_RANKS;
    PUT_BAD(f, "agent out of range");
    f = good;
    f.agent = UINT32_MAX;
    PUT_BAD(f, "agent UINT32_MAX");
    for (n = 2; n < 32; n++) {
        f = push_fixed(0, 0, 16);
        f.flags = 1u << n;
        PUT_BAD(f, "unknown flag");
        f.flags = DPS_PUSH_FETCH | (1u << n);
        PUT_BAD(f, "unknown flag beside DPS_PUSH_FETCH");
        f.flags = DPS_PUSH_EARLY | (1u << n);
        PUT_BAD(f, "unknown flag beside DPS_PUSH_EARLY");
    }
    f = push_fixed(0, 0, 16);
    f.flags = DPS_PUSH_FETCH | DPS_PUSH_EARLY;
    PUT_BAD(f, "DPS_PUSH_FETCH | DPS_PUSH_EARLY");
    f = good;
    f.flags = DPS_PUSH_FETCH | DPS_PUSH_EARLY;
    PUT_BAD(f, "DPS_PUSH_FETCH | DPS_PUSH_EARLY with data");
    f = push_fixed(17, 0, 16);
    PUT_BAD(f, "off > total");
    f = push_fixed(8, 9, 16);
    PUT_BAD(f, "len > total - off");
    f = push_fixed(UINT64_MAX - 2, 5, UINT64_MAX);
    PUT_BAD(f, "off + len past 2^64");
    f = push_fixed(0, 4, 16);
    f.flags = DPS_PUSH_FETCH;
    PUT_BAD(f, "DPS_PUSH_FETCH with data");
    f = push_fixed(8, 0, 16);
    f.flags = DPS_PUSH_FETCH;
    PUT_BAD(f, "DPS_PUSH_FETCH at an offset");
    /* A piece the 32-bit length field cannot hold. */
    f = push_fixed(0, (uint64_t)UINT32_MAX - DPS_PUSH_HEAD + 1, UINT64_MAX);
    PUT_BAD(f, "length past UINT32_MAX");
    f = push_fixed(0, UINT64_MAX, UINT64_MAX);
    PUT_BAD(f, "len UINT64_MAX");
#undef PUT_BAD

    /* The largest piece that fits: only the header and fixed part are
     * written. */
    f = push_fixed(0, (uint64_t)UINT32_MAX - DPS_PUSH_HEAD, UINT64_MAX);
    memset(out, 0xee, sizeof(out));
    ck_assert_int_eq(dps_msg_push_put(&f, out), DPS_OK);
    memcpy(&h, out, HDR);
    ck_assert_uint_eq(h.magic, DPS_PROTO_MAGIC);
    ck_assert_uint_eq(h.version, DPS_PROTO_VERSION);
    ck_assert_uint_eq(h.type, DPS_MSG_PUSH);
    ck_assert_uint_eq(h.length, UINT32_MAX);
    ck_assert_uint_eq(h.reserved, 0);
    ck_assert_mem_eq(out + HDR, &f, PUSHF);
    for (i = DPS_PUSH_HEAD; i < sizeof(out); i++) {
        ck_assert_uint_eq(out[i], 0xee);
    }
    f = good;
    ck_assert_int_eq(dps_msg_push_put(&f, out), DPS_OK);
    memcpy(&h, out, HDR);
    ck_assert_uint_eq(h.length, DPS_PUSH_HEAD + 4);
    ck_assert_uint_eq(out[DPS_PUSH_HEAD], 0xee);
    /* The last agent, early or fetching: written as given. */
    f.agent = DPS_MAX_RANKS - 1;
    f.flags = DPS_PUSH_EARLY;
    memset(out, 0xee, sizeof(out));
    ck_assert_int_eq(dps_msg_push_put(&f, out), DPS_OK);
    check_hdr(out, DPS_PUSH_HEAD + 4, DPS_MSG_PUSH);
    ck_assert_mem_eq(out + HDR, &f, PUSHF);
    ck_assert_uint_eq(get32(out, HDR + 52), DPS_MAX_RANKS - 1);
    ck_assert_uint_eq(out[DPS_PUSH_HEAD], 0xee);
    f = push_fixed(0, 0, 16);
    f.agent = DPS_MAX_RANKS - 1;
    f.flags = DPS_PUSH_FETCH;
    memset(out, 0xee, sizeof(out));
    ck_assert_int_eq(dps_msg_push_put(&f, out), DPS_OK);
    check_hdr(out, DPS_PUSH_HEAD, DPS_MSG_PUSH);
    ck_assert_mem_eq(out + HDR, &f, PUSHF);
    ck_assert_uint_eq(out[DPS_PUSH_HEAD], 0xee);
}
END_TEST

START_TEST(trunc_push)
{
    dps_msg_push_t f = push_fixed(8, 5, 16);
    size_t         len;
    char          *m = push_msg(&f, 3, &len);

    reject_every_prefix(m, len, "truncated push");
    free(m);
    f = push_fixed(0, 0, 16);
    f.flags = DPS_PUSH_FETCH;
    m = push_msg(&f, 3, &len);
    reject_every_prefix(m, len, "truncated fetch push");
    free(m);
    f = push_fixed(3, 9, 16);
    f.flags = DPS_PUSH_EARLY;
    f.agent = DPS_MAX_RANKS - 1;
    m = push_msg(&f, 4, &len);
    reject_every_prefix(m, len, "truncated early push");
    free(m);
}
END_TEST

/* ------------------------------------------------------------------ */
/* BUNDLE                                                             */
/* ------------------------------------------------------------------ */

/* A bundle of n whole messages (or any bytes) back to back. */
static char *bundle_of(const void *const *parts, const size_t *lens, size_t n,
                       size_t *len)
{
    size_t body = 0, off, i;
    char  *m;

    for (i = 0; i < n; i++) {
        body += lens[i];
    }
    m = xmalloc(HDR + body);
    ck_assert_int_eq(dps_bundle_header(body, m), DPS_OK);
    for (i = 0, off = HDR; i < n; off += lens[i], i++) {
        memcpy(m + off, parts[i], lens[i]);
    }
    *len = HDR + body;
    return m;
}

/* A bundle's bytes: 0 if dps_msg_decode refuses them, 1 if it takes them
 * but a part does not iterate or decode, 2 if every part does (*nparts
 * of them). */
static int bundle_walk(const void *buf, size_t len, size_t *nparts)
{
    char           err[ERR_LEN];
    dps_msg_t      msg, pm;
    const uint8_t *p;
    const void    *part;
    size_t         left, plen;
    int            rc;

    *nparts = 0;
    if (dps_msg_decode(buf, len, &msg, NULL, 0) != DPS_OK) {
        return 0;
    }
    ck_assert_int_eq(msg.type, DPS_MSG_BUNDLE);
    p = msg.u.bundle.parts;
    left = msg.u.bundle.len;
    for (;;) {
        err[0] = '\0';
        rc = dps_bundle_next(&p, &left, &part, &plen, err, sizeof(err));
        if (rc == DPS_ERR_AGAIN) {
            return 2;
        }
        if (rc != DPS_OK) {
            ck_assert_int_eq(rc, DPS_ERR_PROTO);
            ck_assert_msg(err[0] != '\0', "bundle_next: no reason given");
            return 1;
        }
        if (dps_msg_decode(part, plen, &pm, NULL, 0) != DPS_OK) {
            return 1;
        }
        ++*nparts;
    }
}

/* A ROUND, a PUSH with 5 bytes of data and a SEND_DONE in one bundle:
 * each part comes back whole, in order, and decodes to its fields. */
START_TEST(rt_bundle)
{
    dps_msg_push_t f = push_fixed(8, 5, 16);
    size_t         lens[3], offs[3], len, plen, left, i, k;
    const void    *parts[3];
    char          *round, *push, *sd, *m, *shifted;
    int            pass;

    round = dps_msg_encode_round(0x1111, 2, 3, 4, &lens[0]);
    push = push_msg(&f, 21, &lens[1]);
    sd = dps_msg_encode_send_done(0x2222, 5, 6, 7, 8, &lens[2]);
    ck_assert_ptr_nonnull(round);
    ck_assert_ptr_nonnull(sd);
    parts[0] = round;
    parts[1] = push;
    parts[2] = sd;
    m = bundle_of(parts, lens, 3, &len);
    check_hdr(m, len, DPS_MSG_BUNDLE);
    ck_assert_uint_eq(len, HDR + lens[0] + lens[1] + lens[2]);
    for (i = 0, k = HDR; i < 3; k += lens[i], i++) {
        offs[i] = k;
        ck_assert(memcmp(m + k, parts[i], lens[i]) == 0);
    }
    shifted = xmalloc(len + 1);
    memcpy(shifted + 1, m, len);
    for (pass = 0; pass < 2; pass++) {
        const char    *buf = pass ? shifted + 1 : m;
        const uint8_t *p;
        const void    *part;
        char           err[ERR_LEN] = "";
        dps_msg_t      msg, pm;

        memset(&msg, 0xa5, sizeof(msg));
        DECODE_OK(buf, len, &msg);
        ck_assert_int_eq(msg.type, DPS_MSG_BUNDLE);
        ck_assert_ptr_eq(msg.u.bundle.parts, (const uint8_t *)buf + HDR);
        ck_assert_uint_eq(msg.u.bundle.len, len - HDR);
        p = msg.u.bundle.parts;
        left = msg.u.bundle.len;
        for (i = 0; i < 3; i++) {
            ck_assert_int_eq(
                dps_bundle_next(&p, &left, &part, &plen, err, sizeof(err)),
                DPS_OK);
            ck_assert_ptr_eq(part, buf + offs[i]);
            ck_assert_uint_eq(plen, lens[i]);
            ck_assert_ptr_eq(p, (const uint8_t *)buf + offs[i] + lens[i]);
            ck_assert_uint_eq(left, len - offs[i] - lens[i]);
            memset(&pm, 0x5a, sizeof(pm));
            DECODE_OK(part, plen, &pm);
            switch (i) {
            case 0:
                ck_assert_int_eq(pm.type, DPS_MSG_ROUND);
                ck_assert_uint_eq(pm.u.round.comm_id, 0x1111);
                ck_assert_uint_eq(pm.u.round.seq, 2);
                ck_assert_uint_eq(pm.u.round.rank, 3);
                ck_assert_uint_eq(pm.u.round.round, 4);
                break;
            case 1:
                ck_assert_int_eq(pm.type, DPS_MSG_PUSH);
                ck_assert_mem_eq(&pm.u.push.fixed, &f, PUSHF);
                ck_assert_ptr_eq(pm.u.push.data,
                                 (const uint8_t *)part + DPS_PUSH_HEAD);
                for (k = 0; k < 5; k++) {
                    ck_assert_uint_eq(pm.u.push.data[k], pat(21, k));
                }
                break;
            case 2:
                ck_assert_int_eq(pm.type, DPS_MSG_SEND_DONE);
                ck_assert_uint_eq(pm.u.send_done.comm_id, 0x2222);
                ck_assert_uint_eq(pm.u.send_done.seq, 5);
                ck_assert_uint_eq(pm.u.send_done.src, 6);
                ck_assert_uint_eq(pm.u.send_done.dst, 7);
                ck_assert_uint_eq(pm.u.send_done.k, 8);
                break;
            }
        }
        /* None left, and none again. */
        ck_assert_uint_eq(left, 0);
        ck_assert_ptr_eq(p, (const uint8_t *)buf + len);
        ck_assert_int_eq(
            dps_bundle_next(&p, &left, &part, &plen, err, sizeof(err)),
            DPS_ERR_AGAIN);
        ck_assert_int_eq(dps_bundle_next(&p, &left, &part, &plen, NULL, 0),
                         DPS_ERR_AGAIN);
    }
    free(shifted);
    free(m);
    /* One part of a header alone: the smallest bundle. */
    {
        size_t    n, slen;
        char     *s = dps_msg_encode_shutdown(&slen);
        dps_msg_t msg;

        parts[0] = s;
        m = bundle_of(parts, &slen, 1, &len);
        ck_assert_uint_eq(len, 2 * HDR);
        DECODE_OK(m, len, &msg);
        ck_assert_uint_eq(msg.u.bundle.len, HDR);
        ck_assert_int_eq(bundle_walk(m, len, &n), 2);
        ck_assert_uint_eq(n, 1);
        free(m);
        free(s);
    }
    free(round);
    free(push);
    free(sd);
}
END_TEST

START_TEST(enc_bundle_header)
{
    uint8_t       out[HDR + 4];
    dps_msg_hdr_t h;
    size_t        i;

#define HEADER_BAD(_n)                                                 \
    do {                                                               \
        memset(out, 0xee, sizeof(out));                                \
        ck_assert_msg(dps_bundle_header((_n), out) == DPS_ERR_INVALID, \
                      "bundle of %zu bytes", (size_t)(_n));            \
        for (i = 0; i < sizeof(out); i++) {                            \
            ck_assert_uint_eq(out[i], 0xee);                           \
        }                                                              \
    } while (0)

    HEADER_BAD(0);
    HEADER_BAD((size_t)UINT32_MAX - HDR + 1);
    HEADER_BAD((size_t)UINT32_MAX);
    HEADER_BAD(SIZE_MAX);
#undef HEADER_BAD
    memset(out, 0xee, sizeof(out));
    ck_assert_int_eq(dps_bundle_header((size_t)UINT32_MAX - HDR, out), DPS_OK);
    memcpy(&h, out, HDR);
    ck_assert_uint_eq(h.magic, DPS_PROTO_MAGIC);
    ck_assert_uint_eq(h.version, DPS_PROTO_VERSION);
    ck_assert_uint_eq(h.type, DPS_MSG_BUNDLE);
    ck_assert_uint_eq(h.length, UINT32_MAX);
    ck_assert_uint_eq(h.reserved, 0);
    for (i = HDR; i < sizeof(out); i++) {
        ck_assert_uint_eq(out[i], 0xee);
    }
    ck_assert_int_eq(dps_bundle_header(40, out), DPS_OK);
    check_hdr(out, HDR + 40, DPS_MSG_BUNDLE);
}
END_TEST

/* The bundle decodes; its first good parts iterate and decode; the next
 * one is refused by dps_bundle_next, which says why. The bundle ends
 * right before a page that cannot be read: a read past its end crashes
 * the test (forked: an error). */
static void bundle_bad_at(const char *bytes, size_t len, size_t good,
                          const char *what, int line)
{
    size_t         pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t         span = (len + pg - 1) / pg * pg + pg;
    char          *base, *m, err[ERR_LEN];
    dps_msg_t      msg, pm;
    const uint8_t *p;
    const void    *part;
    size_t         left, plen, i;

    base = mmap(NULL, span, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(base, MAP_FAILED);
    ck_assert_int_eq(mprotect(base + span - pg, pg, PROT_NONE), 0);
    m = base + span - pg - len;
    memcpy(m, bytes, len);
    decode_ok_at(m, len, &msg, line);
    ck_assert_msg(msg.type == DPS_MSG_BUNDLE, "line %d (%s): type %d", line,
                  what, msg.type);
    p = msg.u.bundle.parts;
    left = msg.u.bundle.len;
    for (i = 0; i < good; i++) {
        ck_assert_msg(dps_bundle_next(&p, &left, &part, &plen, err,
                                      sizeof(err)) == DPS_OK,
                      "line %d (%s): part %zu: %s", line, what, i, err);
        decode_ok_at(part, plen, &pm, line);
    }
    memset(err, 0, sizeof(err));
    ck_assert_msg(dps_bundle_next(&p, &left, &part, &plen, err, sizeof(err)) ==
                      DPS_ERR_PROTO,
                  "line %d (%s): part %zu not refused", line, what, good);
    ck_assert_msg(err[0] != '\0', "line %d (%s): empty error text", line,
                  what);
    ck_assert_msg(dps_bundle_next(&p, &left, &part, &plen, NULL, 0) ==
                      DPS_ERR_PROTO,
                  "line %d (%s): without err", line, what);
    munmap(base, span);
}
#define BUNDLE_BAD(_m, _l, _g, _w) \
    bundle_bad_at((_m), (_l), (_g), (_w), __LINE__)

START_TEST(bad_bundle)
{
    static const uint8_t zeros[HDR] = {0};
    static const size_t  stray[] = {1, 8, HDR - 1};
    const void          *parts[3];
    size_t               lens[3], rl, sl, len, n, i;
    char                *round, *sd, *inner, *m, *r2;

    round = dps_msg_encode_round(9, 8, 7, 6, &rl);
    sd = dps_msg_encode_send_done(9, 8, 7, 6, 5, &sl);
    r2 = dup_bytes(round, rl);

    /* Stray bytes after the last part. */
    for (i = 0; i < sizeof(stray) / sizeof(stray[0]); i++) {
        parts[0] = round;
        lens[0] = rl;
        parts[1] = zeros;
        lens[1] = stray[i];
        m = bundle_of(parts, lens, 2, &len);
        BUNDLE_BAD(m, len, 1, "stray bytes after the last part");
        free(m);
    }
    /* A part longer than what is left: the only one, the last one. */
    parts[0] = r2;
    lens[0] = rl;
    put32(r2, offsetof(dps_msg_hdr_t, length), (uint32_t)rl + 1);
    m = bundle_of(parts, lens, 1, &len);
    BUNDLE_BAD(m, len, 0, "part one byte longer than the bundle");
    free(m);
    put32(r2, offsetof(dps_msg_hdr_t, length), UINT32_MAX);
    m = bundle_of(parts, lens, 1, &len);
    BUNDLE_BAD(m, len, 0, "part of UINT32_MAX bytes");
    free(m);
    parts[0] = round;
    parts[1] = r2;
    lens[1] = rl;
    put32(r2, offsetof(dps_msg_hdr_t, length), (uint32_t)rl + 1);
    m = bundle_of(parts, lens, 2, &len);
    BUNDLE_BAD(m, len, 1, "last part one byte longer than what is left");
    free(m);
    /* A part shorter than a header (0 would never move on). */
    parts[0] = round;
    parts[1] = r2;
    parts[2] = sd;
    lens[2] = sl;
    put32(r2, offsetof(dps_msg_hdr_t, length), 0);
    m = bundle_of(parts, lens, 3, &len);
    BUNDLE_BAD(m, len, 1, "part of length 0");
    free(m);
    put32(r2, offsetof(dps_msg_hdr_t, length), HDR - 1);
    m = bundle_of(parts, lens, 3, &len);
    BUNDLE_BAD(m, len, 1, "part of length 15");
    free(m);
    /* A bundle inside a bundle: alone, or after a part. */
    parts[0] = round;
    inner = bundle_of(parts, &rl, 1, &n);
    parts[0] = inner;
    m = bundle_of(parts, &n, 1, &len);
    BUNDLE_BAD(m, len, 0, "bundle inside a bundle");
    free(m);
    parts[0] = sd;
    lens[0] = sl;
    parts[1] = inner;
    lens[1] = n;
    m = bundle_of(parts, lens, 2, &len);
    BUNDLE_BAD(m, len, 1, "bundle after a part of a bundle");
    free(m);
    free(inner);
    /* Nothing in it (dps_bundle_header will not write that header:
     * enc_bundle_header), or fewer bytes than a header. */
    for (n = 0; n < HDR; n++) {
        m = raw_msg(DPS_MSG_BUNDLE, round, n, &len);
        REJECT(m, len, n ? "bundle shorter than a header" : "empty bundle");
        free(m);
    }
    /* A part that iterates but does not decode: dps_msg_decode's to
     * refuse. */
    memcpy(r2, round, rl);
    put16(r2, offsetof(dps_msg_hdr_t, version), DPS_PROTO_VERSION - 1);
    parts[0] = r2;
    lens[0] = rl;
    m = bundle_of(parts, lens, 1, &len);
    ck_assert_int_eq(bundle_walk(m, len, &n), 1);
    ck_assert_uint_eq(n, 0);
    free(m);
    free(r2);
    free(round);
    free(sd);
}
END_TEST

/* Every prefix of a bundle, its length field patched: refused by the
 * decoder or by dps_bundle_next, but where it ends between two parts
 * (then a valid bundle of fewer parts). */
START_TEST(trunc_bundle)
{
    dps_msg_push_t f = push_fixed(0, 7, 7);
    size_t         lens[3], len, n, got;
    const void    *parts[3];
    char          *round, *push, *sd, *m;
    int            rc;

    round = dps_msg_encode_round(1, 2, 3, 4, &lens[0]);
    push = push_msg(&f, 5, &lens[1]);
    sd = dps_msg_encode_send_done(1, 2, 3, 4, 5, &lens[2]);
    parts[0] = round;
    parts[1] = push;
    parts[2] = sd;
    m = bundle_of(parts, lens, 3, &len);
    ck_assert_int_eq(bundle_walk(m, len, &got), 2);
    ck_assert_uint_eq(got, 3);
    for (n = 0; n < len; n++) {
        char *c = dup_bytes(m, n);

        REJECT(c, n, "bundle prefix, length field unpatched");
        if (n >= offsetof(dps_msg_hdr_t, length) + 4) {
            put32(c, offsetof(dps_msg_hdr_t, length), (uint32_t)n);
        }
        rc = bundle_walk(c, n, &got);
        if (n == HDR + lens[0] || n == HDR + lens[0] + lens[1]) {
            ck_assert_msg(rc == 2, "prefix of %zu bytes: %d", n, rc);
            ck_assert_uint_eq(got, n == HDR + lens[0] ? 1 : 2);
        } else {
            ck_assert_msg(rc != 2, "prefix of %zu bytes taken whole", n);
        }
        free(c);
    }
    free(m);
    free(round);
    free(push);
    free(sd);
}
END_TEST

/* ------------------------------------------------------------------ */
/* CREDIT                                                             */
/* ------------------------------------------------------------------ */

#define CREDITF sizeof(dps_msg_credit_t)

/* agent, pad 0, bytes: little-endian at offsets 0, 4 and 8, decoded in
 * place and from an odd address. */
START_TEST(rt_credit)
{
    static const uint32_t agent[] = {
        0, 1, 7, 0x12345, DPS_MAX_RANKS - 2, DPS_MAX_RANKS - 1};
    static const uint64_t bytes[] = {
        0, 1, 4096, 0x0102030405060708ull, UINT64_MAX - 1, UINT64_MAX};
    size_t i, len;
    int    pass;

    _Static_assert(sizeof(agent) / sizeof(agent[0]) ==
                       sizeof(bytes) / sizeof(bytes[0]),
                   "as many agents as byte counts");
    for (i = 0; i < sizeof(agent) / sizeof(agent[0]); i++) {
        dps_msg_credit_t want = {agent[i], 0, bytes[i]};
        char            *m = dps_msg_encode_credit(agent[i], bytes[i], &len);
        char            *shifted;

        check_hdr(m, len, DPS_MSG_CREDIT);
        ck_assert_uint_eq(len, HDR + 16);
        ck_assert_mem_eq(m + HDR, &want, CREDITF);
        ck_assert_uint_eq(get32(m, HDR + 0), agent[i]);
        ck_assert_uint_eq(get32(m, HDR + 4), 0);
        ck_assert_uint_eq(get64(m, HDR + 8), bytes[i]);
        shifted = xmalloc(len + 1);
        memcpy(shifted + 1, m, len);
        for (pass = 0; pass < 2; pass++) {
            const char *buf = pass ? shifted + 1 : m;
            dps_msg_t   msg;

            memset(&msg, 0xa5, sizeof(msg));
            DECODE_OK(buf, len, &msg);
            ck_assert_int_eq(msg.type, DPS_MSG_CREDIT);
            ck_assert_uint_eq(msg.u.credit.agent, agent[i]);
            ck_assert_uint_eq(msg.u.credit.pad, 0);
            ck_assert_uint_eq(msg.u.credit.bytes, bytes[i]);
        }
        free(shifted);
        free(m);
    }
}
END_TEST

/* The decoder takes exactly 16 bytes, pad 0 and an agent below
 * DPS_MAX_RANKS; the encoder makes no credit of an agent out of range. */
START_TEST(bad_credit)
{
    static const uint32_t  bad_agent[] = {DPS_MAX_RANKS, DPS_MAX_RANKS + 1,
                                          0x80000000u, UINT32_MAX};
    static const uint32_t  bad_pad[] = {1, 0x100, 0x80000000u, UINT32_MAX};
    const dps_msg_credit_t good = {9, 0, 1u << 20};
    dps_msg_credit_t       c;
    uint8_t                body[CREDITF + 16];
    dps_msg_t              msg;
    size_t                 len, n, i;
    char                  *m;

    /* The raw builder lays a credit out as the encoder does. */
    m = raw_msg(DPS_MSG_CREDIT, &good, CREDITF, &len);
    DECODE_OK(m, len, &msg);
    ck_assert_int_eq(msg.type, DPS_MSG_CREDIT);
    ck_assert_mem_eq(&msg.u.credit, &good, CREDITF);
    free(m);
    /* Every shorter body, and longer ones (zeros after a good one). */
    for (n = 0; n < CREDITF; n++) {
        m = raw_msg(DPS_MSG_CREDIT, &good, n, &len);
        REJECT_WHY(m, len, "credit message with body of");
        free(m);
    }
    memset(body, 0, sizeof(body));
    memcpy(body, &good, CREDITF);
    for (n = CREDITF + 1; n <= sizeof(body); n++) {
        m = raw_msg(DPS_MSG_CREDIT, body, n, &len);
        REJECT_WHY(m, len, "credit message with body of");
        free(m);
    }
    for (i = 0; i < sizeof(bad_pad) / sizeof(bad_pad[0]); i++) {
        c = good;
        c.pad = bad_pad[i];
        m = raw_msg(DPS_MSG_CREDIT, &c, CREDITF, &len);
        REJECT(m, len, "credit pad not 0");
        free(m);
    }
    for (i = 0; i < sizeof(bad_agent) / sizeof(bad_agent[0]); i++) {
        c = good;
        c.agent = bad_agent[i];
        m = raw_msg(DPS_MSG_CREDIT, &c, CREDITF, &len);
        REJECT(m, len, "credit agent out of range");
        free(m);
        c.bytes = 0;
        m = raw_msg(DPS_MSG_CREDIT, &c, CREDITF, &len);
        REJECT(m, len, "credit of nothing, agent out of range");
        free(m);
        ck_assert_ptr_null(dps_msg_encode_credit(bad_agent[i], 1, &len));
        ck_assert_ptr_null(
            dps_msg_encode_credit(bad_agent[i], UINT64_MAX, &len));
    }
    /* The edges are fine: the last agent, no bytes, every byte. */
    c.agent = DPS_MAX_RANKS - 1;
    c.pad = 0;
    c.bytes = 0;
    m = raw_msg(DPS_MSG_CREDIT, &c, CREDITF, &len);
    DECODE_OK(m, len, &msg);
    ck_assert_uint_eq(msg.u.credit.agent, DPS_MAX_RANKS - 1);
    ck_assert_uint_eq(msg.u.credit.bytes, 0);
    free(m);
    c.bytes = UINT64_MAX;
    m = raw_msg(DPS_MSG_CREDIT, &c, CREDITF, &len);
    DECODE_OK(m, len, &msg);
    ck_assert_uint_eq(msg.u.credit.bytes, UINT64_MAX);
    free(m);
    /* A credit's body under a push's header is a short push; a push's
     * fixed part under a credit's header is a long credit. */
    m = raw_msg(DPS_MSG_PUSH, &good, CREDITF, &len);
    REJECT_WHY(m, len, "push shorter than its fixed part");
    free(m);
    {
        dps_msg_push_t f = push_fixed(0, 0, 16);

        m = raw_msg(DPS_MSG_CREDIT, &f, PUSHF, &len);
        REJECT_WHY(m, len, "credit message with body of 56 bytes");
        free(m);
    }
}
END_TEST

/* CREDITs among the parts of a bundle, beside an early PUSH: each comes
 * back whole, in order, and decodes to its fields; a bad one iterates
 * but does not decode. */
START_TEST(rt_bundle_credit)
{
    dps_msg_push_t   f = push_fixed(0, 6, 6);
    dps_msg_credit_t bad = {4, 1, 100};
    const void      *parts[4];
    size_t           lens[4], len, left, plen, n, i, k, off;
    char            *c1, *c2, *push, *m, *r;
    const uint8_t   *p;
    const void      *part;
    char             err[ERR_LEN] = "";
    dps_msg_t        msg, pm;

    f.flags = DPS_PUSH_EARLY;
    f.agent = 2;
    c1 = dps_msg_encode_credit(DPS_MAX_RANKS - 1, UINT64_MAX, &lens[0]);
    push = push_msg(&f, 9, &lens[1]);
    c2 = dps_msg_encode_credit(0, 4096, &lens[2]);
    check_hdr(c1, lens[0], DPS_MSG_CREDIT);
    check_hdr(c2, lens[2], DPS_MSG_CREDIT);
    parts[0] = c1;
    parts[1] = push;
    parts[2] = c2;
    parts[3] = c1;
    lens[3] = lens[0];
    m = bundle_of(parts, lens, 4, &len);
    check_hdr(m, len, DPS_MSG_BUNDLE);
    DECODE_OK(m, len, &msg);
    ck_assert_int_eq(msg.type, DPS_MSG_BUNDLE);
    p = msg.u.bundle.parts;
    left = msg.u.bundle.len;
    for (i = 0, off = HDR; i < 4; off += lens[i], i++) {
        ck_assert_int_eq(
            dps_bundle_next(&p, &left, &part, &plen, err, sizeof(err)),
            DPS_OK);
        ck_assert_ptr_eq(part, m + off);
        ck_assert_uint_eq(plen, lens[i]);
        memset(&pm, 0x5a, sizeof(pm));
        DECODE_OK(part, plen, &pm);
        switch (i) {
        case 0:
        case 3:
            ck_assert_int_eq(pm.type, DPS_MSG_CREDIT);
            ck_assert_uint_eq(pm.u.credit.agent, DPS_MAX_RANKS - 1);
            ck_assert_uint_eq(pm.u.credit.pad, 0);
            ck_assert_uint_eq(pm.u.credit.bytes, UINT64_MAX);
            break;
        case 1:
            ck_assert_int_eq(pm.type, DPS_MSG_PUSH);
            ck_assert_mem_eq(&pm.u.push.fixed, &f, PUSHF);
            ck_assert_uint_eq(pm.u.push.fixed.flags, DPS_PUSH_EARLY);
            ck_assert_uint_eq(pm.u.push.fixed.agent, 2);
            for (k = 0; k < 6; k++) {
                ck_assert_uint_eq(pm.u.push.data[k], pat(9, k));
            }
            break;
        case 2:
            ck_assert_int_eq(pm.type, DPS_MSG_CREDIT);
            ck_assert_uint_eq(pm.u.credit.agent, 0);
            ck_assert_uint_eq(pm.u.credit.pad, 0);
            ck_assert_uint_eq(pm.u.credit.bytes, 4096);
            break;
        }
    }
    ck_assert_uint_eq(left, 0);
    ck_assert_int_eq(
        dps_bundle_next(&p, &left, &part, &plen, err, sizeof(err)),
        DPS_ERR_AGAIN);
    ck_assert_int_eq(bundle_walk(m, len, &n), 2);
    ck_assert_uint_eq(n, 4);
    free(m);
    /* A credit alone: the smallest bundle of one. */
    m = bundle_of(parts + 2, lens + 2, 1, &len);
    ck_assert_uint_eq(len, 2 * HDR + CREDITF);
    ck_assert_int_eq(bundle_walk(m, len, &n), 2);
    ck_assert_uint_eq(n, 1);
    free(m);
    /* A credit with pad 1 after a good one: the second part iterates
     * but does not decode. */
    r = raw_msg(DPS_MSG_CREDIT, &bad, CREDITF, &lens[1]);
    parts[1] = r;
    m = bundle_of(parts, lens, 2, &len);
    ck_assert_int_eq(bundle_walk(m, len, &n), 1);
    ck_assert_uint_eq(n, 1);
    free(m);
    free(r);
    /* A credit one byte short, its length field saying so: the same. */
    r = raw_msg(DPS_MSG_CREDIT, c2 + HDR, CREDITF - 1, &lens[1]);
    parts[1] = r;
    m = bundle_of(parts, lens, 2, &len);
    ck_assert_int_eq(bundle_walk(m, len, &n), 1);
    ck_assert_uint_eq(n, 1);
    free(m);
    free(r);
    /* Its length field one byte longer than the bundle: refused by
     * dps_bundle_next. */
    r = dup_bytes(c2, lens[2]);
    put32(r, offsetof(dps_msg_hdr_t, length), (uint32_t)lens[2] + 1);
    parts[1] = r;
    lens[1] = lens[2];
    m = bundle_of(parts, lens, 2, &len);
    BUNDLE_BAD(m, len, 1, "credit longer than what is left");
    free(m);
    free(r);
    free(c1);
    free(c2);
    free(push);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Hex helpers                                                        */
/* ------------------------------------------------------------------ */

START_TEST(hex_roundtrip)
{
    uint8_t in[256], out[256 + 8];
    char    txt[2 * 256 + 1 + 8];
    size_t  n, i;
    long    r;

    for (i = 0; i < sizeof(in); i++) {
        in[i] = (uint8_t)i;
    }
    for (n = 0; n <= sizeof(in); n++) {
        memset(txt, '#', sizeof(txt));
        dps_hex_encode(in, n, txt);
        ck_assert_uint_eq(strlen(txt), 2 * n);
        ck_assert_int_eq(txt[2 * n + 1], '#'); /* nothing written past */
        for (i = 0; i < 2 * n; i++) {
            ck_assert(strchr("0123456789abcdef", txt[i]) != NULL);
        }
        memset(out, 0xee, sizeof(out));
        r = dps_hex_decode(txt, out, n);
        ck_assert_int_eq(r, (long)n);
        ck_assert(memcmp(out, in, n) == 0);
        ck_assert_uint_eq(out[n], 0xee);
    }
    dps_hex_encode(in, 256, txt);
    ck_assert(strncmp(txt, "000102030405060708090a0b0c0d0e0f10", 34) == 0);
    ck_assert_str_eq(txt + 2 * 250, "fafbfcfdfeff");
}
END_TEST

START_TEST(hex_upper_case)
{
    uint8_t              out[4];
    static const uint8_t want[4] = {0xab, 0xcd, 0xef, 0x09};

    ck_assert_int_eq(dps_hex_decode("ABCDEF09", out, sizeof(out)), 4);
    ck_assert_mem_eq(out, want, 4);
    memset(out, 0, sizeof(out));
    ck_assert_int_eq(dps_hex_decode("aBcDeF09", out, sizeof(out)), 4);
    ck_assert_mem_eq(out, want, 4);
}
END_TEST

START_TEST(hex_reject)
{
    static const char *bad[] = {
        "a",  "abc", "0",  "12345", "zz",   "0g",       "g0",   " 1",
        "1 ", "-1",  "0x", "12:34", "aa\n", "\xff\xff", "a b ", "ab.c"};
    uint8_t out[16];
    size_t  i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(dps_hex_decode(bad[i], out, sizeof(out)) == -1,
                      "'%s' accepted", bad[i]);
    }
}
END_TEST

START_TEST(hex_small_output)
{
    uint8_t out[8];

    memset(out, 0x77, sizeof(out));
    ck_assert_int_eq(dps_hex_decode("aabbcc", out, 2), -1);
    ck_assert_int_eq(dps_hex_decode("aabbcc", out, 0), -1);
    ck_assert_int_eq(dps_hex_decode("00", out, 0), -1);
    /* Nothing was written for a refused decode. */
    ck_assert_uint_eq(out[0], 0x77);
    ck_assert_uint_eq(out[2], 0x77);
    ck_assert_int_eq(dps_hex_decode("aabbcc", out, 3), 3);
    ck_assert_uint_eq(out[2], 0xcc);
    ck_assert_uint_eq(out[3], 0x77);
    ck_assert_int_eq(dps_hex_decode("", out, 0), 0);
    ck_assert_int_eq(dps_hex_decode("", out, 8), 0);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *proto_suite(void)
{
    /* The suite's test cases and their tests, in order (a NULL ends a
     * case's list). */
    const struct {
        const char  *name;
        const TTest *tests[32];
    } cases[] = {
        {"roundtrip",
         {rt_hello,      bad_hello,     rt_shm,          rt_inst_fail,
          rt_ready,      rt_complete,   rt_comm_free,    rt_send_done,
          bad_send_done, rt_round,      bad_round,       rt_fetch,
          bad_fetch,     rt_shutdown,   rt_header_bytes, rt_type_str,
          rt_coll_str,   rt_post,       rt_post_edges,   rt_reg_free,
          bad_reg_free,  rt_sched_free, bad_sched_free,  rt_raw_post_sane,
          rt_job,        rt_procs,      rt_stats,        rt_raw_job_sane}},
        {"header",
         {hdr_too_short, hdr_bad_magic, hdr_bad_version, rt_ping_pong,
          hdr_bad_length, hdr_bad_type}},
        {"fixed_bodies", {fixed_one_byte_off, fixed_type_mismatch}},
        {"post_reject",
         {post_bad_ranks, post_bad_coll, post_bad_nmembers, post_bad_rkeys,
          post_no_sched_id, post_bad_flags, post_bad_body_length}},
        {"job_reject",
         {job_bad_counts, job_bad_rank_agent, job_bad_addr_len,
          job_truncated_or_trailing, job_flags}},
        {"truncation", {trunc_post, trunc_job, trunc_fixed}},
        {"encoders",
         {enc_post_null, enc_post_matches_decoder, enc_job_null,
          enc_job_too_big}},
        {"push_bundle",
         {rt_push, rt_push_fetch, rt_push_early, bad_push, enc_push_put,
          trunc_push, rt_bundle, enc_bundle_header, bad_bundle, trunc_bundle}},
        {"credit", {rt_credit, bad_credit, rt_bundle_credit}},
        {"hex", {hex_roundtrip, hex_upper_case, hex_reject, hex_small_output}},
    };
    Suite *s = suite_create("proto");

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);

        for (size_t j = 0; cases[i].tests[j] != NULL; j++) {
            tcase_add_test(tc, cases[i].tests[j]);
        }
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(proto_suite());
    int      failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
