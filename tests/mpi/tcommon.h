/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared helpers of the MPI tests: patterns, checks, expected statistics. */
#ifndef TCOMMON_H
#define TCOMMON_H

/*
 * Include this header first in every test program.
 *
 * Conventions:
 * - t_init() / t_finish() bracket the program. t_finish() prints the
 *   "expect:" lines (job-wide totals the shim's statistics must equal),
 *   combines the failures of all ranks, prints "result: ..." from rank 0,
 *   calls MPI_Finalize and returns the exit status.
 * - Every MPI_Ialltoall / MPI_Ibcast goes through t_ialltoall() /
 *   t_ibcast(), which record whether the call is eligible for offload.
 *   Eligible: intracommunicator, message bytes > 0, whatever the layout
 *   (a non-contiguous datatype is packed and unpacked by the shim, so that
 *   every rank decides alike). Reference results come from PMPI_Alltoall
 *   and PMPI_Bcast, which bypass the shim.
 * - Data patterns are a hash of (seed, a, b, offset), so a block that is
 *   misplaced, shifted, stale or missing is detected.
 * - t_case() names the current test case (used in failure messages) and
 *   re-arms a watchdog that turns a hang into a reported failure.
 * - Environment: T_VERBOSE=1 prints each case with a time stamp (rank 0);
 *   T_SKIP_NEW_COMM=1 skips the cases known to hang when starting a
 *   collective on a new communicator blocks (see t_skip_new_comm()).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <mpi.h>

/* Persistent collectives: MPI-4's MPI_<Coll>_init (MPICH 4), Open MPI
 * 4.1's MPIX_<Coll>_init from mpi-ext.h; HAVE_PERS where either is. */
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define PINIT(name)  MPIX_##name##_init
#define PPINIT(name) PMPIX_##name##_init
#define HAVE_PERS    1
#elif MPI_VERSION >= 4
#define PINIT(name)  MPI_##name##_init
#define PPINIT(name) PMPI_##name##_init
#define HAVE_PERS    1
#endif

#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* s without a new case before giving up; T_WATCHDOG overrides (to catch a
 * stall alive with a debugger) */
#define T_WATCHDOG_S  30
#define T_MAX_REPORTS 40 /* failure messages printed per rank */
#define T_GUARD       64 /* guard bytes around checked buffers */
#define T_GUARD_BYTE  0xE7
#define T_POISON      0x5A /* initial contents of receive buffers */

enum { T_A2A, T_BCAST, T_NCOLL };
enum { T_OFF, T_FB, T_BYTES, T_NSTAT };

static struct {
    const char        *prog;
    int                rank, size;
    long long          errors;
    long long          reports;
    int                verbose;  /* T_VERBOSE set: print each case */
    int                watchdog; /* s, T_WATCHDOG_S or $T_WATCHDOG */
    double             t0;
    uint32_t           seed;
    unsigned long long stat[T_NCOLL][T_NSTAT];
    char               cas[200];
    char               hang[400]; /* watchdog message for this case */
    int                hang_len;
    pid_t              agents[4]; /* agents this rank spawned */
    int                nagents;
} t;

/* MPI_STATUSES_IGNORE, hidden from the compiler: some MPIs declare the
 * array arguments of MPI_Waitsome & co with sizes that make GCC warn. */
static MPI_Status *t_statuses_ignore;

static inline double t_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* SIGALRM: the current case made no progress for T_WATCHDOG_S. Only
 * async-signal-safe calls: the message was formatted by t_case(). */
static inline void t_alarm(int sig)
{
    struct timespec nap = {0, 500000000L};

    (void)sig;
    if (t.hang_len > 0 && write(1, t.hang, (size_t)t.hang_len) < 0) {
        t.hang_len = 0;
    }
    /* The agents this rank spawned print what each live collective
     * waits for (SIGUSR1, dpu_agent/main/agent_loop.c) into the log. */
    for (int i = 0; i < t.nagents; i++) {
        kill(t.agents[i], SIGUSR1);
    }
    if (t.nagents > 0) {
        nanosleep(&nap, NULL);
    }
    _exit(3);
}

/* The dpu_agent processes this rank spawned (children named dpu_agent),
 * for t_alarm; none under stock MPI or with listening agents. */
static inline void t_find_agents(void)
{
    DIR           *d = opendir("/proc");
    struct dirent *e;

    while (d != NULL && (e = readdir(d)) != NULL &&
           t.nagents < (int)(sizeof(t.agents) / sizeof(t.agents[0]))) {
        char  path[300], buf[512], *p;
        FILE *f;
        int   ppid;

        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        if ((f = fopen(path, "r")) == NULL) {
            continue;
        }
        if (fgets(buf, sizeof(buf), f) != NULL &&
            strstr(buf, "(dpu_agent)") != NULL &&
            (p = strrchr(buf, ')')) != NULL &&
            sscanf(p + 2, "%*c %d", &ppid) == 1 && ppid == (int)getpid()) {
            t.agents[t.nagents++] = (pid_t)atoi(e->d_name);
        }
        fclose(f);
    }
    if (d != NULL) {
        closedir(d);
    }
}

/* Name the current case (printf-style) and re-arm the watchdog. */
static inline void t_case(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(t.cas, sizeof(t.cas), fmt, ap);
    va_end(ap);
    t.hang_len = snprintf(t.hang, sizeof(t.hang),
                          "rank %d: FAIL [%s] %s: "
                          "no progress for %d s (hang?): exiting\n",
                          t.rank, t.prog, t.cas, t.watchdog);
    if (t.hang_len >= (int)sizeof(t.hang)) {
        t.hang_len = (int)sizeof(t.hang) - 1;
    }
    alarm((unsigned)t.watchdog);
    if (t.verbose && t.rank == 0) {
        printf("rank 0: %8.3f s: %s\n", t_now() - t.t0, t.cas);
        fflush(stdout);
    }
}

/* Record one failure of the current case (printf-style details). */
static inline void t_fail(const char *fmt, ...)
{
    va_list ap;

    t.errors++;
    if (++t.reports > T_MAX_REPORTS) {
        if (t.reports == T_MAX_REPORTS + 1) {
            printf("rank %d: (further failures not shown)\n", t.rank);
            fflush(stdout);
        }
        return;
    }
    printf("rank %d: FAIL [%s] %s: ", t.rank, t.prog, t.cas);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

/* Check the return code of an MPI call. */
#define T_MPI(call) t_mpi_rc((call), #call, __LINE__)

static inline int t_mpi_rc(int rc, const char *what, int line)
{
    char msg[MPI_MAX_ERROR_STRING];
    int  len = 0;

    if (rc != MPI_SUCCESS) {
        msg[0] = '\0';
        MPI_Error_string(rc, msg, &len);
        t_fail("line %d: %s returned %d (%s)", line, what, rc, msg);
    }
    return rc;
}

static inline void t_init(int *argc, char ***argv, const char *prog)
{
    const char *r = getenv("OMPI_COMM_WORLD_RANK");

    /* Until MPI_Init returns, the launcher's rank (for messages). */
    if (r == NULL) {
        r = getenv("PMI_RANK");
    }
    t.rank = (r != NULL) ? atoi(r) : -1;
    t.prog = prog;
    t.verbose = getenv("T_VERBOSE") != NULL;
    t.watchdog = getenv("T_WATCHDOG") != NULL ? atoi(getenv("T_WATCHDOG")) : 0;
    if (t.watchdog <= 0) {
        t.watchdog = T_WATCHDOG_S;
    }
    t.t0 = t_now();
    signal(SIGALRM, t_alarm);
    t_case("MPI_Init");
    MPI_Init(argc, argv);
    t_statuses_ignore = MPI_STATUSES_IGNORE;
    /* Errors are reported as test failures, not aborts. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &t.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t.size);
    t_find_agents();
}

/* A fresh seed: every filled buffer gets contents never used before. */
static inline uint32_t t_seed(void)
{
    return ++t.seed;
}

static inline uint64_t t_mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline uint64_t t_key(uint32_t seed, int a, int b)
{
    return t_mix64(((uint64_t)seed << 40) ^ ((uint64_t)(a + 1) << 20) ^
                   (uint64_t)(b + 1));
}

/* Byte i of pattern (seed, a, b). */
static inline uint8_t t_pat_at(uint64_t key, size_t i)
{
    return (uint8_t)(t_mix64(key + i / 8) >> (8 * (i % 8)));
}

static inline void t_pat_fill(void *buf, size_t n, uint32_t seed, int a, int b)
{
    uint64_t key = t_key(seed, a, b);
    uint8_t *p = buf;
    size_t   i, j;

    for (i = 0; i < n; i += 8) {
        uint64_t w = t_mix64(key + i / 8);

        for (j = 0; j < 8 && i + j < n; j++) {
            p[i + j] = (uint8_t)(w >> (8 * j));
        }
    }
}

/* Is buf pattern (seed, a, b)? Reports the first difference. */
static inline int t_pat_check(const char *what, const void *buf, size_t n,
                              uint32_t seed, int a, int b)
{
    uint64_t       key = t_key(seed, a, b);
    const uint8_t *p = buf;
    size_t         i, j, bad = 0, first = 0;

    for (i = 0; i < n; i += 8) {
        uint64_t w = t_mix64(key + i / 8);

        for (j = 0; j < 8 && i + j < n; j++) {
            if (p[i + j] != (uint8_t)(w >> (8 * j)) && bad++ == 0) {
                first = i + j;
            }
        }
    }
    if (bad != 0) {
        t_fail("%s: %zu of %zu bytes differ from the pattern; first at "
               "offset %zu: expected 0x%02x, got 0x%02x",
               what, bad, n, first, t_pat_at(key, first), p[first]);
    }
    return bad == 0;
}

/* Are n bytes of got equal to ref? Reports the first difference; whose
 * names what ref is ("stock MPI", "the expected contents"). */
static inline int t_cmp(const char *what, const void *got, const void *ref,
                        size_t n, const char *whose)
{
    const uint8_t *g = got, *r = ref;
    size_t         i, bad = 0, first = 0;

    if (n == 0 || memcmp(got, ref, n) == 0) {
        return 1;
    }
    for (i = 0; i < n; i++) {
        if (g[i] != r[i] && bad++ == 0) {
            first = i;
        }
    }
    t_fail("%s: %zu of %zu bytes differ from %s; first at offset %zu: "
           "expected 0x%02x, got 0x%02x",
           what, bad, n, whose, first, r[first], g[first]);
    return 0;
}

/* Is got what stock MPI delivered (ref)? */
static inline int t_same(const char *what, const void *got, const void *ref,
                         size_t n)
{
    return t_cmp(what, got, ref, n, "stock MPI");
}

/* Is got equal to the analytically expected contents exp? */
static inline int t_match(const char *what, const void *got, const void *exp,
                          size_t n)
{
    return t_cmp(what, got, exp, n, "the expected contents");
}

/* Are n bytes of buf all equal to v? */
static inline int t_all(const char *what, const void *buf, size_t n, int v)
{
    const uint8_t *p = buf;
    size_t         i, bad = 0, first = 0;

    for (i = 0; i < n; i++) {
        if (p[i] != (uint8_t)v && bad++ == 0) {
            first = i;
        }
    }
    if (bad != 0) {
        t_fail("%s: %zu of %zu bytes changed; first at offset %zu: "
               "expected 0x%02x, got 0x%02x",
               what, bad, n, first, (uint8_t)v, p[first]);
    }
    return bad == 0;
}

/* Buffer of n bytes (filled with T_POISON) between two guard zones. */
static inline void *t_galloc(size_t n)
{
    uint8_t *p = malloc(n + 2 * T_GUARD);

    if (p == NULL) {
        fprintf(stderr, "rank %d: out of memory (%zu bytes)\n", t.rank, n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(p, T_GUARD_BYTE, T_GUARD);
    memset(p + T_GUARD, T_POISON, n);
    memset(p + T_GUARD + n, T_GUARD_BYTE, T_GUARD);
    return p + T_GUARD;
}

static inline void t_gcheck(const char *what, void *buf, size_t n)
{
    char w[300];

    snprintf(w, sizeof(w), "%s (guard before)", what);
    t_all(w, (uint8_t *)buf - T_GUARD, T_GUARD, T_GUARD_BYTE);
    snprintf(w, sizeof(w), "%s (guard after)", what);
    t_all(w, (uint8_t *)buf + n, T_GUARD, T_GUARD_BYTE);
}

static inline void t_gfree(void *buf)
{
    if (buf != NULL) {
        free((uint8_t *)buf - T_GUARD);
    }
}

static inline void *t_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (p == NULL) {
        fprintf(stderr, "rank %d: out of memory (%zu bytes)\n", t.rank, n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* Stock MPI's alltoall, the tests' reference. Open MPI 4.1's tuned
 * component picks Bruck's algorithm for small blocks from 12 ranks on,
 * and that corrupts the heap or the result with derived datatypes at 32
 * ranks (a crash in opal_generic_simple_unpack, seen with no shim
 * loaded): there the reference is the same exchange made by
 * PMPI_Alltoallv of equal blocks, which takes another algorithm. */
static inline int t_ref_alltoall(const void *sb, int n, MPI_Datatype st,
                                 void *rb, int rn, MPI_Datatype rt,
                                 MPI_Comm comm)
{
#ifdef OPEN_MPI
    int p, inter, rc;

    MPI_Comm_test_inter(comm, &inter);
    if (inter) {
        MPI_Comm_remote_size(comm, &p);
    } else {
        MPI_Comm_size(comm, &p);
    }
    if (p >= 12) {
        int *sc = t_xmalloc(4 * sizeof(int) * (size_t)p);
        int *sd = sc + p, *rcnt = sd + p, *rd = rcnt + p;

        for (int i = 0; i < p; i++) {
            sc[i] = n;
            sd[i] = i * n;
            rcnt[i] = rn;
            rd[i] = i * rn;
        }
        rc = PMPI_Alltoallv(sb, sc, sd, st, rb, rcnt, rd, rt, comm);
        free(sc);
        return rc;
    }
#endif
    return PMPI_Alltoall(sb, n, st, rb, rn, rt, comm);
}

/* n bytes (a multiple of the page size) on pages of their own, poisoned:
 * two such buffers never share a page, so one registration of the shim's
 * cache can never cover another buffer. */
static inline void *t_palloc(size_t n)
{
    void *p = NULL;

    if (posix_memalign(&p, 4096, n) != 0) {
        fprintf(stderr, "rank %d: out of memory (%zu bytes)\n", t.rank, n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(p, T_POISON, n);
    return p;
}

/* Record the expected fate of one call (see the header comment). */
static inline void t_expect(int coll, MPI_Comm comm, int count,
                            MPI_Datatype type, int contig)
{
    int                tsize = 0, csize = 0, inter = 0;
    unsigned long long bytes;

    MPI_Type_size(type, &tsize);
    MPI_Comm_size(comm, &csize);
    MPI_Comm_test_inter(comm, &inter);
    bytes = (unsigned long long)tsize * (unsigned long long)count;
    (void)contig; /* layouts no longer matter */
    if (!inter && bytes > 0) {
        t.stat[coll][T_OFF]++;
        t.stat[coll][T_BYTES] += bytes * (coll == T_A2A ? csize : 1);
    } else {
        t.stat[coll][T_FB]++;
    }
}

/* MPI_Ialltoall; contig: both datatypes are contiguous. */
static inline int t_ialltoall(const void *sbuf, int scount, MPI_Datatype stype,
                              void *rbuf, int rcount, MPI_Datatype rtype,
                              MPI_Comm comm, MPI_Request *req, int contig)
{
    t_expect(T_A2A, comm, rcount, rtype, contig);
    return T_MPI(
        MPI_Ialltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm, req));
}

/* MPI_Ibcast; contig: the datatype is contiguous. */
static inline int t_ibcast(void *buf, int count, MPI_Datatype type, int root,
                           MPI_Comm comm, MPI_Request *req, int contig)
{
    t_expect(T_BCAST, comm, count, type, contig);
    return T_MPI(MPI_Ibcast(buf, count, type, root, comm, req));
}

/* Alltoall send buffer of rank me: block j is pattern (seed, me, j). */
static inline void t_a2a_fill(void *sbuf, size_t block, int csize,
                              uint32_t seed, int me)
{
    int j;

    for (j = 0; j < csize; j++) {
        t_pat_fill((char *)sbuf + (size_t)j * block, block, seed, me, j);
    }
}

/* Alltoall result of rank me: block i must be pattern (seed, i, me). */
static inline int t_a2a_check(const char *what, const void *rbuf, size_t block,
                              int csize, uint32_t seed, int me)
{
    char w[300];
    int  i, ok = 1;

    for (i = 0; i < csize; i++) {
        snprintf(w, sizeof(w), "%s, block from rank %d", what, i);
        ok &= t_pat_check(w, (const char *)rbuf + (size_t)i * block, block,
                          seed, i, me);
    }
    return ok;
}

/*
 * Layout of count elements of MPI_Type_vector(nblk, blen, stride, base):
 * element e starts at e * ext; its blocks of blen bytes start every
 * stride bytes (all in bytes here). Bytes between blocks are gaps that
 * MPI must neither read nor write.
 */
typedef struct {
    int          count, nblk;
    size_t       blen, stride, ext;
    MPI_Datatype type;
} t_vec_t;

/* Create the vector type (nblk blocks of blen base elements every stride
 * base elements) and describe count of them in v. */
static inline void t_vec_make(t_vec_t *v, int count, int nblk, int blen,
                              int stride, MPI_Datatype base)
{
    int bsize = 0;

    MPI_Type_size(base, &bsize);
    MPI_Type_vector(nblk, blen, stride, base, &v->type);
    MPI_Type_commit(&v->type);
    v->count = count;
    v->nblk = nblk;
    v->blen = (size_t)blen * (size_t)bsize;
    v->stride = (size_t)stride * (size_t)bsize;
    v->ext = (size_t)((nblk - 1) * stride + blen) * (size_t)bsize;
}

/* Bytes spanned by the count elements. */
static inline size_t t_vec_span(const t_vec_t *v)
{
    return (size_t)v->count * v->ext;
}

/* Copy the data bytes (not the gaps) of the layout from src to dst. */
static inline void t_vec_copy(void *dst, const void *src, const t_vec_t *v)
{
    int e, k;

    for (e = 0; e < v->count; e++) {
        for (k = 0; k < v->nblk; k++) {
            size_t off = (size_t)e * v->ext + (size_t)k * v->stride;

            memcpy((char *)dst + off, (const char *)src + off, v->blen);
        }
    }
}

/*
 * One collective with its buffers, its expected result and the result of
 * stock MPI (PMPI_*) on the same inputs, computed when it is set up.
 * Alltoall: send block j of comm rank r is pattern (seed, r, j); receive
 * block i must become pattern (seed, i, r). Bcast: the root's buffer is
 * pattern (seed, root, 0). With a vector layout, only the data bytes move;
 * gaps keep T_POISON (receive side) or stay unread.
 */
typedef struct {
    int            coll; /* T_A2A or T_BCAST */
    MPI_Comm       comm;
    int            csize, crank, root;
    MPI_Datatype   type;
    int            count;
    const t_vec_t *vec;      /* layout of a vector type, else NULL */
    int            contig;   /* eligible datatype */
    int            in_place; /* alltoall with MPI_IN_PLACE */
    size_t         span;     /* bytes of one block / of the message */
    size_t         len;      /* bytes of rbuf (and of sbuf) */
    uint32_t       seed;
    void          *sbuf, *rbuf, *exp, *ref;
    MPI_Request    req;
    int            done;
    char           name[120];
} t_op_t;

/* Set up an op (collective over comm: the reference is computed here).
 * vec: the layout when type is a vector (count is then vec->count). */
static inline void t_op_init(t_op_t *o, int coll, MPI_Comm comm,
                             MPI_Datatype type, int count, const t_vec_t *vec,
                             int root, int in_place, const char *fmt, ...)
{
    va_list ap;
    int     tsize = 0, i;
    void   *tmp;

    memset(o, 0, sizeof(*o));
    va_start(ap, fmt);
    vsnprintf(o->name, sizeof(o->name), fmt, ap);
    va_end(ap);
    o->coll = coll;
    o->comm = comm;
    MPI_Comm_size(comm, &o->csize);
    MPI_Comm_rank(comm, &o->crank);
    o->root = root;
    o->vec = vec;
    o->contig = (vec == NULL);
    o->in_place = in_place;
    o->type = vec ? vec->type : type;
    o->count = vec ? vec->count : count;
    MPI_Type_size(o->type, &tsize);
    o->span = vec ? t_vec_span(vec) : (size_t)o->count * (size_t)tsize;
    o->len = coll == T_A2A ? o->span * (size_t)o->csize : o->span;
    o->seed = t_seed();
    o->req = MPI_REQUEST_NULL;
    o->rbuf = t_galloc(o->len);
    o->exp = t_xmalloc(o->len);
    o->ref = t_xmalloc(o->len);
    memset(o->exp, T_POISON, o->len);
    tmp = t_xmalloc(o->span);
    if (coll == T_A2A) {
        if (in_place) {
            t_a2a_fill(o->rbuf, o->span, o->csize, o->seed, o->crank);
            memcpy(o->ref, o->rbuf, o->len);
            T_MPI(t_ref_alltoall(MPI_IN_PLACE, o->count, o->type, o->ref,
                                 o->count, o->type, comm));
        } else {
            o->sbuf = t_galloc(o->len);
            t_a2a_fill(o->sbuf, o->span, o->csize, o->seed, o->crank);
            memset(o->ref, T_POISON, o->len);
            T_MPI(t_ref_alltoall(o->sbuf, o->count, o->type, o->ref, o->count,
                                 o->type, comm));
        }
        for (i = 0; i < o->csize; i++) {
            char *e = (char *)o->exp + (size_t)i * o->span;

            if (vec) {
                t_pat_fill(tmp, o->span, o->seed, i, o->crank);
                t_vec_copy(e, tmp, vec);
            } else {
                t_pat_fill(e, o->span, o->seed, i, o->crank);
            }
        }
    } else {
        if (o->crank == root) {
            t_pat_fill(o->rbuf, o->span, o->seed, root, 0);
            memcpy(o->exp, o->rbuf, o->len);
        } else if (vec) {
            t_pat_fill(tmp, o->span, o->seed, root, 0);
            t_vec_copy(o->exp, tmp, vec);
        } else {
            t_pat_fill(o->exp, o->span, o->seed, root, 0);
        }
        memcpy(o->ref, o->rbuf, o->len);
        T_MPI(PMPI_Bcast(o->ref, o->count, o->type, root, comm));
    }
    free(tmp);
}

/* Post the op (MPI_Ialltoall or MPI_Ibcast) into *req (o->req if NULL). */
static inline int t_op_post(t_op_t *o, MPI_Request *req)
{
    if (req == NULL) {
        req = &o->req;
    }
    if (o->coll == T_A2A) {
        return t_ialltoall(o->in_place ? MPI_IN_PLACE : o->sbuf, o->count,
                           o->type, o->rbuf, o->count, o->type, o->comm, req,
                           o->contig);
    }
    return t_ibcast(o->rbuf, o->count, o->type, o->root, o->comm, req,
                    o->contig);
}

/* Has the expected result arrived (no report)? */
static inline int t_op_ready(const t_op_t *o)
{
    return memcmp(o->rbuf, o->exp, o->len) == 0;
}

/* Check the result against the expectation and stock MPI. */
static inline int t_op_check(t_op_t *o)
{
    char w[300];
    int  i, ok = 1;

    if (o->coll == T_A2A) {
        for (i = 0; i < o->csize; i++) {
            size_t off = (size_t)i * o->span;

            snprintf(w, sizeof(w), "%s, block from rank %d", o->name, i);
            ok &= t_match(w, (char *)o->rbuf + off, (char *)o->exp + off,
                          o->span);
            if (!o->in_place) {
                snprintf(w, sizeof(w),
                         "%s, send block to rank %d "
                         "unchanged",
                         o->name, i);
                ok &= t_pat_check(w, (char *)o->sbuf + off, o->span, o->seed,
                                  o->crank, i);
            }
        }
        if (!o->in_place) {
            t_gcheck(o->name, o->sbuf, o->len);
        }
    } else {
        ok &= t_match(o->name, o->rbuf, o->exp, o->len);
    }
    snprintf(w, sizeof(w), "%s vs PMPI", o->name);
    ok &= t_same(w, o->rbuf, o->ref, o->len);
    t_gcheck(o->name, o->rbuf, o->len);
    return ok;
}

static inline void t_op_free(t_op_t *o)
{
    t_gfree(o->sbuf);
    t_gfree(o->rbuf);
    free(o->exp);
    free(o->ref);
    o->sbuf = o->rbuf = o->exp = o->ref = NULL;
}

/* Is the empty status (MPI_ANY_SOURCE, MPI_ANY_TAG) in st? */
static inline int t_status_empty(const MPI_Status *st)
{
    return st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG;
}

/* Debugging aid: T_SKIP_NEW_COMM=1 skips the cases about the first
 * collective on a new communicator (a hang there ends the program, so
 * the statistics of the rest cannot be compared otherwise). */
static inline int t_skip_new_comm(void)
{
    const char *s = getenv("T_SKIP_NEW_COMM");

    if (s != NULL && strcmp(s, "1") == 0) {
        if (t.rank == 0) {
            printf("note: T_SKIP_NEW_COMM=1: skipping \"%s\"\n", t.cas);
            fflush(stdout);
        }
        return 1;
    }
    return 0;
}

/* Ialltoall of block bytes per rank from sbuf into rbuf, with fresh
 * contents, checked against the pattern and against PMPI_Alltoall, and
 * the send buffer checked unchanged. */
static inline void t_checked_alltoall(void *sbuf, void *rbuf, size_t block,
                                      const char *what)
{
    size_t       len = block * (size_t)t.size;
    uint32_t     seed = t_seed();
    MPI_Request  q = MPI_REQUEST_NULL;
    MPI_Datatype type = (block % 4 == 0) ? MPI_INT : MPI_BYTE;
    int          count = (int)(block / (type == MPI_INT ? 4 : 1)), j;
    void        *ref = t_xmalloc(len);
    char         w[200];

    t_a2a_fill(sbuf, block, t.size, seed, t.rank);
    memset(rbuf, T_POISON, len);
    memset(ref, T_POISON, len);
    T_MPI(t_ref_alltoall(sbuf, count, type, ref, count, type, MPI_COMM_WORLD));
    t_ialltoall(sbuf, count, type, rbuf, count, type, MPI_COMM_WORLD, &q, 1);
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    snprintf(w, sizeof(w), "%s: Ialltoall %zu-byte blocks", what, block);
    t_a2a_check(w, rbuf, block, t.size, seed, t.rank);
    t_same(w, rbuf, ref, len);
    snprintf(w, sizeof(w), "%s: Ialltoall send buffer unchanged", what);
    for (j = 0; j < t.size; j++) {
        t_pat_check(w, (char *)sbuf + (size_t)j * block, block, seed, t.rank,
                    j);
    }
    free(ref);
}

/* Ibcast of bytes from root in buf, with fresh contents, checked against
 * the pattern and against PMPI_Bcast. */
static inline void t_checked_bcast(void *buf, size_t bytes, int root,
                                   const char *what)
{
    uint32_t    seed = t_seed();
    MPI_Request q = MPI_REQUEST_NULL;
    void       *ref = t_xmalloc(bytes);
    char        w[200];

    if (t.rank == root) {
        t_pat_fill(buf, bytes, seed, root, 0);
    } else {
        memset(buf, T_POISON, bytes);
    }
    memcpy(ref, buf, bytes);
    T_MPI(PMPI_Bcast(ref, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD));
    t_ibcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD, &q, 1);
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    snprintf(w, sizeof(w), "%s: Ibcast %zu bytes from root %d", what, bytes,
             root);
    t_pat_check(w, buf, bytes, seed, root, 0);
    t_same(w, buf, ref, bytes);
    free(ref);
}

/* Is libdpushim preloaded (offloaded requests are generalized ones)? */
static inline int t_shim_loaded(void)
{
    const char *p = getenv("LD_PRELOAD");

    return p != NULL && strstr(p, "dpushim") != NULL;
}

/*
 * The other collectives (t_colls.c and the like): how many calls the
 * shim must offload and leave to stock MPI; their byte counts are not
 * predicted (t_finish prints "expect~:" lines for those with calls).
 */
static const char *t_other_names[] = {"ibarrier",
                                      "igather",
                                      "igatherv",
                                      "iscatter",
                                      "iscatterv",
                                      "iallgather",
                                      "iallgatherv",
                                      "ialltoallv",
                                      "ialltoallw",
                                      "ireduce",
                                      "iallreduce",
                                      "ireduce_scatter",
                                      "ireduce_scatter_block",
                                      "iscan",
                                      "iexscan",
                                      "ineighbor_allgather",
                                      "ineighbor_allgatherv",
                                      "ineighbor_alltoall",
                                      "ineighbor_alltoallv",
                                      "ineighbor_alltoallw",
                                      "group",
                                      "alltoall_init",
                                      "bcast_init",
                                      "barrier_init",
                                      "gather_init",
                                      "gatherv_init",
                                      "scatter_init",
                                      "scatterv_init",
                                      "allgather_init",
                                      "allgatherv_init",
                                      "alltoallv_init",
                                      "alltoallw_init",
                                      "reduce_init",
                                      "allreduce_init",
                                      "reduce_scatter_init",
                                      "reduce_scatter_block_init",
                                      "scan_init",
                                      "exscan_init",
                                      "neighbor_allgather_init",
                                      "neighbor_allgatherv_init",
                                      "neighbor_alltoall_init",
                                      "neighbor_alltoallv_init",
                                      "neighbor_alltoallw_init",
                                      "group_init"};
#define T_NOTHER ((int)(sizeof(t_other_names) / sizeof(t_other_names[0])))
static unsigned long long t_other[T_NOTHER][2]; /* offloaded, fallback */

static inline void t_count(const char *name, int offloaded)
{
    for (int i = 0; i < T_NOTHER; i++) {
        if (strcmp(t_other_names[i], name) == 0) {
            t_other[i][offloaded ? 0 : 1]++;
            return;
        }
    }
    t_fail("t_count: no collective named %s", name);
}

/* Print the expectations, combine failures, finalize; exit status. */
static inline int t_finish(void)
{
    unsigned long long tot[T_NCOLL][T_NSTAT], other[T_NOTHER][2];
    static const char *names[T_NCOLL] = {"ialltoall", "ibcast"};
    long long          errs = 0;
    int                c;

    t_case("summary");
    MPI_Reduce(t.stat, tot, T_NCOLL * T_NSTAT, MPI_UNSIGNED_LONG_LONG, MPI_SUM,
               0, MPI_COMM_WORLD);
    MPI_Reduce(t_other, other, T_NOTHER * 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM,
               0, MPI_COMM_WORLD);
    MPI_Allreduce(&t.errors, &errs, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (t.rank == 0) {
        for (c = 0; c < T_NCOLL; c++) {
            if (tot[c][T_OFF] + tot[c][T_FB] == 0) {
                continue; /* the shim prints lines for calls made */
            }
            printf("expect: %s offloaded=%llu fallback=%llu bytes=%llu\n",
                   names[c], tot[c][T_OFF], tot[c][T_FB], tot[c][T_BYTES]);
        }
        for (c = 0; c < T_NOTHER; c++) {
            if (other[c][0] + other[c][1] > 0) {
                printf("expect~: %s offloaded=%llu fallback=%llu "
                       "bytes=[0-9]+\n",
                       t_other_names[c], other[c][0], other[c][1]);
            }
        }
        if (errs == 0) {
            printf("result: ok\n");
        } else {
            printf("result: FAILED (%lld errors)\n", errs);
        }
        fflush(stdout);
    }
    t_case("MPI_Finalize");
    MPI_Finalize();
    alarm(0);
    return errs == 0 ? 0 : 1;
}

/* Message sizes from 1 byte to 4 MiB in MPI_BYTE, MPI_INT and MPI_DOUBLE:
 * every power of two in bytes, plus odd sizes. int_max and int_mul bound
 * and step the MPI_INT sizes, dbl_mul steps the MPI_DOUBLE ones. */
typedef struct {
    MPI_Datatype type;
    const char  *name;
    int          count;
} t_size_case_t;

static int           t_ncases;
static t_size_case_t t_cases[128];

static inline void t_case_add(MPI_Datatype type, const char *name, int count)
{
    t_cases[t_ncases].type = type;
    t_cases[t_ncases].name = name;
    t_cases[t_ncases].count = count;
    t_ncases++;
}

static inline void t_size_cases(int int_max, int int_mul, int dbl_mul)
{
    static const int odd[] = {3, 1000, 65537, 1000003};
    const int        mi = 1024 * 1024;
    int              b, i;

    for (b = 1; b <= 4 * mi; b *= 2) {
        t_case_add(MPI_BYTE, "MPI_BYTE", b);
    }
    for (i = 0; i < 4; i++) {
        t_case_add(MPI_BYTE, "MPI_BYTE", odd[i]);
    }
    for (b = 4; b <= int_max; b *= int_mul) {
        t_case_add(MPI_INT, "MPI_INT", b / 4);
    }
    t_case_add(MPI_INT, "MPI_INT", 3);
    t_case_add(MPI_INT, "MPI_INT", 250);
    t_case_add(MPI_INT, "MPI_INT", 16385);
    t_case_add(MPI_INT, "MPI_INT", 250001);
    for (b = 8; b <= 4 * mi; b *= dbl_mul) {
        t_case_add(MPI_DOUBLE, "MPI_DOUBLE", b / 8);
    }
    t_case_add(MPI_DOUBLE, "MPI_DOUBLE", 4 * mi / 8);
    t_case_add(MPI_DOUBLE, "MPI_DOUBLE", 1);
    t_case_add(MPI_DOUBLE, "MPI_DOUBLE", 125);
    t_case_add(MPI_DOUBLE, "MPI_DOUBLE", 8193);
    t_case_add(MPI_DOUBLE, "MPI_DOUBLE", 125001);
}

#endif
