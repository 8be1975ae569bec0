/* SPDX-License-Identifier: BSD-3-Clause */
/* The CMA reachability proof of dps_cma.h: the rank's token, the
 * agent's check. */
#define _GNU_SOURCE
#include "common/dps_cma.h"
#include "common/dps_status.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/random.h>
#include <sys/uio.h>

int dps_cma_token_new(uint64_t *token)
{
    uint64_t t = 0;

    while (t == 0) {
        ssize_t n = getrandom(&t, sizeof(t), 0);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n != (ssize_t)sizeof(t)) {
            *token = 0;
            if (n >= 0) {
                errno = EIO;
            }
            return DPS_ERR_IO;
        }
    }
    *token = t;
    return DPS_OK;
}

int dps_cma_check(uint32_t pid, uint64_t addr, uint64_t token)
{
    uint64_t     v = 0;
    struct iovec l = {&v, sizeof(v)};
    struct iovec r = {(void *)(uintptr_t)addr, sizeof(v)};
    ssize_t      n;

    /* pid 0 and pids beyond pid_t would name no process, or this one. */
    if (pid == 0 || pid > INT_MAX || addr == 0 || token == 0 ||
        (uint64_t)(uintptr_t)addr != addr) {
        return DPS_ERR_INVALID;
    }
    do {
        n = process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        return DPS_ERR_IO;
    }
    if (n != (ssize_t)sizeof(v)) {
        errno = EFAULT; /* the token would straddle an unmapped page */
        return DPS_ERR_IO;
    }
    return v == token ? DPS_OK : DPS_ERR_TOKEN;
}

const char *dps_cma_why(int status, int err)
{
    switch (status) {
    case DPS_OK: return "token read back";
    case DPS_ERR_TOKEN: return "another process has that pid: token mismatch";
    case DPS_ERR_INVALID: return strerror(EINVAL);
    case DPS_ERR_IO: return strerror(err);
    default: return dps_status_str(status);
    }
}
