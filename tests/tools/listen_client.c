/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test client for `dpu_agent --listen`, through the library the shim uses
 * (common/dps_listen.c): writes a fresh secret for JOB, connects, prints
 * the agent's answer as "ok <pid> <host> <hex address>", then keeps the
 * connection (and so the job's agent) until its standard input ends.
 * Removes the secret file before it exits.
 *
 * usage: listen_client [-d SECRET_DIR] [-t TIMEOUT_MS] [-m MAP] ADDR:PORT JOB
 *        (with -m, ADDR:PORT is ignored and looked up in MAP for this host,
 *        virtual node 0)
 */
#include "common/dps_listen.h"
#include "common/dps_status.h"
#include "common/dps_ucx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    uint8_t     secret[DPS_SECRET_LEN];
    char        dirbuf[4096], err[512], host[256], hp[DPS_LISTEN_HOSTPORT_MAX];
    const char *dir = NULL, *map = NULL, *job;
    int         c, timeout = 10000, fd, rc;
    uint32_t    pid;
    size_t      alen;
    void       *addr;
    char       *hex;

    while ((c = getopt(argc, argv, "d:t:m:")) != -1) {
        switch (c) {
        case 'd': dir = optarg; break;
        case 't': timeout = atoi(optarg); break;
        case 'm': map = optarg; break;
        default: goto usage;
        }
    }
    if (argc - optind != 2) {
        goto usage;
    }
    job = argv[optind + 1];
    snprintf(hp, sizeof(hp), "%s", argv[optind]);
    if (map != NULL) {
        char me[256];

        gethostname(me, sizeof(me));
        me[sizeof(me) - 1] = '\0';
        if (dps_agent_map_lookup(map, me, 0, hp, sizeof(hp), err,
                                 sizeof(err)) != DPS_OK) {
            fprintf(stderr, "listen_client: %s\n", err);
            return 1;
        }
    }
    if (dir == NULL) {
        dir = dps_secret_dir_default(dirbuf, sizeof(dirbuf));
    }
    if (dir == NULL) {
        fprintf(stderr, "listen_client: TMPDIR too long\n");
        return 1;
    }
    if (dps_secret_create(dir, job, secret, err, sizeof(err)) != DPS_OK) {
        fprintf(stderr, "listen_client: %s\n", err);
        return 1;
    }
    rc = dps_listen_connect(hp, job, secret, timeout, &fd, &addr, &alen, &pid,
                            host, sizeof(host), err, sizeof(err));
    dps_secret_remove(dir, job);
    if (rc != DPS_OK) {
        fprintf(stderr, "listen_client: %s (%s)\n", err, dps_status_str(rc));
        return 1;
    }
    hex = malloc(2 * alen + 1);
    if (hex == NULL) {
        return 1;
    }
    dps_hex_encode(addr, alen, hex);
    printf("ok %u %s %s\n", pid, host, hex);
    fflush(stdout);
    free(hex);
    free(addr);
    while (read(STDIN_FILENO, err, sizeof(err)) > 0) {
    }
    close(fd);
    return 0;

usage:
    fprintf(stderr, "usage: listen_client [-d SECRET_DIR] [-t TIMEOUT_MS] "
                    "[-m MAP] ADDR:PORT JOB\n");
    return 2;
}
