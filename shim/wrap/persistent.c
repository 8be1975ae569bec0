/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Persistent collectives: MPI-4's MPI_<Coll>_init where the MPI has them
 * (MPICH 4), Open MPI 4.1's MPIX_<Coll>_init from mpi-ext.h (wrap/pers.h).
 * Each takes its arguments into a shim_coll_args_t, named as the
 * nonblocking call's (wrap/check.h), and leaves the rest to
 * shim_pers_init (wrap/pers_init.c).
 */
#include "shim/core/shim.h"
#include "shim/wrap/pers.h"

#ifdef SHIM_PERSISTENT

SHIM_API int PERS(Barrier)(MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_BARRIER_INIT, .comm = comm,
                          .info = info, .request = request};

    return shim_pers_init(&a);
}

SHIM_API int PERS(Bcast)(void *buffer, int count, MPI_Datatype datatype,
                         int root, MPI_Comm comm, MPI_Info info,
                         MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_BCAST_INIT, .comm = comm,
                          .sbuf = buffer, .scount = count, .stype = datatype,
                          .root = root, .info = info, .request = request};

    return shim_pers_init(&a);
}

SHIM_API int PERS(Gather)(const void *sendbuf, int sendcount,
                          MPI_Datatype sendtype, void *recvbuf, int recvcount,
                          MPI_Datatype recvtype, int root, MPI_Comm comm,
                          MPI_Info info, MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_GATHER_INIT, .comm = comm,
                          .sbuf = sendbuf, .scount = sendcount,
                          .stype = sendtype, .rbuf = recvbuf,
                          .rcount = recvcount, .rtype = recvtype, .root = root,
                          .info = info, .request = request};

    return shim_pers_init(&a);
}

SHIM_API int PERS(Gatherv)(const void *sendbuf, int sendcount,
                           MPI_Datatype sendtype, void *recvbuf,
                           const int recvcounts[], const int displs[],
                           MPI_Datatype recvtype, int root, MPI_Comm comm,
                           MPI_Info info, MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_GATHERV_INIT, .comm = comm,
                          .sbuf = sendbuf, .scount = sendcount,
                          .stype = sendtype, .rbuf = recvbuf,
                          .rcounts = recvcounts, .rdispls = displs,
                          .rtype = recvtype, .root = root, .info = info,
                          .request = request};

    return shim_pers_init(&a);
}

SHIM_API int PERS(Scatter)(const void *sendbuf, int sendcount,
                           MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, int root, MPI_Comm comm,
                           MPI_Info info, MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_SCATTER_INIT, .comm = comm,
                          .sbuf = sendbuf, .scount = sendcount,
                          .stype = sendtype, .rbuf = recvbuf,
                          .rcount = recvcount, .rtype = recvtype, .root = root,
                          .info = info, .request = request};

    return shim_pers_init(&a);
}

SHIM_API int PERS(Scatterv)(const void *sendbuf, const int sendcounts[],
                            const int displs[], MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype,
                            int root, MPI_Comm comm, MPI_Info info,
                            MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_SCATTERV_INIT, .comm = comm,
                          .sbuf = sendbuf, .scounts = sendcounts,
                          .sdispls = displs, .stype = sendtype, .rbuf = recvbuf,
                          .rcount = recvcount, .rtype = recvtype, .root = root,
                          .info = info, .request = request};

    return shim_pers_init(&a);
}

SHIM_API int PERS(Allgather)(const void *sendbuf, int sendcount,
                             MPI_Datatype sendtype, void *recvbuf,
                             int recvcount, MPI_Datatype recvtype,
                             MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_ALLGATHER_INIT, .comm = comm,
                          .sbuf = sendbuf, .scount = sendcount,
                          .stype = sendtype, .rbuf = recvbuf,
                          .rcount = recvcount, .rtype = recvtype, .info = info,
                          .request = request};

    return shim_pers_init(&a);
}

SHIM_API int PERS(Allgatherv)(const void *sendbuf, int sendcount,
                              MPI_Datatype sendtype, void *recvbuf,
                              const int recvcounts[], const int displs[],
                              MPI_Datatype recvtype, MPI_Comm comm,
                              MPI_Info info, MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_ALLGATHERV_INIT, .comm = comm,
                          .sbuf = sendbuf, .scount = sendcount,
                          .stype = sendtype, .rbuf = recvbuf,
                          .rcounts = recvcounts, .rdispls = displs,
                          .rtype = recvtype, .info = info, .request = request};

    return shim_pers_init(&a);
}

SHIM_API int PERS(Alltoall)(const void *sendbuf, int sendcount,
                            MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                            MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_ALLTOALL_INIT, .comm = comm,
                          .sbuf = sendbuf, .scount = sendcount,
                          .stype = sendtype, .rbuf = recvbuf,
                          .rcount = recvcount, .rtype = recvtype, .info = info,
                          .request = request};

    return shim_pers_init(&a);
}

SHIM_API int PERS(Alltoallv)(const void *sendbuf, const int sendcounts[],
                             const int sdispls[], MPI_Datatype sendtype,
                             void *recvbuf, const int recvcounts[],
                             const int rdispls[], MPI_Datatype recvtype,
                             MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_ALLTOALLV_INIT, .comm = comm,
                          .sbuf = sendbuf, .scounts = sendcounts,
                          .sdispls = sdispls, .stype = sendtype,
                          .rbuf = recvbuf, .rcounts = recvcounts,
                          .rdispls = rdispls, .rtype = recvtype, .info = info,
                          .request = request};

    return shim_pers_init(&a);
}

SHIM_API int PERS(Alltoallw)(const void *sendbuf, const int sendcounts[],
                             const int sdispls[],
                             const MPI_Datatype sendtypes[], void *recvbuf,
                             const int recvcounts[], const int rdispls[],
                             const MPI_Datatype recvtypes[], MPI_Comm comm,
                             MPI_Info info, MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_ALLTOALLW_INIT, .comm = comm,
                          .sbuf = sendbuf, .scounts = sendcounts,
                          .sdispls = sdispls, .stype = MPI_DATATYPE_NULL,
                          .stypes = sendtypes, .rbuf = recvbuf,
                          .rcounts = recvcounts, .rdispls = rdispls,
                          .rtype = MPI_DATATYPE_NULL, .rtypes = recvtypes,
                          .info = info, .request = request};

    return shim_pers_init(&a);
}

SHIM_API int PERS(Reduce)(const void *sendbuf, void *recvbuf, int count,
                          MPI_Datatype datatype, MPI_Op op, int root,
                          MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_REDUCE_INIT, .comm = comm,
                          .sbuf = sendbuf, .scount = count, .stype = datatype,
                          .rbuf = recvbuf, .op = op, .root = root, .info = info,
                          .request = request};

    return shim_pers_init(&a);
}

SHIM_API int PERS(Allreduce)(const void *sendbuf, void *recvbuf, int count,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                             MPI_Info info, MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_ALLREDUCE_INIT, .comm = comm,
                          .sbuf = sendbuf, .scount = count, .stype = datatype,
                          .rbuf = recvbuf, .op = op, .info = info,
                          .request = request};

    return shim_pers_init(&a);
}

SHIM_API int PERS(Reduce_scatter)(const void *sendbuf, void *recvbuf,
                                  const int recvcounts[], MPI_Datatype datatype,
                                  MPI_Op op, MPI_Comm comm, MPI_Info info,
                                  MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_REDUCE_SCATTER_INIT, .comm = comm,
                          .sbuf = sendbuf, .rcounts = recvcounts,
                          .stype = datatype, .rbuf = recvbuf, .op = op,
                          .info = info, .request = request};

    return shim_pers_init(&a);
}

SHIM_API int PERS(Reduce_scatter_block)(const void *sendbuf, void *recvbuf,
                                        int recvcount, MPI_Datatype datatype,
                                        MPI_Op op, MPI_Comm comm, MPI_Info info,
                                        MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_REDUCE_SCATTER_BLOCK_INIT,
                          .comm = comm, .sbuf = sendbuf, .rcount = recvcount,
                          .stype = datatype, .rbuf = recvbuf, .op = op,
                          .info = info, .request = request};

    return shim_pers_init(&a);
}

SHIM_API int PERS(Scan)(const void *sendbuf, void *recvbuf, int count,
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                        MPI_Info info, MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_SCAN_INIT, .comm = comm,
                          .sbuf = sendbuf, .scount = count, .stype = datatype,
                          .rbuf = recvbuf, .op = op, .info = info,
                          .request = request};

    return shim_pers_init(&a);
}

SHIM_API int PERS(Exscan)(const void *sendbuf, void *recvbuf, int count,
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                          MPI_Info info, MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_EXSCAN_INIT, .comm = comm,
                          .sbuf = sendbuf, .scount = count, .stype = datatype,
                          .rbuf = recvbuf, .op = op, .info = info,
                          .request = request};

    return shim_pers_init(&a);
}

SHIM_API int PERS(Neighbor_allgather)(const void *sendbuf, int sendcount,
                                      MPI_Datatype sendtype, void *recvbuf,
                                      int recvcount, MPI_Datatype recvtype,
                                      MPI_Comm comm, MPI_Info info,
                                      MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_NEIGHBOR_ALLGATHER_INIT,
                          .comm = comm, .sbuf = sendbuf, .scount = sendcount,
                          .stype = sendtype, .rbuf = recvbuf,
                          .rcount = recvcount, .rtype = recvtype, .info = info,
                          .request = request};

    return shim_pers_init(&a);
}

SHIM_API int PERS(Neighbor_allgatherv)(const void *sendbuf, int sendcount,
                                       MPI_Datatype sendtype, void *recvbuf,
                                       const int recvcounts[],
                                       const int displs[],
                                       MPI_Datatype recvtype, MPI_Comm comm,
                                       MPI_Info info, MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_NEIGHBOR_ALLGATHERV_INIT,
                          .comm = comm, .sbuf = sendbuf, .scount = sendcount,
                          .stype = sendtype, .rbuf = recvbuf,
                          .rcounts = recvcounts, .rdispls = displs,
                          .rtype = recvtype, .info = info, .request = request};

    return shim_pers_init(&a);
}

SHIM_API int PERS(Neighbor_alltoall)(const void *sendbuf, int sendcount,
                                     MPI_Datatype sendtype, void *recvbuf,
                                     int recvcount, MPI_Datatype recvtype,
                                     MPI_Comm comm, MPI_Info info,
                                     MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_NEIGHBOR_ALLTOALL_INIT, .comm = comm,
                          .sbuf = sendbuf, .scount = sendcount,
                          .stype = sendtype, .rbuf = recvbuf,
                          .rcount = recvcount, .rtype = recvtype, .info = info,
                          .request = request};

    return shim_pers_init(&a);
}

SHIM_API int PERS(Neighbor_alltoallv)(const void *sendbuf,
                                      const int sendcounts[],
                                      const int sdispls[],
                                      MPI_Datatype sendtype, void *recvbuf,
                                      const int recvcounts[],
                                      const int rdispls[],
                                      MPI_Datatype recvtype, MPI_Comm comm,
                                      MPI_Info info, MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_NEIGHBOR_ALLTOALLV_INIT,
                          .comm = comm, .sbuf = sendbuf, .scounts = sendcounts,
                          .sdispls = sdispls, .stype = sendtype,
                          .rbuf = recvbuf, .rcounts = recvcounts,
                          .rdispls = rdispls, .rtype = recvtype, .info = info,
                          .request = request};

    return shim_pers_init(&a);
}

SHIM_API int PERS(Neighbor_alltoallw)(const void *sendbuf,
                                      const int sendcounts[],
                                      const MPI_Aint sdispls[],
                                      const MPI_Datatype sendtypes[],
                                      void *recvbuf, const int recvcounts[],
                                      const MPI_Aint rdispls[],
                                      const MPI_Datatype recvtypes[],
                                      MPI_Comm comm, MPI_Info info,
                                      MPI_Request *request)
{
    shim_coll_args_t a = {.coll = DPS_COLL_NEIGHBOR_ALLTOALLW_INIT,
                          .comm = comm, .sbuf = sendbuf, .scounts = sendcounts,
                          .sad = sdispls, .stype = MPI_DATATYPE_NULL,
                          .stypes = sendtypes, .rbuf = recvbuf,
                          .rcounts = recvcounts, .rad = rdispls,
                          .rtype = MPI_DATATYPE_NULL, .rtypes = recvtypes,
                          .info = info, .request = request};

    return shim_pers_init(&a);
}

#endif /* SHIM_PERSISTENT */
