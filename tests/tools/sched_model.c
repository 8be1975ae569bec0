/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The compiled schedules of one collective, as the projection model
 * reads them (scripts/bench/model.py): the shim's builders
 * (shim/compile/) run for every rank of a communicator of P ranks, RPA
 * consecutive ranks per agent (a node and its DPU), and the steps are
 * summed per round and agent:
 *
 *   round R agent A: remote_msgs=N remote_bytes=B out_bytes=B
 *       local_msgs=N local_bytes=B reduce_bytes=B copy_bytes=B
 *       node_msgs=N
 *
 * Data moves at a receiving step (a RECV reads the peer's bytes):
 * remote when the peer's agent is another (its bytes leave that agent:
 * out_bytes), local otherwise; a
 * RECV_REDUCE also reduces its bytes, a REDUCE reduces, a COPY copies.
 * Then "total steps=N per_rank_max=N rounds=N".
 *
 * remote_msgs is what the agent sends and receives per rank pair, one
 * FETCH (and its answer) a transfer and chunk: the plan of DPUSHIM_PUSH=0.
 * node_msgs is the plan between nodes (dpu_agent/move/agent_push.c):
 * the agent's network messages carrying data in, one a peer agent and
 * CHUNK bytes of what all its ranks receive from that agent's ranks.
 *
 * usage: sched_model COLL P RPA BYTES [CHUNK]   (CHUNK: 262144)
 *   COLL  ialltoall, iallgather, ibcast, iallreduce, ireduce
 *   BYTES a block (ialltoall, iallgather), the message (ibcast) or the
 *         vector of doubles (iallreduce, ireduce)
 */
#include "shim/compile/build.h"
#include "common/dps_colls.h"
#include "common/dps_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t  rmsg, rbytes, out, lmsg, lbytes, red, copy;
    uint64_t *from; /* bytes received from each agent */
} cell_t;

static int coll_of(const char *s)
{
    static const struct {
        const char *name;
        int         coll;
    } t[] = {{"ialltoall", DPS_COLL_ALLTOALL},
             {"iallgather", DPS_COLL_ALLGATHER},
             {"ibcast", DPS_COLL_BCAST},
             {"iallreduce", DPS_COLL_ALLREDUCE},
             {"ireduce", DPS_COLL_REDUCE}};

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        if (strcmp(s, t[i].name) == 0) {
            return t[i].coll;
        }
    }
    return -1;
}

int main(int argc, char **argv)
{
    uint32_t p, rpa, *agent, nag, rounds = 0;
    uint64_t bytes, total = 0, per_max = 0, chunk = 262144;
    int      coll;
    cell_t **cell = NULL; /* [round][agent] */
    uint32_t ncell = 0;

    if ((argc != 5 && argc != 6) || (coll = coll_of(argv[1])) < 0) {
        fprintf(stderr, "usage: sched_model COLL P RPA BYTES [CHUNK]\n"
                        "  COLL: ialltoall iallgather ibcast iallreduce "
                        "ireduce\n");
        return 2;
    }
    p = (uint32_t)strtoul(argv[2], NULL, 0);
    rpa = (uint32_t)strtoul(argv[3], NULL, 0);
    bytes = strtoull(argv[4], NULL, 0);
    if (argc == 6) {
        chunk = strtoull(argv[5], NULL, 0);
    }
    if (p < 1 || p > DPS_MAX_RANKS || rpa < 1 || bytes < 8 || chunk < 1) {
        fprintf(stderr,
                "sched_model: P must be 1 to %u, RPA at least 1, "
                "BYTES at least 8, CHUNK at least 1\n",
                DPS_MAX_RANKS);
        return 2;
    }
    nag = (p + rpa - 1) / rpa;
    agent = malloc(sizeof(*agent) * p);
    for (uint32_t r = 0; r < p; r++) {
        agent[r] = r / rpa;
    }
    for (uint32_t r = 0; r < p; r++) {
        bld_args_t a;
        bld_t      b;

        memset(&a, 0, sizeof(a));
        memset(&b, 0, sizeof(b));
        a.coll = coll;
        a.size = p;
        a.rank = r;
        a.agent = agent;
        a.bytes = bytes;
        if (coll == DPS_COLL_ALLREDUCE || coll == DPS_COLL_REDUCE) {
            a.op = DPS_OP_SUM;
            a.dtype = DPS_T_F64;
        }
        if (bld_build(&a, &b) != 0) {
            fprintf(stderr, "sched_model: rank %u: the builder refused\n", r);
            return 1;
        }
        total += b.n;
        per_max = b.n > per_max ? b.n : per_max;
        for (uint32_t i = 0; i < b.n; i++) {
            const dps_step_t *s = &b.steps[i];
            cell_t           *c;

            while (s->round >= ncell) {
                cell = realloc(cell, sizeof(*cell) * (ncell + 1));
                cell[ncell] = calloc(nag, sizeof(cell_t));
                for (uint32_t g = 0; g < nag; g++) {
                    cell[ncell][g].from = calloc(nag, sizeof(uint64_t));
                }
                ncell++;
            }
            rounds = s->round + 1u > rounds ? s->round + 1u : rounds;
            c = &cell[s->round][agent[r]];
            switch (s->kind) {
            case DPS_STEP_RECV:
            case DPS_STEP_RECV_REDUCE:
                if (agent[s->peer] != agent[r]) {
                    c->rmsg++;
                    c->rbytes += s->len;
                    c->from[agent[s->peer]] += s->len;
                    cell[s->round][agent[s->peer]].out += s->len;
                } else {
                    c->lmsg++;
                    c->lbytes += s->len;
                }
                if (s->kind == DPS_STEP_RECV_REDUCE) {
                    c->red += s->len;
                }
                break;
            case DPS_STEP_REDUCE: c->red += s->len; break;
            case DPS_STEP_COPY: c->copy += s->len; break;
            default: break;
            }
        }
        free(b.steps);
    }
    for (uint32_t k = 0; k < rounds; k++) {
        for (uint32_t g = 0; g < nag; g++) {
            const cell_t *c = &cell[k][g];
            uint64_t      nmsg = 0;

            if (c->rmsg + c->out + c->lmsg + c->red + c->copy == 0) {
                continue;
            }
            for (uint32_t h = 0; h < nag; h++) {
                if (c->from[h] > 0) {
                    nmsg += (c->from[h] + chunk - 1) / chunk;
                }
            }
            printf("round %u agent %u: remote_msgs=%llu remote_bytes=%llu "
                   "out_bytes=%llu local_msgs=%llu local_bytes=%llu "
                   "reduce_bytes=%llu copy_bytes=%llu node_msgs=%llu\n",
                   k, g, (unsigned long long)c->rmsg,
                   (unsigned long long)c->rbytes, (unsigned long long)c->out,
                   (unsigned long long)c->lmsg, (unsigned long long)c->lbytes,
                   (unsigned long long)c->red, (unsigned long long)c->copy,
                   (unsigned long long)nmsg);
        }
    }
    printf("total steps=%llu per_rank_max=%llu rounds=%u\n",
           (unsigned long long)total, (unsigned long long)per_max, rounds);
    for (uint32_t k = 0; k < ncell; k++) {
        for (uint32_t g = 0; g < nag; g++) {
            free(cell[k][g].from);
        }
        free(cell[k]);
    }
    free(cell);
    free(agent);
    return 0;
}
