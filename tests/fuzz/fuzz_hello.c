/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness for the hellos a listening agent and an agent service
 * decode from anyone who connects to their port (dps_listen_decode_hello,
 * dps_service_decode_hello). Every prefix of the input is decoded, as the
 * agent does while bytes arrive; a hello accepted must re-encode to
 * exactly the bytes it came from, and a prefix of an accepted hello must
 * never be refused.
 *
 * Built by `make fuzz` (clang); `make check` runs it briefly. By hand:
 * build/fuzz/fuzz_hello -max_total_time=600
 */
#include "common/dps_listen.h"
#include "common/dps_status.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The service's hello (a MUNGE credential instead of a secret). */
static void service_hello(const uint8_t *data, size_t size)
{
    char   job[DPS_LISTEN_NAME_MAX + 1], cred[DPS_CRED_MAX + 1], err[256];
    size_t n, len;
    int    rc = DPS_ERR_AGAIN;

    for (n = 0; n <= size && rc == DPS_ERR_AGAIN; n++) {
        rc = dps_service_decode_hello(data, n, job, sizeof(job), cred,
                                      sizeof(cred), err, sizeof(err));
    }
    if (rc == DPS_OK) {
        void *m = dps_service_encode_hello(job, cred, &len);

        if (m == NULL || len != n - 1 || memcmp(m, data, len) != 0) {
            abort(); /* accepted bytes that are not a hello */
        }
        for (n = 0; n < len; n++) {
            if (dps_service_decode_hello(data, n, job, sizeof(job), cred,
                                         sizeof(cred), err,
                                         sizeof(err)) != DPS_ERR_AGAIN) {
                abort(); /* a prefix of a good hello refused */
            }
        }
        free(m);
    } else if (rc != DPS_ERR_PROTO && rc != DPS_ERR_AGAIN) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char    job[DPS_LISTEN_NAME_MAX + 1], err[256];
    uint8_t secret[DPS_SECRET_LEN];
    size_t  n, len;
    int     rc = DPS_ERR_AGAIN;

    for (n = 0; n <= size && rc == DPS_ERR_AGAIN; n++) {
        rc = dps_listen_decode_hello(data, n, job, sizeof(job), secret, err,
                                     sizeof(err));
    }
    if (rc == DPS_OK) {
        void *m = dps_listen_encode_hello(job, secret, &len);

        if (m == NULL || len != n - 1 || memcmp(m, data, len) != 0) {
            abort(); /* accepted bytes that are not a hello */
        }
        for (n = 0; n < len; n++) {
            if (dps_listen_decode_hello(data, n, job, sizeof(job), secret, err,
                                        sizeof(err)) != DPS_ERR_AGAIN) {
                abort(); /* a prefix of a good hello refused */
            }
        }
        free(m);
    } else if (rc != DPS_ERR_PROTO && rc != DPS_ERR_AGAIN) {
        abort();
    }
    service_hello(data, size);
    return 0;
}
