/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An agent fails while one collective of every kind is pending: every
 * request must end, those that end well with exactly what stock MPI
 * delivers, the others with an error class; afterwards every kind runs
 * on stock MPI and is exact. Run under the shim with DPUSHIM_MIN_BYTES=1
 * and FO_RPD=DPUSHIM_RANKS_PER_DPU: the first rank of the last virtual
 * node SIGKILLs its agent right after posting the first collective.
 * Prints per rank "pending collectives: N ended well, M with an error".
 *
 * Beside them, started requests of the kinds issue 14 added: a
 * persistent alltoall, a neighbourhood alltoall on a periodic ring and a
 * persistent pattern group (include/dpushim.h) pending at the failure,
 * then started again (stock MPI) after it.
 */
#include "tcommon.h"
#include "tcolls.h"
#include "tagent.h"
#include "../../include/dpushim.h"

#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define ALLTOALL_INIT MPIX_Alltoall_init
#elif MPI_VERSION >= 4
#define ALLTOALL_INIT MPI_Alltoall_init
#endif

static int killer;

/* One call of every kind on comm (n elements a block). kill: after the
 * first post, the killer rank kills its agent. */
static void every_kind(MPI_Comm comm, const char *cn, int n, int kill)
{
    int p, k;

    MPI_Comm_size(comm, &p);
    barrier_case(comm, cn);
    if (kill && t.rank == killer && signal_agents(t.rank, SIGKILL) == 0) {
        t_fail("no agent found to kill");
    }
    c_bcast(comm, cn, p - 1, TY_INT, n);
    c_rooted(1, comm, cn, 0, TY_VEC, n, 0);
    c_rooted(0, comm, cn, p - 1, TY_INT, n, 1);
    c_rooted_v(1, comm, cn, p / 2, TY_INT, n, 1);
    c_rooted_v(0, comm, cn, 0, TY_HOLE, n, 0);
    c_allgather(0, comm, cn, TY_INT, n, 0);
    c_allgather(1, comm, cn, TY_HOLE, n, 1);
    c_alltoall(comm, cn, TY_INT, TY_HOLE, n, 0);
    c_alltoallv(comm, cn, TY_VEC, n, 1);
    c_alltoallw(comm, cn, n, 0);
    for (k = R_REDUCE; k <= R_EXSCAN; k++) {
        c_reduce(k, comm, cn, &reds[k % 2 ? 3 : 0], k % p, 100 * n, k % 2);
    }
}

/* The newer kinds: buffers and requests kept across the phases. */
#define NK 4096
static struct {
    int        *a2a_s, *a2a_r, *a2a_ref;
    MPI_Request a2a; /* persistent alltoall (or NULL) */
    MPI_Comm    ring;
    int         nb_s[2], nb_r[2];
    MPI_Request nb;
    int        *g_s, *g_r;
    MPI_Request grp; /* persistent group (or NULL) */
    int         phase;
} nk;

static void newer_init(void)
{
    int             dims[1] = {t.size}, periods[1] = {1}, right, left;
    dpushim_group_t g;

    nk.a2a = nk.nb = nk.grp = MPI_REQUEST_NULL;
    nk.a2a_s = t_xmalloc(sizeof(int) * NK * (size_t)t.size);
    nk.a2a_r = t_xmalloc(sizeof(int) * NK * (size_t)t.size);
    nk.a2a_ref = t_xmalloc(sizeof(int) * NK * (size_t)t.size);
    nk.g_s = t_xmalloc(sizeof(int) * NK);
    nk.g_r = t_xmalloc(sizeof(int) * NK);
#ifdef ALLTOALL_INIT
    T_MPI(ALLTOALL_INIT(nk.a2a_s, NK, MPI_INT, nk.a2a_r, NK, MPI_INT,
                        MPI_COMM_WORLD, MPI_INFO_NULL, &nk.a2a));
#endif
    T_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &nk.ring));
    right = (t.rank + 1) % t.size;
    left = (t.rank + t.size - 1) % t.size;
    if (dpushim_group_begin(MPI_COMM_WORLD, &g) == DPUSHIM_SUCCESS) {
        dpushim_group_send(g, nk.g_s, NK, MPI_INT, right, 5);
        dpushim_group_recv(g, nk.g_r, NK, MPI_INT, left, 5);
        if (dpushim_group_end_persistent(&g, &nk.grp) != DPUSHIM_SUCCESS) {
            t_fail("dpushim_group_end_persistent failed");
        }
    }
}

/* Start them (the caller waits): new contents each phase. */
static void newer_start(void)
{
    int i;

    nk.phase++;
    for (i = 0; i < NK * t.size; i++) {
        nk.a2a_s[i] = nk.phase * 1000000 + t.rank * 10000 + i;
    }
    memset(nk.a2a_r, 0, sizeof(int) * NK * (size_t)t.size);
    T_MPI(t_ref_alltoall(nk.a2a_s, NK, MPI_INT, nk.a2a_ref, NK, MPI_INT,
                         MPI_COMM_WORLD));
    if (nk.a2a != MPI_REQUEST_NULL) {
        t_count("alltoall_init", 1);
        T_MPI(MPI_Start(&nk.a2a));
    }
    nk.nb_s[0] = nk.phase * 100 + 2 * t.rank;     /* to the left */
    nk.nb_s[1] = nk.phase * 100 + 2 * t.rank + 1; /* to the right */
    nk.nb_r[0] = nk.nb_r[1] = -1;
    t_count("ineighbor_alltoall", 1);
    T_MPI(MPI_Ineighbor_alltoall(nk.nb_s, 1, MPI_INT, nk.nb_r, 1, MPI_INT,
                                 nk.ring, &nk.nb));
    for (i = 0; i < NK; i++) {
        nk.g_s[i] = nk.phase * 1000000 + t.rank * 10000 + i;
        nk.g_r[i] = -1;
    }
    if (nk.grp != MPI_REQUEST_NULL) {
        t_count("group_init", 1);
        T_MPI(MPI_Start(&nk.grp));
    }
}

/* Wait for them: each ends exact or with an error (counted). */
static void newer_wait(int *ok, int *failed)
{
    int left = (t.rank + t.size - 1) % t.size, right = (t.rank + 1) % t.size;
    int i;

    if (nk.a2a != MPI_REQUEST_NULL) {
        if (MPI_Wait(&nk.a2a, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            (*failed)++;
        } else {
            (*ok)++;
            t_case("check persistent alltoall, phase %d", nk.phase);
            t_same("persistent alltoall", nk.a2a_r, nk.a2a_ref,
                   sizeof(int) * NK * (size_t)t.size);
        }
    }
    if (MPI_Wait(&nk.nb, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        (*failed)++;
    } else {
        (*ok)++;
        /* Block 0 comes from the left neighbour's rightward block. */
        if (nk.nb_r[0] != nk.phase * 100 + 2 * left + 1 ||
            nk.nb_r[1] != nk.phase * 100 + 2 * right) {
            t_fail("neighbour alltoall, phase %d: got %d %d", nk.phase,
                   nk.nb_r[0], nk.nb_r[1]);
        }
    }
    if (nk.grp == MPI_REQUEST_NULL) {
        return;
    }
    if (MPI_Wait(&nk.grp, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        (*failed)++;
        return;
    }
    (*ok)++;
    for (i = 0; i < NK; i++) {
        if (nk.g_r[i] != nk.phase * 1000000 + left * 10000 + i) {
            t_fail("persistent group, phase %d: element %d is %d", nk.phase, i,
                   nk.g_r[i]);
            break;
        }
    }
}

int main(int argc, char **argv)
{
    int      rpd, ok = 0, failed = 0, i;
    MPI_Comm half;

    t_init(&argc, &argv, "failover_kinds");
    types_make();
    reds_make();
    rpd = getenv("FO_RPD") ? atoi(getenv("FO_RPD")) : t.size;
    killer = ((t.size - 1) / rpd) * rpd;

    t_case("every kind with the agents");
    newer_init();
    every_kind(MPI_COMM_WORLD, "world", 5, 0);
    newer_start();
    run_all(MPI_COMM_WORLD);
    newer_wait(&ok, &failed);
    if (failed != 0) {
        t_fail("%d of the newer kinds failed with the agents up", failed);
    }
    ok = failed = 0;

    /* The failure: every rank is done with the above first. */
    t_case("every kind pending while an agent dies");
    MPI_Barrier(MPI_COMM_WORLD);
    every_kind(MPI_COMM_WORLD, "world", 7, 1);
    newer_start();
    newer_wait(&ok, &failed);
    for (i = 0; i < nops; i++) {
        MPI_Status st;
        int        rc = MPI_Wait(&ops[i].req, &st);

        if (rc != MPI_SUCCESS) {
            failed++;
            for (int j = 0; ops[i].own[j] != NULL; j++) {
                free(ops[i].own[j]);
            }
            continue;
        }
        ok++;
        t_case("check %s", ops[i].name);
        tc_check(&ops[i]);
    }
    nops = 0;
    printf("rank %d: pending collectives: %d ended well, %d with an "
           "error\n",
           t.rank, ok, failed);
    fflush(stdout);

    /* Stock MPI from now on, on old and new communicators. */
    t_case("every kind after the failure");
    every_kind(MPI_COMM_WORLD, "world", 3, 0);
    newer_start();
    run_all(MPI_COMM_WORLD);
    ok = failed = 0;
    newer_wait(&ok, &failed);
    if (failed != 0) {
        t_fail("%d of the newer kinds failed on stock MPI", failed);
    }
    /* An erroneous call after the failure goes to stock MPI on the
     * communicator's twin: its error comes back under the application's
     * handler (MPI_ERRORS_RETURN on world here), as without the shim,
     * not under the one the twin was made with at MPI_Init (fatal). */
    t_case("an erroneous call after the failure returns its error");
    {
        MPI_Datatype v3;
        MPI_Request  r = MPI_REQUEST_NULL;
        int          in[8] = {0}, out[8], rc;

        MPI_Type_vector(1, 3, 4, MPI_INT, &v3);
        MPI_Type_commit(&v3);
        rc = MPI_Iallreduce(in, out, 1, v3, MPI_SUM, MPI_COMM_WORLD, &r);
        if (rc == MPI_SUCCESS) {
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            t_fail("MPI_Iallreduce of MPI_SUM on a derived type succeeded "
                   "after the failure: stock MPI refuses it");
        }
        MPI_Type_free(&v3);
    }
    MPI_Comm_split(MPI_COMM_WORLD, t.rank % 2, t.rank, &half);
    every_kind(half, "half", 4, 0);
    run_all(half);
    MPI_Comm_free(&half);
    if (nk.a2a != MPI_REQUEST_NULL) {
        MPI_Request_free(&nk.a2a);
    }
    if (nk.grp != MPI_REQUEST_NULL) {
        MPI_Request_free(&nk.grp);
    }
    MPI_Comm_free(&nk.ring);
    return t_finish();
}
