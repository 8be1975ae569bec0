/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The physical limit of the agent's data path on this machine: time to
 * move BYTES from one process's (malloc'ed) memory to another's the way
 * dpu_agent does (process_vm_readv into an aligned 256 KiB staging chunk,
 * process_vm_writev out), beside one direct copy of the same bytes
 * (process_vm_readv alone, what stock MPI's CMA path costs per block).
 * Needs no MPI. usage: copylimit BYTES [REPS]
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (256 * 1024)

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* A child holding n bytes of malloc'ed memory until told to exit. */
static pid_t holder(size_t n, char **addr, int *quit_fd)
{
    int   p[2], q[2];
    pid_t c;

    if (pipe(p) || pipe(q)) {
        perror("pipe");
        exit(1);
    }
    c = fork();
    if (c == 0) {
        char *b = malloc(n), x;

        memset(b, 0x5a, n);
        if (write(q[1], &b, sizeof(b)) != sizeof(b) || read(p[0], &x, 1)) {
            /* parent gone or told us to go */
        }
        _exit(0);
    }
    if (read(q[0], addr, sizeof(*addr)) != sizeof(*addr)) {
        perror("read");
        exit(1);
    }
    *quit_fd = p[1];
    return c;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 4u << 20, off;
    int    reps = argc > 2 ? atoi(argv[2]) : 20, r, qa, qb;
    char  *a, *b, *stage, *copy;
    double t, agent = 1e30, single = 1e30;
    pid_t  pa, pb;

    if (n == 0 || reps < 1) {
        fprintf(stderr, "usage: copylimit BYTES [REPS]\n");
        return 2;
    }
    pa = holder(n, &a, &qa);
    pb = holder(n, &b, &qb);
    stage = aligned_alloc(4096, CHUNK + 64);
    copy = aligned_alloc(4096, n + 64);
    memset(stage, 0, CHUNK + 64);
    memset(copy, 0, n + 64);
    for (r = 0; r < reps; r++) {
        /* Agent path; staging at the destination's offset modulo 64. */
        char *s = stage + ((uintptr_t)b & 63);

        t = now();
        for (off = 0; off < n; off += CHUNK) {
            size_t       len = n - off < CHUNK ? n - off : CHUNK;
            struct iovec l = {s, len}, ra = {a + off, len};
            struct iovec rb = {b + off, len};

            process_vm_readv(pa, &l, 1, &ra, 1, 0);
            process_vm_writev(pb, &l, 1, &rb, 1, 0);
        }
        t = now() - t;
        agent = t < agent ? t : agent;
        /* One copy of the same bytes, as a rank reading a peer's block. */
        t = now();
        {
            struct iovec l = {copy + ((uintptr_t)a & 63), n};
            struct iovec ra = {a, n};

            process_vm_readv(pa, &l, 1, &ra, 1, 0);
        }
        t = now() - t;
        single = t < single ? t : single;
    }
    printf("copylimit bytes=%zu agent_path_us=%.1f single_copy_us=%.1f\n", n,
           agent * 1e6, single * 1e6);
    if (write(qa, "x", 1) != 1 || write(qb, "x", 1) != 1) {
        perror("write");
    }
    waitpid(pa, NULL, 0);
    waitpid(pb, NULL, 0);
    return 0;
}
