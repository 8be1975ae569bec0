/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The takeover from a failed agent, inside: failover/failover.c (notices,
 * agreement, progress), failover/take.c (redoing each pending collective
 * on stock MPI, or giving up) and failover/entries.c (what each rank
 * finished, the state) share this, calling in that order, top to bottom.
 * Outside: failover/failover.h.
 */
#ifndef DPS_SHIM_FO_H
#define DPS_SHIM_FO_H

#include "shim/failover/failover.h"

#define FO_TAG      4242
#define FO_POLL_SEC 50e-6 /* between looks for notices, all being well */
#define FO_WHY_LEN  700   /* a notice: what its sender saw (shim.fo.why) */

enum {
    FO_FIN_ONE,   /* seq finished */
    FO_FIN_BELOW, /* every seq below seq finished */
    FO_POSTED_BELOW
}; /* every seq below seq may be on an agent */

typedef struct fo_entry {
    uint64_t id;
    uint64_t kind; /* FO_* above */
    uint64_t seq;
} fo_entry_t;

typedef struct {
    /* notices */
    MPI_Request    recv_req;
    char           recv_buf[FO_WHY_LEN];
    MPI_Status     recv_st;
    int            received;    /* notices taken in */
    unsigned char *heard;       /* world_size: a notice came from rank */
    int            sent;        /* we sent ours */
    MPI_Request   *send_reqs;   /* world_size - 1 */
    char          *send_buf;    /* FO_WHY_LEN: what we saw */
    int            quiet;       /* Finalize: send no more notices */
    int            settled;     /* ops pending at the failure all ended */
    int            all_started; /* ... all started on stock MPI or ended */
    /* agreement */
    fo_entry_t *mine, *all; /* local entries; everyone's, sorted */
    int         nmine, nall;
    int        *counts, *displs;
    MPI_Request req;
    /* communicators freed with finished instances */
    fo_entry_t *freed;
    int         nfreed, freed_cap;
    double      started;
    double      next_poll; /* see shim_fo_progress */
} fo_state_t;

extern fo_state_t fo; /* failover/entries.c */

/* Is c ready for stock MPI: agreement done, id known? */
static inline int fo_comm_ready(const shim_comm_t *c)
{
    return shim.fo.state == SHIM_FO_DECIDED && c->id_known;
}

/* ---- failover/entries.c: this rank's entries, and everyone's --------- */

/* Core's hook (shim_hooks.finished): instance seq of c ended here (done
 * by our agent, or failed before it got there), so it must never be
 * redone: kept in c->fo.fin for the agreement (lock held). Aborts the job
 * when out of memory: unrecorded, it could be redone without this rank. */
void fo_comm_finished(shim_comm_t *c, uint32_t seq);

/* Core's hook (shim_hooks.dropped): c's state goes; its entries are kept
 * in fo.freed for an agreement to come (lock held). */
void fo_comm_dropped(const shim_comm_t *c);

/* A new entry at the end of *v (*n entries, room for *cap), grown as
 * needed; aborts the job when out of memory. */
fo_entry_t *fo_entry_add(fo_entry_t **v, int *n, int *cap);

/* Append c's entries to *v: what it finished, and below which seq it may
 * have posted to an agent (lock held). */
void fo_comm_entries(const shim_comm_t *c, fo_entry_t **v, int *n, int *cap);

/* Orders entries by communicator id (bsearch, qsort). */
int fo_entry_cmp(const void *a, const void *b);

/* Once agreed: does an entry of any rank about communicator id cover
 * seq: finished it (fin), or may have offloaded it (!fin)? */
int fo_agreed(uint64_t id, uint32_t seq, int fin);

/* Once agreed: the highest seq any rank had posted on communicator id
 * when it saw the failure (the same on every rank); 0 if none. */
uint64_t fo_posted_max(uint64_t id);

/* ---- failover/take.c: pending collectives to stock MPI --------------- */

/* Where instance seq of c runs on stock MPI: *use, and 1; or 0 when it
 * cannot (then logged and counted, unless quiet). Lock held. */
int fo_stock_comm(shim_comm_t *c, uint32_t seq, int coll, MPI_Comm *use,
                  int quiet);

/* Start or finish the pending ops stock MPI can take now (lock held). */
void fo_drive_ops(void);

/* The takeover did not end in time: abort the job, saying why. */
void fo_give_up(void);

#endif
