/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the shim knows of a communicator: its job-wide id, members and
 * their agents, the schedules compiled for it, and the twin that stock
 * MPI redoes its collectives on if an agent fails (made by the calls
 * that create communicators, wrapped here).
 */
#include "shim/core/shim.h"
#include "shim/core/sched.h"
#include "common/dps_log.h"
#include "common/dps_proto.h"
#include "common/dps_status.h"

#include <stdlib.h>
#include <string.h>

/* Tell the agent a communicator it knows is freed (lock not held). */
static void tell_freed(uint64_t comm_id)
{
    size_t len;
    void  *msg;

    if (!shim.active) {
        return;
    }
    msg = dps_msg_encode_comm_free(comm_id, (uint32_t)shim.topo.world_rank,
                                   &len);
    pthread_mutex_lock(&shim.lock);
    if (msg != NULL && !shim.chan.agent_dead) {
        shim_send_agent(msg, len);
    } else {
        free(msg);
    }
    pthread_mutex_unlock(&shim.lock);
}

void shim_comm_ref(shim_comm_t *c)
{
    pthread_mutex_lock(&shim.lock);
    c->refs++;
    pthread_mutex_unlock(&shim.lock);
}

void shim_comm_unref(shim_comm_t *c)
{
    int last;

    pthread_mutex_lock(&shim.lock);
    last = (--c->refs == 0);
    if (last) {
        if (shim_hooks.dropped != NULL) {
            shim_hooks.dropped(c);
        }
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
        tell_freed(c->id);
    }
    if (c->shadow != MPI_COMM_NULL) {
        PMPI_Comm_free(&c->shadow);
    }
    pthread_mutex_lock(&shim.lock);
    shim_sched_comm_free(c);
    pthread_mutex_unlock(&shim.lock);
    if (c->parent != NULL) {
        shim_comm_unref(c->parent);
    }
    free(c->members);
    free(c->agent);
    free(c->fo.fin);
    free(c);
}

MPI_Comm shim_comm_twin(const shim_comm_t *c)
{
    return c->parent != NULL ? c->parent->shadow : c->shadow;
}

/* Into shim.comms (lock not held). */
static void comm_link(shim_comm_t *c)
{
    pthread_mutex_lock(&shim.lock);
    c->next_all = shim.comms;
    if (shim.comms != NULL) {
        shim.comms->prev_all = c;
    }
    shim.comms = c;
    pthread_mutex_unlock(&shim.lock);
}

/* Rank 0's proposal of a job-wide id, spread by a nonblocking broadcast
 * on comm; posts wait for it in order (shim_comm_progress). */
static void comm_agree(shim_comm_t *c, MPI_Comm comm)
{
    if (c->rank == 0) {
        c->id_buf =
            ((uint64_t)(shim.topo.world_rank + 1) << 32) | ++shim.next_comm;
    }
    PMPI_Ibcast(&c->id_buf, 1, MPI_UINT64_T, 0, comm, &c->id_req);
    pthread_mutex_lock(&shim.agree_lock);
    c->next_agreeing = shim.agreeing;
    shim.agreeing = c;
    pthread_mutex_unlock(&shim.agree_lock);
}

/*
 * Every rank makes a communicator's persistent collectives in the same
 * order (MPI requires it), and MPI pairs their starts by that order,
 * whatever order the ranks start them in. So each one gets an instance
 * stream of its own at its *_init: the reduction agreeing on the stream's
 * id is issued there, in init order, on the parent's communicator, and
 * its starts are numbered on the stream alone. After an agent failure
 * stock MPI redoes them from their schedules, under a tag of the stream's
 * own (failover/take.c), never with a stock collective call (matched in
 * call order).
 */
shim_comm_t *shim_comm_stream_new(shim_comm_t *parent, int refused)
{
    shim_comm_t *c = calloc(1, sizeof(*c));
    size_t       n = sizeof(uint32_t) * (size_t)parent->size;

    if (c == NULL || (c->members = malloc(n)) == NULL ||
        (c->agent = malloc(n)) == NULL) {
        if (c != NULL) {
            free(c->members);
        }
        free(c);
        return NULL;
    }
    memcpy(c->members, parent->members, n);
    memcpy(c->agent, parent->agent, n);
    c->rank = parent->rank;
    c->size = parent->size;
    c->one_node = parent->one_node;
    c->comm = parent->comm;
    c->shadow = MPI_COMM_NULL;
    c->refs = 2; /* the persistent request's and the agreement's */
    c->agree_ref = 1;
    pthread_mutex_lock(&shim.lock);
    c->parent = parent;
    parent->refs++;
    c->stream = ++parent->nstreams;
    pthread_mutex_unlock(&shim.lock);
    /* The id is rank 0's proposal, the flag anyone's refusal: the
     * largest of each. */
    if (c->rank == 0) {
        c->agree[0] =
            ((uint64_t)(shim.topo.world_rank + 1) << 32) | ++shim.next_comm;
    }
    c->agree[1] = refused != 0;
    PMPI_Iallreduce(MPI_IN_PLACE, c->agree, 2, MPI_UINT64_T, MPI_MAX,
                    parent->comm, &c->id_req);
    pthread_mutex_lock(&shim.agree_lock);
    c->next_agreeing = shim.agreeing;
    shim.agreeing = c;
    pthread_mutex_unlock(&shim.agree_lock);
    comm_link(c);
    return c;
}

/* Attribute destructor: MPI_Comm_free (or MPI_Finalize for SELF). Ops
 * still running keep the state (MPI lets a communicator be freed with
 * operations pending), and so does an id still being agreed:
 * shim_comm_progress drops MPI's reference then. */
int shim_comm_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    shim_comm_t *c = attr;

    (void)keyval;
    (void)extra;
    /* The shim's own nonblocking calls on comm end before MPI frees it
     * (Open MPI's would run on in freed memory). Every member is in
     * MPI_Comm_free, so each of them ends. */
    shim_in_call++;
    if (!c->id_known && &c->id_req != shim_busy_req) {
        PMPI_Wait(&c->id_req, MPI_STATUS_IGNORE);
    }
    pthread_mutex_lock(&shim.lock);
    for (shim_comm_t *s = shim.comms; s != NULL; s = s->next_all) {
        if (s->parent == c && !s->id_known && &s->id_req != shim_busy_req) {
            MPI_Request r = s->id_req;

            pthread_mutex_unlock(&shim.lock);
            PMPI_Wait(&r, MPI_STATUS_IGNORE);
            pthread_mutex_lock(&shim.lock);
            s->id_req = r;
        }
    }
    pthread_mutex_unlock(&shim.lock);
    if (shim_hooks.freeing != NULL) {
        shim_hooks.freeing(comm);
    }
    shim_in_call--;
    c->freed = 1;
    c->comm = MPI_COMM_NULL;
    pthread_mutex_lock(&shim.lock);
    for (shim_comm_t *s = shim.comms; s != NULL; s = s->next_all) {
        if (s->parent == c) {
            s->comm = MPI_COMM_NULL; /* its persistent requests' too */
        }
    }
    pthread_mutex_unlock(&shim.lock);
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
shim_comm_t *shim_comm_get(MPI_Comm comm)
{
    int   flag = 0;
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
    MPI_Group    group, world;
    shim_comm_t *c;
    int         *in, *out, i, same = MPI_UNEQUAL;

    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    PMPI_Comm_rank(comm, &c->rank);
    PMPI_Comm_size(comm, &c->size);
    c->refs = 1;
    c->comm = comm;
    c->shadow = shadow;
    if (shadow != MPI_COMM_NULL) {
        /* Stock MPI's errors on the twin are the application's: they go
         * to its communicator's handler (shim_coll_stock_as), not to the
         * one the twin inherited when it was made. */
        PMPI_Comm_set_errhandler(shadow, MPI_ERRORS_RETURN);
    }
    c->members = malloc(sizeof(uint32_t) * (size_t)c->size);
    c->agent = malloc(sizeof(uint32_t) * (size_t)c->size);
    in = malloc(sizeof(int) * (size_t)c->size);
    out = malloc(sizeof(int) * (size_t)c->size);
    if (c->members == NULL || c->agent == NULL || in == NULL || out == NULL) {
        if (shadow != MPI_COMM_NULL) {
            PMPI_Comm_free(&shadow);
        }
        free(c->members);
        free(c->agent);
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
        c->agent[i] =
            shim.topo.rank_agent != NULL ? shim.topo.rank_agent[out[i]] : 0;
    }
    PMPI_Group_free(&group);
    PMPI_Group_free(&world);
    free(in);
    free(out);
    PMPI_Comm_compare(comm, MPI_COMM_WORLD, &same);
    if (same == MPI_IDENT) {
        c->id = SHIM_WORLD_ID;
        c->id_known = 1;
    } else if (shadow != MPI_COMM_NULL) {
        /* Every member is here (the call that made comm): agree now. */
        if (c->rank == 0) {
            c->id_buf = ((uint64_t)(shim.topo.world_rank + 1) << 32) |
                        ++shim.next_comm;
        }
        PMPI_Bcast(&c->id_buf, 1, MPI_UINT64_T, 0, comm);
        c->id = c->id_buf;
        c->id_known = 1;
    } else {
        comm_agree(c, comm);
    }
    PMPI_Comm_set_attr(comm, shim.keyval, c);
    comm_link(c);
    return c;
}

/*
 * Communicator creation: every member is inside the call, so a twin made
 * here with a blocking PMPI_Comm_dup costs no new wait, and lets stock MPI
 * redo this communicator's pending collectives if an agent fails
 * (failover/failover.c). Communicators made otherwise (MPI_Comm_idup, or an
 * MPI-4 call such as MPI_Comm_create_from_group) get no twin: their
 * pending collectives fail then instead.
 */
static void twin(MPI_Comm *newcomm)
{
    MPI_Comm sh = MPI_COMM_NULL;
    int      inter = 0;

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

#define SHIM_TWIN(call)                                                \
    do {                                                               \
        int rc_ = (call);                                              \
                                                                       \
        if (rc_ == MPI_SUCCESS && !shim_in_call && shim.initialized) { \
            twin(newcomm);                                             \
        }                                                              \
        return rc_;                                                    \
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

SHIM_API int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
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
    SHIM_TWIN(PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm));
}

SHIM_API int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[],
                          MPI_Comm *newcomm)
{
    SHIM_TWIN(PMPI_Cart_sub(comm, remain_dims, newcomm));
}

SHIM_API int MPI_Intercomm_merge(MPI_Comm intercomm, int high,
                                 MPI_Comm *newcomm)
{
    SHIM_TWIN(PMPI_Intercomm_merge(intercomm, high, newcomm));
}

SHIM_API int MPI_Graph_create(MPI_Comm comm, int nnodes, const int index[],
                              const int edges[], int reorder,
                              MPI_Comm *newcomm)
{
    SHIM_TWIN(PMPI_Graph_create(comm, nnodes, index, edges, reorder, newcomm));
}

SHIM_API int MPI_Dist_graph_create(MPI_Comm comm, int n, const int sources[],
                                   const int degrees[],
                                   const int destinations[],
                                   const int weights[], MPI_Info info,
                                   int reorder, MPI_Comm *newcomm)
{
    SHIM_TWIN(PMPI_Dist_graph_create(comm, n, sources, degrees, destinations,
                                     weights, info, reorder, newcomm));
}

SHIM_API int MPI_Dist_graph_create_adjacent(
    MPI_Comm comm, int indegree, const int sources[],
    const int sourceweights[], int outdegree, const int destinations[],
    const int destweights[], MPI_Info info, int reorder, MPI_Comm *newcomm)
{
    SHIM_TWIN(PMPI_Dist_graph_create_adjacent(
        comm, indegree, sources, sourceweights, outdegree, destinations,
        destweights, info, reorder, newcomm));
}
