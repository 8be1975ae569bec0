/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test tool: grant this process's memory to the agent whose grant socket
 * is PATH (common/dps_grant.h), as a rank does, claiming world rank RANK
 * of the job with key KEY (default 0 and 0). The agent must refuse a
 * grant from a process of another uid; the kernel refuses one to a
 * socket the process may not reach. Prints "sent" or why not.
 *
 * usage: grant_send PATH [RANK KEY]
 * Exit status: 0 sent, 1 not sent, 2 usage.
 */
#include "common/dps_grant.h"
#include "common/dps_status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    unsigned long rank = 0, key = 0;
    int           rc;

    if (argc != 2 && argc != 4) {
        fprintf(stderr, "usage: grant_send PATH [RANK KEY]\n");
        return 2;
    }
    if (argc == 4) {
        rank = strtoul(argv[2], NULL, 0);
        key = strtoul(argv[3], NULL, 0);
    }
    rc = dps_grant_send(argv[1], (uint32_t)rank, (uint32_t)key);
    if (rc != DPS_OK) {
        printf("not sent: %s\n", strerror(errno));
        return 1;
    }
    printf("sent\n");
    return 0;
}
