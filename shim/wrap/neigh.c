/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Ineighbor_allgather(v) and MPI_Ineighbor_alltoall(v)(w), and the
 * list of transfers they and pattern groups (wrap/group.c) post
 * (shim_pairs_post; built by bld_pairs in compile/moves.c).
 *
 * The neighbours come from the communicator's topology, in MPI's order:
 * Cartesian, per dimension the one in the negative direction then the
 * one in the positive direction (MPI_Cart_shift by +1: source, then
 * destination), MPI_PROC_NULL past a non-periodic edge; graph, the
 * neighbour list for both ways; distributed graph, the sources and the
 * destinations (weights are only hints).
 *
 * Pairing: the engine pairs the k-th send of a rank to a peer with the
 * peer's k-th receive from it. On a distributed graph that is MPI's rule
 * for repeated edges. On a Cartesian communicator MPI (4.1, section 8.6)
 * delivers the block sent in the negative direction of a dimension into
 * the receiver's block of its positive side, and the other way round: the
 * same rank on both sides (a periodic dimension of 1 or 2 processes) is
 * told apart by listing each dimension's two receives swapped.
 */
#include "shim/wrap/coll.h"
#include "common/dps_status.h"

#include <stdlib.h>
#include <string.h>

int shim_neighbors(MPI_Comm comm, int *indeg, int **srcs, int *outdeg,
                   int **dsts, int *cart)
{
    int  topo = MPI_UNDEFINED, n = 0, in = 0, out = 0, w = 0, rank, d;
    int *s = NULL, *t = NULL, *sw = NULL, *tw = NULL, rc = MPI_SUCCESS;

    *cart = 0;
    if (PMPI_Topo_test(comm, &topo) != MPI_SUCCESS) {
        return DPS_ERR_INVALID;
    }
    switch (topo) {
    case MPI_CART:
        PMPI_Cartdim_get(comm, &n);
        in = out = 2 * n;
        s = malloc(sizeof(int) * (size_t)(in + 1));
        t = malloc(sizeof(int) * (size_t)(out + 1));
        for (d = 0; s != NULL && t != NULL && d < n; d++) {
            rc |= PMPI_Cart_shift(comm, d, 1, &s[2 * d], &s[2 * d + 1]);
            t[2 * d] = s[2 * d];
            t[2 * d + 1] = s[2 * d + 1];
        }
        *cart = 1;
        break;
    case MPI_GRAPH:
        PMPI_Comm_rank(comm, &rank);
        PMPI_Graph_neighbors_count(comm, rank, &n);
        in = out = n;
        s = malloc(sizeof(int) * (size_t)(n + 1));
        t = malloc(sizeof(int) * (size_t)(n + 1));
        if (s != NULL && t != NULL) {
            rc = PMPI_Graph_neighbors(comm, rank, n, s);
            memcpy(t, s, sizeof(int) * (size_t)n);
        }
        break;
    case MPI_DIST_GRAPH:
        PMPI_Dist_graph_neighbors_count(comm, &in, &out, &w);
        s = malloc(sizeof(int) * (size_t)(in + 1));
        t = malloc(sizeof(int) * (size_t)(out + 1));
        sw = malloc(sizeof(int) * (size_t)(in + 1));
        tw = malloc(sizeof(int) * (size_t)(out + 1));
        if (s != NULL && t != NULL && sw != NULL && tw != NULL) {
            rc =
                PMPI_Dist_graph_neighbors(comm, in, s, w ? sw : MPI_UNWEIGHTED,
                                          out, t, w ? tw : MPI_UNWEIGHTED);
        }
        free(sw);
        free(tw);
        if (sw == NULL || tw == NULL) {
            rc = MPI_ERR_NO_MEM;
        }
        break;
    default: return DPS_ERR_INVALID; /* no topology: MPI raises the error */
    }
    if (s == NULL || t == NULL || rc != MPI_SUCCESS) {
        int err = s == NULL || t == NULL || rc == MPI_ERR_NO_MEM
                      ? DPS_ERR_NOMEM
                      : DPS_ERR_INVALID;

        free(s);
        free(t);
        return err;
    }
    *indeg = in;
    *outdeg = out;
    *srcs = s;
    *dsts = t;
    return DPS_OK;
}

int shim_pairs_post(shim_comm_t *c, shim_call_t *k, const shim_blocks_t *sb,
                    const int *speer, const shim_blocks_t *rb,
                    const int *rpeer, MPI_Comm comm, MPI_Request *req)
{
    size_t       ns = (size_t)sb->n, nr = (size_t)rb->n, i, j, n = 0;
    uint64_t    *arr = shim_call_arrays(k, 1, (int)(5 * (ns + nr)));
    uint64_t    *scnt = arr, *soff = arr + ns, *rcnt = soff + ns;
    uint64_t    *roff = rcnt + nr, *pairs = roff + nr;
    dps_status_t rc;

    if (arr == NULL) {
        return shim_place_failed(c, k, DPS_ERR_NOMEM, comm, req);
    }
    rc = shim_place_send(k, sb, scnt, soff);
    if (rc == DPS_OK) {
        rc = shim_place_recv(k, rb, rcnt, roff);
    }
    if (rc != DPS_OK) {
        return shim_place_failed(c, k, rc, comm, req);
    }
    for (i = 0; i < ns; i++) {
        if (speer[i] != MPI_PROC_NULL) {
            pairs[3 * n] = (uint64_t)speer[i];
            pairs[3 * n + 1] = soff[i];
            pairs[3 * n + 2] = scnt[i];
            n++;
        }
    }
    k->args.nsend = (uint32_t)n;
    for (j = 0; j < nr; j++) {
        if (rpeer[j] != MPI_PROC_NULL) {
            pairs[3 * n] = (uint64_t)rpeer[j];
            pairs[3 * n + 1] = roff[j];
            pairs[3 * n + 2] = rcnt[j];
            n++;
        }
    }
    k->args.nrecv = (uint32_t)n - k->args.nsend;
    k->args.pairs = pairs;
    /* Transfers to itself are copies: the k-th send into the k-th
     * receive, of the same size (MPI's type signatures must match). */
    for (i = 0, j = 0; i < ns; i++) {
        if (speer[i] != c->rank) {
            continue;
        }
        while (j < nr && rpeer[j] != c->rank) {
            j++;
        }
        if (j == nr || rcnt[j] != scnt[i]) {
            return shim_call_erroneous(c, k, DPS_ERR_ARG, MPI_ERR_TRUNCATE,
                                       comm, req,
                                       "a message to the rank "
                                       "itself differs in size from the "
                                       "receive it meets");
        }
        j++;
    }
    return shim_call_post(c, k, req);
}

static MPI_Aint extent_of(MPI_Datatype t)
{
    MPI_Aint lb = 0, ext = 0;

    if (t != MPI_DATATYPE_NULL) {
        PMPI_Type_get_extent(t, &lb, &ext);
    }
    return ext;
}

/*
 * One side's blocks: n of them, block i for neighbour peer[i] (none for
 * MPI_PROC_NULL: MPI leaves its receive block alone). all: every block is
 * the same one (allgather's send). v: counts and displacements per block
 * (elements), w: counts, byte displacements and types.
 */
static void side(shim_blocks_t *b, int *cnt, MPI_Aint *disp, int n,
                 const int *peer, const void *buf, int count,
                 const int *counts, const int *displs, const MPI_Aint *ad,
                 MPI_Datatype type, const MPI_Datatype *types, int all)
{
    MPI_Aint ext = types != NULL ? 0 : extent_of(type);

    for (int i = 0; i < n; i++) {
        cnt[i] = peer[i] == MPI_PROC_NULL ? 0
                 : counts != NULL         ? counts[i]
                                          : count;
        disp[i] = ad != NULL       ? ad[i]
                  : all            ? 0
                  : displs != NULL ? (MPI_Aint)displs[i] * ext
                                   : (MPI_Aint)i * count * ext;
    }
    memset(b, 0, sizeof(*b));
    b->buf = buf;
    b->n = n;
    b->counts = cnt;
    b->adispls = disp;
    b->type = type;
    b->types = types;
    /* Byte displacements (w) may be absolute addresses from MPI_BOTTOM,
     * the blocks in unrelated allocations: never one region over all. */
    b->spread = ad != NULL;
}

static int offload(const shim_coll_args_t *a, shim_comm_t *c, shim_call_t *k,
                   int in, int *srcs, int out, int *dsts, int cart,
                   MPI_Comm comm, MPI_Request *req)
{
    int all = a->coll == DPS_COLL_NEIGHBOR_ALLGATHER ||
              a->coll == DPS_COLL_NEIGHBOR_ALLGATHERV;
    int          *cnt = malloc(sizeof(int) * (size_t)(in + out + 1));
    MPI_Aint     *disp = malloc(sizeof(MPI_Aint) * (size_t)(in + out + 1));
    MPI_Datatype *rty = a->rtypes == NULL
                            ? NULL
                            : malloc(sizeof(MPI_Datatype) * (size_t)(in + 1));
    shim_blocks_t sb, rb;
    int           rc, i;

    if (cnt == NULL || disp == NULL || (a->rtypes != NULL && rty == NULL)) {
        rc = shim_place_failed(c, k, DPS_ERR_NOMEM, comm, req);
        goto out;
    }
    for (i = 0; rty != NULL && i < in; i++) {
        rty[i] = a->rtypes[i];
    }
    side(&sb, cnt, disp, out, dsts, a->sbuf, a->scount, a->scounts,
         all ? NULL : a->sdispls, a->sad, a->stype, a->stypes, all);
    side(&rb, cnt + out, disp + out, in, srcs, a->rbuf, a->rcount, a->rcounts,
         a->rdispls, a->rad, a->rtype, rty, 0);
    /* Cartesian: each dimension's receives from the positive side first,
     * every per-block entry following its block. */
    for (i = 0; cart && i + 1 < in; i += 2) {
        int      *c2 = cnt + out, tc = c2[i], tp = srcs[i];
        MPI_Aint *d2 = disp + out, td = d2[i];

        c2[i] = c2[i + 1];
        d2[i] = d2[i + 1];
        srcs[i] = srcs[i + 1];
        c2[i + 1] = tc;
        d2[i + 1] = td;
        srcs[i + 1] = tp;
        if (rty != NULL) {
            MPI_Datatype tt = rty[i];

            rty[i] = rty[i + 1];
            rty[i + 1] = tt;
        }
    }
    rc = shim_pairs_post(c, k, &sb, dsts, &rb, srcs, comm, req);
out:
    free(cnt);
    free(disp);
    free(rty);
    return rc;
}

/* Whether the ranks offload (shim_offloads_fn): a topology, any size,
 * and not in place (which MPI does not define here; Open MPI refuses
 * it, and so a refused call does not decide by it). */
static int nbr_offloads(const shim_coll_args_t *a, const shim_check_t *chk,
                        int *why)
{
    int topo = MPI_UNDEFINED;

    return shim_any_size(why) && (chk != NULL || a->sbuf != MPI_IN_PLACE) &&
           PMPI_Topo_test(a->comm, &topo) == MPI_SUCCESS &&
           (topo == MPI_CART || topo == MPI_GRAPH || topo == MPI_DIST_GRAPH);
}

shim_verdict_t shim_decide_neighbor(const shim_coll_args_t *a,
                                    const shim_ctx_t       *x)
{
    return shim_coll_decide(a, nbr_offloads, x, 1);
}

int shim_coll_neighbor(const shim_coll_args_t *a, const shim_ctx_t *x)
{
    int            in = 0, out = 0, cart = 0, go, rc;
    int           *srcs = NULL, *dsts = NULL;
    MPI_Comm       comm = a->comm, use = comm;
    MPI_Request   *req = a->request;
    shim_comm_t   *c;
    shim_call_t    k;
    shim_verdict_t v;

    if (shim_in_call || !shim.initialized) {
        return shim_coll_stock(a, comm, req);
    }
    v = shim_coll_decide(a, nbr_offloads, x, 0);
    if (v.go != SHIM_OFFLOAD || v.chk.cls != MPI_SUCCESS) {
        return shim_coll_not_offloaded(a, &v, x);
    }
    if (shim_neighbors(comm, &in, &srcs, &out, &dsts, &cart) != 0) {
        return shim_fallback(x, v.why, a->coll, shim_coll_stock(a, comm, req));
    }
    go = shim_coll_begin(x, a->coll, comm, &c, &k, &use);
    if (go == SHIM_GO) {
        rc = offload(a, c, &k, in, srcs, out, dsts, cart, comm, req);
    } else if (go == SHIM_STOCK) {
        rc = shim_coll_stock_as(a, use, req);
    } else {
        rc = MPI_ERR_NO_MEM;
    }
    free(srcs);
    free(dsts);
    return rc;
}
