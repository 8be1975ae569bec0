/* SPDX-License-Identifier: BSD-3-Clause */
/* Logging: one line per call, written with a single write to stderr. */
#include "common/dps_log.h"
#include "common/dps_status.h"

#include <stdarg.h>
#include <string.h>
#include <unistd.h>

int         dps_log_level = DPS_LOG_WARN;
static char dps_log_who[48] = "?";

void dps_log_set_who(const char *who)
{
    snprintf(dps_log_who, sizeof(dps_log_who), "%s", who);
}

void dps_log_print(int level, const char *fmt, ...)
{
    static const char *names[] = {"error", "warning", "info", "debug"};
    char               line[1024];
    va_list            ap;
    int                n;

    n = snprintf(line, sizeof(line), "dpushim[%s]: %s: ", dps_log_who,
                 names[level < 0 ? 0 : (level > 3 ? 3 : level)]);
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof(line) - 2) {
        n = (int)sizeof(line) - 2;
    }
    line[n++] = '\n';
    /* One write so that lines of different ranks do not interleave. */
    if (write(STDERR_FILENO, line, (size_t)n) < 0) {
        /* nothing sensible left to do */
    }
}

const char *dps_status_str(int status)
{
    switch (status) {
    case DPS_OK: return "success";
    case DPS_ERR_INVALID: return "invalid argument";
    case DPS_ERR_NOMEM: return "out of memory";
    case DPS_ERR_IO: return "i/o error";
    case DPS_ERR_UCX: return "ucx error";
    case DPS_ERR_TIMEOUT: return "timed out";
    case DPS_ERR_PROTO: return "protocol error";
    case DPS_ERR_DEAD: return "peer is gone";
    case DPS_ERR_UNSUPP: return "unsupported";
    case DPS_ERR_AGAIN: return "try again";
    case DPS_ERR_MISMATCH: return "ranks' arguments do not match";
    case DPS_ERR_ARG: return "erroneous arguments";
    case DPS_ERR_BUFFER: return "send and receive buffers alias";
    case DPS_ERR_TOKEN: return "token mismatch";
    case DPS_ERR_TRUNCATE: return "message truncated";
    case DPS_ERR_OP: return "reduction failed";
    case DPS_ERR_MPI: return "an MPI call failed";
    default: return "unknown error";
    }
}

void dps_seterr(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
