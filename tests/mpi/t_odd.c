/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Odd but valid calls must return under the shim as they do on stock MPI:
 * zero-size datatypes, zero counts, MPI_IN_PLACE, MPI_DATATYPE_NULL where
 * an argument is not significant, MPI_PROC_NULL, empty request arrays, on
 * every call the shim wraps (the offloaded collectives, the blocking
 * collectives, point-to-point calls and probes, the completion calls).
 * Results are compared with the same call through PMPI, or with values
 * computed here. A hang is a failure: the watchdog of tcommon.h ends it.
 * Among them, the call that hung the blocking wrappers on Open MPI 4.1
 * (MPI_Alltoallv with a zero-size send type: its MPI_Ialltoallv never
 * completes).
 */
#include "tcommon.h"

#define N 5

static MPI_Datatype zero_type(void)
{
    MPI_Datatype z;

    MPI_Type_contiguous(0, MPI_INT, &z);
    MPI_Type_commit(&z);
    return z;
}

/* The blocking collectives, each with its odd forms. */
static void blocking_collectives(MPI_Comm comm, const char *cname)
{
    MPI_Datatype  z = zero_type(), nul = MPI_DATATYPE_NULL;
    int           r, p, root, *s, *a, *b, *zc, *zd, *one, *cnt, *dsp;
    MPI_Datatype *zt, *it;
    char          w[160];

    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    root = p - 1;
    s = t_xmalloc(sizeof(int) * N * (size_t)p);
    a = t_xmalloc(sizeof(int) * N * (size_t)p);
    b = t_xmalloc(sizeof(int) * N * (size_t)p);
    zc = calloc((size_t)p, sizeof(int));
    zd = calloc((size_t)p, sizeof(int));
    one = t_xmalloc(sizeof(int) * (size_t)p);
    cnt = t_xmalloc(sizeof(int) * (size_t)p);
    dsp = t_xmalloc(sizeof(int) * (size_t)p);
    zt = t_xmalloc(sizeof(MPI_Datatype) * (size_t)p);
    it = t_xmalloc(sizeof(MPI_Datatype) * (size_t)p);
    for (int i = 0; i < N * p; i++) {
        s[i] = 1000 * r + i;
    }
    for (int i = 0; i < p; i++) {
        one[i] = 1;
        cnt[i] = N;
        dsp[i] = N * i;
        zt[i] = z;
        it[i] = MPI_INT;
    }
#define SAME(name)                                       \
    do {                                                 \
        snprintf(w, sizeof(w), "%s on %s", name, cname); \
        t_same(w, a, b, sizeof(int) * N * (size_t)p);    \
    } while (0)
#define CLEAR()                                    \
    (memset(a, 0x11, sizeof(int) * N * (size_t)p), \
     memset(b, 0x11, sizeof(int) * N * (size_t)p))

    t_case("MPI_Alltoallv, zero-size send type, counts 1 / 0, on %s", cname);
    CLEAR();
    T_MPI(MPI_Alltoallv(s, one, zd, z, a, zc, zd, MPI_INT, comm));
    t_all("MPI_Alltoallv with nothing to receive", a, sizeof(int) * N, 0x11);

    t_case("MPI_Alltoall, count 0 and a zero-size type, on %s", cname);
    T_MPI(MPI_Alltoall(s, 0, MPI_INT, a, 0, MPI_INT, comm));
    T_MPI(MPI_Alltoall(s, 3, z, a, 3, z, comm));
    t_all("MPI_Alltoall of nothing", a, sizeof(int) * N, 0x11);

    t_case("MPI_Alltoall in place, send type MPI_DATATYPE_NULL, on %s", cname);
    memcpy(a, s, sizeof(int) * N * (size_t)p);
    T_MPI(MPI_Alltoall(MPI_IN_PLACE, 0, nul, a, N, MPI_INT, comm));
    PMPI_Alltoall(s, N, MPI_INT, b, N, MPI_INT, comm);
    SAME("MPI_Alltoall in place");

    t_case("MPI_Alltoallv in place, on %s", cname);
    memcpy(a, s, sizeof(int) * N * (size_t)p);
    T_MPI(MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, nul, a, cnt, dsp, MPI_INT,
                        comm));
    SAME("MPI_Alltoallv in place");

    t_case("MPI_Alltoallw, zero counts and zero-size types, on %s", cname);
    T_MPI(MPI_Alltoallw(s, zc, zd, it, a, zc, zd, it, comm));
    T_MPI(MPI_Alltoallw(s, one, zd, zt, a, one, zd, zt, comm));

    t_case("MPI_Barrier, MPI_Bcast of nothing, on %s", cname);
    T_MPI(MPI_Barrier(comm));
    T_MPI(MPI_Bcast(a, 0, MPI_INT, root, comm));
    T_MPI(MPI_Bcast(a, 4, z, root, comm));

    t_case("MPI_Reduce and MPI_Allreduce, count 0 and in place, on %s", cname);
    T_MPI(MPI_Reduce(s, a, 0, MPI_INT, MPI_SUM, root, comm));
    T_MPI(MPI_Allreduce(s, a, 0, MPI_INT, MPI_SUM, comm));
    CLEAR();
    memcpy(a, s, sizeof(int) * N);
    T_MPI(MPI_Allreduce(MPI_IN_PLACE, a, N, MPI_INT, MPI_SUM, comm));
    PMPI_Allreduce(s, b, N, MPI_INT, MPI_SUM, comm);
    SAME("MPI_Allreduce in place");
    CLEAR();
    memcpy(a, s, sizeof(int) * N);
    T_MPI(MPI_Reduce(r == root ? MPI_IN_PLACE : s, a, N, MPI_INT, MPI_MAX,
                     root, comm));
    PMPI_Reduce(s, b, N, MPI_INT, MPI_MAX, root, comm);
    if (r != root) {
        memcpy(b, s, sizeof(int) * N); /* not significant off the root */
    }
    SAME("MPI_Reduce in place at the root");

    t_case("MPI_Gather(v) and MPI_Scatter(v), receive (send) arguments "
           "MPI_DATATYPE_NULL off the root, on %s",
           cname);
    CLEAR();
    T_MPI(MPI_Gather(s, N, MPI_INT, a, r == root ? N : 0,
                     r == root ? MPI_INT : nul, root, comm));
    PMPI_Gather(s, N, MPI_INT, b, N, MPI_INT, root, comm);
    if (r == root) {
        SAME("MPI_Gather");
    }
    CLEAR();
    T_MPI(MPI_Gatherv(s, N, MPI_INT, a, r == root ? cnt : NULL,
                      r == root ? dsp : NULL, r == root ? MPI_INT : nul, root,
                      comm));
    PMPI_Gatherv(s, N, MPI_INT, b, cnt, dsp, MPI_INT, root, comm);
    if (r == root) {
        SAME("MPI_Gatherv");
    }
    CLEAR();
    T_MPI(MPI_Scatter(s, r == root ? N : 0, r == root ? MPI_INT : nul, a, N,
                      MPI_INT, root, comm));
    PMPI_Scatter(s, N, MPI_INT, b, N, MPI_INT, root, comm);
    SAME("MPI_Scatter");
    CLEAR();
    T_MPI(MPI_Scatterv(s, r == root ? cnt : NULL, r == root ? dsp : NULL,
                       r == root ? MPI_INT : nul, a, N, MPI_INT, root, comm));
    PMPI_Scatterv(s, cnt, dsp, MPI_INT, b, N, MPI_INT, root, comm);
    SAME("MPI_Scatterv");
    T_MPI(MPI_Gather(s, 0, MPI_INT, a, 0, MPI_INT, root, comm));
    T_MPI(MPI_Scatter(s, 0, MPI_INT, a, 0, MPI_INT, root, comm));
    T_MPI(MPI_Gatherv(s, 0, MPI_INT, a, zc, zd, MPI_INT, root, comm));
    T_MPI(MPI_Scatterv(s, zc, zd, MPI_INT, a, 0, MPI_INT, root, comm));

    t_case("MPI_Allgather(v) in place and of nothing, on %s", cname);
    CLEAR();
    memcpy(a + N * r, s + N * r, sizeof(int) * N);
    T_MPI(MPI_Allgather(MPI_IN_PLACE, 0, nul, a, N, MPI_INT, comm));
    PMPI_Allgather(s + N * r, N, MPI_INT, b, N, MPI_INT, comm);
    SAME("MPI_Allgather in place");
    CLEAR();
    memcpy(a + N * r, s + N * r, sizeof(int) * N);
    T_MPI(MPI_Allgatherv(MPI_IN_PLACE, 0, nul, a, cnt, dsp, MPI_INT, comm));
    PMPI_Allgatherv(s + N * r, N, MPI_INT, b, cnt, dsp, MPI_INT, comm);
    SAME("MPI_Allgatherv in place");
    T_MPI(MPI_Allgather(s, 0, MPI_INT, a, 0, MPI_INT, comm));
    T_MPI(MPI_Allgatherv(s, 0, MPI_INT, a, zc, zd, MPI_INT, comm));

    t_case("MPI_Reduce_scatter(_block), MPI_Scan, MPI_Exscan: in place and "
           "of nothing, on %s",
           cname);
    T_MPI(MPI_Reduce_scatter(s, a, zc, MPI_INT, MPI_SUM, comm));
    T_MPI(MPI_Reduce_scatter_block(s, a, 0, MPI_INT, MPI_SUM, comm));
    CLEAR();
    memcpy(a, s, sizeof(int) * N * (size_t)p);
    T_MPI(
        MPI_Reduce_scatter_block(MPI_IN_PLACE, a, N, MPI_INT, MPI_SUM, comm));
    PMPI_Reduce_scatter_block(s, b, N, MPI_INT, MPI_SUM, comm);
    snprintf(w, sizeof(w), "MPI_Reduce_scatter_block in place on %s", cname);
    t_same(w, a, b, sizeof(int) * N);
    CLEAR();
    memcpy(a, s, sizeof(int) * N * (size_t)p);
    T_MPI(MPI_Reduce_scatter(MPI_IN_PLACE, a, cnt, MPI_INT, MPI_SUM, comm));
    PMPI_Reduce_scatter(s, b, cnt, MPI_INT, MPI_SUM, comm);
    snprintf(w, sizeof(w), "MPI_Reduce_scatter in place on %s", cname);
    t_same(w, a, b, sizeof(int) * N);
    T_MPI(MPI_Scan(s, a, 0, MPI_INT, MPI_SUM, comm));
    T_MPI(MPI_Exscan(s, a, 0, MPI_INT, MPI_SUM, comm));
    CLEAR();
    memcpy(a, s, sizeof(int) * N);
    T_MPI(MPI_Scan(MPI_IN_PLACE, a, N, MPI_INT, MPI_SUM, comm));
    PMPI_Scan(s, b, N, MPI_INT, MPI_SUM, comm);
    snprintf(w, sizeof(w), "MPI_Scan in place on %s", cname);
    t_same(w, a, b, sizeof(int) * N);
    memcpy(a, s, sizeof(int) * N);
    T_MPI(MPI_Exscan(MPI_IN_PLACE, a, N, MPI_INT, MPI_SUM, comm));
    PMPI_Exscan(s, b, N, MPI_INT, MPI_SUM, comm);
    if (r > 0) { /* rank 0's result is undefined */
        snprintf(w, sizeof(w), "MPI_Exscan in place on %s", cname);
        t_same(w, a, b, sizeof(int) * N);
    }
#undef SAME
#undef CLEAR
    MPI_Type_free(&z);
    free(s);
    free(a);
    free(b);
    free(zc);
    free(zd);
    free(one);
    free(cnt);
    free(dsp);
    free(zt);
    free(it);
}

/* The offloaded collectives with arguments that carry nothing, and in
 * place with the send arguments MPI ignores. */
static void offloaded(MPI_Comm comm, const char *cname)
{
    MPI_Datatype z = zero_type();
    size_t       block = 4096;
    int          r, p;
    char        *s, *a, *ref, w[160];
    MPI_Request  q[4];

    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    s = t_xmalloc(block * (size_t)p);
    a = t_xmalloc(block * (size_t)p);
    ref = t_xmalloc(block * (size_t)p);

    t_case("MPI_Ialltoall and MPI_Ibcast of nothing, on %s", cname);
    memset(a, 0x11, block);
    t_ialltoall(s, 0, MPI_INT, a, 0, MPI_INT, comm, &q[0], 1);
    t_ialltoall(s, 7, z, a, 7, z, comm, &q[1], 1);
    t_ibcast(a, 0, MPI_INT, 0, comm, &q[2], 1);
    t_ibcast(a, 9, z, p - 1, comm, &q[3], 1);
    T_MPI(MPI_Waitall(4, q, t_statuses_ignore));
    t_all("collectives of nothing", a, block, 0x11);

    t_case("MPI_Ialltoall in place, send type MPI_DATATYPE_NULL, on %s",
           cname);
    t_a2a_fill(s, block, p, t_seed(), r);
    memcpy(a, s, block * (size_t)p);
    t_ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, (int)block, MPI_BYTE,
                comm, &q[0], 1);
    T_MPI(MPI_Wait(&q[0], MPI_STATUS_IGNORE));
    PMPI_Alltoall(s, (int)block, MPI_BYTE, ref, (int)block, MPI_BYTE, comm);
    snprintf(w, sizeof(w), "MPI_Ialltoall in place on %s", cname);
    t_same(w, a, ref, block * (size_t)p);
    MPI_Type_free(&z);
    free(s);
    free(a);
    free(ref);
}

/* Point-to-point calls and probes with nothing to carry or nobody to
 * carry it to. */
static void point_to_point(void)
{
    MPI_Datatype z = zero_type();
    int r = t.rank, p = t.size, right = (r + 1) % p, left = (r + p - 1) % p;
    int x = 7, y = 0, flag = 0, count = -1;
    MPI_Request q;
    MPI_Message m;
    MPI_Status  st;

    t_case("send and receive to and from MPI_PROC_NULL");
    T_MPI(MPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
    T_MPI(MPI_Ssend(&x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
    T_MPI(MPI_Rsend(&x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
    T_MPI(MPI_Recv(&y, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st));
    if (st.MPI_SOURCE != MPI_PROC_NULL) {
        t_fail("MPI_Recv from MPI_PROC_NULL: source %d", st.MPI_SOURCE);
    }
    T_MPI(MPI_Probe(MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st));
    T_MPI(MPI_Mprobe(MPI_PROC_NULL, 1, MPI_COMM_WORLD, &m, &st));
    T_MPI(MPI_Mrecv(&y, 1, MPI_INT, &m, &st));
    T_MPI(MPI_Sendrecv(&x, 1, MPI_INT, MPI_PROC_NULL, 2, &y, 1, MPI_INT,
                       MPI_PROC_NULL, 2, MPI_COMM_WORLD, &st));

    t_case("empty messages in a ring: count 0 and a zero-size type");
    if (p < 2) {
        MPI_Type_free(&z);
        return; /* a synchronous send to oneself would never match */
    }
    T_MPI(MPI_Sendrecv(&x, 0, MPI_INT, right, 3, &y, 0, MPI_INT, left, 3,
                       MPI_COMM_WORLD, &st));
    T_MPI(MPI_Sendrecv(&x, 5, z, right, 4, &y, 5, z, left, 4, MPI_COMM_WORLD,
                       &st));
    MPI_Get_count(&st, z, &count);
    if (count != 0 && count != MPI_UNDEFINED) {
        t_fail("a zero-size message counted %d elements", count);
    }
    if (r % 2 == 0) {
        T_MPI(MPI_Send(&x, 0, MPI_INT, right, 5, MPI_COMM_WORLD));
        T_MPI(MPI_Ssend(&x, 3, z, right, 6, MPI_COMM_WORLD));
        T_MPI(MPI_Recv(&y, 0, MPI_INT, left, 5, MPI_COMM_WORLD, &st));
        T_MPI(MPI_Mprobe(left, 6, MPI_COMM_WORLD, &m, &st));
        T_MPI(MPI_Mrecv(&y, 3, z, &m, &st));
    } else {
        T_MPI(MPI_Probe(left, 5, MPI_COMM_WORLD, &st));
        T_MPI(MPI_Recv(&y, 0, MPI_INT, left, 5, MPI_COMM_WORLD, &st));
        T_MPI(MPI_Recv(&y, 3, z, left, 6, MPI_COMM_WORLD, &st));
        T_MPI(MPI_Send(&x, 0, MPI_INT, right, 5, MPI_COMM_WORLD));
        T_MPI(MPI_Ssend(&x, 3, z, right, 6, MPI_COMM_WORLD));
    }

    t_case("completion calls on no request, null requests, empty arrays");
    q = MPI_REQUEST_NULL;
    T_MPI(MPI_Wait(&q, &st));
    T_MPI(MPI_Test(&q, &flag, &st));
    if (!flag) {
        t_fail("MPI_Test on MPI_REQUEST_NULL: flag 0");
    }
    T_MPI(MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st));
    T_MPI(MPI_Waitall(0, NULL, t_statuses_ignore));
    T_MPI(MPI_Testall(0, NULL, &flag, t_statuses_ignore));
    {
        MPI_Request nulls[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL,
                                MPI_REQUEST_NULL};
        int         idx = 0, out = 0, ind[3];

        T_MPI(MPI_Waitany(3, nulls, &idx, &st));
        if (idx != MPI_UNDEFINED) {
            t_fail("MPI_Waitany on null requests: index %d", idx);
        }
        T_MPI(MPI_Testany(3, nulls, &idx, &flag, &st));
        if (idx != MPI_UNDEFINED || !flag) {
            t_fail("MPI_Testany on null requests: index %d flag %d", idx,
                   flag);
        }
        T_MPI(MPI_Waitsome(3, nulls, &out, ind, t_statuses_ignore));
        if (out != MPI_UNDEFINED) {
            t_fail("MPI_Waitsome on null requests: outcount %d", out);
        }
        T_MPI(MPI_Testsome(3, nulls, &out, ind, t_statuses_ignore));
        if (out != MPI_UNDEFINED) {
            t_fail("MPI_Testsome on null requests: outcount %d", out);
        }
        T_MPI(MPI_Waitany(0, NULL, &idx, &st));
        T_MPI(MPI_Waitsome(0, NULL, &out, NULL, t_statuses_ignore));
    }
    MPI_Type_free(&z);
}

int main(int argc, char **argv)
{
    MPI_Comm half;

    t_init(&argc, &argv, "t_odd");
    /* An offloaded collective pending across everything, as in an
     * application that overlaps. */
    {
        size_t      block = 64 * 1024;
        char       *s = t_xmalloc(block * (size_t)t.size);
        char       *r = t_xmalloc(block * (size_t)t.size);
        uint32_t    seed = t_seed();
        MPI_Request q;

        t_case("an Ialltoall pending across the odd calls");
        t_a2a_fill(s, block, t.size, seed, t.rank);
        t_ialltoall(s, (int)block, MPI_BYTE, r, (int)block, MPI_BYTE,
                    MPI_COMM_WORLD, &q, 1);
        blocking_collectives(MPI_COMM_WORLD, "MPI_COMM_WORLD");
        point_to_point();
        offloaded(MPI_COMM_WORLD, "MPI_COMM_WORLD");
        t_case("the pending Ialltoall");
        T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
        t_a2a_check("pending Ialltoall", r, block, t.size, seed, t.rank);
        free(s);
        free(r);
    }
    MPI_Comm_split(MPI_COMM_WORLD, t.rank % 2, -t.rank, &half);
    blocking_collectives(half, "a split communicator");
    offloaded(half, "a split communicator");
    MPI_Comm_free(&half);
    return t_finish();
}
