/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The core of libdpushim.so: communicators (core/comm.c), offloaded
 * operations (core/op.c) and the channel to the agent (core/channel.c);
 * schedules and redo by stock MPI have headers of their own. Below core:
 * the call's data (data/) and the schedule compiler (compile/), then the
 * state (base/state.h). What upper layers do at core's moments (the
 * takeover's progress, persistent requests on a freed communicator)
 * reaches core as callbacks they hand down (shim_hooks).
 */
#ifndef SHIM_H
#define SHIM_H

#include "shim/base/state.h"
#include "shim/data/call.h"
#include "common/dps_proto.h"

#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <uthash.h>

#define SHIM_WORLD_ID 1 /* MPI_COMM_WORLD's; ids made by ranks are >= 2^32 */

/* What the shim knows of a communicator it offloaded on (an attribute). */

typedef struct shim_comm {
    uint64_t           id; /* job-wide, agreed by all members */
    int                id_known;
    uint64_t           id_buf; /* PMPI_Ibcast buffer for the id */
    MPI_Request        id_req; /* that Ibcast, while agreeing */
    uint32_t           seq;    /* offloaded collectives so far */
    int                rank, size;
    uint32_t          *members;  /* world rank of each rank */
    int                one_node; /* all on our node, rank_direct: 1,
                                  * not: -1, 0: ? */
    uint32_t          *agent;    /* agent index of each rank */
    struct shim_sched *scheds;   /* compiled schedules, most recent
                                  * first (core/sched.c) */
    unsigned           nscheds;
    int                agent_knows; /* members sent to our agent */
    int                freed;       /* MPI freed it */
    unsigned           refs;        /* MPI's, until freed, + live ops */
    struct shim_op    *wait_head, *wait_tail; /* posts waiting for the id */
    struct shim_comm  *next_agreeing;
    /* For taking over from a failed agent with stock MPI: */
    MPI_Comm comm;     /* the application's, until freed */
    MPI_Comm shadow;   /* PMPI twin made with comm, or NULL */
    struct {           /* failover's own: written by failover/ only */
        uint32_t *fin; /* seqs our agent finished, at least */
        unsigned  nfin, fin_cap; /* those above the lowest unfinished
                                  * (kept by shim_hooks.finished) */
    } fo;
    struct shim_op   *ops_head, *ops_tail; /* live ops, in seq order */
    struct shim_comm *next_all, *prev_all; /* shim.comms */
    /* A persistent request's matching stream (shim_comm_stream_new): MPI
     * matches persistent collectives in the order of their *_init calls,
     * so each has an id and a seq of its own, shared by no other call. */
    struct shim_comm *parent;    /* the communicator's state, or NULL */
    uint32_t          stream;    /* its index on parent, from 1; 0: none */
    uint32_t          nstreams;  /* streams made on this one so far */
    int               agree_ref; /* the id agreement holds a reference */
    uint64_t          agree[2];  /* a stream's agreement: id, refused */
    int               refused;   /* a rank's *_init of it was refused */
} shim_comm_t;

/* One offloaded collective as seen by its rank. */
typedef struct shim_op {
    uint64_t           token;         /* echoed by the agent in COMPLETE */
    MPI_Request        req;           /* the generalized request */
    int                agent_done;    /* COMPLETE received (or agent lost) */
    int                req_freed;     /* MPI called our free_fn */
    dps_status_t       status;        /* how it ended: query_fn reports its
                                    * MPI class (shim_mpi_error) */
    int                raise;         /* at completion, call the communicator's
                                    * error handler with it */
    shim_call_t        call;          /* what it does, with what */
    struct shim_sched *sched;         /* its schedule (a reference) */
    void              *tmp;           /* its TMP buffer */
    struct shim_reg   *reg[DPS_NBUF]; /* registrations of its buffers */
    UT_hash_handle     hh_token;
    UT_hash_handle     hh_req; /* keyed on the bytes of req */
    struct shim_op    *next_done;
    shim_comm_t       *comm;
    struct shim_op    *next_wait; /* until the POST is sent */
    struct shim_op    *next_in_comm;
    int                finishing; /* on done_list */
    struct {       /* failover's own: written by failover/ only */
        int taken; /* stock MPI took it over (or failed it) */
    } fo;
    int               after; /* posted after an agent failure */
    struct shim_redo *redo;  /* stock MPI running its schedule */
} shim_op_t;

/*
 * What upper layers hand down to core: their work at moments core
 * decides. Filled in at MPI_Init before offload is on (failover's
 * shim_fo_init, boot's shim_init); a NULL member: nothing to do then.
 */
typedef struct shim_hooks {
    /* Every shim_progress, lock not held: the takeover's progress
     * (notices, agreement, stock MPI's work) (failover). */
    void (*progress)(void);
    /* Instance seq of c ended here, done by our agent or failed before
     * it got there, lock held: it must never be redone (failover). */
    void (*finished)(shim_comm_t *c, uint32_t seq);
    /* c's state goes (its last reference), lock held, c still linked:
     * what it finished outlives it (failover). */
    void (*dropped)(const shim_comm_t *c);
    /* MPI frees comm (shim_comm_delete), lock not held, re-entry guard
     * raised: what the shim began on comm must end first (persistent
     * requests' duplications, pers/dup.c). */
    void (*freeing)(MPI_Comm comm);
} shim_hooks_t;

extern shim_hooks_t shim_hooks; /* core/hooks.c */

/* ---- core/op.c ---------------------------------------------------- */

/* Progress UCX and hand completed ops to MPI. Returns the number of ops
 * that completed. Safe to call when inactive. */
int shim_progress(void);

/* Is req an offloaded op whose agent work is still running? */
int shim_req_pending(const MPI_Request *req);

/* Any offloaded op whose agent work is still running? */
int shim_any_pending(void);

/* Wait politely for the agent's next message; only_ours: no MPI request
 * of the caller needs PMPI progress meanwhile. */
void shim_idle(int only_ours);

/*
 * Start an op on communicator c for call k with schedule sc (a reference
 * passes to the op): allocate its TMP buffer, register the buffers,
 * create the generalized request, and send the POST now or, while c's id
 * is being agreed, as soon as it is known. Takes what k owns. Returns
 * DPS_OK and *req; or DPS_ERR_NOMEM or DPS_ERR_MPI (logged) when nothing
 * could be started (the caller must not fall back then: others may have
 * posted).
 */
dps_status_t shim_op_start(shim_comm_t *c, shim_call_t *k,
                           struct shim_sched *sc, MPI_Request *req);

/* op ends with status st (lock held): onto the done list, which
 * shim_progress completes (its unpack, its error raised if op->raise,
 * its request). Once: an op already finishing is left as it is. (Here,
 * not in op.c: the channel ends ops, and op.c sends on the channel.) */
static inline void shim_op_done(shim_op_t *op, dps_status_t st)
{
    if (op->finishing) {
        return;
    }
    op->finishing = 1;
    op->status = st;
    op->next_done = shim.done_list;
    shim.done_list = op;
}

/* Redo op on stock MPI: its schedule run with PMPI point-to-point on
 * comm with tag (core/redo.c), first round posted (lock held). DPS_OK,
 * or DPS_ERR_MPI (logged). */
dps_status_t shim_op_redo(shim_op_t *op, MPI_Comm comm, int tag);

/* Progress communicator id agreements; post what waited for them. */
void shim_comm_progress(void);

/* ---- core/channel.c ----------------------------------------------- */

/* The channel to the agent is core's object (shim.chan): boot/ opens it
 * through these calls at MPI_Init and closes it at MPI_Finalize, core
 * posts and polls on it, failover/ fails it. Nothing else writes it. */

/* Who the agent of this virtual node is: its leader learns it by
 * spawning it or by connecting to a listening one (boot/spawn.c), the
 * other ranks of the node from their leader. */
typedef struct shim_chan_agent {
    pid_t pid;       /* on this host (liveness, kicks, kills), or 0 */
    int   fd;        /* leader: what the agent watches (the write end of
                       * its parent pipe, a listening agent's connection);
                       * else -1 */
    int   listening; /* leader: a listening agent (DPUSHIM_AGENT_MAP) */
    char  desc[SHIM_AGENT_DESC_LEN];  /* "pid N", "ADDR:PORT (pid N on H)" */
    char  grant[SHIM_GRANT_PATH_LEN]; /* its grant socket, or "" */
} shim_chan_agent_t;

/* The channel's agent is a; its fd is the channel's from here on (closed
 * by shim_chan_stop_agent). Every rank, before the channel opens. */
void shim_chan_agent(const shim_chan_agent_t *a);

/* Open the channel's UCX worker (and the registrations over it), this
 * rank's CMA token and wake-up socket, room for the node's agents
 * (nranks at most): DPS_OK, or an error (logged). */
dps_status_t shim_chan_open(int nranks);

/* Connect to the agent at its UCX address: DPS_OK, or an error. */
dps_status_t shim_chan_connect(const void *addr);

/* Offer an agent on this host our shared-memory ring (before HELLO, so
 * that it has mapped it when it answers). Without one (an agent on a
 * DPU, no memfd) messages stay on UCX. */
void shim_chan_shm_offer(void);

/* Say HELLO and wait for READY (timeout_s at most): DPS_OK, or the
 * agent's error or DPS_ERR_TIMEOUT (logged). Takes the agent's formats
 * and how it reaches us, drops a listening agent's pid if it does not
 * share our process space, and moves messages to the ring if the agent
 * mapped it. */
dps_status_t shim_chan_hello(double timeout_s);

/* Progress the channel's worker once; if nothing came, give the core
 * away for a moment (ranks being wired share it with the agents). */
void shim_chan_idle_step(void);

/* The agents of this node, every rank's liveness check watches them all
 * (one dead stalls every collective spanning it): n at most nranks. */
void shim_chan_node_agents(const pid_t *pids, int n);

/* The channel serves from now on: the liveness checks start. */
void shim_chan_serving(void);

/* Stop our agent and wait until it is gone (bounded). force (a takeover,
 * lock not held): SIGKILL to one on this host at once, the connection
 * closed to a listening one. Else (MPI_Finalize, a failed start; the
 * leader alone): EOF on what it watches, then SIGKILL to one we spawned
 * that has not exited within 2 s; a listening agent is only let go. */
void shim_chan_stop_agent(int force);

/* Close the channel: the ring, the wake-up socket, the endpoint and,
 * when no operation still uses its registrations, UCX. */
void shim_chan_close(void);

/* Send a message (ownership taken) to our agent and wake it up. */
int shim_send_agent(void *msg, size_t len);

/* Is the agent alive (checked every 0.1 s at most)? On a failure,
 * notices it (shim_fo_notice): the takeover starts at the next progress.
 * Lock held. */
void shim_agent_check(void);

/* Take in the agent's messages (lock held). */
void shim_agent_msgs(void);

/* Is it PID's process alive (not a zombie)? */
int shim_pid_alive(pid_t pid);

/* The agent failed and is stopped: take in what it sent before it
 * stopped, mark it dead, and take no COMPLETE from here on (lock held). */
void shim_chan_fail(void);

/* ---- core/progress.c ---------------------------------------------- */

/* Start the progress thread: it progresses our UCX worker whenever UCX
 * has traffic for it, while the application is outside MPI (agents
 * reaching our memory with UCX get/put need that), and takes the agent's
 * messages into the inbox; it never calls MPI. After the worker is made
 * and connected, lock not held. DPS_OK, or an error (logged) and no
 * thread: such collectives then move only in MPI calls. */
int shim_prog_start(void);

/* Stop and join it, before the worker goes or stock MPI takes over
 * (lock not held). Safe when it never started, and twice. */
void shim_prog_stop(void);

/* Did it run in this process (1 or 0), how many times it woke, how
 * often only its backstop found work (a wake-up lost), and its CPU time
 * in ns (known once it stopped). */
void shim_prog_stats(uint64_t *ran, uint64_t *wakeups, uint64_t *missed,
                     uint64_t *cpu_ns);

/* ---- core/comm.c -------------------------------------------------- */

/* Take a reference to c, or drop one (lock not held); freed at the
 * last. */
void shim_comm_ref(shim_comm_t *c);
void shim_comm_unref(shim_comm_t *c);

/* The state of comm: found, or made now without a twin; NULL when out
 * of memory. */
shim_comm_t *shim_comm_get(MPI_Comm comm);

/* A matching stream of parent for one persistent request (a reference
 * to parent held): same members, an id of its own agreed with a
 * nonblocking reduction, its own seq. refused: MPI refused this rank's
 * *_init (every rank learns it with the id, and their starts then end
 * with an error instead of waiting for this rank). NULL when out of
 * memory. Lock not held. */
shim_comm_t *shim_comm_stream_new(shim_comm_t *parent, int refused);

/* Where stock MPI redoes c's collectives: the twin of its communicator. */
MPI_Comm shim_comm_twin(const shim_comm_t *c);

/* State for comm, made now; with a twin (shadow, may be MPI_COMM_NULL)
 * when comm was just created by every member. */
shim_comm_t *shim_comm_state_new(MPI_Comm comm, MPI_Comm shadow);

/* The delete callback of the shim's communicator attribute (shim.keyval):
 * MPI frees comm, whose state is attr. MPI_SUCCESS. */
int shim_comm_delete(MPI_Comm comm, int keyval, void *attr, void *extra);

#endif
