/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where an agent's moves happen: the bytes of a transfer or local step
 * (sched/agent_inst.c decides which and when). Two data paths:
 *
 * - direct: the destination rank's DMA engine (shim/data/engine.c) gets
 *   a READ, READ_REDUCE or READ_GATHER command through its shared-memory
 *   segment and copies once, from the source's memory into its own
 *   (agent_engines.c);
 * - staged: the agent itself reads each chunk of DPUSHIM_CHUNK_BYTES
 *   into a staging slot and writes it out (for a reduction it also reads
 *   the destination's chunk, reduces, and writes that back): with CMA for
 *   ranks of its own host (agent_cma.c), by DMA through the grants of
 *   its ranks that CMA does not reach (a DPU's), by FETCH from the agent
 *   of a source rank of another agent (agent_fetch.c), and with UCX
 *   get/put served by the ranks themselves where nothing else reaches
 *   them (DPUSHIM_TRANSPORT=ucx, or a rank that sent no grant).
 *
 * A move is done when its bytes are visible in the destination: the
 * next steps of the schedule read them, here or on other agents (a ring
 * reduction passes on the piece it has just reduced). CMA and engine
 * copies are synchronous; a UCX put's completion only frees its source
 * (over TCP its bytes may reach the target many milliseconds later), so
 * a move that put anything ends with a flush of the destination's
 * endpoint (issue 27).
 *
 * Nothing here knows which collective a move belongs to.
 */
#define _GNU_SOURCE
#include "dpu_agent/move/agent_move.h"
#include "dpu_agent/move/agent_movers.h"
#include "dpu_agent/keys/agent_keys.h"
#include "dpu_agent/core/agent_chan.h"
#include "common/dps_log.h"
#include "common/dps_status.h"

#include <stdlib.h>
#include <string.h>

/* A flush of the puts of a move, which is done when it completes. */
typedef struct agent_flush {
    struct agent_flush *next;
    agent_move_t       *move;
    int                 completed;
    ucs_status_t        status;
} agent_flush_t;

int agent_may_sleep(const agent_t *a)
{
    unsigned i, free_slot = 0;

    for (i = 0; i < a->nslots; i++) {
        agent_slot_t *s = &a->slots[i];

        if (s->state == 0) {
            free_slot = 1;
        } else if (__atomic_load_n(&s->completed, __ATOMIC_ACQUIRE)) {
            return 0;
        }
    }
    /* Work we could start, or UCX operations and flushes to progress.
     * FETCH answers wake us through the worker's event descriptor: over
     * TCP a spinning agent would hold off the softirqs that bring them. */
    return !(a->q_head != NULL && free_slot) &&
           a->inflight == a->copy_jobs + a->fetch_wait && a->serves == NULL &&
           !agent_push_pending(a) && !agent_out_pending(a);
}

int agent_exec_init(agent_t *a)
{
    ucp_mem_map_params_t mp;
    ucp_mem_attr_t       attr;
    size_t               per = 2 * (a->chunk + AGENT_ALIGN); /* data and aux */
    ucs_status_t         st;
    unsigned             i;

    a->slots = calloc(a->nslots, sizeof(*a->slots));
    if (a->slots == NULL) {
        return DPS_ERR_NOMEM;
    }
    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                    UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                    UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    mp.address = NULL;
    mp.length = per * a->nslots;
    mp.flags = UCP_MEM_MAP_ALLOCATE;
    st = ucp_mem_map(a->ucx.context, &mp, &a->staging_memh);
    if (st != UCS_OK) {
        dps_error("cannot allocate %zu bytes of staging memory: %s", mp.length,
                  ucs_status_string(st));
        return DPS_ERR_NOMEM;
    }
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
    ucp_mem_query(a->staging_memh, &attr);
    a->staging = attr.address;
    for (i = 0; i < a->nslots; i++) {
        a->slots[i].buf = (char *)a->staging + (size_t)i * per;
    }
    return DPS_OK;
}

/* ---- staged path ------------------------------------------------------- */

static void slot_cb(void *request, ucs_status_t status, void *user_data)
{
    agent_slot_t *s = user_data;

    s->completed = 1;
    s->status = status;
    ucp_request_free(request);
}

static void flush_cb(void *request, ucs_status_t status, void *user_data)
{
    agent_flush_t *f = user_data;

    f->completed = 1;
    f->status = status;
    ucp_request_free(request);
}

/* One UCX get (stages 1, 3) or put (stage 2) of slot s. */
static void ucx_stage(agent_t *a, agent_slot_t *s, uint32_t r)
{
    agent_move_t     *m = s->move;
    agent_rstate_t   *rs = &m->inst->rs[r];
    uint32_t          w = world_of(m, r);
    const dps_step_t *st =
        &rs->sched
             ->steps[r == m->src && s->state == 1 ? m->src_step : m->dst_step];
    unsigned buf = (r == m->src && s->state == 1) ? st->src_buf : st->dst_buf;
    ucp_rkey_h rkey =
        rs->key[buf] != NULL ? agent_key_rkey(a, rs->key[buf]) : NULL;
    uint64_t raddr = (s->state == 1 ? m->src_addr : m->dst_addr) + s->off;
    char    *local =
        s->state == 1 ? s->data : (m->op != DPS_OP_NONE ? s->aux : s->data);
    ucp_request_param_t rp;
    ucs_status_ptr_t    req;

    if (rkey == NULL) {
        s->completed = 1;
        s->status = UCS_ERR_INVALID_PARAM;
        return;
    }
    memset(&rp, 0, sizeof(rp));
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    rp.cb.send = slot_cb;
    rp.user_data = s;
    req = s->state != 2
              ? ucp_get_nbx(a->rank_ep[w], local, s->len, raddr, rkey, &rp)
              : ucp_put_nbx(a->rank_ep[w], local, s->len, raddr, rkey, &rp);
    if (req == NULL) {
        s->completed = 1;
        s->status = UCS_OK;
    } else if (UCS_PTR_IS_ERR(req)) {
        s->completed = 1;
        s->status = UCS_PTR_STATUS(req);
    }
    if (s->state == 2) {
        m->put = 1;
    }
}

/* Is world rank w's memory read and written synchronously here (CMA,
 * or DMA through its grant)? */
static int sync_reach(const agent_t *a, uint32_t w)
{
    return agent_rank_cma(a, w) || agent_rank_dma(a, w);
}

/* One synchronous stage of slot s for world rank w (a worker's: counted
 * by the loop when it handed the slot over). */
static ucs_status_t sync_stage(agent_t *a, agent_slot_t *s, int stage,
                               uint32_t w)
{
    return agent_rank_cma(a, w) ? agent_cma_stage(a, s, stage, w)
                                : agent_dma_rw(a, s, stage, w);
}

/* A worker carries the rest of the chunk: read the source (unless it
 * was pushed here), read the destination and reduce, write. */
static void slot_job(agent_t *a, agent_job_t *j)
{
    agent_slot_t *s = (agent_slot_t *)j; /* job is its first member */
    agent_move_t *m = s->move;
    uint32_t      sw = world_of(m, m->src), dw = world_of(m, m->dst);
    ucs_status_t  st = UCS_OK;

    if (s->state == 1) {
        st = sync_stage(a, s, 1, sw);
    }
    if (st == UCS_OK && m->op != DPS_OP_NONE) {
        st = sync_stage(a, s, 3, dw);
        if (st == UCS_OK) {
            st = agent_slot_reduce(s);
        }
    }
    s->status = st;
    s->wstatus = st != UCS_OK ? st : sync_stage(a, s, 2, dw);
    __atomic_store_n(&s->completed, 1, __ATOMIC_RELEASE);
}

static void count_reach(agent_t *a, uint32_t w, uint64_t n)
{
    if (agent_rank_cma(a, w)) {
        a->cma_bytes += n;
    } else {
        a->dma_bytes += n;
    }
}

/* Hand slot s to a worker when every stage left is synchronous (a
 * staged chunk at its start, or a pushed piece to write); 1 if it was. */
static int slot_to_worker(agent_t *a, agent_slot_t *s)
{
    agent_move_t *m = s->move;
    uint32_t      sw = world_of(m, m->src), dw = world_of(m, m->dst);
    int           pushed = m->push == AGENT_PUSH_IN;

    if (a->nworkers < 2 || !sync_reach(a, dw) ||
        !(pushed ? s->state != 1 : s->state == 1 && sync_reach(a, sw))) {
        return 0;
    }
    s->job.run = slot_job;
    s->threaded = 1;
    __atomic_store_n(&s->completed, 0, __ATOMIC_RELAXED);
    if (agent_workers_submit(a, (unsigned)(s - a->slots), &s->job) != 0) {
        s->threaded = 0;
        return 0;
    }
    a->copy_jobs++;
    if (s->state == 1) {
        count_reach(a, sw, s->len);
    }
    if (m->op != DPS_OP_NONE) {
        count_reach(a, dw, s->len);
    }
    count_reach(a, dw, s->len);
    return 1;
}

static void slot_start(agent_t *a, agent_slot_t *s)
{
    agent_move_t *m = s->move;
    uint32_t      r = (s->state == 1) ? m->src : m->dst;

    s->completed = 0;
    if (slot_to_worker(a, s)) {
        return;
    }
    if (agent_rank_cma(a, world_of(m, r))) {
        a->cma_bytes += s->len;
        s->status = agent_cma_stage(a, s, s->state, world_of(m, r));
        s->completed = 1;
        return;
    }
    if (agent_rank_dma(a, world_of(m, r))) {
        s->status = agent_dma_stage(a, s, s->state, world_of(m, r));
        s->completed = 1;
        return;
    }
    if (s->state == 1 && agent_rank_fetch(a, world_of(m, r))) {
        agent_fetch_start(a, s);
        return;
    }
    a->ucx_bytes += s->len;
    ucx_stage(a, s, r);
}

/* Every chunk of m is written, some with UCX puts: m is done once they
 * are visible at the destination (the flush of its endpoint, which
 * waits for them and any other puts to that rank issued before). */
static void move_flush(agent_t *a, agent_move_t *m)
{
    agent_flush_t      *f;
    ucp_request_param_t rp;
    ucs_status_ptr_t    req;

    f = calloc(1, sizeof(*f));
    if (f == NULL) {
        /* Reporting it done now could let a reader see old bytes. */
        dps_error("no memory to flush a write into rank %u",
                  world_of(m, m->dst));
        a->up.move_done(a, m, DPS_ERR_NOMEM);
        return;
    }
    f->move = m;
    memset(&rp, 0, sizeof(rp));
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    rp.cb.send = flush_cb;
    rp.user_data = f;
    req = ucp_ep_flush_nbx(a->rank_ep[world_of(m, m->dst)], &rp);
    if (req == NULL || UCS_PTR_IS_ERR(req)) {
        f->completed = 1;
        f->status = (req == NULL) ? UCS_OK : UCS_PTR_STATUS(req);
    }
    f->next = a->flushes;
    a->flushes = f;
    a->inflight++;
}

/* The next stage of a chunk: 1 read the source, then for a reduction 3
 * read the destination and reduce, then 2 write. */
static int next_stage(agent_slot_t *s)
{
    if (s->state == 1 && s->move->op != DPS_OP_NONE) {
        return 3;
    }
    return 2;
}

/* What a failed stage means for its collective. The first error of an
 * instance stands: a later one (a fetch refused because the instance
 * already failed at the source) must not hide why it failed.
 * - AGENT_FETCH_REFUSED: the source's agent answered with nothing, as
 *   the fetch did not fit its rank's post (sizes that disagree) or the
 *   instance failed there (its INST_FAIL, with the reason, follows and
 *   overrides this): DPS_ERR_MISMATCH, an error of the call.
 * - anything else: UCX could not reach another agent or rank, or a
 *   rank's memory could not be read or written here (CMA, DMA: the rank
 *   is gone, or its buffer is): DPS_ERR_UCX, which the ranks' shims redo
 *   with stock MPI, where such a buffer fails as it would without us. */
static void move_failed(agent_move_t *m, ucs_status_t st)
{
    if (m->inst->error == 0) {
        m->inst->error =
            st == AGENT_FETCH_REFUSED ? DPS_ERR_MISMATCH : DPS_ERR_UCX;
    }
}

/* A chunk finished its current stage; returns 1 if the slot is free. */
static int slot_advance(agent_t *a, agent_slot_t *s)
{
    agent_move_t *m = s->move;

    if (s->fetching) {
        s->fetching = 0;
        a->fetch_wait--;
    }
    if (s->threaded) {
        /* A worker carried the whole chunk: it is written. */
        s->threaded = 0;
        a->copy_jobs--;
        if (s->state == 1) {
            m->read += s->len;
        }
        if (s->status == UCS_OK) {
            s->status = s->wstatus;
        }
        s->state = 2;
    }
    if (s->status != UCS_OK) {
        dps_error("%s of %llu bytes for rank %u failed: %s",
                  s->state == 2 ? "write" : "read", (unsigned long long)s->len,
                  world_of(m, s->state == 1 ? m->src : m->dst),
                  ucs_status_string(s->status));
        move_failed(m, s->status);
    }
    if (s->state == 1 || s->state == 3) {
        if (s->state == 1) {
            m->read += s->len;
        }
        s->state = next_stage(s);
        if (s->state == 2 && m->op != DPS_OP_NONE && s->status == UCS_OK) {
            s->status = agent_slot_reduce(s);
        }
        slot_start(a, s);
        return 0;
    }
    m->written += s->len;
    s->state = 0;
    s->move = NULL;
    a->inflight--;
    agent_push_written(a, s);
    if (m->push == AGENT_PUSH_IN && m->written == m->len) {
        agent_push_finished(a, m);
    } else if (m->push == AGENT_PUSH_IN && m->pend == NULL &&
               m->written == m->issued) {
        /* Its instance failed meanwhile (agent_push_drop): nothing
         * more comes. */
        a->up.move_done(a, m, m->inst->error ? m->inst->error : DPS_ERR_UCX);
        return 1;
    }
    if (m->written == m->len && m->put) {
        move_flush(a, m);
    } else if (m->written == m->len) {
        a->up.move_done(a, m, m->inst->error ? m->inst->error : DPS_OK);
    }
    return 1;
}

/* Unqueue the head, m (it is taken whole, or waits for pushed bytes). */
static void head_pop(agent_t *a, agent_move_t *m)
{
    a->q_head = m->next;
    if (a->q_head == NULL) {
        a->q_tail = NULL;
    }
    m->next = NULL;
}

/* Free slot s takes the next pushed piece of the first queued move,
 * m, and starts writing it (no read stage: it is here). */
static void slot_fill_pushed(agent_t *a, agent_slot_t *s, agent_move_t *m)
{
    size_t half = a->chunk + AGENT_ALIGN;
    char  *own;

    s->move = m;
    s->state = m->op != DPS_OP_NONE ? 3 : 2;
    a->inflight++;
    if (agent_push_take(a, s) != DPS_OK) {
        /* Not the piece due: the instance fails; nothing is written. */
        agent_push_finished(a, m);
        s->len = m->len - m->issued;
        m->issued = m->len;
        head_pop(a, m);
        m->queued = 0;
        s->completed = 1;
        s->status = UCS_ERR_INVALID_PARAM;
        s->state = 2;
        m->inst->error = m->inst->error ? m->inst->error : DPS_ERR_PROTO;
        return;
    }
    if (m->issued == m->len || !agent_push_more(m)) {
        head_pop(a, m);
        m->queued = 0;
    }
    own = s->buf + ((m->dst_addr + s->off) & (AGENT_ALIGN - 1));
    s->aux = own + half;
    slot_start(a, s);
}

/* Free slot s takes the next chunk of the first queued move, and starts
 * reading it. */
static void slot_fill(agent_t *a, agent_slot_t *s)
{
    agent_move_t *m = a->q_head;
    size_t        half = a->chunk + AGENT_ALIGN;

    if (m->push == AGENT_PUSH_IN) {
        slot_fill_pushed(a, s, m);
        return;
    }
    s->move = m;
    s->off = m->issued;
    s->len = m->len - m->issued;
    if (s->len > a->chunk) {
        /* A reduction's chunks hold whole elements. */
        size_t es = m->op != DPS_OP_NONE ? dps_dtype_size(m->dtype) : 1;

        s->len = a->chunk - a->chunk % es;
    }
    /* Stage the chunk at the destination's offset modulo 64: the kernel's
     * copy (rep movsb) runs 2-6x slower between mutually misaligned
     * buffers, and malloc'ed user buffers start 16 bytes into a page. */
    s->data = s->buf + ((m->dst_addr + s->off) & (AGENT_ALIGN - 1));
    s->aux = s->data + half;
    m->issued += s->len;
    if (m->issued == m->len) {
        head_pop(a, m);
    }
    s->state = 1;
    a->inflight++;
    slot_start(a, s);
}

/* Keep slot s busy while its stages complete at once (CMA copies are
 * synchronous): one staging buffer, hot in cache, instead of a walk over
 * all of them. Returns 1 if anything advanced. */
static int slot_run(agent_t *a, agent_slot_t *s)
{
    int progress = 0;

    for (;;) {
        if (s->state != 0 &&
            __atomic_load_n(&s->completed, __ATOMIC_ACQUIRE)) {
            slot_advance(a, s);
            progress = 1;
            continue;
        }
        /* A gathered source waits for an engine's ring. */
        if (s->state == 0 && a->q_head != NULL && a->q_head->src_map == 0) {
            slot_fill(a, s);
            progress = 1;
            continue;
        }
        return progress;
    }
}

/* End the moves whose flushes completed. Returns 1 if any did. */
static int flushes_reap(agent_t *a)
{
    agent_flush_t **fp;
    int             progress = 0;

    for (fp = &a->flushes; *fp != NULL;) {
        agent_flush_t *f = *fp;
        agent_move_t  *m = f->move;

        if (!f->completed) {
            fp = &f->next;
            continue;
        }
        *fp = f->next;
        a->inflight--;
        if (f->status != UCS_OK) {
            dps_error("flush of writes into rank %u failed: %s",
                      world_of(m, m->dst), ucs_status_string(f->status));
            move_failed(m, f->status);
        }
        free(f);
        /* May start moves, never a flush: fp stays valid. */
        a->up.move_done(a, m, m->inst->error ? m->inst->error : DPS_OK);
        progress = 1;
    }
    return progress;
}

int agent_schedule(agent_t *a)
{
    double until = dps_now() + AGENT_SCHED_SLICE_SEC;
    int    progress = 1;

    while (progress) {
        progress = 0;
        for (unsigned i = 0; i < a->nslots; i++) {
            progress |= slot_run(a, &a->slots[i]);
        }
        progress |= flushes_reap(a);
        progress |= agent_serves_progress(a);
        if (progress && dps_now() >= until) {
            return 1;
        }
    }
    return 0;
}

void agent_exec_fini(agent_t *a)
{
    agent_move_t *m;

    while ((m = a->q_head) != NULL) {
        a->q_head = m->next;
        free(m);
    }
    a->q_tail = NULL;
    while (a->flushes != NULL) {
        agent_flush_t *f = a->flushes;

        a->flushes = f->next;
        free(f);
    }
    agent_workers_stop(a);
    agent_engines_fini(a);
    agent_serves_fini(a);
    free(a->slots);
    a->slots = NULL;
    if (a->staging_memh != NULL) {
        ucp_mem_unmap(a->ucx.context, a->staging_memh);
        a->staging_memh = NULL;
    }
}
