/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The staged path's copies for ranks of this host: a chunk read or
 * written with process_vm_readv/writev (CMA), by the event loop or by a
 * worker (agent_workers.c) that carries a whole chunk (agent_exec.c
 * keeps the slots and all the bookkeeping).
 */
#define _GNU_SOURCE
#include "dpu_agent/move/agent_move.h"
#include "dpu_agent/move/agent_movers.h"
#include "common/dps_log.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

ucs_status_t agent_cma_stage(agent_t *a, agent_slot_t *s, int stage,
                             uint32_t world)
{
    agent_move_t *m = s->move;
    uint64_t      raddr = (stage == 1 ? m->src_addr : m->dst_addr) + s->off;
    char         *local =
        stage == 1 ? s->data : (m->op != DPS_OP_NONE ? s->aux : s->data);
    size_t done = 0;

    while (done < s->len) {
        struct iovec l = {local + done, s->len - done};
        struct iovec r = {(void *)(uintptr_t)(raddr + done), s->len - done};
        ssize_t n = (stage != 2) ? process_vm_readv((pid_t)a->rank_pid[world],
                                                    &l, 1, &r, 1, 0)
                                 : process_vm_writev((pid_t)a->rank_pid[world],
                                                     &l, 1, &r, 1, 0);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            dps_error("%s %zu bytes at %#llx of rank %u (pid %u): %s",
                      stage != 2 ? "reading" : "writing", s->len - done,
                      (unsigned long long)(raddr + done), world,
                      a->rank_pid[world], n < 0 ? strerror(errno) : "eof");
            return UCS_ERR_IO_ERROR;
        }
        done += (size_t)n;
    }
    return UCS_OK;
}
