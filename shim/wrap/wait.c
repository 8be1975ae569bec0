/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion calls. None of them blocks inside PMPI on a generalized
 * request the agent has not finished (nothing would ever complete it):
 * while such a request is among the arguments, the wrapper loops over
 * agent progress and the non-blocking PMPI_Test* variant, which also keeps
 * MPI's own requests (a rendezvous send, say) moving. Requests of ours
 * that are not among the arguments need nothing from this rank: the agent
 * carries them.
 */
#include "shim/core/shim.h"
#include "shim/failover/failover.h"
#include "shim/wrap/block.h"
#include "shim/pers/start.h"
#include "shim/data/engine.h"

#include <sched.h>

static int any_pending(int n, const MPI_Request *reqs)
{
    int i;

    if (!shim_any_pending()) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (shim_req_pending(&reqs[i])) {
            return 1;
        }
    }
    return 0;
}

/* Among n requests, is any unfinished one not ours (needs PMPI)? */
static int need_pmpi(int n, const MPI_Request *reqs)
{
    int i;

    for (i = 0; i < n; i++) {
        if (reqs[i] != MPI_REQUEST_NULL && !shim_req_pending(&reqs[i])) {
            /* Not ours, or ours and done: PMPI_Test* must see it. A
             * finished one of ours ends the wait at the next test. */
            return 1;
        }
    }
    return 0;
}

/* Let completions we already received reach MPI before a PMPI_Test*;
 * while offload is on, take in failure notices too (a rank polling for a
 * message may be what a takeover waits for). */
static void poll_agent(void)
{
    if (shim_any_pending()) {
        shim_progress();
    } else if (shim_watching()) {
        shim_fo_progress();
    }
}

static int wait_one(MPI_Request *request, MPI_Status *status)
{
    int flag = 0, rc;

    if (!any_pending(1, request)) {
        return shim_watch_wait(request, status);
    }
    for (;;) {
        shim_progress();
        rc = PMPI_Test(request, &flag, status);
        if (rc != MPI_SUCCESS || flag) {
            return rc;
        }
        shim_idle(1);
    }
}

/* Has every request completed (or is inactive)? Asked without freeing
 * anything, so that PMPI_Waitall itself then completes them: MPICH
 * 4.0's PMPI_Testall reports MPI_ERR_IN_STATUS for a finished persistent
 * collective of its own, which its PMPI_Waitall does not. An error here
 * ends the wait too: PMPI_Waitall reports it. */
static int all_done(int count, MPI_Request requests[])
{
    for (int i = 0; i < count; i++) {
        int flag = 0;

        if (requests[i] != MPI_REQUEST_NULL &&
            PMPI_Request_get_status(requests[i], &flag, MPI_STATUS_IGNORE) ==
                MPI_SUCCESS &&
            !flag) {
            return 0;
        }
    }
    return 1;
}

static int wait_all(int count, MPI_Request requests[], MPI_Status statuses[])
{
    int ours = any_pending(count, requests);

    if (!ours && !shim_watching()) {
        return PMPI_Waitall(count, requests, statuses);
    }
    for (;;) {
        if (ours) {
            shim_progress();
        } else {
            shim_fo_progress();
        }
        if (all_done(count, requests)) {
            return PMPI_Waitall(count, requests, statuses);
        }
        if (ours) {
            shim_idle(!need_pmpi(count, requests));
        }
        ours = any_pending(count, requests);
    }
}

/*
 * The wait loops below finish with the test form of the call. Where no
 * request was active, the library's own wait form gives the answer
 * instead (at once: there is nothing to wait for), so that the status is
 * the one the program would have had without the shim; the two forms
 * differ there (MPICH 4.0's MPI_Testany leaves the status of inactive
 * requests unwritten, which its MPI_Waitany writes; neither writes
 * MPI_ERROR).
 */
static int none_active_any(int rc, int count, MPI_Request requests[],
                           int *index, MPI_Status *status)
{
    if (rc == MPI_SUCCESS && *index == MPI_UNDEFINED) {
        return PMPI_Waitany(count, requests, index, status);
    }
    return rc;
}

static int none_active_some(int rc, int incount, MPI_Request requests[],
                            int *outcount, int indices[],
                            MPI_Status statuses[])
{
    if (rc == MPI_SUCCESS && *outcount == MPI_UNDEFINED) {
        return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    }
    return rc;
}

static int wait_any(int count, MPI_Request requests[], int *index,
                    MPI_Status *status)
{
    int flag = 0, rc;

    if (!any_pending(count, requests)) {
        if (!shim_watching()) {
            return PMPI_Waitany(count, requests, index, status);
        }
        do {
            shim_fo_progress();
            rc = PMPI_Testany(count, requests, index, &flag, status);
        } while (rc == MPI_SUCCESS && !flag);
        return none_active_any(rc, count, requests, index, status);
    }
    for (;;) {
        shim_progress();
        rc = PMPI_Testany(count, requests, index, &flag, status);
        if (rc != MPI_SUCCESS || flag) {
            return none_active_any(rc, count, requests, index, status);
        }
        shim_idle(!need_pmpi(count, requests));
    }
}

static int wait_some(int incount, MPI_Request requests[], int *outcount,
                     int indices[], MPI_Status statuses[])
{
    int rc;

    if (!any_pending(incount, requests)) {
        if (!shim_watching()) {
            return PMPI_Waitsome(incount, requests, outcount, indices,
                                 statuses);
        }
        do {
            shim_fo_progress();
            rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
        } while (rc == MPI_SUCCESS && *outcount == 0);
        return none_active_some(rc, incount, requests, outcount, indices,
                                statuses);
    }
    for (;;) {
        shim_progress();
        rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
        if (rc != MPI_SUCCESS || *outcount != 0) {
            return none_active_some(rc, incount, requests, outcount, indices,
                                    statuses);
        }
        shim_idle(!need_pmpi(incount, requests));
    }
}

/*
 * A test that left one of ours among reqs unfinished: run the copies our
 * DMA engine has queued here (its thread, on a core the application keeps
 * busy, runs only when the rank stops), else yield the core to an agent
 * or engine sharing it. A program that spins on MPI_Test otherwise waits
 * for time slices: a 64 KiB Ialltoall at 2 ranks on this 2-core machine
 * (busy with other jobs) took 5.4 ms spinning, 0.06-0.24 ms with this,
 * 0.01 ms on stock MPI.
 */
static int assisted(int rc, int done, int n, const MPI_Request *reqs)
{
    if (rc == MPI_SUCCESS && !done && any_pending(n, reqs) &&
        shim_engine_help() == 0) {
        sched_yield();
    }
    return rc;
}

static int test_one(MPI_Request *request, int *flag, MPI_Status *status)
{
    int rc = PMPI_Test(request, flag, status);

    return assisted(rc, *flag, 1, request);
}

static int test_all(int count, MPI_Request requests[], int *flag,
                    MPI_Status statuses[])
{
    int rc = PMPI_Testall(count, requests, flag, statuses);

    return assisted(rc, *flag, count, requests);
}

static int test_any(int count, MPI_Request requests[], int *index, int *flag,
                    MPI_Status *status)
{
    int rc = PMPI_Testany(count, requests, index, flag, status);

    return assisted(rc, *flag, count, requests);
}

static int test_some(int incount, MPI_Request requests[], int *outcount,
                     int indices[], MPI_Status statuses[])
{
    int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);

    return assisted(rc, *outcount != 0, incount, requests);
}

/*
 * The public calls: a started persistent request of the shim's (pers/start.h)
 * is replaced by the request doing its work for the length of the call.
 */
#define SWAPPED(n, reqs, call)             \
    do {                                   \
        shim_swap_t sw_;                   \
        int         rc_;                   \
                                           \
        shim_pers_swap(&sw_, (n), (reqs)); \
        rc_ = (call);                      \
        shim_pers_unswap(&sw_, (reqs));    \
        return rc_;                        \
    } while (0)

SHIM_API int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    if (shim_in_call) {
        return PMPI_Wait(request, status);
    }
    SWAPPED(1, request, wait_one(request, status));
}

SHIM_API int MPI_Waitall(int count, MPI_Request requests[],
                         MPI_Status statuses[])
{
    if (shim_in_call) {
        return PMPI_Waitall(count, requests, statuses);
    }
    SWAPPED(count, requests, wait_all(count, requests, statuses));
}

SHIM_API int MPI_Waitany(int count, MPI_Request requests[], int *index,
                         MPI_Status *status)
{
    if (shim_in_call) {
        return PMPI_Waitany(count, requests, index, status);
    }
    SWAPPED(count, requests, wait_any(count, requests, index, status));
}

SHIM_API int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount,
                          int indices[], MPI_Status statuses[])
{
    if (shim_in_call) {
        return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    }
    SWAPPED(incount, requests,
            wait_some(incount, requests, outcount, indices, statuses));
}

SHIM_API int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    if (shim_in_call) {
        return PMPI_Test(request, flag, status);
    }
    poll_agent();
    SWAPPED(1, request, test_one(request, flag, status));
}

SHIM_API int MPI_Testall(int count, MPI_Request requests[], int *flag,
                         MPI_Status statuses[])
{
    if (shim_in_call) {
        return PMPI_Testall(count, requests, flag, statuses);
    }
    poll_agent();
    SWAPPED(count, requests, test_all(count, requests, flag, statuses));
}

SHIM_API int MPI_Testany(int count, MPI_Request requests[], int *index,
                         int *flag, MPI_Status *status)
{
    if (shim_in_call) {
        return PMPI_Testany(count, requests, index, flag, status);
    }
    poll_agent();
    SWAPPED(count, requests, test_any(count, requests, index, flag, status));
}

SHIM_API int MPI_Testsome(int incount, MPI_Request requests[], int *outcount,
                          int indices[], MPI_Status statuses[])
{
    if (shim_in_call) {
        return PMPI_Testsome(incount, requests, outcount, indices, statuses);
    }
    poll_agent();
    SWAPPED(incount, requests,
            test_some(incount, requests, outcount, indices, statuses));
}

SHIM_API int MPI_Request_get_status(MPI_Request request, int *flag,
                                    MPI_Status *status)
{
    if (shim_in_call) {
        return PMPI_Request_get_status(request, flag, status);
    }
    poll_agent();
    SWAPPED(1, &request, PMPI_Request_get_status(request, flag, status));
}
