/* SPDX-License-Identifier: BSD-3-Clause */
/* Fortran on Open MPI (fortran/fortran.h): the persistent MPIX_*_INIT calls. */
#include "shim/fortran/fortran.h"

#if defined(OPEN_MPI) && OPEN_MPI

#include <mpi-ext.h>
#include <dlfcn.h>
#include <stdlib.h>

/* ---- persistent collectives (Open MPI 4.1's MPIX_*_init) -------------- */

#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ

/* ompix_NAME_init_f (what mpi_f08 calls) and the mpif.h / `use mpi_ext`
 * spellings. */
#define PFORTRAN(name, upper, params)                                        \
    SHIM_API void ompix_##name##_init_f params                               \
        __attribute__((alias("fp_" #name)));                                 \
    SHIM_API void mpix_##name##_init_ params                                 \
        __attribute__((alias("fp_" #name)));                                 \
    SHIM_API void mpix_##name##_init__ params                                \
        __attribute__((alias("fp_" #name)));                                 \
    SHIM_API void mpix_##name##_init params                                  \
        __attribute__((alias("fp_" #name)));                                 \
    SHIM_API void MPIX_##upper##_INIT params                                 \
        __attribute__((alias("fp_" #name)))

#define I(x) PMPI_Info_f2c(*(x))

#define PP_BARRIER (MPI_Fint *comm, MPI_Fint *info, MPI_Fint *req,           \
                    MPI_Fint *ierr)
void fp_barrier PP_BARRIER;
void fp_barrier PP_BARRIER
{
    MPI_Request r;

    started(MPIX_Barrier_init(C(comm), I(info), &r), &r, req, ierr);
}
PFORTRAN(barrier, BARRIER, PP_BARRIER);

#define PP_BCAST (char *buf, MPI_Fint *count, MPI_Fint *type,                \
                  MPI_Fint *root, MPI_Fint *comm, MPI_Fint *info,            \
                  MPI_Fint *req, MPI_Fint *ierr)
void fp_bcast PP_BCAST;
void fp_bcast PP_BCAST
{
    MPI_Request r;

    started(MPIX_Bcast_init(fbuf(buf), *count, T(type), *root, C(comm),
                            I(info), &r), &r, req, ierr);
}
PFORTRAN(bcast, BCAST, PP_BCAST);

#define PP_ROOTED (char *sb, MPI_Fint *sc, MPI_Fint *st, char *rb,           \
                   MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *root,               \
                   MPI_Fint *comm, MPI_Fint *info, MPI_Fint *req,            \
                   MPI_Fint *ierr)
#define PROOTED(name, upper, cfn)                                            \
    void fp_##name PP_ROOTED;                                                \
    void fp_##name PP_ROOTED                                                 \
    {                                                                        \
        MPI_Request r;                                                       \
                                                                             \
        started(cfn(fbuf(sb), *sc, T(st), fbuf(rb), *rc, T(rt), *root,       \
                    C(comm), I(info), &r), &r, req, ierr);                   \
    }                                                                        \
    PFORTRAN(name, upper, PP_ROOTED)

PROOTED(gather, GATHER, MPIX_Gather_init);
PROOTED(scatter, SCATTER, MPIX_Scatter_init);

#define PP_ALL (char *sb, MPI_Fint *sc, MPI_Fint *st, char *rb,              \
                MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *info,  \
                MPI_Fint *req, MPI_Fint *ierr)
#define PALL(name, upper, cfn)                                               \
    void fp_##name PP_ALL;                                                   \
    void fp_##name PP_ALL                                                    \
    {                                                                        \
        MPI_Request r;                                                       \
                                                                             \
        started(cfn(fbuf(sb), *sc, T(st), fbuf(rb), *rc, T(rt), C(comm),     \
                    I(info), &r), &r, req, ierr);                            \
    }                                                                        \
    PFORTRAN(name, upper, PP_ALL)

PALL(allgather, ALLGATHER, MPIX_Allgather_init);
PALL(alltoall, ALLTOALL, MPIX_Alltoall_init);
PALL(neighbor_allgather, NEIGHBOR_ALLGATHER, MPIX_Neighbor_allgather_init);
PALL(neighbor_alltoall, NEIGHBOR_ALLTOALL, MPIX_Neighbor_alltoall_init);

#define PP_GATHERV (char *sb, MPI_Fint *sc, MPI_Fint *st, char *rb,          \
                    MPI_Fint *rcs, MPI_Fint *displs, MPI_Fint *rt,           \
                    MPI_Fint *root, MPI_Fint *comm, MPI_Fint *info,          \
                    MPI_Fint *req, MPI_Fint *ierr)
void fp_gatherv PP_GATHERV;
void fp_gatherv PP_GATHERV
{
    MPI_Request r;

    started(MPIX_Gatherv_init(fbuf(sb), *sc, T(st), fbuf(rb), rcs, displs,
                              T(rt), *root, C(comm), I(info), &r), &r, req,
            ierr);
}
PFORTRAN(gatherv, GATHERV, PP_GATHERV);

#define PP_SCATTERV (char *sb, MPI_Fint *scs, MPI_Fint *displs,              \
                     MPI_Fint *st, char *rb, MPI_Fint *rc, MPI_Fint *rt,     \
                     MPI_Fint *root, MPI_Fint *comm, MPI_Fint *info,         \
                     MPI_Fint *req, MPI_Fint *ierr)
void fp_scatterv PP_SCATTERV;
void fp_scatterv PP_SCATTERV
{
    MPI_Request r;

    started(MPIX_Scatterv_init(fbuf(sb), scs, displs, T(st), fbuf(rb), *rc,
                               T(rt), *root, C(comm), I(info), &r), &r, req,
            ierr);
}
PFORTRAN(scatterv, SCATTERV, PP_SCATTERV);

#define PP_ALLV (char *sb, MPI_Fint *sc, MPI_Fint *st, char *rb,             \
                 MPI_Fint *rcs, MPI_Fint *displs, MPI_Fint *rt,              \
                 MPI_Fint *comm, MPI_Fint *info, MPI_Fint *req,              \
                 MPI_Fint *ierr)
#define PALLV(name, upper, cfn)                                              \
    void fp_##name PP_ALLV;                                                  \
    void fp_##name PP_ALLV                                                   \
    {                                                                        \
        MPI_Request r;                                                       \
                                                                             \
        started(cfn(fbuf(sb), *sc, T(st), fbuf(rb), rcs, displs, T(rt),      \
                    C(comm), I(info), &r), &r, req, ierr);                   \
    }                                                                        \
    PFORTRAN(name, upper, PP_ALLV)

PALLV(allgatherv, ALLGATHERV, MPIX_Allgatherv_init);
PALLV(neighbor_allgatherv, NEIGHBOR_ALLGATHERV,
      MPIX_Neighbor_allgatherv_init);

#define PP_A2AV (char *sb, MPI_Fint *scs, MPI_Fint *sds, MPI_Fint *st,       \
                 char *rb, MPI_Fint *rcs, MPI_Fint *rds, MPI_Fint *rt,       \
                 MPI_Fint *comm, MPI_Fint *info, MPI_Fint *req,              \
                 MPI_Fint *ierr)
#define PA2AV(name, upper, cfn)                                              \
    void fp_##name PP_A2AV;                                                  \
    void fp_##name PP_A2AV                                                   \
    {                                                                        \
        MPI_Request r;                                                       \
                                                                             \
        started(cfn(fbuf(sb), scs, sds, T(st), fbuf(rb), rcs, rds, T(rt),    \
                    C(comm), I(info), &r), &r, req, ierr);                   \
    }                                                                        \
    PFORTRAN(name, upper, PP_A2AV)

PA2AV(alltoallv, ALLTOALLV, MPIX_Alltoallv_init);
PA2AV(neighbor_alltoallv, NEIGHBOR_ALLTOALLV, MPIX_Neighbor_alltoallv_init);

/* The w forms: the shim's init copies the datatype arrays (wrap/persistent.c);
 * stock MPI's keeps reading them, so there Open MPI's binding runs. */
#define PP_A2AW (char *sb, MPI_Fint *scs, MPI_Fint *sds, MPI_Fint *sts,      \
                 char *rb, MPI_Fint *rcs, MPI_Fint *rds, MPI_Fint *rts,      \
                 MPI_Fint *comm, MPI_Fint *info, MPI_Fint *req,              \
                 MPI_Fint *ierr)
void fp_alltoallw PP_A2AW;
void fp_alltoallw PP_A2AW
{
    MPI_Comm c = C(comm);
    MPI_Datatype *st, *rt;
    MPI_Request r = MPI_REQUEST_NULL;
    int ns, nr, rc = MPI_ERR_NO_MEM;

    if (!(shim.initialized && shim_coll_wanted(DPS_COLL_ALLTOALLW_INIT, c))) {
        void (*own) PP_A2AW;

        *(void **)&own = dlsym(RTLD_NEXT, "ompix_alltoallw_init_f");
        if (own != NULL) {
            own(sb, scs, sds, sts, rb, rcs, rds, rts, comm, info, req, ierr);
            return;
        }
    }
    shim_fw_sizes(c, 0, &ns, &nr);
    st = shim_ftypes(sts, ns);
    rt = shim_ftypes(rts, nr);
    if (st != NULL && rt != NULL) {
        rc = MPIX_Alltoallw_init(fbuf(sb), scs, sds, st, fbuf(rb), rcs, rds,
                                 rt, c, I(info), &r);
    }
    free(st);
    free(rt);
    started(rc, &r, req, ierr);
}
PFORTRAN(alltoallw, ALLTOALLW, PP_A2AW);

#define PP_NA2AW (char *sb, MPI_Fint *scs, MPI_Aint *sds, MPI_Fint *sts,     \
                  char *rb, MPI_Fint *rcs, MPI_Aint *rds, MPI_Fint *rts,     \
                  MPI_Fint *comm, MPI_Fint *info, MPI_Fint *req,             \
                  MPI_Fint *ierr)
void fp_neighbor_alltoallw PP_NA2AW;
void fp_neighbor_alltoallw PP_NA2AW
{
    MPI_Comm c = C(comm);
    MPI_Datatype *st, *rt;
    MPI_Request r = MPI_REQUEST_NULL;
    int ns, nr, rc = MPI_ERR_NO_MEM;

    if (!(shim.initialized &&
          shim_coll_wanted(DPS_COLL_NEIGHBOR_ALLTOALLW_INIT, c))) {
        void (*own) PP_NA2AW;

        *(void **)&own = dlsym(RTLD_NEXT, "ompix_neighbor_alltoallw_init_f");
        if (own != NULL) {
            own(sb, scs, sds, sts, rb, rcs, rds, rts, comm, info, req, ierr);
            return;
        }
    }
    shim_fw_sizes(c, 1, &ns, &nr);
    st = shim_ftypes(sts, ns);
    rt = shim_ftypes(rts, nr);
    if (st != NULL && rt != NULL) {
        rc = MPIX_Neighbor_alltoallw_init(fbuf(sb), scs, sds, st, fbuf(rb),
                                          rcs, rds, rt, c, I(info), &r);
    }
    free(st);
    free(rt);
    started(rc, &r, req, ierr);
}
PFORTRAN(neighbor_alltoallw, NEIGHBOR_ALLTOALLW, PP_NA2AW);

#define PP_REDUCE (char *sb, char *rb, MPI_Fint *count, MPI_Fint *type,      \
                   MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm,             \
                   MPI_Fint *info, MPI_Fint *req, MPI_Fint *ierr)
void fp_reduce PP_REDUCE;
void fp_reduce PP_REDUCE
{
    MPI_Request r;

    started(MPIX_Reduce_init(fbuf(sb), fbuf(rb), *count, T(type), O(op),
                             *root, C(comm), I(info), &r), &r, req, ierr);
}
PFORTRAN(reduce, REDUCE, PP_REDUCE);

#define PP_ALLRED (char *sb, char *rb, MPI_Fint *count, MPI_Fint *type,      \
                   MPI_Fint *op, MPI_Fint *comm, MPI_Fint *info,             \
                   MPI_Fint *req, MPI_Fint *ierr)
#define PALLRED(name, upper, cfn)                                            \
    void fp_##name PP_ALLRED;                                                \
    void fp_##name PP_ALLRED                                                 \
    {                                                                        \
        MPI_Request r;                                                       \
                                                                             \
        started(cfn(fbuf(sb), fbuf(rb), *count, T(type), O(op), C(comm),     \
                    I(info), &r), &r, req, ierr);                            \
    }                                                                        \
    PFORTRAN(name, upper, PP_ALLRED)

PALLRED(allreduce, ALLREDUCE, MPIX_Allreduce_init);
PALLRED(reduce_scatter_block, REDUCE_SCATTER_BLOCK,
        MPIX_Reduce_scatter_block_init);
PALLRED(scan, SCAN, MPIX_Scan_init);
PALLRED(exscan, EXSCAN, MPIX_Exscan_init);

#define PP_REDSC (char *sb, char *rb, MPI_Fint *rcs, MPI_Fint *type,         \
                  MPI_Fint *op, MPI_Fint *comm, MPI_Fint *info,              \
                  MPI_Fint *req, MPI_Fint *ierr)
void fp_reduce_scatter PP_REDSC;
void fp_reduce_scatter PP_REDSC
{
    MPI_Request r;

    started(MPIX_Reduce_scatter_init(fbuf(sb), fbuf(rb), rcs, T(type), O(op),
                                     C(comm), I(info), &r), &r, req, ierr);
}
PFORTRAN(reduce_scatter, REDUCE_SCATTER, PP_REDSC);

#endif /* OMPI_HAVE_MPI_EXT_PCOLLREQ */

#endif /* OPEN_MPI */
