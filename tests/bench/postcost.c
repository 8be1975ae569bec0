/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The cost of a repeated collective on the same buffers: ITERS times
 * MPI_Ialltoall (blocks of SIZE bytes) then MPI_Wait, timing the post
 * (the MPI_Ialltoall call alone, where the shim registers buffers and
 * sends the work request) and the whole call. Prints medians over the
 * iterations, each the maximum over ranks, after WARMUP untimed calls.
 *
 * -p: a persistent alltoall instead (MPI_Alltoall_init, or Open MPI 4.1's
 * MPIX_Alltoall_init), the post being MPI_Start.
 *
 * usage: postcost [-m SIZE] [-i ITERS] [-w WARMUP] [-p]
 */
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define ALLTOALL_INIT MPIX_Alltoall_init
#elif MPI_VERSION >= 4
#define ALLTOALL_INIT MPI_Alltoall_init
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

int main(int argc, char **argv)
{
    size_t      size = 1024;
    int         iters = 1000, warmup = 100, rank, np, i, c, pers = 0;
    double     *post, *call, t0, t1, p[2], m[2];
    char       *sbuf, *rbuf;
    MPI_Request req, preq = MPI_REQUEST_NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    while ((c = getopt(argc, argv, "m:i:w:p")) != -1) {
        switch (c) {
        case 'p': pers = 1; break;
        case 'm': size = strtoull(optarg, NULL, 0); break;
        case 'i': iters = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        default:
            if (rank == 0) {
                fprintf(stderr, "usage: postcost [-m SIZE] [-i ITERS] "
                                "[-w WARMUP] [-p]\n");
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (size == 0 || iters < 1 || warmup < 0) {
        if (rank == 0) {
            fprintf(stderr, "postcost: -m and -i must be positive\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    sbuf = malloc(size * (size_t)np);
    rbuf = malloc(size * (size_t)np);
    post = malloc(sizeof(double) * (size_t)iters);
    call = malloc(sizeof(double) * (size_t)iters);
    if (sbuf == NULL || rbuf == NULL || post == NULL || call == NULL) {
        fprintf(stderr, "postcost: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(sbuf, rank + 1, size * (size_t)np);
    if (pers) {
#ifdef ALLTOALL_INIT
        ALLTOALL_INIT(sbuf, (int)size, MPI_BYTE, rbuf, (int)size, MPI_BYTE,
                      MPI_COMM_WORLD, MPI_INFO_NULL, &preq);
#else
        fprintf(stderr, "postcost: no persistent collectives in this MPI\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
#endif
    }
    for (i = -warmup; i < iters; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        if (pers) {
            MPI_Start(&preq);
        } else {
            MPI_Ialltoall(sbuf, (int)size, MPI_BYTE, rbuf, (int)size, MPI_BYTE,
                          MPI_COMM_WORLD, &req);
        }
        t1 = MPI_Wtime();
        MPI_Wait(pers ? &preq : &req, MPI_STATUS_IGNORE);
        p[0] = t1 - t0;
        p[1] = MPI_Wtime() - t0;
        MPI_Allreduce(p, m, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (i >= 0) {
            post[i] = m[0];
            call[i] = m[1];
        }
    }
    if (pers) {
        MPI_Request_free(&preq);
    }
    if (rank == 0) {
        printf("postcost%s size=%zu ranks=%d iters=%d post_us=%.2f "
               "call_us=%.2f\n",
               pers ? " persistent" : "", size, np, iters,
               1e6 * median(post, iters), 1e6 * median(call, iters));
    }
    free(sbuf);
    free(rbuf);
    free(post);
    free(call);
    MPI_Finalize();
    return 0;
}
