/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Ireduce, Iallreduce, Ireduce_scatter, Ireduce_scatter_block, Iscan,
 * Iexscan: decide (coll.h), say where the data lies, post. Their
 * schedules are built in build_reduce.c; agents and DMA engines reduce
 * with common/dps_sched.c.
 *
 * Offloaded: the predefined operations on the predefined types MPI 4.1
 * §6.9.2 allows them on, where the MPI library has the type and the
 * agents compute it as the library does (shim_rtypes.c; MAXLOC and MINLOC
 * on the pair types, packed when their layout has padding). The standard
 * requires count, type and operation to be alike on every rank, so the
 * decision is too. User-defined operations, and derived types (which both
 * MPIs refuse with predefined operations), go to stock MPI, counted as
 * fallbacks.
 */
#include "coll.h"
#include "../common/dps_status.h"

#include <string.h>

/* A vector of count elements of dt, as this rank's reduction sees it. */
typedef struct vec {
    unsigned      op, dtype;
    shim_layout_t l;
} vec_t;

/* Can the agents reduce count elements of dt with op? If not, shim_why
 * says why. */
static int reducible(int coll, MPI_Comm comm, int count, MPI_Datatype dt,
                     MPI_Op op, vec_t *v)
{
    int why;

    if (!shim_coll_wanted(coll, comm) || !shim_layout(dt, count, &v->l)) {
        return 0;
    }
    v->op = shim_op_of(op);
    v->dtype = DPS_T_NONE;
    why = shim_rtype(dt, v->op, &v->dtype);
    if (why == 0 && (!dps_op_valid(v->op, v->dtype) ||
                     v->l.size != dps_dtype_size(v->dtype))) {
        why = SHIM_WHY_TYPE;
    }
    if (why != 0) {
        shim_why = why;
        return 0;
    }
    return 1;
}

/*
 * Place a reduction's data: send count_in elements of dt at sbuf (in
 * place: at rbuf, copied, since the result overwrites it), receive
 * count_out at rbuf (when has_out). Then post.
 */
static int vec_post(shim_comm_t *c, shim_call_t *k, const vec_t *v,
                    const void *sbuf, int count_in, void *rbuf,
                    int count_out, int has_out, MPI_Datatype dt,
                    MPI_Comm comm, MPI_Request *request)
{
    int in_place = sbuf == MPI_IN_PLACE;
    shim_blocks_t sb = {in_place ? rbuf : sbuf, 1, count_in, NULL, NULL, dt,
                        NULL, in_place, NULL, 0};
    shim_blocks_t rb = {rbuf, 1, count_out, NULL, NULL, dt, NULL, 0, NULL, 0};
    uint64_t cnt, off;
    int rc;

    k->args.op = (uint8_t)v->op;
    k->args.dtype = (uint16_t)v->dtype;
    rc = shim_place_send(k, &sb, &cnt, &off);
    if (rc == MPI_SUCCESS && has_out) {
        rc = shim_place_recv(k, &rb, &cnt, &off);
    }
    if (rc != MPI_SUCCESS) {
        return shim_place_failed(c, k, rc, comm, request);
    }
    return shim_call_post(c, k, request);
}

SHIM_API int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count,
                         MPI_Datatype datatype, MPI_Op op, int root,
                         MPI_Comm comm, MPI_Request *request)
{
    const int C = DPS_COLL_REDUCE;
    shim_comm_t *c;
    shim_call_t k;
    vec_t v;

    if (shim_in_call || !shim.initialized) {
        return PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root,
                            comm, request);
    }
    if (!reducible(C, comm, count, datatype, op, &v) ||
        !shim_big_enough(v.l.bytes) || root < 0 ||
        root >= shim_comm_size(comm)) {
        return SHIM_FALLBACK(C, PMPI_Ireduce(sendbuf, recvbuf, count,
                                             datatype, op, root, comm,
                                             request));
    }
    SHIM_BEGIN(C, comm, c, k, PMPI_Ireduce(sendbuf, recvbuf, count,
                                           datatype, op, root, use,
                                           request));
    k.args.root = (uint32_t)root;
    k.args.bytes = v.l.bytes;
    if (c->rank != root && sendbuf == MPI_IN_PLACE) {
        return shim_call_erroneous(c, &k, DPS_ERR_ARG, MPI_ERR_BUFFER, comm,
                                   request, "MPI_Ireduce: MPI_IN_PLACE on a "
                                   "rank that is not the root");
    }
    return vec_post(c, &k, &v, sendbuf, count, recvbuf, count,
                    c->rank == root, datatype, comm, request);
}

SHIM_API int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count,
                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                            MPI_Request *request)
{
    const int C = DPS_COLL_ALLREDUCE;
    shim_comm_t *c;
    shim_call_t k;
    vec_t v;

    if (shim_in_call || !shim.initialized) {
        return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm,
                               request);
    }
    if (!reducible(C, comm, count, datatype, op, &v) ||
        !shim_big_enough(v.l.bytes)) {
        return SHIM_FALLBACK(C, PMPI_Iallreduce(sendbuf, recvbuf, count,
                                                datatype, op, comm,
                                                request));
    }
    SHIM_BEGIN(C, comm, c, k, PMPI_Iallreduce(sendbuf, recvbuf, count,
                                              datatype, op, use, request));
    k.args.bytes = v.l.bytes;
    return vec_post(c, &k, &v, sendbuf, count, recvbuf, count, 1, datatype,
                    comm, request);
}

SHIM_API int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf,
                                       int recvcount, MPI_Datatype datatype,
                                       MPI_Op op, MPI_Comm comm,
                                       MPI_Request *request)
{
    const int C = DPS_COLL_REDUCE_SCATTER_BLOCK;
    int size = shim_comm_size(comm);
    shim_comm_t *c;
    shim_call_t k;
    vec_t v;

    if (shim_in_call || !shim.initialized) {
        return PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount,
                                          datatype, op, comm, request);
    }
    if (!reducible(C, comm, recvcount, datatype, op, &v) ||
        !shim_big_enough(v.l.bytes) ||
        (uint64_t)recvcount * (uint64_t)size > INT32_MAX) {
        return SHIM_FALLBACK(C, PMPI_Ireduce_scatter_block(sendbuf, recvbuf,
                                                           recvcount,
                                                           datatype, op,
                                                           comm, request));
    }
    SHIM_BEGIN(C, comm, c, k, PMPI_Ireduce_scatter_block(sendbuf, recvbuf,
                                                         recvcount, datatype,
                                                         op, use, request));
    k.args.bytes = v.l.bytes;
    return vec_post(c, &k, &v, sendbuf, recvcount * size, recvbuf,
                    recvcount, 1, datatype, comm, request);
}

SHIM_API int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf,
                                 const int recvcounts[],
                                 MPI_Datatype datatype, MPI_Op op,
                                 MPI_Comm comm, MPI_Request *request)
{
    const int C = DPS_COLL_REDUCE_SCATTER;
    int size = shim_comm_size(comm), i, ok;
    uint64_t total = 0, *arr;
    shim_comm_t *c;
    shim_call_t k;
    vec_t v;

    if (shim_in_call || !shim.initialized) {
        return PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype,
                                    op, comm, request);
    }
    /* recvcounts is alike on every rank: the mean block is agreed. */
    ok = reducible(C, comm, 0, datatype, op, &v) && recvcounts != NULL;
    for (i = 0; ok && i < size; i++) {
        ok = recvcounts[i] >= 0;
        total += (uint64_t)recvcounts[i];
    }
    if (!ok || size == 0 || total > INT32_MAX ||
        !shim_big_enough(total * v.l.size / (uint64_t)size)) {
        return SHIM_FALLBACK(C, PMPI_Ireduce_scatter(sendbuf, recvbuf,
                                                     recvcounts, datatype,
                                                     op, comm, request));
    }
    SHIM_BEGIN(C, comm, c, k, PMPI_Ireduce_scatter(sendbuf, recvbuf,
                                                   recvcounts, datatype, op,
                                                   use, request));
    arr = shim_call_arrays(&k, size, 1);
    if (arr == NULL) {
        return shim_place_failed(c, &k, MPI_ERR_NO_MEM, comm, request);
    }
    for (i = 0; i < size; i++) {
        arr[i] = (uint64_t)recvcounts[i] * v.l.size;
    }
    k.args.rcount = arr;
    return vec_post(c, &k, &v, sendbuf, (int)total, recvbuf,
                    recvcounts[c->rank], 1, datatype, comm, request);
}

/* Iscan and Iexscan. */
static int scan(int C, const void *sendbuf, void *recvbuf, int count,
                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                MPI_Request *request)
{
    shim_comm_t *c;
    shim_call_t k;
    vec_t v;

#define SCAN_PMPI(on)                                                      \
    (C == DPS_COLL_SCAN                                                    \
     ? PMPI_Iscan(sendbuf, recvbuf, count, datatype, op, (on), request)    \
     : PMPI_Iexscan(sendbuf, recvbuf, count, datatype, op, (on), request))
    if (shim_in_call || !shim.initialized) {
        return SCAN_PMPI(comm);
    }
    if (!reducible(C, comm, count, datatype, op, &v) ||
        !shim_big_enough(v.l.bytes)) {
        return SHIM_FALLBACK(C, SCAN_PMPI(comm));
    }
    SHIM_BEGIN(C, comm, c, k, SCAN_PMPI(use));
#undef SCAN_PMPI
    k.args.bytes = v.l.bytes;
    return vec_post(c, &k, &v, sendbuf, count, recvbuf, count, 1, datatype,
                    comm, request);
}

SHIM_API int MPI_Iscan(const void *sendbuf, void *recvbuf, int count,
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                       MPI_Request *request)
{
    return scan(DPS_COLL_SCAN, sendbuf, recvbuf, count, datatype, op, comm,
                request);
}

SHIM_API int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count,
                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                         MPI_Request *request)
{
    return scan(DPS_COLL_EXSCAN, sendbuf, recvbuf, count, datatype, op, comm,
                request);
}
