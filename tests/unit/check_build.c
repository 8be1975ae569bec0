/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Check tests of the builders (shim/compile/): every collective's
 * schedules, for every rank of communicators of 1 to 17 ranks spread over
 * agents in several ways, are run together by a small simulator of the
 * agents' executor (the same matching rules: the k-th SEND of s to d
 * pairs with the k-th RECV of d from s, a round starts when the rank's
 * earlier rounds are done, a SEND is done when read), in random orders.
 * The results are compared with what the collective must deliver,
 * computed here element by element; reductions must give the same bits on
 * every rank and in every order. A static check finds steps of one round
 * that write what another step of the round reads or writes.
 */
#define _GNU_SOURCE
#include "shim/compile/build.h"
#include "common/dps_proto.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXP 17

typedef struct srank {
    uint8_t  *buf[DPS_NBUF];
    uint64_t  len[DPS_NBUF];
    bld_t     b;
    uint32_t  round; /* lowest round with steps not done */
    uint8_t  *done;
    uint32_t *match; /* RECV step -> the peer's SEND step index */
} srank_t;

typedef struct sim {
    uint32_t p;
    uint32_t agent[MAXP];
    srank_t  r[MAXP];
    char     why[300];
} sim_t;

static unsigned rng_state = 12345;

static unsigned rnd(void)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return (rng_state >> 8) & 0xffffff;
}

/* Agent layouts: all on one, one each, pairs, interleaved over three. */
static void layout(sim_t *s, int kind)
{
    for (uint32_t i = 0; i < s->p; i++) {
        s->agent[i] = kind == 0   ? 0
                      : kind == 1 ? i
                      : kind == 2 ? i / 2
                                  : i % 3;
    }
}

/* Pair every RECV with its SEND; lengths must agree. 0 or -1 (why). */
static int pair_up(sim_t *s)
{
    for (uint32_t d = 0; d < s->p; d++) {
        srank_t *rd = &s->r[d];

        rd->match = calloc(rd->b.n + 1, sizeof(uint32_t));
        for (uint32_t i = 0; i < rd->b.n; i++) {
            const dps_step_t *st = &rd->b.steps[i];
            uint32_t          k = 0, j, kk = 0;

            if (st->kind != DPS_STEP_RECV &&
                st->kind != DPS_STEP_RECV_REDUCE) {
                continue;
            }
            for (j = 0; j < i; j++) {
                const dps_step_t *o = &rd->b.steps[j];

                k += (o->kind == DPS_STEP_RECV ||
                      o->kind == DPS_STEP_RECV_REDUCE) &&
                     o->peer == st->peer;
            }
            for (j = 0; j < s->r[st->peer].b.n; j++) {
                const dps_step_t *o = &s->r[st->peer].b.steps[j];

                if (o->kind == DPS_STEP_SEND && o->peer == d && kk++ == k) {
                    break;
                }
            }
            if (j == s->r[st->peer].b.n ||
                s->r[st->peer].b.steps[j].len != st->len) {
                snprintf(s->why, sizeof(s->why),
                         "rank %u recv %u from %u: "
                         "no matching send of the same length",
                         d, i, st->peer);
                return -1;
            }
            rd->match[i] = j;
        }
    }
    /* And no SEND without its RECV. */
    for (uint32_t src = 0; src < s->p; src++) {
        for (uint32_t dst = 0; dst < s->p; dst++) {
            uint32_t ns = 0, nr = 0;

            for (uint32_t j = 0; j < s->r[src].b.n; j++) {
                ns += s->r[src].b.steps[j].kind == DPS_STEP_SEND &&
                      s->r[src].b.steps[j].peer == dst;
            }
            for (uint32_t j = 0; j < s->r[dst].b.n; j++) {
                const dps_step_t *o = &s->r[dst].b.steps[j];

                nr += (o->kind == DPS_STEP_RECV ||
                       o->kind == DPS_STEP_RECV_REDUCE) &&
                      o->peer == src;
            }
            if (ns != nr) {
                snprintf(s->why, sizeof(s->why),
                         "%u sends %u to %u, which "
                         "receives %u",
                         src, ns, dst, nr);
                return -1;
            }
        }
    }
    return 0;
}

static int overlaps(unsigned b1, uint64_t o1, uint64_t l1, unsigned b2,
                    uint64_t o2, uint64_t l2)
{
    return b1 == b2 && l1 > 0 && l2 > 0 && o1 < o2 + l2 && o2 < o1 + l1;
}

/* Within a round of one rank, what a step writes nothing else of the
 * round reads or writes. */
static int hazards(sim_t *s)
{
    for (uint32_t x = 0; x < s->p; x++) {
        const bld_t *b = &s->r[x].b;

        for (uint32_t i = 0; i < b->n; i++) {
            const dps_step_t *w = &b->steps[i];

            if (w->kind == DPS_STEP_SEND) {
                continue;
            }
            for (uint32_t j = 0; j < b->n; j++) {
                const dps_step_t *o = &b->steps[j];
                int               rd = o->kind == DPS_STEP_SEND ||
                         o->kind == DPS_STEP_COPY ||
                         o->kind == DPS_STEP_REDUCE;
                int wr = o->kind != DPS_STEP_SEND;

                if (j == i || o->round != w->round) {
                    continue;
                }
                if ((rd && overlaps(w->dst_buf, w->dst_off, w->len, o->src_buf,
                                    o->src_off, o->len)) ||
                    (wr && overlaps(w->dst_buf, w->dst_off, w->len, o->dst_buf,
                                    o->dst_off, o->len))) {
                    snprintf(s->why, sizeof(s->why),
                             "rank %u round %u: "
                             "step %u writes what step %u uses",
                             x, w->round, i, j);
                    return -1;
                }
            }
        }
    }
    return 0;
}

static int ready(sim_t *s, uint32_t x, uint32_t i)
{
    srank_t          *r = &s->r[x];
    const dps_step_t *st = &r->b.steps[i];

    if (r->done[i] || st->round != r->round) {
        return 0;
    }
    if (st->kind == DPS_STEP_SEND) {
        return 0;
    }
    if (st->kind == DPS_STEP_RECV || st->kind == DPS_STEP_RECV_REDUCE) {
        return s->r[st->peer].round >=
               s->r[st->peer].b.steps[r->match[i]].round;
    }
    return 1;
}

static void execute(sim_t *s, uint32_t x, uint32_t i)
{
    srank_t          *r = &s->r[x];
    const dps_step_t *st = &r->b.steps[i];
    const uint8_t    *src;
    uint8_t          *dst = r->buf[st->dst_buf] + st->dst_off;

    if (st->kind == DPS_STEP_RECV || st->kind == DPS_STEP_RECV_REDUCE) {
        srank_t          *sr = &s->r[st->peer];
        const dps_step_t *ss = &sr->b.steps[r->match[i]];

        src = sr->buf[ss->src_buf] + ss->src_off;
        sr->done[r->match[i]] = 1;
    } else {
        src = r->buf[st->src_buf] + st->src_off;
    }
    if (st->len > 0 &&
        (st->kind == DPS_STEP_RECV_REDUCE || st->kind == DPS_STEP_REDUCE)) {
        ck_assert_int_eq(dps_reduce(st->op, st->dtype, src, dst, st->len),
                         DPS_OK);
    } else if (st->len > 0) {
        memmove(dst, src, st->len);
    }
    r->done[i] = 1;
}

/* Advance rounds; 1 if every rank is done. */
static int rounds(sim_t *s)
{
    int all = 1;

    for (uint32_t x = 0; x < s->p; x++) {
        srank_t *r = &s->r[x];

        for (;;) {
            int left = 0, any = 0;

            for (uint32_t i = 0; i < r->b.n; i++) {
                if (r->b.steps[i].round == r->round) {
                    left |= !r->done[i];
                }
                any |= r->b.steps[i].round >= r->round;
            }
            if (left || !any) {
                all &= !left && !any;
                break;
            }
            r->round++;
        }
    }
    return all;
}

/* Run the schedules; 0, or -1 (why) when stuck. */
static int run(sim_t *s)
{
    uint32_t *rx = malloc(sizeof(uint32_t) * 200000);
    uint32_t *ri = rx + 100000;

    for (uint32_t x = 0; x < s->p; x++) {
        s->r[x].round = 0;
        s->r[x].done = calloc(s->r[x].b.n + 1, 1);
    }
    while (!rounds(s)) {
        uint32_t n = 0, k;

        for (uint32_t x = 0; x < s->p; x++) {
            for (uint32_t i = 0; i < s->r[x].b.n && n < 100000; i++) {
                if (ready(s, x, i)) {
                    rx[n] = x;
                    ri[n++] = i;
                }
            }
        }
        if (n == 0) {
            snprintf(s->why, sizeof(s->why), "stuck: no step can run");
            free(rx);
            return -1;
        }
        /* A few of the ready steps, in random order. */
        for (k = 0; k < 1 + rnd() % 3 && n > 0; k++) {
            uint32_t pick = rnd() % n;

            execute(s, rx[pick], ri[pick]);
            rx[pick] = rx[n - 1];
            ri[pick] = ri[n - 1];
            n--;
        }
    }
    free(rx);
    return 0;
}

static void sim_free(sim_t *s)
{
    for (uint32_t x = 0; x < s->p; x++) {
        for (int b = 0; b < DPS_NBUF; b++) {
            free(s->r[x].buf[b]);
        }
        free(s->r[x].b.steps);
        free(s->r[x].done);
        free(s->r[x].match);
    }
    memset(s->r, 0, sizeof(s->r));
}

/* The test's view of one collective call on every rank. */
typedef struct call {
    int      coll;
    uint32_t root;
    unsigned op, dtype;
    uint64_t bytes;                                /* as bld_args_t */
    uint64_t scount[MAXP][MAXP], soff[MAXP][MAXP]; /* [rank][peer] */
    uint64_t rcount[MAXP][MAXP], roff[MAXP][MAXP];
    int      vec; /* pass the arrays */
    int      in_place;
    uint64_t slen[MAXP], rlen[MAXP]; /* buffer lengths per rank */
} call_t;

/* Build every rank's schedule and give it buffers. */
static int build_all(sim_t *s, const call_t *c)
{
    for (uint32_t x = 0; x < s->p; x++) {
        bld_args_t a;
        srank_t   *r = &s->r[x];

        memset(&a, 0, sizeof(a));
        a.coll = c->coll;
        a.size = s->p;
        a.rank = x;
        a.agent = s->agent;
        a.root = c->root;
        a.op = (uint8_t)c->op;
        a.dtype = (uint16_t)c->dtype;
        a.bytes = c->bytes;
        a.in_place =
            c->in_place && (c->coll == DPS_COLL_ALLGATHER ||
                            c->coll == DPS_COLL_ALLGATHERV || x == c->root);
        if (c->vec) {
            a.scount = c->scount[x];
            a.soff = c->soff[x];
            a.rcount = c->rcount[x];
            a.roff = c->roff[x];
        }
        if (c->coll == DPS_COLL_GATHERV || c->coll == DPS_COLL_SCATTERV) {
            a.bytes = c->coll == DPS_COLL_GATHERV ? c->scount[x][c->root]
                                                  : c->rcount[x][c->root];
        }
        memset(&r->b, 0, sizeof(r->b));
        if (bld_build(&a, &r->b) != 0) {
            snprintf(s->why, sizeof(s->why), "build failed for rank %u", x);
            return -1;
        }
        r->len[DPS_BUF_SEND] = c->slen[x];
        r->len[DPS_BUF_RECV] = c->rlen[x];
        r->len[DPS_BUF_TMP] = r->b.need[DPS_BUF_TMP];
        for (int b = 0; b < DPS_NBUF; b++) {
            char err[200];

            if (r->b.need[b] > r->len[b]) {
                snprintf(s->why, sizeof(s->why),
                         "rank %u buffer %d needs "
                         "%llu, has %llu",
                         x, b, (unsigned long long)r->b.need[b],
                         (unsigned long long)r->len[b]);
                return -1;
            }
            r->buf[b] = malloc(r->len[b] + 1);
            memset(r->buf[b], 0xee, r->len[b] + 1);
            if (dps_sched_check(r->b.steps, r->b.n, s->p, r->len, err,
                                sizeof(err)) != DPS_OK) {
                snprintf(s->why, sizeof(s->why), "rank %u: %s", x, err);
                return -1;
            }
        }
    }
    return pair_up(s) != 0 || hazards(s) != 0 ? -1 : 0;
}

static uint8_t pat(uint32_t rank, uint64_t i)
{
    return (uint8_t)(rank * 37u + i * 11u + (i >> 8) + 1);
}

static void fill_send(sim_t *s)
{
    for (uint32_t x = 0; x < s->p; x++) {
        for (uint64_t i = 0; i < s->r[x].len[DPS_BUF_SEND]; i++) {
            s->r[x].buf[DPS_BUF_SEND][i] = pat(x, i);
        }
    }
}

#define FAILF(...)                                     \
    do {                                               \
        snprintf(s->why, sizeof(s->why), __VA_ARGS__); \
        return -1;                                     \
    } while (0)

/* Expected data of the movement collectives. */
static int check_move(sim_t *s, const call_t *c)
{
    for (uint32_t d = 0; d < s->p; d++) {
        const uint8_t *rb = s->r[d].buf[DPS_BUF_RECV];

        for (uint32_t q = 0; q < s->p; q++) {
            uint64_t n = 0, ro = 0, so = 0;
            uint32_t src = q;

            switch (c->coll) {
            case DPS_COLL_BARRIER: continue;
            case DPS_COLL_BCAST:
                if (q != 0 || d == c->root) {
                    continue;
                }
                n = c->bytes;
                src = c->root;
                break;
            case DPS_COLL_GATHER:
            case DPS_COLL_GATHERV:
                if (d != c->root) {
                    continue;
                }
                n = c->rcount[d][q];
                ro = c->roff[d][q];
                if (c->in_place && q == d) {
                    so = ro; /* preset in RECV: see run_call */
                }
                break;
            case DPS_COLL_SCATTER:
            case DPS_COLL_SCATTERV:
                if (q != c->root || (c->in_place && d == c->root)) {
                    continue;
                }
                n = c->rcount[d][q];
                so = c->soff[q][d];
                break;
            case DPS_COLL_ALLGATHER:
            case DPS_COLL_ALLGATHERV:
                n = c->rcount[d][q];
                ro = c->roff[d][q];
                so = c->in_place ? c->roff[q][q] : 0;
                break;
            default: /* alltoall(v)(w) */
                n = c->rcount[d][q];
                ro = c->roff[d][q];
                so = c->soff[q][d];
                break;
            }
            for (uint64_t i = 0; i < n; i++) {
                if (rb[ro + i] != pat(src, so + i)) {
                    FAILF("rank %u byte %llu of block %u: %u, expected %u", d,
                          (unsigned long long)(ro + i), q, rb[ro + i],
                          pat(src, so + i));
                }
            }
        }
    }
    return 0;
}

/* Reductions on int32 (exact) or double (same bits everywhere). */
static int32_t ival(uint32_t rank, uint64_t e)
{
    return (int32_t)((rank + 3) * 1000003u + e * 7919u) % 100000 - 50000;
}

static void fill_reduce(sim_t *s, const call_t *c)
{
    for (uint32_t x = 0; x < s->p; x++) {
        uint64_t ne = c->slen[x] / dps_dtype_size(c->dtype);

        for (uint64_t e = 0; e < ne; e++) {
            if (c->dtype == DPS_T_I32) {
                int32_t v = ival(x, e);

                memcpy(s->r[x].buf[DPS_BUF_SEND] + e * 4, &v, 4);
            } else {
                double v = 1.0 / (double)(ival(x, e) | 1);

                memcpy(s->r[x].buf[DPS_BUF_SEND] + e * 8, &v, 8);
            }
        }
    }
}

/* Exact sum of ranks lo..hi-1's element e (int32 only). */
static int32_t isum(uint32_t lo, uint32_t hi, uint64_t e, unsigned op)
{
    int32_t v = ival(lo, e);

    for (uint32_t x = lo + 1; x < hi; x++) {
        int32_t w = ival(x, e);

        v = op == DPS_OP_SUM   ? (int32_t)((uint32_t)v + (uint32_t)w)
            : op == DPS_OP_MAX ? (w > v ? w : v)
                               : (w < v ? w : v);
    }
    return v;
}

static int check_reduce(sim_t *s, const call_t *c, uint8_t **first)
{
    uint64_t es = dps_dtype_size(c->dtype);

    for (uint32_t d = 0; d < s->p; d++) {
        const uint8_t *rb = s->r[d].buf[DPS_BUF_RECV];
        uint64_t       ne = c->rlen[d] / es, base = 0;
        uint32_t       lo = 0, hi = s->p;

        if (c->coll == DPS_COLL_REDUCE && d != c->root) {
            continue;
        }
        if (c->coll == DPS_COLL_EXSCAN && d == 0) {
            continue;
        }
        if (c->coll == DPS_COLL_SCAN || c->coll == DPS_COLL_EXSCAN) {
            hi = c->coll == DPS_COLL_SCAN ? d + 1 : d;
        }
        if (c->coll == DPS_COLL_REDUCE_SCATTER ||
            c->coll == DPS_COLL_REDUCE_SCATTER_BLOCK) {
            for (uint32_t x = 0; x < d; x++) {
                base += c->rcount[0][x] / es;
            }
        }
        for (uint64_t e = 0; e < ne && c->dtype == DPS_T_I32; e++) {
            int32_t got, want = isum(lo, hi, base + e, c->op);

            memcpy(&got, rb + e * 4, 4);
            if (got != want) {
                FAILF("rank %u element %llu: %d, expected %d", d,
                      (unsigned long long)e, got, want);
            }
        }
        /* Floating point: the same bits as the first run's. */
        if (first[d] == NULL) {
            first[d] = malloc(c->rlen[d] + 1);
            memcpy(first[d], rb, c->rlen[d]);
        } else if (memcmp(first[d], rb, c->rlen[d]) != 0) {
            FAILF("rank %u: another order of steps gave other bits", d);
        }
        if (c->coll == DPS_COLL_ALLREDUCE && d > 0 &&
            memcmp(s->r[0].buf[DPS_BUF_RECV], rb, c->rlen[d]) != 0) {
            FAILF("rank %u's allreduce result differs from rank 0's", d);
        }
    }
    return 0;
}

static int is_reduction(int coll)
{
    return dps_coll_family(coll) == DPS_FAM_REDUCE;
}

/* Build, run in several random orders, check. */
static void run_call(uint32_t p, int lay, const call_t *c)
{
    uint8_t *first[MAXP] = {0};
    sim_t    s;

    for (int rep = 0; rep < 3; rep++) {
        int rc;

        memset(&s, 0, sizeof(s));
        s.p = p;
        layout(&s, lay);
        rc = build_all(&s, c);
        if (rc == 0) {
            if (is_reduction(c->coll)) {
                fill_reduce(&s, c);
            } else {
                fill_send(&s);
            }
            /* In place: this rank's block starts in RECV. */
            for (uint32_t x = 0; c->in_place && x < p; x++) {
                if (c->coll == DPS_COLL_ALLGATHER ||
                    c->coll == DPS_COLL_ALLGATHERV ||
                    (c->coll == DPS_COLL_GATHER && x == c->root) ||
                    (c->coll == DPS_COLL_GATHERV && x == c->root)) {
                    for (uint64_t i = 0; i < c->rcount[x][x]; i++) {
                        s.r[x].buf[DPS_BUF_RECV][c->roff[x][x] + i] =
                            pat(x, c->roff[x][x] + i);
                    }
                }
            }
            rc = run(&s);
        }
        if (rc == 0) {
            rc = is_reduction(c->coll) ? check_reduce(&s, c, first)
                                       : check_move(&s, c);
        }
        if (rc != 0) {
            ck_abort_msg("%s, %u ranks, layout %d, root %u, %llu bytes%s: "
                         "%s",
                         dps_coll_str((unsigned)c->coll), p, lay, c->root,
                         (unsigned long long)c->bytes,
                         c->in_place ? ", in place" : "", s.why);
        }
        sim_free(&s);
    }
    for (uint32_t x = 0; x < p; x++) {
        free(first[x]);
    }
}

/* Regular layouts: block i at i * n. */
static void regular(call_t *c, uint32_t p, uint64_t n)
{
    for (uint32_t x = 0; x < p; x++) {
        for (uint32_t q = 0; q < p; q++) {
            c->scount[x][q] = c->rcount[x][q] = n;
            c->soff[x][q] = c->roff[x][q] = q * n;
        }
    }
}

/* Irregular: counts from a pairwise-agreed pattern (some zero), blocks in
 * reverse order with gaps. cnt[x][q]: what x receives from q. */
static void irregular(call_t *c, uint32_t p, int coll)
{
    for (uint32_t x = 0; x < p; x++) {
        uint64_t so = 3, ro = 5;

        for (uint32_t i = 0; i < p; i++) {
            uint32_t q = p - 1 - i;
            uint64_t rc = ((x * 7 + q * 3) % 5) * 13; /* x from q */
            uint64_t sc = ((q * 7 + x * 3) % 5) * 13; /* q from x */

            if (coll == DPS_COLL_GATHERV || coll == DPS_COLL_ALLGATHERV) {
                rc = (q % 4) * 17 + (q == 2 ? 0 : 1); /* q's block */
                sc = (x % 4) * 17 + (x == 2 ? 0 : 1);
            } else if (coll == DPS_COLL_SCATTERV) {
                rc = (x % 4) * 17 + (x == 2 ? 0 : 1); /* the block for */
                sc = (q % 4) * 17 + (q == 2 ? 0 : 1); /* x, for q */
            }
            c->rcount[x][q] = rc;
            c->scount[x][q] = sc;
            c->roff[x][q] = ro;
            c->soff[x][q] = so;
            ro += rc + 2;
            so += sc + 1;
        }
    }
}

static void lengths(call_t *c, uint32_t p)
{
    for (uint32_t x = 0; x < p; x++) {
        uint64_t s = 0, r = 0;

        for (uint32_t q = 0; q < p; q++) {
            if (c->soff[x][q] + c->scount[x][q] > s) {
                s = c->soff[x][q] + c->scount[x][q];
            }
            if (c->roff[x][q] + c->rcount[x][q] > r) {
                r = c->roff[x][q] + c->rcount[x][q];
            }
        }
        switch (c->coll) {
        case DPS_COLL_BCAST:
            s = x == c->root ? c->bytes : 0;
            r = x == c->root ? 0 : c->bytes;
            break;
        case DPS_COLL_BARRIER: s = r = 0; break;
        case DPS_COLL_GATHER:
        case DPS_COLL_GATHERV:
            s = c->in_place && x == c->root ? 0 : c->scount[x][c->root];
            r = x == c->root ? r : 0;
            break;
        case DPS_COLL_SCATTER:
        case DPS_COLL_SCATTERV:
            s = x == c->root ? s : 0;
            r = c->in_place && x == c->root ? 0 : c->rcount[x][c->root];
            break;
        case DPS_COLL_ALLGATHER:
        case DPS_COLL_ALLGATHERV: s = c->in_place ? 0 : c->rcount[x][x]; break;
        default: break;
        }
        c->slen[x] = s;
        c->rlen[x] = r;
    }
}

static const int move_colls[] = {
    DPS_COLL_BARRIER,   DPS_COLL_BCAST,      DPS_COLL_GATHER,
    DPS_COLL_GATHERV,   DPS_COLL_SCATTER,    DPS_COLL_SCATTERV,
    DPS_COLL_ALLGATHER, DPS_COLL_ALLGATHERV, DPS_COLL_ALLTOALL,
    DPS_COLL_ALLTOALLV, DPS_COLL_ALLTOALLW};

START_TEST(movement)
{
    static call_t c;
    int           coll = move_colls[_i];

    for (uint32_t p = 1; p <= MAXP; p += (p < 9 ? 1 : 8)) {
        for (int lay = 0; lay < 4; lay++) {
            for (uint32_t root = 0; root < p; root += (p > 4 ? 3 : 1)) {
                for (int ip = 0; ip < 2; ip++) {
                    int v = coll == DPS_COLL_GATHERV ||
                            coll == DPS_COLL_SCATTERV ||
                            coll == DPS_COLL_ALLGATHERV ||
                            coll == DPS_COLL_ALLTOALLV ||
                            coll == DPS_COLL_ALLTOALLW;
                    int ip_ok = coll == DPS_COLL_GATHER ||
                                coll == DPS_COLL_GATHERV ||
                                coll == DPS_COLL_SCATTER ||
                                coll == DPS_COLL_SCATTERV ||
                                coll == DPS_COLL_ALLGATHER ||
                                coll == DPS_COLL_ALLGATHERV;

                    if (ip && !ip_ok) {
                        continue;
                    }
                    memset(&c, 0, sizeof(c));
                    c.coll = coll;
                    c.root = root;
                    c.bytes = 24 + root;
                    c.vec = v;
                    c.in_place = ip;
                    if (v) {
                        irregular(&c, p, coll);
                    } else {
                        regular(&c, p, c.bytes);
                    }
                    lengths(&c, p);
                    run_call(p, lay, &c);
                }
            }
        }
    }
}
END_TEST

/* Bytes the ranks of agent g send to ranks of other agents. */
static uint64_t agent_out(const sim_t *s, uint32_t g)
{
    uint64_t n = 0;

    for (uint32_t x = 0; x < s->p; x++) {
        const bld_t *b = &s->r[x].b;

        for (uint32_t i = 0; s->agent[x] == g && i < b->n; i++) {
            if (b->steps[i].kind == DPS_STEP_SEND &&
                s->agent[b->steps[i].peer] != g) {
                n += b->steps[i].len;
            }
        }
    }
    return n;
}

/* Large bcasts: the chain of agents delivers every byte, and where it is
 * chosen (bld_chain_pieces) no agent sends more than the message to the
 * others (the tree's root sends log2 G copies). */
START_TEST(bcast_chain)
{
    static call_t         c;
    static const uint64_t sizes[] = {256 * 1024 - 1, (1u << 20) + 37,
                                     2ull * BLD_CHAIN_SEGS * BLD_CHAIN_SEG +
                                         5};
    static const uint32_t ps[] = {2, 3, 5, 8, 17};

    /* Where each wins at 8 agents: the tree's fewer hops for 256 KiB,
     * the chain's overlapped hops from 1 MiB; never for two agents. */
    ck_assert_uint_eq(bld_chain_pieces(256 * 1024, 8), 0);
    ck_assert_uint_gt(bld_chain_pieces(1u << 20, 8), 1);
    ck_assert_uint_eq(bld_chain_pieces(64u << 20, 2), 0);
    for (unsigned pi = 0; pi < sizeof(ps) / sizeof(ps[0]); pi++) {
        uint32_t p = ps[pi];

        for (int lay = 1; lay < 4; lay++) {
            for (uint32_t root = 0; root < p; root += 2) {
                for (unsigned z = 0; z < 3; z++) {
                    sim_t    s;
                    uint32_t g, ng = 0;

                    if (p == 17 && (root % 8 != 0 || z == 0)) {
                        continue;
                    }
                    memset(&c, 0, sizeof(c));
                    c.coll = DPS_COLL_BCAST;
                    c.root = root;
                    c.bytes = sizes[z];
                    lengths(&c, p);
                    memset(&s, 0, sizeof(s));
                    s.p = p;
                    layout(&s, lay);
                    ck_assert_int_eq(build_all(&s, &c), 0);
                    for (g = 0; g < p; g++) {
                        ng = s.agent[g] + 1 > ng ? s.agent[g] + 1 : ng;
                    }
                    for (g = 0; bld_chain_pieces(c.bytes, ng) > 0 && g < ng;
                         g++) {
                        ck_assert_msg(agent_out(&s, g) <= c.bytes,
                                      "%u ranks, layout %d, root %u: agent "
                                      "%u sends %llu bytes of %llu",
                                      p, lay, root, g,
                                      (unsigned long long)agent_out(&s, g),
                                      (unsigned long long)c.bytes);
                    }
                    sim_free(&s);
                    run_call(p, lay, &c);
                }
            }
        }
    }
}
END_TEST

static const int red_colls[] = {
    DPS_COLL_REDUCE,         DPS_COLL_ALLREDUCE,
    DPS_COLL_REDUCE_SCATTER, DPS_COLL_REDUCE_SCATTER_BLOCK,
    DPS_COLL_SCAN,           DPS_COLL_EXSCAN};

START_TEST(reductions)
{
    static call_t c;
    int           coll = red_colls[_i];
    /* Small (folded) and large (ring) vectors, in elements. */
    static const uint64_t sizes[] = {1, 5, 300, BLD_SMALL_REDUCE / 4 + 37};

    for (uint32_t p = 1; p <= MAXP; p += (p < 9 ? 1 : 8)) {
        for (int lay = 0; lay < 4; lay++) {
            for (unsigned z = 0; z < 4; z++) {
                for (int t = 0; t < 2; t++) {
                    uint32_t root = (z * 5) % p;
                    uint64_t es = t == 0 ? 4 : 8, ne = sizes[z];

                    if (z == 3 && (p > 9 || lay == 2)) {
                        continue; /* large ones: enough at a few sizes */
                    }
                    memset(&c, 0, sizeof(c));
                    c.coll = coll;
                    c.root = root;
                    c.op = t == 0 ? (z == 1 ? DPS_OP_MAX : DPS_OP_SUM)
                                  : DPS_OP_SUM;
                    c.dtype = t == 0 ? DPS_T_I32 : DPS_T_F64;
                    c.bytes = ne * es;
                    if (coll == DPS_COLL_REDUCE_SCATTER) {
                        c.vec = 1;
                        for (uint32_t x = 0; x < p; x++) {
                            for (uint32_t q = 0; q < p; q++) {
                                c.rcount[x][q] =
                                    ((q * 3) % 4) * es * (ne > 100 ? 1000 : 1);
                            }
                        }
                    }
                    for (uint32_t x = 0; x < p; x++) {
                        uint64_t tot = 0;

                        for (uint32_t q = 0; q < p; q++) {
                            tot += c.rcount[x][q];
                        }
                        switch (coll) {
                        case DPS_COLL_REDUCE_SCATTER:
                            c.slen[x] = tot;
                            c.rlen[x] = c.rcount[x][x];
                            break;
                        case DPS_COLL_REDUCE_SCATTER_BLOCK:
                            c.slen[x] = c.bytes * p;
                            c.rlen[x] = c.bytes;
                            for (uint32_t q = 0; q < p; q++) {
                                c.rcount[x][q] = c.bytes;
                            }
                            break;
                        default:
                            c.slen[x] = c.bytes;
                            c.rlen[x] = (coll == DPS_COLL_REDUCE && x != root)
                                            ? 0
                                            : c.bytes;
                        }
                    }
                    run_call(p, lay, &c);
                }
            }
        }
    }
}
END_TEST

/*
 * Neighbourhood collectives and pattern groups (bld_pairs): a random
 * multigraph of edges (s, d, bytes), self edges and repeated pairs
 * included. Every rank lists its sends and its receives in edge order, so
 * the k-th edge from s to d is both s's k-th send to d and d's k-th
 * receive from s; each receive block must hold its edge's send block.
 */
#define MAXE 64

START_TEST(pairs)
{
    static uint64_t list[MAXP][6 * MAXE];
    uint32_t        es[MAXE], ed[MAXE];
    uint64_t        elen[MAXE], eso[MAXE], ero[MAXE];

    for (uint32_t p = 1; p <= MAXP; p += (p < 9 ? 1 : 8)) {
        for (int lay = 0; lay < 4; lay++) {
            for (int rep = 0; rep < 4; rep++) {
                uint32_t ne = rnd() % MAXE, ns[MAXP] = {0}, nr[MAXP] = {0};
                uint64_t so[MAXP] = {0}, ro[MAXP] = {0};
                sim_t    s;
                int      rc = 0;

                for (uint32_t e = 0; e < ne; e++) {
                    es[e] = rnd() % p;
                    ed[e] = rep == 0 ? es[e] : rnd() % p; /* self only */
                    elen[e] = rnd() % 3 == 0 ? 0 : 1 + rnd() % 300;
                    eso[e] = so[es[e]];
                    so[es[e]] += elen[e] + rnd() % 3;
                    ns[es[e]]++;
                }
                for (uint32_t e = 0; e < ne; e++) {
                    ero[e] = ro[ed[e]];
                    ro[ed[e]] += elen[e] + 1 + rnd() % 3;
                    nr[ed[e]]++;
                }
                memset(&s, 0, sizeof(s));
                s.p = p;
                layout(&s, lay);
                for (uint32_t x = 0; x < p && rc == 0; x++) {
                    uint64_t  *l = list[x], *r = list[x] + 3 * ns[x];
                    srank_t   *sr = &s.r[x];
                    bld_args_t a;

                    for (uint32_t e = 0; e < ne; e++) {
                        if (es[e] == x) {
                            *l++ = ed[e];
                            *l++ = eso[e];
                            *l++ = elen[e];
                        }
                        if (ed[e] == x) {
                            *r++ = es[e];
                            *r++ = ero[e];
                            *r++ = elen[e];
                        }
                    }
                    memset(&a, 0, sizeof(a));
                    a.coll =
                        rep % 2 ? DPS_COLL_GROUP : DPS_COLL_NEIGHBOR_ALLTOALLV;
                    a.size = p;
                    a.rank = x;
                    a.agent = s.agent;
                    a.nsend = ns[x];
                    a.nrecv = nr[x];
                    a.pairs = list[x];
                    ck_assert_int_eq(bld_build(&a, &sr->b), 0);
                    sr->len[DPS_BUF_SEND] = so[x];
                    sr->len[DPS_BUF_RECV] = ro[x];
                    for (int b = 0; b < DPS_NBUF; b++) {
                        ck_assert_uint_le(sr->b.need[b], sr->len[b]);
                        sr->buf[b] = malloc(sr->len[b] + 1);
                        memset(sr->buf[b], 0xee, sr->len[b] + 1);
                    }
                }
                rc = pair_up(&s) != 0 || hazards(&s) != 0;
                if (rc == 0) {
                    fill_send(&s);
                    rc = run(&s);
                }
                for (uint32_t e = 0; rc == 0 && e < ne; e++) {
                    const uint8_t *rb = s.r[ed[e]].buf[DPS_BUF_RECV];

                    for (uint64_t i = 0; i < elen[e]; i++) {
                        ck_assert_msg(rb[ero[e] + i] == pat(es[e], eso[e] + i),
                                      "%u ranks, edge %u (%u -> %u), byte "
                                      "%llu",
                                      p, e, es[e], ed[e],
                                      (unsigned long long)i);
                    }
                }
                ck_assert_msg(rc == 0, "%u ranks, layout %d: %s", p, lay,
                              s.why);
                sim_free(&s);
            }
        }
    }
}
END_TEST

START_TEST(topology)
{
    uint32_t   agent[7] = {4, 2, 4, 9, 2, 2, 4};
    bld_topo_t t;

    ck_assert_int_eq(bld_topo_init(&t, 7, agent), 0);
    ck_assert_uint_eq(t.ngroups, 3);
    ck_assert_uint_eq(bld_gsize(&t, 0), 3); /* ranks 0, 2, 6 */
    ck_assert_uint_eq(bld_member(&t, 0, 2), 6);
    ck_assert_uint_eq(bld_member(&t, 1, 0), 1); /* ranks 1, 4, 5 */
    ck_assert_uint_eq(bld_member(&t, 2, 0), 3);
    ck_assert_uint_eq(t.group[5], 1);
    ck_assert_uint_eq(t.pos[5], 2);
    bld_topo_fini(&t);
    ck_assert_uint_eq(bld_log2(1), 0);
    ck_assert_uint_eq(bld_log2(5), 3);
    ck_assert_uint_eq(bld_log2(8), 3);
}
END_TEST

int main(void)
{
    Suite   *s = suite_create("build");
    TCase   *tc = tcase_create("schedules");
    SRunner *sr;
    int      failed;

    tcase_add_test(tc, topology);
    tcase_add_test(tc, pairs);
    tcase_add_loop_test(tc, movement, 0,
                        (int)(sizeof(move_colls) / sizeof(move_colls[0])));
    tcase_add_test(tc, bcast_chain);
    tcase_add_loop_test(tc, reductions, 0,
                        (int)(sizeof(red_colls) / sizeof(red_colls[0])));
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
