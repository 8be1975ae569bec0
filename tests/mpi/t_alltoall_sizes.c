/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI_Ialltoall with blocks of 1 byte to 4 MiB in MPI_BYTE, MPI_INT and
 * MPI_DOUBLE, each completed with MPI_Wait and checked byte for byte. */
#include "tcommon.h"

static void run_case(int idx, const t_size_case_t *c)
{
    int         tsize, n = t.size, me = t.rank;
    size_t      block, total;
    uint32_t    seed = t_seed();
    void       *sbuf, *rbuf, *scopy, *ref;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Status  st;
    int         during = idx % 2; /* reference while the offloaded op runs */

    MPI_Type_size(c->type, &tsize);
    block = (size_t)c->count * (size_t)tsize;
    total = block * (size_t)n;
    t_case("case %d: %d x %s (%zu-byte blocks), reference %s", idx, c->count,
           c->name, block, during ? "during" : "after");

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
        T_MPI(PMPI_Alltoall(scopy, c->count, c->type, ref, c->count, c->type,
                            MPI_COMM_WORLD));
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
        T_MPI(PMPI_Alltoall(scopy, c->count, c->type, ref, c->count, c->type,
                            MPI_COMM_WORLD));
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
    t_size_cases(2 * 1024 * 1024, 4, 8);
    for (i = 0; i < t_ncases; i++) {
        run_case(i, &t_cases[i]);
    }
    return t_finish();
}
