/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Persistent collectives, between their files: the MPI_<Coll>_init
 * wrappers (wrap/colls.c, with the other wrappers of each collective,
 * from DPS_COLLS), what an init makes and how its request
 * starts (pers/init.c), and the stock duplications of communicators
 * under way (pers/dup.c). The requests themselves: pers/start.h.
 */
#ifndef SHIM_PERS_PERS_H
#define SHIM_PERS_PERS_H

#include "shim/args/args.h"

#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

/* MPI-4's MPI_<Coll>_init where the MPI has them (MPICH 4), Open MPI
 * 4.1's MPIX_<Coll>_init from mpi-ext.h. */
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define PERS(name)      MPIX_##name##_init
#define PPERS(name)     PMPIX_##name##_init
#define SHIM_PERSISTENT 1
#elif MPI_VERSION >= 4
#define PERS(name)      MPI_##name##_init
#define PPERS(name)     PMPI_##name##_init
#define SHIM_PERSISTENT 1
#endif

/*
 * A persistent collective's init with a's arguments (a->coll its
 * DPS_COLL_*_INIT, a->info and a->request set): stock MPI's init when
 * the shim does not offload it, else the shim's persistent request in
 * *a->request. MPI_SUCCESS or an MPI error code.
 */
int shim_pers_init(const shim_coll_args_t *a);

/* Begin stock MPI's duplication of comm into *dup, *req its request,
 * and remember it until shim_pers_dup_wait: comm is not freed before it
 * ends (shim_pers_comm_free). PMPI_Comm_idup's result. */
int shim_pers_dup(MPI_Comm comm, MPI_Comm *dup, MPI_Request *req);

/* Wait for *req, a duplication shim_pers_dup began (if still pending),
 * and forget it. */
void shim_pers_dup_wait(MPI_Request *req);

#endif
