/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the call-time checks (args/args.h) share between their files:
 * args/args.c (the entry point, reading the settings),
 * args/mpich.c and args/ompi.c (each MPI's checks of the
 * arguments, call by call), and args/common.c (what those share).
 */
#ifndef SHIM_ARGS_INT_H
#define SHIM_ARGS_INT_H

#include "shim/args/args.h"
#include "common/dps_proto.h"

#if defined(OPEN_MPI) && OPEN_MPI
#define CHK_OMPI 1
#elif defined(MPICH)
#define CHK_MPICH 1
#endif

/* Read once at shim start (shim_check_init); args/common.c. */
typedef struct ck_cfg {
    MPI_Comm probe; /* dup of MPI_COMM_SELF, MPI_ERRORS_RETURN */
    int      on;    /* Open MPI: mpi_param_check */
    int      alias; /* MPICH: MPIR_CVAR_COLL_ALIAS_CHECK */
} ck_cfg_t;

extern ck_cfg_t ck_cfg;

/* One call being checked. */
typedef struct ck {
    const shim_coll_args_t *a;
    shim_check_t           *out;
    int                     coll; /* the nonblocking form's id */
    int                     pers; /* a persistent form's checks */
    int                     rank, size;
} ck_t;

/* Refuse the call: class cls, raised on the call's communicator (or
 * MPI_COMM_WORLD: world), the message naming the argument. Returns
 * cls. */
int ck_refuse(ck_t *k, int cls, int world, unsigned bad, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Return the MPI error class of a check that refuses. */
#define TRY(call)                 \
    do {                          \
        int rc_ = (call);         \
                                  \
        if (rc_ != MPI_SUCCESS) { \
            return rc_;           \
        }                         \
    } while (0)

/* Does MPI refuse t, known not to be MPI_DATATYPE_NULL, as a datatype
 * (not committed, or freed)? */
int ck_type_refused(MPI_Datatype t);

/* The operation op with the datatype t, as both MPIs judge it before
 * any datatype check. MPI_SUCCESS or the class. */
int ck_op(ck_t *k, MPI_Op op, MPI_Datatype t);

/* The root: a rank of the communicator. MPI_SUCCESS or MPI_ERR_ROOT. */
int ck_root(ck_t *k);

/* The neighbourhood calls' degrees; 0 with no topology. */
int ck_degrees(MPI_Comm comm, int rank, int *in, int *out);

static inline int ck_is_neighbor(int coll)
{
    return dps_coll_family(coll) == DPS_FAM_NEIGHBOR;
}

/* The MPI library's own checks of k's call (args/mpich.c,
 * args/ompi.c; for any other MPI, none: args/args.c).
 * MPI_SUCCESS or the class it refuses the call with. */
int ck_mpi(ck_t *k);

#endif
