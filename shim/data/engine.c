/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulated DMA engine of a rank (DESIGN, decision 9). On a BlueField
 * the NIC's DMA engine moves each byte once, host to host, at the DPU's
 * command. Here a thread of the rank's own process stands in for it: it
 * takes copy commands from its agent (the shared-memory cmd ring), reads
 * each block with process_vm_readv from the source rank straight into
 * this process's buffer, one copy per byte, and reports it done. It never
 * calls MPI and never touches UCX; it blocks every signal; it spins a
 * little after work and then sleeps on a futex in the segment, which the
 * agent bumps when it sees the engine asleep.
 *
 * A rank that waits in MPI for offloaded requests runs queued commands
 * itself (shim_engine_help) rather than waking the thread: the same
 * engine, without a context switch. One executor at a time holds
 * eng.lock, so commands finish in order and the done ring has one
 * producer.
 */
#define _GNU_SOURCE
#include "shim/base/state.h"
#include "shim/data/engine.h"
#include "shim/data/flat.h"
#include "shim/data/iov.h"
#include "common/dps_log.h"
#include "common/dps_proto.h"
#include "common/dps_sched.h"
#include "common/dps_status.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* Keep polling this long after work or a post: the next command is due
 * soon, and waking a sleeping engine (a futex wake, ~28 us across idle
 * cores of this VM) costs more than a small copy. The polling yields:
 * the rank on the same core runs whenever it wants to. Measured (1 KiB
 * Ialltoall pure time, 64 KiB idle-host time, 1 MiB pure time): 30 us of
 * polling 50 / 85 / 168 us, 200 us 40 / 80 / 169 us; SCHED_IDLE polling
 * without yielding 131 / 121 / 389 us (a rank's sched_yield hands the
 * core to it for a whole slice). */
#define ENGINE_SPIN_SEC    200e-6
#define ENGINE_BACKSTOP_NS 100000000L    /* longest sleep: 100 ms */
#define ENGINE_SCRATCH     (256u * 1024) /* a reduction's source, in pieces */

static struct {
    dps_shm_t      *shm;
    pid_t           agent_pid; /* kicked when a done lands and it sleeps */
    pid_t           self;
    pthread_t       thr;
    int             running; /* the thread exists */
    int             stop;    /* asked to stop (atomic) */
    pthread_mutex_t lock;    /* one executor at a time */
    uint64_t        copies, bytes;
} eng = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Copy one command's bytes into our memory. */
static int copy_in(const dps_cmd_t *c)
{
    char           *dst = (char *)(uintptr_t)c->dst_addr;
    shim_scatter_t *m = shim_iov_region(c->dst_addr, c->len);
    uint64_t        done = 0;

    if (m != NULL) {
        return shim_iov_scatter_in(m, c);
    }
    if ((pid_t)c->src_pid == eng.self) {
        memmove(dst, (const void *)(uintptr_t)c->src_addr, c->len);
        return DPS_OK;
    }
    while (done < c->len) {
        struct iovec l = {dst + done, c->len - done};
        struct iovec r = {(void *)(uintptr_t)(c->src_addr + done),
                          c->len - done};
        ssize_t      n = process_vm_readv((pid_t)c->src_pid, &l, 1, &r, 1, 0);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            dps_error("engine: reading %llu bytes at %#llx of pid %u: %s",
                      (unsigned long long)(c->len - done),
                      (unsigned long long)(c->src_addr + done), c->src_pid,
                      n < 0 ? strerror(errno) : "nothing read");
            return DPS_ERR_IO;
        }
        done += (uint64_t)n;
    }
    return DPS_OK;
}

/*
 * Read and reduce: dst = src (op) dst, element-wise. From another process
 * the source comes through a scratch buffer, a whole number of elements
 * at a time; from our own memory it is reduced in place.
 */
static int reduce_in(const dps_cmd_t *c)
{
    static char scratch[ENGINE_SCRATCH];
    size_t      es = dps_dtype_size(c->dtype), step;
    char       *dst = (char *)(uintptr_t)c->dst_addr;
    uint64_t    done = 0;

    if (shim_iov_region(c->dst_addr, c->len) != NULL) {
        /* Never scheduled (core/sched.c, reads_recv): a bug. */
        dps_error("engine: reduction into a region read into place");
        return DPS_ERR_PROTO;
    }
    if (es == 0 || c->len % es != 0 || !dps_op_valid(c->rop, c->dtype)) {
        dps_error("engine: reduction %u on type %u of %llu bytes refused",
                  c->rop, c->dtype, (unsigned long long)c->len);
        return DPS_ERR_PROTO;
    }
    if ((pid_t)c->src_pid == eng.self) {
        return dps_reduce(c->rop, c->dtype,
                          (const void *)(uintptr_t)c->src_addr, dst,
                          c->len) == DPS_OK
                   ? DPS_OK
                   : DPS_ERR_PROTO;
    }
    step = (sizeof(scratch) / es) * es;
    while (done < c->len) {
        size_t n = c->len - done < step ? c->len - done : step, got = 0;

        while (got < n) {
            struct iovec l = {scratch + got, n - got};
            struct iovec r = {(void *)(uintptr_t)(c->src_addr + done + got),
                              n - got};
            ssize_t k = process_vm_readv((pid_t)c->src_pid, &l, 1, &r, 1, 0);

            if (k < 0 && errno == EINTR) {
                continue;
            }
            if (k <= 0) {
                dps_error("engine: reading %zu bytes at %#llx of pid %u: %s",
                          n - got,
                          (unsigned long long)(c->src_addr + done + got),
                          c->src_pid, k < 0 ? strerror(errno) : "nothing");
                return DPS_ERR_IO;
            }
            got += (size_t)k;
        }
        dps_reduce(c->rop, c->dtype, scratch, dst + done, n);
        done += n;
    }
    return DPS_OK;
}

/* Run every queued command (lock held); the number run. */
static int run_queued(void)
{
    dps_shm_t *s = eng.shm;
    dps_cmd_t  c;
    int        n = 0;

    while (!__atomic_load_n(&eng.stop, __ATOMIC_ACQUIRE) &&
           dps_shm_cmd_get(s, &c) == DPS_OK) {
        dps_done_t d = {c.id, DPS_OK, 0};

        if (c.op == DPS_CMD_READ) {
            d.status = copy_in(&c);
            eng.copies++;
            eng.bytes += c.len;
        } else if (c.op == DPS_CMD_READ_GATHER) {
            d.status = shim_iov_gather_in(&c);
            eng.copies++;
            eng.bytes += c.len;
        } else if (c.op == DPS_CMD_READ_REDUCE) {
            d.status = reduce_in(&c); /* the lock: one scratch user */
            eng.copies++;
            eng.bytes += c.len;
        } else {
            d.status = DPS_ERR_PROTO;
        }
        /* The agent keeps no more commands out than the ring holds, so
         * there is always room for the done entry. */
        while (dps_shm_done_put(s, &d) != DPS_OK) {
            if (__atomic_load_n(&eng.stop, __ATOMIC_ACQUIRE)) {
                return n;
            }
        }
        n++;
    }
    if (n > 0) {
        dps_shm_fence();
        if (__atomic_load_n(&s->agent_sleeping, __ATOMIC_RELAXED)) {
            dps_kick((int)eng.agent_pid, DPS_KICK_AGENT);
        }
    }
    return n;
}

void shim_engine_poke(void)
{
    dps_shm_t *s = eng.shm;

    if (s != NULL && __atomic_load_n(&s->engine_sleeping, __ATOMIC_RELAXED)) {
        __atomic_add_fetch(&s->engine_wake, 1, __ATOMIC_RELEASE);
        dps_shm_futex_wake(&s->engine_wake);
    }
}

int shim_engine_scatter_add(shim_scatter_t *m)
{
    return eng.running && shim_iov_add(m);
}

int shim_engine_running(void)
{
    return eng.running;
}

int shim_engine_help(void)
{
    int n;

    if (eng.shm == NULL || !dps_shm_cmd_ready(eng.shm) ||
        pthread_mutex_trylock(&eng.lock) != 0) {
        return 0;
    }
    n = eng.shm != NULL ? run_queued() : 0; /* stopped meanwhile? */
    pthread_mutex_unlock(&eng.lock);
    return n;
}

static void *engine_main(void *arg)
{
    dps_shm_t *s = eng.shm;
    double     spin_until = dps_now() + ENGINE_SPIN_SEC;

    (void)arg;
    while (!__atomic_load_n(&eng.stop, __ATOMIC_ACQUIRE)) {
        uint32_t v;
        int      n = 0;

        if (dps_shm_cmd_ready(s)) {
            pthread_mutex_lock(&eng.lock);
            n = run_queued();
            pthread_mutex_unlock(&eng.lock);
        }
        if (n > 0) {
            spin_until = dps_now() + ENGINE_SPIN_SEC;
            continue;
        }
        if (dps_now() < spin_until) {
            sched_yield();
            continue;
        }
        /* Sleep until the agent bumps engine_wake (it looks at
         * engine_sleeping after queueing a command). */
        v = __atomic_load_n(&s->engine_wake, __ATOMIC_ACQUIRE);
        __atomic_store_n(&s->engine_sleeping, 1, __ATOMIC_RELAXED);
        dps_shm_fence();
        if (!dps_shm_cmd_ready(s) &&
            !__atomic_load_n(&eng.stop, __ATOMIC_ACQUIRE)) {
            dps_shm_futex_wait(&s->engine_wake, v, ENGINE_BACKSTOP_NS);
        }
        __atomic_store_n(&s->engine_sleeping, 0, __ATOMIC_RELAXED);
        spin_until = dps_now() + ENGINE_SPIN_SEC;
    }
    return NULL;
}

/* fork(): the child has no engine thread (boot/init.c clears shim.active
 * there). */
static void engine_atfork_child(void)
{
    eng.running = 0;
    eng.shm = NULL;
    pthread_mutex_init(&eng.lock, NULL);
}

int shim_engine_start(dps_shm_t *shm, pid_t agent_pid)
{
    static int atfork_done;
    int        rc;

    if (!atfork_done) {
        pthread_atfork(NULL, NULL, engine_atfork_child);
        atfork_done = 1;
    }
    eng.shm = shm;
    eng.agent_pid = agent_pid;
    eng.self = getpid();
    shim_iov_init(eng.self);
    eng.stop = 0;
    rc = shim_thread_start(&eng.thr, engine_main, NULL);
    if (rc != 0) {
        dps_warn("cannot start the DMA engine thread: %s; the agent copies "
                 "through its staging buffers instead",
                 strerror(rc));
        eng.shm = NULL;
        return DPS_ERR_NOMEM;
    }
    pthread_setname_np(eng.thr, "dpushim-dma");
    eng.running = 1;
    __atomic_store_n(&shm->engine_up, 1, __ATOMIC_RELEASE);
    return DPS_OK;
}

void shim_engine_stop(void)
{
    dps_shm_t *s = eng.shm;

    if (!eng.running) {
        return;
    }
    __atomic_store_n(&s->engine_up, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&eng.stop, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&s->engine_wake, 1, __ATOMIC_RELEASE);
    dps_shm_futex_wake(&s->engine_wake);
    pthread_join(eng.thr, NULL);
    /* A rank thread may be running a command: wait until it is out. */
    pthread_mutex_lock(&eng.lock);
    eng.running = 0;
    eng.shm = NULL;
    pthread_mutex_unlock(&eng.lock);
}

void shim_engine_stats(uint64_t *copies, uint64_t *bytes, uint64_t *scattered,
                       uint64_t *gathered)
{
    *copies = eng.copies;
    *bytes = eng.bytes;
    shim_iov_stats(scattered, gathered);
}
