/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fortran on MPICH. Its bindings for mpif.h and `use mpi` call the C MPI_
 * functions, which the shim wraps already; so do its mpi_f08 collectives
 * that take buffers. Its mpi_f08 set-up, tear-down and completion calls
 * (mpi_wait_f08_ ...) and its MPI_Ibarrier and MPI_Barrier_init call
 * PMPI_ ones: those are defined here, answering as the library's own do,
 * quirks included (see f08_bases).
 */
#include "shim/wrap/coll.h"
#include "shim/fortran/probe.h"

#if defined(MPICH)

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

/* MPICH's handles are the C ones, and its mpi_f08 status is the C
 * status, field for field: arrays pass as they are. */
_Static_assert(sizeof(MPI_Request) == sizeof(MPI_Fint), "int handles");
_Static_assert(sizeof(MPI_F08_status) == sizeof(MPI_Status), "status");

static void fset(MPI_Fint *ierr, int rc)
{
    if (ierr != NULL) { /* optional */
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
SHIM_API void mpi_ibarrier_f08_(MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
{
    fset(ierr, MPI_Ibarrier((MPI_Comm)*comm, REQS(req)));
}

SHIM_API void mpi_barrier_init_f08_(MPI_Fint *comm, MPI_Fint *info,
                                    MPI_Fint *req, MPI_Fint *ierr)
{
    fset(ierr, MPI_Barrier_init((MPI_Comm)*comm, (MPI_Info)*info, REQS(req)));
}

SHIM_API void mpi_wait_f08_(MPI_Fint *req, MPI_F08_status *st, MPI_Fint *ierr)
{
    fset(ierr, MPI_Wait(REQS(req), st_c(st)));
}

SHIM_API void mpi_test_f08_(MPI_Fint *req, MPI_Fint *flag, MPI_F08_status *st,
                            MPI_Fint *ierr)
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

/*
 * The indices the library's own mpi_f08 MPI_Waitany, MPI_Testany,
 * MPI_Waitsome and MPI_Testsome give. MPI says they count from 1; MPICH
 * 4.0.2's count from 0 (they hand over the C ones), and programs that
 * know it (a configure test of a Fortran FFT library) add the 1
 * themselves: answering from 1 here made them read past their arrays.
 * What a call adds to a C index, and what it gives for MPI_UNDEFINED, is
 * found once, by asking the library's own binding about a finished
 * generalized request (second of two) and about null requests alone.
 */
enum { F_WAITANY, F_TESTANY, F_WAITSOME, F_TESTSOME, F_NCALLS };

static const char *const f08_names[F_NCALLS] = {
    "mpi_waitany_f08_", "mpi_testany_f08_", "mpi_waitsome_f08_",
    "mpi_testsome_f08_"};

static struct {
    pthread_once_t once;
    int            add[F_NCALLS];   /* to a C index */
    int            undef[F_NCALLS]; /* for MPI_UNDEFINED */
} fb = {PTHREAD_ONCE_INIT,
        {1, 1, 1, 1},
        {MPI_UNDEFINED, MPI_UNDEFINED, MPI_UNDEFINED, MPI_UNDEFINED}};

typedef void (*waitany_t)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_F08_status *,
                          MPI_Fint *);
typedef void (*testany_t)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                          MPI_F08_status *, MPI_Fint *);
typedef void (*some_t)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                       MPI_F08_status *, MPI_Fint *);

/* Call c of the library's binding on {null, finished}, or on nulls alone
 * (finished 0; the any forms): the index it gives, or -1 if it could not
 * be asked. */
static int f08_ask(int c, void *fn, int finished)
{
    MPI_Fint       reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Fint       n = 2, idx[2] = {-1, -1}, flag = 0, out = 0, ierr = -1;
    MPI_F08_status sts[2];
    MPI_Request    r;

    if (finished) {
        if (shim_fprobe_req(&r) != MPI_SUCCESS) {
            return -1;
        }
        reqs[1] = (MPI_Fint)r;
    }
    if (c == F_WAITANY) {
        ((waitany_t)fn)(&n, reqs, idx, sts, &ierr);
    } else if (c == F_TESTANY) {
        ((testany_t)fn)(&n, reqs, idx, &flag, sts, &ierr);
    } else {
        ((some_t)fn)(&n, reqs, &out, idx, sts, &ierr);
    }
    if (reqs[1] != MPI_REQUEST_NULL) { /* it did not complete it */
        r = (MPI_Request)reqs[1];
        PMPI_Wait(&r, MPI_STATUS_IGNORE);
        return -1;
    }
    return ierr == MPI_SUCCESS ? idx[0] : -1;
}

static void f08_bases(void)
{
    for (int c = 0; c < F_NCALLS; c++) {
        void *fn = dlsym(RTLD_NEXT, f08_names[c]);
        int   one, none;

        if (fn == NULL || (one = f08_ask(c, fn, 1)) < 0) {
            continue; /* as MPI says */
        }
        none = c == F_WAITANY || c == F_TESTANY ? f08_ask(c, fn, 0)
                                                : MPI_UNDEFINED;
        if (none == -1) {
            continue;
        }
        fb.add[c] = one - 1;
        fb.undef[c] = none;
    }
}

/* A C index as the library's call c gives it. */
static MPI_Fint f08_index(int c, int idx)
{
    pthread_once(&fb.once, f08_bases);
    return idx == MPI_UNDEFINED ? fb.undef[c] : idx + fb.add[c];
}

static void any_f08(int c, int rc, MPI_Fint *idx)
{
    if (rc == MPI_SUCCESS) {
        *idx = f08_index(c, *idx);
    }
}

SHIM_API void mpi_waitany_f08_(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *idx,
                               MPI_F08_status *st, MPI_Fint *ierr)
{
    int rc = MPI_Waitany(*n, REQS(reqs), idx, st_c(st));

    any_f08(F_WAITANY, rc, idx);
    fset(ierr, rc);
}

SHIM_API void mpi_testany_f08_(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *idx,
                               MPI_Fint *flag, MPI_F08_status *st,
                               MPI_Fint *ierr)
{
    int rc = MPI_Testany(*n, REQS(reqs), idx, flag, st_c(st));

    any_f08(F_TESTANY, rc, idx);
    fset(ierr, rc);
}

static void some_f08(int c, int rc, MPI_Fint *out, MPI_Fint *indices,
                     MPI_Fint *ierr)
{
    for (int i = 0; rc == MPI_SUCCESS && *out != MPI_UNDEFINED && i < *out;
         i++) {
        indices[i] = f08_index(c, indices[i]);
    }
    fset(ierr, rc);
}

SHIM_API void mpi_waitsome_f08_(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *out,
                                MPI_Fint *indices, MPI_F08_status *sts,
                                MPI_Fint *ierr)
{
    some_f08(F_WAITSOME,
             MPI_Waitsome(*n, REQS(reqs), out, indices, sts_c(sts)), out,
             indices, ierr);
}

SHIM_API void mpi_testsome_f08_(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *out,
                                MPI_Fint *indices, MPI_F08_status *sts,
                                MPI_Fint *ierr)
{
    some_f08(F_TESTSOME,
             MPI_Testsome(*n, REQS(reqs), out, indices, sts_c(sts)), out,
             indices, ierr);
}

SHIM_API void mpi_request_get_status_f08_(MPI_Fint *req, MPI_Fint *flag,
                                          MPI_F08_status *st, MPI_Fint *ierr)
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

#endif /* MPICH */
