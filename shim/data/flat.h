/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Datatypes flattened into (offset, length) segments (data/flat.c), and
 * the scatter maps built from them: a received region's bytes, in packed
 * order, mapped onto the application's non-contiguous memory, so that the
 * DMA engine reads a transfer straight into place with iovecs instead of
 * into a staging copy that is unpacked at completion.
 */
#ifndef SHIM_FLAT_H
#define SHIM_FLAT_H

#include "shim/data/call.h"

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* One element of a datatype: its data as segments in type-map order
 * (the order MPI_Pack writes them), adjacent ones merged. */
typedef struct shim_flat {
    size_t    n;
    int64_t  *disp; /* bytes from the element's address */
    uint64_t *len;
    uint64_t  size; /* bytes of data: the sum of len */
    MPI_Aint  extent;
} shim_flat_t;

/* The flattening of dt, computed once and cached on the datatype (an
 * attribute, dropped when the type is freed); NULL when dt cannot be
 * flattened (a type built by MPI_Type_create_darray or a Fortran kind,
 * a named type with holes, more than SHIM_FLAT_MAX segments): such data
 * is packed with MPI_Pack instead. */
const shim_flat_t *shim_flat_get(MPI_Datatype dt);

#define SHIM_FLAT_MAX (1u << 22)

/* Append to m the segments of count elements of dt at addr, packed from
 * offset *off on (advanced). DPS_OK; DPS_ERR_UNSUPP when dt is not
 * flattened or m would exceed max segments; DPS_ERR_NOMEM. */
int shim_scatter_add(shim_scatter_t *m, size_t max, const void *addr,
                     int count, MPI_Datatype dt, uint64_t *off);

/* Copy packed bytes [off, off + len) of the region between the staging
 * copy and the application's memory (to_app: staging -> application),
 * skipping nothing. */
void shim_scatter_copy(const shim_scatter_t *m, uint64_t off, uint64_t len,
                       int to_app);

/* At completion: unpack every byte the engine did not put in place. */
void shim_scatter_finish(shim_scatter_t *m);

/* The first segment holding packed offset off. */
size_t shim_scatter_find(const shim_scatter_t *m, uint64_t off);

/* Free what m holds (its segments and done list), not m itself. */
void shim_scatter_free(shim_scatter_t *m);

#endif
