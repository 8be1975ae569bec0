/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Datatypes and operations, for the MPI_I* wrappers: how data of a
 * datatype lies in memory, where a call's send and receive data go as
 * byte regions (the application's memory when contiguous, else a packed
 * staging copy, unpacked at completion). Reductions' operations and
 * element types: data/rtypes.c.
 */
#include "shim/data/types.h"
#include "shim/data/engine.h"
#include "shim/data/flat.h"
#include "common/dps_log.h"
#include "common/dps_proto.h"
#include "common/dps_status.h"

#include <stdlib.h>
#include <string.h>

int shim_layout(MPI_Datatype dt, int count, shim_layout_t *l)
{
    MPI_Aint lb, tlb, textent;
    int      size;

    memset(l, 0, sizeof(*l));
    if (dt == MPI_DATATYPE_NULL || count < 0 ||
        PMPI_Type_size(dt, &size) != MPI_SUCCESS ||
        PMPI_Type_get_extent(dt, &lb, &l->extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(dt, &tlb, &textent) != MPI_SUCCESS) {
        return 0;
    }
    l->size = (size_t)size;
    l->bytes = (size_t)size * (size_t)count;
    l->offset = tlb;
    l->contig =
        (MPI_Aint)size == textent && (count <= 1 || l->extent == textent);
    return 1;
}

/* ---- blocks to regions ------------------------------------------------ */

/* Block i: its address, element count and type. */
static void block(const shim_blocks_t *b, int i, const char **addr, int *count,
                  MPI_Datatype *type)
{
    MPI_Aint disp;

    *type = b->types != NULL ? b->types[i] : b->type;
    *count = b->counts != NULL ? b->counts[i] : b->count;
    if (b->adispls != NULL) {
        disp = b->adispls[i]; /* bytes */
    } else if (b->displs == NULL) {
        disp = 0;
    } else if (b->types != NULL) {
        disp = b->displs[i]; /* bytes (w) */
    } else {
        MPI_Aint lb, ext;

        PMPI_Type_get_extent(*type, &lb, &ext);
        disp = (MPI_Aint)b->displs[i] * ext; /* elements (v) */
    }
    *addr = (const char *)b->buf + disp;
}

/*
 * Lay the blocks out as byte regions: contiguous blocks stay where they
 * are (one region from the lowest to the highest byte), else every block
 * is staged back to back. Fills cnt[i], off[i], *base, *len; *staged says
 * which. Returns DPS_OK, or DPS_ERR_ARG for a block MPI must judge
 * (negative count, null type).
 */
static int regions(const shim_blocks_t *b, uint64_t *cnt, uint64_t *off,
                   char **base, uint64_t *len, int *staged)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    uint64_t  total = 0;
    int       i, contig = 1;

    for (i = 0; i < b->n; i++) {
        shim_layout_t l;
        const char   *addr;
        MPI_Datatype  t;
        int           count;

        block(b, i, &addr, &count, &t);
        if (!shim_layout(t, count, &l)) {
            return DPS_ERR_ARG;
        }
        cnt[i] = l.bytes;
        off[i] = total;
        total += l.bytes;
        if (l.bytes == 0) {
            continue;
        }
        contig &= l.contig;
        if ((uintptr_t)(addr + l.offset) < lo) {
            lo = (uintptr_t)(addr + l.offset);
        }
        if ((uintptr_t)(addr + l.offset) + l.bytes > hi) {
            hi = (uintptr_t)(addr + l.offset) + l.bytes;
        }
    }
    /* Blocks from unrelated allocations, far apart: one region would span
     * memory that is not theirs (maybe unmapped), so they go as a map. */
    *staged = !contig || b->copy ||
              (b->spread && lo != UINTPTR_MAX && hi - lo > 2 * total + 4096);
    if (*staged) {
        *base = NULL;
        *len = total;
        return DPS_OK;
    }
    if (lo == UINTPTR_MAX) { /* nothing at all */
        *base = NULL;
        *len = 0;
        return DPS_OK;
    }
    for (i = 0; i < b->n; i++) {
        shim_layout_t l;
        const char   *addr;
        MPI_Datatype  t;
        int           count;

        block(b, i, &addr, &count, &t);
        shim_layout(t, count, &l);
        off[i] = l.bytes ? (uint64_t)((uintptr_t)(addr + l.offset) - lo) : 0;
    }
    *base = (char *)lo;
    *len = hi - lo;
    return DPS_OK;
}

/*
 * PMPI_Pack / PMPI_Unpack of count elements of t at addr. MPICH 4.0
 * refuses MPI_BOTTOM (a null buffer) with absolute addresses in the type,
 * which the standard allows: then the data is described from its first
 * byte instead, by a one-block type shifted back by that address.
 */
static dps_status_t pack_at(int unpack, const void *addr, int count,
                            MPI_Datatype t, void *packed, int size)
{
    MPI_Datatype sh = MPI_DATATYPE_NULL;
    MPI_Aint     tlb = 0, text;
    int          pos = 0, rc;

    if (addr == NULL && count > 0) {
        MPI_Aint disp;

        PMPI_Type_get_true_extent(t, &tlb, &text);
        disp = -tlb;
        if (PMPI_Type_create_hindexed(1, &count, &disp, t, &sh) !=
                MPI_SUCCESS ||
            PMPI_Type_commit(&sh) != MPI_SUCCESS) {
            return DPS_ERR_MPI;
        }
        addr = (const char *)addr + tlb;
        t = sh;
        count = 1;
    }
    rc = unpack ? PMPI_Unpack(packed, size, &pos, (void *)addr, count, t,
                              MPI_COMM_SELF)
                : PMPI_Pack(addr, count, t, packed, size, &pos, MPI_COMM_SELF);
    if (sh != MPI_DATATYPE_NULL) {
        PMPI_Type_free(&sh);
    }
    return rc == MPI_SUCCESS && pos == size ? DPS_OK : DPS_ERR_MPI;
}

static shim_scatter_t *scatter_map(const shim_blocks_t *b, const uint64_t *cnt,
                                   const uint64_t *off, char *base,
                                   uint64_t len, shim_keep_t *kp, int side);

dps_status_t shim_place_send(shim_call_t *k, const shim_blocks_t *b,
                             uint64_t *cnt, uint64_t *off)
{
    char    *base, *out;
    uint64_t len;
    int      staged, i;

    if (regions(b, cnt, off, &base, &len, &staged) != DPS_OK) {
        return DPS_ERR_INVALID;
    }
    for (i = 0; i < b->n; i++) {
        k->bytes += cnt[i]; /* the statistics: data sent */
    }
    if (!staged) {
        k->buf[0] = base;
        k->len[0] = len;
        return DPS_OK;
    }
    if (k->gather_ok && !b->copy && len > 0 && k->owned == NULL &&
        k->gather == NULL &&
        (k->gather = scatter_map(b, cnt, off, NULL, len, k->keep, 0)) !=
            NULL) {
        /* Read in place by the engines: no copy here. */
        k->buf[0] = k->gather->seg;
        k->len[0] = len;
        return DPS_OK;
    }
    out = malloc(len + 1);
    if (out == NULL) {
        return DPS_ERR_NOMEM;
    }
    for (i = 0; i < b->n; i++) {
        const char  *addr;
        MPI_Datatype t;
        int          count;

        block(b, i, &addr, &count, &t);
        if (cnt[i] == 0) {
            continue;
        }
        if (cnt[i] > INT32_MAX ||
            pack_at(0, addr, count, t, out + off[i], (int)cnt[i]) != DPS_OK) {
            dps_error("cannot pack %llu bytes of a datatype",
                      (unsigned long long)cnt[i]);
            free(out);
            return DPS_ERR_MPI;
        }
    }
    k->owned = out;
    k->buf[0] = out;
    k->len[0] = len;
    return DPS_OK;
}

/* The index of t among u's types, added (duplicated) if new; -1 when MPI
 * refuses. */
static int type_index(shim_unpack_t *u, MPI_Datatype orig, MPI_Datatype *origs)
{
    int i;

    for (i = 0; i < u->ntypes; i++) {
        if (origs[i] == orig) {
            return i;
        }
    }
    if (PMPI_Type_dup(orig, &u->types[u->ntypes]) != MPI_SUCCESS) {
        return -1;
    }
    origs[u->ntypes] = orig;
    return u->ntypes++;
}

/*
 * A scatter map of the staged region onto the blocks (data/flat.h), so
 * that the DMA engine can read transfers straight into place (or, for
 * send data, straight from it); NULL when a block's type cannot be
 * flattened or the map would not pay: when its runs average under
 * SCATTER_MIN_SEG bytes, the kernel's cost per iovec outweighs the copy
 * it saves, and the data is packed in the call and unpacked at
 * completion instead, on the rank's core.
 *
 * First set at 2 KiB from the pure transfer time alone (Open MPI, 2
 * ranks, 1 MiB blocks: 387 against 286 us with 1 KiB runs). Lowered to
 * 256 B for what the pack and the unpack cost the rank: examples/fft3d
 * -d (an FFT's transposes by datatype; N=256, 2 ranks, K=4 chunks, its
 * T2 runs of 512 B; ranks asleep as on a GPU, -m gpu-like -t 230) took
 * 701 ms a step (Open MPI) and 898 ms (MPICH) with 2 KiB, 327 and 311 ms
 * with 256 B, 326 and 315 with 512 B. With busy ranks too (tests/overlap
 * -V, 1 MiB blocks, pure transfer, the middle of 3 runs): runs of 512 B
 * 295 against 361 us (2 KiB); of 128 B 459 against 394 us (the map lost:
 * below 256 B).
 */
#define SCATTER_MIN_SEG 256

static shim_scatter_t *scatter_build(const shim_blocks_t *b,
                                     const uint64_t *cnt, const uint64_t *off,
                                     char *base, uint64_t len, size_t max);

static shim_scatter_t *scatter_map(const shim_blocks_t *b, const uint64_t *cnt,
                                   const uint64_t *off, char *base,
                                   uint64_t len, shim_keep_t *kp, int side)
{
    shim_scatter_t *m;
    size_t          max = len / SCATTER_MIN_SEG + 64;

    if (kp != NULL && kp->len[side] == len &&
        (kp->seg[side] != NULL || kp->none[side])) {
        /* A persistent request's later start: the first one's map. */
        if (kp->none[side] || (m = calloc(1, sizeof(*m))) == NULL) {
            return NULL;
        }
        m->seg = kp->seg[side];
        m->nseg = m->seg_cap = kp->nseg[side];
        m->keep = kp;
        __atomic_add_fetch(&kp->refs, 1, __ATOMIC_RELAXED);
        m->base = base;
        m->len = len;
        return m;
    }
    m = scatter_build(b, cnt, off, base, len, max);
    if (kp != NULL && kp->seg[side] == NULL && !kp->none[side]) {
        /* The first start: keep its map (or that there is none). */
        kp->len[side] = len;
        kp->none[side] = m == NULL;
        if (m != NULL) {
            kp->seg[side] = m->seg;
            kp->nseg[side] = m->nseg;
            m->keep = kp;
            __atomic_add_fetch(&kp->refs, 1, __ATOMIC_RELAXED);
        }
    }
    return m;
}

static shim_scatter_t *scatter_build(const shim_blocks_t *b,
                                     const uint64_t *cnt, const uint64_t *off,
                                     char *base, uint64_t len, size_t max)
{
    shim_scatter_t *m = calloc(1, sizeof(*m));

    if (m == NULL) {
        return NULL;
    }
    max = max < SHIM_FLAT_MAX ? max : SHIM_FLAT_MAX;
    for (int i = 0; i < b->n; i++) {
        const char  *addr;
        MPI_Datatype t;
        int          count;
        uint64_t     at = off[i];

        if (cnt[i] == 0) {
            continue;
        }
        block(b, i, &addr, &count, &t);
        if (shim_scatter_add(m, max, addr, count, t, &at) != 0 ||
            at != off[i] + cnt[i]) {
            shim_scatter_free(m);
            free(m);
            return NULL;
        }
    }
    m->base = base;
    m->len = len;
    return m;
}

/* Without a map: each block is unpacked with MPI_Unpack at completion. */
static dps_status_t unpack_blocks(shim_unpack_t *u, const shim_blocks_t *b,
                                  const uint64_t *cnt, const uint64_t *off)
{
    MPI_Datatype *origs;
    dps_status_t  rc = DPS_OK;
    int           i;

    u->blk = calloc((size_t)b->n + 1, sizeof(*u->blk));
    u->types = calloc((size_t)b->n + 1, sizeof(MPI_Datatype));
    origs = calloc((size_t)b->n + 1, sizeof(MPI_Datatype));
    if (u->blk == NULL || u->types == NULL || origs == NULL) {
        rc = DPS_ERR_NOMEM;
        goto out;
    }
    for (i = 0; i < b->n; i++) {
        const char  *addr;
        MPI_Datatype t;
        int          count, ti;

        block(b, i, &addr, &count, &t);
        if (cnt[i] == 0) {
            continue;
        }
        ti = type_index(u, t, origs);
        if (ti < 0 || cnt[i] > INT32_MAX) {
            rc = DPS_ERR_MPI;
            goto out;
        }
        u->blk[u->nblk].to = (void *)addr;
        u->blk[u->nblk].off = off[i];
        u->blk[u->nblk].count = count;
        u->blk[u->nblk].type = ti;
        u->nblk++;
    }
out:
    free(origs);
    return rc;
}

dps_status_t shim_place_recv(shim_call_t *k, const shim_blocks_t *b,
                             uint64_t *cnt, uint64_t *off)
{
    shim_unpack_t *u = &k->unpack;
    char          *base;
    uint64_t       len;
    int            staged;
    dps_status_t   rc;

    if (regions(b, cnt, off, &base, &len, &staged) != DPS_OK) {
        return DPS_ERR_INVALID;
    }
    if (!staged) {
        k->buf[1] = base;
        k->len[1] = len;
        return DPS_OK;
    }
    u->from = malloc(len + 1);
    if (u->from == NULL) {
        return DPS_ERR_NOMEM;
    }
    if (len > 0) {
        u->scat = scatter_map(b, cnt, off, u->from, len, k->keep, 1);
    }
    if (u->scat == NULL && (rc = unpack_blocks(u, b, cnt, off)) != DPS_OK) {
        return rc;
    }
    k->buf[1] = u->from;
    k->len[1] = len;
    return DPS_OK;
}

dps_status_t shim_unpack_run(shim_unpack_t *u)
{
    dps_status_t rc = DPS_OK;
    int          i;

    if (u->scat != NULL) {
        shim_engine_scatter_remove(u->scat);
        shim_scatter_finish(u->scat);
        return DPS_OK;
    }
    for (i = 0; i < u->nblk && rc == DPS_OK; i++) {
        const shim_unpack_blk_t *b = &u->blk[i];
        int                      size;

        PMPI_Type_size(u->types[b->type], &size);
        rc = pack_at(1, b->to, b->count, u->types[b->type], u->from + b->off,
                     size * b->count);
    }
    if (rc != DPS_OK) {
        dps_error("cannot unpack received data into its datatype");
    }
    return rc;
}

void shim_unpack_free(shim_unpack_t *u)
{
    int i;

    if (u->scat != NULL) {
        shim_engine_scatter_remove(u->scat);
        shim_scatter_free(u->scat);
        free(u->scat);
    }
    for (i = 0; i < u->ntypes; i++) {
        PMPI_Type_free(&u->types[i]);
    }
    free(u->types);
    free(u->blk);
    free(u->from);
    memset(u, 0, sizeof(*u));
}

void shim_call_clear(shim_call_t *k)
{
    shim_unpack_free(&k->unpack);
    if (k->gather != NULL) {
        shim_scatter_free(k->gather);
        free(k->gather);
        k->gather = NULL;
    }
    free(k->owned);
    free(k->arrays);
    k->owned = NULL;
    k->arrays = NULL;
}
