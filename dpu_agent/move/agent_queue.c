/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The queue of moves waiting for a staging slot or a DMA engine: what
 * the executors (agent_exec.c, agent_engines.c) take from and the
 * pushed-in moves (agent_push.c) join once their bytes have come.
 */
#include "dpu_agent/move/agent_move.h"

#include <stddef.h>

void agent_move_unqueue(agent_t *a, agent_move_t *m)
{
    agent_move_t **mp = &a->q_head, *prev = NULL;

    while (*mp != NULL && *mp != m) {
        prev = *mp;
        mp = &(*mp)->next;
    }
    if (*mp == m) {
        *mp = m->next;
        if (a->q_tail == m) {
            a->q_tail = prev;
        }
        m->next = NULL;
    }
}

void agent_move_queue(agent_t *a, agent_move_t *m)
{
    m->next = NULL;
    if (a->q_tail != NULL) {
        a->q_tail->next = m;
    } else {
        a->q_head = m;
    }
    a->q_tail = m;
}

agent_move_t *agent_moves_unqueue(agent_t *a, agent_inst_t *in)
{
    agent_move_t **mp = &a->q_head, *m, *prev = NULL;
    agent_move_t  *out = NULL, **tail = &out;

    while ((m = *mp) != NULL) {
        if (m->inst != in || m->issued != 0) {
            prev = m;
            mp = &m->next;
            continue;
        }
        *mp = m->next;
        if (a->q_tail == m) {
            a->q_tail = prev;
        }
        m->next = NULL;
        *tail = m;
        tail = &m->next;
    }
    return out;
}
