/* SPDX-License-Identifier: BSD-3-Clause */
/* Write one valid message of every type into DIR, as fuzzing seeds.
 * usage: mkseeds DIR [HELLO_DIR]: wire messages to DIR, listener hellos
 * to HELLO_DIR */
#include "common/dps_listen.h"
#include "common/dps_proto.h"
#include "common/dps_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put(const char *dir, const char *name, void *msg, size_t len)
{
    char  path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (msg == NULL || f == NULL || fwrite(msg, 1, len, f) != len) {
        perror(path);
        exit(1);
    }
    fclose(f);
    free(msg);
}

/* A PUSH: header and fixed part, then f->len bytes of data. */
static void *push_msg(const dps_msg_push_t *f, const char *data, size_t *len)
{
    uint8_t *m = malloc(DPS_PUSH_HEAD + f->len);

    if (m == NULL || dps_msg_push_put(f, m) != DPS_OK) {
        free(m);
        return NULL;
    }
    memcpy(m + DPS_PUSH_HEAD, data, f->len);
    *len = DPS_PUSH_HEAD + f->len;
    return m;
}

/* A BUNDLE of two small messages: first (a ROUND or a CREDIT, flen
 * bytes, freed here) and a PUSH of *f. */
static void *bundle(void *first, size_t flen, const dps_msg_push_t *f,
                    size_t *len)
{
    size_t   plen = 0;
    void    *push = push_msg(f, "hello", &plen);
    uint8_t *m = NULL;

    if (first != NULL && push != NULL) {
        m = malloc(sizeof(dps_msg_hdr_t) + flen + plen);
    }
    if (m != NULL && dps_bundle_header(flen + plen, m) == DPS_OK) {
        memcpy(m + sizeof(dps_msg_hdr_t), first, flen);
        memcpy(m + sizeof(dps_msg_hdr_t) + flen, push, plen);
        *len = sizeof(dps_msg_hdr_t) + flen + plen;
    } else {
        free(m);
        m = NULL;
    }
    free(first);
    free(push);
    return m;
}

int main(int argc, char **argv)
{
    static const uint8_t key[37] = {1, 2, 3, 4, 5};
    const void          *keys[DPS_NBUF] = {key, key, key};
    uint32_t             members[4] = {0, 1, 2, 3}, pid[3] = {10, 11, 12};
    uint32_t             node[3] = {0, 0, 1}, agent[3] = {0, 0, 1};
    uint32_t             alen[3] = {5, 7, 9}, aglen[2] = {3, 4};
    const void          *addrs[3] = {"aaaaa", "bbbbbbb", "ccccccccc"};
    const void          *agaddrs[2] = {"xxx", "yyyy"};
    uint64_t             ids[3] = {1, 2, 99};
    uint64_t             taddr[3] = {0x7ffd00001000ull, 0, 0x1000};
    uint64_t             tok[3] = {0x1122334455667788ull, 0, 5};
    dps_msg_hello_t me = {1, 4242, 0x7ffd00001000ull, 0x1122334455667788ull};
    dps_msg_stats_t st = {123,  4, 0,  4096, 0,  8192, 512, 2,
                          9000, 6, 12, 3,    40, 21,   3,   1536};
    dps_msg_job_t   job = {3, 2, 1, 77, DPS_JOB_PUSH, 0};
    dps_msg_fetch_t fetch = {5, 2, 1, 2, 0, 512, 1024, 3};
    /* Bytes [512, 517) of 1024 of rank 1's first SEND step to rank 2,
     * pushed by rank 1's agent (0, as in the job seed); another
     * transfer, which the receiver's agent is to fetch; and the first
     * bytes of rank 2's to rank 0, which agent 1 pushes before rank 0
     * has posted (DPS_PUSH_EARLY). */
    dps_msg_push_t push = {5, 2, 1, 2, 0, 512, 5, 1024, 0, 0};
    dps_msg_push_t push_fetch = {5, 2, 0, 2, 1, 0, 0, 1024, DPS_PUSH_FETCH, 0};
    dps_msg_push_t push_early = {5, 3, 2, 0, 0, 0, 5, 1024, DPS_PUSH_EARLY, 1};
    /* Rank 1 of 4, ring allreduce-like: send to 2, reduce from 0, copy. */
    dps_step_t     steps[3];
    dps_msg_post_t p;
    size_t         len = 0;
    void          *m;

    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: mkseeds DIR [HELLO_DIR]\n");
        return 2;
    }
    m = dps_msg_encode_hello(&me, &len);
    put(argv[1], "hello", m, len);
    m = dps_msg_encode_ready(0, DPS_FMT_X87, DPS_READY_SEEN, &len);
    put(argv[1], "ready", m, len);
    m = dps_msg_encode_complete(7, 0, &len);
    put(argv[1], "complete", m, len);
    m = dps_msg_encode_comm_free(5, 1, &len);
    put(argv[1], "comm_free", m, len);
    m = dps_msg_encode_send_done(5, 2, 1, 2, 0, &len);
    put(argv[1], "send_done", m, len);
    m = dps_msg_encode_round(5, 2, 1, 1, &len);
    put(argv[1], "round", m, len);
    m = dps_msg_encode_shutdown(&len);
    put(argv[1], "shutdown", m, len);
    m = dps_msg_encode_stats_req(&len);
    put(argv[1], "stats_req", m, len);
    m = dps_msg_encode_ping(&me, &len);
    put(argv[1], "ping", m, len);
    m = dps_msg_encode_pong(&len);
    put(argv[1], "pong", m, len);
    m = dps_msg_encode_shm(&me, 9, &len);
    put(argv[1], "shm", m, len);
    m = dps_msg_encode_inst_fail(5, 3, DPS_ERR_MISMATCH, &len);
    put(argv[1], "inst_fail", m, len);
    m = dps_msg_encode_stats(&st, &len);
    put(argv[1], "stats", m, len);
    m = dps_msg_encode_procs(3, pid, node, taddr, tok, &len);
    put(argv[1], "procs", m, len);
    m = dps_msg_encode_reg_free(2, 3, ids, &len);
    put(argv[1], "reg_free", m, len);
    m = dps_msg_encode_sched_free(2, 3, ids, &len);
    put(argv[1], "sched_free", m, len);
    m = dps_msg_encode_job(&job, agent, addrs, alen, agaddrs, aglen, &len);
    put(argv[1], "job", m, len);
    m = dps_msg_encode_fetch(&fetch, &len);
    put(argv[1], "fetch", m, len);
    m = push_msg(&push, "hello", &len);
    put(argv[1], "push", m, len);
    m = push_msg(&push_fetch, "", &len);
    put(argv[1], "push_fetch", m, len);
    m = push_msg(&push_early, "early", &len);
    put(argv[1], "push_early", m, len);
    /* Agent 1 has written 1024 early bytes of agent 0's. */
    m = dps_msg_encode_credit(1, 1024, &len);
    put(argv[1], "credit", m, len);
    m = dps_msg_encode_round(5, 2, 1, 1, &len);
    m = bundle(m, len, &push, &len);
    put(argv[1], "bundle", m, len);
    /* What agent 1 sends agent 0 in one pass: credit, early piece. */
    m = dps_msg_encode_credit(1, 5, &len);
    m = bundle(m, len, &push_early, &len);
    put(argv[1], "bundle_early", m, len);

    memset(steps, 0, sizeof(steps));
    steps[0].kind = DPS_STEP_SEND;
    steps[0].src_buf = DPS_BUF_SEND;
    steps[0].peer = 2;
    steps[0].len = 1024;
    steps[1].kind = DPS_STEP_RECV_REDUCE;
    steps[1].dst_buf = DPS_BUF_TMP;
    steps[1].op = DPS_OP_SUM;
    steps[1].dtype = DPS_T_F64;
    steps[1].peer = 0;
    steps[1].len = 1024;
    steps[2].kind = DPS_STEP_COPY;
    steps[2].round = 1;
    steps[2].src_buf = DPS_BUF_TMP;
    steps[2].dst_buf = DPS_BUF_RECV;
    steps[2].len = 1024;
    memset(&p, 0, sizeof(p));
    p.comm_id = 1;
    p.op_token = 9;
    p.sched_id = 3;
    p.buf_addr[DPS_BUF_SEND] = 0x1000;
    p.buf_addr[DPS_BUF_RECV] = 0x2000;
    p.buf_addr[DPS_BUF_TMP] = 0x3000;
    p.buf_len[DPS_BUF_SEND] = p.buf_len[DPS_BUF_RECV] = 1024;
    p.buf_len[DPS_BUF_TMP] = 1024;
    p.buf_reg[DPS_BUF_SEND] = 1;
    p.buf_reg[DPS_BUF_RECV] = 2;
    p.buf_reg[DPS_BUF_TMP] = 3;
    p.coll = DPS_COLL_ALLREDUCE;
    p.comm_size = 4;
    p.comm_rank = 1;
    p.world_rank = 1;
    p.nsteps = 3;
    p.rkey_len[DPS_BUF_SEND] = sizeof(key);
    p.rkey_len[DPS_BUF_RECV] = 5;
    p.rkey_len[DPS_BUF_TMP] = 1;
    p.nmembers = 4;
    p.flags = DPS_POST_SCHED;
    m = dps_msg_encode_post(DPS_MSG_POST, &p, keys, steps, members, &len);
    put(argv[1], "post", m, len);
    /* An agent forwards only the SEND steps, keys it has not sent. */
    p.nsteps = 1;
    p.rkey_len[DPS_BUF_RECV] = p.rkey_len[DPS_BUF_TMP] = 0;
    p.nmembers = 0;
    m = dps_msg_encode_post(DPS_MSG_PEER_POST, &p, keys, steps, NULL, &len);
    put(argv[1], "peer_post", m, len);
    /* A later post: keys and schedule cached, an empty buffer. */
    p.nsteps = 0;
    p.flags = 0;
    p.rkey_len[DPS_BUF_SEND] = 0;
    p.coll = DPS_COLL_BCAST;
    p.buf_addr[DPS_BUF_TMP] = p.buf_len[DPS_BUF_TMP] = 0;
    p.buf_reg[DPS_BUF_TMP] = 0;
    m = dps_msg_encode_post(DPS_MSG_POST, &p, NULL, NULL, NULL, &len);
    put(argv[1], "post_cached", m, len);
    /* An empty schedule (a barrier of one), and a poster's error. */
    p.flags = DPS_POST_SCHED;
    p.coll = DPS_COLL_BARRIER;
    p.comm_size = 1;
    p.comm_rank = 0;
    p.nmembers = 1;
    m = dps_msg_encode_post(DPS_MSG_PEER_POST, &p, NULL, NULL, members, &len);
    put(argv[1], "peer_post_empty", m, len);
    p.flags = 0;
    p.sched_id = 0;
    p.error = DPS_ERR_MISMATCH;
    m = dps_msg_encode_post(DPS_MSG_POST, &p, NULL, NULL, members, &len);
    put(argv[1], "post_error", m, len);
    if (argc == 3) {
        uint8_t secret[DPS_SECRET_LEN];

        memset(secret, 0xa5, sizeof(secret));
        m = dps_listen_encode_hello("job-0123456789abcdef", secret, &len);
        put(argv[2], "hello", m, len);
        m = dps_listen_encode_hello("x", secret, &len);
        put(argv[2], "hello_short", m, len);
    }
    return 0;
}
