/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness for the wire decoder every agent and rank runs on
 * received bytes (dps_msg_decode). A decoded message is walked in full:
 * every table and byte string the decoder points into is read, so that
 * AddressSanitizer catches any length or count the decoder failed to
 * check against the buffer. Decoded posts are re-encoded and must decode
 * to the same fields.
 *
 * Built by `make fuzz` (clang); `make check` runs it briefly on the seeds
 * of tests/fuzz/mkseeds.c. By hand: build/fuzz/fuzz_decode -max_total_time=600
 */
#include "../../common/dps_proto.h"
#include "../../common/dps_status.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static volatile uint64_t sink;

static void touch(const void *p, size_t n)
{
    const volatile uint8_t *b = p;
    uint64_t s = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        s += b[i];
    }
    sink += s;
}

static void walk(const dps_msg_t *m)
{
    uint32_t i;
    size_t off;

    switch (m->type) {
    case DPS_MSG_POST:
    case DPS_MSG_PEER_POST: {
        const dps_msg_post_t *f = &m->u.post.fixed;
        dps_msg_post_t again;
        dps_msg_t m2;
        size_t len;
        void *enc;

        touch(m->u.post.send_rkey, f->send_rkey_len);
        touch(m->u.post.recv_rkey, f->recv_rkey_len);
        for (i = 0; i < f->nmembers; i++) {
            sink += dps_msg_u32(m->u.post.members, i);
        }
        enc = dps_msg_encode_post(m->type, f, m->u.post.send_rkey,
                                  m->u.post.recv_rkey, m->u.post.members,
                                  &len);
        if (enc == NULL || dps_msg_decode(enc, len, &m2, NULL, 0) != DPS_OK) {
            abort(); /* what decodes must encode and decode again */
        }
        again = m2.u.post.fixed;
        if (memcmp(&again, f, sizeof(again)) != 0) {
            abort();
        }
        free(enc);
        break;
    }
    case DPS_MSG_JOB_INFO: {
        const dps_msg_job_t *f = &m->u.job.fixed;

        for (i = 0, off = 0; i < f->nranks; i++) {
            sink += dps_msg_u32(m->u.job.rank_agent, i);
            off += dps_msg_u32(m->u.job.rank_addr_len, i);
        }
        touch(m->u.job.rank_addrs, off);
        for (i = 0, off = 0; i < f->nagents; i++) {
            off += dps_msg_u32(m->u.job.agent_addr_len, i);
        }
        touch(m->u.job.agent_addrs, off);
        break;
    }
    case DPS_MSG_PROCS:
        for (i = 0; i < m->u.procs.fixed.nranks; i++) {
            sink += dps_msg_u32(m->u.procs.pid, i);
            sink += dps_msg_u32(m->u.procs.node, i);
        }
        break;
    case DPS_MSG_REG_FREE:
        for (i = 0; i < m->u.reg_free.fixed.count; i++) {
            sink += dps_msg_u64(m->u.reg_free.ids, i);
        }
        break;
    default:
        touch(&m->u, sizeof(m->u));
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    dps_msg_t m;
    /* An exact-size copy: reads past the end are caught. */
    uint8_t *buf = malloc(size ? size : 1);

    memcpy(buf, data, size);
    if (dps_msg_decode(buf, size, &m, err, sizeof(err)) == DPS_OK) {
        walk(&m);
    } else if (err[0] == '\0') {
        abort(); /* every refusal names its reason */
    }
    free(buf);
    return 0;
}
