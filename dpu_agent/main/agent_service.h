/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpu_agent --service's settings: /etc/dpushim/agent.conf (or --config
 * FILE), each overridden by the flag of the same name (docs/admin.md).
 *
 *   # comment            (a '#' anywhere starts one)
 *   key = value          (spaces around '=' and the value ignored)
 *
 * keys: listen (ADDR:PORT, default 0.0.0.0:7420), workers (1-256; default
 * a BlueField's cores, 1 elsewhere), munge_socket (default MUNGE's own),
 * grant_dir (default /run/dpushim/grant; empty: no DMA grants),
 * allow_root (yes/no, default no), log_level (error, warn, info, debug;
 * default info).
 */
#ifndef AGENT_SERVICE_H
#define AGENT_SERVICE_H

#include "common/dps_listen.h"

#include <stddef.h>

#define AGENT_SERVICE_CONF      "/etc/dpushim/agent.conf"
#define AGENT_SERVICE_LISTEN    "0.0.0.0:7420"
#define AGENT_SERVICE_GRANT_DIR "/run/dpushim/grant"

typedef struct agent_service_conf {
    char listen[DPS_LISTEN_HOSTPORT_MAX];
    long workers; /* 0: the default */
    char munge_socket[1024];
    char grant_dir[1024];
    int  allow_root;
    int  log_level;
} agent_service_conf_t;

/* The defaults above. */
void agent_service_conf_init(agent_service_conf_t *c);

/* Set key to value, checked. DPS_OK, or DPS_ERR_INVALID with the reason
 * (naming key and value) in err. */
int agent_service_conf_set(agent_service_conf_t *c, const char *key,
                           const char *value, char *err, size_t errlen);

/* Read path into c. A missing file is DPS_OK when !must_exist (the
 * defaults stand). Otherwise DPS_OK, or DPS_ERR_IO / DPS_ERR_INVALID with
 * "PATH:LINE: reason" in err. */
int agent_service_conf_load(agent_service_conf_t *c, const char *path,
                            int must_exist, char *err, size_t errlen);

#endif
