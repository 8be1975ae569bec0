/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal state and interfaces of libdpushim.so. */
#ifndef SHIM_H
#define SHIM_H

#include "shim/base/state.h"
#include "shim/data/types.h"
#include "common/dps_config.h"
#include "common/dps_shm.h"
#include "common/dps_ucx.h"
#include "common/dps_proto.h"

#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <uthash.h>

struct shim_op;

#define SHIM_WORLD_ID 1 /* MPI_COMM_WORLD's; ids made by ranks are >= 2^32 */

/* DPUSHIM_MIN_BYTES=auto where agents have CPUs of their own. With the
 * direct data path and cores to spare (make bench, idle host), offload
 * beat stock MPI from 256 KiB on (0.64-0.82x overall), not at 128 KiB
 * (0.94-1.35x): below, stock MPI's own time (12-20 us at 128 KiB) is
 * within the shim's fixed cost (30-50 us). */
#define SHIM_AUTO_MIN_BYTES (256u * 1024)

/* What the shim knows of a communicator it offloaded on (an attribute). */

typedef struct shim_comm {
    uint64_t        id;           /* job-wide, agreed by all members */
    int             id_known;
    uint64_t        id_buf;       /* PMPI_Ibcast buffer for the id */
    MPI_Request     id_req;       /* that Ibcast, while agreeing */
    uint32_t        seq;          /* offloaded collectives so far */
    int             rank, size;
    uint32_t       *members;      /* world rank of each rank */
    int             one_node;     /* all on our node: 1, not: -1, 0: ? */
    uint32_t       *agent;        /* agent index of each rank */
    struct shim_sched *scheds;    /* compiled schedules, most recent
                                   * first (core/sched.c) */
    unsigned        nscheds;
    int             agent_knows;  /* members sent to our agent */
    int             freed;        /* MPI freed it */
    unsigned        refs;         /* MPI's, until freed, + live ops */
    struct shim_op *wait_head, *wait_tail; /* posts waiting for the id */
    struct shim_comm *next_agreeing;
    /* For taking over from a failed agent with stock MPI: */
    MPI_Comm        comm;         /* the application's, until freed */
    MPI_Comm        shadow;       /* PMPI twin made with comm, or NULL */
    uint32_t       *fin;          /* seqs our agent finished, at least */
    unsigned        nfin, fin_cap; /* those above the lowest unfinished */
    struct shim_op *ops_head, *ops_tail; /* live ops, in seq order */
    struct shim_comm *next_all, *prev_all; /* shim.comms */
    /* A persistent request's matching stream (shim_comm_stream_new): MPI
     * matches persistent collectives in the order of their *_init calls,
     * so each has an id and a seq of its own, shared by no other call. */
    struct shim_comm *parent;     /* the communicator's state, or NULL */
    uint32_t        stream;       /* its index on parent, from 1; 0: none */
    uint32_t        nstreams;     /* streams made on this one so far */
    int             agree_ref;    /* the id agreement holds a reference */
    uint64_t        agree[2];     /* a stream's agreement: id, refused */
    int             refused;      /* a rank's *_init of it was refused */
} shim_comm_t;

/* One offloaded collective as seen by its rank. */
typedef struct shim_op {
    uint64_t       token;      /* echoed by the agent in COMPLETE */
    MPI_Request    req;        /* the generalized request */
    int            agent_done; /* COMPLETE received (or agent lost) */
    int            req_freed;  /* MPI called our free_fn */
    int            error;      /* MPI error class reported by query_fn */
    int            raise;      /* at completion, call the communicator's
                                * error handler with it */
    shim_call_t    call;       /* what it does, with what */
    struct shim_sched *sched;  /* its schedule (a reference) */
    void          *tmp;        /* its TMP buffer */
    struct shim_reg *reg[DPS_NBUF]; /* registrations of its buffers */
    UT_hash_handle hh_token;
    UT_hash_handle hh_req;     /* keyed on the bytes of req */
    struct shim_op *next_done;
    shim_comm_t   *comm;
    struct shim_op *next_wait; /* until the POST is sent */
    struct shim_op *next_in_comm;
    int            finishing;  /* on done_list */
    int            taken;      /* stock MPI took it over (or failed it) */
    int            after;      /* posted after an agent failure */
    struct shim_redo *redo;    /* stock MPI running its schedule */
} shim_op_t;

/* Bring up the agent and UCX after PMPI_Init. Never fails the job: on
 * any problem the shim stays inactive and everything runs on stock MPI. */
void shim_init(void);

/* Tear down before PMPI_Finalize; prints statistics when asked. */
void shim_fini(void);

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

/* Among n requests, is any unfinished one not ours (needs PMPI)? */
int shim_need_pmpi(int n, const MPI_Request *reqs);

/*
 * Start an op on communicator c for call k with schedule sc (a reference
 * passes to the op): allocate its TMP buffer, register the buffers,
 * create the generalized request, and send the POST now or, while c's id
 * is being agreed, as soon as it is known. Takes what k owns. Returns
 * MPI_SUCCESS and *req, or an MPI error code when nothing could be
 * started (the caller must not fall back then: others may have posted).
 */
int shim_op_start(shim_comm_t *c, shim_call_t *k, struct shim_sched *sc,
                  MPI_Request *req);

/* Progress communicator id agreements; post what waited for them. */
void shim_comm_progress(void);

/* Send a message (ownership taken) to our agent and wake it up
 * (core/channel.c, as the three below). */
int shim_send_agent(void *msg, size_t len);

/* Is the agent alive (checked every 0.1 s at most)? On a failure, the
 * takeover starts. Lock held. */
void shim_agent_check(void);

/* Tell the agent a communicator it knows is freed. */
void shim_comm_freed(uint64_t comm_id);

/* Take in the agent's messages (lock held). */
void shim_agent_msgs(void);

/* Our agent finished instance seq of c (lock held). */
void shim_comm_finished(shim_comm_t *c, uint32_t seq);

/* Remember a freed communicator's finished instances (lock held). */
void shim_fo_record_freed(const shim_comm_t *c);

/* Drop a reference to c (lock not held); frees it at the last. */
void shim_comm_unref(shim_comm_t *c);

/* Is it PID's process alive (not a zombie)? */
int shim_pid_alive(pid_t pid);

/*
 * Agent failure (failover/failover.c). Any rank that sees an agent fail tells
 * every rank (PMPI messages on a private communicator); each then stops
 * its own agent, and all agree, with nonblocking PMPI collectives, which
 * offloaded instances some rank finished. Pending instances no rank
 * finished are redone by stock MPI on a twin of their communicator; the
 * others fail with an error. Later collectives go to stock MPI.
 */
int  shim_fo_init(void);              /* MPI_Init, once offload is on */
/* Blocking calls watch for failures while offload is on (wrap/block.c):
 * is that now, and wait for a request that is not ours doing so. */
int  shim_watching(void);
int  shim_watch_wait(MPI_Request *req, MPI_Status *status);
void shim_fo_start(const char *why);  /* a failure seen here */
/* Before a blocking call the takeover cannot reach into: drive a known
 * takeover until this rank's pending collectives run on stock MPI (or
 * the takeover's deadline aborts the job). */
void shim_fo_settle(void);
void shim_fo_progress(void);          /* lock not held */
void shim_fo_fini(void);              /* MPI_Finalize, before teardown */
/* After a failure, a new instance seq on c: 1 to run it on stock MPI on
 * *use (c's twin, or c itself) at once, or 0 to queue it (shim_op_start)
 * until it can run, or fail with an error. */
int  shim_fo_direct(shim_comm_t *c, uint32_t seq, int coll, MPI_Comm *use);

/* The state of comm: found, or made now without a twin (core/comm.c);
 * NULL when out of memory. */
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
 * when comm was just created by every member (core/comm.c). */
shim_comm_t *shim_comm_state_new(MPI_Comm comm, MPI_Comm shadow);

#endif
