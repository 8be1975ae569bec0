/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Derived datatypes of every constructor, against stock MPI: each
 * collective's receive buffer, gaps included, must be byte for byte what
 * the blocking PMPI_* call leaves on the same inputs. The types: vector,
 * hvector of a struct with holes, indexed with an empty block and
 * displacements out of address order (type-map order is not address
 * order), hindexed_block backwards, subarrays in C and Fortran order,
 * resized with a negative lower bound, contiguous of a vector, dup, and
 * two the shim cannot flatten and packs with MPI_Pack instead: a struct of
 * MPI_SHORT_INT (a named type with a hole) and a darray; and a vector
 * of runs long enough to be read into place. Each on the
 * receive side alone, on both sides, and against another layout of the
 * same signature; in Ialltoall (and in place), Ialltoallv, Ialltoallw,
 * Igather, Iscatter, Iallgather and Ibcast, every root.
 *
 * Under the shim with the direct data path, receives into long enough
 * runs of types it can flatten are read by the DMA engines straight into
 * place (iovecs), and sends from such types are read in place from the
 * sender's memory: the statistics must show scattered and gathered > 0.
 */
#include "tcommon.h"

enum { NT = 12 };

static MPI_Datatype ty[NT], flat[NT]; /* flat: same signature, packed */
static const char  *tname[NT] = {"vector",       "hvector of struct",
                                 "indexed",      "hindexed_block",
                                 "subarray C",   "subarray Fortran",
                                 "resized lb<0", "contiguous of vector",
                                 "dup",          "struct of MPI_SHORT_INT",
                                 "darray",       "vector of 2400 B runs"};
#define PRE 64 /* room before a buffer, for the negative lower bound */

static MPI_Datatype commit(MPI_Datatype t)
{
    T_MPI(MPI_Type_commit(&t));
    return t;
}

static void types_make(void)
{
    MPI_Datatype st, v, sub;
    int          bl3[3] = {2, 0, 3}, d3[3] = {7, 1, 0}, bl2[2] = {1, 1};
    MPI_Aint     hd[2] = {24, 0}, sd[2] = {0, 8};
    MPI_Datatype sty[2] = {MPI_INT, MPI_DOUBLE};
    int          sz3[3] = {4, 5, 6}, sub3[3] = {2, 3, 4}, st3[3] = {1, 1, 2};
    int          sz2[2] = {6, 5}, sub2[2] = {3, 2}, st2[2] = {2, 1};
    int          gs[1] = {8 * 3}, distrib[1] = {MPI_DISTRIBUTE_BLOCK};
    int          dargs[1] = {MPI_DISTRIBUTE_DFLT_DARG}, ps[1] = {3};

    ty[0] = commit((MPI_Type_vector(3, 2, 5, MPI_INT, &v), v));
    MPI_Type_create_struct(2, bl2, sd, sty, &st); /* int, hole, double */
    ty[1] = commit((MPI_Type_create_hvector(2, 2, 40, st, &v), v));
    ty[2] = commit((MPI_Type_indexed(3, bl3, d3, MPI_INT, &v), v));
    ty[3] =
        commit((MPI_Type_create_hindexed_block(2, 3, hd, MPI_SHORT, &v), v));
    ty[4] = commit((MPI_Type_create_subarray(3, sz3, sub3, st3, MPI_ORDER_C,
                                             MPI_DOUBLE, &v),
                    v));
    ty[5] = commit((MPI_Type_create_subarray(2, sz2, sub2, st2,
                                             MPI_ORDER_FORTRAN, MPI_INT, &v),
                    v));
    MPI_Type_vector(2, 1, 3, MPI_INT, &sub);
    ty[6] = commit((MPI_Type_create_resized(sub, -8, 28, &v), v));
    ty[7] = commit((MPI_Type_contiguous(2, sub, &v), v));
    MPI_Type_free(&sub);
    ty[8] = commit((MPI_Type_dup(ty[1], &v), v));
    {
        int          one[1] = {2};
        MPI_Aint     z[1] = {0};
        MPI_Datatype si[1] = {MPI_SHORT_INT};

        ty[9] = commit((MPI_Type_create_struct(1, one, z, si, &v), v));
    }
    ty[10] = commit((MPI_Type_create_darray(3, 1, 1, gs, distrib, dargs, ps,
                                            MPI_ORDER_C, MPI_INT, &v),
                     v));
    /* Runs long enough to be read into place even with few elements. */
    ty[11] = commit((MPI_Type_vector(2, 600, 1000, MPI_INT, &v), v));
    MPI_Type_free(&st);
    for (int i = 0; i < NT; i++) {
        int size;

        MPI_Type_size(ty[i], &size);
        /* The other layout: the same bytes back to back. (A byte stream
         * against typed data: MPI does not check type matching on a
         * homogeneous system, and the reference is the blocking call
         * on the same arguments.) */
        flat[i] = commit((MPI_Type_contiguous(size, MPI_BYTE, &v), v));
    }
}

/* Bytes a buffer of n elements of t spans, from its lower bound. */
static size_t span(MPI_Datatype t, int n)
{
    MPI_Aint lb, ext, tlb, text;

    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_true_extent(t, &tlb, &text);
    return n > 0 ? (size_t)(PRE + (n - 1) * ext + tlb + text + PRE) : PRE;
}

typedef struct {
    char  *got, *ref;
    size_t n;
} pair_t;

static void pair_make(pair_t *p, size_t n, uint32_t seed)
{
    p->n = n;
    p->got = t_xmalloc(n);
    p->ref = t_xmalloc(n);
    t_pat_fill(p->got, n, seed, t.rank, 99); /* the gaps' contents */
    memcpy(p->ref, p->got, n);
}

static void pair_check(pair_t *p, const char *what)
{
    t_same(what, p->got, p->ref, p->n);
    free(p->got);
    free(p->ref);
}

/* Ialltoall: ts (send type) and tr (receive type), n of each per peer. */
static void alltoall(MPI_Comm comm, MPI_Datatype ts, MPI_Datatype tr, int n,
                     const char *what)
{
    int         size;
    pair_t      s, r;
    MPI_Request q;

    MPI_Comm_size(comm, &size);
    pair_make(&s, span(ts, n * size), t_seed());
    pair_make(&r, span(tr, n * size), t_seed());
    T_MPI(t_ref_alltoall(s.ref + PRE, n, ts, r.ref + PRE, n, tr, comm));
    T_MPI(MPI_Ialltoall(s.got + PRE, n, ts, r.got + PRE, n, tr, comm, &q));
    t_expect(T_A2A, comm, n, ts, 0);
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    pair_check(&r, what);
    pair_check(&s, what);
}

static void alltoall_in_place(MPI_Comm comm, MPI_Datatype tr, int n,
                              const char *what)
{
    int         size;
    pair_t      r;
    MPI_Request q;

    MPI_Comm_size(comm, &size);
    pair_make(&r, span(tr, n * size), t_seed());
    T_MPI(t_ref_alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r.ref + PRE, n,
                         tr, comm));
    T_MPI(MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r.got + PRE, n, tr,
                        comm, &q));
    t_expect(T_A2A, comm, n, tr, 0);
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    pair_check(&r, what);
}

/* Ialltoallv: peer p gets (rank + p) % 3 + 1 elements, spaced apart. */
static void alltoallv(MPI_Comm comm, MPI_Datatype ts, MPI_Datatype tr,
                      const char *what)
{
    int         size, rank, *sc, *sd, *rc, *rd, st = 0, rt = 0;
    pair_t      s, r;
    MPI_Request q;

    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    sc = calloc(4 * (size_t)size, sizeof(int));
    sd = sc + size;
    rc = sd + size;
    rd = rc + size;
    for (int p = size - 1; p >= 0; p--) { /* blocks in reverse order */
        sc[p] = (rank + p) % 3 + 1;
        rc[p] = (p + rank) % 3 + 1;
        sd[p] = st;
        rd[p] = rt;
        st += sc[p] + 1;
        rt += rc[p] + 2;
    }
    pair_make(&s, span(ts, st), t_seed());
    pair_make(&r, span(tr, rt), t_seed());
    T_MPI(PMPI_Alltoallv(s.ref + PRE, sc, sd, ts, r.ref + PRE, rc, rd, tr,
                         comm));
    T_MPI(MPI_Ialltoallv(s.got + PRE, sc, sd, ts, r.got + PRE, rc, rd, tr,
                         comm, &q));
    t_count("ialltoallv", 1);
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    pair_check(&r, what);
    pair_check(&s, what);
    free(sc);
}

/* Ialltoallw: even peers in the derived type, odd ones in bytes. */
static void alltoallw(MPI_Comm comm, int ti, const char *what)
{
    int           size, tsz, *c, *d, *rc, *rd;
    MPI_Datatype *ts, *tr;
    MPI_Aint      lb, ext;
    pair_t        s, r;
    MPI_Request   q;

    MPI_Comm_size(comm, &size);
    MPI_Type_size(ty[ti], &tsz);
    MPI_Type_get_extent(ty[ti], &lb, &ext);
    c = calloc(4 * (size_t)size, sizeof(int));
    d = c + size;
    rc = d + size;
    rd = rc + size;
    ts = calloc(2 * (size_t)size, sizeof(*ts));
    tr = ts + size;
    for (int p = 0; p < size; p++) {
        c[p] = rc[p] = 2;
        d[p] = rd[p] = (int)(p * 2 * ext);
        ts[p] = p % 2 ? flat[ti] : ty[ti];
        tr[p] = p % 2 ? ty[ti] : flat[ti];
    }
    pair_make(&s, span(ty[ti], 2 * size) + 2 * (size_t)tsz, t_seed());
    pair_make(&r, span(ty[ti], 2 * size) + 2 * (size_t)tsz, t_seed());
    T_MPI(
        PMPI_Alltoallw(s.ref + PRE, c, d, ts, r.ref + PRE, rc, rd, tr, comm));
    T_MPI(MPI_Ialltoallw(s.got + PRE, c, d, ts, r.got + PRE, rc, rd, tr, comm,
                         &q));
    t_count("ialltoallw", 1);
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    pair_check(&r, what);
    pair_check(&s, what);
    free(c);
    free(ts);
}

/* Igather and Iscatter of n elements, every root, tr on the root. */
static void rooted(MPI_Comm comm, MPI_Datatype ts, MPI_Datatype tr, int n,
                   const char *what)
{
    int size;

    MPI_Comm_size(comm, &size);
    for (int root = 0; root < size; root++) {
        pair_t      s, r;
        MPI_Request q;

        pair_make(&s, span(ts, n), t_seed());
        pair_make(&r, span(tr, n * size), t_seed());
        T_MPI(PMPI_Gather(s.ref + PRE, n, ts, r.ref + PRE, n, tr, root, comm));
        T_MPI(MPI_Igather(s.got + PRE, n, ts, r.got + PRE, n, tr, root, comm,
                          &q));
        t_count("igather", 1);
        T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
        pair_check(&r, what);
        pair_check(&s, what);

        pair_make(&s, span(ts, n * size), t_seed());
        pair_make(&r, span(tr, n), t_seed());
        T_MPI(
            PMPI_Scatter(s.ref + PRE, n, ts, r.ref + PRE, n, tr, root, comm));
        T_MPI(MPI_Iscatter(s.got + PRE, n, ts, r.got + PRE, n, tr, root, comm,
                           &q));
        t_count("iscatter", 1);
        T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
        pair_check(&r, what);
        pair_check(&s, what);
    }
}

static void allgather(MPI_Comm comm, MPI_Datatype ts, MPI_Datatype tr, int n,
                      const char *what)
{
    int         size;
    pair_t      s, r;
    MPI_Request q;

    MPI_Comm_size(comm, &size);
    pair_make(&s, span(ts, n), t_seed());
    pair_make(&r, span(tr, n * size), t_seed());
    T_MPI(PMPI_Allgather(s.ref + PRE, n, ts, r.ref + PRE, n, tr, comm));
    T_MPI(MPI_Iallgather(s.got + PRE, n, ts, r.got + PRE, n, tr, comm, &q));
    t_count("iallgather", 1);
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    pair_check(&r, what);
    pair_check(&s, what);
}

/* Ibcast: the root describes the data with one type, the others with
 * another of the same signature (each rank's own choice). */
static void bcast(MPI_Comm comm, int ti, int n, const char *what)
{
    int size, rank;

    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    for (int root = 0; root < size; root++) {
        MPI_Datatype tb = (rank + root) % 2 ? ty[ti] : flat[ti];
        uint32_t     seed = t_seed();
        pair_t       b;
        MPI_Request  q;

        pair_make(&b, span(tb, n), seed);
        if (rank == root) {
            t_pat_fill(b.got, b.n, seed, 7, 7);
            memcpy(b.ref, b.got, b.n);
        }
        T_MPI(PMPI_Bcast(b.ref + PRE, n, tb, root, comm));
        T_MPI(MPI_Ibcast(b.got + PRE, n, tb, root, comm, &q));
        t_expect(T_BCAST, comm, n, tb, 0);
        T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
        pair_check(&b, what);
    }
}

/* The same call again and again from two buffers in turn: what the
 * engines know of one call's layout must not leak into the next. */
static void repeated(MPI_Comm comm, int ti, int n)
{
    int    size;
    pair_t s[2], r;

    MPI_Comm_size(comm, &size);
    for (int b = 0; b < 2; b++) {
        pair_make(&s[b], span(ty[ti], n * size), t_seed());
    }
    for (int it = 0; it < 20; it++) {
        pair_t     *sb = &s[it % 2];
        MPI_Request q;

        pair_make(&r, span(flat[ti], n * size), t_seed());
        T_MPI(t_ref_alltoall(sb->ref + PRE, n, ty[ti], r.ref + PRE, n,
                             flat[ti], comm));
        T_MPI(MPI_Ialltoall(sb->got + PRE, n, ty[ti], r.got + PRE, n, flat[ti],
                            comm, &q));
        t_expect(T_A2A, comm, n, ty[ti], 0);
        T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
        pair_check(&r, "repeated Ialltoall from two buffers in turn");
    }
    for (int b = 0; b < 2; b++) {
        pair_check(&s[b], "repeated Ialltoall's send buffers");
    }
}

static void one_type(MPI_Comm comm, const char *cname, int ti, int n)
{
    char w[160];

    snprintf(w, sizeof(w), "%s on %s, %d", tname[ti], cname, n);
    t_case("%s: Ialltoall, receive side", w);
    alltoall(comm, flat[ti], ty[ti], n, w);
    t_case("%s: Ialltoall, both sides", w);
    alltoall(comm, ty[ti], ty[ti], n, w);
    t_case("%s: Ialltoall, send side", w);
    alltoall(comm, ty[ti], flat[ti], n, w);
    t_case("%s: Ialltoall in place", w);
    alltoall_in_place(comm, ty[ti], n, w);
    t_case("%s: Ialltoallv", w);
    alltoallv(comm, flat[ti], ty[ti], w);
    t_case("%s: Ialltoallw", w);
    alltoallw(comm, ti, w);
    t_case("%s: Igather, Iscatter", w);
    rooted(comm, flat[ti], ty[ti], n, w);
    t_case("%s: Iallgather", w);
    allgather(comm, ty[ti], ty[ti], n, w);
    t_case("%s: Ibcast", w);
    bcast(comm, ti, n, w);
}

int main(int argc, char **argv)
{
    const char *dp = getenv("DPUSHIM_DATA_PATH");
    int         direct = dp == NULL || strcmp(dp, "staged") != 0;
    MPI_Comm    half;

    t_init(&argc, &argv, "t_dtypes");
    types_make();
    MPI_Comm_split(MPI_COMM_WORLD, t.rank % 2, t.size - t.rank, &half);
    for (int ti = 0; ti < NT; ti++) {
        one_type(MPI_COMM_WORLD, "world", ti, 3);
        one_type(half, "half", ti, 1);
    }
    t_case("repeated calls from two buffers in turn");
    repeated(MPI_COMM_WORLD, 11, 3);
    repeated(MPI_COMM_SELF, 11, 3);
    /* Many segments: a large vector, in place and not. */
    one_type(MPI_COMM_WORLD, "world", 0, 5000);
    MPI_Comm_free(&half);
    for (int i = 0; i < NT; i++) {
        MPI_Type_free(&ty[i]);
        MPI_Type_free(&flat[i]);
    }
    if (t.rank == 0 && t_shim_loaded()) {
        /* The engines scatter and gather only for ranks their agent
         * reaches by CMA: listening agents (a map) may be on another
         * host, a DPU, and UCX get/put moves without them. */
        const char *map = getenv("DPUSHIM_AGENT_MAP");
        const char *tr = getenv("DPUSHIM_TRANSPORT");
        const char *n = !direct ? "0" : "[1-9][0-9]*";

        if ((map != NULL && *map != '\0') ||
            (tr != NULL && strcmp(tr, "ucx") == 0)) {
            n = direct ? "[0-9]+" : "0";
        }
        printf("expect~: dma engines copies=[0-9]+ bytes=[0-9]+ "
               "scattered=%s gathered=%s\n",
               n, n);
    }
    return t_finish();
}
