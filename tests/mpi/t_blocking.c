/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The blocking calls the shim wraps (shim/wrap/block.c): every blocking
 * collective that has a nonblocking form (MPI's own calls, after a check
 * for a takeover to settle) and the point-to-point calls (run as their
 * nonblocking forms plus a test loop while offload is on), each compared
 * byte for byte with the same call made through PMPI (stock MPI), on
 * MPI_COMM_WORLD and on a split communicator, with MPI_IN_PLACE where MPI
 * allows it. An offloaded Ialltoall stays pending across them, as in an
 * application that overlaps.
 */
#include "tcommon.h"

#define N 300 /* elements per block: not a power of two */

static int *buf_i(size_t n, int seed)
{
    int *b = t_xmalloc(n * sizeof(int));

    for (size_t i = 0; i < n; i++) {
        b[i] = (int)((seed * 7919 + (int)i * 31 + t.rank * 1009) % 100003);
    }
    return b;
}

/* Each collective on comm, through the wrapper and through PMPI. */
static void collectives(MPI_Comm comm, const char *cname)
{
    int           r, p, root, *s, *a, *b, *cnt, *dsp, *cnt2, *dsp2;
    MPI_Datatype *types;
    char          what[128];

    PMPI_Comm_rank(comm, &r);
    PMPI_Comm_size(comm, &p);
    root = p - 1;
    s = buf_i((size_t)N * p, 1);
    a = t_xmalloc(sizeof(int) * N * p);
    b = t_xmalloc(sizeof(int) * N * p);
    cnt = t_xmalloc(sizeof(int) * p);
    dsp = t_xmalloc(sizeof(int) * p);
    cnt2 = t_xmalloc(sizeof(int) * p);
    dsp2 = t_xmalloc(sizeof(int) * p);
    types = t_xmalloc(sizeof(MPI_Datatype) * p);
    for (int i = 0; i < p; i++) {
        cnt[i] = 1 + (i * 37 + r * 11) % N;  /* what I send to i */
        cnt2[i] = 1 + (r * 37 + i * 11) % N; /* what i sends to me */
        dsp[i] = dsp2[i] = i * N;
        types[i] = MPI_INT;
    }

#define SAME(name, nbytes)                                     \
    do {                                                       \
        snprintf(what, sizeof(what), "%s on %s", name, cname); \
        t_same(what, a, b, nbytes);                            \
    } while (0)
#define CLEAR()                            \
    (memset(a, 0x11, sizeof(int) * N * p), \
     memset(b, 0x11, sizeof(int) * N * p))

    t_case("MPI_Barrier on %s", cname);
    T_MPI(MPI_Barrier(comm));

    t_case("MPI_Bcast on %s", cname);
    CLEAR();
    memcpy(a, s, sizeof(int) * N);
    memcpy(b, s, sizeof(int) * N);
    T_MPI(MPI_Bcast(a, N, MPI_INT, root, comm));
    PMPI_Bcast(b, N, MPI_INT, root, comm);
    SAME("MPI_Bcast", sizeof(int) * N);

    t_case("MPI_Reduce on %s", cname);
    CLEAR();
    T_MPI(MPI_Reduce(s, a, N, MPI_INT, MPI_SUM, root, comm));
    PMPI_Reduce(s, b, N, MPI_INT, MPI_SUM, root, comm);
    SAME("MPI_Reduce", r == root ? sizeof(int) * N : 0);

    t_case("MPI_Allreduce (and in place) on %s", cname);
    CLEAR();
    T_MPI(MPI_Allreduce(s, a, N, MPI_INT, MPI_MAX, comm));
    PMPI_Allreduce(s, b, N, MPI_INT, MPI_MAX, comm);
    SAME("MPI_Allreduce", sizeof(int) * N);
    memcpy(a, s, sizeof(int) * N);
    T_MPI(MPI_Allreduce(MPI_IN_PLACE, a, N, MPI_INT, MPI_SUM, comm));
    PMPI_Allreduce(s, b, N, MPI_INT, MPI_SUM, comm);
    SAME("MPI_Allreduce in place", sizeof(int) * N);

    t_case("MPI_Gather, MPI_Gatherv on %s", cname);
    CLEAR();
    T_MPI(MPI_Gather(s, N, MPI_INT, a, N, MPI_INT, root, comm));
    PMPI_Gather(s, N, MPI_INT, b, N, MPI_INT, root, comm);
    SAME("MPI_Gather", r == root ? sizeof(int) * N * p : 0);
    CLEAR();
    for (int i = 0; i < p; i++) {
        cnt2[i] = 1 + (i * 13) % N;
    }
    T_MPI(
        MPI_Gatherv(s, cnt2[r], MPI_INT, a, cnt2, dsp2, MPI_INT, root, comm));
    PMPI_Gatherv(s, cnt2[r], MPI_INT, b, cnt2, dsp2, MPI_INT, root, comm);
    SAME("MPI_Gatherv", r == root ? sizeof(int) * N * p : 0);

    t_case("MPI_Scatter, MPI_Scatterv on %s", cname);
    CLEAR();
    T_MPI(MPI_Scatter(s, N, MPI_INT, a, N, MPI_INT, root, comm));
    PMPI_Scatter(s, N, MPI_INT, b, N, MPI_INT, root, comm);
    SAME("MPI_Scatter", sizeof(int) * N);
    CLEAR();
    T_MPI(
        MPI_Scatterv(s, cnt2, dsp2, MPI_INT, a, cnt2[r], MPI_INT, root, comm));
    PMPI_Scatterv(s, cnt2, dsp2, MPI_INT, b, cnt2[r], MPI_INT, root, comm);
    SAME("MPI_Scatterv", sizeof(int) * N);

    t_case("MPI_Allgather, MPI_Allgatherv on %s", cname);
    CLEAR();
    T_MPI(MPI_Allgather(s, N, MPI_INT, a, N, MPI_INT, comm));
    PMPI_Allgather(s, N, MPI_INT, b, N, MPI_INT, comm);
    SAME("MPI_Allgather", sizeof(int) * N * p);
    CLEAR();
    T_MPI(MPI_Allgatherv(s, cnt2[r], MPI_INT, a, cnt2, dsp2, MPI_INT, comm));
    PMPI_Allgatherv(s, cnt2[r], MPI_INT, b, cnt2, dsp2, MPI_INT, comm);
    SAME("MPI_Allgatherv", sizeof(int) * N * p);

    t_case("MPI_Alltoall, MPI_Alltoallv, MPI_Alltoallw on %s", cname);
    CLEAR();
    T_MPI(MPI_Alltoall(s, N, MPI_INT, a, N, MPI_INT, comm));
    PMPI_Alltoall(s, N, MPI_INT, b, N, MPI_INT, comm);
    SAME("MPI_Alltoall", sizeof(int) * N * p);
    for (int i = 0; i < p; i++) {
        cnt2[i] = 1 + (r * 37 + i * 11) % N;
    }
    CLEAR();
    T_MPI(MPI_Alltoallv(s, cnt, dsp, MPI_INT, a, cnt2, dsp2, MPI_INT, comm));
    PMPI_Alltoallv(s, cnt, dsp, MPI_INT, b, cnt2, dsp2, MPI_INT, comm);
    SAME("MPI_Alltoallv", sizeof(int) * N * p);
    for (int i = 0; i < p; i++) { /* alltoallw displacements: bytes */
        dsp[i] = dsp2[i] = i * N * (int)sizeof(int);
    }
    CLEAR();
    T_MPI(MPI_Alltoallw(s, cnt, dsp, types, a, cnt2, dsp2, types, comm));
    PMPI_Alltoallw(s, cnt, dsp, types, b, cnt2, dsp2, types, comm);
    SAME("MPI_Alltoallw", sizeof(int) * N * p);

    t_case("MPI_Reduce_scatter(_block), MPI_Scan, MPI_Exscan on %s", cname);
    for (int i = 0; i < p; i++) {
        cnt[i] = 1 + (i * 7) % N;
    }
    CLEAR();
    T_MPI(MPI_Reduce_scatter(s, a, cnt, MPI_INT, MPI_SUM, comm));
    PMPI_Reduce_scatter(s, b, cnt, MPI_INT, MPI_SUM, comm);
    SAME("MPI_Reduce_scatter", sizeof(int) * (size_t)cnt[r]);
    CLEAR();
    T_MPI(MPI_Reduce_scatter_block(s, a, N / 2, MPI_INT, MPI_SUM, comm));
    PMPI_Reduce_scatter_block(s, b, N / 2, MPI_INT, MPI_SUM, comm);
    SAME("MPI_Reduce_scatter_block", sizeof(int) * (N / 2));
    CLEAR();
    T_MPI(MPI_Scan(s, a, N, MPI_INT, MPI_SUM, comm));
    PMPI_Scan(s, b, N, MPI_INT, MPI_SUM, comm);
    SAME("MPI_Scan", sizeof(int) * N);
    CLEAR();
    T_MPI(MPI_Exscan(s, a, N, MPI_INT, MPI_SUM, comm));
    PMPI_Exscan(s, b, N, MPI_INT, MPI_SUM, comm);
    SAME("MPI_Exscan", r > 0 ? sizeof(int) * N : 0); /* rank 0: undefined */
#undef SAME
#undef CLEAR
    free(s);
    free(a);
    free(b);
    free(cnt);
    free(dsp);
    free(cnt2);
    free(dsp2);
    free(types);
}

/* A ring of point-to-point calls; the data must be what was sent. */
static void point_to_point(void)
{
    int  next = (t.rank + 1) % t.size, prev = (t.rank + t.size - 1) % t.size;
    int *s = buf_i(N, 5), *want, *r = t_xmalloc(sizeof(int) * N), count;
    MPI_Status  st;
    MPI_Message msg;

    want = t_xmalloc(sizeof(int) * N);
    for (int i = 0; i < N; i++) { /* what prev sent: buf_i of its rank */
        want[i] = (int)((5 * 7919 + i * 31 + prev * 1009) % 100003);
    }
    t_case("MPI_Sendrecv");
    memset(r, 0, sizeof(int) * N);
    T_MPI(MPI_Sendrecv(s, N, MPI_INT, next, 1, r, N, MPI_INT, prev, 1,
                       MPI_COMM_WORLD, &st));
    t_match("MPI_Sendrecv", r, want, sizeof(int) * N);
    PMPI_Get_count(&st, MPI_INT, &count);
    if (st.MPI_SOURCE != prev || st.MPI_TAG != 1 || count != N) {
        t_fail("MPI_Sendrecv status: source %d tag %d count %d", st.MPI_SOURCE,
               st.MPI_TAG, count);
    }

    /* A chain around the ring: rank 0 sends first, every other rank
     * receives, then sends on (Ssend needs the receive posted). */
    t_case("MPI_Send / MPI_Probe / MPI_Recv, MPI_Ssend / MPI_Mprobe / "
           "MPI_Mrecv around the ring");
    for (int k = 0; k < 2 && t.size > 1; k++) {
        if (k == 0 && t.rank == 0) {
            T_MPI(MPI_Send(s, N, MPI_INT, next, 2, MPI_COMM_WORLD));
            T_MPI(MPI_Ssend(s, N, MPI_INT, next, 3, MPI_COMM_WORLD));
        } else if (k == 1 && t.rank != 0) {
            T_MPI(MPI_Send(s, N, MPI_INT, next, 2, MPI_COMM_WORLD));
            T_MPI(MPI_Ssend(s, N, MPI_INT, next, 3, MPI_COMM_WORLD));
        } else {
            memset(r, 0, sizeof(int) * N);
            T_MPI(MPI_Probe(prev, 2, MPI_COMM_WORLD, &st));
            T_MPI(MPI_Recv(r, N, MPI_INT, st.MPI_SOURCE, 2, MPI_COMM_WORLD,
                           &st));
            t_match("MPI_Recv after MPI_Probe", r, want, sizeof(int) * N);
            memset(r, 0, sizeof(int) * N);
            T_MPI(MPI_Mprobe(prev, 3, MPI_COMM_WORLD, &msg, &st));
            T_MPI(MPI_Mrecv(r, N, MPI_INT, &msg, &st));
            t_match("MPI_Mrecv", r, want, sizeof(int) * N);
        }
    }
    free(s);
    free(r);
    free(want);
}

int main(int argc, char **argv)
{
    const int   blk = 4096;
    uint8_t    *s, *r, *ref;
    MPI_Request q;
    MPI_Comm    half;

    t_init(&argc, &argv, "t_blocking");
    /* An offloaded collective pending across the blocking calls. */
    s = t_xmalloc((size_t)blk * t.size);
    r = t_xmalloc((size_t)blk * t.size);
    ref = t_xmalloc((size_t)blk * t.size);
    t_pat_fill(s, (size_t)blk * t.size, 3, t.rank, 0);
    memset(r, T_POISON, (size_t)blk * t.size);
    t_case("Ialltoall posted");
    t_ialltoall(s, blk, MPI_BYTE, r, blk, MPI_BYTE, MPI_COMM_WORLD, &q, 1);

    collectives(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    point_to_point();
    T_MPI(MPI_Comm_split(MPI_COMM_WORLD, t.rank % 2, -t.rank, &half));
    collectives(half, "a split communicator");
    T_MPI(MPI_Comm_free(&half));

    t_case("Ialltoall waited for");
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    PMPI_Alltoall(s, blk, MPI_BYTE, ref, blk, MPI_BYTE, MPI_COMM_WORLD);
    t_same("Ialltoall pending across the blocking calls", r, ref,
           (size_t)blk * t.size);
    free(s);
    free(r);
    free(ref);
    return t_finish();
}
