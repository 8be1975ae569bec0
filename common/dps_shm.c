/* SPDX-License-Identifier: BSD-3-Clause */
/* The rank <-> agent shared-memory channel (see dps_shm.h). */
#define _GNU_SOURCE
#include "common/dps_shm.h"
#include "common/dps_status.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WRAP_MARK 0xffffffffu
#define HDR       8u /* u32 length, u32 zero; keeps payloads 8-aligned */

_Static_assert((DPS_SHM_MSG_RING & (DPS_SHM_MSG_RING - 1)) == 0,
               "ring size a power of two");
_Static_assert((DPS_SHM_CMD_SLOTS & (DPS_SHM_CMD_SLOTS - 1)) == 0,
               "slots a power of two");

static size_t align8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

dps_shm_t *dps_shm_create(uint32_t rank, int *fd)
{
    dps_shm_t *s;
    int        f = memfd_create("dpushim", MFD_CLOEXEC);

    if (f < 0) {
        return NULL;
    }
    if (ftruncate(f, (off_t)sizeof(dps_shm_t)) != 0) {
        goto err_close;
    }
    s = mmap(NULL, sizeof(dps_shm_t), PROT_READ | PROT_WRITE, MAP_SHARED, f,
             0);
    if (s == MAP_FAILED) {
        goto err_close;
    }
    /* A fresh memfd is zero-filled: rings empty, nobody asleep. */
    s->size = sizeof(dps_shm_t);
    s->rank = rank;
    s->version = DPS_SHM_VERSION;
    __atomic_store_n(&s->magic, DPS_SHM_MAGIC, __ATOMIC_RELEASE);
    *fd = f;
    return s;

err_close : {
    int e = errno;

    close(f);
    errno = e;
}
    return NULL;
}

dps_shm_t *dps_shm_attach(int pid, int fd, uint32_t rank, char *err,
                          size_t err_len)
{
    char        path[64];
    struct stat st;
    dps_shm_t  *s;
    int         f;

    snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
    f = open(path, O_RDWR | O_CLOEXEC);
    if (f < 0) {
        snprintf(err, err_len, "open %s: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(f, &st) != 0 || st.st_size != (off_t)sizeof(dps_shm_t)) {
        snprintf(err, err_len, "%s: not a dpushim segment of %zu bytes", path,
                 sizeof(dps_shm_t));
        close(f);
        return NULL;
    }
    s = mmap(NULL, sizeof(dps_shm_t), PROT_READ | PROT_WRITE, MAP_SHARED, f,
             0);
    close(f);
    if (s == MAP_FAILED) {
        snprintf(err, err_len, "mmap %s: %s", path, strerror(errno));
        return NULL;
    }
    if (__atomic_load_n(&s->magic, __ATOMIC_ACQUIRE) != DPS_SHM_MAGIC ||
        s->version != DPS_SHM_VERSION || s->size != sizeof(dps_shm_t) ||
        s->rank != rank) {
        snprintf(err, err_len,
                 "%s: bad header (magic %#x, version %u, "
                 "rank %u)",
                 path, s->magic, s->version, s->rank);
        munmap(s, sizeof(dps_shm_t));
        return NULL;
    }
    return s;
}

void dps_shm_detach(dps_shm_t *s)
{
    if (s != NULL) {
        munmap(s, sizeof(dps_shm_t));
    }
}

int dps_shm_msg_put(dps_ring_pos_t *pos, uint8_t *buf, const void *msg,
                    size_t len)
{
    uint64_t tail = pos->tail, head;
    size_t   need = HDR + align8(len), off, to_end, total;
    uint32_t hdr[2] = {(uint32_t)len, 0};

    if (len == 0 || len > DPS_SHM_MAX_MSG) {
        return DPS_ERR_INVALID;
    }
    head = __atomic_load_n(&pos->head, __ATOMIC_ACQUIRE);
    off = (size_t)(tail % DPS_SHM_MSG_RING);
    to_end = DPS_SHM_MSG_RING - off;
    total = to_end < need ? to_end + need : need;
    if (tail + total - head > DPS_SHM_MSG_RING) {
        return DPS_ERR_AGAIN;
    }
    if (to_end < need) {
        /* No room before the end: skip to the start. to_end >= HDR, as
         * every position is a multiple of 8. */
        uint32_t mark = WRAP_MARK;

        memcpy(buf + off, &mark, sizeof(mark));
        tail += to_end;
        off = 0;
    }
    memcpy(buf + off, hdr, HDR);
    memcpy(buf + off + HDR, msg, len);
    __atomic_store_n(&pos->tail, tail + need, __ATOMIC_RELEASE);
    return DPS_OK;
}

long dps_shm_msg_get(dps_ring_pos_t *pos, const uint8_t *buf, void *out,
                     size_t cap)
{
    uint64_t head = pos->head;
    uint64_t tail = __atomic_load_n(&pos->tail, __ATOMIC_ACQUIRE);
    size_t   off, need;
    uint32_t len;

    if (tail - head > DPS_SHM_MSG_RING) {
        return -1;
    }
    if (head == tail) {
        return 0;
    }
    off = (size_t)(head % DPS_SHM_MSG_RING);
    memcpy(&len, buf + off, sizeof(len));
    if (len == WRAP_MARK) {
        head += DPS_SHM_MSG_RING - off;
        if (head == tail) {
            return -1; /* a mark is always followed by a message */
        }
        off = 0;
        memcpy(&len, buf, sizeof(len));
    }
    need = HDR + align8(len);
    if (len == 0 || len > DPS_SHM_MAX_MSG || len > cap || need > tail - head ||
        off + need > DPS_SHM_MSG_RING) {
        return -1;
    }
    memcpy(out, buf + off + HDR, len);
    __atomic_store_n(&pos->head, head + need, __ATOMIC_RELEASE);
    return (long)len;
}

int dps_shm_msg_ready(const dps_ring_pos_t *pos)
{
    return __atomic_load_n(&pos->tail, __ATOMIC_ACQUIRE) !=
           __atomic_load_n(&pos->head, __ATOMIC_RELAXED);
}

int dps_shm_msg_empty(const dps_ring_pos_t *pos)
{
    return __atomic_load_n(&pos->head, __ATOMIC_ACQUIRE) ==
           __atomic_load_n(&pos->tail, __ATOMIC_RELAXED);
}

/* Fixed-size rings: the slot of position p is p % DPS_SHM_CMD_SLOTS. */
#define FIXED_PUT(pos, arr, item)                                      \
    do {                                                               \
        uint64_t t_ = (pos)->tail;                                     \
        uint64_t h_ = __atomic_load_n(&(pos)->head, __ATOMIC_ACQUIRE); \
                                                                       \
        if (t_ - h_ >= DPS_SHM_CMD_SLOTS) {                            \
            return DPS_ERR_AGAIN;                                      \
        }                                                              \
        (arr)[t_ % DPS_SHM_CMD_SLOTS] = *(item);                       \
        __atomic_store_n(&(pos)->tail, t_ + 1, __ATOMIC_RELEASE);      \
        return DPS_OK;                                                 \
    } while (0)

#define FIXED_GET(pos, arr, item)                                      \
    do {                                                               \
        uint64_t h_ = (pos)->head;                                     \
        uint64_t t_ = __atomic_load_n(&(pos)->tail, __ATOMIC_ACQUIRE); \
                                                                       \
        if (t_ - h_ > DPS_SHM_CMD_SLOTS) {                             \
            return DPS_ERR_PROTO;                                      \
        }                                                              \
        if (h_ == t_) {                                                \
            return DPS_ERR_AGAIN;                                      \
        }                                                              \
        *(item) = (arr)[h_ % DPS_SHM_CMD_SLOTS];                       \
        __atomic_store_n(&(pos)->head, h_ + 1, __ATOMIC_RELEASE);      \
        return DPS_OK;                                                 \
    } while (0)

int dps_shm_cmd_put(dps_shm_t *s, const dps_cmd_t *c)
{
    FIXED_PUT(&s->cmd, s->cmd_buf, c);
}

int dps_shm_cmd_get(dps_shm_t *s, dps_cmd_t *c)
{
    FIXED_GET(&s->cmd, s->cmd_buf, c);
}

int dps_shm_done_put(dps_shm_t *s, const dps_done_t *d)
{
    FIXED_PUT(&s->done, s->done_buf, d);
}

int dps_shm_done_get(dps_shm_t *s, dps_done_t *d)
{
    FIXED_GET(&s->done, s->done_buf, d);
}

int dps_shm_cmd_ready(const dps_shm_t *s)
{
    return __atomic_load_n(&s->cmd.tail, __ATOMIC_ACQUIRE) !=
           __atomic_load_n(&s->cmd.head, __ATOMIC_RELAXED);
}

void dps_shm_futex_wait(uint32_t *word, uint32_t val, long timeout_ns)
{
    struct timespec ts = {timeout_ns / 1000000000L, timeout_ns % 1000000000L};

    /* Shared (not PRIVATE): the word is in a segment of two processes. */
    syscall(SYS_futex, word, FUTEX_WAIT, val, timeout_ns > 0 ? &ts : NULL,
            NULL, 0);
}

void dps_shm_futex_wake(uint32_t *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}
