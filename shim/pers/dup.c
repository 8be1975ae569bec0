/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Duplications under way (PMPI_Comm_idup of a persistent collective's
 * communicator, pers/pers.h), which must end before MPI frees the
 * communicator: shim_pers_comm_free waits for them.
 */
#include "shim/core/shim.h"
#include "shim/pers/pers.h"
#include "shim/pers/start.h"

#include <stdlib.h>

typedef struct pend {
    struct pend *next;
    MPI_Comm     comm;
    MPI_Request *req;
} pend_t;
static pend_t         *pends;
static pthread_mutex_t pend_lock = PTHREAD_MUTEX_INITIALIZER;

static void pend_add(MPI_Comm comm, MPI_Request *req)
{
    pend_t *p = malloc(sizeof(*p));

    if (p == NULL) {
        return; /* then only a communicator freed early can suffer */
    }
    p->comm = comm;
    p->req = req;
    pthread_mutex_lock(&pend_lock);
    p->next = pends;
    pends = p;
    pthread_mutex_unlock(&pend_lock);
}

int shim_pers_dup(MPI_Comm comm, MPI_Comm *dup, MPI_Request *req)
{
    int rc = PMPI_Comm_idup(comm, dup, req);

    if (rc == MPI_SUCCESS) {
        pend_add(comm, req);
    }
    return rc;
}

void shim_pers_dup_wait(MPI_Request *req)
{
    pend_t **pp, *p;

    if (*req != MPI_REQUEST_NULL && req != shim_busy_req) {
        MPI_Request *was = shim_busy_req;

        shim_busy_req = req;
        PMPI_Wait(req, MPI_STATUS_IGNORE);
        shim_busy_req = was;
    }
    pthread_mutex_lock(&pend_lock);
    for (pp = &pends; (p = *pp) != NULL; pp = &p->next) {
        if (p->req == req) {
            *pp = p->next;
            free(p);
            break;
        }
    }
    pthread_mutex_unlock(&pend_lock);
}

void shim_pers_comm_free(MPI_Comm comm)
{
    pend_t *p;

    for (;;) {
        MPI_Request *req = NULL;

        pthread_mutex_lock(&pend_lock);
        for (p = pends; p != NULL && req == NULL; p = p->next) {
            if (p->comm == comm) {
                req = p->req;
            }
        }
        pthread_mutex_unlock(&pend_lock);
        if (req == NULL) {
            return;
        }
        shim_pers_dup_wait(req);
    }
}
