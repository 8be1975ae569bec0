/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI_Ibcast from every root with 1 byte to 4 MiB in MPI_BYTE, MPI_INT
 * and MPI_DOUBLE, each completed with MPI_Wait and checked byte for byte. */
#include "tcommon.h"

#define MI (1024 * 1024)

typedef struct {
    MPI_Datatype type;
    const char  *name;
    int          count;
} bc_case_t;

static int ncases;
static bc_case_t cases[128];

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
    /* MPI_INT: 4 bytes to 4 MiB, and odd element counts. */
    for (b = 4; b <= 4 * MI; b *= 16) {
        add(MPI_INT, "MPI_INT", b / 4);
    }
    add(MPI_INT, "MPI_INT", 3);
    add(MPI_INT, "MPI_INT", 250);
    add(MPI_INT, "MPI_INT", 16385);
    add(MPI_INT, "MPI_INT", 250001);
    /* MPI_DOUBLE: 8 bytes to 4 MiB, and odd element counts. */
    for (b = 8; b <= 4 * MI; b *= 16) {
        add(MPI_DOUBLE, "MPI_DOUBLE", b / 8);
    }
    add(MPI_DOUBLE, "MPI_DOUBLE", 4 * MI / 8);
    add(MPI_DOUBLE, "MPI_DOUBLE", 1);
    add(MPI_DOUBLE, "MPI_DOUBLE", 125);
    add(MPI_DOUBLE, "MPI_DOUBLE", 8193);
    add(MPI_DOUBLE, "MPI_DOUBLE", 125001);
}

static void run_case(int idx, const bc_case_t *c, int root)
{
    int tsize, during = (idx + root) % 2;
    size_t bytes;
    uint32_t seed = t_seed();
    void *buf, *ref;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Status st;

    MPI_Type_size(c->type, &tsize);
    bytes = (size_t)c->count * (size_t)tsize;
    t_case("case %d: %d x %s (%zu bytes), root %d, reference %s", idx,
           c->count, c->name, bytes, root, during ? "during" : "after");

    buf = t_galloc(bytes);
    ref = t_xmalloc(bytes);
    if (t.rank == root) {
        t_pat_fill(buf, bytes, seed, root, 0);
    }
    memcpy(ref, buf, bytes);

    t_ibcast(buf, c->count, c->type, root, MPI_COMM_WORLD, &req, 1);
    if (during) {
        T_MPI(PMPI_Bcast(ref, c->count, c->type, root, MPI_COMM_WORLD));
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
        T_MPI(PMPI_Bcast(ref, c->count, c->type, root, MPI_COMM_WORLD));
    }

    t_pat_check(t.rank == root ? "root buffer unchanged" : "buffer", buf,
                bytes, seed, root, 0);
    t_same("buffer vs PMPI_Bcast", buf, ref, bytes);
    t_gcheck("buffer", buf, bytes);
    t_gfree(buf);
    free(ref);
}

int main(int argc, char **argv)
{
    int i, root;

    t_init(&argc, &argv, "t_bcast_roots");
    make_cases();
    for (i = 0; i < ncases; i++) {
        for (root = 0; root < t.size; root++) {
            run_case(i, &cases[i], root);
        }
    }
    return t_finish();
}
