/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Listening agents: the hello a job sends to `dpu_agent --listen`, the
 * per-job secret files both sides use, the client that connects, and the
 * agent map that tells a host which listener to use.
 *
 * Hello (client -> listener), fixed little-endian header then the name:
 *
 *   offset size
 *     0     4   magic     DPS_LISTEN_MAGIC (0x4C535044, "DPSL")
 *     4     2   version   DPS_PROTO_VERSION
 *     6     2   reserved  0
 *     8     4   name_len  1 .. DPS_LISTEN_NAME_MAX
 *    12    32   secret    the bytes of DIR/<job>.key
 *    44     n   job name  name_len bytes of [A-Za-z0-9._-], no NUL
 *
 * Nothing else follows until the reply. The listener answers one line:
 * "ok <pid> <hostname> <hex UCX worker address>[ <grant socket>]\n" (the
 * connection then belongs to the job's agent, process <pid>, which exits
 * when it closes; the grant socket, an absolute path, is where its ranks
 * grant it their memory, dps_grant.h), or "refused <reason>\n" and
 * closes.
 *
 * Service (dpu_agent --service, authenticated by MUNGE): the service
 * speaks first, one line
 *
 *   "challenge <nonce: 32 lowercase hex digits> <the service's uid>\n"
 *
 * and the job answers with its service hello, little-endian:
 *
 *   offset size
 *     0     4   magic     DPS_SERVICE_MAGIC (0x4D535044, "DPSM")
 *     4     2   version   DPS_PROTO_VERSION
 *     6     2   reserved  0
 *     8     4   name_len  1 .. DPS_LISTEN_NAME_MAX
 *    12     4   cred_len  1 .. DPS_CRED_MAX
 *    16     n   job name  as above
 *  16+n     m   credential, MUNGE's text: payload dps_munge_payload(nonce,
 *               job), decodable by the service's uid only
 *
 * then the same answer as a listener's. A credential is good for one
 * connection (its nonce) and one job, once (munged refuses a replay).
 *
 * Secret file DIR/<job>.key: exactly 64 lowercase hex digits and "\n",
 * a regular file (not a symlink) owned by the effective uid, mode without
 * group/other bits; DIR owned by the effective uid and not writable by
 * group or others. Default DIR: ${TMPDIR:-/tmp}/dpushim-<euid>.
 *
 * Agent map file (dps_agent_map_lookup):
 *
 *   # comment (a '#' anywhere starts one, up to the end of the line)
 *   HOST  AGENT [AGENT...]
 *
 * fields separated by spaces or tabs, blank lines ignored. AGENT is
 * ADDR:PORT with ADDR an IPv4 address or a host name, or [IPv6]:PORT;
 * PORT is 1 to 65535. HOST is a host name or "*". A host uses the line
 * whose HOST equals its name exactly (case-insensitive); failing that, the
 * line whose short name (up to the first '.') equals its short name;
 * failing that, the "*" line. The n-th virtual node of the host (0-based)
 * uses AGENT number n modulo the number of AGENTs on that line. Each HOST
 * may appear on one line only. In an AGENT, {host} stands for the host's
 * name and {short} for its short name, so one line serves a cluster whose
 * DPUs are named after their hosts: "*  {short}-dpu:7420".
 */
#ifndef DPS_LISTEN_H
#define DPS_LISTEN_H

#include "common/dps_log.h" /* dps_seterr */
#include "common/dps_status.h"

#include <stddef.h>
#include <stdint.h>

#define DPS_LISTEN_MAGIC        0x4C535044u /* "DPSL" */
#define DPS_LISTEN_HDR_LEN      44          /* hello bytes before the name */
#define DPS_LISTEN_NAME_MAX     64
#define DPS_LISTEN_HELLO_MAX    (DPS_LISTEN_HDR_LEN + DPS_LISTEN_NAME_MAX)
#define DPS_SECRET_LEN          32
#define DPS_LISTEN_HOSTPORT_MAX 300         /* "[v6 or host name]:port\0" */
#define DPS_SERVICE_MAGIC       0x4D535044u /* "DPSM" */
#define DPS_SERVICE_HDR_LEN     16
#define DPS_CRED_MAX            2048 /* a MUNGE credential's text, at most */
#define DPS_SERVICE_HELLO_MAX \
    (DPS_SERVICE_HDR_LEN + DPS_LISTEN_NAME_MAX + DPS_CRED_MAX)
#define DPS_NONCE_HEX      32
#define DPS_GRANT_PATH_MAX 108 /* sizeof(sockaddr_un.sun_path) */

/* Is name a valid job name (1..64 characters of [A-Za-z0-9._-])? 1 or 0. */
int dps_listen_name_ok(const char *name);

/*
 * Split "ADDR:PORT" or "[IPv6]:PORT" into host and port strings (brackets
 * removed). The port must be decimal 0..65535 (0 only if allow_zero).
 * Returns DPS_OK, or DPS_ERR_INVALID with a reason in err.
 */
int dps_listen_split_hostport(const char *s, int allow_zero, char *host,
                              size_t hostlen, char *port, size_t portlen,
                              char *err, size_t errlen);

/* ${TMPDIR:-/tmp}/dpushim-<euid> into buf. Returns buf, or NULL if it
 * does not fit. */
const char *dps_secret_dir_default(char *buf, size_t len);

/*
 * Check that dir is a safe secret directory (a directory, not a symlink,
 * owned by the effective uid, not writable by group or others); with
 * create, make it (mode 0700) first if it is missing. Returns DPS_OK, or
 * DPS_ERR_INVALID / DPS_ERR_IO with the reason in err.
 */
int dps_secret_dir_prepare(const char *dir, int create, char *err,
                           size_t errlen);

/*
 * Create DIR (mode 0700) if missing, check it, and write a fresh random
 * secret to DIR/<job>.key (new file, mode 0600). The secret is returned in
 * secret. Returns DPS_OK; or DPS_ERR_INVALID (bad name, unsafe DIR, the
 * file exists) or DPS_ERR_IO, with a one-line reason naming the path in
 * err, and nothing left behind.
 */
int dps_secret_create(const char *dir, const char *job,
                      uint8_t secret[DPS_SECRET_LEN], char *err,
                      size_t errlen);

/*
 * The listener's check: DIR and DIR/<job>.key are safe (see above) and the
 * file holds this secret (compared in constant time). Returns DPS_OK, or
 * DPS_ERR_INVALID / DPS_ERR_IO with the reason in err.
 */
int dps_secret_check(const char *dir, const char *job,
                     const uint8_t secret[DPS_SECRET_LEN], char *err,
                     size_t errlen);

/* Remove DIR/<job>.key if it is there; errors are ignored. */
void dps_secret_remove(const char *dir, const char *job);

/* The hello for job (malloc'ed, length in *len), or NULL if the name is
 * invalid or memory is short. */
void *dps_listen_encode_hello(const char   *job,
                              const uint8_t secret[DPS_SECRET_LEN],
                              size_t       *len);

/*
 * Decode len received bytes of a hello. Returns DPS_OK when buf is one
 * complete hello and nothing more (job: NUL-terminated name, joblen >
 * DPS_LISTEN_NAME_MAX; secret filled); DPS_ERR_AGAIN when buf is a valid
 * prefix; DPS_ERR_PROTO otherwise, with the reason in err (a version
 * mismatch says "protocol version X, this agent speaks Y").
 * DPS_ERR_INVALID if joblen is too small. err may be NULL.
 */
int dps_listen_decode_hello(const void *buf, size_t len, char *job,
                            size_t joblen, uint8_t secret[DPS_SECRET_LEN],
                            char *err, size_t errlen);

/* The service hello for job with credential cred (malloc'ed, length in
 * *len), or NULL if an argument is invalid or memory is short. */
void *dps_service_encode_hello(const char *job, const char *cred, size_t *len);

/*
 * Decode len received bytes of a service hello, as
 * dps_listen_decode_hello: DPS_OK (job and cred NUL-terminated; joblen >
 * DPS_LISTEN_NAME_MAX, credlen > DPS_CRED_MAX), DPS_ERR_AGAIN (a valid
 * prefix), DPS_ERR_PROTO with the reason in err.
 */
int dps_service_decode_hello(const void *buf, size_t len, char *job,
                             size_t joblen, char *cred, size_t credlen,
                             char *err, size_t errlen);

/*
 * As dps_listen_connect, to an agent service: read its challenge, prove
 * this process's uid with a MUNGE credential bound to the challenge and
 * job (through munged at munge_socket; NULL or "": MUNGE's default),
 * wait for the answer. grant (grantlen >= DPS_GRANT_PATH_MAX) receives
 * the worker's grant socket, or "" if it has none. Errors as
 * dps_listen_connect's, and DPS_ERR_UNSUPP when this host has no MUNGE.
 */
int dps_service_connect(const char *hostport, const char *job,
                        const char *munge_socket, int timeout_ms, int *fd,
                        void **addr, size_t *addr_len, uint32_t *pid,
                        char *host, size_t hostlen, char *grant,
                        size_t grantlen, char *err, size_t errlen);

/*
 * Connect to the listener at hostport ("ADDR:PORT" or "[IPv6]:PORT"), send
 * the hello for job and wait for the answer, all within timeout_ms.
 * On DPS_OK: *fd is the connection (blocking, close-on-exec; the caller
 * keeps it open for as long as the job needs its agent, closing it ends
 * the agent), *addr the agent's UCX worker address (malloc'ed, caller
 * frees, *addr_len bytes), *pid and host the agent's process id and host
 * name. Otherwise nothing is returned and err says why: DPS_ERR_INVALID
 * (the agent refused the job: "agent HOST:PORT refused the job: ..."; or
 * a bad argument), DPS_ERR_IO (cannot connect), DPS_ERR_TIMEOUT,
 * DPS_ERR_PROTO or DPS_ERR_DEAD (a bad answer, or none).
 */
int dps_listen_connect(const char *hostport, const char *job,
                       const uint8_t secret[DPS_SECRET_LEN], int timeout_ms,
                       int *fd, void **addr, size_t *addr_len, uint32_t *pid,
                       char *host, size_t hostlen, char *err, size_t errlen);

/*
 * Find the agent of virtual node vnode_idx of host hostname in the agent
 * map at path (format above) and copy it ("ADDR:PORT" as written) to
 * hostport. The whole file is checked. Returns DPS_OK; DPS_ERR_IO if the
 * file cannot be read; DPS_ERR_INVALID for a syntax error ("PATH:LINE:
 * ...") or when no line applies to the host, with the reason in err.
 */
int dps_agent_map_lookup(const char *path, const char *hostname,
                         unsigned vnode_idx, char *hostport, size_t len,
                         char *err, size_t errlen);

#endif
