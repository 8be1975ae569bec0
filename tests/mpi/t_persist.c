/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Persistent collectives (MPI-4's MPI_<Coll>_init; Open MPI 4.1's
 * MPIX_<Coll>_init from mpi-ext.h), against stock MPI: every start's
 * result, byte for byte (gaps of derived datatypes included), is what the
 * blocking PMPI_* call delivers on the same inputs, and send buffers are
 * unchanged. Each start runs the nonblocking collective, so each counts
 * once on the <coll>_init statistics line, offloaded or fallback by the
 * rules of that call (tcolls.h, t_colls.c).
 *
 * Cases: all 17 collectives on the world, a reversed world and the odd
 * and even halves, every root, MPI_IN_PLACE, a vector type on one side or
 * both (made for the init and freed right after it, its handle then
 * taken by another type), zero counts, 64 KiB to 1 MiB messages, user
 * operations (fallbacks), every request started twice with new contents
 * and completed by each completion call in turn; an alltoall and an
 * allreduce restarted 1000 times, each result checked; MPI_Startall over
 * persistent collectives and stock MPI_Send_init/MPI_Recv_init requests,
 * completed by every completion call, and the inactive requests then
 * given to every completion call (at once, empty statuses); requests
 * freed and made again (handles reused, by the shim's requests or MPI's);
 * several persistent collectives and an MPI_Ialltoall outstanding
 * together on one communicator.
 *
 * Where the MPI library is wrong, the reference is computed otherwise
 * (as in t_colls.c): Open MPI 4.1's one-rank MPI_Alltoallw with a
 * displacement; MPICH 4.0's one-rank MPI_Allgatherv ignores the
 * displacement (it is 0 there); MPICH 4.0's MPI_Reduce after an
 * MPI_IN_PLACE call (references are never in place for reductions).
 *
 * MPICH 4.0's own persistent collectives (stock MPICH, no shim) are
 * unusable, so there the program only says so: restarted gathers,
 * scatters and allgathers deliver stale or no data, MPI_Startall returns
 * garbage codes, MPI_Testall returns MPI_ERR_IN_STATUS, MPI_Waitany
 * reports completed requests again, MPI_Test on a request never started
 * says "not complete" and MPI_Wait on it hangs, MPI_Request_free asserts
 * after the datatype was freed. Under the shim every start is the
 * shim's, whichever MPI. Open MPI 4.1's own persistent collectives use
 * a datatype's handle after it was freed (another type given the handle
 * moves its own layout; a hang): on stock MPI, the types stay until the
 * request is freed.
 */
#include "tcommon.h"

#ifdef HAVE_PERS

#define MAXP     64 /* largest communicator */
#define UNIT     6  /* ints in a block unit: one vector element */
#define RESTARTS 1000

/* ---- collectives, element types, reductions -------------------------- */

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
    K_RS,
    K_RSB,
    K_SCAN,
    K_EXSCAN,
    K_N
};

static const char *kname[K_N] = {
    "barrier",   "bcast",          "gather",
    "gatherv",   "scatter",        "scatterv",
    "allgather", "allgatherv",     "alltoall",
    "alltoallv", "alltoallw",      "reduce",
    "allreduce", "reduce_scatter", "reduce_scatter_block",
    "scan",      "exscan"};

/*
 * Movement: each side is ints or a vector (2 blocks of 3 ints every 5:
 * 6 ints over an extent of 8, gaps between). Counts are given in units
 * of 6 ints, so any two sides have the same signature.
 */
enum { TY_I, TY_V };
static MPI_Datatype vec; /* the references' vector type */

static MPI_Datatype ty_of(int t)
{
    return t == TY_V ? vec : MPI_INT;
}

static int ty_ints(int t)
{
    return t == TY_V ? UNIT : 1;
}

static size_t ty_ext(int t)
{
    return t == TY_V ? 32 : 4;
}

static MPI_Datatype vec_make(void)
{
    MPI_Datatype v;

    MPI_Type_vector(2, 3, 5, MPI_INT, &v);
    MPI_Type_commit(&v);
    return v;
}

/* Reductions: small integer inputs, so that every sum is exact in any
 * order; the pair type has ties (MINLOC takes the lowest index). */
enum { F_INT, F_DOUBLE, F_PAIR };

typedef struct red {
    const char  *name;
    MPI_Datatype type;
    MPI_Op       op;
    int          esize;
    int          form; /* F_*: how inputs are written */
    int          off;  /* the shim may reduce it (else stock MPI) */
} red_t;

enum { R_ISUM, R_DSUM, R_MINLOC, R_USER, R_N };
static red_t  reds[R_N];
static MPI_Op user_sum;

static void my_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int *a = in, *b = inout;

    (void)dt;
    for (int i = 0; i < *len; i++) {
        b[i] += a[i];
    }
}

static void reds_make(void)
{
    MPI_Op_create(my_sum, 1, &user_sum);
    reds[R_ISUM] = (red_t){"int sum", MPI_INT, MPI_SUM, 4, F_INT, 1};
    reds[R_DSUM] = (red_t){"double sum", MPI_DOUBLE, MPI_SUM, 8, F_DOUBLE, 1};
    reds[R_MINLOC] =
        (red_t){"2int minloc", MPI_2INT, MPI_MINLOC, 8, F_PAIR, 1};
    /* User operations go to stock MPI: counted as fallbacks. */
    reds[R_USER] = (red_t){"int user op", MPI_INT, user_sum, 4, F_INT, 0};
}

static void red_fill(const red_t *r, void *buf, int n, int me, uint32_t seed)
{
    char *p = buf;

    for (int i = 0; i < n; i++) {
        int v =
            (int)(t_mix64(((uint64_t)seed << 32) ^ (uint64_t)(me * 7919 + i)) %
                  201) -
            100;
        double d = v;
        int    pair[2] = {v % 5, me};

        if (r->form == F_DOUBLE) {
            memcpy(p + (size_t)i * 8, &d, 8);
        } else if (r->form == F_PAIR) {
            memcpy(p + (size_t)i * 8, pair, 8);
        } else {
            memcpy(p + (size_t)i * 4, &v, 4);
        }
    }
}

/* Counts of the v-variants (units): some zero; displacements in reverse
 * rank order with gaps (as in tcolls.h). */
static int vcount(int i, int n)
{
    return (i * 3 + 1) % 4 * n;
}

/* What rank a sends rank b in alltoallv/w (units). */
static int a2a_count(int a, int b, int n)
{
    return (a + 2 * b) % 3 * n;
}

/* In place, what goes to b must be what comes from b. */
static int a2a_sym(int a, int b, int n)
{
    int x = a2a_count(a, b, n), y = a2a_count(b, a, n);

    return x > y ? x : y;
}

/* ---- one persistent collective --------------------------------------- */

typedef struct pc {
    char         name[160];
    int          kind, st, rt; /* K_*; TY_* of the send, recv side */
    const red_t *red;          /* reductions */
    MPI_Comm     comm;
    int          me, p, root, n, ip;
    int          fresh; /* the init's vector, freed after it */
    int          scount, rcount;
    int          sc[MAXP], sd[MAXP], rc[MAXP], rd[MAXP];
    int          swt[MAXP], rwt[MAXP]; /* alltoallw: TY_* per peer */
    size_t       slen, rlen, olen;     /* olen: significant bytes of rb */
    char        *sb, *rb;              /* the persistent call's buffers */
    char        *xs, *xr;              /* the reference's (stock MPI) */
    int          off;                  /* each start is offloaded */
    MPI_Datatype decoy;                /* took the freed vector's handle? */
    MPI_Request  req, handle;
} pc_t;

static int how_next; /* completion call of the next single start */

/* Between tests that said "not yet": a loop that never yields starves
 * the agent sharing the cores (2 cores, oversubscribed), and programs
 * compute between tests anyway. */
static void poll_pause(int done)
{
    if (!done) {
        usleep(20);
    }
}

/* Set up o: layout, buffers, the expected fate of each start. n: units
 * of 6 ints per block (movement) or elements (reductions). */
static void pc_make(pc_t *o, int kind, MPI_Comm comm, const char *cn, int root,
                    int n, int st, int rt, int ip, const red_t *red, int fresh)
{
    int    me, p, i, sat = 2, rat = 3;
    size_t se = ty_ext(st), re = ty_ext(rt);
    int    su = UNIT / ty_ints(st), ru = UNIT / ty_ints(rt);

    memset(o, 0, sizeof(*o));
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    if (p > MAXP) {
        t_fail("communicator of %d ranks: at most %d", p, MAXP);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    o->kind = kind;
    o->comm = comm;
    o->me = me;
    o->p = p;
    o->root = root;
    o->n = n;
    o->st = st;
    o->rt = rt;
    o->ip = ip;
    o->red = red;
    /* Stock Open MPI 4.1 keeps the handle, not the type: not there. */
    o->fresh = fresh && t_shim_loaded() &&
               (st == TY_V || rt == TY_V || kind == K_ALLTOALLW);
    o->req = o->handle = MPI_REQUEST_NULL;
    o->decoy = MPI_DATATYPE_NULL;
    /* Rooted: in place at the root only. */
    if (kind == K_GATHER || kind == K_GATHERV || kind == K_SCATTER ||
        kind == K_SCATTERV || kind == K_REDUCE) {
        o->ip = ip = ip && me == root;
    }
    if (red != NULL) {
        snprintf(o->name, sizeof(o->name), "%s_init %s %s x%d root %d%s",
                 kname[kind], cn, red->name, n, root, ip ? " in place" : "");
    } else {
        snprintf(o->name, sizeof(o->name),
                 "%s_init %s root %d %s->%s "
                 "x%d units%s%s",
                 kname[kind], cn, root, st == TY_V ? "vector" : "int",
                 rt == TY_V ? "vector" : "int", n, ip ? " in place" : "",
                 o->fresh ? " (type freed after init)" : "");
    }
    switch (kind) {
    case K_BARRIER: o->off = 1; break;
    case K_BCAST:
        o->rcount = n * ru;
        o->rlen = o->olen = (size_t)o->rcount * re;
        o->off = n > 0;
        break;
    case K_GATHER:
    case K_SCATTER:
        o->scount = n * su;
        o->rcount = n * ru;
        if (kind == K_GATHER) {
            o->slen = (size_t)o->scount * se;
            o->rlen = (size_t)o->rcount * re * (size_t)p;
            o->olen = me == root ? o->rlen : 0;
        } else {
            o->slen = (size_t)o->scount * se * (size_t)p;
            o->rlen = o->olen = (size_t)o->rcount * re;
        }
        o->off = n > 0;
        break;
    case K_GATHERV:
    case K_SCATTERV:
    case K_ALLGATHERV:
        /* The many side: counts and gapped displacements. */
        for (i = p - 1, rat = 1; i >= 0; i--) {
            int *c = kind == K_SCATTERV ? o->sc : o->rc;
            int *d = kind == K_SCATTERV ? o->sd : o->rd;

            c[i] = vcount(i, n) * (kind == K_SCATTERV ? su : ru);
            d[i] = rat;
            rat += c[i] + 2;
        }
        if (kind == K_ALLGATHERV && p == 1) {
            o->rd[0] = 0; /* MPICH 4.0 (header comment) */
        }
        if (kind == K_SCATTERV) {
            o->slen = (size_t)rat * se;
            o->rcount = vcount(me, n) * ru;
            o->rlen = o->olen = (size_t)o->rcount * re;
        } else {
            o->scount = vcount(me, n) * su;
            o->slen = (size_t)o->scount * se;
            o->rlen = (size_t)rat * re;
            o->olen = kind == K_GATHERV && me != root ? 0 : o->rlen;
        }
        if (kind == K_ALLGATHERV) {
            uint64_t tot = 0;

            for (i = 0; i < p; i++) {
                tot += (uint64_t)vcount(i, n) * UNIT * 4;
            }
            o->off = tot / (uint64_t)p >= 1; /* the mean block */
        } else {
            o->off = 1; /* any size */
        }
        break;
    case K_ALLGATHER:
    case K_ALLTOALL:
        o->scount = n * su;
        o->rcount = n * ru;
        o->slen =
            (size_t)o->scount * se * (kind == K_ALLTOALL ? (size_t)p : 1);
        o->rlen = o->olen = (size_t)o->rcount * re * (size_t)p;
        o->off = n > 0;
        break;
    case K_ALLTOALLV:
        for (i = p - 1; i >= 0; i--) {
            o->sc[i] = a2a_count(me, i, n) * su;
            o->rc[i] = (ip ? a2a_sym(i, me, n) : a2a_count(i, me, n)) * ru;
            o->sd[i] = sat;
            o->rd[i] = rat;
            sat += o->sc[i] + 1;
            rat += o->rc[i] + 2;
        }
        o->slen = (size_t)sat * se;
        o->rlen = o->olen = (size_t)rat * re;
        o->off = 1;
        break;
    case K_ALLTOALLW:
        /* Block to/from peer i: ints on one side, vectors on the other
         * (in place: the same kind at both ends); displacements in
         * bytes. */
        for (i = 0; i < p; i++) {
            int odd = (i + me) % 2;

            o->swt[i] = odd ? TY_I : TY_V;
            o->rwt[i] = ip ? o->swt[i] : (odd ? TY_V : TY_I);
            o->sc[i] = a2a_count(me, i, n) * UNIT / ty_ints(o->swt[i]);
            o->rc[i] = (ip ? a2a_sym(i, me, n) : a2a_count(i, me, n)) * UNIT /
                       ty_ints(o->rwt[i]);
            o->sd[i] = sat * 4;
            o->rd[i] = rat * 4;
            sat += o->sc[i] * (int)ty_ext(o->swt[i]) / 4 + 1;
            rat += o->rc[i] * (int)ty_ext(o->rwt[i]) / 4 + 3;
        }
        o->slen = (size_t)sat * 4;
        o->rlen = o->olen = (size_t)rat * 4;
        o->off = 1;
        break;
    default: { /* reductions */
        int    tot = n, out = n;
        size_t es = (size_t)red->esize;

        if (kind == K_RSB) {
            tot = n * p;
        } else if (kind == K_RS) {
            for (i = 0, tot = 0; i < p; i++) {
                o->rc[i] = (i + 1) % 3 * n;
                tot += o->rc[i];
            }
            out = o->rc[me];
        }
        o->scount = tot;
        o->rcount = out;
        o->slen = (size_t)tot * es;
        o->rlen = (size_t)(ip ? tot : out) * es;
        /* Significant: the root's result; none on rank 0 of exscan. */
        o->olen =
            (kind == K_REDUCE && me != root) || (kind == K_EXSCAN && me == 0)
                ? 0
                : (size_t)out * es;
        if (kind == K_RS) {
            o->off = red->off && (uint64_t)tot * es / (uint64_t)p >= 1;
        } else {
            o->off = red->off && n > 0;
        }
        break;
    }
    }
    o->sb = t_galloc(o->slen);
    o->rb = t_galloc(o->rlen);
    o->xs = t_xmalloc(o->slen);
    o->xr = t_xmalloc(o->rlen);
}

static int is_red(const pc_t *o)
{
    return o->kind >= K_REDUCE;
}

/* The persistent call's send buffer argument. */
static const void *pc_sarg(const pc_t *o)
{
    return o->ip ? MPI_IN_PLACE : o->sb;
}

/* The persistent init (dt: the vector type to give it). */
static int pc_init_call(pc_t *o, MPI_Datatype dt)
{
    MPI_Datatype s = o->st == TY_V ? dt : MPI_INT;
    MPI_Datatype r = o->rt == TY_V ? dt : MPI_INT;
    MPI_Datatype sw[MAXP], rw[MAXP];
    MPI_Info     in = MPI_INFO_NULL;
    MPI_Comm     c = o->comm;
    MPI_Request *q = &o->req;
    const red_t *d = o->red;
    int          ipr = o->ip; /* rooted: in place at the root only */

    switch (o->kind) {
    case K_BARRIER: return PINIT(Barrier)(c, in, q);
    case K_BCAST: return PINIT(Bcast)(o->rb, o->rcount, r, o->root, c, in, q);
    case K_GATHER:
        return PINIT(Gather)(ipr ? MPI_IN_PLACE : o->sb, o->scount, s, o->rb,
                             o->rcount, r, o->root, c, in, q);
    case K_GATHERV:
        return PINIT(Gatherv)(ipr ? MPI_IN_PLACE : o->sb, o->scount, s, o->rb,
                              o->rc, o->rd, r, o->root, c, in, q);
    case K_SCATTER:
        return PINIT(Scatter)(o->sb, o->scount, s, ipr ? MPI_IN_PLACE : o->rb,
                              o->rcount, r, o->root, c, in, q);
    case K_SCATTERV:
        return PINIT(Scatterv)(o->sb, o->sc, o->sd, s,
                               ipr ? MPI_IN_PLACE : o->rb, o->rcount, r,
                               o->root, c, in, q);
    case K_ALLGATHER:
        return PINIT(Allgather)(pc_sarg(o), o->scount, s, o->rb, o->rcount, r,
                                c, in, q);
    case K_ALLGATHERV:
        return PINIT(Allgatherv)(pc_sarg(o), o->scount, s, o->rb, o->rc, o->rd,
                                 r, c, in, q);
    case K_ALLTOALL:
        return PINIT(Alltoall)(pc_sarg(o), o->scount, s, o->rb, o->rcount, r,
                               c, in, q);
    case K_ALLTOALLV:
        return PINIT(Alltoallv)(pc_sarg(o), o->sc, o->sd, s, o->rb, o->rc,
                                o->rd, r, c, in, q);
    case K_ALLTOALLW:
        for (int i = 0; i < o->p; i++) {
            sw[i] = o->swt[i] == TY_V ? dt : MPI_INT;
            rw[i] = o->rwt[i] == TY_V ? dt : MPI_INT;
        }
        return PINIT(Alltoallw)(pc_sarg(o), o->sc, o->sd, sw, o->rb, o->rc,
                                o->rd, rw, c, in, q);
    case K_REDUCE:
        return PINIT(Reduce)(pc_sarg(o), o->rb, o->n, d->type, d->op, o->root,
                             c, in, q);
    case K_ALLREDUCE:
        return PINIT(Allreduce)(pc_sarg(o), o->rb, o->n, d->type, d->op, c, in,
                                q);
    case K_RS:
        return PINIT(Reduce_scatter)(pc_sarg(o), o->rb, o->rc, d->type, d->op,
                                     c, in, q);
    case K_RSB:
        return PINIT(Reduce_scatter_block)(pc_sarg(o), o->rb, o->n, d->type,
                                           d->op, c, in, q);
    case K_SCAN:
        return PINIT(Scan)(pc_sarg(o), o->rb, o->n, d->type, d->op, c, in, q);
    default:
        return PINIT(Exscan)(pc_sarg(o), o->rb, o->n, d->type, d->op, c, in,
                             q);
    }
}

/* Make the persistent request. A fresh vector type is made for it and
 * freed at once (the program may); another type is made then, which MPI
 * may give the freed handle: a request still using the handle would
 * move data of the wrong layout. */
static void pc_init(pc_t *o)
{
    MPI_Datatype dt = vec;

    if (o->fresh) {
        dt = vec_make();
    }
    T_MPI(pc_init_call(o, dt));
    if (o->fresh) {
        MPI_Type_free(&dt);
        MPI_Type_contiguous(5, MPI_SHORT, &o->decoy);
        MPI_Type_commit(&o->decoy);
    }
    o->handle = o->req;
    if (o->req == MPI_REQUEST_NULL) {
        t_fail("%s: the init gave MPI_REQUEST_NULL", o->name);
    }
}

/* The blocking stock call on the reference buffers. Reductions: never
 * in place (the inputs are in xs whatever the call does). */
static void pc_ref(pc_t *o)
{
    MPI_Datatype s = ty_of(o->st), r = ty_of(o->rt);
    MPI_Datatype sw[MAXP], rw[MAXP];
    MPI_Comm     c = o->comm;
    const red_t *d = o->red;
    int          ipr = o->ip, i;
    const void  *sa = o->ip ? MPI_IN_PLACE : o->xs;

    switch (o->kind) {
    case K_BARRIER: break;
    case K_BCAST: T_MPI(PMPI_Bcast(o->xr, o->rcount, r, o->root, c)); break;
    case K_GATHER:
        T_MPI(PMPI_Gather(ipr ? MPI_IN_PLACE : o->xs, o->scount, s, o->xr,
                          o->rcount, r, o->root, c));
        break;
    case K_GATHERV:
        T_MPI(PMPI_Gatherv(ipr ? MPI_IN_PLACE : o->xs, o->scount, s, o->xr,
                           o->rc, o->rd, r, o->root, c));
        break;
    case K_SCATTER:
        T_MPI(PMPI_Scatter(o->xs, o->scount, s, ipr ? MPI_IN_PLACE : o->xr,
                           o->rcount, r, o->root, c));
        break;
    case K_SCATTERV:
        T_MPI(PMPI_Scatterv(o->xs, o->sc, o->sd, s, ipr ? MPI_IN_PLACE : o->xr,
                            o->rcount, r, o->root, c));
        break;
    case K_ALLGATHER:
        T_MPI(PMPI_Allgather(sa, o->scount, s, o->xr, o->rcount, r, c));
        break;
    case K_ALLGATHERV:
        T_MPI(PMPI_Allgatherv(sa, o->scount, s, o->xr, o->rc, o->rd, r, c));
        break;
    case K_ALLTOALL:
        T_MPI(t_ref_alltoall(sa, o->scount, s, o->xr, o->rcount, r, c));
        break;
    case K_ALLTOALLV:
        T_MPI(PMPI_Alltoallv(sa, o->sc, o->sd, s, o->xr, o->rc, o->rd, r, c));
        break;
    case K_ALLTOALLW:
        for (i = 0; i < o->p; i++) {
            sw[i] = ty_of(o->swt[i]);
            rw[i] = ty_of(o->rwt[i]);
        }
        if (o->p > 1) {
            T_MPI(PMPI_Alltoallw(sa, o->sc, o->sd, sw, o->xr, o->rc, o->rd, rw,
                                 c));
        } else if (!o->ip) {
            /* Open MPI 4.1's one-rank Alltoallw (header comment); in
             * place, one rank's data stays where it is. */
            T_MPI(PMPI_Sendrecv(o->xs + o->sd[0], o->sc[0], sw[0], 0, 9,
                                o->xr + o->rd[0], o->rc[0], rw[0], 0, 9, c,
                                MPI_STATUS_IGNORE));
        }
        break;
    case K_REDUCE:
        T_MPI(PMPI_Reduce(o->xs, o->xr, o->n, d->type, d->op, o->root, c));
        break;
    case K_ALLREDUCE:
        T_MPI(PMPI_Allreduce(o->xs, o->xr, o->n, d->type, d->op, c));
        break;
    case K_RS:
        T_MPI(PMPI_Reduce_scatter(o->xs, o->xr, o->rc, d->type, d->op, c));
        break;
    case K_RSB:
        T_MPI(
            PMPI_Reduce_scatter_block(o->xs, o->xr, o->n, d->type, d->op, c));
        break;
    case K_SCAN:
        T_MPI(PMPI_Scan(o->xs, o->xr, o->n, d->type, d->op, c));
        break;
    default: T_MPI(PMPI_Exscan(o->xs, o->xr, o->n, d->type, d->op, c)); break;
    }
}

/* New contents for the next start (never seen before), and what stock
 * MPI makes of them. In place, the receive buffer holds the inputs. */
static void pc_fill(pc_t *o)
{
    uint32_t seed = t_seed();

    if (is_red(o)) {
        memset(o->sb, T_POISON, o->slen);
        memset(o->rb, T_POISON, o->rlen);
        red_fill(o->red, o->ip ? o->rb : o->sb, o->scount, o->me, seed);
        memcpy(o->xs, o->ip ? o->rb : o->sb, o->slen);
        memset(o->xr, T_POISON, o->rlen);
    } else {
        t_pat_fill(o->sb, o->slen, seed, o->me, 0);
        if (o->ip || (o->kind == K_BCAST && o->me == o->root)) {
            t_pat_fill(o->rb, o->rlen, seed, o->me, 1);
        } else {
            memset(o->rb, T_POISON, o->rlen);
        }
        memcpy(o->xs, o->sb, o->slen);
        memcpy(o->xr, o->rb, o->rlen);
    }
    pc_ref(o);
}

static void pcount(const pc_t *o)
{
    char w[64];

    snprintf(w, sizeof(w), "%s_init", kname[o->kind]);
    t_count(w, o->off);
}

static void pc_start(pc_t *o)
{
    T_MPI(MPI_Start(&o->req));
    pcount(o);
}

/* A persistent request completed: its handle is back, inactive. */
static void pc_done(pc_t *o, const char *call)
{
    if (o->req != o->handle) {
        t_fail("%s: after %s the request is %s, not the persistent "
               "request",
               o->name, call,
               o->req == MPI_REQUEST_NULL ? "MPI_REQUEST_NULL" : "another");
        o->req = o->handle;
    }
}

/* An inactive request (or null): every test says complete at once, with
 * an empty status. */
static void inactive_test(MPI_Request *r, const char *what)
{
    MPI_Status  s;
    MPI_Request before = *r;
    int         flag = 0;

    memset(&s, 0x11, sizeof(s));
    T_MPI(MPI_Test(r, &flag, &s));
    if (!flag || !t_status_empty(&s) || *r != before) {
        t_fail("%s: MPI_Test on an inactive request: flag %d, source %d, "
               "tag %d, handle %s",
               what, flag, s.MPI_SOURCE, s.MPI_TAG,
               *r == before ? "kept" : "changed");
    }
    flag = 0;
    memset(&s, 0x11, sizeof(s));
    T_MPI(MPI_Request_get_status(*r, &flag, &s));
    if (!flag || !t_status_empty(&s)) {
        t_fail("%s: MPI_Request_get_status on an inactive request: flag "
               "%d, source %d, tag %d",
               what, flag, s.MPI_SOURCE, s.MPI_TAG);
    }
    memset(&s, 0x11, sizeof(s));
    T_MPI(MPI_Wait(r, &s));
    if (!t_status_empty(&s) || *r != before) {
        t_fail("%s: MPI_Wait on an inactive request: source %d, tag %d, "
               "handle %s",
               what, s.MPI_SOURCE, s.MPI_TAG,
               *r == before ? "kept" : "changed");
    }
}

/* Completion calls, taken in turn by single starts. */
enum {
    H_WAIT,
    H_TEST,
    H_WAITALL,
    H_WAITANY,
    H_WAITSOME,
    H_TESTALL,
    H_TESTANY,
    H_TESTSOME,
    H_GETSTATUS,
    H_N
};
static const char *hname[H_N] = {
    "MPI_Wait",    "MPI_Test",     "MPI_Waitall",
    "MPI_Waitany", "MPI_Waitsome", "MPI_Testall",
    "MPI_Testany", "MPI_Testsome", "MPI_Request_get_status + MPI_Wait"};

static void pc_complete(pc_t *o, int how)
{
    MPI_Status s;
    int        flag = 0, idx = -5, cnt = -5;

    switch (how) {
    case H_WAIT: T_MPI(MPI_Wait(&o->req, &s)); break;
    case H_TEST:
        while (!flag && T_MPI(MPI_Test(&o->req, &flag, &s)) == MPI_SUCCESS) {
            poll_pause(flag);
        }
        break;
    case H_WAITALL: T_MPI(MPI_Waitall(1, &o->req, t_statuses_ignore)); break;
    case H_WAITANY:
        T_MPI(MPI_Waitany(1, &o->req, &idx, &s));
        flag = idx == 0;
        break;
    case H_WAITSOME:
        T_MPI(MPI_Waitsome(1, &o->req, &cnt, &idx, t_statuses_ignore));
        flag = cnt == 1 && idx == 0;
        break;
    case H_TESTALL:
        while (!flag && T_MPI(MPI_Testall(1, &o->req, &flag,
                                          t_statuses_ignore)) == MPI_SUCCESS) {
            poll_pause(flag);
        }
        break;
    case H_TESTANY:
        while (!flag && T_MPI(MPI_Testany(1, &o->req, &idx, &flag, &s)) ==
                            MPI_SUCCESS) {
            poll_pause(flag);
        }
        flag = idx == 0;
        break;
    case H_TESTSOME:
        while (T_MPI(MPI_Testsome(1, &o->req, &cnt, &idx,
                                  t_statuses_ignore)) == MPI_SUCCESS &&
               cnt == 0) {
            poll_pause(0);
        }
        flag = cnt == 1 && idx == 0;
        break;
    default:
        while (!flag && T_MPI(MPI_Request_get_status(o->req, &flag, &s)) ==
                            MPI_SUCCESS) {
            poll_pause(flag);
        }
        T_MPI(MPI_Wait(&o->req, &s));
        break;
    }
    if (how != H_WAIT && how != H_WAITALL && !flag) {
        t_fail("%s: %s did not report the request (index %d, count %d)",
               o->name, hname[how], idx, cnt);
    }
    pc_done(o, hname[how]);
}

/* The result against stock MPI's; send buffers unchanged; guards. */
static void pc_check(pc_t *o)
{
    char w[240];

    t_case("check %s", o->name);
    if (o->olen > 0) {
        snprintf(w, sizeof(w), "%s: result", o->name);
        t_same(w, o->rb, o->xr, o->olen);
    }
    if (!(is_red(o) && o->ip)) {
        snprintf(w, sizeof(w), "%s: send buffer unchanged", o->name);
        t_cmp(w, o->sb, o->xs, o->slen, "its contents before the start");
    }
    t_gcheck(o->name, o->sb, o->slen);
    t_gcheck(o->name, o->rb, o->rlen);
}

static void pc_free(pc_t *o)
{
    if (o->req != MPI_REQUEST_NULL) {
        T_MPI(MPI_Request_free(&o->req));
        if (o->req != MPI_REQUEST_NULL) {
            t_fail("%s: MPI_Request_free left the handle", o->name);
        }
    }
    if (o->decoy != MPI_DATATYPE_NULL) {
        MPI_Type_free(&o->decoy);
    }
    t_gfree(o->sb);
    t_gfree(o->rb);
    free(o->xs);
    free(o->xr);
}

/* Init, then rounds starts with new contents each, each completed by the
 * next completion call and checked; the inactive request then tested;
 * freed. */
static void pc_run(pc_t *o, int rounds)
{
    t_case("%s", o->name);
    pc_init(o);
    inactive_test(&o->req, o->name); /* never started */
    for (int r = 0; r < rounds; r++) {
        int how = how_next++ % H_N;

        t_case("%s, start %d, %s", o->name, r, hname[how]);
        pc_fill(o);
        pc_start(o);
        pc_complete(o, how);
        pc_check(o);
        inactive_test(&o->req, o->name);
    }
    pc_free(o);
}

/* ---- 1. every collective, every root, in place, derived types -------- */

static void one(int kind, MPI_Comm comm, const char *cn, int root, int n,
                int st, int rt, int ip, const red_t *red, int rounds)
{
    pc_t o;

    pc_make(&o, kind, comm, cn, root, n, st, rt, ip, red, 1);
    pc_run(&o, rounds);
}

/* Type pairs (send->receive side): int->int, vector->int, int->vector;
 * in place, the receive side's alone. Under the shim each vector type is
 * the init's own, freed right after it. */
static void movement(MPI_Comm comm, const char *cn, int n, int rounds)
{
    int              p, root, k, ip;
    static const int rooted[] = {K_GATHER, K_GATHERV, K_SCATTER, K_SCATTERV};
    static const int all[] = {K_ALLGATHER, K_ALLGATHERV, K_ALLTOALL,
                              K_ALLTOALLV};

    MPI_Comm_size(comm, &p);
    one(K_BARRIER, comm, cn, 0, 0, TY_I, TY_I, 0, NULL, rounds);
    for (root = 0; root < p; root++) {
        one(K_BCAST, comm, cn, root, n, TY_I, TY_I, 0, NULL, rounds);
        one(K_BCAST, comm, cn, root, n, TY_V, TY_V, 0, NULL, rounds);
        for (k = 0; k < 4; k++) {
            one(rooted[k], comm, cn, root, n, TY_I, TY_I, 0, NULL, rounds);
            one(rooted[k], comm, cn, root, n, TY_V, TY_I, 0, NULL, rounds);
            one(rooted[k], comm, cn, root, n, TY_I, TY_V, 1, NULL, rounds);
        }
    }
    for (k = 0; k < 4; k++) {
        for (ip = 0; ip < 2; ip++) {
            one(all[k], comm, cn, 0, n, TY_I, TY_I, ip, NULL, rounds);
        }
        one(all[k], comm, cn, 0, n, TY_V, TY_I, 0, NULL, rounds);
        one(all[k], comm, cn, 0, n, TY_I, TY_V, 0, NULL, rounds);
        one(all[k], comm, cn, 0, n, TY_V, TY_V, 1, NULL, rounds);
    }
    one(K_ALLTOALLW, comm, cn, 0, n, TY_I, TY_I, 0, NULL, rounds);
    one(K_ALLTOALLW, comm, cn, 0, n, TY_I, TY_I, 1, NULL, rounds);
}

static void reductions(MPI_Comm comm, const char *cn, int n, int rounds)
{
    int p, k, ri, ip, root;

    MPI_Comm_size(comm, &p);
    for (root = 0; root < p; root++) {
        for (ip = 0; ip < 2; ip++) {
            /* Every operation comes round, on two ranks too. */
            one(K_REDUCE, comm, cn, root, n, 0, 0, ip,
                &reds[(2 * root + ip) % R_N], rounds);
        }
    }
    for (k = K_ALLREDUCE; k <= K_EXSCAN; k++) {
        for (ri = 0; ri < R_N; ri++) {
            for (ip = 0; ip < 2; ip++) {
                one(k, comm, cn, 0, n, 0, 0, ip, &reds[ri], rounds);
            }
        }
    }
}

/* Zero counts: the regular collectives and reductions go to stock MPI,
 * the v and w variants and barrier still offload. */
static void zeros(MPI_Comm comm, const char *cn)
{
    for (int k = K_BCAST; k < K_REDUCE; k++) {
        one(k, comm, cn, 0, 0, TY_I, TY_I, 0, NULL, 1);
    }
    for (int k = K_REDUCE; k < K_N; k++) {
        one(k, comm, cn, 0, 0, 0, 0, 0, &reds[R_ISUM], 1);
    }
}

/* 64 KiB to 1 MiB: blocks of 2730 units (65520 bytes), bcast and
 * allreduce 1 MiB, the last rank as the root. */
static void large(MPI_Comm comm, const char *cn)
{
    const int blk = 2730, mib = 43690;
    int       p, k;

    MPI_Comm_size(comm, &p);
    one(K_BCAST, comm, cn, p - 1, mib, TY_I, TY_I, 0, NULL, 2);
    for (k = K_GATHER; k <= K_ALLTOALLW; k++) {
        one(k, comm, cn, p - 1,
            k == K_GATHERV || k == K_SCATTERV || k == K_ALLGATHERV ? blk / 2
                                                                   : blk,
            TY_I, TY_I, 0, NULL, 2);
    }
    one(K_ALLTOALL, comm, cn, 0, blk, TY_V, TY_I, 0, NULL, 2);
    one(K_ALLGATHER, comm, cn, 0, blk, TY_I, TY_V, 0, NULL, 2);
    one(K_ALLTOALL, comm, cn, 0, blk, TY_I, TY_I, 1, NULL, 2);
    one(K_REDUCE, comm, cn, p - 1, 65536, 0, 0, 0, &reds[R_DSUM], 2);
    one(K_ALLREDUCE, comm, cn, 0, 262144, 0, 0, 0, &reds[R_ISUM], 2);
    one(K_ALLREDUCE, comm, cn, 0, 65536, 0, 0, 1, &reds[R_MINLOC], 2);
    one(K_RS, comm, cn, 0, 16384, 0, 0, 0, &reds[R_ISUM], 2);
    one(K_RSB, comm, cn, 0, 16384, 0, 0, 1, &reds[R_DSUM], 2);
    one(K_SCAN, comm, cn, 0, 16384, 0, 0, 0, &reds[R_ISUM], 2);
    one(K_EXSCAN, comm, cn, 0, 8192, 0, 0, 1, &reds[R_DSUM], 2);
}

/* ---- 2. one request restarted many times ----------------------------- */

#define A2A_INTS 16 /* ints per alltoall block */
#define RED_INTS 64

static int a2a_val(int it, int from, int to, int k)
{
    return (int)(t_mix64(((uint64_t)it << 32) ^ ((uint64_t)from << 20) ^
                         ((uint64_t)to << 8) ^ (uint64_t)k) >>
                 33);
}

static int red_val(int it, int r, int k)
{
    return (int)(t_mix64(((uint64_t)it << 24) ^ ((uint64_t)r << 12) ^
                         (uint64_t)k) %
                 2001) -
           1000;
}

/* An alltoall and an allreduce, restarted iters times with the send
 * buffers rewritten (the iteration mixed in) and the receive buffers
 * poisoned before each start; every result checked against the computed
 * one. Both are outstanding together in every round (one round trip to
 * the agents); starts and completions take turns among the calls. */
static void restart(int iters)
{
    int         p = t.size, me = t.rank, it, i, k, bad;
    size_t      alen = sizeof(int) * A2A_INTS * (size_t)p;
    size_t      rlen = sizeof(int) * RED_INTS;
    int        *sa = t_galloc(alen), *ra = t_galloc(alen);
    int        *sr = t_galloc(rlen), *rr = t_galloc(rlen);
    MPI_Request q[2], h[2];
    MPI_Status  s;
    int         flag, idx;

    t_case("restart: init");
    T_MPI(PINIT(Alltoall)(sa, A2A_INTS, MPI_INT, ra, A2A_INTS, MPI_INT,
                          MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]));
    T_MPI(PINIT(Allreduce)(sr, rr, RED_INTS, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                           MPI_INFO_NULL, &q[1]));
    h[0] = q[0];
    h[1] = q[1];
    for (it = 0; it < iters; it++) {
        int how = it % 5;

        t_case("restart %d of %d (way %d)", it, iters, how);
        for (i = 0; i < p; i++) {
            for (k = 0; k < A2A_INTS; k++) {
                sa[i * A2A_INTS + k] = a2a_val(it, me, i, k);
            }
        }
        for (k = 0; k < RED_INTS; k++) {
            sr[k] = red_val(it, me, k);
        }
        memset(ra, T_POISON, alen);
        memset(rr, T_POISON, rlen);
        switch (how) {
        case 0:
            T_MPI(MPI_Startall(2, q));
            T_MPI(MPI_Waitall(2, q, t_statuses_ignore));
            break;
        case 1:
            T_MPI(MPI_Start(&q[0]));
            T_MPI(MPI_Start(&q[1]));
            T_MPI(MPI_Wait(&q[1], &s));
            T_MPI(MPI_Wait(&q[0], &s));
            break;
        case 2:
            T_MPI(MPI_Start(&q[1]));
            T_MPI(MPI_Start(&q[0]));
            for (i = 1; i >= 0; i--) {
                flag = 0;
                while (!flag &&
                       T_MPI(MPI_Test(&q[i], &flag, &s)) == MPI_SUCCESS) {
                    poll_pause(flag);
                }
            }
            break;
        case 3:
            T_MPI(MPI_Startall(2, q));
            for (i = 0; i < 3; i++) {
                T_MPI(MPI_Waitany(2, q, &idx, &s));
                if ((idx == MPI_UNDEFINED) != (i == 2)) {
                    t_fail("restart %d: MPI_Waitany call %d gave index %d", it,
                           i, idx);
                }
            }
            break;
        default:
            T_MPI(MPI_Startall(2, q));
            flag = 0;
            while (!flag &&
                   T_MPI(MPI_Testall(2, q, &flag, t_statuses_ignore)) ==
                       MPI_SUCCESS) {
                poll_pause(flag);
            }
            break;
        }
        t_count("alltoall_init", 1);
        t_count("allreduce_init", 1);
        if (q[0] != h[0] || q[1] != h[1]) {
            t_fail("restart %d: the persistent requests changed", it);
            q[0] = h[0];
            q[1] = h[1];
        }
        for (i = 0, bad = 0; i < p; i++) {
            for (k = 0; k < A2A_INTS; k++) {
                int want = a2a_val(it, i, me, k);

                if (ra[i * A2A_INTS + k] != want && bad++ == 0) {
                    t_fail("restart %d: alltoall block from rank %d, int "
                           "%d: %d, expected %d",
                           it, i, k, ra[i * A2A_INTS + k], want);
                }
            }
        }
        for (k = 0, bad = 0; k < RED_INTS; k++) {
            int want = 0;

            for (i = 0; i < p; i++) {
                want += red_val(it, i, k);
            }
            if (rr[k] != want && bad++ == 0) {
                t_fail("restart %d: allreduce int %d: %d, expected %d", it, k,
                       rr[k], want);
            }
        }
        for (k = 0, bad = 0; k < RED_INTS; k++) {
            if (sr[k] != red_val(it, me, k) && bad++ == 0) {
                t_fail("restart %d: allreduce send buffer changed", it);
            }
        }
    }
    t_gcheck("restart alltoall send", sa, alen);
    t_gcheck("restart alltoall recv", ra, alen);
    t_gcheck("restart allreduce send", sr, rlen);
    t_gcheck("restart allreduce recv", rr, rlen);
    T_MPI(MPI_Request_free(&q[0]));
    T_MPI(MPI_Request_free(&q[1]));
    t_gfree(sa);
    t_gfree(ra);
    t_gfree(sr);
    t_gfree(rr);
}

/* ---- 3. with stock persistent requests, every completion call -------- */

#define NMIX   7  /* requests in the array */
#define NSTART 6  /* the started ones (the last slot stays null) */
#define MSG    64 /* ints of the point-to-point message */
#define TAG    11

enum { S_A2A, S_RECV, S_SEND, S_ARED, S_BCAST, S_USER, S_NULL };

/* All of r is inactive or null: every completion call returns at once,
 * reporting nothing, with empty statuses; the handles stay. */
static void inactive_all(MPI_Request *r, const MPI_Request *h,
                         const char *what)
{
    MPI_Status st[NMIX], s;
    int        i, idx = -5, cnt = -5, flag = 0, ids[NMIX];

    for (i = 0; i < NMIX; i++) {
        memset(&st[i], 0x11, sizeof(st[i]));
    }
    T_MPI(MPI_Waitall(NMIX, r, st));
    for (i = 0; i < NMIX; i++) {
        if (!t_status_empty(&st[i])) {
            t_fail("%s: MPI_Waitall on inactive requests: status %d not "
                   "empty (source %d, tag %d)",
                   what, i, st[i].MPI_SOURCE, st[i].MPI_TAG);
        }
    }
    T_MPI(MPI_Testall(NMIX, r, &flag, t_statuses_ignore));
    if (!flag) {
        t_fail("%s: MPI_Testall on inactive requests: flag 0", what);
    }
    memset(&s, 0x11, sizeof(s));
    T_MPI(MPI_Waitany(NMIX, r, &idx, &s));
    if (idx != MPI_UNDEFINED || !t_status_empty(&s)) {
        t_fail("%s: MPI_Waitany on inactive requests: index %d, source "
               "%d, tag %d",
               what, idx, s.MPI_SOURCE, s.MPI_TAG);
    }
    flag = 0;
    idx = -5;
    T_MPI(MPI_Testany(NMIX, r, &idx, &flag, &s));
    if (!flag || idx != MPI_UNDEFINED) {
        t_fail("%s: MPI_Testany on inactive requests: flag %d, index %d", what,
               flag, idx);
    }
    T_MPI(MPI_Waitsome(NMIX, r, &cnt, ids, t_statuses_ignore));
    if (cnt != MPI_UNDEFINED) {
        t_fail("%s: MPI_Waitsome on inactive requests: %d", what, cnt);
    }
    cnt = -5;
    T_MPI(MPI_Testsome(NMIX, r, &cnt, ids, t_statuses_ignore));
    if (cnt != MPI_UNDEFINED) {
        t_fail("%s: MPI_Testsome on inactive requests: %d", what, cnt);
    }
    for (i = 0; i < NMIX; i++) {
        inactive_test(&r[i], what);
        if (r[i] != h[i]) {
            t_fail("%s: request %d changed by the completion calls", what, i);
            r[i] = h[i];
        }
    }
}

/* Slot i was reported complete by call (once only). */
static void mix_done(int i, int *done, const MPI_Status *s, const char *call,
                     int left)
{
    int n = -1;

    if (i < 0 || i >= NSTART) {
        t_fail("%s reported request %d, which was not started", call, i);
        return;
    }
    if (done[i]++) {
        t_fail("%s reported request %d a second time", call, i);
    }
    if (i == S_RECV && s != NULL) {
        MPI_Get_count(s, MPI_INT, &n);
        if (s->MPI_SOURCE != left || s->MPI_TAG != TAG || n != MSG) {
            t_fail("%s: receive status: source %d, tag %d, count %d; "
                   "expected %d, %d, %d",
                   call, s->MPI_SOURCE, s->MPI_TAG, n, left, TAG, MSG);
        }
    }
}

/* Complete the NSTART started requests of r with call how. */
static void mix_complete(MPI_Request *r, int how, int left)
{
    MPI_Status st[NMIX], s;
    int        done[NMIX] = {0}, i, idx, cnt, flag, ids[NMIX], left_n = NSTART;
    const char *call = hname[how];

    switch (how) {
    case H_WAIT:
        for (i = NSTART - 1; i >= 0; i--) { /* last started first */
            T_MPI(MPI_Wait(&r[i], &s));
            mix_done(i, done, &s, call, left);
        }
        break;
    case H_WAITALL:
        T_MPI(MPI_Waitall(NMIX, r, st));
        for (i = 0; i < NSTART; i++) {
            mix_done(i, done, &st[i], call, left);
        }
        break;
    case H_TESTALL:
        flag = 0;
        while (!flag &&
               T_MPI(MPI_Testall(NMIX, r, &flag, st)) == MPI_SUCCESS) {
            poll_pause(flag);
        }
        for (i = 0; i < NSTART; i++) {
            mix_done(i, done, &st[i], call, left);
        }
        break;
    case H_WAITANY:
    case H_TESTANY:
        while (left_n >= 0) {
            flag = 1;
            idx = -5;
            if (how == H_WAITANY) {
                T_MPI(MPI_Waitany(NMIX, r, &idx, &s));
            } else if (T_MPI(MPI_Testany(NMIX, r, &idx, &flag, &s)) !=
                       MPI_SUCCESS) {
                break;
            }
            if (!flag) {
                poll_pause(0);
                continue;
            }
            if (idx == MPI_UNDEFINED) {
                if (left_n > 0) {
                    t_fail("%s: MPI_UNDEFINED with %d requests active", call,
                           left_n);
                }
                break;
            }
            mix_done(idx, done, &s, call, left);
            left_n--;
        }
        break;
    case H_WAITSOME:
    case H_TESTSOME:
        for (;;) {
            cnt = -5;
            if (how == H_WAITSOME) {
                T_MPI(MPI_Waitsome(NMIX, r, &cnt, ids, st));
            } else {
                T_MPI(MPI_Testsome(NMIX, r, &cnt, ids, st));
            }
            if (cnt == MPI_UNDEFINED || cnt < 0) {
                break;
            }
            for (i = 0; i < cnt; i++) {
                mix_done(ids[i], done, &st[i], call, left);
                left_n--;
            }
            poll_pause(cnt > 0);
        }
        if (cnt != MPI_UNDEFINED || left_n != 0) {
            t_fail("%s: ended with %d and %d requests not reported", call, cnt,
                   left_n);
        }
        break;
    case H_TEST:
        while (left_n > 0) {
            for (i = 0; i < NSTART; i++) {
                if (done[i]) {
                    continue;
                }
                flag = 0;
                T_MPI(MPI_Test(&r[i], &flag, &s));
                if (flag) {
                    mix_done(i, done, &s, call, left);
                    left_n--;
                }
            }
            poll_pause(left_n == 0);
        }
        break;
    default: /* get_status, then the wait that makes it inactive */
        while (left_n > 0) {
            for (i = 0; i < NSTART; i++) {
                if (done[i]) {
                    continue;
                }
                flag = 0;
                T_MPI(MPI_Request_get_status(r[i], &flag, &s));
                if (flag) {
                    mix_done(i, done, &s, "MPI_Request_get_status", left);
                    T_MPI(MPI_Wait(&r[i], &s));
                    if (i == S_RECV) {
                        done[i] = 0;
                        mix_done(i, done, &s, "MPI_Wait after it", left);
                    }
                    left_n--;
                }
            }
            poll_pause(left_n == 0);
        }
        break;
    }
    for (i = 0; i < NSTART; i++) {
        if (done[i] != 1) {
            t_fail("%s: request %d reported %d times", call, i, done[i]);
        }
    }
}

/* Our persistent alltoall, a stock receive and send with the ring
 * neighbours, our allreduce and bcast, an allreduce with a user operation
 * (its work is stock MPI's request), in one MPI_Startall; completed by
 * each call in turn, reps times each. */
static void mix(int reps)
{
    pc_t        a, ar, bc, us;
    MPI_Request r[NMIX], h[NMIX];
    int         out[MSG], in[MSG], me = t.rank, p = t.size, how, rep, i;
    int         right = (me + 1) % p, left = (me + p - 1) % p;

    t_case("mix: init");
    pc_make(&a, K_ALLTOALL, MPI_COMM_WORLD, "world (mixed)", 0, 2, TY_V, TY_I,
            0, NULL, 1);
    pc_make(&ar, K_ALLREDUCE, MPI_COMM_WORLD, "world (mixed)", 0, 33, 0, 0, 0,
            &reds[R_ISUM], 0);
    pc_make(&bc, K_BCAST, MPI_COMM_WORLD, "world (mixed)", p - 1, 3, TY_I,
            TY_I, 0, NULL, 0);
    pc_make(&us, K_ALLREDUCE, MPI_COMM_WORLD, "world (mixed)", 0, 9, 0, 0, 1,
            &reds[R_USER], 0);
    pc_init(&a);
    T_MPI(MPI_Recv_init(in, MSG, MPI_INT, left, TAG, MPI_COMM_WORLD,
                        &r[S_RECV]));
    T_MPI(MPI_Send_init(out, MSG, MPI_INT, right, TAG, MPI_COMM_WORLD,
                        &r[S_SEND]));
    pc_init(&ar);
    pc_init(&bc);
    pc_init(&us);
    r[S_A2A] = a.req;
    r[S_ARED] = ar.req;
    r[S_BCAST] = bc.req;
    r[S_USER] = us.req;
    r[S_NULL] = MPI_REQUEST_NULL;
    memcpy(h, r, sizeof(h));
    inactive_all(r, h, "mix, before any start");
    for (how = 0; how < H_N; how++) {
        for (rep = 0; rep < reps; rep++) {
            t_case("mix: MPI_Startall, %s, %d", hname[how], rep);
            pc_fill(&a);
            pc_fill(&ar);
            pc_fill(&bc);
            pc_fill(&us);
            for (i = 0; i < MSG; i++) {
                out[i] = me * 100000 + how * 1000 + rep * 100 + i;
                in[i] = -1;
            }
            T_MPI(MPI_Startall(NSTART, r));
            pcount(&a);
            pcount(&ar);
            pcount(&bc);
            pcount(&us);
            mix_complete(r, how, left);
            for (i = 0; i < NMIX; i++) {
                if (r[i] != h[i]) {
                    t_fail("mix, %s: request %d is not its handle after "
                           "completion",
                           hname[how], i);
                    r[i] = h[i];
                }
            }
            pc_check(&a);
            pc_check(&ar);
            pc_check(&bc);
            pc_check(&us);
            for (i = 0; i < MSG; i++) {
                int want = left * 100000 + how * 1000 + rep * 100 + i;

                if (in[i] != want) {
                    t_fail("mix, %s: message from rank %d, int %d: %d, "
                           "expected %d",
                           hname[how], left, i, in[i], want);
                    break;
                }
            }
            t_case("mix: inactive, after %s, %d", hname[how], rep);
            inactive_all(r, h, hname[how]);
        }
    }
    t_case("mix: free");
    T_MPI(MPI_Request_free(&r[S_RECV]));
    T_MPI(MPI_Request_free(&r[S_SEND]));
    pc_free(&a);
    pc_free(&ar);
    pc_free(&bc);
    pc_free(&us);
}

/* ---- 4. freed and made again ----------------------------------------- */

/* Point-to-point persistent requests made after a persistent collective
 * was freed (MPI may give them its handle): they must run as stock MPI's. */
static void p2p_after_free(const char *what)
{
    MPI_Request r[2];
    int         out[MSG], in[MSG], me = t.rank, p = t.size, i;
    int         right = (me + 1) % p, left = (me + p - 1) % p;

    for (i = 0; i < MSG; i++) {
        out[i] = me * 1000 + i;
        in[i] = -1;
    }
    T_MPI(MPI_Send_init(out, MSG, MPI_INT, right, TAG + 1, MPI_COMM_WORLD,
                        &r[0]));
    T_MPI(
        MPI_Recv_init(in, MSG, MPI_INT, left, TAG + 1, MPI_COMM_WORLD, &r[1]));
    T_MPI(MPI_Startall(2, r));
    T_MPI(MPI_Waitall(2, r, t_statuses_ignore));
    for (i = 0; i < MSG; i++) {
        if (in[i] != left * 1000 + i) {
            t_fail("%s: message from rank %d, int %d: %d", what, left, i,
                   in[i]);
            break;
        }
    }
    T_MPI(MPI_Request_free(&r[0]));
    T_MPI(MPI_Request_free(&r[1]));
    if (r[0] != MPI_REQUEST_NULL || r[1] != MPI_REQUEST_NULL) {
        t_fail("%s: MPI_Request_free left a handle", what);
    }
}

static void reuse(MPI_Comm half, const char *hn)
{
    pc_t        o, x;
    MPI_Request old;
    int         i, same = 0;

    /* Freed without ever being started. */
    t_case("free: never started");
    pc_make(&o, K_ALLTOALL, MPI_COMM_WORLD, "world", 0, 1, TY_I, TY_I, 0, NULL,
            0);
    pc_init(&o);
    pc_free(&o);
    p2p_after_free("free: never started, then MPI_Send_init");
    /* Made, run and freed again and again: the handles come back. */
    old = MPI_REQUEST_NULL;
    for (i = 0; i < 24; i++) {
        int kind = i % 3 == 0   ? K_ALLTOALL
                   : i % 3 == 1 ? K_ALLREDUCE
                                : K_BCAST;

        pc_make(&o, kind, i % 2 ? half : MPI_COMM_WORLD, i % 2 ? hn : "world",
                0, 1 + i % 4, TY_I, TY_I, 0,
                kind == K_ALLREDUCE ? &reds[R_ISUM] : NULL, 0);
        pc_run(&o, 1);
        same += o.handle == old;
        old = o.handle;
        if (i % 8 == 7) {
            t_case("free: stock persistent requests after %d", i);
            p2p_after_free("free, then MPI_Send_init");
        }
    }
    if (t.verbose && t.rank == 0) {
        printf("note: %d of 23 persistent requests got the handle of the "
               "one freed before\n",
               same);
    }
    /* An inactive one freed while another is active on the same
     * communicator; the active one completes, and a new one works. */
    t_case("free: one inactive, another active");
    pc_make(&o, K_ALLTOALL, MPI_COMM_WORLD, "world", 0, 2, TY_I, TY_I, 0, NULL,
            0);
    pc_make(&x, K_ALLGATHER, MPI_COMM_WORLD, "world", 0, 2, TY_I, TY_I, 0,
            NULL, 0);
    pc_init(&o);
    pc_init(&x);
    pc_fill(&o);
    pc_start(&o);
    pc_free(&x);
    pc_complete(&o, H_WAIT);
    pc_check(&o);
    pc_make(&x, K_ALLGATHER, MPI_COMM_WORLD, "world", 0, 2, TY_I, TY_I, 0,
            NULL, 0);
    pc_init(&x);
    pc_fill(&o);
    pc_fill(&x);
    pc_start(&x);
    pc_start(&o);
    pc_complete(&o, H_WAIT);
    pc_complete(&x, H_WAIT);
    pc_check(&o);
    pc_check(&x);
    pc_free(&o);
    pc_free(&x);
}

/* ---- 5. several outstanding together on one communicator ------------- */

/* One seed counter on every rank: t_op_t's expected pattern is made
 * with the other ranks' seeds, and the halves of an odd world ran
 * different numbers of cases. */
static void seed_sync(void)
{
    uint32_t s = t.seed;

    T_MPI(
        PMPI_Allreduce(&s, &t.seed, 1, MPI_UINT32_T, MPI_MAX, MPI_COMM_WORLD));
}

/* Two alltoalls, an allreduce, a bcast (persistent) and an Ialltoall, all
 * on comm, started in the same order everywhere and completed in other
 * orders (the ranks' own in some rounds). */
static void together(MPI_Comm comm, const char *cn, int reps)
{
    pc_t        o[4];
    t_op_t      io;
    MPI_Request r[5], w[5];
    int         p, me, rep, i, k, order[5], cnt, ids[5];

    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    t_case("together on %s: init", cn);
    pc_make(&o[0], K_ALLTOALL, comm, cn, 0, 3, TY_I, TY_I, 0, NULL, 0);
    pc_make(&o[1], K_ALLTOALL, comm, cn, 0, 2, TY_V, TY_I, 0, NULL, 1);
    pc_make(&o[2], K_ALLREDUCE, comm, cn, 0, 100, 0, 0, 0, &reds[R_DSUM], 0);
    pc_make(&o[3], K_BCAST, comm, cn, p - 1, 5, TY_I, TY_I, 0, NULL, 0);
    for (i = 0; i < 4; i++) {
        pc_init(&o[i]);
    }
    for (rep = 0; rep < reps; rep++) {
        t_case("together on %s: round %d", cn, rep);
        for (i = 0; i < 4; i++) {
            pc_fill(&o[i]);
        }
        t_op_init(&io, T_A2A, comm, MPI_INT, 8 + rep, NULL, 0, 0,
                  "Ialltoall among persistent ones on %s, round %d", cn, rep);
        pc_start(&o[0]);
        pc_start(&o[2]);
        t_op_post(&io, NULL);
        pc_start(&o[1]);
        pc_start(&o[3]);
        r[0] = o[0].req;
        r[1] = o[1].req;
        r[2] = o[2].req;
        r[3] = o[3].req;
        r[4] = io.req;
        switch (rep % 3) {
        case 0: /* all at once, the last started first */
            for (i = 0; i < 5; i++) {
                w[i] = r[4 - i];
            }
            T_MPI(MPI_Waitall(5, w, t_statuses_ignore));
            for (i = 0; i < 5; i++) {
                r[4 - i] = w[i];
            }
            io.req = r[4];
            break;
        case 1: /* one by one, each rank its own order */
            for (i = 0; i < 5; i++) {
                order[i] = (i + me + rep) % 5;
            }
            for (i = 0; i < 5; i++) {
                T_MPI(MPI_Wait(&r[order[i]], MPI_STATUS_IGNORE));
            }
            io.req = r[4];
            break;
        default:
            for (k = 0; k < 5;) {
                T_MPI(MPI_Waitsome(5, r, &cnt, ids, t_statuses_ignore));
                if (cnt == MPI_UNDEFINED || cnt <= 0) {
                    t_fail("together: MPI_Waitsome gave %d with %d left", cnt,
                           5 - k);
                    break;
                }
                k += cnt;
            }
            io.req = r[4];
            break;
        }
        if (io.req != MPI_REQUEST_NULL) {
            t_fail("together on %s: the Ialltoall's request not freed", cn);
        }
        for (i = 0; i < 4; i++) {
            if (r[i] != o[i].handle) {
                t_fail("together on %s: persistent request %d lost", cn, i);
            }
            pc_check(&o[i]);
        }
        t_op_check(&io);
        t_op_free(&io);
    }
    for (i = 0; i < 4; i++) {
        pc_free(&o[i]);
    }
}

/* Stock MPICH 4.0's persistent collectives (header comment)? */
static int stock_mpich40(void)
{
#if defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40100000
    return !t_shim_loaded();
#else
    return 0;
#endif
}

int main(int argc, char **argv)
{
    MPI_Comm rev, half;
    char     hn[40];

    t_init(&argc, &argv, "t_persist");
    if (stock_mpich40()) {
        if (t.rank == 0) {
            printf("note: stock MPICH 4.0's persistent collectives are "
                   "wrong (see t_persist.c): nothing to test\n");
        }
        return t_finish();
    }
    vec = vec_make();
    reds_make();
    MPI_Comm_split(MPI_COMM_WORLD, 0, t.size - t.rank, &rev);
    MPI_Comm_split(MPI_COMM_WORLD, t.rank % 2, t.rank, &half);
    snprintf(hn, sizeof(hn), "half %d", t.rank % 2);

    movement(MPI_COMM_WORLD, "world", 3, 2);
    movement(rev, "reversed", 2, 2);
    movement(half, hn, 1, 2);
    reductions(MPI_COMM_WORLD, "world", 7, 2);
    reductions(rev, "reversed", 5, 2);
    reductions(half, hn, 3, 2);
    zeros(MPI_COMM_WORLD, "world");
    large(MPI_COMM_WORLD, "world");
    restart(RESTARTS);
    mix(2);
    reuse(half, hn);
    seed_sync();
    together(MPI_COMM_WORLD, "world", 6);
    together(half, hn, 3);

    MPI_Comm_free(&rev);
    MPI_Comm_free(&half);
    MPI_Op_free(&user_sum);
    MPI_Type_free(&vec);
    return t_finish();
}

#else /* !HAVE_PERS */

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "t_persist");
    if (t.rank == 0) {
        printf("note: this MPI has no persistent collectives: nothing to "
               "test\n");
    }
    return t_finish();
}

#endif
