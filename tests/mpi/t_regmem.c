/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory that changes under the registration cache between offloaded
 * collectives (free and malloc again, munmap and mmap at the same place,
 * realloc, sub-ranges of one mapping): every result must be the new
 * contents, never data of the memory an old registration described. */
#include "tcommon.h"

#include <errno.h>
#include <malloc.h>
#include <sys/mman.h>

#define KI 1024
#define MI (1024 * 1024)

static int same_addr, remaps; /* remaps that got the old address back */

static void *xmalloc_big(size_t n)
{
    void *p = malloc(n);

    if (p == NULL) {
        t_fail("malloc of %zu bytes failed", n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* a) 1 MiB buffers freed and allocated again: with the fixed mmap
 * threshold set in main, free unmaps them and malloc maps new pages,
 * usually at the same address. */
static void malloc_again(void)
{
    size_t block = MI / (size_t)t.size, len = block * (size_t)t.size;
    char  *s, *r, *olds = NULL, *oldr = NULL;
    int    round;

    for (round = 0; round < 5; round++) {
        t_case("malloc/free 1 MiB buffers, round %d", round);
        s = xmalloc_big(len);
        r = xmalloc_big(len);
        if (round > 0) {
            remaps += 2;
            same_addr += (s == olds) + (r == oldr);
        }
        t_checked_alltoall(s, r, block, "malloc again");
        t_checked_bcast(r, len, round % t.size,
                        "malloc again, receive buffer");
        olds = s;
        oldr = r;
        free(s);
        free(r);
    }
}

/* Map len bytes of new anonymous memory at want (NULL: anywhere). */
static char *map(size_t len, void *want)
{
    void *p = MAP_FAILED;

    if (want != NULL) {
#ifdef MAP_FIXED_NOREPLACE
        /* Fails with EEXIST rather than replacing a mapping another
         * thread (MPI, UCX) may have made there since the munmap. */
        p = mmap(want, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
#else
        /* The range was unmapped by the caller just before. */
        p = mmap(want, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
#endif
        remaps++;
        if (p == want) {
            same_addr++;
            return p;
        }
        /* A kernel before 4.17 takes the flag as a hint only: any new
         * mapping will do, it just does not test address reuse. */
        if (p != MAP_FAILED) {
            return p;
        }
    }
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
             -1, 0);
    if (p == MAP_FAILED) {
        t_fail("mmap of %zu bytes failed: %s", len, strerror(errno));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* b) An anonymous 2 MiB mapping used as send buffer, as receive buffer
 * and as broadcast buffer, then unmapped and mapped again at the same
 * address with new (zero) pages. */
static void mmap_again(void)
{
    const size_t len = 2 * MI;
    size_t       block = len / (size_t)t.size;
    char        *other = xmalloc_big(len), *m = NULL;
    int          round;

    for (round = 0; round < 4; round++) {
        t_case("mmap 2 MiB, round %d: send buffer", round);
        m = map(len, m);
        t_checked_alltoall(m, other, block, "mmap send buffer");
        t_case("mmap 2 MiB, round %d: receive buffer", round);
        t_checked_alltoall(other, m, block, "mmap receive buffer");
        munmap(m, len);

        t_case("mmap 2 MiB, round %d: broadcast buffer", round);
        m = map(len, m);
        t_checked_bcast(m, len, round % t.size, "mmap broadcast buffer");
        /* Odd rounds: a part of it, from another root. */
        if (round % 2) {
            t_checked_bcast(m + 4096, len / 2 + 3, (round + 1) % t.size,
                            "mmap broadcast buffer, part");
        }
        munmap(m, len);
    }
    free(other);
}

static char *xrealloc(char *p, size_t n)
{
    char *q = realloc(p, n);

    if (q == NULL) {
        t_fail("realloc to %zu bytes failed", n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return q;
}

/* c) Buffers grown 4 times at a time with realloc (mremap: the pages may
 * move, the address may stay), new contents in the whole buffer. */
static void realloc_grow(void)
{
    size_t block = 64 * KI;
    char  *s = xmalloc_big(block * (size_t)t.size);
    char  *r = xmalloc_big(block * (size_t)t.size);
    int    step;

    for (step = 0; step < 4; step++, block *= 4) {
        size_t len = block * (size_t)t.size;

        if (step > 0) {
            s = xrealloc(s, len);
            r = xrealloc(r, len);
        }
        t_case("realloc step %d: %zu-byte blocks", step, block);
        t_checked_alltoall(s, r, block, "realloc");
        t_checked_alltoall(r, s, block, "realloc, swapped");
        t_checked_bcast(s, len, step % t.size, "realloc");
    }
    free(s);
    free(r);
}

/* d) Sub-ranges of one mapping in consecutive calls: the same ranges in
 * other roles, overlapping ranges at unaligned offsets, a range inside
 * an earlier one, one spanning two earlier ones. */
static void sub_ranges(void)
{
    /* Laid out for up to 4 ranks: every range ends below 8 MiB and the
     * send and receive ranges of a call are disjoint. */
    static const struct {
        size_t soff, roff, block;
    } c[] = {
        {0, MI, 64 * KI},                      /* disjoint */
        {MI, 0, 64 * KI},                      /* roles swapped */
        {4096 + 7, 2 * MI + 100, 64 * KI + 5}, /* overlaps both */
        {16 * KI, MI + 8 * KI, 16 * KI},       /* inside 1st, 2nd */
        {0, 3 * MI, MI / 2 + 64 * KI + 13},    /* spans */
        {3 * MI + 1, 5, 100 * KI - 3},         /* new, overlap */
    };
    const size_t len = 8 * MI;
    char        *m = map(len, NULL);
    unsigned     i;

    for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        size_t span = c[i].block * (size_t)t.size;

        t_case("one mapping, call %u: send at %zu, receive at %zu, "
               "%zu-byte blocks",
               i, c[i].soff, c[i].roff, c[i].block);
        if (c[i].soff + span > len || c[i].roff + span > len ||
            (c[i].soff < c[i].roff + span && c[i].roff < c[i].soff + span)) {
            /* More ranks than this layout was made for: skip. */
            continue;
        }
        t_checked_alltoall(m + c[i].soff, m + c[i].roff, c[i].block,
                           "one mapping");
        t_checked_bcast(m + c[i].roff + 3, span - 3,
                        (int)(i % (unsigned)t.size), "one mapping");
    }
    munmap(m, len);
}

int main(int argc, char **argv)
{
    int mine[2], tot[2] = {0, 0};

    /* A fixed threshold: every large malloc is an mmap that free
     * unmaps (glibc would otherwise raise it after the first free and
     * serve the next buffers from the heap). */
    mallopt(M_MMAP_THRESHOLD, 128 * KI);
    t_init(&argc, &argv, "t_regmem");
    malloc_again();
    mmap_again();
    realloc_grow();
    sub_ranges();

    t_case("address reuse summary");
    mine[0] = same_addr;
    mine[1] = remaps;
    MPI_Reduce(mine, tot, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (t.rank == 0) {
        printf("note: %d of %d buffers allocated again got the old "
               "address\n",
               tot[0], tot[1]);
        /* Registered memory was unmapped: at least one invalidation. */
        printf("expect~: regcache hits=[0-9]+ misses=[0-9]+ "
               "invalidations=[1-9][0-9]*\n");
        fflush(stdout);
    }
    return t_finish();
}
