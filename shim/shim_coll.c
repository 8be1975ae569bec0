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

typedef struct shim_comm {
    uint64_t  id;
    uint32_t  seq;          /* offloaded collectives so far */
    int       rank, size;
    uint32_t *members;      /* world rank of each rank */
    int       agent_knows;  /* members sent to our agent */
} shim_comm_t;

/* Attribute destructor: MPI_Comm_free (or MPI_Finalize for SELF). */
int shim_comm_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    shim_comm_t *c = attr;

    (void)comm;
    (void)keyval;
    (void)extra;
    if (c->agent_knows) {
        shim_comm_freed(c->id);
    }
    free(c->members);
    free(c);
    return MPI_SUCCESS;
}

/* Per-communicator state, created (collectively) at first offload. */
static shim_comm_t *comm_state(MPI_Comm comm)
{
    MPI_Group group, world;
    shim_comm_t *c;
    int flag = 0, *in = NULL, *out = NULL, i, ok;
    void *val;

    PMPI_Comm_get_attr(comm, shim.keyval, &val, &flag);
    if (flag) {
        return val;
    }
    c = calloc(1, sizeof(*c));
    PMPI_Comm_rank(comm, &i);
    if (c != NULL) {
        c->rank = i;
        PMPI_Comm_size(comm, &c->size);
        c->members = malloc(sizeof(uint32_t) * (size_t)c->size);
        in = malloc(sizeof(int) * (size_t)c->size);
        out = malloc(sizeof(int) * (size_t)c->size);
    }
    ok = (c != NULL && c->members != NULL && in != NULL && out != NULL);
    /* Rank 0 names the communicator; the id is unique job-wide. */
    if (c != NULL && c->rank == 0) {
        c->id = ((uint64_t)(shim.world_rank + 1) << 32) | ++shim.next_comm;
    }
    {
        uint64_t buf[2] = {c ? c->id : 0, (uint64_t)ok};

        /* One collective that also agrees on success everywhere. */
        PMPI_Bcast(buf, 2, MPI_UINT64_T, 0, comm);
        if (c != NULL) {
            c->id = buf[0];
        }
        PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
    }
    if (!ok) {
        if (c != NULL) {
            free(c->members);
        }
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
    PMPI_Comm_set_attr(comm, shim.keyval, c);
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
        rbytes < shim.cfg.min_bytes) {
        count(SHIM_COLL_IALLTOALL, SHIM_STAT_FALLBACK, 1);
        return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf,
                              recvcount, recvtype, comm, request);
    }
    shim_in_call++;
    c = comm_state(comm);
    shim_in_call--;
    if (c == NULL) {
        count(SHIM_COLL_IALLTOALL, SHIM_STAT_FALLBACK, 1);
        return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf,
                              recvcount, recvtype, comm, request);
    }
    size = c->size;
    memset(&p, 0, sizeof(p));
    p.coll = DPS_COLL_ALLTOALL;
    p.comm_id = c->id;
    p.seq = c->seq++;
    p.comm_rank = c->rank;
    p.comm_size = size;
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
    p.members = c->agent_knows ? NULL : c->members;
    shim_in_call++;
    rc = shim_op_start(&p, tmp, request);
    shim_in_call--;
    if (rc == MPI_SUCCESS) {
        c->agent_knows = 1;
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
    int rc;

    if (shim_in_call || !shim.initialized) {
        return PMPI_Ibcast(buffer, count_, datatype, root, comm, request);
    }
    if (!shim.active || !shim.cfg.ibcast || comm == MPI_COMM_NULL ||
        is_intercomm(comm) ||
        !contiguous(datatype, count_, &bytes, &off) || bytes == 0 ||
        bytes < shim.cfg.min_bytes) {
        count(SHIM_COLL_IBCAST, SHIM_STAT_FALLBACK, 1);
        return PMPI_Ibcast(buffer, count_, datatype, root, comm, request);
    }
    shim_in_call++;
    c = comm_state(comm);
    shim_in_call--;
    if (c == NULL || root < 0 || root >= c->size) {
        count(SHIM_COLL_IBCAST, SHIM_STAT_FALLBACK, 1);
        return PMPI_Ibcast(buffer, count_, datatype, root, comm, request);
    }
    memset(&p, 0, sizeof(p));
    p.coll = DPS_COLL_BCAST;
    p.comm_id = c->id;
    p.seq = c->seq++;
    p.comm_rank = c->rank;
    p.comm_size = c->size;
    p.root = root;
    p.block_bytes = bytes;
    p.send = (char *)buffer + off;
    p.send_len = bytes;
    p.members = c->agent_knows ? NULL : c->members;
    shim_in_call++;
    rc = shim_op_start(&p, NULL, request);
    shim_in_call--;
    if (rc == MPI_SUCCESS) {
        c->agent_knows = 1;
        count(SHIM_COLL_IBCAST, SHIM_STAT_OFFLOADED, 1);
        count(SHIM_COLL_IBCAST, SHIM_STAT_BYTES, bytes);
    }
    return rc;
}
