/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Persistent collectives started in rank-dependent orders. MPI matches
 * persistent collective operations by the order of their *_init calls,
 * which every rank makes alike; the ranks may then start them in any
 * order. Here every rank inits, on one communicator, a broadcast, a
 * barrier, an alltoall, an allreduce, an allgather, a reduce with a user
 * operation (stock MPI runs that one), and on a periodic Cartesian
 * communicator a neighbourhood alltoall, plus (under the shim) a
 * persistent pattern group; then, for ROUNDS rounds, starts them in an
 * order of its own (a permutation drawn from the rank and the round; some
 * rounds through one MPI_Startall of the permuted array), with a
 * nonblocking MPI_Ialltoall posted among them on the same communicator
 * (nonblocking calls keep call order: one a round), completes them with
 * MPI_Waitall or an MPI_Testsome loop, and checks every int against the
 * values the round's contents give.
 *
 * With PO_KILL=k (under the shim, DPUSHIM_MIN_BYTES=1 and FO_RPD set to
 * DPUSHIM_RANKS_PER_DPU), the first rank of the last virtual node
 * SIGKILLs its agent right after its starts of round k: that round's
 * requests and the next round's (a rank may see the failure only then)
 * must all end (exact, or with an error where a rank had finished the
 * instance on an agent), and every later round, run by stock MPI from
 * the same persistent requests in the same rank-dependent orders, must
 * be exact.
 *
 * Stock MPICH 4.0's persistent collectives are unusable (t_persist.c):
 * there the program only says so.
 */
#include "tcommon.h"
#include "tagent.h"
#include "../../include/dpushim.h"

#ifdef HAVE_PERS

#define ROUNDS 300
#define BC_N   20000 /* ints broadcast */
#define A2A_N  3000  /* ints per alltoall block */
#define RED_N  10000 /* ints reduced */
#define AG_N   2500  /* ints per allgather block */
#define NB_N   2048  /* ints per neighbour block */
#define UR_N   1000  /* ints of the user-op reduce */
#define GR_N   5000  /* ints the group moves along the ring */
#define NB_A2A 2000  /* ints per block of the nonblocking alltoall */

enum {
    P_BCAST,
    P_BARRIER,
    P_A2A,
    P_ALLRED,
    P_ALLGATHER,
    P_UREDUCE,
    P_NEIGH,
    P_GROUP,
    P_N
};

static const char *pname[P_N] = {"bcast_init",
                                 "barrier_init",
                                 "alltoall_init",
                                 "allreduce_init",
                                 "allgather_init",
                                 "reduce_init",
                                 "neighbor_alltoall_init",
                                 "group_init"};

/* The value of int i of what rank r contributes as part k in round it. */
static int val(int it, int r, int k, int i)
{
    return (int)(t_mix64(((uint64_t)it << 40) ^ ((uint64_t)r << 24) ^
                         ((uint64_t)k << 20) ^ (uint64_t)i) &
                 0xffffff);
}

static void umax(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int *a = in, *b = inout;

    (void)type;
    for (int i = 0; i < *len; i++) {
        if (a[i] > b[i]) {
            b[i] = a[i];
        }
    }
}

static int stock_mpich40(void)
{
#if defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40100000
    return !t_shim_loaded();
#else
    return 0;
#endif
}

typedef struct {
    int        *bc, *a2a_s, *a2a_r, *red_s, *red_r, *ag_s, *ag_r;
    int        *nb_s, *nb_r, *ur_s, *ur_r, *gr_s, *gr_r, *na_s, *na_r;
    MPI_Request req[P_N];
    int         np; /* requests made (the group only under the shim) */
    int         left, right; /* Cartesian neighbours */
    int         group;       /* the group is offloaded */
} st_t;

static int check(const char *what, int it, const int *got, int n,
                 int (*want)(int it, int i, const void *ctx), const void *ctx)
{
    for (int i = 0; i < n; i++) {
        int w = want(it, i, ctx);

        if (got[i] != w) {
            t_fail("round %d: %s: int %d is %d, expected %d", it, what, i,
                   got[i], w);
            return 1;
        }
    }
    return 0;
}

/* Expected values, by context. */
typedef struct {
    int r, k, n;
} src_t;

static int want_src(int it, int i, const void *ctx)
{
    const src_t *s = ctx;

    return val(it, s->r, s->k, i);
}

static int want_sum(int it, int i, const void *ctx)
{
    unsigned sum = 0;

    for (int r = 0; r < *(const int *)ctx; r++) {
        sum += (unsigned)val(it, r, 4, i);
    }
    return (int)sum;
}

static int want_max(int it, int i, const void *ctx)
{
    int m = 0;

    for (int r = 0; r < *(const int *)ctx; r++) {
        int v = val(it, r, 6, i);

        m = v > m ? v : m;
    }
    return m;
}

static void make(st_t *s, MPI_Comm cart, MPI_Op op)
{
    MPI_Comm        w = MPI_COMM_WORLD;
    MPI_Info        in = MPI_INFO_NULL;
    int             p = t.size;
    dpushim_group_t g;

    s->bc = t_xmalloc(sizeof(int) * BC_N);
    s->a2a_s = t_xmalloc(sizeof(int) * A2A_N * (size_t)p);
    s->a2a_r = t_xmalloc(sizeof(int) * A2A_N * (size_t)p);
    s->red_s = t_xmalloc(sizeof(int) * RED_N);
    s->red_r = t_xmalloc(sizeof(int) * RED_N);
    s->ag_s = t_xmalloc(sizeof(int) * AG_N);
    s->ag_r = t_xmalloc(sizeof(int) * AG_N * (size_t)p);
    s->nb_s = t_xmalloc(sizeof(int) * NB_N * 2);
    s->nb_r = t_xmalloc(sizeof(int) * NB_N * 2);
    s->ur_s = t_xmalloc(sizeof(int) * UR_N);
    s->ur_r = t_xmalloc(sizeof(int) * UR_N);
    s->gr_s = t_xmalloc(sizeof(int) * GR_N);
    s->gr_r = t_xmalloc(sizeof(int) * GR_N);
    s->na_s = t_xmalloc(sizeof(int) * NB_A2A * (size_t)p);
    s->na_r = t_xmalloc(sizeof(int) * NB_A2A * (size_t)p);
    MPI_Cart_shift(cart, 0, 1, &s->left, &s->right);

    /* Every rank inits in this order: MPI's matching order. */
    t_case("inits");
    T_MPI(PINIT(Bcast)(s->bc, BC_N, MPI_INT, p - 1, w, in, &s->req[P_BCAST]));
    T_MPI(PINIT(Barrier)(w, in, &s->req[P_BARRIER]));
    T_MPI(PINIT(Alltoall)(s->a2a_s, A2A_N, MPI_INT, s->a2a_r, A2A_N, MPI_INT,
                          w, in, &s->req[P_A2A]));
    T_MPI(PINIT(Allreduce)(s->red_s, s->red_r, RED_N, MPI_INT, MPI_SUM, w, in,
                           &s->req[P_ALLRED]));
    T_MPI(PINIT(Allgather)(s->ag_s, AG_N, MPI_INT, s->ag_r, AG_N, MPI_INT, w,
                           in, &s->req[P_ALLGATHER]));
    T_MPI(PINIT(Reduce)(s->ur_s, s->ur_r, UR_N, MPI_INT, op, 0, w, in,
                        &s->req[P_UREDUCE]));
    T_MPI(PINIT(Neighbor_alltoall)(s->nb_s, NB_N, MPI_INT, s->nb_r, NB_N,
                                   MPI_INT, cart, in, &s->req[P_NEIGH]));
    s->np = P_GROUP;
    s->group = 0;
    if (dpushim_group_begin(w, &g) == DPUSHIM_SUCCESS) {
        /* Along the ring: send to the next rank, receive from the last. */
        if (dpushim_group_send(g, s->gr_s, GR_N, MPI_INT, (t.rank + 1) % p,
                               5) != DPUSHIM_SUCCESS ||
            dpushim_group_recv(g, s->gr_r, GR_N, MPI_INT, (t.rank + p - 1) % p,
                               5) != DPUSHIM_SUCCESS ||
            dpushim_group_end_persistent(&g, &s->req[P_GROUP]) !=
                DPUSHIM_SUCCESS) {
            t_fail("the persistent group could not be made");
        } else {
            s->np = P_N;
            s->group = 1;
        }
    }
}

static void fill(st_t *s, int it)
{
    int p = t.size, me = t.rank;

    for (int i = 0; i < BC_N; i++) {
        s->bc[i] = me == p - 1 ? val(it, me, 0, i) : -1;
    }
    for (int j = 0; j < p; j++) {
        for (int i = 0; i < A2A_N; i++) {
            s->a2a_s[j * A2A_N + i] = val(it, me, 100 + j, i);
            s->a2a_r[j * A2A_N + i] = -1;
        }
        for (int i = 0; i < NB_A2A; i++) {
            s->na_s[j * NB_A2A + i] = val(it, me, 300 + j, i);
            s->na_r[j * NB_A2A + i] = -1;
        }
    }
    for (int i = 0; i < RED_N; i++) {
        s->red_s[i] = val(it, me, 4, i);
        s->red_r[i] = -1;
    }
    for (int i = 0; i < AG_N; i++) {
        s->ag_s[i] = val(it, me, 5, i);
    }
    memset(s->ag_r, 0xff, sizeof(int) * AG_N * (size_t)p);
    for (int i = 0; i < UR_N; i++) {
        s->ur_s[i] = val(it, me, 6, i);
        s->ur_r[i] = -1;
    }
    for (int d = 0; d < 2; d++) { /* block 0 to the left, 1 right */
        for (int i = 0; i < NB_N; i++) {
            s->nb_s[d * NB_N + i] = val(it, me, 200 + d, i);
            s->nb_r[d * NB_N + i] = -1;
        }
    }
    for (int i = 0; i < GR_N; i++) {
        s->gr_s[i] = val(it, me, 7, i);
        s->gr_r[i] = -1;
    }
}

static void verify(const st_t *s, int it)
{
    int   p = t.size, me = t.rank;
    src_t src;
    char  w[64];

    src = (src_t){p - 1, 0, 0};
    check("bcast_init", it, s->bc, BC_N, want_src, &src);
    for (int j = 0; j < p; j++) {
        src = (src_t){j, 100 + me, 0};
        snprintf(w, sizeof(w), "alltoall_init block from %d", j);
        check(w, it, s->a2a_r + j * A2A_N, A2A_N, want_src, &src);
        src = (src_t){j, 300 + me, 0};
        snprintf(w, sizeof(w), "ialltoall block from %d", j);
        check(w, it, s->na_r + j * NB_A2A, NB_A2A, want_src, &src);
        src = (src_t){j, 5, 0};
        snprintf(w, sizeof(w), "allgather_init block from %d", j);
        check(w, it, s->ag_r + j * AG_N, AG_N, want_src, &src);
    }
    check("allreduce_init", it, s->red_r, RED_N, want_sum, &p);
    if (s->group) {
        src = (src_t){(me + p - 1) % p, 7, 0};
        check("group_init from the previous rank", it, s->gr_r, GR_N, want_src,
              &src);
    }
    if (me == 0) {
        check("reduce_init (user op) at the root", it, s->ur_r, UR_N, want_max,
              &p);
    }
    /* From the left neighbour its rightward block, and vice versa. Stock
     * Open MPI 4.1 swaps the two where one rank is both neighbours
     * (t_neigh.c, stock_wrong): not checked there. */
#if defined(OPEN_MPI) && OPEN_MPI
    if (!t_shim_loaded() && p <= 2) {
        return;
    }
#endif
    src = (src_t){s->left, 201, 0};
    check("neighbor_alltoall_init from the left", it, s->nb_r, NB_N, want_src,
          &src);
    src = (src_t){s->right, 200, 0};
    check("neighbor_alltoall_init from the right", it, s->nb_r + NB_N, NB_N,
          want_src, &src);
}

/* A permutation of 0..n-1 drawn from (rank, round). */
static void permute(int *o, int n, int it)
{
    uint64_t z = t_mix64(((uint64_t)t.rank << 32) ^ (uint64_t)it ^ 0x5eed);

    for (int i = 0; i < n; i++) {
        o[i] = i;
    }
    for (int i = n - 1; i > 0; i--) {
        int j;

        z = t_mix64(z + (uint64_t)i);
        j = (int)(z % (uint64_t)(i + 1));
        int x = o[i];

        o[i] = o[j];
        o[j] = x;
    }
}

static int kill_round = -1, killer = -1;

static void round_run(st_t *s, int it)
{
    MPI_Request all[P_N + 1], arr[P_N];
    int         ord[P_N], n = s->np, nb_at, startall = it % 3 == 1;

    t_case("round %d", it);
    fill(s, it);
    permute(ord, n, it);
    /* Where the nonblocking alltoall goes among the starts: rank's own. */
    nb_at = (int)(t_mix64((uint64_t)it * 977 + (uint64_t)t.rank) %
                  (uint64_t)(n + 1));
    if (startall) {
        for (int i = 0; i < n; i++) {
            arr[i] = s->req[ord[i]];
        }
        if (nb_at <= n / 2) {
            t_ialltoall(s->na_s, NB_A2A, MPI_INT, s->na_r, NB_A2A, MPI_INT,
                        MPI_COMM_WORLD, &all[n], 1);
            T_MPI(MPI_Startall(n, arr));
        } else {
            T_MPI(MPI_Startall(n, arr));
            t_ialltoall(s->na_s, NB_A2A, MPI_INT, s->na_r, NB_A2A, MPI_INT,
                        MPI_COMM_WORLD, &all[n], 1);
        }
    } else {
        for (int i = 0; i <= n; i++) {
            if (i == nb_at) {
                t_ialltoall(s->na_s, NB_A2A, MPI_INT, s->na_r, NB_A2A, MPI_INT,
                            MPI_COMM_WORLD, &all[n], 1);
            }
            if (i < n) {
                T_MPI(MPI_Start(&s->req[ord[i]]));
            }
        }
    }
    for (int i = 0; i < n; i++) {
        all[i] = s->req[i];
        t_count(pname[i], i != P_UREDUCE);
    }
    if (kill_round >= 0 && (it == kill_round || it == kill_round + 1)) {
        if (it == kill_round && t.rank == killer &&
            signal_agents(t.rank, SIGKILL) == 0) {
            t_fail("round %d: no agent to kill", it);
        }
        /* Each ends, well or with an error: no data to check. One by one:
         * MPI_Waitall may return at the first error. The next round too:
         * a rank may see the failure only then (its instances of it that
         * another rank finished on an agent fail). */
        for (int i = 0; i <= n; i++) {
            MPI_Wait(&all[i], MPI_STATUS_IGNORE);
        }
        printf("rank %d: round %d ended after the agent failure\n", t.rank,
               it);
        return;
    }
    if (it % 2 == 0) {
        T_MPI(MPI_Waitall(n + 1, all, t_statuses_ignore));
    } else {
        int left = n + 1, out, idx[P_N + 1];

        while (left > 0) {
            T_MPI(MPI_Testsome(n + 1, all, &out, idx, t_statuses_ignore));
            if (out == MPI_UNDEFINED) {
                break;
            }
            left -= out;
            if (out == 0) {
                usleep(20);
            }
        }
    }
    for (int i = 0; i < n; i++) {
        if (all[i] != s->req[i]) {
            t_fail("round %d: persistent request %s changed", it, pname[i]);
        }
    }
    verify(s, it);
}

int main(int argc, char **argv)
{
    int      dims[1], periods[1] = {1};
    MPI_Comm cart;
    MPI_Op   op;
    st_t     s;

    t_init(&argc, &argv, "t_pers_order");
    if (stock_mpich40()) {
        if (t.rank == 0) {
            printf("note: stock MPICH 4.0's persistent collectives are "
                   "wrong (see t_persist.c): nothing to test\n");
        }
        return t_finish();
    }
    if (getenv("PO_KILL") != NULL) {
        int rpd = getenv("FO_RPD") ? atoi(getenv("FO_RPD")) : t.size;

        kill_round = atoi(getenv("PO_KILL"));
        killer = ((t.size - 1) / rpd) * rpd;
    }
    dims[0] = t.size;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
    MPI_Op_create(umax, 1, &op);
    memset(&s, 0, sizeof(s));
    make(&s, cart, op);
    for (int it = 0; it < ROUNDS; it++) {
        round_run(&s, it);
    }
    t_case("free");
    for (int i = 0; i < s.np; i++) {
        T_MPI(MPI_Request_free(&s.req[i]));
    }
    MPI_Op_free(&op);
    MPI_Comm_free(&cart);
    return t_finish();
}

#else

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "t_pers_order");
    if (t.rank == 0) {
        printf("note: this MPI has no persistent collectives: nothing to "
               "test\n");
    }
    return t_finish();
}

#endif
