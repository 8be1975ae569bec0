/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI_Ibcast from every root with 1 byte to 4 MiB in MPI_BYTE, MPI_INT
 * and MPI_DOUBLE, each completed with MPI_Wait and checked byte for byte. */
#include "tcommon.h"

static void run_case(int idx, const t_size_case_t *c, int root)
{
    int         tsize, during = (idx + root) % 2;
    size_t      bytes;
    uint32_t    seed = t_seed();
    void       *buf, *ref;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Status  st;

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
    t_size_cases(4 * 1024 * 1024, 16, 16);
    for (i = 0; i < t_ncases; i++) {
        for (root = 0; root < t.size; root++) {
            run_case(i, &t_cases[i], root);
        }
    }
    return t_finish();
}
