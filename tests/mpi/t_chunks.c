/* SPDX-License-Identifier: BSD-3-Clause */
/* Transfers the agent cuts into chunks: MPI_Ialltoall and MPI_Ibcast of
 * sizes around and between chunk boundaries, blocks smaller than a chunk,
 * and 64 MiB moved by one call of each, checked byte for byte against the
 * pattern and against stock MPI. */
#include "tcommon.h"

#define KI  1024
#define MI  (1024 * 1024)
#define CH  (256 * KI) /* the agent's chunk; others are powers of 2 */
#define BIG (64 * MI)  /* bytes moved by the largest calls */

/* Ialltoall of block bytes per rank pair in MPI_BYTE; the reference
 * (PMPI_Alltoall) runs before or after the offloaded call. */
static void a2a(size_t block, int ref_after)
{
    size_t      len = block * (size_t)t.size;
    uint32_t    seed = t_seed();
    MPI_Request q = MPI_REQUEST_NULL;
    char       *s = t_galloc(len), *r = t_galloc(len), *ref = t_xmalloc(len);
    int         j;

    t_case("Ialltoall %zu-byte blocks (%zu bytes per rank), reference %s",
           block, len, ref_after ? "after" : "before");
    t_a2a_fill(s, block, t.size, seed, t.rank);
    memset(ref, T_POISON, len);
    if (!ref_after) {
        T_MPI(PMPI_Alltoall(s, (int)block, MPI_BYTE, ref, (int)block, MPI_BYTE,
                            MPI_COMM_WORLD));
    }
    t_ialltoall(s, (int)block, MPI_BYTE, r, (int)block, MPI_BYTE,
                MPI_COMM_WORLD, &q, 1);
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    if (ref_after) {
        T_MPI(PMPI_Alltoall(s, (int)block, MPI_BYTE, ref, (int)block, MPI_BYTE,
                            MPI_COMM_WORLD));
    }
    t_a2a_check("receive buffer", r, block, t.size, seed, t.rank);
    t_same("receive buffer vs PMPI_Alltoall", r, ref, len);
    t_gcheck("receive buffer", r, len);
    for (j = 0; j < t.size; j++) {
        t_pat_check("send buffer unchanged", s + (size_t)j * block, block,
                    seed, t.rank, j);
    }
    t_gcheck("send buffer", s, len);
    t_gfree(s);
    t_gfree(r);
    free(ref);
}

/* Ibcast of bytes from root in MPI_BYTE. */
static void bcast(size_t bytes, int root)
{
    uint32_t    seed = t_seed();
    MPI_Request q = MPI_REQUEST_NULL;
    char       *b = t_galloc(bytes), *ref = t_xmalloc(bytes);

    t_case("Ibcast %zu bytes from root %d", bytes, root);
    if (t.rank == root) {
        t_pat_fill(b, bytes, seed, root, 0);
    }
    memcpy(ref, b, bytes);
    T_MPI(PMPI_Bcast(ref, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD));
    t_ibcast(b, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD, &q, 1);
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    t_pat_check("broadcast buffer", b, bytes, seed, root, 0);
    t_same("broadcast buffer vs PMPI_Bcast", b, ref, bytes);
    t_gcheck("broadcast buffer", b, bytes);
    t_gfree(b);
    free(ref);
}

int main(int argc, char **argv)
{
    /* Below a chunk, around chunk and page boundaries, and not multiples
     * of any power of two beyond a few bytes. */
    static const size_t sizes[] = {
        1,  100,    4095,        65537,     CH - 1,
        CH, CH + 1, 3 * CH - 17, MI + 4093, 5 * MI + 3,
    };
    size_t n = sizeof(sizes) / sizeof(sizes[0]), i, p2;

    t_init(&argc, &argv, "t_chunks");
    for (i = 0; i < n; i++) {
        a2a(sizes[i], (int)(i % 2));
    }
    for (i = 0; i < n; i++) {
        bcast(sizes[i], (int)(i % (size_t)t.size));
    }
    /* 64 MiB in one call each: the alltoall moves P * P blocks. */
    p2 = (size_t)t.size * (size_t)t.size;
    a2a(BIG / p2, 0);
    bcast(BIG, t.size - 1);
    if (t.rank == 0) {
        printf("expect~: regcache hits=[0-9]+ misses=[0-9]+ "
               "invalidations=[0-9]+\n");
        fflush(stdout);
    }
    return t_finish();
}
