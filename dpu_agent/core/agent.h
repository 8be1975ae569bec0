/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent's state and the types its parts share: communicators,
 * schedules, instances, moves, staging slots, links to ranks. Each
 * folder's header declares its functions (core/agent_chan.h,
 * keys/agent_keys.h, move/agent_move.h, sched/agent_sched.h,
 * job/agent_job.h).
 */
#ifndef AGENT_H
#define AGENT_H

#include "common/dps_proto.h"
#include "common/dps_shm.h"
#include "common/dps_ucx.h"

#include <stdint.h>
#include <stdio.h>
#include <uthash.h>

#define AGENT_ALIGN 64u /* headroom to match remote alignment */

typedef struct agent_comm {
    uint64_t       id;
    uint32_t       size;
    uint32_t      *members; /* world rank of each comm rank */
    uint32_t       nlocal;  /* members served by this agent */
    uint32_t       nagents; /* distinct agents among members */
    uint32_t       refs;    /* local members that have not freed it */
    uint32_t       live;    /* instances using it */
    int            freed;   /* every local member freed it */
    UT_hash_handle hh;
} agent_comm_t;

typedef struct agent_inst_key {
    uint64_t comm_id;
    uint64_t seq;
} agent_inst_key_t;

/* A rank's registration key, cached until REG_FREE names its id. */
typedef struct agent_key {
    struct {
        uint32_t world; /* owner rank */
        uint32_t pad;
        uint64_t id; /* its registration id */
    } k;
    uint8_t       *packed; /* as the rank packed it */
    uint32_t       len;
    ucp_rkey_h     rkey; /* unpacked on first use (UCX path) */
    uint8_t       *sent; /* per agent: forwarded to it */
    UT_hash_handle hh;
} agent_key_t;

/*
 * A rank's schedule (common/dps_sched.h), cached by (world rank, id): the
 * rank posts it once, later instances name it. Indexed for matching:
 * per peer, the steps that send to it and those that receive from it, in
 * order (CSR arrays over comm ranks); per round, where its steps start.
 */
typedef struct agent_sched {
    struct {
        uint32_t world;
        uint32_t pad;
        uint64_t id;
    } k;
    dps_step_t    *steps;
    uint32_t       nsteps;
    uint32_t       size; /* communicator size it was built for */
    uint32_t       nrounds;
    uint32_t      *round_start;           /* nrounds + 1 */
    uint32_t      *send_start, *send_idx; /* size + 1, nsends */
    uint32_t      *recv_start, *recv_idx; /* size + 1, nrecvs */
    uint8_t       *sent;                  /* per agent: forwarded to it */
    uint32_t       refs;                  /* instances using it */
    int            dropped; /* SCHED_FREE named it: free at refs 0 */
    UT_hash_handle hh;
} agent_sched_t;

/* One communicator rank of an instance, as this agent sees it. */
typedef struct agent_rstate {
    int            posted;
    agent_sched_t *sched;
    uint64_t       addr[DPS_NBUF];
    uint64_t       send_map, send_nmap; /* DPS_POST_GATHER, else 0 */
    agent_key_t   *key[DPS_NBUF];       /* borrowed from the key cache */
    uint64_t       op_token;
    uint32_t       round; /* local: lowest unfinished round; peer:
                           * as its agent last said */
    /* For ranks served here: */
    uint32_t        left;     /* steps of `round` not done */
    uint8_t        *st;       /* per step: 0 waiting, 1 issued, 2 done */
    uint32_t        moves_in; /* moves writing into it, under way
                        * (until their bytes are visible) */
    int             done;     /* COMPLETE sent */
    dps_msg_post_t *held;     /* its post, not yet forwarded to the other
                           * agents (agent_post.c: posts of a node go
                           * together) */
} agent_rstate_t;

typedef struct agent_inst {
    agent_inst_key_t   key;
    agent_comm_t      *comm;
    uint32_t           coll;         /* dps_coll_t of its first post */
    agent_rstate_t    *rs;           /* comm->size entries */
    uint32_t           local_left;   /* local ranks not yet completed */
    uint32_t           moves_live;   /* moves created and not finished */
    int                error;        /* first failure: reported, never OK */
    int                failed;       /* failed on every rank: no new moves,
                                   * ranks complete once the writes into
                                   * them in flight are done */
    uint32_t           first_world;  /* world rank of its first poster */
    uint32_t           local_posted; /* local ranks that posted it */
    double             held_since;   /* a local post held back since */
    struct agent_inst *held_next;    /* in a->held, while posts are held */
    UT_hash_handle     hh;
} agent_inst_t;

/* A failed instance that has ended here: late messages about it are
 * expected (ignored), late posts of our ranks get its error. */
typedef struct agent_tomb {
    agent_inst_key_t key;
    int              error;
    UT_hash_handle   hh;
} agent_tomb_t;

/*
 * One transfer or local step to carry out: len bytes from the source
 * rank's memory to the destination rank's, plain or reduced into it
 * (op, dtype). For a transfer, dst_step is the receiving step and
 * src_step the matching SEND; for a local COPY or REDUCE both are the
 * step itself (src == dst). It is done once its bytes are visible in
 * the destination, not merely sent: later steps (ours, or other agents'
 * told by ROUND or SEND_DONE) read them.
 */
typedef struct agent_move {
    struct agent_move *next;
    agent_inst_t      *inst;
    uint32_t           src, dst; /* comm ranks */
    uint32_t           src_step, dst_step;
    uint32_t           k;         /* the k-th SEND of src to dst */
    uint8_t            op, local; /* local: a COPY or REDUCE step */
    uint8_t            put;       /* UCX put into dst: flush before
                                   * it is done */
    uint8_t            push;      /* AGENT_PUSH_*: between nodes */
    uint8_t            queued;    /* a pushed-in move: in a->q */
    uint8_t            failed;    /* a pushed-out move: not read */
    uint8_t            early;     /* pushed out before its receiver
                                   * posted */
    uint8_t            pull;      /* pushed out: no room at the
                                   * receiver's agent, which fetches it */
    uint16_t           dtype;
    struct agent_pend *pend; /* a pushed-in move's arrivals */
    uint64_t           src_addr, dst_addr, len;
    uint64_t           src_map, src_nmap; /* gathered source: src_addr
                                           * is a packed offset; only a
                                           * DMA engine reads it */
    uint64_t           issued, read, written;
    void              *cmd_key; /* itself: a DMA engine command's id */
    UT_hash_handle     hh_cmd;  /* among its link's commands */
} agent_move_t;

/* agent_move_t.push: how a transfer between nodes moves (DPS_JOB_PUSH,
 * move/agent_push.c). */
#define AGENT_PUSH_IN \
    1 /* its bytes come unasked from the source's agent,
                          * in pieces (agent_pend_t); we write them */
#define AGENT_PUSH_OUT \
    2 /* we read its source and push it to the
                          * destination's agent; done once read */

/* Pushed bytes that came for one transfer, kept until they are written:
 * a piece of a received bundle (which stays allocated while pieces of
 * it are kept: agent_rx_t). */
typedef struct agent_arrival {
    struct agent_arrival *next;
    struct agent_rx      *rx;
    const uint8_t        *data;
    uint64_t              off, len;
    uint32_t              from; /* the sending agent: its room here
                                 * is given back once written */
} agent_arrival_t;

/* A message received from another agent, kept while PUSH pieces in it
 * wait to be written: in UCX's own buffer (ucx, released to worker), or
 * in one of ours (mem, freed). */
typedef struct agent_rx {
    struct agent_rx *next; /* a->rx_head: bundles to handle */
    unsigned         refs;
    void            *ucx;
    void            *mem;
    ucp_worker_h     worker;
    const uint8_t   *data;
    size_t           len;
} agent_rx_t;

/* Where a pushed transfer (the k-th SEND of src to dst of an instance)
 * meets its move: whichever comes first waits for the other. */
typedef struct agent_pend {
    struct {
        uint64_t comm_id;
        uint32_t seq, src, dst, k;
    } key;
    struct agent_move *move; /* the RECV's move, once it began */
    agent_arrival_t   *head, *tail;
    uint64_t           used;  /* bytes of head already taken */
    int                fetch; /* DPS_PUSH_FETCH came: fetch it */
    UT_hash_handle     hh;
} agent_pend_t;

/* What this agent sends another in one pass of its loop: messages back
 * to back, sent as one BUNDLE at the pass's end (agent_chan.c), and the
 * moves whose bytes go to it (AGENT_PUSH_OUT, move/agent_push.c). */
typedef struct agent_out {
    uint8_t           *buf;
    size_t             len, cap;
    unsigned           n;           /* messages in buf */
    unsigned           inflight;    /* bundles with pushed bytes, not yet
                                  * sent (UCX) */
    int                dead;        /* a send to it failed */
    unsigned           filling;     /* bundles for it a worker reads into */
    uint64_t           credit;      /* bytes we may push to it now (its
                                  * room for us, a->window at most) */
    uint64_t           credit_back; /* its pushed bytes written (or
                                     * dropped) here, to give back */
    struct agent_move *push_head, *push_tail;
} agent_out_t;

/* The world rank of communicator rank r of m's instance. */
static inline uint32_t agent_move_world(const agent_move_t *m, uint32_t r)
{
    return m->inst->comm->members[r];
}

struct agent;

/* Work for a worker thread (move/agent_workers.c): run(a, job) there,
 * then done is set (atomic). */
typedef struct agent_job {
    void (*run)(struct agent *a, struct agent_job *j);
    int done;
} agent_job_t;

typedef struct agent_slot {
    agent_job_t        job; /* a worker carries this whole chunk */
    struct agent_slot *next_done;
    agent_move_t      *move;
    uint64_t           off, len;
    int                state;     /* 0 free, 1 reading, 2 writing,
                                   * 3 reading the destination (a
                                   * reduction: into aux) */
    int                completed; /* set by the UCX callback or a copy
                                   * thread (atomic) */
    ucs_status_t       status;
    int                threaded;  /* a worker carries it (job) */
    uint64_t           got;       /* a FETCH's answer: bytes that came */
    int                fetching;  /* waiting for that answer */
    ucs_status_t       wstatus;   /* its write's status */
    char              *buf;       /* slot start (AGENT_ALIGN-aligned) */
    char              *data;      /* where this chunk is staged */
    char              *aux;       /* the destination's chunk, reduced
                                  * into (a reduction only) */
    agent_rx_t        *rx;        /* pushed bytes being written: the
                                  * bundle they lie in */
    uint32_t           credit_to; /* pushed bytes: 1 + the agent to
                                   * give their room back; else 0 */
} agent_slot_t;

/* A rank on this host reached through its shared-memory segment. */
typedef struct agent_link {
    uint32_t           world;
    dps_shm_t         *shm;
    unsigned           cmds_out;    /* engine commands not yet done */
    agent_move_t      *cmds;        /* those commands' moves, by address */
    int                woke_engine; /* commands queued since the last wake */
    dps_inmsg_t       *outq_head, *outq_tail; /* waiting for ring room */
    struct agent_link *next;
} agent_link_t;

/*
 * Calls from a lower part of the agent up into a higher one. The agent's
 * folders depend on each other one way, main > job > sched > move > keys
 * > core; where a lower part must reach up, the part that implements the
 * call sets it here once at start-up, before any message is handled
 * (agent_job_init, agent_sched_init).
 */
typedef struct agent_upcalls {
    /* A message a rank sent through its segment, decoded (core's channel
     * poll): DPS_OK, DPS_ERR_AGAIN (keep it for later) or an error. The
     * job's dispatch, agent_handle (job/agent_job.c). */
    int (*handle)(struct agent *a, const dps_msg_t *msg);
    /* Move m is finished, its bytes visible in the destination (status:
     * DPS_OK or an error), by a staging slot or a DMA engine (move/):
     * steps advance, ranks complete. Frees m (sched/agent_inst.c). */
    void (*move_done)(struct agent *a, agent_move_t *m, int status);
} agent_upcalls_t;

typedef struct agent {
    dps_ucx_t       ucx;
    agent_upcalls_t up;         /* set at start-up by the upper parts */
    int             parent_fd;  /* EOF when the spawning rank dies */
    int             kick_fd[2]; /* wake-up sockets: by pid, by job */
    int             epfd;
    uint32_t        job_key;
    unsigned long   missed_wakeups; /* work found only by the backstop */
    unsigned long   collectives;    /* completed, where we serve rank 0 */
    uint64_t        cma_bytes;      /* staged: read and written with CMA */
    uint64_t        ucx_bytes;      /* staged: read and written with UCX */
    uint64_t        dma_bytes;      /* staged: through the ranks' grants */
    uint64_t        net_bytes;      /* sent to other agents: FETCH
                                     * answers and PUSH pieces */
    uint64_t        fetches;        /* FETCHes sent */
    uint64_t        agent_msgs;     /* network messages to agents */
    uint64_t        pushes;         /* PUSH pieces sent */
    uint64_t        pushed_bytes;   /* their bytes */
    /* What is cached now, and its peak (the STATS message's growth
     * counters). */
    uint32_t            nkeys, keys_peak;     /* registration keys */
    uint32_t            nscheds, scheds_peak; /* schedules */
    uint64_t            sched_steps;          /* their steps */
    uint64_t            steps_peak;
    uint64_t            next_tag;   /* of the last FETCH */
    unsigned            fetch_wait; /* slots waiting for FETCH answers */
    int                 grant_fd;   /* grant socket (dps_grant.h), or -1 */
    char                grant_path[108];
    int                *rank_memfd; /* per world rank: its grant, or -1 */
    struct agent_grant *early;      /* grants before the job layout */
    uint32_t            nearly, early_cap;
    struct agent_serve *serves;      /* FETCHes being read with UCX */
    uint64_t            cpu_base_ns; /* CPU time used by set-up */
    int                 quit;
    int                 eager;     /* DPUSHIM_AGENT_SCHED=eager */
    int                 push;      /* DPS_JOB_PUSH: between nodes, push */
    uint64_t            push_unit; /* pieces are cut at multiples of
                                    * every reduction element size */
    uint64_t            window;    /* bytes another agent may push to us
                                    * at once: DPUSHIM_CHUNK_BYTES x
                                    * DPUSHIM_PIPELINE_DEPTH */
    agent_out_t        *out;       /* per agent (nagents) */
    agent_pend_t       *pends;     /* pushed transfers met here */
    agent_rx_t         *rx_cur;    /* the received message being
                                    * handled, if it may be kept */
    agent_inst_t       *held;      /* instances with posts held back */
    agent_rx_t         *rx_head, *rx_tail; /* bundles received */
    unsigned            rx_rndv;           /* bundles still being received */
    struct agent_fill  *fills;             /* bundles workers read into */
    void               *out_pool;          /* bundle buffers to use again */
    unsigned            out_npool;
    /* job */
    int       have_job;
    uint32_t  nranks, nagents, self;
    uint32_t *rank_agent;
    uint32_t *rank_pid;    /* from PROCS */
    uint32_t *rank_node;   /* from PROCS */
    uint64_t *procs_token; /* from PROCS: token address and value
                            * of each rank, until checked */
    uint32_t  procs_n;     /* entries in the tables above */
    uint32_t  my_node;
    int       have_procs;
    int       force_ucx; /* DPUSHIM_TRANSPORT=ucx */
    ucp_ep_h *rank_ep;
    ucp_ep_h *agent_ep;
    uint8_t  *rank_st;        /* per rank: AGENT_RANK_* */
    int      *rank_why;       /* per rank of this node not SEEN: why
                               * (dps_cma_check), for the report */
    int      *rank_errno;     /* ... and the errno of a DPS_ERR_IO */
    uint32_t  nlocal, nhello; /* ranks served here; their HELLOs */
    int       node_seen;      /* every rank of this node served by
                               * other agents is SEEN */
    int       cma_told;       /* the report of who is SEEN is out */
    int       ready;
    /* state */
    agent_comm_t         *comms;
    agent_key_t          *keys;   /* registration keys of ranks */
    agent_sched_t        *scheds; /* schedules of ranks */
    agent_inst_t         *insts;
    agent_tomb_t         *tombs; /* failed instances that ended */
    agent_move_t         *q_head, *q_tail;
    agent_slot_t         *slots;
    unsigned              nslots;    /* DPUSHIM_PIPELINE_DEPTH */
    size_t                chunk;     /* DPUSHIM_CHUNK_BYTES */
    struct agent_workers *workers;   /* started at the first job */
    unsigned              nworkers;  /* dpu_agent --workers; < 2: none */
    unsigned              copy_jobs; /* slots out with workers */
    void                 *staging;
    ucp_mem_h             staging_memh;
    unsigned              inflight; /* slots busy + flushes pending */
    struct agent_flush   *flushes;  /* of moves' puts, in no particular
                                     * order */
    /* shared-memory channels (dps_shm.h) */
    agent_link_t  *links;   /* every rank that offered one */
    agent_link_t **link_of; /* by world rank, nlinks_cap entries */
    uint32_t       nlinks_cap;
    int            poll;        /* DPUSHIM_AGENT_SCHED=poll: never sleep */
    uint64_t       engine_cmds; /* commands given to DMA engines */
} agent_t;

/* The shared-memory link of world rank w, or NULL. */
static inline agent_link_t *agent_link(const agent_t *a, uint32_t w)
{
    return w < a->nlinks_cap ? a->link_of[w] : NULL;
}

/* rank_st flags. */
#define AGENT_RANK_HELLO 1u /* its HELLO came and READY went out */
/* its token was read back at its pid (common/dps_cma.h): it shares this
 * agent's process space. A shared node name alone is no proof (a DPU, a
 * container) */
#define AGENT_RANK_SEEN  2u
/* it granted us its memory and its token was read back through the grant
 * (common/dps_grant.h: emulated PCIe DMA) */
#define AGENT_RANK_DMA   4u

/* Are the rank's bytes copied with CMA (by this agent or by a DMA engine
 * at its command)? Only if it proved it shares our process space. */
static inline int agent_rank_cma(const agent_t *a, uint32_t world)
{
    return !a->force_ucx && (a->rank_st[world] & AGENT_RANK_SEEN) != 0;
}

/* Does the transfer between world ranks s and d move by PUSH (the job
 * pushes, and they are on different nodes: no agent reaches both)? Every
 * agent decides alike, from the job's layout alone. */
static inline int agent_pushed(const agent_t *a, uint32_t s, uint32_t d)
{
    return a->push && !a->force_ucx && a->rank_agent[s] != a->rank_agent[d] &&
           a->rank_node != NULL && a->rank_node[s] != a->rank_node[d];
}

/* Does this agent read and write the rank's memory through its grant
 * (emulated PCIe DMA)? Only where CMA does not reach it, and not with
 * DPUSHIM_TRANSPORT=ucx (the ranks serve UCX get/put). */
static inline int agent_rank_dma(const agent_t *a, uint32_t world)
{
    return !a->force_ucx && !agent_rank_cma(a, world) &&
           (a->rank_st[world] & AGENT_RANK_DMA) != 0;
}

/* Is the rank's memory another agent's to read (it serves the rank and
 * we do not reach it ourselves)? Then a move reads it by FETCH from that
 * agent, never from the rank's own UCX worker. */
static inline int agent_rank_fetch(const agent_t *a, uint32_t world)
{
    return !a->force_ucx && a->rank_agent[world] != a->self &&
           !agent_rank_cma(a, world);
}

#endif
