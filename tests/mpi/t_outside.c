/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Collectives finish while every rank is outside MPI (issue 23, item 4):
 * each rank posts an MPI_Ialltoall, an MPI_Iallreduce or a start of a
 * persistent alltoall, then stays out of MPI -- busy in a loop, or asleep
 * in nanosleep -- and watches its receive buffer with volatile loads,
 * making no MPI call, until it holds the expected bytes (at most
 * OUTSIDE_S seconds). Then MPI_Wait, and the buffer is checked byte for
 * byte against contents computed here and against stock MPI.
 *
 * Written for the UCX get/put path that serves ranks of other nodes
 * (DPUSHIM_TRANSPORT=ucx tries it on one host): UCX 1.13 emulates RMA
 * over TCP and shared memory with messages the target's UCX worker must
 * progress, which without the shim's progress thread
 * (DPUSHIM_PROGRESS_THREAD, shim/core/progress.c) happens only inside
 * MPI calls: then no byte arrives outside MPI and every watched case
 * fails. On one host's CMA path the agent and the DMA engine threads do
 * the work; that must hold too.
 *
 * Also: the progress thread runs exactly when DPUSHIM_PROGRESS_THREAD
 * says (auto: with UCX get/put, or ranks on more than one node), a
 * forked child has none, and none outlives MPI_Finalize.
 *
 * Stock MPI progresses nothing outside MPI: there the watch is skipped
 * and only the results after MPI_Wait are checked.
 */
#include "tcommon.h"

#include <dirent.h>
#include <sys/wait.h>

#define OUTSIDE_S 10.0         /* longest watch, outside MPI */
#define NAP_NS    2000000L     /* asleep: 2 ms between looks */
#define A2A_BLOCK (300 * 1024) /* bytes per rank: over a staging chunk */
#define RED_N     (256 * 1024) /* ints of the allreduce: 1 MiB */

enum { M_BUSY, M_SLEEP, M_N };
static const char *mname[M_N] = {"busy", "asleep"};

static int               shim;
static volatile uint64_t sink; /* keeps the busy loop's work */

/* Threads of this process named dpushim-prog. */
static int prog_threads(void)
{
    DIR           *d = opendir("/proc/self/task");
    struct dirent *e;
    int            n = 0;

    while (d != NULL && (e = readdir(d)) != NULL) {
        char  path[300], name[64] = "";
        FILE *f;

        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        f = fopen(path, "r");
        if (f != NULL) {
            if (fgets(name, sizeof(name), f) != NULL &&
                strncmp(name, "dpushim-prog", 12) == 0) {
                n++;
            }
            fclose(f);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    return n;
}

static int env_word(const char *name, const char *const *words)
{
    const char *v = getenv(name);

    for (int i = 0; v != NULL && words[i] != NULL; i++) {
        if (strcasecmp(v, words[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Progress threads expected in this rank: 1 or 0; -1 when this program
 * cannot tell (listening agents, stock MPI). */
static int prog_expected(void)
{
    static const char *const yes[] = {"1", "y", "yes", "on", "true", NULL};
    static const char *const no[] = {"0", "n", "no", "off", "false", NULL};
    static const char *const ucx[] = {"ucx", NULL};

    if (!shim || getenv("DPUSHIM_AGENT_MAP") != NULL ||
        env_word("DPUSHIM_OFFLOAD", no)) {
        return -1;
    }
    if (env_word("DPUSHIM_PROGRESS_THREAD", yes)) {
        return 1;
    }
    if (env_word("DPUSHIM_PROGRESS_THREAD", no)) {
        return 0;
    }
    /* auto: only where the rank's own agent gets and puts its memory
     * with UCX (DPUSHIM_TRANSPORT=ucx; an agent it spawned on its host
     * copies with CMA). Agents of other nodes ask that agent for the
     * rank's bytes (FETCH): ranks on several nodes need no thread. */
    return env_word("DPUSHIM_TRANSPORT", ucx);
}

/* Does buf hold exp? Volatile loads: another process or thread writes
 * it behind the compiler's back. */
static int arrived(const volatile uint8_t *buf, const uint8_t *exp, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (buf[i] != exp[i]) {
            return 0;
        }
    }
    return 1;
}

/* Some work that touches neither MPI nor the buffers. */
static uint64_t spin(uint64_t x)
{
    for (int i = 0; i < 20000; i++) {
        x = t_mix64(x);
    }
    return x;
}

/* Outside MPI until rbuf holds exp or OUTSIDE_S pass: busy or asleep.
 * Reports a failure if the bytes did not come. */
static void watch(int mode, const void *rbuf, const void *exp, size_t n,
                  const char *what)
{
    double   t0 = t_now(), end = t0 + OUTSIDE_S;
    uint64_t x = (uint64_t)t.rank;
    int      ok;

    if (!shim) {
        return; /* stock MPI: nothing moves outside MPI */
    }
    while (!(ok = arrived(rbuf, exp, n)) && t_now() < end) {
        if (mode == M_BUSY) {
            x = spin(x);
        } else {
            struct timespec ts = {0, NAP_NS};

            nanosleep(&ts, NULL);
        }
    }
    sink = x;
    if (!ok) {
        t_fail("the result did not arrive in %.0f s while the rank stayed "
               "outside MPI (%s)",
               OUTSIDE_S, mname[mode]);
    } else if (t.verbose && t.rank == 0) {
        printf("rank 0: %s: arrived after %.1f ms outside MPI\n", what,
               (t_now() - t0) * 1e3);
        fflush(stdout);
    }
}

/* Alltoall buffers: send, receive, expected receive, stock MPI's. */
typedef struct {
    char  *s, *r, *x, *ref;
    size_t len;
} a2a_t;

static void a2a_alloc(a2a_t *a)
{
    a->len = (size_t)A2A_BLOCK * (size_t)t.size;
    a->s = t_galloc(a->len);
    a->r = t_galloc(a->len);
    a->x = t_xmalloc(a->len);
    a->ref = t_xmalloc(a->len);
}

/* New contents: send blocks, the receive buffer poisoned, what must
 * arrive, and stock MPI's result on the same input. */
static uint32_t a2a_fill(a2a_t *a)
{
    uint32_t seed = t_seed();

    t_a2a_fill(a->s, A2A_BLOCK, t.size, seed, t.rank);
    memset(a->r, T_POISON, a->len);
    for (int i = 0; i < t.size; i++) {
        t_pat_fill(a->x + (size_t)i * A2A_BLOCK, A2A_BLOCK, seed, i, t.rank);
    }
    T_MPI(PMPI_Alltoall(a->s, A2A_BLOCK, MPI_BYTE, a->ref, A2A_BLOCK, MPI_BYTE,
                        MPI_COMM_WORLD));
    return seed;
}

static void a2a_check(const a2a_t *a, uint32_t seed, const char *what)
{
    char w[200];

    t_match(what, a->r, a->x, a->len);
    t_same(what, a->r, a->ref, a->len);
    t_gcheck(what, a->r, a->len);
    for (int j = 0; j < t.size; j++) {
        snprintf(w, sizeof(w), "%s: send block %d unchanged", what, j);
        t_pat_check(w, a->s + (size_t)j * A2A_BLOCK, A2A_BLOCK, seed, t.rank,
                    j);
    }
}

static void a2a_free(a2a_t *a)
{
    t_gfree(a->s);
    t_gfree(a->r);
    free(a->x);
    free(a->ref);
}

static void case_ialltoall(int mode)
{
    a2a_t       a;
    uint32_t    seed;
    MPI_Request q = MPI_REQUEST_NULL;
    char        what[120];

    snprintf(what, sizeof(what),
             "MPI_Ialltoall of %d-byte blocks, ranks "
             "%s outside MPI",
             A2A_BLOCK, mname[mode]);
    t_case("%s", what);
    a2a_alloc(&a);
    seed = a2a_fill(&a);
    T_MPI(MPI_Barrier(MPI_COMM_WORLD));
    t_ialltoall(a.s, A2A_BLOCK, MPI_BYTE, a.r, A2A_BLOCK, MPI_BYTE,
                MPI_COMM_WORLD, &q, 1);
    watch(mode, a.r, a.x, a.len, what);
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    a2a_check(&a, seed, what);
    a2a_free(&a);
}

/* Element i of rank q's allreduce input: small, so sums are exact. */
static int red_in(uint32_t seed, int q, size_t i)
{
    return (int)(t_mix64(((uint64_t)seed << 40) ^ ((uint64_t)q << 32) ^ i) %
                 201) -
           100;
}

static void case_iallreduce(int mode)
{
    size_t      len = sizeof(int) * RED_N;
    int        *s = t_galloc(len), *r = t_galloc(len);
    int        *x = t_xmalloc(len), *ref = t_xmalloc(len);
    uint32_t    seed = t_seed();
    MPI_Request q = MPI_REQUEST_NULL;
    char        what[120];

    snprintf(what, sizeof(what),
             "MPI_Iallreduce of %d ints (MPI_SUM), "
             "ranks %s outside MPI",
             RED_N, mname[mode]);
    t_case("%s", what);
    for (size_t i = 0; i < RED_N; i++) {
        s[i] = red_in(seed, t.rank, i);
        x[i] = 0;
        for (int p = 0; p < t.size; p++) {
            x[i] += red_in(seed, p, i);
        }
    }
    T_MPI(PMPI_Allreduce(s, ref, RED_N, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    T_MPI(MPI_Barrier(MPI_COMM_WORLD));
    t_count("iallreduce", 1);
    T_MPI(MPI_Iallreduce(s, r, RED_N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q));
    watch(mode, r, x, len, what);
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    t_match(what, r, x, len);
    t_same(what, r, ref, len);
    t_gcheck(what, r, len);
    for (size_t i = 0; i < RED_N; i++) {
        if (s[i] != red_in(seed, t.rank, i)) {
            t_fail("%s: send buffer changed at element %zu", what, i);
            break;
        }
    }
    t_gfree(s);
    t_gfree(r);
    free(x);
    free(ref);
}

/* Stock MPICH 4.0's persistent collectives are unusable (t_persist.c). */
static int stock_no_pers(void)
{
#if !defined(HAVE_PERS)
    return 1;
#elif defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40100000
    return !shim;
#else
    return 0;
#endif
}

/* A persistent alltoall: one start completed in MPI first (the matching
 * stream's id is agreed in MPI calls), then one start per mode watched
 * from outside MPI. */
static void case_persistent(void)
{
#ifdef HAVE_PERS
    a2a_t       a;
    MPI_Request q = MPI_REQUEST_NULL;
    char        what[120];
    uint32_t    seed;

    t_case("persistent alltoall: init and a first start");
    if (stock_no_pers()) {
        if (t.rank == 0) {
            printf("note: stock MPICH 4.0's persistent collectives are "
                   "not usable (t_persist.c): persistent case skipped\n");
            fflush(stdout);
        }
        return;
    }
    a2a_alloc(&a);
    T_MPI(PINIT(Alltoall)(a.s, A2A_BLOCK, MPI_BYTE, a.r, A2A_BLOCK, MPI_BYTE,
                          MPI_COMM_WORLD, MPI_INFO_NULL, &q));
    seed = a2a_fill(&a);
    t_count("alltoall_init", 1);
    T_MPI(MPI_Start(&q));
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    a2a_check(&a, seed, "persistent alltoall, first start");
    for (int mode = 0; mode < M_N; mode++) {
        snprintf(what, sizeof(what),
                 "persistent alltoall of %d-byte "
                 "blocks, ranks %s outside MPI",
                 A2A_BLOCK, mname[mode]);
        t_case("%s", what);
        seed = a2a_fill(&a);
        T_MPI(MPI_Barrier(MPI_COMM_WORLD));
        t_count("alltoall_init", 1);
        T_MPI(MPI_Start(&q));
        watch(mode, a.r, a.x, a.len, what);
        T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
        a2a_check(&a, seed, what);
    }
    T_MPI(MPI_Request_free(&q));
    a2a_free(&a);
#endif
}

/* fork() while a collective runs: the child has no progress thread and
 * leaves without MPI; the parent's collective is exact. */
static void case_fork(void)
{
    a2a_t       a;
    uint32_t    seed;
    MPI_Request q = MPI_REQUEST_NULL;
    int         status = 0;
    pid_t       child;

    t_case("fork() while a collective is pending");
    a2a_alloc(&a);
    seed = a2a_fill(&a);
    t_ialltoall(a.s, A2A_BLOCK, MPI_BYTE, a.r, A2A_BLOCK, MPI_BYTE,
                MPI_COMM_WORLD, &q, 1);
    child = fork();
    if (child == 0) {
        memset(a.r, 0, a.len);
        _exit(prog_threads() == 0 ? 0 : 7);
    }
    if (child < 0 || waitpid(child, &status, 0) != child ||
        !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        t_fail("forked child: status %#x (7: a progress thread in the "
               "child)",
               status);
    }
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    a2a_check(&a, seed, "Ialltoall across fork()");
    a2a_free(&a);
}

int main(int argc, char **argv)
{
    int want, rc;

    shim = t_shim_loaded();
    t_init(&argc, &argv, "t_outside");
    want = prog_expected();
    t_case("the progress thread runs as DPUSHIM_PROGRESS_THREAD says");
    if (want >= 0 && prog_threads() != want) {
        t_fail("%d progress threads running, expected %d", prog_threads(),
               want);
    }
    for (int mode = 0; mode < M_N; mode++) {
        case_ialltoall(mode);
        case_iallreduce(mode);
    }
    case_persistent();
    case_fork();
    if (want == 1 && t.rank == 0) {
        printf("expect~: progress threads=%d wakeups=[0-9]+ "
               "missed_wakeups=[0-9]+ cpu_ms=[0-9.]+\n",
               t.size);
    }
    rc = t_finish();
    /* MPI_Finalize has returned: no thread of the shim may be left. */
    if (prog_threads() != 0) {
        printf("rank %d: FAIL %d progress threads outlive MPI_Finalize\n",
               t.rank, prog_threads());
        rc = 1;
    }
    return rc;
}
