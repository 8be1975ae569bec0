/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The public wrappers of every collective in common/dps_colls.h, made
 * from its rows and the argument shapes (wrap/shapes.h): MPI_I<name>
 * takes its arguments into a shim_coll_args_t and runs the row's entry
 * (wrap/coll.h); MPI_<Name>_init, MPIX_ in Open MPI 4.1 (pers/pers.h),
 * leaves them to shim_pers_init (pers/init.c).
 */
#include "shim/wrap/coll.h"
#include "shim/pers/pers.h"
#include "shim/wrap/shapes.h"

#define NONBLOCKING(ID, name, Name, family, shape, entry)        \
    SHIM_API int MPI_I##name(SHIM_P_##shape MPI_Comm comm,       \
                             MPI_Request            *request)    \
    {                                                            \
        shim_coll_args_t a = {.coll = DPS_COLL_##ID,             \
                              .comm = comm,                      \
                              SHIM_A_##shape.request = request}; \
        shim_ctx_t       x = shim_ctx_app();                     \
                                                                 \
        return shim_coll_##entry(&a, &x);                        \
    }

DPS_COLLS(NONBLOCKING)

#ifdef SHIM_PERSISTENT
#define PERSISTENT(ID, name, Name, family, shape, entry)                 \
    SHIM_API int PERS(Name)(SHIM_P_##shape MPI_Comm comm, MPI_Info info, \
                            MPI_Request * request)                       \
    {                                                                    \
        shim_coll_args_t a = {.coll = DPS_COLL_##ID##_INIT,              \
                              .comm = comm,                              \
                              SHIM_A_##shape.info = info,                \
                              .request = request};                       \
                                                                         \
        return shim_pers_init(&a);                                       \
    }

DPS_COLLS(PERSISTENT)
#endif
