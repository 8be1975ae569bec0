/* SPDX-License-Identifier: BSD-3-Clause */
/* Check tests of the retry of deferred messages (dps_inmsg_retry,
 * common/dps_ucx.c), as the agent's loop uses it: a message may wait for
 * another deferred message (a ROUND for the forwarded post it follows),
 * and once the cause is gone every one must be handled in that same
 * retry, since no later message may come to trigger another. */
#include "common/dps_status.h"
#include "common/dps_ucx.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

/* A world of messages named by one letter: 'a' needs `ready`, and every
 * other letter needs the letter before it handled. */
typedef struct {
    int  ready;
    char done[32]; /* handled, in order */
    int  ndone;
    int  calls;
} world_t;

static int handled(const world_t *w, char c)
{
    return memchr(w->done, c, (size_t)w->ndone) != NULL;
}

static int handle(void *ctx, dps_inmsg_t *m)
{
    world_t *w = ctx;
    char     c = m->data[0];

    w->calls++;
    if (c == 'z') {
        return DPS_ERR_PROTO; /* fails: dropped */
    }
    if (c == 'a' ? !w->ready : !handled(w, (char)(c - 1))) {
        return DPS_ERR_AGAIN; /* still waits */
    }
    w->done[w->ndone++] = c;
    return DPS_OK;
}

static dps_inmsg_t *msg(char c)
{
    dps_inmsg_t *m = malloc(sizeof(*m) + 1);

    ck_assert_ptr_nonnull(m);
    m->next = NULL;
    m->len = 1;
    m->data[0] = c;
    return m;
}

/* Deferred in the order of s, pushed at the head as the loop does. */
static dps_inmsg_t *deferred_list(const char *s)
{
    dps_inmsg_t *head = NULL, *m;

    for (; *s != '\0'; s++) {
        m = msg(*s);
        m->next = head;
        head = m;
    }
    return head;
}

static void free_list(dps_inmsg_t *l)
{
    dps_inmsg_t *m;

    while ((m = l) != NULL) {
        l = m->next;
        free(m);
    }
}

/* The letters of a list, head first. */
static void letters(const dps_inmsg_t *l, char *out)
{
    for (; l != NULL; l = l->next) {
        *out++ = l->data[0];
    }
    *out = '\0';
}

/* The case the agent met: the post ('a') deferred, then the ROUND that
 * follows it ('b'). Retried newest first in one pass, 'b' stayed. */
START_TEST(post_then_round)
{
    world_t      w = {0};
    dps_inmsg_t *d = deferred_list("ab");

    w.ready = 1;
    ck_assert_uint_eq(dps_inmsg_retry(&d, handle, &w), 2);
    ck_assert_ptr_null(d);
    ck_assert_int_eq(w.ndone, 2);
    ck_assert(memcmp(w.done, "ab", 2) == 0);
}
END_TEST

/* A chain deferred in the worst order still ends in one retry. */
START_TEST(chain_any_order)
{
    static const char *orders[] = {"abcde", "edcba", "cadbe", "badce"};

    for (size_t i = 0; i < sizeof(orders) / sizeof(orders[0]); i++) {
        world_t      w = {0};
        dps_inmsg_t *d = deferred_list(orders[i]);

        w.ready = 1;
        ck_assert_uint_eq(dps_inmsg_retry(&d, handle, &w), 5);
        ck_assert_ptr_null(d);
        ck_assert(memcmp(w.done, "abcde", 5) == 0);
    }
}
END_TEST

/* Nothing can go on: all kept, newest first as before, each tried
 * once (no endless retry). */
START_TEST(none_ready)
{
    world_t      w = {0};
    dps_inmsg_t *d = deferred_list("abc");
    char         got[8];

    ck_assert_uint_eq(dps_inmsg_retry(&d, handle, &w), 0);
    letters(d, got);
    ck_assert_str_eq(got, "cba");
    ck_assert_int_eq(w.calls, 3);
    free_list(d);
}
END_TEST

/* Part of it can go on: those handled in order, the rest kept newest
 * first, and the same messages handled again later once ready. */
START_TEST(part_ready)
{
    world_t      w = {0};
    dps_inmsg_t *d = deferred_list("axby"); /* x, y wait for w, x */
    char         got[8];

    w.ready = 1;
    ck_assert_uint_eq(dps_inmsg_retry(&d, handle, &w), 2);
    ck_assert(memcmp(w.done, "ab", 2) == 0);
    letters(d, got);
    ck_assert_str_eq(got, "yx");
    w.done[w.ndone++] = 'w';
    ck_assert_uint_eq(dps_inmsg_retry(&d, handle, &w), 2);
    ck_assert_ptr_null(d);
    ck_assert(memcmp(w.done + 3, "xy", 2) == 0);
}
END_TEST

/* A message whose handling fails is dropped, not kept: only
 * DPS_ERR_AGAIN keeps one. */
START_TEST(failed_dropped)
{
    world_t      w = {0};
    dps_inmsg_t *d = deferred_list("zb");
    char         got[8];

    ck_assert_uint_eq(dps_inmsg_retry(&d, handle, &w), 1);
    letters(d, got);
    ck_assert_str_eq(got, "b");
    ck_assert_int_eq(w.ndone, 0);
    free_list(d);
}
END_TEST

START_TEST(empty)
{
    world_t      w = {0};
    dps_inmsg_t *d = NULL;

    ck_assert_uint_eq(dps_inmsg_retry(&d, handle, &w), 0);
    ck_assert_int_eq(w.calls, 0);
}
END_TEST

int main(void)
{
    Suite   *s = suite_create("defer");
    TCase   *tc = tcase_create("retry");
    SRunner *sr;
    int      failed;

    tcase_add_test(tc, post_then_round);
    tcase_add_test(tc, chain_any_order);
    tcase_add_test(tc, none_ready);
    tcase_add_test(tc, part_ready);
    tcase_add_test(tc, failed_dropped);
    tcase_add_test(tc, empty);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
