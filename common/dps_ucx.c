/* SPDX-License-Identifier: BSD-3-Clause */
/* UCP set-up, active-message inbox and small helpers. */
#include "common/dps_ucx.h"
#include "common/dps_log.h"
#include "common/dps_proto.h"
#include "common/dps_status.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

double dps_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void inbox_push(dps_inbox_t *box, dps_inmsg_t *m)
{
    m->next = NULL;
    if (box->tail != NULL) {
        box->tail->next = m;
    } else {
        box->head = m;
    }
    box->tail = m;
}

dps_inmsg_t *dps_inbox_pop(dps_inbox_t *box)
{
    dps_inmsg_t *m = box->head;

    if (m != NULL) {
        box->head = m->next;
        if (box->head == NULL) {
            box->tail = NULL;
        }
    }
    return m;
}

/* A list of messages, reversed. */
static dps_inmsg_t *inmsg_reversed(dps_inmsg_t *list)
{
    dps_inmsg_t *out = NULL, *m;

    while ((m = list) != NULL) {
        list = m->next;
        m->next = out;
        out = m;
    }
    return out;
}

unsigned dps_inmsg_retry(dps_inmsg_t **deferred,
                         int (*handle)(void *ctx, dps_inmsg_t *m), void *ctx)
{
    unsigned total = 0, pass = 1;

    while (pass > 0 && *deferred != NULL) {
        dps_inmsg_t *list = inmsg_reversed(*deferred), *m; /* oldest first */

        *deferred = NULL;
        pass = 0;
        while ((m = list) != NULL) {
            list = m->next;
            if (handle(ctx, m) == DPS_ERR_AGAIN) {
                m->next = *deferred; /* newest first again */
                *deferred = m;
                continue;
            }
            pass++;
            free(m);
        }
        total += pass;
    }
    return total;
}

typedef struct {
    dps_inbox_t *box;
    dps_inmsg_t *msg;
} rndv_ctx_t;

static void rndv_done(void *request, ucs_status_t status, size_t length,
                      void *arg)
{
    rndv_ctx_t *ctx = arg;

    ctx->box->rndv_pending--;
    if (status == UCS_OK) {
        ctx->msg->len = length;
        inbox_push(ctx->box, ctx->msg);
    } else {
        dps_error("receiving a large message failed: %s",
                  ucs_status_string(status));
        free(ctx->msg);
    }
    free(ctx);
    ucp_request_free(request);
}

static ucs_status_t am_handler(void *arg, const void *header,
                               size_t header_length, void *data, size_t length,
                               const ucp_am_recv_param_t *prm)
{
    dps_inbox_t *box = arg;
    dps_inmsg_t *m;

    (void)header;
    (void)header_length;
    m = malloc(sizeof(*m) + length);
    if (m == NULL) {
        dps_error("out of memory receiving a %zu-byte message", length);
        return UCS_OK;
    }
    m->len = length;
    if (prm->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        ucp_request_param_t rp;
        rndv_ctx_t         *ctx = malloc(sizeof(*ctx));
        ucs_status_ptr_t    req;

        if (ctx == NULL) {
            free(m);
            return UCS_OK;
        }
        ctx->box = box;
        ctx->msg = m;
        memset(&rp, 0, sizeof(rp));
        rp.op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        rp.cb.recv_am = rndv_done;
        rp.user_data = ctx;
        req = ucp_am_recv_data_nbx(box->worker, data, m->data, length, &rp);
        if (req == NULL) {
            inbox_push(box, m);
            free(ctx);
        } else if (UCS_PTR_IS_ERR(req)) {
            dps_error("ucp_am_recv_data_nbx: %s",
                      ucs_status_string(UCS_PTR_STATUS(req)));
            free(m);
            free(ctx);
        } else {
            box->rndv_pending++;
        }
        return UCS_OK;
    }
    memcpy(m->data, data, length);
    inbox_push(box, m);
    return UCS_OK;
}

int dps_have_rdma(void)
{
    DIR           *d = opendir("/sys/class/infiniband");
    struct dirent *e;
    int            n = 0;

    while (d != NULL && (e = readdir(d)) != NULL) {
        n += e->d_name[0] != '.';
    }
    if (d != NULL) {
        closedir(d);
    }
    return n > 0;
}

int dps_ucx_open(dps_ucx_t *u, ucs_thread_mode_t mode)
{
    ucp_params_t           params;
    ucp_worker_params_t    wparams;
    ucp_am_handler_param_t am;
    ucp_config_t          *config;
    ucs_status_t           st;

    memset(u, 0, sizeof(*u));
    u->efd = -1;
    st = ucp_config_read(NULL, NULL, &config);
    if (st != UCS_OK) {
        dps_error("ucp_config_read: %s", ucs_status_string(st));
        return DPS_ERR_UCX;
    }
    /* Without RDMA (TCP, shared memory), rendezvous costs a round trip
     * per message and needs the receiver's and then the sender's
     * progress: the agents' 256 KiB FETCH answers took 5x the eager
     * protocol's time (27 against 5.4 ms a 1 MiB Ialltoall, 2 hosts x 2
     * ranks), and a rank's large POST would wait for the rank. With
     * RDMA, rendezvous is the zero-copy path. A user's setting wins. */
    if (getenv("UCX_RNDV_THRESH") == NULL && !dps_have_rdma() &&
        ucp_config_modify(config, "RNDV_THRESH", "inf") != UCS_OK) {
        dps_debug("cannot set UCX's RNDV_THRESH to inf");
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
    params.features = UCP_FEATURE_AM | UCP_FEATURE_RMA | UCP_FEATURE_TAG |
                      UCP_FEATURE_WAKEUP;
    params.name = "dpushim";
    st = ucp_init(&params, config, &u->context);
    ucp_config_release(config);
    if (st != UCS_OK) {
        dps_error("ucp_init: %s", ucs_status_string(st));
        return DPS_ERR_UCX;
    }
    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    /* Callers serialise access to the worker themselves. */
    wparams.thread_mode = mode;
    st = ucp_worker_create(u->context, &wparams, &u->worker);
    if (st != UCS_OK) {
        dps_error("ucp_worker_create: %s", ucs_status_string(st));
        goto err_cleanup;
    }
    if (ucp_worker_get_efd(u->worker, &u->efd) != UCS_OK) {
        u->efd = -1; /* no sleeping: callers poll */
    }
    u->inbox.worker = u->worker;
    memset(&am, 0, sizeof(am));
    am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                    UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_ARG;
    am.id = DPS_AM_ID;
    am.cb = am_handler;
    am.arg = &u->inbox;
    st = ucp_worker_set_am_recv_handler(u->worker, &am);
    if (st != UCS_OK) {
        dps_error("ucp_worker_set_am_recv_handler: %s", ucs_status_string(st));
        goto err_worker;
    }
    return DPS_OK;

err_worker:
    ucp_worker_destroy(u->worker);
err_cleanup:
    ucp_cleanup(u->context);
    memset(u, 0, sizeof(*u));
    return DPS_ERR_UCX;
}

void dps_ucx_close(dps_ucx_t *u)
{
    dps_inmsg_t *m;

    while ((m = dps_inbox_pop(&u->inbox)) != NULL) {
        free(m);
    }
    if (u->worker != NULL) {
        ucp_worker_destroy(u->worker);
    }
    if (u->context != NULL) {
        ucp_cleanup(u->context);
    }
    memset(u, 0, sizeof(*u));
    u->efd = -1;
}

static void send_done(void *request, ucs_status_t status, void *user_data)
{
    if (status != UCS_OK && status != UCS_ERR_CANCELED) {
        dps_debug("message send failed: %s", ucs_status_string(status));
    }
    free(user_data);
    ucp_request_free(request);
}

int dps_ucx_send(ucp_ep_h ep, void *msg, size_t len)
{
    ucp_request_param_t rp;
    ucs_status_ptr_t    req;

    memset(&rp, 0, sizeof(rp));
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    rp.cb.send = send_done;
    rp.user_data = msg;
    req = ucp_am_send_nbx(ep, DPS_AM_ID, NULL, 0, msg, len, &rp);
    if (req == NULL) {
        free(msg);
        return DPS_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        dps_debug("ucp_am_send_nbx: %s",
                  ucs_status_string(UCS_PTR_STATUS(req)));
        free(msg);
        return DPS_ERR_UCX;
    }
    return DPS_OK;
}

int dps_ucx_wait(ucp_worker_h worker, ucs_status_ptr_t req, int timeout_ms)
{
    double       deadline = dps_now() + timeout_ms / 1000.0;
    ucs_status_t st;

    if (req == NULL) {
        return DPS_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return DPS_ERR_UCX;
    }
    while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        ucp_worker_progress(worker);
        if (dps_now() > deadline) {
            ucp_request_cancel(worker, req);
            ucp_request_free(req);
            return DPS_ERR_TIMEOUT;
        }
    }
    ucp_request_free(req);
    return (st == UCS_OK) ? DPS_OK : DPS_ERR_UCX;
}

int dps_ucx_ep_create(ucp_worker_h worker, const void *addr,
                      ucp_err_handler_cb_t err_cb, void *err_arg, ucp_ep_h *ep)
{
    ucp_ep_params_t ep_params;
    ucs_status_t    st;

    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address = addr;
    if (err_cb != NULL) {
        ep_params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep_params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
        ep_params.err_handler.cb = err_cb;
        ep_params.err_handler.arg = err_arg;
    }
    st = ucp_ep_create(worker, &ep_params, ep);
    if (st != UCS_OK) {
        dps_error("ucp_ep_create: %s", ucs_status_string(st));
        return DPS_ERR_UCX;
    }
    return DPS_OK;
}

void dps_ucx_ep_close(ucp_worker_h worker, ucp_ep_h ep, int timeout_ms)
{
    ucp_request_param_t rp;

    if (ep == NULL) {
        return;
    }
    memset(&rp, 0, sizeof(rp));
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    rp.flags = UCP_EP_CLOSE_FLAG_FORCE;
    dps_ucx_wait(worker, ucp_ep_close_nbx(ep, &rp), timeout_ms);
}

void dps_hex_encode(const void *buf, size_t len, char *out)
{
    static const char    digits[] = "0123456789abcdef";
    const unsigned char *p = buf;
    size_t               i;

    for (i = 0; i < len; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * len] = '\0';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

long dps_hex_decode(const char *hex, void *out, size_t out_len)
{
    unsigned char *p = out;
    size_t         n = strlen(hex), i;

    if (n % 2 != 0 || n / 2 > out_len) {
        return -1;
    }
    for (i = 0; i < n / 2; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

        if (hi < 0 || lo < 0) {
            return -1;
        }
        p[i] = (unsigned char)(hi << 4 | lo);
    }
    return (long)(n / 2);
}

static socklen_t kick_addr(int a, int b, struct sockaddr_un *sa)
{
    int n;

    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    /* Abstract name: nothing in the file system to clean up. */
    n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "dpushim-%d.%d",
                 a, b);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

int dps_kick_open(int a, int b)
{
    struct sockaddr_un sa;
    socklen_t          len = kick_addr(a, b, &sa);
    int                fd;

    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        dps_warn("cannot create the wake-up socket: %m");
        return -1;
    }
    if (bind(fd, (struct sockaddr *)&sa, len) != 0) {
        dps_warn("cannot bind the wake-up socket: %m");
        close(fd);
        return -1;
    }
    return fd;
}

void dps_kick(int a, int b)
{
    static __thread int fd = -1;
    struct sockaddr_un  sa;
    socklen_t           len;
    char                byte = 0;

    if (a <= 0) {
        return;
    }
    if (fd < 0) {
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            return;
        }
    }
    len = kick_addr(a, b, &sa);
    /* A full queue (EAGAIN) means the agent has kicks to read already. */
    (void)sendto(fd, &byte, 1, MSG_DONTWAIT, (struct sockaddr *)&sa, len);
}

void dps_kick_drain(int fd)
{
    char buf[64];

    while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0) {
    }
}
