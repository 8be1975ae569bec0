/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Open MPI 4.1's call-time argument checks of the collectives
 * (args/args_int.h): the MPI_PARAM_CHECK blocks of ompi/mpi/c/<call>.c
 * and ompi/mpiext/pcollreq/c/<call>_init.c.
 */
#include "shim/args/args_int.h"

#include <stdio.h>

#if CHK_OMPI

/* OMPI_CHECK_DATATYPE_FOR_SEND (and _FOR_RECV: the same tests). */
static int o_type(ck_t *k, MPI_Datatype t, int count, const char *tname,
                  const char *cname)
{
    if (t == MPI_DATATYPE_NULL || t == NULL) {
        return ck_refuse(k, MPI_ERR_TYPE, 0, 0, "%s is MPI_DATATYPE_NULL",
                         tname);
    }
    if (count < 0) {
        return ck_refuse(k, MPI_ERR_COUNT, 0, 0, "%s is negative (%d)", cname,
                         count);
    }
    if (ck_type_refused(t)) {
        return ck_refuse(k, MPI_ERR_TYPE, 0, 0, "%s is not committed", tname);
    }
    return MPI_SUCCESS;
}

/* The same for entry i of a count array (and of a type array). */
static int o_typei(ck_t *k, MPI_Datatype t, int count, const char *tname,
                   const char *cname, int i)
{
    char cn[40];

    snprintf(cn, sizeof(cn), "%s[%d]", cname, i);
    return o_type(k, t, count, tname, cn);
}

static int o_null_type(ck_t *k, MPI_Datatype t, const char *name)
{
    if (t == MPI_DATATYPE_NULL || t == NULL) {
        return ck_refuse(k, MPI_ERR_TYPE, 0, 0, "%s is MPI_DATATYPE_NULL",
                         name);
    }
    return MPI_SUCCESS;
}

/* A regular receive block: recvtype not null, recvcount not negative. */
static int o_recv_block(ck_t *k)
{
    TRY(o_null_type(k, k->a->rtype, "recvtype"));
    if (k->a->rcount < 0) {
        return ck_refuse(k, MPI_ERR_COUNT, 0, 0, "recvcount is negative (%d)",
                         k->a->rcount);
    }
    return MPI_SUCCESS;
}

static MPI_Aint o_bytes(MPI_Datatype t, int count)
{
    int size = 0;

    PMPI_Type_size(t, &size);
    return (MPI_Aint)size * count;
}

static int o_rooted(ck_t *k)
{
    const shim_coll_args_t *a = k->a;
    int gather = k->coll == DPS_COLL_GATHER || k->coll == DPS_COLL_GATHERV;
    int v = k->coll == DPS_COLL_GATHERV || k->coll == DPS_COLL_SCATTERV;
    int root = k->rank == a->root, i;
    const void *many = gather ? a->rbuf : a->sbuf;
    const void *one = gather ? a->sbuf : a->rbuf;

    if ((!root && one == MPI_IN_PLACE) || (root && many == MPI_IN_PLACE)) {
        return ck_refuse(k, MPI_ERR_ARG, 0, 0, "%s is MPI_IN_PLACE %s",
                         gather ? (root ? "recvbuf" : "sendbuf")
                                : (root ? "sendbuf" : "recvbuf"),
                         root ? "at the root"
                              : "on a rank other than the root");
    }
    TRY(ck_root(k));
    if (gather) {
        if (a->sbuf != MPI_IN_PLACE) {
            TRY(o_type(k, a->stype, a->scount, "sendtype", "sendcount"));
        }
        if (!root) {
            return MPI_SUCCESS;
        }
        if (!v) {
            return o_recv_block(k);
        }
        if (a->rdispls == NULL) {
            return ck_refuse(k, MPI_ERR_ARG, 0, 0, "displs is NULL");
        }
        if (a->rcounts == NULL) {
            return ck_refuse(k, MPI_ERR_COUNT, 0, 0, "recvcounts is NULL");
        }
        for (i = 0; i < k->size; i++) {
            if (a->rcounts[i] < 0) {
                return ck_refuse(k, MPI_ERR_COUNT, 0, 0,
                                 "recvcounts[%d] is "
                                 "negative (%d)",
                                 i, a->rcounts[i]);
            }
            TRY(o_null_type(k, a->rtype, "recvtype"));
        }
        return MPI_SUCCESS;
    }
    /* Scatter. Regular: the root's send side only with an in-place
     * receive (sic, an else-if chain in iscatter.c). */
    if (a->rbuf != MPI_IN_PLACE) {
        if (a->rcount < 0) {
            return ck_refuse(k, MPI_ERR_COUNT, 0, 0,
                             "recvcount is negative "
                             "(%d)",
                             a->rcount);
        }
        TRY(o_null_type(k, a->rtype, "recvtype"));
        if (!v) {
            return MPI_SUCCESS;
        }
    }
    if (!root) {
        return MPI_SUCCESS;
    }
    if (!v) {
        return o_type(k, a->stype, a->scount, "sendtype", "sendcount");
    }
    if (a->sdispls == NULL) {
        return ck_refuse(k, MPI_ERR_ARG, 0, 0, "displs is NULL");
    }
    if (a->scounts == NULL) {
        return ck_refuse(k, MPI_ERR_COUNT, 0, 0, "sendcounts is NULL");
    }
    for (i = 0; i < k->size; i++) {
        TRY(o_typei(k, a->stype, a->scounts[i], "sendtype", "sendcounts", i));
    }
    return MPI_SUCCESS;
}

static int o_allgather(ck_t *k)
{
    const shim_coll_args_t *a = k->a;

    if (k->coll == DPS_COLL_ALLGATHER) {
        TRY(o_recv_block(k));
        if (a->rbuf == MPI_IN_PLACE) {
            return ck_refuse(k, MPI_ERR_ARG, 0, 0, "recvbuf is MPI_IN_PLACE");
        }
        if (a->sbuf != MPI_IN_PLACE) {
            TRY(o_type(k, a->stype, a->scount, "sendtype", "sendcount"));
        }
        return MPI_SUCCESS;
    }
    if (a->rbuf == MPI_IN_PLACE) {
        return ck_refuse(k, MPI_ERR_ARG, 0, 0, "recvbuf is MPI_IN_PLACE");
    }
    if (a->rtype == MPI_DATATYPE_NULL) {
        return ck_refuse(k, MPI_ERR_TYPE, 0, 0,
                         "recvtype is "
                         "MPI_DATATYPE_NULL");
    }
    if (a->sbuf != MPI_IN_PLACE) {
        TRY(o_type(k, a->stype, a->scount, "sendtype", "sendcount"));
    }
    /* Its recvcounts loop runs to ompi_comm_remote_size(), which is 0 on
     * an intracommunicator: no count is checked. */
    if (a->rdispls == NULL) {
        return ck_refuse(k, MPI_ERR_BUFFER, 0, 0, "displs is NULL");
    }
    return MPI_SUCCESS;
}

static int o_alltoall(ck_t *k)
{
    const shim_coll_args_t *a = k->a;
    int                     w = k->coll == DPS_COLL_ALLTOALLW, me = k->rank, i;
    const int              *sc = a->scounts, *sd = a->sdispls;
    const MPI_Datatype     *sts = a->stypes;
    MPI_Datatype            st = a->stype;

    if (k->coll == DPS_COLL_ALLTOALL) {
        if (a->rbuf == MPI_IN_PLACE) {
            return ck_refuse(k, MPI_ERR_ARG, 1, 0, "recvbuf is MPI_IN_PLACE");
        }
        if (a->sbuf != MPI_IN_PLACE) {
            TRY(o_type(k, a->stype, a->scount, "sendtype", "sendcount"));
        }
        TRY(o_type(k, a->rtype, a->rcount, "recvtype", "recvcount"));
        if (a->sbuf != MPI_IN_PLACE &&
            o_bytes(a->stype, a->scount) != o_bytes(a->rtype, a->rcount)) {
            return ck_refuse(k, MPI_ERR_TRUNCATE, 0, 0,
                             "sendcount x sendtype "
                             "and recvcount x recvtype differ in size");
        }
        return MPI_SUCCESS;
    }
    if (a->sbuf == MPI_IN_PLACE) {
        sc = a->rcounts;
        sd = a->rdispls;
        st = a->rtype;
        sts = a->rtypes;
    }
    if (sc == NULL || sd == NULL || a->rcounts == NULL || a->rdispls == NULL ||
        (w && (sts == NULL || a->rtypes == NULL)) || a->rbuf == MPI_IN_PLACE) {
        return ck_refuse(k, MPI_ERR_ARG, 0, 0,
                         a->rbuf == MPI_IN_PLACE ? "recvbuf is MPI_IN_PLACE"
                                                 : "a count, displacement "
                                                   "or type array is NULL");
    }
    for (i = 0; i < k->size; i++) {
        TRY(o_typei(k, w ? sts[i] : st, sc[i], w ? "sendtypes[i]" : "sendtype",
                    "sendcounts", i));
        TRY(o_typei(k, w ? a->rtypes[i] : a->rtype, a->rcounts[i],
                    w ? "recvtypes[i]" : "recvtype", "recvcounts", i));
    }
    if (a->sbuf != MPI_IN_PLACE &&
        o_bytes(w ? sts[me] : st, sc[me]) !=
            o_bytes(w ? a->rtypes[me] : a->rtype, a->rcounts[me])) {
        return ck_refuse(k, MPI_ERR_TRUNCATE, 0, 0,
                         "this rank's block to "
                         "itself differs in size from the one it receives");
    }
    return MPI_SUCCESS;
}

static int o_reduce(ck_t *k)
{
    const shim_coll_args_t *a = k->a;
    int                     root = k->rank == a->root, i;

    if (k->coll == DPS_COLL_SCAN && a->rbuf == MPI_IN_PLACE) {
        /* iscan.c tests op null, then recvbuf, then op with type */
        if (a->op == MPI_OP_NULL || a->op == NULL) {
            return ck_op(k, a->op, a->stype);
        }
        return ck_refuse(k, MPI_ERR_ARG, 0, 0, "recvbuf is MPI_IN_PLACE");
    }
    TRY(ck_op(k, a->op, a->stype));
    switch (k->coll) {
    case DPS_COLL_REDUCE:
        if ((!root && a->sbuf == MPI_IN_PLACE) ||
            (root && (a->rbuf == MPI_IN_PLACE ||
                      (a->sbuf == a->rbuf && (a->scount != 0 || k->pers))))) {
            return ck_refuse(
                k, MPI_ERR_ARG, 0, 0,
                !root ? "sendbuf is MPI_IN_PLACE on a rank other than "
                        "the root"
                : a->rbuf == MPI_IN_PLACE
                    ? "recvbuf is MPI_IN_PLACE at the root"
                    : "sendbuf is recvbuf at the root (aliased "
                      "buffers; MPI_IN_PLACE is the way)");
        }
        TRY(o_type(k, a->stype, a->scount, "datatype", "count"));
        return ck_root(k);
    case DPS_COLL_ALLREDUCE:
        if (a->rbuf == MPI_IN_PLACE) {
            return ck_refuse(k, MPI_ERR_BUFFER, 1, 0,
                             "recvbuf is "
                             "MPI_IN_PLACE");
        }
        if (a->sbuf == a->rbuf && a->sbuf != MPI_BOTTOM && a->scount > 1) {
            return ck_refuse(k, MPI_ERR_BUFFER, 1, 0,
                             "sendbuf is recvbuf "
                             "(aliased buffers; MPI_IN_PLACE is the way)");
        }
        return o_type(k, a->stype, a->scount, "datatype", "count");
    case DPS_COLL_REDUCE_SCATTER:
        if (a->rcounts == NULL) {
            return ck_refuse(k, MPI_ERR_COUNT, 0, 0, "recvcounts is NULL");
        }
        if (a->rbuf == MPI_IN_PLACE) {
            return ck_refuse(k, MPI_ERR_ARG, 0, 0, "recvbuf is MPI_IN_PLACE");
        }
        for (i = 0; i < k->size; i++) {
            TRY(o_typei(k, a->stype, a->rcounts[i], "datatype", "recvcounts",
                        i));
        }
        return MPI_SUCCESS;
    case DPS_COLL_REDUCE_SCATTER_BLOCK:
        if (a->rbuf == MPI_IN_PLACE) {
            return ck_refuse(k, MPI_ERR_ARG, 0, 0, "recvbuf is MPI_IN_PLACE");
        }
        return o_type(k, a->stype, a->rcount, "datatype", "recvcount");
    default: /* scan, exscan */
        return o_type(k, a->stype, a->scount, "datatype", "count");
    }
}

static int o_neighbor(ck_t *k, int in, int out)
{
    const shim_coll_args_t *a = k->a;
    int w = k->coll == DPS_COLL_NEIGHBOR_ALLTOALLW, i, nulls;
    int inplace = a->sbuf == MPI_IN_PLACE || a->rbuf == MPI_IN_PLACE;

    switch (k->coll) {
    case DPS_COLL_NEIGHBOR_ALLGATHER:
        TRY(o_recv_block(k));
        if (inplace) {
            return ck_refuse(k, MPI_ERR_ARG, 0, 0, "a buffer is MPI_IN_PLACE");
        }
        return o_type(k, a->stype, a->scount, "sendtype", "sendcount");
    case DPS_COLL_NEIGHBOR_ALLGATHERV:
        if (inplace) {
            return ck_refuse(k, MPI_ERR_ARG, 0, 0, "a buffer is MPI_IN_PLACE");
        }
        if (a->rtype == MPI_DATATYPE_NULL) {
            return ck_refuse(k, MPI_ERR_TYPE, 0, 0,
                             "recvtype is "
                             "MPI_DATATYPE_NULL");
        }
        TRY(o_type(k, a->stype, a->scount, "sendtype", "sendcount"));
        /* recvcounts: as in iallgatherv.c, a loop to the remote size,
         * 0 here. */
        if (a->rdispls == NULL) {
            return ck_refuse(k, MPI_ERR_BUFFER, 0, 0, "displs is NULL");
        }
        return MPI_SUCCESS;
    case DPS_COLL_NEIGHBOR_ALLTOALL:
        if (inplace) {
            return ck_refuse(k, MPI_ERR_ARG, 1, 0, "a buffer is MPI_IN_PLACE");
        }
        TRY(o_type(k, a->stype, a->scount, "sendtype", "sendcount"));
        TRY(o_type(k, a->rtype, a->rcount, "recvtype", "recvcount"));
        if (o_bytes(a->stype, a->scount) != o_bytes(a->rtype, a->rcount)) {
            return ck_refuse(k, MPI_ERR_TRUNCATE, 0, 0,
                             "sendcount x sendtype "
                             "and recvcount x recvtype differ in size");
        }
        return MPI_SUCCESS;
    default: break;
    }
    /* v and w: the persistent forms test the arrays whatever the
     * ck_degrees. */
    nulls =
        ((out > 0 || k->pers) &&
         (a->scounts == NULL || (w ? a->sad == NULL : a->sdispls == NULL) ||
          (w && a->stypes == NULL))) ||
        ((in > 0 || k->pers) &&
         (a->rcounts == NULL || (w ? a->rad == NULL : a->rdispls == NULL) ||
          (w && a->rtypes == NULL)));
    if (nulls || inplace) {
        return ck_refuse(k, MPI_ERR_ARG, 0, 0,
                         inplace ? "a buffer is "
                                   "MPI_IN_PLACE"
                                 : "a count, displacement or type array "
                                   "is NULL");
    }
    for (i = 0; i < out; i++) {
        TRY(o_typei(k, w ? a->stypes[i] : a->stype, a->scounts[i],
                    w ? "sendtypes[i]" : "sendtype", "sendcounts", i));
    }
    for (i = 0; i < in; i++) {
        TRY(o_typei(k, w ? a->rtypes[i] : a->rtype, a->rcounts[i],
                    w ? "recvtypes[i]" : "recvtype", "recvcounts", i));
    }
    return MPI_SUCCESS;
}

int ck_mpi(ck_t *k)
{
    const shim_coll_args_t *a = k->a;
    int                     in = 0, out = 0;

    if (!ck_cfg.on) {
        return MPI_SUCCESS; /* mpi_param_check off: no checks at all */
    }
    /* Every reduction (common/dps_colls.h) as Ireduce. */
    switch (dps_coll_family(k->coll) == DPS_FAM_REDUCE ? DPS_COLL_REDUCE
                                                       : k->coll) {
    case DPS_COLL_BARRIER: return MPI_SUCCESS;
    case DPS_COLL_BCAST:
        TRY(o_type(k, a->stype, a->scount, "datatype", "count"));
        if (a->sbuf == MPI_IN_PLACE) {
            return ck_refuse(k, MPI_ERR_ARG, 0, 0, "buffer is MPI_IN_PLACE");
        }
        return ck_root(k);
    case DPS_COLL_GATHER:
    case DPS_COLL_GATHERV:
    case DPS_COLL_SCATTER:
    case DPS_COLL_SCATTERV: return o_rooted(k);
    case DPS_COLL_ALLGATHER:
    case DPS_COLL_ALLGATHERV: return o_allgather(k);
    case DPS_COLL_ALLTOALL:
    case DPS_COLL_ALLTOALLV:
    case DPS_COLL_ALLTOALLW: return o_alltoall(k);
    case DPS_COLL_REDUCE: return o_reduce(k);
    default:
        if (!ck_is_neighbor(k->coll) ||
            !ck_degrees(a->comm, k->rank, &in, &out)) {
            return MPI_SUCCESS;
        }
        return o_neighbor(k, in, out);
    }
}
#endif /* CHK_OMPI */
