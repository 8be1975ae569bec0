/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Ireduce, Iallreduce, Ireduce_scatter, Ireduce_scatter_block, Iscan,
 * Iexscan: decide (wrap/coll.h), say where the data lies, post. Their
 * schedules are built in compile/reductions.c; agents and DMA engines reduce
 * with common/dps_sched.c.
 *
 * Offloaded: the predefined operations on the predefined types MPI 4.1
 * §6.9.2 allows them on, where the MPI library has the type and the
 * agents compute it as the library does (data/rtypes.c; MAXLOC and MINLOC
 * on the pair types, packed when their layout has padding). The standard
 * requires count, type and operation to be alike on every rank, so the
 * decision is too. User-defined operations, and derived types (which both
 * MPIs refuse with predefined operations), go to stock MPI, counted as
 * fallbacks.
 */
#include "shim/wrap/coll.h"
#include "common/dps_status.h"

#include <string.h>

/* A vector of count elements of dt, as this rank's reduction sees it. */
typedef struct vec {
    unsigned      op, dtype;
    shim_layout_t l;
} vec_t;

/* Can the agents reduce elements of dt with op (the types and operations
 * the library was found to compute as they do, data/rtypes.c)? Sets
 * v->op, v->dtype; if not, *why says why (why may be NULL). */
static int reducible(MPI_Datatype dt, MPI_Op op, vec_t *v, int *why)
{
    shim_layout_t one;
    int           no;

    v->op = shim_op_of(op);
    v->dtype = DPS_T_NONE;
    no = shim_rtype(dt, v->op, &v->dtype);
    if (no == 0 &&
        (!dps_op_valid(v->op, v->dtype) || !shim_layout(dt, 1, &one) ||
         one.size != dps_dtype_size(v->dtype))) {
        no = SHIM_WHY_TYPE;
    }
    if (no != 0) {
        if (why != NULL) {
            *why = no;
        }
        return 0;
    }
    return 1;
}

/* May the ranks offload a's operation on its datatype? A call MPI
 * refuses for its operation or datatype (chk) says nothing of the other
 * ranks': theirs may be one the agents reduce. */
static int red_op_ok(const shim_coll_args_t *a, const shim_check_t *chk,
                     vec_t *v, int *why)
{
    memset(v, 0, sizeof(*v));
    return reducible(a->stype, a->op, v, why) ||
           (chk != NULL && (chk->bad & SHIM_BAD_OP));
}

/*
 * Whether the ranks offload a reduction of count elements (a block every
 * rank knows alike) of a->stype with a->op; v gets their layout and the
 * agents' operation and element type (shim_offloads_fn). A refused call
 * (chk): see red_op_ok; an unknown size, any size that offloads; the
 * root taken for valid. why may be NULL (v wanted, not the reason).
 */
static int red_offloads(const shim_coll_args_t *a, const shim_check_t *chk,
                        int count, vec_t *v, int *why)
{
    if (!red_op_ok(a, chk, v, why)) {
        return 0;
    }
    if (chk == NULL && a->coll == DPS_COLL_REDUCE &&
        (a->root < 0 || a->root >= shim_comm_size(a->comm))) {
        return 0;
    }
    return shim_layout(a->stype, count, &v->l)
               ? shim_big_enough(why, v->l.bytes)
               : chk != NULL && shim_any_size(why);
}

static int count_offloads(const shim_coll_args_t *a, const shim_check_t *chk,
                          int *why)
{
    vec_t v;

    return red_offloads(a, chk, a->scount, &v, why);
}

static int block_offloads(const shim_coll_args_t *a, const shim_check_t *chk,
                          int *why)
{
    vec_t v;

    return red_offloads(a, chk, a->rcount, &v, why) &&
           (a->rcount < 0 ||
            (uint64_t)a->rcount * (uint64_t)shim_comm_size(a->comm) <=
                INT32_MAX);
}

/* Reduce_scatter: recvcounts is alike on every rank, so the mean block
 * is agreed; with a count negative (or none given) it is unknown. */
static int mean_offloads(const shim_coll_args_t *a, const shim_check_t *chk,
                         int *why)
{
    int           size = shim_comm_size(a->comm), i;
    uint64_t      total = 0;
    shim_layout_t l;
    vec_t         v;

    if (!red_op_ok(a, chk, &v, why) || size == 0) {
        return 0;
    }
    for (i = 0; a->rcounts != NULL && i < size; i++) {
        if (a->rcounts[i] < 0) {
            break;
        }
        total += (uint64_t)a->rcounts[i];
    }
    if (a->rcounts == NULL || i < size || !shim_layout(a->stype, 0, &l)) {
        return chk != NULL && shim_any_size(why);
    }
    return total <= INT32_MAX &&
           shim_big_enough(why, total * l.size / (uint64_t)size);
}

/*
 * Place a reduction's data: send count_in elements of a's datatype at
 * its sbuf (in place: at rbuf, copied, since the result overwrites it),
 * receive count_out at rbuf (when has_out). Then post.
 */
static int vec_post(shim_comm_t *c, shim_call_t *k, const vec_t *v,
                    int count_in, int count_out, int has_out,
                    const shim_coll_args_t *a)
{
    int           in_place = a->sbuf == MPI_IN_PLACE;
    shim_blocks_t sb = {in_place ? a->rbuf : a->sbuf,
                        1,
                        count_in,
                        NULL,
                        NULL,
                        a->stype,
                        NULL,
                        in_place,
                        NULL,
                        0};
    shim_blocks_t rb = {a->rbuf,  1,    count_out, NULL, NULL,
                        a->stype, NULL, 0,         NULL, 0};
    uint64_t      cnt, off;
    dps_status_t  rc;

    k->args.op = (uint8_t)v->op;
    k->args.dtype = (uint16_t)v->dtype;
    rc = shim_place_send(k, &sb, &cnt, &off);
    if (rc == DPS_OK && has_out) {
        rc = shim_place_recv(k, &rb, &cnt, &off);
    }
    if (rc != DPS_OK) {
        return shim_place_failed(c, k, rc, a->comm, a->request);
    }
    return shim_call_post(c, k, a->request);
}

/* Ireduce, after the decision (shim_post_fn). */
static int reduce(shim_comm_t *c, shim_call_t *k, const shim_coll_args_t *a)
{
    vec_t v;

    red_offloads(a, NULL, a->scount, &v, NULL);
    k->args.root = (uint32_t)a->root;
    k->args.bytes = v.l.bytes;
    if (c->rank != a->root && a->sbuf == MPI_IN_PLACE) {
        return shim_call_erroneous(c, k, DPS_ERR_ARG, MPI_ERR_BUFFER, a->comm,
                                   a->request,
                                   "MPI_Ireduce: "
                                   "MPI_IN_PLACE on a rank that is not the "
                                   "root");
    }
    return vec_post(c, k, &v, a->scount, a->scount, c->rank == a->root, a);
}

/* Iallreduce, Iscan, Iexscan: count elements in and out, everywhere. */
static int all(shim_comm_t *c, shim_call_t *k, const shim_coll_args_t *a)
{
    vec_t v;

    red_offloads(a, NULL, a->scount, &v, NULL);
    k->args.bytes = v.l.bytes;
    return vec_post(c, k, &v, a->scount, a->scount, 1, a);
}

/* Ireduce_scatter_block: recvcount elements out, size times that in. */
static int block(shim_comm_t *c, shim_call_t *k, const shim_coll_args_t *a)
{
    int   size = shim_comm_size(a->comm);
    vec_t v;

    red_offloads(a, NULL, a->rcount, &v, NULL);
    k->args.bytes = v.l.bytes;
    return vec_post(c, k, &v, a->rcount * size, a->rcount, 1, a);
}

/* Ireduce_scatter: recvcounts[rank] elements out, their sum in. */
static int scatter(shim_comm_t *c, shim_call_t *k, const shim_coll_args_t *a)
{
    int      size = shim_comm_size(a->comm), i;
    uint64_t total = 0, *arr;
    vec_t    v;

    red_offloads(a, NULL, 0, &v, NULL);
    for (i = 0; i < size; i++) {
        total += (uint64_t)a->rcounts[i];
    }
    arr = shim_call_arrays(k, size, 1);
    if (arr == NULL) {
        return shim_place_failed(c, k, DPS_ERR_NOMEM, a->comm, a->request);
    }
    for (i = 0; i < size; i++) {
        arr[i] = (uint64_t)a->rcounts[i] * v.l.size;
    }
    k->args.rcount = arr;
    return vec_post(c, k, &v, (int)total, a->rcounts[c->rank], 1, a);
}

/* The entries (common/dps_colls.h): each call's decision and post. */
SHIM_COLL_ENTRY_RUN(reduce, count_offloads, reduce)
SHIM_COLL_ENTRY_RUN(allreduce, count_offloads, all)
SHIM_COLL_ENTRY_RUN(reduce_scatter_block, block_offloads, block)
SHIM_COLL_ENTRY_RUN(reduce_scatter, mean_offloads, scatter)
