/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Nonblocking collectives and MPI_Comm_idup outstanding together, then
 * work on the new communicators (the pattern of MPICH's test
 * comm/comm_idup_nb): on MPI_COMM_WORLD, a duplicate, a split in reverse
 * rank order and the two halves, ITERS times at once each of
 * Ibarrier + Comm_idup, Ibcast + Comm_idup, Iallreduce + Comm_idup and
 * Iscan + Comm_idup, completed by one MPI_Waitall; then on every new
 * communicator an MPI_Allreduce, a ring of point-to-point messages and
 * an Ialltoall large enough to be offloaded. Every value is checked.
 * IDUP_ROUNDS (default 1) repeats the whole. A hang is a failure
 * (alarm). Prints "result: ok" from rank 0.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ITERS 5
#define A2A   8192 /* ints a peer: 32 KiB */

static int errs;

static void check(int ok, const char *what, int i)
{
    if (!ok && errs++ < 10) {
        int r;

        MPI_Comm_rank(MPI_COMM_WORLD, &r);
        fprintf(stderr, "idup_nbc: rank %d: %s (%d) wrong\n", r, what, i);
    }
}

/* What MPICH's MTestTestComm does, and a collective that is offloaded. */
static void use(MPI_Comm c)
{
    int         rank, size, sum = 0, got = -1, one = 1;
    int        *sb, *rb;
    MPI_Request rq;

    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &size);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c);
    check(sum == size, "allreduce on the new communicator", size);
    MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 3, &got, 1, MPI_INT,
                 (rank + size - 1) % size, 3, c, MPI_STATUS_IGNORE);
    check(got == (rank + size - 1) % size, "ring on the new communicator",
          got);
    sb = malloc(sizeof(int) * A2A * (size_t)size);
    rb = malloc(sizeof(int) * A2A * (size_t)size);
    for (int i = 0; i < A2A * size; i++) {
        sb[i] = rank * 100000 + i;
        rb[i] = -1;
    }
    MPI_Ialltoall(sb, A2A, MPI_INT, rb, A2A, MPI_INT, c, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    for (int p = 0; p < size; p++) {
        int bad = 0;

        for (int j = 0; j < A2A; j++) {
            bad += rb[p * A2A + j] != p * 100000 + rank * A2A + j;
        }
        check(bad == 0, "alltoall on the new communicator", p);
    }
    free(sb);
    free(rb);
}

static void phases(MPI_Comm c)
{
    MPI_Comm    nc[ITERS];
    MPI_Request rq[ITERS * 2];
    MPI_Status  sts[ITERS * 2];
    int         rank, size, in[ITERS], out[ITERS];

    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &size);
    for (int ph = 0; ph < 4; ph++) {
        for (int i = 0; i < ITERS; i++) {
            in[i] = rank == 0 ? 815 : 10;
            out[i] = -1;
            switch (ph) {
            case 0: MPI_Ibarrier(c, &rq[i]); break;
            case 1: MPI_Ibcast(&in[i], 1, MPI_INT, 0, c, &rq[i]); break;
            case 2:
                in[i] = 1;
                MPI_Iallreduce(&in[i], &out[i], 1, MPI_INT, MPI_SUM, c,
                               &rq[i]);
                break;
            default:
                MPI_Iscan(&rank, &out[i], 1, MPI_INT, MPI_SUM, c, &rq[i]);
                break;
            }
            MPI_Comm_idup(c, &nc[i], &rq[i + ITERS]);
        }
        MPI_Waitall(ITERS * 2, rq, sts);
        for (int i = 0; i < ITERS; i++) {
            if (ph == 1) {
                check(in[i] == 815, "ibcast", i);
            } else if (ph == 2) {
                check(out[i] == size, "iallreduce", i);
            } else if (ph == 3) {
                check(out[i] == rank * (rank + 1) / 2, "iscan", i);
            }
            use(nc[i]);
            MPI_Comm_free(&nc[i]);
        }
    }
}

int main(int argc, char **argv)
{
    int         rank, size, total = 0, rounds = 1;
    const char *e = getenv("IDUP_ROUNDS");
    MPI_Comm    c;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    alarm(100);
    if (e != NULL && atoi(e) > 0) {
        rounds = atoi(e);
    }
    for (int r = 0; r < rounds; r++) {
        phases(MPI_COMM_WORLD);
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        phases(c);
        MPI_Comm_free(&c);
        MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &c);
        phases(c);
        MPI_Comm_free(&c);
        if (size >= 4) {
            MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2, rank, &c);
            phases(c);
            MPI_Comm_free(&c);
        }
    }
    MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("result: %s\n", total == 0 ? "ok" : "FAILED");
    }
    MPI_Finalize();
    return total != 0;
}
