/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The takeover from a failed agent, inside: failover/failover.c (notices,
 * agreement, progress) and failover/take.c (redoing each pending
 * collective on stock MPI, or giving up) share this state.
 */
#ifndef DPS_SHIM_FO_H
#define DPS_SHIM_FO_H

#include "shim/core/shim.h"

#define FO_TAG 4242
#define FO_POLL_SEC 50e-6   /* between looks for notices, all being well */
#define FO_WHY_LEN 700      /* a notice: what its sender saw (fo_why) */

enum { FO_FIN_ONE,        /* seq finished */
       FO_FIN_BELOW,      /* every seq below seq finished */
       FO_POSTED_BELOW }; /* every seq below seq may be on an agent */

typedef struct fo_entry {
    uint64_t id;
    uint64_t kind;      /* FO_* above */
    uint64_t seq;
} fo_entry_t;

typedef struct {
    /* notices */
    MPI_Request recv_req;
    char        recv_buf[FO_WHY_LEN];
    MPI_Status  recv_st;
    int         received;       /* notices taken in */
    unsigned char *heard;       /* world_size: a notice came from rank */
    int         sent;           /* we sent ours */
    MPI_Request *send_reqs;     /* world_size - 1 */
    char        *send_buf;      /* FO_WHY_LEN: what we saw */
    int         quiet;          /* Finalize: send no more notices */
    int         settled;        /* ops pending at the failure all ended */
    int         all_started;    /* ... all started on stock MPI or ended */
    /* agreement */
    fo_entry_t *mine, *all;     /* local entries; everyone's, sorted */
    int         nmine, nall;
    int        *counts, *displs;
    MPI_Request req;
    /* communicators freed with finished instances */
    fo_entry_t *freed;
    int         nfreed, freed_cap;
    double      started;
    double      next_poll;      /* see shim_fo_progress */
} fo_state_t;

extern fo_state_t fo;

/* Orders entries by communicator id (bsearch, qsort). */
int fo_entry_cmp(const void *a, const void *b);
/* Start or finish the pending ops stock MPI can take now (lock held). */
void fo_drive_ops(void);
/* The takeover did not end in time: abort the job, saying why. */
void fo_give_up(void);

#endif
