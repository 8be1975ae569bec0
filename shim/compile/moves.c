/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Builders of the collectives that move data without reducing it:
 * barrier, bcast, gather(v), scatter(v), allgather(v), alltoall(v)(w);
 * and of transfers the caller lists (neighbourhood collectives, pattern
 * groups: bld_pairs).
 *
 * Algorithms. A transfer within one agent is one copy by the receiver's
 * DMA engine, whatever the distance; one between agents crosses the
 * network. So data goes straight from its owner to every rank of the
 * same agent, and crosses between agents as few times as it can:
 *   barrier    gather to each agent's first rank, dissemination among
 *              those (ceil(log2 G) rounds for G agents), release;
 *   bcast      binomial tree among agents (the root stands for its own),
 *              then straight to the ranks of each agent; among three
 *              agents or more, where it finishes first
 *              (bld_chain_pieces: from 512 KiB at 8 agents), a pipelined
 *              chain of agents instead (each byte leaves and enters each
 *              node once; see bcast_chain);
 *   gather(v), scatter(v), alltoall(v)(w)
 *              straight between the two ranks (every byte moves once,
 *              and an agent issues all its reads at once);
 *   allgather(v)
 *              straight within an agent; across agents each block goes
 *              once to each other agent's first rank, which passes it on
 *              to its agent's ranks.
 */
#include "shim/compile/build.h"
#include "common/dps_proto.h"

static uint64_t cnt(const bld_args_t *a, const uint64_t *v, uint32_t r)
{
    return v != NULL ? v[r] : a->bytes;
}

static uint64_t off(const bld_args_t *a, const uint64_t *v, uint32_t r)
{
    return v != NULL ? v[r] : (uint64_t)r * a->bytes;
}

static uint32_t leader(const bld_topo_t *t, uint32_t g)
{
    return bld_member(t, g, 0);
}

static void barrier(const bld_args_t *a, const bld_topo_t *t, bld_t *b)
{
    uint32_t g = t->group[a->rank], ng = t->ngroups, m = bld_gsize(t, g);
    uint32_t round = 1, d, k;

    if (a->rank != leader(t, g)) {
        bld_send(b, 0, leader(t, g), DPS_BUF_SEND, 0, 0);
        bld_recv(b, 1, leader(t, g), DPS_BUF_RECV, 0, 0);
        return;
    }
    for (k = 1; k < m; k++) {
        bld_recv(b, 0, bld_member(t, g, k), DPS_BUF_RECV, 0, 0);
    }
    for (d = 1; d < ng; d <<= 1, round++) {
        bld_send(b, round, leader(t, (g + d) % ng), DPS_BUF_SEND, 0, 0);
        bld_recv(b, round, leader(t, (g + ng - d) % ng), DPS_BUF_RECV, 0, 0);
    }
    for (k = 1; k < m; k++) {
        bld_send(b, round, bld_member(t, g, k), DPS_BUF_SEND, 0, 0);
    }
}

/* The rank that stands for group h in a bcast from root. */
static uint32_t bcast_rep(const bld_args_t *a, const bld_topo_t *t, uint32_t h)
{
    return h == t->group[a->root] ? a->root : leader(t, h);
}

/* What a hop of len bytes costs, in ns (BLD_HOP_NS, BLD_NS_PER_KB). */
static uint64_t hop_ns(uint64_t len)
{
    return BLD_HOP_NS + len * BLD_NS_PER_KB / 1024;
}

uint32_t bld_chain_pieces(uint64_t n, uint32_t ngroups)
{
    uint64_t best = 0, tree, c;
    uint32_t k, pick = 0;

    if (ngroups < 3 || n < 2ull * BLD_CHAIN_SEG) {
        return 0;
    }
    tree = bld_log2(ngroups) * hop_ns(n);
    for (k = 1; k <= BLD_CHAIN_SEGS && n / k >= BLD_CHAIN_SEG; k++) {
        c = (uint64_t)(ngroups - 2 + k) * hop_ns((n + k - 1) / k);
        if (pick == 0 || c < best) {
            best = c;
            pick = k;
        }
    }
    return pick != 0 && best < tree ? pick : 0;
}

/* Piece i of np of a bcast's message cut for the chain (every piece
 * holds bytes: each is at least BLD_CHAIN_SEG long). */
static void chain_piece(uint64_t n, uint32_t np, uint32_t i, uint64_t *o,
                        uint64_t *l)
{
    uint64_t seg = (n + np - 1) / np;

    *o = (uint64_t)i * seg;
    *l = n - *o < seg ? n - *o : seg;
}

/*
 * Large messages: the agents' representatives form a chain in group
 * order from the root's, and the message goes down it in pieces. A rep
 * receives piece i in its round i and passes it to the next rep and to
 * its own ranks in round i + 1 (the root passes them all in round 0), so
 * the hops overlap: (G - 1 + pieces) piece-times instead of log2(G)
 * whole messages leaving the root's node, and every byte crosses each
 * node's link once each way.
 */
static void bcast_chain(const bld_args_t *a, const bld_topo_t *t, bld_t *b,
                        uint32_t np)
{
    uint32_t ng = t->ngroups, gr = t->group[a->root];
    uint32_t g = t->group[a->rank], v = (g + ng - gr) % ng;
    uint32_t rep = bcast_rep(a, t, g), i, k;
    unsigned buf = a->rank == a->root ? DPS_BUF_SEND : DPS_BUF_RECV;
    uint64_t o, l;

    if (a->rank != rep) {
        for (i = 0; i < np; i++) {
            chain_piece(a->bytes, np, i, &o, &l);
            bld_recv(b, 0, rep, DPS_BUF_RECV, o, l);
        }
        return;
    }
    for (i = 0; i <= np; i++) {
        uint32_t round = v == 0 ? 0 : i, p = v == 0 ? i : i - 1;

        if (v > 0 && i < np) {
            chain_piece(a->bytes, np, i, &o, &l);
            bld_recv(b, round, bcast_rep(a, t, (g + ng - 1) % ng),
                     DPS_BUF_RECV, o, l);
        }
        if ((v == 0 && i == np) || (v > 0 && i == 0)) {
            continue;
        }
        chain_piece(a->bytes, np, p, &o, &l);
        if (v + 1 < ng) {
            bld_send(b, round, bcast_rep(a, t, (g + 1) % ng), buf, o, l);
        }
        for (k = 0; k < bld_gsize(t, g); k++) {
            if (bld_member(t, g, k) != a->rank) {
                bld_send(b, round, bld_member(t, g, k), buf, o, l);
            }
        }
    }
}

static void bcast(const bld_args_t *a, const bld_topo_t *t, bld_t *b)
{
    uint32_t ng = t->ngroups, gr = t->group[a->root];
    uint32_t g = t->group[a->rank], v = (g + ng - gr) % ng;
    uint32_t rep = bcast_rep(a, t, g);
    unsigned buf = a->rank == a->root ? DPS_BUF_SEND : DPS_BUF_RECV;
    uint32_t round = 0, mask, k, lim, np = bld_chain_pieces(a->bytes, ng);

    if (np > 0) {
        bcast_chain(a, t, b, np);
        return;
    }
    if (a->rank != rep) {
        bld_recv(b, 0, rep, DPS_BUF_RECV, 0, a->bytes);
        return;
    }
    if (a->rank != a->root) {
        uint32_t pg;

        lim = v & (~v + 1); /* lowest set bit: our subtree's size */
        pg = (v - lim + gr) % ng;
        bld_recv(b, 0, bcast_rep(a, t, pg), DPS_BUF_RECV, 0, a->bytes);
        round = 1;
    } else {
        lim = 1u << bld_log2(ng);
    }
    for (mask = lim >> 1; mask > 0; mask >>= 1) {
        if (v + mask < ng) {
            uint32_t cg = (v + mask + gr) % ng;

            bld_send(b, round, leader(t, cg), buf, 0, a->bytes);
        }
    }
    for (k = 0; k < bld_gsize(t, g); k++) {
        if (bld_member(t, g, k) != a->rank) {
            bld_send(b, round, bld_member(t, g, k), buf, 0, a->bytes);
        }
    }
}

static void gather(const bld_args_t *a, bld_t *b)
{
    uint32_t p;

    if (a->rank != a->root) {
        bld_send(b, 0, a->root, DPS_BUF_SEND, 0, a->bytes);
        return;
    }
    for (p = 0; p < a->size; p++) {
        if (p != a->root) {
            bld_recv(b, 0, p, DPS_BUF_RECV, off(a, a->roff, p),
                     cnt(a, a->rcount, p));
        }
    }
    if (!a->in_place) {
        bld_copy(b, 0, DPS_BUF_SEND, 0, DPS_BUF_RECV, off(a, a->roff, a->root),
                 cnt(a, a->rcount, a->root));
    }
}

static void scatter(const bld_args_t *a, bld_t *b)
{
    uint32_t p;

    if (a->rank != a->root) {
        bld_recv(b, 0, a->root, DPS_BUF_RECV, 0, a->bytes);
        return;
    }
    for (p = 0; p < a->size; p++) {
        if (p != a->root) {
            bld_send(b, 0, p, DPS_BUF_SEND, off(a, a->soff, p),
                     cnt(a, a->scount, p));
        }
    }
    if (!a->in_place) {
        bld_copy(b, 0, DPS_BUF_SEND, off(a, a->soff, a->root), DPS_BUF_RECV, 0,
                 cnt(a, a->scount, a->root));
    }
}

/* Every block of group h's ranks: sent to (dir 0) or received from
 * (dir 1) peer, in round, in RECV. */
static void group_blocks(const bld_args_t *a, const bld_topo_t *t, bld_t *b,
                         uint32_t h, int dir, uint32_t round, uint32_t peer)
{
    uint32_t k;

    for (k = 0; k < bld_gsize(t, h); k++) {
        uint32_t q = bld_member(t, h, k);

        if (dir == 0) {
            bld_send(b, round, peer, DPS_BUF_RECV, off(a, a->roff, q),
                     cnt(a, a->rcount, q));
        } else {
            bld_recv(b, round, peer, DPS_BUF_RECV, off(a, a->roff, q),
                     cnt(a, a->rcount, q));
        }
    }
}

static void allgather(const bld_args_t *a, const bld_topo_t *t, bld_t *b)
{
    uint32_t me = a->rank, g = t->group[me], ng = t->ngroups;
    uint32_t lead = leader(t, g), m = bld_gsize(t, g), k, h;
    unsigned obuf = a->in_place ? DPS_BUF_RECV : DPS_BUF_SEND;
    uint64_t ooff = a->in_place ? off(a, a->roff, me) : 0;

    if (!a->in_place) {
        bld_copy(b, 0, DPS_BUF_SEND, 0, DPS_BUF_RECV, off(a, a->roff, me),
                 cnt(a, a->rcount, me));
    }
    for (k = 0; k < m; k++) {
        uint32_t q = bld_member(t, g, k);

        if (q != me) {
            bld_send(b, 0, q, obuf, ooff, cnt(a, a->rcount, me));
        }
    }
    for (k = 0; k < m; k++) {
        uint32_t q = bld_member(t, g, k);

        if (q != me) {
            bld_recv(b, 0, q, DPS_BUF_RECV, off(a, a->roff, q),
                     cnt(a, a->rcount, q));
        }
    }
    if (ng == 1) {
        return;
    }
    if (me != lead) {
        for (h = 0; h < ng; h++) {
            if (h != g) {
                group_blocks(a, t, b, h, 1, 1, lead);
            }
        }
        return;
    }
    for (h = 0; h < ng; h++) {
        if (h != g) {
            group_blocks(a, t, b, g, 0, 1, leader(t, h));
        }
    }
    for (h = 0; h < ng; h++) {
        if (h != g) {
            group_blocks(a, t, b, h, 1, 1, leader(t, h));
        }
    }
    for (k = 1; k < m; k++) {
        for (h = 0; h < ng; h++) {
            if (h != g) {
                group_blocks(a, t, b, h, 0, 2, bld_member(t, g, k));
            }
        }
    }
}

static void alltoall(const bld_args_t *a, bld_t *b)
{
    uint32_t me = a->rank, n = a->size, i;

    bld_copy(b, 0, DPS_BUF_SEND, off(a, a->soff, me), DPS_BUF_RECV,
             off(a, a->roff, me), cnt(a, a->rcount, me));
    for (i = 1; i < n; i++) {
        uint32_t p = (me + i) % n;

        bld_send(b, 0, p, DPS_BUF_SEND, off(a, a->soff, p),
                 cnt(a, a->scount, p));
    }
    for (i = 1; i < n; i++) {
        uint32_t p = (me + n - i) % n;

        bld_recv(b, 0, p, DPS_BUF_RECV, off(a, a->roff, p),
                 cnt(a, a->rcount, p));
    }
}

int bld_move(const bld_args_t *a, const bld_topo_t *t, bld_t *b)
{
    switch (a->coll) {
    case DPS_COLL_BARRIER: barrier(a, t, b); return DPS_OK;
    case DPS_COLL_BCAST: bcast(a, t, b); return DPS_OK;
    case DPS_COLL_GATHER:
    case DPS_COLL_GATHERV: gather(a, b); return DPS_OK;
    case DPS_COLL_SCATTER:
    case DPS_COLL_SCATTERV: scatter(a, b); return DPS_OK;
    case DPS_COLL_ALLGATHER:
    case DPS_COLL_ALLGATHERV: allgather(a, t, b); return DPS_OK;
    case DPS_COLL_ALLTOALL:
    case DPS_COLL_ALLTOALLV:
    case DPS_COLL_ALLTOALLW: alltoall(a, b); return DPS_OK;
    default: return DPS_ERR_INVALID;
    }
}

/*
 * Every transfer in round 0. A rank's transfers to itself become copies,
 * its k-th send to itself into its k-th receive from itself (lengths the
 * caller checked equal); the rest are SEND and RECV steps in list order.
 */
int bld_pairs(const bld_args_t *a, bld_t *b)
{
    const uint64_t *snd = a->pairs, *rcv = a->pairs + 3 * (size_t)a->nsend;
    uint32_t        i, j = 0;

    if (a->pairs == NULL && a->nsend + a->nrecv > 0) {
        return DPS_ERR_INVALID;
    }
    for (i = 0; i < a->nsend; i++) {
        const uint64_t *s = snd + 3 * (size_t)i;

        if (s[0] >= a->size) {
            return DPS_ERR_INVALID;
        }
        if (s[0] != a->rank) {
            bld_send(b, 0, (uint32_t)s[0], DPS_BUF_SEND, s[1], s[2]);
            continue;
        }
        while (j < a->nrecv && rcv[3 * (size_t)j] != a->rank) {
            j++;
        }
        if (j == a->nrecv || rcv[3 * (size_t)j + 2] != s[2]) {
            return DPS_ERR_INVALID; /* unpaired: the caller checks this */
        }
        bld_copy(b, 0, DPS_BUF_SEND, s[1], DPS_BUF_RECV,
                 rcv[3 * (size_t)j + 1], s[2]);
        j++;
    }
    for (i = 0; i < a->nrecv; i++) {
        const uint64_t *r = rcv + 3 * (size_t)i;

        if (r[0] >= a->size) {
            return DPS_ERR_INVALID;
        }
        if (r[0] != a->rank) {
            bld_recv(b, 0, (uint32_t)r[0], DPS_BUF_RECV, r[1], r[2]);
        }
    }
    return DPS_OK;
}
