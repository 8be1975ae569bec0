/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPICH 4.0's call-time argument checks of the collectives
 * (args/args_int.h), as its generated bindings make them
 * (src/binding/c/coll/<call>.c; error checking "all").
 */
#include "shim/args/args_int.h"

#if CHK_MPICH

#define M_BUILTIN(t) ((((unsigned)(t)) >> 30) == 0x1)

/* MPIR_ERRTEST_DATATYPE, then (not builtin) valid and committed. */
static int m_type(ck_t *k, MPI_Datatype t, const char *name)
{
    unsigned h = (unsigned)t;

    if (t == MPI_DATATYPE_NULL) {
        return ck_refuse(k, MPI_ERR_TYPE, 0, 0, "%s is MPI_DATATYPE_NULL",
                         name);
    }
    if (((h >> 26) & 0xf) != 0x3 || (h >> 30) == 0) {
        return ck_refuse(k, MPI_ERR_TYPE, 0, 0, "%s is not a datatype", name);
    }
    if (!M_BUILTIN(t) && ck_type_refused(t)) {
        return ck_refuse(k, MPI_ERR_TYPE, 0, 0, "%s is not committed", name);
    }
    return MPI_SUCCESS;
}

static int m_count(ck_t *k, int count, const char *name)
{
    if (count < 0) {
        return ck_refuse(k, MPI_ERR_COUNT, 0, 0, "%s is negative (%d)", name,
                         count);
    }
    return MPI_SUCCESS;
}

static int m_counti(ck_t *k, int count, const char *name, int i)
{
    if (count < 0) {
        return ck_refuse(k, MPI_ERR_COUNT, 0, 0, "%s[%d] is negative (%d)",
                         name, i, count);
    }
    return MPI_SUCCESS;
}

/* MPIR_ERRTEST_USERBUFFER: a null buffer (MPI_BOTTOM too) for data that
 * would start at it. */
static int m_userbuf(ck_t *k, const void *buf, int count, MPI_Datatype t,
                     const char *name)
{
    MPI_Aint lb = 0, ext = 0;
    int      size = 0;

    if (count <= 0 || buf != NULL) {
        return MPI_SUCCESS;
    }
    if (!M_BUILTIN(t)) {
        PMPI_Type_get_true_extent(t, &lb, &ext);
        PMPI_Type_size(t, &size);
        if (lb != 0 || size <= 0) {
            return MPI_SUCCESS;
        }
    }
    return ck_refuse(k, MPI_ERR_BUFFER, 0, 0,
                     "%s is NULL with a nonzero count", name);
}

/* MPIR_ERRTEST_SENDBUF_INPLACE, _RECVBUF_INPLACE */
static int m_inplace(ck_t *k, const void *buf, int count, const char *name)
{
    if (count > 0 && buf == MPI_IN_PLACE) {
        return ck_refuse(k, MPI_ERR_BUFFER, 0, 0, "%s is MPI_IN_PLACE", name);
    }
    return MPI_SUCCESS;
}

/* MPIR_ERRTEST_ALIAS_COLL */
static int m_alias(ck_t *k, const void *p, const void *q, const char *what)
{
    if (ck_cfg.alias && p == q) {
        return ck_refuse(k, MPI_ERR_BUFFER, 0, 0,
                         "%s (aliased buffers; "
                         "MPI_IN_PLACE is the way)",
                         what);
    }
    return MPI_SUCCESS;
}

static MPI_Aint m_size(MPI_Datatype t)
{
    int size = 0;

    PMPI_Type_size(t, &size);
    return size;
}

/* The root's own block of a gathered (scattered) buffer. */
static const void *m_own(const void *buf, int count, MPI_Datatype t, int i)
{
    return (const char *)buf + (MPI_Aint)i * count * m_size(t);
}

/* Igather, Igatherv, Iallgather, Iallgatherv: the send side. */
static int m_gather_send(ck_t *k, int rooted, int v)
{
    const shim_coll_args_t *a = k->a;
    int                     me = k->rank;

    if (a->sbuf == MPI_IN_PLACE) {
        return MPI_SUCCESS;
    }
    TRY(m_type(k, a->stype, "sendtype"));
    TRY(m_count(k, a->scount, "sendcount"));
    TRY(m_userbuf(k, a->sbuf, a->scount, a->stype, "sendbuf"));
    if (rooted && me != a->root) {
        return MPI_SUCCESS;
    }
    if (!v && a->stype == a->rtype && a->scount == a->rcount &&
        a->scount != 0) {
        TRY(m_alias(k, a->sbuf, m_own(a->rbuf, a->rcount, a->rtype, me),
                    "sendbuf is this rank's block of recvbuf"));
    } else if (v && a->stype == a->rtype && a->scount != 0 &&
               a->rcounts != NULL && a->rdispls != NULL &&
               a->rcounts[me] != 0) {
        TRY(m_alias(k, a->sbuf, m_own(a->rbuf, 1, a->rtype, a->rdispls[me]),
                    "sendbuf is this rank's block of recvbuf"));
    }
    return MPI_SUCCESS;
}

/* Igather(v) at the root, Iallgather(v): the receive side. */
static int m_gather_recv(ck_t *k, int v)
{
    const shim_coll_args_t *a = k->a;

    TRY(m_type(k, a->rtype, "recvtype"));
    if (!v) {
        TRY(m_inplace(k, a->rbuf, a->rcount, "recvbuf"));
        TRY(m_count(k, a->rcount, "recvcount"));
        return m_userbuf(k, a->rbuf, a->rcount, a->rtype, "recvbuf");
    }
    for (int i = 0; a->rcounts != NULL && i < k->size; i++) {
        TRY(m_inplace(k, a->rbuf, a->rcounts[i], "recvbuf"));
        TRY(m_counti(k, a->rcounts[i], "recvcounts", i));
        if (a->rdispls != NULL && a->rdispls[i] == 0) {
            TRY(m_userbuf(k, a->rbuf, a->rcounts[i], a->rtype, "recvbuf"));
        }
    }
    return MPI_SUCCESS;
}

/* Iscatter(v): the root's send side, everyone's receive side. */
static int m_scatter(ck_t *k, int v)
{
    const shim_coll_args_t *a = k->a;
    int                     me = k->rank;

    if (me == a->root) {
        TRY(m_type(k, a->stype, "sendtype"));
        if (!v) {
            TRY(m_inplace(k, a->sbuf, a->scount, "sendbuf"));
            TRY(m_count(k, a->scount, "sendcount"));
            TRY(m_userbuf(k, a->sbuf, a->scount, a->stype, "sendbuf"));
        }
        for (int i = 0; v && a->scounts != NULL && i < k->size; i++) {
            TRY(m_inplace(k, a->sbuf, a->scounts[i], "sendbuf"));
            TRY(m_counti(k, a->scounts[i], "sendcounts", i));
            if (a->sdispls != NULL && a->sdispls[i] == 0) {
                TRY(m_userbuf(k, a->sbuf, a->scounts[i], a->stype, "sendbuf"));
            }
        }
    }
    if (a->rbuf == MPI_IN_PLACE) {
        return MPI_SUCCESS;
    }
    TRY(m_type(k, a->rtype, "recvtype"));
    TRY(m_count(k, a->rcount, "recvcount"));
    TRY(m_userbuf(k, a->rbuf, a->rcount, a->rtype, "recvbuf"));
    if (me != a->root) {
        return MPI_SUCCESS;
    }
    if (!v && a->stype == a->rtype && a->scount == a->rcount &&
        a->scount != 0) {
        TRY(m_alias(k, a->rbuf, m_own(a->sbuf, a->scount, a->stype, me),
                    "recvbuf is the root's block of sendbuf"));
    } else if (v && a->stype == a->rtype && a->rcount != 0 &&
               a->scounts != NULL && a->sdispls != NULL &&
               a->scounts[me] != 0) {
        TRY(m_alias(k, a->rbuf, m_own(a->sbuf, 1, a->stype, a->sdispls[me]),
                    "recvbuf is the root's block of sendbuf"));
    }
    return MPI_SUCCESS;
}

/* Ialltoall(v)(w). */
static int m_alltoall(ck_t *k)
{
    const shim_coll_args_t *a = k->a;
    int v = k->coll != DPS_COLL_ALLTOALL, w = k->coll == DPS_COLL_ALLTOALLW;
    int i;

    if (a->sbuf != MPI_IN_PLACE) {
        if (!v) {
            TRY(m_type(k, a->stype, "sendtype"));
            TRY(m_count(k, a->scount, "sendcount"));
            TRY(m_userbuf(k, a->sbuf, a->scount, a->stype, "sendbuf"));
            if (a->stype == a->rtype && a->scount == a->rcount &&
                a->scount != 0) {
                TRY(m_alias(k, a->sbuf, a->rbuf, "sendbuf is recvbuf"));
            }
        } else {
            if (!w) {
                TRY(m_type(k, a->stype, "sendtype"));
            }
            for (i = 0; a->scounts != NULL && (!w || a->stypes != NULL) &&
                        i < k->size;
                 i++) {
                MPI_Datatype t = w ? a->stypes[i] : a->stype;

                if (w && a->scounts[i] > 0) {
                    TRY(m_type(k, t, "sendtypes[i]"));
                }
                TRY(m_counti(k, a->scounts[i], "sendcounts", i));
                if (a->sdispls != NULL && a->sdispls[i] == 0) {
                    TRY(m_userbuf(k, a->sbuf, a->scounts[i], t, "sendbuf"));
                }
            }
            /* The same arrays: MPICH's test for the same call. */
            if ((w ? a->stypes == a->rtypes : a->stype == a->rtype) &&
                a->scounts == a->rcounts) {
                TRY(m_alias(k, a->sbuf, a->rbuf, "sendbuf is recvbuf"));
            }
        }
    }
    if (!v) {
        TRY(m_type(k, a->rtype, "recvtype"));
        TRY(m_inplace(k, a->rbuf, a->rcount, "recvbuf"));
        TRY(m_count(k, a->rcount, "recvcount"));
        return m_userbuf(k, a->rbuf, a->rcount, a->rtype, "recvbuf");
    }
    if (!w) {
        TRY(m_type(k, a->rtype, "recvtype"));
    }
    for (i = 0; a->rcounts != NULL && (!w || a->rtypes != NULL) && i < k->size;
         i++) {
        MPI_Datatype t = w ? a->rtypes[i] : a->rtype;

        if (w && a->rcounts[i] > 0) {
            TRY(m_type(k, t, "recvtypes[i]"));
        }
        TRY(m_inplace(k, a->rbuf, a->rcounts[i], "recvbuf"));
        TRY(m_counti(k, a->rcounts[i], "recvcounts", i));
        if (a->rdispls != NULL && a->rdispls[i] == 0) {
            TRY(m_userbuf(k, a->rbuf, a->rcounts[i], t, "recvbuf"));
        }
    }
    return MPI_SUCCESS;
}

/* Ireduce, Iallreduce, Ireduce_scatter(_block), Iscan, Iexscan. MPICH
 * checks no count of these. */
static int m_reduce(ck_t *k)
{
    const shim_coll_args_t *a = k->a;
    int                     in_place = a->sbuf == MPI_IN_PLACE, rn, sn, i;

    if (k->coll == DPS_COLL_REDUCE) {
        TRY(ck_root(k));
    }
    TRY(ck_op(k, a->op, a->stype));
    TRY(m_type(k, a->stype, "datatype"));
    switch (k->coll) {
    case DPS_COLL_REDUCE:
        if (k->rank == a->root) {
            TRY(m_inplace(k, a->rbuf, a->scount, "recvbuf"));
            TRY(m_userbuf(k, a->rbuf, a->scount, a->stype, "recvbuf"));
            if (a->scount > 0 && !in_place) {
                TRY(m_alias(k, a->sbuf, a->rbuf, "sendbuf is recvbuf"));
            }
        }
        if (a->scount > 0 && !in_place) {
            TRY(m_userbuf(k, a->sbuf, a->scount, a->stype, "sendbuf"));
        }
        return MPI_SUCCESS;
    case DPS_COLL_REDUCE_SCATTER:
        sn = 0;
        for (i = 0; a->rcounts != NULL && i < k->size; i++) {
            TRY(m_counti(k, a->rcounts[i], "recvcounts", i));
            sn += a->rcounts[i];
        }
        rn = a->rcounts != NULL ? a->rcounts[k->rank] : 0;
        break;
    case DPS_COLL_REDUCE_SCATTER_BLOCK:
        rn = sn = a->rcount; /* sic: MPICH checks recvcount elements */
        break;
    default: rn = sn = a->scount; break;
    }
    TRY(m_inplace(k, a->rbuf, rn, "recvbuf"));
    if (!in_place && sn != 0) {
        TRY(m_alias(k, a->sbuf, a->rbuf, "sendbuf is recvbuf"));
    }
    TRY(m_userbuf(k, a->rbuf, rn, a->stype, "recvbuf"));
    return m_userbuf(k, a->sbuf, sn, a->stype, "sendbuf");
}

/* Ineighbor_*. */
static int m_neighbor(ck_t *k, int in, int out)
{
    const shim_coll_args_t *a = k->a;
    int                     v = k->coll == DPS_COLL_NEIGHBOR_ALLTOALLV ||
            k->coll == DPS_COLL_NEIGHBOR_ALLTOALLW;
    int w = k->coll == DPS_COLL_NEIGHBOR_ALLTOALLW, i;

    if (!v) {
        TRY(m_count(k, a->scount, "sendcount"));
        if (a->scount > 0) {
            TRY(m_type(k, a->stype, "sendtype"));
            TRY(m_userbuf(k, a->sbuf, a->scount, a->stype, "sendbuf"));
        }
    } else {
        if (!w) {
            TRY(m_type(k, a->stype, "sendtype"));
        }
        for (i = 0; a->scounts != NULL && (!w || a->stypes != NULL) && i < out;
             i++) {
            MPI_Datatype t = w ? a->stypes[i] : a->stype;
            int          at0 = w ? a->sad != NULL && a->sad[i] == 0
                                 : a->sdispls != NULL && a->sdispls[i] == 0;

            if (w && a->scounts[i] > 0) {
                TRY(m_type(k, t, "sendtypes[i]"));
            }
            TRY(m_counti(k, a->scounts[i], "sendcounts", i));
            if (at0) {
                TRY(m_userbuf(k, a->sbuf, a->scounts[i], t, "sendbuf"));
            }
        }
    }
    if (k->coll == DPS_COLL_NEIGHBOR_ALLGATHER ||
        k->coll == DPS_COLL_NEIGHBOR_ALLTOALL) {
        TRY(m_count(k, a->rcount, "recvcount"));
        if (a->rcount > 0) {
            TRY(m_type(k, a->rtype, "recvtype"));
            TRY(m_userbuf(k, a->rbuf, a->rcount, a->rtype, "recvbuf"));
        }
        return MPI_SUCCESS;
    }
    if (!w) {
        TRY(m_type(k, a->rtype, "recvtype"));
    }
    for (i = 0; a->rcounts != NULL && (!w || a->rtypes != NULL) && i < in;
         i++) {
        MPI_Datatype t = w ? a->rtypes[i] : a->rtype;
        int          at0 = w ? a->rad != NULL && a->rad[i] == 0
                             : a->rdispls != NULL && a->rdispls[i] == 0;

        if (w && a->rcounts[i] > 0) {
            TRY(m_type(k, t, "recvtypes[i]"));
        }
        TRY(m_counti(k, a->rcounts[i], "recvcounts", i));
        if (at0) {
            TRY(m_userbuf(k, a->rbuf, a->rcounts[i], t, "recvbuf"));
        }
    }
    return MPI_SUCCESS;
}

int ck_mpi(ck_t *k)
{
    const shim_coll_args_t *a = k->a;
    int                     in = 0, out = 0;

    /* Every reduction (common/dps_colls.h) as Ireduce. */
    switch (dps_coll_family(k->coll) == DPS_FAM_REDUCE ? DPS_COLL_REDUCE
                                                       : k->coll) {
    case DPS_COLL_BARRIER: break;
    case DPS_COLL_BCAST:
        TRY(ck_root(k));
        TRY(m_count(k, a->scount, "count"));
        if (a->scount > 0) {
            TRY(m_type(k, a->stype, "datatype"));
            TRY(m_userbuf(k, a->sbuf, a->scount, a->stype, "buffer"));
        }
        break;
    case DPS_COLL_GATHER:
    case DPS_COLL_GATHERV:
        TRY(ck_root(k));
        TRY(m_gather_send(k, 1, k->coll == DPS_COLL_GATHERV));
        if (k->rank == a->root) {
            TRY(m_gather_recv(k, k->coll == DPS_COLL_GATHERV));
        }
        break;
    case DPS_COLL_SCATTER:
    case DPS_COLL_SCATTERV:
        TRY(ck_root(k));
        TRY(m_scatter(k, k->coll == DPS_COLL_SCATTERV));
        break;
    case DPS_COLL_ALLGATHER:
    case DPS_COLL_ALLGATHERV:
        TRY(m_gather_send(k, 0, k->coll == DPS_COLL_ALLGATHERV));
        TRY(m_gather_recv(k, k->coll == DPS_COLL_ALLGATHERV));
        break;
    case DPS_COLL_ALLTOALL:
    case DPS_COLL_ALLTOALLV:
    case DPS_COLL_ALLTOALLW: TRY(m_alltoall(k)); break;
    case DPS_COLL_REDUCE: TRY(m_reduce(k)); break;
    default:
        if (!ck_is_neighbor(k->coll) ||
            !ck_degrees(a->comm, k->rank, &in, &out)) {
            return MPI_SUCCESS;
        }
        TRY(m_neighbor(k, in, out));
        break;
    }
    if (a->request == NULL) {
        return ck_refuse(k, MPI_ERR_ARG, 0, 0, "request is NULL");
    }
    return MPI_SUCCESS;
}
#endif /* CHK_MPICH */
