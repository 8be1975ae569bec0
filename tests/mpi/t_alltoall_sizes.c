/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI_Ialltoall with blocks of 1 byte to 4 MiB in MPI_BYTE, MPI_INT and
 * MPI_DOUBLE, each completed with MPI_Wait and checked byte for byte. */
#include "tcommon.h"

#define KI 1024
#define MI (1024 * 1024)

typedef struct {
    MPI_Datatype type;
    const char  *name;
    int          count;
} a2a_case_t;

static int ncases;
static a2a_case_t cases[128];

static void add(MPI_Datatype type, const char *name, int count)
{
    cases[ncases].type = type;
    cases[ncases].name = name;
    cases[ncases].count = count;
    ncases++;
}

static void make_cases(void)
{
    static const int odd[] = {3, 1000, 65537, 1000003};
    int b, i;

    /* MPI_BYTE: every power of two from 1 byte to 4 MiB, odd sizes. */
    for (b = 1; b <= 4 * MI; b *= 2) {
        add(MPI_BYTE, "MPI_BYTE", b);
    }
    for (i = 0; i < 4; i++) {
        add(MPI_BYTE, "MPI_BYTE", odd[i]);
    }
    /* MPI_INT: 4 bytes to 2 MiB, and odd element counts. */
    for (b = 4; b <= 2 * MI; b *= 4) {
        add(MPI_INT, "MPI_INT", b / 4);
    }
    add(MPI_INT, "MPI_INT", 3);
    add(MPI_INT, "MPI_INT", 250);
    add(MPI_INT, "MPI_INT", 16385);
    add(MPI_INT, "MPI_INT", 250001);
    /* MPI_DOUBLE: 8 bytes to 4 MiB, and odd element counts. */
    for (b = 8; b <= 4 * MI; b *= 8) {
        add(MPI_DOUBLE, "MPI_DOUBLE", b / 8);
    }
    add(MPI_DOUBLE, "MPI_DOUBLE", 4 * MI / 8);
    add(MPI_DOUBLE, "MPI_DOUBLE", 1);
    add(MPI_DOUBLE, "MPI_DOUBLE", 125);
    add(MPI_DOUBLE, "MPI_DOUBLE", 8193);
    add(MPI_DOUBLE, "MPI_DOUBLE", 125001);
    (void)KI;
}

static void run_case(int idx, const a2a_case_t *c)
{
    int tsize, n = t.size, me = t.rank;
    size_t block, total;
    uint32_t seed = t_seed();
    void *sbuf, *rbuf, *scopy, *ref;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Status st;
    int during = idx % 2;  /* reference while the offloaded op runs */

    MPI_Type_size(c->type, &tsize);
    block = (size_t)c->count * (size_t)tsize;
    total = block * (size_t)n;
    t_case("case %d: %d x %s (%zu-byte blocks), reference %s", idx,
           c->count, c->name, block, during ? "during" : "after");

    sbuf = t_galloc(total);
    rbuf = t_galloc(total);
    scopy = t_xmalloc(total);
    ref = t_xmalloc(total);
    t_a2a_fill(sbuf, block, n, seed, me);
    memcpy(scopy, sbuf, total);
    memset(ref, T_POISON, total);

    t_ialltoall(sbuf, c->count, c->type, rbuf, c->count, c->type,
                MPI_COMM_WORLD, &req, 1);
    if (during) {
        T_MPI(PMPI_Alltoall(scopy, c->count, c->type, ref, c->count,
                            c->type, MPI_COMM_WORLD));
    }
    if (idx % 4 < 2) {
        T_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    } else {
        T_MPI(MPI_Wait(&req, &st));
    }
    if (req != MPI_REQUEST_NULL) {
        t_fail("MPI_Wait did not set the request to MPI_REQUEST_NULL");
    }
    if (!during) {
        T_MPI(PMPI_Alltoall(scopy, c->count, c->type, ref, c->count,
                            c->type, MPI_COMM_WORLD));
    }

    t_a2a_check("receive buffer", rbuf, block, n, seed, me);
    t_same("receive buffer vs PMPI_Alltoall", rbuf, ref, total);
    t_gcheck("receive buffer", rbuf, total);
    t_match("send buffer unchanged", sbuf, scopy, total);
    t_gcheck("send buffer", sbuf, total);

    t_gfree(sbuf);
    t_gfree(rbuf);
    free(scopy);
    free(ref);
}

int main(int argc, char **argv)
{
    int i;

    t_init(&argc, &argv, "t_alltoall_sizes");
    make_cases();
    for (i = 0; i < ncases; i++) {
        run_case(i, &cases[i]);
    }
    return t_finish();
}
