/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rank's progress thread (DPUSHIM_PROGRESS_THREAD): it progresses the
 * rank's UCX worker while the application is outside MPI.
 *
 * Agents reach the memory of ranks on other nodes with UCX get/put. Over
 * TCP and shared memory UCX 1.13 emulates those with messages that the
 * target's worker must handle, and the rank's worker otherwise moves only
 * when the rank calls MPI (shim_progress): a collective between hosts
 * stood still while its ranks computed or slept. This thread sleeps on
 * the worker's event fd (ucp_worker_arm, then poll, with a backstop) and
 * wakes for UCX's traffic or to stop; it progresses the worker under
 * shim.lock, which every user of the worker holds (the worker is
 * UCS_THREAD_MODE_SERIALIZED). Messages it takes in (a COMPLETE from an
 * agent on another host) wait in the inbox for the rank's next MPI call;
 * it never calls MPI. While an application thread polls in MPI (a wait:
 * shim_progress, shim_idle) the thread stands aside: the two working the
 * one worker on shared cores made waits longer. It blocks every signal,
 * stops for good when stock MPI takes over from a failed agent (no
 * emulated put may land after that), has no twin after fork(), and is
 * joined before the worker is destroyed.
 *
 * It is not the DMA engine (data/engine.c): the engine runs where the
 * ranks of one host copy with CMA, sleeps on a futex in the shared
 * segment and never touches UCX; this thread runs where UCX get/put reach
 * the rank (boot/connect.c decides), and has no other work.
 */
#define _GNU_SOURCE
#include "shim/core/shim.h"
#include "common/dps_log.h"
#include "common/dps_status.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* Longest sleep: a backstop should a wake-up be lost (UCX's event fd can
 * miss shared-memory arrivals; missed_wakeups in the statistics counts
 * them: one in 2 of 48 test runs, 0 in the others; or the backstop ran
 * out just as work came): short while collectives of this rank run,
 * long when none does (then no agent has business with our memory). Idle
 * here, 10 wake-ups a second took 0.15 % of a core, one a second 0.04 %. */
#define PROG_BACKSTOP_MS      100
#define PROG_IDLE_BACKSTOP_MS 1000

static struct {
    pthread_t       thr;
    int             running; /* the thread exists */
    int             started; /* it ran in this process */
    int             stop;    /* asked to stop (atomic) */
    int             stop_fd; /* eventfd: wakes it to stop */
    pthread_mutex_t lock;    /* start and stop */
    uint64_t        wakeups; /* sleeps ended, for the statistics */
    uint64_t        missed;  /* work found only by the backstop */
    uint64_t        cpu_ns;  /* its CPU time, when it ended */
} prog = {.stop_fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

static void *prog_main(void *arg)
{
    struct pollfd   pfd[2] = {{shim.chan.ucx.efd, POLLIN, 0},
                              {prog.stop_fd, POLLIN, 0}};
    struct timespec cpu;
    int             timed_out = 0;

    (void)arg;
    while (!__atomic_load_n(&prog.stop, __ATOMIC_ACQUIRE)) {
        ucs_status_t st = UCS_OK;
        double       until, aside;
        unsigned     did = 0, n;

        pthread_mutex_lock(&shim.lock);
        if (shim.fo.state != SHIM_FO_NONE || shim.chan.agent_dead) {
            /* Stock MPI has the collectives now: nothing may land in
             * their buffers any more. */
            pthread_mutex_unlock(&shim.lock);
            break;
        }
        __atomic_load(&shim.chan.app_until, &until, __ATOMIC_RELAXED);
        if ((aside = until - dps_now()) > 0) {
            /* The rank is in MPI and polls the worker itself (shim_idle,
             * shim_progress): keep out of its way until it may be gone. */
            struct timespec ts = {0, aside < 0.01 ? (long)(aside * 1e9) + 1
                                                  : 10000000L};

            pthread_mutex_unlock(&shim.lock);
            ppoll(&pfd[1], 1, &ts, NULL);
            timed_out = 0;
            continue;
        }
        while ((n = ucp_worker_progress(shim.chan.ucx.worker)) != 0) {
            did += n;
        }
        if (timed_out && did > 0) {
            prog.missed++;
        }
        timed_out = 0;
        if (pfd[0].fd >= 0) {
            st = ucp_worker_arm(shim.chan.ucx.worker);
        }
        pthread_mutex_unlock(&shim.lock);
        if (st == UCS_ERR_BUSY) {
            /* Events came meanwhile, or our sends wait for room at the
             * agent (shared-memory FIFO): progress again, but where
             * nothing moved let the agent run first. Spinning here took
             * the core the agent needed (1 MiB Ialltoall over UCX, 2
             * ranks on 2 cores: 4x the thread's CPU time, arrival later). */
            if (did == 0) {
                sched_yield();
            }
            continue;
        }
        if (st != UCS_OK) {
            dps_warn("progress thread: ucp_worker_arm: %s; polling every "
                     "%d ms instead",
                     ucs_status_string(st), PROG_BACKSTOP_MS);
            pfd[0].fd = -1;
        }
        n = (unsigned)poll(pfd, 2,
                           __atomic_load_n(&shim.live, __ATOMIC_RELAXED) > 0
                               ? PROG_BACKSTOP_MS
                               : PROG_IDLE_BACKSTOP_MS);
        if ((int)n < 0 && errno != EINTR) {
            dps_error("progress thread: poll: %m");
            break;
        }
        timed_out = (n == 0);
        prog.wakeups++;
    }
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0) {
        prog.cpu_ns =
            (uint64_t)cpu.tv_sec * 1000000000ull + (uint64_t)cpu.tv_nsec;
    }
    return NULL;
}

/* fork(): no thread progresses the worker in the middle of a call (the
 * child's copy of it is whole), and the child has no progress thread and
 * takes no part in offload. */
static void prog_atfork_prepare(void)
{
    pthread_mutex_lock(&shim.lock);
}

static void prog_atfork_parent(void)
{
    pthread_mutex_unlock(&shim.lock);
}

static void prog_atfork_child(void)
{
    pthread_mutex_unlock(&shim.lock);
    prog.running = 0;
    prog.stop_fd = -1; /* the parent's; closed with the process */
    pthread_mutex_init(&prog.lock, NULL);
}

int shim_prog_start(void)
{
    static int atfork_done;
    int        rc;

    pthread_mutex_lock(&prog.lock);
    if (prog.running) {
        pthread_mutex_unlock(&prog.lock);
        return DPS_OK;
    }
    if (!atfork_done) {
        pthread_atfork(prog_atfork_prepare, prog_atfork_parent,
                       prog_atfork_child);
        atfork_done = 1;
    }
    prog.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (prog.stop_fd < 0) {
        dps_warn("cannot start the progress thread (eventfd: %m): "
                 "collectives between hosts move only in MPI calls");
        pthread_mutex_unlock(&prog.lock);
        return DPS_ERR_IO;
    }
    prog.stop = 0;
    rc = shim_thread_start(&prog.thr, prog_main, NULL);
    if (rc != 0) {
        dps_warn("cannot start the progress thread: %s: collectives "
                 "between hosts move only in MPI calls",
                 strerror(rc));
        close(prog.stop_fd);
        prog.stop_fd = -1;
        pthread_mutex_unlock(&prog.lock);
        return DPS_ERR_NOMEM;
    }
    pthread_setname_np(prog.thr, "dpushim-prog");
    prog.running = 1;
    prog.started = 1;
    pthread_mutex_unlock(&prog.lock);
    return DPS_OK;
}

void shim_prog_stop(void)
{
    uint64_t one = 1;

    pthread_mutex_lock(&prog.lock);
    if (!prog.running) {
        pthread_mutex_unlock(&prog.lock);
        return;
    }
    __atomic_store_n(&prog.stop, 1, __ATOMIC_RELEASE);
    if (write(prog.stop_fd, &one, sizeof(one)) < 0) {
        /* it wakes at the backstop */
    }
    pthread_join(prog.thr, NULL);
    prog.running = 0;
    close(prog.stop_fd);
    prog.stop_fd = -1;
    pthread_mutex_unlock(&prog.lock);
}

void shim_prog_stats(uint64_t *ran, uint64_t *wakeups, uint64_t *missed,
                     uint64_t *cpu_ns)
{
    *ran = (uint64_t)prog.started;
    *wakeups = prog.wakeups;
    *missed = prog.missed;
    *cpu_ns = prog.cpu_ns;
}
