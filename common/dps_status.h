/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Status codes shared by every part of dpushim, and the convention of
 * common/: a function that succeeds or fails returns DPS_OK or a negative
 * code that says why (DPS_ERR_IO: a system call failed, and errno says
 * which error). Exceptions, each said in its header: a function that
 * returns a descriptor, a length or a count returns -1 on failure; a
 * predicate (*_ok, *_valid, *_ready, *_empty) returns 1 or 0; one that
 * returns a pointer returns NULL.
 */
#ifndef DPS_STATUS_H
#define DPS_STATUS_H

typedef enum {
    DPS_OK = 0,
    DPS_ERR_INVALID = -1, /* bad argument, value or message */
    DPS_ERR_NOMEM = -2,
    DPS_ERR_IO = -3,  /* a system call failed; errno says how */
    DPS_ERR_UCX = -4, /* a UCX call failed */
    DPS_ERR_TIMEOUT = -5,
    DPS_ERR_PROTO = -6, /* malformed or unexpected wire message */
    DPS_ERR_DEAD = -7,  /* the peer (agent or rank) is gone */
    DPS_ERR_UNSUPP = -8,
    DPS_ERR_AGAIN = -9,     /* not now: handle again later */
    DPS_ERR_MISMATCH = -10, /* ranks' arguments to one collective differ */
    DPS_ERR_ARG = -11,      /* a rank's own arguments are erroneous */
    DPS_ERR_BUFFER = -12,   /* a rank's buffers alias (no MPI_IN_PLACE) */
    DPS_ERR_TOKEN = -13,    /* a token read back differs: another process */
    DPS_ERR_TRUNCATE = -14, /* data longer than where it goes: what a rank
                             * sees of other ranks' mismatched arguments */
    DPS_ERR_OP = -15,       /* a reduction could not be computed */
    DPS_ERR_MPI = -16       /* an MPI call beneath failed (logged there) */
} dps_status_t;

/* Short lower-case name of a status, for log messages. */
const char *dps_status_str(int status);

#endif
