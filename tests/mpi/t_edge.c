/* SPDX-License-Identifier: BSD-3-Clause */
/* Edge cases: count 0, MPI_IN_PLACE, vector (non-contiguous) and derived
 * contiguous datatypes, shifted lower bounds, intercommunicators. */
#include "tcommon.h"

#define ZBUF 1024 /* bytes around a count-0 call that must stay unchanged */

/* Post op o, wait for it, check it, free it. */
static void run_op(t_op_t *o)
{
    t_op_post(o, NULL);
    T_MPI(MPI_Wait(&o->req, MPI_STATUS_IGNORE));
    if (o->req != MPI_REQUEST_NULL) {
        t_fail("MPI_Wait did not set the request to MPI_REQUEST_NULL");
    }
    t_op_check(o);
    t_op_free(o);
}

/* Count 0 falls back to stock MPI and touches no data. */
static void count_zero(void)
{
    uint8_t    *s = t_galloc(ZBUF), *r = t_galloc(ZBUF);
    MPI_Request q;
    uint32_t    seed = t_seed();
    int         root;

    t_case("Ialltoall count 0 (MPI_INT)");
    t_pat_fill(s, ZBUF, seed, t.rank, 0);
    t_ialltoall(s, 0, MPI_INT, r, 0, MPI_INT, MPI_COMM_WORLD, &q, 1);
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    t_all("receive buffer untouched", r, ZBUF, T_POISON);
    t_pat_check("send buffer untouched", s, ZBUF, seed, t.rank, 0);

    t_case("Ialltoall count 0 (MPI_BYTE), MPI_Waitall");
    t_ialltoall(s, 0, MPI_BYTE, r, 0, MPI_BYTE, MPI_COMM_WORLD, &q, 1);
    T_MPI(MPI_Waitall(1, &q, t_statuses_ignore));
    t_all("receive buffer untouched", r, ZBUF, T_POISON);

    t_case("Ialltoall count 0 with MPI_IN_PLACE");
    t_ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, 0, MPI_DOUBLE,
                MPI_COMM_WORLD, &q, 1);
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    t_all("buffer untouched", r, ZBUF, T_POISON);

    for (root = 0; root < t.size; root++) {
        t_case("Ibcast count 0 (MPI_DOUBLE), root %d", root);
        memset(r, T_POISON, ZBUF);
        if (t.rank == root) {
            t_pat_fill(r, ZBUF, seed, root, 1);
        }
        t_ibcast(r, 0, MPI_DOUBLE, root, MPI_COMM_WORLD, &q, 1);
        T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
        if (t.rank == root) {
            t_pat_check("root buffer untouched", r, ZBUF, seed, root, 1);
        } else {
            t_all("buffer untouched", r, ZBUF, T_POISON);
        }
    }
    t_gcheck("count 0 send buffer", s, ZBUF);
    t_gcheck("count 0 receive buffer", r, ZBUF);
    t_gfree(s);
    t_gfree(r);
}

/* MPI_IN_PLACE Ialltoall is offloaded; the result must equal stock
 * PMPI_Alltoall in place on a copy of the same buffer. */
static void in_place(void)
{
    static const struct {
        MPI_Datatype type;
        const char  *name;
        int          count;
    } c[] = {
        {MPI_BYTE, "MPI_BYTE", 1},
        {MPI_BYTE, "MPI_BYTE", 65537},
        {MPI_INT, "MPI_INT", 1024},
        {MPI_DOUBLE, "MPI_DOUBLE", 131072},
    };
    MPI_Comm    dup;
    MPI_Request r[2];
    t_op_t      o, p[2];
    unsigned    i;

    for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        t_case("MPI_IN_PLACE Ialltoall %d x %s", c[i].count, c[i].name);
        t_op_init(&o, T_A2A, MPI_COMM_WORLD, c[i].type, c[i].count, NULL, 0, 1,
                  "in-place Ialltoall %d x %s", c[i].count, c[i].name);
        run_op(&o);
    }
    t_case("two MPI_IN_PLACE Ialltoall outstanding (world and dup)");
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    t_op_init(&p[0], T_A2A, MPI_COMM_WORLD, MPI_INT, 3000, NULL, 0, 1,
              "in-place Ialltoall 3000 x MPI_INT on world");
    t_op_init(&p[1], T_A2A, dup, MPI_BYTE, 777, NULL, 0, 1,
              "in-place Ialltoall 777 x MPI_BYTE on dup");
    t_op_post(&p[0], &r[0]);
    t_op_post(&p[1], &r[1]);
    T_MPI(MPI_Waitall(2, r, t_statuses_ignore));
    for (i = 0; i < 2; i++) {
        t_op_check(&p[i]);
        t_op_free(&p[i]);
    }
    MPI_Comm_free(&dup);
}

/* A vector type with stride > blocklength is not contiguous: falls back,
 * and the gaps are neither written (receive) nor sent. */
static void vector(void)
{
    t_vec_t v1, v2;
    t_op_t  o;
    int     root;

    /* 25 elements of 4 blocks of 2 ints every 3 ints. */
    t_vec_make(&v1, 25, 4, 2, 3, MPI_INT);
    /* 1 element of 1000 single bytes every 2 bytes. */
    t_vec_make(&v2, 1, 1000, 1, 2, MPI_BYTE);

    t_case("Ialltoall vector(4, 2, 3, MPI_INT) x 25");
    t_op_init(&o, T_A2A, MPI_COMM_WORLD, MPI_DATATYPE_NULL, 0, &v1, 0, 0,
              "Ialltoall vector(4, 2, 3, MPI_INT) x 25");
    run_op(&o);
    t_case("Ialltoall vector(1000, 1, 2, MPI_BYTE) x 1");
    t_op_init(&o, T_A2A, MPI_COMM_WORLD, MPI_DATATYPE_NULL, 0, &v2, 0, 0,
              "Ialltoall vector(1000, 1, 2, MPI_BYTE) x 1");
    run_op(&o);
    for (root = 0; root < t.size; root++) {
        t_case("Ibcast vector(4, 2, 3, MPI_INT) x 25, root %d", root);
        t_op_init(&o, T_BCAST, MPI_COMM_WORLD, MPI_DATATYPE_NULL, 0, &v1, root,
                  0, "Ibcast vector(4, 2, 3, MPI_INT) x 25 root %d", root);
        run_op(&o);
    }
    t_case("Ibcast vector(1000, 1, 2, MPI_BYTE) x 1, root %d", t.size - 1);
    t_op_init(&o, T_BCAST, MPI_COMM_WORLD, MPI_DATATYPE_NULL, 0, &v2,
              t.size - 1, 0, "Ibcast vector(1000, 1, 2, MPI_BYTE) root %d",
              t.size - 1);
    run_op(&o);
    MPI_Type_free(&v1.type);
    MPI_Type_free(&v2.type);
}

/* MPI_Type_contiguous types are contiguous: offloaded. */
static void contiguous_types(void)
{
    MPI_Datatype c3i, c5b, nested, c2i;
    MPI_Request  q;
    t_op_t       o;
    uint8_t     *s, *r, *ref;
    uint32_t     seed = t_seed();
    size_t       block = 16, len = block * (size_t)t.size;
    int          root;

    MPI_Type_contiguous(3, MPI_INT, &c3i);
    MPI_Type_contiguous(5, MPI_BYTE, &c5b);
    MPI_Type_contiguous(4, c3i, &nested);
    MPI_Type_contiguous(2, MPI_INT, &c2i);
    MPI_Type_commit(&c3i);
    MPI_Type_commit(&c5b);
    MPI_Type_commit(&nested);
    MPI_Type_commit(&c2i);

    t_case("Ialltoall contiguous(3, MPI_INT) x 1000");
    t_op_init(&o, T_A2A, MPI_COMM_WORLD, c3i, 1000, NULL, 0, 0,
              "Ialltoall contiguous(3, MPI_INT) x 1000");
    run_op(&o);
    t_case("Ialltoall contiguous(5, MPI_BYTE) x 1");
    t_op_init(&o, T_A2A, MPI_COMM_WORLD, c5b, 1, NULL, 0, 0,
              "Ialltoall contiguous(5, MPI_BYTE) x 1");
    run_op(&o);
    t_case("Ialltoall contiguous(4, contiguous(3, MPI_INT)) x 333");
    t_op_init(&o, T_A2A, MPI_COMM_WORLD, nested, 333, NULL, 0, 0,
              "Ialltoall contiguous(4, contiguous(3, MPI_INT)) x 333");
    run_op(&o);
    t_case("MPI_IN_PLACE Ialltoall contiguous(5, MPI_BYTE) x 201");
    t_op_init(&o, T_A2A, MPI_COMM_WORLD, c5b, 201, NULL, 0, 1,
              "in-place Ialltoall contiguous(5, MPI_BYTE) x 201");
    run_op(&o);
    for (root = 0; root < t.size; root++) {
        t_case("Ibcast contiguous(3, MPI_INT) x 5000, root %d", root);
        t_op_init(&o, T_BCAST, MPI_COMM_WORLD, c3i, 5000, NULL, root, 0,
                  "Ibcast contiguous(3, MPI_INT) x 5000 root %d", root);
        run_op(&o);
    }
    t_case("Ibcast contiguous(5, MPI_BYTE) x 7, root 0");
    t_op_init(&o, T_BCAST, MPI_COMM_WORLD, c5b, 7, NULL, 0, 0,
              "Ibcast contiguous(5, MPI_BYTE) x 7 root 0");
    run_op(&o);

    /* Different types with the same signature: 2 x contiguous(2, int)
     * sent, 4 x MPI_INT received; both contiguous, same bytes. */
    t_case("Ialltoall 2 x contiguous(2, MPI_INT) to 4 x MPI_INT");
    s = t_galloc(len);
    r = t_galloc(len);
    ref = t_xmalloc(len);
    t_a2a_fill(s, block, t.size, seed, t.rank);
    memset(ref, T_POISON, len);
    T_MPI(PMPI_Alltoall(s, 2, c2i, ref, 4, MPI_INT, MPI_COMM_WORLD));
    t_ialltoall(s, 2, c2i, r, 4, MPI_INT, MPI_COMM_WORLD, &q, 1);
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    t_a2a_check("mixed types", r, block, t.size, seed, t.rank);
    t_same("mixed types vs PMPI", r, ref, len);
    t_gcheck("mixed types receive buffer", r, len);
    t_gfree(s);
    t_gfree(r);
    free(ref);

    MPI_Type_free(&c3i);
    MPI_Type_free(&c5b);
    MPI_Type_free(&nested);
    MPI_Type_free(&c2i);
}

/* A contiguous type whose data starts LB bytes after the buffer address
 * (one int at displacement LB): element e is at buf + LB + 4 e. */
#define LB 8

static void shifted_lb(void)
{
    MPI_Datatype t1;
    MPI_Request  q;
    int          disp = LB / (int)sizeof(int), count = 2500, root, n = t.size;
    size_t       span = (size_t)count * sizeof(int), len = span * (size_t)n;
    uint8_t     *s, *r, *ref;
    uint32_t     seed;

    MPI_Type_create_indexed_block(1, 1, &disp, MPI_INT, &t1);
    MPI_Type_commit(&t1);

    t_case("Ialltoall indexed_block(1, 1, {%d}, MPI_INT) x %d", disp, count);
    seed = t_seed();
    s = t_galloc(len + LB);
    r = t_galloc(len + LB);
    ref = t_xmalloc(len + LB);
    t_a2a_fill(s + LB, span, n, seed, t.rank);
    memset(ref, T_POISON, len + LB);
    T_MPI(PMPI_Alltoall(s, count, t1, ref, count, t1, MPI_COMM_WORLD));
    t_ialltoall(s, count, t1, r, count, t1, MPI_COMM_WORLD, &q, 1);
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    t_all("bytes before the lower bound untouched", r, LB, T_POISON);
    t_a2a_check("shifted lower bound", r + LB, span, n, seed, t.rank);
    t_same("shifted lower bound vs PMPI", r, ref, len + LB);
    t_gcheck("shifted lower bound receive buffer", r, len + LB);
    t_gfree(s);
    t_gfree(r);
    free(ref);

    for (root = 0; root < n; root++) {
        t_case("Ibcast indexed_block(1, 1, {%d}, MPI_INT) x %d, root %d", disp,
               count, root);
        seed = t_seed();
        r = t_galloc(span + LB);
        ref = t_xmalloc(span + LB);
        if (t.rank == root) {
            t_pat_fill(r + LB, span, seed, root, 0);
        }
        memcpy(ref, r, span + LB);
        T_MPI(PMPI_Bcast(ref, count, t1, root, MPI_COMM_WORLD));
        t_ibcast(r, count, t1, root, MPI_COMM_WORLD, &q, 1);
        T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
        t_all("bytes before the lower bound untouched", r, LB, T_POISON);
        t_pat_check("shifted lower bound", r + LB, span, seed, root, 0);
        t_same("shifted lower bound vs PMPI", r, ref, span + LB);
        t_gcheck("shifted lower bound buffer", r, span + LB);
        t_gfree(r);
        free(ref);
    }
    MPI_Type_free(&t1);
}

/* Intercommunicators fall back. Groups: even and odd world ranks; remote
 * rank i of the even group is world rank 2 i + 1, of the odd one 2 i. */
static void intercomm(void)
{
    MPI_Comm    local, inter;
    MPI_Request q;
    int         odd = t.rank % 2, rsize, lrank, i, count = 3000, root;
    size_t      span = (size_t)count, len;
    uint8_t    *s, *r, *ref;
    uint32_t    seed = t_seed();

    t_case("intercommunicator setup");
    MPI_Comm_split(MPI_COMM_WORLD, odd, t.rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, odd ? 0 : 1, 99, &inter);
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm_rank(local, &lrank);
    len = span * (size_t)rsize;

    t_case("Ialltoall on an intercommunicator");
    s = t_galloc(len);
    r = t_galloc(len);
    ref = t_xmalloc(len);
    for (i = 0; i < rsize; i++) {
        t_pat_fill(s + (size_t)i * span, span, seed, t.rank, 2 * i + 1 - odd);
    }
    memset(ref, T_POISON, len);
    T_MPI(PMPI_Alltoall(s, count, MPI_BYTE, ref, count, MPI_BYTE, inter));
    t_ialltoall(s, count, MPI_BYTE, r, count, MPI_BYTE, inter, &q, 1);
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    for (i = 0; i < rsize; i++) {
        char w[64];

        snprintf(w, sizeof(w), "block from world rank %d", 2 * i + 1 - odd);
        t_pat_check(w, r + (size_t)i * span, span, seed, 2 * i + 1 - odd,
                    t.rank);
    }
    t_same("intercommunicator Ialltoall vs PMPI", r, ref, len);
    t_gcheck("intercommunicator receive buffer", r, len);
    t_gfree(s);
    t_gfree(r);
    free(ref);

    /* World rank 0 (rank 0 of the even group) broadcasts to the odd
     * group. */
    t_case("Ibcast on an intercommunicator, root world rank 0");
    seed = t_seed();
    r = t_galloc(span);
    ref = t_xmalloc(span);
    if (t.rank == 0) {
        t_pat_fill(r, span, seed, 0, 0);
    }
    root = odd ? 0 : (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL);
    memcpy(ref, r, span);
    T_MPI(PMPI_Bcast(ref, count, MPI_BYTE, root, inter));
    t_ibcast(r, count, MPI_BYTE, root, inter, &q, 1);
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    if (odd || t.rank == 0) {
        t_pat_check("intercommunicator Ibcast", r, span, seed, 0, 0);
    } else {
        t_all("intercommunicator Ibcast: buffer untouched", r, span, T_POISON);
    }
    t_same("intercommunicator Ibcast vs PMPI", r, ref, span);
    t_gcheck("intercommunicator Ibcast buffer", r, span);
    t_gfree(r);
    free(ref);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "t_edge");
    count_zero();
    in_place();
    vector();
    contiguous_types();
    shifted_lb();
    if (t.size >= 2) {
        intercomm();
    }
    return t_finish();
}
