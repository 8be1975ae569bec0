/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The direct data path (agent_exec.c has the staged one): a move whose
 * destination rank has a DMA engine on this host goes to it as one
 * command through the rank's shared-memory segment, and its done report,
 * through the same segment, ends the move. Moves from unpacked send data
 * (READ_GATHER) go only this way.
 */
#define _GNU_SOURCE
#include "dpu_agent/move/agent_move.h"
#include "dpu_agent/move/agent_movers.h"
#include "common/dps_log.h"
#include "common/dps_status.h"

#include <stdlib.h>
#include <string.h>

/*
 * Direct path: a move whose destination rank has a DMA engine (its
 * segment says engine_up) and whose source shares this host goes to that
 * engine as one command: one copy, by the destination's own process,
 * straight from the source's memory. The agent keeps the bookkeeping.
 */
static int engine_takes(agent_t *a, agent_move_t *m, agent_link_t **lp)
{
    agent_link_t *l = agent_link(a, world_of(m, m->dst));

    if (l == NULL || m->issued != 0 || m->push != 0 ||
        (m->src_map != 0 && m->op != DPS_OP_NONE) ||
        !agent_rank_cma(a, world_of(m, m->src)) ||
        !agent_rank_cma(a, world_of(m, m->dst)) ||
        !__atomic_load_n(&l->shm->engine_up, __ATOMIC_ACQUIRE) ||
        l->cmds_out >= DPS_SHM_CMD_SLOTS) {
        return 0;
    }
    *lp = l;
    return 1;
}

/* Could an engine ever take m (only its ring is full now)? */
static int engine_could(agent_t *a, const agent_move_t *m)
{
    agent_link_t *l = agent_link(a, world_of(m, m->dst));

    return l != NULL && agent_rank_cma(a, world_of(m, m->src)) &&
           agent_rank_cma(a, world_of(m, m->dst)) &&
           __atomic_load_n(&l->shm->engine_up, __ATOMIC_ACQUIRE);
}

void agent_dispatch_engines(agent_t *a)
{
    agent_move_t **mp = &a->q_head, *m, *prev = NULL;
    agent_link_t  *l;

    while ((m = *mp) != NULL) {
        dps_cmd_t c;

        if (!engine_takes(a, m, &l)) {
            if (m->src_map != 0 && m->issued == 0 &&
                (!engine_could(a, m) || m->op != DPS_OP_NONE)) {
                /* Unpacked send data has no other way to go. */
                *mp = m->next;
                if (a->q_tail == m) {
                    a->q_tail = prev;
                }
                dps_error("rank %u's non-contiguous send data can only be "
                          "copied by a DMA engine on its host, and rank %u "
                          "has none (or it was to be reduced): the "
                          "collective fails",
                          world_of(m, m->src), world_of(m, m->dst));
                a->up.move_done(a, m, DPS_ERR_IO);
                continue;
            }
            prev = m;
            mp = &m->next;
            continue;
        }
        memset(&c, 0, sizeof(c));
        c.id = (uint64_t)(uintptr_t)m;
        c.op = m->op != DPS_OP_NONE ? DPS_CMD_READ_REDUCE
               : m->src_map != 0    ? DPS_CMD_READ_GATHER
                                    : DPS_CMD_READ;
        c.rop = m->op;
        c.dtype = m->dtype;
        c.src_pid = a->rank_pid[world_of(m, m->src)];
        c.src_addr = m->src_addr;
        c.dst_addr = m->dst_addr;
        c.len = m->len;
        c.src_map = m->src_map;
        c.src_nmap = m->src_nmap;
        if (dps_shm_cmd_put(l->shm, &c) != DPS_OK) {
            prev = m;
            mp = &m->next;
            continue;
        }
        l->cmds_out++;
        m->cmd_key = m;
        HASH_ADD(hh_cmd, l->cmds, cmd_key, sizeof(void *), m);
        l->woke_engine = 1;
        a->engine_cmds++;
        m->issued = m->len;
        *mp = m->next; /* off the queue; the engine has it */
        if (a->q_tail == m) {
            a->q_tail = prev;
        }
    }
    /* Wake the engines that sleep and were given work. */
    for (l = a->links; l != NULL; l = l->next) {
        if (!l->woke_engine) {
            continue;
        }
        l->woke_engine = 0;
        dps_shm_fence();
        if (__atomic_load_n(&l->shm->engine_sleeping, __ATOMIC_RELAXED)) {
            __atomic_add_fetch(&l->shm->engine_wake, 1, __ATOMIC_RELEASE);
            dps_shm_futex_wake(&l->shm->engine_wake);
        }
    }
}

/* An engine finished the command with id: its move is done. */
static void engine_done(agent_t *a, agent_link_t *l, const dps_done_t *d)
{
    void         *key = (void *)(uintptr_t)d->id;
    agent_move_t *m;

    /* The id comes back through memory the rank can write: only one of
     * the commands given out is taken at its word. */
    HASH_FIND(hh_cmd, l->cmds, &key, sizeof(void *), m);
    if (m == NULL) {
        dps_error("rank %u's engine reports a command it was not given",
                  l->world);
        return;
    }
    HASH_DELETE(hh_cmd, l->cmds, m);
    l->cmds_out--;
    if (d->status != DPS_OK) {
        dps_error("rank %u's DMA engine failed to read %llu bytes from "
                  "rank %u",
                  l->world, (unsigned long long)m->len, world_of(m, m->src));
    }
    m->read = m->written = m->len;
    a->up.move_done(a, m, d->status);
}

int agent_engines_reap(agent_t *a)
{
    agent_link_t *l;
    int           n = 0;

    for (l = a->links; l != NULL; l = l->next) {
        dps_done_t d;

        while (dps_shm_done_get(l->shm, &d) == DPS_OK) {
            n++;
            engine_done(a, l, &d);
        }
    }
    return n;
}

void agent_engines_fini(agent_t *a)
{
    agent_link_t *l;

    for (l = a->links; l != NULL; l = l->next) {
        agent_move_t *m, *tmp;

        HASH_ITER(hh_cmd, l->cmds, m, tmp) {
            HASH_DELETE(hh_cmd, l->cmds, m);
            free(m);
        }
        l->cmds_out = 0;
    }
}
