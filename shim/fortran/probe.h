/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Asking the library's own Fortran bindings how they answer (their
 * quirks, fortran/mpich.c and fortran/ompi_wait.c reproduce them).
 */
#ifndef SHIM_FORTRAN_PROBE_H
#define SHIM_FORTRAN_PROBE_H

#include <mpi.h>

/* A finished generalized request of no source, tag or size into *r, to
 * hand to a binding: MPI_SUCCESS, or MPI's error code. The caller
 * completes it (PMPI_Wait) if the binding did not. */
int shim_fprobe_req(MPI_Request *r);

#endif
