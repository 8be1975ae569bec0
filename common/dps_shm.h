/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared-memory channel between a rank and an agent on the same host:
 * the emulation of a DPU reading work requests from host memory and
 * writing completions back into it (RDMA writes on a BlueField).
 *
 * One segment per rank, made by the rank (memfd) and mapped by its agent
 * through /proc/<pid>/fd/<fd>. It holds four single-producer,
 * single-consumer rings:
 *   to_agent  rank -> agent: wire messages (POST, REG_FREE, ...)
 *   to_rank   agent -> rank: wire messages (COMPLETE, PONG, STATS)
 *   cmd       agent -> the rank's DMA engine: copy commands
 *   done      the engine -> agent: finished commands
 * and the flags each side sets before it sleeps, so that the other side
 * wakes it only then. Producers publish with a release store of the tail
 * and then look at the sleeper's flag after a full fence; a sleeper sets
 * its flag, fences, and looks at the rings once more before sleeping.
 *
 * Nothing in the segment is trusted for memory safety: positions are
 * checked against the ring sizes and messages are decoded as ever.
 */
#ifndef DPS_SHM_H
#define DPS_SHM_H

#include "common/dps_status.h"

#include <stddef.h>
#include <stdint.h>

#define DPS_SHM_MAGIC     0x4d485344u /* "DSHM" */
#define DPS_SHM_VERSION   1
#define DPS_SHM_MSG_RING  (256u * 1024) /* bytes of each message ring */
#define DPS_SHM_CMD_SLOTS 1024u         /* entries of the cmd/done rings */
#define DPS_SHM_MAX_MSG   (DPS_SHM_MSG_RING / 4) /* larger: use UCX */

/* Engine commands. */
enum {
    DPS_CMD_READ = 1,    /* copy len bytes: src_pid's src_addr -> dst_addr */
    DPS_CMD_STOP,        /* agent going away: take no further command */
    DPS_CMD_READ_REDUCE, /* dst = src (rop) dst, elements of dtype
                          * (dps_sched.h): read and reduce */
    DPS_CMD_READ_GATHER  /* as READ, from a gathered region: bytes
                          * [src_addr, src_addr + len) of its packed
                          * order, found through src_map */
};

typedef struct dps_cmd {
    uint64_t id;      /* echoed in the done entry; the agent's own */
    uint32_t op;      /* DPS_CMD_* */
    uint32_t src_pid; /* process to read from (our own: a memcpy) */
    uint64_t src_addr;
    uint64_t dst_addr; /* in the rank's own memory */
    uint64_t len;
    uint16_t rop;   /* READ_REDUCE: DPS_OP_* */
    uint16_t dtype; /* READ_REDUCE: DPS_T_* */
    uint32_t pad;
    uint64_t src_map; /* READ_GATHER: the source's segments (dps_seg_t,
                       * in its memory), src_addr being a packed offset */
    uint64_t src_nmap;
} dps_cmd_t;
_Static_assert(sizeof(dps_cmd_t) == 64, "cmd layout");

typedef struct dps_done {
    uint64_t id;
    int32_t  status; /* DPS_OK or DPS_ERR_IO */
    uint32_t pad;
} dps_done_t;
_Static_assert(sizeof(dps_done_t) == 16, "done layout");

/* Positions are free-running counters; the slot is pos % size. */
typedef struct dps_ring_pos {
    _Alignas(64) uint64_t head; /* consumer's */
    _Alignas(64) uint64_t tail; /* producer's */
} dps_ring_pos_t;

typedef struct dps_shm {
    uint32_t magic;
    uint32_t version;
    uint64_t size;      /* of the whole segment */
    uint32_t rank;      /* world rank that made it */
    uint32_t attached;  /* set by the agent once mapped */
    uint32_t engine_up; /* the rank's engine takes commands */
    uint32_t pad;
    _Alignas(64) uint32_t agent_sleeping;  /* agent is (about to be) asleep */
    _Alignas(64) uint32_t rank_sleeping;   /* rank waits, asleep */
    _Alignas(64) uint32_t engine_sleeping; /* engine asleep on engine_wake */
    _Alignas(64) uint32_t engine_wake;     /* futex word: bumped to wake it */
    dps_ring_pos_t to_agent, to_rank, cmd, done;
    _Alignas(64) uint8_t to_agent_buf[DPS_SHM_MSG_RING];
    uint8_t    to_rank_buf[DPS_SHM_MSG_RING];
    dps_cmd_t  cmd_buf[DPS_SHM_CMD_SLOTS];
    dps_done_t done_buf[DPS_SHM_CMD_SLOTS];
} dps_shm_t;

/*
 * Make a segment for world rank `rank` (memfd, mapped here). Returns the
 * mapping and the descriptor in *fd, or NULL (errno set).
 */
dps_shm_t *dps_shm_create(uint32_t rank, int *fd);

/* Map pid's segment, its descriptor fd, and check it. NULL on failure,
 * with the reason in err. */
dps_shm_t *dps_shm_attach(int pid, int fd, uint32_t rank, char *err,
                          size_t err_len);

/* Unmap a segment. */
void dps_shm_detach(dps_shm_t *s);

/*
 * Message rings (to_agent, to_rank). Put copies len bytes in as one
 * message: DPS_OK, DPS_ERR_AGAIN when it does not fit now, DPS_ERR_INVALID
 * when it never can (len 0 or > DPS_SHM_MAX_MSG). Get copies the oldest
 * message into buf (cap bytes) and returns a length: the message's, 0 if
 * none, -1 if the ring is corrupt.
 */
int  dps_shm_msg_put(dps_ring_pos_t *pos, uint8_t *buf, const void *msg,
                     size_t len);
long dps_shm_msg_get(dps_ring_pos_t *pos, const uint8_t *buf, void *out,
                     size_t cap);
/* Is there a message to take (1 or 0)? A load. */
int dps_shm_msg_ready(const dps_ring_pos_t *pos);
/* Nothing left for the consumer? 1 or 0 (the producer may wait for
 * this). */
int dps_shm_msg_empty(const dps_ring_pos_t *pos);

/* Command and done rings: DPS_OK when put or got; DPS_ERR_AGAIN when the
 * ring is full (put) or empty (get); DPS_ERR_PROTO when its positions
 * are corrupt (get). */
int dps_shm_cmd_put(dps_shm_t *s, const dps_cmd_t *c);
int dps_shm_cmd_get(dps_shm_t *s, dps_cmd_t *c);
int dps_shm_done_put(dps_shm_t *s, const dps_done_t *d);
int dps_shm_done_get(dps_shm_t *s, dps_done_t *d);
/* Is there a command to take (1 or 0)? */
int dps_shm_cmd_ready(const dps_shm_t *s);

/* Sleeping and waking through a futex word in the segment. */
void dps_shm_futex_wait(uint32_t *word, uint32_t val, long timeout_ns);
void dps_shm_futex_wake(uint32_t *word);

/* A polite spin-loop pause. */
static inline void dps_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Full barrier between publishing and looking at a sleeper's flag. */
static inline void dps_shm_fence(void)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

#endif
