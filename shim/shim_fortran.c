/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fortran programs on Open MPI. Open MPI's Fortran bindings (mpif.h and
 * `use mpi`: mpi_ialltoall_ and its other spellings; `use mpi_f08`:
 * ompi_ialltoall_f, which the f08 module calls in libmpi_mpifh) call the
 * C PMPI_ functions themselves, past any C wrapper. Defined here, in the
 * preloaded library, these symbols come first: they convert the Fortran
 * arguments (handles, the MPI_IN_PLACE / MPI_BOTTOM sentinels, status
 * and ignore arrays, 1-based indices, LOGICAL flags) and call the shim's
 * C functions, so that a Fortran program's collectives are offloaded and
 * its completion calls drive offloaded requests, whichever language
 * started them.
 *
 * MPICH's bindings for mpif.h and `use mpi` call the C MPI_ functions,
 * which the shim wraps already; so do its mpi_f08 collectives. Its
 * mpi_f08 set-up, tear-down and completion calls (mpi_wait_f08_ ...) and
 * its MPI_Ibarrier and MPI_Barrier_init call PMPI_ ones: those are
 * defined here for MPICH.
 */
#include "coll.h"

#if defined(OPEN_MPI) && OPEN_MPI

#include <mpi-ext.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(MPI_Fint) == sizeof(int), "MPI_Fint is an int");

/* MPI_STATUS_SIZE of Open MPI's Fortran (mpif-config.h): a status is the
 * C one's integers. */
#define FSTATUS_SIZE ((size_t)(sizeof(MPI_Status) / sizeof(MPI_Fint)))

/* Addresses of Open MPI's Fortran sentinels (common blocks in libmpi,
 * one per name mangling). */
static struct {
    pthread_once_t once;
    const void    *in_place[4], *bottom[4], *st_ignore[4], *sts_ignore[4];
} fs = {PTHREAD_ONCE_INIT, {0}, {0}, {0}, {0}};

static void fs_load(const void **v, const char *base)
{
    char n[64];

    snprintf(n, sizeof(n), "%s", base);
    v[0] = dlsym(RTLD_DEFAULT, n);
    snprintf(n, sizeof(n), "%s_", base);
    v[1] = dlsym(RTLD_DEFAULT, n);
    snprintf(n, sizeof(n), "%s__", base);
    v[2] = dlsym(RTLD_DEFAULT, n);
    for (size_t i = 0; i < strlen(base) && i < sizeof(n) - 1; i++) {
        n[i] = (char)(base[i] >= 'a' && base[i] <= 'z' ? base[i] - 32
                                                       : base[i]);
    }
    n[strlen(base) < sizeof(n) ? strlen(base) : sizeof(n) - 1] = '\0';
    v[3] = dlsym(RTLD_DEFAULT, n);
}

static void fs_init(void)
{
    fs_load(fs.in_place, "mpi_fortran_in_place");
    fs_load(fs.bottom, "mpi_fortran_bottom");
    fs_load(fs.st_ignore, "mpi_fortran_status_ignore");
    fs_load(fs.sts_ignore, "mpi_fortran_statuses_ignore");
}

static int is_any(const void *p, const void *const *v)
{
    pthread_once(&fs.once, fs_init);
    return p != NULL && (p == v[0] || p == v[1] || p == v[2] || p == v[3]);
}

/* A Fortran buffer argument as C sees it. */
static void *fbuf(void *p)
{
    if (is_any(p, fs.in_place)) {
        return MPI_IN_PLACE;
    }
    if (is_any(p, fs.bottom)) {
        return MPI_BOTTOM;
    }
    return p;
}

static int st_ignored(const MPI_Fint *s)
{
    return s == NULL || s == MPI_F_STATUS_IGNORE || is_any(s, fs.st_ignore);
}

static int sts_ignored(const MPI_Fint *s)
{
    return s == NULL || s == MPI_F_STATUSES_IGNORE ||
           is_any(s, fs.sts_ignore);
}

static void fset(MPI_Fint *ierr, int rc)
{
    if (ierr != NULL) {   /* optional in mpi_f08 */
        *ierr = rc;
    }
}

/* A request the call started, to the Fortran side. By address: the
 * call that sets it is an argument of the same call, evaluated in no
 * particular order. */
static void started(int rc, const MPI_Request *r, MPI_Fint *req,
                    MPI_Fint *ierr)
{
    if (rc == MPI_SUCCESS) {
        *req = PMPI_Request_c2f(*r);
    }
    fset(ierr, rc);
}

#define T(x) PMPI_Type_f2c(*(x))
#define C(x) PMPI_Comm_f2c(*(x))
#define O(x) PMPI_Op_f2c(*(x))

/*
 * f_NAME is the implementation; ompi_NAME_f (what mpi_f08 calls),
 * mpi_NAME_, mpi_NAME__, mpi_NAME and MPI_UPPER (mpif.h and `use mpi`
 * under each compiler's mangling) are its aliases.
 */
#define FORTRAN(name, upper, params)                                       \
    SHIM_API void ompi_##name##_f params __attribute__((alias("f_" #name)));\
    SHIM_API void mpi_##name##_ params __attribute__((alias("f_" #name))); \
    SHIM_API void mpi_##name##__ params __attribute__((alias("f_" #name)));\
    SHIM_API void mpi_##name params __attribute__((alias("f_" #name)));   \
    SHIM_API void MPI_##upper params __attribute__((alias("f_" #name)))

/* Open MPI's mpi_f08 reaches the tests and MPI_Request_get_status through
 * the Fortran profiling names (pmpi_test_ ...): those too. */
#define FORTRAN_P(name, upper, params)                                     \
    FORTRAN(name, upper, params);                                          \
    SHIM_API void pmpi_##name##_ params __attribute__((alias("f_" #name)))

/* ---- set-up and tear-down ---------------------------------------------- */

/* The shim starts in MPI_Init and reports in MPI_Finalize (shim_init.c):
 * a Fortran program reaches them here. */
#define P_INIT (MPI_Fint *ierr)
void f_init P_INIT;
void f_init P_INIT
{
    fset(ierr, MPI_Init(NULL, NULL));
}
FORTRAN(init, INIT, P_INIT);

#define P_INIT_THREAD (MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
void f_init_thread P_INIT_THREAD;
void f_init_thread P_INIT_THREAD
{
    int prov = MPI_THREAD_SINGLE, rc = MPI_Init_thread(NULL, NULL, *required,
                                                       &prov);

    *provided = prov;
    fset(ierr, rc);
}
FORTRAN(init_thread, INIT_THREAD, P_INIT_THREAD);

void f_finalize P_INIT;
void f_finalize P_INIT
{
    fset(ierr, MPI_Finalize());
}
FORTRAN(finalize, FINALIZE, P_INIT);

/* ---- collectives ------------------------------------------------------ */

#define P_BARRIER (MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
void f_ibarrier P_BARRIER;
void f_ibarrier P_BARRIER
{
    MPI_Request r;

    started(MPI_Ibarrier(C(comm), &r), &r, req, ierr);
}
FORTRAN(ibarrier, IBARRIER, P_BARRIER);

#define P_BCAST (char *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *root, \
                 MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
void f_ibcast P_BCAST;
void f_ibcast P_BCAST
{
    MPI_Request r;

    started(MPI_Ibcast(fbuf(buf), *count, T(type), *root, C(comm), &r), &r,
            req, ierr);
}
FORTRAN(ibcast, IBCAST, P_BCAST);

/* gather, scatter: one count and type a side, a root. */
#define P_ROOTED (char *sb, MPI_Fint *sc, MPI_Fint *st, char *rb,           \
                  MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *root,               \
                  MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
#define ROOTED(name, upper, cfn)                                           \
    void f_##name P_ROOTED;                                                \
    void f_##name P_ROOTED                                                 \
    {                                                                      \
        MPI_Request r;                                                     \
                                                                           \
        started(cfn(fbuf(sb), *sc, T(st), fbuf(rb), *rc, T(rt), *root,     \
                    C(comm), &r), &r, req, ierr);                           \
    }                                                                      \
    FORTRAN(name, upper, P_ROOTED)

ROOTED(igather, IGATHER, MPI_Igather);
ROOTED(iscatter, ISCATTER, MPI_Iscatter);

/* allgather, alltoall, their neighbourhood forms. */
#define P_ALL (char *sb, MPI_Fint *sc, MPI_Fint *st, char *rb, MPI_Fint *rc, \
               MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
#define ALL(name, upper, cfn)                                              \
    void f_##name P_ALL;                                                   \
    void f_##name P_ALL                                                    \
    {                                                                      \
        MPI_Request r;                                                     \
                                                                           \
        started(cfn(fbuf(sb), *sc, T(st), fbuf(rb), *rc, T(rt), C(comm),   \
                    &r), &r, req, ierr);                                    \
    }                                                                      \
    FORTRAN(name, upper, P_ALL)

ALL(iallgather, IALLGATHER, MPI_Iallgather);
ALL(ialltoall, IALLTOALL, MPI_Ialltoall);
ALL(ineighbor_allgather, INEIGHBOR_ALLGATHER, MPI_Ineighbor_allgather);
ALL(ineighbor_alltoall, INEIGHBOR_ALLTOALL, MPI_Ineighbor_alltoall);

#define P_GATHERV (char *sb, MPI_Fint *sc, MPI_Fint *st, char *rb,          \
                   MPI_Fint *rcs, MPI_Fint *displs, MPI_Fint *rt,           \
                   MPI_Fint *root, MPI_Fint *comm, MPI_Fint *req,           \
                   MPI_Fint *ierr)
void f_igatherv P_GATHERV;
void f_igatherv P_GATHERV
{
    MPI_Request r;

    started(MPI_Igatherv(fbuf(sb), *sc, T(st), fbuf(rb), rcs, displs, T(rt),
                         *root, C(comm), &r), &r, req, ierr);
}
FORTRAN(igatherv, IGATHERV, P_GATHERV);

#define P_SCATTERV (char *sb, MPI_Fint *scs, MPI_Fint *displs, MPI_Fint *st, \
                    char *rb, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *root,     \
                    MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
void f_iscatterv P_SCATTERV;
void f_iscatterv P_SCATTERV
{
    MPI_Request r;

    started(MPI_Iscatterv(fbuf(sb), scs, displs, T(st), fbuf(rb), *rc,
                          T(rt), *root, C(comm), &r), &r, req, ierr);
}
FORTRAN(iscatterv, ISCATTERV, P_SCATTERV);

#define P_ALLV (char *sb, MPI_Fint *sc, MPI_Fint *st, char *rb,             \
                MPI_Fint *rcs, MPI_Fint *displs, MPI_Fint *rt,              \
                MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
#define ALLV(name, upper, cfn)                                             \
    void f_##name P_ALLV;                                                  \
    void f_##name P_ALLV                                                   \
    {                                                                      \
        MPI_Request r;                                                     \
                                                                           \
        started(cfn(fbuf(sb), *sc, T(st), fbuf(rb), rcs, displs, T(rt),    \
                    C(comm), &r), &r, req, ierr);                           \
    }                                                                      \
    FORTRAN(name, upper, P_ALLV)

ALLV(iallgatherv, IALLGATHERV, MPI_Iallgatherv);
ALLV(ineighbor_allgatherv, INEIGHBOR_ALLGATHERV, MPI_Ineighbor_allgatherv);

#define P_A2AV (char *sb, MPI_Fint *scs, MPI_Fint *sds, MPI_Fint *st,        \
                char *rb, MPI_Fint *rcs, MPI_Fint *rds, MPI_Fint *rt,        \
                MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
#define A2AV(name, upper, cfn)                                             \
    void f_##name P_A2AV;                                                  \
    void f_##name P_A2AV                                                   \
    {                                                                      \
        MPI_Request r;                                                     \
                                                                           \
        started(cfn(fbuf(sb), scs, sds, T(st), fbuf(rb), rcs, rds, T(rt),  \
                    C(comm), &r), &r, req, ierr);                           \
    }                                                                      \
    FORTRAN(name, upper, P_A2AV)

A2AV(ialltoallv, IALLTOALLV, MPI_Ialltoallv);
A2AV(ineighbor_alltoallv, INEIGHBOR_ALLTOALLV, MPI_Ineighbor_alltoallv);

/* Fortran datatype arrays to C ones (n entries). NULL: out of memory. */
static MPI_Datatype *types_c(const MPI_Fint *f, int n)
{
    MPI_Datatype *c = malloc(sizeof(*c) * (size_t)(n > 0 ? n : 1));

    for (int i = 0; c != NULL && i < n; i++) {
        c[i] = PMPI_Type_f2c(f[i]);
    }
    return c;
}

/* How many entries the w arrays have on each side. */
static void w_sizes(MPI_Comm comm, int neighbor, int *ns, int *nr)
{
    int cart, *s = NULL, *d = NULL;

    *ns = *nr = 0;
    if (!neighbor) {
        PMPI_Comm_size(comm, ns);
        *nr = *ns;
    } else if (shim_neighbors(comm, nr, &s, ns, &d, &cart) == 0) {
        free(s);
        free(d);
    }
}

/*
 * The w variants' datatype arrays are converted for the call: the shim
 * reads them there. Stock MPI's (Open MPI's libnbc) reads them until
 * completion, so where the shim would not offload, Open MPI's own binding
 * runs instead (it keeps them).
 */
static int w_offloads(int coll, MPI_Comm comm)
{
    return shim.initialized && shim_coll_wanted(coll, comm) &&
           shim_any_size();
}

#define P_A2AW (char *sb, MPI_Fint *scs, MPI_Fint *sds, MPI_Fint *sts,       \
                char *rb, MPI_Fint *rcs, MPI_Fint *rds, MPI_Fint *rts,       \
                MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
void f_ialltoallw P_A2AW;
void f_ialltoallw P_A2AW
{
    MPI_Comm c = C(comm);
    MPI_Datatype *st, *rt;
    MPI_Request r = MPI_REQUEST_NULL;
    int ns, nr, rc = MPI_ERR_NO_MEM;

    if (!w_offloads(DPS_COLL_ALLTOALLW, c)) {
        void (*own) P_A2AW;

        *(void **)&own = dlsym(RTLD_NEXT, "ompi_ialltoallw_f");
        if (own != NULL) {
            own(sb, scs, sds, sts, rb, rcs, rds, rts, comm, req, ierr);
            return;
        }
    }
    w_sizes(c, 0, &ns, &nr);
    st = types_c(sts, ns);
    rt = types_c(rts, nr);
    if (st != NULL && rt != NULL) {
        rc = MPI_Ialltoallw(fbuf(sb), scs, sds, st, fbuf(rb), rcs, rds, rt, c,
                            &r);
    }
    free(st);
    free(rt);
    started(rc, &r, req, ierr);
}
FORTRAN(ialltoallw, IALLTOALLW, P_A2AW);

#define P_NA2AW (char *sb, MPI_Fint *scs, MPI_Aint *sds, MPI_Fint *sts,      \
                 char *rb, MPI_Fint *rcs, MPI_Aint *rds, MPI_Fint *rts,      \
                 MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
void f_ineighbor_alltoallw P_NA2AW;
void f_ineighbor_alltoallw P_NA2AW
{
    MPI_Comm c = C(comm);
    MPI_Datatype *st, *rt;
    MPI_Request r = MPI_REQUEST_NULL;
    int ns, nr, rc = MPI_ERR_NO_MEM;

    if (!w_offloads(DPS_COLL_NEIGHBOR_ALLTOALLW, c)) {
        void (*own) P_NA2AW;

        *(void **)&own = dlsym(RTLD_NEXT, "ompi_ineighbor_alltoallw_f");
        if (own != NULL) {
            own(sb, scs, sds, sts, rb, rcs, rds, rts, comm, req, ierr);
            return;
        }
    }
    w_sizes(c, 1, &ns, &nr);
    st = types_c(sts, ns);
    rt = types_c(rts, nr);
    if (st != NULL && rt != NULL) {
        rc = MPI_Ineighbor_alltoallw(fbuf(sb), scs, sds, st, fbuf(rb), rcs,
                                     rds, rt, c, &r);
    }
    free(st);
    free(rt);
    started(rc, &r, req, ierr);
}
FORTRAN(ineighbor_alltoallw, INEIGHBOR_ALLTOALLW, P_NA2AW);

/* Reductions. */
#define P_REDUCE (char *sb, char *rb, MPI_Fint *count, MPI_Fint *type,      \
                  MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm,             \
                  MPI_Fint *req, MPI_Fint *ierr)
void f_ireduce P_REDUCE;
void f_ireduce P_REDUCE
{
    MPI_Request r;

    started(MPI_Ireduce(fbuf(sb), fbuf(rb), *count, T(type), O(op), *root,
                        C(comm), &r), &r, req, ierr);
}
FORTRAN(ireduce, IREDUCE, P_REDUCE);

#define P_ALLRED (char *sb, char *rb, MPI_Fint *count, MPI_Fint *type,      \
                  MPI_Fint *op, MPI_Fint *comm, MPI_Fint *req,              \
                  MPI_Fint *ierr)
#define ALLRED(name, upper, cfn)                                           \
    void f_##name P_ALLRED;                                                \
    void f_##name P_ALLRED                                                 \
    {                                                                      \
        MPI_Request r;                                                     \
                                                                           \
        started(cfn(fbuf(sb), fbuf(rb), *count, T(type), O(op), C(comm),   \
                    &r), &r, req, ierr);                                    \
    }                                                                      \
    FORTRAN(name, upper, P_ALLRED)

ALLRED(iallreduce, IALLREDUCE, MPI_Iallreduce);
ALLRED(ireduce_scatter_block, IREDUCE_SCATTER_BLOCK,
       MPI_Ireduce_scatter_block);
ALLRED(iscan, ISCAN, MPI_Iscan);
ALLRED(iexscan, IEXSCAN, MPI_Iexscan);

#define P_REDSC (char *sb, char *rb, MPI_Fint *rcs, MPI_Fint *type,         \
                 MPI_Fint *op, MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
void f_ireduce_scatter P_REDSC;
void f_ireduce_scatter P_REDSC
{
    MPI_Request r;

    started(MPI_Ireduce_scatter(fbuf(sb), fbuf(rb), rcs, T(type), O(op),
                                C(comm), &r), &r, req, ierr);
}
FORTRAN(ireduce_scatter, IREDUCE_SCATTER, P_REDSC);

/* ---- persistent collectives (Open MPI 4.1's MPIX_*_init) -------------- */

#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ

/* ompix_NAME_init_f (what mpi_f08 calls) and the mpif.h / `use mpi_ext`
 * spellings. */
#define PFORTRAN(name, upper, params)                                      \
    SHIM_API void ompix_##name##_init_f params                             \
        __attribute__((alias("fp_" #name)));                               \
    SHIM_API void mpix_##name##_init_ params                               \
        __attribute__((alias("fp_" #name)));                               \
    SHIM_API void mpix_##name##_init__ params                              \
        __attribute__((alias("fp_" #name)));                               \
    SHIM_API void mpix_##name##_init params                                \
        __attribute__((alias("fp_" #name)));                               \
    SHIM_API void MPIX_##upper##_INIT params                               \
        __attribute__((alias("fp_" #name)))

#define I(x) PMPI_Info_f2c(*(x))

#define PP_BARRIER (MPI_Fint *comm, MPI_Fint *info, MPI_Fint *req,          \
                    MPI_Fint *ierr)
void fp_barrier PP_BARRIER;
void fp_barrier PP_BARRIER
{
    MPI_Request r;

    started(MPIX_Barrier_init(C(comm), I(info), &r), &r, req, ierr);
}
PFORTRAN(barrier, BARRIER, PP_BARRIER);

#define PP_BCAST (char *buf, MPI_Fint *count, MPI_Fint *type,               \
                  MPI_Fint *root, MPI_Fint *comm, MPI_Fint *info,           \
                  MPI_Fint *req, MPI_Fint *ierr)
void fp_bcast PP_BCAST;
void fp_bcast PP_BCAST
{
    MPI_Request r;

    started(MPIX_Bcast_init(fbuf(buf), *count, T(type), *root, C(comm),
                            I(info), &r), &r, req, ierr);
}
PFORTRAN(bcast, BCAST, PP_BCAST);

#define PP_ROOTED (char *sb, MPI_Fint *sc, MPI_Fint *st, char *rb,          \
                   MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *root,              \
                   MPI_Fint *comm, MPI_Fint *info, MPI_Fint *req,           \
                   MPI_Fint *ierr)
#define PROOTED(name, upper, cfn)                                          \
    void fp_##name PP_ROOTED;                                              \
    void fp_##name PP_ROOTED                                               \
    {                                                                      \
        MPI_Request r;                                                     \
                                                                           \
        started(cfn(fbuf(sb), *sc, T(st), fbuf(rb), *rc, T(rt), *root,     \
                    C(comm), I(info), &r), &r, req, ierr);                 \
    }                                                                      \
    PFORTRAN(name, upper, PP_ROOTED)

PROOTED(gather, GATHER, MPIX_Gather_init);
PROOTED(scatter, SCATTER, MPIX_Scatter_init);

#define PP_ALL (char *sb, MPI_Fint *sc, MPI_Fint *st, char *rb,             \
                MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *info, \
                MPI_Fint *req, MPI_Fint *ierr)
#define PALL(name, upper, cfn)                                             \
    void fp_##name PP_ALL;                                                 \
    void fp_##name PP_ALL                                                  \
    {                                                                      \
        MPI_Request r;                                                     \
                                                                           \
        started(cfn(fbuf(sb), *sc, T(st), fbuf(rb), *rc, T(rt), C(comm),   \
                    I(info), &r), &r, req, ierr);                          \
    }                                                                      \
    PFORTRAN(name, upper, PP_ALL)

PALL(allgather, ALLGATHER, MPIX_Allgather_init);
PALL(alltoall, ALLTOALL, MPIX_Alltoall_init);
PALL(neighbor_allgather, NEIGHBOR_ALLGATHER, MPIX_Neighbor_allgather_init);
PALL(neighbor_alltoall, NEIGHBOR_ALLTOALL, MPIX_Neighbor_alltoall_init);

#define PP_GATHERV (char *sb, MPI_Fint *sc, MPI_Fint *st, char *rb,         \
                    MPI_Fint *rcs, MPI_Fint *displs, MPI_Fint *rt,          \
                    MPI_Fint *root, MPI_Fint *comm, MPI_Fint *info,         \
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

#define PP_SCATTERV (char *sb, MPI_Fint *scs, MPI_Fint *displs,             \
                     MPI_Fint *st, char *rb, MPI_Fint *rc, MPI_Fint *rt,    \
                     MPI_Fint *root, MPI_Fint *comm, MPI_Fint *info,        \
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

#define PP_ALLV (char *sb, MPI_Fint *sc, MPI_Fint *st, char *rb,            \
                 MPI_Fint *rcs, MPI_Fint *displs, MPI_Fint *rt,             \
                 MPI_Fint *comm, MPI_Fint *info, MPI_Fint *req,             \
                 MPI_Fint *ierr)
#define PALLV(name, upper, cfn)                                            \
    void fp_##name PP_ALLV;                                                \
    void fp_##name PP_ALLV                                                 \
    {                                                                      \
        MPI_Request r;                                                     \
                                                                           \
        started(cfn(fbuf(sb), *sc, T(st), fbuf(rb), rcs, displs, T(rt),    \
                    C(comm), I(info), &r), &r, req, ierr);                 \
    }                                                                      \
    PFORTRAN(name, upper, PP_ALLV)

PALLV(allgatherv, ALLGATHERV, MPIX_Allgatherv_init);
PALLV(neighbor_allgatherv, NEIGHBOR_ALLGATHERV,
      MPIX_Neighbor_allgatherv_init);

#define PP_A2AV (char *sb, MPI_Fint *scs, MPI_Fint *sds, MPI_Fint *st,       \
                 char *rb, MPI_Fint *rcs, MPI_Fint *rds, MPI_Fint *rt,       \
                 MPI_Fint *comm, MPI_Fint *info, MPI_Fint *req,              \
                 MPI_Fint *ierr)
#define PA2AV(name, upper, cfn)                                            \
    void fp_##name PP_A2AV;                                                \
    void fp_##name PP_A2AV                                                 \
    {                                                                      \
        MPI_Request r;                                                     \
                                                                           \
        started(cfn(fbuf(sb), scs, sds, T(st), fbuf(rb), rcs, rds, T(rt),  \
                    C(comm), I(info), &r), &r, req, ierr);                 \
    }                                                                      \
    PFORTRAN(name, upper, PP_A2AV)

PA2AV(alltoallv, ALLTOALLV, MPIX_Alltoallv_init);
PA2AV(neighbor_alltoallv, NEIGHBOR_ALLTOALLV, MPIX_Neighbor_alltoallv_init);

/* The w forms: the shim's init copies the datatype arrays (coll_pers.c);
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
    w_sizes(c, 0, &ns, &nr);
    st = types_c(sts, ns);
    rt = types_c(rts, nr);
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
    w_sizes(c, 1, &ns, &nr);
    st = types_c(sts, ns);
    rt = types_c(rts, nr);
    if (st != NULL && rt != NULL) {
        rc = MPIX_Neighbor_alltoallw_init(fbuf(sb), scs, sds, st, fbuf(rb),
                                          rcs, rds, rt, c, I(info), &r);
    }
    free(st);
    free(rt);
    started(rc, &r, req, ierr);
}
PFORTRAN(neighbor_alltoallw, NEIGHBOR_ALLTOALLW, PP_NA2AW);

#define PP_REDUCE (char *sb, char *rb, MPI_Fint *count, MPI_Fint *type,     \
                   MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm,            \
                   MPI_Fint *info, MPI_Fint *req, MPI_Fint *ierr)
void fp_reduce PP_REDUCE;
void fp_reduce PP_REDUCE
{
    MPI_Request r;

    started(MPIX_Reduce_init(fbuf(sb), fbuf(rb), *count, T(type), O(op),
                             *root, C(comm), I(info), &r), &r, req, ierr);
}
PFORTRAN(reduce, REDUCE, PP_REDUCE);

#define PP_ALLRED (char *sb, char *rb, MPI_Fint *count, MPI_Fint *type,     \
                   MPI_Fint *op, MPI_Fint *comm, MPI_Fint *info,            \
                   MPI_Fint *req, MPI_Fint *ierr)
#define PALLRED(name, upper, cfn)                                          \
    void fp_##name PP_ALLRED;                                              \
    void fp_##name PP_ALLRED                                               \
    {                                                                      \
        MPI_Request r;                                                     \
                                                                           \
        started(cfn(fbuf(sb), fbuf(rb), *count, T(type), O(op), C(comm),   \
                    I(info), &r), &r, req, ierr);                          \
    }                                                                      \
    PFORTRAN(name, upper, PP_ALLRED)

PALLRED(allreduce, ALLREDUCE, MPIX_Allreduce_init);
PALLRED(reduce_scatter_block, REDUCE_SCATTER_BLOCK,
        MPIX_Reduce_scatter_block_init);
PALLRED(scan, SCAN, MPIX_Scan_init);
PALLRED(exscan, EXSCAN, MPIX_Exscan_init);

#define PP_REDSC (char *sb, char *rb, MPI_Fint *rcs, MPI_Fint *type,        \
                  MPI_Fint *op, MPI_Fint *comm, MPI_Fint *info,             \
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

/* ---- completion -------------------------------------------------------- */

/* Fortran's LOGICAL .TRUE. (gfortran's, Open MPI's default). */
#define FTRUE 1

static void status_out(const MPI_Status *c, MPI_Fint *f)
{
    if (!st_ignored(f)) {
        PMPI_Status_c2f(c, f);
    }
}

/* n Fortran requests as C ones; NULL: out of memory. */
static MPI_Request *reqs_c(const MPI_Fint *f, int n)
{
    MPI_Request *c = malloc(sizeof(*c) * (size_t)(n > 0 ? n : 1));

    for (int i = 0; c != NULL && i < n; i++) {
        c[i] = PMPI_Request_f2c(f[i]);
    }
    return c;
}

/* Back to Fortran: what the call completed is MPI_REQUEST_NULL now. */
static void reqs_f(const MPI_Request *c, MPI_Fint *f, int n)
{
    for (int i = 0; i < n; i++) {
        f[i] = PMPI_Request_c2f(c[i]);
    }
}

/* Room for n C statuses, or MPI_STATUSES_IGNORE; *oom on failure. */
static MPI_Status *statuses_c(const MPI_Fint *f, int n, int *oom)
{
    MPI_Status *c;

    if (sts_ignored(f)) {
        return MPI_STATUSES_IGNORE;
    }
    c = malloc(sizeof(MPI_Status) * (size_t)(n > 0 ? n : 1));
    *oom |= c == NULL;
    return c;
}

/* The first n of c into f (none when f is NULL); frees c. */
static void statuses_f(MPI_Status *c, MPI_Fint *f, int n, const int *unused)
{
    (void)unused;
    if (c == MPI_STATUSES_IGNORE) {
        return;
    }
    for (int i = 0; f != NULL && i < n; i++) {
        PMPI_Status_c2f(&c[i], f + (size_t)i * FSTATUS_SIZE);
    }
    free(c);
}

#define P_WAIT (MPI_Fint *req, MPI_Fint *status, MPI_Fint *ierr)
void f_wait P_WAIT;
void f_wait P_WAIT
{
    MPI_Request r = PMPI_Request_f2c(*req);
    MPI_Status st;
    int rc = MPI_Wait(&r, &st);

    *req = PMPI_Request_c2f(r);
    if (rc == MPI_SUCCESS) {
        status_out(&st, status);
    }
    fset(ierr, rc);
}
FORTRAN(wait, WAIT, P_WAIT);

#define P_TEST (MPI_Fint *req, MPI_Fint *flag, MPI_Fint *status,             \
                MPI_Fint *ierr)
void f_test P_TEST;
void f_test P_TEST
{
    MPI_Request r = PMPI_Request_f2c(*req);
    MPI_Status st;
    int fl = 0, rc = MPI_Test(&r, &fl, &st);

    *req = PMPI_Request_c2f(r);
    if (rc == MPI_SUCCESS) {
        *flag = fl ? FTRUE : 0;
        if (fl) {
            status_out(&st, status);
        }
    }
    fset(ierr, rc);
}
FORTRAN_P(test, TEST, P_TEST);

#define P_WAITALL (MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *statuses,     \
                   MPI_Fint *ierr)
void f_waitall P_WAITALL;
void f_waitall P_WAITALL
{
    int n = *count, oom = 0, rc = MPI_ERR_NO_MEM;
    MPI_Request *r = reqs_c(reqs, n);
    MPI_Status *st = statuses_c(statuses, n, &oom);

    if (r != NULL && !oom) {
        rc = MPI_Waitall(n, r, st);
        reqs_f(r, reqs, n);
        statuses_f(st, statuses, n, NULL);
    } else if (st != MPI_STATUSES_IGNORE) {
        free(st);
    }
    free(r);
    fset(ierr, rc);
}
FORTRAN(waitall, WAITALL, P_WAITALL);

#define P_TESTALL (MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *flag,         \
                   MPI_Fint *statuses, MPI_Fint *ierr)
void f_testall P_TESTALL;
void f_testall P_TESTALL
{
    int n = *count, fl = 0, oom = 0, rc = MPI_ERR_NO_MEM;
    MPI_Request *r = reqs_c(reqs, n);
    MPI_Status *st = statuses_c(statuses, n, &oom);

    if (r != NULL && !oom) {
        rc = MPI_Testall(n, r, &fl, st);
        reqs_f(r, reqs, n);
        *flag = fl ? FTRUE : 0;
        statuses_f(st, fl ? statuses : NULL, fl ? n : 0, NULL);
    } else if (st != MPI_STATUSES_IGNORE) {
        free(st);
    }
    free(r);
    fset(ierr, rc);
}
FORTRAN_P(testall, TESTALL, P_TESTALL);

#define P_WAITANY (MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *index,        \
                   MPI_Fint *status, MPI_Fint *ierr)
void f_waitany P_WAITANY;
void f_waitany P_WAITANY
{
    int n = *count, idx = MPI_UNDEFINED, rc = MPI_ERR_NO_MEM;
    MPI_Request *r = reqs_c(reqs, n);
    MPI_Status st;

    if (r != NULL) {
        rc = MPI_Waitany(n, r, &idx, &st);
        reqs_f(r, reqs, n);
        if (rc == MPI_SUCCESS) {
            *index = idx == MPI_UNDEFINED ? MPI_UNDEFINED : idx + 1;
            status_out(&st, status);
        }
    }
    free(r);
    fset(ierr, rc);
}
FORTRAN(waitany, WAITANY, P_WAITANY);

#define P_TESTANY (MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *index,        \
                   MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr)
void f_testany P_TESTANY;
void f_testany P_TESTANY
{
    int n = *count, idx = MPI_UNDEFINED, fl = 0, rc = MPI_ERR_NO_MEM;
    MPI_Request *r = reqs_c(reqs, n);
    MPI_Status st;

    if (r != NULL) {
        rc = MPI_Testany(n, r, &idx, &fl, &st);
        reqs_f(r, reqs, n);
        if (rc == MPI_SUCCESS) {
            *flag = fl ? FTRUE : 0;
            *index = idx == MPI_UNDEFINED ? MPI_UNDEFINED : idx + 1;
            if (fl) {
                status_out(&st, status);
            }
        }
    }
    free(r);
    fset(ierr, rc);
}
FORTRAN_P(testany, TESTANY, P_TESTANY);

#define P_SOME (MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *outcount,        \
                MPI_Fint *indices, MPI_Fint *statuses, MPI_Fint *ierr)

/* Waitsome and Testsome: indices 1-based, statuses in their order. */
static void some(int wait, MPI_Fint *count, MPI_Fint *reqs,
                 MPI_Fint *outcount, MPI_Fint *indices, MPI_Fint *statuses,
                 MPI_Fint *ierr)
{
    int n = *count, out = 0, oom = 0, rc = MPI_ERR_NO_MEM;
    MPI_Request *r = reqs_c(reqs, n);
    int *idx = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    MPI_Status *st = statuses_c(statuses, n, &oom);

    if (r != NULL && idx != NULL && !oom) {
        rc = wait ? MPI_Waitsome(n, r, &out, idx, st)
                  : MPI_Testsome(n, r, &out, idx, st);
        reqs_f(r, reqs, n);
        if (rc == MPI_SUCCESS) {
            *outcount = out;
            for (int i = 0; out != MPI_UNDEFINED && i < out; i++) {
                indices[i] = idx[i] + 1;
            }
        }
        statuses_f(st, statuses,
                   rc == MPI_SUCCESS && out != MPI_UNDEFINED ? out : 0,
                   NULL);
    } else if (st != MPI_STATUSES_IGNORE) {
        free(st);
    }
    free(idx);
    free(r);
    fset(ierr, rc);
}

void f_waitsome P_SOME;
void f_waitsome P_SOME
{
    some(1, count, reqs, outcount, indices, statuses, ierr);
}
FORTRAN(waitsome, WAITSOME, P_SOME);

void f_testsome P_SOME;
void f_testsome P_SOME
{
    some(0, count, reqs, outcount, indices, statuses, ierr);
}
FORTRAN_P(testsome, TESTSOME, P_SOME);

#define P_GETST (MPI_Fint *req, MPI_Fint *flag, MPI_Fint *status,            \
                 MPI_Fint *ierr)
void f_request_get_status P_GETST;
void f_request_get_status P_GETST
{
    MPI_Status st;
    int fl = 0, rc = MPI_Request_get_status(PMPI_Request_f2c(*req), &fl,
                                            &st);

    if (rc == MPI_SUCCESS) {
        *flag = fl ? FTRUE : 0;
        if (fl) {
            status_out(&st, status);
        }
    }
    fset(ierr, rc);
}
FORTRAN_P(request_get_status, REQUEST_GET_STATUS, P_GETST);

#define P_FREE (MPI_Fint *req, MPI_Fint *ierr)
void f_request_free P_FREE;
void f_request_free P_FREE
{
    MPI_Request r = PMPI_Request_f2c(*req);
    int rc = MPI_Request_free(&r);

    if (rc == MPI_SUCCESS) {
        *req = PMPI_Request_c2f(r);
    }
    fset(ierr, rc);
}
FORTRAN(request_free, REQUEST_FREE, P_FREE);

void f_start P_FREE;
void f_start P_FREE
{
    MPI_Request r = PMPI_Request_f2c(*req);

    fset(ierr, MPI_Start(&r));
}
FORTRAN(start, START, P_FREE);

#define P_STARTALL (MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *ierr)
void f_startall P_STARTALL;
void f_startall P_STARTALL
{
    MPI_Request *r = reqs_c(reqs, *count);

    fset(ierr, r != NULL ? MPI_Startall(*count, r) : MPI_ERR_NO_MEM);
    free(r);
}
FORTRAN(startall, STARTALL, P_STARTALL);

#elif defined(MPICH)

#include <stddef.h>

/* MPICH's handles are the C ones, and its mpi_f08 status is the C
 * status, field for field: arrays pass as they are. */
_Static_assert(sizeof(MPI_Request) == sizeof(MPI_Fint), "int handles");
_Static_assert(sizeof(MPI_F08_status) == sizeof(MPI_Status), "status");

static void fset(MPI_Fint *ierr, int rc)
{
    if (ierr != NULL) {   /* optional */
        *ierr = rc;
    }
}

static MPI_Status *st_c(MPI_F08_status *s)
{
    return s == NULL || s == MPI_F08_STATUS_IGNORE ? MPI_STATUS_IGNORE
                                                   : (MPI_Status *)s;
}

static MPI_Status *sts_c(MPI_F08_status *s)
{
    return s == NULL || s == MPI_F08_STATUSES_IGNORE ? MPI_STATUSES_IGNORE
                                                     : (MPI_Status *)s;
}

#define REQS(r) ((MPI_Request *)(r))

SHIM_API void mpi_init_f08_(MPI_Fint *ierr)
{
    fset(ierr, MPI_Init(NULL, NULL));
}

SHIM_API void mpi_init_thread_f08_(MPI_Fint *required, MPI_Fint *provided,
                                   MPI_Fint *ierr)
{
    fset(ierr, MPI_Init_thread(NULL, NULL, *required, provided));
}

SHIM_API void mpi_finalize_f08_(MPI_Fint *ierr)
{
    fset(ierr, MPI_Finalize());
}

/* The two collectives without a buffer call PMPI_ too. */
SHIM_API void mpi_ibarrier_f08_(MPI_Fint *comm, MPI_Fint *req,
                                MPI_Fint *ierr)
{
    fset(ierr, MPI_Ibarrier((MPI_Comm)*comm, REQS(req)));
}

SHIM_API void mpi_barrier_init_f08_(MPI_Fint *comm, MPI_Fint *info,
                                    MPI_Fint *req, MPI_Fint *ierr)
{
    fset(ierr, MPI_Barrier_init((MPI_Comm)*comm, (MPI_Info)*info,
                                REQS(req)));
}

SHIM_API void mpi_wait_f08_(MPI_Fint *req, MPI_F08_status *st,
                            MPI_Fint *ierr)
{
    fset(ierr, MPI_Wait(REQS(req), st_c(st)));
}

SHIM_API void mpi_test_f08_(MPI_Fint *req, MPI_Fint *flag,
                            MPI_F08_status *st, MPI_Fint *ierr)
{
    fset(ierr, MPI_Test(REQS(req), flag, st_c(st)));
}

SHIM_API void mpi_waitall_f08_(MPI_Fint *n, MPI_Fint *reqs,
                               MPI_F08_status *sts, MPI_Fint *ierr)
{
    fset(ierr, MPI_Waitall(*n, REQS(reqs), sts_c(sts)));
}

SHIM_API void mpi_testall_f08_(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *flag,
                               MPI_F08_status *sts, MPI_Fint *ierr)
{
    fset(ierr, MPI_Testall(*n, REQS(reqs), flag, sts_c(sts)));
}

/* Fortran's indices count from 1. */
static void one_based(int rc, MPI_Fint *idx)
{
    if (rc == MPI_SUCCESS && *idx != MPI_UNDEFINED) {
        (*idx)++;
    }
}

SHIM_API void mpi_waitany_f08_(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *idx,
                               MPI_F08_status *st, MPI_Fint *ierr)
{
    int rc = MPI_Waitany(*n, REQS(reqs), idx, st_c(st));

    one_based(rc, idx);
    fset(ierr, rc);
}

SHIM_API void mpi_testany_f08_(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *idx,
                               MPI_Fint *flag, MPI_F08_status *st,
                               MPI_Fint *ierr)
{
    int rc = MPI_Testany(*n, REQS(reqs), idx, flag, st_c(st));

    one_based(rc, idx);
    fset(ierr, rc);
}

static void some_f08(int rc, MPI_Fint *out, MPI_Fint *indices,
                     MPI_Fint *ierr)
{
    for (int i = 0; rc == MPI_SUCCESS && *out != MPI_UNDEFINED && i < *out;
         i++) {
        indices[i]++;
    }
    fset(ierr, rc);
}

SHIM_API void mpi_waitsome_f08_(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *out,
                                MPI_Fint *indices, MPI_F08_status *sts,
                                MPI_Fint *ierr)
{
    some_f08(MPI_Waitsome(*n, REQS(reqs), out, indices, sts_c(sts)), out,
             indices, ierr);
}

SHIM_API void mpi_testsome_f08_(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *out,
                                MPI_Fint *indices, MPI_F08_status *sts,
                                MPI_Fint *ierr)
{
    some_f08(MPI_Testsome(*n, REQS(reqs), out, indices, sts_c(sts)), out,
             indices, ierr);
}

SHIM_API void mpi_request_get_status_f08_(MPI_Fint *req, MPI_Fint *flag,
                                          MPI_F08_status *st,
                                          MPI_Fint *ierr)
{
    fset(ierr, MPI_Request_get_status(*REQS(req), flag, st_c(st)));
}

SHIM_API void mpi_request_free_f08_(MPI_Fint *req, MPI_Fint *ierr)
{
    fset(ierr, MPI_Request_free(REQS(req)));
}

SHIM_API void mpi_start_f08_(MPI_Fint *req, MPI_Fint *ierr)
{
    fset(ierr, MPI_Start(REQS(req)));
}

SHIM_API void mpi_startall_f08_(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *ierr)
{
    fset(ierr, MPI_Startall(*n, REQS(reqs)));
}

#endif /* OPEN_MPI, MPICH */
