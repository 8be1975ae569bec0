/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Ialltoall and MPI_Ibcast: decide offload or fallback, and describe
 * the collective to the agent. Every test that decides between the two
 * depends only on values that MPI requires to match on all ranks (message
 * size, in-place use, communicator kind) and on the environment, so all
 * ranks take the same path.
 */
#include "shim.h"
#include "../common/dps_log.h"
#include "../common/dps_proto.h"
#include "../common/dps_status.h"

#include <stdlib.h>
#include <string.h>

void shim_comm_unref(shim_comm_t *c)
{
    int last;

    pthread_mutex_lock(&shim.lock);
    last = (--c->refs == 0);
    if (last) {
        shim_fo_record_freed(c);
        if (c->prev_all != NULL) {
            c->prev_all->next_all = c->next_all;
        } else {
            shim.comms = c->next_all;
        }
        if (c->next_all != NULL) {
            c->next_all->prev_all = c->prev_all;
        }
    }
    pthread_mutex_unlock(&shim.lock);
    if (!last) {
        return;
    }
    if (c->agent_knows) {
        shim_comm_freed(c->id);
    }
    if (c->shadow != MPI_COMM_NULL) {
        PMPI_Comm_free(&c->shadow);
    }
    free(c->members);
    free(c->fin);
    free(c);
}

/* Attribute destructor: MPI_Comm_free (or MPI_Finalize for SELF). Ops
 * still running keep the state (MPI lets a communicator be freed with
 * operations pending), and so does an id still being agreed:
 * shim_comm_progress drops MPI's reference then. */
int shim_comm_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    shim_comm_t *c = attr;

    (void)comm;
    (void)keyval;
    (void)extra;
    c->freed = 1;
    c->comm = MPI_COMM_NULL;
    if (c->id_known) {
        shim_comm_unref(c);
    }
    return MPI_SUCCESS;
}

/*
 * Per-communicator state, created at the first offload on it. Purely
 * local: the id that all members must agree on is MPI_COMM_WORLD's fixed
 * one, or rank 0's proposal spread by a nonblocking PMPI_Ibcast. A
 * blocking collective here would make MPI_Ialltoall non-local and can
 * deadlock (a rank blocked in it while its peer waits in MPI_Recv). Posts
 * on the communicator wait in order until the id is known.
 */
static shim_comm_t *comm_state(MPI_Comm comm)
{
    int flag = 0;
    void *val;

    PMPI_Comm_get_attr(comm, shim.keyval, &val, &flag);
    if (flag) {
        return val;
    }
    /* Not made by a call we saw: no twin, see shim_comm_state_new. */
    return shim_comm_state_new(comm, MPI_COMM_NULL);
}

shim_comm_t *shim_comm_state_new(MPI_Comm comm, MPI_Comm shadow)
{
    MPI_Group group, world;
    shim_comm_t *c;
    int *in, *out, i, same = MPI_UNEQUAL;

    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    PMPI_Comm_rank(comm, &c->rank);
    PMPI_Comm_size(comm, &c->size);
    c->refs = 1;
    c->comm = comm;
    c->shadow = shadow;
    c->members = malloc(sizeof(uint32_t) * (size_t)c->size);
    in = malloc(sizeof(int) * (size_t)c->size);
    out = malloc(sizeof(int) * (size_t)c->size);
    if (c->members == NULL || in == NULL || out == NULL) {
        if (shadow != MPI_COMM_NULL) {
            PMPI_Comm_free(&shadow);
        }
        free(c->members);
        free(c);
        free(in);
        free(out);
        return NULL;
    }
    PMPI_Comm_group(comm, &group);
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    for (i = 0; i < c->size; i++) {
        in[i] = i;
    }
    PMPI_Group_translate_ranks(group, c->size, in, world, out);
    for (i = 0; i < c->size; i++) {
        c->members[i] = (uint32_t)out[i];
    }
    PMPI_Group_free(&group);
    PMPI_Group_free(&world);
    free(in);
    free(out);
    PMPI_Comm_compare(comm, MPI_COMM_WORLD, &same);
    if (same != MPI_IDENT && c->rank == 0) {
        c->id_buf = ((uint64_t)(shim.world_rank + 1) << 32) |
                    ++shim.next_comm;
    }
    if (same == MPI_IDENT) {
        c->id = SHIM_WORLD_ID;
        c->id_known = 1;
    } else if (shadow != MPI_COMM_NULL) {
        /* Every member is here (the call that made comm): agree now. */
        PMPI_Bcast(&c->id_buf, 1, MPI_UINT64_T, 0, comm);
        c->id = c->id_buf;
        c->id_known = 1;
    } else {
        PMPI_Ibcast(&c->id_buf, 1, MPI_UINT64_T, 0, comm, &c->id_req);
        pthread_mutex_lock(&shim.agree_lock);
        c->next_agreeing = shim.agreeing;
        shim.agreeing = c;
        pthread_mutex_unlock(&shim.agree_lock);
    }
    PMPI_Comm_set_attr(comm, shim.keyval, c);
    pthread_mutex_lock(&shim.lock);
    c->next_all = shim.comms;
    if (shim.comms != NULL) {
        shim.comms->prev_all = c;
    }
    shim.comms = c;
    pthread_mutex_unlock(&shim.lock);
    return c;
}

/* How count elements of a datatype lie in memory. */
typedef struct layout {
    size_t   bytes;        /* data bytes: type size x count */
    int      contig;       /* back to back, no gaps */
    MPI_Aint offset;       /* of the first byte from the buffer (true lb) */
    MPI_Aint extent;       /* of one element */
} layout_t;

/* The layout of (dt, count): 1, or 0 when the arguments are such that the
 * MPI library must judge them (a null or negative one): the call then
 * goes to PMPI on this rank, and MPI reports the error class it chooses. */
static int layout(MPI_Datatype dt, int count, layout_t *l)
{
    MPI_Aint lb, tlb, textent;
    int size;

    if (dt == MPI_DATATYPE_NULL || count < 0 ||
        PMPI_Type_size(dt, &size) != MPI_SUCCESS ||
        PMPI_Type_get_extent(dt, &lb, &l->extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(dt, &tlb, &textent) != MPI_SUCCESS) {
        return 0;
    }
    l->bytes = (size_t)size * (size_t)count;
    l->offset = tlb;
    l->contig = (MPI_Aint)size == textent &&
                (count <= 1 || l->extent == textent);
    return 1;
}

/*
 * Pack nblocks blocks of count elements of dt, the i-th at buf + i *
 * stride, into a new contiguous buffer of nblocks x block_bytes. NULL when
 * out of memory or MPI refuses (logged).
 */
static void *pack(const void *buf, int count, MPI_Datatype dt, int nblocks,
                  MPI_Aint stride, size_t block_bytes)
{
    char *out = malloc(block_bytes * (size_t)nblocks + 1);
    int i;

    for (i = 0; out != NULL && i < nblocks; i++) {
        int pos = 0;

        if (PMPI_Pack((const char *)buf + (MPI_Aint)i * stride, count, dt,
                      out + (size_t)i * block_bytes, (int)block_bytes, &pos,
                      MPI_COMM_SELF) != MPI_SUCCESS ||
            (size_t)pos != block_bytes) {
            dps_error("cannot pack a non-contiguous datatype (%d of %zu "
                      "bytes)", pos, block_bytes);
            free(out);
            return NULL;
        }
    }
    return out;
}

/* Set u up to unpack, at completion, into nblocks blocks of count elements
 * of dt at buf, buf + stride, ...; the staging buffer is allocated here.
 * 0 when out of memory. */
static int unpack_prepare(shim_unpack_t *u, void *buf, int count,
                          MPI_Datatype dt, int nblocks, MPI_Aint stride,
                          size_t block_bytes)
{
    void *from = malloc(block_bytes * (size_t)nblocks + 1);

    if (from == NULL || PMPI_Type_dup(dt, &u->type) != MPI_SUCCESS) {
        free(from);
        return 0;
    }
    u->to = buf;
    u->from = from;
    u->block_bytes = block_bytes;
    u->count = count;
    u->nblocks = nblocks;
    u->stride = stride;
    return 1;
}

static void unpack_cancel(shim_unpack_t *u)
{
    if (u->to != NULL) {
        free((void *)u->from);
        PMPI_Type_free(&u->type);
        u->to = NULL;
    }
}

static int is_intercomm(MPI_Comm comm)
{
    int inter = 0;

    PMPI_Comm_test_inter(comm, &inter);
    return inter;
}

static void count(int coll, int stat, uint64_t n)
{
    pthread_mutex_lock(&shim.lock);
    shim.stats[coll][stat] += n;
    pthread_mutex_unlock(&shim.lock);
}

/* Do [a, a + alen) and [b, b + blen) overlap? */
static int overlap(const void *a, size_t alen, const void *b, size_t blen)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

    return alen > 0 && blen > 0 && x < y + blen && y < x + alen;
}

/*
 * A rank whose own arguments are erroneous in a way only it can see
 * (aliased buffers, a send size unlike its receive size) still posts, with
 * the error: the agent fails the instance on every rank, so that nobody
 * waits for this one. The caller gets the error class at once, through
 * the communicator's error handler (fatal by default), as from MPI's own
 * checks; the internal request goes.
 */
static int erroneous(shim_comm_t *c, shim_post_t *p, int status,
                     int mpi_class, MPI_Comm comm, MPI_Request *request,
                     const char *what)
{
    MPI_Request r = MPI_REQUEST_NULL;

    dps_error("%s: %s", what, dps_status_str(status));
    p->error = status;
    p->send_len = p->recv_len = 0;
    shim_in_call++;
    if (shim_op_start(c, p, NULL, NULL, &r) == MPI_SUCCESS) {
        PMPI_Request_free(&r);
    }
    shim_in_call--;
    *request = MPI_REQUEST_NULL;
    PMPI_Comm_call_errhandler(comm, mpi_class);
    return mpi_class;
}

SHIM_API int MPI_Ialltoall(const void *sendbuf, int sendcount,
                           MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype,
                           MPI_Comm comm, MPI_Request *request)
{
    layout_t sl = {0}, rl = {0};
    int in_place = (sendbuf == MPI_IN_PLACE), rc, size;
    shim_unpack_t up = {0};
    MPI_Comm use;
    shim_post_t p;
    shim_comm_t *c;
    void *tmp = NULL;

    if (shim_in_call || !shim.initialized) {
        return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf,
                              recvcount, recvtype, comm, request);
    }
    /* Whether to offload depends on what MPI requires to be alike on
     * every rank (the message size by the type signature, the
     * communicator), never on a rank's own layout. */
    if (!shim.active || !shim.cfg.ialltoall || comm == MPI_COMM_NULL ||
        is_intercomm(comm) || !layout(recvtype, recvcount, &rl) ||
        (!in_place && !layout(sendtype, sendcount, &sl)) ||
        rl.bytes == 0 || rl.bytes < shim.min_bytes) {
        count(SHIM_COLL_IALLTOALL, SHIM_STAT_FALLBACK, 1);
        return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf,
                              recvcount, recvtype, comm, request);
    }
    shim_in_call++;
    shim_fo_progress();   /* a failure notice changes the path */
    c = comm_state(comm);
    shim_in_call--;
    if (c == NULL) {
        /* Other ranks may have offloaded: falling back could hang. */
        return MPI_ERR_NO_MEM;
    }
    size = c->size;
    memset(&p, 0, sizeof(p));
    p.coll = DPS_COLL_ALLTOALL;
    p.seq = c->seq++;
    if (shim.fo_state != SHIM_FO_NONE) {
        shim_in_call++;
        rc = shim_fo_direct(c, p.seq, SHIM_COLL_IALLTOALL, &use);
        shim_in_call--;
        if (rc == 1) {
            return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf,
                                  recvcount, recvtype, use, request);
        }
    }
    p.block_bytes = rl.bytes;
    p.recv_len = rl.bytes * (size_t)size;
    p.send_len = p.recv_len;
    if (!in_place && sl.bytes != rl.bytes) {
        return erroneous(c, &p, DPS_ERR_ARG, MPI_ERR_TRUNCATE, comm,
                         request, "MPI_Ialltoall: the send block differs "
                         "from the receive block in size");
    }
    if (!in_place &&
        overlap((const char *)sendbuf + sl.offset,
                (size_t)((MPI_Aint)sendcount * sl.extent) * (size_t)size,
                (char *)recvbuf + rl.offset,
                (size_t)((MPI_Aint)recvcount * rl.extent) *
                (size_t)size)) {
        return erroneous(c, &p, DPS_ERR_BUFFER, MPI_ERR_BUFFER, comm,
                         request, "MPI_Ialltoall: the send buffer overlaps "
                         "the receive buffer (MPI_IN_PLACE is the way)");
    }
    /* Receive: straight into the buffer, or staged and unpacked. */
    if (rl.contig) {
        p.recv = (char *)recvbuf + rl.offset;
    } else if (unpack_prepare(&up, recvbuf, recvcount, recvtype, size,
                              (MPI_Aint)recvcount * rl.extent, rl.bytes)) {
        p.recv = (void *)up.from;
    } else {
        return MPI_ERR_NO_MEM;
    }
    /* Send: from the buffer, or from a contiguous copy (in place: blocks
     * of our buffer are read and written by different engines and agents
     * in any order, so always from a copy). */
    if (in_place && rl.contig) {
        tmp = malloc(p.recv_len);
        if (tmp != NULL) {
            memcpy(tmp, (char *)recvbuf + rl.offset, p.recv_len);
        }
    } else if (in_place) {
        tmp = pack(recvbuf, recvcount, recvtype, size,
                   (MPI_Aint)recvcount * rl.extent, rl.bytes);
    } else if (!sl.contig) {
        tmp = pack(sendbuf, sendcount, sendtype, size,
                   (MPI_Aint)sendcount * sl.extent, sl.bytes);
    }
    if ((in_place || !sl.contig) && tmp == NULL) {
        unpack_cancel(&up);
        return MPI_ERR_NO_MEM;
    }
    p.send = tmp != NULL ? tmp : (const char *)sendbuf + sl.offset;
    shim_in_call++;
    rc = shim_op_start(c, &p, tmp, &up, request);
    shim_in_call--;
    if (rc == MPI_SUCCESS && shim.fo_state == SHIM_FO_NONE) {
        count(SHIM_COLL_IALLTOALL, SHIM_STAT_OFFLOADED, 1);
        count(SHIM_COLL_IALLTOALL, SHIM_STAT_BYTES, p.send_len);
    }
    return rc;
}

SHIM_API int MPI_Ibcast(void *buffer, int count_, MPI_Datatype datatype,
                        int root, MPI_Comm comm, MPI_Request *request)
{
    shim_unpack_t up = {0};
    layout_t l = {0};
    shim_post_t p;
    shim_comm_t *c;
    MPI_Comm use;
    void *tmp = NULL;
    int rc;

    if (shim_in_call || !shim.initialized) {
        return PMPI_Ibcast(buffer, count_, datatype, root, comm, request);
    }
    if (!shim.active || !shim.cfg.ibcast || comm == MPI_COMM_NULL ||
        is_intercomm(comm) || !layout(datatype, count_, &l) ||
        l.bytes == 0 || l.bytes < shim.min_bytes) {
        count(SHIM_COLL_IBCAST, SHIM_STAT_FALLBACK, 1);
        return PMPI_Ibcast(buffer, count_, datatype, root, comm, request);
    }
    shim_in_call++;
    shim_fo_progress();
    c = comm_state(comm);
    shim_in_call--;
    if (c == NULL) {
        return MPI_ERR_NO_MEM;
    }
    if (root < 0 || root >= c->size) {
        /* Erroneous everywhere alike: let MPI report it. */
        count(SHIM_COLL_IBCAST, SHIM_STAT_FALLBACK, 1);
        return PMPI_Ibcast(buffer, count_, datatype, root, comm, request);
    }
    memset(&p, 0, sizeof(p));
    p.coll = DPS_COLL_BCAST;
    p.seq = c->seq++;
    if (shim.fo_state != SHIM_FO_NONE) {
        shim_in_call++;
        rc = shim_fo_direct(c, p.seq, SHIM_COLL_IBCAST, &use);
        shim_in_call--;
        if (rc == 1) {
            return PMPI_Ibcast(buffer, count_, datatype, root, use,
                               request);
        }
    }
    p.root = root;
    p.block_bytes = l.bytes;
    p.send_len = l.bytes;
    if (l.contig) {
        p.send = (char *)buffer + l.offset;
    } else if (c->rank == root) {
        /* The root's data, packed; the others receive into a staging
         * buffer and unpack it into their own layout. */
        tmp = pack(buffer, count_, datatype, 1, 0, l.bytes);
        p.send = tmp;
    } else if (unpack_prepare(&up, buffer, count_, datatype, 1, 0,
                              l.bytes)) {
        p.send = up.from;
    }
    if (p.send == NULL) {
        return MPI_ERR_NO_MEM;
    }
    shim_in_call++;
    rc = shim_op_start(c, &p, tmp, &up, request);
    shim_in_call--;
    if (rc == MPI_SUCCESS && shim.fo_state == SHIM_FO_NONE) {
        count(SHIM_COLL_IBCAST, SHIM_STAT_OFFLOADED, 1);
        count(SHIM_COLL_IBCAST, SHIM_STAT_BYTES, l.bytes);
    }
    return rc;
}

/*
 * Communicator creation: every member is inside the call, so a twin made
 * here with a blocking PMPI_Comm_dup costs no new wait, and lets stock MPI
 * redo this communicator's pending collectives if an agent fails
 * (shim_failover.c). Communicators made otherwise (MPI_Comm_idup, graph
 * topologies, intercommunicators merged) get no twin: their pending
 * collectives fail then instead.
 */
static void twin(MPI_Comm *newcomm)
{
    MPI_Comm sh = MPI_COMM_NULL;
    int inter = 0;

    if (!shim.active || *newcomm == MPI_COMM_NULL) {
        return;
    }
    shim_in_call++;
    PMPI_Comm_test_inter(*newcomm, &inter);
    if (!inter && PMPI_Comm_dup(*newcomm, &sh) == MPI_SUCCESS &&
        shim_comm_state_new(*newcomm, sh) == NULL) {
        dps_warn("out of memory: a communicator has no twin");
    }
    shim_in_call--;
}

#define SHIM_TWIN(call)                                                    \
    do {                                                                   \
        int rc_ = (call);                                                  \
                                                                           \
        if (rc_ == MPI_SUCCESS && !shim_in_call && shim.initialized) {     \
            twin(newcomm);                                                 \
        }                                                                  \
        return rc_;                                                        \
    } while (0)

SHIM_API int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    SHIM_TWIN(PMPI_Comm_dup(comm, newcomm));
}

SHIM_API int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info,
                                    MPI_Comm *newcomm)
{
    SHIM_TWIN(PMPI_Comm_dup_with_info(comm, info, newcomm));
}

SHIM_API int MPI_Comm_split(MPI_Comm comm, int color, int key,
                            MPI_Comm *newcomm)
{
    SHIM_TWIN(PMPI_Comm_split(comm, color, key, newcomm));
}

SHIM_API int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key,
                                 MPI_Info info, MPI_Comm *newcomm)
{
    SHIM_TWIN(PMPI_Comm_split_type(comm, split_type, key, info, newcomm));
}

SHIM_API int MPI_Comm_create(MPI_Comm comm, MPI_Group group,
                             MPI_Comm *newcomm)
{
    SHIM_TWIN(PMPI_Comm_create(comm, group, newcomm));
}

SHIM_API int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag,
                                   MPI_Comm *newcomm)
{
    SHIM_TWIN(PMPI_Comm_create_group(comm, group, tag, newcomm));
}

SHIM_API int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[],
                             const int periods[], int reorder,
                             MPI_Comm *newcomm)
{
    SHIM_TWIN(PMPI_Cart_create(comm, ndims, dims, periods, reorder,
                               newcomm));
}

SHIM_API int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[],
                          MPI_Comm *newcomm)
{
    SHIM_TWIN(PMPI_Cart_sub(comm, remain_dims, newcomm));
}
