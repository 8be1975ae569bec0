/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DMA engine's moves through iovecs (data/engine.c runs them): into
 * scatter regions (received data of non-contiguous types, straight into
 * the application's memory) and from gathered regions (another rank's
 * unpacked send data, whose segment list is read from its memory). The
 * segment maps are built in data/flat.c.
 */
#define _GNU_SOURCE
#include "shim/data/iov.h"
#include "shim/data/flat.h"
#include "common/dps_log.h"
#include "common/dps_proto.h"
#include "common/dps_status.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static struct {
    pid_t    self;
    uint64_t scattered, gathered;
} iov;

/* Received regions whose bytes go straight into the application's
 * non-contiguous memory (shim_engine_scatter_add). */
static struct {
    pthread_mutex_t  lock;
    shim_scatter_t **v;
    size_t           n, cap;
} scat = {.lock = PTHREAD_MUTEX_INITIALIZER};

#define SCATTER_IOV 1024 /* iovecs per process_vm_readv (IOV_MAX) */

/* The registered region holding [addr, addr + len), or NULL. */
shim_scatter_t *shim_iov_region(uint64_t addr, uint64_t len)
{
    shim_scatter_t *m = NULL;

    if (__atomic_load_n(&scat.n, __ATOMIC_RELAXED) == 0) {
        return NULL; /* the usual case: no lock */
    }
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
        size_t    cap = m->done_cap ? 2 * m->done_cap : 16;
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
    int    k = 0;

    *tot = 0;
    while (k < SCATTER_IOV && *tot < left && i < m->nseg) {
        const shim_seg_t *sg = &m->seg[i++];
        uint64_t          in = off + *tot - sg->off, n = sg->len - in;

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
                       ? l[li].iov_len - lo
                       : r[ri].iov_len - ro;

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
int shim_iov_scatter_in(shim_scatter_t *m, const dps_cmd_t *c)
{
    static struct iovec l[SCATTER_IOV]; /* eng.lock held */
    uint64_t            off = c->dst_addr - (uintptr_t)m->base, start = off;
    uint64_t            src = c->src_addr, left = c->len, tot;

    while (left > 0) {
        int     k = scatter_iov(m, off, left, l, &tot);
        ssize_t n = (ssize_t)tot;

        if ((pid_t)c->src_pid == iov.self) {
            const char *from = (const char *)(uintptr_t)src;

            for (int j = 0; j < k; j++) {
                memmove(l[j].iov_base, from, l[j].iov_len);
                from += l[j].iov_len;
            }
        } else {
            struct iovec r = {(void *)(uintptr_t)src, tot};

            n = process_vm_readv((pid_t)c->src_pid, l, (unsigned long)k, &r, 1,
                                 0);
            if (n < 0 && errno == EINTR) {
                continue;
            }
        }
        if (k == 0 || n <= 0) {
            dps_error("engine: reading %llu bytes at %#llx of pid %u into "
                      "place: %s",
                      (unsigned long long)left, (unsigned long long)src,
                      c->src_pid, n < 0 ? strerror(errno) : "nothing read");
            return DPS_ERR_IO;
        }
        off += (uint64_t)n;
        src += (uint64_t)n;
        left -= (uint64_t)n;
    }
    iov.scattered++;
    return scatter_done(m, start, c->len);
}

_Static_assert(sizeof(shim_seg_t) == sizeof(dps_seg_t), "segment layout");

/* The source's segments of a gathered region, read from its memory a
 * window at a time (eng.lock held: one user). */
#define GATHER_WIN 256
static struct {
    pid_t     pid;
    uint64_t  map, nmap;
    uint64_t  first; /* index of win[0] */
    uint32_t  n;     /* entries in win */
    dps_seg_t win[GATHER_WIN];
} gw;

static int remote_read(pid_t pid, void *to, uint64_t from, size_t len)
{
    struct iovec l = {to, len}, r = {(void *)(uintptr_t)from, len};
    ssize_t      n;

    if (pid == iov.self) {
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
        uint64_t         mid = lo + (hi - lo) / 2;
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

/* The remote iovecs of a batch: the source's segments holding packed
 * bytes [at, at + want), from segment *idx on (advanced past the ones
 * used up), at most SCATTER_IOV of them, into r; *tot: their bytes. The
 * number of iovecs, or -1 when the map cannot be read or does not hold
 * those bytes. */
static int gather_iov(uint64_t at, uint64_t want, uint64_t *idx,
                      struct iovec *r, uint64_t *tot)
{
    int kr = 0;

    *tot = 0;
    while (kr < SCATTER_IOV && *tot < want && *idx < gw.nmap) {
        const dps_seg_t *sg = gather_seg(*idx);
        uint64_t         pos = at + *tot, in, len;

        if (sg == NULL || pos < sg->off || pos >= sg->off + sg->len) {
            return -1;
        }
        in = pos - sg->off;
        len = sg->len - in < want - *tot ? sg->len - in : want - *tot;
        r[kr].iov_base = (void *)(uintptr_t)(sg->addr + in);
        r[kr++].iov_len = len;
        *tot += len;
        if (in + len == sg->len) {
            (*idx)++;
        }
    }
    return kr;
}

/* The kr iovecs of r cut to their first keep bytes; how many are left. */
static int iov_cut(struct iovec *r, int kr, uint64_t keep)
{
    uint64_t sum = 0;
    int      j;

    for (j = 0; j < kr; j++) {
        if (sum + r[j].iov_len >= keep) {
            r[j].iov_len = keep - sum;
            break;
        }
        sum += r[j].iov_len;
    }
    return j + 1;
}

/* Read pid's iovecs r into ours l (pid may be this process); the bytes
 * read, or -1 (errno set). */
static ssize_t iov_read(pid_t pid, const struct iovec *l, int kl,
                        const struct iovec *r, int kr)
{
    ssize_t n;

    if (pid == iov.self) {
        return (ssize_t)iov_copy(l, kl, r, kr);
    }
    do {
        n = process_vm_readv(pid, l, (unsigned long)kl, r, (unsigned long)kr,
                             0);
    } while (n < 0 && errno == EINTR);
    return n;
}

/*
 * A command reading from a gathered region (the source's send data left
 * unpacked): the source's segments become the remote iovecs, our
 * destination (contiguous, or a scatter region's segments) the local
 * ones, one process_vm_readv per batch: one copy per byte on each side.
 */
int shim_iov_gather_in(const dps_cmd_t *c)
{
    static struct iovec r[SCATTER_IOV], l[SCATTER_IOV]; /* eng.lock held */
    shim_scatter_t     *m = shim_iov_region(c->dst_addr, c->len);
    uint64_t            off = c->src_addr, done = 0, idx;

    /* Read afresh for every command: a map freed by its op may be
     * reallocated at the same address with other contents. */
    gw.pid = (pid_t)c->src_pid;
    gw.map = c->src_map;
    gw.nmap = c->src_nmap;
    gw.n = 0;
    if (gather_find(off, &idx) != DPS_OK) {
        goto io;
    }
    while (done < c->len) {
        uint64_t tot, ltot;
        int      kr, kl;
        ssize_t  n;

        kr = gather_iov(off + done, c->len - done, &idx, r, &tot);
        if (kr < 0) {
            goto io;
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
        if (ltot < tot) { /* the remote list, cut to what l holds */
            kr = iov_cut(r, kr, ltot);
        }
        n = iov_read((pid_t)c->src_pid, l, kl, r, kr);
        if (n <= 0) {
            goto io;
        }
        done += (uint64_t)n;
        if (gather_find(off + done, &idx) != DPS_OK) {
            goto io;
        }
    }
    iov.gathered++;
    if (m != NULL) {
        iov.scattered++;
        return scatter_done(m, c->dst_addr - (uintptr_t)m->base, c->len);
    }
    return DPS_OK;
io:
    dps_error("engine: reading %llu bytes of pid %u's unpacked send data "
              "failed: %s",
              (unsigned long long)c->len, c->src_pid, strerror(errno));
    return DPS_ERR_IO;
}

int shim_iov_add(shim_scatter_t *m)
{
    int ok = 0;

    pthread_mutex_lock(&scat.lock);
    if (m->len > 0) {
        if (scat.n == scat.cap) {
            size_t           cap = scat.cap ? 2 * scat.cap : 16;
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

void shim_iov_init(pid_t self)
{
    iov.self = self;
}

void shim_iov_stats(uint64_t *scattered, uint64_t *gathered)
{
    *scattered = iov.scattered;
    *gathered = iov.gathered;
}
