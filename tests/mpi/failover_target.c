/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An agent fails in the middle of an offloaded MPI_Ialltoall; the job must
 * finish anyway. Run under the shim with DPUSHIM_MIN_BYTES=1.
 *
 *   FO_HOW=kill   the first rank of virtual node FO_NODE (default: the
 *                 last) SIGKILLs its agent right after posting (default)
 *   FO_HOW=stop   ... SIGSTOPs it instead: the agent no longer answers
 *   FO_BLOCK=recv after posting, ranks other than 0 block in MPI_Recv for a
 *                 token rank 0 sends only once its requests are done: the
 *                 takeover must reach ranks blocked in a point-to-point
 *                 call (stock MPI would progress the collectives there)
 *   FO_BLOCK=bcast  the same with a blocking MPI_Bcast from rank 0
 *   FO_LISTENER=PID  agents are children of this listening dpu_agent, not
 *                 of ranks: the same rank kills (stops) every one of them
 *   FO_HOW=none   nobody fails an agent here: a fault comes from outside
 *                 (scripts/cluster_check.sh: an agent on a DPU killed, a
 *                 link cut, the job cancelled). With FO_WAIT=PATH the same
 *                 rank then prints "rank R: collectives pending, waiting
 *                 for PATH" and does not post the rest until PATH exists
 *                 (at most FO_WAIT_S seconds, default 120), so that the
 *                 fault finds collectives pending on every other rank
 *   FO_BIG=BYTES  the large blocks' size (default 1 MiB; smaller for many
 *                 ranks on one machine: each rank holds 3 pending
 *                 Ialltoalls of FO_BIG bytes per rank, sent and received)
 *
 * Phase 1: checked collectives with the agents, on MPI_COMM_WORLD and on
 * a communicator made by MPI_Comm_idup (the shim gives it no twin to redo
 * collectives on). Phase 2: NCOLL Ialltoalls and Ibcasts posted at once
 * (the last on the idup one), the agent failing after the first; every
 * request must end (MPI_ERRORS_RETURN): successful ones with exactly the
 * data stock MPI would deliver, failed ones with an error class. Phase 3:
 * after the failure, more collectives of several sizes on MPI_COMM_WORLD,
 * the idup communicator and a new one, which must succeed with exact
 * data.
 * Prints "result: ok" from rank 0 when all held, and per rank how many
 * phase-2 requests ended well or with an error.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tagent.h"

#define NCOLL 7

/* FO_HOW=none with FO_WAIT=PATH: wait until PATH exists (the fault is
 * done), at most FO_WAIT_S seconds; 0 if it never came. */
static int wait_for_fault(int rank)
{
    const char *path = getenv("FO_WAIT");
    double      limit = getenv("FO_WAIT_S") ? atof(getenv("FO_WAIT_S")) : 120;

    if (path == NULL) {
        return 1;
    }
    printf("rank %d: collectives pending, waiting for %s\n", rank, path);
    fflush(stdout);
    for (double t = 0; t < limit; t += 0.05) {
        if (access(path, F_OK) == 0) {
            return 1;
        }
        usleep(50000);
    }
    fprintf(stderr, "rank %d: %s did not appear in %.0f s\n", rank, path,
            limit);
    return 0;
}

static int rank, size, errors;

static unsigned char pat(unsigned seed, int src, int dst, size_t off)
{
    uint32_t h = seed * 2654435761u ^ (uint32_t)src * 40503u ^
                 (uint32_t)dst * 9973u ^ (uint32_t)off * 2246822519u;

    h ^= h >> 15;
    return (unsigned char)(h * 2654435761u >> 24);
}

static void fill_a2a(unsigned char *s, size_t block, unsigned seed)
{
    for (int d = 0; d < size; d++) {
        for (size_t i = 0; i < block; i++) {
            s[(size_t)d * block + i] = pat(seed, rank, d, i);
        }
    }
}

static int check_a2a(const unsigned char *r, size_t block, unsigned seed,
                     const char *what)
{
    for (int src = 0; src < size; src++) {
        for (size_t i = 0; i < block; i++) {
            if (r[(size_t)src * block + i] != pat(seed, src, rank, i)) {
                fprintf(stderr,
                        "rank %d: %s: byte %zu from rank %d "
                        "wrong\n",
                        rank, what, i, src);
                errors++;
                return 1;
            }
        }
    }
    return 0;
}

static void fill_bcast(unsigned char *b, size_t n, unsigned seed, int root)
{
    for (size_t i = 0; i < n; i++) {
        b[i] = pat(seed, root, -1, i);
    }
}

static int check_bcast(const unsigned char *b, size_t n, unsigned seed,
                       int root, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        if (b[i] != pat(seed, root, -1, i)) {
            fprintf(stderr, "rank %d: %s: byte %zu wrong\n", rank, what, i);
            errors++;
            return 1;
        }
    }
    return 0;
}

/* One checked Ialltoall + Ibcast on comm; all must succeed. */
static void checked_pair(MPI_Comm comm, size_t block, unsigned seed,
                         const char *what)
{
    int            crank, csize, root;
    unsigned char *s, *r, *b;
    MPI_Request    req[2];
    MPI_Status     st[2];
    int            rc;

    MPI_Comm_rank(comm, &crank);
    MPI_Comm_size(comm, &csize);
    s = malloc(block * (size_t)csize);
    r = malloc(block * (size_t)csize);
    b = malloc(block);
    for (int d = 0; d < csize; d++) {
        for (size_t i = 0; i < block; i++) {
            s[(size_t)d * block + i] = pat(seed, crank, d, i);
        }
    }
    memset(r, 0x5a, block * (size_t)csize);
    root = (int)(seed % (unsigned)csize);
    if (crank == root) {
        fill_bcast(b, block, seed, root);
    } else {
        memset(b, 0x5a, block);
    }
    MPI_Ialltoall(s, (int)block, MPI_BYTE, r, (int)block, MPI_BYTE, comm,
                  &req[0]);
    MPI_Ibcast(b, (int)block, MPI_BYTE, root, comm, &req[1]);
    rc = MPI_Waitall(2, req, st);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: %s: Waitall failed (%d)\n", rank, what, rc);
        errors++;
    } else {
        for (int src = 0; src < csize; src++) {
            for (size_t i = 0; i < block; i++) {
                if (r[(size_t)src * block + i] != pat(seed, src, crank, i)) {
                    fprintf(stderr, "rank %d: %s: alltoall wrong\n", rank,
                            what);
                    errors++;
                    src = csize;
                    break;
                }
            }
        }
        check_bcast(b, block, seed, root, what);
    }
    free(s);
    free(r);
    free(b);
}

int main(int argc, char **argv)
{
    const size_t   small = 1 << 12;
    size_t         big = 1 << 20;
    const char    *how = getenv("FO_HOW") ? getenv("FO_HOW") : "kill";
    const char    *block;
    unsigned char *s[NCOLL], *r[NCOLL];
    MPI_Request    req[NCOLL];
    int            rc[NCOLL], node, killer, ok = 0, failed = 0, all;
    MPI_Comm       half, nt;
    MPI_Request    dup;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    if (getenv("FO_BIG") != NULL) {
        big = strtoul(getenv("FO_BIG"), NULL, 0);
    }
    /* Virtual nodes are FO_RPD consecutive ranks; kill in the last one. */
    {
        int rpd = getenv("FO_RPD") ? atoi(getenv("FO_RPD")) : size;

        node = getenv("FO_NODE") ? atoi(getenv("FO_NODE")) : (size - 1) / rpd;
        killer = node * rpd;
    }

    /* Phase 1: the agents work. */
    MPI_Comm_idup(MPI_COMM_WORLD, &nt, &dup);
    MPI_Wait(&dup, MPI_STATUS_IGNORE);
    checked_pair(MPI_COMM_WORLD, small, 1, "before");
    checked_pair(MPI_COMM_WORLD, big, 2, "before, big blocks");
    checked_pair(nt, small, 3, "before, idup communicator");

    /* Phase 2: the agent fails while collectives are pending (after every
     * rank is done with phase 1). */
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < NCOLL; i++) {
        size_t block = (i % 2) ? big : small;

        s[i] = malloc(block * (size_t)size);
        r[i] = malloc(block * (size_t)size);
        memset(r[i], 0x5a, block * (size_t)size);
        if (i == NCOLL - 1) {
            fill_a2a(s[i], block, 100 + i);
            MPI_Ialltoall(s[i], (int)block, MPI_BYTE, r[i], (int)block,
                          MPI_BYTE, nt, &req[i]);
        } else if (i % 3 == 2) {
            /* An Ibcast from rank i % size. */
            if (rank == i % size) {
                fill_bcast(r[i], block, 100 + i, i % size);
            }
            MPI_Ibcast(r[i], (int)block, MPI_BYTE, i % size, MPI_COMM_WORLD,
                       &req[i]);
        } else {
            fill_a2a(s[i], block, 100 + i);
            MPI_Ialltoall(s[i], (int)block, MPI_BYTE, r[i], (int)block,
                          MPI_BYTE, MPI_COMM_WORLD, &req[i]);
        }
        if (i == 0 && rank == killer && strcmp(how, "none") == 0) {
            errors += !wait_for_fault(rank);
        } else if (i == 0 && rank == killer &&
                   signal_agents(rank, strcmp(how, "stop") == 0
                                           ? SIGSTOP
                                           : SIGKILL) == 0) {
            fprintf(stderr, "rank %d: no agent found\n", rank);
            errors++;
        }
    }
    block = getenv("FO_BLOCK") ? getenv("FO_BLOCK") : "";
    if (rank != 0 && strcmp(block, "recv") == 0) {
        int token = 0;

        MPI_Recv(&token, 1, MPI_INT, 0, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank != 0 && strcmp(block, "bcast") == 0) {
        int token = 0;

        MPI_Bcast(&token, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    for (int i = 0; i < NCOLL; i++) {
        size_t block = (i % 2) ? big : small;
        char   what[64];

        rc[i] = MPI_Wait(&req[i], MPI_STATUS_IGNORE);
        snprintf(what, sizeof(what), "pending collective %d", i);
        if (rc[i] != MPI_SUCCESS) {
            failed++;
            continue;
        }
        ok++;
        if (i % 3 == 2 && i != NCOLL - 1) {
            check_bcast(r[i], block, 100 + i, i % size, what);
        } else {
            check_a2a(r[i], block, 100 + i, what);
        }
    }
    if (rank == 0 && strcmp(block, "recv") == 0) {
        for (int d = 1; d < size; d++) {
            MPI_Send(&ok, 1, MPI_INT, d, 77, MPI_COMM_WORLD);
        }
    } else if (rank == 0 && strcmp(block, "bcast") == 0) {
        MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    printf("rank %d: pending collectives: %d ended well, %d with an "
           "error\n",
           rank, ok, failed);

    /* Phase 3: stock MPI from now on; everything must work. */
    for (unsigned k = 0; k < 3; k++) {
        checked_pair(MPI_COMM_WORLD, k == 1 ? big : small, 10 + k, "after");
    }
    checked_pair(nt, small, 15, "after, idup communicator");
    checked_pair(nt, big, 16, "after, idup communicator, big blocks");
    MPI_Comm_free(&nt);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    checked_pair(half, small, 20, "after, new communicator");
    checked_pair(half, big, 21, "after, new communicator, big blocks");
    MPI_Comm_free(&half);

    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("result: %s\n", all == 0 ? "ok" : "FAILED");
    }
    for (int i = 0; i < NCOLL; i++) {
        free(s[i]);
        free(r[i]);
    }
    MPI_Finalize();
    return all != 0;
}
