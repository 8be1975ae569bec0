/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Blocking point-to-point calls and collectives, watched for agent
 * failures. Taking over from a failed agent needs every rank to take part
 * (shim_failover.c): a rank blocked inside PMPI_Recv, say, waiting for a
 * rank that waits for the takeover, would never hear of it. While offload
 * is on, these calls therefore run as their nonblocking form plus a test
 * loop that also takes in failure notices and drives the takeover.
 *
 * Point-to-point: MPI's own blocking calls poll the same way, so a loop
 * costs about what they cost; once stock MPI has taken over they go
 * straight to PMPI (blocking and nonblocking sends and receives match).
 * Collectives: a blocking one never matches a nonblocking one, so the
 * choice must be the same on every rank for the whole job: while offload
 * is on and DPUSHIM_WATCH_COLLECTIVES (agreed at MPI_Init) says so. The
 * nonblocking forms cost more for small messages (2-3x here).
 */
#include "shim.h"

/* Should a blocking point-to-point call watch for failures? */
static int watching(void)
{
    return !shim_in_call && shim.active && shim.fo_state != SHIM_FO_DECIDED;
}

/* Should a blocking collective (same answer on every rank)? */
static int coll_watching(void)
{
    return !shim_in_call && shim.active && shim.cfg.watch_collectives;
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

/* A blocking point-to-point call as its nonblocking form, watched. */
#define SHIM_WATCHED_P2P(blocking, nonblocking, status)                     \
    do {                                                                    \
        MPI_Request req_;                                                   \
        int rc_;                                                            \
                                                                            \
        if (!watching()) {                                                  \
            return PMPI_##blocking;                                         \
        }                                                                   \
        rc_ = PMPI_##nonblocking;                                           \
        return rc_ != MPI_SUCCESS ? rc_ : watch_wait(&req_, status);        \
    } while (0)

SHIM_API int MPI_Send(const void *buf, int count, MPI_Datatype datatype,
                      int dest, int tag, MPI_Comm comm)
{
    SHIM_WATCHED_P2P(Send(buf, count, datatype, dest, tag, comm),
                     Isend(buf, count, datatype, dest, tag, comm, &req_),
                     MPI_STATUS_IGNORE);
}

SHIM_API int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype,
                       int dest, int tag, MPI_Comm comm)
{
    SHIM_WATCHED_P2P(Ssend(buf, count, datatype, dest, tag, comm),
                     Issend(buf, count, datatype, dest, tag, comm, &req_),
                     MPI_STATUS_IGNORE);
}

SHIM_API int MPI_Recv(void *buf, int count, MPI_Datatype datatype,
                      int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    SHIM_WATCHED_P2P(Recv(buf, count, datatype, source, tag, comm, status),
                     Irecv(buf, count, datatype, source, tag, comm, &req_),
                     status);
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

/* A blocking probe as its nonblocking form, watched: flag_ is set. */
#define SHIM_WATCHED_PROBE(blocking, nonblocking)                           \
    do {                                                                    \
        int flag_ = 0, rc_;                                                 \
                                                                            \
        if (!watching()) {                                                  \
            return PMPI_##blocking;                                         \
        }                                                                   \
        for (;;) {                                                          \
            shim_in_call++;                                                 \
            shim_fo_progress();                                             \
            shim_in_call--;                                                 \
            rc_ = PMPI_##nonblocking;                                       \
            if (rc_ != MPI_SUCCESS || flag_) {                              \
                return rc_;                                                 \
            }                                                               \
        }                                                                   \
    } while (0)

SHIM_API int MPI_Probe(int source, int tag, MPI_Comm comm,
                       MPI_Status *status)
{
    SHIM_WATCHED_PROBE(Probe(source, tag, comm, status),
                       Iprobe(source, tag, comm, &flag_, status));
}

/* A blocking collective as its nonblocking form, watched. */
#define SHIM_WATCHED_COLL(blocking, nonblocking)                            \
    do {                                                                    \
        MPI_Request req_;                                                   \
        int rc_;                                                            \
                                                                            \
        if (!coll_watching()) {                                             \
            return PMPI_##blocking;                                         \
        }                                                                   \
        rc_ = PMPI_##nonblocking;                                           \
        return rc_ != MPI_SUCCESS ? rc_                                     \
                                  : watch_wait(&req_, MPI_STATUS_IGNORE);   \
    } while (0)

SHIM_API int MPI_Barrier(MPI_Comm comm)
{
    SHIM_WATCHED_COLL(Barrier(comm), Ibarrier(comm, &req_));
}

SHIM_API int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root,
                       MPI_Comm comm)
{
    SHIM_WATCHED_COLL(Bcast(buf, count, type, root, comm),
                      Ibcast(buf, count, type, root, comm, &req_));
}

SHIM_API int MPI_Reduce(const void *sbuf, void *rbuf, int count,
                        MPI_Datatype type, MPI_Op op, int root,
                        MPI_Comm comm)
{
    SHIM_WATCHED_COLL(Reduce(sbuf, rbuf, count, type, op, root, comm),
                      Ireduce(sbuf, rbuf, count, type, op, root, comm,
                              &req_));
}

SHIM_API int MPI_Allreduce(const void *sbuf, void *rbuf, int count,
                           MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    SHIM_WATCHED_COLL(Allreduce(sbuf, rbuf, count, type, op, comm),
                      Iallreduce(sbuf, rbuf, count, type, op, comm, &req_));
}

SHIM_API int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype,
                        void *rbuf, int rcount, MPI_Datatype rtype, int root,
                        MPI_Comm comm)
{
    SHIM_WATCHED_COLL(Gather(sbuf, scount, stype, rbuf, rcount, rtype, root,
                             comm),
                      Igather(sbuf, scount, stype, rbuf, rcount, rtype, root,
                              comm, &req_));
}

SHIM_API int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype,
                         void *rbuf, int rcount, MPI_Datatype rtype,
                         int root, MPI_Comm comm)
{
    SHIM_WATCHED_COLL(Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root,
                              comm),
                      Iscatter(sbuf, scount, stype, rbuf, rcount, rtype,
                               root, comm, &req_));
}

SHIM_API int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype,
                           void *rbuf, int rcount, MPI_Datatype rtype,
                           MPI_Comm comm)
{
    SHIM_WATCHED_COLL(Allgather(sbuf, scount, stype, rbuf, rcount, rtype,
                                comm),
                      Iallgather(sbuf, scount, stype, rbuf, rcount, rtype,
                                 comm, &req_));
}

SHIM_API int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype,
                            void *rbuf, const int rcounts[],
                            const int displs[], MPI_Datatype rtype,
                            MPI_Comm comm)
{
    SHIM_WATCHED_COLL(Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs,
                                 rtype, comm),
                      Iallgatherv(sbuf, scount, stype, rbuf, rcounts, displs,
                                  rtype, comm, &req_));
}

SHIM_API int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype,
                          void *rbuf, int rcount, MPI_Datatype rtype,
                          MPI_Comm comm)
{
    SHIM_WATCHED_COLL(Alltoall(sbuf, scount, stype, rbuf, rcount, rtype,
                               comm),
                      Ialltoall(sbuf, scount, stype, rbuf, rcount, rtype,
                                comm, &req_));
}

SHIM_API int MPI_Alltoallv(const void *sbuf, const int scounts[],
                           const int sdispls[], MPI_Datatype stype,
                           void *rbuf, const int rcounts[],
                           const int rdispls[], MPI_Datatype rtype,
                           MPI_Comm comm)
{
    SHIM_WATCHED_COLL(Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts,
                                rdispls, rtype, comm),
                      Ialltoallv(sbuf, scounts, sdispls, stype, rbuf,
                                 rcounts, rdispls, rtype, comm, &req_));
}

SHIM_API int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype,
                         void *rbuf, const int rcounts[], const int displs[],
                         MPI_Datatype rtype, int root, MPI_Comm comm)
{
    SHIM_WATCHED_COLL(Gatherv(sbuf, scount, stype, rbuf, rcounts, displs,
                              rtype, root, comm),
                      Igatherv(sbuf, scount, stype, rbuf, rcounts, displs,
                               rtype, root, comm, &req_));
}

SHIM_API int MPI_Scatterv(const void *sbuf, const int scounts[],
                          const int displs[], MPI_Datatype stype, void *rbuf,
                          int rcount, MPI_Datatype rtype, int root,
                          MPI_Comm comm)
{
    SHIM_WATCHED_COLL(Scatterv(sbuf, scounts, displs, stype, rbuf, rcount,
                               rtype, root, comm),
                      Iscatterv(sbuf, scounts, displs, stype, rbuf, rcount,
                                rtype, root, comm, &req_));
}

SHIM_API int MPI_Alltoallw(const void *sbuf, const int scounts[],
                           const int sdispls[], const MPI_Datatype stypes[],
                           void *rbuf, const int rcounts[],
                           const int rdispls[], const MPI_Datatype rtypes[],
                           MPI_Comm comm)
{
    SHIM_WATCHED_COLL(Alltoallw(sbuf, scounts, sdispls, stypes, rbuf,
                                rcounts, rdispls, rtypes, comm),
                      Ialltoallw(sbuf, scounts, sdispls, stypes, rbuf,
                                 rcounts, rdispls, rtypes, comm, &req_));
}

SHIM_API int MPI_Reduce_scatter(const void *sbuf, void *rbuf,
                                const int rcounts[], MPI_Datatype type,
                                MPI_Op op, MPI_Comm comm)
{
    SHIM_WATCHED_COLL(Reduce_scatter(sbuf, rbuf, rcounts, type, op, comm),
                      Ireduce_scatter(sbuf, rbuf, rcounts, type, op, comm,
                                      &req_));
}

SHIM_API int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf,
                                      int rcount, MPI_Datatype type,
                                      MPI_Op op, MPI_Comm comm)
{
    SHIM_WATCHED_COLL(Reduce_scatter_block(sbuf, rbuf, rcount, type, op,
                                           comm),
                      Ireduce_scatter_block(sbuf, rbuf, rcount, type, op,
                                            comm, &req_));
}

SHIM_API int MPI_Scan(const void *sbuf, void *rbuf, int count,
                      MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    SHIM_WATCHED_COLL(Scan(sbuf, rbuf, count, type, op, comm),
                      Iscan(sbuf, rbuf, count, type, op, comm, &req_));
}

SHIM_API int MPI_Exscan(const void *sbuf, void *rbuf, int count,
                        MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    SHIM_WATCHED_COLL(Exscan(sbuf, rbuf, count, type, op, comm),
                      Iexscan(sbuf, rbuf, count, type, op, comm, &req_));
}

SHIM_API int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype,
                       int dest, int tag, MPI_Comm comm)
{
    SHIM_WATCHED_P2P(Rsend(buf, count, datatype, dest, tag, comm),
                     Irsend(buf, count, datatype, dest, tag, comm, &req_),
                     MPI_STATUS_IGNORE);
}

SHIM_API int MPI_Mprobe(int source, int tag, MPI_Comm comm,
                        MPI_Message *message, MPI_Status *status)
{
    SHIM_WATCHED_PROBE(Mprobe(source, tag, comm, message, status),
                       Improbe(source, tag, comm, &flag_, message, status));
}

SHIM_API int MPI_Mrecv(void *buf, int count, MPI_Datatype datatype,
                       MPI_Message *message, MPI_Status *status)
{
    SHIM_WATCHED_P2P(Mrecv(buf, count, datatype, message, status),
                     Imrecv(buf, count, datatype, message, &req_), status);
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
