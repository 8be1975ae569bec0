/* SPDX-License-Identifier: BSD-3-Clause */
/* DPUSHIM_* variables: the table, parsing and help text. */
#include "common/dps_config.h"
#include "common/dps_log.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CFG_OFF(_f) offsetof(dps_config_t, _f)

const dps_cfg_entry_t dps_config_table[] = {
    {"OFFLOAD", DPS_CFG_BOOL, "1",
     "Master switch: 0 runs every call on stock MPI (no agent is started).",
     CFG_OFF(offload), 0, 0},
/* One switch per row of DPS_COLLS, laid out by hand. */
/* clang-format off */
#define COLL_SWITCH(ID, name, ...)                                          \
    {"I" #ID, DPS_CFG_BOOL, "1", "Offload MPI_I" #name ".",                 \
     CFG_OFF(coll[DPS_COLL_##ID - 1]), 0, 0},
#define PERS_SWITCH(ID, name, Name, ...)                                    \
    {#ID "_INIT", DPS_CFG_BOOL, "1",                                        \
     "Offload MPI_" #Name "_init (MPIX_" #Name "_init in Open MPI 4.1), "   \
     "started with MPI_Start.", CFG_OFF(coll[DPS_COLL_##ID##_INIT - 1]), 0, \
     0},
    DPS_COLLS(COLL_SWITCH)
    {"GROUP", DPS_CFG_BOOL, "1",
     "Offload pattern groups (dpushim.h); 0: dpushim_group_begin returns "
     "DPUSHIM_ERR_OFF.", CFG_OFF(coll[DPS_COLL_GROUP - 1]), 0, 0},
    DPS_COLLS(PERS_SWITCH)
    {"GROUP_INIT", DPS_CFG_BOOL, "1",
     "Offload persistent pattern groups (dpushim_group_end_persistent); 0: "
     "it returns DPUSHIM_ERR_OFF.", CFG_OFF(coll[DPS_COLL_GROUP_INIT - 1]),
     0, 0},
#undef COLL_SWITCH
#undef PERS_SWITCH
    /* clang-format on */
    {"MIN_BYTES", DPS_CFG_THRESHOLD, "auto",
     "Offload only messages of at least this many bytes, measured where "
     "every rank knows the size: one block for Igather, Iscatter, "
     "Iallgather, Ialltoall and Ireduce_scatter_block, the mean block for "
     "Iallgatherv and Ireduce_scatter, the whole message or vector for "
     "Ibcast, Ireduce, Iallreduce, Iscan and Iexscan (and their "
     "persistent forms); smaller ones go to stock MPI. Ibarrier, "
     "Igatherv, Iscatterv, Ialltoallv, Ialltoallw, the neighbourhood "
     "collectives and pattern groups, whose sizes differ by rank, are "
     "offloaded at any size unless the value is auto resolved to no "
     "offload. Suffixes k, m, g (powers of "
     "1024). auto: "
     "256k where the agents have a CPU no rank is bound to (or fewer "
     "ranks than CPUs, or they listen on DPUs: DPUSHIM_AGENT_MAP or the "
     "cluster's map): from there on offload beat stock MPI when the "
     "ranks' cores had spare cycles; and no offload at all where the "
     "agents would share every core with ranks, since a host whose every "
     "core computes pays for offload at every size (docs/results.md). "
     "Set 256k where the ranks leave their cores idle (GPU "
     "kernels, I/O).",
     CFG_OFF(min_bytes), 0, 0},
    {"RANKS_PER_DPU", DPS_CFG_UINT, "0",
     "Ranks served by one agent (emulated DPU); 0 means one agent per host.",
     CFG_OFF(ranks_per_dpu), 0, 0},
    {"STATS", DPS_CFG_STATS, "0",
     "Print job-wide offload statistics from rank 0 at MPI_Finalize: 1, "
     "for each collective called, a line \"dpushim: COLL offloaded=N "
     "fallback=N bytes=N\" (calls summed over ranks) and lines on the "
     "registration cache, DMA engines and agents; 2, also, under each "
     "collective with fallbacks, \"dpushim: COLL fallback: type=N op=N "
     "small=N comm=N off=N other=N\": why they went to stock MPI (a "
     "datatype the agents do not reduce; an operation they do not apply: "
     "user-defined, or not MPI's on the datatype; below DPUSHIM_MIN_BYTES; "
     "an intercommunicator; offload or the collective switched off; "
     "anything else, such as arguments MPI refuses); and a line for each "
     "agent, \"dpushim: agent I of HOST (AGENT): ranks=R offloaded=N "
     "cpu_ms=T\": the host its ranks run on, the agent (pid, or address "
     "and the host it runs on), the calls its ranks handed it.",
     CFG_OFF(stats), 0, 0},
    {"LOG", DPS_CFG_LOGLEVEL, "warn", "Log level: error, warn, info or debug.",
     CFG_OFF(log_level), 0, 0},
    {"AGENT", DPS_CFG_PATH, "",
     "Path of the dpu_agent binary; default: dpu_agent beside "
     "libdpushim.so.",
     CFG_OFF(agent), 0, 0},
    {"AGENT_MAP", DPS_CFG_PATH, "",
     "Agent map file: each host's ranks connect to the listening agents "
     "(dpu_agent --service or --listen, e.g. on the host's DPU) its line "
     "names, instead of starting agents. Format: lines HOST ADDR:PORT "
     "[ADDR:PORT...], HOST a host name or *, {host} and {short} in an "
     "address standing for the host's name and short name; see \"Running "
     "on BlueField DPUs\". Unset: " DPS_SITE_AGENT_MAP " if it exists "
     "(the cluster's agent services), else agents are started.",
     CFG_OFF(agent_map), 0, 0},
    {"AUTH", DPS_CFG_AUTH, "auto",
     "How a job proves its user to listening agents: munge (a MUNGE "
     "credential bound to the connection, for dpu_agent --service), secret "
     "(a secret file in DPUSHIM_SECRET_DIR, for a user's own dpu_agent "
     "--listen), auto (munge with the cluster's " DPS_SITE_AGENT_MAP ", "
     "secret with DPUSHIM_AGENT_MAP). Never falls back from one to the "
     "other.",
     CFG_OFF(auth), 0, 0},
    {"MUNGE_SOCKET", DPS_CFG_PATH, "",
     "munged's socket for DPUSHIM_AUTH=munge; default: MUNGE's own "
     "(/run/munge/munge.socket.2 on Debian).",
     CFG_OFF(munge_socket), 0, 0},
    {"SECRET_DIR", DPS_CFG_PATH, "",
     "With DPUSHIM_AGENT_MAP: directory where rank 0 writes the job's "
     "secret (JOB.key, mode 0600) for the agents to check, and removes it "
     "once they are connected; it must be one the agents read too. "
     "Default: ${TMPDIR:-/tmp}/dpushim-UID.",
     CFG_OFF(secret_dir), 0, 0},
    {"TRANSPORT", DPS_CFG_TRANSPORT, "auto",
     "How agents move data: auto copies with CMA the data of the ranks "
     "an agent has verified (it read each one's random token back at its "
     "pid: a shared node name is not enough, e.g. for an agent on a DPU "
     "or in another PID namespace), reads and writes by DMA through the "
     "grant of its ranks it cannot verify (an agent on a DPU: each rank "
     "sends it its memory's descriptor), asks another agent for the data "
     "of that agent's ranks (between hosts), and uses UCX get/put, "
     "served by the rank's own UCX worker, only where nothing else "
     "reaches a rank; ucx (on the ranks and, for listening agents, in "
     "the agents' environment) uses UCX get/put for every rank, as on "
     "RDMA hardware the NIC would read and write host memory with the "
     "ranks' keys (here UCX 1.13 emulates it over TCP and shared memory "
     "with messages the ranks' progress threads handle, "
     "DPUSHIM_PROGRESS_THREAD).",
     CFG_OFF(transport), 0, 0},
    {"DATA_PATH", DPS_CFG_DATAPATH, "direct",
     "How the bytes of ranks on one host move: direct, once, by the "
     "destination rank's emulated DMA engine (a thread of the rank that "
     "reads the source rank's memory with process_vm_readv at its agent's "
     "command, as a DPU's DMA engine would); staged, by the agent through "
     "its staging buffers (two copies, as a DPU staging through its own "
     "memory). Ranks on other hosts are always staged (through their "
     "agents).",
     CFG_OFF(data_path), 0, 0},
    {"PROGRESS_THREAD", DPS_CFG_AUTOBOOL, "auto",
     "A thread in each rank that progresses the rank's UCX worker while "
     "the application is outside MPI, so that an agent reaching the "
     "rank's memory with UCX get/put finishes collectives while ranks "
     "compute or sleep: over TCP and shared memory UCX 1.13 emulates "
     "get/put with messages the rank's worker must handle. It sleeps on "
     "the worker's event file descriptor, waking only for UCX's traffic "
     "(and every 0.1 s while the rank's collectives run, every 1 s "
     "otherwise), so it costs nothing while idle, and leaves the worker "
     "to the rank while the rank waits in MPI. 1 always, 0 never (such "
     "collectives then move only while ranks call MPI); auto: where the "
     "rank's own agent reaches its memory with UCX get/put "
     "(DPUSHIM_TRANSPORT=ucx, or neither CMA nor the rank's grant reaches "
     "it); agents of other hosts never do, they ask the rank's agent.",
     CFG_OFF(progress_thread), 0, 0},
    {"AGENT_CPUS", DPS_CFG_CPULIST, "",
     "CPUs the agents run on, as a list like 0,2-3 (e.g. cores kept free "
     "of ranks to emulate a DPU); empty: the union of the CPUs their "
     "ranks may use.",
     CFG_OFF(agent_cpus), 0, 0},
    {"AGENT_SCHED", DPS_CFG_SCHED, "auto",
     "How an agent waits for work: poll never sleeps (an agent with a "
     "core of its own, as on a DPU); eager sleeps when idle and runs at "
     "nice -10 (where the user may raise priority; else at 0) so that its "
     "wake-up preempts computation; batch sleeps and runs as "
     "SCHED_BATCH, on idle cores and by fair share only. auto: poll where "
     "the agent has a CPU no rank is bound to (or its ranks fewer CPUs "
     "than it may use) and for a listening agent on a BlueField's Arm "
     "cores; eager where it shares every core with ranks, and for a "
     "listening agent anywhere else (a host, an emulated DPU).",
     CFG_OFF(agent_sched), 0, 0},
    {"REGCACHE_BYTES", DPS_CFG_SIZE, "1g",
     "Registration cache of each rank: buffers are registered with UCX "
     "once and their keys sent to the agent once, while they stay mapped; "
     "least recently used registrations are dropped above this many "
     "bytes. 0 registers every buffer for each call (no cache).",
     CFG_OFF(regcache_bytes), 0, 0},
    {"CHUNK_BYTES", DPS_CFG_SIZE, "256k",
     "Size of the agent's staging chunks: a block larger than this moves "
     "in pieces, read into a chunk and written out. 4k to 64m.",
     CFG_OFF(chunk_bytes), 4096, 64ull << 20},
    {"PIPELINE_DEPTH", DPS_CFG_UINT, "4",
     "Chunks an agent moves at once: with CMA, copy threads, each reading "
     "one chunk while another writes; with UCX, gets and puts in flight. "
     "1 to 64.",
     CFG_OFF(pipeline_depth), 1, 64},
    {"PUSH", DPS_CFG_BOOL, "1",
     "Between ranks of different nodes: 1, the agent of the sending rank "
     "pushes its bytes to the receiving rank's agent unasked, everything "
     "it has for one agent in one network message per pass (one trip a "
     "chunk, one message per node pair), within the room that agent "
     "grants it (CHUNK_BYTES x PIPELINE_DEPTH, given back as the bytes "
     "are written; a transfer that finds none is fetched); 0, the "
     "receiver's agent fetches each chunk (FETCH and its answer: two "
     "trips, and a message per rank pair). The same on every rank; the "
     "job's agents follow the ranks.",
     CFG_OFF(push), 0, 0},
    {"REQUIRE", DPS_CFG_BOOL, "0",
     "1: if offload cannot be set up at MPI_Init (a bad DPUSHIM_* value, "
     "no agent, offload switched off or not worth it by "
     "DPUSHIM_MIN_BYTES=auto), abort the job with the reason instead of "
     "running it on stock MPI. A value that is not a boolean counts as 1.",
     CFG_OFF(require), 0, 0},
    {"AGENT_TIMEOUT", DPS_CFG_UINT, "10",
     "Seconds within which a failed agent is noticed: one that died at once "
     "(checked every 0.1 s), one that stopped answering after this long. "
     "Its pending collectives are then redone by stock MPI or fail with an "
     "error, and later ones run on stock MPI; a rank whose takeover is not "
     "done this long after it saw the failure (a rank it needs is blocked "
     "in a blocking collective, say) aborts the job, naming the agent and "
     "what is lost. 1 to 3600.",
     CFG_OFF(agent_timeout), 1, 3600},
    {NULL, DPS_CFG_BOOL, NULL, NULL, 0, 0, 0}};

static int parse_bool(const char *v, int *out)
{
    static const char *yes[] = {"1", "y", "yes", "on", "true"};
    static const char *no[] = {"0", "n", "no", "off", "false"};
    size_t             i;

    for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (!strcasecmp(v, yes[i])) {
            *out = 1;
            return DPS_OK;
        }
        if (!strcasecmp(v, no[i])) {
            *out = 0;
            return DPS_OK;
        }
    }
    return DPS_ERR_INVALID;
}

static int parse_u64(const char *v, int allow_suffix, uint64_t *out)
{
    unsigned long long x;
    uint64_t           mult = 1;
    char              *end;

    if (!isdigit((unsigned char)v[0])) {
        return DPS_ERR_INVALID; /* rejects "", "-1", " 1" */
    }
    errno = 0;
    x = strtoull(v, &end, 10);
    if (errno != 0) {
        return DPS_ERR_INVALID;
    }
    if (*end != '\0') {
        if (!allow_suffix || end[1] != '\0') {
            return DPS_ERR_INVALID;
        }
        switch (tolower((unsigned char)*end)) {
        case 'k': mult = 1ull << 10; break;
        case 'm': mult = 1ull << 20; break;
        case 'g': mult = 1ull << 30; break;
        default: return DPS_ERR_INVALID;
        }
    }
    if (x > UINT64_MAX / mult) {
        return DPS_ERR_INVALID;
    }
    *out = (uint64_t)x * mult;
    return DPS_OK;
}

/* The words an enumerated variable takes, and their values. */
typedef struct cfg_word {
    const char *word;
    int         value;
} cfg_word_t;

#define CFG_NWORDS(_w) (sizeof(_w) / sizeof((_w)[0]))

static const cfg_word_t cfg_levels[] = {{"error", DPS_LOG_ERROR},
                                        {"warn", DPS_LOG_WARN},
                                        {"info", DPS_LOG_INFO},
                                        {"debug", DPS_LOG_DEBUG}};
static const cfg_word_t cfg_transports[] = {{"auto", DPS_TRANSPORT_AUTO},
                                            {"ucx", DPS_TRANSPORT_UCX}};
static const cfg_word_t cfg_scheds[] = {{"eager", DPS_SCHED_EAGER},
                                        {"batch", DPS_SCHED_BATCH},
                                        {"poll", DPS_SCHED_POLL},
                                        {"auto", DPS_SCHED_AUTO}};
static const cfg_word_t cfg_datapaths[] = {{"direct", DPS_DATA_DIRECT},
                                           {"staged", DPS_DATA_STAGED}};
static const cfg_word_t cfg_auths[] = {{"auto", DPS_AUTH_AUTO},
                                       {"munge", DPS_AUTH_MUNGE},
                                       {"secret", DPS_AUTH_SECRET}};

/* v is one of the n words (case ignored): its value in *out. DPS_OK, or
 * DPS_ERR_INVALID. */
static int parse_word(const char *v, const cfg_word_t *words, size_t n,
                      int *out)
{
    for (size_t i = 0; i < n; i++) {
        if (!strcasecmp(v, words[i].word)) {
            *out = words[i].value;
            return DPS_OK;
        }
    }
    return DPS_ERR_INVALID;
}

/* DPUSHIM_MIN_BYTES: "auto" or a size, which may not be the value that
 * stands for auto. */
static int parse_threshold(const char *v, uint64_t *out)
{
    uint64_t u;

    if (!strcasecmp(v, "auto")) {
        *out = DPS_MIN_BYTES_AUTO;
        return DPS_OK;
    }
    if (parse_u64(v, 1, &u) != DPS_OK || u == DPS_MIN_BYTES_AUTO) {
        return DPS_ERR_INVALID;
    }
    *out = u;
    return DPS_OK;
}

/* A string that fits in size bytes (the terminator included), copied. */
static int parse_string(const char *v, size_t size, char *out)
{
    if (strlen(v) >= size) {
        return DPS_ERR_INVALID;
    }
    strcpy(out, v);
    return DPS_OK;
}

/* A CPU list such as 0,2-3 (or nothing), kept as written. */
static int parse_cpulist(const char *v, char *out)
{
    unsigned long bits[1024 / (8 * sizeof(unsigned long))];

    if (strlen(v) >= sizeof(((dps_config_t *)0)->agent_cpus) ||
        (v[0] != '\0' && dps_cpulist_parse(v, bits, 1024) <= 0)) {
        return DPS_ERR_INVALID;
    }
    strcpy(out, v);
    return DPS_OK;
}

int dps_config_parse_value(dps_cfg_type_t type, const char *v, void *out)
{
    uint64_t u;

    switch (type) {
    case DPS_CFG_BOOL: return parse_bool(v, out);
    case DPS_CFG_AUTOBOOL:
        if (!strcasecmp(v, "auto")) {
            *(int *)out = DPS_AUTOBOOL_AUTO;
            return DPS_OK;
        }
        return parse_bool(v, out);
    case DPS_CFG_STATS:
        if (!strcmp(v, "2")) {
            *(int *)out = 2;
            return DPS_OK;
        }
        return parse_bool(v, out);
    case DPS_CFG_SIZE: return parse_u64(v, 1, out);
    case DPS_CFG_THRESHOLD: return parse_threshold(v, out);
    case DPS_CFG_UINT:
        if (parse_u64(v, 0, &u) != DPS_OK || u > 1000000) {
            return DPS_ERR_INVALID;
        }
        *(unsigned *)out = (unsigned)u;
        return DPS_OK;
    case DPS_CFG_LOGLEVEL:
        return parse_word(v, cfg_levels, CFG_NWORDS(cfg_levels), out);
    case DPS_CFG_TRANSPORT:
        return parse_word(v, cfg_transports, CFG_NWORDS(cfg_transports), out);
    case DPS_CFG_SCHED:
        return parse_word(v, cfg_scheds, CFG_NWORDS(cfg_scheds), out);
    case DPS_CFG_DATAPATH:
        return parse_word(v, cfg_datapaths, CFG_NWORDS(cfg_datapaths), out);
    case DPS_CFG_AUTH:
        return parse_word(v, cfg_auths, CFG_NWORDS(cfg_auths), out);
    case DPS_CFG_CPULIST: return parse_cpulist(v, out);
    case DPS_CFG_PATH:
        return parse_string(v, sizeof(((dps_config_t *)0)->agent), out);
    }
    return DPS_ERR_INVALID;
}

static void msg_append(char *msgs, size_t len, const char *fmt, const char *a,
                       const char *b)
{
    size_t used;

    if (msgs == NULL || len == 0) {
        return;
    }
    used = strlen(msgs);
    if (used + 1 < len) {
        snprintf(msgs + used, len - used, fmt, a, b);
    }
}

static const char *type_hint(dps_cfg_type_t type)
{
    switch (type) {
    case DPS_CFG_BOOL: return "0/1, yes/no, on/off or true/false";
    case DPS_CFG_STATS:
        return "0, 1 or 2 (no/yes, off/on, false/true "
               "for 0/1)";
    case DPS_CFG_AUTOBOOL: return "auto, 0/1, yes/no, on/off or true/false";
    case DPS_CFG_SIZE: return "a byte count, optionally with k, m or g";
    case DPS_CFG_THRESHOLD:
        return "auto, or a byte count below 2^64-1, "
               "optionally with k, m or g";
    case DPS_CFG_UINT: return "a whole number from 0 to 1000000";
    case DPS_CFG_LOGLEVEL: return "error, warn, info or debug";
    case DPS_CFG_PATH: return "a path shorter than 4096 bytes";
    case DPS_CFG_TRANSPORT: return "auto or ucx";
    case DPS_CFG_SCHED: return "auto, poll, eager or batch";
    case DPS_CFG_DATAPATH: return "direct or staged";
    case DPS_CFG_CPULIST: return "a CPU list such as 0,2-3";
    case DPS_CFG_AUTH: return "auto, munge or secret";
    }
    return "?";
}

int dps_cpulist_parse(const char *list, unsigned long *out, int max_cpus)
{
    const size_t bpw = 8 * sizeof(unsigned long);
    const char  *p = list;
    int          n = 0;

    memset(out, 0, ((size_t)max_cpus + bpw - 1) / bpw * sizeof(*out));
    for (;;) {
        unsigned long lo, hi, c;
        char         *end;

        if (!isdigit((unsigned char)*p)) {
            return -1;
        }
        lo = strtoul(p, &end, 10);
        hi = lo;
        if (*end == '-') {
            p = end + 1;
            if (!isdigit((unsigned char)*p)) {
                return -1;
            }
            hi = strtoul(p, &end, 10);
        }
        if (hi < lo || hi >= (unsigned long)max_cpus) {
            return -1;
        }
        for (c = lo; c <= hi; c++) {
            if (!(out[c / bpw] & (1ul << (c % bpw)))) {
                out[c / bpw] |= 1ul << (c % bpw);
                n++;
            }
        }
        p = end;
        if (*p != ',') {
            break;
        }
        p++; /* a number must follow */
    }
    return (*p == '\0') ? n : -1;
}

/* Within the entry's range, if it has one. */
static int in_range(const dps_cfg_entry_t *e, const void *field)
{
    uint64_t v;

    if (e->max == 0) {
        return 1;
    }
    if (e->type == DPS_CFG_SIZE) {
        memcpy(&v, field, sizeof(v));
    } else if (e->type == DPS_CFG_UINT) {
        unsigned u;

        memcpy(&u, field, sizeof(u));
        v = u;
    } else {
        return 1;
    }
    return v >= e->min && v <= e->max;
}

int dps_config_load(dps_config_t *cfg, char *const *envp, char *msgs,
                    size_t msgs_len, int *nunknown)
{
    const size_t           plen = strlen(DPS_ENV_PREFIX);
    const dps_cfg_entry_t *e;
    int                    nbad = 0, nunk = 0;
    char *const           *p;

    memset(cfg, 0, sizeof(*cfg));
    if (msgs != NULL && msgs_len > 0) {
        msgs[0] = '\0';
    }
    for (e = dps_config_table; e->name != NULL; e++) {
        if (dps_config_parse_value(e->type, e->deflt,
                                   (char *)cfg + e->offset) != DPS_OK) {
            abort(); /* a default that does not parse is a bug */
        }
    }
    for (p = envp; p != NULL && *p != NULL; p++) {
        const char *name = *p, *eq = strchr(name, '=');
        char        var[128];

        if (eq == NULL || strncmp(name, DPS_ENV_PREFIX, plen) != 0) {
            continue;
        }
        snprintf(var, sizeof(var), "%.*s", (int)(eq - name), name);
        for (e = dps_config_table; e->name != NULL; e++) {
            if (!strcmp(var + plen, e->name)) {
                break;
            }
        }
        if (e->name == NULL) {
            msg_append(msgs, msgs_len, "unknown variable %s ignored%s\n", var,
                       "");
            nunk++;
            continue;
        }
        if (dps_config_parse_value(e->type, eq + 1, (char *)cfg + e->offset) !=
            DPS_OK) {
            char what[600];

            snprintf(what, sizeof(what), "%s='%.400s'", var, eq + 1);
            msg_append(msgs, msgs_len, "invalid value %s: expected %s\n", what,
                       type_hint(e->type));
            nbad++;
        } else if (!in_range(e, (char *)cfg + e->offset)) {
            char what[600], range[128];

            snprintf(what, sizeof(what), "%s='%.400s'", var, eq + 1);
            snprintf(range, sizeof(range), "%s, from %llu to %llu",
                     type_hint(e->type), (unsigned long long)e->min,
                     (unsigned long long)e->max);
            msg_append(msgs, msgs_len, "invalid value %s: expected %s\n", what,
                       range);
            dps_config_parse_value(e->type, e->deflt, (char *)cfg + e->offset);
            nbad++;
        }
    }
    if (nunknown != NULL) {
        *nunknown = nunk;
    }
    return nbad;
}

void dps_config_print(FILE *out, int markdown)
{
    const dps_cfg_entry_t *e;

    if (markdown) {
        fprintf(out, "| variable | default | meaning |\n");
        fprintf(out, "|---|---|---|\n");
    }
    for (e = dps_config_table; e->name != NULL; e++) {
        if (markdown) {
            fprintf(out, "| `%s%s` | `%s` | %s |\n", DPS_ENV_PREFIX, e->name,
                    e->deflt[0] ? e->deflt : "(empty)", e->help);
        } else {
            fprintf(out, "  %s%-14s default '%s'\n      %s\n", DPS_ENV_PREFIX,
                    e->name, e->deflt, e->help);
        }
    }
}
