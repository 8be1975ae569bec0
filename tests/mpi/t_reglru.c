/* SPDX-License-Identifier: BSD-3-Clause */
/* A registration cache too small for the working set: with room for two
 * of three buffers, least recently used registrations are evicted (the
 * agent told to drop their keys) and re-registered when used again, with
 * new keys. Every result must be the new data; hits and misses must be
 * what an LRU cache of that size gives, computed here by simulation. */
#include "tcommon.h"

#define KI    1024
#define NBUF  3
#define BYTES (256 * KI) /* per buffer: one Ibcast message */
#define CAP   "614400"   /* bytes: two buffers, not three */

/* The order in which the buffers are used. */
static const int order[] = {0, 1, 0, 1, 2, 0, 1, 2, 2, 0,
                            2, 1, 1, 0, 2, 0, 0, 1, 2, 1};
#define NCALLS ((int)(sizeof(order) / sizeof(order[0])))

/* The LRU the shim keeps: insert at the front on a miss, then evict from
 * the back while above the cap (the entry just inserted is in use). */
static void simulate(unsigned long long *hits, unsigned long long *misses)
{
    int lru[NBUF], n = 0, i, j, k;

    *hits = *misses = 0;
    for (i = 0; i < NCALLS; i++) {
        for (j = 0; j < n && lru[j] != order[i]; j++) {
        }
        if (j < n) {
            (*hits)++;
            for (k = j; k > 0; k--) {
                lru[k] = lru[k - 1];
            }
        } else {
            (*misses)++;
            for (k = n; k > 0; k--) {
                lru[k] = lru[k - 1];
            }
            n++;
            while ((unsigned long long)n * BYTES > strtoull(CAP, NULL, 10)) {
                n--; /* the back entry goes */
            }
        }
        lru[0] = order[i];
    }
}

int main(int argc, char **argv)
{
    char              *buf[NBUF], *ref;
    unsigned long long hits, misses, p;
    int                i, rc;

    /* The shim reads its variables at MPI_Init. */
    setenv("DPUSHIM_REGCACHE_BYTES", CAP, 1);
    t_init(&argc, &argv, "t_reglru");
    for (i = 0; i < NBUF; i++) {
        buf[i] = t_palloc(BYTES);
    }
    ref = t_xmalloc(BYTES);
    for (i = 0; i < NCALLS; i++) {
        uint32_t    seed = t_seed();
        MPI_Request q = MPI_REQUEST_NULL;
        int         root = i % t.size;
        char       *b = buf[order[i]];

        t_case("Ibcast %d of %d in buffer %d, root %d", i + 1, NCALLS,
               order[i], root);
        if (t.rank == root) {
            t_pat_fill(b, BYTES, seed, root, i);
        } else {
            memset(b, T_POISON, BYTES);
        }
        memcpy(ref, b, BYTES);
        T_MPI(PMPI_Bcast(ref, BYTES, MPI_BYTE, root, MPI_COMM_WORLD));
        t_ibcast(b, BYTES, MPI_BYTE, root, MPI_COMM_WORLD, &q, 1);
        T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
        t_pat_check("broadcast buffer", b, BYTES, seed, root, i);
        t_same("broadcast buffer vs PMPI_Bcast", b, ref, BYTES);
    }
    t_case("regcache expectation");
    simulate(&hits, &misses);
    if (t.rank == 0) {
        p = (unsigned long long)t.size;
        printf("expect: regcache hits=%llu misses=%llu invalidations=0\n",
               p * hits, p * misses);
        fflush(stdout);
    }
    rc = t_finish();
    for (i = 0; i < NBUF; i++) {
        free(buf[i]); /* after the statistics: not an invalidation */
    }
    free(ref);
    return rc;
}
