/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A schedule run by stock MPI, round by round (core/redo.h): every
 * transfer of a round is posted at once (PMPI_Isend of each SEND,
 * PMPI_Irecv of each RECV, into scratch for a RECV_REDUCE), local steps
 * run at once, and the round ends when every request has. MPI's order of
 * messages between two ranks on one communicator and tag pairs the k-th
 * SEND with the k-th RECV, as agents do.
 */
#include "shim/core/redo.h"
#include "shim/core/sched.h"
#include "common/dps_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REDO_CHUNK (1u << 30) /* bytes per message: counts are ints */

struct shim_redo {
    const dps_step_t *steps;
    uint32_t          n;
    char             *buf[DPS_NBUF];
    MPI_Comm          comm;
    int               tag;
    uint32_t          i, end; /* the round: steps [i, end) */
    MPI_Request      *reqs;
    MPI_Status       *stats; /* (MPICH's headers warn about
                              * MPI_STATUSES_IGNORE) */
    int               nreq, cap;
    char            **scratch; /* per step of the round: RECV_REDUCE */
};

static dps_status_t add_req(shim_redo_t *r, MPI_Request q)
{
    if (r->nreq == r->cap) {
        int          cap = r->cap ? 2 * r->cap : 16;
        MPI_Request *v = realloc(r->reqs, sizeof(*v) * (size_t)cap);
        MPI_Status  *st;

        if (v == NULL) {
            return DPS_ERR_NOMEM;
        }
        r->reqs = v;
        st = realloc(r->stats, sizeof(*st) * (size_t)cap);
        if (st == NULL) {
            return DPS_ERR_NOMEM;
        }
        r->stats = st;
        r->cap = cap;
    }
    r->reqs[r->nreq++] = q;
    return DPS_OK;
}

/* DPS_OK, or DPS_ERR_MPI with MPI's own message logged. */
static dps_status_t mpi_ok(int rc, const char *call)
{
    char text[MPI_MAX_ERROR_STRING];
    int  len = 0;

    if (rc == MPI_SUCCESS) {
        return DPS_OK;
    }
    if (PMPI_Error_string(rc, text, &len) != MPI_SUCCESS) {
        snprintf(text, sizeof(text), "error %d", rc);
    }
    dps_error("stock MPI redoing a collective: %s failed: %s", call, text);
    return DPS_ERR_MPI;
}

/* One transfer, in chunks MPI's int counts can take. */
static dps_status_t transfer(shim_redo_t *r, int send, char *p, uint64_t len,
                             int peer)
{
    uint64_t     done = 0;
    dps_status_t rc;

    do {
        uint64_t    n = len - done > REDO_CHUNK ? REDO_CHUNK : len - done;
        MPI_Request q;

        rc = send ? mpi_ok(PMPI_Isend(p + done, (int)n, MPI_BYTE, peer, r->tag,
                                      r->comm, &q),
                           "MPI_Isend")
                  : mpi_ok(PMPI_Irecv(p + done, (int)n, MPI_BYTE, peer, r->tag,
                                      r->comm, &q),
                           "MPI_Irecv");
        if (rc == DPS_OK) {
            rc = add_req(r, q);
        }
        done += n;
    } while (rc == DPS_OK && done < len);
    return rc;
}

static dps_status_t start_round(shim_redo_t *r)
{
    uint32_t     j;
    dps_status_t rc = DPS_OK;

    r->end = r->i;
    while (r->end < r->n && r->steps[r->end].round == r->steps[r->i].round) {
        r->end++;
    }
    r->nreq = 0;
    free(r->scratch);
    r->scratch = calloc(r->end - r->i + 1, sizeof(char *));
    if (r->scratch == NULL) {
        return DPS_ERR_NOMEM;
    }
    for (j = r->i; rc == DPS_OK && j < r->end; j++) {
        const dps_step_t *s = &r->steps[j];
        char             *src = r->buf[s->src_buf] + s->src_off;
        char             *dst = r->buf[s->dst_buf] + s->dst_off;

        switch (s->kind) {
        case DPS_STEP_SEND:
            rc = transfer(r, 1, src, s->len, (int)s->peer);
            break;
        case DPS_STEP_RECV:
            rc = transfer(r, 0, dst, s->len, (int)s->peer);
            break;
        case DPS_STEP_RECV_REDUCE:
            r->scratch[j - r->i] = malloc(s->len + 1);
            rc = r->scratch[j - r->i] == NULL
                     ? DPS_ERR_NOMEM
                     : transfer(r, 0, r->scratch[j - r->i], s->len,
                                (int)s->peer);
            break;
        case DPS_STEP_COPY:
            if (s->len > 0) {
                memmove(dst, src, s->len);
            }
            break;
        case DPS_STEP_REDUCE:
            if (s->len > 0 &&
                dps_reduce(s->op, s->dtype, src, dst, s->len) != DPS_OK) {
                rc = DPS_ERR_OP;
            }
            break;
        default: rc = DPS_ERR_PROTO; /* not a step of a schedule */
        }
    }
    return rc;
}

/* The round's requests are done: reduce what came for RECV_REDUCE. */
static dps_status_t end_round(shim_redo_t *r)
{
    uint32_t     j;
    dps_status_t rc = DPS_OK;

    for (j = r->i; j < r->end; j++) {
        const dps_step_t *s = &r->steps[j];
        char             *in = r->scratch[j - r->i];

        if (in != NULL && s->len > 0 && rc == DPS_OK &&
            dps_reduce(s->op, s->dtype, in, r->buf[s->dst_buf] + s->dst_off,
                       s->len) != DPS_OK) {
            rc = DPS_ERR_OP;
        }
        free(in);
        r->scratch[j - r->i] = NULL;
    }
    r->i = r->end;
    return rc;
}

shim_redo_t *shim_redo_start(const shim_op_t *op, MPI_Comm comm, int tag)
{
    shim_redo_t *r = calloc(1, sizeof(*r));

    if (r == NULL || op->sched == NULL) {
        free(r);
        return NULL;
    }
    r->steps = op->sched->steps;
    r->n = op->sched->nsteps;
    r->buf[DPS_BUF_SEND] = op->call.buf[0];
    r->buf[DPS_BUF_RECV] = op->call.buf[1];
    r->buf[DPS_BUF_TMP] = op->tmp;
    r->comm = comm;
    r->tag = tag;
    if (r->n > 0 && start_round(r) != DPS_OK) {
        dps_error("stock MPI cannot start a collective's schedule");
        shim_redo_free(r);
        return NULL;
    }
    return r;
}

dps_status_t shim_redo_test(shim_redo_t *r, int *done)
{
    dps_status_t rc = DPS_OK;
    int          flag = 1;

    *done = 0;
    while (rc == DPS_OK && r->i < r->n) {
        rc = mpi_ok(PMPI_Testall(r->nreq, r->reqs, &flag, r->stats),
                    "MPI_Testall");
        if (rc != DPS_OK || !flag) {
            return rc;
        }
        rc = end_round(r);
        if (rc == DPS_OK && r->i < r->n) {
            rc = start_round(r);
        }
    }
    *done = rc == DPS_OK;
    return rc;
}

void shim_redo_free(shim_redo_t *r)
{
    int i;

    if (r == NULL) {
        return;
    }
    for (i = 0; i < r->nreq; i++) {
        if (r->reqs[i] != MPI_REQUEST_NULL) {
            PMPI_Cancel(&r->reqs[i]);
            PMPI_Request_free(&r->reqs[i]);
        }
    }
    for (uint32_t j = 0; r->scratch != NULL && j < r->end - r->i; j++) {
        free(r->scratch[j]);
    }
    free(r->scratch);
    free(r->reqs);
    free(r->stats);
    free(r);
}
