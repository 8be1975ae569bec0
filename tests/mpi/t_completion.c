/* SPDX-License-Identifier: BSD-3-Clause */
/* Several collectives outstanding at once, completed by each completion
 * call in turn (Wait, Waitall/any/some, Test, Testall/any/some,
 * Request_get_status, Request_free), with and without status arrays. */
#include "tcommon.h"

#define NOPS         9          /* collectives per set */
#define NREQ         (NOPS + 2) /* request array: the ops and two null holes */
#define HOLE1        2
#define HOLE2        7
#define FREE_TIMEOUT 20.0

enum {
    M_WAIT,
    M_WAITALL,
    M_WAITANY,
    M_WAITSOME,
    M_TEST,
    M_TESTALL,
    M_TESTANY,
    M_TESTSOME,
    M_GETSTATUS,
    M_FREE,
    M_NMODES
};

static const char *mode_name[M_NMODES] = {
    "MPI_Wait",        "MPI_Waitall",  "MPI_Waitany",
    "MPI_Waitsome",    "MPI_Test",     "MPI_Testall",
    "MPI_Testany",     "MPI_Testsome", "MPI_Request_get_status + MPI_Wait",
    "MPI_Request_free"};

static MPI_Comm    dup_comm;
static t_vec_t     vec;
static t_op_t      ops[NOPS];
static MPI_Request reqs[NREQ];
static int         slot_op[NREQ]; /* op of each request slot, -1: hole */
static int         active;        /* requests not yet completed */
static MPI_Status  sts[NREQ];
static t_op_t     *kept[M_NMODES * 2 * NOPS]; /* buffers of freed requests */
static int         nkept;

static void clear_statuses(void)
{
    int i;

    for (i = 0; i < NREQ; i++) {
        memset(&sts[i], 0, sizeof(sts[i]));
        sts[i].MPI_SOURCE = -777;
        sts[i].MPI_TAG = -777;
    }
}

/* The status of a completed collective must not say "cancelled". */
static void check_status(MPI_Status *st, int slot)
{
    int cancelled = 1;

    T_MPI(MPI_Test_cancelled(st, &cancelled));
    if (cancelled) {
        t_fail("status of request %d says cancelled", slot);
    }
}

static void check_empty(MPI_Status *st, const char *call, int slot)
{
    if (!t_status_empty(st)) {
        t_fail("%s: status %d of a null request is not empty (source %d, "
               "tag %d)",
               call, slot, st->MPI_SOURCE, st->MPI_TAG);
    }
}

/* Request slot i completed: it must be null, and its data must be there. */
static void completed(int i, const char *call)
{
    t_op_t *o;

    if (i < 0 || i >= NREQ || slot_op[i] < 0) {
        t_fail("%s returned index %d, which is not an active request", call,
               i);
        return;
    }
    o = &ops[slot_op[i]];
    if (o->done) {
        t_fail("%s returned request %d (%s) a second time", call, i, o->name);
        return;
    }
    if (reqs[i] != MPI_REQUEST_NULL) {
        t_fail("%s completed request %d (%s) but did not set it to "
               "MPI_REQUEST_NULL",
               call, i, o->name);
    }
    o->done = 1;
    active--;
    t_op_check(o);
}

/* Set up and post the collectives of one set; fill the request array. */
static void post_set(int set)
{
    int i, n = t.size, k = 0;

    for (i = 0; i < NOPS; i++) {
        MPI_Comm    c = (i % 4 < 2) ? MPI_COMM_WORLD : dup_comm;
        const char *cn = (c == MPI_COMM_WORLD) ? "world" : "dup";

        switch (i) {
        case 0:
        case 2:
            t_op_init(&ops[i], T_A2A, c, MPI_BYTE, 1000, NULL, 0, 0,
                      "op %d: Ialltoall %s 1000 x MPI_BYTE", i, cn);
            break;
        case 1:
        case 3:
            t_op_init(&ops[i], T_BCAST, c, MPI_INT, 17500, NULL, set % n, 0,
                      "op %d: Ibcast %s 17500 x MPI_INT root "
                      "%d",
                      i, cn, set % n);
            break;
        case 4:
        case 6:
            t_op_init(&ops[i], T_A2A, c, MPI_DOUBLE, 8192, NULL, 0, 0,
                      "op %d: Ialltoall %s 8192 x MPI_DOUBLE", i, cn);
            break;
        case 5:
        case 7:
            t_op_init(&ops[i], T_BCAST, c, MPI_BYTE, 3, NULL, (set + 1) % n, 0,
                      "op %d: Ibcast %s 3 x MPI_BYTE "
                      "root %d",
                      i, cn, (set + 1) % n);
            break;
        default:
            /* Not contiguous: runs on stock MPI, mixed with ours. */
            t_op_init(&ops[i], T_BCAST, MPI_COMM_WORLD, MPI_DATATYPE_NULL, 0,
                      &vec, 1 % n, 0,
                      "op %d: Ibcast world vector "
                      "(fallback) root %d",
                      i, 1 % n);
            break;
        }
    }
    for (i = 0; i < NREQ; i++) {
        if (i == HOLE1 || i == HOLE2) {
            slot_op[i] = -1;
            reqs[i] = MPI_REQUEST_NULL;
        } else {
            slot_op[i] = k;
            t_op_post(&ops[k], &reqs[i]);
            k++;
        }
    }
    active = NOPS;
}

static void do_wait(int set, int stat)
{
    int j, i;

    for (j = 0; j < NREQ; j++) {
        /* Reverse posting order; with statuses also rotated by rank, so
         * ranks complete in different orders. */
        i = NREQ - 1 - j;
        if (stat) {
            i = (i + 3 * t.rank + set) % NREQ;
        }
        clear_statuses();
        T_MPI(MPI_Wait(&reqs[i], stat ? &sts[0] : MPI_STATUS_IGNORE));
        if (slot_op[i] < 0) {
            if (stat) {
                check_empty(&sts[0], "MPI_Wait", i);
            }
            continue;
        }
        if (stat) {
            check_status(&sts[0], i);
        }
        completed(i, "MPI_Wait");
    }
}

static void do_waitall(int stat)
{
    int i;

    clear_statuses();
    T_MPI(MPI_Waitall(NREQ, reqs, stat ? sts : t_statuses_ignore));
    for (i = 0; i < NREQ; i++) {
        if (slot_op[i] < 0) {
            if (stat) {
                check_empty(&sts[i], "MPI_Waitall", i);
            }
            continue;
        }
        if (stat) {
            check_status(&sts[i], i);
        }
        completed(i, "MPI_Waitall");
    }
}

static void do_waitany(int stat)
{
    int idx, calls = 0;

    while (active > 0 && calls++ < NOPS) {
        clear_statuses();
        idx = -5;
        T_MPI(
            MPI_Waitany(NREQ, reqs, &idx, stat ? &sts[0] : MPI_STATUS_IGNORE));
        if (stat && idx >= 0 && idx < NREQ) {
            check_status(&sts[0], idx);
        }
        completed(idx, "MPI_Waitany");
    }
    if (active > 0) {
        t_fail("MPI_Waitany: %d requests never returned", active);
        return;
    }
    clear_statuses();
    T_MPI(MPI_Waitany(NREQ, reqs, &idx, stat ? &sts[0] : MPI_STATUS_IGNORE));
    if (idx != MPI_UNDEFINED) {
        t_fail("MPI_Waitany on null requests returned index %d, not "
               "MPI_UNDEFINED",
               idx);
    }
    if (stat) {
        check_empty(&sts[0], "MPI_Waitany", 0);
    }
}

/* Indices of Waitsome/Testsome: distinct, active, now completed. */
static void some_done(int out, const int *idx, int stat, const char *call)
{
    int j, k;

    if (out < 0 || out > active) {
        t_fail("%s returned outcount %d with %d active requests", call, out,
               active);
        return;
    }
    for (j = 0; j < out; j++) {
        for (k = 0; k < j; k++) {
            if (idx[k] == idx[j]) {
                t_fail("%s returned index %d twice", call, idx[j]);
            }
        }
        if (stat && idx[j] >= 0 && idx[j] < NREQ) {
            check_status(&sts[j], idx[j]);
        }
        completed(idx[j], call);
    }
}

static void do_some(int test, int stat)
{
    const char *call = test ? "MPI_Testsome" : "MPI_Waitsome";
    int         idx[NREQ], out, calls = 0;

    while (active > 0) {
        clear_statuses();
        out = -5;
        if (test) {
            T_MPI(MPI_Testsome(NREQ, reqs, &out, idx,
                               stat ? sts : t_statuses_ignore));
        } else {
            T_MPI(MPI_Waitsome(NREQ, reqs, &out, idx,
                               stat ? sts : t_statuses_ignore));
            if (out == 0) {
                t_fail("MPI_Waitsome returned outcount 0");
            }
            if (++calls > NOPS) {
                t_fail("MPI_Waitsome: %d requests never returned", active);
                return;
            }
        }
        if (out == MPI_UNDEFINED) {
            t_fail("%s returned MPI_UNDEFINED with %d active requests", call,
                   active);
            return;
        }
        some_done(out, idx, stat, call);
    }
    if (test) {
        T_MPI(MPI_Testsome(NREQ, reqs, &out, idx, t_statuses_ignore));
    } else {
        T_MPI(MPI_Waitsome(NREQ, reqs, &out, idx, t_statuses_ignore));
    }
    if (out != MPI_UNDEFINED) {
        t_fail("%s on null requests returned outcount %d, not "
               "MPI_UNDEFINED",
               call, out);
    }
}

static void do_test(int stat)
{
    MPI_Request null = MPI_REQUEST_NULL;
    int         i, flag;

    while (active > 0) {
        for (i = 0; i < NREQ; i++) {
            MPI_Request before = reqs[i];

            if (slot_op[i] < 0 || ops[slot_op[i]].done) {
                continue;
            }
            flag = -1;
            clear_statuses();
            T_MPI(
                MPI_Test(&reqs[i], &flag, stat ? &sts[0] : MPI_STATUS_IGNORE));
            if (flag) {
                if (stat) {
                    check_status(&sts[0], i);
                }
                completed(i, "MPI_Test");
            } else if (reqs[i] != before) {
                t_fail("MPI_Test changed request %d without completing it", i);
            }
        }
    }
    clear_statuses();
    flag = 0;
    T_MPI(MPI_Test(&null, &flag, stat ? &sts[0] : MPI_STATUS_IGNORE));
    if (!flag) {
        t_fail("MPI_Test on MPI_REQUEST_NULL returned flag 0");
    }
    if (stat) {
        check_empty(&sts[0], "MPI_Test", 0);
    }
}

static void do_testall(int stat)
{
    MPI_Request before[NREQ];
    int         i, flag = 0;

    while (!flag) {
        memcpy(before, reqs, sizeof(reqs));
        clear_statuses();
        T_MPI(MPI_Testall(NREQ, reqs, &flag, stat ? sts : t_statuses_ignore));
        if (!flag && memcmp(before, reqs, sizeof(reqs)) != 0) {
            t_fail("MPI_Testall returned flag 0 but changed requests");
        }
    }
    for (i = 0; i < NREQ; i++) {
        if (slot_op[i] < 0) {
            if (stat) {
                check_empty(&sts[i], "MPI_Testall", i);
            }
            continue;
        }
        if (stat) {
            check_status(&sts[i], i);
        }
        completed(i, "MPI_Testall");
    }
}

static void do_testany(int stat)
{
    int idx, flag;

    while (active > 0) {
        clear_statuses();
        idx = -5;
        flag = -1;
        T_MPI(MPI_Testany(NREQ, reqs, &idx, &flag,
                          stat ? &sts[0] : MPI_STATUS_IGNORE));
        if (!flag) {
            if (idx != MPI_UNDEFINED) {
                t_fail("MPI_Testany returned flag 0 and index %d, not "
                       "MPI_UNDEFINED",
                       idx);
            }
            continue;
        }
        if (stat && idx >= 0 && idx < NREQ) {
            check_status(&sts[0], idx);
        }
        completed(idx, "MPI_Testany");
        if (idx == MPI_UNDEFINED) {
            return;
        }
    }
    clear_statuses();
    T_MPI(MPI_Testany(NREQ, reqs, &idx, &flag,
                      stat ? &sts[0] : MPI_STATUS_IGNORE));
    if (!flag || idx != MPI_UNDEFINED) {
        t_fail("MPI_Testany on null requests returned flag %d, index %d", flag,
               idx);
    }
    if (stat) {
        check_empty(&sts[0], "MPI_Testany", 0);
    }
}

static void do_getstatus(int stat)
{
    int seen[NREQ] = {0}, i, flag, left = NOPS;

    /* Poll every request until each reports completion; check its data
     * as soon as it does; then MPI_Wait must release it. */
    while (left > 0) {
        for (i = 0; i < NREQ; i++) {
            MPI_Request before = reqs[i];

            if (slot_op[i] < 0 || seen[i]) {
                continue;
            }
            flag = -1;
            clear_statuses();
            T_MPI(MPI_Request_get_status(reqs[i], &flag,
                                         stat ? &sts[0] : MPI_STATUS_IGNORE));
            if (reqs[i] != before) {
                t_fail("MPI_Request_get_status changed request %d", i);
            }
            if (flag) {
                seen[i] = 1;
                left--;
                if (stat) {
                    check_status(&sts[0], i);
                }
                t_op_check(&ops[slot_op[i]]);
                if (!stat) {
                    /* Release at once; with statuses: all at the end. */
                    T_MPI(MPI_Wait(&reqs[i], MPI_STATUS_IGNORE));
                }
            }
        }
    }
    if (stat) {
        clear_statuses();
        T_MPI(MPI_Waitall(NREQ, reqs, sts));
    }
    for (i = 0; i < NREQ; i++) {
        if (slot_op[i] >= 0) {
            ops[slot_op[i]].done = 1;
            active--;
            if (reqs[i] != MPI_REQUEST_NULL) {
                t_fail("MPI_Wait after MPI_Request_get_status did not set "
                       "request %d to MPI_REQUEST_NULL",
                       i);
            }
        }
    }
    clear_statuses();
    flag = 0;
    T_MPI(MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &sts[0]));
    if (!flag) {
        t_fail("MPI_Request_get_status(MPI_REQUEST_NULL) returned flag 0");
    }
    check_empty(&sts[0], "MPI_Request_get_status", 0);
}

/* Is the DPUSHIM_* variable name set to a false value? */
static int env_off(const char *name)
{
    static const char *no[] = {"0", "n", "no", "off", "false"};
    const char        *v = getenv(name);
    unsigned           i;

    for (i = 0; v != NULL && i < sizeof(no) / sizeof(no[0]); i++) {
        if (strcasecmp(v, no[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

/*
 * Will the shim offload o (so that its request is a generalized request,
 * which may be freed while active)? Freeing the request of a collective
 * that runs on stock MPI is erroneous (both MPIs reject it), so this
 * mirrors the shim's settings: preloaded, DPUSHIM_OFFLOAD and the
 * per-collective switch on, eligible, at least DPUSHIM_MIN_BYTES
 * (default 16k). An agent that failed to start is not detected.
 */
static int offloaded(const t_op_t *o)
{
    const char        *m = getenv("DPUSHIM_MIN_BYTES");
    unsigned long long min = 16 * 1024;
    char              *end = NULL;

    if (!t_shim_loaded() || env_off("DPUSHIM_OFFLOAD") ||
        env_off(o->coll == T_A2A ? "DPUSHIM_IALLTOALL" : "DPUSHIM_IBCAST") ||
        !o->contig || o->span == 0) {
        return 0;
    }
    if (m != NULL) {
        min = strtoull(m, &end, 10);
        if (end != NULL && (*end == 'k' || *end == 'K')) {
            min <<= 10;
        } else if (end != NULL && (*end == 'm' || *end == 'M')) {
            min <<= 20;
        } else if (end != NULL && (*end == 'g' || *end == 'G')) {
            min <<= 30;
        }
    }
    return o->span >= min;
}

/*
 * Free the requests of offloaded collectives (generalized requests, which
 * may be freed while active); the data must still arrive. Stock MPI
 * forbids freeing a nonblocking collective's request, so the requests of
 * the others (all of them without the shim) are polled with MPI_Test.
 * late: first complete one request, then free the rest.
 * Every rank polls (MPI_Test on MPI_REQUEST_NULL, MPI_Iprobe) until its
 * own data is there, then keeps polling on an MPI_Ibarrier until every
 * rank has its data, so no rank leaves while others still need it.
 */
static void do_free(int late)
{
    MPI_Request null = MPI_REQUEST_NULL, bar = MPI_REQUEST_NULL;
    double      deadline;
    int         i, flag, ready = 0, posted = 0, all = 0, timeout = 0;

    if (late) {
        T_MPI(MPI_Wait(&reqs[0], MPI_STATUS_IGNORE));
        completed(0, "MPI_Wait");
    }
    for (i = 0; i < NREQ; i++) {
        if (slot_op[i] >= 0 && offloaded(&ops[slot_op[i]]) &&
            reqs[i] != MPI_REQUEST_NULL) {
            T_MPI(MPI_Request_free(&reqs[i]));
            if (reqs[i] != MPI_REQUEST_NULL) {
                t_fail("MPI_Request_free did not set request %d to "
                       "MPI_REQUEST_NULL",
                       i);
            }
        }
    }
    deadline = t_now() + FREE_TIMEOUT;
    while (!all && !timeout) {
        /* Calls that poll MPI (and the shim) without touching the ops. */
        T_MPI(MPI_Test(&null, &flag, MPI_STATUS_IGNORE));
        T_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag,
                         MPI_STATUS_IGNORE));
        ready = 1;
        for (i = 0; i < NREQ; i++) {
            if (slot_op[i] < 0 || ops[slot_op[i]].done) {
                continue;
            }
            if (reqs[i] != MPI_REQUEST_NULL) {
                /* Request not freed: still ours to complete. */
                T_MPI(MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE));
                if (flag) {
                    completed(i, "MPI_Test");
                } else {
                    ready = 0;
                }
            } else if (!t_op_ready(&ops[slot_op[i]])) {
                ready = 0;
            }
        }
        if (ready && !posted) {
            T_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &bar));
            t_count("ibarrier", 1); /* offloaded too */
            posted = 1;
        }
        if (posted) {
            T_MPI(MPI_Test(&bar, &all, MPI_STATUS_IGNORE));
        }
        timeout = t_now() > deadline;
    }
    for (i = 0; i < NREQ; i++) {
        t_op_t *o = slot_op[i] >= 0 ? &ops[slot_op[i]] : NULL;

        if (o == NULL || o->done) {
            continue;
        }
        if (!ready && !t_op_ready(o)) {
            t_fail("%s: data of the freed request did not arrive within "
                   "%.0f s",
                   o->name, FREE_TIMEOUT);
        }
        o->done = 1;
        active--;
        t_op_check(o);
    }
    if (!all) {
        if (ready) {
            t_fail("data here, but other ranks did not get theirs within "
                   "%.0f s (MPI_Ibarrier did not complete)",
                   FREE_TIMEOUT);
        }
        /* Freed collectives still running would hang the job. */
        printf("result: FAILED (rank %d: freed requests never completed; "
               "aborting)\n",
               t.rank);
        fflush(stdout);
        sleep(1);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* Buffers are kept until the end of the program anyway. */
}

static void run_set(int set, int mode, int stat)
{
    int i;

    t_case("set %d: %s, %s", set, mode_name[mode],
           stat ? "status arrays" : "statuses ignored");
    post_set(set);
    switch (mode) {
    case M_WAIT: do_wait(set, stat); break;
    case M_WAITALL: do_waitall(stat); break;
    case M_WAITANY: do_waitany(stat); break;
    case M_WAITSOME: do_some(0, stat); break;
    case M_TEST: do_test(stat); break;
    case M_TESTALL: do_testall(stat); break;
    case M_TESTANY: do_testany(stat); break;
    case M_TESTSOME: do_some(1, stat); break;
    case M_GETSTATUS: do_getstatus(stat); break;
    default: do_free(stat); break;
    }
    if (active != 0) {
        t_fail("%d collectives were never completed", active);
    }
    for (i = 0; i < NREQ; i++) {
        if (reqs[i] != MPI_REQUEST_NULL) {
            t_fail("request %d is not MPI_REQUEST_NULL at the end", i);
        }
    }
    for (i = 0; i < NOPS; i++) {
        if (mode == M_FREE) {
            kept[nkept] = t_xmalloc(sizeof(t_op_t));
            *kept[nkept++] = ops[i];
        } else {
            t_op_free(&ops[i]);
        }
    }
}

int main(int argc, char **argv)
{
    int mode, stat, set = 0, i;

    t_init(&argc, &argv, "t_completion");
    MPI_Comm_dup(MPI_COMM_WORLD, &dup_comm);
    /* 25 elements of 4 blocks of 2 ints every 3 ints. */
    t_vec_make(&vec, 25, 4, 2, 3, MPI_INT);
    if (!t_shim_loaded() && t.rank == 0) {
        printf("note: no shim: the MPI_Request_free sets free nothing "
               "(freeing a collective's request is erroneous in MPI)\n");
    }
    for (mode = 0; mode < M_NMODES; mode++) {
        for (stat = 0; stat < 2; stat++) {
            run_set(set++, mode, stat);
        }
    }
    t_case("cleanup");
    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < nkept; i++) {
        t_op_free(kept[i]);
        free(kept[i]);
    }
    MPI_Type_free(&vec.type);
    MPI_Comm_free(&dup_comm);
    return t_finish();
}
