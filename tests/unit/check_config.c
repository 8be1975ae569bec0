/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of the DPUSHIM_* variable table and parser (dps_config.c). */
#include "common/dps_config.h"
#include "common/dps_log.h"

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSGS_LEN 8192

/* ------------------------------------------------------------------ */
/* Helpers                                                            */
/* ------------------------------------------------------------------ */

static size_t field_size(dps_cfg_type_t type)
{
    switch (type) {
    case DPS_CFG_BOOL: return sizeof(int);
    case DPS_CFG_STATS: return sizeof(int);
    case DPS_CFG_AUTOBOOL: return sizeof(int);
    case DPS_CFG_SIZE: return sizeof(uint64_t);
    case DPS_CFG_THRESHOLD: return sizeof(uint64_t);
    case DPS_CFG_SCHED: return sizeof(int);
    case DPS_CFG_DATAPATH: return sizeof(int);
    case DPS_CFG_UINT: return sizeof(unsigned);
    case DPS_CFG_LOGLEVEL: return sizeof(int);
    case DPS_CFG_TRANSPORT: return sizeof(int);
    case DPS_CFG_AUTH: return sizeof(int);
    case DPS_CFG_CPULIST: return sizeof(((dps_config_t *)0)->agent_cpus);
    case DPS_CFG_PATH: return sizeof(((dps_config_t *)0)->agent);
    }
    return 0;
}

/* The table entry of a name without the prefix; fails if absent. */
static const dps_cfg_entry_t *entry(const char *name)
{
    const dps_cfg_entry_t *e;

    for (e = dps_config_table; e->name != NULL; e++) {
        if (!strcmp(e->name, name)) {
            return e;
        }
    }
    ck_abort_msg("no table entry %s", name);
    return NULL;
}

static void *field(dps_config_t *cfg, const dps_cfg_entry_t *e)
{
    return (char *)cfg + e->offset;
}

/* The configuration of an empty environment. */
static void defaults(dps_config_t *d)
{
    char *env[] = {NULL};
    int   nunk = -1;

    memset(d, 0, sizeof(*d));
    ck_assert_int_eq(dps_config_load(d, env, NULL, 0, &nunk), 0);
    ck_assert_int_eq(nunk, 0);
}

/* Load a one-entry environment. */
static int load1(const char *entry_str, dps_config_t *cfg, char *msgs,
                 size_t msgs_len, int *nunk)
{
    char *env[2];

    env[0] = (char *)entry_str;
    env[1] = NULL;
    return dps_config_load(cfg, env, msgs, msgs_len, nunk);
}

/* Is cfg the default configuration except possibly field e? */
static int same_but(const dps_config_t *cfg, const dps_cfg_entry_t *e)
{
    dps_config_t d, tmp = *cfg;

    defaults(&d);
    if (e != NULL) {
        memcpy((char *)&tmp + e->offset, (char *)&d + e->offset,
               field_size(e->type));
    }
    return memcmp(&tmp, &d, sizeof(d)) == 0;
}

/* "DPUSHIM_<name>=<value>" in a malloc'ed string. */
static char *env_str(const char *name, const char *value)
{
    size_t n = strlen(DPS_ENV_PREFIX) + strlen(name) + strlen(value) + 2;
    char  *s = malloc(n);

    ck_assert_ptr_nonnull(s);
    snprintf(s, n, "%s%s=%s", DPS_ENV_PREFIX, name, value);
    return s;
}

/* A valid value: no message, the field gets it, nothing else changes. */
static void accept_at(const char *name, const char *value, const void *want,
                      int line)
{
    const dps_cfg_entry_t *e = entry(name);
    char                  *s = env_str(name, value);
    char                   msgs[MSGS_LEN];
    dps_config_t           cfg;
    int                    rc, nunk = -1;

    memset(&cfg, 0xa5, sizeof(cfg));
    rc = load1(s, &cfg, msgs, sizeof(msgs), &nunk);
    ck_assert_msg(rc == 0, "line %d: %s refused (%d): %s", line, s, rc, msgs);
    ck_assert_int_eq(nunk, 0);
    ck_assert_msg(msgs[0] == '\0', "line %d: %s gave '%s'", line, s, msgs);
    ck_assert_msg(memcmp(field(&cfg, e), want, field_size(e->type)) == 0,
                  "line %d: %s parsed to another value", line, s);
    ck_assert_msg(same_but(&cfg, e), "line %d: %s changed another field", line,
                  s);
    free(s);
}

static void accept_int(const char *name, const char *value, int want, int line)
{
    accept_at(name, value, &want, line);
}

static void accept_u64(const char *name, const char *value, uint64_t want,
                       int line)
{
    accept_at(name, value, &want, line);
}

static void accept_uint(const char *name, const char *value, unsigned want,
                        int line)
{
    accept_at(name, value, &want, line);
}

#define ACCEPT_INT(_n, _v, _w)  accept_int((_n), (_v), (_w), __LINE__)
#define ACCEPT_U64(_n, _v, _w)  accept_u64((_n), (_v), (_w), __LINE__)
#define ACCEPT_UINT(_n, _v, _w) accept_uint((_n), (_v), (_w), __LINE__)

/* An invalid value: counted, reported with the full variable name, and
 * the whole configuration stays at its defaults. */
static void refuse_at(const char *name, const char *value, int line)
{
    char        *s = env_str(name, value);
    char         full[64], msgs[MSGS_LEN];
    dps_config_t cfg;
    int          rc, nunk = -1;

    snprintf(full, sizeof(full), "%s%s", DPS_ENV_PREFIX, name);
    memset(&cfg, 0x5a, sizeof(cfg));
    rc = load1(s, &cfg, msgs, sizeof(msgs), &nunk);
    ck_assert_msg(rc == 1, "line %d: %s=%.40s gave %d, expected 1", line, full,
                  value, rc);
    ck_assert_int_eq(nunk, 0);
    ck_assert_msg(strstr(msgs, full) != NULL,
                  "line %d: message '%s' does not name %s", line, msgs, full);
    ck_assert_msg(same_but(&cfg, NULL),
                  "line %d: %s=%.40s changed the configuration", line, full,
                  value);
    free(s);
}
#define REFUSE(_n, _v) refuse_at((_n), (_v), __LINE__)

/* Values no numeric or boolean variable accepts. */
static const char *const bad_common[] = {
    "",   "-1",   "abc", "12x", "1kk", " 1", "1 ", "99999999999999999999",
    "+1", "0x10", "1.5", "\t1", "1\n"};
#define NCOMMON (sizeof(bad_common) / sizeof(bad_common[0]))

/* ------------------------------------------------------------------ */
/* Defaults                                                           */
/* ------------------------------------------------------------------ */

START_TEST(def_literal)
{
    dps_config_t cfg;
    char        *env[] = {NULL};
    char         msgs[64];
    int          nunk = -1;

    memset(&cfg, 0xff, sizeof(cfg));
    strcpy(msgs, "stale text");
    ck_assert_int_eq(dps_config_load(&cfg, env, msgs, sizeof(msgs), &nunk), 0);
    ck_assert_int_eq(nunk, 0);
    ck_assert_str_eq(msgs, "");
    ck_assert_int_eq(cfg.offload, 1);
    ck_assert_int_eq(cfg.coll[0], 1);
    ck_assert_int_eq(cfg.coll[1], 1);
    ck_assert_int_eq(cfg.stats, 0);
    ck_assert_uint_eq(cfg.ranks_per_dpu, 0);
    ck_assert_int_eq(cfg.log_level, DPS_LOG_WARN);
    ck_assert_str_eq(cfg.agent, "");
    ck_assert_uint_eq(cfg.min_bytes, DPS_MIN_BYTES_AUTO);
    ck_assert_int_eq(cfg.agent_sched, DPS_SCHED_AUTO);
    ck_assert_int_eq(cfg.data_path, DPS_DATA_DIRECT);
    ck_assert_int_eq(cfg.progress_thread, DPS_AUTOBOOL_AUTO);
}
END_TEST

/* Every field holds its table default, parsed like a user value. */
START_TEST(def_from_table)
{
    const dps_cfg_entry_t *e;
    dps_config_t           cfg;
    char                  *env[] = {NULL};

    memset(&cfg, 0x33, sizeof(cfg));
    ck_assert_int_eq(dps_config_load(&cfg, env, NULL, 0, NULL), 0);
    for (e = dps_config_table; e->name != NULL; e++) {
        union {
            int      i;
            uint64_t u64;
            unsigned u;
            char     path[4096];
        } want;

        memset(&want, 0, sizeof(want));
        ck_assert_msg(dps_config_parse_value(e->type, e->deflt, &want) ==
                          DPS_OK,
                      "default of %s does not parse", e->name);
        ck_assert_msg(memcmp(field(&cfg, e), &want, field_size(e->type)) == 0,
                      "%s is not its table default '%s'", e->name, e->deflt);
    }
}
END_TEST

/* A NULL environment is an empty one. */
START_TEST(def_null_env)
{
    dps_config_t cfg, d;
    char         msgs[64];
    int          nunk = -1;

    defaults(&d);
    memset(&cfg, 0x77, sizeof(cfg));
    ck_assert_int_eq(dps_config_load(&cfg, NULL, msgs, sizeof(msgs), &nunk),
                     0);
    ck_assert_int_eq(nunk, 0);
    ck_assert_str_eq(msgs, "");
    ck_assert(memcmp(&cfg, &d, sizeof(d)) == 0);
}
END_TEST

START_TEST(def_table_sane)
{
    const dps_cfg_entry_t *e, *o;
    int                    n = 0;

    for (e = dps_config_table; e->name != NULL; e++, n++) {
        ck_assert_uint_gt(strlen(e->name), 0);
        ck_assert(strncmp(e->name, DPS_ENV_PREFIX, strlen(DPS_ENV_PREFIX)) !=
                  0);
        ck_assert_ptr_nonnull(e->deflt);
        ck_assert_ptr_nonnull(e->help);
        ck_assert_uint_gt(strlen(e->help), 0);
        ck_assert_uint_le(e->offset + field_size(e->type),
                          sizeof(dps_config_t));
        for (o = dps_config_table; o != e; o++) {
            ck_assert_str_ne(o->name, e->name);
            ck_assert_uint_ne(o->offset, e->offset);
        }
    }
    ck_assert_int_eq(n, 23 + DPS_CFG_NCOLL - 2);
    (void)entry("OFFLOAD");
    (void)entry("IALLTOALL");
    (void)entry("IBCAST");
    (void)entry("MIN_BYTES");
    (void)entry("RANKS_PER_DPU");
    (void)entry("STATS");
    (void)entry("LOG");
    (void)entry("AGENT");
    (void)entry("TRANSPORT");
    (void)entry("DATA_PATH");
    (void)entry("PROGRESS_THREAD");
    (void)entry("AGENT_CPUS");
    (void)entry("AGENT_SCHED");
    (void)entry("REGCACHE_BYTES");
    (void)entry("CHUNK_BYTES");
    (void)entry("PIPELINE_DEPTH");
    (void)entry("PUSH");
    (void)entry("REQUIRE");
    (void)entry("AGENT_TIMEOUT");
    (void)entry("AGENT_MAP");
    (void)entry("SECRET_DIR");
}
END_TEST

/* ------------------------------------------------------------------ */
/* Accepted values                                                    */
/* ------------------------------------------------------------------ */

START_TEST(ok_bool)
{
    static const char *const yes[] = {"1",    "yes",  "YES",  "Yes", "yEs",
                                      "on",   "ON",   "On",   "oN",  "true",
                                      "TRUE", "True", "tRuE", "y",   "Y"};
    static const char *const no[] = {"0",     "no",    "NO",    "No",  "nO",
                                     "off",   "OFF",   "Off",   "oFf", "false",
                                     "FALSE", "False", "fAlSe", "n",   "N"};
    const dps_cfg_entry_t   *e;
    size_t                   i;
    int                      nbool = 0;

    for (e = dps_config_table; e->name != NULL; e++) {
        if (e->type != DPS_CFG_BOOL) {
            continue;
        }
        nbool++;
        for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
            ACCEPT_INT(e->name, yes[i], 1);
        }
        for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
            ACCEPT_INT(e->name, no[i], 0);
        }
    }
    /* OFFLOAD, PUSH, REQUIRE and one switch per collective. */
    ck_assert_int_eq(nbool, 3 + DPS_CFG_NCOLL);
}
END_TEST

/* DPUSHIM_STATS: a level, 0 to 2, with a boolean's words for 0 and 1. */
START_TEST(ok_stats)
{
    static const char *const bad[] = {"3", "10", "02", "2 ", "maybe", "two"};
    size_t                   i;

    ACCEPT_INT("STATS", "0", 0);
    ACCEPT_INT("STATS", "no", 0);
    ACCEPT_INT("STATS", "1", 1);
    ACCEPT_INT("STATS", "True", 1);
    ACCEPT_INT("STATS", "2", 2);
    for (i = 0; i < NCOMMON; i++) {
        REFUSE("STATS", bad_common[i]);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        REFUSE("STATS", bad[i]);
    }
}
END_TEST

START_TEST(ok_size)
{
    ACCEPT_U64("MIN_BYTES", "0", 0);
    ACCEPT_U64("MIN_BYTES", "1", 1);
    ACCEPT_U64("MIN_BYTES", "1000", 1000);
    ACCEPT_U64("MIN_BYTES", "007", 7);
    ACCEPT_U64("MIN_BYTES", "0k", 0);
    ACCEPT_U64("MIN_BYTES", "1k", 1024);
    ACCEPT_U64("MIN_BYTES", "64k", 65536);
    ACCEPT_U64("MIN_BYTES", "64K", 65536);
    ACCEPT_U64("MIN_BYTES", "3m", 3ull << 20);
    ACCEPT_U64("MIN_BYTES", "3M", 3ull << 20);
    ACCEPT_U64("MIN_BYTES", "2g", 2ull << 30);
    ACCEPT_U64("MIN_BYTES", "2G", 2ull << 30);
    ACCEPT_U64("MIN_BYTES", "5000g", 5000ull << 30);
    /* The largest values that fit in 64 bits; 2^64-1 itself means auto
     * and is refused as a number. */
    ACCEPT_U64("MIN_BYTES", "18446744073709551614", UINT64_MAX - 1);
    ACCEPT_U64("MIN_BYTES", "auto", DPS_MIN_BYTES_AUTO);
    ACCEPT_U64("MIN_BYTES", "AUTO", DPS_MIN_BYTES_AUTO);
    ACCEPT_U64("MIN_BYTES", "Auto", DPS_MIN_BYTES_AUTO);
    ACCEPT_U64("MIN_BYTES", "18014398509481983k", ((1ull << 54) - 1) << 10);
    ACCEPT_U64("MIN_BYTES", "17592186044415M", ((1ull << 44) - 1) << 20);
    ACCEPT_U64("MIN_BYTES", "17179869183g", ((1ull << 34) - 1) << 30);
}
END_TEST

START_TEST(ok_uint)
{
    ACCEPT_UINT("RANKS_PER_DPU", "0", 0);
    ACCEPT_UINT("RANKS_PER_DPU", "1", 1);
    ACCEPT_UINT("RANKS_PER_DPU", "8", 8);
    ACCEPT_UINT("RANKS_PER_DPU", "999999", 999999);
    ACCEPT_UINT("RANKS_PER_DPU", "1000000", 1000000);
    ACCEPT_UINT("RANKS_PER_DPU", "0001000000", 1000000);
}
END_TEST

START_TEST(ok_log)
{
    ACCEPT_INT("LOG", "error", DPS_LOG_ERROR);
    ACCEPT_INT("LOG", "warn", DPS_LOG_WARN);
    ACCEPT_INT("LOG", "info", DPS_LOG_INFO);
    ACCEPT_INT("LOG", "debug", DPS_LOG_DEBUG);
    ACCEPT_INT("LOG", "ERROR", DPS_LOG_ERROR);
    ACCEPT_INT("LOG", "Warn", DPS_LOG_WARN);
    ACCEPT_INT("LOG", "INFO", DPS_LOG_INFO);
    ACCEPT_INT("LOG", "DeBuG", DPS_LOG_DEBUG);
}
END_TEST

START_TEST(ok_agent)
{
    static const char *const ok[] = {"/opt/dpushim/bin/dpu_agent",
                                     "relative/dpu_agent", "a b c", "x", ""};
    char                     want[sizeof(((dps_config_t *)0)->agent)];
    char                    *longest;
    size_t                   i;

    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        memset(want, 0, sizeof(want));
        strcpy(want, ok[i]);
        accept_at("AGENT", ok[i], want, __LINE__);
    }
    /* 4095 characters still fit with the terminating NUL. */
    longest = malloc(sizeof(want));
    ck_assert_ptr_nonnull(longest);
    memset(longest, 'p', sizeof(want) - 1);
    longest[sizeof(want) - 1] = '\0';
    memcpy(want, longest, sizeof(want));
    accept_at("AGENT", longest, want, __LINE__);
    free(longest);
}
END_TEST

/* Several valid values at once, among other variables. */
START_TEST(ok_several)
{
    char        *env[] = {"PATH=/usr/bin",
                          "DPUSHIM_OFFLOAD=no",
                          "DPUSHIM_IBCAST=off",
                          "HOME=/root",
                          "DPUSHIM_MIN_BYTES=64k",
                          "DPUSHIM_STATS=TRUE",
                          "DPUSHIM_RANKS_PER_DPU=4",
                          "DPUSHIM_LOG=debug",
                          "DPUSHIM_AGENT=/x/dpu_agent",
                          NULL};
    dps_config_t cfg;
    char         msgs[256];
    int          nunk = -1;

    ck_assert_int_eq(dps_config_load(&cfg, env, msgs, sizeof(msgs), &nunk), 0);
    ck_assert_int_eq(nunk, 0);
    ck_assert_str_eq(msgs, "");
    ck_assert_int_eq(cfg.offload, 0);
    ck_assert_int_eq(cfg.coll[0], 1);
    ck_assert_int_eq(cfg.coll[1], 0);
    ck_assert_uint_eq(cfg.min_bytes, 65536);
    ck_assert_int_eq(cfg.stats, 1);
    ck_assert_uint_eq(cfg.ranks_per_dpu, 4);
    ck_assert_int_eq(cfg.log_level, DPS_LOG_DEBUG);
    ck_assert_str_eq(cfg.agent, "/x/dpu_agent");
}
END_TEST

/* ------------------------------------------------------------------ */
/* Invalid values                                                     */
/* ------------------------------------------------------------------ */

START_TEST(bad_bool)
{
    static const char *const bad[] = {"2",   "10",    "yess", "of",
                                      "onn", "truee", "nope", "t",
                                      "f",   "yes ",  " no",  "enable"};
    const dps_cfg_entry_t   *e;
    size_t                   i;

    for (e = dps_config_table; e->name != NULL; e++) {
        if (e->type != DPS_CFG_BOOL) {
            continue;
        }
        for (i = 0; i < NCOMMON; i++) {
            REFUSE(e->name, bad_common[i]);
        }
        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            REFUSE(e->name, bad[i]);
        }
    }
}
END_TEST

START_TEST(bad_size)
{
    static const char *const bad[] = {
        "k", "K", "1t", "1T", "1.5k", "1kb", "1 k", "1k ", "k1", "1e3", "0xk",
        /* Overflows: without and with suffix. */
        "18446744073709551616", "99999999999999999999k", "18014398509481984k",
        "17592186044416m", "17179869184g", "17179869184G",
        "18446744073709551615k",
        /* 2^64-1 is the auto marker, not a size; words near "auto". */
        "18446744073709551615", "16777215t", "auto ", " auto", "autok",
        "automatic", "off", "none"};
    size_t i;

    for (i = 0; i < NCOMMON; i++) {
        REFUSE("MIN_BYTES", bad_common[i]);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        REFUSE("MIN_BYTES", bad[i]);
    }
}
END_TEST

START_TEST(bad_uint)
{
    static const char *const bad[] = {"1000001",    "2000000",    "4294967295",
                                      "4294967296", "4294967297", "1k",
                                      "1K",         "2g",         "1m"};
    size_t                   i;

    for (i = 0; i < NCOMMON; i++) {
        REFUSE("RANKS_PER_DPU", bad_common[i]);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        REFUSE("RANKS_PER_DPU", bad[i]);
    }
}
END_TEST

START_TEST(ok_transport)
{
    ACCEPT_INT("TRANSPORT", "auto", DPS_TRANSPORT_AUTO);
    ACCEPT_INT("TRANSPORT", "ucx", DPS_TRANSPORT_UCX);
    ACCEPT_INT("TRANSPORT", "UCX", DPS_TRANSPORT_UCX);
    ACCEPT_INT("TRANSPORT", "Auto", DPS_TRANSPORT_AUTO);
}
END_TEST

/* DPUSHIM_PROGRESS_THREAD: auto, or a boolean's words. */
START_TEST(ok_autobool)
{
    ACCEPT_INT("PROGRESS_THREAD", "auto", DPS_AUTOBOOL_AUTO);
    ACCEPT_INT("PROGRESS_THREAD", "AUTO", DPS_AUTOBOOL_AUTO);
    ACCEPT_INT("PROGRESS_THREAD", "0", DPS_AUTOBOOL_OFF);
    ACCEPT_INT("PROGRESS_THREAD", "off", DPS_AUTOBOOL_OFF);
    ACCEPT_INT("PROGRESS_THREAD", "No", DPS_AUTOBOOL_OFF);
    ACCEPT_INT("PROGRESS_THREAD", "1", DPS_AUTOBOOL_ON);
    ACCEPT_INT("PROGRESS_THREAD", "yes", DPS_AUTOBOOL_ON);
    ACCEPT_INT("PROGRESS_THREAD", "TRUE", DPS_AUTOBOOL_ON);
}
END_TEST

START_TEST(bad_autobool)
{
    static const char *const bad[] = {"2",      "autox", "auto ", " auto",
                                      "on,off", "maybe", "a"};
    size_t                   i;

    for (i = 0; i < NCOMMON; i++) {
        REFUSE("PROGRESS_THREAD", bad_common[i]);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        REFUSE("PROGRESS_THREAD", bad[i]);
    }
}
END_TEST

START_TEST(bad_transport)
{
    static const char *const bad[] = {"cma", "rdma", "ucx ",     " auto",
                                      "1",   "0",    "auto,ucx", "ucxx"};
    size_t                   i;

    for (i = 0; i < NCOMMON; i++) {
        REFUSE("TRANSPORT", bad_common[i]);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        REFUSE("TRANSPORT", bad[i]);
    }
}
END_TEST

/* Sizes and counts with a range: the ends are accepted, one past them
 * refused with the range in the message, and the default kept. */
START_TEST(ok_ranges)
{
    ACCEPT_U64("REGCACHE_BYTES", "0", 0);
    ACCEPT_U64("REGCACHE_BYTES", "64g", 64ull << 30);
    ACCEPT_U64("CHUNK_BYTES", "4k", 4096);
    ACCEPT_U64("CHUNK_BYTES", "4096", 4096);
    ACCEPT_U64("CHUNK_BYTES", "1m", 1u << 20);
    ACCEPT_U64("CHUNK_BYTES", "64m", 64u << 20);
    ACCEPT_UINT("PIPELINE_DEPTH", "1", 1);
    ACCEPT_UINT("PIPELINE_DEPTH", "8", 8);
    ACCEPT_UINT("PIPELINE_DEPTH", "64", 64);
    ACCEPT_UINT("AGENT_TIMEOUT", "1", 1);
    ACCEPT_UINT("AGENT_TIMEOUT", "3600", 3600);
}
END_TEST

START_TEST(bad_ranges)
{
    static const char *const chunk[] = {"0",        "1",   "4095", "3k",
                                        "67108865", "65m", "1g"};
    static const char *const depth[] = {"0", "65", "1000", "1000000"};
    static const char *const timeout[] = {"0", "3601", "-1", "10s"};
    size_t                   i;

    for (i = 0; i < sizeof(timeout) / sizeof(timeout[0]); i++) {
        REFUSE("AGENT_TIMEOUT", timeout[i]);
    }
    for (i = 0; i < sizeof(chunk) / sizeof(chunk[0]); i++) {
        REFUSE("CHUNK_BYTES", chunk[i]);
    }
    for (i = 0; i < sizeof(depth) / sizeof(depth[0]); i++) {
        REFUSE("PIPELINE_DEPTH", depth[i]);
    }
    for (i = 0; i < NCOMMON; i++) {
        REFUSE("CHUNK_BYTES", bad_common[i]);
        REFUSE("PIPELINE_DEPTH", bad_common[i]);
        REFUSE("REGCACHE_BYTES", bad_common[i]);
    }
    {
        char        *env[] = {"DPUSHIM_CHUNK_BYTES=65m", NULL};
        char         msgs[256];
        dps_config_t cfg;

        ck_assert_int_eq(dps_config_load(&cfg, env, msgs, sizeof(msgs), NULL),
                         1);
        ck_assert_ptr_nonnull(strstr(msgs, "from 4096 to 67108864"));
        ck_assert_uint_eq(cfg.chunk_bytes, 256 * 1024);
    }
}
END_TEST

START_TEST(ok_sched)
{
    ACCEPT_INT("AGENT_SCHED", "eager", DPS_SCHED_EAGER);
    ACCEPT_INT("AGENT_SCHED", "EAGER", DPS_SCHED_EAGER);
    ACCEPT_INT("AGENT_SCHED", "batch", DPS_SCHED_BATCH);
    ACCEPT_INT("AGENT_SCHED", "Batch", DPS_SCHED_BATCH);
    ACCEPT_INT("AGENT_SCHED", "poll", DPS_SCHED_POLL);
    ACCEPT_INT("AGENT_SCHED", "POLL", DPS_SCHED_POLL);
    ACCEPT_INT("AGENT_SCHED", "auto", DPS_SCHED_AUTO);
    ACCEPT_INT("AGENT_SCHED", "Auto", DPS_SCHED_AUTO);
}
END_TEST

START_TEST(ok_data_path)
{
    ACCEPT_INT("DATA_PATH", "direct", DPS_DATA_DIRECT);
    ACCEPT_INT("DATA_PATH", "Direct", DPS_DATA_DIRECT);
    ACCEPT_INT("DATA_PATH", "staged", DPS_DATA_STAGED);
    ACCEPT_INT("DATA_PATH", "STAGED", DPS_DATA_STAGED);
}
END_TEST

START_TEST(bad_data_path)
{
    static const char *const bad[] = {
        "cma",     "ucx",           "1",     "0",   "direct ",
        " staged", "direct,staged", "stage", "auto"};
    size_t i;

    for (i = 0; i < NCOMMON; i++) {
        REFUSE("DATA_PATH", bad_common[i]);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        REFUSE("DATA_PATH", bad[i]);
    }
}
END_TEST

START_TEST(bad_sched)
{
    static const char *const bad[] = {
        "fifo", "rr",          "idle",   "eager ",  " batch", "1",
        "0",    "eager,batch", "normal", "polling", "spin"};
    size_t i;

    for (i = 0; i < NCOMMON; i++) {
        REFUSE("AGENT_SCHED", bad_common[i]);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        REFUSE("AGENT_SCHED", bad[i]);
    }
}
END_TEST

START_TEST(cpulist)
{
    static const struct {
        const char *list;
        int         n;
    } ok[] = {{"0", 1},       {"1", 1},     {"0,2-3", 3},
              {"3-3", 1},     {"0-63", 64}, {"1,1,1", 1},
              {"0-3,2-5", 6}, {"1023", 1},  {"64,0", 2}};
    static const char *const bad[] = {
        "",     ",",      "0,",   ",0",  "a",   "1-",   "-1", "3-1",
        "1024", "0-1024", "1 ,2", "1;2", "0x1", "1--2", " 1", "1 "};
    unsigned long bits[1024 / (8 * sizeof(unsigned long))];
    const size_t  bpw = 8 * sizeof(unsigned long);
    size_t        i;

    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        ck_assert_msg(dps_cpulist_parse(ok[i].list, bits, 1024) == ok[i].n,
                      "'%s'", ok[i].list);
    }
    ck_assert_int_eq(dps_cpulist_parse("0,2-3", bits, 1024), 3);
    ck_assert_uint_eq(bits[0], 0xdul);
    ck_assert_int_eq(dps_cpulist_parse("64,0", bits, 1024), 2);
    ck_assert_uint_eq(bits[0], 1ul);
    ck_assert_uint_eq(bits[64 / bpw] & (1ul << (64 % bpw)), 1ul << (64 % bpw));
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(dps_cpulist_parse(bad[i], bits, 1024) == -1, "'%s'",
                      bad[i]);
        if (bad[i][0] != '\0') {
            REFUSE("AGENT_CPUS", bad[i]);
        }
    }
    ck_assert_int_eq(dps_cpulist_parse("2", bits, 2), -1);
}
END_TEST

/* One value parsed alone: DPS_OK, or DPS_ERR_INVALID with *out left
 * as it was. */
START_TEST(parse_value_codes)
{
    uint64_t u = 7;
    unsigned n = 7;
    int      v = 7;

    ck_assert_int_eq(dps_config_parse_value(DPS_CFG_BOOL, "on", &v), DPS_OK);
    ck_assert_int_eq(v, 1);
    ck_assert_int_eq(dps_config_parse_value(DPS_CFG_BOOL, "maybe", &v),
                     DPS_ERR_INVALID);
    ck_assert_int_eq(v, 1);
    ck_assert_int_eq(dps_config_parse_value(DPS_CFG_SIZE, "2k", &u), DPS_OK);
    ck_assert_uint_eq(u, 2048);
    ck_assert_int_eq(dps_config_parse_value(DPS_CFG_SIZE, "2x", &u),
                     DPS_ERR_INVALID);
    ck_assert_int_eq(
        dps_config_parse_value(DPS_CFG_THRESHOLD, "18446744073709551615", &u),
        DPS_ERR_INVALID);
    ck_assert_uint_eq(u, 2048);
    ck_assert_int_eq(dps_config_parse_value(DPS_CFG_UINT, "1000001", &n),
                     DPS_ERR_INVALID);
    ck_assert_uint_eq(n, 7);
    ck_assert_int_eq(dps_config_parse_value(DPS_CFG_SCHED, "later", &v),
                     DPS_ERR_INVALID);
    ck_assert_int_eq(dps_config_parse_value((dps_cfg_type_t)99, "1", &v),
                     DPS_ERR_INVALID);
}
END_TEST

START_TEST(bad_log)
{
    static const char *const bad[] = {"trace",  "warning", "err",   "1",
                                      "0",      "warn ",   " warn", "errors",
                                      "debug2", "none"};
    size_t                   i;

    for (i = 0; i < NCOMMON; i++) {
        REFUSE("LOG", bad_common[i]);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        REFUSE("LOG", bad[i]);
    }
}
END_TEST

/* A path of 4096 or more characters does not fit in cfg.agent. */
START_TEST(bad_agent)
{
    static const size_t lens[] = {4096, 4097, 10000, 100000};
    size_t              i;

    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        char *v = malloc(lens[i] + 1);

        ck_assert_ptr_nonnull(v);
        memset(v, 'q', lens[i]);
        v[lens[i]] = '\0';
        REFUSE("AGENT", v);
        free(v);
    }
}
END_TEST

/* Each invalid value is counted and named on a line of its own. */
START_TEST(bad_several)
{
    char *env[] = {"DPUSHIM_OFFLOAD=maybe",    "DPUSHIM_IALLTOALL=0",
                   "DPUSHIM_MIN_BYTES=12x",    "PATH=/bin",
                   "DPUSHIM_RANKS_PER_DPU=-1", "DPUSHIM_LOG=loud",
                   "DPUSHIM_STATS=",           NULL};
    static const char *const names[] = {"DPUSHIM_OFFLOAD", "DPUSHIM_MIN_BYTES",
                                        "DPUSHIM_RANKS_PER_DPU", "DPUSHIM_LOG",
                                        "DPUSHIM_STATS"};
    dps_config_t             cfg, d;
    char                     msgs[MSGS_LEN];
    const char              *p;
    int                      nunk = -1, lines = 0;
    size_t                   i;

    defaults(&d);
    ck_assert_int_eq(dps_config_load(&cfg, env, msgs, sizeof(msgs), &nunk), 5);
    ck_assert_int_eq(nunk, 0);
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        ck_assert_msg(strstr(msgs, names[i]) != NULL, "%s not in '%s'",
                      names[i], msgs);
    }
    ck_assert(strstr(msgs, "DPUSHIM_IALLTOALL") == NULL);
    for (p = msgs; *p; p++) {
        lines += (*p == '\n');
    }
    ck_assert_int_eq(lines, 5);
    /* The valid one applies, the others keep their defaults. */
    ck_assert_int_eq(cfg.coll[0], 0);
    cfg.coll[0] = d.coll[0];
    ck_assert(memcmp(&cfg, &d, sizeof(d)) == 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Unknown and foreign variables                                      */
/* ------------------------------------------------------------------ */

START_TEST(unk_named)
{
    static const char *const unk[] = {
        "DPUSHIM_FOO=1",          "DPUSHIM_OFFLOADX=0",      "DPUSHIM_=1",
        "DPUSHIM_MIN=1k",         "DPUSHIM_LOG_LEVEL=debug", "DPUSHIM_AGENTS=",
        "DPUSHIM_FOO_BAR_BAZ=yes"};
    size_t i;

    for (i = 0; i < sizeof(unk) / sizeof(unk[0]); i++) {
        char         name[64], msgs[MSGS_LEN];
        dps_config_t cfg;
        int          rc, nunk = -1;

        snprintf(name, sizeof(name), "%.*s",
                 (int)(strchr(unk[i], '=') - unk[i]), unk[i]);
        rc = load1(unk[i], &cfg, msgs, sizeof(msgs), &nunk);
        ck_assert_msg(rc == 0, "%s counted as invalid", unk[i]);
        ck_assert_msg(nunk == 1, "%s: nunknown %d", unk[i], nunk);
        ck_assert_msg(strstr(msgs, name) != NULL, "'%s' does not name %s",
                      msgs, name);
        ck_assert(same_but(&cfg, NULL));
    }
}
END_TEST

START_TEST(unk_counted)
{
    char        *env[] = {"DPUSHIM_FOO=1",
                          "HOME=/root",
                          "DPUSHIM_BAR=2",
                          "DPUSHIM_STATS=1",
                          "DPUSHIM_BAZ=3",
                          "DPUSHIM_LOG=bogus",
                          NULL};
    dps_config_t cfg;
    char         msgs[MSGS_LEN];
    int          nunk = -1;

    ck_assert_int_eq(dps_config_load(&cfg, env, msgs, sizeof(msgs), &nunk), 1);
    ck_assert_int_eq(nunk, 3);
    ck_assert(strstr(msgs, "DPUSHIM_FOO") != NULL);
    ck_assert(strstr(msgs, "DPUSHIM_BAR") != NULL);
    ck_assert(strstr(msgs, "DPUSHIM_BAZ") != NULL);
    ck_assert(strstr(msgs, "DPUSHIM_LOG") != NULL);
    ck_assert_int_eq(cfg.stats, 1);
    /* nunknown may be NULL. */
    ck_assert_int_eq(dps_config_load(&cfg, env, msgs, sizeof(msgs), NULL), 1);
    ck_assert_int_eq(cfg.stats, 1);
}
END_TEST

/* Only names starting with DPUSHIM_ are looked at. */
START_TEST(unk_foreign_ignored)
{
    char        *env[] = {"PATH=/usr/bin:/bin",
                          "HOME=/root",
                          "DPUSHIMX=1",
                          "DPUSHIM=1",
                          "XDPUSHIM_OFFLOAD=0",
                          "MY_DPUSHIM_OFFLOAD=0",
                          "dpushim_offload=0",
                          "UCX_TLS=tcp",
                          "OMPI_MCA_x=DPUSHIM_OFFLOAD=0",
                          "=DPUSHIM_FOO",
                          "LD_PRELOAD=libdpushim.so",
                          NULL};
    dps_config_t cfg;
    char         msgs[MSGS_LEN];
    int          nunk = -1;

    memset(&cfg, 0x11, sizeof(cfg));
    ck_assert_int_eq(dps_config_load(&cfg, env, msgs, sizeof(msgs), &nunk), 0);
    ck_assert_int_eq(nunk, 0);
    ck_assert_str_eq(msgs, "");
    ck_assert(same_but(&cfg, NULL));
}
END_TEST

/* A very long unknown name is counted without overflowing anything. */
START_TEST(unk_long_name)
{
    size_t       n = 5000;
    char        *s = malloc(n + 16), msgs[MSGS_LEN];
    dps_config_t cfg;
    int          nunk = -1;

    ck_assert_ptr_nonnull(s);
    strcpy(s, DPS_ENV_PREFIX);
    memset(s + strlen(s), 'Z', n);
    strcpy(s + strlen(DPS_ENV_PREFIX) + n, "=1");
    ck_assert_int_eq(load1(s, &cfg, msgs, sizeof(msgs), &nunk), 0);
    ck_assert_int_eq(nunk, 1);
    ck_assert(strstr(msgs, "DPUSHIM_ZZZZ") != NULL);
    ck_assert(same_but(&cfg, NULL));
    free(s);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The message buffer                                                 */
/* ------------------------------------------------------------------ */

START_TEST(msgs_null)
{
    char        *env[] = {"DPUSHIM_MIN_BYTES=abc", "DPUSHIM_FOO=1",
                          "DPUSHIM_IBCAST=0", NULL};
    dps_config_t cfg;
    int          nunk = -1;

    ck_assert_int_eq(dps_config_load(&cfg, env, NULL, 0, &nunk), 1);
    ck_assert_int_eq(nunk, 1);
    ck_assert_int_eq(dps_config_load(&cfg, env, NULL, 100, &nunk), 1);
    ck_assert_int_eq(nunk, 1);
    ck_assert_int_eq(cfg.coll[1], 0);
}
END_TEST

/* Small buffers are filled and terminated, never overrun. */
START_TEST(msgs_tiny)
{
    char *env[] = {"DPUSHIM_MIN_BYTES=abc", "DPUSHIM_FOO=1",   "DPUSHIM_LOG=x",
                   "DPUSHIM_BAR=2",         "DPUSHIM_STATS=9", NULL};
    static const size_t sizes[] = {0, 1, 2, 7, 16, 40, 100};
    char                buf[128 + 16];
    dps_config_t        cfg;
    size_t              i, k;
    int                 nunk;

    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        memset(buf, '#', sizeof(buf));
        nunk = -1;
        ck_assert_int_eq(dps_config_load(&cfg, env, buf, sizes[i], &nunk), 3);
        ck_assert_int_eq(nunk, 2);
        if (sizes[i] > 0) {
            ck_assert_uint_lt(strnlen(buf, sizes[i]), sizes[i]);
        }
        for (k = sizes[i]; k < sizeof(buf); k++) {
            ck_assert_msg(buf[k] == '#', "size %zu: byte %zu written",
                          sizes[i], k);
        }
    }
}
END_TEST

/* Many messages into a moderate buffer. */
START_TEST(msgs_many)
{
    enum { N = 300 };
    char        *env[N + 1], msgs[512 + 8];
    dps_config_t cfg;
    int          i, nunk = -1;

    for (i = 0; i < N; i++) {
        env[i] = (i % 2) ? "DPUSHIM_MIN_BYTES=1kk" : "DPUSHIM_NOPE=1";
    }
    env[N] = NULL;
    memset(msgs, '#', sizeof(msgs));
    ck_assert_int_eq(dps_config_load(&cfg, env, msgs, 512, &nunk), N / 2);
    ck_assert_int_eq(nunk, N / 2);
    ck_assert_uint_lt(strnlen(msgs, 512), 512);
    for (i = 512; i < (int)sizeof(msgs); i++) {
        ck_assert_int_eq(msgs[i], '#');
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* Help output                                                        */
/* ------------------------------------------------------------------ */

static char *print_to_string(int markdown)
{
    char  *text = NULL;
    size_t size = 0;
    FILE  *f = open_memstream(&text, &size);

    ck_assert_ptr_nonnull(f);
    dps_config_print(f, markdown);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_ptr_nonnull(text);
    return text;
}

START_TEST(print_markdown)
{
    const dps_cfg_entry_t *e;
    char                  *text = print_to_string(1), *p;
    int                    rows = 0, lines = 0;

    for (e = dps_config_table; e->name != NULL; e++) {
        char full[64];

        snprintf(full, sizeof(full), "`%s%s`", DPS_ENV_PREFIX, e->name);
        ck_assert_msg(strstr(text, full) != NULL, "%s missing", full);
        ck_assert_msg(strstr(text, e->help) != NULL, "help of %s missing",
                      e->name);
        rows++;
    }
    for (p = text; *p; p++) {
        lines += (*p == '\n');
    }
    ck_assert_int_eq(lines, rows + 2);
    ck_assert(strncmp(text, "| variable |", 12) == 0);
    free(text);
}
END_TEST

START_TEST(print_text)
{
    const dps_cfg_entry_t *e;
    char                  *text = print_to_string(0);

    for (e = dps_config_table; e->name != NULL; e++) {
        char full[64];

        snprintf(full, sizeof(full), "%s%s", DPS_ENV_PREFIX, e->name);
        ck_assert_msg(strstr(text, full) != NULL, "%s missing", full);
    }
    free(text);
}
END_TEST

START_TEST(print_tmpfile)
{
    const dps_cfg_entry_t *e;
    FILE                  *f = tmpfile();
    char                   text[16384];
    size_t                 n;

    ck_assert_ptr_nonnull(f);
    dps_config_print(f, 1);
    rewind(f);
    n = fread(text, 1, sizeof(text) - 1, f);
    text[n] = '\0';
    fclose(f);
    ck_assert_uint_gt(n, 0);
    for (e = dps_config_table; e->name != NULL; e++) {
        char full[64];

        snprintf(full, sizeof(full), "%s%s", DPS_ENV_PREFIX, e->name);
        ck_assert_msg(strstr(text, full) != NULL, "%s missing", full);
    }
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc;

    tc = tcase_create("defaults");
    tcase_add_test(tc, def_literal);
    tcase_add_test(tc, def_from_table);
    tcase_add_test(tc, def_null_env);
    tcase_add_test(tc, def_table_sane);
    suite_add_tcase(s, tc);

    tc = tcase_create("accepted");
    tcase_add_test(tc, ok_bool);
    tcase_add_test(tc, ok_stats);
    tcase_add_test(tc, ok_size);
    tcase_add_test(tc, ok_uint);
    tcase_add_test(tc, ok_log);
    tcase_add_test(tc, ok_transport);
    tcase_add_test(tc, ok_autobool);
    tcase_add_test(tc, ok_sched);
    tcase_add_test(tc, ok_data_path);
    tcase_add_test(tc, ok_ranges);
    tcase_add_test(tc, ok_agent);
    tcase_add_test(tc, ok_several);
    suite_add_tcase(s, tc);

    tc = tcase_create("invalid");
    tcase_add_test(tc, bad_bool);
    tcase_add_test(tc, bad_size);
    tcase_add_test(tc, bad_uint);
    tcase_add_test(tc, bad_log);
    tcase_add_test(tc, bad_transport);
    tcase_add_test(tc, bad_autobool);
    tcase_add_test(tc, bad_sched);
    tcase_add_test(tc, bad_data_path);
    tcase_add_test(tc, bad_ranges);
    tcase_add_test(tc, cpulist);
    tcase_add_test(tc, parse_value_codes);
    tcase_add_test(tc, bad_agent);
    tcase_add_test(tc, bad_several);
    suite_add_tcase(s, tc);

    tc = tcase_create("unknown");
    tcase_add_test(tc, unk_named);
    tcase_add_test(tc, unk_counted);
    tcase_add_test(tc, unk_foreign_ignored);
    tcase_add_test(tc, unk_long_name);
    suite_add_tcase(s, tc);

    tc = tcase_create("messages");
    tcase_add_test(tc, msgs_null);
    tcase_add_test(tc, msgs_tiny);
    tcase_add_test(tc, msgs_many);
    suite_add_tcase(s, tc);

    tc = tcase_create("print");
    tcase_add_test(tc, print_markdown);
    tcase_add_test(tc, print_text);
    tcase_add_test(tc, print_tmpfile);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(config_suite());
    int      failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
