/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What grows with the job, as a rank sees it (scripts/bench/bench_scale.sh):
 * the time of MPI_Init (under the shim: agents started or reached and
 * wired), then, for each SIZE, ITERS times one MPI_Ialltoall of SIZE-byte
 * blocks and one MPI_Iallreduce of SIZE bytes of doubles (MPI_SUM), each
 * waited for at once after SLEEP us of "compute" (usleep: the core is
 * left idle, as a rank waiting on a GPU leaves it). Every result is
 * checked byte for byte against values computed here; a wrong byte fails
 * the run.
 *
 * Prints, from rank 0:
 *   scale: ranks=P init_ms_max=MS
 *   scale: ialltoall bytes=SIZE median_us=US min_us=US
 *   scale: iallreduce bytes=SIZE median_us=US min_us=US
 *   result: ok
 * Times are the slowest rank's of each iteration (post to completion,
 * SLEEP included), median and minimum over the iterations after one
 * untimed warm-up.
 *
 * usage: scale [-m SIZE[,SIZE...]] [-i ITERS] [-s SLEEP_US]
 *   defaults: -m 65536,1048576 -i 10 -s 0
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static int rank, np, errors;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Rank 0: a collective's line (median and minimum of t, sorted here). */
static void report(const char *name, size_t bytes, double *t, int n)
{
    if (rank == 0) {
        double med = median(t, n);

        printf("scale: %s bytes=%zu median_us=%.1f min_us=%.1f\n", name, bytes,
               med, t[0]);
    }
}

/* Byte i of the block rank `from` sends rank `to` in iteration it. */
static unsigned char a2a_byte(int from, int to, size_t i, int it)
{
    return (unsigned char)(from * 131 + to * 31 + (int)(i % 251) + it * 7);
}

/* Element i of rank r's allreduce input in iteration it: small integers,
 * so that every sum is exact in any order. */
static double red_val(int r, size_t i, int it)
{
    return (double)((r + 1) * 3 + (int)(i % 97) + it);
}

/* Post, sleep, wait; returns the slowest rank's time in us. */
static double one(MPI_Request *q, int sleep_us, double t0)
{
    double t, tmax;

    if (sleep_us > 0) {
        usleep((useconds_t)sleep_us);
    }
    MPI_Wait(q, MPI_STATUS_IGNORE);
    t = (now() - t0) * 1e6;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return tmax;
}

static void alltoall(size_t block, int iters, int sleep_us)
{
    unsigned char *s = malloc(block * (size_t)np);
    unsigned char *r = malloc(block * (size_t)np);
    double        *t = malloc(sizeof(double) * (size_t)iters);
    MPI_Request    q;

    if (s == NULL || r == NULL || t == NULL) {
        fprintf(stderr, "rank %d: no memory for %zu-byte blocks\n", rank,
                block);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int it = -1; it < iters; it++) {
        double t0;

        for (int d = 0; d < np; d++) {
            for (size_t i = 0; i < block; i++) {
                s[(size_t)d * block + i] = a2a_byte(rank, d, i, it);
            }
        }
        memset(r, 0x5a, block * (size_t)np);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now();
        MPI_Ialltoall(s, (int)block, MPI_BYTE, r, (int)block, MPI_BYTE,
                      MPI_COMM_WORLD, &q);
        double us = one(&q, sleep_us, t0);

        if (it >= 0) {
            t[it] = us;
        }
        for (int f = 0; f < np; f++) {
            for (size_t i = 0; i < block; i++) {
                if (r[(size_t)f * block + i] != a2a_byte(f, rank, i, it)) {
                    fprintf(stderr,
                            "rank %d: ialltoall %zu: byte %zu from %d "
                            "wrong\n",
                            rank, block, i, f);
                    errors++;
                    break;
                }
            }
        }
    }
    report("ialltoall", block, t, iters);
    free(s);
    free(r);
    free(t);
}

static void allreduce(size_t bytes, int iters, int sleep_us)
{
    size_t      n = bytes / sizeof(double);
    double     *s = malloc(n * sizeof(double) + 1);
    double     *r = malloc(n * sizeof(double) + 1);
    double     *t = malloc(sizeof(double) * (size_t)iters);
    MPI_Request q;

    if (s == NULL || r == NULL || t == NULL) {
        fprintf(stderr, "rank %d: no memory for %zu bytes\n", rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int it = -1; it < iters; it++) {
        double t0;

        for (size_t i = 0; i < n; i++) {
            s[i] = red_val(rank, i, it);
        }
        memset(r, 0x5a, n * sizeof(double));
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now();
        MPI_Iallreduce(s, r, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q);
        double us = one(&q, sleep_us, t0);

        if (it >= 0) {
            t[it] = us;
        }
        for (size_t i = 0; i < n; i++) {
            double want = 0;

            for (int p = 0; p < np; p++) {
                want += red_val(p, i, it);
            }
            if (r[i] != want) {
                fprintf(stderr,
                        "rank %d: iallreduce %zu: element %zu is %g, not "
                        "%g\n",
                        rank, bytes, i, r[i], want);
                errors++;
                break;
            }
        }
    }
    report("iallreduce", bytes, t, iters);
    free(s);
    free(r);
    free(t);
}

int main(int argc, char **argv)
{
    const char *sizes = "65536,1048576";
    int         iters = 10, sleep_us = 0, c, all;
    double      t0 = now(), init, imax;
    char       *list, *tok, *save;

    MPI_Init(&argc, &argv);
    init = (now() - t0) * 1e3;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    while ((c = getopt(argc, argv, "m:i:s:")) != -1) {
        switch (c) {
        case 'm': sizes = optarg; break;
        case 'i': iters = atoi(optarg); break;
        case 's': sleep_us = atoi(optarg); break;
        default:
            if (rank == 0) {
                fprintf(stderr, "usage: scale [-m SIZE[,SIZE...]] "
                                "[-i ITERS] [-s SLEEP_US]\n");
            }
            MPI_Finalize();
            return 2;
        }
    }
    if (iters < 1) {
        if (rank == 0) {
            fprintf(stderr, "scale: -i must be at least 1\n");
        }
        MPI_Finalize();
        return 2;
    }
    MPI_Reduce(&init, &imax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("scale: ranks=%d init_ms_max=%.1f\n", np, imax);
    }
    list = strdup(sizes);
    for (tok = strtok_r(list, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        size_t size = strtoull(tok, NULL, 0);

        if (size < sizeof(double) || size > ((size_t)1 << 30)) {
            if (rank == 0) {
                fprintf(stderr, "scale: -m size %s out of range (8 to 1g)\n",
                        tok);
            }
            errors++;
            continue;
        }
        alltoall(size, iters, sleep_us);
        allreduce(size, iters, sleep_us);
    }
    free(list);
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("result: %s\n", all == 0 ? "ok" : "FAILED");
    }
    MPI_Finalize();
    return all != 0;
}
