/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transfers between nodes, node to node (DESIGN.md decision 14): the
 * agent of the sending rank pushes the bytes to the agent of the
 * receiving rank without being asked, once that rank has posted (its
 * post, which its agent forwards to ours, is the grant of room: its
 * receive buffer), and everything it has for one agent goes in one
 * network message a pass (a BUNDLE of PUSH pieces and the pass's other
 * messages, at most DPUSHIM_CHUNK_BYTES of pieces each, at most
 * DPUSHIM_PIPELINE_DEPTH of them on their way to one agent at once).
 *
 * - The sender's side (AGENT_PUSH_OUT): a SEND step whose reader is on
 *   another node becomes a move queued for the reader's agent; at the
 *   end of the pass its bytes are read from the rank (CMA, or DMA
 *   through its grant) straight into the bundle, and the step is done
 *   once they are read: nobody reports a read back (no SEND_DONE, no
 *   ROUND). A rank we reach neither way is left to the receiver's agent
 *   to fetch (a PUSH with DPS_PUSH_FETCH, then FETCH as before).
 * - The receiver's side (AGENT_PUSH_IN): pieces are kept where they came
 *   (agent_rx_t: the received bundle stays allocated while pieces of it
 *   wait) until the rank's RECV step has begun; then the staging slots
 *   write them (agent_exec.c: CMA, DMA or UCX put, reduced into the
 *   destination for RECV_REDUCE), with no read stage.
 *
 * Pieces are cut at multiples of every reduction element's size, so a
 * piece of a reduction holds whole elements although the sender's agent
 * does not know the receiver's type. Nothing here knows which
 * collective a move belongs to.
 */
#define _GNU_SOURCE
#include "dpu_agent/move/agent_move.h"
#include "dpu_agent/move/agent_movers.h"
#include "dpu_agent/core/agent_chan.h"
#include "common/dps_log.h"
#include "common/dps_proto.h"
#include "common/dps_status.h"

#include <stdlib.h>
#include <string.h>

/* ---- the sender's side -------------------------------------------------- */

static uint64_t gcd(uint64_t x, uint64_t y)
{
    while (y != 0) {
        uint64_t t = x % y;

        x = y;
        y = t;
    }
    return x;
}

void agent_push_init(agent_t *a)
{
    uint64_t u = 1;

    a->window = (uint64_t)a->chunk * a->nslots;

    for (unsigned t = 1; t < DPS_T_COUNT; t++) {
        uint64_t e = dps_dtype_size(t);

        if (e > 0) {
            u = u / gcd(u, e) * e;
        }
    }
    a->push_unit = u;
}

int agent_push_room(agent_t *a, uint32_t world_dst, uint64_t len)
{
    agent_out_t *o = &a->out[a->rank_agent[world_dst]];

    if (o->dead || o->credit < len) {
        return 0;
    }
    o->credit -= len;
    return 1;
}

void agent_push_unroom(agent_t *a, uint32_t world_dst, uint64_t len)
{
    a->out[a->rank_agent[world_dst]].credit += len;
}

void agent_push_out(agent_t *a, agent_move_t *m)
{
    agent_out_t *o = &a->out[a->rank_agent[agent_move_world(m, m->dst)]];

    m->next = NULL;
    if (o->push_tail != NULL) {
        o->push_tail->next = m;
    } else {
        o->push_head = m;
    }
    o->push_tail = m;
}

static agent_move_t *out_pop(agent_out_t *o)
{
    agent_move_t *m = o->push_head;

    o->push_head = m->next;
    if (o->push_head == NULL) {
        o->push_tail = NULL;
    }
    m->next = NULL;
    return m;
}

/* A bundle whose pieces a worker reads (agent_workers.c): the bundle's
 * buffer, taken from its agent's, the reads, and the moves it ends once
 * they are done. The loop sends it when the worker is done. */
typedef struct fill_read {
    uint32_t world;
    uint64_t addr, at, len;
} fill_read_t;

typedef struct agent_fill {
    agent_job_t        job; /* first: the worker's */
    struct agent_fill *next;
    uint32_t           to;
    uint8_t           *buf;
    size_t             len, cap;
    fill_read_t       *reads;
    unsigned           nreads, maxreads;
    agent_move_t      *done;
    int                failed; /* a read failed (the worker's) */
} agent_fill_t;

/* Read len bytes at addr of world rank w into dst, to push them:
 * DPS_OK, or DPS_ERR_IO (logged). */
static int push_read(agent_t *a, uint32_t w, uint64_t addr, uint8_t *dst,
                     uint64_t len)
{
    if (agent_read_rank(a, w, addr, dst, len) != DPS_OK) {
        dps_error("reading %llu bytes at %#llx of rank %u to push: %m",
                  (unsigned long long)len, (unsigned long long)addr, w);
        return DPS_ERR_IO;
    }
    return DPS_OK;
}

static void fill_run(agent_t *a, agent_job_t *j)
{
    agent_fill_t *f = (agent_fill_t *)j;

    for (unsigned i = 0; i < f->nreads; i++) {
        const fill_read_t *r = &f->reads[i];

        if (push_read(a, r->world, r->addr, f->buf + r->at, r->len) !=
            DPS_OK) {
            f->failed = 1;
        }
    }
}

/* Record a read for the fill being built (made at its first); DPS_OK or
 * DPS_ERR_NOMEM. */
static int fill_note(agent_fill_t **fp, uint32_t world, uint64_t addr,
                     uint64_t at, uint64_t len)
{
    agent_fill_t *f = *fp;

    if (f == NULL && (f = *fp = calloc(1, sizeof(*f))) == NULL) {
        return DPS_ERR_NOMEM;
    }
    if (f->nreads == f->maxreads) {
        unsigned     n = f->maxreads ? 2 * f->maxreads : 16;
        fill_read_t *r = realloc(f->reads, n * sizeof(*r));

        if (r == NULL) {
            return DPS_ERR_NOMEM;
        }
        f->reads = r;
        f->maxreads = n;
    }
    f->reads[f->nreads++] = (fill_read_t){world, addr, at, len};
    return DPS_OK;
}

/* The next piece of m's bytes for o's bundle, with room left for `room`
 * bytes of data: appended (DPS_OK; m->issued moves on), none now
 * (DPS_ERR_AGAIN: the bundle is full), or an error for m. Its bytes are
 * read now, or, with workers (*fill), by a worker before the bundle
 * goes. */
static int piece_put(agent_t *a, agent_out_t *o, agent_move_t *m, size_t room,
                     agent_fill_t **fill)
{
    uint32_t       sw = agent_move_world(m, m->src);
    uint64_t       left = m->len - m->issued, n = left < room ? left : room;
    dps_msg_push_t f;
    int            rc;

    if (n < left) {
        n -= n % a->push_unit;
    }
    if (n == 0) {
        return DPS_ERR_AGAIN;
    }
    memset(&f, 0, sizeof(f));
    f.comm_id = m->inst->key.comm_id;
    f.seq = (uint32_t)m->inst->key.seq;
    f.src = m->src;
    f.dst = m->dst;
    f.k = m->k;
    f.off = m->issued;
    f.len = n;
    f.total = m->len;
    f.flags = m->early ? DPS_PUSH_EARLY : 0;
    f.agent = a->self;
    if ((rc = agent_out_room(a, o, DPS_PUSH_HEAD + n)) != DPS_OK ||
        (rc = dps_msg_push_put(&f, o->buf + o->len)) != DPS_OK) {
        return rc;
    }
    if (fill != NULL) {
        if ((rc = fill_note(fill, sw, m->src_addr + m->issued,
                            o->len + DPS_PUSH_HEAD, n)) != DPS_OK) {
            return rc;
        }
    } else if ((rc = push_read(a, sw, m->src_addr + m->issued,
                               o->buf + o->len + DPS_PUSH_HEAD, n)) !=
               DPS_OK) {
        return rc;
    }
    o->len += DPS_PUSH_HEAD + n;
    o->n++;
    m->issued += n;
    m->read = m->issued;
    if (agent_rank_cma(a, sw)) {
        a->cma_bytes += n;
    } else {
        a->dma_bytes += n;
    }
    a->pushes++;
    a->pushed_bytes += n;
    a->net_bytes += n;
    return DPS_OK;
}

/* m's source is a rank we reach neither by CMA nor by DMA: the
 * receiver's agent fetches it (and reports the read, SEND_DONE). */
static int piece_fetch(agent_t *a, agent_out_t *o, agent_move_t *m)
{
    dps_msg_push_t f;
    int            rc;

    if (!m->pull) {
        o->credit += m->len; /* nothing of it lands there unasked */
        m->pull = 1;
    }
    memset(&f, 0, sizeof(f));
    f.agent = a->self;
    f.comm_id = m->inst->key.comm_id;
    f.seq = (uint32_t)m->inst->key.seq;
    f.src = m->src;
    f.dst = m->dst;
    f.k = m->k;
    f.total = m->len;
    f.flags = DPS_PUSH_FETCH;
    if ((rc = agent_out_room(a, o, DPS_PUSH_HEAD)) != DPS_OK ||
        (rc = dps_msg_push_put(&f, o->buf + o->len)) != DPS_OK) {
        return rc;
    }
    o->len += DPS_PUSH_HEAD;
    o->n++;
    return DPS_OK;
}

/* One bundle of pieces for agent idx; moves it ended go to *done. With
 * workers, its reads go to *fill (made here) and are not done yet. */
static void bundle_fill(agent_t *a, agent_out_t *o, agent_move_t **done,
                        agent_fill_t **fill)
{
    uint64_t data = 0;

    while (o->push_head != NULL && data < a->chunk) {
        agent_move_t *m = o->push_head;
        uint32_t      sw = agent_move_world(m, m->src);
        int           rc;

        if (m->pull || (!agent_rank_cma(a, sw) && !agent_rank_dma(a, sw))) {
            rc = piece_fetch(a, o, m);
            m->read = 0; /* not read here: its reader says so */
            m->issued = m->len;
        } else {
            uint64_t before = m->issued;

            rc = piece_put(a, o, m, a->chunk - data, fill);
            if (rc == DPS_ERR_AGAIN) {
                break;
            }
            data += m->issued - before;
        }
        if (rc != DPS_OK) {
            m->failed = 1;
            m->read = 0;
            m->issued = m->len;
        }
        if (m->issued == m->len) {
            out_pop(o);
            m->next = *done;
            *done = m;
        }
    }
}

/* Give the room of pushed bytes written here back to their sender: in a
 * message going to it anyway, or on its own once it is half the
 * window (a sender that pushes and never receives still gets it). */
static void credit_return(agent_t *a, uint32_t i, int anyway)
{
    agent_out_t *o = &a->out[i];
    size_t       len;
    void        *msg;

    if (o->credit_back == 0 ||
        (!anyway && o->credit_back < a->window / 2 + 1)) {
        return;
    }
    msg = dps_msg_encode_credit(a->self, o->credit_back, &len);
    if (msg != NULL && agent_send_agent(a, i, msg, len) == DPS_OK) {
        o->credit_back = 0;
    }
}

void agent_push_credit(agent_t *a, const dps_msg_credit_t *c)
{
    agent_out_t *o;

    if (a->out == NULL || c->agent >= a->nagents || c->agent == a->self) {
        dps_error("credit from unknown agent %u ignored", c->agent);
        return;
    }
    o = &a->out[c->agent];
    /* Never above the window (nor wrapped past it). */
    o->credit =
        c->bytes >= a->window - o->credit ? a->window : o->credit + c->bytes;
}

/* Hand a built bundle to a worker for its reads: it leaves o (o->buf
 * is empty again), counted as on its way (o->inflight, o->filling) and
 * kept in a->fills, oldest first, until agent_fills_reap sends it. */
static void fill_submit(agent_t *a, uint32_t i, agent_fill_t *f,
                        agent_move_t *done)
{
    agent_out_t   *o = &a->out[i];
    agent_fill_t **fp = &a->fills;

    f->to = i;
    f->buf = o->buf;
    f->len = o->len;
    f->cap = o->cap;
    f->done = done;
    f->job.run = fill_run;
    o->buf = NULL;
    o->len = o->cap = 0;
    o->n = 0;
    o->inflight++;
    o->filling++;
    while (*fp != NULL) {
        fp = &(*fp)->next;
    }
    *fp = f;
    if (agent_workers_submit(a, i, &f->job) != 0) {
        fill_run(a, &f->job); /* no worker free: here */
        f->job.done = 1;
    }
}

/* End the moves of a list: read (or left to fetch), or failed. */
static void moves_end(agent_t *a, agent_move_t *done, int failed)
{
    while (done != NULL) {
        agent_move_t *m = done;

        done = m->next;
        a->up.move_done(a, m, m->failed || failed ? DPS_ERR_UCX : DPS_OK);
    }
}

/* Send the bundles whose reads the workers finished, in order for each
 * agent; end their moves. 1 if any went. */
static int fills_reap(agent_t *a)
{
    agent_fill_t **fp = &a->fills;
    uint32_t       blocked[8];
    unsigned       nblocked = 0;
    int            any = 0;

    while (*fp != NULL) {
        agent_fill_t *f = *fp;
        int           later = 0;

        for (unsigned k = 0; k < nblocked; k++) {
            later |= blocked[k] == f->to;
        }
        if (later || !__atomic_load_n(&f->job.done, __ATOMIC_ACQUIRE)) {
            if (!later && nblocked < 8) {
                blocked[nblocked++] = f->to;
            }
            if (nblocked == 8) {
                break;
            }
            fp = &f->next;
            continue;
        }
        *fp = f->next;
        a->out[f->to].filling--;
        agent_out_send_buf(a, f->to, f->buf, f->len, f->cap, 2);
        moves_end(a, f->done, f->failed);
        free(f->reads);
        free(f);
        any = 1;
    }
    return any;
}

void agent_push_flush(agent_t *a)
{
    if (a->fills != NULL) {
        agent_workers_drain(a);
        fills_reap(a);
    }
    for (uint32_t i = 0; a->out != NULL && i < a->nagents; i++) {
        agent_out_t *o = &a->out[i];

        credit_return(a, i, o->n > 0 || o->push_head != NULL);
        while (o->push_head != NULL && o->inflight < a->nslots && !o->dead) {
            agent_fill_t *fill = NULL;
            agent_move_t *done = NULL;
            int           rc;

            bundle_fill(a, o, &done, a->nworkers > 1 ? &fill : NULL);
            if (fill != NULL) {
                fill_submit(a, i, fill, done);
                continue;
            }
            rc = agent_out_send(a, i, 1);
            /* Their ends may start other moves: this loop takes them. */
            moves_end(a, done, 0);
            if (rc != DPS_OK) {
                break; /* out of memory, or that agent is lost: its
                        * ranks' failover ends the collectives */
            }
        }
    }
}

int agent_push_pending(const agent_t *a)
{
    for (const agent_fill_t *f = a->fills; f != NULL; f = f->next) {
        if (__atomic_load_n(&f->job.done, __ATOMIC_ACQUIRE)) {
            return 1; /* to send */
        }
    }
    for (uint32_t i = 0; a->out != NULL && i < a->nagents; i++) {
        const agent_out_t *o = &a->out[i];

        if (o->push_head != NULL && o->inflight < a->nslots && !o->dead) {
            return 1;
        }
    }
    return 0;
}

/* ---- the receiver's side ------------------------------------------------ */

static agent_pend_t *pend_get(agent_t *a, uint64_t comm_id, uint32_t seq,
                              uint32_t src, uint32_t dst, uint32_t k)
{
    agent_pend_t *p, probe;

    memset(&probe.key, 0, sizeof(probe.key));
    probe.key.comm_id = comm_id;
    probe.key.seq = seq;
    probe.key.src = src;
    probe.key.dst = dst;
    probe.key.k = k;
    HASH_FIND(hh, a->pends, &probe.key, sizeof(probe.key), p);
    if (p == NULL && (p = calloc(1, sizeof(*p))) != NULL) {
        p->key = probe.key;
        HASH_ADD(hh, a->pends, key, sizeof(p->key), p);
    }
    return p;
}

/* Early bytes of agent `from` written or dropped here: theirs again. */
static void credit_back(agent_t *a, uint32_t from, uint64_t n)
{
    if (a->out != NULL && from < a->nagents) {
        a->out[from].credit_back += n;
    }
}

void agent_push_dropped(agent_t *a, uint32_t from, uint64_t n)
{
    credit_back(a, from, n);
}

static void pend_free(agent_t *a, agent_pend_t *p)
{
    while (p->head != NULL) {
        agent_arrival_t *r = p->head;

        credit_back(a, r->from, r->len - p->used);
        p->used = 0;
        p->head = r->next;
        agent_rx_put(r->rx);
        free(r);
    }
    HASH_DEL(a->pends, p);
    free(p);
}

/* m (pushed in) is to be fetched instead: an ordinary staged move. */
static void to_fetch(agent_t *a, agent_pend_t *p)
{
    agent_move_t *m = p->move;

    m->push = 0;
    m->pend = NULL;
    pend_free(a, p);
    agent_move_queue(a, m);
}

static void queue_in(agent_t *a, agent_move_t *m)
{
    if (!m->queued) {
        m->queued = 1;
        agent_move_queue(a, m);
    }
}

int agent_push_arrive(agent_t *a, const dps_msg_push_t *f, const uint8_t *data,
                      agent_rx_t *rx)
{
    agent_pend_t    *p = pend_get(a, f->comm_id, f->seq, f->src, f->dst, f->k);
    agent_arrival_t *r;

    if (p == NULL) {
        return DPS_ERR_NOMEM;
    }
    if (f->flags & DPS_PUSH_FETCH) {
        p->fetch = 1;
        if (p->move != NULL) {
            to_fetch(a, p);
        }
        return DPS_OK;
    }
    if (f->len == 0) {
        return DPS_OK;
    }
    if (rx == NULL || (r = calloc(1, sizeof(*r))) == NULL) {
        return DPS_ERR_NOMEM;
    }
    r->rx = rx;
    rx->refs++;
    r->data = data;
    r->off = f->off;
    r->len = f->len;
    r->from = f->agent;
    if (p->tail != NULL) {
        p->tail->next = r;
    } else {
        p->head = r;
    }
    p->tail = r;
    if (p->move != NULL) {
        queue_in(a, p->move);
    }
    return DPS_OK;
}

int agent_push_expect(agent_t *a, agent_move_t *m)
{
    agent_pend_t *p =
        pend_get(a, m->inst->key.comm_id, (uint32_t)m->inst->key.seq, m->src,
                 m->dst, m->k);

    if (p == NULL) {
        return DPS_ERR_NOMEM;
    }
    m->push = AGENT_PUSH_IN;
    m->pend = p;
    p->move = m;
    if (p->fetch) {
        to_fetch(a, p);
    } else if (p->head != NULL) {
        queue_in(a, m);
    }
    return DPS_OK;
}

int agent_push_take(agent_t *a, agent_slot_t *s)
{
    agent_move_t    *m = s->move;
    agent_pend_t    *p = m->pend;
    agent_arrival_t *r = p->head;
    uint64_t         n, unit = a->chunk - a->chunk % a->push_unit;

    if (r->off + p->used != m->issued || r->off + r->len > m->len) {
        dps_error("pushed bytes at %llu of rank %u's transfer where %llu "
                  "were due: the collective fails",
                  (unsigned long long)(r->off + p->used),
                  agent_move_world(m, m->src), (unsigned long long)m->issued);
        return DPS_ERR_PROTO;
    }
    n = r->len - p->used;
    if (n > unit && unit > 0) {
        n = unit;
    }
    s->off = m->issued;
    s->len = n;
    s->data = (char *)(uintptr_t)(r->data + p->used);
    s->rx = r->rx;
    s->credit_to = r->from + 1;
    r->rx->refs++;
    p->used += n;
    m->issued += n;
    m->read += n;
    if (p->used == r->len) {
        p->head = r->next;
        if (p->head == NULL) {
            p->tail = NULL;
        }
        agent_rx_put(r->rx);
        free(r);
        p->used = 0;
    }
    return DPS_OK;
}

int agent_push_more(const agent_move_t *m)
{
    return m->pend != NULL && m->pend->head != NULL;
}

void agent_push_written(agent_t *a, agent_slot_t *s)
{
    if (s->credit_to != 0) {
        credit_back(a, s->credit_to - 1, s->len);
        s->credit_to = 0;
    }
    if (s->rx != NULL) {
        agent_rx_put(s->rx);
        s->rx = NULL;
    }
}

void agent_push_finished(agent_t *a, agent_move_t *m)
{
    if (m->pend != NULL) {
        pend_free(a, m->pend);
        m->pend = NULL;
    }
}

agent_move_t *agent_push_drop(agent_t *a, agent_inst_t *in)
{
    agent_pend_t *p, *tmp;
    agent_move_t *out = NULL;

    HASH_ITER(hh, a->pends, p, tmp) {
        agent_move_t *m = p->move;

        if (p->key.comm_id != in->key.comm_id ||
            p->key.seq != (uint32_t)in->key.seq) {
            continue;
        }
        if (m != NULL) {
            m->pend = NULL;
            if (m->queued) {
                agent_move_unqueue(a, m);
                m->queued = 0;
            }
            if (m->issued == m->written) {
                /* Nothing of it in a slot: the caller ends it. */
                m->next = out;
                out = m;
            }
        }
        pend_free(a, p);
    }
    for (uint32_t i = 0; a->out != NULL && i < a->nagents; i++) {
        agent_out_t   *o = &a->out[i];
        agent_move_t **mp = &o->push_head, *prev = NULL;

        while (*mp != NULL) {
            agent_move_t *m = *mp;

            if (m->inst != in) {
                prev = m;
                mp = &m->next;
                continue;
            }
            *mp = m->next;
            if (o->push_tail == m) {
                o->push_tail = prev;
            }
            if (!m->pull) {
                o->credit += m->len - m->issued; /* never sent */
            }
            m->next = out;
            out = m;
        }
    }
    return out;
}

void agent_push_fini(agent_t *a)
{
    agent_pend_t *p, *tmp;

    /* The workers are stopped: their bundles and moves go. */
    while (a->fills != NULL) {
        agent_fill_t *f = a->fills;

        a->fills = f->next;
        while (f->done != NULL) {
            agent_move_t *m = f->done;

            f->done = m->next;
            free(m);
        }
        free(f->buf);
        free(f->reads);
        free(f);
    }
    HASH_ITER(hh, a->pends, p, tmp) {
        if (p->move != NULL) {
            p->move->pend = NULL;
        }
        pend_free(a, p);
    }
    for (uint32_t i = 0; a->out != NULL && i < a->nagents; i++) {
        while (a->out[i].push_head != NULL) {
            free(out_pop(&a->out[i]));
        }
    }
}
