/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every nonblocking and persistent collective (the neighbourhood ones on
 * a periodic ring included) with blocks and vectors under the agents'
 * 256 KiB staging chunk, just over it and over two chunks, each run
 * REPS times with new contents, all the calls of one size outstanding
 * at once. Every byte of every receive buffer (gaps between blocks,
 * buffers that are not significant, guard zones; not rank 0's of
 * exscan, undefined) is checked against contents computed here, and
 * send buffers must be unchanged.
 * Computed, not taken from a blocking call: stock MPI gets a ring of two
 * wrong (t_neigh.c), and over TCP the blocking calls would take longer
 * than what is tested; the run under stock MPI (check.sh) shows that
 * the expected contents are MPI's.
 *
 * Written for issue 27, for the UCX get/put path that serves ranks of
 * other nodes (check.sh runs it with DPUSHIM_TRANSPORT=ucx and
 * UCX_TLS=tcp,self): there a put is complete at its source long before
 * its bytes are visible at the target, while later steps of a schedule
 * read what earlier ones wrote (a ring reduction passes on the piece it
 * has just reduced, a tree forwards what it received). A block read
 * before it has landed is stale: wrong bytes here. Whether that happens
 * is a matter of timing, hence the repetitions (REPS).
 */
#include "tcommon.h"

#define KI   1024
#define CH   (256 * KI) /* DPUSHIM_CHUNK_BYTES's default */
#define MAXP 64

/*
 * Runs of each size, with new contents each (T_REPS overrides). Before
 * the fix of issue 27 every job with more than one agent failed, 5 to
 * 79 checks per job over two runs of each size (20 jobs of 2 to 4
 * ranks, both MPIs); the fewest, 5, at 2 ranks on MPICH. At that rate
 * one run would let about one job in 12 pass (e^-2.5), two about one
 * in 150 (e^-5); each more adds 2 to 10 s over TCP.
 */
#define REPS 2

enum {
    K_BARRIER,
    K_BCAST,
    K_GATHER,
    K_GATHERV,
    K_SCATTER,
    K_SCATTERV,
    K_ALLGATHER,
    K_ALLGATHERV,
    K_ALLTOALL,
    K_ALLTOALLV,
    K_ALLTOALLW,
    K_REDUCE,
    K_ALLREDUCE,
    K_ALLREDUCE_IP,
    K_RS,
    K_RSB,
    K_SCAN,
    K_EXSCAN,
    K_NAG,
    K_NAGV,
    K_NA2A,
    K_NA2AV,
    K_NA2AW,
    K_N
};

/* Statistics names, without the "i" or the "_init". */
static const char *kname[K_N] = {"barrier",
                                 "bcast",
                                 "gather",
                                 "gatherv",
                                 "scatter",
                                 "scatterv",
                                 "allgather",
                                 "allgatherv",
                                 "alltoall",
                                 "alltoallv",
                                 "alltoallw",
                                 "reduce",
                                 "allreduce",
                                 "allreduce",
                                 "reduce_scatter",
                                 "reduce_scatter_block",
                                 "scan",
                                 "exscan",
                                 "neighbor_allgather",
                                 "neighbor_allgatherv",
                                 "neighbor_alltoall",
                                 "neighbor_alltoallv",
                                 "neighbor_alltoallw"};

/* Bytes of a block (movement) or of a vector per rank (reductions):
 * under a chunk but over the 64 KiB from which reductions take the ring
 * between agents; a chunk and 8 bytes; two chunks and 24 bytes. The
 * last only for the calls in which a rank sends one such block or
 * vector (one_block): the others move p of them per rank, which at 4
 * ranks over TCP would make the job longer than it is worth. */
static const int sizes[] = {100008, CH + 8, 2 * CH + 24};
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))

/* Reduction types and operations, taken in turn (the three
 * among them). Inputs are small integers: sums are exact in any order. */
typedef struct red {
    const char  *name;
    MPI_Datatype type;
    MPI_Op       op;
    int          es;
} red_t;
#define NREDS 4
static red_t reds[NREDS];

typedef struct op {
    char         name[112];
    int          kind, pers;
    MPI_Comm     comm;
    int          me, p, root, n; /* n: elements of a block */
    const red_t *red;            /* reductions */
    MPI_Datatype type;           /* element type */
    size_t       es;             /* its size */
    MPI_Request  req;
    char        *sb, *rb, *xs, *xr; /* send, receive, their expected */
    size_t       slen, rlen;        /* bytes */
    int          ns;                /* send blocks */
    int          blocked;           /* each its own pattern (else one) */
    int          sc[MAXP], sd[MAXP], rc[MAXP], rd[MAXP];
    int          sdb[MAXP], rdb[MAXP]; /* alltoallw: in bytes */
    MPI_Aint     sda[2], rda[2];       /* neighbour alltoallw: bytes */
    MPI_Datatype ty[MAXP];             /* the w calls: MPI_INT */
    int          nb[2];                /* ring: left, right */
} op_t;

static int is_red(int k)
{
    return k >= K_REDUCE && k <= K_EXSCAN;
}

static int is_neigh(int k)
{
    return k >= K_NAG;
}

/* A rank sends or receives one block or vector: bcast, the reductions
 * but reduce_scatter_block. */
static int one_block(int k)
{
    return k == K_BCAST || (is_red(k) && k != K_RSB);
}

/* Counts that differ per rank (and per pair), never zero. */
static int vcnt(int n, int i)
{
    return n - 5 * (i % 3);
}

static int pcnt(int n, int a, int b)
{
    return n - 3 * ((a + 2 * b) % 4);
}

/* Displacements leaving a gap of 3 elements before each block; returns
 * the elements spanned. */
static int gapped(const int *cnt, int *dsp, int m)
{
    int at = 0;

    for (int i = 0; i < m; i++) {
        dsp[i] = at + 3;
        at = dsp[i] + cnt[i];
    }
    return at;
}

/* Element i of rank q's reduction input. */
static int64_t red_in(uint32_t seed, int q, size_t i)
{
    uint64_t h = t_mix64(((uint64_t)seed << 40) ^ ((uint64_t)q << 32) ^ i);

    return (int64_t)(h % 201) - 100;
}

static void red_put(const red_t *r, char *at, int64_t v)
{
    if (r->type == MPI_DOUBLE) {
        double d = (double)v;

        memcpy(at, &d, 8);
    } else if (r->type == MPI_UNSIGNED_CHAR) {
        *at = (char)(unsigned char)v;
    } else {
        int w = (int)v;

        memcpy(at, &w, 4);
    }
}

/* Rank q's input, elements from i0 on, n of them, into buf. */
static void red_fill(const red_t *r, char *buf, size_t i0, size_t n,
                     uint32_t seed, int q)
{
    for (size_t i = 0; i < n; i++) {
        red_put(r, buf + i * (size_t)r->es, red_in(seed, q, i0 + i));
    }
}

/* Elements i0 .. i0 + n - 1 reduced over ranks q0 .. q1 - 1, into buf.
 * Small integers: every operation is exact, in any order. */
static void red_expect(const red_t *r, char *buf, size_t i0, size_t n,
                       uint32_t seed, int q0, int q1)
{
    for (size_t i = 0; i < n; i++) {
        int64_t v = red_in(seed, q0, i0 + i);

        for (int q = q0 + 1; q < q1; q++) {
            int64_t w = red_in(seed, q, i0 + i);

            if (r->op == MPI_SUM) {
                v += w;
            } else if (r->op == MPI_MIN) {
                v = w < v ? w : v;
            } else { /* MPI_BAND on the bytes */
                v = (int64_t)((uint8_t)v & (uint8_t)w);
            }
        }
        red_put(r, buf + i * (size_t)r->es, v);
    }
}

/* Stock MPI's own call known to be wrong here (t_neigh.c, stock_wrong):
 * on a periodic ring of one or two processes, Open MPI 4.1's neighbour
 * alltoall(v)(w) and MPICH 4.0's alltoallv and alltoallw put the block
 * sent towards one side into the other side's block. */
static int stock_wrong(int k, int p)
{
    return !t_shim_loaded() && p <= 2 && k >= K_NA2A;
}

/* Stock MPICH 4.0's persistent collectives are unusable (t_persist.c). */
static int stock_no_pers(void)
{
#if !defined(HAVE_PERS)
    return 1;
#elif defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40100000
    return !t_shim_loaded();
#else
    return 0;
#endif
}

/* Set up call k with blocks of `bytes` (not posted, not initialised).
 * Send blocks: ns of them at sd with counts sc; receive blocks at rd
 * with counts rc. */
static void op_make(op_t *o, int k, int pers, MPI_Comm comm, int bytes,
                    const red_t *red, int root)
{
    int i, s = 0, r = 0, n, p;

    memset(o, 0, sizeof(*o));
    o->kind = k;
    o->pers = pers;
    o->comm = comm;
    o->req = MPI_REQUEST_NULL;
    o->root = root;
    o->type = MPI_INT;
    o->es = 4;
    MPI_Comm_rank(comm, &o->me);
    MPI_Comm_size(comm, &o->p);
    p = o->p;
    if (is_red(k)) {
        o->red = red;
        o->type = red->type;
        o->es = (size_t)red->es;
    }
    n = o->n = bytes / (int)o->es;
    snprintf(o->name, sizeof(o->name), "%s%s%s, %d x %s%s, root %d",
             pers ? "" : "i", kname[k], pers ? "_init" : "", n,
             red != NULL ? red->name : "int",
             k == K_ALLREDUCE_IP ? " in place" : "", root);
    if (is_neigh(k)) {
        MPI_Cart_shift(comm, 0, 1, &o->nb[0], &o->nb[1]);
        p = 2; /* blocks: one per neighbour */
    }
    /* Uniform blocks of n unless a case below says otherwise. */
    for (i = 0; i < p; i++) {
        o->sc[i] = o->rc[i] = n;
        o->sd[i] = o->rd[i] = i * n;
    }
    o->ns = 1;
    switch (k) {
    case K_BARRIER: o->ns = 0; break;
    case K_BCAST:
        o->ns = 0;
        r = n;
        break;
    case K_REDUCE:
    case K_ALLREDUCE:
    case K_SCAN:
    case K_EXSCAN: s = r = n; break;
    case K_ALLREDUCE_IP:
        o->ns = 0;
        r = n;
        break;
    case K_GATHER:
    case K_ALLGATHER:
    case K_NAG:
        s = n;
        r = n * p;
        break;
    case K_SCATTER:
    case K_ALLTOALL:
    case K_NA2A:
        o->ns = p;
        o->blocked = 1;
        s = n * p;
        r = k == K_SCATTER ? n : n * p;
        break;
    case K_RSB:
        s = n * p;
        r = n;
        break;
    case K_GATHERV:
    case K_ALLGATHERV:
    case K_NAGV:
        o->sc[0] = s = vcnt(n, o->me);
        o->sd[0] = 0;
        for (i = 0; i < p; i++) {
            o->rc[i] = vcnt(n, is_neigh(k) ? o->nb[i] : i);
        }
        r = gapped(o->rc, o->rd, p);
        break;
    case K_SCATTERV:
        o->ns = p;
        o->blocked = 1;
        for (i = 0; i < p; i++) {
            o->sc[i] = vcnt(n, i);
        }
        s = gapped(o->sc, o->sd, p);
        r = vcnt(n, o->me);
        break;
    case K_RS:
        for (i = 0; i < p; i++) {
            o->rc[i] = vcnt(n, i);
            s += o->rc[i];
        }
        r = o->rc[o->me];
        break;
    default: /* the v and w alltoalls */
        o->ns = p;
        o->blocked = 1;
        for (i = 0; i < p; i++) {
            o->sc[i] = pcnt(n, o->me, i);
            /* On the ring, receive block j meets the source's j ^ 1. */
            o->rc[i] =
                is_neigh(k) ? pcnt(n, o->nb[i], i ^ 1) : pcnt(n, i, o->me);
        }
        s = gapped(o->sc, o->sd, p);
        r = gapped(o->rc, o->rd, p);
        break;
    }
    for (i = 0; i < MAXP; i++) {
        o->sdb[i] = o->sd[i] * 4;
        o->rdb[i] = o->rd[i] * 4;
        o->ty[i] = MPI_INT;
    }
    for (i = 0; i < 2; i++) {
        o->sda[i] = (MPI_Aint)o->sd[i] * 4;
        o->rda[i] = (MPI_Aint)o->rd[i] * 4;
    }
    o->slen = (size_t)s * o->es;
    o->rlen = (size_t)r * o->es;
    o->sb = t_galloc(o->slen);
    o->rb = t_galloc(o->rlen);
    /* In place, xs keeps the input that rb held. */
    o->xs = t_xmalloc(k == K_ALLREDUCE_IP ? o->rlen : o->slen);
    o->xr = t_xmalloc(o->rlen);
}

static void op_free(op_t *o)
{
    if (o->pers && o->req != MPI_REQUEST_NULL) {
        T_MPI(MPI_Request_free(&o->req));
    }
    t_gfree(o->sb);
    t_gfree(o->rb);
    free(o->xs);
    free(o->xr);
}

/* The call itself: nonblocking (req) or its persistent init. */
static int op_call(op_t *o, MPI_Request *q)
{
    MPI_Comm     c = o->comm;
    MPI_Datatype t = o->type;
    MPI_Op       op = o->red != NULL ? o->red->op : MPI_OP_NULL;
    void        *s = o->sb, *r = o->rb;
    int          n = o->n, rt = o->root;

    if (o->kind == K_ALLREDUCE_IP) {
        s = MPI_IN_PLACE;
    }
#ifdef HAVE_PERS
    if (o->pers) {
        switch (o->kind) {
        case K_BARRIER: return PINIT(Barrier)(c, MPI_INFO_NULL, q);
        case K_BCAST: return PINIT(Bcast)(r, n, t, rt, c, MPI_INFO_NULL, q);
        case K_GATHER:
            return PINIT(Gather)(s, n, t, r, n, t, rt, c, MPI_INFO_NULL, q);
        case K_GATHERV:
            return PINIT(Gatherv)(s, vcnt(n, o->me), t, r, o->rc, o->rd, t, rt,
                                  c, MPI_INFO_NULL, q);
        case K_SCATTER:
            return PINIT(Scatter)(s, n, t, r, n, t, rt, c, MPI_INFO_NULL, q);
        case K_SCATTERV:
            return PINIT(Scatterv)(s, o->sc, o->sd, t, r, vcnt(n, o->me), t,
                                   rt, c, MPI_INFO_NULL, q);
        case K_ALLGATHER:
            return PINIT(Allgather)(s, n, t, r, n, t, c, MPI_INFO_NULL, q);
        case K_ALLGATHERV:
            return PINIT(Allgatherv)(s, vcnt(n, o->me), t, r, o->rc, o->rd, t,
                                     c, MPI_INFO_NULL, q);
        case K_ALLTOALL:
            return PINIT(Alltoall)(s, n, t, r, n, t, c, MPI_INFO_NULL, q);
        case K_ALLTOALLV:
            return PINIT(Alltoallv)(s, o->sc, o->sd, t, r, o->rc, o->rd, t, c,
                                    MPI_INFO_NULL, q);
        case K_ALLTOALLW:
            return PINIT(Alltoallw)(s, o->sc, o->sdb, o->ty, r, o->rc, o->rdb,
                                    o->ty, c, MPI_INFO_NULL, q);
        case K_REDUCE:
            return PINIT(Reduce)(s, r, n, t, op, rt, c, MPI_INFO_NULL, q);
        case K_ALLREDUCE:
        case K_ALLREDUCE_IP:
            return PINIT(Allreduce)(s, r, n, t, op, c, MPI_INFO_NULL, q);
        case K_RS:
            return PINIT(Reduce_scatter)(s, r, o->rc, t, op, c, MPI_INFO_NULL,
                                         q);
        case K_RSB:
            return PINIT(Reduce_scatter_block)(s, r, n, t, op, c,
                                               MPI_INFO_NULL, q);
        case K_SCAN: return PINIT(Scan)(s, r, n, t, op, c, MPI_INFO_NULL, q);
        case K_EXSCAN:
            return PINIT(Exscan)(s, r, n, t, op, c, MPI_INFO_NULL, q);
        case K_NAG:
            return PINIT(Neighbor_allgather)(s, n, t, r, n, t, c,
                                             MPI_INFO_NULL, q);
        case K_NAGV:
            return PINIT(Neighbor_allgatherv)(s, vcnt(n, o->me), t, r, o->rc,
                                              o->rd, t, c, MPI_INFO_NULL, q);
        case K_NA2A:
            return PINIT(Neighbor_alltoall)(s, n, t, r, n, t, c, MPI_INFO_NULL,
                                            q);
        case K_NA2AV:
            return PINIT(Neighbor_alltoallv)(s, o->sc, o->sd, t, r, o->rc,
                                             o->rd, t, c, MPI_INFO_NULL, q);
        default:
            return PINIT(Neighbor_alltoallw)(s, o->sc, o->sda, o->ty, r, o->rc,
                                             o->rda, o->ty, c, MPI_INFO_NULL,
                                             q);
        }
    }
#endif
    switch (o->kind) {
    case K_BARRIER: return MPI_Ibarrier(c, q);
    case K_BCAST: return t_ibcast(r, n, t, rt, c, q, 1);
    case K_GATHER: return MPI_Igather(s, n, t, r, n, t, rt, c, q);
    case K_GATHERV:
        return MPI_Igatherv(s, vcnt(n, o->me), t, r, o->rc, o->rd, t, rt, c,
                            q);
    case K_SCATTER: return MPI_Iscatter(s, n, t, r, n, t, rt, c, q);
    case K_SCATTERV:
        return MPI_Iscatterv(s, o->sc, o->sd, t, r, vcnt(n, o->me), t, rt, c,
                             q);
    case K_ALLGATHER: return MPI_Iallgather(s, n, t, r, n, t, c, q);
    case K_ALLGATHERV:
        return MPI_Iallgatherv(s, vcnt(n, o->me), t, r, o->rc, o->rd, t, c, q);
    case K_ALLTOALL: return t_ialltoall(s, n, t, r, n, t, c, q, 1);
    case K_ALLTOALLV:
        return MPI_Ialltoallv(s, o->sc, o->sd, t, r, o->rc, o->rd, t, c, q);
    case K_ALLTOALLW:
        return MPI_Ialltoallw(s, o->sc, o->sdb, o->ty, r, o->rc, o->rdb, o->ty,
                              c, q);
    case K_REDUCE: return MPI_Ireduce(s, r, n, t, op, rt, c, q);
    case K_ALLREDUCE:
    case K_ALLREDUCE_IP: return MPI_Iallreduce(s, r, n, t, op, c, q);
    case K_RS: return MPI_Ireduce_scatter(s, r, o->rc, t, op, c, q);
    case K_RSB: return MPI_Ireduce_scatter_block(s, r, n, t, op, c, q);
    case K_SCAN: return MPI_Iscan(s, r, n, t, op, c, q);
    case K_EXSCAN: return MPI_Iexscan(s, r, n, t, op, c, q);
    case K_NAG: return MPI_Ineighbor_allgather(s, n, t, r, n, t, c, q);
    case K_NAGV:
        return MPI_Ineighbor_allgatherv(s, vcnt(n, o->me), t, r, o->rc, o->rd,
                                        t, c, q);
    case K_NA2A: return MPI_Ineighbor_alltoall(s, n, t, r, n, t, c, q);
    case K_NA2AV:
        return MPI_Ineighbor_alltoallv(s, o->sc, o->sd, t, r, o->rc, o->rd, t,
                                       c, q);
    default:
        return MPI_Ineighbor_alltoallw(s, o->sc, o->sda, o->ty, r, o->rc,
                                       o->rda, o->ty, c, q);
    }
}

/* Rank q's send block j (a blocked call's), or its whole send data
 * (j = -1): count ints of a pattern of their own. */
static void pat(char *at, int count, uint32_t seed, int q, int j)
{
    t_pat_fill(at, (size_t)count * 4, seed, q, j + 1);
}

/* New contents, and the expected ones in xs and xr: MPI's rules (for
 * the ring, MPI 4.1's 8.6: receive block j holds what neighbour j sent,
 * for an alltoall its block j ^ 1, the one sent towards this rank). */
static void op_fill(op_t *o)
{
    uint32_t     seed = t_seed();
    int          me = o->me, p = o->p, n = o->n, rt = o->root, i, off;
    const red_t *r = o->red;
    char        *x = o->xr;

    memset(o->sb, T_POISON, o->slen);
    memset(o->rb, T_POISON, o->rlen);
    if (o->kind == K_ALLREDUCE_IP) {
        red_fill(r, o->rb, 0, (size_t)n, seed, me);
        memcpy(o->xs, o->rb, o->rlen);
    } else if (r != NULL) {
        red_fill(r, o->sb, 0, o->slen / o->es, seed, me);
    } else {
        for (i = 0; i < o->ns; i++) {
            pat(o->sb + (size_t)o->sd[i] * 4, o->sc[i], seed, me,
                o->blocked ? i : -1);
        }
    }
    if (o->kind == K_BCAST && me == rt) {
        pat(o->rb, n, seed, rt, -1);
    }
    if (o->kind != K_ALLREDUCE_IP) {
        memcpy(o->xs, o->sb, o->slen);
    }
    memset(x, T_POISON, o->rlen);
    switch (o->kind) {
    case K_BARRIER: break;
    case K_BCAST: pat(x, n, seed, rt, -1); break;
    case K_GATHER:
    case K_GATHERV:
    case K_ALLGATHER:
    case K_ALLGATHERV:
        for (i = 0; i < p && (me == rt || o->kind >= K_ALLGATHER); i++) {
            pat(x + (size_t)o->rd[i] * 4, o->rc[i], seed, i, -1);
        }
        break;
    case K_SCATTER:
    case K_SCATTERV: pat(x, (int)(o->rlen / 4), seed, rt, me); break;
    case K_ALLTOALL:
    case K_ALLTOALLV:
    case K_ALLTOALLW:
        for (i = 0; i < p; i++) {
            pat(x + (size_t)o->rd[i] * 4, o->rc[i], seed, i, me);
        }
        break;
    case K_REDUCE:
        if (me == rt) {
            red_expect(r, x, 0, (size_t)n, seed, 0, p);
        }
        break;
    case K_ALLREDUCE:
    case K_ALLREDUCE_IP: red_expect(r, x, 0, (size_t)n, seed, 0, p); break;
    case K_RS:
        for (off = 0, i = 0; i < me; i++) {
            off += o->rc[i];
        }
        red_expect(r, x, (size_t)off, (size_t)o->rc[me], seed, 0, p);
        break;
    case K_RSB:
        red_expect(r, x, (size_t)me * (size_t)n, (size_t)n, seed, 0, p);
        break;
    case K_SCAN:
    case K_EXSCAN:
        if (me > 0 || o->kind == K_SCAN) {
            red_expect(r, x, 0, (size_t)n, seed, 0,
                       o->kind == K_SCAN ? me + 1 : me);
        }
        break;
    case K_NAG:
    case K_NAGV:
        for (i = 0; i < 2; i++) {
            pat(x + (size_t)o->rd[i] * 4, o->rc[i], seed, o->nb[i], -1);
        }
        break;
    default:
        for (i = 0; i < 2; i++) {
            pat(x + (size_t)o->rd[i] * 4, o->rc[i], seed, o->nb[i], i ^ 1);
        }
        break;
    }
}

/* Post (nonblocking) or start (persistent), and count it. */
static void op_post(op_t *o)
{
    char w[64];

    t_case("post %s", o->name);
    if (o->pers) {
        T_MPI(MPI_Start(&o->req));
        snprintf(w, sizeof(w), "%s_init", kname[o->kind]);
        t_count(w, 1);
        return;
    }
    T_MPI(op_call(o, &o->req));
    if (o->kind != K_BCAST && o->kind != K_ALLTOALL) {
        snprintf(w, sizeof(w), "i%s", kname[o->kind]);
        t_count(w, 1); /* t_ibcast and t_ialltoall count theirs */
    }
}

static void op_check(op_t *o, int rep)
{
    char w[200];

    t_case("check %s, run %d", o->name, rep);
    snprintf(w, sizeof(w), "%.112s, run %d: receive buffer", o->name, rep);
    /* Rank 0's exscan result is undefined. */
    if (o->kind != K_EXSCAN || o->me > 0) {
        t_match(w, o->rb, o->xr, o->rlen);
    }
    t_gcheck(w, o->rb, o->rlen);
    snprintf(w, sizeof(w), "%.112s, run %d: send buffer", o->name, rep);
    if (o->kind != K_ALLREDUCE_IP) {
        t_cmp(w, o->sb, o->xs, o->slen, "its contents before the call");
    }
    t_gcheck(w, o->sb, o->slen);
}

/* Every call with blocks of `bytes`, reps times, all outstanding at
 * once; the persistent ones made once and started each time. */
static void one_size(MPI_Comm ring, int bytes, int si, int reps)
{
    static op_t ops[2 * K_N];
    MPI_Request q[2 * K_N];
    int         nops = 0, k, pers, i, rep, p;

    MPI_Comm_size(MPI_COMM_WORLD, &p);
    for (pers = 0; pers < 2; pers++) {
        if (pers && stock_no_pers()) {
            continue;
        }
        for (k = 0; k < K_N; k++) {
            op_t *o = &ops[nops];

            if ((is_neigh(k) && stock_wrong(k, p)) ||
                (si == NSIZES - 1 && !one_block(k))) {
                continue;
            }
            op_make(o, k, pers, is_neigh(k) ? ring : MPI_COMM_WORLD, bytes,
                    &reds[(k + si + pers) % NREDS], (k + si) % p);
            if (pers) {
                t_case("%s", o->name);
                T_MPI(op_call(o, &o->req));
            }
            nops++;
        }
    }
    for (rep = 0; rep < reps; rep++) {
        for (i = 0; i < nops; i++) {
            op_fill(&ops[i]);
        }
        for (i = 0; i < nops; i++) {
            op_post(&ops[i]);
            q[i] = ops[i].req;
        }
        t_case("MPI_Waitall, %d bytes, run %d", bytes, rep);
        T_MPI(MPI_Waitall(nops, q, t_statuses_ignore));
        for (i = 0; i < nops; i++) {
            if (!ops[i].pers) {
                ops[i].req = q[i];
            }
            op_check(&ops[i], rep);
        }
    }
    for (i = 0; i < nops; i++) {
        op_free(&ops[i]);
    }
}

int main(int argc, char **argv)
{
    MPI_Comm    ring;
    int         dims[1], periods[1] = {1}, reps = REPS, si;
    const char *e = getenv("T_REPS");

    t_init(&argc, &argv, "t_landed");
    if (e != NULL && atoi(e) > 0) {
        reps = atoi(e);
    }
    reds[0] = (red_t){"double sum", MPI_DOUBLE, MPI_SUM, 8};
    reds[1] = (red_t){"unsigned char band", MPI_UNSIGNED_CHAR, MPI_BAND, 1};
    reds[2] = (red_t){"int min", MPI_INT, MPI_MIN, 4};
    reds[3] = (red_t){"int sum", MPI_INT, MPI_SUM, 4};
    dims[0] = t.size;
    T_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
    if (t.size > MAXP) {
        t_fail("at most %d ranks", MAXP);
    } else {
        for (si = 0; si < NSIZES; si++) {
            one_size(ring, sizes[si], si, reps);
        }
    }
    MPI_Comm_free(&ring);
    return t_finish();
}
