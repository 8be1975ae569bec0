/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A collective call's arguments, and the call-time argument checks the
 * MPI library itself makes for the collectives the shim takes over
 * (args/args.c), so that a call the library would refuse is refused by
 * the shim with the same error class, through the same error handler,
 * before anything is posted. The wrappers (wrap/) fill the arguments,
 * ask, and act on the verdict; here are only MPI's rules, one
 * file per MPI library (args/mpich.c, args/ompi.c).
 */
#ifndef SHIM_ARGS_H
#define SHIM_ARGS_H

#include <mpi.h>

/*
 * The whole argument list of one collective call, nonblocking or
 * persistent; fields the call does not have are 0 or NULL. Names follow
 * the send side (s) and the receive side (r):
 * - MPI_Ibcast: buffer, count, datatype are sbuf, scount, stype.
 * - Reductions: count and datatype are scount and stype (Ireduce,
 *   Iallreduce, Iscan, Iexscan); Ireduce_scatter's recvcounts is
 *   rcounts, Ireduce_scatter_block's recvcount is rcount (stype the
 *   datatype in both).
 * - v forms: scounts/sdispls, rcounts/rdispls (elements); Igatherv's and
 *   Iallgatherv's displs is rdispls, Iscatterv's is sdispls.
 * - w forms: stypes/rtypes; Ialltoallw's displacements (bytes, int) are
 *   sdispls/rdispls, Ineighbor_alltoallw's (MPI_Aint) sad/rad.
 * - info: the persistent forms' (not checked: see shim_coll_check).
 */
typedef struct shim_coll_args {
    int                 coll; /* DPS_COLL_*, or its DPS_COLL_*_INIT */
    MPI_Comm            comm;
    const void         *sbuf;
    int                 scount;
    const int          *scounts, *sdispls;
    const MPI_Aint     *sad;
    MPI_Datatype        stype;
    const MPI_Datatype *stypes;
    void               *rbuf;
    int                 rcount;
    const int          *rcounts, *rdispls;
    const MPI_Aint     *rad;
    MPI_Datatype        rtype;
    const MPI_Datatype *rtypes;
    MPI_Op              op;
    int                 root;
    MPI_Info            info;
    MPI_Request        *request;
} shim_coll_args_t;

/* Which inputs of the offload decision (wrap/coll.h) a refused call has
 * wrong: the decision of the ranks whose calls are right cannot be
 * computed from them. */
enum {
    SHIM_BAD_ROOT = 1, /* root is no rank of the communicator */
    SHIM_BAD_OP = 2,   /* op, or op with this datatype, refused */
};

/* The verdict on one call. */
typedef struct shim_check {
    int      cls;       /* MPI_SUCCESS or the MPI error class */
    MPI_Comm raise_on;  /* whose error handler MPI calls: the call's
                         * communicator, or MPI_COMM_WORLD where the MPI
                         * library does so (some of Open MPI's checks) */
    unsigned bad;       /* SHIM_BAD_* */
    char     what[120]; /* the argument and what is wrong with it */
} shim_check_t;

/*
 * Run the checks the MPI library makes when the collective a->coll is
 * called with a's arguments, in the library's order, and say what the
 * library would answer: MPI_SUCCESS, or the error class it returns from
 * the call (also in out->cls, with the communicator whose error handler
 * it calls and a message naming the argument). No side effects, no
 * communication: it only reads the arguments and asks MPI local
 * questions (communicator size and rank, topology degrees, datatype
 * sizes, and whether a datatype is committed, asked of a private
 * communicator with MPI_ERRORS_RETURN). Thread-safe.
 *
 * Compiled per MPI: MPICH 4.0's generated bindings
 * (src/binding/c/coll/<call>.c; error checking "all"; the aliasing
 * check switched by MPIR_CVAR_COLL_ALIAS_CHECK), Open MPI 4.1's
 * MPI_PARAM_CHECK blocks (ompi/mpi/c/<call>.c and
 * ompi/mpiext/pcollreq/c/<call>_init.c; all off with
 * mpi_param_check=0). For a persistent coll id (DPS_COLL_*_INIT) the
 * checks of MPI's *_init are made: the nonblocking call's, but for Open
 * MPI's MPIX_Reduce_init (sendbuf == recvbuf at the root whatever the
 * count) and MPIX_Neighbor_alltoallv/w_init (null arrays whatever the
 * degrees).
 *
 * Left to the MPI library (answered MPI_SUCCESS here; the wrappers fall
 * back to it in these cases): the communicator itself (null, freed, an
 * intercommunicator, no topology for a neighbourhood call), handles
 * already freed, user-defined operations, the datatypes the operations'
 * tables do not list (MPI_Type_create_f90_*, rare predefined ones), and
 * MPICH's check of a persistent call's info. Call it only between
 * shim_check_init and shim_check_fini (without them no datatype is
 * found uncommitted).
 */
int shim_coll_check(const shim_coll_args_t *a, shim_check_t *out);

/* Read what switches the MPI's checks (MPI_T control variables) and
 * make the private communicator: at shim start, after PMPI_Init.
 * shim_check_fini frees it, before PMPI_Finalize. */
void shim_check_init(void);
void shim_check_fini(void);

#endif
