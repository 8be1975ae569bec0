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
static int any_size(const shim_coll_args_t *a, const shim_check_t *chk)
{
    (void)a;
    (void)chk;
    return shim_any_size();
}

SHIM_API int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
    const int C = DPS_COLL_BARRIER;
    shim_coll_args_t a = {.coll = C, .comm = comm, .request = request};
    shim_comm_t *c;
    shim_call_t k;
    int rc;

    if (shim_in_call || !shim.initialized) {
        return PMPI_Ibarrier(comm, request);
    }
    if (shim_coll_start(&a, any_size, &rc)) {
        return rc;
    }
    SHIM_BEGIN(C, comm, c, k, PMPI_Ibarrier(use, request));
    return shim_call_post(c, &k, request);
}

static int root_ok(const shim_coll_args_t *a, const shim_check_t *chk)
{
    return chk != NULL ||
           (a->root >= 0 && a->root < shim_comm_size(a->comm));
}

static int bcast_offloads(const shim_coll_args_t *a, const shim_check_t *chk)
{
    return root_ok(a, chk) &&
           shim_size_offloads(a->stype, a->scount, chk != NULL);
}

SHIM_API int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype,
                        int root, MPI_Comm comm, MPI_Request *request)
{
    const int C = DPS_COLL_BCAST;
    shim_coll_args_t a = {.coll = C, .comm = comm, .sbuf = buffer,
                          .scount = count, .stype = datatype, .root = root,
                          .request = request};
    shim_blocks_t b = {buffer, 1, count, NULL, NULL, datatype, NULL, 0,
                       NULL, 0};
    shim_layout_t l;
    shim_comm_t *c;
    shim_call_t k;
    uint64_t cnt, off;
    int rc;

    if (shim_in_call || !shim.initialized) {
        return PMPI_Ibcast(buffer, count, datatype, root, comm, request);
    }
    if (shim_coll_start(&a, bcast_offloads, &rc)) {
        return rc;
    }
    shim_layout(datatype, count, &l);
    SHIM_BEGIN(C, comm, c, k, PMPI_Ibcast(buffer, count, datatype, root,
                                          use, request));
    k.args.root = (uint32_t)root;
    k.args.bytes = l.bytes;
    rc = c->rank == root ? shim_place_send(&k, &b, &cnt, &off)
                         : shim_place_recv(&k, &b, &cnt, &off);
    if (rc != MPI_SUCCESS) {
        return shim_place_failed(c, &k, rc, comm, request);
    }
    k.bytes = l.bytes;   /* the message, on every rank */
    return shim_call_post(c, &k, request);
}

/* The rank's own block of a gathered buffer (rooted or all), when it is
 * there already (MPI_IN_PLACE): it stays if the receive region is the
 * application's memory; else it goes as send data, copied. */
static int own_in_place(shim_call_t *k, const void *buf, int count,
                        MPI_Datatype type)
{
    shim_blocks_t own = {buf, 1, count, NULL, NULL, type, NULL, 1, NULL, 0};
    uint64_t cnt, off;

    if (k->unpack.from == NULL) {
        k->args.in_place = 1;
        return MPI_SUCCESS;
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
static int place_one(shim_call_t *k, int gather, const void *buf, int count,
                     MPI_Datatype type, uint64_t *bytes)
{
    shim_blocks_t one = {buf, 1, count, NULL, NULL, type, NULL, 0, NULL, 0};
    uint64_t off;

    return gather ? shim_place_send(k, &one, bytes, &off)
                  : shim_place_recv(k, &one, bytes, &off);
}

/* Gather and scatter, regular or v, after the decision to offload. */
static int rooted(shim_comm_t *c, shim_call_t *k, const void *sbuf,
                  int scount, const int *scounts, const int *sdispls,
                  MPI_Datatype stype, void *rbuf, int rcount,
                  const int *rcounts, const int *rdispls, MPI_Datatype rtype,
                  int root, MPI_Comm comm, MPI_Request *request)
{
    int gather = k->coll == DPS_COLL_GATHER || k->coll == DPS_COLL_GATHERV;
    int v = k->coll == DPS_COLL_GATHERV || k->coll == DPS_COLL_SCATTERV;
    int size = c->size, rc;
    uint64_t *arr, own = 0, blk;

    k->args.root = (uint32_t)root;
    if (c->rank != root) {
        rc = gather ? place_one(k, 1, sbuf, scount, stype, &own)
                    : place_one(k, 0, rbuf, rcount, rtype, &own);
        k->args.bytes = own;
    } else if ((arr = shim_call_arrays(k, size, 2)) == NULL) {
        rc = MPI_ERR_NO_MEM;
    } else {
        shim_blocks_t many = {gather ? rbuf : sbuf, v ? size : 1,
                              v ? 0 : (gather ? rcount : scount) * size,
                              v ? (gather ? rcounts : scounts) : NULL,
                              v ? (gather ? rdispls : sdispls) : NULL,
                              gather ? rtype : stype, NULL, 0, NULL, 0};
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
        if (rc == MPI_SUCCESS && in_place && gather) {
            rc = own_in_place(k, block_at(rbuf, root, rcount, v ? rdispls
                                          : NULL, rtype),
                              v ? rcounts[root] : rcount, rtype);
        } else if (rc == MPI_SUCCESS && in_place) {
            k->args.in_place = 1;   /* the root's block stays in sbuf */
        } else if (rc == MPI_SUCCESS) {
            rc = gather ? place_one(k, 1, sbuf, scount, stype, &own)
                        : place_one(k, 0, rbuf, rcount, rtype, &own);
            if (rc == MPI_SUCCESS && own != blk) {
                return shim_call_erroneous(c, k, DPS_ERR_ARG,
                                           MPI_ERR_TRUNCATE, comm, request,
                                           "the root's own block differs "
                                           "in size from the block it "
                                           "expects of itself");
            }
        }
    }
    if (rc != MPI_SUCCESS) {
        return shim_place_failed(c, k, rc, comm, request);
    }
    return shim_call_post(c, k, request);
}

/* The decision for gather and scatter: the block size where every rank
 * knows it (regular), any size (v). */
static int rooted_offloads(const shim_coll_args_t *a,
                           const shim_check_t *chk)
{
    int gather = a->coll == DPS_COLL_GATHER || a->coll == DPS_COLL_GATHERV;
    int v = a->coll == DPS_COLL_GATHERV || a->coll == DPS_COLL_SCATTERV;
    int rank;

    if (!root_ok(a, chk)) {
        return 0;
    }
    if (v) {
        return shim_any_size();
    }
    PMPI_Comm_rank(a->comm, &rank);
    /* The root's block size from its many-side arguments (it may be in
     * place on the other side); the others' from their own. */
    if ((rank == a->root) == gather) {
        return shim_size_offloads(a->rtype, a->rcount, chk != NULL);
    }
    return shim_size_offloads(a->stype, a->scount, chk != NULL);
}

SHIM_API int MPI_Igather(const void *sendbuf, int sendcount,
                         MPI_Datatype sendtype, void *recvbuf, int recvcount,
                         MPI_Datatype recvtype, int root, MPI_Comm comm,
                         MPI_Request *request)
{
    const int C = DPS_COLL_GATHER;
    shim_coll_args_t a = {.coll = C, .comm = comm, .sbuf = sendbuf,
                          .scount = sendcount, .stype = sendtype,
                          .rbuf = recvbuf, .rcount = recvcount,
                          .rtype = recvtype, .root = root,
                          .request = request};
    shim_comm_t *c;
    shim_call_t k;
    int rc;

    if (shim_in_call || !shim.initialized) {
        return PMPI_Igather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                            recvtype, root, comm, request);
    }
    if (shim_coll_start(&a, rooted_offloads, &rc)) {
        return rc;
    }
    SHIM_BEGIN(C, comm, c, k, PMPI_Igather(sendbuf, sendcount, sendtype,
                                           recvbuf, recvcount, recvtype,
                                           root, use, request));
    return rooted(c, &k, sendbuf, sendcount, NULL, NULL, sendtype, recvbuf,
                  recvcount, NULL, NULL, recvtype, root, comm, request);
}

SHIM_API int MPI_Igatherv(const void *sendbuf, int sendcount,
                          MPI_Datatype sendtype, void *recvbuf,
                          const int recvcounts[], const int displs[],
                          MPI_Datatype recvtype, int root, MPI_Comm comm,
                          MPI_Request *request)
{
    const int C = DPS_COLL_GATHERV;
    shim_coll_args_t a = {.coll = C, .comm = comm, .sbuf = sendbuf,
                          .scount = sendcount, .stype = sendtype,
                          .rbuf = recvbuf, .rcounts = recvcounts,
                          .rdispls = displs, .rtype = recvtype,
                          .root = root, .request = request};
    shim_comm_t *c;
    shim_call_t k;
    int rc;

    if (shim_in_call || !shim.initialized) {
        return PMPI_Igatherv(sendbuf, sendcount, sendtype, recvbuf,
                             recvcounts, displs, recvtype, root, comm,
                             request);
    }
    if (shim_coll_start(&a, rooted_offloads, &rc)) {
        return rc;
    }
    SHIM_BEGIN(C, comm, c, k, PMPI_Igatherv(sendbuf, sendcount, sendtype,
                                            recvbuf, recvcounts, displs,
                                            recvtype, root, use, request));
    return rooted(c, &k, sendbuf, sendcount, NULL, NULL, sendtype, recvbuf,
                  0, recvcounts, displs, recvtype, root, comm, request);
}

SHIM_API int MPI_Iscatter(const void *sendbuf, int sendcount,
                          MPI_Datatype sendtype, void *recvbuf,
                          int recvcount, MPI_Datatype recvtype, int root,
                          MPI_Comm comm, MPI_Request *request)
{
    const int C = DPS_COLL_SCATTER;
    shim_coll_args_t a = {.coll = C, .comm = comm, .sbuf = sendbuf,
                          .scount = sendcount, .stype = sendtype,
                          .rbuf = recvbuf, .rcount = recvcount,
                          .rtype = recvtype, .root = root,
                          .request = request};
    shim_comm_t *c;
    shim_call_t k;
    int rc;

    if (shim_in_call || !shim.initialized) {
        return PMPI_Iscatter(sendbuf, sendcount, sendtype, recvbuf,
                             recvcount, recvtype, root, comm, request);
    }
    if (shim_coll_start(&a, rooted_offloads, &rc)) {
        return rc;
    }
    SHIM_BEGIN(C, comm, c, k, PMPI_Iscatter(sendbuf, sendcount, sendtype,
                                            recvbuf, recvcount, recvtype,
                                            root, use, request));
    return rooted(c, &k, sendbuf, sendcount, NULL, NULL, sendtype, recvbuf,
                  recvcount, NULL, NULL, recvtype, root, comm, request);
}

SHIM_API int MPI_Iscatterv(const void *sendbuf, const int sendcounts[],
                           const int displs[], MPI_Datatype sendtype,
                           void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, int root, MPI_Comm comm,
                           MPI_Request *request)
{
    const int C = DPS_COLL_SCATTERV;
    shim_coll_args_t a = {.coll = C, .comm = comm, .sbuf = sendbuf,
                          .scounts = sendcounts, .sdispls = displs,
                          .stype = sendtype, .rbuf = recvbuf,
                          .rcount = recvcount, .rtype = recvtype,
                          .root = root, .request = request};
    shim_comm_t *c;
    shim_call_t k;
    int rc;

    if (shim_in_call || !shim.initialized) {
        return PMPI_Iscatterv(sendbuf, sendcounts, displs, sendtype,
                              recvbuf, recvcount, recvtype, root, comm,
                              request);
    }
    if (shim_coll_start(&a, rooted_offloads, &rc)) {
        return rc;
    }
    SHIM_BEGIN(C, comm, c, k, PMPI_Iscatterv(sendbuf, sendcounts, displs,
                                             sendtype, recvbuf, recvcount,
                                             recvtype, root, use, request));
    return rooted(c, &k, sendbuf, 0, sendcounts, displs, sendtype, recvbuf,
                  recvcount, NULL, NULL, recvtype, root, comm, request);
}

/* The block size of a regular allgather or alltoall, by the receive
 * side's type signature (never a rank's layout). */
static int recv_block(const shim_coll_args_t *a, const shim_check_t *chk)
{
    return shim_size_offloads(a->rtype, a->rcount, chk != NULL);
}

/* Allgatherv: every rank has every count, so the mean block is agreed. */
static int mean_block(const shim_coll_args_t *a, const shim_check_t *chk)
{
    int size = shim_comm_size(a->comm), i, ok;
    uint64_t total = 0;
    shim_layout_t l;

    ok = shim_layout(a->rtype, 0, &l) && a->rcounts != NULL;
    for (i = 0; ok && i < size; i++) {
        ok = a->rcounts[i] >= 0;
        total += (uint64_t)a->rcounts[i] * l.size;
    }
    if (!ok || size == 0) {
        return chk != NULL && shim_any_size();
    }
    return shim_big_enough(total / (uint64_t)size);
}

/* Allgather, regular or v, after the decision. */
static int allgather(shim_comm_t *c, shim_call_t *k, const void *sbuf,
                     int scount, MPI_Datatype stype, void *rbuf, int rcount,
                     const int *rcounts, const int *rdispls,
                     MPI_Datatype rtype, MPI_Comm comm, MPI_Request *request)
{
    int v = rcounts != NULL, size = c->size, me = c->rank, rc;
    shim_blocks_t many = {rbuf, v ? size : 1, v ? 0 : rcount * size, rcounts,
                          rdispls, rtype, NULL, 0, NULL, 0};
    uint64_t *arr = shim_call_arrays(k, size, 2), blk, own = 0;

    if (arr == NULL) {
        return shim_place_failed(c, k, MPI_ERR_NO_MEM, comm, request);
    }
    rc = shim_place_recv(k, &many, arr, arr + size);
    blk = v ? arr[me] : arr[0] / (uint64_t)size;
    if (v) {
        k->args.rcount = arr;
        k->args.roff = arr + size;
    }
    k->args.bytes = blk;
    if (rc == MPI_SUCCESS && sbuf == MPI_IN_PLACE) {
        rc = own_in_place(k, block_at(rbuf, me, rcount, rdispls, rtype),
                          v ? rcounts[me] : rcount, rtype);
    } else if (rc == MPI_SUCCESS) {
        rc = place_one(k, 1, sbuf, scount, stype, &own);
        if (rc == MPI_SUCCESS && own != blk) {
            return shim_call_erroneous(c, k, DPS_ERR_ARG, MPI_ERR_TRUNCATE,
                                       comm, request, "the send block "
                                       "differs in size from the block "
                                       "this rank receives from itself");
        }
    }
    if (rc != MPI_SUCCESS) {
        return shim_place_failed(c, k, rc, comm, request);
    }
    return shim_call_post(c, k, request);
}

SHIM_API int MPI_Iallgather(const void *sendbuf, int sendcount,
                            MPI_Datatype sendtype, void *recvbuf,
                            int recvcount, MPI_Datatype recvtype,
                            MPI_Comm comm, MPI_Request *request)
{
    const int C = DPS_COLL_ALLGATHER;
    shim_coll_args_t a = {.coll = C, .comm = comm, .sbuf = sendbuf,
                          .scount = sendcount, .stype = sendtype,
                          .rbuf = recvbuf, .rcount = recvcount,
                          .rtype = recvtype, .request = request};
    shim_comm_t *c;
    shim_call_t k;
    int rc;

    if (shim_in_call || !shim.initialized) {
        return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf,
                               recvcount, recvtype, comm, request);
    }
    if (shim_coll_start(&a, recv_block, &rc)) {
        return rc;
    }
    SHIM_BEGIN(C, comm, c, k, PMPI_Iallgather(sendbuf, sendcount, sendtype,
                                              recvbuf, recvcount, recvtype,
                                              use, request));
    return allgather(c, &k, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                     NULL, NULL, recvtype, comm, request);
}

SHIM_API int MPI_Iallgatherv(const void *sendbuf, int sendcount,
                             MPI_Datatype sendtype, void *recvbuf,
                             const int recvcounts[], const int displs[],
                             MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Request *request)
{
    const int C = DPS_COLL_ALLGATHERV;
    shim_coll_args_t a = {.coll = C, .comm = comm, .sbuf = sendbuf,
                          .scount = sendcount, .stype = sendtype,
                          .rbuf = recvbuf, .rcounts = recvcounts,
                          .rdispls = displs, .rtype = recvtype,
                          .request = request};
    shim_comm_t *c;
    shim_call_t k;
    int rc;

    if (shim_in_call || !shim.initialized) {
        return PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf,
                                recvcounts, displs, recvtype, comm, request);
    }
    if (shim_coll_start(&a, mean_block, &rc)) {
        return rc;
    }
    SHIM_BEGIN(C, comm, c, k, PMPI_Iallgatherv(sendbuf, sendcount, sendtype,
                                               recvbuf, recvcounts, displs,
                                               recvtype, use, request));
    return allgather(c, &k, sendbuf, sendcount, sendtype, recvbuf, 0,
                     recvcounts, displs, recvtype, comm, request);
}

/* Alltoall, v or w, after the decision. */
static int alltoall(shim_comm_t *c, shim_call_t *k, const void *sbuf,
                    int scount, const int *scounts, const int *sdispls,
                    MPI_Datatype stype, const MPI_Datatype *stypes,
                    void *rbuf, int rcount, const int *rcounts,
                    const int *rdispls, MPI_Datatype rtype,
                    const MPI_Datatype *rtypes, MPI_Comm comm,
                    MPI_Request *request)
{
    int v = rcounts != NULL, size = c->size, rc;
    int in_place = sbuf == MPI_IN_PLACE;
    shim_blocks_t rb = {rbuf, v ? size : 1, v ? 0 : rcount * size, rcounts,
                        rdispls, rtype, rtypes, 0, NULL, 0};
    shim_blocks_t sb = {sbuf, v ? size : 1, v ? 0 : scount * size, scounts,
                        sdispls, stype, stypes, 0, NULL, 0};
    uint64_t *arr = shim_call_arrays(k, size, 4);

    if (arr == NULL) {
        return shim_place_failed(c, k, MPI_ERR_NO_MEM, comm, request);
    }
    if (in_place) {
        /* Blocks of the buffer are read and written by different engines
         * and agents in any order: always from a copy. */
        sb = rb;
        sb.copy = 1;
    }
    rc = shim_place_send(k, &sb, arr, arr + size);
    if (rc == MPI_SUCCESS) {
        rc = shim_place_recv(k, &rb, arr + 2 * size, arr + 3 * size);
    }
    if (rc != MPI_SUCCESS) {
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
                                       comm, request, "MPI_Ialltoall: the "
                                       "send block differs from the receive "
                                       "block in size");
        }
        if (k->owned == NULL && k->unpack.from == NULL &&
            shim_send_overlaps(k)) {
            return shim_call_erroneous(c, k, DPS_ERR_BUFFER, MPI_ERR_BUFFER,
                                       comm, request, "MPI_Ialltoall: the "
                                       "send buffer overlaps the receive "
                                       "buffer (MPI_IN_PLACE is the way)");
        }
    }
    return shim_call_post(c, k, request);
}

SHIM_API int MPI_Ialltoall(const void *sendbuf, int sendcount,
                           MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype,
                           MPI_Comm comm, MPI_Request *request)
{
    const int C = DPS_COLL_ALLTOALL;
    shim_coll_args_t a = {.coll = C, .comm = comm, .sbuf = sendbuf,
                          .scount = sendcount, .stype = sendtype,
                          .rbuf = recvbuf, .rcount = recvcount,
                          .rtype = recvtype, .request = request};
    shim_comm_t *c;
    shim_call_t k;
    int rc;

    if (shim_in_call || !shim.initialized) {
        return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf,
                              recvcount, recvtype, comm, request);
    }
    if (shim_coll_start(&a, recv_block, &rc)) {
        return rc;
    }
    SHIM_BEGIN(C, comm, c, k, PMPI_Ialltoall(sendbuf, sendcount, sendtype,
                                             recvbuf, recvcount, recvtype,
                                             use, request));
    return alltoall(c, &k, sendbuf, sendcount, NULL, NULL, sendtype, NULL,
                    recvbuf, recvcount, NULL, NULL, recvtype, NULL, comm,
                    request);
}

SHIM_API int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[],
                            const int sdispls[], MPI_Datatype sendtype,
                            void *recvbuf, const int recvcounts[],
                            const int rdispls[], MPI_Datatype recvtype,
                            MPI_Comm comm, MPI_Request *request)
{
    const int C = DPS_COLL_ALLTOALLV;
    shim_coll_args_t a = {.coll = C, .comm = comm, .sbuf = sendbuf,
                          .scounts = sendcounts, .sdispls = sdispls,
                          .stype = sendtype, .rbuf = recvbuf,
                          .rcounts = recvcounts, .rdispls = rdispls,
                          .rtype = recvtype, .request = request};
    shim_comm_t *c;
    shim_call_t k;
    int rc;

    if (shim_in_call || !shim.initialized) {
        return PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype,
                               recvbuf, recvcounts, rdispls, recvtype, comm,
                               request);
    }
    if (shim_coll_start(&a, any_size, &rc)) {
        return rc;
    }
    SHIM_BEGIN(C, comm, c, k, PMPI_Ialltoallv(sendbuf, sendcounts, sdispls,
                                              sendtype, recvbuf, recvcounts,
                                              rdispls, recvtype, use,
                                              request));
    return alltoall(c, &k, sendbuf, 0, sendcounts, sdispls, sendtype, NULL,
                    recvbuf, 0, recvcounts, rdispls, recvtype, NULL, comm,
                    request);
}

SHIM_API int MPI_Ialltoallw(const void *sendbuf, const int sendcounts[],
                            const int sdispls[],
                            const MPI_Datatype sendtypes[], void *recvbuf,
                            const int recvcounts[], const int rdispls[],
                            const MPI_Datatype recvtypes[], MPI_Comm comm,
                            MPI_Request *request)
{
    const int C = DPS_COLL_ALLTOALLW;
    shim_coll_args_t a = {.coll = C, .comm = comm, .sbuf = sendbuf,
                          .scounts = sendcounts, .sdispls = sdispls,
                          .stypes = sendtypes, .rbuf = recvbuf,
                          .rcounts = recvcounts, .rdispls = rdispls,
                          .rtypes = recvtypes, .request = request};
    shim_comm_t *c;
    shim_call_t k;
    int rc;

    if (shim_in_call || !shim.initialized) {
        return PMPI_Ialltoallw(sendbuf, sendcounts, sdispls, sendtypes,
                               recvbuf, recvcounts, rdispls, recvtypes, comm,
                               request);
    }
    if (shim_coll_start(&a, any_size, &rc)) {
        return rc;
    }
    SHIM_BEGIN(C, comm, c, k, PMPI_Ialltoallw(sendbuf, sendcounts, sdispls,
                                              sendtypes, recvbuf, recvcounts,
                                              rdispls, recvtypes, use,
                                              request));
    return alltoall(c, &k, sendbuf, 0, sendcounts, sdispls,
                    MPI_DATATYPE_NULL, sendtypes, recvbuf, 0, recvcounts,
                    rdispls, MPI_DATATYPE_NULL, recvtypes, comm, request);
}
