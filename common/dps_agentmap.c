/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent map (DPUSHIM_AGENT_MAP; format in dps_listen.h): which
 * listening agent serves each virtual node of a host. Every line is
 * checked, and an error names the file and line.
 */
#define _GNU_SOURCE
#include "common/dps_listen.h"
#include "common/dps_status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Length of the short name (up to the first '.'). */
static size_t short_len(const char *name)
{
    return strcspn(name, ".");
}

/* How well a map HOST applies to hostname: 3 exact, 2 short, 1 "*". */
static int host_match(const char *pat, const char *hostname)
{
    size_t n;

    if (strcmp(pat, "*") == 0) {
        return 1;
    }
    if (strcasecmp(pat, hostname) == 0) {
        return 3;
    }
    n = short_len(pat);
    if (n > 0 && n == short_len(hostname) &&
        strncasecmp(pat, hostname, n) == 0) {
        return 2;
    }
    return 0;
}

/* agent with {host} and {short} replaced by hostname and its short name,
 * into out (len bytes). DPS_OK, or DPS_ERR_INVALID with the reason. */
static int expand(const char *agent, const char *hostname, char *out,
                  size_t len, const char *where, char *err, size_t errlen)
{
    size_t      o = 0, n;
    const char *p = agent, *add;

    while (*p != '\0') {
        if (*p == '{') {
            if (strncmp(p, "{host}", 6) == 0) {
                add = hostname;
                n = strlen(hostname);
                p += 6;
            } else if (strncmp(p, "{short}", 7) == 0) {
                add = hostname;
                n = short_len(hostname);
                p += 7;
            } else {
                dps_seterr(err, errlen,
                           "%s: %s: only {host} and {short} may be "
                           "replaced",
                           where, agent);
                return DPS_ERR_INVALID;
            }
        } else {
            add = p++;
            n = 1;
        }
        if (o + n >= len) {
            dps_seterr(err, errlen, "%s: %s: address too long", where, agent);
            return DPS_ERR_INVALID;
        }
        memcpy(out + o, add, n);
        o += n;
    }
    out[o] = '\0';
    return DPS_OK;
}

typedef struct map_host {
    char    *name;
    unsigned line;
} map_host_t;

/* What the lines read so far say. */
typedef struct {
    map_host_t *hosts;
    size_t      nhosts;
    char       *best; /* the agent for us, from the best match */
    int         best_level;
} map_state_t;

/* One line of the map (comments cut off): HOST ADDR:PORT [ADDR:PORT...]. */
static int map_line(char *line, const char *where, unsigned lineno,
                    const char *hostname, unsigned vnode_idx, map_state_t *m,
                    char *err, size_t errlen)
{
    char  h[DPS_LISTEN_HOSTPORT_MAX], port[8], why[512], *save, *agents[256];
    char  x[DPS_LISTEN_HOSTPORT_MAX], best[DPS_LISTEN_HOSTPORT_MAX];
    char *tok = strtok_r(line, " \t", &save);
    unsigned n = 0;
    size_t   i;
    int      level;

    if (tok == NULL) {
        return DPS_OK;
    }
    while ((agents[n] = strtok_r(NULL, " \t", &save)) != NULL) {
        if (++n == sizeof(agents) / sizeof(agents[0])) {
            dps_seterr(err, errlen, "%s: more than %u agents on a line", where,
                       n - 1);
            return DPS_ERR_INVALID;
        }
    }
    if (n == 0) {
        dps_seterr(err, errlen,
                   "%s: expected HOST ADDR:PORT "
                   "[ADDR:PORT...]",
                   where);
        return DPS_ERR_INVALID;
    }
    for (i = 0; i < n; i++) {
        if (expand(agents[i], hostname, x, sizeof(x), where, err, errlen) !=
            DPS_OK) {
            return DPS_ERR_INVALID;
        }
        if (dps_listen_split_hostport(x, 0, h, sizeof(h), port, sizeof(port),
                                      why, sizeof(why)) != DPS_OK) {
            dps_seterr(err, errlen, "%s: %s", where, why);
            return DPS_ERR_INVALID;
        }
        if (i == vnode_idx % n) {
            snprintf(best, sizeof(best), "%s", x);
        }
    }
    for (i = 0; i < m->nhosts; i++) {
        if (strcasecmp(m->hosts[i].name, tok) == 0) {
            dps_seterr(err, errlen, "%s: host %s already has line %u", where,
                       tok, m->hosts[i].line);
            return DPS_ERR_INVALID;
        }
    }
    if (m->nhosts % 16 == 0) {
        map_host_t *nh = realloc(m->hosts, (m->nhosts + 16) * sizeof(*nh));

        if (nh == NULL) {
            goto nomem;
        }
        m->hosts = nh;
    }
    m->hosts[m->nhosts].name = strdup(tok);
    m->hosts[m->nhosts].line = lineno;
    if (m->hosts[m->nhosts++].name == NULL) {
        goto nomem;
    }
    level = host_match(tok, hostname);
    if (level > m->best_level) {
        free(m->best);
        m->best = strdup(best);
        m->best_level = level;
        if (m->best == NULL) {
            goto nomem;
        }
    }
    return DPS_OK;
nomem:
    dps_seterr(err, errlen, "out of memory");
    return DPS_ERR_NOMEM;
}

int dps_agent_map_lookup(const char *path, const char *hostname,
                         unsigned vnode_idx, char *hostport, size_t len,
                         char *err, size_t errlen)
{
    map_state_t m = {NULL, 0, NULL, 0};
    char       *line = NULL, where[4200];
    unsigned    lineno = 0;
    size_t      cap = 0, i;
    int         rc = DPS_OK;
    FILE       *f;

    if (path == NULL || hostname == NULL || *hostname == '\0') {
        dps_seterr(err, errlen, "agent map lookup: no %s given",
                   path == NULL ? "file" : "host name");
        return DPS_ERR_INVALID;
    }
    f = fopen(path, "re");
    if (f == NULL) {
        dps_seterr(err, errlen, "cannot read agent map %s: %s", path,
                   strerror(errno));
        return DPS_ERR_IO;
    }
    while (rc == DPS_OK && getline(&line, &cap, f) >= 0) {
        line[strcspn(line, "#\r\n")] = '\0';
        snprintf(where, sizeof(where), "%.4096s:%u", path, ++lineno);
        rc = map_line(line, where, lineno, hostname, vnode_idx, &m, err,
                      errlen);
    }
    if (rc != DPS_OK) {
        /* err says why */
    } else if (ferror(f)) {
        dps_seterr(err, errlen, "cannot read agent map %s: %s", path,
                   strerror(errno));
        rc = DPS_ERR_IO;
    } else if (m.best == NULL) {
        dps_seterr(err, errlen, "agent map %s has no line for host %s", path,
                   hostname);
        rc = DPS_ERR_INVALID;
    } else if (strlen(m.best) >= len) {
        dps_seterr(err, errlen, "agent map %s: agent address %s too long",
                   path, m.best);
        rc = DPS_ERR_INVALID;
    } else {
        strcpy(hostport, m.best);
    }
    for (i = 0; i < m.nhosts; i++) {
        free(m.hosts[i].name);
    }
    free(m.hosts);
    free(m.best);
    free(line);
    fclose(f);
    return rc;
}
