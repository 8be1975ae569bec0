/* SPDX-License-Identifier: BSD-3-Clause */
/* The one table of DPUSHIM_* environment variables, and its parser. */
#ifndef DPS_CONFIG_H
#define DPS_CONFIG_H

#include "common/dps_colls.h"
#include "common/dps_status.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define DPS_ENV_PREFIX "DPUSHIM_"

/* Switches DPUSHIM_IALLTOALL ... DPUSHIM_GROUP_INIT, one per dps_coll_t
 * (dps_proto.h) but the first. */
#define DPS_CFG_NCOLL (DPS_COLL_MAX - 1)

/* DPUSHIM_MIN_BYTES=auto: the shim chooses at MPI_Init by placement. */
#define DPS_MIN_BYTES_AUTO UINT64_MAX

typedef struct dps_config {
    int      offload;             /* master switch */
    int      coll[DPS_CFG_NCOLL]; /* offload each collective:
                                   * index dps_coll_t - 1 (dps_colls.h) */
    uint64_t min_bytes;           /* smallest message offloaded, or AUTO */
    unsigned ranks_per_dpu;       /* 0: one agent per host */
    int      stats;               /* print totals at MPI_Finalize: 1; and
                                   * fallbacks by reason: 2 */
    int      log_level;           /* dps_log_level_t */
    char     agent[4096];         /* agent binary; empty: beside the library */
    int      transport;           /* dps_transport_t */
    int      data_path;           /* dps_data_path_t */
    int      progress_thread;     /* dps_autobool_t */
    char     agent_cpus[256];     /* CPU list for the agents; empty: ranks' */
    int      agent_sched;         /* dps_agent_sched_t */
    uint64_t regcache_bytes;      /* registration cache cap; 0: no cache */
    uint64_t chunk_bytes;         /* agent staging chunk */
    unsigned pipeline_depth;      /* chunks in flight per agent */
    int      push;                /* agents push between nodes (else
                                   * the receivers' agents fetch) */
    int      require;             /* abort at MPI_Init rather than run stock */
    unsigned agent_timeout;       /* s: an agent silent this long has failed */
    char     agent_map[4096];     /* listening agents' map; empty: spawn */
    char     secret_dir[4096];    /* job secrets; empty: the default */
    int      auth;                /* dps_auth_t: how a job proves itself */
    char     munge_socket[4096];  /* munged's; empty: MUNGE's default */
} dps_config_t;

/* Where the cluster-wide agent map is, used when DPUSHIM_AGENT_MAP is
 * unset (an agent service on each DPU; docs/admin.md). */
#define DPS_SITE_AGENT_MAP "/etc/dpushim/agents.map"

typedef enum {
    DPS_AUTH_AUTO = 0,  /* munge with DPS_SITE_AGENT_MAP, else secret */
    DPS_AUTH_MUNGE = 1, /* MUNGE credential to dpu_agent --service */
    DPS_AUTH_SECRET = 2 /* secret file to a user's dpu_agent --listen */
} dps_auth_t;

typedef enum {
    DPS_TRANSPORT_AUTO = 0, /* CMA for same-node ranks, UCX RMA for others */
    DPS_TRANSPORT_UCX = 1   /* UCX RMA for every rank (testing) */
} dps_transport_t;

typedef enum {
    DPS_DATA_DIRECT = 0, /* same host: each rank's DMA engine, 1 copy */
    DPS_DATA_STAGED = 1  /* through the agent's staging buffers */
} dps_data_path_t;

/* A switch that may also be left to the code: DPS_CFG_AUTOBOOL. */
typedef enum {
    DPS_AUTOBOOL_OFF = 0,
    DPS_AUTOBOOL_ON = 1,
    DPS_AUTOBOOL_AUTO = 2
} dps_autobool_t;

typedef enum {
    DPS_SCHED_EAGER = 0, /* nice -10, may preempt computing ranks */
    DPS_SCHED_BATCH = 1, /* SCHED_BATCH: idle cores and fair share only */
    DPS_SCHED_POLL = 2,  /* never sleeps: an agent with a core of its own */
    DPS_SCHED_AUTO = 3   /* poll with a core of its own, else eager */
} dps_agent_sched_t;

typedef enum {
    DPS_CFG_BOOL,
    DPS_CFG_TRANSPORT,
    DPS_CFG_SCHED,
    DPS_CFG_DATAPATH,
    DPS_CFG_CPULIST,
    DPS_CFG_SIZE,
    DPS_CFG_THRESHOLD, /* "auto" or a size below DPS_MIN_BYTES_AUTO */
    DPS_CFG_UINT,
    DPS_CFG_LOGLEVEL,
    DPS_CFG_PATH,
    DPS_CFG_STATS,    /* 0, 1 or 2; a boolean's words for 0 and 1 */
    DPS_CFG_AUTOBOOL, /* auto, or a boolean (dps_autobool_t) */
    DPS_CFG_AUTH      /* auto, munge or secret (dps_auth_t) */
} dps_cfg_type_t;

typedef struct dps_cfg_entry {
    const char    *name; /* without the DPUSHIM_ prefix */
    dps_cfg_type_t type;
    const char    *deflt;  /* default, parsed like a user value */
    const char    *help;   /* one sentence for --help and docs/variables.md */
    size_t         offset; /* of the field in dps_config_t */
    uint64_t       min, max; /* SIZE and UINT: range when max != 0 */
} dps_cfg_entry_t;

/* The table; terminated by an entry with name == NULL. */
extern const dps_cfg_entry_t dps_config_table[];

/*
 * Fill cfg from the table defaults, then from the DPUSHIM_* entries of envp
 * (a NULL-terminated "NAME=value" array, e.g. environ). Returns the number
 * of invalid values (0 on success). Each invalid value and each unknown
 * DPUSHIM_* name adds one line to msgs (may be NULL), naming the variable;
 * *nunknown (may be NULL) receives the number of unknown names.
 * Fields with invalid values keep their defaults.
 */
int dps_config_load(dps_config_t *cfg, char *const *envp, char *msgs,
                    size_t msgs_len, int *nunknown);

/*
 * Parse one value of the given type into *out (int, uint64_t, unsigned or
 * char[4096] depending on type). Returns DPS_OK, or DPS_ERR_INVALID if
 * the value is invalid.
 */
int dps_config_parse_value(dps_cfg_type_t type, const char *value, void *out);

/*
 * Parse a CPU list such as "0,2-3" into a bitmap of max_cpus bits (out,
 * zeroed first). Returns the number of CPUs (a count), or -1 if malformed
 * or a CPU is >= max_cpus.
 */
int dps_cpulist_parse(const char *list, unsigned long *out, int max_cpus);

/* Print the table: as "--help" text, or as a Markdown table (markdown=1). */
void dps_config_print(FILE *out, int markdown);

#endif
