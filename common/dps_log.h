/* SPDX-License-Identifier: BSD-3-Clause */
/* One logging macro family for shim and agent: "dpushim[<who>]: msg". */
#ifndef DPS_LOG_H
#define DPS_LOG_H

#include <stddef.h>
#include <stdio.h>

typedef enum {
    DPS_LOG_ERROR = 0,
    DPS_LOG_WARN = 1,
    DPS_LOG_INFO = 2,
    DPS_LOG_DEBUG = 3
} dps_log_level_t;

extern int dps_log_level;

/* Set the identity printed in brackets ("3" for rank 3, "agent 0"). */
void dps_log_set_who(const char *who);

/* Write a message to err (errlen bytes; err may be NULL, errlen 0): how
 * the functions that say why they failed into a caller's buffer write it
 * (the listen, secret, map and MUNGE functions). */
void dps_seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Print one line at the given level; use the macros below instead. */
void dps_log_print(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The level test comes before the arguments are evaluated. */
#define dps_log(_lvl, ...)                      \
    do {                                        \
        if ((_lvl) <= dps_log_level) {          \
            dps_log_print((_lvl), __VA_ARGS__); \
        }                                       \
    } while (0)

#define dps_error(...) dps_log(DPS_LOG_ERROR, __VA_ARGS__)
#define dps_warn(...)  dps_log(DPS_LOG_WARN, __VA_ARGS__)
#define dps_info(...)  dps_log(DPS_LOG_INFO, __VA_ARGS__)
#define dps_debug(...) dps_log(DPS_LOG_DEBUG, __VA_ARGS__)

#endif
