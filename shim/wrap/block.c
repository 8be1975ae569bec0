/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Blocking calls and agent failures. Taking over from a failed agent needs
 * every rank to take part (failover/failover.c).
 *
 * Point-to-point calls and probes, while offload is on, run as their
 * nonblocking form plus a test loop that also takes in failure notices and
 * drives the takeover: a rank blocked in MPI_Recv, waiting for a rank that
 * waits for the takeover, still joins it. MPI's own blocking calls poll
 * the same way, so the loop costs about what they cost, and blocking and
 * nonblocking point-to-point calls match each other.
 *
 * Blocking collectives stay MPI's own calls: their nonblocking forms are
 * a different, less tuned path (2-3x slower for small messages here),
 * never match a blocking call on a rank that chose otherwise, and for some
 * valid arguments never complete in some MPI libraries (Open MPI 4.1's
 * MPI_Ialltoallv with a zero-size type). The only thing done first: a
 * rank that knows of a failure starts its pending collectives on stock
 * MPI (shim_fo_settle), so that ranks waiting for them are not left
 * waiting for it. A rank blocked in one when a failure happens cannot
 * join the takeover; the ranks that wait for it abort the job after
 * DPUSHIM_AGENT_TIMEOUT, saying why (failover/failover.c).
 */
#include "shim/core/shim.h"
#include "shim/failover/failover.h"
#include "shim/wrap/block.h"

/* Should a blocking point-to-point call watch for failures? */
static int watching(void)
{
    return !shim_in_call && shim.active && shim.fo.state != SHIM_FO_DECIDED;
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

/* A blocking point-to-point call as its nonblocking form, watched;
 * direct: nothing to wait for (MPI_PROC_NULL), MPI's own call. MPICH 4.0
 * completes a nonblocking receive from MPI_PROC_NULL with source 0 and
 * tag 0 in its status; its blocking one says MPI_PROC_NULL, as it must. */
#define SHIM_WATCHED_P2P(direct, blocking, nonblocking, status)      \
    do {                                                             \
        MPI_Request req_;                                            \
        int         rc_;                                             \
                                                                     \
        if (!watching() || (direct)) {                               \
            return PMPI_##blocking;                                  \
        }                                                            \
        rc_ = PMPI_##nonblocking;                                    \
        return rc_ != MPI_SUCCESS ? rc_ : watch_wait(&req_, status); \
    } while (0)

SHIM_API int MPI_Send(const void *buf, int count, MPI_Datatype datatype,
                      int dest, int tag, MPI_Comm comm)
{
    SHIM_WATCHED_P2P(dest == MPI_PROC_NULL,
                     Send(buf, count, datatype, dest, tag, comm),
                     Isend(buf, count, datatype, dest, tag, comm, &req_),
                     MPI_STATUS_IGNORE);
}

SHIM_API int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype,
                       int dest, int tag, MPI_Comm comm)
{
    SHIM_WATCHED_P2P(dest == MPI_PROC_NULL,
                     Ssend(buf, count, datatype, dest, tag, comm),
                     Issend(buf, count, datatype, dest, tag, comm, &req_),
                     MPI_STATUS_IGNORE);
}

SHIM_API int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source,
                      int tag, MPI_Comm comm, MPI_Status *status)
{
    SHIM_WATCHED_P2P(source == MPI_PROC_NULL,
                     Recv(buf, count, datatype, source, tag, comm, status),
                     Irecv(buf, count, datatype, source, tag, comm, &req_),
                     status);
}

SHIM_API int MPI_Sendrecv(const void *sendbuf, int sendcount,
                          MPI_Datatype sendtype, int dest, int sendtag,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype,
                          int source, int recvtag, MPI_Comm comm,
                          MPI_Status *status)
{
    MPI_Request req[2];
    int         rc;

    if (!watching() || source == MPI_PROC_NULL) {
        if (watching() && dest != MPI_PROC_NULL) {
            rc = PMPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm,
                            &req[0]);
            if (rc == MPI_SUCCESS) {
                rc = watch_wait(&req[0], MPI_STATUS_IGNORE);
            }
            if (rc != MPI_SUCCESS) {
                return rc;
            }
            sendcount = 0; /* sent: the call below only sets status */
            dest = MPI_PROC_NULL;
        }
        return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag,
                             recvbuf, recvcount, recvtype, source, recvtag,
                             comm, status);
    }
    rc = PMPI_Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm,
                    &req[1]);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc =
        PMPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &req[0]);
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

/* A blocking probe as its nonblocking form, watched: flag_ is set. */
#define SHIM_WATCHED_PROBE(direct, blocking, nonblocking) \
    do {                                                  \
        int flag_ = 0, rc_;                               \
                                                          \
        if (!watching() || (direct)) {                    \
            return PMPI_##blocking;                       \
        }                                                 \
        for (;;) {                                        \
            shim_in_call++;                               \
            shim_fo_progress();                           \
            shim_in_call--;                               \
            rc_ = PMPI_##nonblocking;                     \
            if (rc_ != MPI_SUCCESS || flag_) {            \
                return rc_;                               \
            }                                             \
        }                                                 \
    } while (0)

SHIM_API int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    SHIM_WATCHED_PROBE(source == MPI_PROC_NULL,
                       Probe(source, tag, comm, status),
                       Iprobe(source, tag, comm, &flag_, status));
}

/* A blocking collective: MPI's own, after settling a known takeover. The
 * test costs two loads while nothing has failed. */
#define SHIM_BLOCKING_COLL(call)                                        \
    do {                                                                \
        if (__builtin_expect(shim.fo.state != SHIM_FO_NONE ||           \
                                 shim_fo_noticed() != SHIM_FO_NO_CAUSE, \
                             0)) {                                      \
            shim_fo_settle();                                           \
        }                                                               \
        return PMPI_##call;                                             \
    } while (0)

SHIM_API int MPI_Barrier(MPI_Comm comm)
{
    SHIM_BLOCKING_COLL(Barrier(comm));
}

SHIM_API int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root,
                       MPI_Comm comm)
{
    SHIM_BLOCKING_COLL(Bcast(buf, count, type, root, comm));
}

SHIM_API int MPI_Reduce(const void *sbuf, void *rbuf, int count,
                        MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm)
{
    SHIM_BLOCKING_COLL(Reduce(sbuf, rbuf, count, type, op, root, comm));
}

SHIM_API int MPI_Allreduce(const void *sbuf, void *rbuf, int count,
                           MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    SHIM_BLOCKING_COLL(Allreduce(sbuf, rbuf, count, type, op, comm));
}

SHIM_API int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype,
                        void *rbuf, int rcount, MPI_Datatype rtype, int root,
                        MPI_Comm comm)
{
    SHIM_BLOCKING_COLL(
        Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
}

SHIM_API int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype,
                         void *rbuf, int rcount, MPI_Datatype rtype, int root,
                         MPI_Comm comm)
{
    SHIM_BLOCKING_COLL(
        Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
}

SHIM_API int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype,
                           void *rbuf, int rcount, MPI_Datatype rtype,
                           MPI_Comm comm)
{
    SHIM_BLOCKING_COLL(
        Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm));
}

SHIM_API int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype,
                            void *rbuf, const int rcounts[],
                            const int displs[], MPI_Datatype rtype,
                            MPI_Comm comm)
{
    SHIM_BLOCKING_COLL(
        Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm));
}

SHIM_API int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype,
                          void *rbuf, int rcount, MPI_Datatype rtype,
                          MPI_Comm comm)
{
    SHIM_BLOCKING_COLL(
        Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm));
}

SHIM_API int MPI_Alltoallv(const void *sbuf, const int scounts[],
                           const int sdispls[], MPI_Datatype stype, void *rbuf,
                           const int rcounts[], const int rdispls[],
                           MPI_Datatype rtype, MPI_Comm comm)
{
    SHIM_BLOCKING_COLL(Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts,
                                 rdispls, rtype, comm));
}

SHIM_API int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype,
                         void *rbuf, const int rcounts[], const int displs[],
                         MPI_Datatype rtype, int root, MPI_Comm comm)
{
    SHIM_BLOCKING_COLL(Gatherv(sbuf, scount, stype, rbuf, rcounts, displs,
                               rtype, root, comm));
}

SHIM_API int MPI_Scatterv(const void *sbuf, const int scounts[],
                          const int displs[], MPI_Datatype stype, void *rbuf,
                          int rcount, MPI_Datatype rtype, int root,
                          MPI_Comm comm)
{
    SHIM_BLOCKING_COLL(Scatterv(sbuf, scounts, displs, stype, rbuf, rcount,
                                rtype, root, comm));
}

SHIM_API int MPI_Alltoallw(const void *sbuf, const int scounts[],
                           const int sdispls[], const MPI_Datatype stypes[],
                           void *rbuf, const int rcounts[],
                           const int rdispls[], const MPI_Datatype rtypes[],
                           MPI_Comm comm)
{
    SHIM_BLOCKING_COLL(Alltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts,
                                 rdispls, rtypes, comm));
}

SHIM_API int MPI_Reduce_scatter(const void *sbuf, void *rbuf,
                                const int rcounts[], MPI_Datatype type,
                                MPI_Op op, MPI_Comm comm)
{
    SHIM_BLOCKING_COLL(Reduce_scatter(sbuf, rbuf, rcounts, type, op, comm));
}

SHIM_API int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                      MPI_Datatype type, MPI_Op op,
                                      MPI_Comm comm)
{
    SHIM_BLOCKING_COLL(
        Reduce_scatter_block(sbuf, rbuf, rcount, type, op, comm));
}

SHIM_API int MPI_Scan(const void *sbuf, void *rbuf, int count,
                      MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    SHIM_BLOCKING_COLL(Scan(sbuf, rbuf, count, type, op, comm));
}

SHIM_API int MPI_Exscan(const void *sbuf, void *rbuf, int count,
                        MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    SHIM_BLOCKING_COLL(Exscan(sbuf, rbuf, count, type, op, comm));
}

SHIM_API int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype,
                       int dest, int tag, MPI_Comm comm)
{
    SHIM_WATCHED_P2P(dest == MPI_PROC_NULL,
                     Rsend(buf, count, datatype, dest, tag, comm),
                     Irsend(buf, count, datatype, dest, tag, comm, &req_),
                     MPI_STATUS_IGNORE);
}

SHIM_API int MPI_Mprobe(int source, int tag, MPI_Comm comm,
                        MPI_Message *message, MPI_Status *status)
{
    SHIM_WATCHED_PROBE(source == MPI_PROC_NULL,
                       Mprobe(source, tag, comm, message, status),
                       Improbe(source, tag, comm, &flag_, message, status));
}

SHIM_API int MPI_Mrecv(void *buf, int count, MPI_Datatype datatype,
                       MPI_Message *message, MPI_Status *status)
{
    SHIM_WATCHED_P2P(*message == MPI_MESSAGE_NO_PROC,
                     Mrecv(buf, count, datatype, message, status),
                     Imrecv(buf, count, datatype, message, &req_), status);
}

/* MPI_Wait and friends on requests that are not ours (wrap/wait.c). */
int shim_watch_wait(MPI_Request *req, MPI_Status *status)
{
    return watching() ? watch_wait(req, status) : PMPI_Wait(req, status);
}

int shim_watching(void)
{
    return watching();
}
