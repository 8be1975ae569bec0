/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fortran programs on Open MPI (fortran/ompi*.c). Open MPI's Fortran
 * bindings (mpif.h and `use mpi`: mpi_ialltoall_ and its other spellings;
 * `use mpi_f08`: ompi_ialltoall_f, which the f08 module calls in
 * libmpi_mpifh) call the C PMPI_ functions themselves, past any C
 * wrapper. Defined in the preloaded library, these symbols come first:
 * they convert the Fortran arguments (handles, the MPI_IN_PLACE /
 * MPI_BOTTOM sentinels, status and ignore arrays, 1-based indices,
 * LOGICAL flags) and call the shim's C functions, so that a Fortran
 * program's collectives are offloaded and its completion calls drive
 * offloaded requests, whichever language started them. MPICH needs less:
 * fortran/mpich.c.
 */
#ifndef FORTRAN_H
#define FORTRAN_H

#include "shim/wrap/coll.h"

_Static_assert(sizeof(MPI_Fint) == sizeof(int), "MPI_Fint is an int");

/* MPI_STATUS_SIZE of Open MPI's Fortran (mpif-config.h): a status is the
 * C one's integers. */
#define FSTATUS_SIZE ((size_t)(sizeof(MPI_Status) / sizeof(MPI_Fint)))

/* A Fortran buffer argument as C sees it (the sentinels become C's). */
void *shim_fbuf(void *p);

/* Is this Fortran status (array) argument MPI_STATUS(ES)_IGNORE? */
int shim_fst_ignored(const MPI_Fint *s);
int shim_fsts_ignored(const MPI_Fint *s);

/* Fortran's MPI_STATUS_IGNORE as the library's bindings know it, or
 * NULL if it cannot be found. */
MPI_Fint *shim_fst_ignore_arg(void);

/* Set ierror if present (optional in mpi_f08). */
void shim_fset(MPI_Fint *ierr, int rc);

/* A request the call started, to the Fortran side. By address: the call
 * that sets it is an argument of the same call, evaluated in no
 * particular order. */
void shim_fstarted(int rc, const MPI_Request *r, MPI_Fint *req,
                   MPI_Fint *ierr);

/* The short names the bindings use. */
static inline void *fbuf(void *p)
{
    return shim_fbuf(p);
}

static inline void fset(MPI_Fint *ierr, int rc)
{
    shim_fset(ierr, rc);
}

static inline void started(int rc, const MPI_Request *r, MPI_Fint *req,
                           MPI_Fint *ierr)
{
    shim_fstarted(rc, r, req, ierr);
}

#define T(x) PMPI_Type_f2c(*(x))
#define C(x) PMPI_Comm_f2c(*(x))
#define O(x) PMPI_Op_f2c(*(x))

/*
 * f_NAME is the implementation; ompi_NAME_f (what mpi_f08 calls),
 * mpi_NAME_, mpi_NAME__, mpi_NAME and MPI_UPPER (mpif.h and `use mpi`
 * under each compiler's mangling) are its aliases.
 */
#define FORTRAN(name, upper, params)                                         \
    SHIM_API void ompi_##name##_f params __attribute__((alias("f_" #name))); \
    SHIM_API void mpi_##name##_ params __attribute__((alias("f_" #name)));   \
    SHIM_API void mpi_##name##__ params __attribute__((alias("f_" #name)));  \
    SHIM_API void mpi_##name params __attribute__((alias("f_" #name)));      \
    SHIM_API void MPI_##upper params __attribute__((alias("f_" #name)))

/* Open MPI's mpi_f08 reaches the tests and MPI_Request_get_status through
 * the Fortran profiling names (pmpi_test_ ...): those too. */
#define FORTRAN_P(name, upper, params) \
    FORTRAN(name, upper, params);      \
    SHIM_API void pmpi_##name##_ params __attribute__((alias("f_" #name)))

#endif
