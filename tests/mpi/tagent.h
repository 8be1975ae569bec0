/* SPDX-License-Identifier: BSD-3-Clause */
/* Failing an agent from a test program (failover_target.c,
 * failover_kinds.c). */
#ifndef TAGENT_H
#define TAGENT_H

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Our agent: the dpu_agent child of this process, or (FO_LISTENER)
 * the children of the listener; acts on each with sig, returns how many. */
static inline int signal_agents(int rank, int sig)
{
    DIR           *d = opendir("/proc");
    struct dirent *e;
    int found = 0, parent = getenv("FO_LISTENER") ? atoi(getenv("FO_LISTENER"))
                                                  : (int)getpid();

    while (d != NULL && (e = readdir(d)) != NULL) {
        char  path[300], buf[512], *p;
        FILE *f;
        int   ppid;

        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        if ((f = fopen(path, "r")) == NULL) {
            continue;
        }
        if (fgets(buf, sizeof(buf), f) != NULL &&
            strstr(buf, "(dpu_agent)") != NULL &&
            (p = strrchr(buf, ')')) != NULL &&
            sscanf(p + 2, "%*c %d", &ppid) == 1 && ppid == parent) {
            printf("rank %d: %s agent pid %s\n", rank,
                   sig == SIGSTOP ? "stopping" : "killing", e->d_name);
            fflush(stdout);
            kill((pid_t)atoi(e->d_name), sig);
            found++;
        }
        fclose(f);
    }
    if (d != NULL) {
        closedir(d);
    }
    return found;
}

#endif
