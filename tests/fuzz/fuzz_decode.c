/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness for the wire decoder every agent and rank runs on
 * received bytes (dps_msg_decode). A decoded message is walked in full:
 * every table and byte string the decoder points into is read, so that
 * AddressSanitizer catches any length or count the decoder failed to
 * check against the buffer. Decoded posts, pushes and credits are
 * re-encoded and must give the same bytes (and posts the same fields); a
 * decoded bundle's parts are read with dps_bundle_next, each decoded and
 * walked.
 *
 * Built by `make fuzz` (clang); `make check` runs it briefly on the seeds
 * of tests/fuzz/mkseeds.c. By hand: build/fuzz/fuzz_decode -max_total_time=600
 */
#include "common/dps_proto.h"
#include "common/dps_status.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static volatile uint64_t sink;

static void touch(const void *p, size_t n)
{
    const volatile uint8_t *b = p;
    uint64_t                s = 0;
    size_t                  i;

    for (i = 0; i < n; i++) {
        s += b[i];
    }
    sink += s;
}

static void walk(const dps_msg_t *m, const void *raw, size_t size)
{
    uint32_t i;
    size_t   off;

    switch (m->type) {
    case DPS_MSG_POST:
    case DPS_MSG_PEER_POST: {
        const dps_msg_post_t *f = &m->u.post.fixed;
        const void           *keys[DPS_NBUF];
        dps_step_t           *steps = NULL;
        dps_msg_t             m2;
        size_t                len;
        void                 *enc;
        int                   b;

        for (b = 0; b < DPS_NBUF; b++) {
            touch(m->u.post.rkey[b], f->rkey_len[b]);
            keys[b] = m->u.post.rkey[b];
        }
        /* Steps are unaligned in the message: read into an aligned copy
         * with dps_msg_step, as agents do. */
        if (f->nsteps != 0) {
            steps = malloc((size_t)f->nsteps * sizeof(*steps));
            if (steps == NULL || m->u.post.steps == NULL) {
                abort();
            }
            for (i = 0; i < f->nsteps; i++) {
                dps_msg_step(m->u.post.steps, i, &steps[i]);
                sink += steps[i].kind + steps[i].peer + steps[i].len;
            }
        } else if (m->u.post.steps != NULL) {
            abort(); /* no steps, no pointer */
        }
        for (i = 0; i < f->nmembers; i++) {
            sink += dps_msg_u32(m->u.post.members, i);
        }
        /* What decodes must encode, byte for byte (but the header's
         * reserved word, which the decoder ignores), and decode again. */
        enc = dps_msg_encode_post(m->type, f, keys, steps, m->u.post.members,
                                  &len);
        if (enc == NULL || len != size ||
            memcmp((const char *)enc + sizeof(dps_msg_hdr_t),
                   (const char *)raw + sizeof(dps_msg_hdr_t),
                   len - sizeof(dps_msg_hdr_t)) != 0 ||
            dps_msg_decode(enc, len, &m2, NULL, 0) != DPS_OK ||
            memcmp(&m2.u.post.fixed, f, sizeof(*f)) != 0) {
            abort();
        }
        free(enc);
        free(steps);
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
            sink += dps_msg_u64(m->u.procs.token_addr, i);
            sink += dps_msg_u64(m->u.procs.token, i);
        }
        break;
    case DPS_MSG_REG_FREE:
    case DPS_MSG_SCHED_FREE:
        for (i = 0; i < m->u.reg_free.fixed.count; i++) {
            sink += dps_msg_u64(m->u.reg_free.ids, i);
        }
        break;
    case DPS_MSG_PUSH: {
        const dps_msg_push_t *f = &m->u.push.fixed;
        uint8_t               head[DPS_PUSH_HEAD];

        /* The data is the rest of the message, in place; the sending
         * agent an index, FETCH and EARLY never together. */
        if (size != DPS_PUSH_HEAD + f->len ||
            m->u.push.data != (const uint8_t *)raw + DPS_PUSH_HEAD ||
            f->agent >= DPS_MAX_RANKS ||
            (f->flags & ~(DPS_PUSH_FETCH | DPS_PUSH_EARLY)) != 0 ||
            f->flags == (DPS_PUSH_FETCH | DPS_PUSH_EARLY)) {
            abort();
        }
        sink += f->agent + f->flags;
        touch(m->u.push.data, f->len);
        /* What decodes, dps_msg_push_put writes again (the header's
         * reserved word aside). */
        if (dps_msg_push_put(f, head) != DPS_OK ||
            memcmp(head, raw, offsetof(dps_msg_hdr_t, reserved)) != 0 ||
            memcmp(head + sizeof(dps_msg_hdr_t),
                   (const char *)raw + sizeof(dps_msg_hdr_t),
                   sizeof(*f)) != 0) {
            abort();
        }
        break;
    }
    case DPS_MSG_CREDIT: {
        const dps_msg_credit_t *c = &m->u.credit;
        size_t                  len;
        void                   *enc;

        if (c->agent >= DPS_MAX_RANKS || c->pad != 0 ||
            size != sizeof(dps_msg_hdr_t) + sizeof(*c)) {
            abort();
        }
        sink += c->agent + c->bytes;
        /* What decodes encodes again, byte for byte (the header's
         * reserved word aside). */
        enc = dps_msg_encode_credit(c->agent, c->bytes, &len);
        if (enc == NULL || len != size ||
            memcmp(enc, raw, offsetof(dps_msg_hdr_t, reserved)) != 0 ||
            memcmp((const char *)enc + sizeof(dps_msg_hdr_t),
                   (const char *)raw + sizeof(dps_msg_hdr_t),
                   sizeof(*c)) != 0) {
            abort();
        }
        free(enc);
        break;
    }
    case DPS_MSG_BUNDLE: {
        const uint8_t *p = m->u.bundle.parts;
        size_t         left = m->u.bundle.len, plen;
        const void    *part;
        char           err[256];
        dps_msg_t      pm;
        int            rc;

        if (p != (const uint8_t *)raw + sizeof(dps_msg_hdr_t) ||
            left != size - sizeof(dps_msg_hdr_t)) {
            abort();
        }
        for (;;) {
            err[0] = '\0';
            rc = dps_bundle_next(&p, &left, &part, &plen, err, sizeof(err));
            if (rc == DPS_ERR_AGAIN) {
                break;
            }
            if (rc != DPS_OK) {
                if (rc != DPS_ERR_PROTO || err[0] == '\0') {
                    abort();
                }
                break;
            }
            /* A part lies within the bundle, and is never one. */
            if ((const uint8_t *)part < m->u.bundle.parts ||
                (const uint8_t *)part + plen > (const uint8_t *)raw + size) {
                abort();
            }
            err[0] = '\0';
            if (dps_msg_decode(part, plen, &pm, err, sizeof(err)) == DPS_OK) {
                if (pm.type == DPS_MSG_BUNDLE) {
                    abort();
                }
                walk(&pm, part, plen);
            } else if (err[0] == '\0') {
                abort();
            }
        }
        break;
    }
    default: touch(&m->u, sizeof(m->u)); break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char      err[256];
    dps_msg_t m;
    /* An exact-size copy: reads past the end are caught. */
    uint8_t *buf = malloc(size ? size : 1);

    memcpy(buf, data, size);
    if (dps_msg_decode(buf, size, &m, err, sizeof(err)) == DPS_OK) {
        walk(&m, buf, size);
    } else if (err[0] == '\0') {
        abort(); /* every refusal names its reason */
    }
    free(buf);
    return 0;
}
