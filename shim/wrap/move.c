/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Ibarrier, Ibcast, Igather(v), Iscatter(v), Iallgather(v),
 * Ialltoall(v)(w): decide (wrap/coll.h), say where the data lies, post. Their
 * schedules are built in compile/moves.c.
 */
#include "shim/wrap/coll.h"
#include "common/dps_status.h"

#include <string.h>

/* Whether the ranks offload a call with a's arguments (shim_offloads_fn;
 * chk: a call MPI refuses, whose wrong inputs must not decide). Sizes
 * that differ by rank: whenever any size would. */
static int any_size(const shim_coll_args_t *a, const shim_check_t *chk,
                    int *why)
{
    (void)a;
    (void)chk;
    return shim_any_size(why);
}

/* Ibarrier, after the decision (shim_post_fn): no data. */
static int barrier(shim_comm_t *c, shim_call_t *k, const shim_coll_args_t *a)
{
    return shim_call_post(c, k, a->request);
}

static int root_ok(const shim_coll_args_t *a, const shim_check_t *chk)
{
    return chk != NULL || (a->root >= 0 && a->root < shim_comm_size(a->comm));
}

static int bcast_offloads(const shim_coll_args_t *a, const shim_check_t *chk,
                          int *why)
{
    return root_ok(a, chk) &&
           shim_size_offloads(why, a->stype, a->scount, chk != NULL);
}

/* Ibcast, after the decision: the buffer is sent at the root, received
 * elsewhere. */
static int bcast(shim_comm_t *c, shim_call_t *k, const shim_coll_args_t *a)
{
    shim_blocks_t b = {a->sbuf,  1,    a->scount, NULL, NULL,
                       a->stype, NULL, 0,         NULL, 0};
    shim_layout_t l;
    uint64_t      cnt, off;
    dps_status_t  rc;

    shim_layout(a->stype, a->scount, &l);
    k->args.root = (uint32_t)a->root;
    k->args.bytes = l.bytes;
    rc = c->rank == a->root ? shim_place_send(k, &b, &cnt, &off)
                            : shim_place_recv(k, &b, &cnt, &off);
    if (rc != DPS_OK) {
        return shim_place_failed(c, k, rc, a->comm, a->request);
    }
    k->bytes = l.bytes; /* the message, on every rank */
    return shim_call_post(c, k, a->request);
}

/* The rank's own block of a gathered buffer (rooted or all), when it is
 * there already (MPI_IN_PLACE): it stays if the receive region is the
 * application's memory; else it goes as send data, copied. */
static dps_status_t own_in_place(shim_call_t *k, const void *buf, int count,
                                 MPI_Datatype type)
{
    shim_blocks_t own = {buf, 1, count, NULL, NULL, type, NULL, 1, NULL, 0};
    uint64_t      cnt, off;

    if (k->unpack.from == NULL) {
        k->args.in_place = 1;
        return DPS_OK;
    }
    return shim_place_send(k, &own, &cnt, &off);
}

/* The address of block i of a v-buffer or a regular one. */
static const void *block_at(const void *buf, int i, int count,
                            const int *displs, MPI_Datatype type)
{
    MPI_Aint lb, ext;

    PMPI_Type_get_extent(type, &lb, &ext);
    return (const char *)buf +
           (displs != NULL ? (MPI_Aint)displs[i] : (MPI_Aint)i * count) * ext;
}

/* A non-root's block, or the root's own, on its side of a gather
 * (send) or scatter (receive): the bytes it holds into *bytes. */
static dps_status_t place_one(shim_call_t *k, int gather, const void *buf,
                              int count, MPI_Datatype type, uint64_t *bytes)
{
    shim_blocks_t one = {buf, 1, count, NULL, NULL, type, NULL, 0, NULL, 0};
    uint64_t      off;

    return gather ? shim_place_send(k, &one, bytes, &off)
                  : shim_place_recv(k, &one, bytes, &off);
}

/* Gather and scatter, regular or v, after the decision to offload. */
static int rooted(shim_comm_t *c, shim_call_t *k, const shim_coll_args_t *a)
{
    int gather = k->coll == DPS_COLL_GATHER || k->coll == DPS_COLL_GATHERV;
    int v = k->coll == DPS_COLL_GATHERV || k->coll == DPS_COLL_SCATTERV;
    int size = c->size, root = a->root;
    dps_status_t rc;
    const void  *sbuf = a->sbuf;
    void        *rbuf = a->rbuf;
    uint64_t    *arr, own = 0, blk;

    k->args.root = (uint32_t)root;
    if (c->rank != root) {
        rc = gather ? place_one(k, 1, sbuf, a->scount, a->stype, &own)
                    : place_one(k, 0, rbuf, a->rcount, a->rtype, &own);
        k->args.bytes = own;
    } else if ((arr = shim_call_arrays(k, size, 2)) == NULL) {
        rc = DPS_ERR_NOMEM;
    } else {
        shim_blocks_t many = {gather ? rbuf : sbuf,
                              v ? size : 1,
                              v ? 0 : (gather ? a->rcount : a->scount) * size,
                              v ? (gather ? a->rcounts : a->scounts) : NULL,
                              v ? (gather ? a->rdispls : a->sdispls) : NULL,
                              gather ? a->rtype : a->stype,
                              NULL,
                              0,
                              NULL,
                              0};
        int in_place = gather ? sbuf == MPI_IN_PLACE : rbuf == MPI_IN_PLACE;

        rc = gather ? shim_place_recv(k, &many, arr, arr + size)
                    : shim_place_send(k, &many, arr, arr + size);
        blk = v ? arr[root] : arr[0] / (uint64_t)size;
        if (v && gather) {
            k->args.rcount = arr;
            k->args.roff = arr + size;
        } else if (v) {
            k->args.scount = arr;
            k->args.soff = arr + size;
        }
        k->args.bytes = blk;
        if (rc == DPS_OK && in_place && gather) {
            rc = own_in_place(k,
                              block_at(rbuf, root, a->rcount,
                                       v ? a->rdispls : NULL, a->rtype),
                              v ? a->rcounts[root] : a->rcount, a->rtype);
        } else if (rc == DPS_OK && in_place) {
            k->args.in_place = 1; /* the root's block stays in sbuf */
        } else if (rc == DPS_OK) {
            rc = gather ? place_one(k, 1, sbuf, a->scount, a->stype, &own)
                        : place_one(k, 0, rbuf, a->rcount, a->rtype, &own);
            if (rc == DPS_OK && own != blk) {
                return shim_call_erroneous(c, k, DPS_ERR_ARG, MPI_ERR_TRUNCATE,
                                           a->comm, a->request,
                                           "the root's own "
                                           "block differs in size from the "
                                           "block it expects of itself");
            }
        }
    }
    if (rc != DPS_OK) {
        return shim_place_failed(c, k, rc, a->comm, a->request);
    }
    return shim_call_post(c, k, a->request);
}

/* The decision for gather and scatter: the block size where every rank
 * knows it (regular), any size (v). */
static int rooted_offloads(const shim_coll_args_t *a, const shim_check_t *chk,
                           int *why)
{
    int gather = a->coll == DPS_COLL_GATHER || a->coll == DPS_COLL_GATHERV;
    int v = a->coll == DPS_COLL_GATHERV || a->coll == DPS_COLL_SCATTERV;
    int rank;

    if (!root_ok(a, chk)) {
        return 0;
    }
    if (v) {
        return shim_any_size(why);
    }
    PMPI_Comm_rank(a->comm, &rank);
    /* The root's block size from its many-side arguments (it may be in
     * place on the other side); the others' from their own. */
    if ((rank == a->root) == gather) {
        return shim_size_offloads(why, a->rtype, a->rcount, chk != NULL);
    }
    return shim_size_offloads(why, a->stype, a->scount, chk != NULL);
}

/* The block size of a regular allgather or alltoall, by the receive
 * side's type signature (never a rank's layout). */
static int recv_block(const shim_coll_args_t *a, const shim_check_t *chk,
                      int *why)
{
    return shim_size_offloads(why, a->rtype, a->rcount, chk != NULL);
}

/* Allgatherv: every rank has every count, so the mean block is agreed. */
static int mean_block(const shim_coll_args_t *a, const shim_check_t *chk,
                      int *why)
{
    int           size = shim_comm_size(a->comm), i, ok;
    uint64_t      total = 0;
    shim_layout_t l;

    ok = shim_layout(a->rtype, 0, &l) && a->rcounts != NULL;
    for (i = 0; ok && i < size; i++) {
        ok = a->rcounts[i] >= 0;
        total += (uint64_t)a->rcounts[i] * l.size;
    }
    if (!ok || size == 0) {
        return chk != NULL && shim_any_size(why);
    }
    return shim_big_enough(why, total / (uint64_t)size);
}

/* Allgather, regular or v, after the decision. */
static int allgather(shim_comm_t *c, shim_call_t *k, const shim_coll_args_t *a)
{
    int           v = a->rcounts != NULL, size = c->size, me = c->rank;
    dps_status_t  rc;
    shim_blocks_t many = {a->rbuf,
                          v ? size : 1,
                          v ? 0 : a->rcount * size,
                          a->rcounts,
                          a->rdispls,
                          a->rtype,
                          NULL,
                          0,
                          NULL,
                          0};
    uint64_t     *arr = shim_call_arrays(k, size, 2), blk, own = 0;
    MPI_Comm      comm = a->comm;
    MPI_Request  *request = a->request;

    if (arr == NULL) {
        return shim_place_failed(c, k, DPS_ERR_NOMEM, comm, request);
    }
    rc = shim_place_recv(k, &many, arr, arr + size);
    blk = v ? arr[me] : arr[0] / (uint64_t)size;
    if (v) {
        k->args.rcount = arr;
        k->args.roff = arr + size;
    }
    k->args.bytes = blk;
    if (rc == DPS_OK && a->sbuf == MPI_IN_PLACE) {
        rc = own_in_place(
            k, block_at(a->rbuf, me, a->rcount, a->rdispls, a->rtype),
            v ? a->rcounts[me] : a->rcount, a->rtype);
    } else if (rc == DPS_OK) {
        rc = place_one(k, 1, a->sbuf, a->scount, a->stype, &own);
        if (rc == DPS_OK && own != blk) {
            return shim_call_erroneous(c, k, DPS_ERR_ARG, MPI_ERR_TRUNCATE,
                                       comm, request,
                                       "the send block "
                                       "differs in size from the block "
                                       "this rank receives from itself");
        }
    }
    if (rc != DPS_OK) {
        return shim_place_failed(c, k, rc, comm, request);
    }
    return shim_call_post(c, k, request);
}

/* Alltoall, v or w, after the decision. */
static int alltoall(shim_comm_t *c, shim_call_t *k, const shim_coll_args_t *a)
{
    int           v = a->rcounts != NULL, size = c->size;
    dps_status_t  rc;
    int           in_place = a->sbuf == MPI_IN_PLACE;
    shim_blocks_t rb = {a->rbuf,
                        v ? size : 1,
                        v ? 0 : a->rcount * size,
                        a->rcounts,
                        a->rdispls,
                        a->rtype,
                        a->rtypes,
                        0,
                        NULL,
                        0};
    shim_blocks_t sb = {a->sbuf,
                        v ? size : 1,
                        v ? 0 : a->scount * size,
                        a->scounts,
                        a->sdispls,
                        a->stype,
                        a->stypes,
                        0,
                        NULL,
                        0};
    uint64_t     *arr = shim_call_arrays(k, size, 4);
    MPI_Comm      comm = a->comm;
    MPI_Request  *request = a->request;

    if (arr == NULL) {
        return shim_place_failed(c, k, DPS_ERR_NOMEM, comm, request);
    }
    if (in_place) {
        /* Blocks of the buffer are read and written by different engines
         * and agents in any order: always from a copy. */
        sb = rb;
        sb.copy = 1;
    }
    rc = shim_place_send(k, &sb, arr, arr + size);
    if (rc == DPS_OK) {
        rc = shim_place_recv(k, &rb, arr + 2 * size, arr + 3 * size);
    }
    if (rc != DPS_OK) {
        return shim_place_failed(c, k, rc, comm, request);
    }
    if (v) {
        k->args.scount = arr;
        k->args.soff = arr + size;
        k->args.rcount = arr + 2 * size;
        k->args.roff = arr + 3 * size;
    } else {
        k->args.bytes = arr[2 * size] / (uint64_t)size;
        if (arr[0] != arr[2 * size]) {
            return shim_call_erroneous(c, k, DPS_ERR_ARG, MPI_ERR_TRUNCATE,
                                       comm, request,
                                       "MPI_Ialltoall: the "
                                       "send block differs from the receive "
                                       "block in size");
        }
        if (k->owned == NULL && k->unpack.from == NULL &&
            shim_send_overlaps(k)) {
            return shim_call_erroneous(c, k, DPS_ERR_BUFFER, MPI_ERR_BUFFER,
                                       comm, request,
                                       "MPI_Ialltoall: the "
                                       "send buffer overlaps the receive "
                                       "buffer (MPI_IN_PLACE is the way)");
        }
    }
    return shim_call_post(c, k, request);
}

/* The entries (common/dps_colls.h): each call's decision and post. */
SHIM_COLL_ENTRY_RUN(barrier, any_size, barrier)
SHIM_COLL_ENTRY_RUN(bcast, bcast_offloads, bcast)
SHIM_COLL_ENTRY_RUN(rooted, rooted_offloads, rooted)
SHIM_COLL_ENTRY_RUN(allgather, recv_block, allgather)
SHIM_COLL_ENTRY_RUN(allgatherv, mean_block, allgather)
SHIM_COLL_ENTRY_RUN(alltoall, recv_block, alltoall)
SHIM_COLL_ENTRY_RUN(alltoallv, any_size, alltoall)
