/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The takeover's entries (failover/fo.h): which instances of each
 * communicator this rank finished, recorded as they end through core's
 * hooks and kept when a communicator is freed; and, once the ranks have
 * agreed, lookups in everyone's. Here too the takeover's state `fo`, at
 * the bottom of failover/: failover.c and take.c use this file, it calls
 * neither.
 */
#include "shim/core/shim.h"
#include "shim/failover/fo.h"
#include "common/dps_log.h"

#include <stdlib.h>

fo_state_t fo = {.recv_req = MPI_REQUEST_NULL, .req = MPI_REQUEST_NULL};

/* Lowest seq of c not finished here (lock held). */
static uint32_t lowest_unfinished(const shim_comm_t *c)
{
    const shim_op_t *op;

    for (op = c->ops_head; op != NULL; op = op->next_in_comm) {
        if (!op->finishing) {
            return op->call.seq;
        }
    }
    return c->seq;
}

void fo_comm_finished(shim_comm_t *c, uint32_t seq)
{
    if (c->fo.nfin == c->fo.fin_cap) {
        uint32_t low = lowest_unfinished(c), *n;
        unsigned i, k = 0;

        for (i = 0; i < c->fo.nfin; i++) {
            if (c->fo.fin[i] >= low) {
                c->fo.fin[k++] = c->fo.fin[i];
            }
        }
        c->fo.nfin = k;
        if (k == c->fo.fin_cap) {
            unsigned cap = c->fo.fin_cap ? 2 * c->fo.fin_cap : 8;

            n = realloc(c->fo.fin, sizeof(*n) * cap);
            if (n == NULL) {
                /* Unrecorded, the instance would look unfinished and
                 * could be redone without this rank: stop now. */
                dps_error("out of memory: aborting the job");
                PMPI_Abort(MPI_COMM_WORLD, 1);
            }
            c->fo.fin = n;
            c->fo.fin_cap = cap;
        }
    }
    c->fo.fin[c->fo.nfin++] = seq;
}

fo_entry_t *fo_entry_add(fo_entry_t **v, int *n, int *cap)
{
    if (*n == *cap) {
        int         ncap = *cap ? 2 * *cap : 16;
        fo_entry_t *nv = realloc(*v, sizeof(**v) * (size_t)ncap);

        if (nv == NULL) {
            dps_error("out of memory: aborting the job");
            PMPI_Abort(MPI_COMM_WORLD, 1);
        }
        *v = nv;
        *cap = ncap;
    }
    return &(*v)[(*n)++];
}

void fo_comm_entries(const shim_comm_t *c, fo_entry_t **v, int *n, int *cap)
{
    uint32_t    low = lowest_unfinished(c);
    fo_entry_t *e;
    unsigned    i;

    if (!c->id_known) {
        return; /* nothing was sent to an agent */
    }
    if (low > 0) {
        e = fo_entry_add(v, n, cap);
        e->id = c->id;
        e->kind = FO_FIN_BELOW;
        e->seq = low;
    }
    for (i = 0; i < c->fo.nfin; i++) {
        if (c->fo.fin[i] >= low) {
            e = fo_entry_add(v, n, cap);
            e->id = c->id;
            e->kind = FO_FIN_ONE;
            e->seq = c->fo.fin[i];
        }
    }
    if (c->seq > 0) {
        /* Called before any post goes to stock MPI: all seqs so far may
         * be on an agent. */
        e = fo_entry_add(v, n, cap);
        e->id = c->id;
        e->kind = FO_POSTED_BELOW;
        e->seq = c->seq;
    }
}

void fo_comm_dropped(const shim_comm_t *c)
{
    /* After shim_fo_fini (MPI_Finalize frees MPI_COMM_SELF's state):
     * nothing can fail over any more. */
    if (shim.fo.ctrl != MPI_COMM_NULL) {
        fo_comm_entries(c, &fo.freed, &fo.nfreed, &fo.freed_cap);
    }
}

int fo_entry_cmp(const void *a, const void *b)
{
    const fo_entry_t *x = a, *y = b;

    return x->id < y->id ? -1 : x->id > y->id;
}

int fo_agreed(uint64_t id, uint32_t seq, int fin)
{
    fo_entry_t key = {id, 0, 0}, *e;

    e = bsearch(&key, fo.all, (size_t)fo.nall, sizeof(key), fo_entry_cmp);
    if (e == NULL) {
        return 0;
    }
    /* Entries of one id sit together: look at all of them. */
    while (e > fo.all && e[-1].id == id) {
        e--;
    }
    for (; e < fo.all + fo.nall && e->id == id; e++) {
        if (fin ? (e->kind == FO_FIN_BELOW
                       ? seq < e->seq
                       : e->kind == FO_FIN_ONE && seq == e->seq)
                : e->kind == FO_POSTED_BELOW && seq < e->seq) {
            return 1;
        }
    }
    return 0;
}

uint64_t fo_posted_max(uint64_t id)
{
    fo_entry_t key = {id, 0, 0}, *e;
    uint64_t   m = 0;

    e = bsearch(&key, fo.all, (size_t)fo.nall, sizeof(key), fo_entry_cmp);
    if (e == NULL) {
        return 0;
    }
    while (e > fo.all && e[-1].id == id) {
        e--;
    }
    for (; e < fo.all + fo.nall && e->id == id; e++) {
        if (e->kind == FO_POSTED_BELOW && e->seq > m) {
            m = e->seq;
        }
    }
    return m;
}
