/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The C side of the Fortran tests: requests started in C and completed in
 * Fortran, and the other way round, as in a program whose C library and
 * Fortran solver share requests.
 */
#include <mpi.h>
#include <stddef.h>

/* Complete a Fortran request in C (MPI_Wait). */
void fc_wait_(MPI_Fint *req)
{
    MPI_Request r = MPI_Request_f2c(*req);

    MPI_Wait(&r, MPI_STATUS_IGNORE);
    *req = MPI_Request_c2f(r);
}

/* Start an MPI_Ialltoall of n ints a block in C; its Fortran handle. */
void fc_ialltoall_(const int *sbuf, int *rbuf, const MPI_Fint *n,
                   const MPI_Fint *comm, MPI_Fint *req)
{
    MPI_Request r;

    MPI_Ialltoall(sbuf, *n, MPI_INT, rbuf, *n, MPI_INT, MPI_Comm_f2c(*comm),
                  &r);
    *req = MPI_Request_c2f(r);
}

static int fa_query(void *extra, MPI_Status *st)
{
    (void)extra;
    st->MPI_SOURCE = 3;
    st->MPI_TAG = 5;
    st->MPI_ERROR = MPI_SUCCESS;
    MPI_Status_set_elements(st, MPI_INT, 3);
    MPI_Status_set_cancelled(st, 0);
    return MPI_SUCCESS;
}

static int fa_free(void *extra)
{
    (void)extra;
    return MPI_SUCCESS;
}

static int fa_cancel(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}

/* f_answers: a finished generalized request (source 3, tag 5, 3 ints). */
void fa_greq_(MPI_Fint *req)
{
    MPI_Request r;

    MPI_Grequest_start(fa_query, fa_free, fa_cancel, NULL, &r);
    MPI_Grequest_complete(r);
    *req = MPI_Request_c2f(r);
}
