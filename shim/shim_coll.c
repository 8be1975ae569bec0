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

/* Contiguous layout: count elements back to back. Sets the byte size and
 * the offset of the first byte from the buffer address. */
static int contiguous(MPI_Datatype dt, int count, size_t *bytes,
                      MPI_Aint *offset)
{
    MPI_Aint lb, extent, tlb, textent;
    int size;

    if (dt == MPI_DATATYPE_NULL || count < 0 ||
        PMPI_Type_size(dt, &size) != MPI_SUCCESS ||
        PMPI_Type_get_extent(dt, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(dt, &tlb, &textent) != MPI_SUCCESS) {
        return 0;
    }
    if ((MPI_Aint)size != textent || (count > 1 && extent != textent)) {
        return 0;
    }
    *bytes = (size_t)size * (size_t)count;
    *offset = tlb;
    return 1;
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

SHIM_API int MPI_Ialltoall(const void *sendbuf, int sendcount,
                           MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype,
                           MPI_Comm comm, MPI_Request *request)
{
    size_t sbytes = 0, rbytes = 0;
    MPI_Aint soff = 0, roff = 0;
    int in_place = (sendbuf == MPI_IN_PLACE), rc, size;
    MPI_Comm use;
    shim_post_t p;
    shim_comm_t *c;
    void *tmp = NULL;

    if (shim_in_call || !shim.initialized) {
        return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf,
                              recvcount, recvtype, comm, request);
    }
    if (!shim.active || !shim.cfg.ialltoall || comm == MPI_COMM_NULL ||
        is_intercomm(comm) ||
        !contiguous(recvtype, recvcount, &rbytes, &roff) ||
        (!in_place && !contiguous(sendtype, sendcount, &sbytes, &soff)) ||
        (!in_place && sbytes != rbytes) || rbytes == 0 ||
        rbytes < shim.min_bytes) {
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
    p.block_bytes = rbytes;
    p.recv = (char *)recvbuf + roff;
    p.recv_len = rbytes * (size_t)size;
    if (in_place) {
        /* Blocks of our buffer are read and written by different agents
         * in any order: send from a private copy. */
        tmp = malloc(p.recv_len);
        if (tmp == NULL) {
            return MPI_ERR_NO_MEM;
        }
        memcpy(tmp, p.recv, p.recv_len);
        p.send = tmp;
    } else {
        p.send = (const char *)sendbuf + soff;
    }
    p.send_len = p.recv_len;
    shim_in_call++;
    rc = shim_op_start(c, &p, tmp, request);
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
    size_t bytes = 0;
    MPI_Aint off = 0;
    shim_post_t p;
    shim_comm_t *c;
    MPI_Comm use;
    int rc;

    if (shim_in_call || !shim.initialized) {
        return PMPI_Ibcast(buffer, count_, datatype, root, comm, request);
    }
    if (!shim.active || !shim.cfg.ibcast || comm == MPI_COMM_NULL ||
        is_intercomm(comm) ||
        !contiguous(datatype, count_, &bytes, &off) || bytes == 0 ||
        bytes < shim.min_bytes) {
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
    p.block_bytes = bytes;
    p.send = (char *)buffer + off;
    p.send_len = bytes;
    shim_in_call++;
    rc = shim_op_start(c, &p, NULL, request);
    shim_in_call--;
    if (rc == MPI_SUCCESS && shim.fo_state == SHIM_FO_NONE) {
        count(SHIM_COLL_IBCAST, SHIM_STAT_OFFLOADED, 1);
        count(SHIM_COLL_IBCAST, SHIM_STAT_BYTES, bytes);
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
