/* SPDX-License-Identifier: BSD-3-Clause */
/* Write one valid message of every type into DIR, as fuzzing seeds.
 * usage: mkseeds DIR [HELLO_DIR]: wire messages to DIR, listener hellos
 * to HELLO_DIR */
#include "../../common/dps_listen.h"
#include "../../common/dps_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put(const char *dir, const char *name, void *msg, size_t len)
{
    char path[4096];
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

int main(int argc, char **argv)
{
    static const uint8_t key[37] = {1, 2, 3, 4, 5};
    uint32_t members[4] = {0, 1, 2, 3}, pid[3] = {10, 11, 12};
    uint32_t node[3] = {0, 0, 1}, agent[3] = {0, 0, 1};
    uint32_t alen[3] = {5, 7, 9}, aglen[2] = {3, 4};
    const void *addrs[3] = {"aaaaa", "bbbbbbb", "ccccccccc"};
    const void *agaddrs[2] = {"xxx", "yyyy"};
    uint64_t ids[3] = {1, 2, 99};
    dps_msg_stats_t st = {123, 4, 0};
    dps_msg_job_t job = {3, 2, 1, 77};
    dps_msg_post_t p;
    size_t len = 0;
    void *m;

    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: mkseeds DIR [HELLO_DIR]\n");
        return 2;
    }
    m = dps_msg_encode_hello(1, 4242, &len);
    put(argv[1], "hello", m, len);
    m = dps_msg_encode_ready(0, &len);
    put(argv[1], "ready", m, len);
    m = dps_msg_encode_complete(7, 0, &len);
    put(argv[1], "complete", m, len);
    m = dps_msg_encode_comm_free(5, 1, &len);
    put(argv[1], "comm_free", m, len);
    m = dps_msg_encode_read_done(5, 2, 1, &len);
    put(argv[1], "read_done", m, len);
    m = dps_msg_encode_shutdown(&len);
    put(argv[1], "shutdown", m, len);
    m = dps_msg_encode_stats_req(&len);
    put(argv[1], "stats_req", m, len);
    m = dps_msg_encode_ping(1, 4242, &len);
    put(argv[1], "ping", m, len);
    m = dps_msg_encode_pong(&len);
    put(argv[1], "pong", m, len);
    m = dps_msg_encode_shm(1, 4242, 9, &len);
    put(argv[1], "shm", m, len);
    m = dps_msg_encode_inst_fail(5, 3, -10, &len);
    put(argv[1], "inst_fail", m, len);
    m = dps_msg_encode_stats(&st, &len);
    put(argv[1], "stats", m, len);
    m = dps_msg_encode_procs(3, pid, node, &len);
    put(argv[1], "procs", m, len);
    m = dps_msg_encode_reg_free(2, 3, ids, &len);
    put(argv[1], "reg_free", m, len);
    m = dps_msg_encode_job(&job, agent, addrs, alen, agaddrs,
                                           aglen, &len);
    put(argv[1], "job", m, len);
    memset(&p, 0, sizeof(p));
    p.comm_id = 1;
    p.op_token = 9;
    p.block_bytes = 4096;
    p.send_addr = 0x1000;
    p.recv_addr = 0x2000;
    p.send_reg = 1;
    p.recv_reg = 2;
    p.coll = DPS_COLL_ALLTOALL;
    p.comm_size = 4;
    p.comm_rank = 1;
    p.world_rank = 1;
    p.send_rkey_len = sizeof(key);
    p.recv_rkey_len = 5;
    p.nmembers = 4;
    m = dps_msg_encode_post(DPS_MSG_POST, &p, key, key,
                                             members, &len);
    put(argv[1], "post", m, len);
    p.send_rkey_len = p.recv_rkey_len = 0;
    p.nmembers = 0;
    p.coll = DPS_COLL_BCAST;
    p.recv_reg = 0;
    m = dps_msg_encode_post(DPS_MSG_PEER_POST, &p,
                                                  NULL, NULL, NULL, &len);
    put(argv[1], "peer_post", m, len);
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
