/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulated DMA engine (shim/data/engine.c), where the data path is
 * direct (DPUSHIM_DATA_PATH unset or direct): collectives of every size
 * move through the ranks' engines (statistics: engine copies > 0), with
 * the engine thread doing the work while ranks sleep instead of waiting
 * in MPI; the application forks while a collective is pending (the child
 * has no engine and exits cleanly, the parent's data is exact); and no
 * engine thread is left once MPI_Finalize has returned. With
 * DPUSHIM_DATA_PATH=staged the engines copy nothing.
 */
#include "tcommon.h"

#include <dirent.h>
#include <sys/wait.h>

/* Threads of this process named dpushim-dma. */
static int engine_threads(void)
{
    DIR           *d = opendir("/proc/self/task");
    struct dirent *e;
    int            n = 0;

    while (d != NULL && (e = readdir(d)) != NULL) {
        char  path[300], name[64] = "";
        FILE *f;

        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        f = fopen(path, "r");
        if (f != NULL) {
            if (fgets(name, sizeof(name), f) != NULL &&
                strncmp(name, "dpushim-dma", 11) == 0) {
                n++;
            }
            fclose(f);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    return n;
}

/* One checked Ialltoall of `block` bytes; sleep_us: the rank sleeps that
 * long before waiting (the engine thread must do the copies). */
static void a2a(size_t block, int sleep_us)
{
    char       *s = t_xmalloc(block * (size_t)t.size);
    char       *r = t_xmalloc(block * (size_t)t.size);
    uint32_t    seed = t_seed();
    MPI_Request q;
    char        what[96];

    t_a2a_fill(s, block, t.size, seed, t.rank);
    memset(r, T_POISON, block * (size_t)t.size);
    t_ialltoall(s, (int)block, MPI_BYTE, r, (int)block, MPI_BYTE,
                MPI_COMM_WORLD, &q, 1);
    if (sleep_us > 0) {
        usleep((useconds_t)sleep_us);
    }
    T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    snprintf(what, sizeof(what), "Ialltoall of %zu bytes, %d us asleep", block,
             sleep_us);
    t_a2a_check(what, r, block, t.size, seed, t.rank);
    free(s);
    free(r);
}

int main(int argc, char **argv)
{
    const char *dp = getenv("DPUSHIM_DATA_PATH");
    int         direct = dp == NULL || strcmp(dp, "staged") != 0;
    int         shim = t_shim_loaded(), rc;

    t_init(&argc, &argv, "t_engine");
    t_case("collectives of every size, ranks waiting and asleep");
    for (size_t b = 1; b <= (4u << 20); b *= 4) {
        a2a(b, 0);
        a2a(b, 2000);
    }
    if (shim && direct && engine_threads() != 1) {
        t_fail("%d engine threads running, expected 1", engine_threads());
    }

    t_case("fork() while a collective is pending");
    {
        size_t      block = 1 << 20;
        char       *s = t_xmalloc(block * (size_t)t.size);
        char       *r = t_xmalloc(block * (size_t)t.size);
        uint32_t    seed = t_seed();
        MPI_Request q;
        int         status = 0;
        pid_t       child;

        t_a2a_fill(s, block, t.size, seed, t.rank);
        t_ialltoall(s, (int)block, MPI_BYTE, r, (int)block, MPI_BYTE,
                    MPI_COMM_WORLD, &q, 1);
        child = fork();
        if (child == 0) {
            /* No MPI here: the child only checks it has no engine and
             * that its copy of the buffers is its own business. */
            memset(r, 0, block * (size_t)t.size);
            _exit(engine_threads() == 0 ? 0 : 7);
        }
        if (child < 0 || waitpid(child, &status, 0) != child ||
            !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            t_fail("forked child: status %#x (7: an engine thread in the "
                   "child)",
                   status);
        }
        T_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
        t_a2a_check("Ialltoall across fork()", r, block, t.size, seed, t.rank);
        free(s);
        free(r);
    }
    if (t.rank == 0 && shim) {
        printf("expect~: dma engines copies=%s bytes=[0-9]+ "
               "scattered=[0-9]+ gathered=[0-9]+\n",
               direct ? "[1-9][0-9]*" : "0");
    }
    rc = t_finish();
    /* MPI_Finalize has returned: no thread of the shim may be left. */
    if (engine_threads() != 0) {
        printf("rank %d: FAIL %d engine threads outlive MPI_Finalize\n",
               t.rank, engine_threads());
        rc = 1;
    }
    return rc;
}
