/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Datatypes flattened into (offset, length) segments, once per datatype,
 * from what MPI says the type was built of (MPI_Type_get_envelope and
 * _get_contents), in type-map order; and the scatter maps of received
 * regions built from them (data/flat.h). A flattening that does not add
 * up to the type's size is refused, never used.
 */
#define _GNU_SOURCE
#include "shim/data/flat.h"
#include "common/dps_log.h"
#include "common/dps_status.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define FLAT_DEPTH 32 /* nesting of derived types we follow */

typedef struct {
    size_t    n, cap;
    int64_t  *disp;
    uint64_t *len;
} segs_t;

static void segs_free(segs_t *s)
{
    free(s->disp);
    free(s->len);
    memset(s, 0, sizeof(*s));
}

/* Append (d, l), merged with the last segment when it continues it.
 * Here as in all of this file: DPS_OK, or DPS_ERR_UNSUPP (a type or map
 * this shim does not flatten: MPI_Pack does), DPS_ERR_NOMEM, or
 * DPS_ERR_INVALID (MPI refused to describe the type). */
static int push(segs_t *s, int64_t d, uint64_t l)
{
    if (l == 0) {
        return DPS_OK;
    }
    if (s->n > 0 && s->disp[s->n - 1] + (int64_t)s->len[s->n - 1] == d) {
        s->len[s->n - 1] += l;
        return DPS_OK;
    }
    if (s->n == SHIM_FLAT_MAX) {
        return DPS_ERR_UNSUPP; /* too many pieces to be worth a map */
    }
    if (s->n == s->cap) {
        size_t    cap = s->cap ? 2 * s->cap : 8;
        int64_t  *d2 = realloc(s->disp, cap * sizeof(*d2));
        uint64_t *l2;

        if (d2 == NULL) {
            return DPS_ERR_NOMEM;
        }
        s->disp = d2;
        l2 = realloc(s->len, cap * sizeof(*l2));
        if (l2 == NULL) {
            return DPS_ERR_NOMEM;
        }
        s->len = l2;
        s->cap = cap;
    }
    s->disp[s->n] = d;
    s->len[s->n++] = l;
    return DPS_OK;
}

/* Append bl consecutive elements (extent ext) of sub from shift on. */
static int rep(segs_t *out, const segs_t *sub, MPI_Aint ext, int64_t shift,
               int64_t bl)
{
    int rc = DPS_OK;

    if (sub->n == 1 && (MPI_Aint)sub->len[0] == ext) {
        return push(out, shift + sub->disp[0], sub->len[0] * (uint64_t)bl);
    }
    for (int64_t k = 0; k < bl && rc == DPS_OK; k++) {
        for (size_t i = 0; i < sub->n && rc == DPS_OK; i++) {
            rc = push(out, shift + k * ext + sub->disp[i], sub->len[i]);
        }
    }
    return rc;
}

static int flatten(MPI_Datatype dt, segs_t *out, int depth);

/* A type MPI_Type_get_contents returned: flattened, with its extent. */
static int child(MPI_Datatype t, segs_t *sub, MPI_Aint *ext, int depth)
{
    MPI_Aint lb;

    memset(sub, 0, sizeof(*sub));
    if (PMPI_Type_get_extent(t, &lb, ext) != MPI_SUCCESS) {
        return DPS_ERR_INVALID;
    }
    return flatten(t, sub, depth + 1);
}

/* Subarray: elements in storage order (C: last dimension fastest). */
static int subarray(const int *ints, const segs_t *sub, MPI_Aint ext,
                    segs_t *out)
{
    int        nd = ints[0], d, idx[32] = {0};
    const int *sizes = ints + 1, *subs = ints + 1 + nd;
    const int *starts = ints + 1 + 2 * nd;
    int        fortran = ints[1 + 3 * nd] == MPI_ORDER_FORTRAN;
    int64_t    stride[32];
    int        rc;

    if (nd < 1 || nd > 32) {
        return DPS_ERR_UNSUPP;
    }
    for (d = 0; d < nd; d++) {
        if (subs[d] == 0) {
            return DPS_OK;
        }
    }
    for (d = 0; d < nd; d++) {
        int e = fortran ? d : nd - 1 - d; /* fastest first */
        int prev = fortran ? e - 1 : e + 1;

        stride[e] = d == 0 ? 1 : stride[prev] * sizes[prev];
    }
    for (;;) {
        int64_t lin = 0;
        int     f = fortran ? 0 : nd - 1;

        for (d = 0; d < nd; d++) {
            lin += (int64_t)(starts[d] + idx[d]) * stride[d];
        }
        /* The fastest dimension's run at once. */
        rc = rep(out, sub, ext, lin * ext, subs[f]);
        if (rc != DPS_OK) {
            return rc;
        }
        for (d = 1; d < nd; d++) { /* odometer, skipping the fastest */
            int e = fortran ? d : nd - 1 - d;

            if (++idx[e] < subs[e]) {
                break;
            }
            idx[e] = 0;
        }
        if (d == nd) {
            return DPS_OK;
        }
    }
}

/* One level of a derived type, from its constructor's arguments. */
static int by_combiner(int comb, const int *ints, const MPI_Aint *aints,
                       const MPI_Datatype *types, segs_t *out, int depth)
{
    segs_t   sub;
    MPI_Aint ext;
    int      i, n = ints != NULL ? ints[0] : 0, rc = DPS_OK;

    if (comb == MPI_COMBINER_STRUCT) {
        for (i = 0; i < n && rc == DPS_OK; i++) {
            rc = child(types[i], &sub, &ext, depth);
            if (rc == DPS_OK) {
                rc = rep(out, &sub, ext, aints[i], ints[1 + i]);
            }
            segs_free(&sub);
        }
        return rc;
    }
    rc = child(types[0], &sub, &ext, depth);
    if (rc != DPS_OK) {
        segs_free(&sub);
        return rc;
    }
    switch (comb) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED: rc = rep(out, &sub, ext, 0, 1); break;
    case MPI_COMBINER_CONTIGUOUS: rc = rep(out, &sub, ext, 0, n); break;
    case MPI_COMBINER_VECTOR:
    case MPI_COMBINER_HVECTOR:
        for (i = 0; i < n && rc == DPS_OK; i++) {
            int64_t st = comb == MPI_COMBINER_VECTOR ? (int64_t)ints[2] * ext
                                                     : (int64_t)aints[0];

            rc = rep(out, &sub, ext, i * st, ints[1]);
        }
        break;
    case MPI_COMBINER_INDEXED:
    case MPI_COMBINER_HINDEXED:
        for (i = 0; i < n && rc == DPS_OK; i++) {
            int64_t at = comb == MPI_COMBINER_INDEXED
                             ? (int64_t)ints[1 + n + i] * ext
                             : aints[i];

            rc = rep(out, &sub, ext, at, ints[1 + i]);
        }
        break;
    case MPI_COMBINER_INDEXED_BLOCK:
    case MPI_COMBINER_HINDEXED_BLOCK:
        for (i = 0; i < n && rc == DPS_OK; i++) {
            int64_t at = comb == MPI_COMBINER_INDEXED_BLOCK
                             ? (int64_t)ints[2 + i] * ext
                             : aints[i];

            rc = rep(out, &sub, ext, at, ints[1]);
        }
        break;
    case MPI_COMBINER_SUBARRAY: rc = subarray(ints, &sub, ext, out); break;
    default: /* darray, Fortran kinds, MPI-1 forms: MPI_Pack */
        rc = DPS_ERR_UNSUPP;
        break;
    }
    segs_free(&sub);
    return rc;
}

/* Free what MPI_Type_get_contents returned that is ours to free. */
static void free_types(MPI_Datatype *types, int nd)
{
    for (int i = 0; i < nd; i++) {
        int ni, na, ndt, comb;

        if (PMPI_Type_get_envelope(types[i], &ni, &na, &ndt, &comb) ==
                MPI_SUCCESS &&
            comb != MPI_COMBINER_NAMED) {
            PMPI_Type_free(&types[i]);
        }
    }
}

/* A named type's one segment; DPS_ERR_UNSUPP for one with holes
 * (MPI_SHORT_INT, ...), which is packed with MPI_Pack. */
static int named_seg(MPI_Datatype dt, int64_t *d, uint64_t *l)
{
    MPI_Aint tlb, text;
    int      size;

    PMPI_Type_size(dt, &size);
    PMPI_Type_get_true_extent(dt, &tlb, &text);
    if ((MPI_Aint)size != text) {
        return DPS_ERR_UNSUPP;
    }
    *d = tlb;
    *l = (uint64_t)size;
    return DPS_OK;
}

static int flatten(MPI_Datatype dt, segs_t *out, int depth)
{
    int           ni, na, nd, comb, rc = DPS_ERR_NOMEM;
    MPI_Datatype *types;
    MPI_Aint     *aints;
    int          *ints;

    if (depth > FLAT_DEPTH) {
        return DPS_ERR_UNSUPP;
    }
    if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS) {
        return DPS_ERR_INVALID;
    }
    if (comb == MPI_COMBINER_NAMED) {
        int64_t  d;
        uint64_t l;

        rc = named_seg(dt, &d, &l);
        return rc == DPS_OK ? push(out, d, l) : rc;
    }
    ints = malloc(((size_t)ni + 1) * sizeof(*ints));
    aints = malloc(((size_t)na + 1) * sizeof(*aints));
    types = malloc(((size_t)nd + 1) * sizeof(*types));
    if (ints == NULL || aints == NULL || types == NULL) {
        goto out;
    }
    if (PMPI_Type_get_contents(dt, ni, na, nd, ints, aints, types) !=
        MPI_SUCCESS) {
        rc = DPS_ERR_INVALID;
        goto out;
    }
    rc = nd > 0 ? by_combiner(comb, ni ? ints : NULL, aints, types, out, depth)
                : DPS_ERR_UNSUPP;
    free_types(types, nd);
out:
    free(ints);
    free(aints);
    free(types);
    return rc;
}

/* ---- the cache -------------------------------------------------------- */

static shim_flat_t    flat_none; /* cached "cannot be flattened" */
static int            flat_keyval = MPI_KEYVAL_INVALID;
static pthread_once_t flat_once = PTHREAD_ONCE_INIT;

static int flat_delete(MPI_Datatype dt, int keyval, void *attr, void *extra)
{
    shim_flat_t *f = attr;

    (void)dt;
    (void)keyval;
    (void)extra;
    if (f != NULL && f != &flat_none) {
        free(f->disp);
        free(f->len);
        free(f);
    }
    return MPI_SUCCESS;
}

static void flat_keyval_make(void)
{
    if (PMPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, flat_delete,
                                &flat_keyval, NULL) != MPI_SUCCESS) {
        flat_keyval = MPI_KEYVAL_INVALID;
    }
}

/* Flatten dt now: a new shim_flat_t, or NULL. */
static shim_flat_t *flat_make(MPI_Datatype dt)
{
    segs_t       s = {0};
    shim_flat_t *f = NULL;
    MPI_Aint     lb;
    uint64_t     sum = 0;
    int          size;

    if (flatten(dt, &s, 0) == DPS_OK &&
        PMPI_Type_size(dt, &size) == MPI_SUCCESS &&
        (f = calloc(1, sizeof(*f))) != NULL) {
        for (size_t i = 0; i < s.n; i++) {
            sum += s.len[i];
        }
        PMPI_Type_get_extent(dt, &lb, &f->extent);
        f->n = s.n;
        f->disp = s.disp;
        f->len = s.len;
        f->size = (uint64_t)size;
        if (sum == (uint64_t)size) {
            return f;
        }
        dps_warn("flattening a datatype gave %llu bytes, not %d: it is "
                 "packed with MPI_Pack instead",
                 (unsigned long long)sum, size);
        free(f);
        f = NULL;
    }
    segs_free(&s);
    return f;
}

const shim_flat_t *shim_flat_get(MPI_Datatype dt)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    int                    ni, na, nd, comb, flag = 0;
    shim_flat_t           *f = NULL;
    void                  *val;

    /* Named types are not cached (MPI may refuse attributes on them):
     * shim_scatter_add takes them as they are. */
    if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS ||
        comb == MPI_COMBINER_NAMED) {
        return NULL;
    }
    pthread_once(&flat_once, flat_keyval_make);
    if (flat_keyval == MPI_KEYVAL_INVALID) {
        return NULL;
    }
    /* One thread flattens a type at a time: a second attribute set on
     * the same type would free the first one's flattening. */
    pthread_mutex_lock(&lock);
    if (PMPI_Type_get_attr(dt, flat_keyval, &val, &flag) == MPI_SUCCESS &&
        flag) {
        f = val == &flat_none ? NULL : val;
    } else {
        f = flat_make(dt);
        if (PMPI_Type_set_attr(dt, flat_keyval,
                               f != NULL ? (void *)f : &flat_none) !=
            MPI_SUCCESS) {
            flat_delete(dt, flat_keyval, f, NULL);
            f = NULL;
        }
    }
    pthread_mutex_unlock(&lock);
    return f;
}

/* ---- scatter maps ------------------------------------------------------ */

/* The segments of dt: the cached flattening, or, for a named type without
 * holes, the one segment in *one. */
static const shim_flat_t *flat_for(MPI_Datatype dt, shim_flat_t *one,
                                   int64_t *d, uint64_t *l)
{
    MPI_Aint lb;
    int      ni, na, nd, comb;

    if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS) {
        return NULL;
    }
    if (comb != MPI_COMBINER_NAMED) {
        return shim_flat_get(dt);
    }
    if (named_seg(dt, d, l) != DPS_OK) {
        return NULL;
    }
    one->n = 1;
    one->disp = d;
    one->len = l;
    one->size = *l;
    PMPI_Type_get_extent(dt, &lb, &one->extent);
    return one;
}

static int seg_push(shim_scatter_t *m, size_t max, uint64_t off, char *addr,
                    uint64_t len)
{
    shim_seg_t *last = m->nseg ? &m->seg[m->nseg - 1] : NULL;

    if (len == 0) {
        return DPS_OK;
    }
    if (last != NULL && last->addr + last->len == addr &&
        last->off + last->len == off) {
        last->len += len;
        return DPS_OK;
    }
    if (m->nseg == max) {
        return DPS_ERR_UNSUPP;
    }
    if (m->nseg == m->seg_cap) {
        size_t      nc = m->seg_cap ? 2 * m->seg_cap : 16;
        shim_seg_t *ns = realloc(m->seg, nc * sizeof(*ns));

        if (ns == NULL) {
            return DPS_ERR_NOMEM;
        }
        m->seg = ns;
        m->seg_cap = nc;
    }
    m->seg[m->nseg].off = off;
    m->seg[m->nseg].addr = addr;
    m->seg[m->nseg++].len = len;
    return DPS_OK;
}

int shim_scatter_add(shim_scatter_t *m, size_t max, const void *addr,
                     int count, MPI_Datatype dt, uint64_t *off)
{
    shim_flat_t        one;
    int64_t            d;
    uint64_t           l;
    const shim_flat_t *f = flat_for(dt, &one, &d, &l);
    int                rc;

    if (f == NULL) {
        return DPS_ERR_UNSUPP;
    }
    if (f->n == 1 && (MPI_Aint)f->len[0] == f->extent) {
        /* Back to back: one segment for all (contiguous in place). */
        uint64_t n = f->len[0] * (uint64_t)count;

        rc = seg_push(m, max, *off, (char *)addr + f->disp[0], n);
        if (rc != DPS_OK) {
            return rc;
        }
        *off += n;
        m->len = *off;
        return DPS_OK;
    }
    for (int64_t j = 0; j < count; j++) {
        char *el = (char *)addr + j * f->extent;

        for (size_t i = 0; i < f->n; i++) {
            rc = seg_push(m, max, *off, el + f->disp[i], f->len[i]);
            if (rc != DPS_OK) {
                return rc;
            }
            *off += f->len[i];
        }
    }
    m->len = *off;
    return DPS_OK;
}

size_t shim_scatter_find(const shim_scatter_t *m, uint64_t off)
{
    size_t lo = 0, hi = m->nseg;

    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;

        if (m->seg[mid].off <= off) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

void shim_scatter_copy(const shim_scatter_t *m, uint64_t off, uint64_t len,
                       int to_app)
{
    size_t i = shim_scatter_find(m, off);

    while (len > 0 && i < m->nseg) {
        const shim_seg_t *s = &m->seg[i];
        uint64_t          in = off - s->off, n = s->len - in;

        n = n < len ? n : len;
        if (to_app) {
            memcpy(s->addr + in, m->base + off, n);
        } else {
            memcpy(m->base + off, s->addr + in, n);
        }
        off += n;
        len -= n;
        i++;
    }
}

static int range_cmp(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;

    return x[0] < y[0] ? -1 : x[0] > y[0];
}

void shim_scatter_finish(shim_scatter_t *m)
{
    uint64_t at = 0;

    qsort(m->done, m->ndone, 2 * sizeof(uint64_t), range_cmp);
    for (size_t i = 0; i < m->ndone; i++) {
        uint64_t o = m->done[2 * i], n = m->done[2 * i + 1];

        if (o > at) {
            shim_scatter_copy(m, at, o - at, 1);
        }
        at = o + n > at ? o + n : at;
    }
    if (m->len > at) {
        shim_scatter_copy(m, at, m->len - at, 1);
    }
}

shim_keep_t *shim_keep_new(void)
{
    shim_keep_t *kp = calloc(1, sizeof(*kp));

    if (kp != NULL) {
        kp->refs = 1;
    }
    return kp;
}

void shim_keep_unref(shim_keep_t *kp)
{
    if (kp == NULL || __atomic_sub_fetch(&kp->refs, 1, __ATOMIC_ACQ_REL)) {
        return;
    }
    free(kp->seg[0]);
    free(kp->seg[1]);
    free(kp);
}

void shim_scatter_free(shim_scatter_t *m)
{
    if (m->keep != NULL) {
        shim_keep_unref(m->keep);
    } else {
        free(m->seg);
    }
    free(m->done);
    memset(m, 0, sizeof(*m));
}
