/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Builders of the reductions: reduce, allreduce, reduce_scatter(_block),
 * scan, exscan.
 *
 * Algorithms:
 *   - within an agent, a binomial tree reduces every rank's vector into
 *     its first rank (the root, for reduce): ceil(log2 m) rounds for m
 *     ranks, each a read-and-reduce by the receiver's DMA engine;
 *   - across agents, for G agents: up to BLD_SMALL_REDUCE bytes the
 *     first ranks exchange their partial results and each folds all G in
 *     one fixed order (one round between agents); above it, a ring
 *     reduce-scatter (G-1 rounds of 1/G of the vector) and an allgather
 *     of the reduced pieces (reduce gathers them at the root instead;
 *     reduce_scatter needs no allgather: each agent's ranks' blocks end
 *     reduced on it);
 *   - then each agent's first rank hands the result to its ranks;
 *   - scan and exscan: where every agent's ranks are consecutive (the
 *     usual placement) and there are several agents, in two levels: each
 *     agent's first rank gathers its ranks' vectors and folds their
 *     prefixes, the first ranks run an exclusive scan of their agents'
 *     totals by recursive doubling (ceil(log2 G) rounds between agents),
 *     and each first rank hands its ranks their results; otherwise
 *     recursive doubling among all ranks (MPICH's), ceil(log2 n) rounds
 *     of exchanges of partial results.
 * Each element of a result is computed once, by one rank, in an order
 * fixed by the schedule, and copied to the others: every rank gets the
 * same bits, run after run.
 */
#include "shim/compile/build.h"
#include "common/dps_proto.h"

#include <stdlib.h>

/* Piece c of G of an n-byte vector of es-byte elements. */
static void piece(uint64_t n, uint64_t es, uint32_t G, uint32_t c, uint64_t *o,
                  uint64_t *l)
{
    uint64_t ne = n / es, q = ne / G, r = ne % G;

    *o = ((uint64_t)c * q + (c < r ? c : r)) * es;
    *l = (q + (c < r ? 1 : 0)) * es;
}

typedef struct red {
    const bld_args_t *a;
    const bld_topo_t *t;
    bld_t            *b;
    uint64_t          n, es;
    unsigned          op, dt;
    unsigned          acc;  /* buffer accumulating at offset 0 */
    uint64_t          tmp0; /* first free byte of TMP */
    uint32_t         *reps; /* per group: the rank that stands for it */
} red_t;

/*
 * Binomial reduction within the group of rank me into its rep, from
 * round r0. Returns the round after this rank's part: the rep's next
 * round, or, for the others, the one after they sent.
 */
static uint32_t group_reduce(red_t *x, uint32_t r0)
{
    const bld_topo_t *t = x->t;
    uint32_t          me = x->a->rank, g = t->group[me], m = bld_gsize(t, g);
    uint32_t          rep = x->reps[g], j, k;

    /* Index among the group with the rep first. */
    j = (me == rep) ? 0 : t->pos[me] + (t->pos[me] < t->pos[rep] ? 1 : 0);
    for (k = 0; (1u << k) < m; k++) {
        uint32_t d = 1u << k, peer, pj;

        if (j & d) {
            pj = j - d;
            peer = pj == 0
                       ? rep
                       : bld_member(t, g, pj - (pj <= t->pos[rep] ? 1 : 0));
            bld_send(x->b, r0 + k, peer, x->acc, 0, x->n);
            return r0 + k + 1;
        }
        if (j + d < m) {
            pj = j + d;
            peer = bld_member(t, g, pj - (pj <= t->pos[rep] ? 1 : 0));
            bld_recv_reduce(x->b, r0 + k, peer, x->acc, 0, x->n, x->op, x->dt);
        }
    }
    return r0 + k;
}

/*
 * Small vectors across agents: the reps exchange their partial results
 * and each folds all of them, group 0's first, into the result; to_all:
 * every rep gets it, else only the root's. From round r; returns the
 * next round.
 */
static uint32_t fold_all(red_t *x, uint32_t r, int to_all)
{
    uint32_t G = x->t->ngroups, g = x->t->group[x->a->rank], h;
    uint32_t root = x->reps[x->t->group[x->a->root]];
    uint64_t n = x->n, res = x->tmp0 + (uint64_t)G * n;

    if (!to_all && x->a->rank != root) {
        bld_send(x->b, r, root, x->acc, 0, n);
        return r + 1;
    }
    for (h = 0; h < G && to_all; h++) {
        if (h != g) {
            bld_send(x->b, r, x->reps[h], x->acc, 0, n);
        }
    }
    for (h = 0; h < G; h++) {
        if (h != g) {
            bld_recv(x->b, r, x->reps[h], DPS_BUF_TMP,
                     x->tmp0 + (uint64_t)h * n, n);
        }
    }
    for (h = 0; h < G; h++) {
        unsigned sb = h == g ? x->acc : DPS_BUF_TMP;
        uint64_t so = h == g ? 0 : x->tmp0 + (uint64_t)h * n;

        if (h == 0) {
            bld_copy(x->b, r + 1, sb, so, DPS_BUF_TMP, res, n);
        } else {
            bld_reduce(x->b, r + 1 + h, sb, so, DPS_BUF_TMP, res, n, x->op,
                       x->dt);
        }
    }
    bld_copy(x->b, r + G + 1, DPS_BUF_TMP, res, x->acc, 0, n);
    return r + G + 2;
}

/* The byte regions of ring piece c: for reduce_scatter, the blocks of
 * group c's ranks (runs of consecutive ranks merged); else piece c of G. */
static void ring_piece(red_t *x, uint32_t c, int dir, uint32_t r,
                       uint32_t peer)
{
    const bld_args_t *a = x->a;
    uint64_t          o, l;

    if (a->coll == DPS_COLL_REDUCE_SCATTER ||
        a->coll == DPS_COLL_REDUCE_SCATTER_BLOCK) {
        uint32_t k, m = bld_gsize(x->t, c);
        uint64_t ro = 0;

        for (k = 0; k < m; k++) {
            uint32_t q = bld_member(x->t, c, k), e = q, i;

            while (k + 1 < m && bld_member(x->t, c, k + 1) == e + 1) {
                k++;
                e++;
            }
            for (ro = 0, i = 0; i < q; i++) {
                ro += a->rcount != NULL ? a->rcount[i] : a->bytes;
            }
            for (l = 0, i = q; i <= e; i++) {
                l += a->rcount != NULL ? a->rcount[i] : a->bytes;
            }
            if (dir == 0) {
                bld_send(x->b, r, peer, x->acc, ro, l);
            } else {
                bld_recv_reduce(x->b, r, peer, x->acc, ro, l, x->op, x->dt);
            }
        }
        return;
    }
    piece(x->n, x->es, x->t->ngroups, c, &o, &l);
    if (dir == 0) {
        bld_send(x->b, r, peer, x->acc, o, l);
    } else if (dir == 1) {
        bld_recv_reduce(x->b, r, peer, x->acc, o, l, x->op, x->dt);
    } else {
        bld_recv(x->b, r, peer, x->acc, o, l);
    }
}

/*
 * Ring reduce-scatter among the reps from round r; rep g ends holding
 * piece (g + shift) mod G reduced over every group. Returns the next
 * round.
 */
static uint32_t ring(red_t *x, uint32_t r, uint32_t shift)
{
    uint32_t G = x->t->ngroups, g = x->t->group[x->a->rank], s;

    for (s = 0; s + 1 < G; s++) {
        ring_piece(x, (g + shift + 2 * G - s - 1) % G, 0, r + s,
                   x->reps[(g + 1) % G]);
        ring_piece(x, (g + shift + 2 * G - s - 2) % G, 1, r + s,
                   x->reps[(g + G - 1) % G]);
    }
    return r + G - 1;
}

/* After ring(x, r, 1): every rep (to_all) or the root gets every piece. */
static uint32_t ring_gather(red_t *x, uint32_t r, int to_all)
{
    uint32_t G = x->t->ngroups, g = x->t->group[x->a->rank], h;
    uint32_t gr = x->t->group[x->a->root];

    if (!to_all && g != gr) {
        ring_piece(x, (g + 1) % G, 0, r, x->reps[gr]);
        return r + 1;
    }
    for (h = 0; h < G && to_all; h++) {
        if (h != g) {
            ring_piece(x, (g + 1) % G, 0, r, x->reps[h]);
        }
    }
    for (h = 0; h < G; h++) {
        if (h != g) {
            ring_piece(x, (h + 1) % G, 2, r, x->reps[h]);
        }
    }
    return r + 1;
}

/* reduce, allreduce, reduce_scatter(_block). */
static int tree_reduce(red_t *x)
{
    const bld_args_t *a = x->a;
    const bld_topo_t *t = x->t;
    uint32_t          me = a->rank, g = t->group[me], G = t->ngroups, k, r;
    int               all = a->coll == DPS_COLL_ALLREDUCE;
    int               rs = a->coll == DPS_COLL_REDUCE_SCATTER ||
             a->coll == DPS_COLL_REDUCE_SCATTER_BLOCK;
    uint64_t myoff = 0, mylen = 0;

    for (k = 0; k < G; k++) {
        x->reps[k] = bld_member(t, k, 0);
    }
    if (a->coll == DPS_COLL_REDUCE) {
        x->reps[t->group[a->root]] = a->root;
    }
    /* The accumulator: the result buffer where it holds the whole vector,
     * else scratch. */
    x->acc = (all || (a->coll == DPS_COLL_REDUCE && me == a->root))
                 ? DPS_BUF_RECV
                 : DPS_BUF_TMP;
    x->tmp0 = x->acc == DPS_BUF_TMP ? x->n : 0;
    bld_copy(x->b, 0, DPS_BUF_SEND, 0, x->acc, 0, x->n);
    r = group_reduce(x, 1);
    if (rs) {
        for (k = 0; k <= me; k++) {
            mylen = a->rcount != NULL ? a->rcount[k] : a->bytes;
            myoff += k < me ? mylen : 0;
        }
    }
    if (me != x->reps[g]) {
        if (all) {
            bld_recv(x->b, r, x->reps[g], DPS_BUF_RECV, 0, x->n);
        } else if (rs) {
            bld_recv(x->b, r, x->reps[g], DPS_BUF_RECV, 0, mylen);
        }
        return 0;
    }
    if (G > 1 && rs) {
        r = ring(x, r, 0);
    } else if (G > 1 && (x->n <= BLD_SMALL_REDUCE || x->n / x->es < G)) {
        r = fold_all(x, r, all);
    } else if (G > 1) {
        r = ring_gather(x, ring(x, r, 1), all);
    }
    if (a->coll == DPS_COLL_REDUCE) {
        return 0;
    }
    for (k = 0; k < bld_gsize(t, g); k++) {
        uint32_t q = bld_member(t, g, k);
        uint64_t qo = 0, ql = 0, i;

        if (q == me) {
            if (rs) {
                bld_copy(x->b, r, DPS_BUF_TMP, myoff, DPS_BUF_RECV, 0, mylen);
            }
            continue;
        }
        if (!rs) {
            bld_send(x->b, r, q, DPS_BUF_RECV, 0, x->n);
            continue;
        }
        for (i = 0; i <= q; i++) {
            ql = a->rcount != NULL ? a->rcount[i] : a->bytes;
            qo += i < q ? ql : 0;
        }
        bld_send(x->b, r, q, DPS_BUF_TMP, qo, ql);
    }
    return 0;
}

/* scan, exscan: recursive doubling. TMP holds the partial result (the
 * reduction of the ranks this one has heard of, itself included) and
 * one incoming partial per round. */
static int scan(red_t *x)
{
    const bld_args_t *a = x->a;
    uint32_t          me = a->rank, k, r = 1;
    int               empty = a->coll == DPS_COLL_EXSCAN;
    uint64_t          n = x->n;

    bld_copy(x->b, 0, DPS_BUF_SEND, 0, DPS_BUF_TMP, 0, n);
    if (!empty) {
        bld_copy(x->b, 0, DPS_BUF_SEND, 0, DPS_BUF_RECV, 0, n);
    }
    for (k = 0; (1ull << k) < a->size; k++, r += 2) {
        uint32_t peer = me ^ (1u << k);
        uint64_t in = (uint64_t)(k + 1) * n;

        if (peer >= a->size) {
            continue;
        }
        bld_send(x->b, r, peer, DPS_BUF_TMP, 0, n);
        bld_recv(x->b, r, peer, DPS_BUF_TMP, in, n);
        if (peer < me && empty) {
            bld_copy(x->b, r + 1, DPS_BUF_TMP, in, DPS_BUF_RECV, 0, n);
            empty = 0;
        } else if (peer < me) {
            bld_reduce(x->b, r + 1, DPS_BUF_TMP, in, DPS_BUF_RECV, 0, n, x->op,
                       x->dt);
        }
        bld_reduce(x->b, r + 1, DPS_BUF_TMP, in, DPS_BUF_TMP, 0, n, x->op,
                   x->dt);
    }
    return 0;
}

/* Are the ranks of every group consecutive, with more than one group? */
static int in_runs(const bld_topo_t *t)
{
    uint32_t g, k;

    for (g = 0; g < t->ngroups; g++) {
        for (k = 1; k < bld_gsize(t, g); k++) {
            if (bld_member(t, g, k) != bld_member(t, g, 0) + k) {
                return 0;
            }
        }
    }
    return t->ngroups > 1;
}

/*
 * scan, exscan in two levels (in_runs). The first rank of group g holds
 * in TMP: slot j (j < m) member j's vector, then the prefix of members
 * 0..j; at P the partial over the groups it has heard of; one incoming
 * partial per round after it; at E the reduction of every earlier group.
 */
static int scan_nodes(red_t *x)
{
    const bld_args_t *a = x->a;
    const bld_topo_t *t = x->t;
    uint32_t me = a->rank, g = t->group[me], G = t->ngroups, r = 1, j, k;
    uint32_t m = bld_gsize(t, g), lead = bld_member(t, g, 0);
    int      ex = a->coll == DPS_COLL_EXSCAN, empty = 1;
    uint64_t n = x->n, P = (uint64_t)m * n;
    uint64_t E = P + (uint64_t)(bld_log2(G) + 1) * n;

    if (me != lead) {
        bld_send(x->b, 0, lead, DPS_BUF_SEND, 0, n);
        bld_recv(x->b, 1, lead, DPS_BUF_RECV, 0, n);
        return 0;
    }
    bld_copy(x->b, 0, DPS_BUF_SEND, 0, DPS_BUF_TMP, 0, n);
    for (j = 1; j < m; j++) {
        bld_recv(x->b, 0, lead + j, DPS_BUF_TMP, (uint64_t)j * n, n);
    }
    for (j = 1; j < m; j++, r++) {
        bld_reduce(x->b, r, DPS_BUF_TMP, (uint64_t)(j - 1) * n, DPS_BUF_TMP,
                   (uint64_t)j * n, n, x->op, x->dt);
    }
    bld_copy(x->b, r++, DPS_BUF_TMP, (uint64_t)(m - 1) * n, DPS_BUF_TMP, P, n);
    for (k = 0; (1u << k) < G; k++, r += 2) {
        uint32_t h = g ^ (1u << k), peer;
        uint64_t in = P + (uint64_t)(k + 1) * n;

        if (h >= G) {
            continue;
        }
        peer = bld_member(t, h, 0);
        bld_send(x->b, r, peer, DPS_BUF_TMP, P, n);
        bld_recv(x->b, r, peer, DPS_BUF_TMP, in, n);
        if (h < g && empty) {
            bld_copy(x->b, r + 1, DPS_BUF_TMP, in, DPS_BUF_TMP, E, n);
            empty = 0;
        } else if (h < g) {
            bld_reduce(x->b, r + 1, DPS_BUF_TMP, in, DPS_BUF_TMP, E, n, x->op,
                       x->dt);
        }
        bld_reduce(x->b, r + 1, DPS_BUF_TMP, in, DPS_BUF_TMP, P, n, x->op,
                   x->dt);
    }
    /* Member j's result: E and the prefix of members 0..j (scan) or
     * 0..j-1 (exscan; the first rank gets E alone, group 0's nothing). */
    for (j = 0; !empty && j + (ex ? 1 : 0) < m; j++) {
        bld_reduce(x->b, r, DPS_BUF_TMP, E, DPS_BUF_TMP, (uint64_t)j * n, n,
                   x->op, x->dt);
    }
    if (!ex) {
        bld_copy(x->b, r + 1, DPS_BUF_TMP, 0, DPS_BUF_RECV, 0, n);
    } else if (!empty) {
        bld_copy(x->b, r + 1, DPS_BUF_TMP, E, DPS_BUF_RECV, 0, n);
    }
    for (j = 1; j < m; j++) {
        bld_send(x->b, r + 1, lead + j, DPS_BUF_TMP,
                 (uint64_t)(ex ? j - 1 : j) * n, n);
    }
    return 0;
}

int bld_reduction(const bld_args_t *a, const bld_topo_t *t, bld_t *b)
{
    red_t    x;
    uint32_t i;
    int      rc;

    x.a = a;
    x.t = t;
    x.b = b;
    x.op = a->op;
    x.dt = a->dtype;
    x.es = dps_dtype_size(a->dtype);
    x.n = a->bytes;
    if (a->coll == DPS_COLL_REDUCE_SCATTER_BLOCK) {
        x.n = a->bytes * a->size;
    } else if (a->coll == DPS_COLL_REDUCE_SCATTER) {
        for (x.n = 0, i = 0; i < a->size; i++) {
            x.n += a->rcount[i];
        }
    }
    if (x.es == 0 || !dps_op_valid(a->op, a->dtype) || x.n % x.es != 0 ||
        (a->coll == DPS_COLL_REDUCE_SCATTER && a->rcount == NULL)) {
        return DPS_ERR_INVALID;
    }
    if (a->coll == DPS_COLL_SCAN || a->coll == DPS_COLL_EXSCAN) {
        return in_runs(t) ? scan_nodes(&x) : scan(&x);
    }
    x.reps = malloc(sizeof(uint32_t) * t->ngroups);
    if (x.reps == NULL) {
        return DPS_ERR_NOMEM;
    }
    rc = tree_reduce(&x);
    free(x.reps);
    return rc;
}
