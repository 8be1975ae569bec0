/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpushim.h: offload a pattern of sends and receives to the agent (a DPU,
 * or the process standing in for one), whatever MPI the program uses.
 *
 * A pattern group is begun on a communicator, given sends and receives
 * (buffer, count, datatype, peer, tag), and ended. Ending it gives an MPI
 * request: the agent moves the data while the program computes, and the
 * ordinary MPI completion calls (MPI_Wait, MPI_Test, MPI_Waitall, ...)
 * complete it, mixed with any other requests. A persistent group is ended
 * into an inactive persistent request that MPI_Start / MPI_Startall
 * start as often as wanted; MPI_Request_free releases it.
 *
 *   dpushim_group_t g;
 *   MPI_Request req;
 *
 *   if (dpushim_group_begin(MPI_COMM_WORLD, &g) == DPUSHIM_SUCCESS) {
 *       dpushim_group_send(g, out, n, MPI_DOUBLE, right, 0);
 *       dpushim_group_recv(g, in, n, MPI_DOUBLE, left, 0);
 *       dpushim_group_end(&g, &req);     (every rank of the communicator)
 *       ... compute ...
 *       MPI_Wait(&req, MPI_STATUS_IGNORE);
 *   } else {
 *       ... the same with MPI_Isend / MPI_Irecv ...
 *   }
 *
 * Rules:
 * - Ending a group is collective: every rank of the communicator ends one
 *   (an empty one if it has nothing to move), in the same order as the
 *   other collectives it calls on that communicator.
 * - Sends and receives pair as MPI matches messages: among the sends from
 *   rank s to rank d with one tag, the k-th meets the k-th receive of d
 *   from s with that tag. A receive must be as large as the send it meets
 *   (MPI would let it be larger): otherwise every rank gets an error, from
 *   its request (or, for a rank that can tell at once, a message to
 *   itself, from the end call or MPI_Start).
 * - MPI_PROC_NULL peers are allowed and move nothing; MPI_ANY_SOURCE and
 *   MPI_ANY_TAG are not (DPUSHIM_ERR_ARG).
 * - Buffers belong to the group from the end (or each MPI_Start) until
 *   completion, as with nonblocking MPI calls.
 *
 * Every call returns DPUSHIM_SUCCESS (0), a DPUSHIM_ERR_* code (< 0), or
 * an MPI error code from the MPI library. DPUSHIM_ERR_OFF means offload
 * is not available (DPUSHIM_OFFLOAD=0, DPUSHIM_GROUP=0 or
 * DPUSHIM_GROUP_INIT=0, no agent could be started, MPI not initialized):
 * the program should move the data with MPI itself. The program needs
 * the library only at run time: linked (`pkg-config --libs dpushim`) or
 * preloaded (LD_PRELOAD); without it, every call returns DPUSHIM_ERR_OFF.
 */
#ifndef DPUSHIM_H
#define DPUSHIM_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DPUSHIM_VERSION_MAJOR 1
#define DPUSHIM_VERSION_MINOR 0

enum {
    DPUSHIM_SUCCESS = 0,
    DPUSHIM_ERR_OFF = -1,  /* offload not available: use MPI */
    DPUSHIM_ERR_ARG = -2,  /* a bad argument (the message says which) */
    DPUSHIM_ERR_NOMEM = -3 /* out of memory */
};

typedef struct dpushim_group *dpushim_group_t;

/*
 * The library's entry points, declared weak: a program built with this
 * header runs with the library (linked, or preloaded) and without it,
 * where every call below returns DPUSHIM_ERR_OFF. Call the inline
 * functions, not these.
 */
#define DPUSHIM_IMPL_ __attribute__((weak))
int  dpushim_impl_available(void) DPUSHIM_IMPL_;
int  dpushim_impl_group_begin(MPI_Comm, dpushim_group_t *) DPUSHIM_IMPL_;
int  dpushim_impl_group_add(dpushim_group_t, int, const void *, int,
                            MPI_Datatype, int, int) DPUSHIM_IMPL_;
int  dpushim_impl_group_end(dpushim_group_t *, MPI_Request *,
                            int) DPUSHIM_IMPL_;
void dpushim_impl_group_free(dpushim_group_t *) DPUSHIM_IMPL_;
const char *dpushim_impl_error_string(int) DPUSHIM_IMPL_;

/* 1 when pattern groups are offloaded in this run, else 0. */
static inline int dpushim_available(void)
{
    return dpushim_impl_available ? dpushim_impl_available() : 0;
}

/* Begin a group on an intracommunicator. */
static inline int dpushim_group_begin(MPI_Comm comm, dpushim_group_t *group)
{
    if (!dpushim_impl_group_begin) {
        if (group) {
            *group = 0;
        }
        return DPUSHIM_ERR_OFF;
    }
    return dpushim_impl_group_begin(comm, group);
}

/* Add a send of count elements of datatype at buf to dest (a rank of the
 * group's communicator, or MPI_PROC_NULL), with tag >= 0. */
static inline int dpushim_group_send(dpushim_group_t group, const void *buf,
                                     int count, MPI_Datatype datatype,
                                     int dest, int tag)
{
    return dpushim_impl_group_add
               ? dpushim_impl_group_add(group, 0, buf, count, datatype, dest,
                                        tag)
               : DPUSHIM_ERR_OFF;
}

/* Add a receive from source (a rank, or MPI_PROC_NULL) with tag >= 0. */
static inline int dpushim_group_recv(dpushim_group_t group, void *buf,
                                     int count, MPI_Datatype datatype,
                                     int source, int tag)
{
    return dpushim_impl_group_add
               ? dpushim_impl_group_add(group, 1, buf, count, datatype, source,
                                        tag)
               : DPUSHIM_ERR_OFF;
}

/* End the group and start it: *request completes when every transfer of
 * this rank is done. *group is released (NULL), also on error. */
static inline int dpushim_group_end(dpushim_group_t *group,
                                    MPI_Request     *request)
{
    return dpushim_impl_group_end ? dpushim_impl_group_end(group, request, 0)
                                  : DPUSHIM_ERR_OFF;
}

/* End the group as an inactive persistent request (MPI_Start it, as
 * often as wanted; MPI_Request_free it); *group is released. */
static inline int dpushim_group_end_persistent(dpushim_group_t *group,
                                               MPI_Request     *request)
{
    return dpushim_impl_group_end ? dpushim_impl_group_end(group, request, 1)
                                  : DPUSHIM_ERR_OFF;
}

/* Drop a group that was not ended. */
static inline void dpushim_group_free(dpushim_group_t *group)
{
    if (dpushim_impl_group_free) {
        dpushim_impl_group_free(group);
    }
}

/* "offload is not available ..." and so on, for any code returned. */
static inline const char *dpushim_error_string(int code)
{
    if (dpushim_impl_error_string) {
        return dpushim_impl_error_string(code);
    }
    return code == DPUSHIM_SUCCESS ? "success"
           : code == DPUSHIM_ERR_OFF
               ? "offload is not available (libdpushim not loaded)"
               : "error (libdpushim not loaded)";
}

#ifdef __cplusplus
}
#endif

#endif
