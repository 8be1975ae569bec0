/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ranks that describe the same message with different datatypes of one
 * type signature, as MPI allows: contiguous on some ranks, strided or
 * resized on others. Every rank must take the same path (the shim decides
 * by the message size alone and packs non-contiguous layouts), and the
 * data must be exact, the gaps of strided layouts untouched:
 *   - MPI_Ibcast: n x MPI_INT at the root, one vector of n strided ints
 *     elsewhere, and the other way round;
 *   - MPI_Ialltoall: contiguous blocks on even ranks, a resized strided
 *     vector per block on odd ranks; and MPI_IN_PLACE with the strided
 *     layout.
 * Before this, such a mix split the offload decision and hung.
 */
#include "tcommon.h"

#define N 3000 /* ints per message or block */

static int value(int from, int to, int k, uint32_t seed)
{
    return (int)(seed * 1000003u + (uint32_t)from * 7919u +
                 (uint32_t)to * 104729u + (uint32_t)k);
}

/* One vector of N ints, every second int (a gap after each). */
static MPI_Datatype strided(void)
{
    MPI_Datatype v;

    MPI_Type_vector(N, 1, 2, MPI_INT, &v);
    MPI_Type_commit(&v);
    return v;
}

/* The same, resized so that consecutive blocks lie 2N ints apart. */
static MPI_Datatype strided_block(void)
{
    MPI_Datatype v, r;

    MPI_Type_vector(N, 1, 2, MPI_INT, &v);
    MPI_Type_create_resized(v, 0, (MPI_Aint)(2 * N * sizeof(int)), &r);
    MPI_Type_commit(&r);
    MPI_Type_free(&v);
    return r;
}

static void bcast(MPI_Comm comm, int root, int root_strided)
{
    int          r, me_strided, *buf, k;
    uint32_t     seed = t_seed();
    MPI_Datatype v = strided();
    MPI_Request  q;

    MPI_Comm_rank(comm, &r);
    me_strided = (r == root) == root_strided;
    t_case("Ibcast from %d, %s at the root and %s elsewhere", root,
           root_strided ? "strided" : "contiguous",
           root_strided ? "contiguous" : "strided");
    buf = t_xmalloc(2 * N * sizeof(int));
    for (k = 0; k < 2 * N; k++) {
        buf[k] = -1;
    }
    if (r == root) {
        for (k = 0; k < N; k++) {
            buf[me_strided ? 2 * k : k] = value(root, 0, k, seed);
        }
    }
    if (me_strided) {
        t_ibcast(buf, 1, v, root, comm, &q, 0);
    } else {
        t_ibcast(buf, N, MPI_INT, root, comm, &q, 1);
    }
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    for (k = 0; k < N; k++) {
        int at = me_strided ? 2 * k : k;

        if (buf[at] != value(root, 0, k, seed)) {
            t_fail("element %d: %d, expected %d", k, buf[at],
                   value(root, 0, k, seed));
            break;
        }
        if (me_strided && buf[2 * k + 1] != -1) {
            t_fail("gap after element %d written", k);
            break;
        }
    }
    if (!me_strided) {
        for (k = N; k < 2 * N; k++) {
            if (buf[k] != -1) {
                t_fail("beyond the message: element %d written", k);
                break;
            }
        }
    }
    MPI_Type_free(&v);
    free(buf);
}

static void alltoall(MPI_Comm comm, int in_place)
{
    int          r, p, me_strided, *s, *d, i, k;
    uint32_t     seed = t_seed();
    MPI_Datatype v = strided_block();
    MPI_Request  q;

    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    me_strided = r % 2;
    t_case("Ialltoall%s, contiguous on even ranks, strided on odd ones",
           in_place ? " in place" : "");
    s = t_xmalloc(2 * N * sizeof(int) * (size_t)p);
    d = t_xmalloc(2 * N * sizeof(int) * (size_t)p);
    for (k = 0; k < 2 * N * p; k++) {
        s[k] = d[k] = -1;
    }
    /* Block j (to rank j) in this rank's layout. */
    for (i = 0; i < p; i++) {
        for (k = 0; k < N; k++) {
            int *buf = in_place ? d : s;

            if (me_strided) {
                buf[i * 2 * N + 2 * k] = value(r, i, k, seed);
            } else {
                buf[i * N + k] = value(r, i, k, seed);
            }
        }
    }
    if (me_strided) {
        t_ialltoall(in_place ? MPI_IN_PLACE : s, 1, v, d, 1, v, comm, &q, 0);
    } else {
        t_ialltoall(in_place ? MPI_IN_PLACE : s, N, MPI_INT, d, N, MPI_INT,
                    comm, &q, 1);
    }
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    for (i = 0; i < p; i++) {
        for (k = 0; k < N; k++) {
            int at = me_strided ? i * 2 * N + 2 * k : i * N + k;

            if (d[at] != value(i, r, k, seed)) {
                t_fail("block from %d, element %d: %d, expected %d", i, k,
                       d[at], value(i, r, k, seed));
                i = p;
                break;
            }
            if (me_strided && d[at + 1] != -1) {
                t_fail("block from %d: gap after element %d written", i, k);
                i = p;
                break;
            }
        }
    }
    MPI_Type_free(&v);
    free(s);
    free(d);
}

int main(int argc, char **argv)
{
    MPI_Comm half;

    t_init(&argc, &argv, "t_mixed");
    for (int root = 0; root < t.size; root++) {
        bcast(MPI_COMM_WORLD, root, 0);
        bcast(MPI_COMM_WORLD, root, 1);
    }
    alltoall(MPI_COMM_WORLD, 0);
    alltoall(MPI_COMM_WORLD, 1);
    MPI_Comm_split(MPI_COMM_WORLD, t.rank % 2, t.size - t.rank, &half);
    bcast(half, 0, 1);
    alltoall(half, 0);
    MPI_Comm_free(&half);
    return t_finish();
}
