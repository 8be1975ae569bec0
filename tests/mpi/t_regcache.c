/* SPDX-License-Identifier: BSD-3-Clause */
/* The same buffers used by 100 MPI_Ialltoall and 100 MPI_Ibcast calls with
 * new contents each time: every result must be the new data, and the
 * registration cache must register each buffer once and hit afterwards. */
#include "tcommon.h"

#define KI     1024
#define NCALLS 100
#define BLOCK  (64 * KI)  /* alltoall bytes per rank pair */
#define BCAST  (256 * KI) /* broadcast message */

/* NCALLS Ialltoall from sbuf into rbuf with fresh contents each time;
 * the first and the last are also compared with PMPI_Alltoall. */
static void alltoall_loop(char *sbuf, char *rbuf, char *ref)
{
    size_t len = (size_t)BLOCK * (size_t)t.size;
    int    i, j;

    for (i = 0; i < NCALLS; i++) {
        uint32_t    seed = t_seed();
        MPI_Request q = MPI_REQUEST_NULL;
        int         with_ref = (i == 0 || i == NCALLS - 1);

        t_case("Ialltoall %d of %d, %d-byte blocks, same buffers", i + 1,
               NCALLS, BLOCK);
        t_a2a_fill(sbuf, BLOCK, t.size, seed, t.rank);
        memset(rbuf, T_POISON, len);
        if (with_ref) {
            /* PMPI: stock MPI, never a lookup in the shim's cache. */
            memset(ref, T_POISON, len);
            T_MPI(PMPI_Alltoall(sbuf, BLOCK, MPI_BYTE, ref, BLOCK, MPI_BYTE,
                                MPI_COMM_WORLD));
        }
        t_ialltoall(sbuf, BLOCK, MPI_BYTE, rbuf, BLOCK, MPI_BYTE,
                    MPI_COMM_WORLD, &q, 1);
        T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
        t_a2a_check("receive buffer", rbuf, BLOCK, t.size, seed, t.rank);
        for (j = 0; j < t.size; j++) {
            t_pat_check("send buffer unchanged", sbuf + (size_t)j * BLOCK,
                        BLOCK, seed, t.rank, j);
        }
        if (with_ref) {
            t_same("receive buffer vs PMPI_Alltoall", rbuf, ref, len);
        }
    }
}

/* NCALLS Ibcast in buf, the root rotating, fresh contents each time; the
 * first and the last are also compared with PMPI_Bcast. */
static void bcast_loop(char *buf, char *ref)
{
    int i;

    for (i = 0; i < NCALLS; i++) {
        uint32_t    seed = t_seed();
        MPI_Request q = MPI_REQUEST_NULL;
        int         root = i % t.size;
        int         with_ref = (i == 0 || i == NCALLS - 1);

        t_case("Ibcast %d of %d, %d bytes from root %d, same buffer", i + 1,
               NCALLS, BCAST, root);
        if (t.rank == root) {
            t_pat_fill(buf, BCAST, seed, root, 0);
        } else {
            memset(buf, T_POISON, BCAST);
        }
        if (with_ref) {
            memcpy(ref, buf, BCAST);
            T_MPI(PMPI_Bcast(ref, BCAST, MPI_BYTE, root, MPI_COMM_WORLD));
        }
        t_ibcast(buf, BCAST, MPI_BYTE, root, MPI_COMM_WORLD, &q, 1);
        T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
        t_pat_check("broadcast buffer", buf, BCAST, seed, root, 0);
        if (with_ref) {
            t_same("broadcast buffer vs PMPI_Bcast", buf, ref, BCAST);
        }
    }
}

int main(int argc, char **argv)
{
    char              *sbuf, *rbuf, *bbuf, *ref;
    size_t             len;
    unsigned long long p;
    int                rc;

    t_init(&argc, &argv, "t_regcache");
    len = (size_t)BLOCK * (size_t)t.size;
    sbuf = t_palloc(len);
    rbuf = t_palloc(len);
    bbuf = t_palloc(BCAST);
    /* Never registered: PMPI calls only. */
    ref = t_palloc(len > BCAST ? len : BCAST);

    alltoall_loop(sbuf, rbuf, ref);
    bcast_loop(bbuf, ref);

    /*
     * Per rank: Ialltoall looks up its send range, then its receive range
     * (BLOCK * P bytes each): a miss for each the first time, hits in the
     * other NCALLS - 1 calls. Ibcast: one miss, then NCALLS - 1 hits.
     * Nothing is unmapped before MPI_Finalize, so nothing is invalidated.
     */
    t_case("regcache expectation");
    if (t.rank == 0) {
        p = (unsigned long long)t.size;
        printf("expect: regcache hits=%llu misses=%llu invalidations=0\n",
               p * (2 * (NCALLS - 1) + (NCALLS - 1)), p * 3);
        fflush(stdout);
    }
    rc = t_finish();
    /* Only now: freeing earlier would unmap registered memory (an
     * invalidation) before the shim reports its statistics. */
    free(sbuf);
    free(rbuf);
    free(bbuf);
    free(ref);
    return rc;
}
