/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every completion call answers, printed word for word, so that a
 * run under the shim can be compared with one on stock MPI in the same
 * build (scripts/test/programs.sh, answers_case): return codes, flags,
 * indices, outcounts, every word of every status (filled beforehand with
 * a marker, so that a status the library leaves unwritten shows too) and
 * what became of each request handle. Wait, Test, Request_get_status and the
 * all / any / some forms, with and without statuses, on null, inactive,
 * unfinished, point-to-point, generalized, nonblocking-collective and
 * persistent-collective requests, mixed. Collectives are finished (as
 * MPI_Request_get_status says) before the call, so that both runs see
 * the same state. Rank 0 prints "ans:" lines; every rank runs the cases.
 * 2 ranks or more; MPI_Ialltoall blocks of 64 KiB, offloaded under the
 * shim with DPUSHIM_MIN_BYTES at most that.
 */
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define ALLTOALL_INIT MPIX_Alltoall_init
#elif MPI_VERSION >= 4
#define ALLTOALL_INIT MPI_Alltoall_init
#endif
/* An inactive persistent collective ('s'): stock MPICH 4.0's MPI_Wait on
 * one never returns (it waits for a start), where MPI says it returns at
 * once. Left out there: no answer to compare. */
#if defined(ALLTOALL_INIT) && !defined(MPICH)
#define INACTIVE_PCOLL 1
#endif

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXR    8
#define BLOCK   16384      /* ints a peer: 64 KiB */
#define MARK    0x5A5A5A5A /* an unwritten status word */
#define STWORDS ((int)(sizeof(MPI_Status) / sizeof(int)))

static int  rank, size;
static int *sbuf[MAXR], *rbuf[MAXR];
static int  p2p_out[MAXR][3], p2p_in[MAXR][3], idle_in[MAXR];

/* The requests of one case: kinds by letter (see make_one). */
struct set {
    const char *kinds;
    int         n;
    MPI_Request r[MAXR], orig[MAXR];
    MPI_Request side[MAXR]; /* the send of a 'P' */
};

static int greq_query(void *extra, MPI_Status *st)
{
    (void)extra;
    st->MPI_SOURCE = 3;
    st->MPI_TAG = 5;
    st->MPI_ERROR = MPI_SUCCESS;
    MPI_Status_set_elements(st, MPI_INT, 3);
    MPI_Status_set_cancelled(st, 0);
    return MPI_SUCCESS;
}

static int greq_free(void *extra)
{
    (void)extra;
    return MPI_SUCCESS;
}

static int greq_cancel(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}

/* Wait until MPI says r is finished, without completing it. */
static void finish(MPI_Request r)
{
    int flag = 0;

    while (!flag) {
        MPI_Request_get_status(r, &flag, MPI_STATUS_IGNORE);
    }
}

/*
 * One request of kind k at slot i:
 * N null; P a finished receive from itself (3 ints, tag 7); G a finished
 * generalized request (source 3, tag 5, 3 ints); C a finished
 * MPI_Ialltoall; I an inactive persistent receive; S a started and
 * finished persistent alltoall; s an inactive persistent alltoall; U a
 * receive nothing matches yet.
 */
static void make_one(struct set *s, int i, char k)
{
    MPI_Request *r = &s->r[i];

    s->side[i] = MPI_REQUEST_NULL;
    switch (k) {
    case 'N': *r = MPI_REQUEST_NULL; break;
    case 'P':
        p2p_out[i][0] = 11 * i;
        p2p_out[i][1] = 12;
        p2p_out[i][2] = 13;
        MPI_Irecv(p2p_in[i], 3, MPI_INT, rank, 7 + i, MPI_COMM_WORLD, r);
        MPI_Isend(p2p_out[i], 3, MPI_INT, rank, 7 + i, MPI_COMM_WORLD,
                  &s->side[i]);
        finish(*r);
        break;
    case 'G':
        MPI_Grequest_start(greq_query, greq_free, greq_cancel, NULL, r);
        MPI_Grequest_complete(*r);
        break;
    case 'C':
        for (int j = 0; j < BLOCK * size; j++) {
            sbuf[i][j] = rank * 1000003 + j;
        }
        MPI_Ialltoall(sbuf[i], BLOCK, MPI_INT, rbuf[i], BLOCK, MPI_INT,
                      MPI_COMM_WORLD, r);
        finish(*r);
        break;
    case 'I':
        MPI_Recv_init(p2p_in[i], 3, MPI_INT, rank, 50 + i, MPI_COMM_WORLD, r);
        break;
#ifdef ALLTOALL_INIT
    case 'S':
    case 's':
        ALLTOALL_INIT(sbuf[i], BLOCK, MPI_INT, rbuf[i], BLOCK, MPI_INT,
                      MPI_COMM_WORLD, MPI_INFO_NULL, r);
        if (k == 'S') {
            MPI_Start(r);
            finish(*r);
        }
        break;
#endif
    case 'U':
        MPI_Irecv(&idle_in[i], 1, MPI_INT, rank, 99, MPI_COMM_WORLD, r);
        break;
    default:
        fprintf(stderr, "answers: no request kind '%c'\n", k);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    s->orig[i] = *r;
}

static void make(struct set *s, const char *kinds)
{
    s->kinds = kinds;
    s->n = (int)strlen(kinds);
    for (int i = 0; i < s->n; i++) {
        make_one(s, i, kinds[i]);
    }
}

/* Everything a case left: each request completed or freed, its data
 * checked (a wrong alltoall would make the answers meaningless). */
static void drop(struct set *s)
{
    for (int i = 0; i < s->n; i++) {
        char k = s->kinds[i];

        if (k == 'U' && s->r[i] != MPI_REQUEST_NULL) {
            MPI_Cancel(&s->r[i]);
        }
        if (k == 'I' || k == 'S' || k == 's') {
            if (k == 'S' && s->r[i] != MPI_REQUEST_NULL) {
                MPI_Wait(&s->r[i], MPI_STATUS_IGNORE);
            }
            MPI_Request_free(&s->r[i]);
        } else {
            MPI_Wait(&s->r[i], MPI_STATUS_IGNORE);
        }
        MPI_Wait(&s->side[i], MPI_STATUS_IGNORE);
        if (k == 'C' || k == 'S') {
            for (int p = 0; p < size; p++) {
                for (int j = 0; j < BLOCK; j++) {
                    if (rbuf[i][p * BLOCK + j] !=
                        p * 1000003 + rank * BLOCK + j) {
                        fprintf(stderr,
                                "answers: rank %d: alltoall data "
                                "wrong from %d at %d\n",
                                rank, p, j);
                        MPI_Abort(MPI_COMM_WORLD, 3);
                    }
                }
            }
        }
        if (k == 'P' && (p2p_in[i][0] != 11 * i || p2p_in[i][2] != 13)) {
            fprintf(stderr, "answers: rank %d: receive wrong\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    /* Every rank between cases: a collective finished on one rank for
     * the next case is not one still running from this one. */
    MPI_Barrier(MPI_COMM_WORLD);
}

static char   line[4096];
static size_t used;

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void out(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    used += (size_t)vsnprintf(line + used, sizeof(line) - used, fmt, ap);
    va_end(ap);
    if (used >= sizeof(line)) {
        used = sizeof(line) - 1;
    }
}

static void begin(const char *call, const struct set *s, const char *how)
{
    used = 0;
    out("ans: %s(%s)%s", call, s->kinds, how);
}

static void end(void)
{
    if (rank == 0) {
        printf("%s\n", line);
    }
}

/*
 * A status, word by word; '-' a word left unwritten. Of a collective's
 * (kind C or S), MPI defines MPI_ERROR alone: MPICH 4.0's other words
 * are what its last internal message left there, a source, tag and count
 * that change from call to call, so they are shown as 'x' on MPICH.
 * (Open MPI's are 0, and the shim's must be too.)
 */
static void st_out(const MPI_Status *st, char kind)
{
    const int *w = (const int *)st;
    int        err = (int)(offsetof(MPI_Status, MPI_ERROR) / sizeof(int));
    int        vague = 0;

#if defined(MPICH)
    vague = kind == 'C' || kind == 'S';
#else
    (void)kind;
#endif
    out(" st=");
    for (int i = 0; i < STWORDS; i++) {
        if (vague && i != err) {
            out("%sx", i ? "," : "");
        } else if (w[i] == MARK) {
            out("%s-", i ? "," : "");
        } else {
            out("%s%d", i ? "," : "", w[i]);
        }
    }
}

static void reqs_out(const struct set *s)
{
    out(" reqs=");
    for (int i = 0; i < s->n; i++) {
        out("%c", s->r[i] == MPI_REQUEST_NULL ? 'n'
                  : s->r[i] == s->orig[i]     ? '='
                                              : '?');
    }
}

static MPI_Status sts[MAXR];

static void marked(void)
{
    memset(sts, 0x5A, sizeof(sts));
}

/* The statuses argument (out of line: gcc takes MPICH's
 * MPI_STATUSES_IGNORE for an array of no room). */
__attribute__((noinline)) static MPI_Status *sts_arg(int ignore)
{
    return ignore ? MPI_STATUSES_IGNORE : sts;
}

/* ---- the cases --------------------------------------------------------- */

static void one(const char *kinds, int ignore)
{
    struct set s;
    int        rc, flag;

    /* MPI_Wait */
    make(&s, kinds);
    if (kinds[0] != 'U') {
        marked();
        rc = MPI_Wait(&s.r[0], ignore ? MPI_STATUS_IGNORE : &sts[0]);
        begin("wait", &s, ignore ? " ignore" : "");
        out(" rc=%d", rc);
        if (!ignore) {
            st_out(&sts[0], kinds[0]);
        }
        reqs_out(&s);
        end();
    }
    drop(&s);

    /* MPI_Test */
    make(&s, kinds);
    marked();
    flag = -7;
    rc = MPI_Test(&s.r[0], &flag, ignore ? MPI_STATUS_IGNORE : &sts[0]);
    begin("test", &s, ignore ? " ignore" : "");
    out(" rc=%d flag=%d", rc, flag);
    if (!ignore) {
        st_out(&sts[0], kinds[0]);
    }
    reqs_out(&s);
    end();
    drop(&s);

    /* MPI_Request_get_status */
    make(&s, kinds);
    marked();
    flag = -7;
    rc = MPI_Request_get_status(s.r[0], &flag,
                                ignore ? MPI_STATUS_IGNORE : &sts[0]);
    begin("get_status", &s, ignore ? " ignore" : "");
    out(" rc=%d flag=%d", rc, flag);
    if (!ignore) {
        st_out(&sts[0], kinds[0]);
    }
    reqs_out(&s);
    end();
    drop(&s);
}

static void all(const char *kinds, int wait, int ignore)
{
    struct set s;
    int        rc, flag = -7;

    make(&s, kinds);
    marked();
    if (wait) {
        rc = MPI_Waitall(s.n, s.r, sts_arg(ignore));
    } else {
        rc = MPI_Testall(s.n, s.r, &flag, sts_arg(ignore));
    }
    begin(wait ? "waitall" : "testall", &s, ignore ? " ignore" : "");
    out(" rc=%d", rc);
    if (!wait) {
        out(" flag=%d", flag);
    }
    for (int i = 0; !ignore && i < s.n; i++) {
        st_out(&sts[i], kinds[i]);
    }
    reqs_out(&s);
    end();
    drop(&s);
}

static void any(const char *kinds, int wait, int ignore)
{
    struct set s;
    int        rc, flag = -7, idx = -7;

    make(&s, kinds);
    marked();
    if (wait) {
        rc = MPI_Waitany(s.n, s.r, &idx, ignore ? MPI_STATUS_IGNORE : sts);
    } else {
        rc = MPI_Testany(s.n, s.r, &idx, &flag,
                         ignore ? MPI_STATUS_IGNORE : sts);
    }
    begin(wait ? "waitany" : "testany", &s, ignore ? " ignore" : "");
    out(" rc=%d idx=%d", rc, idx);
    if (!wait) {
        out(" flag=%d", flag);
    }
    if (!ignore) {
        st_out(&sts[0], idx >= 0 && idx < s.n ? kinds[idx] : 'N');
    }
    reqs_out(&s);
    end();
    drop(&s);
}

static void some(const char *kinds, int wait, int ignore)
{
    struct set s;
    int        rc, outc = -7, idx[MAXR];

    for (int i = 0; i < MAXR; i++) {
        idx[i] = -7;
    }
    make(&s, kinds);
    marked();
    if (wait) {
        rc = MPI_Waitsome(s.n, s.r, &outc, idx, sts_arg(ignore));
    } else {
        rc = MPI_Testsome(s.n, s.r, &outc, idx, sts_arg(ignore));
    }
    begin(wait ? "waitsome" : "testsome", &s, ignore ? " ignore" : "");
    /* Indices past the outcount are undefined (Open MPI's MPI_Waitsome
     * uses them as scratch). */
    out(" rc=%d out=%d idx=", rc, outc);
    for (int i = 0; i < outc; i++) {
        out("%s%d", i ? "," : "", idx[i]);
    }
    for (int i = 0; !ignore && i < s.n; i++) {
        int k = i < outc && idx[i] >= 0 && idx[i] < s.n ? idx[i] : -1;

        st_out(&sts[i], k >= 0 ? kinds[k] : 'N');
    }
    reqs_out(&s);
    end();
    drop(&s);
}

int main(int argc, char **argv)
{
    /* Single requests; then arrays: empty, all null, all inactive, and
     * mixes with one or several finished (any: one finished active
     * request, so that the index is determined). */
    static const char *singles[] = {"N", "P", "G", "C", "I", "U",
#ifdef ALLTOALL_INIT
                                    "S",
#endif
#ifdef INACTIVE_PCOLL
                                    "s",
#endif
                                    NULL};
    static const char *wall[] = {"",     "NN", "IN", "PGCN", "NCPI",
#ifdef INACTIVE_PCOLL
                                 "SsCP",
#endif
                                 NULL};
    static const char *tall[] = {"", "NN", "IN", "PGC", "PU", "CU", NULL};
    static const char *wany[] = {"",   "NN", "IN", "NC", "IP", "NG", "UC",
#ifdef ALLTOALL_INIT
                                 "IS",
#endif
#ifdef INACTIVE_PCOLL
                                 "sC",
#endif
                                 NULL};
    static const char *tany[] = {"",   "NN", "IN", "UC", "NG",
                                 "UN", "IU", "UP", NULL};
    static const char *wsome[] = {"",    "NN", "IN", "CPNG", "UC", "NCIC",
#ifdef ALLTOALL_INIT
                                  "NSC",
#endif
#ifdef INACTIVE_PCOLL
                                  "sSC",
#endif
                                  NULL};
    static const char *tsome[] = {"",  "NN", "IN",  "UC",
                                  "U", "CG", "UNP", NULL};

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    alarm(120); /* a hang is a failure, not a stuck job */
    for (int i = 0; i < MAXR; i++) {
        sbuf[i] = malloc(sizeof(int) * BLOCK * (size_t)size);
        rbuf[i] = malloc(sizeof(int) * BLOCK * (size_t)size);
    }
    for (int ig = 0; ig < 2; ig++) {
        for (int i = 0; singles[i] != NULL; i++) {
            one(singles[i], ig);
        }
        for (int i = 0; wall[i] != NULL; i++) {
            all(wall[i], 1, ig);
        }
        for (int i = 0; tall[i] != NULL; i++) {
            all(tall[i], 0, ig);
        }
        for (int i = 0; wany[i] != NULL; i++) {
            any(wany[i], 1, ig);
        }
        for (int i = 0; tany[i] != NULL; i++) {
            any(tany[i], 0, ig);
        }
        for (int i = 0; wsome[i] != NULL; i++) {
            some(wsome[i], 1, ig);
        }
        for (int i = 0; tsome[i] != NULL; i++) {
            some(tsome[i], 0, ig);
        }
    }
    for (int i = 0; i < MAXR; i++) {
        free(sbuf[i]);
        free(rbuf[i]);
    }
    if (rank == 0) {
        printf("result: ok\n");
    }
    MPI_Finalize();
    return 0;
}
