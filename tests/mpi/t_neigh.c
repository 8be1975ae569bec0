/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Neighbourhood collectives: MPI_Ineighbor_allgather(v) and
 * MPI_Ineighbor_alltoall(v)(w), and their persistent forms (MPI-4's
 * MPI_Neighbor_*_init, Open MPI 4.1's MPIX_Neighbor_*_init), on
 * Cartesian topologies (1-D to 3-D, periodic or not, dimensions of 1 and
 * 2 processes, one leaving ranks out, MPI_Cart_sub), graphs (a ring, a
 * star) and distributed graphs (adjacent, weighted or not, with a
 * repeated edge, self edges and ranks of in- or out-degree 0; built by
 * MPI_Dist_graph_create; a duplicate).
 *
 * The expected contents of every receive buffer are computed here from
 * MPI 4.1's rules (section 8.6), not taken from stock MPI, which gets
 * some of them wrong (see stock_wrong: those cases are skipped when the
 * shim is not loaded). Each rank learns every rank's neighbour lists,
 * and its receive block j from source q must hold what q sent in
 *   - Cartesian: q's send block j^1 (what goes towards the negative side
 *     of a dimension lands in the receiver's positive-side block, and the
 *     other way round; also when both sides are one process, or itself);
 *   - graph and distributed graph: the send block of q's k-th edge to
 *     this rank, where block j is this rank's k-th receive from q
 *     (repeated edges pair in list order; self edges alike).
 * Every byte of every receive buffer is checked: the blocks, the gaps
 * between them and inside their datatypes, the blocks of MPI_PROC_NULL
 * neighbours (poisoned first: they must stay so) and guard zones; send
 * buffers must be unchanged.
 *
 * Per topology, each call with 1 element, with 6 through derived types
 * (vector, resized, a lower bound of 8; on either side, another layout
 * of the same signature on the other), with zero counts and on three
 * topologies with ~32K elements. Counts vary per edge (zeros among
 * them), the displacements of the v and w calls leave gaps and put the
 * receive blocks in reverse order, alltoallw mixes MPI_INT, MPI_DOUBLE
 * and derived types per neighbour at byte displacements, also from
 * MPI_BOTTOM with absolute addresses, once with every block in an
 * allocation of its own (terabytes apart).
 *
 * Persistent forms: each started up to NSTARTS times with new data,
 * completed by MPI_Wait, MPI_Test, MPI_Waitany or MPI_Testsome, its
 * derived datatypes freed after the init; two with the same arguments in
 * flight at once. Several calls (nonblocking and persistent, on four
 * communicators, and a persistent send and receive) outstanding at once,
 * started by MPI_Startall, completed by MPI_Waitall or MPI_Testall.
 *
 * Under the shim every call on a topology is offloaded (zero counts too)
 * and each MPI_Start counts on its persistent form's line.
 */
#include "tcommon.h"

#include <sys/mman.h>

#define LARGE   32766 /* base elements: ~32K ints, a multiple of 6 */
#define NSTARTS 52    /* starts of each persistent request */
#define NROUNDS 6     /* rounds of the calls outstanding together */
#define SGAP    0x3C  /* gaps of send buffers: must not be sent */

enum { K_AG, K_AGV, K_A2A, K_A2AV, K_A2AW, K_N };

static const char *knames[K_N] = {
    "ineighbor_allgather", "ineighbor_allgatherv", "ineighbor_alltoall",
    "ineighbor_alltoallv", "ineighbor_alltoallw"};

#ifdef HAVE_PERS
static const char *pnames[K_N] = {
    "neighbor_allgather_init", "neighbor_allgatherv_init",
    "neighbor_alltoall_init", "neighbor_alltoallv_init",
    "neighbor_alltoallw_init"};
#endif

/* The element type of a block's signature. */
enum { B_INT, B_DBL };
static const size_t bsize[2] = {sizeof(int), sizeof(double)};

/*
 * Layouts: a datatype whose signature is per base elements, laid out in
 * nblk runs of blen bytes every stride bytes from lo bytes into an item
 * (its lower bound), items ext bytes apart. A block of n base elements
 * is n / per items of it; a sender and its receiver may use different
 * layouts of one base type.
 */
enum { L_INT, L_DBL, L_VINT, L_RINT, L_VDBL, L_LBINT, L_N };

typedef struct {
    const char  *name;
    MPI_Datatype type;
    int          base, per, nblk;
    size_t       blen, stride, ext, lo;
} lay_t;

static lay_t lays[L_N];

/* Layouts alltoallw picks from, per base type ([0]: the named type). */
static const int wlays[2][4] = {{L_INT, L_VINT, L_RINT, L_LBINT},
                                {L_DBL, L_VDBL, L_DBL, L_DBL}};
static const int nwlays[2] = {4, 2};

static void lay_set(int l, const char *name, MPI_Datatype type, int base,
                    int per, int nblk, size_t blen, size_t stride, size_t ext,
                    size_t lo)
{
    MPI_Aint lb = 0, e = 0;

    lays[l].name = name;
    lays[l].type = type;
    lays[l].base = base;
    lays[l].per = per;
    lays[l].nblk = nblk;
    lays[l].blen = blen;
    lays[l].stride = stride;
    lays[l].ext = ext;
    lays[l].lo = lo;
    MPI_Type_get_extent(type, &lb, &e);
    if ((size_t)lb != lo || (size_t)e != ext) {
        t_fail("layout %s: extent %ld (lb %ld), expected %zu (lb %zu)", name,
               (long)e, (long)lb, ext, lo);
    }
}

static void lays_make(void)
{
    MPI_Datatype v, c, r, vd, h;
    MPI_Aint     at8 = 8;

    lay_set(L_INT, "MPI_INT", MPI_INT, B_INT, 1, 1, 4, 4, 4, 0);
    lay_set(L_DBL, "MPI_DOUBLE", MPI_DOUBLE, B_DBL, 1, 1, 8, 8, 8, 0);
    /* 3 ints, 2 skipped, 3 ints: 24 data bytes in 32. */
    T_MPI(MPI_Type_vector(2, 3, 5, MPI_INT, &v));
    T_MPI(MPI_Type_commit(&v));
    lay_set(L_VINT, "vector(2,3,5,MPI_INT)", v, B_INT, 6, 2, 12, 20, 32, 0);
    /* 2 ints then a 4-byte hole before the next item. */
    T_MPI(MPI_Type_contiguous(2, MPI_INT, &c));
    T_MPI(MPI_Type_create_resized(c, 0, 12, &r));
    T_MPI(MPI_Type_commit(&r));
    MPI_Type_free(&c);
    lay_set(L_RINT, "2 MPI_INT resized to 12 B", r, B_INT, 2, 1, 8, 8, 12, 0);
    /* every other double, 3 of them: 24 data bytes in 40. */
    T_MPI(MPI_Type_vector(3, 1, 2, MPI_DOUBLE, &vd));
    T_MPI(MPI_Type_commit(&vd));
    lay_set(L_VDBL, "vector(3,1,2,MPI_DOUBLE)", vd, B_DBL, 3, 3, 8, 16, 40, 0);
    /* 2 ints 8 bytes into the item: lower bound 8, extent 8 (the data
     * of a block starts 8 bytes after its displacement). */
    T_MPI(MPI_Type_create_hindexed_block(1, 2, &at8, MPI_INT, &h));
    T_MPI(MPI_Type_commit(&h));
    lay_set(L_LBINT, "2 MPI_INT at lb 8", h, B_INT, 2, 1, 8, 8, 8, 8);
}

static void lays_free(void)
{
    MPI_Type_free(&lays[L_VINT].type);
    MPI_Type_free(&lays[L_RINT].type);
    MPI_Type_free(&lays[L_VDBL].type);
    MPI_Type_free(&lays[L_LBINT].type);
}

/* Bytes from a block's displacement to the end of its last item. */
static size_t lay_span(int l, int count)
{
    return lays[l].lo + (size_t)count * lays[l].ext;
}

/* Lay count items of l at dst from the packed bytes at src. */
static void lay_put(uint8_t *dst, const uint8_t *src, int count,
                    const lay_t *l)
{
    dst += l->lo;
    for (int e = 0; e < count; e++) {
        for (int k = 0; k < l->nblk; k++) {
            memcpy(dst + (size_t)e * l->ext + (size_t)k * l->stride, src,
                   l->blen);
            src += l->blen;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Topologies and what each receive block must hold.                  */

typedef struct {
    char     name[100];
    MPI_Comm comm; /* MPI_COMM_NULL: this rank is not in it */
    int      rank, size, cart;
    int      small_periodic; /* a periodic dimension of 1 or 2 */
    int      repeated;       /* a graph with a rank receiving twice from one */
    int      recv_only;      /* a rank with sources and no destinations */
    int      partial;        /* leaves ranks of the job out */
    int      in, out, *srcs, *dsts;
    int     *outdeg, *dstoff, *alldst; /* every rank's destinations */
    int     *from; /* receive block j: the sender's send block */
} topo_t;

/*
 * Is stock MPI's own call wrong on tp? Then the case is skipped when the
 * shim is not loaded (stock MPI is what runs then; under the shim it
 * must be right). Known:
 * - On a periodic dimension of 1 or 2 processes (one process is the
 *   neighbour on both sides), the block sent towards the negative side
 *   must land in the positive-side block (s^1). Open MPI 4.1's
 *   neighbour alltoall(v)(w), nonblocking and persistent, deliver it
 *   into block s; so do MPICH 4.0's alltoallv and alltoallw, and its
 *   alltoall on a communicator of one process. (Allgather(v) cannot
 *   tell: both blocks hold the same data.)
 * - MPICH 4.0's neighbour alltoall receives repeated edges from one
 *   source in reverse order (its fix for the Cartesian case, applied to
 *   every topology): on a distributed graph the k-th send must meet the
 *   k-th receive.
 * - MPICH 4.0's neighbour alltoallw receives nothing on a rank without
 *   destinations (out-degree 0).
 */
static int stock_wrong(const topo_t *tp, int kind)
{
    if (t_shim_loaded()) {
        return 0;
    }
#if defined(OPEN_MPI) && OPEN_MPI
    return tp->small_periodic && kind >= K_A2A;
#elif defined(MPICH)
    return (tp->small_periodic && (kind == K_A2AV || kind == K_A2AW)) ||
           (tp->small_periodic && tp->size == 1 && kind == K_A2A) ||
           (tp->repeated && kind == K_A2A) ||
           (tp->recv_only && kind == K_A2AW);
#else
    (void)tp;
    (void)kind;
    return 0;
#endif
}

/* Skip this call on tp here? Not a member, or stock MPI wrong. */
static int topo_skip(const topo_t *tp, int kind)
{
    return tp->comm == MPI_COMM_NULL || stock_wrong(tp, kind);
}

static int *ialloc(int n)
{
    return t_xmalloc(sizeof(int) * (size_t)(n + 1));
}

/* Learn this rank's neighbours, every rank's destinations, and which
 * send block of its source each receive block gets. */
static void topo_learn(topo_t *tp)
{
    int  kind = MPI_UNDEFINED, nd = 0, n = 0, w = 0, me, j, s, k, q, tot;
    int  flags[2];
    int *sw, *dw;

    tp->from = tp->srcs = tp->dsts = NULL;
    tp->outdeg = tp->dstoff = tp->alldst = NULL;
    if (tp->comm == MPI_COMM_NULL) {
        return;
    }
    MPI_Comm_set_errhandler(tp->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(tp->comm, &tp->rank);
    MPI_Comm_size(tp->comm, &tp->size);
    me = tp->rank;
    T_MPI(MPI_Topo_test(tp->comm, &kind));
    if (kind == MPI_CART) {
        T_MPI(MPI_Cartdim_get(tp->comm, &nd));
        if (nd > 0) {
            int *dims = ialloc(nd), *per = ialloc(nd), *co = ialloc(nd);

            T_MPI(MPI_Cart_get(tp->comm, nd, dims, per, co));
            for (int d = 0; d < nd; d++) {
                tp->small_periodic |= per[d] && dims[d] <= 2;
            }
            free(dims);
            free(per);
            free(co);
        }
        tp->in = tp->out = 2 * nd;
        tp->srcs = ialloc(tp->in);
        tp->dsts = ialloc(tp->out);
        for (int d = 0; d < nd; d++) {
            T_MPI(MPI_Cart_shift(tp->comm, d, 1, &tp->srcs[2 * d],
                                 &tp->srcs[2 * d + 1]));
            tp->dsts[2 * d] = tp->srcs[2 * d];
            tp->dsts[2 * d + 1] = tp->srcs[2 * d + 1];
        }
        tp->cart = 1;
    } else if (kind == MPI_GRAPH) {
        T_MPI(MPI_Graph_neighbors_count(tp->comm, me, &n));
        tp->in = tp->out = n;
        tp->srcs = ialloc(n);
        tp->dsts = ialloc(n);
        T_MPI(MPI_Graph_neighbors(tp->comm, me, n, tp->srcs));
        memcpy(tp->dsts, tp->srcs, sizeof(int) * (size_t)n);
    } else if (kind == MPI_DIST_GRAPH) {
        T_MPI(MPI_Dist_graph_neighbors_count(tp->comm, &tp->in, &tp->out, &w));
        tp->srcs = ialloc(tp->in);
        tp->dsts = ialloc(tp->out);
        sw = ialloc(tp->in);
        dw = ialloc(tp->out);
        T_MPI(MPI_Dist_graph_neighbors(tp->comm, tp->in, tp->srcs,
                                       w ? sw : MPI_UNWEIGHTED, tp->out,
                                       tp->dsts, w ? dw : MPI_UNWEIGHTED));
        free(sw);
        free(dw);
    } else {
        t_fail("%s: MPI_Topo_test gave %d", tp->name, kind);
        tp->in = tp->out = 0;
        tp->srcs = ialloc(0);
        tp->dsts = ialloc(0);
    }
    /* Everyone's destination lists (through PMPI: not the test's). */
    tp->outdeg = ialloc(tp->size);
    tp->dstoff = ialloc(tp->size);
    T_MPI(PMPI_Allgather(&tp->out, 1, MPI_INT, tp->outdeg, 1, MPI_INT,
                         tp->comm));
    for (q = 0, tot = 0; q < tp->size; q++) {
        tp->dstoff[q] = tot;
        tot += tp->outdeg[q];
    }
    tp->alldst = ialloc(tot);
    T_MPI(PMPI_Allgatherv(tp->dsts, tp->out, MPI_INT, tp->alldst, tp->outdeg,
                          tp->dstoff, MPI_INT, tp->comm));
    tp->from = ialloc(tp->in);
    flags[0] = flags[1] = 0;
    for (j = 0; j < tp->in; j++) {
        for (k = 0; k < j && !tp->cart; k++) {
            flags[0] |= tp->srcs[k] == tp->srcs[j];
        }
    }
    flags[1] = tp->out == 0 && tp->in > 0;
    T_MPI(PMPI_Allreduce(MPI_IN_PLACE, flags, 2, MPI_INT, MPI_MAX, tp->comm));
    tp->repeated = flags[0];
    tp->recv_only = flags[1];
    for (j = 0; j < tp->in; j++) {
        const int *qd;

        q = tp->srcs[j];
        tp->from[j] = -1;
        if (q == MPI_PROC_NULL) {
            continue;
        }
        qd = tp->alldst + tp->dstoff[q];
        if (tp->cart) {
            s = j ^ 1;
            if (s < tp->outdeg[q] && qd[s] == me) {
                tp->from[j] = s;
            }
        } else {
            for (k = 0, s = 0; s < j; s++) {
                k += tp->srcs[s] == q;
            }
            for (s = 0; s < tp->outdeg[q]; s++) {
                if (qd[s] == me && k-- == 0) {
                    tp->from[j] = s;
                    break;
                }
            }
        }
        if (tp->from[j] < 0) {
            t_fail("%s: receive block %d is from rank %d, which sends "
                   "nothing matching to rank %d",
                   tp->name, j, q, me);
        }
    }
}

static void topo_free(topo_t *tp)
{
    free(tp->srcs);
    free(tp->dsts);
    free(tp->outdeg);
    free(tp->dstoff);
    free(tp->alldst);
    free(tp->from);
    if (tp->comm != MPI_COMM_NULL) {
        MPI_Comm_free(&tp->comm);
    }
}

static void topo_cart(topo_t *tp, MPI_Comm from, int nd, int *dims,
                      const int *periods, int reorder)
{
    int len;

    memset(tp, 0, sizeof(*tp));
    len = snprintf(tp->name, sizeof(tp->name), "cart ");
    for (int d = 0; d < nd; d++) {
        len +=
            snprintf(tp->name + len, sizeof(tp->name) - (size_t)len, "%s%d%s",
                     d ? "x" : "", dims[d], periods[d] ? "p" : "");
    }
    snprintf(tp->name + len, sizeof(tp->name) - (size_t)len, "%s",
             reorder ? " reordered" : "");
    for (int d = 0, p = 1; d < nd; d++) {
        p *= dims[d];
        tp->partial = d == nd - 1 && p < t.size;
    }
    tp->comm = MPI_COMM_NULL;
    T_MPI(MPI_Cart_create(from, nd, dims, periods, reorder, &tp->comm));
    topo_learn(tp);
}

/* MPI_Graph_create: a ring (neighbours: previous, next; once each) or a
 * star around rank 0 (its neighbours in decreasing order). */
static void topo_graph(topo_t *tp, int star)
{
    int n = t.size, e = 0, *index = ialloc(n), *edges = ialloc(2 * n);

    memset(tp, 0, sizeof(*tp));
    snprintf(tp->name, sizeof(tp->name), "graph %s", star ? "star" : "ring");
    for (int r = 0; r < n; r++) {
        int prev = (r + n - 1) % n, next = (r + 1) % n;

        if (star && r == 0) {
            for (int q = n - 1; q > 0; q--) {
                edges[e++] = q;
            }
        } else if (star) {
            edges[e++] = 0;
        } else {
            if (prev != r) {
                edges[e++] = prev;
            }
            if (next != r && next != prev) {
                edges[e++] = next;
            }
        }
        index[r] = e;
    }
    tp->comm = MPI_COMM_NULL;
    T_MPI(MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 0, &tp->comm));
    free(index);
    free(edges);
    topo_learn(tp);
}

/*
 * MPI_Dist_graph_create_adjacent. Weighted: to the next rank twice and
 * to itself between (weights 5, 1, 7), from the previous rank twice and
 * from itself between. Unweighted: every other rank to rank 0, listed
 * backwards there; rank 0 sends to nobody, the others receive from
 * nobody.
 */
static void topo_dist_adj(topo_t *tp, int weighted)
{
    int  n = t.size, me = t.rank, in = 0, out = 0;
    int  src[3], dst[3], sw[3] = {5, 1, 7}, dw[3] = {5, 1, 7};
    int *s = ialloc(n + 3), *d = ialloc(n + 3);

    memset(tp, 0, sizeof(*tp));
    if (weighted) {
        snprintf(tp->name, sizeof(tp->name),
                 "dist graph adjacent, "
                 "weighted, repeated and self edges");
        src[0] = src[2] = (me + n - 1) % n;
        src[1] = me;
        dst[0] = dst[2] = (me + 1) % n;
        dst[1] = me;
        memcpy(s, src, sizeof(src));
        memcpy(d, dst, sizeof(dst));
        in = out = 3;
    } else {
        snprintf(tp->name, sizeof(tp->name),
                 "dist graph adjacent, "
                 "unweighted, all to rank 0");
        if (me == 0) {
            for (int q = n - 1; q > 0; q--) {
                s[in++] = q;
            }
        } else {
            d[out++] = 0;
        }
    }
    tp->comm = MPI_COMM_NULL;
    T_MPI(MPI_Dist_graph_create_adjacent(
        MPI_COMM_WORLD, in, s, weighted ? sw : MPI_UNWEIGHTED, out, d,
        weighted ? dw : MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &tp->comm));
    free(s);
    free(d);
    topo_learn(tp);
}

/* MPI_Dist_graph_create: rank r gives the edges of rank r+1 to r and to
 * r+2 (repeated or to itself on 1 or 2 ranks), rank 0 also a self edge
 * of its own. MPI orders the neighbour lists as it likes: the expected
 * pairing follows the lists it reports. */
static void topo_dist(topo_t *tp)
{
    int n = t.size, me = t.rank, nsrc = me == 0 ? 2 : 1;
    int srcs[2] = {(me + 1) % n, 0}, deg[2] = {2, 1};
    int dsts[3] = {me, (me + 2) % n, 0}, w[3] = {2, 3, 4};

    memset(tp, 0, sizeof(*tp));
    snprintf(tp->name, sizeof(tp->name), "dist graph (not adjacent)");
    tp->comm = MPI_COMM_NULL;
    T_MPI(MPI_Dist_graph_create(MPI_COMM_WORLD, nsrc, srcs, deg, dsts, w,
                                MPI_INFO_NULL, 0, &tp->comm));
    topo_learn(tp);
}

/* ------------------------------------------------------------------ */
/* One neighbourhood call, its buffers and expected result.           */

typedef struct {
    int n;       /* base elements of a block (v, w: 0 to 3 times that) */
    int base;    /* B_INT or B_DBL (alltoallw: mixed per edge) */
    int sl, rl;  /* layouts of the send and receive sides (not w) */
    int vary;    /* v, w: counts per edge, zeros among them */
    int gaps;    /* v, w: gaps before blocks, receive order reversed */
    int derived; /* w: derived layouts among the per-edge choices */
} spec_t;

typedef struct {
    int    rank;  /* whose data: the sender; -1: nothing arrives */
    int    id;    /* which of its send blocks (allgather: 0) */
    int    elems; /* base elements */
    int    base;  /* their type */
    int    lay;
    int    count; /* items of the layout */
    size_t off;   /* bytes from the buffer's start */
} blk_t;

typedef struct {
    int           kind;
    const topo_t *tp;
    spec_t        sp;
    unsigned      salt; /* picks counts, types, layouts per edge */
    uint32_t      seed; /* of the current data */
    int           ns, nr;
    blk_t        *sb, *rb;
    size_t        slen, rlen;
    uint8_t      *sbuf, *scopy, *rbuf, *exp;
    int           scount, rcount;
    MPI_Datatype  stype, rtype;
    int          *scounts, *sdispls, *rcounts, *rdispls;
    MPI_Aint     *sad, *rad;
    MPI_Datatype *stypes, *rtypes;
    int           bottom; /* w: MPI_BOTTOM and absolute addresses */
                          /* (2: already in sabs and rabs) */
    MPI_Aint *sabs, *rabs;
} nop_t;

static int one_count(int kind)
{
    return kind == K_AG || kind == K_A2A;
}

/* Base elements rank r sends in its send block s (allgatherv: one block
 * for every neighbour, its size depending on r alone). */
static int edge_elems(const nop_t *o, int r, int s)
{
    unsigned m, ur = (unsigned)r, us = (unsigned)s;

    if (!o->sp.vary || one_count(o->kind)) {
        return o->sp.n;
    }
    m = o->kind == K_AGV ? (3u * ur + o->salt) % 4u
                         : (3u * ur + 5u * us + o->salt) % 4u;
    return o->sp.n * (int)m;
}

static int edge_base(const nop_t *o, int r, int s)
{
    if (o->kind != K_A2AW) {
        return o->sp.base;
    }
    return (int)(((unsigned)r + (unsigned)s + o->salt) % 2u);
}

/* Alltoallw's layout for base type base, chosen by pick. */
static int wlay(const nop_t *o, int base, unsigned pick)
{
    return o->sp.derived ? wlays[base][pick % (unsigned)nwlays[base]]
                         : wlays[base][0];
}

/*
 * Offsets of the n blocks b: MPI's i times the block's extent for the
 * one-count calls; for v and w, one after the other with (gaps) 0 to 2
 * units before each block, on the receive side in reverse order. unit:
 * the unit of the displacements (the type's extent; w: 4 bytes).
 * Returns the buffer's length.
 */
static size_t place(blk_t *b, int n, int vw, int gaps, int reverse,
                    size_t unit)
{
    size_t cur = 0, end = 0;

    for (int k = 0; k < n; k++) {
        int    i = reverse ? n - 1 - k : k;
        size_t span = lay_span(b[i].lay, b[i].count);

        if (!vw) {
            b[i].off = (size_t)i * (size_t)b[i].count * lays[b[i].lay].ext;
            end = b[i].off + span > end ? b[i].off + span : end;
            continue;
        }
        if (gaps) {
            cur += unit * (size_t)((k + 1) % 3);
        }
        cur = (cur + unit - 1) / unit * unit;
        b[i].off = cur;
        cur += span;
    }
    return vw ? cur : end;
}

static void nop_init(nop_t *o, const topo_t *tp, int kind, const spec_t *sp,
                     unsigned salt)
{
    int           me = tp->rank, all = kind == K_AG || kind == K_AGV, i, j;
    int           vw = !one_count(kind);
    const spec_t *p = sp;

    memset(o, 0, sizeof(*o));
    o->kind = kind;
    o->tp = tp;
    o->sp = *sp;
    o->salt = salt;
    o->ns = all ? 1 : tp->out;
    o->nr = tp->in;
    o->sb = t_xmalloc(sizeof(blk_t) * (size_t)(o->ns + 1));
    o->rb = t_xmalloc(sizeof(blk_t) * (size_t)(o->nr + 1));
    for (i = 0; i < o->ns; i++) {
        blk_t *b = &o->sb[i];

        b->rank = me;
        b->id = all ? 0 : i;
        b->elems = edge_elems(o, me, i);
        b->base = edge_base(o, me, i);
        b->lay = kind == K_A2AW
                     ? wlay(o, b->base, (unsigned)(me + 2 * i) + salt)
                     : p->sl;
        b->count = b->elems / lays[b->lay].per;
    }
    for (j = 0; j < o->nr; j++) {
        blk_t *b = &o->rb[j];
        int    q = tp->srcs[j], s = tp->from[j];

        if (q != MPI_PROC_NULL && s >= 0) {
            b->rank = q;
            b->id = all ? 0 : s;
            b->elems = edge_elems(o, q, s);
            b->base = edge_base(o, q, s);
        } else {
            /* Nothing arrives: a block of some size MPI must leave. */
            b->rank = -1;
            b->elems = vw && p->vary ? p->n * (1 + j % 3) : p->n;
            b->base = kind == K_A2AW ? B_INT : p->base;
        }
        b->lay = kind == K_A2AW
                     ? wlay(o, b->base, (unsigned)(3 * me + 5 * j + 1) + salt)
                     : p->rl;
        b->count = b->elems / lays[b->lay].per;
    }
    o->slen = place(o->sb, o->ns, kind == K_A2AV || kind == K_A2AW, p->gaps, 0,
                    kind == K_A2AW ? 4 : lays[p->sl].ext);
    o->rlen = place(o->rb, o->nr, vw, p->gaps, vw,
                    kind == K_A2AW ? 4 : lays[p->rl].ext);
    o->sbuf = t_galloc(o->slen);
    o->scopy = t_xmalloc(o->slen);
    o->rbuf = t_galloc(o->rlen);
    o->exp = t_xmalloc(o->rlen);
    /* The call's arguments. */
    o->scounts = ialloc(o->ns);
    o->sdispls = ialloc(o->ns);
    o->rcounts = ialloc(o->nr);
    o->rdispls = ialloc(o->nr);
    o->sad = t_xmalloc(sizeof(MPI_Aint) * (size_t)(o->ns + 1));
    o->rad = t_xmalloc(sizeof(MPI_Aint) * (size_t)(o->nr + 1));
    o->sabs = t_xmalloc(sizeof(MPI_Aint) * (size_t)(o->ns + 1));
    o->rabs = t_xmalloc(sizeof(MPI_Aint) * (size_t)(o->nr + 1));
    o->stypes = t_xmalloc(sizeof(MPI_Datatype) * (size_t)(o->ns + 1));
    o->rtypes = t_xmalloc(sizeof(MPI_Datatype) * (size_t)(o->nr + 1));
    o->stype = lays[p->sl].type;
    o->rtype = lays[p->rl].type;
    o->scount = (all ? o->sb[0].elems : p->n) / lays[p->sl].per;
    o->rcount = p->n / lays[p->rl].per;
    for (i = 0; i < o->ns; i++) {
        const lay_t *l = &lays[o->sb[i].lay];

        o->scounts[i] = o->sb[i].count;
        o->sdispls[i] = (int)(o->sb[i].off / l->ext);
        o->sad[i] = (MPI_Aint)o->sb[i].off;
        o->stypes[i] = l->type;
    }
    for (j = 0; j < o->nr; j++) {
        const lay_t *l = &lays[o->rb[j].lay];

        o->rcounts[j] = o->rb[j].count;
        o->rdispls[j] = (int)(o->rb[j].off / l->ext);
        o->rad[j] = (MPI_Aint)o->rb[j].off;
        o->rtypes[j] = l->type;
    }
}

/* The packed data of send block id of rank r: elems base elements. */
static uint8_t *stream(const nop_t *o, const blk_t *b)
{
    size_t   n = (size_t)b->elems * bsize[b->base];
    uint8_t *p = t_xmalloc(n);

    t_pat_fill(p, n, o->seed, b->rank, b->id);
    return p;
}

/* New data in the send buffer; the receive buffer poisoned; the
 * expected contents: poison where nothing may be written. */
static void nop_fill(nop_t *o, uint32_t seed)
{
    int i;

    o->seed = seed;
    memset(o->sbuf, SGAP, o->slen);
    for (i = 0; i < o->ns; i++) {
        uint8_t *p = stream(o, &o->sb[i]);

        lay_put(o->sbuf + o->sb[i].off, p, o->sb[i].count,
                &lays[o->sb[i].lay]);
        free(p);
    }
    memcpy(o->scopy, o->sbuf, o->slen);
    memset(o->rbuf, T_POISON, o->rlen);
    memset(o->exp, T_POISON, o->rlen);
    for (i = 0; i < o->nr; i++) {
        uint8_t *p;

        if (o->rb[i].rank < 0) {
            continue;
        }
        p = stream(o, &o->rb[i]);
        lay_put(o->exp + o->rb[i].off, p, o->rb[i].count, &lays[o->rb[i].lay]);
        free(p);
    }
}

/* Post the nonblocking call. */
static int nop_post(nop_t *o, MPI_Request *req)
{
    MPI_Comm c = o->tp->comm;

    if (t_shim_loaded()) {
        t_count(knames[o->kind], 1);
    }
    switch (o->kind) {
    case K_AG:
        return T_MPI(MPI_Ineighbor_allgather(o->sbuf, o->scount, o->stype,
                                             o->rbuf, o->rcount, o->rtype, c,
                                             req));
    case K_AGV:
        return T_MPI(MPI_Ineighbor_allgatherv(o->sbuf, o->scount, o->stype,
                                              o->rbuf, o->rcounts, o->rdispls,
                                              o->rtype, c, req));
    case K_A2A:
        return T_MPI(MPI_Ineighbor_alltoall(o->sbuf, o->scount, o->stype,
                                            o->rbuf, o->rcount, o->rtype, c,
                                            req));
    case K_A2AV:
        return T_MPI(MPI_Ineighbor_alltoallv(o->sbuf, o->scounts, o->sdispls,
                                             o->stype, o->rbuf, o->rcounts,
                                             o->rdispls, o->rtype, c, req));
    default:
        if (o->bottom) {
            /* The blocks' absolute addresses, from MPI_BOTTOM. */
            for (int i = 0; i < o->ns && o->bottom == 1; i++) {
                MPI_Get_address(o->sbuf + o->sb[i].off, &o->sabs[i]);
            }
            for (int j = 0; j < o->nr && o->bottom == 1; j++) {
                MPI_Get_address(o->rbuf + o->rb[j].off, &o->rabs[j]);
            }
            return T_MPI(MPI_Ineighbor_alltoallw(
                MPI_BOTTOM, o->scounts, o->sabs, o->stypes, MPI_BOTTOM,
                o->rcounts, o->rabs, o->rtypes, c, req));
        }
        return T_MPI(MPI_Ineighbor_alltoallw(o->sbuf, o->scounts, o->sad,
                                             o->stypes, o->rbuf, o->rcounts,
                                             o->rad, o->rtypes, c, req));
    }
}

#ifdef HAVE_PERS
/* Make the persistent request (counts nothing: its starts count). */
static int nop_pinit(nop_t *o, MPI_Request *req)
{
    MPI_Comm c = o->tp->comm;
    MPI_Info i = MPI_INFO_NULL;

    switch (o->kind) {
    case K_AG:
        return T_MPI(PINIT(Neighbor_allgather)(o->sbuf, o->scount, o->stype,
                                               o->rbuf, o->rcount, o->rtype, c,
                                               i, req));
    case K_AGV:
        return T_MPI(PINIT(Neighbor_allgatherv)(
            o->sbuf, o->scount, o->stype, o->rbuf, o->rcounts, o->rdispls,
            o->rtype, c, i, req));
    case K_A2A:
        return T_MPI(PINIT(Neighbor_alltoall)(o->sbuf, o->scount, o->stype,
                                              o->rbuf, o->rcount, o->rtype, c,
                                              i, req));
    case K_A2AV:
        return T_MPI(PINIT(Neighbor_alltoallv)(
            o->sbuf, o->scounts, o->sdispls, o->stype, o->rbuf, o->rcounts,
            o->rdispls, o->rtype, c, i, req));
    default:
        return T_MPI(PINIT(Neighbor_alltoallw)(o->sbuf, o->scounts, o->sad,
                                               o->stypes, o->rbuf, o->rcounts,
                                               o->rad, o->rtypes, c, i, req));
    }
}

/* A start of o's persistent request counts on its _init line. */
static void nop_counted_start(const nop_t *o)
{
    if (t_shim_loaded()) {
        t_count(pnames[o->kind], 1);
    }
}
#endif

static const char *lay_name(const blk_t *b)
{
    return lays[b->lay].name;
}

/* Every byte of the receive buffer, its guards, the send buffer. */
static int nop_check(nop_t *o)
{
    char kn[140], w[300], g[200];
    int  ok = 1;

    /* Which call (several may be checked in one case). */
    snprintf(kn, sizeof(kn), "%s on %s", knames[o->kind], o->tp->name);
    for (int j = 0; j < o->nr; j++) {
        const blk_t *b = &o->rb[j];
        size_t       span = lay_span(b->lay, b->count);

        if (b->rank >= 0) {
            snprintf(w, sizeof(w),
                     "%s: receive block %d (from rank %d, "
                     "its send block %d; %d x %s at %zu)",
                     kn, j, b->rank, b->id, b->count, lay_name(b), b->off);
        } else {
            snprintf(w, sizeof(w),
                     "%s: receive block %d (MPI_PROC_NULL: "
                     "must stay untouched; %d x %s at %zu)",
                     kn, j, b->count, lay_name(b), b->off);
        }
        ok &= t_match(w, o->rbuf + b->off, o->exp + b->off, span);
    }
    if (ok && memcmp(o->rbuf, o->exp, o->rlen) != 0) {
        snprintf(w, sizeof(w), "%s: receive buffer around the blocks", kn);
        ok &= t_match(w, o->rbuf, o->exp, o->rlen);
    }
    snprintf(g, sizeof(g), "%s: receive buffer", kn);
    t_gcheck(g, o->rbuf, o->rlen);
    snprintf(g, sizeof(g), "%s: send buffer", kn);
    ok &= t_match(g, o->sbuf, o->scopy, o->slen);
    t_gcheck(g, o->sbuf, o->slen);
    return ok;
}

static void nop_free(nop_t *o)
{
    t_gfree(o->sbuf);
    t_gfree(o->rbuf);
    free(o->scopy);
    free(o->exp);
    free(o->sb);
    free(o->rb);
    free(o->scounts);
    free(o->sdispls);
    free(o->rcounts);
    free(o->rdispls);
    free(o->sad);
    free(o->rad);
    free(o->sabs);
    free(o->rabs);
    free(o->stypes);
    free(o->rtypes);
}

/* n consecutive fresh seeds, taken on every rank alike (also those that
 * skip the case) so that senders and receivers agree. */
static uint32_t seeds(int n)
{
    uint32_t s = t.seed + 1;

    t.seed += (uint32_t)n;
    return s;
}

/* ------------------------------------------------------------------ */
/* The cases.                                                         */

/*
 * Wait until every rank of the job got here, re-arming the watchdog:
 * after the cases on a topology that leaves ranks out, which would
 * otherwise wait in their next case for as long as the others take
 * (while the others' watchdogs still catch a hang). Through PMPI: not
 * counted; sleeping, not spinning, to leave the CPU to the others.
 */
static void sync_all(const topo_t *tp)
{
    MPI_Request q = MPI_REQUEST_NULL;
    double      t0 = t_now();
    int         done = 0;

    if (!tp->partial) {
        return;
    }
    t_case("waiting for the cases on %s", tp->name);
    if (T_MPI(PMPI_Ibarrier(MPI_COMM_WORLD, &q)) != MPI_SUCCESS) {
        return;
    }
    while (!done) {
        if (T_MPI(PMPI_Test(&q, &done, MPI_STATUS_IGNORE)) != MPI_SUCCESS) {
            return;
        }
        if (!done) {
            usleep(1000);
        }
        if (t_now() - t0 > T_WATCHDOG_S / 3) {
            t_case("waiting for the cases on %s", tp->name);
            t0 = t_now();
        }
    }
}

/*
 * Alltoallw from MPI_BOTTOM with every block in an allocation of its
 * own, as a halo exchange with separate buffers per neighbour does: the
 * first block of each side in pages mapped apart (mmap: terabytes away
 * from the heap), the others from malloc. The span of the blocks is no
 * buffer: most of it is not mapped. The blocks are copied from and to
 * o's buffers, which are checked as usual; guards around each.
 */
static uint8_t *apart_alloc(size_t n, int mapped)
{
    uint8_t *p;

    if (!mapped) {
        return t_galloc(n);
    }
    p = mmap(NULL, n + 2 * T_GUARD, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "rank %d: mmap failed\n", t.rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(p, T_GUARD_BYTE, T_GUARD);
    memset(p + T_GUARD, T_POISON, n);
    memset(p + T_GUARD + n, T_GUARD_BYTE, T_GUARD);
    return p + T_GUARD;
}

static void apart_free(uint8_t *p, size_t n, int mapped)
{
    if (mapped) {
        munmap(p - T_GUARD, n + 2 * T_GUARD);
    } else {
        t_gfree(p);
    }
}

static void post_apart(nop_t *o, MPI_Request *q)
{
    uint8_t **sown = t_xmalloc(sizeof(uint8_t *) * (size_t)(o->ns + 1));
    uint8_t **rown = t_xmalloc(sizeof(uint8_t *) * (size_t)(o->nr + 1));
    size_t    span;
    char      w[100];
    int       i;

    o->bottom = 2;
    for (i = 0; i < o->ns; i++) {
        span = lay_span(o->sb[i].lay, o->sb[i].count);
        sown[i] = apart_alloc(span, i == 0);
        memcpy(sown[i], o->sbuf + o->sb[i].off, span);
        MPI_Get_address(sown[i], &o->sabs[i]);
    }
    for (i = 0; i < o->nr; i++) {
        span = lay_span(o->rb[i].lay, o->rb[i].count);
        rown[i] = apart_alloc(span, i == 0);
        MPI_Get_address(rown[i], &o->rabs[i]);
    }
    if (nop_post(o, q) == MPI_SUCCESS) {
        T_MPI(MPI_Wait(q, MPI_STATUS_IGNORE));
    }
    for (i = 0; i < o->ns; i++) {
        span = lay_span(o->sb[i].lay, o->sb[i].count);
        snprintf(w, sizeof(w), "send block %d's own allocation", i);
        t_match(w, sown[i], o->sbuf + o->sb[i].off, span);
        t_gcheck(w, sown[i], span);
        apart_free(sown[i], span, i == 0);
    }
    for (i = 0; i < o->nr; i++) {
        span = lay_span(o->rb[i].lay, o->rb[i].count);
        snprintf(w, sizeof(w), "receive block %d's own allocation", i);
        t_gcheck(w, rown[i], span);
        memcpy(o->rbuf + o->rb[i].off, rown[i], span);
        apart_free(rown[i], span, i == 0);
    }
    free(sown);
    free(rown);
}

/* One nonblocking call: post, wait, check. bottom: alltoallw from
 * MPI_BOTTOM with absolute addresses (2: blocks allocated apart). */
static void run_one(const topo_t *tp, int kind, const spec_t *sp,
                    const char *what, int bottom)
{
    MPI_Request q = MPI_REQUEST_NULL;
    uint32_t    seed = seeds(1);
    nop_t       o;

    if (topo_skip(tp, kind)) {
        return;
    }
    t_case("%s %s (n=%d) on %s", knames[kind], what, sp->n, tp->name);
    nop_init(&o, tp, kind, sp, seed);
    o.bottom = bottom;
    nop_fill(&o, seed);
    if (bottom == 2) {
        post_apart(&o, &q);
    } else if (nop_post(&o, &q) == MPI_SUCCESS) {
        T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    }
    nop_check(&o);
    nop_free(&o);
}

/* Per kind: 1 element (counts 0 to 3 in v and w, ints and doubles in w,
 * named types); 6 elements with derived types; large. */
static const spec_t small[K_N] = {
    {1, B_INT, L_INT, L_INT, 0, 0, 0}, {1, B_INT, L_INT, L_INT, 1, 1, 0},
    {1, B_INT, L_INT, L_INT, 0, 0, 0}, {1, B_DBL, L_DBL, L_DBL, 1, 1, 0},
    {1, B_INT, L_INT, L_INT, 1, 1, 0},
};
static const spec_t derived[K_N] = {
    {6, B_INT, L_VINT, L_LBINT, 0, 0, 1}, /* derived both sides */
    {6, B_DBL, L_DBL, L_VDBL, 1, 1, 1},   /* derived receive type */
    {6, B_INT, L_RINT, L_VINT, 0, 0, 1},  {6, B_INT, L_INT, L_VINT, 1, 1, 1},
    {6, B_INT, L_INT, L_INT, 1, 1, 1}, /* every layout per edge */
};
static const spec_t large[K_N] = {
    {LARGE, B_INT, L_INT, L_INT, 0, 0, 0},
    {LARGE, B_INT, L_LBINT, L_INT, 1, 1, 0},
    {LARGE, B_INT, L_INT, L_VINT, 0, 0, 1},
    {LARGE, B_INT, L_RINT, L_INT, 1, 1, 1},
    {LARGE, B_INT, L_INT, L_INT, 1, 1, 1},
};
/* Zero counts everywhere (v, w: displacements still with gaps). */
static const spec_t zero = {0, B_INT, L_INT, L_INT, 0, 1, 0};

static void topo_cases(const topo_t *tp, int big)
{
    for (int k = 0; k < K_N; k++) {
        run_one(tp, k, &small[k], "small", 0);
        run_one(tp, k, &derived[k], "derived types", 0);
        if (big) {
            run_one(tp, k, &large[k], "large", 0);
        }
    }
    run_one(tp, K_A2AW, &derived[K_A2AW], "from MPI_BOTTOM", 1);
    run_one(tp, K_A2AW, &small[K_A2AW], "from MPI_BOTTOM, blocks apart", 2);
    for (int k = 0; k < K_N; k++) {
        run_one(tp, k, &zero, "zero counts", 0);
    }
}

#ifdef HAVE_PERS
/*
 * Make o's persistent request with the derived datatypes among its
 * arguments (the one-count and v calls' types, alltoallw's arrays)
 * replaced by duplicates, into dups (*ndups of them): the caller frees
 * them right after, as an application may (the request must keep what
 * it needs). Restores o's own types.
 */
static int pinit_dup_types(nop_t *o, MPI_Request *req, MPI_Datatype **dups,
                           int *ndups)
{
    int           ns = o->ns, nr = o->nr, n = 0, rc, i;
    MPI_Datatype *d = t_xmalloc(sizeof(MPI_Datatype) * (size_t)(ns + nr + 2));
    MPI_Datatype *keep =
        t_xmalloc(sizeof(MPI_Datatype) * (size_t)(ns + nr + 2));
    MPI_Datatype *slot[2] = {&o->stype, &o->rtype};

    keep[0] = o->stype;
    keep[1] = o->rtype;
    memcpy(keep + 2, o->stypes, sizeof(MPI_Datatype) * (size_t)ns);
    memcpy(keep + 2 + ns, o->rtypes, sizeof(MPI_Datatype) * (size_t)nr);
    for (i = 0; i < 2 + ns + nr; i++) {
        MPI_Datatype *t = i < 2        ? slot[i]
                          : i < 2 + ns ? &o->stypes[i - 2]
                                       : &o->rtypes[i - 2 - ns];

        if (*t != MPI_INT && *t != MPI_DOUBLE &&
            T_MPI(MPI_Type_dup(*t, &d[n])) == MPI_SUCCESS) {
            *t = d[n++];
        }
    }
    rc = nop_pinit(o, req);
    o->stype = keep[0];
    o->rtype = keep[1];
    memcpy(o->stypes, keep + 2, sizeof(MPI_Datatype) * (size_t)ns);
    memcpy(o->rtypes, keep + 2 + ns, sizeof(MPI_Datatype) * (size_t)nr);
    free(keep);
    *dups = d;
    *ndups = n;
    return rc;
}

static void dups_free(MPI_Datatype **dups, int *ndups)
{
    for (int i = 0; i < *ndups; i++) {
        T_MPI(MPI_Type_free(&(*dups)[i]));
    }
    free(*dups);
    *dups = NULL;
    *ndups = 0;
}

/*
 * Complete the started persistent request *q by one of the completion
 * calls (how: which), which must leave the handle, inactive, in *q.
 */
static void complete(MPI_Request *q, int how)
{
    MPI_Request two[2];
    int         done = 0, idx = -1, out[2];

    switch (how % 4) {
    case 0: T_MPI(MPI_Wait(q, MPI_STATUS_IGNORE)); break;
    case 1:
        while (!done &&
               T_MPI(MPI_Test(q, &done, MPI_STATUS_IGNORE)) == MPI_SUCCESS) {
        }
        break;
    case 2:
        /* Beside a null request, which Waitany passes over. */
        two[0] = MPI_REQUEST_NULL;
        two[1] = *q;
        T_MPI(MPI_Waitany(2, two, &idx, MPI_STATUS_IGNORE));
        if (idx != 1) {
            t_fail("MPI_Waitany gave index %d, expected 1", idx);
        }
        *q = two[1];
        break;
    default:
        two[0] = *q;
        while (!done &&
               T_MPI(MPI_Testsome(1, two, &idx, out, t_statuses_ignore)) ==
                   MPI_SUCCESS) {
            done = idx == 1;
        }
        *q = two[0];
        break;
    }
    if (*q == MPI_REQUEST_NULL) {
        t_fail("completing a persistent request (way %d) set the handle "
               "to MPI_REQUEST_NULL",
               how % 4);
    }
}

/* Each persistent form on tp, started starts times with new data. */
static void persistent(const topo_t *tp, int starts)
{
    for (int k = 0; k < K_N; k++) {
        uint32_t      seed = seeds(starts + 1);
        MPI_Request   q = MPI_REQUEST_NULL;
        MPI_Datatype *dups = NULL;
        int           ndups = 0;
        nop_t         o;

        if (topo_skip(tp, k)) {
            continue;
        }
        t_case("persistent %s on %s: init", pnames[k], tp->name);
        nop_init(&o, tp, k, &derived[k], seed);
        nop_fill(&o, seed);
        if (pinit_dup_types(&o, &q, &dups, &ndups) != MPI_SUCCESS) {
            dups_free(&dups, &ndups);
            nop_free(&o);
            continue;
        }
        /* The application's types freed: the shim keeps duplicates.
         * Stock Open MPI 4.1 would use the freed ones (a crash in
         * NBC_Start): there they live as long as the request. */
#if defined(OPEN_MPI) && OPEN_MPI
        if (t_shim_loaded())
#endif
        {
            dups_free(&dups, &ndups);
        }
        for (int it = 0; it < starts; it++) {
            t_case("persistent %s on %s: start %d", pnames[k], tp->name, it);
            /* The buffers stay, their contents change. */
            nop_fill(&o, seed + 1 + (uint32_t)it);
            nop_counted_start(&o);
            if (T_MPI(MPI_Start(&q)) == MPI_SUCCESS) {
                complete(&q, it);
            }
            nop_check(&o);
        }
        T_MPI(MPI_Request_free(&q));
        dups_free(&dups, &ndups);
        nop_free(&o);
    }
}

/*
 * Double buffering: two persistent requests of one kind with the same
 * counts, types and communicator and buffers of their own, both in
 * flight (started one after the other, completed in reverse order),
 * rounds times with new data. Each must move its own buffers.
 */
static void twins(const topo_t *tp, int kind, int rounds)
{
    uint32_t    seed = seeds(2 * rounds + 2);
    MPI_Request q[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    nop_t       o[2];
    int         i, r, ok = 1;

    if (topo_skip(tp, kind)) {
        return;
    }
    t_case("twin persistent %s on %s: init", pnames[kind], tp->name);
    for (i = 0; i < 2; i++) {
        /* One salt: the same counts and types for both. */
        nop_init(&o[i], tp, kind, &derived[kind], seed);
        nop_fill(&o[i], seed + (uint32_t)i);
        ok &= nop_pinit(&o[i], &q[i]) == MPI_SUCCESS;
    }
    for (r = 0; r < rounds && ok; r++) {
        t_case("twin persistent %s on %s: round %d", pnames[kind], tp->name,
               r);
        for (i = 0; i < 2; i++) {
            nop_fill(&o[i], seed + 2 + (uint32_t)(2 * r + i));
            nop_counted_start(&o[i]);
            T_MPI(MPI_Start(&q[i]));
        }
        T_MPI(MPI_Wait(&q[1], MPI_STATUS_IGNORE));
        T_MPI(MPI_Wait(&q[0], MPI_STATUS_IGNORE));
        nop_check(&o[0]);
        nop_check(&o[1]);
    }
    for (i = 0; i < 2; i++) {
        if (q[i] != MPI_REQUEST_NULL) {
            T_MPI(MPI_Request_free(&q[i]));
        }
        nop_free(&o[i]);
    }
}
#endif

/* Stock MPICH 4.0's MPI_Testall returns MPI_ERR_IN_STATUS (no status
 * saying why) for a started persistent collective request. */
static int testall_broken(void)
{
#if defined(MPICH) && !(defined(OPEN_MPI) && OPEN_MPI)
    return !t_shim_loaded();
#else
    return 0;
#endif
}

/*
 * Calls outstanding together, completed by one MPI_Waitall (MPI_Testall
 * every other round): on a Cartesian topology alltoallv then alltoallw,
 * on the weighted distributed graph allgather, alltoallw on the disjoint
 * communicators of MPI_Cart_sub, and persistent requests started by one
 * MPI_Startall: alltoall on the other distributed graph, allgatherv on
 * the Cartesian one, and a point-to-point send and receive around the
 * ring of the job's ranks (stock MPI's own persistent requests among
 * the shim's). New data every round.
 */
static void outstanding(const topo_t *ca, const topo_t *dg, const topo_t *dg2,
                        const topo_t *sub)
{
    enum { NO = 6, NQ = NO + 2 };
    const topo_t    *tps[NO] = {ca, dg, ca, sub, dg2, ca};
    static const int kinds[NO] = {K_A2AV, K_AG, K_A2AW, K_A2AW, K_A2A, K_AGV};
    int              pers[NO] = {0, 0, 0, 0, 1, 1}, use[NO], i, r, done;
    int              ring[2] = {0, 0}, next = (t.rank + 1) % t.size;
    int              prev = (t.rank + t.size - 1) % t.size;
    MPI_Request      q[NQ], sq[NQ];
    nop_t            o[NO];
    uint32_t         seed = seeds(NO * (NROUNDS + 1));

#ifndef HAVE_PERS
    pers[4] = pers[5] = 0;
#endif
    t_case("outstanding together: set up");
    for (i = 0; i < NO; i++) {
        use[i] = !topo_skip(tps[i], kinds[i]);
        q[i] = MPI_REQUEST_NULL;
        if (!use[i]) {
            continue;
        }
        nop_init(&o[i], tps[i], kinds[i],
                 i == 1 ? &small[kinds[i]] : &derived[kinds[i]],
                 seed + (uint32_t)i);
        nop_fill(&o[i], seed + (uint32_t)i);
#ifdef HAVE_PERS
        if (pers[i] && nop_pinit(&o[i], &q[i]) != MPI_SUCCESS) {
            use[i] = 0;
            nop_free(&o[i]);
        }
#endif
    }
    T_MPI(
        MPI_Send_init(&ring[0], 1, MPI_INT, next, 77, MPI_COMM_WORLD, &q[NO]));
    T_MPI(MPI_Recv_init(&ring[1], 1, MPI_INT, prev, 77, MPI_COMM_WORLD,
                        &q[NO + 1]));
    for (r = 0; r < NROUNDS; r++) {
        int ns = 0;

        t_case("outstanding together: round %d", r);
        for (i = 0; i < NO; i++) {
            if (!use[i]) {
                continue;
            }
            nop_fill(&o[i], seed + (uint32_t)(NO * (r + 1) + i));
            if (pers[i]) {
#ifdef HAVE_PERS
                nop_counted_start(&o[i]);
#endif
                sq[ns++] = q[i];
            } else if (nop_post(&o[i], &q[i]) != MPI_SUCCESS) {
                q[i] = MPI_REQUEST_NULL;
            }
        }
        ring[0] = 1000 * r + t.rank;
        ring[1] = -1;
        sq[ns++] = q[NO + 1];
        sq[ns++] = q[NO];
        /* The persistent ones at once, after the others were posted
         * (the same order on every rank of each communicator). */
        T_MPI(MPI_Startall(ns, sq));
        if (r % 2 == 0 || testall_broken()) {
            T_MPI(MPI_Waitall(NQ, q, t_statuses_ignore));
        } else {
            for (done = 0; !done;) {
                if (T_MPI(MPI_Testall(NQ, q, &done, t_statuses_ignore)) !=
                    MPI_SUCCESS) {
                    break;
                }
            }
        }
        for (i = 0; i < NO; i++) {
            if (use[i]) {
                nop_check(&o[i]);
            }
            if (use[i] && pers[i] && q[i] == MPI_REQUEST_NULL) {
                t_fail("persistent request %d: MPI_REQUEST_NULL after "
                       "completion",
                       i);
            }
        }
        if (ring[1] != 1000 * r + prev) {
            t_fail("persistent receive from rank %d: %d, expected %d", prev,
                   ring[1], 1000 * r + prev);
        }
    }
    for (i = 0; i < NO; i++) {
        if (use[i]) {
            if (pers[i]) {
                T_MPI(MPI_Request_free(&q[i]));
            }
            nop_free(&o[i]);
        }
    }
    T_MPI(MPI_Request_free(&q[NO]));
    T_MPI(MPI_Request_free(&q[NO + 1]));
}

enum {
    T_RING_P,
    T_RING,
    T_REV,
    T_2D,
    T_COL,
    T_PAIRS,
    T_3D_P,
    T_3D,
    T_SUB,
    T_GRING,
    T_GSTAR,
    T_DWEIGHT,
    T_DSTAR,
    T_DIST,
    T_DUP,
    T_NTOPO
};

int main(int argc, char **argv)
{
    static topo_t tp[T_NTOPO];
    int           n, d1[1], p1[1], d2[2], p2[2], d3[3], p3[3], i;
    MPI_Comm      rev;

    t_init(&argc, &argv, "t_neigh");
    n = t.size;
    lays_make();
    t_case("topologies");
    /* 1-D over all ranks, periodic and not. */
    d1[0] = n, p1[0] = 1;
    topo_cart(&tp[T_RING_P], MPI_COMM_WORLD, 1, d1, p1, 0);
    d1[0] = n, p1[0] = 0;
    topo_cart(&tp[T_RING], MPI_COMM_WORLD, 1, d1, p1, 0);
    /* The same over the job's ranks in reverse order: the topology's
     * ranks are not the job's. */
    MPI_Comm_split(MPI_COMM_WORLD, 0, n - t.rank, &rev);
    topo_cart(&tp[T_REV], rev, 1, d1, p1, 0);
    MPI_Comm_free(&rev);
    snprintf(tp[T_REV].name, sizeof(tp[T_REV].name),
             "cart %d of the "
             "ranks reversed",
             n);
    /* 2-D from MPI_Dims_create, periodic in one dimension, reordered. */
    d2[0] = d2[1] = 0;
    MPI_Dims_create(n, 2, d2);
    p2[0] = 1, p2[1] = 0;
    topo_cart(&tp[T_2D], MPI_COMM_WORLD, 2, d2, p2, 1);
    /* n x 1 periodic: itself on both sides in dimension 1 (and on 1 or
     * 2 ranks in dimension 0, itself or the same rank both sides). */
    d2[0] = n, d2[1] = 1, p2[0] = p2[1] = 1;
    topo_cart(&tp[T_COL], MPI_COMM_WORLD, 2, d2, p2, 0);
    /* 2 x (n/2) periodic: the same neighbour on both sides of dimension
     * 0; on 3 ranks the last one is left out. */
    d2[0] = n >= 2 ? 2 : 1, d2[1] = n >= 2 ? n / 2 : 1;
    p2[0] = p2[1] = 1;
    topo_cart(&tp[T_PAIRS], MPI_COMM_WORLD, 2, d2, p2, 0);
    /* 3-D from MPI_Dims_create, mixed periodicity, and none: edges
     * where MPI_PROC_NULL blocks must stay untouched. */
    d3[0] = d3[1] = d3[2] = 0;
    MPI_Dims_create(n, 3, d3);
    p3[0] = 1, p3[1] = 0, p3[2] = 1;
    topo_cart(&tp[T_3D_P], MPI_COMM_WORLD, 3, d3, p3, 0);
    p3[0] = p3[1] = p3[2] = 0;
    topo_cart(&tp[T_3D], MPI_COMM_WORLD, 3, d3, p3, 1);
    /* MPI_Cart_sub of that keeping dimensions 0 and 2: disjoint
     * communicators, their calls in flight at once. */
    memset(&tp[T_SUB], 0, sizeof(tp[T_SUB]));
    snprintf(tp[T_SUB].name, sizeof(tp[T_SUB].name),
             "cart sub %dp x %dp "
             "of %dx%dx%d",
             d3[0], d3[2], d3[0], d3[1], d3[2]);
    tp[T_SUB].comm = MPI_COMM_NULL;
    p3[0] = 1, p3[1] = 0, p3[2] = 1;
    T_MPI(MPI_Cart_sub(tp[T_3D_P].comm, p3, &tp[T_SUB].comm));
    topo_learn(&tp[T_SUB]);
    topo_graph(&tp[T_GRING], 0);
    topo_graph(&tp[T_GSTAR], 1);
    topo_dist_adj(&tp[T_DWEIGHT], 1);
    topo_dist_adj(&tp[T_DSTAR], 0);
    topo_dist(&tp[T_DIST]);
    /* A duplicate keeps the topology. */
    memset(&tp[T_DUP], 0, sizeof(tp[T_DUP]));
    snprintf(tp[T_DUP].name, sizeof(tp[T_DUP].name), "dup of %.90s",
             tp[T_DWEIGHT].name);
    tp[T_DUP].comm = MPI_COMM_NULL;
    T_MPI(MPI_Comm_dup(tp[T_DWEIGHT].comm, &tp[T_DUP].comm));
    topo_learn(&tp[T_DUP]);
    for (i = 0; i < T_NTOPO && t.rank == 0; i++) {
        char   what[200] = "";
        size_t len = 0;

        for (int k = 0; k < K_N; k++) {
            if (stock_wrong(&tp[i], k) && len < sizeof(what)) {
                len += (size_t)snprintf(what + len, sizeof(what) - len, " %s",
                                        knames[k]);
            }
        }
        if (len > 0) {
            printf("note: stock MPI is wrong on %s: skipping%s (and "
                   "persistent forms)\n",
                   tp[i].name, what);
            fflush(stdout);
        }
    }

    for (i = 0; i < T_NTOPO; i++) {
        topo_cases(&tp[i], i == T_2D || i == T_PAIRS || i == T_DWEIGHT);
        sync_all(&tp[i]);
    }
#ifdef HAVE_PERS
    persistent(&tp[T_PAIRS], 12);
    sync_all(&tp[T_PAIRS]);
    persistent(&tp[T_DWEIGHT], NSTARTS);
    persistent(&tp[T_3D], 8);
    twins(&tp[T_DWEIGHT], K_A2AW, 10);
    twins(&tp[T_2D], K_A2AV, 10);
#endif
    outstanding(&tp[T_3D], &tp[T_DWEIGHT], &tp[T_DIST], &tp[T_SUB]);

    t_case("free");
    for (i = 0; i < T_NTOPO; i++) {
        topo_free(&tp[i]);
    }
    lays_free();
    return t_finish();
}
