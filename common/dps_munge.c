/* SPDX-License-Identifier: BSD-3-Clause */
/* MUNGE credentials through libmunge.so.2, opened at run time
 * (dps_munge.h says why). */
#define _GNU_SOURCE
#include "common/dps_munge.h"
#include "common/dps_log.h"
#include "common/dps_status.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* munge.h of MUNGE 0.5 (libmunge.so.2): the few names used here. */
typedef struct munge_ctx *munge_ctx_t;
typedef int               munge_err_t;
enum {
    MUNGE_OPT_SOCKET = 8,
    MUNGE_OPT_UID_RESTRICTION = 9,
};
enum {
    EMUNGE_SUCCESS = 0,
    EMUNGE_SOCKET = 6,
    EMUNGE_CRED_REPLAYED = 17,
};

static struct {
    munge_ctx_t (*ctx_create)(void);
    void (*ctx_destroy)(munge_ctx_t);
    munge_err_t (*ctx_set)(munge_ctx_t, int, ...);
    const char *(*ctx_strerror)(munge_ctx_t);
    munge_err_t (*encode)(char **, munge_ctx_t, const void *, int);
    munge_err_t (*decode)(const char *, munge_ctx_t, void **, int *, uid_t *,
                          gid_t *);
    const char *(*strerror)(munge_err_t);
    char why[300]; /* why it is not there */
    int  ok;
} mg;
static pthread_once_t mg_once = PTHREAD_ONCE_INIT;

static void mg_load(void)
{
    void *h = dlopen("libmunge.so.2", RTLD_NOW | RTLD_LOCAL);

    if (h == NULL) {
        snprintf(mg.why, sizeof(mg.why),
                 "MUNGE is not installed here (%s; Debian: libmunge2)",
                 dlerror());
        return;
    }
    *(void **)&mg.ctx_create = dlsym(h, "munge_ctx_create");
    *(void **)&mg.ctx_destroy = dlsym(h, "munge_ctx_destroy");
    *(void **)&mg.ctx_set = dlsym(h, "munge_ctx_set");
    *(void **)&mg.ctx_strerror = dlsym(h, "munge_ctx_strerror");
    *(void **)&mg.encode = dlsym(h, "munge_encode");
    *(void **)&mg.decode = dlsym(h, "munge_decode");
    *(void **)&mg.strerror = dlsym(h, "munge_strerror");
    if (!mg.ctx_create || !mg.ctx_destroy || !mg.ctx_set || !mg.ctx_strerror ||
        !mg.encode || !mg.decode || !mg.strerror) {
        snprintf(mg.why, sizeof(mg.why),
                 "libmunge.so.2 lacks a function of MUNGE 0.5's API");
        dlclose(h);
        return;
    }
    mg.ok = 1;
}

/* A context for munged at socket (NULL/"": the default). */
static int ctx_open(const char *socket, munge_ctx_t *ctx, char *err,
                    size_t errlen)
{
    pthread_once(&mg_once, mg_load);
    if (!mg.ok) {
        dps_seterr(err, errlen, "%s", mg.why);
        return DPS_ERR_UNSUPP;
    }
    *ctx = mg.ctx_create();
    if (*ctx == NULL) {
        dps_seterr(err, errlen, "munge_ctx_create: out of memory");
        return DPS_ERR_NOMEM;
    }
    if (socket != NULL && socket[0] != '\0' &&
        mg.ctx_set(*ctx, MUNGE_OPT_SOCKET, socket) != EMUNGE_SUCCESS) {
        dps_seterr(err, errlen, "MUNGE socket %s: %s", socket,
                   mg.ctx_strerror(*ctx));
        mg.ctx_destroy(*ctx);
        return DPS_ERR_INVALID;
    }
    return DPS_OK;
}

/* MUNGE's message for e, with the context's details where it has some. */
static const char *mg_msg(munge_ctx_t ctx, munge_err_t e)
{
    const char *s = mg.ctx_strerror(ctx);

    return s != NULL ? s : mg.strerror(e);
}

static const char *where(const char *socket)
{
    return socket != NULL && socket[0] != '\0' ? socket
                                               : "munged's default socket";
}

int dps_munge_encode(const char *socket, const void *payload, size_t len,
                     uid_t decoder, char **cred, char *err, size_t errlen)
{
    munge_ctx_t ctx;
    munge_err_t e;
    int         rc = ctx_open(socket, &ctx, err, errlen);

    *cred = NULL;
    if (rc != DPS_OK) {
        return rc;
    }
    e = mg.ctx_set(ctx, MUNGE_OPT_UID_RESTRICTION, decoder);
    if (e == EMUNGE_SUCCESS) {
        e = mg.encode(cred, ctx, payload, (int)len);
    }
    if (e != EMUNGE_SUCCESS) {
        dps_seterr(err, errlen, "cannot get a MUNGE credential (%s): %s",
                   where(socket), mg_msg(ctx, e));
        free(*cred);
        *cred = NULL;
        rc = DPS_ERR_IO;
    }
    mg.ctx_destroy(ctx);
    return rc;
}

int dps_munge_decode(const char *socket, const char *cred, void **payload,
                     size_t *len, uid_t *uid, gid_t *gid, char *err,
                     size_t errlen)
{
    munge_ctx_t ctx;
    munge_err_t e;
    void       *buf = NULL;
    int         n = 0, rc = ctx_open(socket, &ctx, err, errlen);

    *payload = NULL;
    if (rc != DPS_OK) {
        return rc;
    }
    e = mg.decode(cred, ctx, &buf, &n, uid, gid);
    if (e != EMUNGE_SUCCESS) {
        dps_seterr(err, errlen, "%scredential refused by MUNGE: %s",
                   e == EMUNGE_CRED_REPLAYED ? "replayed " : "",
                   mg_msg(ctx, e));
        rc = e == EMUNGE_SOCKET ? DPS_ERR_IO : DPS_ERR_INVALID;
        free(buf);
        goto out;
    }
    /* NUL-terminated for the caller's comparisons. */
    *payload = malloc((size_t)n + 1);
    if (*payload == NULL) {
        dps_seterr(err, errlen, "out of memory");
        rc = DPS_ERR_NOMEM;
        free(buf);
        goto out;
    }
    if (n > 0) {
        memcpy(*payload, buf, (size_t)n);
    }
    ((char *)*payload)[n] = '\0';
    *len = (size_t)n;
    free(buf);
out:
    mg.ctx_destroy(ctx);
    return rc;
}

size_t dps_munge_payload(const char *nonce, const char *job, char *out,
                         size_t len)
{
    int n = snprintf(out, len, "dpushim-service 1 %s %s", nonce, job);

    return n < 0 || (size_t)n >= len ? 0 : (size_t)n;
}
