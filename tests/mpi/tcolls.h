/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Cases of every nonblocking collective, checked against stock MPI
 * (t_colls.c, failover_kinds.c): each c_*() sets one call up, computes
 * what stock MPI delivers on the same inputs, posts it and queues it;
 * run_all() waits for the queue and compares (tc_check). Include after
 * tcommon.h.
 */
#ifndef TCOLLS_H
#define TCOLLS_H

#define MAXOPS 512

typedef struct tc {
    char         name[160];
    MPI_Request  req;
    int          nbuf;
    void        *buf[3]; /* compared after completion with ref */
    void        *ref[3];
    size_t       len[3];
    void        *own[6];     /* to free */
    MPI_Datatype types[128]; /* to free after completion */
    int          ntypes;
    /* Array arguments: the standard wants them untouched until the call
     * completes (Open MPI's libnbc reads Ialltoallw's types then). */
    int          arr[4][64];
    MPI_Datatype dts[4][64];
} tc_t;

static tc_t ops[MAXOPS];
static int  nops;

static inline tc_t *tc_new(const char *fmt, ...)
{
    tc_t   *o = &ops[nops++];
    va_list ap;

    memset(o, 0, sizeof(*o));
    va_start(ap, fmt);
    vsnprintf(o->name, sizeof(o->name), fmt, ap);
    va_end(ap);
    o->req = MPI_REQUEST_NULL;
    return o;
}

/* A buffer of n bytes to free with o; fill: pattern (seed, a, b) or
 * poison. */
static inline void *tc_buf(tc_t *o, size_t n, int fill, uint32_t seed, int a,
                           int b)
{
    void *p = t_xmalloc(n + 1);
    int   i;

    if (fill) {
        t_pat_fill(p, n, seed, a, b);
    } else {
        memset(p, T_POISON, n);
    }
    for (i = 0; o->own[i] != NULL; i++) {
    }
    o->own[i] = p;
    return p;
}

/* After completion, buf must equal what ref holds now. */
static inline void tc_expect(tc_t *o, void *buf, const void *ref, size_t n)
{
    o->buf[o->nbuf] = buf;
    o->ref[o->nbuf] = tc_buf(o, n, 0, 0, 0, 0);
    memcpy(o->ref[o->nbuf], ref, n);
    o->len[o->nbuf++] = n;
}

static inline void tc_check(tc_t *o)
{
    char w[200];

    for (int i = 0; i < o->nbuf; i++) {
        snprintf(w, sizeof(w), "%.150s (buffer %d)", o->name, i);
        t_same(w, o->buf[i], o->ref[i], o->len[i]);
    }
    for (int i = 0; o->own[i] != NULL; i++) {
        free(o->own[i]);
    }
    for (int i = 0; i < o->ntypes; i++) {
        MPI_Type_free(&o->types[i]);
    }
}

/* Run what is queued: post order is set up order; wait for all, while
 * point-to-point messages go round the ring of comm (the one the batch
 * is on: ranks of other communicators run other batches). */
static inline void run_all(MPI_Comm comm)
{
    MPI_Request *r = t_xmalloc(sizeof(MPI_Request) * (size_t)(nops + 2));
    int          me, p, right, left, out[64], in[64], i;

    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    right = (me + 1) % p;
    left = (me + p - 1) % p;
    for (i = 0; i < 64; i++) {
        out[i] = me * 1000 + i;
    }
    T_MPI(MPI_Irecv(in, 64, MPI_INT, left, 77, comm, &r[nops]));
    T_MPI(MPI_Isend(out, 64, MPI_INT, right, 77, comm, &r[nops + 1]));
    for (i = 0; i < nops; i++) {
        r[i] = ops[i].req;
    }
    T_MPI(MPI_Waitall(nops + 2, r, t_statuses_ignore));
    for (i = 0; i < 64; i++) {
        if (in[i] != left * 1000 + i) {
            t_fail("ring message from rank %d: element %d is %d", left, i,
                   in[i]);
            break;
        }
    }
    for (i = 0; i < nops; i++) {
        t_case("check %s", ops[i].name);
        tc_check(&ops[i]);
    }
    nops = 0;
    free(r);
}

/* ---- data types -------------------------------------------------------- */

/* Element types of the movement collectives: contiguous ints, a strided
 * vector (gaps), a resized int with holes between elements. */
enum { TY_INT, TY_VEC, TY_HOLE, TY_N };
static MPI_Datatype ty[TY_N];
static const char  *ty_name[TY_N]
    __attribute__((unused)) = {"int", "vector", "resized"};

static inline void types_make(void)
{
    MPI_Datatype v;

    ty[TY_INT] = MPI_INT;
    MPI_Type_vector(2, 3, 5, MPI_INT, &v); /* 6 ints over 8 */
    MPI_Type_commit(&v);
    ty[TY_VEC] = v;
    MPI_Type_create_resized(MPI_INT, 0, 12, &ty[TY_HOLE]);
    MPI_Type_commit(&ty[TY_HOLE]);
}

/* Bytes spanned by n elements of type (extent x n). */
static inline size_t span(MPI_Datatype type, int n)
{
    MPI_Aint lb, ext;

    MPI_Type_get_extent(type, &lb, &ext);
    return (size_t)ext * (size_t)(n > 0 ? n : 0) + 64;
}

/* ---- movement ----------------------------------------------------------- */

static inline void c_bcast(MPI_Comm comm, const char *cn, int root, int ti,
                           int n)
{
    int      me;
    tc_t    *o = tc_new("ibcast %s root %d %s x%d", cn, root, ty_name[ti], n);
    uint32_t seed = t_seed();
    size_t   len = span(ty[ti], n);
    void    *b, *ref;

    MPI_Comm_rank(comm, &me);
    b = tc_buf(o, len, me == root, seed, root, 0);
    ref = tc_buf(o, len, 0, 0, 0, 0);
    memcpy(ref, b, len);
    T_MPI(PMPI_Bcast(ref, n, ty[ti], root, comm));
    tc_expect(o, b, ref, len);
    t_expect(T_BCAST, comm, n, ty[ti], 1);
    T_MPI(MPI_Ibcast(b, n, ty[ti], root, comm, &o->req));
}

/* gather, scatter (regular): in place at the root or not. */
static inline void c_rooted(int gather, MPI_Comm comm, const char *cn,
                            int root, int ti, int n, int in_place)
{
    int      me, p;
    tc_t    *o;
    uint32_t seed = t_seed();
    size_t   one, many;
    void    *sb, *rb, *ref;

    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    in_place &= me == root;
    o = tc_new("%s %s root %d %s x%d%s", gather ? "igather" : "iscatter", cn,
               root, ty_name[ti], n, in_place ? " in place" : "");
    one = span(ty[ti], n);
    many = span(ty[ti], n * p);
    if (gather) {
        sb = tc_buf(o, one, 1, seed, me, 0);
        rb = tc_buf(o, many, me == root, seed, me, 1);
        ref = tc_buf(o, many, 0, 0, 0, 0);
        memcpy(ref, rb, many);
        T_MPI(PMPI_Gather(in_place ? MPI_IN_PLACE : sb, n, ty[ti], ref, n,
                          ty[ti], root, comm));
        if (me == root) {
            tc_expect(o, rb, ref, many);
        }
        tc_expect(o, sb, sb, one);
        T_MPI(MPI_Igather(in_place ? MPI_IN_PLACE : sb, n, ty[ti], rb, n,
                          ty[ti], root, comm, &o->req));
    } else {
        sb = tc_buf(o, many, me == root, seed, me, 0);
        rb = tc_buf(o, one, in_place, seed, me, 1);
        ref = tc_buf(o, one, 0, 0, 0, 0);
        memcpy(ref, rb, one);
        T_MPI(PMPI_Scatter(sb, n, ty[ti], in_place ? MPI_IN_PLACE : ref, n,
                           ty[ti], root, comm));
        tc_expect(o, rb, ref, one);
        tc_expect(o, sb, sb, many);
        T_MPI(MPI_Iscatter(sb, n, ty[ti], in_place ? MPI_IN_PLACE : rb, n,
                           ty[ti], root, comm, &o->req));
    }
    t_count(gather ? "igather" : "iscatter", n > 0);
}

/* Counts of the v-variants: some zero; displacements in reverse order
 * with gaps. */
static inline int vcount(int i, int n)
{
    return n == 0 ? 0 : (i * 3 + 1) % 4 * n;
}

static inline int vlayout(int p, int n, int *cnt, int *dsp)
{
    int i, at = 1;

    for (i = p - 1; i >= 0; i--) {
        cnt[i] = vcount(i, n);
        dsp[i] = at;
        at += cnt[i] + 2;
    }
    return at;
}

static inline void c_rooted_v(int gather, MPI_Comm comm, const char *cn,
                              int root, int ti, int n, int in_place)
{
    int      me, p, *cnt, *dsp, tot;
    tc_t    *o;
    uint32_t seed = t_seed();
    size_t   one, many;
    void    *sb, *rb, *ref;

    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    in_place &= me == root;
    o = tc_new("%s %s root %d %s x%d%s", gather ? "igatherv" : "iscatterv", cn,
               root, ty_name[ti], n, in_place ? " in place" : "");
    cnt = o->arr[0];
    dsp = o->arr[1];
    tot = vlayout(p, n, cnt, dsp);
    one = span(ty[ti], cnt[me]);
    many = span(ty[ti], tot);
    if (gather) {
        sb = tc_buf(o, one, 1, seed, me, 0);
        rb = tc_buf(o, many, me == root, seed, me, 1);
        ref = tc_buf(o, many, 0, 0, 0, 0);
        memcpy(ref, rb, many);
        T_MPI(PMPI_Gatherv(in_place ? MPI_IN_PLACE : sb, cnt[me], ty[ti], ref,
                           cnt, dsp, ty[ti], root, comm));
        if (me == root) {
            tc_expect(o, rb, ref, many);
        }
        tc_expect(o, sb, sb, one);
        T_MPI(MPI_Igatherv(in_place ? MPI_IN_PLACE : sb, cnt[me], ty[ti], rb,
                           cnt, dsp, ty[ti], root, comm, &o->req));
    } else {
        sb = tc_buf(o, many, me == root, seed, me, 0);
        rb = tc_buf(o, one, in_place, seed, me, 1);
        ref = tc_buf(o, one, 0, 0, 0, 0);
        memcpy(ref, rb, one);
        T_MPI(PMPI_Scatterv(sb, cnt, dsp, ty[ti],
                            in_place ? MPI_IN_PLACE : ref, cnt[me], ty[ti],
                            root, comm));
        tc_expect(o, rb, ref, one);
        tc_expect(o, sb, sb, many);
        T_MPI(MPI_Iscatterv(sb, cnt, dsp, ty[ti], in_place ? MPI_IN_PLACE : rb,
                            cnt[me], ty[ti], root, comm, &o->req));
    }
    t_count(gather ? "igatherv" : "iscatterv", 1);
}

static inline void c_allgather(int v, MPI_Comm comm, const char *cn, int ti,
                               int n, int in_place)
{
    int      me, p, *cnt, *dsp, tot, i;
    tc_t    *o;
    uint32_t seed = t_seed();
    size_t   one, many;
    void    *sb, *rb, *ref;
    MPI_Aint lb, ext;

    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    MPI_Type_get_extent(ty[ti], &lb, &ext);
    o = tc_new("%s %s %s x%d%s", v ? "iallgatherv" : "iallgather", cn,
               ty_name[ti], n, in_place ? " in place" : "");
    cnt = o->arr[0];
    dsp = o->arr[1];
    if (v) {
        tot = vlayout(p, n, cnt, dsp);
        if (p == 1) {
            /* MPICH 4.0's one-rank MPI_Allgatherv ignores the
             * displacement (it writes the block at the start). */
            dsp[0] = 0;
        }
    } else {
        for (i = 0; i < p; i++) {
            cnt[i] = n;
            dsp[i] = i * n;
        }
        tot = n * p;
    }
    one = span(ty[ti], cnt[me]);
    many = span(ty[ti], tot);
    sb = tc_buf(o, one, 1, seed, me, 0);
    rb = tc_buf(o, many, 0, 0, 0, 0);
    if (in_place) {
        /* Our block where it belongs: the same bytes PMPI starts from. */
        T_MPI(MPI_Sendrecv(sb, cnt[me], ty[ti], 0, 5,
                           (char *)rb + (MPI_Aint)dsp[me] * ext, cnt[me],
                           ty[ti], 0, 5, MPI_COMM_SELF, MPI_STATUS_IGNORE));
    }
    ref = tc_buf(o, many, 0, 0, 0, 0);
    memcpy(ref, rb, many);
    if (v) {
        T_MPI(PMPI_Allgatherv(in_place ? MPI_IN_PLACE : sb, cnt[me], ty[ti],
                              ref, cnt, dsp, ty[ti], comm));
        T_MPI(MPI_Iallgatherv(in_place ? MPI_IN_PLACE : sb, cnt[me], ty[ti],
                              rb, cnt, dsp, ty[ti], comm, &o->req));
    } else {
        T_MPI(PMPI_Allgather(in_place ? MPI_IN_PLACE : sb, n, ty[ti], ref, n,
                             ty[ti], comm));
        T_MPI(MPI_Iallgather(in_place ? MPI_IN_PLACE : sb, n, ty[ti], rb, n,
                             ty[ti], comm, &o->req));
    }
    tc_expect(o, rb, ref, many);
    tc_expect(o, sb, sb, one);
    t_count(v ? "iallgatherv" : "iallgather", n > 0);
}

static inline void c_alltoall(MPI_Comm comm, const char *cn, int sti, int rti,
                              int n, int in_place)
{
    int      me, p;
    tc_t    *o;
    uint32_t seed = t_seed();
    size_t   slen, rlen;
    void    *sb, *rb, *ref;

    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    if (in_place) {
        sti = rti;
    }
    o = tc_new("ialltoall %s %s->%s x%d%s", cn, ty_name[sti], ty_name[rti], n,
               in_place ? " in place" : "");
    slen = span(ty[sti], n * p);
    rlen = span(ty[rti], n * p);
    sb = tc_buf(o, slen, 1, seed, me, 0);
    rb = tc_buf(o, rlen, in_place, seed, me, 1);
    ref = tc_buf(o, rlen, 0, 0, 0, 0);
    memcpy(ref, rb, rlen);
    T_MPI(t_ref_alltoall(in_place ? MPI_IN_PLACE : sb, n, ty[sti], ref, n,
                         ty[rti], comm));
    tc_expect(o, rb, ref, rlen);
    tc_expect(o, sb, sb, slen);
    t_expect(T_A2A, comm, n, ty[rti], 1);
    T_MPI(MPI_Ialltoall(in_place ? MPI_IN_PLACE : sb, n, ty[sti], rb, n,
                        ty[rti], comm, &o->req));
}

/* What rank a sends rank b in the v and w variants (elements). */
static inline int a2a_count(int a, int b, int n)
{
    return n == 0 ? 0 : ((a + 2 * b) % 3) * n;
}

static inline void c_alltoallv(MPI_Comm comm, const char *cn, int ti, int n,
                               int in_place)
{
    int      me, p, *sc, *sd, *rc, *rd, i, sat = 2, rat = 3;
    tc_t    *o;
    uint32_t seed = t_seed();
    size_t   slen, rlen;
    void    *sb, *rb, *ref;

    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    o = tc_new("ialltoallv %s %s x%d%s", cn, ty_name[ti], n,
               in_place ? " in place" : "");
    sc = o->arr[0];
    sd = o->arr[1];
    rc = o->arr[2];
    rd = o->arr[3];
    for (i = p - 1; i >= 0; i--) {
        sc[i] = a2a_count(me, i, n);
        rc[i] = a2a_count(i, me, n);
        sd[i] = sat;
        rd[i] = rat;
        sat += sc[i] + 1;
        rat += rc[i] + 2;
    }
    if (in_place) {
        /* MPI_IN_PLACE: what goes to i is what comes from i. */
        for (i = 0; i < p; i++) {
            rc[i] = a2a_count(i, me, n) > a2a_count(me, i, n)
                        ? a2a_count(i, me, n)
                        : a2a_count(me, i, n);
        }
        for (i = p - 1, rat = 3; i >= 0; i--) {
            rd[i] = rat;
            rat += rc[i] + 2;
        }
    }
    slen = span(ty[ti], sat);
    rlen = span(ty[ti], rat);
    sb = tc_buf(o, slen, 1, seed, me, 0);
    rb = tc_buf(o, rlen, in_place, seed, me, 1);
    ref = tc_buf(o, rlen, 0, 0, 0, 0);
    memcpy(ref, rb, rlen);
    if (in_place) {
        T_MPI(PMPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, ty[ti], ref, rc, rd,
                             ty[ti], comm));
        T_MPI(MPI_Ialltoallv(MPI_IN_PLACE, NULL, NULL, ty[ti], rb, rc, rd,
                             ty[ti], comm, &o->req));
    } else {
        T_MPI(PMPI_Alltoallv(sb, sc, sd, ty[ti], ref, rc, rd, ty[ti], comm));
        T_MPI(MPI_Ialltoallv(sb, sc, sd, ty[ti], rb, rc, rd, ty[ti], comm,
                             &o->req));
    }
    tc_expect(o, rb, ref, rlen);
    tc_expect(o, sb, sb, slen);
    t_count("ialltoallv", 1);
}

/* Alltoallw: block to/from rank i is of type ty[(i + me) % 2] on the
 * send side and ty[(i + me + 1) % 2]... with the same signature (ints). */
static inline void c_alltoallw(MPI_Comm comm, const char *cn, int n,
                               int bottom)
{
    int           me, p, *sc, *sd, *rc, *rd, i;
    MPI_Datatype *st, *rt;
    MPI_Aint      sat = 8, rat = 16;
    tc_t         *o;
    uint32_t      seed = t_seed();
    size_t        slen, rlen;
    char         *sb, *rb, *ref;

    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    o = tc_new("ialltoallw %s x%d%s", cn, n, bottom ? " MPI_BOTTOM" : "");
    sc = o->arr[0];
    sd = o->arr[1];
    rc = o->arr[2];
    rd = o->arr[3];
    st = o->dts[0];
    rt = o->dts[1];
    for (i = 0; i < p; i++) {
        sc[i] = a2a_count(me, i, n) * 6;
        rc[i] = a2a_count(i, me, n) * 6;
        st[i] = (i + me) % 2 ? ty[TY_INT] : ty[TY_HOLE];
        rt[i] = (i + me) % 2 ? ty[TY_HOLE] : ty[TY_INT];
        sd[i] = (int)sat;
        rd[i] = (int)rat;
        sat += (MPI_Aint)span(st[i], sc[i]);
        rat += (MPI_Aint)span(rt[i], rc[i]);
    }
    slen = (size_t)sat;
    rlen = (size_t)rat;
    sb = tc_buf(o, slen, 1, seed, me, 0);
    rb = tc_buf(o, rlen, 0, 0, 0, 0);
    ref = tc_buf(o, rlen, 0, 0, 0, 0);
    if (p > 1) {
        T_MPI(PMPI_Alltoallw(sb, sc, sd, st, ref, rc, rd, rt, comm));
    } else {
        /* Open MPI 4.1's one-rank Alltoallw is wrong (header comment). */
        T_MPI(PMPI_Sendrecv(sb + sd[0], sc[0], st[0], 0, 9, ref + rd[0], rc[0],
                            rt[0], 0, 9, comm, MPI_STATUS_IGNORE));
    }
    if (bottom) {
        /* Absolute addresses: ints fit them only near address 0, so the
         * displacements stay relative and MPI_BOTTOM is the base through
         * a struct type per block instead. */
        MPI_Datatype *sst = o->dts[2], *rst = o->dts[3];

        for (i = 0; i < p; i++) {
            int      one = 1;
            MPI_Aint a;

            MPI_Get_address(sb + sd[i], &a);
            MPI_Type_create_struct(1, &sc[i], &a, &st[i], &sst[i]);
            MPI_Type_commit(&sst[i]);
            MPI_Get_address(rb + rd[i], &a);
            MPI_Type_create_struct(1, &rc[i], &a, &rt[i], &rst[i]);
            MPI_Type_commit(&rst[i]);
            sc[i] = rc[i] = one;
            sd[i] = rd[i] = 0;
        }
        T_MPI(MPI_Ialltoallw(MPI_BOTTOM, sc, sd, sst, MPI_BOTTOM, rc, rd, rst,
                             comm, &o->req));
        for (i = 0; i < p; i++) {
            o->types[o->ntypes++] = sst[i];
            o->types[o->ntypes++] = rst[i];
        }
    } else {
        T_MPI(MPI_Ialltoallw(sb, sc, sd, st, rb, rc, rd, rt, comm, &o->req));
    }
    tc_expect(o, rb, ref, rlen);
    tc_expect(o, sb, sb, slen);
    t_count("ialltoallw", 1);
}

/* ---- reductions --------------------------------------------------------- */

typedef struct red {
    const char  *name;
    MPI_Datatype type;
    MPI_Op       op;
    int          esize;   /* bytes of an element in memory (extent) */
    int          offload; /* the shim takes it */
} red_t;

static MPI_Op       user_sum;
static MPI_Datatype vec3; /* 3 ints of every 4: derived, one type */

static inline void my_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int *a = in, *b = inout;

    (void)dt;
    for (int i = 0; i < *len; i++) {
        b[i] += a[i];
    }
}

static red_t reds[8];
static int   nreds;

static inline void reds_make(void)
{
    MPI_Op_create(my_sum, 1, &user_sum);
    MPI_Type_vector(1, 3, 4, MPI_INT, &vec3);
    MPI_Type_create_resized(vec3, 0, 16, &vec3);
    MPI_Type_commit(&vec3);
    reds[nreds++] = (red_t){"int sum", MPI_INT, MPI_SUM, 4, 1};
    reds[nreds++] = (red_t){"int max", MPI_INT, MPI_MAX, 4, 1};
    reds[nreds++] = (red_t){"uint64 bxor", MPI_UINT64_T, MPI_BXOR, 8, 1};
    reds[nreds++] = (red_t){"double sum", MPI_DOUBLE, MPI_SUM, 8, 1};
    reds[nreds++] =
        (red_t){"double_int maxloc", MPI_DOUBLE_INT, MPI_MAXLOC, 16, 1};
    reds[nreds++] = (red_t){"2int minloc", MPI_2INT, MPI_MINLOC, 8, 1};
    /* Both MPIs refuse predefined operations on derived types: so must
     * the shim (it leaves them to MPI). */
    reds[nreds++] = (red_t){"vec3 sum", vec3, MPI_SUM, 16, -1};
    reds[nreds++] = (red_t){"int user op", MPI_INT, user_sum, 4, 0};
}

/* Inputs: small integers (exact sums in any order), with ties for the
 * loc operations; gaps and padding poisoned alike everywhere. */
static inline void red_fill(const red_t *r, void *buf, int n, int me, int salt)
{
    char *p = buf;

    memset(buf, T_POISON, (size_t)n * (size_t)r->esize + 64);
    for (int i = 0; i < n; i++) {
        int v = (int)((t_mix64((uint64_t)(me * 7919 + i * 31 + salt)) % 201) -
                      100);
        int idx = me;

        if (r->type == MPI_DOUBLE_INT) {
            double d = (double)(v % 7);

            memcpy(p + (size_t)i * 16, &d, 8);
            memcpy(p + (size_t)i * 16 + 8, &idx, 4);
        } else if (r->type == MPI_2INT) {
            int w = v % 5;

            memcpy(p + (size_t)i * 8, &w, 4);
            memcpy(p + (size_t)i * 8 + 4, &idx, 4);
        } else if (r->type == MPI_DOUBLE) {
            double d = v;

            memcpy(p + (size_t)i * 8, &d, 8);
        } else if (r->type == MPI_UINT64_T) {
            uint64_t u = t_mix64((uint64_t)v + (uint64_t)salt);

            memcpy(p + (size_t)i * 8, &u, 8);
        } else if (r->type == vec3) {
            for (int k = 0; k < 3; k++) {
                int w = v + k;

                memcpy(p + (size_t)i * 16 + (size_t)k * 4, &w, 4);
            }
        } else {
            memcpy(p + (size_t)i * 4, &v, 4);
        }
    }
}

enum { R_REDUCE, R_ALLREDUCE, R_RSB, R_RS, R_SCAN, R_EXSCAN };
static const char *rname[] __attribute__((unused)) = {
    "ireduce",         "iallreduce", "ireduce_scatter_block",
    "ireduce_scatter", "iscan",      "iexscan"};

static inline void c_reduce(int kind, MPI_Comm comm, const char *cn,
                            const red_t *r, int root, int n, int in_place)
{
    int    me, p, *rc, tot = n, rcount = n, i;
    tc_t  *o;
    size_t slen, rlen;
    void  *sb, *rb, *ref;
    int    salt = (int)t_seed();

    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    if (kind == R_REDUCE) {
        in_place &= me == root;
    }
#ifdef MPICH_VERSION
    /* MPICH 4.0.2's MPI_Ireduce_scatter in place with a user-defined
     * operation aborts from 8 ranks on ("memcpy argument memory ranges
     * overlap" in its yaksa pack; 30000 ints, counts 0, n, 2n, ...),
     * without the shim too, which leaves such calls to it: out of place
     * there. */
    if (kind == R_RS && in_place && r->offload == 0 && p >= 8) {
        in_place = 0;
    }
#endif
    o = tc_new("%s %s %s x%d root %d%s", rname[kind], cn, r->name, n, root,
               in_place ? " in place" : "");
    rc = o->arr[0];
    if (kind == R_RSB) {
        tot = n * p;
    } else if (kind == R_RS) {
        for (i = 0, tot = 0; i < p; i++) {
            rc[i] = (i % 3) * n;
            tot += rc[i];
        }
        rcount = rc[me];
    }
    slen = (size_t)tot * (size_t)r->esize + 64;
    rlen = (size_t)(in_place ? tot : rcount) * (size_t)r->esize + 64;
    sb = tc_buf(o, slen, 0, 0, 0, 0);
    red_fill(r, sb, tot, me, salt);
    rb = tc_buf(o, rlen > slen ? rlen : slen, 0, 0, 0, 0);
    if (in_place) {
        memcpy(rb, sb, slen);
    }
    ref = tc_buf(o, rlen > slen ? rlen : slen, 0, 0, 0, 0);
    memcpy(ref, rb, rlen > slen ? rlen : slen);
    t_case("%s", o->name);
    {
        /* Stock MPI always from sb, never in place: MPICH 4.0's
         * MPI_Reduce crashes rank 0 (a read at address -1) in the call
         * after one with MPI_IN_PLACE at the root, for large counts. The
         * inputs are the same. */
        const void *s = in_place ? MPI_IN_PLACE : sb;
        int         rr, rg;

        switch (kind) {
        case R_REDUCE:
            rr = PMPI_Reduce(sb, ref, n, r->type, r->op, root, comm);
            rg = MPI_Ireduce(s, rb, n, r->type, r->op, root, comm, &o->req);
            break;
        case R_ALLREDUCE:
            rr = PMPI_Allreduce(sb, ref, n, r->type, r->op, comm);
            rg = MPI_Iallreduce(s, rb, n, r->type, r->op, comm, &o->req);
            break;
        case R_RSB:
            rr = PMPI_Reduce_scatter_block(sb, ref, n, r->type, r->op, comm);
            rg = MPI_Ireduce_scatter_block(s, rb, n, r->type, r->op, comm,
                                           &o->req);
            break;
        case R_RS:
            rr = PMPI_Reduce_scatter(sb, ref, rc, r->type, r->op, comm);
            rg = MPI_Ireduce_scatter(s, rb, rc, r->type, r->op, comm, &o->req);
            break;
        case R_SCAN:
            rr = PMPI_Scan(sb, ref, n, r->type, r->op, comm);
            rg = MPI_Iscan(s, rb, n, r->type, r->op, comm, &o->req);
            break;
        default:
            rr = PMPI_Exscan(sb, ref, n, r->type, r->op, comm);
            rg = MPI_Iexscan(s, rb, n, r->type, r->op, comm, &o->req);
            break;
        }
        if (r->offload < 0) {
            /* Stock MPI refuses it: so must the call through the shim. */
            if (rr == MPI_SUCCESS || rg == MPI_SUCCESS) {
                t_fail("%s: stock MPI returned %d, through the shim %d: "
                       "both must refuse",
                       o->name, rr, rg);
            }
            o->req = MPI_REQUEST_NULL;
            t_count(rname[kind], 0);
            return;
        }
        if (rr != MPI_SUCCESS || rg != MPI_SUCCESS) {
            t_fail("%s: stock MPI returned %d, through the shim %d", o->name,
                   rr, rg);
        }
    }
    /* Significant results only: the root's for reduce; the front block
     * for reduce_scatter in place; none on rank 0 of exscan. */
    if ((kind != R_REDUCE || me == root) && (kind != R_EXSCAN || me > 0)) {
        size_t n_out = (size_t)rcount * (size_t)r->esize;

        if (in_place && (kind == R_RSB || kind == R_RS)) {
            tc_expect(o, rb, ref, n_out);
        } else {
            tc_expect(o, rb, ref,
                      kind == R_REDUCE || kind == R_ALLREDUCE ||
                              kind == R_SCAN || kind == R_EXSCAN
                          ? rlen
                          : n_out);
        }
    }
    if (!in_place) {
        tc_expect(o, sb, sb, slen);
    }
    t_count(rname[kind], r->offload > 0 && tot > 0 && n > 0);
}

/* ---- the cases ---------------------------------------------------------- */

static inline void barrier_case(MPI_Comm comm, const char *cn)
{
    tc_t *o = tc_new("ibarrier %s", cn);

    T_MPI(MPI_Ibarrier(comm, &o->req));
    t_count("ibarrier", 1);
}

static inline void movement(MPI_Comm comm, const char *cn, int n)
{
    int p, root, ti, ip;

    MPI_Comm_size(comm, &p);
    barrier_case(comm, cn);
    for (root = 0; root < p; root++) {
        for (ti = 0; ti < TY_N; ti++) {
            c_bcast(comm, cn, root, ti, n);
            for (ip = 0; ip < 2; ip++) {
                c_rooted(1, comm, cn, root, ti, n, ip);
                c_rooted(0, comm, cn, root, ti, n, ip);
                c_rooted_v(1, comm, cn, root, ti, n, ip);
                c_rooted_v(0, comm, cn, root, ti, n, ip);
            }
        }
        run_all(comm);
    }
    for (ti = 0; ti < TY_N; ti++) {
        for (ip = 0; ip < 2; ip++) {
            c_allgather(0, comm, cn, ti, n, ip);
            c_allgather(1, comm, cn, ti, n, ip);
            /* Same signature, other layout: int <-> resized int. */
            c_alltoall(comm, cn, ti, ti == TY_VEC ? TY_VEC : TY_HOLE - ti, n,
                       ip);
            c_alltoallv(comm, cn, ti, n, ip);
        }
    }
    c_alltoallw(comm, cn, n, 0);
    c_alltoallw(comm, cn, n, 1);
    run_all(comm);
}

static inline void reductions(MPI_Comm comm, const char *cn, int n)
{
    int p, k, ri, ip;

    MPI_Comm_size(comm, &p);
    for (k = R_REDUCE; k <= R_EXSCAN; k++) {
        for (ri = 0; ri < nreds; ri++) {
            for (ip = 0; ip < 2; ip++) {
                c_reduce(k, comm, cn, &reds[ri], (ri + k) % p, n, ip);
            }
        }
        run_all(comm);
    }
}

#endif
