/* SPDX-License-Identifier: BSD-3-Clause */
/* Check tests of the rank <-> agent shared-memory channel (dps_shm.c). */
#define _GNU_SOURCE
#include "common/dps_shm.h"
#include "common/dps_status.h"

#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static dps_shm_t *seg;
static int        seg_fd = -1;

static void setup(void)
{
    seg = dps_shm_create(7, &seg_fd);
    ck_assert_ptr_nonnull(seg);
}

static void teardown(void)
{
    dps_shm_detach(seg);
    close(seg_fd);
}

/* Message i of a sequence: length and contents from i. */
static size_t msg_len(unsigned i)
{
    return 1 + (i * 7919u) % 3000u;
}

static void msg_fill(unsigned i, uint8_t *b)
{
    for (size_t k = 0; k < msg_len(i); k++) {
        b[k] = (uint8_t)(i * 31u + k);
    }
}

static int msg_is(unsigned i, const uint8_t *b, long len)
{
    if (len != (long)msg_len(i)) {
        return 0;
    }
    for (size_t k = 0; k < msg_len(i); k++) {
        if (b[k] != (uint8_t)(i * 31u + k)) {
            return 0;
        }
    }
    return 1;
}

START_TEST(header)
{
    char       err[256];
    dps_shm_t *other;

    ck_assert_uint_eq(seg->magic, DPS_SHM_MAGIC);
    ck_assert_uint_eq(seg->rank, 7);
    ck_assert_uint_eq(seg->size, sizeof(dps_shm_t));
    /* Attach through /proc as the agent does: the same memory. */
    other = dps_shm_attach(getpid(), seg_fd, 7, err, sizeof(err));
    ck_assert_msg(other != NULL, "%s", err);
    other->attached = 1;
    ck_assert_uint_eq(seg->attached, 1);
    dps_shm_detach(other);
    /* Wrong rank, bad descriptor: refused with a reason. */
    err[0] = '\0';
    ck_assert_ptr_null(dps_shm_attach(getpid(), seg_fd, 8, err, sizeof(err)));
    ck_assert_str_ne(err, "");
    err[0] = '\0';
    ck_assert_ptr_null(dps_shm_attach(getpid(), 0, 7, err, sizeof(err)));
    ck_assert_str_ne(err, "");
}
END_TEST

/* Messages in and out, many times around the ring, in order. */
START_TEST(msg_order)
{
    static uint8_t in[4096], out[4096];
    unsigned       put = 0, got = 0;

    while (got < 5000) {
        int rc;

        msg_fill(put, in);
        rc = dps_shm_msg_put(&seg->to_agent, seg->to_agent_buf, in,
                             msg_len(put));
        if (rc == DPS_OK) {
            put++;
            if (put % 3 != 0) {
                continue; /* let it fill up now and then */
            }
        } else {
            ck_assert_int_eq(rc, DPS_ERR_AGAIN);
        }
        for (;;) {
            long n = dps_shm_msg_get(&seg->to_agent, seg->to_agent_buf, out,
                                     sizeof(out));

            ck_assert_int_ge(n, 0);
            if (n == 0) {
                break;
            }
            ck_assert_msg(msg_is(got, out, n), "message %u", got);
            got++;
        }
        ck_assert_uint_eq(got, put);
        ck_assert(dps_shm_msg_empty(&seg->to_agent));
    }
}
END_TEST

START_TEST(msg_limits)
{
    static uint8_t big[DPS_SHM_MAX_MSG + 1];
    uint8_t        out[16];
    long           n;

    ck_assert_int_eq(dps_shm_msg_put(&seg->to_rank, seg->to_rank_buf, big, 0),
                     DPS_ERR_INVALID);
    ck_assert_int_eq(
        dps_shm_msg_put(&seg->to_rank, seg->to_rank_buf, big, sizeof(big)),
        DPS_ERR_INVALID);
    ck_assert_int_eq(
        dps_shm_msg_put(&seg->to_rank, seg->to_rank_buf, big, DPS_SHM_MAX_MSG),
        DPS_OK);
    ck_assert(dps_shm_msg_ready(&seg->to_rank));
    /* Too small a buffer: refused, not truncated. */
    n = dps_shm_msg_get(&seg->to_rank, seg->to_rank_buf, out, sizeof(out));
    ck_assert_int_eq(n, -1);
}
END_TEST

/* Positions written by a faulty peer never make the reader leave the
 * ring. */
START_TEST(msg_corrupt)
{
    uint8_t  out[64];
    uint32_t bad = 5000;

    seg->to_agent.tail = 3 * (uint64_t)DPS_SHM_MSG_RING;
    ck_assert_int_eq(
        dps_shm_msg_get(&seg->to_agent, seg->to_agent_buf, out, sizeof(out)),
        -1);
    seg->to_agent.tail = 16;
    memcpy(seg->to_agent_buf, &bad, sizeof(bad));
    ck_assert_int_eq(
        dps_shm_msg_get(&seg->to_agent, seg->to_agent_buf, out, sizeof(out)),
        -1);
}
END_TEST

START_TEST(cmd_ring)
{
    dps_cmd_t  c;
    dps_done_t d;
    unsigned   i;

    for (i = 0; i < DPS_SHM_CMD_SLOTS; i++) {
        memset(&c, 0, sizeof(c));
        c.id = i;
        c.op = DPS_CMD_READ;
        ck_assert_int_eq(dps_shm_cmd_put(seg, &c), DPS_OK);
    }
    ck_assert_int_eq(dps_shm_cmd_put(seg, &c), DPS_ERR_AGAIN); /* full */
    ck_assert(dps_shm_cmd_ready(seg));
    for (i = 0; i < DPS_SHM_CMD_SLOTS; i++) {
        ck_assert_int_eq(dps_shm_cmd_get(seg, &c), DPS_OK);
        ck_assert_uint_eq(c.id, i);
        d.id = i;
        d.status = DPS_OK;
        ck_assert_int_eq(dps_shm_done_put(seg, &d), DPS_OK);
    }
    ck_assert_int_eq(dps_shm_cmd_get(seg, &c), DPS_ERR_AGAIN); /* empty */
    for (i = 0; i < DPS_SHM_CMD_SLOTS; i++) {
        ck_assert_int_eq(dps_shm_done_get(seg, &d), DPS_OK);
        ck_assert_uint_eq(d.id, i);
    }
    ck_assert_int_eq(dps_shm_done_get(seg, &d), DPS_ERR_AGAIN);
    /* Positions further apart than the ring holds: corrupt. */
    seg->done.tail = seg->done.head + DPS_SHM_CMD_SLOTS + 1;
    ck_assert_int_eq(dps_shm_done_get(seg, &d), DPS_ERR_PROTO);
    seg->done.tail = seg->done.head;
}
END_TEST

/* A producer and a consumer thread, as a rank and its agent. */
static void *producer(void *arg)
{
    static uint8_t in[4096];
    unsigned       i;

    (void)arg;
    for (i = 0; i < 20000;) {
        msg_fill(i, in);
        if (dps_shm_msg_put(&seg->to_rank, seg->to_rank_buf, in, msg_len(i)) ==
            DPS_OK) {
            i++;
        }
    }
    return NULL;
}

START_TEST(msg_threads)
{
    static uint8_t out[4096];
    pthread_t      t;
    unsigned       got = 0;

    pthread_create(&t, NULL, producer, NULL);
    while (got < 20000) {
        long n =
            dps_shm_msg_get(&seg->to_rank, seg->to_rank_buf, out, sizeof(out));

        ck_assert_int_ge(n, 0);
        if (n > 0) {
            ck_assert_msg(msg_is(got, out, n), "message %u", got);
            got++;
        }
    }
    pthread_join(t, NULL);
}
END_TEST

/* A futex wait ends at its timeout, or at once when the word moved. */
START_TEST(futex)
{
    uint32_t w = 1;

    dps_shm_futex_wait(&w, 0, 1000000); /* value differs: returns */
    dps_shm_futex_wait(&w, 1, 2000000); /* times out after 2 ms */
    dps_shm_futex_wake(&w);             /* nobody waits: harmless */
}
END_TEST

int main(void)
{
    Suite   *s = suite_create("shm");
    TCase   *tc = tcase_create("rings");
    SRunner *sr;
    int      failed;

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, header);
    tcase_add_test(tc, msg_order);
    tcase_add_test(tc, msg_limits);
    tcase_add_test(tc, msg_corrupt);
    tcase_add_test(tc, cmd_ring);
    tcase_add_test(tc, msg_threads);
    tcase_add_test(tc, futex);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
