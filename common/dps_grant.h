/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated PCIe DMA, granted by the host. On a BlueField the DPU is its
 * host's network card: it reads and writes the memory of its host's
 * processes by DMA, through memory keys the host process creates and
 * hands it (DOCA mmap export, cross-GVMI mkeys), and nobody else can.
 * Here an agent on an emulated DPU shares no memory and no process ids
 * with its host; a rank grants it its memory by sending it a descriptor
 * of /proc/self/mem (opened read-write by the rank itself) over a UNIX
 * socket in the secret directory, the one place host and DPU both see.
 *
 * - No access without the grant: the agent has no other way in (another
 *   PID namespace, no ptrace), and it accepts a descriptor only from a
 *   rank it serves, after reading that rank's token back through it.
 * - Only from the agent's own user: a grant is accepted from a process
 *   of the agent's uid (SO_PASSCRED), of memory that uid owns; a
 *   service's worker runs as its job's user (dpu_agent --service).
 * - The grant ends with the rank: reads and writes through the
 *   descriptor fail once the rank's address space is gone.
 * - A UNIX socket reaches only processes of the same kernel, as a PCIe
 *   link reaches only its own host: an agent of another host cannot be
 *   sent a grant, whatever directory it shares.
 *
 * Datagram: dps_grant_msg_t, with the descriptor in SCM_RIGHTS.
 */
#ifndef DPS_GRANT_H
#define DPS_GRANT_H

#include "common/dps_status.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define DPS_GRANT_MAGIC 0x54524744u /* "DGRT" */

typedef struct dps_grant_msg {
    uint32_t magic;      /* DPS_GRANT_MAGIC */
    uint32_t world_rank; /* the granting rank */
    uint32_t job_key;    /* the job's, as in JOB_INFO */
    uint32_t pad;
} dps_grant_msg_t;

/*
 * The grant socket of a job's agent: DIR/g-<16 hex digits>, a hash of
 * the job name, the agent's host name and pid (both sides compute it:
 * the agent when it starts, the ranks from its "ok" line). Returns
 * DPS_OK, or DPS_ERR_INVALID if it does not fit in a socket address (then
 * no DMA grant: the ranks are served over UCX).
 */
int dps_grant_path(const char *dir, const char *job, const char *host,
                   uint32_t pid, char *out, size_t len);

/* Agent: bind a non-blocking datagram socket at path (a stale one is
 * replaced), mode 0600. Returns the socket or -1 (errno set). */
int dps_grant_listen(const char *path);

/* Rank: open /proc/self/mem and send it to the socket at path, without
 * blocking. Returns DPS_OK; DPS_ERR_AGAIN if the socket's queue is full
 * now (errno EAGAIN: try again later); DPS_ERR_INVALID if path does not
 * fit in a socket address (errno ENAMETOOLONG); DPS_ERR_IO with errno
 * set. */
int dps_grant_send(const char *path, uint32_t world_rank, uint32_t job_key);

/* Agent: take one pending grant: *fd (close-on-exec) and its message.
 * Returns DPS_OK; DPS_ERR_AGAIN if none is pending; DPS_ERR_PROTO on a
 * malformed datagram (dropped, any descriptor closed); DPS_ERR_INVALID
 * (dropped) if it is not from a process of our own uid granting its own
 * memory: *from (may be NULL) then holds the sender's pid, uid and gid as
 * the kernel gave them (uid: the memory's owner's, if the sender was of
 * our uid); DPS_ERR_IO if the socket failed (errno set). The socket must
 * come from dps_grant_listen (SO_PASSCRED). */
typedef struct dps_grant_from {
    pid_t pid; /* as seen in the agent's PID namespace (0: another) */
    uid_t uid;
    gid_t gid;
} dps_grant_from_t;

int dps_grant_recv(int sock, dps_grant_msg_t *msg, int *fd,
                   dps_grant_from_t *from);

/* DMA through a grant: len bytes at addr of the granting process into
 * buf, or from buf to addr. DPS_OK, or DPS_ERR_IO with errno set (EIO:
 * the process is gone or nothing is mapped there). */
int dps_dma_read(int fd, uint64_t addr, void *buf, size_t len);
int dps_dma_write(int fd, uint64_t addr, const void *buf, size_t len);

#endif
