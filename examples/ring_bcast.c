/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ring_bcast: an HPL-like panel broadcast overlapped with the trailing
 * matrix update, with plain MPI or with a dpushim pattern group.
 *
 * P ranks form a ring. At step k the owner, rank k mod P, broadcasts
 * panel k (NB x N doubles) while every rank updates its part of the
 * trailing matrix with panel k-1 (look-ahead of depth one, as HPL):
 *
 *     C (M x N) -= A (M x NB) * panel (NB x N)
 *
 * a plain C blocked DGEMM, cut into T chunks of rows. Modes (-m):
 *
 *   mpi    HPL's 1-ring: the owner sends the panel to its right
 *          neighbour in chunks (MPI_Isend); every other rank receives
 *          them from its left (MPI_Irecv) and, between compute chunks,
 *          tests them in order (MPI_Test) and forwards each chunk that
 *          arrived to its right, unless that is the owner. A rank that
 *          computes forwards nothing: the pipeline moves only at the
 *          tests, as in HPL.
 *   group  one persistent dpushim pattern group per (owner, buffer):
 *          the owner sends the panel straight to every other rank and
 *          each of them receives it from the owner; MPI_Start at the
 *          step's start, MPI_Wait at its end, no test in between.
 *
 * Why no ring in the group: all transfers of a group start together, so
 * a rank cannot forward within one group the panel it is receiving in
 * it (its send would read the buffer before the data arrived). A
 * systolic ring (receive panel k, forward panel k-1 in the same group)
 * would be correct, but panel k would then reach the rank d places to
 * the right of the owner only d steps later, which breaks the look-ahead
 * of one step every rank here relies on. The owner's panel going out as
 * P-1 sends keeps the algorithm and moves the same bytes into every
 * rank; the agent (the DPU) does the fan-out, which is exactly what the
 * ring's forwarding did with the host's CPU. Where offload is not
 * available, the same pattern runs as persistent point-to-point requests
 * (MPI_Send_init / MPI_Recv_init, MPI_Startall).
 *
 * Compute (-c): busy runs the DGEMM; sleep sleeps as long instead (the
 * ranks are idle, as while a GPU computes), per chunk, so the MPI mode's
 * tests still happen between chunks.
 *
 * Check: every value is a small integer, so every product and sum is
 * exact and the order of the operations does not matter. Panel k's
 * entries follow a formula in (k, row, column): each rank compares every
 * panel it uses against it. C must then equal C0 - A * S, S the sum of
 * all the panels, computed on each rank without communication.
 * Prints "check: ok" (exit 0) or "check: FAILED ..." (exit 1), and
 * "time_s: T", the wall time of the timed steps (the slowest rank).
 */
#define _GNU_SOURCE
#include <dpushim.h>
#include <mpi.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

enum { MODE_MPI, MODE_GROUP };

struct opts {
    int    mode, sleep;
    int    n, nb, m;      /* panel NB x N, C M x N per rank */
    int    steps, warmup; /* timed steps, untimed ones before them */
    int    chunks;        /* the ring's message chunks per panel */
    int    tchunks;       /* compute chunks (tests between them) */
    double sleep_us;      /* -S: per step; 0: measured */
};

/* The defaults; opt starts as them (usage shows them). */
static const struct opts defaults = {MODE_MPI, 0, 2048, 64, 96,
                                     150,      2, 8,    8,  0};
static struct opts       opt;

static int rank, nproc;

/* MPI_STATUSES_IGNORE through a variable: gcc 12 warns about the constant
 * in MPICH's annotated prototypes (a 0-byte region). */
static MPI_Status *statuses_ignore;

static void usage(const char *prog)
{
    if (rank == 0) {
        fprintf(stderr,
                "usage: %s [-m mpi|group] [-c busy|sleep] [-n N] [-b NB]\n"
                "          [-M M] [-i steps] [-w warmup] [-k chunks]\n"
                "          [-t compute_chunks] [-S sleep_us_per_step]\n"
                "  -m  mpi: 1-ring with MPI_Isend/Irecv/Test and forwarding\n"
                "      group: persistent dpushim groups (default mpi)\n"
                "  -c  busy: DGEMM update; sleep: sleep as long (idle rank)\n"
                "  -n  panel columns, C's columns (%d)\n"
                "  -b  panel rows NB (%d)    -M  C's rows per rank (%d)\n"
                "  -i  timed steps (%d)      -w  untimed first steps (%d)\n"
                "  -k  ring chunks per panel, mode mpi (%d)\n"
                "  -t  compute chunks per step; mode mpi tests between (%d)\n"
                "  -S  sleep per step in us (sleep mode; default: the time\n"
                "      one update takes here, measured first)\n",
                prog, defaults.n, defaults.nb, defaults.m, defaults.steps,
                defaults.warmup, defaults.chunks, defaults.tchunks);
    }
}

static int parse(int argc, char **argv)
{
    int c;

    while ((c = getopt(argc, argv, "m:c:n:b:M:i:w:k:t:S:h")) != -1) {
        switch (c) {
        case 'm':
            if (strcmp(optarg, "mpi") == 0) {
                opt.mode = MODE_MPI;
            } else if (strcmp(optarg, "group") == 0) {
                opt.mode = MODE_GROUP;
            } else {
                return -1;
            }
            break;
        case 'c':
            if (strcmp(optarg, "busy") != 0 && strcmp(optarg, "sleep")) {
                return -1;
            }
            opt.sleep = strcmp(optarg, "sleep") == 0;
            break;
        case 'n': opt.n = atoi(optarg); break;
        case 'b': opt.nb = atoi(optarg); break;
        case 'M': opt.m = atoi(optarg); break;
        case 'i': opt.steps = atoi(optarg); break;
        case 'w': opt.warmup = atoi(optarg); break;
        case 'k': opt.chunks = atoi(optarg); break;
        case 't': opt.tchunks = atoi(optarg); break;
        case 'S': opt.sleep_us = atof(optarg); break;
        default: return -1;
        }
    }
    if (optind != argc || opt.n < 1 || opt.nb < 1 || opt.m < 1 ||
        opt.steps < 1 || opt.warmup < 0 || opt.chunks < 1 || opt.tchunks < 1 ||
        opt.sleep_us < 0 || (long)opt.n * opt.nb > 1L << 28) {
        return -1;
    }
    if (opt.chunks > opt.n * opt.nb) {
        opt.chunks = opt.n * opt.nb;
    }
    return 0;
}

/* Panel k's entry (l, j): small integers, different from panel k-2's
 * (the other buffer's previous contents) wherever a stale buffer would
 * show. */
static double panel_val(int k, int l, int j)
{
    return (double)((k * 7 + l * 3 + j) % 5 - 2);
}

static void panel_fill(double *p, int k)
{
    for (int l = 0; l < opt.nb; l++) {
        for (int j = 0; j < opt.n; j++) {
            p[(size_t)l * opt.n + j] = panel_val(k, l, j);
        }
    }
}

/* Entries of panel k that differ from the formula. Along a row the
 * formula repeats every 5 columns: compared against those 5 values, the
 * check costs little beside the update. */
static long panel_bad(const double *p, int k)
{
    long bad = 0;

    for (int l = 0; l < opt.nb; l++) {
        const double *row = p + (size_t)l * opt.n;
        double        v[5];
        int           q = 0;

        for (int j = 0; j < 5; j++) {
            v[j] = panel_val(k, l, j);
        }
        for (int j = 0; j < opt.n; j++) {
            bad += row[j] != v[q];
            q = q == 4 ? 0 : q + 1;
        }
    }
    return bad;
}

/*
 * C rows [r0, r1) -= A * P. Blocked for the caches: a block of JB
 * columns of P (NB x JB doubles, 128 KiB at NB 64) stays in L2 while
 * every row of C passes over it, and four rows of C share each load of
 * P's row (register blocking); the j loop vectorises.
 */
#define JB 256
static void update(double *C, const double *A, const double *P, int r0, int r1)
{
    const int n = opt.n, nb = opt.nb;

    for (int jb = 0; jb < n; jb += JB) {
        int je = jb + JB < n ? jb + JB : n;
        int i = r0;

        for (; i + 4 <= r1; i += 4) {
            double       *c0 = C + (size_t)i * n, *c1 = c0 + n;
            double       *c2 = c1 + n, *c3 = c2 + n;
            const double *a = A + (size_t)i * nb;

            for (int l = 0; l < nb; l++) {
                const double *p = P + (size_t)l * n;
                double        a0 = a[l], a1 = a[nb + l];
                double        a2 = a[2 * nb + l], a3 = a[3 * nb + l];

                for (int j = jb; j < je; j++) {
                    double pj = p[j];

                    c0[j] -= a0 * pj;
                    c1[j] -= a1 * pj;
                    c2[j] -= a2 * pj;
                    c3[j] -= a3 * pj;
                }
            }
        }
        for (; i < r1; i++) {
            double       *c = C + (size_t)i * n;
            const double *a = A + (size_t)i * nb;

            for (int l = 0; l < nb; l++) {
                const double *p = P + (size_t)l * n;

                for (int j = jb; j < je; j++) {
                    c[j] -= a[l] * p[j];
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

/* ---- mode mpi: the 1-ring, forwarding by the rank ---- */

typedef struct ring {
    MPI_Request *rreq, *sreq; /* per chunk */
    double      *buf;
    int          next;    /* first chunk not yet received */
    int          forward; /* the right neighbour is not the owner */
    int          tag0;
} ring_t;

static MPI_Aint chunk_at(int c)
{
    return (MPI_Aint)((long)opt.n * opt.nb * c / opt.chunks);
}

static void ring_send(ring_t *r, int c)
{
    MPI_Aint a = chunk_at(c), e = chunk_at(c + 1);

    MPI_Isend(r->buf + a, (int)(e - a), MPI_DOUBLE, (rank + 1) % nproc,
              r->tag0 + c, MPI_COMM_WORLD, &r->sreq[c]);
}

/* Post panel k's transfers: the owner sends every chunk right, the
 * others receive every chunk from the left. */
static void ring_post(ring_t *r, int k, double *buf)
{
    int owner = k % nproc, left = (rank + nproc - 1) % nproc;

    r->buf = buf;
    /* Two tag ranges, by step parity: chunks of consecutive panels from
     * one neighbour never meet the wrong receive. */
    r->tag0 = (k % 2) * opt.chunks;
    r->forward = (rank + 1) % nproc != owner;
    for (int c = 0; c < opt.chunks; c++) {
        r->rreq[c] = r->sreq[c] = MPI_REQUEST_NULL;
    }
    r->next = opt.chunks;
    if (nproc == 1) {
        return;
    }
    if (rank == owner) {
        for (int c = 0; c < opt.chunks; c++) {
            ring_send(r, c);
        }
        return;
    }
    for (int c = 0; c < opt.chunks; c++) {
        MPI_Aint a = chunk_at(c), e = chunk_at(c + 1);

        MPI_Irecv(buf + a, (int)(e - a), MPI_DOUBLE, left, r->tag0 + c,
                  MPI_COMM_WORLD, &r->rreq[c]);
    }
    r->next = 0;
}

/* Between compute chunks: forward, in order, the chunks that arrived. */
static void ring_progress(ring_t *r)
{
    int flag = 1;

    while (r->next < opt.chunks) {
        MPI_Test(&r->rreq[r->next], &flag, MPI_STATUS_IGNORE);
        if (!flag) {
            break;
        }
        if (r->forward) {
            ring_send(r, r->next);
        }
        r->next++;
    }
}

static void ring_finish(ring_t *r)
{
    for (; r->next < opt.chunks; r->next++) {
        MPI_Wait(&r->rreq[r->next], MPI_STATUS_IGNORE);
        if (r->forward) {
            ring_send(r, r->next);
        }
    }
    MPI_Waitall(opt.chunks, r->sreq, statuses_ignore);
}

/* ---- mode group: one persistent pattern per (owner, buffer) ---- */

typedef struct pat {
    MPI_Request *req;
    int          n; /* 0: this (owner, buffer) is never used */
} pat_t;

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
static int any_failed(int failed)
{
    int any;

    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
}

/*
 * The owner's panel to every other rank, one persistent group per
 * (owner, buffer) used, ended by every rank in the same order. 0, or -1
 * where offload is not available (at the begin, or at the end:
 * DPUSHIM_GROUP_INIT=0 shows only there); then no request is left.
 */
static int group_make(pat_t *pat, double *buf[2], const char **why)
{
    int k, rc = DPUSHIM_SUCCESS;

    for (k = 0; k < 2 * nproc; k++) {
        pat_t          *p = &pat[k];
        int             o = k / 2, b = k % 2;
        dpushim_group_t g;

        if (p->n == 0) {
            continue;
        }
        rc = dpushim_group_begin(MPI_COMM_WORLD, &g);
        if (rc != DPUSHIM_ERR_OFF) {
            must(rc);
        }
        if (any_failed(rc != DPUSHIM_SUCCESS)) {
            if (rc == DPUSHIM_SUCCESS) {
                dpushim_group_free(&g);
            }
            break;
        }
        for (int d = 1; d < nproc && rank == o; d++) {
            must(dpushim_group_send(g, buf[b], opt.n * opt.nb, MPI_DOUBLE,
                                    (o + d) % nproc, 0));
        }
        if (rank != o) {
            must(dpushim_group_recv(g, buf[b], opt.n * opt.nb, MPI_DOUBLE, o,
                                    0));
        }
        rc = dpushim_group_end_persistent(&g, &p->req[0]);
        if (rc != DPUSHIM_ERR_OFF) {
            must(rc);
        }
        if (any_failed(rc != DPUSHIM_SUCCESS)) {
            if (rc == DPUSHIM_SUCCESS) {
                MPI_Request_free(&p->req[0]);
            }
            break;
        }
    }
    if (k == 2 * nproc) {
        return 0;
    }
    /* Not available: drop the groups made before. */
    *why = dpushim_error_string(DPUSHIM_ERR_OFF);
    while (--k >= 0) {
        if (pat[k].n > 0) {
            MPI_Request_free(&pat[k].req[0]);
        }
    }
    return -1;
}

/* The same pattern as persistent point-to-point requests. */
static void p2p_make(pat_t *pat, double *buf[2])
{
    for (int o = 0; o < nproc; o++) {
        for (int b = 0; b < 2; b++) {
            pat_t *p = &pat[2 * o + b];
            int    n = 0;

            if (p->n == 0) {
                continue;
            }
            for (int d = 1; d < nproc && rank == o; d++) {
                MPI_Send_init(buf[b], opt.n * opt.nb, MPI_DOUBLE,
                              (o + d) % nproc, 0, MPI_COMM_WORLD,
                              &p->req[n++]);
            }
            if (rank != o) {
                MPI_Recv_init(buf[b], opt.n * opt.nb, MPI_DOUBLE, o, 0,
                              MPI_COMM_WORLD, &p->req[n++]);
            }
            p->n = n;
        }
    }
}

int main(int argc, char **argv)
{
    double     *C, *A, *buf[2], *ref, *S;
    double      t0, t, tmax, comp = 0, step_us = 0;
    int         nupd = 0; /* updates in the timed part */
    long        bad = 0, badc = 0, allbad[2], loc[2];
    int         total, offloaded = 0;
    const char *why = "";
    ring_t      ring;
    pat_t      *pat = NULL;

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
    total = opt.warmup + opt.steps;
    C = malloc(sizeof(double) * (size_t)opt.m * opt.n);
    ref = malloc(sizeof(double) * (size_t)opt.m * opt.n);
    A = malloc(sizeof(double) * (size_t)opt.m * opt.nb);
    S = calloc((size_t)opt.nb * opt.n, sizeof(double));
    buf[0] = malloc(sizeof(double) * (size_t)opt.nb * opt.n);
    buf[1] = malloc(sizeof(double) * (size_t)opt.nb * opt.n);
    ring.rreq = malloc(sizeof(MPI_Request) * (size_t)opt.chunks);
    ring.sreq = malloc(sizeof(MPI_Request) * (size_t)opt.chunks);
    if (!C || !ref || !A || !S || !buf[0] || !buf[1] || !ring.rreq ||
        !ring.sreq) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int i = 0; i < opt.m; i++) {
        for (int j = 0; j < opt.n; j++) {
            C[(size_t)i * opt.n + j] = (i + 2 * j + rank) % 7 - 3;
        }
        for (int l = 0; l < opt.nb; l++) {
            A[(size_t)i * opt.nb + l] = (3 * i + l + 2 * rank) % 5 - 2;
        }
    }
    memcpy(ref, C, sizeof(double) * (size_t)opt.m * opt.n);
    memset(buf[0], 0, sizeof(double) * (size_t)opt.nb * opt.n);
    memset(buf[1], 0, sizeof(double) * (size_t)opt.nb * opt.n);

    if (opt.sleep) {
        /* The update's time, measured on a copy (the best of two), the
         * slowest rank's: every rank then sleeps that long. */
        step_us = opt.sleep_us;
        if (step_us == 0) {
            double best = 1e30;

            panel_fill(buf[0], 0);
            for (int r = 0; r < 2; r++) {
                double s = MPI_Wtime();

                update(ref, A, buf[0], 0, opt.m);
                s = MPI_Wtime() - s;
                best = s < best ? s : best;
            }
            memcpy(ref, C, sizeof(double) * (size_t)opt.m * opt.n);
            best *= 1e6;
            MPI_Allreduce(&best, &step_us, 1, MPI_DOUBLE, MPI_MAX,
                          MPI_COMM_WORLD);
        }
    }

    if (opt.mode == MODE_GROUP) {
        /* The (owner, buffer) pairs steps use: k mod P, k mod 2 (only
         * half of them when P is even). */
        pat = calloc((size_t)2 * nproc, sizeof(*pat));
        for (int k = 0; pat != NULL && k < 2 * nproc; k++) {
            pat_t *p = &pat[2 * (k % nproc) + k % 2];

            if (p->req == NULL) {
                p->req = malloc(sizeof(MPI_Request) * (size_t)nproc);
                p->n = 1;
                if (p->req == NULL) {
                    fprintf(stderr, "rank %d: out of memory\n", rank);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            }
        }
        if (pat == NULL) {
            fprintf(stderr, "rank %d: out of memory\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        offloaded = group_make(pat, buf, &why) == 0;
        if (!offloaded) {
            p2p_make(pat, buf);
        }
    }
    if (rank == 0) {
        printf("ring_bcast: mode=%s compute=%s ranks=%d N=%d NB=%d M=%d "
               "steps=%d warmup=%d chunks=%d tchunks=%d\n",
               opt.mode == MODE_MPI ? "mpi" : "group",
               opt.sleep ? "sleep" : "busy", nproc, opt.n, opt.nb, opt.m,
               opt.steps, opt.warmup, opt.chunks, opt.tchunks);
        if (opt.mode == MODE_GROUP) {
            if (offloaded) {
                printf("group: offloaded by dpushim\n");
            } else {
                printf("group: not offloaded (%s): persistent "
                       "point-to-point\n",
                       why);
            }
        }
        fflush(stdout);
    }

    /*
     * Iteration s: post panel s's broadcast (s < total), update with
     * panel s-1 meanwhile (s >= 1), complete the broadcast. The timed
     * part starts at iteration warmup.
     */
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int s = 0; s <= total; s++) {
        int     owner = s % nproc;
        double *in = buf[s % 2], *use = buf[(s + 1) % 2];
        pat_t  *p = pat != NULL ? &pat[2 * owner + s % 2] : NULL;

        if (s == opt.warmup) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            comp = 0;
            nupd = 0;
        }
        if (s < total) {
            if (rank == owner) {
                panel_fill(in, s);
            }
            if (opt.mode == MODE_MPI) {
                ring_post(&ring, s, in);
            } else if (p->n > 0) {
                MPI_Startall(p->n, p->req);
            }
        }
        if (s >= 1) {
            bad += panel_bad(use, s - 1);
            for (int l = 0; !opt.sleep && l < opt.nb * opt.n; l++) {
                S[l] += use[l];
            }
            for (int c = 0; c < opt.tchunks; c++) {
                /* The compute phase's own time: what -S replaces. */
                double c0 = MPI_Wtime();

                if (opt.sleep) {
                    sleep_us(step_us / opt.tchunks);
                } else {
                    update(C, A, use, (int)((long)opt.m * c / opt.tchunks),
                           (int)((long)opt.m * (c + 1) / opt.tchunks));
                }
                comp += MPI_Wtime() - c0;
                if (opt.mode == MODE_MPI && s < total) {
                    ring_progress(&ring);
                }
            }
            nupd++;
        }
        if (s < total) {
            if (opt.mode == MODE_MPI) {
                ring_finish(&ring);
            } else if (p->n > 0) {
                MPI_Waitall(p->n, p->req, statuses_ignore);
            }
        }
    }
    t = MPI_Wtime() - t0;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&comp, &t, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    for (int o = 0; pat != NULL && o < 2 * nproc; o++) {
        for (int i = 0; i < pat[o].n; i++) {
            MPI_Request_free(&pat[o].req[i]);
        }
    }

    /* C0 - A * S, here alone: exact, so it must equal C bit for bit. */
    if (!opt.sleep) {
        update(ref, A, S, 0, opt.m);
        for (size_t i = 0; i < (size_t)opt.m * opt.n; i++) {
            badc += C[i] != ref[i];
        }
    }
    loc[0] = bad;
    loc[1] = badc;
    MPI_Allreduce(loc, allbad, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        /* compute_us: the slowest rank's mean update (or sleep) per
         * step, the -S that sleeps as long as this run computed. */
        printf("compute_s: %.6f\n", t);
        printf("compute_us: %.1f\n", nupd > 0 ? 1e6 * t / nupd : 0.0);
        printf("time_s: %.6f\n", tmax);
        if (allbad[0] == 0 && allbad[1] == 0) {
            printf("check: ok (%d panels%s)\n", total,
                   opt.sleep ? "; C not updated: sleep mode" : " and C");
        } else {
            printf("check: FAILED: %ld wrong panel entries, %ld wrong "
                   "entries of C\n",
                   allbad[0], allbad[1]);
        }
    }
    free(C);
    free(ref);
    free(A);
    free(S);
    free(buf[0]);
    free(buf[1]);
    free(ring.rreq);
    free(ring.sreq);
    for (int o = 0; pat != NULL && o < 2 * nproc; o++) {
        free(pat[o].req);
    }
    free(pat);
    MPI_Finalize();
    return allbad[0] != 0 || allbad[1] != 0;
}
