/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fortran on Open MPI (fortran/fortran.h): the nonblocking and
 * neighbourhood collectives and their persistent forms (Open MPI 4.1's
 * MPIX_*_INIT), each binding converting its arguments and calling the
 * shim's C function. Those that only convert come from the one list
 * (common/dps_colls.h) and argument shapes, both forms from each row;
 * the w forms, which fall back to Open MPI's own binding, are written
 * out.
 */
#include "shim/fortran/fortran.h"

#if defined(OPEN_MPI) && OPEN_MPI

#include <mpi-ext.h>
#include <dlfcn.h>
#include <stdlib.h>

/*
 * The argument shapes: P_<shape>(info) the Fortran parameters (info:
 * NO_INFO, or the persistent forms' WITH_INFO), A_<shape> the C call's
 * arguments up to the communicator.
 */
#define NO_INFO
#define WITH_INFO MPI_Fint *info,

#define P_BARRIER(info) (MPI_Fint * comm, info MPI_Fint * req, MPI_Fint * ierr)
#define A_BARRIER       C(comm)

#define P_BCAST(info)                                            \
    (char *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *root, \
     MPI_Fint *comm, info MPI_Fint *req, MPI_Fint *ierr)
#define A_BCAST fbuf(buf), *count, T(type), *root, C(comm)

/* gather, scatter: one count and type a side, a root. */
#define P_ROOTED(info)                                                 \
    (char *sb, MPI_Fint *sc, MPI_Fint *st, char *rb, MPI_Fint *rc,     \
     MPI_Fint *rt, MPI_Fint *root, MPI_Fint *comm, info MPI_Fint *req, \
     MPI_Fint *ierr)
#define A_ROOTED fbuf(sb), *sc, T(st), fbuf(rb), *rc, T(rt), *root, C(comm)

/* allgather, alltoall, their neighbourhood forms. */
#define P_ALL(info)                                                \
    (char *sb, MPI_Fint *sc, MPI_Fint *st, char *rb, MPI_Fint *rc, \
     MPI_Fint *rt, MPI_Fint *comm, info MPI_Fint *req, MPI_Fint *ierr)
#define A_ALL fbuf(sb), *sc, T(st), fbuf(rb), *rc, T(rt), C(comm)

#define P_GATHERV(info)                                              \
    (char *sb, MPI_Fint *sc, MPI_Fint *st, char *rb, MPI_Fint *rcs,  \
     MPI_Fint *displs, MPI_Fint *rt, MPI_Fint *root, MPI_Fint *comm, \
     info MPI_Fint *req, MPI_Fint *ierr)
#define A_GATHERV \
    fbuf(sb), *sc, T(st), fbuf(rb), rcs, displs, T(rt), *root, C(comm)

#define P_SCATTERV(info)                                                \
    (char *sb, MPI_Fint *scs, MPI_Fint *displs, MPI_Fint *st, char *rb, \
     MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *root, MPI_Fint *comm,        \
     info MPI_Fint *req, MPI_Fint *ierr)
#define A_SCATTERV \
    fbuf(sb), scs, displs, T(st), fbuf(rb), *rc, T(rt), *root, C(comm)

/* allgatherv and its neighbourhood form. */
#define P_ALLV(info)                                                     \
    (char *sb, MPI_Fint *sc, MPI_Fint *st, char *rb, MPI_Fint *rcs,      \
     MPI_Fint *displs, MPI_Fint *rt, MPI_Fint *comm, info MPI_Fint *req, \
     MPI_Fint *ierr)
#define A_ALLV fbuf(sb), *sc, T(st), fbuf(rb), rcs, displs, T(rt), C(comm)

/* alltoallv and its neighbourhood form. */
#define P_A2AV(info)                                                 \
    (char *sb, MPI_Fint *scs, MPI_Fint *sds, MPI_Fint *st, char *rb, \
     MPI_Fint *rcs, MPI_Fint *rds, MPI_Fint *rt, MPI_Fint *comm,     \
     info MPI_Fint *req, MPI_Fint *ierr)
#define A_A2AV fbuf(sb), scs, sds, T(st), fbuf(rb), rcs, rds, T(rt), C(comm)

#define P_REDUCE(info)                                                  \
    (char *sb, char *rb, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op, \
     MPI_Fint *root, MPI_Fint *comm, info MPI_Fint *req, MPI_Fint *ierr)
#define A_REDUCE fbuf(sb), fbuf(rb), *count, T(type), O(op), *root, C(comm)

/* allreduce, reduce_scatter_block, scan, exscan. */
#define P_ALLRED(info)                                                  \
    (char *sb, char *rb, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op, \
     MPI_Fint *comm, info MPI_Fint *req, MPI_Fint *ierr)
#define A_ALLRED fbuf(sb), fbuf(rb), *count, T(type), O(op), C(comm)

#define P_REDSC(info)                                                 \
    (char *sb, char *rb, MPI_Fint *rcs, MPI_Fint *type, MPI_Fint *op, \
     MPI_Fint *comm, info MPI_Fint *req, MPI_Fint *ierr)
#define A_REDSC fbuf(sb), fbuf(rb), rcs, T(type), O(op), C(comm)

/* The w forms: counts, displacements (int, or MPI_Aint for the
 * neighbourhood one) and datatypes per block. */
#define P_A2AW(info)                                                  \
    (char *sb, MPI_Fint *scs, MPI_Fint *sds, MPI_Fint *sts, char *rb, \
     MPI_Fint *rcs, MPI_Fint *rds, MPI_Fint *rts, MPI_Fint *comm,     \
     info MPI_Fint *req, MPI_Fint *ierr)
#define P_NA2AW(info)                                                 \
    (char *sb, MPI_Fint *scs, MPI_Aint *sds, MPI_Fint *sts, char *rb, \
     MPI_Fint *rcs, MPI_Aint *rds, MPI_Fint *rts, MPI_Fint *comm,     \
     info MPI_Fint *req, MPI_Fint *ierr)

/*
 * The rows of common/dps_colls.h that only convert, all but the w forms:
 * FROW expands each as FX(name, Name, NAME, shape), FX defined at each
 * use; name, Name and NAME are the collective's name as the Fortran
 * bindings, the C persistent init and mpif.h's upper case spell it.
 * Ireduce_scatter_block's Fortran arguments are Iallreduce's.
 */
#define P_REDSCB P_ALLRED
#define A_REDSCB A_ALLRED
#define FROW(ID, name, Name, family, shape, entry) \
    FROW_##shape(FX, name, Name, ID, shape)
#define FROW_CONVERT(X, ...) X(__VA_ARGS__)
#define FROW_BARRIER         FROW_CONVERT
#define FROW_BCAST           FROW_CONVERT
#define FROW_ROOTED          FROW_CONVERT
#define FROW_GATHERV         FROW_CONVERT
#define FROW_SCATTERV        FROW_CONVERT
#define FROW_ALL             FROW_CONVERT
#define FROW_ALLV            FROW_CONVERT
#define FROW_A2AV            FROW_CONVERT
#define FROW_REDUCE          FROW_CONVERT
#define FROW_ALLRED          FROW_CONVERT
#define FROW_REDSC           FROW_CONVERT
#define FROW_REDSCB          FROW_CONVERT
#define FROW_A2AW(...)
#define FROW_NA2AW(...)

/* Fortran datatype arrays as C ones (n entries); NULL: out of memory. */
static MPI_Datatype *ftypes(const MPI_Fint *f, int n)
{
    MPI_Datatype *c = malloc(sizeof(*c) * (size_t)(n > 0 ? n : 1));

    for (int i = 0; c != NULL && i < n; i++) {
        c[i] = PMPI_Type_f2c(f[i]);
    }
    return c;
}

/* A w form's datatype arrays as C ones, for the call to read (as many
 * entries on each side as comm has ranks, or neighbours). MPI_SUCCESS,
 * or MPI_ERR_NO_MEM (both NULL). */
static int w_types(MPI_Comm comm, int neighbor, const MPI_Fint *sts,
                   const MPI_Fint *rts, MPI_Datatype **st, MPI_Datatype **rt)
{
    int cart, ns = 0, nr = 0, *s = NULL, *d = NULL;

    if (!neighbor) {
        PMPI_Comm_size(comm, &ns);
        nr = ns;
    } else if (shim_neighbors(comm, &nr, &s, &ns, &d, &cart) == 0) {
        free(s);
        free(d);
    }
    *st = ftypes(sts, ns);
    *rt = ftypes(rts, nr);
    if (*st == NULL || *rt == NULL) {
        free(*st);
        free(*rt);
        *st = *rt = NULL;
        return MPI_ERR_NO_MEM;
    }
    return MPI_SUCCESS;
}

/* ---- nonblocking -------------------------------------------------------- */

/* f_iNAME: MPI_INAME with its arguments converted; and its aliases. */
#define NONBLOCKING(name, Name, NAME, shape)                \
    void f_i##name P_##shape(NO_INFO);                      \
    void f_i##name P_##shape(NO_INFO)                       \
    {                                                       \
        MPI_Request r;                                      \
                                                            \
        started(MPI_I##name(A_##shape, &r), &r, req, ierr); \
    }                                                       \
    FORTRAN(i##name, I##NAME, P_##shape(NO_INFO));

#define FX NONBLOCKING
DPS_COLLS(FROW)
#undef FX

/*
 * The w forms' datatype arrays are converted for the call: the shim
 * reads them there. Stock MPI's (Open MPI's libnbc) reads them until
 * completion, so where the shim would not offload, Open MPI's own binding
 * runs instead (it keeps them).
 */
static int w_offloads(int coll, MPI_Comm comm)
{
    shim_ctx_t x = shim_ctx_app();
    int        why;

    return shim.initialized && shim_coll_wanted(&x, coll, comm, &why) &&
           shim_any_size(&why);
}

void f_ialltoallw P_A2AW(NO_INFO);
void f_ialltoallw P_A2AW(NO_INFO)
{
    MPI_Comm      c = C(comm);
    MPI_Datatype *st, *rt;
    MPI_Request   r = MPI_REQUEST_NULL;
    int           rc;

    if (!w_offloads(DPS_COLL_ALLTOALLW, c)) {
        void(*own) P_A2AW(NO_INFO);

        *(void **)&own = dlsym(RTLD_NEXT, "ompi_ialltoallw_f");
        if (own != NULL) {
            own(sb, scs, sds, sts, rb, rcs, rds, rts, comm, req, ierr);
            return;
        }
    }
    rc = w_types(c, 0, sts, rts, &st, &rt);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Ialltoallw(fbuf(sb), scs, sds, st, fbuf(rb), rcs, rds, rt, c,
                            &r);
    }
    free(st);
    free(rt);
    started(rc, &r, req, ierr);
}
FORTRAN(ialltoallw, IALLTOALLW, P_A2AW(NO_INFO));

void f_ineighbor_alltoallw P_NA2AW(NO_INFO);
void f_ineighbor_alltoallw P_NA2AW(NO_INFO)
{
    MPI_Comm      c = C(comm);
    MPI_Datatype *st, *rt;
    MPI_Request   r = MPI_REQUEST_NULL;
    int           rc;

    if (!w_offloads(DPS_COLL_NEIGHBOR_ALLTOALLW, c)) {
        void(*own) P_NA2AW(NO_INFO);

        *(void **)&own = dlsym(RTLD_NEXT, "ompi_ineighbor_alltoallw_f");
        if (own != NULL) {
            own(sb, scs, sds, sts, rb, rcs, rds, rts, comm, req, ierr);
            return;
        }
    }
    rc = w_types(c, 1, sts, rts, &st, &rt);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Ineighbor_alltoallw(fbuf(sb), scs, sds, st, fbuf(rb), rcs,
                                     rds, rt, c, &r);
    }
    free(st);
    free(rt);
    started(rc, &r, req, ierr);
}
FORTRAN(ineighbor_alltoallw, INEIGHBOR_ALLTOALLW, P_NA2AW(NO_INFO));

/* ---- persistent (Open MPI 4.1's MPIX_*_init) ---------------------------- */

#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ

#define I(x) PMPI_Info_f2c(*(x))

/* ompix_NAME_init_f (what mpi_f08 calls) and the mpif.h / `use mpi_ext`
 * spellings. */
#define PFORTRAN(name, upper, params)          \
    SHIM_API void ompix_##name##_init_f params \
        __attribute__((alias("fp_" #name)));   \
    SHIM_API void mpix_##name##_init_ params   \
        __attribute__((alias("fp_" #name)));   \
    SHIM_API void mpix_##name##_init__ params  \
        __attribute__((alias("fp_" #name)));   \
    SHIM_API void mpix_##name##_init params    \
        __attribute__((alias("fp_" #name)));   \
    SHIM_API void MPIX_##upper##_INIT params   \
        __attribute__((alias("fp_" #name)))

/* fp_NAME: MPIX_Name_init with its arguments converted; its aliases. */
#define PERSISTENT(name, Name, NAME, shape)                                 \
    void fp_##name P_##shape(WITH_INFO);                                    \
    void fp_##name P_##shape(WITH_INFO)                                     \
    {                                                                       \
        MPI_Request r;                                                      \
                                                                            \
        started(MPIX_##Name##_init(A_##shape, I(info), &r), &r, req, ierr); \
    }                                                                       \
    PFORTRAN(name, NAME, P_##shape(WITH_INFO));

#define FX PERSISTENT
DPS_COLLS(FROW)
#undef FX

/* The w forms: the shim's init copies the datatype arrays
 * (pers/init.c); stock MPI's keeps reading them, so there Open
 * MPI's binding runs. */
/* Whether the shim may offload the persistent form coll on comm. */
static int p_wanted(int coll, MPI_Comm comm)
{
    shim_ctx_t x = shim_ctx_app();
    int        why;

    return shim.initialized && shim_coll_wanted(&x, coll, comm, &why);
}

void fp_alltoallw P_A2AW(WITH_INFO);
void fp_alltoallw P_A2AW(WITH_INFO)
{
    MPI_Comm      c = C(comm);
    MPI_Datatype *st, *rt;
    MPI_Request   r = MPI_REQUEST_NULL;
    int           rc;

    if (!p_wanted(DPS_COLL_ALLTOALLW_INIT, c)) {
        void(*own) P_A2AW(WITH_INFO);

        *(void **)&own = dlsym(RTLD_NEXT, "ompix_alltoallw_init_f");
        if (own != NULL) {
            own(sb, scs, sds, sts, rb, rcs, rds, rts, comm, info, req, ierr);
            return;
        }
    }
    rc = w_types(c, 0, sts, rts, &st, &rt);
    if (rc == MPI_SUCCESS) {
        rc = MPIX_Alltoallw_init(fbuf(sb), scs, sds, st, fbuf(rb), rcs, rds,
                                 rt, c, I(info), &r);
    }
    free(st);
    free(rt);
    started(rc, &r, req, ierr);
}
PFORTRAN(alltoallw, ALLTOALLW, P_A2AW(WITH_INFO));

void fp_neighbor_alltoallw P_NA2AW(WITH_INFO);
void fp_neighbor_alltoallw P_NA2AW(WITH_INFO)
{
    MPI_Comm      c = C(comm);
    MPI_Datatype *st, *rt;
    MPI_Request   r = MPI_REQUEST_NULL;
    int           rc;

    if (!p_wanted(DPS_COLL_NEIGHBOR_ALLTOALLW_INIT, c)) {
        void(*own) P_NA2AW(WITH_INFO);

        *(void **)&own = dlsym(RTLD_NEXT, "ompix_neighbor_alltoallw_init_f");
        if (own != NULL) {
            own(sb, scs, sds, sts, rb, rcs, rds, rts, comm, info, req, ierr);
            return;
        }
    }
    rc = w_types(c, 1, sts, rts, &st, &rt);
    if (rc == MPI_SUCCESS) {
        rc = MPIX_Neighbor_alltoallw_init(fbuf(sb), scs, sds, st, fbuf(rb),
                                          rcs, rds, rt, c, I(info), &r);
    }
    free(st);
    free(rt);
    started(rc, &r, req, ierr);
}
PFORTRAN(neighbor_alltoallw, NEIGHBOR_ALLTOALLW, P_NA2AW(WITH_INFO));

#endif /* OMPI_HAVE_MPI_EXT_PCOLLREQ */

#endif /* OPEN_MPI */
