/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pattern groups (include/dpushim.h) as a program uses them: built with
 * the header alone (no -ldpushim), run under the shim, where groups are
 * offloaded, and on stock MPI, where dpushim_group_begin says
 * DPUSHIM_ERR_OFF and the same transfers go by MPI_Isend / MPI_Irecv
 * (MPI_Send_init / MPI_Recv_init when persistent): the data checks run
 * either way.
 *
 * A case is a list of messages (source, destination, tag, size, layout
 * on either side) that every rank of the communicator builds alike. Each
 * rank adds its own sends and receives in the order the case chooses
 * (any order the pairing rule allows: per peer and tag, message order),
 * ends the group, completes it and checks every byte: received data is
 * the pattern of its message, gaps of derived datatypes and receives
 * from MPI_PROC_NULL are still poisoned, guard zones are intact, send
 * buffers are unchanged.
 *
 * Cases: ring shifts from 0 ints to 8 MiB, both ways, every pair, empty
 * groups on some ranks; repeated messages on one tag and tags added in
 * other orders on the two sides; the rank itself and MPI_PROC_NULL as
 * peers; buffers at both ends of a 64 MiB allocation, interleaved in
 * one, one send buffer for several messages (whole or overlapping
 * parts); vector, indexed, negative-displacement and MPI_BOTTOM struct
 * layouts on either side (the types freed once the group is ended); a
 * persistent group restarted 1000 times with new contents, persistent
 * groups in MPI_Startall with MPI_Send_init / MPI_Recv_init requests;
 * reversed, split, dup'ed and self communicators; many messages in a
 * group, many groups outstanding, groups between offloaded collectives
 * on the same communicators; argument errors; under the shim, receives
 * that do not match their sends in size (an error on every rank).
 *
 * Not for DPUSHIM_TRANSPORT=ucx: a blocking MPI_Barrier while groups are
 * pending is what that test mode cannot serve (docs/limits.md).
 */
#include "tcommon.h"
#include "../../include/dpushim.h"

#define MAXMSG   4096 /* messages of one case (every pair: 1.5 n^2) */
#define PERS_N   1000 /* restarts of the persistent group */
#define MIX_N    100  /* MPI_Startall rounds with stock requests */
#define BIG      ((size_t)64 << 20)
#define MIB_INTS (1 << 18)

/* ---- layouts: how one side of a message lies in memory -------------- */

enum { L_CONTIG, L_VEC, L_VECBIG, L_IDX, L_BOTTOM, L_NEG };

static const char *lay_name[] = {"contiguous",
                                 "vector",
                                 "vector of 4 KiB "
                                 "runs",
                                 "indexed",
                                 "MPI_BOTTOM struct",
                                 "hindexed reaching below the buffer"};

/*
 * m ints as a datatype: the data bytes are blocks, listed in type map
 * order, of one or two guarded regions (two for the struct of absolute
 * addresses, from two separate allocations). exp holds what each region
 * must contain.
 */
typedef struct {
    MPI_Datatype type;
    int          derived; /* type is ours to free */
    int          count;
    void        *addr; /* the buffer argument */
    int          nreg;
    char        *buf[2];
    char        *exp[2];
    size_t       len[2];
    int          placed; /* buf[0] lies in memory the case gave */
    int          nb, cap;
    int         *breg;
    size_t      *boff, *blen;
} lay_t;

static void lay_blk(lay_t *l, int reg, size_t off, size_t len)
{
    if (l->nb == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 8;
        l->breg = realloc(l->breg, sizeof(int) * (size_t)l->cap);
        l->boff = realloc(l->boff, sizeof(size_t) * (size_t)l->cap);
        l->blen = realloc(l->blen, sizeof(size_t) * (size_t)l->cap);
        if (l->breg == NULL || l->boff == NULL || l->blen == NULL) {
            fprintf(stderr, "rank %d: out of memory\n", t.rank);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    l->breg[l->nb] = reg;
    l->boff[l->nb] = off;
    l->blen[l->nb] = len;
    l->nb++;
}

/* A guarded region of len bytes: from t_galloc, or at `at` (which has
 * len + 2 * T_GUARD bytes) inside memory the case manages. */
static char *lay_region(lay_t *l, int r, size_t len, char *at)
{
    char *p;

    if (at == NULL) {
        p = t_galloc(len);
    } else {
        memset(at, T_GUARD_BYTE, T_GUARD);
        p = at + T_GUARD;
        memset(p, T_POISON, len);
        memset(p + len, T_GUARD_BYTE, T_GUARD);
        l->placed = 1;
    }
    l->buf[r] = p;
    l->exp[r] = t_xmalloc(len);
    l->len[r] = len;
    memset(l->exp[r], T_POISON, len);
    return p;
}

static void lay_commit(lay_t *l, MPI_Datatype t)
{
    MPI_Type_commit(&t);
    l->type = t;
    l->derived = 1;
    l->count = 1;
}

static void lay_make(lay_t *l, int kind, int m, char *at)
{
    static const int cyc[] = {3, 1, 4, 1, 5, 9, 2, 6};
    size_t           b = (size_t)m * 4;

    memset(l, 0, sizeof(*l));
    l->type = MPI_INT;
    l->count = m;
    l->nreg = 1;
    /* A case asking for a layout its size cannot have is a test bug. */
    if ((kind == L_VEC && m % 2 != 0) || (kind == L_VECBIG && m % 2048 != 0) ||
        (kind == L_BOTTOM && m < 2) || (kind == L_NEG && m < 3) ||
        (kind != L_CONTIG && m == 0) || (kind != L_CONTIG && at != NULL)) {
        t_fail("test bug: %d ints as %s", m, lay_name[kind]);
        kind = L_CONTIG;
    }
    switch (kind) {
    case L_VEC:
    case L_VECBIG: {
        /* Two runs of blen ints in every 4 blen, gaps of 2 blen between
         * them: short runs the shim packs and unpacks with MPI, 4 KiB
         * ones its DMA engine gathers and scatters in place. */
        int          blen = kind == L_VEC ? 1 : 1024, n = m / (2 * blen), e;
        MPI_Datatype v;

        lay_region(l, 0, (size_t)n * 16 * (size_t)blen, NULL);
        MPI_Type_vector(2, blen, 3 * blen, MPI_INT, &v);
        lay_commit(l, v);
        l->count = n;
        for (e = 0; e < n; e++) {
            size_t o = (size_t)e * 16 * (size_t)blen;

            lay_blk(l, 0, o, 4 * (size_t)blen);
            lay_blk(l, 0, o + 12 * (size_t)blen, 4 * (size_t)blen);
        }
        break;
    }
    case L_IDX: {
        /* Irregular runs, laid in memory in the reverse of their type
         * map order, with gaps: the data must follow the type map. */
        int          nb = 0, sum = 0, k, pos = 0, *len, *disp;
        MPI_Datatype v;

        while (sum < m) {
            sum += cyc[nb++ % 8];
        }
        len = t_xmalloc(sizeof(int) * (size_t)nb);
        disp = t_xmalloc(sizeof(int) * (size_t)nb);
        for (k = 0, sum = 0; k < nb; k++) {
            len[k] = cyc[k % 8] < m - sum ? cyc[k % 8] : m - sum;
            sum += len[k];
        }
        for (k = nb - 1; k >= 0; k--) {
            disp[k] = pos;
            pos += len[k] + k % 3 + 1;
        }
        lay_region(l, 0, (size_t)pos * 4, NULL);
        MPI_Type_indexed(nb, len, disp, MPI_INT, &v);
        lay_commit(l, v);
        for (k = 0; k < nb; k++) {
            lay_blk(l, 0, (size_t)disp[k] * 4, (size_t)len[k] * 4);
        }
        free(len);
        free(disp);
        break;
    }
    case L_BOTTOM: {
        /* Absolute addresses of two allocations, the later-allocated
         * first in the type map. */
        int          bl[2], m0 = m / 2;
        MPI_Aint     ad[2];
        MPI_Datatype ty[2] = {MPI_INT, MPI_INT}, v;

        l->nreg = 2;
        lay_region(l, 0, (size_t)m0 * 4, NULL);
        lay_region(l, 1, (size_t)(m - m0) * 4, NULL);
        MPI_Get_address(l->buf[1], &ad[0]);
        MPI_Get_address(l->buf[0], &ad[1]);
        bl[0] = m - m0;
        bl[1] = m0;
        MPI_Type_create_struct(2, bl, ad, ty, &v);
        lay_commit(l, v);
        l->addr = MPI_BOTTOM;
        lay_blk(l, 1, 0, (size_t)(m - m0) * 4);
        lay_blk(l, 0, 0, (size_t)m0 * 4);
        return;
    }
    case L_NEG: {
        /* The buffer argument points past the first third of the data,
         * which the second block reaches with a negative displacement:
         * [block 1][gap][block 0][gap], the true lower bound below 0. */
        int          bl[2], m1 = m / 3, m0 = m - m / 3;
        MPI_Aint     ad[2];
        MPI_Datatype v;

        lay_region(l, 0, (size_t)(m + 2) * 4, NULL);
        bl[0] = m0;
        bl[1] = m1;
        ad[0] = 0;
        ad[1] = -(MPI_Aint)(m1 + 1) * 4;
        MPI_Type_create_hindexed(2, bl, ad, MPI_INT, &v);
        lay_commit(l, v);
        l->addr = l->buf[0] + (size_t)(m1 + 1) * 4;
        lay_blk(l, 0, (size_t)(m1 + 1) * 4, (size_t)m0 * 4);
        lay_blk(l, 0, 0, (size_t)m1 * 4);
        return;
    }
    default:
        lay_region(l, 0, b, at);
        lay_blk(l, 0, 0, b);
        break;
    }
    l->addr = l->buf[0];
}

/* A send from part of another message's contiguous send buffer (from
 * aoff ints on): nothing of its own to fill, check or free. */
static void lay_view(lay_t *l, const lay_t *root, int aoff, int m)
{
    memset(l, 0, sizeof(*l));
    l->type = MPI_INT;
    l->count = m;
    l->addr = root->buf[0] + (size_t)aoff * 4;
}

/* The message's bytes into the blocks: into exp, and into buf too for a
 * send. */
static void lay_put(lay_t *l, const uint8_t *data, int send)
{
    size_t pos = 0;

    for (int k = 0; k < l->nb; k++) {
        memcpy(l->exp[l->breg[k]] + l->boff[k], data + pos, l->blen[k]);
        if (send) {
            memcpy(l->buf[l->breg[k]] + l->boff[k], data + pos, l->blen[k]);
        }
        pos += l->blen[k];
    }
}

static void lay_poison(lay_t *l)
{
    for (int r = 0; r < l->nreg; r++) {
        memset(l->buf[r], T_POISON, l->len[r]);
        memset(l->exp[r], T_POISON, l->len[r]);
    }
}

static int lay_check(lay_t *l, const char *what)
{
    char w[280];
    int  ok = 1;

    for (int r = 0; r < l->nreg; r++) {
        snprintf(w, sizeof(w), "%s%s", what,
                 l->nreg > 1 ? (r ? " (2nd allocation)"
                                  : " (1st "
                                    "allocation)")
                             : "");
        ok &= t_match(w, l->buf[r], l->exp[r], l->len[r]);
        t_gcheck(w, l->buf[r], l->len[r]);
    }
    return ok;
}

/* MPI lets a program free a datatype a pending operation uses. */
static void lay_type_free(lay_t *l)
{
    if (l->derived) {
        MPI_Type_free(&l->type);
        l->derived = 0;
    }
}

static void lay_free(lay_t *l)
{
    lay_type_free(l);
    for (int r = 0; r < l->nreg; r++) {
        if (!(r == 0 && l->placed)) {
            t_gfree(l->buf[r]);
        }
        free(l->exp[r]);
    }
    free(l->breg);
    free(l->boff);
    free(l->blen);
    memset(l, 0, sizeof(*l));
}

/* ---- messages and sets of them --------------------------------------- */

typedef struct {
    int   src, dst; /* ranks of the communicator, or MPI_PROC_NULL */
    int   tag;
    int   m;           /* ints */
    int   sk, rk;      /* layouts of the send and of the receive */
    int   skey, rkey;  /* order of adding on each side (then index) */
    char *sat, *rat;   /* contiguous buffers placed there (own rank) */
    int   alias, aoff; /* sends ints aoff.. of message alias - 1's
                        * send buffer (same source, contiguous) */
} msg_t;

static msg_t ml[MAXMSG];
static int   mn;

/* The next message of the case being built: contiguous, added in
 * message order on both sides. */
static msg_t *madd(int src, int dst, int tag, int m)
{
    msg_t *g = &ml[mn];

    if (mn == MAXMSG - 1) {
        t_fail("test bug: more than %d messages", MAXMSG);
    } else {
        mn++;
    }
    memset(g, 0, sizeof(*g));
    g->src = src;
    g->dst = dst;
    g->tag = tag;
    g->m = m;
    g->skey = g->rkey = mn;
    return g;
}

typedef struct {
    int key, idx, recv;
} op_t;

static int op_cmp(const void *x, const void *y)
{
    const op_t *a = x, *b = y;

    if (a->key != b->key) {
        return a->key < b->key ? -1 : 1;
    }
    if (a->idx != b->idx) {
        return a->idx < b->idx ? -1 : 1;
    }
    return a->recv - b->recv;
}

enum { C_WAIT, C_TEST, C_WAITALL, C_WAITANY, C_TESTSOME, C_NHOW };

/*
 * With C_NAP, the polling calls (MPI_Testall, MPI_Testsome) sleep 20 us
 * between tries, as a program computing between them gives its core
 * away. Without it they spin, which under the shim costs 5-40 ms per
 * completion on a 2-core machine (measured; the wait calls, which yield
 * the core, take 0.1-3 ms): too slow for the rounds of the persistent
 * cases, so only the single calls spin.
 */
#define C_NAP 0x100

typedef struct {
    char         name[100];
    MPI_Comm     comm;
    int          crank, csize;
    msg_t        ms[MAXMSG];
    int          n;
    lay_t        sl[MAXMSG], rl[MAXMSG];
    op_t         ops[2 * MAXMSG];
    int          nops;
    uint32_t     seed;
    int          iter;
    int          grouped; /* offloaded as a pattern group */
    int          persistent;
    int          bad; /* add erroneous calls between the ops */
    MPI_Request *reqs;
    int          nreq;
} set_t;

static int peer_of(const set_t *s, const op_t *o)
{
    return o->recv ? s->ms[o->idx].src : s->ms[o->idx].dst;
}

/*
 * Permute the adding order (a fixed shuffle per rank), then give each
 * class of ops with one direction, peer and tag its positions back in
 * message order: the pairing rule holds, any other order is as random.
 */
static void set_shuffle(set_t *s)
{
    uint64_t x = t_key(s->seed, s->crank, 77);
    int      i, j, k;

    for (i = s->nops - 1; i > 0; i--) {
        op_t tmp;

        x = t_mix64(x);
        j = (int)(x % (uint64_t)(i + 1));
        tmp = s->ops[i];
        s->ops[i] = s->ops[j];
        s->ops[j] = tmp;
    }
    for (i = 0; i < s->nops; i++) {
        for (j = i + 1; j < s->nops; j++) {
            op_t *a = &s->ops[i], *b = &s->ops[j];

            if (a->recv == b->recv && peer_of(s, a) == peer_of(s, b) &&
                s->ms[a->idx].tag == s->ms[b->idx].tag && a->idx > b->idx) {
                k = a->idx;
                a->idx = b->idx;
                b->idx = k;
            }
        }
    }
}

/* A set of the messages built (ml), on comm; the list is emptied. */
static set_t *set_new(MPI_Comm comm, int shuffle, const char *fmt, ...)
{
    set_t  *s = calloc(1, sizeof(*s));
    va_list ap;
    int     i;

    if (s == NULL) {
        fprintf(stderr, "rank %d: out of memory\n", t.rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    va_start(ap, fmt);
    vsnprintf(s->name, sizeof(s->name), fmt, ap);
    va_end(ap);
    s->comm = comm;
    MPI_Comm_rank(comm, &s->crank);
    MPI_Comm_size(comm, &s->csize);
    s->seed = t_seed();
    s->n = mn;
    memcpy(s->ms, ml, sizeof(msg_t) * (size_t)mn);
    mn = 0;
    for (i = 0; i < s->n; i++) {
        const msg_t *g = &s->ms[i];

        if (g->src == s->crank && g->alias) {
            const msg_t *a = &s->ms[g->alias - 1];

            if (g->alias - 1 >= i || a->src != g->src || a->alias ||
                a->sk != L_CONTIG || g->aoff + g->m > a->m) {
                t_fail("test bug: message %d cannot send from %d's "
                       "buffer",
                       i, g->alias - 1);
            }
            lay_view(&s->sl[i], &s->sl[g->alias - 1], g->aoff, g->m);
            s->ops[s->nops++] = (op_t){g->skey, i, 0};
        } else if (g->src == s->crank) {
            lay_make(&s->sl[i], g->sk, g->m, g->sat);
            s->ops[s->nops++] = (op_t){g->skey, i, 0};
        }
        if (g->dst == s->crank) {
            lay_make(&s->rl[i], g->rk, g->m, g->rat);
            s->ops[s->nops++] = (op_t){g->rkey, i, 1};
        }
    }
    qsort(s->ops, (size_t)s->nops, sizeof(op_t), op_cmp);
    if (shuffle) {
        set_shuffle(s);
    }
    s->reqs = t_xmalloc(sizeof(MPI_Request) * (size_t)(s->nops + 1));
    return s;
}

/* Contents of round iter: message i is pattern (seed, i, iter), or ints
 * aoff.. of the message whose buffer it sends from. */
static void set_fill(set_t *s, int iter)
{
    size_t   max = 4;
    uint8_t *data;
    int      i;

    for (i = 0; i < s->n; i++) {
        if ((size_t)s->ms[i].m * 4 > max) {
            max = (size_t)s->ms[i].m * 4;
        }
    }
    data = t_xmalloc(max);
    s->iter = iter;
    for (i = 0; i < s->n; i++) {
        const msg_t   *g = &s->ms[i];
        int            root = g->alias ? g->alias - 1 : i;
        const uint8_t *d = data + (size_t)g->aoff * 4;

        if (g->src != s->crank && g->dst != s->crank) {
            continue; /* other ranks' */
        }
        t_pat_fill(data, (size_t)s->ms[root].m * 4, s->seed, root, iter);
        if (g->src == s->crank) {
            lay_poison(&s->sl[i]);
            lay_put(&s->sl[i], d, 1);
        }
        if (g->dst == s->crank) {
            lay_poison(&s->rl[i]);
            if (g->src != MPI_PROC_NULL) {
                lay_put(&s->rl[i], d, 0);
            }
        }
    }
    free(data);
}

static void set_check(set_t *s)
{
    char w[256];
    int  i;

    for (i = 0; i < s->n; i++) {
        const msg_t *g = &s->ms[i];

        if (g->src == s->crank) {
            snprintf(w, sizeof(w),
                     "%s, round %d: message %d (to %d, tag "
                     "%d, %d ints, %s) send buffer unchanged",
                     s->name, s->iter, i, g->dst, g->tag, g->m,
                     lay_name[g->sk]);
            lay_check(&s->sl[i], w);
        }
        if (g->dst == s->crank) {
            snprintf(w, sizeof(w),
                     "%s, round %d: message %d (from %d, tag "
                     "%d, %d ints, %s into %s)",
                     s->name, s->iter, i, g->src, g->tag, g->m,
                     lay_name[g->sk], lay_name[g->rk]);
            lay_check(&s->rl[i], w);
        }
    }
}

/* Erroneous calls that must leave group g as it was. */
static void bad_adds(set_t *s, dpushim_group_t g)
{
    static int x[4];
    int        right = (s->crank + 1) % s->csize, rc, k;
    struct {
        int          recv, count, peer, tag;
        MPI_Datatype type;
        const char  *what;
    } bad[] = {
        {0, 1, right, MPI_ANY_TAG, MPI_INT, "send with tag MPI_ANY_TAG"},
        {1, 1, right, MPI_ANY_TAG, MPI_INT, "receive with tag MPI_ANY_TAG"},
        {0, 1, right, -5, MPI_INT, "send with tag -5"},
        {1, 1, MPI_ANY_SOURCE, 0, MPI_INT, "receive from MPI_ANY_SOURCE"},
        {0, 1, s->csize, 0, MPI_INT, "send to rank = communicator size"},
        {1, 1, s->csize + 1000, 0, MPI_INT, "receive from size + 1000"},
        {0, 1, -7, 0, MPI_INT, "send to rank -7"},
        {0, -1, right, 0, MPI_INT, "send of count -1"},
        {1, -4, right, 0, MPI_INT, "receive of count -4"},
        {0, 1, right, 0, MPI_DATATYPE_NULL, "send of MPI_DATATYPE_NULL"},
    };

    for (k = 0; k < (int)(sizeof(bad) / sizeof(bad[0])); k++) {
        rc = bad[k].recv ? dpushim_group_recv(g, x, bad[k].count, bad[k].type,
                                              bad[k].peer, bad[k].tag)
                         : dpushim_group_send(g, x, bad[k].count, bad[k].type,
                                              bad[k].peer, bad[k].tag);
        if (rc != DPUSHIM_ERR_ARG) {
            t_fail("%s: %s returned %d (%s), expected DPUSHIM_ERR_ARG",
                   s->name, bad[k].what, rc, dpushim_error_string(rc));
        }
    }
}

/* Is the variable set to a false boolean (dps_config.c's words)? */
static int env_off(const char *name)
{
    const char *v = getenv(name);

    return v != NULL &&
           (strcmp(v, "0") == 0 || strcasecmp(v, "no") == 0 ||
            strcasecmp(v, "off") == 0 || strcasecmp(v, "false") == 0);
}

/* Are groups (persistent ones) to be offloaded in this run? Under the
 * shim unless a switch turns them off: then, as without it, the program
 * is told DPUSHIM_ERR_OFF and uses MPI. */
static int want_group(void)
{
    return t_shim_loaded() && !env_off("DPUSHIM_OFFLOAD") &&
           !env_off("DPUSHIM_GROUP");
}

static int want_init(void)
{
    return want_group() && !env_off("DPUSHIM_GROUP_INIT");
}

/* What dpushim_group_begin must say: success when groups are wanted,
 * else DPUSHIM_ERR_OFF with a NULL group. */
static int begin_ok(const char *what, int rc, dpushim_group_t g)
{
    if (want_group()) {
        if (rc != DPUSHIM_SUCCESS || g == NULL) {
            t_fail("%s: dpushim_group_begin returned %d (%s) under the "
                   "shim",
                   what, rc, dpushim_error_string(rc));
        }
    } else if (rc != DPUSHIM_ERR_OFF || g != NULL) {
        t_fail("%s: dpushim_group_begin returned %d, group %p where "
               "offload is off (expected DPUSHIM_ERR_OFF, NULL)",
               what, rc, (void *)g);
    }
    return rc == DPUSHIM_SUCCESS && g != NULL;
}

/* The set's ops as MPI calls: a request each (inactive if persistent).
 * For one peer and tag, the order of the sends (receives) is MPI's
 * matching order. */
static void post_stock(set_t *s)
{
    MPI_Request *q;
    int          i;

    for (i = 0; i < s->nops; i++) {
        const op_t  *o = &s->ops[i];
        const msg_t *m = &s->ms[o->idx];
        lay_t       *l = o->recv ? &s->rl[o->idx] : &s->sl[o->idx];
        int          peer = o->recv ? m->src : m->dst;

        q = &s->reqs[s->nreq++];
        if (s->persistent) {
            T_MPI(o->recv ? MPI_Recv_init(l->addr, l->count, l->type, peer,
                                          m->tag, s->comm, q)
                          : MPI_Send_init(l->addr, l->count, l->type, peer,
                                          m->tag, s->comm, q));
        } else {
            T_MPI(o->recv ? MPI_Irecv(l->addr, l->count, l->type, peer, m->tag,
                                      s->comm, q)
                          : MPI_Isend(l->addr, l->count, l->type, peer, m->tag,
                                      s->comm, q));
        }
    }
}

/* The set's ops into group g, ended: 1 when posted as a group, 0 when
 * ending said DPUSHIM_ERR_OFF (the program then uses MPI). */
static int post_group(set_t *s, dpushim_group_t g)
{
    MPI_Request q = MPI_REQUEST_NULL;
    int         rc, i, want = s->persistent ? want_init() : 1;

    for (i = 0; i < s->nops; i++) {
        const op_t  *o = &s->ops[i];
        const msg_t *m = &s->ms[o->idx];
        lay_t       *l = o->recv ? &s->rl[o->idx] : &s->sl[o->idx];
        int          peer = o->recv ? m->src : m->dst;

        if (s->bad && i == s->nops / 2) {
            bad_adds(s, g);
        }
        rc = o->recv ? dpushim_group_recv(g, l->addr, l->count, l->type, peer,
                                          m->tag)
                     : dpushim_group_send(g, l->addr, l->count, l->type, peer,
                                          m->tag);
        if (rc != DPUSHIM_SUCCESS) {
            t_fail("%s: adding message %d: %d (%s)", s->name, o->idx, rc,
                   dpushim_error_string(rc));
        }
    }
    if (s->bad && s->nops == 0) {
        bad_adds(s, g);
    }
    rc = s->persistent ? dpushim_group_end_persistent(&g, &q)
                       : dpushim_group_end(&g, &q);
    if (g != NULL) {
        t_fail("%s: the group is not NULL once ended", s->name);
    }
    if (rc == DPUSHIM_ERR_OFF && !want) {
        return 0;
    }
    if (rc != DPUSHIM_SUCCESS || q == MPI_REQUEST_NULL) {
        t_fail("%s: dpushim_group_end%s returned %d (%s), request %s", s->name,
               s->persistent ? "_persistent" : "", rc,
               dpushim_error_string(rc),
               q == MPI_REQUEST_NULL ? "null" : "set");
        return rc == DPUSHIM_ERR_OFF ? 0 : 1;
    }
    s->reqs[s->nreq++] = q;
    if (!s->persistent) {
        t_count("group", 1);
    }
    return 1;
}

/*
 * Post the set as a program would: as a pattern group when offload is
 * available, else with MPI; persistent: inactive requests. free_types:
 * free the derived datatypes once posted.
 */
static void set_post(set_t *s, int persistent, int free_types)
{
    dpushim_group_t g = (dpushim_group_t)(uintptr_t)0x10; /* not NULL */
    int             rc, i;

    s->persistent = persistent;
    s->nreq = 0;
    rc = dpushim_group_begin(s->comm, &g);
    s->grouped = begin_ok(s->name, rc, g) && post_group(s, g);
    if (!s->grouped) {
        post_stock(s);
    }
    /* Stock MPI keeps a persistent request's datatype only as the
     * standard asks for pending operations: freed early only when the
     * group owns the types. */
    if (free_types && (!persistent || s->grouped)) {
        for (i = 0; i < s->n; i++) {
            lay_type_free(&s->sl[i]);
            lay_type_free(&s->rl[i]);
        }
    }
}

static void set_start(set_t *s)
{
    if (s->grouped) {
        T_MPI(MPI_Start(&s->reqs[0]));
        t_count("group_init", 1);
    } else {
        /* One by one: MPI_Startall may start them in any order, which
         * would reorder the messages of one peer and tag. */
        for (int i = 0; i < s->nreq; i++) {
            T_MPI(MPI_Start(&s->reqs[i]));
        }
    }
}

/*
 * Complete n requests with the completion calls of how. exact: each
 * request must be reported once by MPI_Waitany / MPI_Testsome. Not so
 * for MPICH's started persistent requests from or to MPI_PROC_NULL,
 * which these calls skip as if inactive: they end at MPI_UNDEFINED.
 */
static void complete(MPI_Request *r, int n, int how, int exact,
                     const char *what)
{
    int    i, done = 0, flag, idx, out, *ind, nap = how & C_NAP;
    double t0 = t_now();

    ind = t_xmalloc(sizeof(int) * (size_t)(n + 1));
    how &= ~C_NAP;
    switch (how) {
    case C_WAIT:
        for (i = 0; i < n; i++) {
            T_MPI(MPI_Wait(&r[i], MPI_STATUS_IGNORE));
        }
        done = n;
        break;
    case C_TEST:
        for (flag = 0; !flag;) {
            T_MPI(MPI_Testall(n, r, &flag, t_statuses_ignore));
            if (!flag && nap) {
                usleep(20);
            }
        }
        done = n;
        break;
    case C_WAITALL:
        T_MPI(MPI_Waitall(n, r, t_statuses_ignore));
        done = n;
        break;
    case C_WAITANY:
        /* Completed persistent requests turn inactive, which Waitany
         * skips, as it does null ones: MPI_UNDEFINED once all are. */
        for (;;) {
            idx = -5;
            T_MPI(MPI_Waitany(n, r, &idx, MPI_STATUS_IGNORE));
            if (idx == MPI_UNDEFINED) {
                break;
            }
            if (idx < 0 || idx >= n || ++done > n) {
                t_fail("%s: MPI_Waitany gave index %d (of %d) after %d", what,
                       idx, n, done);
                break;
            }
        }
        break;
    default:
        for (;;) {
            out = -5;
            T_MPI(MPI_Testsome(n, r, &out, ind, t_statuses_ignore));
            if (out == MPI_UNDEFINED) {
                break;
            }
            for (i = 0; i < out && out <= n; i++) {
                if (ind[i] < 0 || ind[i] >= n) {
                    out = -1;
                }
            }
            if (out < 0 || out > n || (done += out) > n) {
                t_fail("%s: MPI_Testsome gave %d with %d of %d done", what,
                       out, done, n);
                break;
            }
            if (t_now() - t0 > 20) {
                t_fail("%s: MPI_Testsome: %d of %d after 20 s", what, done, n);
                break;
            }
            if (out == 0 && nap) {
                usleep(20);
            }
        }
        break;
    }
    if (exact && done != n) {
        t_fail("%s: %s reported %d of %d requests", what,
               how == C_WAITANY ? "MPI_Waitany" : "MPI_Testsome", done, n);
    }
    free(ind);
}

/* Are MPI_Waitany and MPI_Testsome to report every request? */
static int set_exact(const set_t *s)
{
    int i;

    for (i = 0; !s->grouped && s->persistent && i < s->n; i++) {
        if (s->ms[i].src == MPI_PROC_NULL || s->ms[i].dst == MPI_PROC_NULL) {
            return 0;
        }
    }
    return 1;
}

static void set_free(set_t *s)
{
    int i;

    for (i = 0; s->persistent && i < s->nreq; i++) {
        if (s->reqs[i] != MPI_REQUEST_NULL) {
            T_MPI(MPI_Request_free(&s->reqs[i]));
        }
    }
    for (i = 0; i < s->n; i++) {
        if (s->ms[i].src == s->crank) {
            lay_free(&s->sl[i]);
        }
        if (s->ms[i].dst == s->crank) {
            lay_free(&s->rl[i]);
        }
    }
    free(s->reqs);
    free(s);
}

/* One group of the messages built: post, complete, check. */
static void run(MPI_Comm comm, int shuffle, int free_types, int how,
                const char *fmt, ...)
{
    char    name[100];
    va_list ap;
    set_t  *s;

    va_start(ap, fmt);
    vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    s = set_new(comm, shuffle, "%s", name);
    set_fill(s, 0);
    set_post(s, 0, free_types);
    complete(s->reqs, s->nreq, how, 1, s->name);
    set_check(s);
    set_free(s);
}

/* ---- the cases --------------------------------------------------------- */

static void case_rings(MPI_Comm comm, const char *cn)
{
    static const int sizes[] = {0, 1, 2, 250, 16385, MIB_INTS, 8 * MIB_INTS};
    int              n, r, k;

    MPI_Comm_size(comm, &n);
    for (k = 0; k < (int)(sizeof(sizes) / sizeof(sizes[0])); k++) {
        t_case("%s: ring shift of %d ints", cn, sizes[k]);
        for (r = 0; r < n; r++) {
            madd(r, (r + 1) % n, 0, sizes[k]);
        }
        run(comm, 0, 0, k % C_NHOW, "%s ring %d ints", cn, sizes[k]);
    }
    /* Both ways at once: tags tell the directions apart where left and
     * right are one rank (2 ranks), and again with one tag (the k-th
     * rule pairs them). */
    for (k = 0; k < 2; k++) {
        t_case("%s: both ways, %s", cn, k ? "one tag" : "two tags");
        for (r = 0; r < n; r++) {
            madd(r, (r + 1) % n, k ? 3 : 1, 1000);
            madd(r, (r + n - 1) % n, k ? 3 : 2, k ? 1000 : 777);
            madd(r, (r + 1) % n, k ? 3 : 1, MIB_INTS / 2);
        }
        run(comm, 0, 0, C_WAIT, "%s both ways %s", cn,
            k ? "one tag" : "two tags");
    }
}

/* Every ordered pair, the rank itself included, of varied sizes, tags
 * and adding orders; some pairs twice. */
static void case_all_pairs(MPI_Comm comm, const char *cn)
{
    int n, i, j;

    MPI_Comm_size(comm, &n);
    t_case("%s: every pair", cn);
    for (i = 0; i < n; i++) {
        for (j = 0; j < n; j++) {
            madd(i, j, (i + j) % 3, 1 + ((i * 7 + j * 13) % 50) * 100);
            if ((i + j) % 2 == 0) {
                madd(i, j, (i + j) % 3, 3 + i + j);
            }
        }
    }
    run(comm, 1, 0, C_TESTSOME, "%s every pair", cn);
}

/* The even ranks shift along their ring; the odd ones end empty groups
 * (ending is collective). Then every rank ends an empty group. */
static void case_empty(MPI_Comm comm, const char *cn)
{
    int n, r, ne;

    MPI_Comm_size(comm, &n);
    ne = (n + 1) / 2;
    t_case("%s: empty groups on odd ranks", cn);
    for (r = 0; r < ne; r++) {
        madd(2 * r, 2 * ((r + 1) % ne), 4, 5000);
        madd(2 * ((r + 1) % ne), 2 * r, 5, 33);
    }
    run(comm, 0, 0, C_WAITANY, "%s odd ranks empty", cn);
    t_case("%s: empty groups on every rank", cn);
    run(comm, 0, 0, C_WAIT, "%s all empty", cn);
    t_case("%s: only rank 0 to itself", cn);
    madd(0, 0, 0, 10);
    run(comm, 0, 0, C_TEST, "%s rank 0 to itself", cn);
}

/* Several messages on one pair and tag: order kept. Sizes differ, so a
 * mispairing is an error besides wrong data; then equal sizes, where
 * only the data tells. */
static void case_same_tag(MPI_Comm comm, const char *cn)
{
    static const int sz[] = {1, 1000, 3, 65536, 17, 2};
    int              n, r, k;

    MPI_Comm_size(comm, &n);
    t_case("%s: 6 messages on one tag, sizes differ", cn);
    for (r = 0; r < n; r++) {
        for (k = 0; k < 6; k++) {
            madd(r, (r + 1) % n, 7, sz[k]);
        }
    }
    run(comm, 0, 0, C_WAITALL, "%s one tag, sizes differ", cn);
    t_case("%s: 8 messages on one tag, one size", cn);
    for (r = 0; r < n; r++) {
        for (k = 0; k < 8; k++) {
            madd(r, (r + n - 1) % n, 7, 256);
        }
    }
    run(comm, 1, 0, C_WAITALL, "%s one tag, one size", cn);
}

/* Tags added in other orders on the two sides. */
static void case_tag_orders(MPI_Comm comm, const char *cn)
{
    static const int tags[] = {1, 2, 3, 0, 32767};
    int              n, r, k;

    MPI_Comm_size(comm, &n);
    t_case("%s: receiver adds the tags in reverse", cn);
    for (r = 0; r < n; r++) {
        for (k = 0; k < 5; k++) {
            msg_t *g = madd(r, (r + 1) % n, tags[k], 300);

            g->rkey = -k;
        }
    }
    run(comm, 0, 0, C_WAITALL, "%s tags reversed", cn);
    /* Sender: 1a 2a 1b 2b; receiver: 2a 2b 1a 1b (same size: only the
     * data tells a mix-up). */
    t_case("%s: two tags interleaved, grouped at the receiver", cn);
    for (r = 0; r < n; r++) {
        for (k = 0; k < 4; k++) {
            msg_t *g = madd(r, (r + 1) % n, 1 + k % 2, 64);

            g->skey = k;
            g->rkey = (k % 2 ? 0 : 10) + k;
        }
    }
    run(comm, 0, 0, C_WAITALL, "%s tags interleaved", cn);
    t_case("%s: many tags, random orders", cn);
    for (r = 0; r < n; r++) {
        for (k = 0; k < 12; k++) {
            madd(r, (r + 1 + k % 2) % n, k % 5, 50 + 10 * k);
        }
    }
    run(comm, 1, 0, C_WAITALL, "%s random orders", cn);
}

/* Sends to the rank itself (three, two on one tag, received in another
 * order) and MPI_PROC_NULL peers, with a shift alongside. */
static void case_self_null(MPI_Comm comm, const char *cn)
{
    int n, r;

    MPI_Comm_size(comm, &n);
    t_case("%s: to itself and MPI_PROC_NULL", cn);
    for (r = 0; r < n; r++) {
        msg_t *g;

        g = madd(r, r, 5, 100);
        g->rkey = 100;
        g = madd(r, r, 4, 7);
        g->rkey = -100;
        g = madd(r, r, 5, 3000);
        g->rkey = 101;
        madd(r, MPI_PROC_NULL, 5, 10);
        madd(MPI_PROC_NULL, r, 5, 10);
        madd(r, MPI_PROC_NULL, 0, 0);
        madd(MPI_PROC_NULL, r, 9, 1);
        madd(r, (r + 1) % n, 6, 4096);
    }
    run(comm, 0, 0, C_WAITALL, "%s self and MPI_PROC_NULL", cn);
    t_case("%s: only MPI_PROC_NULL", cn);
    for (r = 0; r < n; r++) {
        madd(r, MPI_PROC_NULL, 1, 100);
        madd(MPI_PROC_NULL, r, 1, 100);
    }
    run(comm, 0, 0, C_WAIT, "%s only MPI_PROC_NULL", cn);
    t_case("%s: 1 MiB to itself", cn);
    for (r = 0; r < n; r++) {
        madd(r, r, 0, MIB_INTS);
    }
    run(comm, 0, 0, C_WAIT, "%s 1 MiB to itself", cn);
}

/* Where the buffers lie: both ends of a 64 MiB allocation, separate
 * mallocs, sends and receives interleaved in one allocation. */
static void case_far(MPI_Comm comm, const char *cn)
{
    const size_t s1 = (size_t)65536 * 4, s2 = 1000 * 4, g2 = 2 * T_GUARD;
    char        *big = malloc(BIG), *mix;
    int          n, r;
    msg_t       *g;

    if (big == NULL) {
        fprintf(stderr, "rank %d: out of memory\n", t.rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_size(comm, &n);
    /* [send right][recv from left] .... [recv from right][send left] */
    t_case("%s: both ends of 64 MiB", cn);
    for (r = 0; r < n; r++) {
        g = madd(r, (r + 1) % n, 0, 65536);
        g->sat = big;
        g->rat = big + s1 + g2;
        g = madd(r, (r + n - 1) % n, 0, 1000);
        g->sat = big + BIG - s2 - g2;
        g->rat = big + BIG - 2 * (s2 + g2);
        madd(r, (r + 1) % n, 1, 5000);
        madd(r, (r + n - 1) % n, 1, 3);
    }
    run(comm, 1, 0, C_WAITALL, "%s both ends of 64 MiB", cn);
    /* [s1][r1][s2][r2] within 64 KiB: the sends' span holds the
     * receives. */
    mix = malloc(65536);
    if (mix == NULL) {
        fprintf(stderr, "rank %d: out of memory\n", t.rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    t_case("%s: sends and receives interleaved", cn);
    for (r = 0; r < n; r++) {
        g = madd(r, (r + 1) % n, 0, 1024);
        g->sat = mix;
        g->rat = mix + 16384;
        g = madd(r, (r + n - 1) % n, 1, 1024);
        g->sat = mix + 32768;
        g->rat = mix + 49152;
    }
    run(comm, 0, 0, C_WAITALL, "%s interleaved", cn);
    free(mix);
    free(big);
}

/* Derived datatypes on either side or both (types freed once ended). */
static void case_dtypes(MPI_Comm comm, const char *cn)
{
    static const int pair[][3] = {
        {L_VEC, L_CONTIG, 100},    {L_CONTIG, L_VEC, 100},
        {L_IDX, L_IDX, 1001},      {L_VECBIG, L_IDX, 65536},
        {L_IDX, L_VECBIG, 65536},  {L_BOTTOM, L_CONTIG, 555},
        {L_CONTIG, L_BOTTOM, 555}, {L_BOTTOM, L_BOTTOM, 40000},
        {L_VEC, L_BOTTOM, 2},      {L_VECBIG, L_VECBIG, MIB_INTS},
        {L_IDX, L_VEC, 20000},     {L_BOTTOM, L_IDX, 7},
        {L_NEG, L_CONTIG, 999},    {L_IDX, L_NEG, 3000},
        {L_NEG, L_NEG, 65536},     {L_NEG, L_BOTTOM, 4},
    };
    int np = (int)(sizeof(pair) / sizeof(pair[0]));
    int n, r, k, self;

    MPI_Comm_size(comm, &n);
    for (self = 0; self < 2; self++) {
        t_case("%s: datatypes%s", cn, self ? ", to itself" : "");
        for (r = 0; r < n; r++) {
            for (k = 0; k < np; k++) {
                msg_t *g =
                    madd(r, self ? r : (r + 1 + k) % n, k % 3, pair[k][2]);

                g->sk = pair[k][0];
                g->rk = pair[k][1];
            }
        }
        run(comm, 1, 1, C_WAITALL, "%s datatypes%s", cn,
            self ? " to itself" : "");
    }
}

/* A persistent group restarted `rounds` times, new contents each time,
 * completed by every kind of completion call. */
static void case_persistent(MPI_Comm comm, const char *cn, int rounds)
{
    int    n, r, it, first;
    set_t *s;
    msg_t *g;

    MPI_Comm_size(comm, &n);
    t_case("%s: persistent group, set up", cn);
    for (r = 0; r < n; r++) {
        first = mn;
        madd(r, (r + 1) % n, 0, 1024);
        g = madd(r, (r + n - 1) % n, 1, 16);
        g->rk = L_VEC;
        g = madd(r, r, 0, 8);
        g->sk = L_IDX;
        madd(r, MPI_PROC_NULL, 0, 4);
        madd(MPI_PROC_NULL, r, 0, 4);
        g = madd(r, (r + 1) % n, 2, 6);
        g->sk = L_BOTTOM;
        g->rk = L_NEG;
        g = madd(r, (r + n - 1) % n, 2, 100);
        g->alias = first + 1; /* from the first one's buffer */
        g->aoff = 900;
    }
    s = set_new(comm, 1, "%s persistent", cn);
    set_post(s, 1, 1);
    for (it = 0; it < rounds; it++) {
        if (it % 100 == 0) {
            t_case("%s: persistent group, rounds %d-%d", cn, it, it + 99);
        }
        set_fill(s, it);
        set_start(s);
        complete(s->reqs, s->nreq, (it % C_NHOW) | C_NAP, set_exact(s),
                 s->name);
        set_check(s);
    }
    t_case("%s: persistent group, MPI_Request_free", cn);
    set_free(s);

    /* Ended, never started, freed. */
    t_case("%s: persistent group never started", cn);
    for (r = 0; r < n; r++) {
        madd(r, (r + 1) % n, 0, 10);
    }
    s = set_new(comm, 0, "%s never started", cn);
    set_post(s, 1, 0);
    set_free(s);
}

/*
 * Two persistent groups in MPI_Startall with MPI_Send_init /
 * MPI_Recv_init requests of the same communicator (tag 99, which no
 * group uses: on stock MPI the groups are MPI messages too, and every
 * peer and tag has one message, as MPI_Startall may start requests in
 * any order), completed together; the groups in one order on every rank
 * (ending and starting them is collective).
 */
static void case_startall(MPI_Comm comm, const char *cn)
{
    int         n, crank, r, it, i, k, nr;
    int         right, left;
    int        *sb, *rb;
    set_t      *a, *b;
    MPI_Request st[2], *all;
    msg_t      *g;

    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &crank);
    right = (crank + 1) % n;
    left = (crank + n - 1) % n;
    t_case("%s: MPI_Startall, set up", cn);
    for (r = 0; r < n; r++) {
        madd(r, (r + 1) % n, 0, 2048);
        madd(r, r, 2, 5);
    }
    a = set_new(comm, 0, "%s startall A", cn);
    for (r = 0; r < n; r++) {
        g = madd(r, (r + n - 1) % n, 1, 300);
        g->sk = L_IDX;
        g->rk = L_VEC;
    }
    b = set_new(comm, 0, "%s startall B", cn);
    set_post(a, 1, 0);
    set_post(b, 1, 1);
    sb = t_galloc(400);
    rb = t_galloc(400);
    T_MPI(MPI_Recv_init(rb, 100, MPI_INT, left, 99, comm, &st[0]));
    T_MPI(MPI_Send_init(sb, 100, MPI_INT, right, 99, comm, &st[1]));
    all = t_xmalloc(sizeof(MPI_Request) * (size_t)(a->nreq + b->nreq + 3));
    for (it = 0; it < MIX_N; it++) {
        uint32_t seed = t_seed();
        char     w[200];

        if (it % 50 == 0) {
            t_case("%s: MPI_Startall, rounds %d-%d", cn, it, it + 49);
        }
        set_fill(a, it);
        set_fill(b, it);
        t_pat_fill(sb, 400, seed, crank, 99);
        memset(rb, T_POISON, 400);
        /* Odd rounds [stock recv, A, stock send, B], even ones [A,
         * stock recv, B, stock send]. */
        nr = 0;
        if (it % 2) {
            all[nr++] = st[0];
        }
        for (i = 0; i < a->nreq; i++) {
            all[nr++] = a->reqs[i];
        }
        all[nr++] = st[it % 2];
        for (i = 0; i < b->nreq; i++) {
            all[nr++] = b->reqs[i];
        }
        if (it % 2 == 0) {
            all[nr++] = st[1];
        }
        T_MPI(MPI_Startall(nr, all));
        for (k = 0; k < 2; k++) {
            if ((k ? b : a)->grouped) {
                t_count("group_init", 1);
            }
        }
        complete(all, nr, it % 3 == 2 ? C_TESTSOME | C_NAP : C_WAITALL,
                 set_exact(a) && set_exact(b), cn);
        /* Inactive again: the handles are the same. */
        nr = 0;
        if (it % 2) {
            st[0] = all[nr++];
        }
        for (i = 0; i < a->nreq; i++) {
            a->reqs[i] = all[nr++];
        }
        st[it % 2] = all[nr++];
        for (i = 0; i < b->nreq; i++) {
            b->reqs[i] = all[nr++];
        }
        if (it % 2 == 0) {
            st[1] = all[nr++];
        }
        set_check(a);
        set_check(b);
        snprintf(w, sizeof(w), "%s: round %d, MPI_Recv_init message", cn, it);
        t_pat_check(w, rb, 400, seed, left, 99);
        t_gcheck(w, rb, 400);
        snprintf(w, sizeof(w), "%s: round %d, MPI_Send_init buffer", cn, it);
        t_pat_check(w, sb, 400, seed, crank, 99);
        t_gcheck(w, sb, 400);
    }
    t_case("%s: MPI_Startall, MPI_Request_free", cn);
    T_MPI(MPI_Request_free(&st[0]));
    T_MPI(MPI_Request_free(&st[1]));
    set_free(b);
    set_free(a);
    free(all);
    t_gfree(sb);
    t_gfree(rb);
}

/* Several groups outstanding at once on world, a dup and a split,
 * completed in other orders and together. */
static void case_outstanding(MPI_Comm world, MPI_Comm dup, MPI_Comm half,
                             const char *hn)
{
    set_t       *s[5];
    MPI_Request  all[5 * 2 * MAXMSG], qa, qb;
    int          n, nh, r, i, k, nr = 0, crank, root;
    const size_t blk = 1000, blen = 5000;
    uint32_t     sa, sbc;
    char        *asb, *arb, *bb;

    MPI_Comm_size(world, &n);
    MPI_Comm_rank(dup, &crank);
    MPI_Comm_size(half, &nh);
    t_case("several groups at once");
    for (r = 0; r < n; r++) {
        madd(r, (r + 1) % n, 0, 20000);
    }
    s[0] = set_new(world, 0, "at once: world right");
    for (r = 0; r < n; r++) {
        madd(r, (r + n - 1) % n, 0, 3000);
        madd(r, r, 0, 3);
    }
    s[1] = set_new(world, 0, "at once: world left");
    for (r = 0; r < n; r++) {
        madd(r, (r + 2) % n, 0, 100);
    }
    s[2] = set_new(dup, 0, "at once: dup");
    for (r = 0; r < nh; r++) {
        madd(r, (r + 1) % nh, 0, 4000);
    }
    s[3] = set_new(half, 0, "at once: %s", hn);
    for (r = 0; r < n; r++) {
        madd(r, (r + 1) % n, 1, 70000);
    }
    s[4] = set_new(world, 1, "at once: world 280 KB");
    /* Collectives of the shim's between the groups (their instances are
     * numbered together on each communicator). */
    sa = t_seed();
    sbc = t_seed();
    root = n - 1;
    asb = t_galloc(blk * (size_t)n);
    arb = t_galloc(blk * (size_t)n);
    bb = t_galloc(blen);
    t_a2a_fill(asb, blk, n, sa, t.rank);
    if (crank == root) {
        t_pat_fill(bb, blen, sbc, root, 0);
    }
    /* Posted alike on every rank: world 0, Ialltoall on world, dup,
     * Ibcast on dup, world 1, half, world 4. */
    for (i = 0; i < 5; i++) {
        set_fill(s[i], 0);
    }
    set_post(s[0], 0, 0);
    t_ialltoall(asb, (int)blk, MPI_BYTE, arb, (int)blk, MPI_BYTE, world, &qa,
                1);
    set_post(s[2], 0, 0);
    t_ibcast(bb, (int)blen, MPI_BYTE, root, dup, &qb, 1);
    set_post(s[1], 0, 0);
    set_post(s[3], 0, 0);
    set_post(s[4], 0, 0);
    /* A blocking collective while they are pending. */
    T_MPI(MPI_Barrier(world));
    /* The last posted first; then the rest in one MPI_Waitall. */
    complete(s[4]->reqs, s[4]->nreq, C_WAIT, 1, s[4]->name);
    complete(s[1]->reqs, s[1]->nreq, C_TEST, 1, s[1]->name);
    for (i = 0; i < 4; i++) {
        if (i == 1) {
            continue;
        }
        for (k = 0; k < s[i]->nreq; k++) {
            all[nr++] = s[i]->reqs[k];
        }
    }
    all[nr++] = qb;
    all[nr++] = qa;
    T_MPI(MPI_Waitall(nr, all, t_statuses_ignore));
    for (i = 0; i < 5; i++) {
        set_check(s[i]);
        set_free(s[i]);
    }
    t_a2a_check("at once: Ialltoall between groups", arb, blk, n, sa, t.rank);
    t_gcheck("at once: Ialltoall receive buffer", arb, blk * (size_t)n);
    for (i = 0; i < n; i++) {
        t_pat_check("at once: Ialltoall send buffer unchanged",
                    asb + (size_t)i * blk, blk, sa, t.rank, i);
    }
    t_pat_check("at once: Ibcast on the dup between groups", bb, blen, sbc,
                root, 0);
    t_gcheck("at once: Ibcast buffer", bb, blen);
    t_gfree(asb);
    t_gfree(arb);
    t_gfree(bb);
}

/* One send buffer for several messages, whole or in overlapping parts
 * (a halo exchange sends one boundary to several neighbours), and one
 * 1 MiB buffer to every rank. */
static void case_shared(MPI_Comm comm, const char *cn)
{
    int    n, r, j, first;
    msg_t *g;

    MPI_Comm_size(comm, &n);
    t_case("%s: one send buffer, several messages", cn);
    for (r = 0; r < n; r++) {
        first = mn;
        madd(r, (r + 1) % n, 0, 1000);
        g = madd(r, (r + n - 1) % n, 0, 1000);
        g->alias = first + 1;
        g = madd(r, (r + 1) % n, 1, 500);
        g->alias = first + 1;
        g->aoff = 250;
        g = madd(r, r, 2, 100);
        g->alias = first + 1;
        g->aoff = 900;
        g = madd(r, (r + n - 1) % n, 3, 1);
        g->alias = first + 1;
        g->aoff = 999;
        g = madd(r, (r + 1) % n, 0, 10);
        g->alias = first + 1;
    }
    run(comm, 1, 0, C_WAITALL, "%s shared send buffer", cn);
    t_case("%s: one 1 MiB buffer to every rank", cn);
    for (r = 0; r < n; r++) {
        first = mn;
        madd(r, MPI_PROC_NULL, 0, MIB_INTS);
        for (j = 0; j < n; j++) {
            g = madd(r, j, 0, MIB_INTS);
            g->alias = first + 1;
        }
    }
    run(comm, 0, 0, C_WAITALL, "%s 1 MiB to every rank", cn);
}

/* Many small messages in one group: both neighbours, 5 tags, random
 * orders. */
static void case_many(MPI_Comm comm, const char *cn)
{
    int n, r, k, per;

    MPI_Comm_size(comm, &n);
    per = (MAXMSG - 8) / n < 150 ? (MAXMSG - 8) / n : 150;
    t_case("%s: %d small messages per rank", cn, per);
    for (r = 0; r < n; r++) {
        for (k = 0; k < per; k++) {
            madd(r, k % 2 ? (r + 1) % n : (r + n - 1) % n, k % 5, 1 + k % 3);
        }
    }
    run(comm, 1, 0, C_WAITANY, "%s many small", cn);
}

/* 32 groups outstanding on one communicator, completed last first. */
static void case_burst(MPI_Comm comm, const char *cn)
{
    set_t *s[32];
    int    n, r, k;

    MPI_Comm_size(comm, &n);
    t_case("%s: 32 groups outstanding", cn);
    for (k = 0; k < 32; k++) {
        for (r = 0; r < n; r++) {
            madd(r, (r + 1 + k) % n, k % 4, 10 + 37 * k);
        }
        s[k] = set_new(comm, 0, "%s burst %d", cn, k);
        set_fill(s[k], 0);
        set_post(s[k], 0, 0);
    }
    for (k = 31; k >= 0; k--) {
        complete(s[k]->reqs, s[k]->nreq, C_WAIT, 1, s[k]->name);
        set_check(s[k]);
        set_free(s[k]);
    }
}

/* The end of a group whose sizes do not match: an error now (an MPI
 * error code, no request) or when its request completes. */
/* may_pass: this rank's own transfers are right, and may complete
 * before the failure reaches its agent (docs/limits.md). */
static void mismatch_end(dpushim_group_t *g, const char *what, int may_pass)
{
    MPI_Request q = MPI_REQUEST_NULL;
    int         rc = dpushim_group_end(g, &q);

    if (rc == DPUSHIM_SUCCESS) {
        t_count("group", 1);
        rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS && !may_pass) {
            t_fail("%s: the group completed without an error", what);
        }
    } else if (rc < 0 || q != MPI_REQUEST_NULL) {
        t_fail("%s: dpushim_group_end returned %d (%s), request %s", what, rc,
               dpushim_error_string(rc),
               q == MPI_REQUEST_NULL ? "null" : "set");
    }
}

/*
 * Receives that do not match their sends in size: MPI would let them be
 * larger, a group fails on every rank. Then groups work again. Under
 * the shim only (stock MPI accepts the larger receives).
 */
static void case_mismatch(void)
{
    int n = t.size, right = (t.rank + 1) % n, left = (t.rank + n - 1) % n;
    int rc, k, *sb, *rb;
    dpushim_group_t    g;
    MPI_Request        q = MPI_REQUEST_NULL;
    static const char *what[] = {
        "mismatch: every receive one int larger",
        "mismatch: 100 then 200 ints met by 200 then 100",
        "mismatch: rank 0 to itself, the receive larger",
        "mismatch: persistent, every receive larger"};

    if (!want_group()) {
        return;
    }
    sb = t_galloc(4 * 400);
    rb = t_galloc(4 * 400);
    for (k = 0; k < 4; k++) {
        t_case("%s", what[k]);
        if (k == 3 && !want_init()) {
            continue;
        }
        rc = dpushim_group_begin(MPI_COMM_WORLD, &g);
        if (!begin_ok(what[k], rc, g)) {
            continue;
        }
        switch (k) {
        case 0:
        case 3:
            dpushim_group_send(g, sb, 100, MPI_INT, right, 0);
            dpushim_group_recv(g, rb, 101, MPI_INT, left, 0);
            break;
        case 1:
            dpushim_group_send(g, sb, 100, MPI_INT, right, 0);
            dpushim_group_send(g, sb + 100, 200, MPI_INT, right, 0);
            dpushim_group_recv(g, rb, 200, MPI_INT, left, 0);
            dpushim_group_recv(g, rb + 200, 100, MPI_INT, left, 0);
            break;
        default:
            dpushim_group_send(g, sb, 50, MPI_INT, right, 1);
            dpushim_group_recv(g, rb, 50, MPI_INT, left, 1);
            if (t.rank == 0) {
                dpushim_group_send(g, sb + 100, 10, MPI_INT, 0, 2);
                dpushim_group_recv(g, rb + 100, 11, MPI_INT, 0, 2);
            }
            break;
        }
        if (k < 3) {
            mismatch_end(&g, what[k], k == 2 && t.rank != 0);
            continue;
        }
        rc = dpushim_group_end_persistent(&g, &q);
        if (rc != DPUSHIM_SUCCESS) {
            t_fail("%s: dpushim_group_end_persistent returned %d (%s)",
                   what[k], rc, dpushim_error_string(rc));
            continue;
        }
        /* Each start fails alike (an error from MPI_Start where the
         * rank's own arguments tell, else from the completion). */
        for (int it = 0; it < 2; it++) {
            rc = MPI_Start(&q);
            if (rc == MPI_SUCCESS) {
                t_count("group_init", 1);
                if (MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS) {
                    t_fail("%s: start %d completed without an error", what[k],
                           it);
                }
            }
        }
        T_MPI(MPI_Request_free(&q));
    }
    t_gfree(sb);
    t_gfree(rb);
    t_case("mismatch: groups after them");
    for (k = 0; k < n; k++) {
        madd(k, (k + 1) % n, 0, 4321);
        madd(k, k, 0, 12);
    }
    run(MPI_COMM_WORLD, 1, 0, C_WAITALL, "mismatch: group after them");
    case_persistent(MPI_COMM_WORLD, "after the mismatches", 20);
}

/* Calls that must fail, and the group left usable. */
static void case_errors(void)
{
    int              n = t.size, r, rc, k;
    static const int codes[] = {DPUSHIM_SUCCESS,  DPUSHIM_ERR_OFF,
                                DPUSHIM_ERR_ARG,  DPUSHIM_ERR_NOMEM,
                                MPI_ERR_TRUNCATE, -99};
    int              shim = t_shim_loaded(), x[4] = {0, 0, 0, 0};
    dpushim_group_t  g;
    MPI_Request      q = MPI_REQUEST_NULL;
    set_t           *s;

    t_case("errors: dpushim_available, dpushim_error_string");
    if (dpushim_available() != want_group()) {
        t_fail("dpushim_available() = %d %s the shim", dpushim_available(),
               shim ? "under" : "without");
    }
    for (k = 0; k < (int)(sizeof(codes) / sizeof(codes[0])); k++) {
        const char *m = dpushim_error_string(codes[k]);

        if (m == NULL || m[0] == '\0') {
            t_fail("dpushim_error_string(%d) is %s", codes[k],
                   m == NULL ? "NULL" : "empty");
        }
    }
    t_case("errors: erroneous adds between valid ones");
    for (r = 0; r < n; r++) {
        madd(r, (r + 1) % n, 3, 999);
        madd(r, r, 2, 5);
        madd(r, (r + n - 1) % n, 4, 17);
    }
    s = set_new(MPI_COMM_WORLD, 0, "errors: usable after bad adds");
    s->bad = 1;
    set_fill(s, 0);
    set_post(s, 0, 0);
    complete(s->reqs, s->nreq, C_WAITALL, 1, s->name);
    set_check(s);
    set_free(s);

    /* A group given ops and freed, not ended: no instance taken (the
     * next group must still pair with the other ranks'). */
    t_case("errors: dpushim_group_free of an un-ended group");
    g = (dpushim_group_t)(uintptr_t)0x10;
    rc = dpushim_group_begin(MPI_COMM_WORLD, &g);
    if (begin_ok("dpushim_group_free", rc, g)) {
        if (dpushim_group_send(g, x, 4, MPI_INT, (t.rank + 1) % n, 0) !=
                DPUSHIM_SUCCESS ||
            dpushim_group_recv(g, x, 4, MPI_INT, (t.rank + n - 1) % n, 0) !=
                DPUSHIM_SUCCESS) {
            t_fail("dpushim_group_free case: valid adds refused");
        }
    }
    dpushim_group_free(&g);
    if (g != NULL) {
        t_fail("dpushim_group_free left the group %p", (void *)g);
    }
    dpushim_group_free(&g); /* NULL: nothing to do */
    /* Rank 0 alone frees one more (the others do not): no collective. */
    if (t.rank == 0) {
        rc = dpushim_group_begin(MPI_COMM_WORLD, &g);
        begin_ok("rank 0's extra dpushim_group_free", rc, g);
        dpushim_group_free(&g);
    }

    t_case("errors: bad begin and end arguments");
    rc = dpushim_group_begin(MPI_COMM_NULL, &g);
    if (rc != (shim ? DPUSHIM_ERR_ARG : DPUSHIM_ERR_OFF) || g != NULL) {
        t_fail("dpushim_group_begin(MPI_COMM_NULL) returned %d, group %p", rc,
               (void *)g);
    }
    rc = dpushim_group_begin(MPI_COMM_WORLD, NULL);
    if (rc != (shim ? DPUSHIM_ERR_ARG : DPUSHIM_ERR_OFF)) {
        t_fail("dpushim_group_begin(world, NULL) returned %d", rc);
    }
    g = NULL;
    rc = dpushim_group_end(&g, &q);
    if (rc != (shim ? DPUSHIM_ERR_ARG : DPUSHIM_ERR_OFF)) {
        t_fail("dpushim_group_end of a NULL group returned %d", rc);
    }
    rc = dpushim_group_send(NULL, x, 1, MPI_INT, 0, 0);
    if (rc != (shim ? DPUSHIM_ERR_ARG : DPUSHIM_ERR_OFF)) {
        t_fail("dpushim_group_send to a NULL group returned %d", rc);
    }
    rc = dpushim_group_begin(MPI_COMM_WORLD, &g);
    if (begin_ok("end without a request", rc, g)) {
        rc = dpushim_group_end(&g, NULL);
        if (rc != DPUSHIM_ERR_ARG || g != NULL) {
            t_fail("dpushim_group_end(&g, NULL) returned %d, group %p", rc,
                   (void *)g);
        }
    }
    dpushim_group_free(&g);

    /* An intercommunicator is not for groups. */
    if (n >= 2) {
        MPI_Comm half, inter;

        t_case("errors: intercommunicator");
        MPI_Comm_split(MPI_COMM_WORLD, t.rank % 2, t.rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - t.rank % 2, 5,
                             &inter);
        g = (dpushim_group_t)(uintptr_t)0x10;
        rc = dpushim_group_begin(inter, &g);
        if ((rc != DPUSHIM_ERR_OFF && rc != DPUSHIM_ERR_ARG) || g != NULL) {
            t_fail("dpushim_group_begin on an intercommunicator returned "
                   "%d, group %p",
                   rc, (void *)g);
        }
        dpushim_group_free(&g);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }

    /* The errors took no instance: groups still pair. */
    t_case("errors: a group after them");
    for (r = 0; r < n; r++) {
        madd(r, (r + 1) % n, 0, 321);
    }
    run(MPI_COMM_WORLD, 0, 0, C_WAIT, "errors: group after them");
}

int main(int argc, char **argv)
{
    MPI_Comm rev, half, dup;
    char     hn[40];

    t_init(&argc, &argv, "t_group");
    MPI_Comm_split(MPI_COMM_WORLD, 0, t.size - t.rank, &rev);
    MPI_Comm_split(MPI_COMM_WORLD, t.rank % 2, t.rank, &half);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    snprintf(hn, sizeof(hn), "half %d", t.rank % 2);

    case_rings(MPI_COMM_WORLD, "world");
    case_all_pairs(MPI_COMM_WORLD, "world");
    case_empty(MPI_COMM_WORLD, "world");
    case_same_tag(MPI_COMM_WORLD, "world");
    case_tag_orders(MPI_COMM_WORLD, "world");
    case_self_null(MPI_COMM_WORLD, "world");
    case_far(MPI_COMM_WORLD, "world");
    case_dtypes(MPI_COMM_WORLD, "world");
    case_persistent(MPI_COMM_WORLD, "world", PERS_N);
    case_startall(MPI_COMM_WORLD, "world");
    case_shared(MPI_COMM_WORLD, "world");
    case_many(MPI_COMM_WORLD, "world");
    case_burst(MPI_COMM_WORLD, "world");

    /* Communicator ranks, not world ranks: a reversed world, halves. */
    case_all_pairs(rev, "reversed");
    case_tag_orders(rev, "reversed");
    case_all_pairs(half, hn);
    case_self_null(half, hn);
    case_dtypes(dup, "dup");
    case_startall(half, hn);
    case_outstanding(MPI_COMM_WORLD, dup, half, hn);
    case_shared(rev, "reversed");
    case_burst(half, hn);
    /* A communicator of one rank of its own. */
    case_self_null(MPI_COMM_SELF, "self");
    case_dtypes(MPI_COMM_SELF, "self");
    case_errors();
    case_mismatch();

    MPI_Comm_free(&rev);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    return t_finish();
}
