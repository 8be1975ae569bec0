/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fortran on MPICH. Its bindings for mpif.h and `use mpi` call the C MPI_
 * functions, which the shim wraps already; so do its mpi_f08 collectives
 * that take buffers. Its mpi_f08 set-up, tear-down and completion calls
 * (mpi_wait_f08_ ...) and its MPI_Ibarrier and MPI_Barrier_init call
 * PMPI_ ones: those are defined here.
 */
#include "shim/wrap/coll.h"

#if defined(MPICH)

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


#endif /* MPICH */
