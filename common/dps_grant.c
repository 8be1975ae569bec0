/* SPDX-License-Identifier: BSD-3-Clause */
/* A rank's grant of its memory to its agent, and DMA through it
 * (dps_grant.h). */
#define _GNU_SOURCE
#include "common/dps_grant.h"
#include "common/dps_status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* FNV-1a, 64 bits, over a string and its terminating zero. */
static uint64_t fnv(uint64_t h, const char *s)
{
    do {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    } while (*s++ != '\0');
    return h;
}

int dps_grant_path(const char *dir, const char *job, const char *host,
                   uint32_t pid, char *out, size_t len)
{
    struct sockaddr_un sa;
    char               p[16];
    uint64_t           h = 0xcbf29ce484222325ull;
    int                n;

    snprintf(p, sizeof(p), "%u", pid);
    h = fnv(fnv(fnv(h, job), host), p);
    n = snprintf(out, len, "%s/g-%016llx", dir, (unsigned long long)h);
    if (n < 0 || (size_t)n >= len || (size_t)n >= sizeof(sa.sun_path)) {
        if (len > 0) {
            out[0] = '\0';
        }
        return DPS_ERR_INVALID;
    }
    return DPS_OK;
}

int dps_grant_listen(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int                s, e;

    if (strlen(path) >= sizeof(sa.sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(sa.sun_path, path);
    s = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) {
        return -1;
    }
    unlink(path);
    /* Each grant then carries its sender's credentials (dps_grant_recv). */
    if (setsockopt(s, SOL_SOCKET, SO_PASSCRED, &(int){1}, sizeof(int)) != 0 ||
        bind(s, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        chmod(path, 0600) != 0) {
        e = errno;
        close(s);
        errno = e;
        return -1;
    }
    return s;
}

int dps_grant_send(const char *path, uint32_t world_rank, uint32_t job_key)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    dps_grant_msg_t    m = {DPS_GRANT_MAGIC, world_rank, job_key, 0};
    struct iovec       iov = {&m, sizeof(m)};
    union {
        struct cmsghdr h;
        char           b[CMSG_SPACE(sizeof(int))];
    } c;
    struct msghdr   mh = {0};
    struct cmsghdr *ch;
    int             fd, s, e = 0;

    if (strlen(path) >= sizeof(sa.sun_path)) {
        errno = ENAMETOOLONG;
        return DPS_ERR_INVALID;
    }
    strcpy(sa.sun_path, path);
    fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return DPS_ERR_IO;
    }
    s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) {
        e = errno;
        close(fd);
        errno = e;
        return DPS_ERR_IO;
    }
    memset(&c, 0, sizeof(c));
    mh.msg_name = &sa;
    mh.msg_namelen = sizeof(sa);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = c.b;
    mh.msg_controllen = sizeof(c.b);
    ch = CMSG_FIRSTHDR(&mh);
    ch->cmsg_level = SOL_SOCKET;
    ch->cmsg_type = SCM_RIGHTS;
    ch->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(ch), &fd, sizeof(int));
    /* Never blocks: the agent's queue is full while it waits for the job
     * layout, and a rank blocked here cannot progress the wire-up that
     * layout waits for. */
    while (sendmsg(s, &mh, MSG_DONTWAIT) < 0) {
        if (errno != EINTR) {
            e = errno;
            break;
        }
    }
    close(s);
    close(fd); /* the agent holds its own copy */
    if (e != 0) {
        errno = e;
        return e == EAGAIN || e == EWOULDBLOCK ? DPS_ERR_AGAIN : DPS_ERR_IO;
    }
    return DPS_OK;
}

int dps_grant_recv(int sock, dps_grant_msg_t *msg, int *fd,
                   dps_grant_from_t *from)
{
    struct iovec iov = {msg, sizeof(*msg)};
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(4 * sizeof(int)) + CMSG_SPACE(sizeof(struct ucred))];
    } c;
    struct msghdr   mh = {0};
    struct cmsghdr *ch;
    struct ucred    cr = {0, (uid_t)-1, (gid_t)-1};
    struct stat     st;
    int             got = -1, bad = 0, have_cr = 0;
    ssize_t         n;

    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = c.b;
    mh.msg_controllen = sizeof(c.b);
    do {
        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        return errno == EAGAIN || errno == EWOULDBLOCK ? DPS_ERR_AGAIN
                                                       : DPS_ERR_IO;
    }
    for (ch = CMSG_FIRSTHDR(&mh); ch != NULL; ch = CMSG_NXTHDR(&mh, ch)) {
        size_t k, nfd;

        if (ch->cmsg_level == SOL_SOCKET && ch->cmsg_type == SCM_CREDENTIALS &&
            ch->cmsg_len == CMSG_LEN(sizeof(cr))) {
            memcpy(&cr, CMSG_DATA(ch), sizeof(cr));
            have_cr = 1;
            continue;
        }
        if (ch->cmsg_level != SOL_SOCKET || ch->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        nfd = (ch->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (k = 0; k < nfd; k++) {
            int f;

            memcpy(&f, CMSG_DATA(ch) + k * sizeof(int), sizeof(int));
            if (got < 0) {
                got = f;
            } else {
                close(f);
                bad = 1;
            }
        }
    }
    if (from != NULL) {
        from->pid = cr.pid;
        from->uid = cr.uid;
        from->gid = cr.gid;
    }
    if (bad || got < 0 || n != (ssize_t)sizeof(*msg) ||
        (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
        msg->magic != DPS_GRANT_MAGIC || msg->pad != 0) {
        if (got >= 0) {
            close(got);
        }
        return DPS_ERR_PROTO;
    }
    /* Only a process of our own uid grants us memory, and only its own:
     * the sender (as the kernel says) and the memory's owner (the
     * /proc/PID/mem it opened belongs to its process's uid). */
    if (!have_cr || cr.uid != geteuid() || fstat(got, &st) != 0 ||
        st.st_uid != geteuid()) {
        if (from != NULL && have_cr && cr.uid == geteuid()) {
            from->uid = fstat(got, &st) == 0 ? st.st_uid : (uid_t)-1;
        }
        close(got);
        return DPS_ERR_INVALID;
    }
    *fd = got;
    return DPS_OK;
}

int dps_dma_read(int fd, uint64_t addr, void *buf, size_t len)
{
    char *p = buf;

    while (len > 0) {
        ssize_t n = pread(fd, p, len, (off_t)addr);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (n == 0) {
                errno = EIO;
            }
            return DPS_ERR_IO;
        }
        p += n;
        addr += (uint64_t)n;
        len -= (size_t)n;
    }
    return DPS_OK;
}

int dps_dma_write(int fd, uint64_t addr, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t n = pwrite(fd, p, len, (off_t)addr);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (n == 0) {
                errno = EIO;
            }
            return DPS_ERR_IO;
        }
        p += n;
        addr += (uint64_t)n;
        len -= (size_t)n;
    }
    return DPS_OK;
}
