/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The argument shapes of the collectives' MPI calls (the shape column of
 * common/dps_colls.h), each three ways, all up to the communicator:
 *   SHIM_P_<shape>     the C parameters, as mpi.h declares them
 *   SHIM_A_<shape>     those parameters into a shim_coll_args_t
 *                      (designated initializers; args/args.h names the
 *                      fields)
 *   SHIM_C_<shape>(a)  the arguments again, from a shim_coll_args_t *a,
 *                      for a call to stock MPI
 * Each list ends with a comma (or is empty), so that the communicator and
 * the rest follow it.
 */
#ifndef SHIM_SHAPES_H
#define SHIM_SHAPES_H

#define SHIM_P_BARRIER
#define SHIM_A_BARRIER
#define SHIM_C_BARRIER(a)

#define SHIM_P_BCAST void *buffer, int count, MPI_Datatype datatype, int root,
#define SHIM_A_BCAST \
    .sbuf = buffer, .scount = count, .stype = datatype, .root = root,
#define SHIM_C_BCAST(a) (void *)(a)->sbuf, (a)->scount, (a)->stype, (a)->root,

/* A block each way: Ialltoall, Iallgather and their neighbourhood forms. */
#define SHIM_P_ALL                                                            \
    const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, \
        int recvcount, MPI_Datatype recvtype,
#define SHIM_A_ALL                                                            \
    .sbuf = sendbuf, .scount = sendcount, .stype = sendtype, .rbuf = recvbuf, \
    .rcount = recvcount, .rtype = recvtype,
#define SHIM_C_ALL(a) \
    (a)->sbuf, (a)->scount, (a)->stype, (a)->rbuf, (a)->rcount, (a)->rtype,

/* Igather, Iscatter. */
#define SHIM_P_ROOTED    SHIM_P_ALL int root,
#define SHIM_A_ROOTED    SHIM_A_ALL.root = root,
#define SHIM_C_ROOTED(a) SHIM_C_ALL(a)(a)->root,

/* Blocks of several sizes received: Iallgatherv and its neighbourhood
 * form; Igatherv with a root. */
#define SHIM_P_ALLV                                                           \
    const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, \
        const int recvcounts[], const int displs[], MPI_Datatype recvtype,
#define SHIM_A_ALLV                                                           \
    .sbuf = sendbuf, .scount = sendcount, .stype = sendtype, .rbuf = recvbuf, \
    .rcounts = recvcounts, .rdispls = displs, .rtype = recvtype,
#define SHIM_C_ALLV(a)                                           \
    (a)->sbuf, (a)->scount, (a)->stype, (a)->rbuf, (a)->rcounts, \
        (a)->rdispls, (a)->rtype,
#define SHIM_P_GATHERV    SHIM_P_ALLV int root,
#define SHIM_A_GATHERV    SHIM_A_ALLV.root = root,
#define SHIM_C_GATHERV(a) SHIM_C_ALLV(a)(a)->root,

/* Iscatterv: blocks of several sizes sent from the root. */
#define SHIM_P_SCATTERV                                              \
    const void *sendbuf, const int sendcounts[], const int displs[], \
        MPI_Datatype sendtype, void *recvbuf, int recvcount,         \
        MPI_Datatype recvtype, int root,
#define SHIM_A_SCATTERV                                        \
    .sbuf = sendbuf, .scounts = sendcounts, .sdispls = displs, \
    .stype = sendtype, .rbuf = recvbuf, .rcount = recvcount,   \
    .rtype = recvtype, .root = root,
#define SHIM_C_SCATTERV(a)                                        \
    (a)->sbuf, (a)->scounts, (a)->sdispls, (a)->stype, (a)->rbuf, \
        (a)->rcount, (a)->rtype, (a)->root,

/* Ialltoallv and its neighbourhood form. */
#define SHIM_P_A2AV                                                   \
    const void *sendbuf, const int sendcounts[], const int sdispls[], \
        MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], \
        const int rdispls[], MPI_Datatype recvtype,
#define SHIM_A_A2AV                                             \
    .sbuf = sendbuf, .scounts = sendcounts, .sdispls = sdispls, \
    .stype = sendtype, .rbuf = recvbuf, .rcounts = recvcounts,  \
    .rdispls = rdispls, .rtype = recvtype,
#define SHIM_C_A2AV(a)                                            \
    (a)->sbuf, (a)->scounts, (a)->sdispls, (a)->stype, (a)->rbuf, \
        (a)->rcounts, (a)->rdispls, (a)->rtype,

/* Ialltoallw: a datatype per block, displacements in bytes (int). */
#define SHIM_P_A2AW                                                   \
    const void *sendbuf, const int sendcounts[], const int sdispls[], \
        const MPI_Datatype sendtypes[], void *recvbuf,                \
        const int recvcounts[], const int rdispls[],                  \
        const MPI_Datatype recvtypes[],
#define SHIM_A_A2AW                                                        \
    .sbuf = sendbuf, .scounts = sendcounts, .sdispls = sdispls,            \
    .stype = MPI_DATATYPE_NULL, .stypes = sendtypes, .rbuf = recvbuf,      \
    .rcounts = recvcounts, .rdispls = rdispls, .rtype = MPI_DATATYPE_NULL, \
    .rtypes = recvtypes,
#define SHIM_C_A2AW(a)                                             \
    (a)->sbuf, (a)->scounts, (a)->sdispls, (a)->stypes, (a)->rbuf, \
        (a)->rcounts, (a)->rdispls, (a)->rtypes,

/* Ineighbor_alltoallw: as Ialltoallw with MPI_Aint displacements. */
#define SHIM_P_NA2AW                                                       \
    const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[], \
        const MPI_Datatype sendtypes[], void *recvbuf,                     \
        const int recvcounts[], const MPI_Aint rdispls[],                  \
        const MPI_Datatype recvtypes[],
#define SHIM_A_NA2AW                                                   \
    .sbuf = sendbuf, .scounts = sendcounts, .sad = sdispls,            \
    .stype = MPI_DATATYPE_NULL, .stypes = sendtypes, .rbuf = recvbuf,  \
    .rcounts = recvcounts, .rad = rdispls, .rtype = MPI_DATATYPE_NULL, \
    .rtypes = recvtypes,
#define SHIM_C_NA2AW(a)                                                      \
    (a)->sbuf, (a)->scounts, (a)->sad, (a)->stypes, (a)->rbuf, (a)->rcounts, \
        (a)->rad, (a)->rtypes,

/* Reductions: Iallreduce, Iscan, Iexscan; Ireduce with a root; the
 * scatters with the result's count(s). */
#define SHIM_P_ALLRED                                                     \
    const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, \
        MPI_Op op,
#define SHIM_A_ALLRED                                                     \
    .sbuf = sendbuf, .rbuf = recvbuf, .scount = count, .stype = datatype, \
    .op = op,
#define SHIM_C_ALLRED(a) \
    (a)->sbuf, (a)->rbuf, (a)->scount, (a)->stype, (a)->op,
#define SHIM_P_REDUCE    SHIM_P_ALLRED int root,
#define SHIM_A_REDUCE    SHIM_A_ALLRED.root = root,
#define SHIM_C_REDUCE(a) SHIM_C_ALLRED(a)(a)->root,
#define SHIM_P_REDSC                                            \
    const void *sendbuf, void *recvbuf, const int recvcounts[], \
        MPI_Datatype datatype, MPI_Op op,
#define SHIM_A_REDSC                                         \
    .sbuf = sendbuf, .rbuf = recvbuf, .rcounts = recvcounts, \
    .stype = datatype, .op = op,
#define SHIM_C_REDSC(a) \
    (a)->sbuf, (a)->rbuf, (a)->rcounts, (a)->stype, (a)->op,
#define SHIM_P_REDSCB                                                         \
    const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, \
        MPI_Op op,
#define SHIM_A_REDSCB                                                         \
    .sbuf = sendbuf, .rbuf = recvbuf, .rcount = recvcount, .stype = datatype, \
    .op = op,
#define SHIM_C_REDSCB(a) \
    (a)->sbuf, (a)->rbuf, (a)->rcount, (a)->stype, (a)->op,

#endif
