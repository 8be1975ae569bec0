/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wire protocol between ranks (shim) and agents, and between agents.
 * Fixed-width little-endian integers only (host and DPU may differ in
 * architecture but both are little-endian: x86_64 and aarch64), no pointers
 * or MPI handles: addresses travel as uint64_t. Every message starts with
 * dps_msg_hdr_t; the receiver checks magic, version, type and length before
 * looking at the body (dps_msg_decode).
 */
#ifndef DPS_PROTO_H
#define DPS_PROTO_H

#include "common/dps_colls.h"
#include "common/dps_sched.h"
#include "common/dps_status.h"

#include <stddef.h>
#include <stdint.h>

#define DPS_PROTO_MAGIC   0x48535044u /* "DPSH" */
/* 13: a listener's "ok" answer may name its grant socket; the service's
 * challenge and MUNGE hello (dps_listen.h). */
#define DPS_PROTO_VERSION 13
#define DPS_AM_ID         7    /* UCX active message id: messages */
#define DPS_AM_BUNDLE     8    /* ... and bundles between agents */
#define DPS_MAX_RKEY      4096 /* bytes of one packed rkey */
#define DPS_MAX_ADDR      8192 /* bytes of one worker address */
#define DPS_MAX_RANKS     (1u << 20)
#define DPS_MAX_REG_FREE  4096 /* ids in one REG_FREE */

typedef enum {
    DPS_MSG_HELLO = 1,  /* rank -> its agent: I am world rank r */
    DPS_MSG_JOB_INFO,   /* vnode leader -> its agent: the job's layout */
    DPS_MSG_READY,      /* agent -> rank: connected to everyone */
    DPS_MSG_POST,       /* rank -> its agent: a collective was posted */
    DPS_MSG_COMPLETE,   /* agent -> rank: an offloaded op finished */
    DPS_MSG_COMM_FREE,  /* rank -> its agent: communicator freed */
    DPS_MSG_PEER_POST,  /* agent -> agent: a rank of yours posted */
    DPS_MSG_SEND_DONE,  /* agent -> agent: a rank's SEND steps were read */
    DPS_MSG_SHUTDOWN,   /* vnode leader -> its agent: job ends */
    DPS_MSG_PROCS,      /* vnode leader -> its agent: pid, node and
                         * CMA token of ranks */
    DPS_MSG_STATS_REQ,  /* vnode leader -> its agent: send your counters */
    DPS_MSG_STATS,      /* agent -> vnode leader: the counters */
    DPS_MSG_REG_FREE,   /* rank -> its agent, agent -> agent: drop keys */
    DPS_MSG_PING,       /* rank -> its agent: still there? (hello body) */
    DPS_MSG_PONG,       /* agent -> rank: yes */
    DPS_MSG_SHM,        /* rank -> its agent, before HELLO: map my
                         * shared-memory channel (dps_shm.h) */
    DPS_MSG_INST_FAIL,  /* agent -> agent: a collective instance fails
                         * on every rank (mismatched or erroneous
                         * arguments): complete your ranks with it */
    DPS_MSG_ROUND,      /* agent -> agent: a rank reached a round */
    DPS_MSG_SCHED_FREE, /* rank -> its agent, agent -> agent: drop
                         * schedules (body as REG_FREE's) */
    DPS_MSG_FETCH,      /* agent -> agent: read bytes of a rank of yours
                         * and send them to me (tagged) */
    DPS_MSG_PUSH,       /* agent -> agent: bytes of a rank of mine for a
                         * rank of yours, unasked (or: fetch them) */
    DPS_MSG_BUNDLE,     /* agent -> agent: several messages in one */
    DPS_MSG_CREDIT,     /* agent -> agent: room for early pushes again */
    DPS_MSG_TYPE_MAX
} dps_msg_type_t;

/* Which MPI call a schedule came from (dps_colls.h): for messages only
 * (agents execute schedules and know nothing of collectives). */

typedef struct dps_msg_hdr {
    uint32_t magic;    /* DPS_PROTO_MAGIC */
    uint16_t version;  /* DPS_PROTO_VERSION */
    uint16_t type;     /* dps_msg_type_t */
    uint32_t length;   /* whole message, header included */
    uint32_t reserved; /* 0 */
} dps_msg_hdr_t;
_Static_assert(sizeof(dps_msg_hdr_t) == 16, "header layout");

/*
 * HELLO and PING body. The token proves CMA reachability (dps_cma.h): the
 * agent reads 8 bytes at token_addr of pid and copies this rank's memory
 * with CMA only if they equal token. token 0 (with token_addr 0) offers
 * no proof: the rank is then served over UCX.
 */
typedef struct dps_msg_hello {
    uint32_t world_rank; /* the sender (< DPS_MAX_RANKS) */
    uint32_t pid;        /* the sender's process id, as it sees itself */
    uint64_t token_addr; /* where the token lies in the sender's memory */
    uint64_t token;      /* its value: random, 0 for none */
} dps_msg_hello_t;
_Static_assert(sizeof(dps_msg_hello_t) == 24, "hello layout");
_Static_assert(offsetof(dps_msg_hello_t, token_addr) == 8 &&
                   offsetof(dps_msg_hello_t, token) == 16,
               "hello layout");

/*
 * JOB_INFO body: this fixed part, then uint32_t rank_agent[nranks],
 * uint32_t rank_addr_len[nranks], uint32_t agent_addr_len[nagents], then
 * the rank worker addresses and the agent worker addresses back to back.
 */
typedef struct dps_msg_job {
    uint32_t nranks;    /* world size */
    uint32_t nagents;   /* number of agents in the job */
    uint32_t agent_idx; /* index of the receiving agent */
    uint32_t job_key;   /* names the agents' wake-up sockets (dps_kick) */
    uint32_t flags;     /* DPS_JOB_*: how every agent of the job works */
    uint32_t pad;       /* 0 */
} dps_msg_job_t;
_Static_assert(sizeof(dps_msg_job_t) == 24, "job layout");

/* Between ranks of different nodes an agent pushes its ranks' bytes to
 * the receivers' agents (PUSH); without it, they fetch them (FETCH).
 * The same on every agent of a job: the ranks' DPUSHIM_PUSH. */
#define DPS_JOB_PUSH 1u

/*
 * PROCS body: this fixed part, then uint32_t pid[nranks], uint32_t
 * node[nranks], uint64_t token_addr[nranks] and uint64_t token[nranks]
 * (as in HELLO). Ranks with the agent's node id may share its memory
 * system; the agent copies their data itself (CMA, without UCX) only
 * once it has read each one's token back at its pid (dps_cma.h).
 */
typedef struct dps_msg_procs {
    uint32_t nranks;
    uint32_t pad;
} dps_msg_procs_t;
_Static_assert(sizeof(dps_msg_procs_t) == 8, "procs layout");

typedef struct dps_msg_stats {
    uint64_t cpu_ns;         /* agent CPU time (user + system) so far */
    uint64_t collectives;    /* instances completed where this agent
                              * serves communicator rank 0 (each counted
                              * by exactly one agent) */
    uint64_t missed_wakeups; /* work found only by the sleep backstop */
    uint64_t cma_bytes;      /* staged path: bytes the agent read and
                              * wrote with CMA (ranks that proved it
                              * reaches them) */
    uint64_t ucx_bytes;      /* ... and with UCX get/put: bytes the
                              * ranks' own UCX workers served */
    uint64_t dma_bytes;      /* ... and through the ranks' grants
                              * (dps_grant.h: emulated PCIe DMA) */
    uint64_t net_bytes;      /* sent to other agents (FETCH answers) */
    uint64_t fetches;        /* FETCHes this agent sent */
    /* What grows with the job (docs/results.md, "Growth"): */
    uint64_t rss_kb;      /* peak resident memory (getrusage), KiB */
    uint32_t endpoints;   /* UCX endpoints to ranks and other agents */
    uint32_t keys_peak;   /* registration keys cached at once, at most */
    uint32_t scheds_peak; /* schedules cached at once, at most */
    uint32_t steps_peak;  /* their steps at once, at most */
    /* Between agents (docs/results.md, "Node to node"): */
    uint64_t agent_msgs;   /* network messages sent to other agents
                            * (a bundle counts once) */
    uint64_t pushes;       /* PUSH pieces sent */
    uint64_t pushed_bytes; /* their bytes */
} dps_msg_stats_t;
_Static_assert(sizeof(dps_msg_stats_t) == 112, "stats layout");

/* SHM body: once the token is read back at pid (as in HELLO: the pid
 * is the rank's, not another process's), the agent maps
 * /proc/<pid>/fd/<fd> and, if that works, sets the segment's attached
 * flag; the rank sees it there once READY has come, and otherwise keeps
 * to UCX messages. */
typedef struct dps_msg_shm {
    uint32_t world_rank;
    uint32_t pid;
    int32_t  fd;
    uint32_t pad;        /* 0 */
    uint64_t token_addr; /* as in HELLO */
    uint64_t token;
} dps_msg_shm_t;
_Static_assert(sizeof(dps_msg_shm_t) == 32, "shm layout");
_Static_assert(offsetof(dps_msg_shm_t, token_addr) == 16 &&
                   offsetof(dps_msg_shm_t, token) == 24,
               "shm layout");

/* READY's cma flags: how the agent reaches the rank's memory. */
/* it read the rank's token at its pid: the two share a process space */
#define DPS_READY_SEEN     1u
/* SEEN, and it copies the rank's memory with CMA (DPUSHIM_TRANSPORT is not
 * ucx): a DMA engine in the rank gets commands */
#define DPS_READY_CMA      2u
/* CMA, and CMA reaches every rank of the agent's node it does not serve
 * too: the rank's unpacked send data can be read */
#define DPS_READY_CMA_NODE 4u
/* the rank's grant (dps_grant.h) reached the agent and was proved: it reads
 * and writes the rank's memory itself */
#define DPS_READY_DMA      8u

typedef struct dps_msg_ready {
    int32_t  status;  /* dps_status_t of the agent's set-up */
    uint32_t formats; /* DPS_FMT_*: the reduction formats the agent
                       * computes (dps_reduce_formats) */
    uint32_t cma;     /* DPS_READY_* */
    uint32_t pad;     /* 0 */
} dps_msg_ready_t;
_Static_assert(sizeof(dps_msg_ready_t) == 16, "ready layout");

/*
 * POST and PEER_POST body: this fixed part, then the packed keys of the
 * three buffers (rkey_len[b] bytes each, in buffer order), the schedule
 * (nsteps dps_step_t), then uint32_t members[nmembers]: world rank of
 * each communicator rank, present when the receiving agent may not know
 * the communicator yet (nmembers is 0 or comm_size).
 *
 * A rank's buffers of the instance are DPS_BUF_SEND, _RECV and _TMP, each
 * at buf_addr[b] for buf_len[b] bytes, named by a registration id
 * (buf_reg[b]: unique per world rank, never reused; 0 for an empty
 * buffer). A packed key travels only the first time its id is sent to a
 * given agent; after that the agent has it cached (rkey_len 0), until a
 * REG_FREE says the id is gone. Likewise the schedule: it travels (flag
 * DPS_POST_SCHED) with the first post of its id (sched_id, unique per
 * world rank) to an agent, which keeps it until a SCHED_FREE names it;
 * later posts carry no steps. An agent forwards to another only the
 * SEND steps to that agent's ranks.
 */
typedef struct dps_msg_post {
    uint64_t comm_id;  /* job-wide communicator id */
    uint64_t op_token; /* rank-local id echoed in COMPLETE */
    uint64_t sched_id; /* the poster's schedule */
    uint64_t buf_addr[DPS_NBUF];
    uint64_t buf_len[DPS_NBUF];
    uint64_t buf_reg[DPS_NBUF];
    uint32_t seq;       /* collective instance on this communicator */
    uint32_t coll;      /* dps_coll_t: for messages only */
    uint32_t comm_rank; /* the poster's rank in the communicator */
    uint32_t comm_size;
    uint32_t world_rank; /* the poster's world rank */
    uint32_t nsteps;     /* steps carried (0: the agent has sched_id) */
    uint32_t rkey_len[DPS_NBUF]; /* 0: the agent has the id's key */
    uint32_t nmembers;
    int32_t  error;    /* 0, or the dps_status_t of a poster's own
                        * erroneous arguments: the instance fails on
                        * every rank (never silently dropped) */
    uint32_t flags;    /* DPS_POST_SCHED: the schedule travels (its
                        * nsteps steps, perhaps none) */
    uint64_t send_map; /* DPS_POST_GATHER: the SEND region is not
                        * packed; its bytes, at packed offsets, lie
                        * where send_nmap segments (dps_seg_t, in the
                        * poster's memory at send_map) say */
    uint64_t send_nmap;
} dps_msg_post_t;
_Static_assert(sizeof(dps_msg_post_t) == 160, "post layout");

#define DPS_POST_SCHED  1u
/* read the SEND region through send_map: only by a DMA engine on the
 * poster's host */
#define DPS_POST_GATHER 2u

/* A piece of a gathered region: len bytes at packed offset off lie at
 * addr in the poster's memory; sorted by off, contiguous in off. */
typedef struct dps_seg {
    uint64_t off;
    uint64_t addr;
    uint64_t len;
} dps_seg_t;

/*
 * REG_FREE body: this fixed part, then uint64_t id[count]: registrations of
 * world_rank that are gone (memory unmapped, or evicted from the rank's
 * cache). An agent drops their keys and forwards the ids to the agents it
 * had sent them to.
 */
typedef struct dps_msg_reg_free {
    uint32_t world_rank;
    uint32_t count; /* 1 .. DPS_MAX_REG_FREE */
} dps_msg_reg_free_t;
_Static_assert(sizeof(dps_msg_reg_free_t) == 8, "reg_free layout");

typedef struct dps_msg_complete {
    uint64_t op_token; /* from the POST */
    int32_t  status;   /* dps_status_t */
    uint32_t pad;
} dps_msg_complete_t;
_Static_assert(sizeof(dps_msg_complete_t) == 16, "complete layout");

typedef struct dps_msg_comm_free {
    uint64_t comm_id;
    uint32_t world_rank; /* the member that freed it */
    uint32_t pad;
} dps_msg_comm_free_t;
_Static_assert(sizeof(dps_msg_comm_free_t) == 16, "comm_free layout");

/* SEND_DONE: of instance (comm_id, seq), the k-th SEND step of comm rank
 * src to comm rank dst has been read (count of them, from k on). */
typedef struct dps_msg_send_done {
    uint64_t comm_id;
    uint32_t seq;
    uint32_t src;
    uint32_t dst;
    uint32_t k;
} dps_msg_send_done_t;
_Static_assert(sizeof(dps_msg_send_done_t) == 24, "send_done layout");

/* ROUND: comm rank `rank` of instance (comm_id, seq) finished every step
 * below `round`: its SEND steps of that round may be read. */
typedef struct dps_msg_round {
    uint64_t comm_id;
    uint32_t seq;
    uint32_t rank;
    uint32_t round;
    uint32_t pad;
} dps_msg_round_t;
_Static_assert(sizeof(dps_msg_round_t) == 24, "round layout");

/*
 * FETCH (agent of the receiver -> agent of the sender): of instance
 * (comm_id, seq), read len bytes at offset off of the k-th SEND step of
 * comm rank src to comm rank dst and send them to me as one UCX tagged
 * message with tag `tag`. The sender's agent takes the address from the
 * sender's own schedule and post, never from the message. A reply of
 * another length means the read failed.
 */
typedef struct dps_msg_fetch {
    uint64_t comm_id;
    uint32_t seq;
    uint32_t src;
    uint32_t dst;
    uint32_t k;
    uint64_t off;
    uint64_t len;
    uint64_t tag;
} dps_msg_fetch_t;
_Static_assert(sizeof(dps_msg_fetch_t) == 48, "fetch layout");

/*
 * PUSH (agent of a sender -> agent of a receiver on another node): of
 * instance (comm_id, seq), bytes [off, off + len) of the k-th SEND step
 * of comm rank src to comm rank dst, whose whole length is total; the
 * len bytes follow this fixed part; agent: the sending agent's index.
 * The sender's agent sends a transfer's pieces in order, without being
 * asked, once the receiver has posted, or before (DPS_PUSH_EARLY)
 * within the room the receiver's agent grants it ahead (its credit,
 * returned by CREDIT once such bytes are written); the receiver's agent
 * writes them into its rank once that rank's matching RECV step has
 * begun. DPS_PUSH_FETCH (len 0): the sender's agent does not push this
 * transfer (it cannot read that rank itself); the receiver's agent
 * fetches it (FETCH).
 */
typedef struct dps_msg_push {
    uint64_t comm_id;
    uint32_t seq;
    uint32_t src;
    uint32_t dst;
    uint32_t k;
    uint64_t off;
    uint64_t len;
    uint64_t total;
    uint32_t flags; /* DPS_PUSH_* */
    uint32_t agent; /* the sender's agent index */
} dps_msg_push_t;
_Static_assert(sizeof(dps_msg_push_t) == 56, "push layout");

#define DPS_PUSH_FETCH 1u
#define DPS_PUSH_EARLY 2u /* before the receiver posted: on credit */

/* CREDIT (agent -> agent): bytes of early pushes the sender of this
 * message has written into its ranks (or dropped): the receiver of it
 * may push that much early again. agent: the sender's index. */
typedef struct dps_msg_credit {
    uint32_t agent;
    uint32_t pad; /* 0 */
    uint64_t bytes;
} dps_msg_credit_t;
_Static_assert(sizeof(dps_msg_credit_t) == 16, "credit layout");

/*
 * BUNDLE body: whole messages back to back (each with its header; no
 * bundle inside a bundle), as an agent sends everything it has for
 * another agent in one pass of its loop: one network message per node
 * pair and pass instead of one per post, piece or report. Read with
 * dps_bundle_next.
 */

typedef struct dps_msg_inst_fail {
    uint64_t comm_id;
    uint32_t seq;
    int32_t  status; /* dps_status_t: why */
} dps_msg_inst_fail_t;
_Static_assert(sizeof(dps_msg_inst_fail_t) == 16, "inst_fail layout");

/* A decoded message: pointers into the received buffer, valid with it. */
typedef struct dps_msg {
    dps_msg_type_t type;
    union {
        dps_msg_hello_t     hello;
        dps_msg_shm_t       shm;
        dps_msg_ready_t     ready;
        dps_msg_complete_t  complete;
        dps_msg_comm_free_t comm_free;
        dps_msg_send_done_t send_done;
        dps_msg_round_t     round;
        dps_msg_inst_fail_t inst_fail;
        dps_msg_fetch_t     fetch;
        dps_msg_credit_t    credit;
        dps_msg_stats_t     stats;
        struct {
            dps_msg_push_t fixed;
            const uint8_t *data; /* fixed.len bytes */
        } push;
        struct {
            const uint8_t *parts; /* whole messages, back to back */
            size_t         len;
        } bundle;
        struct {
            dps_msg_job_t   fixed;
            const uint32_t *rank_agent;
            const uint32_t *rank_addr_len;
            const uint32_t *agent_addr_len;
            const uint8_t  *rank_addrs;  /* back to back */
            const uint8_t  *agent_addrs; /* back to back */
        } job;
        struct {
            dps_msg_procs_t fixed;
            const uint32_t *pid;
            const uint32_t *node;
            const uint64_t *token_addr; /* read with dps_msg_u64 */
            const uint64_t *token;
        } procs;
        struct {
            dps_msg_reg_free_t fixed;
            const uint64_t    *ids; /* read with dps_msg_u64 */
        } reg_free;
        struct {
            dps_msg_post_t  fixed;
            const uint8_t  *rkey[DPS_NBUF];
            const uint8_t  *steps;   /* nsteps dps_step_t, unaligned:
                                      * read with dps_msg_step */
            const uint32_t *members; /* NULL when nmembers == 0 */
        } post;
    } u;
} dps_msg_t;

/*
 * Check and decode a received message (buf, len). Returns DPS_OK and fills
 * *msg, or DPS_ERR_PROTO with a reason in err (may be NULL) for anything
 * malformed: bad magic, version, type, length, counts or offsets.
 */
int dps_msg_decode(const void *buf, size_t len, dps_msg_t *msg, char *err,
                   size_t err_len);

/*
 * Encoders: each returns a malloc'ed message (free() it) and its length in
 * *len, or NULL when out of memory or the arguments are out of range.
 */
void *dps_msg_encode_hello(const dps_msg_hello_t *hello, size_t *len);
/* cma: DPS_READY_* flags. */
void *dps_msg_encode_ready(int32_t status, uint32_t formats, uint32_t cma,
                           size_t *len);
void *dps_msg_encode_complete(uint64_t op_token, int32_t status, size_t *len);
void *dps_msg_encode_comm_free(uint64_t comm_id, uint32_t world_rank,
                               size_t *len);
void *dps_msg_encode_send_done(uint64_t comm_id, uint32_t seq, uint32_t src,
                               uint32_t dst, uint32_t k, size_t *len);
void *dps_msg_encode_round(uint64_t comm_id, uint32_t seq, uint32_t rank,
                           uint32_t round, size_t *len);
void *dps_msg_encode_shutdown(size_t *len);
void *dps_msg_encode_fetch(const dps_msg_fetch_t *f, size_t *len);
void *dps_msg_encode_inst_fail(uint64_t comm_id, uint32_t seq, int32_t status,
                               size_t *len);
void *dps_msg_encode_credit(uint32_t agent, uint64_t bytes, size_t *len);
/* A PUSH's header and fixed part (DPS_PUSH_HEAD bytes) written at out,
 * where the caller puts its f->len bytes of data right after (so that a
 * bundle's pieces are read from the ranks straight into place). DPS_OK,
 * or DPS_ERR_INVALID for a piece the decoder would refuse (a rank or
 * agent out of range, unknown flags, len beyond total, DPS_PUSH_FETCH
 * with data or early). */
#define DPS_PUSH_HEAD (sizeof(dps_msg_hdr_t) + sizeof(dps_msg_push_t))
int dps_msg_push_put(const dps_msg_push_t *f, void *out);

/* The BUNDLE header for a body of body_len bytes (written at out, 16
 * bytes): DPS_OK, or DPS_ERR_INVALID when it would not fit the length
 * field or the body could not hold one message (under 16 bytes). */
int dps_bundle_header(size_t body_len, void *out);

/*
 * The next message of a decoded bundle: from *p with *left bytes left,
 * the part and its length (checked: a whole header, a length that fits,
 * no bundle inside); *p and *left move past it. DPS_OK, DPS_ERR_AGAIN
 * when none is left, DPS_ERR_PROTO (reason in err) for a malformed rest.
 * The part itself is checked by dps_msg_decode.
 */
int   dps_bundle_next(const uint8_t **p, size_t *left, const void **part,
                      size_t *part_len, char *err, size_t err_len);
void *dps_msg_encode_stats_req(size_t *len);
/* PING carries HELLO's body. */
void *dps_msg_encode_ping(const dps_msg_hello_t *hello, size_t *len);
void *dps_msg_encode_pong(size_t *len);
/* who: the rank and its token, as in its HELLO. */
void *dps_msg_encode_shm(const dps_msg_hello_t *who, int32_t fd, size_t *len);
void *dps_msg_encode_stats(const dps_msg_stats_t *stats, size_t *len);
/* Tables of nranks entries each (see dps_msg_procs_t). */
void *dps_msg_encode_procs(uint32_t nranks, const uint32_t *pid,
                           const uint32_t *node, const uint64_t *token_addr,
                           const uint64_t *token, size_t *len);
/* type is DPS_MSG_POST or DPS_MSG_PEER_POST; rkey[b] may be NULL when
 * rkey_len[b] is 0, steps when nsteps is 0, members when nmembers is 0. */
void *dps_msg_encode_post(dps_msg_type_t type, const dps_msg_post_t *fixed,
                          const void *const rkey[DPS_NBUF],
                          const dps_step_t *steps, const uint32_t *members,
                          size_t *len);

/* Step i of a decoded post's schedule. */
static inline void dps_msg_step(const uint8_t *steps, size_t i,
                                dps_step_t *out)
{
    __builtin_memcpy(out, steps + i * sizeof(*out), sizeof(*out));
}
void *dps_msg_encode_reg_free(uint32_t world_rank, uint32_t count,
                              const uint64_t *ids, size_t *len);
void *dps_msg_encode_sched_free(uint32_t world_rank, uint32_t count,
                                const uint64_t *ids, size_t *len);
/* rank_addrs[i]/agent_addrs[i] point to addresses of the given lengths. */
void *dps_msg_encode_job(const dps_msg_job_t *fixed,
                         const uint32_t      *rank_agent,
                         const void *const   *rank_addrs,
                         const uint32_t      *rank_addr_len,
                         const void *const   *agent_addrs,
                         const uint32_t *agent_addr_len, size_t *len);

/*
 * Element i of a uint32_t table inside a received message. Tables may be
 * unaligned (rkeys have odd lengths; UCX gives no alignment guarantee for
 * received data), so they are read with memcpy.
 */
static inline uint32_t dps_msg_u32(const uint32_t *table, size_t i)
{
    uint32_t v;

    __builtin_memcpy(&v, (const char *)table + i * sizeof(v), sizeof(v));
    return v;
}

static inline uint64_t dps_msg_u64(const uint64_t *table, size_t i)
{
    uint64_t v;

    __builtin_memcpy(&v, (const char *)table + i * sizeof(v), sizeof(v));
    return v;
}

/* Name of a message type, for logs ("post", "?" when out of range). */
const char *dps_msg_type_str(unsigned type);

#endif
