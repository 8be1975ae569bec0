/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fortran on Open MPI (fortran/fortran.h): the argument conversions, MPI_INIT and
 * MPI_FINALIZE (where the shim starts and reports), the nonblocking and
 * neighbourhood collectives.
 */
#include "shim/fortran/fortran.h"

#if defined(OPEN_MPI) && OPEN_MPI

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

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
void *shim_fbuf(void *p)
{
    if (is_any(p, fs.in_place)) {
        return MPI_IN_PLACE;
    }
    if (is_any(p, fs.bottom)) {
        return MPI_BOTTOM;
    }
    return p;
}

int shim_fst_ignored(const MPI_Fint *s)
{
    return s == NULL || s == MPI_F_STATUS_IGNORE || is_any(s, fs.st_ignore);
}

int shim_fsts_ignored(const MPI_Fint *s)
{
    return s == NULL || s == MPI_F_STATUSES_IGNORE ||
           is_any(s, fs.sts_ignore);
}

void shim_fset(MPI_Fint *ierr, int rc)
{
    if (ierr != NULL) {   /* optional in mpi_f08 */
        *ierr = rc;
    }
}

/* A request the call started, to the Fortran side. By address: the
 * call that sets it is an argument of the same call, evaluated in no
 * particular order. */
void shim_fstarted(int rc, const MPI_Request *r, MPI_Fint *req,
                    MPI_Fint *ierr)
{
    if (rc == MPI_SUCCESS) {
        *req = PMPI_Request_c2f(*r);
    }
    fset(ierr, rc);
}

/* Fortran datatype arrays to C ones (n entries). NULL: out of memory. */
MPI_Datatype *shim_ftypes(const MPI_Fint *f, int n)
{
    MPI_Datatype *c = malloc(sizeof(*c) * (size_t)(n > 0 ? n : 1));

    for (int i = 0; c != NULL && i < n; i++) {
        c[i] = PMPI_Type_f2c(f[i]);
    }
    return c;
}

/* How many entries the w arrays have on each side. */
void shim_fw_sizes(MPI_Comm comm, int neighbor, int *ns, int *nr)
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
int shim_fw_offloads(int coll, MPI_Comm comm)
{
    return shim.initialized && shim_coll_wanted(coll, comm) &&
           shim_any_size();
}

/* ---- set-up and tear-down ---------------------------------------------- */

/* The shim starts in MPI_Init and reports in MPI_Finalize (boot/init.c):
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
#define P_ROOTED (char *sb, MPI_Fint *sc, MPI_Fint *st, char *rb,            \
                  MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *root,                \
                  MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
#define ROOTED(name, upper, cfn)                                             \
    void f_##name P_ROOTED;                                                  \
    void f_##name P_ROOTED                                                   \
    {                                                                        \
        MPI_Request r;                                                       \
                                                                             \
        started(cfn(fbuf(sb), *sc, T(st), fbuf(rb), *rc, T(rt), *root,       \
                    C(comm), &r), &r, req, ierr);                            \
    }                                                                        \
    FORTRAN(name, upper, P_ROOTED)

ROOTED(igather, IGATHER, MPI_Igather);
ROOTED(iscatter, ISCATTER, MPI_Iscatter);

/* allgather, alltoall, their neighbourhood forms. */
#define P_ALL (char *sb, MPI_Fint *sc, MPI_Fint *st, char *rb, MPI_Fint *rc, \
               MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
#define ALL(name, upper, cfn)                                                \
    void f_##name P_ALL;                                                     \
    void f_##name P_ALL                                                      \
    {                                                                        \
        MPI_Request r;                                                       \
                                                                             \
        started(cfn(fbuf(sb), *sc, T(st), fbuf(rb), *rc, T(rt), C(comm),     \
                    &r), &r, req, ierr);                                     \
    }                                                                        \
    FORTRAN(name, upper, P_ALL)

ALL(iallgather, IALLGATHER, MPI_Iallgather);
ALL(ialltoall, IALLTOALL, MPI_Ialltoall);
ALL(ineighbor_allgather, INEIGHBOR_ALLGATHER, MPI_Ineighbor_allgather);
ALL(ineighbor_alltoall, INEIGHBOR_ALLTOALL, MPI_Ineighbor_alltoall);

#define P_GATHERV (char *sb, MPI_Fint *sc, MPI_Fint *st, char *rb,           \
                   MPI_Fint *rcs, MPI_Fint *displs, MPI_Fint *rt,            \
                   MPI_Fint *root, MPI_Fint *comm, MPI_Fint *req,            \
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
                    char *rb, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *root,    \
                    MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
void f_iscatterv P_SCATTERV;
void f_iscatterv P_SCATTERV
{
    MPI_Request r;

    started(MPI_Iscatterv(fbuf(sb), scs, displs, T(st), fbuf(rb), *rc,
                          T(rt), *root, C(comm), &r), &r, req, ierr);
}
FORTRAN(iscatterv, ISCATTERV, P_SCATTERV);

#define P_ALLV (char *sb, MPI_Fint *sc, MPI_Fint *st, char *rb,              \
                MPI_Fint *rcs, MPI_Fint *displs, MPI_Fint *rt,               \
                MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
#define ALLV(name, upper, cfn)                                               \
    void f_##name P_ALLV;                                                    \
    void f_##name P_ALLV                                                     \
    {                                                                        \
        MPI_Request r;                                                       \
                                                                             \
        started(cfn(fbuf(sb), *sc, T(st), fbuf(rb), rcs, displs, T(rt),      \
                    C(comm), &r), &r, req, ierr);                            \
    }                                                                        \
    FORTRAN(name, upper, P_ALLV)

ALLV(iallgatherv, IALLGATHERV, MPI_Iallgatherv);
ALLV(ineighbor_allgatherv, INEIGHBOR_ALLGATHERV, MPI_Ineighbor_allgatherv);

#define P_A2AV (char *sb, MPI_Fint *scs, MPI_Fint *sds, MPI_Fint *st,        \
                char *rb, MPI_Fint *rcs, MPI_Fint *rds, MPI_Fint *rt,        \
                MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
#define A2AV(name, upper, cfn)                                               \
    void f_##name P_A2AV;                                                    \
    void f_##name P_A2AV                                                     \
    {                                                                        \
        MPI_Request r;                                                       \
                                                                             \
        started(cfn(fbuf(sb), scs, sds, T(st), fbuf(rb), rcs, rds, T(rt),    \
                    C(comm), &r), &r, req, ierr);                            \
    }                                                                        \
    FORTRAN(name, upper, P_A2AV)

A2AV(ialltoallv, IALLTOALLV, MPI_Ialltoallv);
A2AV(ineighbor_alltoallv, INEIGHBOR_ALLTOALLV, MPI_Ineighbor_alltoallv);

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

    if (!shim_fw_offloads(DPS_COLL_ALLTOALLW, c)) {
        void (*own) P_A2AW;

        *(void **)&own = dlsym(RTLD_NEXT, "ompi_ialltoallw_f");
        if (own != NULL) {
            own(sb, scs, sds, sts, rb, rcs, rds, rts, comm, req, ierr);
            return;
        }
    }
    shim_fw_sizes(c, 0, &ns, &nr);
    st = shim_ftypes(sts, ns);
    rt = shim_ftypes(rts, nr);
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

    if (!shim_fw_offloads(DPS_COLL_NEIGHBOR_ALLTOALLW, c)) {
        void (*own) P_NA2AW;

        *(void **)&own = dlsym(RTLD_NEXT, "ompi_ineighbor_alltoallw_f");
        if (own != NULL) {
            own(sb, scs, sds, sts, rb, rcs, rds, rts, comm, req, ierr);
            return;
        }
    }
    shim_fw_sizes(c, 1, &ns, &nr);
    st = shim_ftypes(sts, ns);
    rt = shim_ftypes(rts, nr);
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
#define P_REDUCE (char *sb, char *rb, MPI_Fint *count, MPI_Fint *type,       \
                  MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm,              \
                  MPI_Fint *req, MPI_Fint *ierr)
void f_ireduce P_REDUCE;
void f_ireduce P_REDUCE
{
    MPI_Request r;

    started(MPI_Ireduce(fbuf(sb), fbuf(rb), *count, T(type), O(op), *root,
                        C(comm), &r), &r, req, ierr);
}
FORTRAN(ireduce, IREDUCE, P_REDUCE);

#define P_ALLRED (char *sb, char *rb, MPI_Fint *count, MPI_Fint *type,       \
                  MPI_Fint *op, MPI_Fint *comm, MPI_Fint *req,               \
                  MPI_Fint *ierr)
#define ALLRED(name, upper, cfn)                                             \
    void f_##name P_ALLRED;                                                  \
    void f_##name P_ALLRED                                                   \
    {                                                                        \
        MPI_Request r;                                                       \
                                                                             \
        started(cfn(fbuf(sb), fbuf(rb), *count, T(type), O(op), C(comm),     \
                    &r), &r, req, ierr);                                     \
    }                                                                        \
    FORTRAN(name, upper, P_ALLRED)

ALLRED(iallreduce, IALLREDUCE, MPI_Iallreduce);
ALLRED(ireduce_scatter_block, IREDUCE_SCATTER_BLOCK,
       MPI_Ireduce_scatter_block);
ALLRED(iscan, ISCAN, MPI_Iscan);
ALLRED(iexscan, IEXSCAN, MPI_Iexscan);

#define P_REDSC (char *sb, char *rb, MPI_Fint *rcs, MPI_Fint *type,          \
                 MPI_Fint *op, MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
void f_ireduce_scatter P_REDSC;
void f_ireduce_scatter P_REDSC
{
    MPI_Request r;

    started(MPI_Ireduce_scatter(fbuf(sb), fbuf(rb), rcs, T(type), O(op),
                                C(comm), &r), &r, req, ierr);
}
FORTRAN(ireduce_scatter, IREDUCE_SCATTER, P_REDSC);

#endif /* OPEN_MPI */
