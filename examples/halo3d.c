/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * halo3d: a 3-D halo exchange overlapped with a 7-point Jacobi sweep,
 * with plain MPI, a dpushim pattern group or a neighbourhood collective.
 *
 * The P ranks form a periodic Cartesian grid (MPI_Dims_create,
 * MPI_Cart_create); each owns nx x ny x nz cells of the global grid plus
 * one ghost layer. Each iteration starts the exchange of the six faces,
 * updates the interior cells (they need no ghost) while it runs, waits,
 * then updates the boundary cells (they do). Modes (-m):
 *
 *   mpi        faces packed into contiguous buffers, 6 MPI_Irecv and 6
 *              MPI_Isend, MPI_Waitall; unpacked into the ghosts.
 *   group      the same buffers as one persistent dpushim pattern group
 *              (6 sends, 6 receives), MPI_Start / MPI_Wait each
 *              iteration; persistent point-to-point requests where
 *              offload is not available.
 *   neighbor   MPI_Neighbor_alltoallw on the Cartesian communicator with
 *              subarray datatypes, straight from and into the grid (no
 *              packing): persistent (MPI-4 MPI_Neighbor_alltoallw_init,
 *              Open MPI's MPIX_ one from mpi-ext.h) where the MPI has
 *              it, else MPI_Ineighbor_alltoallw each iteration.
 *   ineighbor  MPI_Ineighbor_alltoallw each iteration, always.
 *
 * Messages carry the direction they travel in as their tag (face 2d+s,
 * s = 0 towards the lower neighbour in dimension d, 1 towards the upper),
 * so that a periodic dimension of one or two processes, where both
 * neighbours are the same rank, still pairs each face with the right
 * ghost layer.
 *
 * Compute (-c): busy runs the sweep; sleep sleeps as long as the
 * interior sweep takes instead (the ranks are idle, as while a GPU
 * computes), and the boundary layer is then rewritten with values that
 * depend on the iteration, so each exchange carries new data.
 *
 * Check: busy, rank 0 gathers the grid and runs the same global problem
 * alone, with the same arithmetic in the same order: the result must be
 * equal bit for bit (a relative difference up to 1e-12 would pass too;
 * the largest one is printed). Sleep, every ghost cell must hold
 * the neighbour's value of this iteration (known by formula), every
 * iteration. Prints "check: ok" (exit 0) or "check: FAILED ..." (exit 1),
 * and "time_s: T", the wall time of the timed iterations (the slowest
 * rank).
 */
#define _GNU_SOURCE
#include <dpushim.h>
#include <mpi.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define NEIGHBOR_INIT   MPIX_Neighbor_alltoallw_init
#define PERSISTENT_NAME "MPIX_Neighbor_alltoallw_init"
#elif MPI_VERSION >= 4
#define NEIGHBOR_INIT   MPI_Neighbor_alltoallw_init
#define PERSISTENT_NAME "MPI_Neighbor_alltoallw_init"
#else
#define PERSISTENT_NAME ""
#endif

enum { MODE_MPI, MODE_GROUP, MODE_NEIGHBOR, MODE_INEIGHBOR };
static const char *mode_name[] = {"mpi", "group", "neighbor", "ineighbor"};

struct opts {
    int    mode, sleep;
    int    n[3]; /* local cells per dimension */
    int    iters, warmup;
    int    tests;    /* MPI_Test calls during the interior sweep */
    double sleep_us; /* -S: per iteration; 0: measured */
};

/* The defaults; opt starts as them (usage shows them). */
static const struct opts defaults = {MODE_MPI, 0, {96, 96, 96}, 300, 2, 0, 0};
static struct opts       opt;

static int rank, nproc;

/* MPI_STATUSES_IGNORE through a variable: gcc 12 warns about the constant
 * in MPICH's annotated prototypes (a 0-byte region). */
static MPI_Status *statuses_ignore;

/* Jacobi weights: the new value averages the cell and its neighbours. */
static const double W0 = 0.4, W1 = 0.1;

static void usage(const char *prog)
{
    if (rank == 0) {
        fprintf(stderr,
                "usage: %s [-m mpi|group|neighbor|ineighbor] [-c busy|sleep]\n"
                "          [-n N | -n NX,NY,NZ] [-i iters] [-w warmup]\n"
                "          [-t tests] [-S sleep_us_per_iter]\n"
                "  -m  mpi: Isend/Irecv of packed faces; group: one\n"
                "      persistent dpushim group; neighbor: persistent\n"
                "      MPI_Neighbor_alltoallw (subarray types) where the MPI\n"
                "      has it, else nonblocking; ineighbor: nonblocking\n"
                "  -c  busy: Jacobi sweep; sleep: sleep as long (idle rank)\n"
                "  -n  local cells per dimension (%d,%d,%d)\n"
                "  -i  timed iterations (%d)  -w  untimed first ones (%d)\n"
                "  -t  MPI_Test calls during the interior sweep (%d)\n"
                "  -S  sleep per iteration in us (sleep mode; default: the\n"
                "      interior sweep's time here, measured first)\n",
                prog, defaults.n[0], defaults.n[1], defaults.n[2],
                defaults.iters, defaults.warmup, defaults.tests);
    }
}

static int parse(int argc, char **argv)
{
    int c, k;

    while ((c = getopt(argc, argv, "m:c:n:i:w:t:S:h")) != -1) {
        switch (c) {
        case 'm':
            for (k = 0; k < 4 && strcmp(optarg, mode_name[k]) != 0; k++) {
            }
            if (k == 4) {
                return -1;
            }
            opt.mode = k;
            break;
        case 'c':
            if (strcmp(optarg, "busy") != 0 && strcmp(optarg, "sleep")) {
                return -1;
            }
            opt.sleep = strcmp(optarg, "sleep") == 0;
            break;
        case 'n':
            k = sscanf(optarg, "%d,%d,%d", &opt.n[0], &opt.n[1], &opt.n[2]);
            if (k == 1) {
                opt.n[1] = opt.n[2] = opt.n[0];
            } else if (k != 3) {
                return -1;
            }
            break;
        case 'i': opt.iters = atoi(optarg); break;
        case 'w': opt.warmup = atoi(optarg); break;
        case 't': opt.tests = atoi(optarg); break;
        case 'S': opt.sleep_us = atof(optarg); break;
        default: return -1;
        }
    }
    if (optind != argc || opt.iters < 1 || opt.warmup < 0 || opt.tests < 0 ||
        opt.sleep_us < 0) {
        return -1;
    }
    for (k = 0; k < 3; k++) {
        if (opt.n[k] < 1 || opt.n[k] > 4096) {
            return -1;
        }
    }
    /* The gather for the check counts cells in an int. */
    if ((long)opt.n[0] * opt.n[1] * opt.n[2] > 1L << 28) {
        return -1;
    }
    return 0;
}

/* ---- the grid: (n0+2) x (n1+2) x (n2+2), the last index fastest ---- */

typedef struct grid {
    int    n[3]; /* cells, without ghosts */
    size_t s[3]; /* strides of the three indices */
} grid_t;

static void grid_init(grid_t *g, const int n[3])
{
    memcpy(g->n, n, sizeof(g->n));
    g->s[2] = 1;
    g->s[1] = (size_t)n[2] + 2;
    g->s[0] = g->s[1] * ((size_t)n[1] + 2);
}

static size_t grid_len(const grid_t *g)
{
    return g->s[0] * ((size_t)g->n[0] + 2);
}

/*
 * The cells of face f (f = 2d + s: dimension d, s = 0 low, 1 high) or,
 * ghost != 0, of the ghost layer beyond it: start and count per
 * dimension. Only the faces: a 7-point stencil reads no edge or corner.
 */
static void face_box(const grid_t *g, int f, int ghost, int st[3], int cnt[3])
{
    int d = f / 2, hi = f % 2;

    for (int e = 0; e < 3; e++) {
        st[e] = 1;
        cnt[e] = g->n[e];
    }
    cnt[d] = 1;
    st[d] = ghost ? (hi ? g->n[d] + 1 : 0) : (hi ? g->n[d] : 1);
}

static int face_len(const grid_t *g, int f)
{
    int st[3], cnt[3];

    face_box(g, f, 0, st, cnt);
    return cnt[0] * cnt[1] * cnt[2];
}

/* Copy between the face (or ghost layer) and a contiguous buffer. */
static void face_copy(const grid_t *g, double *u, int f, int ghost,
                      double *buf, int to_buf)
{
    int    st[3], cnt[3];
    size_t q = 0;

    face_box(g, f, ghost, st, cnt);
    for (int i = st[0]; i < st[0] + cnt[0]; i++) {
        for (int j = st[1]; j < st[1] + cnt[1]; j++) {
            double *row = u + i * g->s[0] + j * g->s[1] + st[2];

            if (to_buf) {
                memcpy(buf + q, row, sizeof(double) * (size_t)cnt[2]);
            } else {
                memcpy(row, buf + q, sizeof(double) * (size_t)cnt[2]);
            }
            q += (size_t)cnt[2];
        }
    }
}

/* The face or ghost layer as a subarray of the whole grid. */
static MPI_Datatype face_type(const grid_t *g, int f, int ghost)
{
    int          sizes[3], st[3], cnt[3];
    MPI_Datatype t;

    face_box(g, f, ghost, st, cnt);
    for (int e = 0; e < 3; e++) {
        sizes[e] = g->n[e] + 2;
    }
    MPI_Type_create_subarray(3, sizes, cnt, st, MPI_ORDER_C, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    return t;
}

/*
 * v = Jacobi(u) on the cells [lo, hi) per dimension. Rank 0's serial
 * reference calls this same function on the global grid: the same
 * additions in the same order give the same bits.
 */
static void sweep(const grid_t *g, const double *u, double *v, const int lo[3],
                  const int hi[3])
{
    const size_t sx = g->s[0], sy = g->s[1];

    for (int i = lo[0]; i < hi[0]; i++) {
        for (int j = lo[1]; j < hi[1]; j++) {
            const double *a = u + i * sx + j * sy;
            double       *b = v + i * sx + j * sy;

            for (int k = lo[2]; k < hi[2]; k++) {
                b[k] =
                    W0 * a[k] +
                    W1 *
                        (((((a[k - sx] + a[k + sx]) + a[k - sy]) + a[k + sy]) +
                          a[k - 1]) +
                         a[k + 1]);
            }
        }
    }
}

/* Interior cells (no ghost read), i in [i0, i1) of [2, n0). */
static void sweep_interior(const grid_t *g, const double *u, double *v, int i0,
                           int i1)
{
    int lo[3] = {i0, 2, 2};
    int hi[3] = {i1, g->n[1], g->n[2]};

    sweep(g, u, v, lo, hi);
}

/* The cells the interior sweep left: those next to a ghost layer. */
static void sweep_boundary(const grid_t *g, const double *u, double *v)
{
    const int *n = g->n;

    for (int i = 1; i <= n[0]; i++) {
        for (int j = 1; j <= n[1]; j++) {
            int all = i == 1 || i == n[0] || j == 1 || j == n[1];
            int lo[3] = {i, j, 1}, hi[3] = {i + 1, j + 1, n[2] + 1};

            if (!all) {
                hi[2] = 2; /* k = 1 */
                sweep(g, u, v, lo, hi);
                lo[2] = n[2]; /* k = nz */
                hi[2] = n[2] + 1;
                if (n[2] == 1) {
                    continue;
                }
            }
            sweep(g, u, v, lo, hi);
        }
    }
}

/* A value in [0, 1) from (iteration, global x, y, z): exact in double. */
static double field(int it, int x, int y, int z)
{
    uint64_t h = (uint64_t)it * 0x9E3779B97F4A7C15ull;

    h ^= (uint64_t)x * 0xC2B2AE3D27D4EB4Full + (uint64_t)y * 0x165667B1ull;
    h ^= (uint64_t)z * 0x27D4EB2F165667C5ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return (double)(h & 0xFFFFF) / 1048576.0;
}

/* Every cell (ghosts included when ghosts != 0) set to field(it, ...)
 * of its global coordinates; off: the first cell's, N: the global grid
 * (periodic). */
static void fill(const grid_t *g, double *u, int it, const int off[3],
                 const int N[3], int ghosts)
{
    int a = ghosts ? 0 : 1;

    for (int i = a; i <= g->n[0] + 1 - a; i++) {
        for (int j = a; j <= g->n[1] + 1 - a; j++) {
            for (int k = a; k <= g->n[2] + 1 - a; k++) {
                u[i * g->s[0] + j * g->s[1] + k] =
                    field(it, (off[0] + i - 1 + N[0]) % N[0],
                          (off[1] + j - 1 + N[1]) % N[1],
                          (off[2] + k - 1 + N[2]) % N[2]);
            }
        }
    }
}

/* Sleep mode: ghost cells that differ from field(it, ...). */
static long ghosts_bad(const grid_t *g, const double *u, int it,
                       const int off[3], const int N[3])
{
    long bad = 0;

    for (int f = 0; f < 6; f++) {
        int st[3], cnt[3];

        face_box(g, f, 1, st, cnt);
        for (int i = st[0]; i < st[0] + cnt[0]; i++) {
            for (int j = st[1]; j < st[1] + cnt[1]; j++) {
                for (int k = st[2]; k < st[2] + cnt[2]; k++) {
                    bad += u[i * g->s[0] + j * g->s[1] + k] !=
                           field(it, (off[0] + i - 1 + N[0]) % N[0],
                                 (off[1] + j - 1 + N[1]) % N[1],
                                 (off[2] + k - 1 + N[2]) % N[2]);
                }
            }
        }
    }
    return bad;
}

/* Sleep mode's "boundary update": the boundary layer gets iteration
 * it's values (its global coordinates need no wrapping). */
static void fill_boundary(const grid_t *g, double *u, int it, const int off[3])
{
    for (int f = 0; f < 6; f++) {
        int st[3], cnt[3];

        face_box(g, f, 0, st, cnt);
        for (int i = st[0]; i < st[0] + cnt[0]; i++) {
            for (int j = st[1]; j < st[1] + cnt[1]; j++) {
                for (int k = st[2]; k < st[2] + cnt[2]; k++) {
                    u[i * g->s[0] + j * g->s[1] + k] = field(
                        it, off[0] + i - 1, off[1] + j - 1, off[2] + k - 1);
                }
            }
        }
    }
}

/* Periodic ghost layers of the serial reference's global grid. */
static void periodic(const grid_t *g, double *u)
{
    for (int f = 0; f < 6; f++) {
        int st[3], cnt[3], d = f / 2, src;

        face_box(g, f, 1, st, cnt);
        /* The low ghost layer holds the high boundary layer, and so on. */
        src = f % 2 ? 1 : g->n[d];
        for (int i = st[0]; i < st[0] + cnt[0]; i++) {
            for (int j = st[1]; j < st[1] + cnt[1]; j++) {
                for (int k = st[2]; k < st[2] + cnt[2]; k++) {
                    int    c[3] = {i, j, k};
                    size_t at = i * g->s[0] + j * g->s[1] + k;

                    c[d] = src;
                    u[at] = u[c[0] * g->s[0] + c[1] * g->s[1] + c[2]];
                }
            }
        }
    }
}

static void sleep_us(double us)
{
    struct timespec ts, rem;

    if (us <= 0) {
        return;
    }
    ts.tv_sec = (time_t)(us / 1e6);
    ts.tv_nsec = (long)((us - ts.tv_sec * 1e6) * 1e3);
    while (nanosleep(&ts, &rem) != 0 && errno == EINTR) {
        ts = rem;
    }
}

/* ---- the exchange ---- */

typedef struct halo {
    MPI_Comm     cart;
    int          nb[6]; /* neighbour of face f's side */
    double      *sbuf[6], *rbuf[6];
    MPI_Request  req[12];
    int          nreq;
    MPI_Request *act; /* the requests of the exchange under way */
    int          nact;
    int          persistent; /* req[] are persistent: MPI_Startall */
    int          offloaded;  /* group: dpushim took it */
    /* neighbor modes: one request per grid array (they alternate) */
    MPI_Datatype stype[6], rtype[6];
    int          moved; /* blocks the MPI delivers off MPI 4.1 */
    MPI_Request  nreqs[2];
    double      *arr[2];
} halo_t;

/* A dpushim call that must succeed (the arguments are ours). */
static void must(int rc)
{
    if (rc != DPUSHIM_SUCCESS) {
        fprintf(stderr, "rank %d: dpushim: %s\n", rank,
                dpushim_error_string(rc));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Did any rank fail? Every rank takes the same way after a group call:
 * ending a group is collective, so all end it or none. */
static int any_failed(int failed, MPI_Comm comm)
{
    int any;

    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, comm);
    return any;
}

/* Mode group: 0, or -1 where offload is not available (at the begin, or
 * at the end: DPUSHIM_GROUP_INIT=0 shows only there); then no request is
 * left. */
static int group_make(halo_t *h, const grid_t *g, const char **why)
{
    dpushim_group_t grp;
    int             rc = dpushim_group_begin(h->cart, &grp);

    *why = dpushim_error_string(DPUSHIM_ERR_OFF);
    if (rc != DPUSHIM_ERR_OFF) {
        must(rc);
    }
    if (any_failed(rc != DPUSHIM_SUCCESS, h->cart)) {
        if (rc == DPUSHIM_SUCCESS) {
            dpushim_group_free(&grp);
        }
        return -1;
    }
    for (int f = 0; f < 6; f++) {
        /* Face f travels towards nb[f] with tag f; ghost layer f is
         * filled from nb[f] by its face f^1 (the side facing us). */
        must(dpushim_group_recv(grp, h->rbuf[f], face_len(g, f), MPI_DOUBLE,
                                h->nb[f], f ^ 1));
        must(dpushim_group_send(grp, h->sbuf[f], face_len(g, f), MPI_DOUBLE,
                                h->nb[f], f));
    }
    rc = dpushim_group_end_persistent(&grp, &h->req[0]);
    if (rc != DPUSHIM_ERR_OFF) {
        must(rc);
    }
    if (any_failed(rc != DPUSHIM_SUCCESS, h->cart)) {
        if (rc == DPUSHIM_SUCCESS) {
            MPI_Request_free(&h->req[0]);
        }
        return -1;
    }
    h->nreq = 1;
    return 0;
}

/* The same 12 transfers as persistent point-to-point requests. */
static void p2p_make(halo_t *h, const grid_t *g)
{
    for (int f = 0; f < 6; f++) {
        MPI_Recv_init(h->rbuf[f], face_len(g, f), MPI_DOUBLE, h->nb[f], f ^ 1,
                      h->cart, &h->req[f]);
        MPI_Send_init(h->sbuf[f], face_len(g, f), MPI_DOUBLE, h->nb[f], f,
                      h->cart, &h->req[6 + f]);
    }
    h->nreq = 12;
}

/*
 * Neighbourhood modes. MPI 4.1 (section 8.6) says where each block goes
 * on a Cartesian communicator: receive block 2d comes from the lower
 * neighbour of dimension d, and holds what it sent upwards (its block
 * 2d+1), even where lower and upper neighbour are one rank. MPI 4.0 and
 * earlier left that case open, and MPIs differ: Open MPI 4.1 and MPICH
 * 4.0 deliver block 2d into block 2d when both neighbours are one rank
 * (MPICH's MPI_Ineighbor_alltoall even pairs a rank's transfers to
 * itself across dimensions); the shim follows MPI 4.1. So one exchange of
 * markers (rank, face) first, with the call used later, learns where
 * this MPI delivers each face, and each receive block gets the type of
 * the ghost layer its data belongs to. Returns the number of blocks
 * delivered elsewhere than MPI 4.1 says, or -1 if the delivery makes
 * no sense (a face from a rank that is not that side's neighbour).
 */
static int neighbor_learn(halo_t *h, int persistent)
{
    int          s[6], r[6], cnt[6], ghost_of[6], seen[6] = {0}, moved = 0;
    MPI_Aint     disp[6];
    MPI_Datatype ty[6];
    MPI_Request  q;

    for (int b = 0; b < 6; b++) {
        s[b] = rank * 8 + b; /* send block b is face b */
        r[b] = -1;
        cnt[b] = 1;
        disp[b] = (MPI_Aint)(b * sizeof(int));
        ty[b] = MPI_INT;
    }
#ifdef NEIGHBOR_INIT
    if (persistent) {
        NEIGHBOR_INIT(s, cnt, disp, ty, r, cnt, disp, ty, h->cart,
                      MPI_INFO_NULL, &q);
        MPI_Start(&q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        MPI_Request_free(&q);
    } else
#endif
    {
        (void)persistent;
        MPI_Ineighbor_alltoallw(s, cnt, disp, ty, r, cnt, disp, ty, h->cart,
                                &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    }
    for (int b = 0; b < 6; b++) {
        int from = r[b] / 8, face = r[b] % 8, d = face / 2;
        /* A face sent upwards (odd) fills the lower ghost layer. */
        int ghost = face % 2 ? 2 * d : 2 * d + 1;

        if (r[b] < 0 || face > 5 || from != h->nb[ghost] || from != h->nb[b] ||
            seen[ghost]++) {
            return -1;
        }
        ghost_of[b] = ghost;
        moved += ghost != b;
    }
    /* Receive block b with the type of the ghost layer it fills. */
    for (int b = 0; b < 6; b++) {
        ty[b] = h->rtype[ghost_of[b]];
    }
    memcpy(h->rtype, ty, sizeof(ty));
    return moved;
}

/*
 * The faces go straight from the grid and into it, each as one subarray
 * type. MPI forbids passing one buffer as both send and receive buffer,
 * even for disjoint cells, so the send side is MPI_BOTTOM with the
 * grid's absolute address as displacement (sdisp), the receive side the
 * grid itself.
 */
static void neighbor_args(const double *u, int cnt[6], MPI_Aint sdisp[6],
                          MPI_Aint rdisp[6])
{
    MPI_Aint at;

    MPI_Get_address(u, &at);
    for (int f = 0; f < 6; f++) {
        cnt[f] = 1;
        sdisp[f] = at;
        rdisp[f] = 0;
    }
}

static void neighbor_make(halo_t *h, const grid_t *g, double *u, double *v)
{
    int      persistent = 0, cnt[6], moved, any;
    MPI_Aint sdisp[6], rdisp[6];

    for (int f = 0; f < 6; f++) {
        h->stype[f] = face_type(g, f, 0);
        h->rtype[f] = face_type(g, f, 1);
    }
#ifdef NEIGHBOR_INIT
    persistent = opt.mode == MODE_NEIGHBOR;
#endif
    moved = neighbor_learn(h, persistent);
    MPI_Allreduce(&moved, &any, 1, MPI_INT, MPI_MIN, h->cart);
    if (any < 0) {
        if (rank == 0) {
            fprintf(stderr,
                    "halo3d: this MPI's neighbourhood alltoallw "
                    "delivers faces from ranks that are not the "
                    "neighbours on that side: mode %s unusable\n",
                    mode_name[opt.mode]);
        }
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Allreduce(&moved, &h->moved, 1, MPI_INT, MPI_MAX, h->cart);
    h->arr[0] = u;
    h->arr[1] = v;
    h->persistent = persistent;
#ifdef NEIGHBOR_INIT
    /* One persistent request per grid array: they alternate. */
    for (int a = 0; persistent && a < 2; a++) {
        neighbor_args(h->arr[a], cnt, sdisp, rdisp);
        NEIGHBOR_INIT(MPI_BOTTOM, cnt, sdisp, h->stype, h->arr[a], cnt, rdisp,
                      h->rtype, h->cart, MPI_INFO_NULL, &h->nreqs[a]);
    }
#else
    (void)cnt;
    (void)sdisp;
    (void)rdisp;
#endif
}

static void halo_start(halo_t *h, const grid_t *g, double *u)
{
    if (opt.mode == MODE_NEIGHBOR || opt.mode == MODE_INEIGHBOR) {
        int      cnt[6];
        MPI_Aint sdisp[6], rdisp[6];

        h->nact = 1;
        if (h->persistent) {
            h->act = &h->nreqs[u == h->arr[1]];
            MPI_Start(h->act);
        } else {
            h->act = &h->req[0];
            neighbor_args(u, cnt, sdisp, rdisp);
            MPI_Ineighbor_alltoallw(MPI_BOTTOM, cnt, sdisp, h->stype, u, cnt,
                                    rdisp, h->rtype, h->cart, h->act);
        }
        return;
    }
    for (int f = 0; f < 6; f++) {
        face_copy(g, u, f, 0, h->sbuf[f], 1);
    }
    if (opt.mode == MODE_MPI) {
        for (int f = 0; f < 6; f++) {
            MPI_Irecv(h->rbuf[f], face_len(g, f), MPI_DOUBLE, h->nb[f], f ^ 1,
                      h->cart, &h->req[f]);
        }
        for (int f = 0; f < 6; f++) {
            MPI_Isend(h->sbuf[f], face_len(g, f), MPI_DOUBLE, h->nb[f], f,
                      h->cart, &h->req[6 + f]);
        }
        h->act = h->req;
        h->nact = 12;
        return;
    }
    h->act = h->req;
    h->nact = h->nreq;
    MPI_Startall(h->nreq, h->req);
}

static void halo_test(halo_t *h)
{
    int flag;

    /* One request: MPI_Test. MPICH 4.0's MPI_Testall fails a completed
     * persistent collective (MPI_ERR_IN_STATUS, every status
     * MPI_SUCCESS). */
    if (h->nact == 1) {
        MPI_Test(h->act, &flag, MPI_STATUS_IGNORE);
    } else {
        MPI_Testall(h->nact, h->act, &flag, statuses_ignore);
    }
}

static void halo_finish(halo_t *h, const grid_t *g, double *u)
{
    /* One request: MPI_Wait, for MPICH 4.0's MPI_Testall (above): the
     * shim's MPI_Waitall may loop over it. */
    if (h->nact == 1) {
        MPI_Wait(h->act, MPI_STATUS_IGNORE);
    } else {
        MPI_Waitall(h->nact, h->act, statuses_ignore);
    }
    if (opt.mode == MODE_NEIGHBOR || opt.mode == MODE_INEIGHBOR) {
        return;
    }
    for (int f = 0; f < 6; f++) {
        face_copy(g, u, f, 1, h->rbuf[f], 0);
    }
}

/*
 * Rank 0: the whole problem alone, compared with the gathered grid.
 * Returns the number of cells off by more than 1e-12 relative; *maxrel
 * the largest relative difference.
 */
static long reference(const grid_t *g, const int dims[3], MPI_Comm cart,
                      const double *all, int total, double *maxrel)
{
    grid_t  G;
    int     N[3], zero[3] = {0, 0, 0};
    int     lo[3] = {1, 1, 1}, hi[3];
    double *u, *v, *t;
    long    bad = 0;

    for (int e = 0; e < 3; e++) {
        N[e] = dims[e] * g->n[e];
        hi[e] = N[e] + 1;
    }
    grid_init(&G, N);
    u = malloc(sizeof(double) * grid_len(&G));
    v = malloc(sizeof(double) * grid_len(&G));
    if (u == NULL || v == NULL) {
        fprintf(stderr, "halo3d: no memory for the serial reference\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    fill(&G, u, 0, zero, N, 0);
    for (int it = 0; it < total; it++) {
        periodic(&G, u);
        sweep(&G, u, v, lo, hi);
        t = u;
        u = v;
        v = t;
    }
    *maxrel = 0;
    for (int r = 0; r < nproc; r++) {
        int           c[3];
        const double *blk = all + (size_t)r * g->n[0] * g->n[1] * g->n[2];
        size_t        q = 0;

        MPI_Cart_coords(cart, r, 3, c);
        for (int i = 1; i <= g->n[0]; i++) {
            for (int j = 1; j <= g->n[1]; j++) {
                for (int k = 1; k <= g->n[2]; k++) {
                    double want =
                        u[(c[0] * g->n[0] + i) * G.s[0] +
                          (c[1] * g->n[1] + j) * G.s[1] + c[2] * g->n[2] + k];
                    double got = blk[q++];
                    double rel = fabs(got - want) /
                                 (fabs(want) > 1e-300 ? fabs(want) : 1);

                    if (!(rel <= 1e-12)) {
                        bad++;
                    }
                    if (!(rel <= *maxrel)) {
                        *maxrel = rel;
                    }
                }
            }
        }
    }
    free(u);
    free(v);
    return bad;
}

int main(int argc, char **argv)
{
    int         dims[3] = {0, 0, 0}, periods[3] = {1, 1, 1}, coords[3];
    int         off[3], N[3], total;
    grid_t      g;
    halo_t      h;
    double     *u, *v, *t, t0, el, tmax, comp = 0, cmax, step_us = 0;
    double      maxrel = 0, verdict[2] = {0, 0};
    size_t      faces = 0;
    long        bad = 0;
    const char *why = "";

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nproc);
    statuses_ignore = MPI_STATUSES_IGNORE;
    opt = defaults;
    if (parse(argc, argv) != 0) {
        usage(argv[0]);
        MPI_Finalize();
        return 2;
    }
#ifdef __linux__
    /* Sleeps as long as asked, not up to 50 us more. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
#endif
    total = opt.warmup + opt.iters;
    memset(&h, 0, sizeof(h));
    MPI_Dims_create(nproc, 3, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &h.cart);
    MPI_Comm_rank(h.cart, &rank);
    MPI_Cart_coords(h.cart, rank, 3, coords);
    for (int d = 0; d < 3; d++) {
        MPI_Cart_shift(h.cart, d, 1, &h.nb[2 * d], &h.nb[2 * d + 1]);
        off[d] = coords[d] * opt.n[d];
        N[d] = dims[d] * opt.n[d];
    }
    grid_init(&g, opt.n);
    u = calloc(grid_len(&g), sizeof(double));
    v = calloc(grid_len(&g), sizeof(double));
    /* The six packed faces back to back, and the six ghost layers: the
     * group's sends (receives) then cover one region of memory, which the
     * shim moves as it is, without a map of separate buffers. */
    for (int f = 0; f < 6; f++) {
        faces += (size_t)face_len(&g, f);
    }
    h.sbuf[0] = malloc(sizeof(double) * faces);
    h.rbuf[0] = malloc(sizeof(double) * faces);
    for (int f = 1; f < 6 && h.sbuf[0] != NULL && h.rbuf[0] != NULL; f++) {
        h.sbuf[f] = h.sbuf[f - 1] + face_len(&g, f - 1);
        h.rbuf[f] = h.rbuf[f - 1] + face_len(&g, f - 1);
    }
    if (u == NULL || v == NULL || h.sbuf[0] == NULL || h.rbuf[0] == NULL) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    fill(&g, u, 0, off, N, 0);

    if (opt.sleep) {
        /* The interior sweep's time (the best of three, on v), the
         * slowest rank's: every rank sleeps that long. */
        step_us = opt.sleep_us;
        if (step_us == 0) {
            double best = 1e30;

            for (int r = 0; r < 3; r++) {
                double s = MPI_Wtime();

                sweep_interior(&g, u, v, 2, g.n[0]);
                s = MPI_Wtime() - s;
                best = s < best ? s : best;
            }
            best *= 1e6;
            MPI_Allreduce(&best, &step_us, 1, MPI_DOUBLE, MPI_MAX,
                          MPI_COMM_WORLD);
        }
    }

    switch (opt.mode) {
    case MODE_GROUP:
        h.offloaded = group_make(&h, &g, &why) == 0;
        if (!h.offloaded) {
            p2p_make(&h, &g);
        }
        h.persistent = 1;
        break;
    case MODE_NEIGHBOR:
    case MODE_INEIGHBOR: neighbor_make(&h, &g, u, v); break;
    default: break;
    }
    if (rank == 0) {
        printf("halo3d: mode=%s compute=%s ranks=%d dims=%dx%dx%d "
               "local=%dx%dx%d iters=%d warmup=%d tests=%d\n",
               mode_name[opt.mode], opt.sleep ? "sleep" : "busy", nproc,
               dims[0], dims[1], dims[2], opt.n[0], opt.n[1], opt.n[2],
               opt.iters, opt.warmup, opt.tests);
        if (opt.mode == MODE_GROUP) {
            if (h.offloaded) {
                printf("group: offloaded by dpushim\n");
            } else {
                printf("group: not offloaded (%s): persistent "
                       "point-to-point\n",
                       why);
            }
        } else if (opt.mode != MODE_MPI) {
            printf("neighbor: %s; %s\n",
                   h.persistent ? "persistent " PERSISTENT_NAME
                                : "nonblocking MPI_Ineighbor_alltoallw",
                   h.moved == 0 ? "blocks delivered as MPI 4.1 says"
                                : "this MPI delivers blocks elsewhere "
                                  "than MPI 4.1 says (periodic dimension"
                                  " of 1 or 2 ranks): receive types "
                                  "follow it");
        }
        fflush(stdout);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int it = 0; it < total; it++) {
        double c0;

        if (it == opt.warmup) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            comp = 0;
        }
        if (opt.sleep) {
            /* The boundary layer holds this iteration's values. */
            fill_boundary(&g, u, it, off);
        }
        halo_start(&h, &g, u);
        /* The interior in tests + 1 slabs, a test after each but the
         * last. comp: the compute phase's own time (what -S replaces). */
        for (int c = 0; c <= opt.tests; c++) {
            int span = g.n[0] - 2 > 0 ? g.n[0] - 2 : 0;
            int i0 = 2 + (int)((long)span * c / (opt.tests + 1));
            int i1 = 2 + (int)((long)span * (c + 1) / (opt.tests + 1));

            c0 = MPI_Wtime();
            if (opt.sleep) {
                sleep_us(step_us / (opt.tests + 1));
            } else {
                sweep_interior(&g, u, v, i0, i1);
            }
            comp += MPI_Wtime() - c0;
            if (c < opt.tests) {
                halo_test(&h);
            }
        }
        halo_finish(&h, &g, u);
        if (opt.sleep) {
            bad += ghosts_bad(&g, u, it, off, N);
            continue; /* the same array again */
        }
        sweep_boundary(&g, u, v);
        t = u;
        u = v;
        v = t;
    }
    el = MPI_Wtime() - t0;
    MPI_Reduce(&el, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&comp, &cmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    if (h.persistent) {
        if (opt.mode == MODE_NEIGHBOR) {
            MPI_Request_free(&h.nreqs[0]);
            MPI_Request_free(&h.nreqs[1]);
        } else {
            for (int i = 0; i < h.nreq; i++) {
                MPI_Request_free(&h.req[i]);
            }
        }
    }

    if (opt.sleep) {
        double b = (double)bad;

        MPI_Reduce(&b, &verdict[0], 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    } else {
        /* Gather the grid on rank 0, which checks it against the serial
         * reference while the others wait asleep (polling an Ibcast),
         * leaving it the CPUs. */
        size_t      cells = (size_t)g.n[0] * g.n[1] * g.n[2], q = 0;
        double     *mine = malloc(sizeof(double) * cells), *all = NULL;
        MPI_Request rq;
        int         done = 0;

        if (rank == 0) {
            all = malloc(sizeof(double) * cells * (size_t)nproc);
        }
        if (mine == NULL || (rank == 0 && all == NULL)) {
            fprintf(stderr, "rank %d: out of memory\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (int i = 1; i <= g.n[0]; i++) {
            for (int j = 1; j <= g.n[1]; j++) {
                memcpy(mine + q, u + i * g.s[0] + j * g.s[1] + 1,
                       sizeof(double) * (size_t)g.n[2]);
                q += (size_t)g.n[2];
            }
        }
        MPI_Gather(mine, (int)cells, MPI_DOUBLE, all, (int)cells, MPI_DOUBLE,
                   0, h.cart);
        if (rank == 0) {
            verdict[0] =
                (double)reference(&g, dims, h.cart, all, total, &verdict[1]);
        }
        MPI_Ibcast(verdict, 2, MPI_DOUBLE, 0, h.cart, &rq);
        while (!done) {
            MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
            if (!done) {
                usleep(1000);
            }
        }
        maxrel = verdict[1];
        free(mine);
        free(all);
    }
    MPI_Bcast(&verdict[0], 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        /* compute_us: the slowest rank's mean interior sweep (or
         * sleep) per iteration, the -S that sleeps as long. */
        printf("compute_s: %.6f\n", cmax);
        printf("compute_us: %.1f\n", 1e6 * cmax / opt.iters);
        printf("time_s: %.6f\n", tmax);
        if (verdict[0] == 0 && opt.sleep) {
            printf("check: ok (ghost layers, %d iterations)\n", total);
        } else if (verdict[0] == 0) {
            printf("check: ok (grid against the serial reference; max "
                   "relative difference %.3g)\n",
                   maxrel);
        } else if (opt.sleep) {
            printf("check: FAILED: %.0f wrong ghost cells\n", verdict[0]);
        } else {
            printf("check: FAILED: %.0f cells differ from the serial "
                   "reference (max relative difference %.3g)\n",
                   verdict[0], maxrel);
        }
    }
    if (opt.mode == MODE_NEIGHBOR || opt.mode == MODE_INEIGHBOR) {
        for (int f = 0; f < 6; f++) {
            MPI_Type_free(&h.stype[f]);
            MPI_Type_free(&h.rtype[f]);
        }
    }
    free(h.sbuf[0]);
    free(h.rbuf[0]);
    free(u);
    free(v);
    MPI_Comm_free(&h.cart);
    MPI_Finalize();
    return verdict[0] != 0;
}
