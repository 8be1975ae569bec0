/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The C side of the Fortran tests: requests started in C and completed in
 * Fortran, and the other way round, as in a program whose C library and
 * Fortran solver share requests.
 */
#include <mpi.h>

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

    MPI_Ialltoall(sbuf, *n, MPI_INT, rbuf, *n, MPI_INT,
                  MPI_Comm_f2c(*comm), &r);
    *req = MPI_Request_c2f(r);
}
