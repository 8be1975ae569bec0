/* SPDX-License-Identifier: BSD-3-Clause */
/* Thin helpers over UCP shared by the shim and the agent. */
#ifndef DPS_UCX_H
#define DPS_UCX_H

#include "common/dps_status.h"

#include <stddef.h>
#include <stdint.h>
#include <ucp/api/ucp.h>

/* A received message, copied out of UCX, waiting to be handled. */
typedef struct dps_inmsg {
    struct dps_inmsg *next;
    size_t            len;
    char              data[];
} dps_inmsg_t;

/*
 * Messages received by the AM handler. Handlers only queue: every reaction
 * (which may send or post RMA) runs outside UCX callbacks.
 */
typedef struct dps_inbox {
    dps_inmsg_t *head, *tail;
    ucp_worker_h worker;
    unsigned     rndv_pending; /* rendezvous receives in flight */
} dps_inbox_t;

typedef struct dps_ucx {
    ucp_context_h context;
    ucp_worker_h  worker;
    dps_inbox_t   inbox;
    int           efd; /* worker event fd, -1 if unsupported */
} dps_ucx_t;

/*
 * Create a UCP context (AM and RMA) and one worker with wakeup support, and
 * install the DPS_AM_ID handler feeding u->inbox. mode: the worker's
 * thread mode, UCS_THREAD_MODE_SINGLE when one thread uses it, SERIALIZED
 * when several do, one at a time under a lock of the caller's. Returns
 * DPS_OK or DPS_ERR_UCX (logged).
 */
int dps_ucx_open(dps_ucx_t *u, ucs_thread_mode_t mode);

/* Does this host have RDMA devices (/sys/class/infiniband not empty)?
 * 1 or 0. Without, dps_ucx_open turns UCX's rendezvous off
 * (UCX_RNDV_THRESH=inf) unless the user set it. */
int dps_have_rdma(void);

/* Destroy what dps_ucx_open created and free queued messages. */
void dps_ucx_close(dps_ucx_t *u);

/* Pop the oldest queued message, or NULL; free() it when done. */
dps_inmsg_t *dps_inbox_pop(dps_inbox_t *box);

/*
 * Messages that had to wait (*deferred: newest first, as a receiver
 * pushes them): handle(ctx, m) each again, oldest first, and again while
 * a pass handles one, since a message can wait for another deferred one.
 * handle returns DPS_ERR_AGAIN to keep m (still waiting); m is freed
 * otherwise (handled, or failed). *deferred keeps the waiting ones,
 * newest first. Returns how many were handled (a count).
 */
unsigned dps_inmsg_retry(dps_inmsg_t **deferred,
                         int (*handle)(void *ctx, dps_inmsg_t *m), void *ctx);

/*
 * Send msg (malloc'ed, ownership taken: freed when UCX is done with it) on
 * ep as one active message. Returns DPS_OK or DPS_ERR_UCX; on error msg is
 * freed too.
 */
int dps_ucx_send(ucp_ep_h ep, void *msg, size_t len);

/*
 * Progress the worker until the request completes or timeout_ms passes;
 * for set-up and tear-down only. req is a ucs_status_ptr_t from an nbx
 * call; the request is released. Returns DPS_OK, DPS_ERR_UCX or
 * DPS_ERR_TIMEOUT.
 */
int dps_ucx_wait(ucp_worker_h worker, ucs_status_ptr_t req, int timeout_ms);

/* Create an endpoint to a worker address. err_cb may be NULL. Returns
 * DPS_OK or DPS_ERR_UCX (logged). */
int dps_ucx_ep_create(ucp_worker_h worker, const void *addr,
                      ucp_err_handler_cb_t err_cb, void *err_arg,
                      ucp_ep_h *ep);

/* Flush and close an endpoint, waiting at most timeout_ms. */
void dps_ucx_ep_close(ucp_worker_h worker, ucp_ep_h ep, int timeout_ms);

/* Hex text of len bytes into out (2*len+1 bytes). */
void dps_hex_encode(const void *buf, size_t len, char *out);

/* Decode hex text; returns the number of bytes (a length), or -1 if it
 * is not hex or does not fit in out_len bytes. */
long dps_hex_decode(const char *hex, void *out, size_t out_len);

/* Monotonic time in seconds. */
double dps_now(void);

/*
 * Wake-up channels between processes of one host: abstract UNIX datagram
 * sockets. UCX's own wake-up (the worker event fd) can miss shared-memory
 * arrivals, so a sender also "kicks" a sleeping receiver after a message.
 * Names: an agent is (pid, DPS_KICK_AGENT) for its ranks and (job key,
 * agent index) for the other agents; a rank is (pid, DPS_KICK_RANK).
 * dps_kick_open returns the bound socket, or -1 (logged).
 */
#define DPS_KICK_AGENT (-1)
#define DPS_KICK_RANK  (-2)

int dps_kick_open(int a, int b);

/* Send one kick to the socket named (a, b); errors are ignored (a remote
 * or dead agent has no socket here). */
void dps_kick(int a, int b);

/* Drain pending kicks from a socket made by dps_kick_open. */
void dps_kick_drain(int fd);

#endif
