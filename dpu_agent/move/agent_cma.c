/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The staged path's copies for ranks of this host: a chunk read or
 * written with process_vm_readv/writev (CMA), by the main thread or, with
 * DPUSHIM_PIPELINE_DEPTH > 1, by copy threads that each carry a whole
 * chunk (agent_exec.c keeps the slots and all the bookkeeping).
 */
#define _GNU_SOURCE
#include "dpu_agent/move/agent_move.h"
#include "dpu_agent/move/agent_movers.h"
#include "common/dps_log.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

/*
 * CMA copy threads. process_vm_readv/writev are synchronous, so with one
 * thread the agent reads a chunk, then writes it, then reads the next: two
 * copies' time per byte. With DPUSHIM_PIPELINE_DEPTH = n > 1, n threads
 * each take a chunk (read into its own staging slot, write out), so reads
 * and writes of different chunks run at once on the cores the agent may
 * use. The main thread keeps all the bookkeeping; a thread touches only
 * its slot and reads the move's addresses, which stay put while the slot
 * is out.
 */
typedef struct agent_copiers {
    agent_t        *a;
    pthread_t      *thr;
    unsigned        nthr;
    pthread_mutex_t lock;
    pthread_cond_t  cond;
    agent_slot_t  **ring; /* jobs, nslots entries */
    unsigned        head, n;
    int             stop;
    int             done_fd; /* eventfd: a slot finished */
} agent_copiers_t;

ucs_status_t agent_cma_stage(agent_t *a, agent_slot_t *s, int stage,
                             uint32_t world)
{
    agent_move_t *m = s->move;
    uint64_t      raddr = (stage == 1 ? m->src_addr : m->dst_addr) + s->off;
    char         *local =
        stage == 1 ? s->data : (m->op != DPS_OP_NONE ? s->aux : s->data);
    size_t done = 0;

    while (done < s->len) {
        struct iovec l = {local + done, s->len - done};
        struct iovec r = {(void *)(uintptr_t)(raddr + done), s->len - done};
        ssize_t n = (stage != 2) ? process_vm_readv((pid_t)a->rank_pid[world],
                                                    &l, 1, &r, 1, 0)
                                 : process_vm_writev((pid_t)a->rank_pid[world],
                                                     &l, 1, &r, 1, 0);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            dps_error("%s %zu bytes at %#llx of rank %u (pid %u): %s",
                      stage != 2 ? "reading" : "writing", s->len - done,
                      (unsigned long long)(raddr + done), world,
                      a->rank_pid[world], n < 0 ? strerror(errno) : "eof");
            return UCS_ERR_IO_ERROR;
        }
        done += (size_t)n;
    }
    return UCS_OK;
}

/* eventfd the copy threads signal, or -1 (none yet). */
int agent_copy_fd(const agent_t *a)
{
    return a->copiers != NULL ? a->copiers->done_fd : -1;
}

/* A copy thread's whole chunk: read, (read and reduce,) write. */
static void copier_job(agent_t *a, agent_slot_t *s)
{
    agent_move_t *m = s->move;
    uint32_t      src = world_of(m, m->src), dst = world_of(m, m->dst);

    s->status = agent_cma_stage(a, s, 1, src);
    if (s->status == UCS_OK && m->op != DPS_OP_NONE) {
        s->status = agent_cma_stage(a, s, 3, dst);
        if (s->status == UCS_OK) {
            s->status = agent_slot_reduce(s);
        }
    }
    s->wstatus =
        s->status != UCS_OK ? s->status : agent_cma_stage(a, s, 2, dst);
}

static void *copier_main(void *arg)
{
    agent_copiers_t *cp = arg;
    agent_t         *a = cp->a;

    for (;;) {
        agent_slot_t *s;
        uint64_t      one = 1;

        pthread_mutex_lock(&cp->lock);
        while (cp->n == 0 && !cp->stop) {
            pthread_cond_wait(&cp->cond, &cp->lock);
        }
        if (cp->n == 0) {
            pthread_mutex_unlock(&cp->lock);
            return NULL;
        }
        s = cp->ring[cp->head];
        cp->head = (cp->head + 1) % a->nslots;
        cp->n--;
        pthread_mutex_unlock(&cp->lock);

        copier_job(a, s);
        __atomic_store_n(&s->completed, 1, __ATOMIC_RELEASE);
        if (write(cp->done_fd, &one, sizeof(one)) != sizeof(one)) {
            /* the main thread also polls the flags */
        }
    }
}

void agent_copiers_stop(agent_t *a)
{
    agent_copiers_t *cp = a->copiers;
    unsigned         i;

    if (cp == NULL) {
        return;
    }
    pthread_mutex_lock(&cp->lock);
    cp->stop = 1;
    pthread_cond_broadcast(&cp->cond);
    pthread_mutex_unlock(&cp->lock);
    for (i = 0; i < cp->nthr; i++) {
        pthread_join(cp->thr[i], NULL);
    }
    if (cp->done_fd >= 0) {
        close(cp->done_fd);
    }
    pthread_mutex_destroy(&cp->lock);
    pthread_cond_destroy(&cp->cond);
    free(cp->thr);
    free(cp->ring);
    free(cp);
    a->copiers = NULL;
}

/* The copy threads exist now: the event loop wakes when they signal. */
static void copiers_watch(agent_t *a)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    ev.data.fd = agent_copy_fd(a);
    if (epoll_ctl(a->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev) != 0) {
        dps_error("epoll_ctl(copy threads): %m");
    }
}

/* Started at the first job, after the spawning rank set our CPU mask and
 * scheduling: threads inherit both from the main thread. */
static int copiers_start(agent_t *a)
{
    agent_copiers_t *cp = calloc(1, sizeof(*cp));
    unsigned         i;

    if (cp == NULL) {
        return -1;
    }
    cp->a = a;
    cp->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    cp->thr = calloc(a->nslots, sizeof(*cp->thr));
    cp->ring = calloc(a->nslots, sizeof(*cp->ring));
    pthread_mutex_init(&cp->lock, NULL);
    pthread_cond_init(&cp->cond, NULL);
    a->copiers = cp;
    if (cp->done_fd < 0 || cp->thr == NULL || cp->ring == NULL) {
        agent_copiers_stop(a);
        return -1;
    }
    for (i = 0; i < a->nslots; i++) {
        if (pthread_create(&cp->thr[i], NULL, copier_main, cp) != 0) {
            break;
        }
        cp->nthr++;
    }
    if (cp->nthr == 0) {
        agent_copiers_stop(a);
        return -1;
    }
    copiers_watch(a);
    return 0;
}

int agent_copiers_submit(agent_t *a, agent_slot_t *s)
{
    agent_copiers_t *cp;

    if (a->copiers == NULL && copiers_start(a) != 0) {
        return -1;
    }
    cp = a->copiers;
    s->threaded = 1;
    __atomic_store_n(&s->completed, 0, __ATOMIC_RELAXED);
    pthread_mutex_lock(&cp->lock);
    cp->ring[(cp->head + cp->n) % a->nslots] = s;
    cp->n++;
    pthread_cond_signal(&cp->cond);
    pthread_mutex_unlock(&cp->lock);
    a->copy_jobs++;
    return 0;
}
