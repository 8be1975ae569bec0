/* SPDX-License-Identifier: BSD-3-Clause */
/* What the wire's encoder (dps_encode.c) and decoder (dps_proto.c)
 * share: the checks of a post's fixed part and of a rank's token, made
 * the same way by both. */
#ifndef DPS_WIRE_H
#define DPS_WIRE_H

#include "common/dps_proto.h"
#include "common/dps_status.h"

#include <stddef.h>
#include <stdint.h>

/* The fixed part of a post: DPS_OK, or DPS_ERR_PROTO with the reason in
 * err (which may be NULL). */
int dps_msg_post_check(const dps_msg_post_t *f, char *err, size_t err_len);

/* The length of a post's body that fixed part announces. */
size_t dps_msg_post_body(const dps_msg_post_t *f);

/* A rank and its token (HELLO, PING, SHM): 1 if sane (a rank below
 * DPS_MAX_RANKS; token and its address both 0, or both not), else 0. */
int dps_msg_token_ok(uint32_t world_rank, uint64_t token_addr, uint64_t token);

#endif
