/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shim's state, which every layer of libdpushim.so reads (shim/base,
 * the bottom one): the global `shim`, the re-entry guard, the statistics
 * and the takeover's stage. What upper layers keep in it (operations,
 * communicators) is only pointed to here: their types are theirs
 * (core/shim.h).
 */
#ifndef SHIM_STATE_H
#define SHIM_STATE_H

#include "common/dps_config.h"
#include "common/dps_proto.h"
#include "common/dps_shm.h"
#include "common/dps_status.h"
#include "common/dps_ucx.h"

#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

/* The MPI functions the shim defines: the only symbols it exports. */
#define SHIM_API __attribute__((visibility("default")))

/* Why a call went to stock MPI: its fallback is counted under one
 * (DPUSHIM_STATS=2 prints them). */
enum {
    SHIM_WHY_OTHER, /* arguments MPI judges, sizes past the limits */
    SHIM_WHY_OFF,   /* offload off: not active, or DPUSHIM_<COLL>=0 */
    SHIM_WHY_COMM,  /* an intercommunicator (or MPI_COMM_NULL) */
    SHIM_WHY_TYPE,  /* a datatype the agents do not reduce */
    SHIM_WHY_OP,    /* an operation they do not apply: user-defined,
                     * or not MPI's on the datatype */
    SHIM_WHY_SMALL, /* below DPUSHIM_MIN_BYTES */
    SHIM_NWHY
};

enum {
    SHIM_STAT_OFFLOADED,
    SHIM_STAT_FALLBACK,
    SHIM_STAT_BYTES,
    SHIM_STAT_REDONE, /* pending when an agent failed: stock MPI */
    SHIM_STAT_FAILED, /* pending when an agent failed: error */
    SHIM_STAT_AFTER,  /* posted after an agent failed: stock MPI */
    SHIM_STAT_WHY,    /* SHIM_NWHY counters: fallbacks by reason */
    SHIM_NSTAT = SHIM_STAT_WHY + SHIM_NWHY
};

/* Taking over from failed agents (failover/failover.c). */
enum {
    SHIM_FO_NONE,    /* agents serve */
    SHIM_FO_COUNTS,  /* agents stopped; agreeing: how many entries */
    SHIM_FO_ENTRIES, /* agreeing: which instances ranks finished */
    SHIM_FO_DECIDED
}; /* every collective runs on stock MPI */

/* Defined by the layers that own them (core/shim.h). */
struct shim_op;
struct shim_comm;

/* Where the job's ranks are (boot/place.c fills it at MPI_Init). */
typedef struct shim_topo {
    int       world_rank, world_size;
    int       is_leader;   /* first rank of its virtual node */
    MPI_Comm  vnode;       /* ranks sharing this agent */
    uint32_t *rank_agent;  /* agent index of each world rank */
    int      *rank_node;   /* node of each world rank */
    int      *rank_direct; /* per world rank: its DMA engine runs
                            * and its agent reaches every rank of
                            * its node with CMA (DPS_READY_CMA_NODE):
                            * unpacked send data reaches it */
} shim_topo_t;

#define SHIM_AGENT_DESC_LEN 600 /* an agent's description, for messages */
#define SHIM_GRANT_PATH_LEN 108 /* a grant socket's path (sun_path) */

/* The rank's channel to its agent: who it is, how it reaches us, the
 * shared-memory ring and UCX, its liveness. core/channel.c's object:
 * boot/ opens and closes it through its calls, failover/ fails it. */
typedef struct shim_chan {
    pid_t    agent_pid;       /* our agent */
    unsigned agent_formats;   /* DPS_FMT_* it computes (READY) */
    unsigned agent_cma;       /* DPS_READY_*: how it reaches our
                               * memory (READY) */
    uint64_t cma_token;       /* our proof that CMA reaches us
                               * (common/dps_cma.h): random, never
                               * changed after MPI_Init; 0: none */
    pid_t   *node_agents;     /* every agent on this node, for the */
    int      n_node_agents;   /* liveness check: one dead stalls all */
    int      max_node_agents; /* room in node_agents */
    int      parent_fd;       /* leader: write end the agent watches,
                               * or the listening agent's connection */
    int      listen_agent;    /* leader: agent from DPUSHIM_AGENT_MAP */
    int      agent_dead;
    int      kick_fd; /* our wake-up socket, or -1 */
    /* "pid N" or "ADDR:PORT (pid N on H)", for messages */
    char agent_desc[SHIM_AGENT_DESC_LEN];
    /* a listening agent's grant socket (common/dps_grant.h), or "" */
    char      grant_path[SHIM_GRANT_PATH_LEN];
    dps_ucx_t ucx;
    ucp_ep_h  agent_ep;
    /* Shared-memory channel to an agent on this host (dps_shm.h): */
    dps_shm_t      *shm; /* our segment, or NULL */
    int             shm_fd;
    int             shm_on;        /* the agent mapped it: messages go there */
    int             shm_tx_ucx;    /* one was too big for it: UCX from then */
    pthread_mutex_t tx_lock;       /* producers of shm->to_agent */
    double          next_ucx_poll; /* with shm_on, UCX is polled seldom */
    double          last_liveness; /* time of the last agent check */
    double          last_heard;    /* time of the agent's last message */
    double          app_until;     /* an application thread polls in MPI
                                    * until then: the progress thread
                                    * stands aside (core/progress.c) */
    double          ping_sent;     /* outstanding PING, or 0 */
} shim_chan_t;

/* Taking over from failed agents: what was noticed (shim_fo_notice, any
 * layer), how far the takeover is (failover/ alone writes the rest). */
typedef struct shim_fo {
    int      cause;    /* shim_fo_cause_t: the failure noticed */
    char     why[700]; /* ... what happened, for messages */
    int      state;    /* SHIM_FO_* */
    MPI_Comm ctrl;     /* notices and Finalize (p2p, barrier) */
    MPI_Comm agree;    /* the agreement's collectives */
} shim_fo_t;

#define SHIM_NAGENT_STAT 16

/* What is counted (statistics at MPI_Finalize, boot/init.c). */
typedef struct shim_stat {
    uint64_t coll[DPS_COLL_MAX][SHIM_NSTAT]; /* by dps_coll_t */
    int      have_agent;                     /* leader: STATS received */
    /* cpu_ns, collectives, missed, cma_bytes, ucx_bytes, dma_bytes,
     * net_bytes, fetches; then what grows with the job: rss_kb,
     * endpoints, keys_peak, scheds_peak, steps_peak (dps_msg_stats_t) */
    uint64_t agent[SHIM_NAGENT_STAT];
    /* Schedules this rank compiled, by dps_coll_t: how many, their
     * steps, the time it took (ns). */
    uint64_t sched[DPS_COLL_MAX][3];
    uint64_t wire_ns; /* MPI_Init's part of the shim: agents wired */
} shim_stat_t;

/* The shim's state, by the part each layer owns; the rest is the core's
 * (operations, communicators, schedules). */
typedef struct shim_state {
    int               initialized; /* shim_init ran */
    int               active;      /* offload usable job-wide */
    dps_config_t      cfg;
    uint64_t          min_bytes; /* DPUSHIM_MIN_BYTES, auto resolved */
    shim_topo_t       topo;
    shim_chan_t       chan;
    shim_fo_t         fo;
    shim_stat_t       stat;
    int               keyval;    /* communicator attribute */
    uint64_t          next_comm; /* ids handed out by this rank */
    uint64_t          next_token;
    struct shim_op   *by_token, *by_req;
    unsigned          live;       /* ops not yet done by the agent */
    struct shim_comm *agreeing;   /* communicators agreeing on an id */
    pthread_mutex_t   agree_lock; /* guards agreeing; never held with lock
                                   * taken inside, nor across our callbacks */
    struct shim_op   *done_list;  /* completed, MPI not told yet */
    pthread_mutex_t   lock;
    struct shim_comm *comms;      /* every communicator state */
    uint64_t          next_sched; /* schedule ids handed out */
} shim_state_t;

extern shim_state_t shim;

/* Re-entry guard: MPI_* calls made from inside the shim go to PMPI. */
extern __thread int shim_in_call;

/* The shim's own request that a PMPI test or wait of the shim is
 * completing now, or NULL: MPICH frees a communicator (and calls the
 * attribute delete callback, shim_comm_delete) when the last request on
 * it ends, from inside that very call. */
extern __thread MPI_Request *shim_busy_req;

/* Why the shim stops using its agent: the failure that starts a
 * takeover by stock MPI (shim/failover/). */
typedef enum {
    SHIM_FO_NO_CAUSE = 0,
    SHIM_FO_AGENT_DIED,    /* its process, or another agent's of this
                            * node, ended */
    SHIM_FO_AGENT_GONE,    /* the connection to a listening agent ended */
    SHIM_FO_AGENT_SILENT,  /* no answer within DPUSHIM_AGENT_TIMEOUT */
    SHIM_FO_AGENT_CORRUPT, /* it wrote a corrupt message ring */
    SHIM_FO_POST_FAILED,   /* a collective could not be handed to it */
    SHIM_FO_AGENT_LOST,    /* it lost its way to another agent (or rank)
                            * mid-collective: a UCX error */
    SHIM_FO_REPORTED       /* another rank told of a failure */
} shim_fo_cause_t;

/*
 * Notice a failure: the first one noticed is kept (its cause, and fmt's
 * text for the messages), later ones are ignored; the takeover starts at
 * the next progress (failover/failover.h). 1 if this one was the first.
 * Lock held.
 */
int shim_fo_notice(shim_fo_cause_t cause, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The failure noticed, or SHIM_FO_NO_CAUSE. */
static inline shim_fo_cause_t shim_fo_noticed(void)
{
    return (shim_fo_cause_t)shim.fo.cause;
}

/* Who we are, for HELLO, PING and SHM: world rank, pid and our CMA
 * token (its address and value; both 0 when we have none). */
void shim_hello(dps_msg_hello_t *out);

/* Start one of the shim's threads (the progress thread, the DMA
 * engines) with every signal blocked, so that the application's handlers
 * run on its own threads only: pthread_create's result. */
int shim_thread_start(pthread_t *thr, void *(*fn)(void *), void *arg);

/* Add n to coll's statistic stat (SHIM_STAT_*), under the lock. */
void shim_stat_add(int coll, int stat, uint64_t n);

/*
 * The MPI error class of a status: the one place where the shim's
 * dps_status_t becomes an MPI error code. Called where an error is handed
 * to MPI or the application: the wrappers' returns (wrap/, fortran/), and
 * MPI's calls into core (a request's query callback, the error handler
 * raised at completion). DPS_ERR_ARG MPI_ERR_ARG, DPS_ERR_TRUNCATE and
 * DPS_ERR_MISMATCH MPI_ERR_TRUNCATE, DPS_ERR_NOMEM MPI_ERR_NO_MEM,
 * DPS_ERR_OP MPI_ERR_OP, DPS_ERR_MPI and DPS_ERR_PROTO MPI_ERR_INTERN,
 * any other failure MPI_ERR_OTHER.
 */
int shim_mpi_error(dps_status_t st);

#endif
