/* SPDX-License-Identifier: BSD-3-Clause */
/* dpu_agent --service's configuration file (agent_service.h). */
#define _GNU_SOURCE
#include "dpu_agent/main/agent_service.h"
#include "common/dps_config.h"
#include "common/dps_log.h"
#include "common/dps_status.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void agent_service_conf_init(agent_service_conf_t *c)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->listen, sizeof(c->listen), "%s", AGENT_SERVICE_LISTEN);
    snprintf(c->grant_dir, sizeof(c->grant_dir), "%s",
             AGENT_SERVICE_GRANT_DIR);
    c->log_level = DPS_LOG_INFO;
}

static int set_path(char *out, size_t len, const char *key, const char *v,
                    char *err, size_t errlen)
{
    if (v[0] != '\0' && v[0] != '/') {
        dps_seterr(err, errlen, "%s = '%s': expected an absolute path", key,
                   v);
        return DPS_ERR_INVALID;
    }
    if (strlen(v) >= len) {
        dps_seterr(err, errlen, "%s: path longer than %zu bytes", key,
                   len - 1);
        return DPS_ERR_INVALID;
    }
    snprintf(out, len, "%s", v);
    return DPS_OK;
}

int agent_service_conf_set(agent_service_conf_t *c, const char *key,
                           const char *v, char *err, size_t errlen)
{
    char  h[DPS_LISTEN_HOSTPORT_MAX], port[8], why[256];
    char *end;
    long  n;
    int   b;

    if (!strcmp(key, "listen")) {
        if (dps_listen_split_hostport(v, 1, h, sizeof(h), port, sizeof(port),
                                      why, sizeof(why)) != DPS_OK) {
            dps_seterr(err, errlen, "listen = '%s': %s", v, why);
            return DPS_ERR_INVALID;
        }
        snprintf(c->listen, sizeof(c->listen), "%s", v);
    } else if (!strcmp(key, "workers")) {
        errno = 0;
        n = strtol(v, &end, 10);
        if (*v == '\0' || *end != '\0' || errno || n < 1 || n > 256) {
            dps_seterr(err, errlen, "workers = '%s': expected 1 to 256", v);
            return DPS_ERR_INVALID;
        }
        c->workers = n;
    } else if (!strcmp(key, "munge_socket")) {
        return set_path(c->munge_socket, sizeof(c->munge_socket), key, v, err,
                        errlen);
    } else if (!strcmp(key, "grant_dir")) {
        return set_path(c->grant_dir, sizeof(c->grant_dir), key, v, err,
                        errlen);
    } else if (!strcmp(key, "allow_root")) {
        if (dps_config_parse_value(DPS_CFG_BOOL, v, &b) != DPS_OK) {
            dps_seterr(err, errlen,
                       "allow_root = '%s': expected yes or no (1/0, on/off, "
                       "true/false)",
                       v);
            return DPS_ERR_INVALID;
        }
        c->allow_root = b;
    } else if (!strcmp(key, "log_level")) {
        if (dps_config_parse_value(DPS_CFG_LOGLEVEL, v, &b) != DPS_OK) {
            dps_seterr(err, errlen,
                       "log_level = '%s': expected error, warn, info or "
                       "debug",
                       v);
            return DPS_ERR_INVALID;
        }
        c->log_level = b;
    } else {
        dps_seterr(err, errlen,
                   "unknown key '%s' (listen, workers, munge_socket, "
                   "grant_dir, allow_root, log_level)",
                   key);
        return DPS_ERR_INVALID;
    }
    return DPS_OK;
}

/* Strip leading and trailing blanks in place. */
static char *trim(char *s)
{
    char *e;

    while (isspace((unsigned char)*s)) {
        s++;
    }
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) {
        *--e = '\0';
    }
    return s;
}

int agent_service_conf_load(agent_service_conf_t *c, const char *path,
                            int must_exist, char *err, size_t errlen)
{
    char  line[2048], why[512], *p, *eq, *key, *val;
    FILE *f = fopen(path, "re");
    int   lineno = 0, rc = DPS_OK;

    if (f == NULL) {
        if (errno == ENOENT && !must_exist) {
            return DPS_OK;
        }
        dps_seterr(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return DPS_ERR_IO;
    }
    while (rc == DPS_OK && fgets(line, sizeof(line), f) != NULL) {
        lineno++;
        if (strchr(line, '\n') == NULL && !feof(f)) {
            dps_seterr(err, errlen, "%s:%d: line longer than %zu bytes", path,
                       lineno, sizeof(line) - 2);
            rc = DPS_ERR_INVALID;
            break;
        }
        if ((p = strchr(line, '#')) != NULL) {
            *p = '\0';
        }
        p = trim(line);
        if (*p == '\0') {
            continue;
        }
        eq = strchr(p, '=');
        if (eq == NULL) {
            dps_seterr(err, errlen, "%s:%d: expected 'key = value', got '%s'",
                       path, lineno, p);
            rc = DPS_ERR_INVALID;
            break;
        }
        *eq = '\0';
        key = trim(p);
        val = trim(eq + 1);
        if (agent_service_conf_set(c, key, val, why, sizeof(why)) != DPS_OK) {
            dps_seterr(err, errlen, "%s:%d: %s", path, lineno, why);
            rc = DPS_ERR_INVALID;
        }
    }
    fclose(f);
    return rc;
}
