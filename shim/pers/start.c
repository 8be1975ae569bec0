/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Persistent requests the shim runs (pers/start.h): MPI_Start,
 * MPI_Startall and MPI_Request_free on them, and the swap the completion
 * calls (wrap/wait.c) make.
 */
#include "shim/core/shim.h"
#include "shim/pers/start.h"
#include "shim/core/sched.h"
#include "shim/wrap/coll.h"
#include "common/dps_log.h"

#include <stdlib.h>
#include <string.h>

static pthread_mutex_t pers_lock = PTHREAD_MUTEX_INITIALIZER;
static shim_pers_t    *pers_all;   /* by handle */
static volatile int    pers_count; /* read without the lock: 0, none */

static shim_pers_t *find(MPI_Request req)
{
    shim_pers_t *p = NULL;

    if (pers_count == 0 || req == MPI_REQUEST_NULL) {
        return NULL;
    }
    pthread_mutex_lock(&pers_lock);
    HASH_FIND(hh, pers_all, &req, sizeof(req), p);
    pthread_mutex_unlock(&pers_lock);
    return p;
}

int shim_pers_new(int coll, MPI_Comm comm, shim_pers_start_t start,
                  void (*drop)(void *), void *args, int offload,
                  MPI_Request *req)
{
    shim_pers_t *p = calloc(1, sizeof(*p));
    int          rc = MPI_ERR_NO_MEM;

    if (p != NULL) {
        shim_in_call++;
        p->comm = shim_comm_get(comm);
        if (p->comm != NULL) {
            rc = PMPI_Recv_init(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0,
                                MPI_COMM_SELF, &p->handle);
        }
        shim_in_call--;
    }
    if (rc != MPI_SUCCESS) {
        drop(args);
        free(p);
        return rc;
    }
    shim_comm_ref(p->comm); /* the state outlives MPI's handle, if need be */
    if (offload) {
        shim_in_call++;
        p->stream = shim_comm_stream_new(p->comm, 0);
        shim_in_call--;
    }
    if (offload && p->stream == NULL) {
        shim_in_call++;
        PMPI_Request_free(&p->handle);
        shim_in_call--;
        shim_comm_unref(p->comm);
        drop(args);
        free(p);
        return MPI_ERR_NO_MEM;
    }
    p->inner = MPI_REQUEST_NULL;
    p->coll = coll;
    p->start = start;
    p->drop = drop;
    p->args = args;
    pthread_mutex_lock(&pers_lock);
    HASH_ADD(hh, pers_all, handle, sizeof(MPI_Request), p);
    pers_count++;
    pthread_mutex_unlock(&pers_lock);
    *req = p->handle;
    return MPI_SUCCESS;
}

static int start_one(shim_pers_t *p)
{
    shim_ctx_t x = shim_ctx_app();
    int        rc;

    if (p->active) {
        dps_error("MPI_Start: the persistent %s request is active (started "
                  "and not completed)",
                  dps_coll_short(p->coll));
        return MPI_ERR_REQUEST;
    }
    if (p->comm->freed) {
        /* Erroneous; stock MPI may or may not cope. Never a crash. */
        dps_error("MPI_Start: the communicator of this persistent %s "
                  "request was freed",
                  dps_coll_short(p->coll));
        return MPI_ERR_COMM;
    }
    x.as = p->coll;
    x.pin = &p->pin;
    x.stream = p->stream;
    rc = p->start(p, &p->inner, &x);
    p->active = rc == MPI_SUCCESS && p->inner != MPI_REQUEST_NULL;
    return rc;
}

SHIM_API int MPI_Start(MPI_Request *request)
{
    shim_pers_t *p = shim_in_call ? NULL : find(*request);

    return p != NULL ? start_one(p) : PMPI_Start(request);
}

SHIM_API int MPI_Startall(int count, MPI_Request array_of_requests[])
{
    MPI_Request *stock;
    int          i, n = 0, rc = MPI_SUCCESS, rc2;

    if (shim_in_call || pers_count == 0 || count <= 0) {
        return PMPI_Startall(count, array_of_requests);
    }
    stock = malloc(sizeof(MPI_Request) * (size_t)count);
    if (stock == NULL) {
        return MPI_ERR_NO_MEM;
    }
    /* Ours in array order, then MPI's together: the order among
     * collectives on one communicator is kept on each side. */
    for (i = 0; i < count; i++) {
        shim_pers_t *p = find(array_of_requests[i]);

        if (p == NULL) {
            stock[n++] = array_of_requests[i];
        } else if ((rc2 = start_one(p)) != MPI_SUCCESS && rc == MPI_SUCCESS) {
            rc = rc2;
        }
    }
    if (n > 0 && (rc2 = PMPI_Startall(n, stock)) != MPI_SUCCESS &&
        rc == MPI_SUCCESS) {
        rc = rc2;
    }
    free(stock);
    return rc;
}

/* Free p (removed from the table by the caller). */
static void destroy(shim_pers_t *p)
{
    shim_in_call++;
    if (p->active && p->inner != MPI_REQUEST_NULL) {
        /* Freed while active: the work runs on and releases itself. */
        PMPI_Request_free(&p->inner);
    }
    PMPI_Request_free(&p->handle);
    shim_in_call--;
    shim_sched_release(p->pin);
    if (p->stream != NULL) {
        shim_comm_unref(p->stream);
    }
    shim_comm_unref(p->comm);
    p->drop(p->args);
    free(p);
}

SHIM_API int MPI_Request_free(MPI_Request *request)
{
    shim_pers_t *p;

    if (shim_in_call || request == NULL || (p = find(*request)) == NULL) {
        /* A pending offloaded op keeps running; its resources are
         * released when the agent reports completion (free_fn,
         * core/op.c). */
        return PMPI_Request_free(request);
    }
    pthread_mutex_lock(&pers_lock);
    HASH_DELETE(hh, pers_all, p);
    pers_count--;
    pthread_mutex_unlock(&pers_lock);
    destroy(p);
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}

void shim_pers_swap(shim_swap_t *sw, int n, MPI_Request reqs[])
{
    int i;

    sw->n = 0;
    sw->at = NULL;
    if (pers_count == 0 || n <= 0 || reqs == NULL) {
        return;
    }
    for (i = 0; i < n; i++) {
        shim_pers_t *p = find(reqs[i]);

        if (p == NULL || !p->active) {
            continue;
        }
        if (sw->at == NULL) {
            sw->at = n <= 16 ? sw->small
                             : malloc(sizeof(shim_pers_t *) * (size_t)n);
            if (sw->at == NULL) {
                return; /* out of memory: unswapped, MPI sees handles */
            }
            memset(sw->at, 0, sizeof(shim_pers_t *) * (size_t)n);
            sw->n = n;
        }
        sw->at[i] = p;
        reqs[i] = p->inner;
    }
}

void shim_pers_unswap(shim_swap_t *sw, MPI_Request reqs[])
{
    int i;

    if (sw->at == NULL) {
        return;
    }
    for (i = 0; i < sw->n; i++) {
        shim_pers_t *p = sw->at[i];

        if (p == NULL) {
            continue;
        }
        p->inner = reqs[i];
        p->active = reqs[i] != MPI_REQUEST_NULL; /* else completed */
        reqs[i] = p->handle;
    }
    if (sw->at != sw->small) {
        free(sw->at);
    }
    sw->at = NULL;
}
