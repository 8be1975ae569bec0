/* SPDX-License-Identifier: BSD-3-Clause */
/* Buffers freed, reallocated, grown and remapped between offloaded
 * collectives: every result must carry the new contents, never stale
 * data of an earlier call at the same address. */
#include "tcommon.h"

#include <malloc.h>
#include <sys/mman.h>

#define KI 1024
#define MI (1024 * 1024)

static int       reused, allocated; /* addresses seen before / buffers */
static uintptr_t seen[256];
static int       nseen;

/* Count whether p was the address of an earlier buffer. */
static void note_addr(const void *p)
{
    int i;

    allocated++;
    for (i = 0; i < nseen; i++) {
        if (seen[i] == (uintptr_t)p) {
            reused++;
            return;
        }
    }
    if (nseen < 256) {
        seen[nseen++] = (uintptr_t)p;
    }
}

/* The same buffers used again and again with new contents. */
static void same_buffers(void)
{
    size_t block = 64 * KI, len = block * (size_t)t.size;
    char  *a = t_xmalloc(len), *b = t_xmalloc(len);
    int    i;

    for (i = 0; i < 6; i++) {
        t_case("same buffers, call %d", i);
        /* Odd calls swap send and receive buffers. */
        t_checked_alltoall(i % 2 ? b : a, i % 2 ? a : b, block,
                           "same buffers");
        t_checked_bcast(a, len, i % t.size, "same buffer");
    }
    free(a);
    free(b);
}

/* malloc/free with varying sizes: addresses come back with new pages
 * (large sizes are mmap'ed and unmapped by free) or new contents. */
static void malloc_free(void)
{
    static const size_t blocks[] = {
        4 * KI,   100, 70000, 4 * KI,       MI,     100,   70000, MI + 3,
        256 * KI, MI,  3,     256 * KI + 1, 4 * KI, 70000, MI,    100};
    unsigned i;

    for (i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
        size_t block = blocks[i], len = block * (size_t)t.size;
        char  *s, *r;

        t_case("malloc/free %u: %zu-byte blocks", i, block);
        s = t_xmalloc(len);
        r = t_xmalloc(len);
        note_addr(s);
        note_addr(r);
        t_checked_alltoall(s, r, block, "malloc/free");
        /* And the other way round, then a broadcast in each. */
        t_checked_alltoall(r, s, block, "malloc/free, swapped");
        t_checked_bcast(s, len, (int)(i % (unsigned)t.size),
                        "malloc/free send");
        t_checked_bcast(r, len - 1, (int)((i + 1) % (unsigned)t.size),
                        "malloc/free receive");
        free(s);
        free(r);
    }
}

/* realloc growing two buffers: contents change, addresses may move. */
static void realloc_grow(void)
{
    size_t block;
    char  *s = NULL, *r = NULL;
    int    step = 0;

    for (block = KI; block <= 4 * MI; block *= 4, step++) {
        size_t len = block * (size_t)t.size;
        char  *ns, *nr;

        t_case("realloc step %d: %zu-byte blocks", step, block);
        ns = realloc(s, len);
        nr = realloc(r, len);
        if (ns == NULL || nr == NULL) {
            t_fail("realloc of %zu bytes failed", len);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        s = ns;
        r = nr;
        note_addr(s);
        note_addr(r);
        t_checked_alltoall(s, r, block, "realloc");
        t_checked_bcast(r, len, step % t.size, "realloc");
        /* Shrink the receive buffer a little and use it again: it moves
         * or keeps its place with stale contents beyond the new end. */
        nr = realloc(r, len - 7);
        if (nr == NULL) {
            t_fail("realloc of %zu bytes failed", len - 7);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        r = nr;
        t_checked_bcast(r, len - 7, (step + 1) % t.size, "realloc shrunk");
    }
    free(s);
    free(r);
}

/* Map len bytes, at want if possible (want NULL: anywhere). */
static void *map(size_t len, void *want)
{
    void *p;

    if (want != NULL) {
        p = mmap(want, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (p != MAP_FAILED && p != want) {
            /* Kernel without MAP_FIXED_NOREPLACE: it was only a hint. */
            munmap(p, len);
            p = MAP_FAILED;
        }
        if (p != MAP_FAILED) {
            return p;
        }
    }
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
             -1, 0);
    if (p == MAP_FAILED) {
        t_fail("mmap of %zu bytes failed", len);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* mmap/munmap, then mmap again at the same address with new pages. */
static void mmap_remap(void)
{
    static const size_t blocks[] = {4 * KI, MI, 100000, 4 * MI};
    unsigned            i;
    int                 round;

    for (i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
        size_t block = blocks[i], len = block * (size_t)t.size;
        void  *s = NULL, *r = NULL, *os, *orr;

        for (round = 0; round < 3; round++) {
            t_case("mmap %zu-byte blocks, round %d", block, round);
            os = s;
            orr = r;
            /* Round 2 maps the old send buffer's place for receiving. */
            s = map(len, round == 2 ? orr : os);
            r = map(len, round == 2 ? os : orr);
            note_addr(s);
            note_addr(r);
            t_checked_alltoall(s, r, block, "mmap");
            t_checked_bcast(s, len,
                            (int)((i + (unsigned)round) % (unsigned)t.size),
                            "mmap");
            munmap(s, len);
            munmap(r, len);
        }
    }
}

int main(int argc, char **argv)
{
    long long tot[2] = {0, 0}, mine[2];

    /* A fixed threshold: every large malloc is an mmap that free
     * unmaps, so freed addresses come back with new pages. */
    mallopt(M_MMAP_THRESHOLD, 128 * KI);
    t_init(&argc, &argv, "t_buffers");
    same_buffers();
    malloc_free();
    realloc_grow();
    mmap_remap();
    t_case("address reuse summary");
    mine[0] = reused;
    mine[1] = allocated;
    MPI_Reduce(mine, tot, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (t.rank == 0) {
        printf("note: %lld of %lld buffers reused the address of an "
               "earlier one\n",
               tot[0], tot[1]);
    }
    return t_finish();
}
