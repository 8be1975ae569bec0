/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An agent fails while one collective of every kind is pending: every
 * request must end, those that end well with exactly what stock MPI
 * delivers, the others with an error class; afterwards every kind runs
 * on stock MPI and is exact. Run under the shim with DPUSHIM_MIN_BYTES=1
 * and FO_RPD=DPUSHIM_RANKS_PER_DPU: the first rank of the last virtual
 * node SIGKILLs its agent right after posting the first collective.
 * Prints per rank "pending collectives: N ended well, M with an error".
 */
#include "tcommon.h"
#include "tcolls.h"
#include "tagent.h"

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

int main(int argc, char **argv)
{
    int rpd, ok = 0, failed = 0, i;
    MPI_Comm half;

    t_init(&argc, &argv, "failover_kinds");
    types_make();
    reds_make();
    rpd = getenv("FO_RPD") ? atoi(getenv("FO_RPD")) : t.size;
    killer = ((t.size - 1) / rpd) * rpd;

    t_case("every kind with the agents");
    every_kind(MPI_COMM_WORLD, "world", 5, 0);
    run_all(MPI_COMM_WORLD);

    /* The failure: every rank is done with the above first. */
    t_case("every kind pending while an agent dies");
    MPI_Barrier(MPI_COMM_WORLD);
    every_kind(MPI_COMM_WORLD, "world", 7, 1);
    for (i = 0; i < nops; i++) {
        MPI_Status st;
        int rc = MPI_Wait(&ops[i].req, &st);

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
           "error\n", t.rank, ok, failed);
    fflush(stdout);

    /* Stock MPI from now on, on old and new communicators. */
    t_case("every kind after the failure");
    every_kind(MPI_COMM_WORLD, "world", 3, 0);
    run_all(MPI_COMM_WORLD);
    MPI_Comm_split(MPI_COMM_WORLD, t.rank % 2, t.rank, &half);
    every_kind(half, "half", 4, 0);
    run_all(half);
    MPI_Comm_free(&half);
    return t_finish();
}
