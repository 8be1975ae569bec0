/* SPDX-License-Identifier: MIT */
/* A distributed complex-to-complex 3-D FFT (FFTW 3 for the 1-D
 * transforms) whose transposes are pipelined MPI_Ialltoall calls, or
 * persistent MPI_Alltoall_init requests: the application where
 * offloading the collectives' progress pays most.
 *
 * Decomposition (as P3DFFT and 2DECOMP&FFT): a P1 x P2 grid of ranks,
 * rank r at (r1, r2) = (r / P2, r % P2); a = N / P1, b = N / P2. Three
 * layouts of the local data, the last index contiguous:
 *   A  z-pencils  [x a][y b][z N]   x in block r1, y in block r2
 *   B  y-pencils  [x a][z b][y N]   x in block r1, z in block r2
 *   C  x-pencils  [z b][y a][x N]   z in block r2, y in block r1
 * T1 swaps y and z among the ranks of a row (same r1, P2 ranks), T2
 * swaps x and y among the ranks of a column (same r2, P1 ranks); a 1xP
 * grid is a slab decomposition (T2's column is one rank: a local copy).
 * The grid must divide N, so every peer gets the same count and
 * MPI_Ialltoall suffices (no MPI_Ialltoallv).
 *
 * Pipelining: each transpose is cut into K chunks along the dimension it
 * leaves alone (x for T1, z for T2). Chunk k's 1-D FFTs are computed,
 * packed and its alltoall started; chunk k+1's FFTs then compute while
 * chunk k's transpose is in flight. Forward: z-FFTs before T1, y-FFTs
 * before T2, x-FFTs after each chunk of T2 arrives; backward the mirror.
 *
 * Modes: cpu computes the FFTs in the timed steps; gpu-like sleeps
 * instead, per chunk, for the time that chunk's FFTs took on the CPU in
 * a warm-up step, times a factor (a rank waiting for its GPU). The
 * checked forward+backward transform always runs in cpu mode first, and
 * the data after the timed steps is checked again, so both modes keep a
 * checked result: gpu-like steps move the data exactly as cpu steps do,
 * only the arithmetic is replaced by the sleep.
 */
#define _GNU_SOURCE
#include <fftw3.h>
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Persistent collectives: MPI 4's MPI_Alltoall_init (MPICH 4), Open MPI
 * 4.1's MPIX_Alltoall_init from mpi-ext.h (tests/mpi/tcommon.h does the
 * same). */
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define ALLTOALL_INIT MPIX_Alltoall_init
#elif MPI_VERSION >= 4
#define ALLTOALL_INIT MPI_Alltoall_init
#endif

#define TOL          1e-9 /* max abs error relative to the max |value| */
#define SERIAL_MAX_N 32   /* -c auto: serial comparison up to this N */
#define NSLOT        8    /* FFT slots: 4 transposes x (pre, post) */

typedef fftw_complex cplx;

struct opts {
    int    n, p1, p2, k, gpu, persistent, steps, check, dtype;
    double factor;
    double fft_ms; /* gpu-like: the FFTs' time per step, given (-t), or 0:
                    * measured in the warm-up step */
};

/* Element (p, c, u, v) of a transpose's buffer, p the peer, c the free
 * index, u, v < nuv the block: its place in a layout, by strides. */
struct side {
    int    in_b; /* layout B, else A or C (shared storage) */
    size_t sp, sc, su, sv;
};

/* The 1-D FFTs done per chunk: which lines (see fft_chunk()), all
 * offsets and strides in elements. */
struct lines {
    int    in_b;
    size_t no, so;  /* outer loop: count, stride */
    size_t cs, hpc; /* per chunk index: stride, lines */
    size_t st, ds;  /* a line's element stride, next line's distance */
};

#define MAXPLAN 64

/* A planned batch of lines (FFTW's advanced interface), reused on any
 * array with the same shape (FFTW_UNALIGNED). */
struct plan {
    int       hm, sign;
    size_t    st, ds;
    fftw_plan p;
};

/* One transpose: which communicator, the chunked (free) dimension, and
 * the FFTs around it. */

struct xpose {
    int                 id; /* 0..3: T1f, T2f, T2b, T1b */
    MPI_Comm            comm;
    int                 np;         /* ranks in comm */
    int                 nfree;      /* length of the chunked dimension */
    size_t              per_free;   /* elements per peer and free index */
    const struct lines *pre, *post; /* FFTs before the pack, after the
                                     * unpack, or NULL */
    int                 sign;
    int                 nuv; /* block side: b for T1, a for T2 */
    struct side         pack, unpack;
    /* -d: the send and receive sides' types (index into fft.ty, per
     * chunk) and elements per chunk index on both sides. */
    int    sty, rty;
    size_t coff;
};

struct fft {
    struct opts o;
    int         rank, r1, r2, a, b;
    size_t      len; /* local elements */
    MPI_Comm    row, col;
    /* A and C share storage (never live together), B, the alltoall
     * buffers */
    cplx         *ac, *bb, *sbuf, *rbuf;
    struct plan   plan[MAXPLAN]; /* the batches of lines, planned as met */
    int           nplan;
    MPI_Datatype *ty; /* -d: 4 x K, per chunk: T1 on A, on B, T2 on
                       * B, on C */
    struct xpose  t[4];
    struct lines  ln[4];     /* what t[] FFTs */
    MPI_Request  *req;       /* 4 x K persistent requests, or NULL */
    double       *fft_ns;    /* NSLOT x K: measured chunk FFT times */
    int           measure;   /* record fft_ns in this step */
    int           sleep_fft; /* gpu-like: sleep fft_ns x factor */
    double        wait_s;    /* time inside MPI_Wait this step */
    double        move_s;    /* time packing and unpacking this step */
    double        call_s;    /* time starting the alltoalls this step */
};

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: fft3d [-n N] [-g P1xP2] [-k K] [-m cpu|gpu-like] [-f F]\n"
        "             [-t MS] [-M] [-p|--persistent] [-d|--datatypes]\n"
        "             [-s STEPS] [-c auto|serial|input]\n"
        "  -n N        global size N x N x N (default 32)\n"
        "  -g P1xP2    process grid, P1*P2 = ranks; 1xP is a slab\n"
        "              decomposition (default 1x<ranks>); P1, P2 divide N\n"
        "  -k K        pipeline chunks per transpose, 1 = no pipelining;\n"
        "              1 <= K <= min(N/P1, N/P2) (default 1)\n"
        "  -m MODE     cpu: FFTW in the timed steps; gpu-like: sleep for\n"
        "              the FFTs' measured CPU time x F (default cpu)\n"
        "  -f F        gpu-like factor, > 0 (default 1.0)\n"
        "  -t MS       gpu-like: sleep MS x F per step in all, shared by\n"
        "              the chunks by their line counts, instead of the\n"
        "              time measured (so runs sleep alike)\n"
        "  -M          MPI_Init_thread(MPI_THREAD_MULTIPLE), as MPICH's\n"
        "              progress thread needs (MPIR_CVAR_ASYNC_PROGRESS=1)\n"
        "  -p          persistent MPI_Alltoall_init requests, started\n"
        "              every step (default MPI_Ialltoall)\n"
        "  -d          derived datatypes: the transposes move blocks\n"
        "              straight between the layouts (no pack, no unpack;\n"
        "              as dtFFT), the 1-D FFTs run along strided lines\n"
        "  -s STEPS    timed forward+backward steps (default 10)\n"
        "  -c CHECK    auto: compare with a serial FFTW 3-D transform\n"
        "              when N <= %d; serial: always; input: only the\n"
        "              round trip against the input (default auto)\n",
        SERIAL_MAX_N);
}

/* Parse an int > 0 or report the option; 0 on success. */
static int parse_pos(const char *s, const char *what, int *out)
{
    char *end;
    long  v = strtol(s, &end, 10);

    if (*s == '\0' || *end != '\0' || v <= 0 || v > 1 << 20) {
        fprintf(stderr, "fft3d: bad %s '%s' (a positive integer)\n", what, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int parse_mode(struct opts *o, const char *m, const char *c)
{
    if (m && strcmp(m, "cpu") != 0 && strcmp(m, "gpu-like") != 0) {
        fprintf(stderr, "fft3d: bad mode -m '%s' (cpu or gpu-like)\n", m);
        return -1;
    }
    o->gpu = m && strcmp(m, "gpu-like") == 0;
    if (c == NULL || strcmp(c, "auto") == 0) {
        o->check = 0;
    } else if (strcmp(c, "serial") == 0) {
        o->check = 1;
    } else if (strcmp(c, "input") == 0) {
        o->check = 2;
    } else {
        fprintf(stderr, "fft3d: bad check -c '%s' (auto, serial, input)\n", c);
        return -1;
    }
    return 0;
}

/* The command line, checked against the job: 0, or -1 after a message
 * naming the bad argument. */
static int parse_args(int argc, char **argv, int size, struct opts *o)
{
    static const struct option lo[] = {{"persistent", no_argument, NULL, 'p'},
                                       {"datatypes", no_argument, NULL, 'd'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    const char                *mode = NULL, *check = NULL, *grid = NULL;
    char                      *end, extra;
    int                        c, bad = 0;

    *o = (struct opts){
        .n = 32, .p1 = 1, .p2 = size, .k = 1, .steps = 10, .factor = 1.0};
    while (!bad && (c = getopt_long(argc, argv, "n:g:k:m:f:t:pds:c:Mh", lo,
                                    NULL)) != -1) {
        switch (c) {
        case 'n': bad = parse_pos(optarg, "size -n", &o->n); break;
        case 'g': grid = optarg; break;
        case 'k': bad = parse_pos(optarg, "chunk count -k", &o->k); break;
        case 'm': mode = optarg; break;
        case 'f':
            o->factor = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !(o->factor > 0)) {
                fprintf(stderr, "fft3d: bad factor -f '%s' (> 0)\n", optarg);
                bad = 1;
            }
            break;
        case 't':
            o->fft_ms = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !(o->fft_ms > 0)) {
                fprintf(stderr, "fft3d: bad FFT time -t '%s' (ms > 0)\n",
                        optarg);
                bad = 1;
            }
            break;
        case 'p': o->persistent = 1; break;
        case 'd': o->dtype = 1; break;
        case 'M': break; /* main() looked before MPI_Init */
        case 's': bad = parse_pos(optarg, "step count -s", &o->steps); break;
        case 'c': check = optarg; break;
        case 'h': usage(stdout); return 1;
        default: bad = 1;
        }
    }
    if (bad || optind < argc || parse_mode(o, mode, check) != 0) {
        if (optind < argc) {
            fprintf(stderr, "fft3d: unexpected argument '%s'\n", argv[optind]);
        }
        usage(stderr);
        return -1;
    }
    if (grid && (sscanf(grid, "%dx%d%c", &o->p1, &o->p2, &extra) != 2 ||
                 o->p1 <= 0 || o->p2 <= 0)) {
        fprintf(stderr, "fft3d: bad grid -g '%s' (P1xP2, e.g. 2x2)\n", grid);
        return -1;
    }
    if (o->p1 * o->p2 != size) {
        fprintf(stderr,
                "fft3d: grid -g %dx%d needs %d ranks, the job has "
                "%d\n",
                o->p1, o->p2, o->p1 * o->p2, size);
        return -1;
    }
    if (o->n % o->p1 || o->n % o->p2) {
        fprintf(stderr,
                "fft3d: N=%d (-n) is not divisible by the grid "
                "%dx%d (-g)\n",
                o->n, o->p1, o->p2);
        return -1;
    }
    if (o->k > o->n / o->p1 || o->k > o->n / o->p2) {
        fprintf(stderr,
                "fft3d: -k %d is more chunks than planes per rank "
                "(%d)\n",
                o->k, o->n / (o->p1 > o->p2 ? o->p1 : o->p2));
        return -1;
    }
#ifndef ALLTOALL_INIT
    if (o->persistent) {
        fprintf(stderr, "fft3d: -p: this MPI has no MPI_Alltoall_init\n");
        return -1;
    }
#endif
    return 0;
}

/* The input: a smooth deterministic function of the global indices, not
 * symmetric, so a transposition error shows. */
static void input_at(int n, int x, int y, int z, double *re, double *im)
{
    *re = sin(0.3 * x + 1.0) * cos(0.7 * y) + 0.01 * z;
    *im = cos(0.11 * x * y + 0.5 * z) - 0.02 * x;
    (void)n;
}

/* In place: hm lines of length N from p, element stride st, each the
 * next at distance ds; planned the first time the shape is met. */
static void fft_lines(struct fft *f, cplx *p, int hm, size_t st, size_t ds,
                      int sign)
{
    struct plan *pl = f->plan;
    int          n = f->o.n;

    while (pl < f->plan + f->nplan &&
           (pl->hm != hm || pl->st != st || pl->ds != ds || pl->sign != sign))
        pl++;
    if (pl == f->plan + f->nplan) {
        if (f->nplan == MAXPLAN) {
            fprintf(stderr, "fft3d: more than %d line shapes\n", MAXPLAN);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        /* FFTW_ESTIMATE plans without touching the array. */
        *pl = (struct plan){
            hm, sign, st, ds,
            fftw_plan_many_dft(1, &n, hm, p, NULL, (int)st, (int)ds, p, NULL,
                               (int)st, (int)ds, sign,
                               FFTW_ESTIMATE | FFTW_UNALIGNED)};
        f->nplan++;
    }
    fftw_execute_dft(pl->p, p, p);
}

/* The lines of chunk [lo, hi) of a layout: for o < no and each chunk
 * index c, hpc lines from o x so + c x cs on; one batch per o when the
 * chunk indices' lines are evenly spaced. */
static void fft_chunk(struct fft *f, const struct lines *l, int lo, int hi,
                      int sign)
{
    cplx  *arr = l->in_b ? f->bb : f->ac;
    size_t o;
    int    c;

    for (o = 0; o < l->no; o++) {
        if (l->cs == l->hpc * l->ds) {
            fft_lines(f, arr + o * l->so + lo * l->cs,
                      (int)((hi - lo) * l->hpc), l->st, l->ds, sign);
            continue;
        }
        for (c = lo; c < hi; c++) {
            fft_lines(f, arr + o * l->so + c * l->cs, (int)l->hpc, l->st,
                      l->ds, sign);
        }
    }
}

/* Copy chunk [lo, hi) of a transpose between a layout and the buffer
 * (to_buf: the send buffer, else from the receive buffer), which holds
 * it as [peer][c - lo][u][v] from the chunk's offset on. The inner loop
 * runs along whichever of u and v is contiguous in the layout, so the
 * layout is walked in runs and the buffer's m x m block (small enough for
 * the cache) takes the strided side: a transpose without a TLB miss per
 * element. */
static void move(struct fft *f, const struct xpose *t, const struct side *d,
                 int lo, int hi, int to_buf)
{
    cplx *buf = (to_buf ? f->sbuf : f->rbuf) + lo * t->per_free * t->np;
    cplx *arr = d->in_b ? f->bb : f->ac;
    int   p, c, i, j, m = t->nuv, swap = d->sv > d->su;
    /* Outer index i, inner j: (u, v), or (v, u) when v's stride is the
     * larger; their strides in the layout and in the buffer. */
    size_t si = swap ? d->sv : d->su, sj = swap ? d->su : d->sv;
    size_t bi = swap ? 1 : (size_t)m, bj = swap ? (size_t)m : 1;

    for (p = 0; p < t->np; p++) {
        for (c = lo; c < hi; c++, buf += (size_t)m * m) {
            cplx *e0 = arr + p * d->sp + c * d->sc;

            for (i = 0; i < m; i++) {
                cplx *e = e0 + i * si, *q = buf + i * bi;

                for (j = 0; j < m; j++) {
                    if (to_buf) {
                        memcpy(q + j * bj, e + j * sj, sizeof(cplx));
                    } else {
                        memcpy(e + j * sj, q + j * bj, sizeof(cplx));
                    }
                }
            }
        }
    }
}

/* Chunk k of n planes: [lo, hi), sizes differing by at most one. */
static void chunk(int n, int k, int nk, int *lo, int *hi)
{
    *lo = (int)((long)n * k / nk);
    *hi = (int)((long)n * (k + 1) / nk);
}

/* The FFTs of one chunk (slot: transpose x pre/post): computed, and
 * timed in the warm-up step; or, gpu-like, slept for that time x F. */
static void run_fft(struct fft *f, const struct lines *l, int slot, int k,
                    int lo, int hi, int sign)
{
    double *ns = &f->fft_ns[slot * f->o.k + k], t0;

    if (l == NULL) {
        return;
    }
    if (f->sleep_fft) {
        double          d = *ns * f->o.factor;
        struct timespec ts = {(time_t)(d / 1e9), (long)fmod(d, 1e9)};

        while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) != 0) {
        }
        return;
    }
    t0 = MPI_Wtime();
    fft_chunk(f, l, lo, hi, sign);
    if (f->measure) {
        *ns = (MPI_Wtime() - t0) * 1e9;
    }
}

/* -t: each chunk's FFT time its share of the given time per step, by
 * its lines (all of length N; a step transforms 6 x len / N lines). */
static void given_fft_times(struct fft *f)
{
    double per_line = f->o.fft_ms * 1e6 / (6.0 * f->len / f->o.n);
    int    i, k, lo, hi, nk = f->o.k;

    for (i = 0; i < 4; i++) {
        const struct xpose *t = &f->t[i];
        const struct lines *l[2] = {t->pre, t->post};
        int                 j;

        for (j = 0; j < 2; j++) {
            for (k = 0; k < nk; k++) {
                chunk(t->nfree, k, nk, &lo, &hi);
                f->fft_ns[(2 * i + j) * nk + k] =
                    l[j] ? per_line * l[j]->no * (hi - lo) * l[j]->hpc : 0;
            }
        }
    }
}

/* move(), timed. */
static void move_timed(struct fft *f, const struct xpose *t,
                       const struct side *d, int lo, int hi, int to_buf)
{
    double t0 = MPI_Wtime();

    move(f, t, d, lo, hi, to_buf);
    f->move_s += MPI_Wtime() - t0;
}

static void wait_req(struct fft *f, MPI_Request *r)
{
    double t0 = MPI_Wtime();

    MPI_Wait(r, MPI_STATUS_IGNORE);
    f->wait_s += MPI_Wtime() - t0;
}

/* Chunk k's alltoall: from the send buffer to the receive buffer, or
 * (-d) from layout to layout, by the chunk's derived datatypes. */
struct a2a {
    void        *sbuf, *rbuf;
    int          count;
    MPI_Datatype stype, rtype;
};

static struct a2a xpose_args(const struct fft *f, const struct xpose *t, int k)
{
    int lo, hi;

    chunk(t->nfree, k, f->o.k, &lo, &hi);
    if (f->o.dtype) {
        /* T1f, T2b send from A or C, T2f, T1b from B. */
        cplx  *s = t->id % 2 ? f->bb : f->ac, *r = t->id % 2 ? f->ac : f->bb;
        size_t off = (size_t)lo * t->coff;

        return (struct a2a){s + off, r + off, 1, f->ty[t->sty * f->o.k + k],
                            f->ty[t->rty * f->o.k + k]};
    }
    size_t off = (size_t)lo * t->per_free * t->np;
    /* doubles per peer */
    int cnt = (int)((size_t)(hi - lo) * t->per_free * 2);

    return (struct a2a){f->sbuf + off, f->rbuf + off, cnt, MPI_DOUBLE,
                        MPI_DOUBLE};
}

/* One transpose, pipelined: for each chunk its FFTs, pack, start; then
 * for each chunk wait, unpack, the FFTs that follow. Chunk k's alltoall
 * is in flight while chunk k+1's FFTs compute. */
static void transpose(struct fft *f, const struct xpose *t)
{
    MPI_Request local[f->o.k], *req = local;
    int         k, lo, hi, nk = f->o.k;
    double      t0;

    if (f->req) {
        req = f->req + t->id * nk;
    }
    for (k = 0; k < nk; k++) {
        chunk(t->nfree, k, nk, &lo, &hi);
        run_fft(f, t->pre, 2 * t->id, k, lo, hi, t->sign);
        if (!f->o.dtype) {
            move_timed(f, t, &t->pack, lo, hi, 1);
        }
        t0 = MPI_Wtime();
        if (f->req) {
            MPI_Start(&req[k]);
        } else {
            struct a2a a = xpose_args(f, t, k);

            MPI_Ialltoall(a.sbuf, a.count, a.stype, a.rbuf, a.count, a.rtype,
                          t->comm, &req[k]);
        }
        f->call_s += MPI_Wtime() - t0;
    }
    for (k = 0; k < nk; k++) {
        chunk(t->nfree, k, nk, &lo, &hi);
        wait_req(f, &req[k]);
        if (!f->o.dtype) {
            move_timed(f, t, &t->unpack, lo, hi, 0);
        }
        run_fft(f, t->post, 2 * t->id + 1, k, lo, hi, t->sign);
    }
}

/* Forward: A (input) -> C (spectrum). */
static void forward(struct fft *f)
{
    transpose(f, &f->t[0]);
    transpose(f, &f->t[1]);
}

/* Backward: C -> A, normalised by N^3 unless the FFTs were skipped. */
static void backward(struct fft *f)
{
    double s = 1.0 / ((double)f->o.n * f->o.n * f->o.n);
    size_t i;

    transpose(f, &f->t[2]);
    transpose(f, &f->t[3]);
    if (!f->sleep_fft) {
        for (i = 0; i < f->len; i++) {
            f->ac[i][0] *= s;
            f->ac[i][1] *= s;
        }
    }
}

/* The four transposes: T1f, T2f, T2b (T2 reversed), T1b; the layouts'
 * strides for the buffers' [peer][c][u][v] (see move()). */
static void setup_xposes(struct fft *f)
{
    size_t a = f->a, b = f->b, n = f->o.n;
    /* T1 (c = x, u = y, v = z): A [x][y][z], B [x][z][y]. */
    struct side sa = {0, b, b * n, n, 1}, sb1 = {1, b, b * n, 1, n};
    /* T2 (c = z, u = x, v = y): B [x][z][y], C [z][y][x]. */
    struct side sb2 = {1, a, n, b * n, 1}, sc = {0, a, a * n, 1, n};
    /* Lines by x chunk in A and B, by z chunk in B and C. */
    struct lines *ax = &f->ln[0], *bx = &f->ln[1], *bz = &f->ln[2];
    struct lines *cz = &f->ln[3];

    *ax = (struct lines){0, 1, 0, b * n, b, 1, n};
    if (f->o.dtype) {
        /* -d: B [x a][y N][z b], C [x N][y a][z b]: y lines of stride
         * b, x lines of stride a x b. */
        *bx = (struct lines){1, 1, 0, n * b, b, b, 1};
        *bz = (struct lines){1, a, n * b, 1, 1, b, 1};
        *cz = (struct lines){0, a, b, 1, 1, a * b, 1};
    } else {
        *bx = (struct lines){1, 1, 0, b * n, b, 1, n};
        *bz = (struct lines){1, a, b * n, n, 1, 1, n};
        *cz = (struct lines){0, 1, 0, a * n, a, 1, n};
    }
    f->t[0] = (struct xpose){0,    f->row,       f->o.p2, f->a, b * b, ax,
                             NULL, FFTW_FORWARD, f->b,    sa,   sb1,   0,
                             1,    b * n};
    f->t[1] = (struct xpose){
        1,    f->col, f->o.p1, f->b, a * a, bz, cz, FFTW_FORWARD,
        f->a, sb2,    sc,      2,    3,     1};
    f->t[2] = (struct xpose){
        2,    f->col, f->o.p1, f->b, a * a, cz, NULL, FFTW_BACKWARD,
        f->a, sc,     sb2,     3,    2,     1};
    f->t[3] = (struct xpose){3,  f->row,        f->o.p2, f->a, b * b, bx,
                             ax, FFTW_BACKWARD, f->b,    sb1,  sa,    1,
                             0,  b * n};
}

/* TYPE (doubles), its extent set to ext elements (one peer's stride). */
static MPI_Datatype peer_type(MPI_Datatype type, size_t ext)
{
    MPI_Datatype r;

    MPI_Type_create_resized(type, 0, (MPI_Aint)(ext * sizeof(cplx)), &r);
    MPI_Type_commit(&r);
    MPI_Type_free(&type);
    return r;
}

/* -d: each chunk's four types (doubles; c chunk indices). Per peer,
 * in the order both sides agree on:
 *   T1 on A: (x, y, z in the peer's block): c x b runs of b, stride N
 *   T1 on B: (x, y in the peer's block, z): c runs of b x b, stride N b
 *   T2 on B: (x, y in the peer's block, z in chunk): a x a runs of c
 *   T2 on C: (x in the peer's block, y, z in chunk): a x a runs of c
 * each resized to the distance between two peers' blocks. */
static void setup_types(struct fft *f)
{
    int           k, lo, hi, c, nk = f->o.k, a = f->a, b = f->b, n = f->o.n;
    MPI_Datatype *ty, v, yz;

    f->ty = ty = malloc(sizeof(MPI_Datatype) * 4 * nk);
    for (k = 0; k < nk; k++) {
        chunk(a, k, nk, &lo, &hi);
        c = hi - lo;
        MPI_Type_vector(c * b, 2 * b, 2 * n, MPI_DOUBLE, &v);
        ty[k] = peer_type(v, b);
        MPI_Type_vector(c, 2 * b * b, 2 * n * b, MPI_DOUBLE, &v);
        ty[nk + k] = peer_type(v, (size_t)b * b);
        chunk(b, k, nk, &lo, &hi);
        c = hi - lo;
        MPI_Type_vector(a, 2 * c, 2 * b, MPI_DOUBLE, &yz);
        MPI_Type_create_hvector(a, 1, (MPI_Aint)sizeof(cplx) * n * b, yz, &v);
        MPI_Type_free(&yz);
        ty[2 * nk + k] = peer_type(v, (size_t)a * b);
        MPI_Type_vector(a * a, 2 * c, 2 * b, MPI_DOUBLE, &v);
        ty[3 * nk + k] = peer_type(v, (size_t)a * a * b);
    }
}

/* Persistent requests, one per transpose and chunk, on the same buffers
 * the non-persistent calls use; created once. */
static void setup_persistent(struct fft *f)
{
#ifdef ALLTOALL_INIT
    int i, k, nk = f->o.k;

    f->req = malloc(sizeof(MPI_Request) * 4 * nk);
    for (i = 0; i < 4; i++) {
        const struct xpose *t = &f->t[i];

        for (k = 0; k < nk; k++) {
            struct a2a x = xpose_args(f, t, k);

            ALLTOALL_INIT(x.sbuf, x.count, x.stype, x.rbuf, x.count, x.rtype,
                          t->comm, MPI_INFO_NULL, &f->req[i * nk + k]);
        }
    }
#else
    (void)f; /* parse_args refused -p */
#endif
}

/* Communicators, buffers, plans, transposes; 0 or -1 (out of memory). */
static int setup(struct fft *f)
{
    int n = f->o.n;

    f->r1 = f->rank / f->o.p2;
    f->r2 = f->rank % f->o.p2;
    f->a = n / f->o.p1;
    f->b = n / f->o.p2;
    f->len = (size_t)f->a * f->b * n;
    MPI_Comm_split(MPI_COMM_WORLD, f->r1, f->r2, &f->row);
    MPI_Comm_split(MPI_COMM_WORLD, f->r2, f->r1, &f->col);
    f->ac = fftw_alloc_complex(f->len);
    f->bb = fftw_alloc_complex(f->len);
    /* -d moves between the layouts: no alltoall buffers. */
    if (!f->o.dtype) {
        f->sbuf = fftw_alloc_complex(f->len);
        f->rbuf = fftw_alloc_complex(f->len);
    }
    f->fft_ns = calloc(NSLOT * f->o.k, sizeof(double));
    if (!f->ac || !f->bb || !f->fft_ns ||
        (!f->o.dtype && (!f->sbuf || !f->rbuf))) {
        fprintf(stderr, "fft3d: rank %d: out of memory for N=%d\n", f->rank,
                n);
        return -1;
    }
    setup_xposes(f);
    if (f->o.dtype) {
        setup_types(f);
    }
    if (f->o.persistent) {
        setup_persistent(f);
    }
    return 0;
}

/* fill: A = the input; else max |A - input| over the job, relative to
 * max |input|, on every rank. */
static double input_pass(struct fft *f, int fill)
{
    double err[2] = {0, 0}, re, im;
    int    x, y, z, n = f->o.n;

    for (x = 0; x < f->a; x++) {
        for (y = 0; y < f->b; y++) {
            for (z = 0; z < n; z++) {
                double *v = f->ac[((size_t)x * f->b + y) * n + z];

                input_at(n, f->r1 * f->a + x, f->r2 * f->b + y, z, &re, &im);
                if (fill) {
                    v[0] = re;
                    v[1] = im;
                }
                err[0] = fmax(err[0], hypot(v[0] - re, v[1] - im));
                err[1] = fmax(err[1], hypot(re, im));
            }
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, err, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return err[0] / err[1];
}

/* Rank 0: the serial 3-D transform of the whole input against the
 * gathered C; max error relative to max |spectrum|. */
static double serial_error(struct fft *f, const cplx *all)
{
    int       n = f->o.n, x, y, z, r, zz, yy;
    size_t    nn = (size_t)n * n * n, i;
    cplx     *g = fftw_alloc_complex(nn);
    fftw_plan p = fftw_plan_dft_3d(n, n, n, g, g, FFTW_FORWARD, FFTW_ESTIMATE);
    double    err = 0, big = 0;

    for (x = 0, i = 0; x < n; x++) {
        for (y = 0; y < n; y++) {
            for (z = 0; z < n; z++, i++) {
                input_at(n, x, y, z, &g[i][0], &g[i][1]);
            }
        }
    }
    fftw_execute(p);
    /* Rank r's C: [z' b][y' a][x N] (-d: [x N][y' a][z' b]), z block r2,
     * y block r1. */
    for (r = 0; r < f->o.p1 * f->o.p2; r++) {
        for (zz = 0; zz < f->b; zz++) {
            for (yy = 0; yy < f->a; yy++) {
                for (x = 0; x < n; x++) {
                    y = (r / f->o.p2) * f->a + yy;
                    z = (r % f->o.p2) * f->b + zz;
                    i = r * f->len + (f->o.dtype
                                          ? ((size_t)x * f->a + yy) * f->b + zz
                                          : ((size_t)zz * f->a + yy) * n + x);
                    const double *s = g[((size_t)x * n + y) * n + z];

                    err = fmax(err, hypot(all[i][0] - s[0], all[i][1] - s[1]));
                    big = fmax(big, hypot(s[0], s[1]));
                }
            }
        }
    }
    fftw_destroy_plan(p);
    fftw_free(g);
    return err / big;
}

/* The checked transform, in cpu mode: forward (against the serial one
 * when asked), backward (against the input). 0 if both are within TOL;
 * the errors in err[0] (serial, -1 if not compared) and err[1]. */
static int checked_run(struct fft *f, double err[2])
{
    int serial =
        f->o.check == 1 || (f->o.check == 0 && f->o.n <= SERIAL_MAX_N);
    cplx *all = NULL;

    input_pass(f, 1);
    forward(f);
    err[0] = -1;
    if (serial) {
        if (f->rank == 0) {
            all = fftw_alloc_complex(f->len * f->o.p1 * f->o.p2);
        }
        MPI_Gather(f->ac, (int)f->len * 2, MPI_DOUBLE, all, (int)f->len * 2,
                   MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (f->rank == 0) {
            err[0] = serial_error(f, all);
            fftw_free(all);
        }
        MPI_Bcast(&err[0], 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    }
    backward(f);
    err[1] = input_pass(f, 0);
    return err[0] < TOL && err[1] < TOL ? 0 : -1;
}

static int cmp_double(const void *p, const void *q)
{
    double a = *(const double *)p, b = *(const double *)q;

    return (a > b) - (a < b);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The timed steps: per step the slowest rank's time and the ranks' mean
 * times in MPI_Wait, packing and starting the alltoalls, their medians in
 * ms into ms[0], ms[1], ms[3], ms[4]; ms[2] the FFTs' time per step. A
 * warm-up cpu step first measures the chunk FFT times gpu-like mode
 * sleeps (or -t gives them). */
static void timed_steps(struct fft *f, double ms[5])
{
    int     s, nstep = f->o.steps, np = f->o.p1 * f->o.p2;
    double *step = malloc(sizeof(double) * nstep * 4), t0;
    double *wait = step + nstep, *mv = wait + nstep, *call = mv + nstep;

    f->measure = 1;
    forward(f);
    backward(f);
    f->measure = 0;
    if (f->o.fft_ms > 0) {
        given_fft_times(f);
    }
    f->sleep_fft = f->o.gpu;
    for (s = 0; s < nstep; s++) {
        MPI_Barrier(MPI_COMM_WORLD);
        f->wait_s = 0;
        f->move_s = 0;
        f->call_s = 0;
        t0 = MPI_Wtime();
        forward(f);
        backward(f);
        step[s] = MPI_Wtime() - t0;
        wait[s] = f->wait_s;
        mv[s] = f->move_s;
        call[s] = f->call_s;
    }
    f->sleep_fft = 0;
    MPI_Allreduce(MPI_IN_PLACE, step, nstep, MPI_DOUBLE, MPI_MAX,
                  MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, wait, 3 * nstep, MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
    for (s = 0; s < 3 * nstep; s++) {
        wait[s] /= np;
    }
    ms[0] = 1e3 * median(step, nstep);
    ms[1] = 1e3 * median(wait, nstep);
    ms[3] = 1e3 * median(mv, nstep);
    ms[4] = 1e3 * median(call, nstep);
    /* The FFTs' time per step (slept, x F, in gpu-like mode): the
     * slowest rank's. */
    for (s = 0, ms[2] = 0; s < NSLOT * f->o.k; s++) {
        ms[2] += f->fft_ns[s] * 1e-6 * (f->o.gpu ? f->o.factor : 1);
    }
    MPI_Allreduce(MPI_IN_PLACE, &ms[2], 1, MPI_DOUBLE, MPI_MAX,
                  MPI_COMM_WORLD);
    free(step);
}

static void teardown(struct fft *f)
{
    int i;

    if (f->req) {
        for (i = 0; i < 4 * f->o.k; i++) {
            MPI_Request_free(&f->req[i]);
        }
        free(f->req);
    }
    for (i = 0; i < f->nplan; i++) {
        fftw_destroy_plan(f->plan[i].p);
    }
    for (i = 0; f->ty && i < 4 * f->o.k; i++) {
        MPI_Type_free(&f->ty[i]);
    }
    free(f->ty);
    fftw_free(f->ac);
    fftw_free(f->bb);
    if (f->sbuf) {
        fftw_free(f->sbuf);
        fftw_free(f->rbuf);
    }
    free(f->fft_ns);
    MPI_Comm_free(&f->row);
    MPI_Comm_free(&f->col);
}

int main(int argc, char **argv)
{
    struct fft f = {0};
    double     err[2], err2, ms[5];
    int        size, rc, bad, i, multiple = 0, provided;

    for (i = 1; i < argc; i++) {
        multiple |= strcmp(argv[i], "-M") == 0;
    }
    if (multiple) {
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &f.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* Every rank parses the same line; rank 0 alone reports. */
    if (f.rank != 0) {
        opterr = 0;
        fclose(stderr);
        stderr = fopen("/dev/null", "w");
    }
    rc = parse_args(argc, argv, size, &f.o);
    if (rc != 0) {
        MPI_Finalize();
        return rc < 0 ? 2 : 0;
    }
    rc = setup(&f) == 0 ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rc != 0) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    bad = checked_run(&f, err);
    timed_steps(&f, ms);
    /* The steps are identities on the data (forward then backward): the
     * input again, whatever the mode. */
    err2 = input_pass(&f, 0);
    bad |= !(err2 < TOL);
    if (f.rank == 0) {
        printf("fft3d: N=%d grid=%dx%d K=%d mode=%s factor=%g "
               "persistent=%d datatypes=%d steps=%d step_ms=%.3f wait_ms=%.3f "
               "wait_share=%.3f fft_ms=%.3f move_ms=%.3f call_ms=%.3f\n",
               f.o.n, f.o.p1, f.o.p2, f.o.k, f.o.gpu ? "gpu-like" : "cpu",
               f.o.factor, f.o.persistent, f.o.dtype, f.o.steps, ms[0], ms[1],
               ms[0] > 0 ? ms[1] / ms[0] : 0, ms[2], ms[3], ms[4]);
        printf("fft3d: %s serial_err=%.3g roundtrip_err=%.3g "
               "after_steps_err=%.3g tol=%g (max abs error / max abs "
               "value)\n",
               bad ? "FAILED" : "ok", err[0], err[1], err2, TOL);
    }
    teardown(&f);
    MPI_Finalize();
    return bad ? 1 : 0;
}
