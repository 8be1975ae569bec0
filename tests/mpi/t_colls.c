/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every nonblocking collective the shim offloads, against stock MPI: each
 * call's result, byte for byte (gaps of derived datatypes included), is
 * what the blocking PMPI_* call delivers on the same inputs, and its send
 * buffer is unchanged. Integer reductions are exact; floating-point ones
 * use values whose sums are exact, and allreduce must give every rank the
 * same bits. Cases: every root, zero counts, MPI_IN_PLACE, derived
 * datatypes on one side or both, MPI_BOTTOM with absolute addresses, user
 * operations (stock MPI: counted as fallbacks), communicators of every
 * size the job splits into, and a batch of calls outstanding at once
 * while point-to-point messages flow.
 *
 * Where the MPI library is wrong, the reference is computed otherwise,
 * and the place says so: Open MPI 4.1's MPI_Alltoallw on a one-rank
 * communicator with a displacement (wrong data), and MPICH 4.0's
 * MPI_Reduce after an MPI_IN_PLACE call (crashes). MPICH 4.0's one-rank
 * MPI_Allgatherv ignores the displacement: there it is 0.
 */
#include "tcommon.h"
#include "tcolls.h"

int main(int argc, char **argv)
{
    MPI_Comm rev, half, dup;
    char     cn[40];

    t_init(&argc, &argv, "t_colls");
    types_make();
    reds_make();
    MPI_Comm_split(MPI_COMM_WORLD, 0, t.size - t.rank, &rev);
    MPI_Comm_split(MPI_COMM_WORLD, t.rank % 2, t.rank, &half);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    snprintf(cn, sizeof(cn), "half %d", t.rank % 2);
    for (int n = 0; n <= 9; n += 3) {
        t_case("movement on world, %d", n);
        movement(MPI_COMM_WORLD, "world", n);
        t_case("movement on reversed world, %d", n);
        movement(rev, "reversed", n);
        t_case("movement on %s, %d", cn, n);
        movement(half, cn, n);
    }
    for (int n = 0; n <= 7; n += 7) {
        t_case("reductions on world, %d", n);
        reductions(MPI_COMM_WORLD, "world", n);
        t_case("reductions on %s, %d", cn, n);
        reductions(half, cn, n);
        t_case("reductions on reversed, %d", n);
        reductions(rev, "reversed", n);
    }
    /* Large enough for the ring between agents (over BLD_SMALL_REDUCE). */
    t_case("large reductions");
    reductions(dup, "dup", 30000);
    t_case("large movement");
    movement(dup, "dup", 5000);
    MPI_Comm_free(&rev);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    MPI_Op_free(&user_sum);
    MPI_Type_free(&vec3);
    MPI_Type_free(&ty[TY_VEC]);
    MPI_Type_free(&ty[TY_HOLE]);
    return t_finish();
}
