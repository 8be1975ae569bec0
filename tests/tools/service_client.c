/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test client for `dpu_agent --service`: plays a job's side of the
 * handshake (common/dps_listen.h, "Service") honestly or as an attacker
 * would, with the library's own pieces (dps_munge.c, dps_listen.c).
 *
 * usage: service_client [-s MUNGE_SOCKET] [-w FILE] ADDR:PORT JOB
 *          honest: a credential for this challenge and job; prints the
 *          answer line, keeps the connection (the job's worker) until
 *          stdin ends; -w also writes the credential it sent to FILE
 *        service_client [-s MUNGE_SOCKET] -c FILE ADDR:PORT JOB
 *          capture: makes the credential for this connection, writes it
 *          to FILE and closes without sending it (an intercepted one)
 *        service_client -p FILE ADDR:PORT JOB
 *          present FILE's text as the credential (another's, a replay, a
 *          forgery); prints the answer line
 *        service_client -n ADDR:PORT JOB
 *          a hello without a credential; prints the answer line
 * Exit status: 0 "ok", 1 "refused", 2 anything else.
 */
#define _GNU_SOURCE
#include "common/dps_listen.h"
#include "common/dps_munge.h"
#include "common/dps_proto.h"
#include "common/dps_status.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int dial(const char *hostport)
{
    char            h[DPS_LISTEN_HOSTPORT_MAX], port[8], err[256];
    struct addrinfo hints = {0}, *res, *ai;
    int             s = -1;

    if (dps_listen_split_hostport(hostport, 0, h, sizeof(h), port,
                                  sizeof(port), err, sizeof(err)) != DPS_OK) {
        fprintf(stderr, "service_client: %s\n", err);
        return -1;
    }
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(h, port, &hints, &res) != 0) {
        fprintf(stderr, "service_client: cannot resolve %s\n", hostport);
        return -1;
    }
    for (ai = res; ai != NULL && s < 0; ai = ai->ai_next) {
        s = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (s >= 0 && connect(s, ai->ai_addr, ai->ai_addrlen) != 0) {
            close(s);
            s = -1;
        }
    }
    freeaddrinfo(res);
    if (s < 0) {
        perror("service_client: connect");
    }
    return s;
}

/* One line from s into buf (without its newline); 0 or -1. */
static int read_line(int s, char *buf, size_t len)
{
    size_t n = 0;

    while (n + 1 < len) {
        ssize_t r = read(s, buf + n, 1);

        if (r <= 0) {
            return -1;
        }
        if (buf[n] == '\n') {
            break;
        }
        n++;
    }
    buf[n] = '\0';
    return 0;
}

static char *slurp(const char *path)
{
    static char buf[DPS_CRED_MAX + 2];
    FILE       *f = fopen(path, "r");
    size_t      n;

    if (f == NULL) {
        perror(path);
        exit(2);
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    return buf;
}

int main(int argc, char **argv)
{
    const char *sock = NULL, *save = NULL, *capture = NULL, *present = NULL;
    char       *line, nonce[DPS_NONCE_HEX + 1], payload[160], err[600];
    char       *cred = NULL;
    unsigned    uid;
    size_t      len;
    uint8_t    *hello;
    int         c, s, nocred = 0, rc;

    while ((c = getopt(argc, argv, "s:w:c:p:n")) != -1) {
        switch (c) {
        case 's': sock = optarg; break;
        case 'w': save = optarg; break;
        case 'c': capture = optarg; break;
        case 'p': present = optarg; break;
        case 'n': nocred = 1; break;
        default: goto usage;
        }
    }
    if (argc - optind != 2) {
        goto usage;
    }
    line = malloc(2 * DPS_MAX_ADDR + 1024);
    s = dial(argv[optind]);
    if (line == NULL || s < 0 || read_line(s, line, 2 * DPS_MAX_ADDR + 1024)) {
        fprintf(stderr, "service_client: no challenge\n");
        return 2;
    }
    if (sscanf(line, "challenge %32s %u", nonce, &uid) != 2) {
        printf("%s\n", line);
        return strncmp(line, "refused ", 8) == 0 ? 1 : 2;
    }
    if (present != NULL) {
        cred = strdup(slurp(present));
    } else if (!nocred) {
        len = dps_munge_payload(nonce, argv[optind + 1], payload,
                                sizeof(payload));
        if (dps_munge_encode(sock, payload, len, (uid_t)uid, &cred, err,
                             sizeof(err)) != DPS_OK) {
            fprintf(stderr, "service_client: %s\n", err);
            return 2;
        }
        if (capture != NULL || save != NULL) {
            FILE *f = fopen(capture != NULL ? capture : save, "w");

            if (f == NULL || fprintf(f, "%s\n", cred) < 0 || fclose(f) != 0) {
                perror("service_client: writing the credential");
                return 2;
            }
        }
        if (capture != NULL) {
            close(s);
            return 0;
        }
    }
    if (nocred) {
        /* By hand: the library never makes a hello without one. */
        uint8_t  h[DPS_SERVICE_HDR_LEN + DPS_LISTEN_NAME_MAX] = {0};
        uint32_t n = (uint32_t)strlen(argv[optind + 1]);

        h[0] = 'D', h[1] = 'P', h[2] = 'S', h[3] = 'M';
        h[4] = DPS_PROTO_VERSION & 0xff, h[5] = DPS_PROTO_VERSION >> 8;
        h[8] = (uint8_t)n;
        memcpy(h + DPS_SERVICE_HDR_LEN, argv[optind + 1], n);
        rc = write(s, h, DPS_SERVICE_HDR_LEN + n) < 0;
    } else {
        hello = dps_service_encode_hello(argv[optind + 1], cred, &len);
        if (hello == NULL) {
            fprintf(stderr, "service_client: cannot make a hello\n");
            return 2;
        }
        rc = write(s, hello, len) != (ssize_t)len;
    }
    if (rc || read_line(s, line, 2 * DPS_MAX_ADDR + 1024)) {
        fprintf(stderr, "service_client: no answer\n");
        return 2;
    }
    printf("%s\n", line);
    fflush(stdout);
    if (strncmp(line, "ok ", 3) != 0) {
        return strncmp(line, "refused ", 8) == 0 ? 1 : 2;
    }
    /* Keep the job's worker until told. */
    while (read(STDIN_FILENO, err, sizeof(err)) > 0) {
    }
    close(s);
    return 0;
usage:
    fprintf(stderr, "usage: service_client [-s MUNGE_SOCKET] [-w FILE | -c "
                    "FILE | -p FILE | -n] ADDR:PORT JOB\n");
    return 2;
}
