/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Blocking point-to-point calls and MPI_Barrier, watched for agent
 * failures. Taking over from a failed agent needs every rank to take part
 * (shim_failover.c): a rank blocked inside PMPI_Recv, say, waiting for a
 * rank that waits for the takeover, would never hear of it. While offload
 * is on, these calls therefore run as their nonblocking form plus a test
 * loop that also takes in failure notices and drives the takeover. MPI's
 * own blocking calls poll the same way, so a loop costs about what they
 * cost. Once stock MPI has taken over, they go straight to PMPI.
 */
#include "shim.h"

/* Should a blocking call watch for failures? */
static int watching(void)
{
    return !shim_in_call && shim.active && shim.fo_state != SHIM_FO_DECIDED;
}

/* Complete req, driving the takeover meanwhile. */
static int watch_wait(MPI_Request *req, MPI_Status *status)
{
    int flag = 0, rc;

    for (;;) {
        shim_in_call++;
        shim_fo_progress();
        shim_in_call--;
        rc = PMPI_Test(req, &flag, status);
        if (rc != MPI_SUCCESS || flag) {
            return rc;
        }
    }
}

SHIM_API int MPI_Send(const void *buf, int count, MPI_Datatype datatype,
                      int dest, int tag, MPI_Comm comm)
{
    MPI_Request req;
    int rc;

    if (!watching()) {
        return PMPI_Send(buf, count, datatype, dest, tag, comm);
    }
    rc = PMPI_Isend(buf, count, datatype, dest, tag, comm, &req);
    return rc != MPI_SUCCESS ? rc : watch_wait(&req, MPI_STATUS_IGNORE);
}

SHIM_API int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype,
                       int dest, int tag, MPI_Comm comm)
{
    MPI_Request req;
    int rc;

    if (!watching()) {
        return PMPI_Ssend(buf, count, datatype, dest, tag, comm);
    }
    rc = PMPI_Issend(buf, count, datatype, dest, tag, comm, &req);
    return rc != MPI_SUCCESS ? rc : watch_wait(&req, MPI_STATUS_IGNORE);
}

SHIM_API int MPI_Recv(void *buf, int count, MPI_Datatype datatype,
                      int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    MPI_Request req;
    int rc;

    if (!watching()) {
        return PMPI_Recv(buf, count, datatype, source, tag, comm, status);
    }
    rc = PMPI_Irecv(buf, count, datatype, source, tag, comm, &req);
    return rc != MPI_SUCCESS ? rc : watch_wait(&req, status);
}

SHIM_API int MPI_Sendrecv(const void *sendbuf, int sendcount,
                          MPI_Datatype sendtype, int dest, int sendtag,
                          void *recvbuf, int recvcount,
                          MPI_Datatype recvtype, int source, int recvtag,
                          MPI_Comm comm, MPI_Status *status)
{
    MPI_Request req[2];
    int rc;

    if (!watching()) {
        return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag,
                             recvbuf, recvcount, recvtype, source, recvtag,
                             comm, status);
    }
    rc = PMPI_Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm,
                    &req[1]);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = PMPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm,
                    &req[0]);
    if (rc != MPI_SUCCESS) {
        PMPI_Cancel(&req[1]);
        PMPI_Wait(&req[1], MPI_STATUS_IGNORE);
        return rc;
    }
    rc = watch_wait(&req[0], MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        PMPI_Wait(&req[1], MPI_STATUS_IGNORE);
        return rc;
    }
    return watch_wait(&req[1], status);
}

SHIM_API int MPI_Probe(int source, int tag, MPI_Comm comm,
                       MPI_Status *status)
{
    int flag = 0, rc;

    if (!watching()) {
        return PMPI_Probe(source, tag, comm, status);
    }
    for (;;) {
        shim_in_call++;
        shim_fo_progress();
        shim_in_call--;
        rc = PMPI_Iprobe(source, tag, comm, &flag, status);
        if (rc != MPI_SUCCESS || flag) {
            return rc;
        }
        if (!watching()) {
            return PMPI_Probe(source, tag, comm, status);
        }
    }
}

SHIM_API int MPI_Barrier(MPI_Comm comm)
{
    MPI_Request req;
    int rc;

    if (!watching()) {
        return PMPI_Barrier(comm);
    }
    rc = PMPI_Ibarrier(comm, &req);
    return rc != MPI_SUCCESS ? rc : watch_wait(&req, MPI_STATUS_IGNORE);
}

/* MPI_Wait and friends on requests that are not ours (shim_wait.c). */
int shim_watch_wait(MPI_Request *req, MPI_Status *status)
{
    return watching() ? watch_wait(req, status) : PMPI_Wait(req, status);
}

int shim_watching(void)
{
    return watching();
}
