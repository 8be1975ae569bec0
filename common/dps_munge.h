/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MUNGE credentials (https://dun.github.io/munge/), the cluster's own
 * authentication (Slurm's): a job proves its uid to an agent service
 * (dpu_agent --service) with one. libmunge.so.2 is opened at run time,
 * not linked: the shim is preloaded into every program and the agent
 * cross-built for a DPU, and neither may need munge where it is not
 * used. Its ABI (munge.h of MUNGE 0.5) is declared in dps_munge.c.
 *
 * The service's challenge and the job's answer (common/dps_listen.h,
 * "Service") bind a credential to one connection: its payload is
 * dps_munge_payload() of the connection's nonce and the job's name, and
 * the job restricts its decoding to the service's uid.
 */
#ifndef DPS_MUNGE_H
#define DPS_MUNGE_H

#include "common/dps_status.h"

#include <stddef.h>
#include <sys/types.h>

/*
 * Encode a credential of this process's uid and gid carrying len bytes
 * of payload, decodable only by processes of uid decoder (MUNGE's uid
 * restriction), through munged at socket (NULL or "": libmunge's
 * default). On DPS_OK *cred is a malloc'ed string (caller frees).
 * Otherwise err says why: DPS_ERR_UNSUPP (no libmunge.so.2),
 * DPS_ERR_IO (munged cannot be reached or refused).
 */
int dps_munge_encode(const char *socket, const void *payload, size_t len,
                     uid_t decoder, char **cred, char *err, size_t errlen);

/*
 * Decode cred through munged at socket: on DPS_OK *uid and *gid are the
 * encoder's and *payload (malloc'ed, NUL-terminated, *len bytes before
 * the NUL) its payload. Otherwise err says why and the result is
 * DPS_ERR_UNSUPP (no libmunge.so.2), DPS_ERR_IO (munged cannot be
 * reached), or DPS_ERR_INVALID (forged, expired, replayed or not ours to
 * decode: MUNGE's own words in err).
 */
int dps_munge_decode(const char *socket, const char *cred, void **payload,
                     size_t *len, uid_t *uid, gid_t *gid, char *err,
                     size_t errlen);

/* The payload that binds a credential to a connection's nonce (hex) and
 * a job: "dpushim-service 1 NONCE JOB" into out. Returns its length, or
 * 0 if it does not fit. */
size_t dps_munge_payload(const char *nonce, const char *job, char *out,
                         size_t len);

#endif
