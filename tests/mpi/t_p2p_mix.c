/* SPDX-License-Identifier: BSD-3-Clause */
/* Offloaded collectives mixed with large (rendezvous) point-to-point
 * messages between ranks 0 and 1, in orders that must not deadlock. */
#include "tcommon.h"

#define MSG_BYTES    (8u * 1024 * 1024) /* above every eager limit */
#define TAG          42
#define POLL_TIMEOUT 10.0

enum { C_WAITALL, C_WAITANY, C_WAITSOME };

static const char *how_name[] = {"MPI_Waitall", "MPI_Waitany", "MPI_Waitsome"};

/* The 8 MiB message of one case: pattern (seed, 0, 1) from rank 0. */
typedef struct {
    uint32_t seed;
    void    *buf;
} msg_t;

static void msg_init(msg_t *m, int sender)
{
    m->seed = t_seed();
    m->buf = t_galloc(MSG_BYTES);
    if (t.rank == sender) {
        t_pat_fill(m->buf, MSG_BYTES, m->seed, sender, 1 - sender);
    }
}

static void msg_check(msg_t *m, int sender, MPI_Status *st)
{
    int n = -1;

    t_pat_check("8 MiB message", m->buf, MSG_BYTES, m->seed, sender,
                1 - sender);
    t_gcheck("8 MiB message", m->buf, MSG_BYTES);
    if (st != NULL) {
        MPI_Get_count(st, MPI_BYTE, &n);
        if (st->MPI_SOURCE != sender || st->MPI_TAG != TAG ||
            n != (int)MSG_BYTES) {
            t_fail("receive status: source %d, tag %d, count %d; expected "
                   "%d, %d, %u",
                   st->MPI_SOURCE, st->MPI_TAG, n, sender, TAG, MSG_BYTES);
        }
    }
    t_gfree(m->buf);
}

/* Rank 0 completes its collective and its Isend together with how;
 * rank 1 receives the message first and only then posts the collective;
 * the other ranks just run the collective. */
static void send_then_post(t_op_t *o, int how)
{
    MPI_Request r[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status  st[3];
    int         seen[3] = {0, 0, 0}, idx[3], i, k, n, out, left = 2;
    int         ia, is; /* slots of the collective and of the Isend */
    msg_t       m;

    msg_init(&m, 0);
    if (t.rank == 0) {
        /* Waitall: [coll, send]; Waitany: [send, coll]; Waitsome:
         * [coll, null, send]. */
        ia = (how == C_WAITANY) ? 1 : 0;
        is = (how == C_WAITALL) ? 1 : (how == C_WAITANY) ? 0 : 2;
        n = (how == C_WAITSOME) ? 3 : 2;
        t_op_post(o, &r[ia]);
        T_MPI(MPI_Isend(m.buf, (int)MSG_BYTES, MPI_BYTE, 1, TAG,
                        MPI_COMM_WORLD, &r[is]));
        if (how == C_WAITALL) {
            T_MPI(MPI_Waitall(n, r, st));
            left = 0;
        }
        for (k = 0; left > 0 && k < 2; k++) {
            if (how == C_WAITANY) {
                i = -5;
                T_MPI(MPI_Waitany(n, r, &i, MPI_STATUS_IGNORE));
                if (i != ia && i != is) {
                    t_fail("MPI_Waitany returned index %d", i);
                    break;
                }
                out = 1;
                idx[0] = i;
            } else {
                out = -5;
                T_MPI(MPI_Waitsome(n, r, &out, idx, st));
                if (out < 1 || out > left) {
                    t_fail("MPI_Waitsome returned outcount %d with %d "
                           "active",
                           out, left);
                    break;
                }
            }
            for (i = 0; i < out; i++) {
                if ((idx[i] != ia && idx[i] != is) || seen[idx[i]]) {
                    t_fail("%s returned index %d (collective %d, send %d)",
                           how_name[how], idx[i], ia, is);
                    continue;
                }
                seen[idx[i]] = 1;
                left--;
            }
        }
        for (i = 0; i < n; i++) {
            if (r[i] != MPI_REQUEST_NULL) {
                t_fail("%s left request %d active", how_name[how], i);
            }
        }
        msg_check(&m, 0, NULL);
    } else {
        if (t.rank == 1) {
            T_MPI(MPI_Recv(m.buf, (int)MSG_BYTES, MPI_BYTE, 0, TAG,
                           MPI_COMM_WORLD, &st[0]));
            msg_check(&m, 0, &st[0]);
        } else {
            t_gfree(m.buf);
        }
        t_op_post(o, &r[0]);
        T_MPI(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
    }
    t_op_check(o);
}

/* Everybody posts; rank 1 then sends with a blocking MPI_Send which rank
 * 0 receives with a blocking MPI_Recv; then everybody waits. */
static void post_then_blocking_p2p(t_op_t *o)
{
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Status  st;
    msg_t       m;

    msg_init(&m, 1);
    t_op_post(o, &r);
    if (t.rank == 1) {
        T_MPI(
            MPI_Send(m.buf, (int)MSG_BYTES, MPI_BYTE, 0, TAG, MPI_COMM_WORLD));
        t_gfree(m.buf);
    } else if (t.rank == 0) {
        T_MPI(MPI_Recv(m.buf, (int)MSG_BYTES, MPI_BYTE, 1, TAG, MPI_COMM_WORLD,
                       &st));
        msg_check(&m, 1, &st);
    } else {
        t_gfree(m.buf);
    }
    T_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    t_op_check(o);
}

/*
 * Rank 0 completes its collective before it sends, while rank 1 sits in
 * a blocking MPI_Recv for that message with its own collective posted.
 * MPI's progress rule makes this correct: every rank has started the
 * collective, and rank 1 is inside MPI. Rank 0 polls with MPI_Test for
 * at most POLL_TIMEOUT seconds (so that a failure is reported instead of
 * hanging), then sends anyway and waits.
 */
static void complete_before_send(t_op_t *o)
{
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Status  st;
    double      t0;
    int         flag = 0;
    msg_t       m;

    msg_init(&m, 0);
    t_op_post(o, &r);
    if (t.rank == 0) {
        t0 = t_now();
        while (!flag && t_now() - t0 < POLL_TIMEOUT) {
            T_MPI(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
        }
        if (!flag) {
            t_fail("collective not complete after %.0f s while rank 1 "
                   "waits in a blocking MPI_Recv (no progress unless rank "
                   "1 calls a completion function?)",
                   POLL_TIMEOUT);
        } else {
            t_op_check(o);
        }
        T_MPI(
            MPI_Send(m.buf, (int)MSG_BYTES, MPI_BYTE, 1, TAG, MPI_COMM_WORLD));
        t_gfree(m.buf);
        T_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        if (!flag) {
            t_op_check(o);
        }
        return;
    }
    if (t.rank == 1) {
        T_MPI(MPI_Recv(m.buf, (int)MSG_BYTES, MPI_BYTE, 0, TAG, MPI_COMM_WORLD,
                       &st));
        msg_check(&m, 0, &st);
    } else {
        t_gfree(m.buf);
    }
    T_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    t_op_check(o);
}

int main(int argc, char **argv)
{
    MPI_Comm fresh;
    t_op_t   o;
    int      how, last;

    t_init(&argc, &argv, "t_p2p_mix");
    if (t.size < 2) {
        t_fail("needs at least 2 ranks");
        return t_finish();
    }
    last = t.size - 1;

    /* Make MPI_COMM_WORLD known to the shim first (see the last case). */
    t_case("warm-up Ialltoall on MPI_COMM_WORLD");
    t_op_init(&o, T_A2A, MPI_COMM_WORLD, MPI_INT, 1000, NULL, 0, 0,
              "warm-up Ialltoall");
    t_op_post(&o, NULL);
    T_MPI(MPI_Wait(&o.req, MPI_STATUS_IGNORE));
    t_op_check(&o);
    t_op_free(&o);

    for (how = C_WAITALL; how <= C_WAITSOME; how++) {
        t_case("Ialltoall + 8 MiB Isend completed by %s; rank 1 receives "
               "before posting",
               how_name[how]);
        t_op_init(&o, T_A2A, MPI_COMM_WORLD, MPI_BYTE, 65536, NULL, 0, 0,
                  "Ialltoall 65536 x MPI_BYTE");
        send_then_post(&o, how);
        t_op_free(&o);
    }
    for (how = C_WAITALL; how <= C_WAITSOME; how++) {
        int root = (how == C_WAITANY) ? 0 : 1;

        t_case("Ibcast root %d + 8 MiB Isend completed by %s; rank 1 "
               "receives before posting",
               root, how_name[how]);
        t_op_init(&o, T_BCAST, MPI_COMM_WORLD, MPI_DOUBLE, 131072, NULL, root,
                  0, "Ibcast 131072 x MPI_DOUBLE root %d", root);
        send_then_post(&o, how);
        t_op_free(&o);
    }

    t_case("Ialltoall pending across a blocking MPI_Send/MPI_Recv");
    t_op_init(&o, T_A2A, MPI_COMM_WORLD, MPI_DOUBLE, 4096, NULL, 0, 0,
              "Ialltoall 4096 x MPI_DOUBLE");
    post_then_blocking_p2p(&o);
    t_op_free(&o);
    t_case("Ibcast root %d pending across a blocking MPI_Send/MPI_Recv", last);
    t_op_init(&o, T_BCAST, MPI_COMM_WORLD, MPI_BYTE, 1000003, NULL, last, 0,
              "Ibcast 1000003 x MPI_BYTE root %d", last);
    post_then_blocking_p2p(&o);
    t_op_free(&o);

    t_case("rank 0 completes its Ialltoall while rank 1 is in a blocking "
           "MPI_Recv");
    t_op_init(&o, T_A2A, MPI_COMM_WORLD, MPI_INT, 16384, NULL, 0, 0,
              "Ialltoall 16384 x MPI_INT");
    complete_before_send(&o);
    t_op_free(&o);
    t_case("rank 0 completes its Ibcast (root %d) while rank 1 is in a "
           "blocking MPI_Recv",
           last);
    t_op_init(&o, T_BCAST, MPI_COMM_WORLD, MPI_BYTE, 65536, NULL, last, 0,
              "Ibcast 65536 x MPI_BYTE root %d", last);
    complete_before_send(&o);
    t_op_free(&o);

    /*
     * Last, as a hang here ends the program (through the watchdog): the
     * first collective on a new communicator. MPI_Ialltoall is local, so
     * rank 0 must return from it and post its Isend although rank 1 has
     * not posted its MPI_Ialltoall yet (it is waiting for that message).
     */
    t_case("first collective on a new communicator: Ialltoall + Isend by "
           "MPI_Waitall; rank 1 receives before posting (hangs if "
           "MPI_Ialltoall blocks)");
    if (t_skip_new_comm()) {
        return t_finish();
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &fresh);
    t_op_init(&o, T_A2A, fresh, MPI_BYTE, 4096, NULL, 0, 0,
              "Ialltoall on a new communicator 4096 x MPI_BYTE");
    send_then_post(&o, C_WAITALL);
    t_op_free(&o);
    MPI_Comm_free(&fresh);
    return t_finish();
}
