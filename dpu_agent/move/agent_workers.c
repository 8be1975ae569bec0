/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent's workers (dpu_agent --workers N, DESIGN.md decision 14): N
 * threads that move the bytes while the event loop keeps every piece of
 * bookkeeping, the network and the ranks' messages. A worker takes whole
 * jobs: a staged chunk whose every stage is synchronous (read the
 * source, read the destination and reduce, write the destination, by
 * CMA or by DMA through a grant; or write a pushed piece), or the reads
 * of one bundle of pushed pieces for another agent (agent_push.c), so
 * that a DPU's cores share its chunks and its peers.
 *
 * No lock on the way: each worker has a ring of its own that only the
 * loop fills and only the worker empties (head and tail with acquire and
 * release); a job's end is a flag the loop reads, and a write to an
 * eventfd that wakes the loop if it sleeps. A worker with nothing to do
 * sleeps on an eventfd of its own (where the agent polls, as on a DPU's
 * own cores, it polls instead).
 */
#define _GNU_SOURCE
#include "dpu_agent/move/agent_move.h"
#include "dpu_agent/move/agent_movers.h"
#include "common/dps_log.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define RING               256 /* jobs queued to one worker at most (a power of 2) */
/* A sleeping worker looks at its ring at least this often. */
#define WORKER_BACKSTOP_MS 10

typedef struct agent_worker {
    pthread_t             thr;
    agent_job_t          *ring[RING];
    unsigned              head; /* the worker's: next job to take */
    unsigned              tail; /* the loop's: next free entry */
    int                   efd;  /* wakes the worker */
    int                   sleeping;
    int                   stop;
    struct agent_workers *pool;
} agent_worker_t;

typedef struct agent_workers {
    agent_t        *a;
    agent_worker_t *w;
    unsigned        n;
    int             done_fd; /* wakes the loop: a job ended */
} agent_workers_t;

static agent_job_t *ring_pop(agent_worker_t *w)
{
    unsigned     h = w->head;
    agent_job_t *j;

    if (h == __atomic_load_n(&w->tail, __ATOMIC_ACQUIRE)) {
        return NULL;
    }
    j = w->ring[h % RING];
    __atomic_store_n(&w->head, h + 1, __ATOMIC_RELEASE);
    return j;
}

static void *worker_main(void *arg)
{
    agent_worker_t *w = arg;
    agent_t        *a = w->pool->a;
    unsigned        idle = 0;

    while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
        agent_job_t *j = ring_pop(w);
        uint64_t     v = 1;

        if (j != NULL) {
            idle = 0;
            j->run(a, j);
            __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
            if (write(w->pool->done_fd, &v, sizeof(v)) != sizeof(v)) {
                /* the loop polls the flags too */
            }
            continue;
        }
        if (a->poll || ++idle < 1000) {
            dps_cpu_relax();
            continue;
        }
        /* Sleep until the loop queues a job: it writes efd if it sees
         * us sleeping after its store of the tail (full fences on both
         * sides: a store, then a load of the other's flag). The timeout
         * is a backstop only: qemu-user was seen to lose that ordering
         * between an Arm agent's threads. */
        __atomic_store_n(&w->sleeping, 1, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if (w->head == __atomic_load_n(&w->tail, __ATOMIC_RELAXED) &&
            !__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
            struct pollfd pfd = {w->efd, POLLIN, 0};

            if (poll(&pfd, 1, WORKER_BACKSTOP_MS) > 0 &&
                read(w->efd, &v, sizeof(v)) < 0 && errno != EINTR &&
                errno != EAGAIN) {
                dps_error("worker: read: %m");
            }
        }
        __atomic_store_n(&w->sleeping, 0, __ATOMIC_RELAXED);
        idle = 0;
    }
    return NULL;
}

int agent_copy_fd(const agent_t *a)
{
    return a->workers != NULL ? a->workers->done_fd : -1;
}

void agent_workers_stop(agent_t *a)
{
    agent_workers_t *p = a->workers;

    if (p == NULL) {
        return;
    }
    for (unsigned i = 0; i < p->n; i++) {
        uint64_t v = 1;

        __atomic_store_n(&p->w[i].stop, 1, __ATOMIC_RELEASE);
        if (write(p->w[i].efd, &v, sizeof(v)) != sizeof(v)) {
            /* it polls stop too */
        }
        pthread_join(p->w[i].thr, NULL);
        close(p->w[i].efd);
    }
    if (p->done_fd >= 0) {
        close(p->done_fd);
    }
    free(p->w);
    free(p);
    a->workers = NULL;
}

/* Started at the first job, after the spawning rank set our CPU mask and
 * scheduling: threads inherit both from the loop's thread. */
static int workers_start(agent_t *a)
{
    agent_workers_t   *p = calloc(1, sizeof(*p));
    struct epoll_event ev;

    if (p == NULL || (p->w = calloc(a->nworkers, sizeof(*p->w))) == NULL) {
        free(p);
        return -1;
    }
    p->a = a;
    p->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    a->workers = p;
    if (p->done_fd < 0) {
        agent_workers_stop(a);
        return -1;
    }
    for (unsigned i = 0; i < a->nworkers; i++) {
        agent_worker_t *w = &p->w[i];

        w->pool = p;
        w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->efd < 0 || pthread_create(&w->thr, NULL, worker_main, w) != 0) {
            if (w->efd >= 0) {
                close(w->efd);
            }
            break;
        }
        p->n++;
    }
    if (p->n == 0) {
        agent_workers_stop(a);
        return -1;
    }
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    ev.data.fd = p->done_fd;
    if (epoll_ctl(a->epfd, EPOLL_CTL_ADD, p->done_fd, &ev) != 0) {
        dps_error("epoll_ctl(workers): %m");
    }
    return 0;
}

int agent_workers_submit(agent_t *a, unsigned hint, agent_job_t *j)
{
    agent_worker_t *w;
    unsigned        t;
    uint64_t        v = 1;

    if (a->nworkers < 2 || (a->workers == NULL && workers_start(a) != 0)) {
        return -1;
    }
    w = &a->workers->w[hint % a->workers->n];
    t = w->tail;
    if (t - __atomic_load_n(&w->head, __ATOMIC_ACQUIRE) >= RING) {
        return -1; /* full: the caller does it itself */
    }
    j->done = 0;
    w->ring[t % RING] = j;
    __atomic_store_n(&w->tail, t + 1, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&w->sleeping, __ATOMIC_RELAXED) &&
        write(w->efd, &v, sizeof(v)) != sizeof(v)) {
        dps_error("waking a worker: %m");
    }
    return 0;
}

void agent_workers_drain(agent_t *a)
{
    int      fd = agent_copy_fd(a);
    uint64_t v;

    if (fd >= 0 && read(fd, &v, sizeof(v)) < 0) {
        /* EAGAIN: nothing signalled since */
    }
}
