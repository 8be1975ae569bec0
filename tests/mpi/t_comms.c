/* SPDX-License-Identifier: BSD-3-Clause */
/* Offloaded collectives on communicators from MPI_Comm_split and
 * MPI_Comm_dup: created and freed many times, several busy at once,
 * freed while a collective is pending. */
#include "tcommon.h"

#define ITERS  40
#define NCOMMS 4

enum { K_EVENODD, K_REVERSED, K_DUP, K_NKINDS };

static const char *kind_name[K_NKINDS] = {
    "even/odd split", "reversed-key split in halves", "dup"};

/* Make a communicator of the given kind from MPI_COMM_WORLD. A split in
 * halves of 2 ranks gives communicators of size 1. */
static MPI_Comm make_comm(int kind)
{
    MPI_Comm c = MPI_COMM_NULL;

    switch (kind) {
    case K_EVENODD:
        MPI_Comm_split(MPI_COMM_WORLD, t.rank % 2, t.rank, &c);
        break;
    case K_REVERSED:
        MPI_Comm_split(MPI_COMM_WORLD, t.rank < t.size / 2, t.size - t.rank,
                       &c);
        break;
    default: MPI_Comm_dup(MPI_COMM_WORLD, &c); break;
    }
    return c;
}

/* The rank order of a split must be what MPI defines. */
static void check_comm(MPI_Comm c, int kind)
{
    int crank, csize, want_rank, want_size;
    int half = t.size / 2, low = t.rank < half;

    MPI_Comm_rank(c, &crank);
    MPI_Comm_size(c, &csize);
    if (kind == K_EVENODD) {
        want_size = (t.size + 1 - t.rank % 2) / 2;
        want_rank = t.rank / 2;
    } else if (kind == K_REVERSED) {
        want_size = low ? half : t.size - half;
        want_rank = low ? half - 1 - t.rank : t.size - 1 - t.rank;
    } else {
        want_size = t.size;
        want_rank = t.rank;
    }
    if (crank != want_rank || csize != want_size) {
        t_fail("%s: rank %d of %d, expected %d of %d", kind_name[kind], crank,
               csize, want_rank, want_size);
    }
}

/* Part 1: create, use and free the three kinds ITERS times. Even
 * iterations complete each collective before the next; odd ones keep
 * all six outstanding and complete them with one MPI_Waitall. */
static void create_free_loop(void)
{
    MPI_Request r[2 * K_NKINDS];
    MPI_Comm    c[K_NKINDS];
    t_op_t      o[2 * K_NKINDS];
    int         it, k, csize, n = 2 * K_NKINDS;

    for (it = 0; it < ITERS; it++) {
        int together = it % 2;

        t_case("create/free iteration %d (%s)", it,
               together ? "all outstanding" : "one at a time");
        for (k = 0; k < K_NKINDS; k++) {
            c[k] = make_comm(k);
            check_comm(c[k], k);
            MPI_Comm_size(c[k], &csize);
            t_op_init(&o[2 * k], T_A2A, c[k], MPI_INT, 1 + 97 * it, NULL, 0, 0,
                      "iteration %d: Ialltoall %d x MPI_INT on %s", it,
                      1 + 97 * it, kind_name[k]);
            t_op_init(&o[2 * k + 1], T_BCAST, c[k], MPI_BYTE, 1 + 1531 * it,
                      NULL, it % csize, 0,
                      "iteration %d: Ibcast %d bytes root %d on %s", it,
                      1 + 1531 * it, it % csize, kind_name[k]);
        }
        for (k = 0; k < n; k++) {
            t_op_post(&o[k], &r[k]);
            if (!together) {
                T_MPI(MPI_Wait(&r[k], MPI_STATUS_IGNORE));
                t_op_check(&o[k]);
            }
        }
        if (together) {
            T_MPI(MPI_Waitall(n, r, t_statuses_ignore));
            for (k = 0; k < n; k++) {
                t_op_check(&o[k]);
            }
        }
        for (k = 0; k < n; k++) {
            t_op_free(&o[k]);
        }
        for (k = 0; k < K_NKINDS; k++) {
            MPI_Comm_free(&c[k]);
        }
    }
}

/* Part 2: collectives outstanding on four communicators at once, each
 * rank posting them in its own order of communicators (legal: order
 * matters per communicator only). The communicators are used once
 * before, so nothing about them needs setting up during the posts. */
static void many_at_once(void)
{
    MPI_Comm    c[NCOMMS];
    MPI_Request r[2 * NCOMMS];
    t_op_t      o[2 * NCOMMS];
    int         round, k, j, i, idx, csize;

    c[0] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &c[1]);
    c[2] = make_comm(K_EVENODD);
    c[3] = make_comm(K_REVERSED);
    for (k = 0; k < NCOMMS; k++) {
        t_case("many at once: first use of communicator %d", k);
        t_op_init(&o[0], T_A2A, c[k], MPI_BYTE, 7, NULL, 0, 0,
                  "first Ialltoall on communicator %d", k);
        t_op_post(&o[0], NULL);
        T_MPI(MPI_Wait(&o[0].req, MPI_STATUS_IGNORE));
        t_op_check(&o[0]);
        t_op_free(&o[0]);
    }
    for (round = 0; round < 6; round++) {
        t_case("many at once: round %d (%s)", round,
               round % 2 ? "MPI_Waitany" : "MPI_Waitall");
        /* Stock-MPI references are blocking: same order everywhere. */
        for (k = 0; k < NCOMMS; k++) {
            MPI_Comm_size(c[k], &csize);
            t_op_init(&o[2 * k], T_A2A, c[k], MPI_DOUBLE, 1000 + round, NULL,
                      0, 0, "round %d: Ialltoall on communicator %d", round,
                      k);
            t_op_init(&o[2 * k + 1], T_BCAST, c[k], MPI_INT, 25000, NULL,
                      (round + k) % csize, 0,
                      "round %d: Ibcast on communicator %d", round, k);
        }
        /* Posting order of the communicators rotates with the rank. */
        for (j = 0; j < NCOMMS; j++) {
            k = (j + t.rank + round) % NCOMMS;
            t_op_post(&o[2 * k], &r[2 * k]);
            t_op_post(&o[2 * k + 1], &r[2 * k + 1]);
        }
        if (round % 2 == 0) {
            T_MPI(MPI_Waitall(2 * NCOMMS, r, t_statuses_ignore));
            for (k = 0; k < 2 * NCOMMS; k++) {
                t_op_check(&o[k]);
            }
        } else {
            for (i = 0; i < 2 * NCOMMS; i++) {
                idx = -5;
                T_MPI(MPI_Waitany(2 * NCOMMS, r, &idx, MPI_STATUS_IGNORE));
                if (idx < 0 || idx >= 2 * NCOMMS || o[idx].done) {
                    t_fail("MPI_Waitany returned index %d", idx);
                    break;
                }
                o[idx].done = 1;
                t_op_check(&o[idx]);
            }
        }
        for (k = 0; k < 2 * NCOMMS; k++) {
            t_op_free(&o[k]);
        }
    }
    for (k = 1; k < NCOMMS; k++) {
        MPI_Comm_free(&c[k]);
    }
}

/* Part 3: free the communicator while its collectives are pending (MPI
 * allows it: the operations complete normally), then wait. */
static void free_while_pending(void)
{
    MPI_Request r[2];
    MPI_Comm    c;
    t_op_t      o[2];
    int         it, kind, csize;

    for (it = 0; it < 6; it++) {
        kind = it % K_NKINDS;
        t_case("free while pending %d: %s", it, kind_name[kind]);
        c = make_comm(kind);
        MPI_Comm_size(c, &csize);
        t_op_init(&o[0], T_A2A, c, MPI_BYTE, 100000, NULL, 0, 0,
                  "Ialltoall on a freed %s", kind_name[kind]);
        t_op_init(&o[1], T_BCAST, c, MPI_DOUBLE, 30000, NULL, csize - 1, 0,
                  "Ibcast on a freed %s", kind_name[kind]);
        t_op_post(&o[0], &r[0]);
        t_op_post(&o[1], &r[1]);
        T_MPI(MPI_Comm_free(&c));
        if (c != MPI_COMM_NULL) {
            t_fail("MPI_Comm_free did not set the handle to "
                   "MPI_COMM_NULL");
        }
        if (it % 2) {
            T_MPI(MPI_Waitall(2, r, t_statuses_ignore));
        } else {
            T_MPI(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
            T_MPI(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
        }
        t_op_check(&o[0]);
        t_op_check(&o[1]);
        t_op_free(&o[0]);
        t_op_free(&o[1]);
    }
}

/*
 * Last, as a hang here ends the program (through the watchdog): the
 * first collectives on two new communicators, posted in opposite orders
 * by even and odd ranks. Legal, as MPI_Ialltoall is local; it hangs if
 * starting a collective on a new communicator waits for the other ranks.
 */
static void new_comms_cross_order(void)
{
    MPI_Comm    c[2];
    MPI_Request r[2];
    t_op_t      o[2];
    int         k, j;

    t_case("first collectives on two new communicators posted in "
           "opposite orders by even and odd ranks (hangs if posting "
           "waits for other ranks)");
    if (t_skip_new_comm()) {
        return;
    }
    for (k = 0; k < 2; k++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &c[k]);
        t_op_init(&o[k], T_A2A, c[k], MPI_BYTE, 5000, NULL, 0, 0,
                  "first Ialltoall on new communicator %d", k);
    }
    for (j = 0; j < 2; j++) {
        k = (t.rank % 2) ? 1 - j : j;
        t_op_post(&o[k], &r[k]);
    }
    T_MPI(MPI_Waitall(2, r, t_statuses_ignore));
    for (k = 0; k < 2; k++) {
        t_op_check(&o[k]);
        t_op_free(&o[k]);
        MPI_Comm_free(&c[k]);
    }
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "t_comms");
    create_free_loop();
    many_at_once();
    free_while_pending();
    new_comms_cross_order();
    return t_finish();
}
