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
#include "shim.h"
#include "shim_engine.h"
#include "shim_flat.h"
#include "../common/dps_log.h"
#include "../common/dps_proto.h"
#include "../common/dps_sched.h"
#include "../common/dps_status.h"

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
#define ENGINE_SPIN_SEC 200e-6
#define ENGINE_BACKSTOP_NS 100000000L /* longest sleep: 100 ms */
#define ENGINE_SCRATCH (256u * 1024)  /* a reduction's source, in pieces */

static struct {
    dps_shm_t      *shm;
    pid_t           agent_pid;    /* kicked when a done lands and it sleeps */
    pid_t           self;
    pthread_t       thr;
    int             running;      /* the thread exists */
    int             stop;         /* asked to stop (atomic) */
    pthread_mutex_t lock;         /* one executor at a time */
    uint64_t        copies, bytes, scattered, gathered;
} eng = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Received regions whose bytes go straight into the application's
 * non-contiguous memory (shim_engine_scatter_add). */
static struct {
    pthread_mutex_t  lock;
    shim_scatter_t **v;
    size_t           n, cap;
} scat = {.lock = PTHREAD_MUTEX_INITIALIZER};

#define SCATTER_IOV 1024    /* iovecs per process_vm_readv (IOV_MAX) */

/* The registered region holding [addr, addr + len), or NULL. */
static shim_scatter_t *scatter_of(uint64_t addr, uint64_t len)
{
    shim_scatter_t *m = NULL;

    pthread_mutex_lock(&scat.lock);
    for (size_t i = 0; i < scat.n && m == NULL; i++) {
        uint64_t b = (uintptr_t)scat.v[i]->base;

        if (addr >= b && addr + len <= b + scat.v[i]->len) {
            m = scat.v[i];
        }
    }
    pthread_mutex_unlock(&scat.lock);
    return m;
}

/* Bytes [off, off + len) of m are in place. */
static int scatter_done(shim_scatter_t *m, uint64_t off, uint64_t len)
{
    int rc = DPS_OK;

    pthread_mutex_lock(&scat.lock);
    if (m->ndone == m->done_cap) {
        size_t cap = m->done_cap ? 2 * m->done_cap : 16;
        uint64_t *d = realloc(m->done, 2 * cap * sizeof(*d));

        if (d == NULL) {
            rc = DPS_ERR_NOMEM;
        } else {
            m->done = d;
            m->done_cap = cap;
        }
    }
    if (rc == DPS_OK) {
        m->done[2 * m->ndone] = off;
        m->done[2 * m->ndone + 1] = len;
        m->ndone++;
    }
    pthread_mutex_unlock(&scat.lock);
    return rc;
}

/* The iovecs of m's bytes [off, off + left), at most SCATTER_IOV of
 * them; their total in *tot. */
static int scatter_iov(const shim_scatter_t *m, uint64_t off, uint64_t left,
                       struct iovec *l, uint64_t *tot)
{
    size_t i = shim_scatter_find(m, off);
    int k = 0;

    *tot = 0;
    while (k < SCATTER_IOV && *tot < left && i < m->nseg) {
        const shim_seg_t *sg = &m->seg[i++];
        uint64_t in = off + *tot - sg->off, n = sg->len - in;

        n = n < left - *tot ? n : left - *tot;
        l[k].iov_base = sg->addr + in;
        l[k++].iov_len = n;
        *tot += n;
    }
    return k;
}

/* Copy within our own memory from iovecs r to iovecs l (as much as
 * both hold); the bytes copied. */
static size_t iov_copy(const struct iovec *l, int kl, const struct iovec *r,
                       int kr)
{
    size_t done = 0, li = 0, ri = 0, lo = 0, ro = 0;

    while ((int)li < kl && (int)ri < kr) {
        size_t n = l[li].iov_len - lo < r[ri].iov_len - ro
                   ? l[li].iov_len - lo : r[ri].iov_len - ro;

        memmove((char *)l[li].iov_base + lo, (char *)r[ri].iov_base + ro, n);
        done += n;
        lo += n;
        ro += n;
        if (lo == l[li].iov_len) {
            li++;
            lo = 0;
        }
        if (ro == r[ri].iov_len) {
            ri++;
            ro = 0;
        }
    }
    return done;
}

/*
 * A command whose destination lies in a scatter region: the bytes go
 * straight into the application's memory, as iovecs, one copy; the rest
 * of the region is unpacked at completion as before.
 */
static int scatter_in(shim_scatter_t *m, const dps_cmd_t *c)
{
    static struct iovec l[SCATTER_IOV];   /* eng.lock held */
    uint64_t off = c->dst_addr - (uintptr_t)m->base, start = off;
    uint64_t src = c->src_addr, left = c->len, tot;

    while (left > 0) {
        int k = scatter_iov(m, off, left, l, &tot);
        ssize_t n = (ssize_t)tot;

        if ((pid_t)c->src_pid == eng.self) {
            const char *from = (const char *)(uintptr_t)src;

            for (int j = 0; j < k; j++) {
                memmove(l[j].iov_base, from, l[j].iov_len);
                from += l[j].iov_len;
            }
        } else {
            struct iovec r = {(void *)(uintptr_t)src, tot};

            n = process_vm_readv((pid_t)c->src_pid, l, (unsigned long)k,
                                 &r, 1, 0);
            if (n < 0 && errno == EINTR) {
                continue;
            }
        }
        if (k == 0 || n <= 0) {
            dps_error("engine: reading %llu bytes at %#llx of pid %u into "
                      "place: %s", (unsigned long long)left,
                      (unsigned long long)src, c->src_pid,
                      n < 0 ? strerror(errno) : "nothing read");
            return DPS_ERR_IO;
        }
        off += (uint64_t)n;
        src += (uint64_t)n;
        left -= (uint64_t)n;
    }
    eng.scattered++;
    return scatter_done(m, start, c->len);
}

_Static_assert(sizeof(shim_seg_t) == sizeof(dps_seg_t), "segment layout");

/* The source's segments of a gathered region, read from its memory a
 * window at a time (eng.lock held: one user). */
#define GATHER_WIN 256
static struct {
    pid_t     pid;
    uint64_t  map, nmap;
    uint64_t  first;              /* index of win[0] */
    uint32_t  n;                  /* entries in win */
    dps_seg_t win[GATHER_WIN];
} gw;

static int remote_read(pid_t pid, void *to, uint64_t from, size_t len)
{
    struct iovec l = {to, len}, r = {(void *)(uintptr_t)from, len};
    ssize_t n;

    if (pid == eng.self) {
        memcpy(to, (const void *)(uintptr_t)from, len);
        return DPS_OK;
    }
    do {
        n = process_vm_readv(pid, &l, 1, &r, 1, 0);
    } while (n < 0 && errno == EINTR);
    return n == (ssize_t)len ? DPS_OK : DPS_ERR_IO;
}

/* Entry i of the source's map (through the window). */
static const dps_seg_t *gather_seg(uint64_t i)
{
    if (i < gw.first || i >= gw.first + gw.n) {
        uint64_t n = gw.nmap - i < GATHER_WIN ? gw.nmap - i : GATHER_WIN;

        if (remote_read(gw.pid, gw.win, gw.map + i * sizeof(dps_seg_t),
                        n * sizeof(dps_seg_t)) != DPS_OK) {
            gw.n = 0;
            return NULL;
        }
        gw.first = i;
        gw.n = (uint32_t)n;
    }
    return &gw.win[i - gw.first];
}

/* The index of the source's segment holding packed offset off. */
static int gather_find(uint64_t off, uint64_t *idx)
{
    uint64_t lo = 0, hi = gw.nmap;

    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        const dps_seg_t *sg = gather_seg(mid);

        if (sg == NULL) {
            return DPS_ERR_IO;
        }
        if (sg->off <= off) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    *idx = lo;
    return DPS_OK;
}

/*
 * A command reading from a gathered region (the source's send data left
 * unpacked): the source's segments become the remote iovecs, our
 * destination (contiguous, or a scatter region's segments) the local
 * ones, one process_vm_readv per batch: one copy per byte on each side.
 */
static int gather_in(const dps_cmd_t *c)
{
    static struct iovec r[SCATTER_IOV], l[SCATTER_IOV]; /* eng.lock held */
    shim_scatter_t *m = __atomic_load_n(&scat.n, __ATOMIC_RELAXED) > 0
                        ? scatter_of(c->dst_addr, c->len) : NULL;
    uint64_t off = c->src_addr, done = 0, idx;

    if (gw.pid != (pid_t)c->src_pid || gw.map != c->src_map ||
        gw.nmap != c->src_nmap) {
        gw.pid = (pid_t)c->src_pid;
        gw.map = c->src_map;
        gw.nmap = c->src_nmap;
        gw.n = 0;
    }
    if (gather_find(off, &idx) != DPS_OK) {
        goto io;
    }
    while (done < c->len) {
        uint64_t tot = 0, ltot = 0;
        int kr = 0, kl;
        ssize_t n;

        while (kr < SCATTER_IOV && tot < c->len - done && idx < gw.nmap) {
            const dps_seg_t *sg = gather_seg(idx);
            uint64_t at = off + done + tot, in, len;

            if (sg == NULL || at < sg->off || at >= sg->off + sg->len) {
                goto io;
            }
            in = at - sg->off;
            len = sg->len - in < c->len - done - tot ? sg->len - in
                                                    : c->len - done - tot;
            r[kr].iov_base = (void *)(uintptr_t)(sg->addr + in);
            r[kr++].iov_len = len;
            tot += len;
            if (in + len == sg->len) {
                idx++;
            }
        }
        if (m != NULL) {
            kl = scatter_iov(m, c->dst_addr - (uintptr_t)m->base + done, tot,
                             l, &ltot);
        } else {
            l[0].iov_base = (char *)(uintptr_t)c->dst_addr + done;
            l[0].iov_len = tot;
            ltot = tot;
            kl = 1;
        }
        if (ltot < tot) {   /* the remote list, cut to what l holds */
            uint64_t keep = 0;
            int j;

            for (j = 0; j < kr; j++) {
                if (keep + r[j].iov_len >= ltot) {
                    r[j].iov_len = ltot - keep;
                    break;
                }
                keep += r[j].iov_len;
            }
            kr = j + 1;
            tot = ltot;
        }
        if ((pid_t)c->src_pid == eng.self) {
            n = (ssize_t)iov_copy(l, kl, r, kr);
        } else {
            do {
                n = process_vm_readv((pid_t)c->src_pid, l, (unsigned long)kl,
                                     r, (unsigned long)kr, 0);
            } while (n < 0 && errno == EINTR);
        }
        if (n <= 0) {
            goto io;
        }
        done += (uint64_t)n;
        if (gather_find(off + done, &idx) != DPS_OK) {
            goto io;
        }
    }
    eng.gathered++;
    if (m != NULL) {
        eng.scattered++;
        return scatter_done(m, c->dst_addr - (uintptr_t)m->base, c->len);
    }
    return DPS_OK;
io:
    dps_error("engine: reading %llu bytes of pid %u's unpacked send data "
              "failed: %s", (unsigned long long)c->len, c->src_pid,
              strerror(errno));
    return DPS_ERR_IO;
}

int shim_engine_scatter_add(shim_scatter_t *m)
{
    int ok = 0;

    pthread_mutex_lock(&scat.lock);
    if (eng.running && m->len > 0) {
        if (scat.n == scat.cap) {
            size_t cap = scat.cap ? 2 * scat.cap : 16;
            shim_scatter_t **v = realloc(scat.v, cap * sizeof(*v));

            if (v != NULL) {
                scat.v = v;
                scat.cap = cap;
            }
        }
        if (scat.n < scat.cap) {
            scat.v[scat.n++] = m;
            m->registered = ok = 1;
        }
    }
    pthread_mutex_unlock(&scat.lock);
    return ok;
}

void shim_engine_scatter_remove(shim_scatter_t *m)
{
    if (!m->registered) {
        return;
    }
    pthread_mutex_lock(&scat.lock);
    for (size_t i = 0; i < scat.n; i++) {
        if (scat.v[i] == m) {
            scat.v[i] = scat.v[--scat.n];
            break;
        }
    }
    m->registered = 0;
    pthread_mutex_unlock(&scat.lock);
}

/* Copy one command's bytes into our memory. */
static int copy_in(const dps_cmd_t *c)
{
    char *dst = (char *)(uintptr_t)c->dst_addr;
    shim_scatter_t *m = __atomic_load_n(&scat.n, __ATOMIC_RELAXED) > 0
                        ? scatter_of(c->dst_addr, c->len) : NULL;
    uint64_t done = 0;

    if (m != NULL) {
        return scatter_in(m, c);
    }
    if ((pid_t)c->src_pid == eng.self) {
        memmove(dst, (const void *)(uintptr_t)c->src_addr, c->len);
        return DPS_OK;
    }
    while (done < c->len) {
        struct iovec l = {dst + done, c->len - done};
        struct iovec r = {(void *)(uintptr_t)(c->src_addr + done),
                          c->len - done};
        ssize_t n = process_vm_readv((pid_t)c->src_pid, &l, 1, &r, 1, 0);

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
    size_t es = dps_dtype_size(c->dtype), step;
    char *dst = (char *)(uintptr_t)c->dst_addr;
    uint64_t done = 0;

    if (__atomic_load_n(&scat.n, __ATOMIC_RELAXED) > 0 &&
        scatter_of(c->dst_addr, c->len) != NULL) {
        /* Never scheduled (shim_sched.c, reads_recv): a bug. */
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
                          c->len) == 0 ? DPS_OK : DPS_ERR_PROTO;
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
                          n - got, (unsigned long long)(c->src_addr + done +
                                                        got),
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
    dps_cmd_t c;
    int n = 0;

    while (!__atomic_load_n(&eng.stop, __ATOMIC_ACQUIRE) &&
           dps_shm_cmd_get(s, &c)) {
        dps_done_t d = {c.id, DPS_OK, 0};

        if (c.op == DPS_CMD_READ) {
            d.status = copy_in(&c);
            eng.copies++;
            eng.bytes += c.len;
        } else if (c.op == DPS_CMD_READ_GATHER) {
            d.status = gather_in(&c);
            eng.copies++;
            eng.bytes += c.len;
        } else if (c.op == DPS_CMD_READ_REDUCE) {
            d.status = reduce_in(&c);   /* the lock: one scratch user */
            eng.copies++;
            eng.bytes += c.len;
        } else {
            d.status = DPS_ERR_PROTO;
        }
        /* The agent keeps no more commands out than the ring holds, so
         * there is always room for the done entry. */
        while (!dps_shm_done_put(s, &d)) {
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
    n = eng.shm != NULL ? run_queued() : 0;   /* stopped meanwhile? */
    pthread_mutex_unlock(&eng.lock);
    return n;
}

static void *engine_main(void *arg)
{
    dps_shm_t *s = eng.shm;
    double spin_until = dps_now() + ENGINE_SPIN_SEC;

    (void)arg;
    while (!__atomic_load_n(&eng.stop, __ATOMIC_ACQUIRE)) {
        uint32_t v;
        int n = 0;

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

/* fork(): the child has no engine thread and takes no part in offload. */
static void engine_atfork_child(void)
{
    eng.running = 0;
    eng.shm = NULL;
    pthread_mutex_init(&eng.lock, NULL);
    shim.active = 0;
}

int shim_engine_start(dps_shm_t *shm, pid_t agent_pid)
{
    static int atfork_done;
    sigset_t all, old;
    int rc;

    if (!atfork_done) {
        pthread_atfork(NULL, NULL, engine_atfork_child);
        atfork_done = 1;
    }
    eng.shm = shm;
    eng.agent_pid = agent_pid;
    eng.self = getpid();
    eng.stop = 0;
    /* The thread starts with every signal blocked: the application's
     * handlers run on its own threads only. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&eng.thr, NULL, engine_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        dps_warn("cannot start the DMA engine thread: %s; the agent copies "
                 "through its staging buffers instead", strerror(rc));
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

void shim_engine_stats(uint64_t *copies, uint64_t *bytes,
                       uint64_t *scattered, uint64_t *gathered)
{
    *copies = eng.copies;
    *bytes = eng.bytes;
    *scattered = eng.scattered;
    *gathered = eng.gathered;
}
