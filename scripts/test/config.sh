# shellcheck shell=bash
# scripts/test/check.sh's part: the DPUSHIM_* variables and the agent's command line: every bad value named, every switch honoured.
# Sourced by scripts/test/check.sh (which defines LOGS, TIMEOUT, PASS and
# FAIL); functions only.

# Without the cache every lookup of t_regcache's 300 per rank misses, and
# the data is still right.
regcache_off_case() {
    local mpi=$1 log ok
    log="$LOGS/$mpi-t_regcache-nocache.log"
    run_job "$log" "$mpi" 2 1 \
        "DPUSHIM_STATS=1 DPUSHIM_MIN_BYTES=1 DPUSHIM_REGCACHE_BYTES=0" \
        "build/$mpi/tests/t_regcache"
    ok=$?
    [ $ok = 0 ] && grep -q '^result: ok' "$log" &&
        grep -qx 'dpushim: regcache hits=0 misses=600 invalidations=0' \
            "$log" && ok=1 || ok=0
    report "$mpi t_regcache with REGCACHE_BYTES=0: every call registers" \
        "$ok" "$log"
}

# dpu_agent --probe: a plain answer about BlueField, exit status to match;
# --help names every option the agent accepts.
agent_cli_tests() {
    local mpi=$1
    local log="$LOGS/$mpi-agent-probe.log" rc ok=0 o
    "build/$mpi/dpu_agent" --probe >"$log" 2>&1
    rc=$?
    if [ $rc = 0 ]; then
        grep -q '^BlueField DPU: present' "$log" && ok=1
    elif [ $rc = 1 ]; then
        grep -q '^BlueField DPU: none found' "$log" && ok=1
    fi
    echo "exit status $rc" >>"$log"
    report "$mpi dpu_agent --probe says whether a BlueField is present" \
        "$ok" "$log"
    log="$LOGS/$mpi-agent-help.log"
    "build/$mpi/dpu_agent" --help >"$log" 2>&1 && ok=1 || ok=0
    for o in --addr-fd --parent-fd --probe --help --config-markdown \
             --listen --secret-dir --workers --service --config \
             --munge-socket --grant-dir --allow-root --log-level; do
        grep -q -- "^ *$o" "$log" || {
            echo "option $o not documented" >>"$log"; ok=0; }
    done
    "build/$mpi/dpu_agent" --bogus >>"$log" 2>&1
    [ $? = 2 ] || { echo "unknown option not refused with 2" >>"$log"; ok=0; }
    report "$mpi dpu_agent --help documents every option" "$ok" "$log"
    service_cli_case "$mpi"
}

# dpu_agent --service's settings: each wrong one stops it at once (exit
# status 2) with the file, line or flag and the reason; none starts a
# listener. (The service itself runs in the cluster part.)
service_cli_case() {
    local mpi=$1 log="$LOGS/$1-service-cli.log" ok=1 conf out rc want
    conf=$(mktemp "${TMPDIR:-/tmp}/dps-agent-conf.XXXXXX")
    : >"$log"
    while IFS='|' read -r text args want; do
        printf '%b' "$text" >"$conf"
        # shellcheck disable=SC2086 # ARGS are words
        out=$(timeout 10 "build/$mpi/dpu_agent" --service --config "$conf" \
              $args 2>&1 </dev/null)
        rc=$?
        printf '%s\n%s\nexit status %s\n' "config '$text' $args:" "$out" "$rc" \
            >>"$log"
        [ "$rc" = 2 ] && grep -qF -- "$want" <<<"$out" ||
            { echo "  expected exit 2 and: $want" >>"$log"; ok=0; }
    done <<EOF2
# settings\nlisten = 0.0.0.0:7420\nlisen = 1\n||$conf:3: unknown key 'lisen'
workers = 0\n||$conf:1: workers = '0': expected 1 to 256
allow_root = maybe\n||$conf:1: allow_root = 'maybe': expected yes or no
listen 7420\n||$conf:1: expected 'key = value', got 'listen 7420'
grant_dir = relative/dir\n||$conf:1: grant_dir = 'relative/dir': expected an absolute path
\n|--log-level loud|--log-level: log_level = 'loud': expected error, warn, info or debug
\n|--listen 1.2.3.4|--listen: listen = '1.2.3.4': missing :PORT
\n|--secret-dir /tmp|--secret-dir is --listen's
EOF2
    out=$(timeout 10 "build/$mpi/dpu_agent" --service --config /nonexistent/x.conf 2>&1)
    rc=$?
    printf '%s\nexit status %s\n' "$out" "$rc" >>"$log"
    [ "$rc" = 2 ] && grep -qF "cannot read /nonexistent/x.conf" <<<"$out" || ok=0
    out=$(timeout 10 "build/$mpi/dpu_agent" --addr-fd 3 --parent-fd 4 \
          --munge-socket /x 2>&1)
    rc=$?
    printf '%s\nexit status %s\n' "$out" "$rc" >>"$log"
    [ "$rc" = 2 ] && grep -qF "need --service" <<<"$out" || ok=0
    rm -f "$conf"
    report "$mpi dpu_agent --service: a wrong setting (file or flag) stops it with the file, line or flag and why" \
        "$ok" "$log"
}

# require_case MPI NAME "VARS" REGEX: with DPUSHIM_REQUIRE the job must
# abort in MPI_Init (non-zero exit, no "result: ok"), saying REGEX once,
# and leave no agent behind.
require_case() {
    local mpi=$1 name=$2 vars=$3 re=$4 log ok=1
    log="$LOGS/$mpi-require-${name//[^a-zA-Z0-9]/_}.log"
    run_job "$log" "$mpi" 2 1 "DPUSHIM_STATS=1 $vars" \
        "build/$mpi/tests/cfg_probe" && ok=0
    ! grep -q '^result: ok' "$log" || ok=0
    [ "$(grep -Ec -- "$re" "$log")" = 1 ] || {
        echo "expected /$re/ once in the output" >>"$log"; ok=0; }
    [ -z "$(dps_agents_left)" ] || {
        echo "agent left: $(dps_agents_described)" >>"$log"
        ok=0; }
    report "$mpi DPUSHIM_REQUIRE: $name aborts" "$ok" "$log"
}

# cfg_case MPI NAME "VARS" CHECK...: run cfg_probe with VARS; each CHECK is
# "+regex" (must appear in the output) or "-regex" (must not).
cfg_case() {
    local mpi=$1 name=$2 vars=$3 log ok=1 c
    shift 3
    log="$LOGS/$mpi-cfg-$name.log"
    run_job "$log" "$mpi" 2 1 "DPUSHIM_STATS=1 DPUSHIM_LOG=info $vars" \
        "build/$mpi/tests/cfg_probe" || ok=0
    grep -q '^result: ok' "$log" || ok=0
    for c in "$@"; do
        if [ "${c:0:1}" = + ]; then
            grep -Eq -- "${c:1}" "$log" || {
                echo "expected /${c:1}/ in the output" >>"$log"; ok=0; }
        else
            ! grep -Eq -- "${c:1}" "$log" || {
                echo "unexpected /${c:1}/ in the output" >>"$log"; ok=0; }
        fi
    done
    report "$mpi config: $name" "$ok" "$log"
}

config_tests() {
    local mpi=$1 n=64k on off
    on="offloaded=2 fallback=0 bytes"
    off="offloaded=0 fallback=2 bytes=0"
    # MIN_BYTES=auto: agents sharing every core with ranks offload nothing
    # (measured not to pay) and are not started; with a CPU of their own,
    # the threshold is 256 KiB, above the probe's 64 KiB.
    cfg_case "$mpi" "default MIN_BYTES=auto, agents on rank cores: stock MPI, no agent" "" \
        "+ialltoall $off" "+ibcast $off" "-started agent" \
        "+DPUSHIM_MIN_BYTES=auto: the agents would share every core"
    DPS_RANK_CPUS=0 cfg_case "$mpi" "default MIN_BYTES=auto, agent on a spare CPU: 256 KiB" \
        "DPUSHIM_AGENT_CPUS=1" "+ialltoall $off" "+ibcast $off" \
        "+started agent" "-MIN_BYTES=auto: the agents would share"
    cfg_case "$mpi" "AGENT_SCHED=batch" \
        "DPUSHIM_AGENT_SCHED=batch DPUSHIM_MIN_BYTES=1" "+ialltoall $on" \
        "+ibcast $on"
    cfg_case "$mpi" "PIPELINE_DEPTH=1 and CHUNK_BYTES=4k" \
        "DPUSHIM_PIPELINE_DEPTH=1 DPUSHIM_CHUNK_BYTES=4k DPUSHIM_MIN_BYTES=1" \
        "+ialltoall $on" "+ibcast $on"
    cfg_case "$mpi" "CHUNK_BYTES out of range" \
        "DPUSHIM_CHUNK_BYTES=1k DPUSHIM_MIN_BYTES=1" \
        "+invalid value DPUSHIM_CHUNK_BYTES='1k': expected .*from 4096 to 67108864" \
        "+ialltoall $off"
    cfg_case "$mpi" "PIPELINE_DEPTH out of range" \
        "DPUSHIM_PIPELINE_DEPTH=0 DPUSHIM_MIN_BYTES=1" \
        "+invalid value DPUSHIM_PIPELINE_DEPTH='0'" "+ialltoall $off"
    cfg_case "$mpi" "REQUIRE=1 with offload working" \
        "DPUSHIM_REQUIRE=1 DPUSHIM_MIN_BYTES=1" "+ialltoall $on" "+ibcast $on"
    cfg_case "$mpi" "REQUIRE=0 with a missing agent runs on stock MPI" \
        "DPUSHIM_REQUIRE=0 DPUSHIM_AGENT=/nonexistent/a DPUSHIM_MIN_BYTES=1" \
        "+no agent available: running on stock MPI" "+ialltoall $off"
    require_case "$mpi" "missing agent binary" \
        "DPUSHIM_REQUIRE=1 DPUSHIM_AGENT=/nonexistent/a DPUSHIM_MIN_BYTES=1" \
        "no agent available, and DPUSHIM_REQUIRE is set: aborting"
    require_case "$mpi" "agent binary not executable" \
        "DPUSHIM_REQUIRE=yes DPUSHIM_AGENT=$PWD/README.md DPUSHIM_MIN_BYTES=1" \
        "no agent available, and DPUSHIM_REQUIRE is set: aborting"
    require_case "$mpi" "invalid value" \
        "DPUSHIM_REQUIRE=1 DPUSHIM_CHUNK_BYTES=12x" \
        "invalid DPUSHIM_\\* values, and DPUSHIM_REQUIRE is set: aborting"
    require_case "$mpi" "unparsable REQUIRE with OFFLOAD=0" \
        "DPUSHIM_REQUIRE=please DPUSHIM_OFFLOAD=0" \
        "DPUSHIM_REQUIRE is set: aborting"
    require_case "$mpi" "MIN_BYTES=auto offloading nothing" \
        "DPUSHIM_REQUIRE=1" \
        "MIN_BYTES=auto offloads nothing .*DPUSHIM_REQUIRE is set: aborting"
    cfg_case "$mpi" "bad AGENT_SCHED" "DPUSHIM_AGENT_SCHED=fifo DPUSHIM_MIN_BYTES=1" \
        "+error: invalid value DPUSHIM_AGENT_SCHED='fifo'" "+ialltoall $off"
    cfg_case "$mpi" "MIN_BYTES below the size; agents count 2 collectives" \
        "DPUSHIM_MIN_BYTES=1k" "+ialltoall $on" "+ibcast $on" \
        "+^dpushim: agents cpu_ms=[0-9.]+ collectives=2 "
    cfg_case "$mpi" "OFFLOAD=0 starts no agent" "DPUSHIM_OFFLOAD=0 DPUSHIM_MIN_BYTES=1" \
        "+ialltoall $off" "+ibcast $off" "-started agent"
    cfg_case "$mpi" "IALLTOALL=off" "DPUSHIM_IALLTOALL=off DPUSHIM_MIN_BYTES=1" \
        "+ialltoall $off" "+ibcast $on"
    cfg_case "$mpi" "IBCAST=no" "DPUSHIM_IBCAST=no DPUSHIM_MIN_BYTES=1" \
        "+ialltoall $on" "+ibcast $off"
    cfg_case "$mpi" "MIN_BYTES above the size" "DPUSHIM_MIN_BYTES=1m" \
        "+ialltoall $off" "+ibcast $off"
    cfg_case "$mpi" "MIN_BYTES equal to the size" "DPUSHIM_MIN_BYTES=$n" \
        "+ialltoall $on" "+ibcast $on"
    cfg_case "$mpi" "bad MIN_BYTES" "DPUSHIM_MIN_BYTES=lots" \
        "+error: invalid value DPUSHIM_MIN_BYTES='lots'" \
        "+ialltoall $off" "-started agent"
    cfg_case "$mpi" "bad RANKS_PER_DPU" "DPUSHIM_RANKS_PER_DPU=-2 DPUSHIM_MIN_BYTES=1" \
        "+DPUSHIM_RANKS_PER_DPU" "+ialltoall $off"
    cfg_case "$mpi" "bad LOG" "DPUSHIM_LOG=loud DPUSHIM_MIN_BYTES=1" "+DPUSHIM_LOG='loud'" \
        "+ialltoall $off"
    cfg_case "$mpi" "bad TRANSPORT" "DPUSHIM_TRANSPORT=rdma DPUSHIM_MIN_BYTES=1" \
        "+DPUSHIM_TRANSPORT='rdma'" "+ialltoall $off"
    cfg_case "$mpi" "AGENT_CPUS pins the agent" \
        "DPUSHIM_AGENT_CPUS=1 DPUSHIM_MIN_BYTES=1" \
        "+agent pid [0-9]+ runs on CPUs 1" "+ialltoall $on"
    cfg_case "$mpi" "bad AGENT_CPUS" "DPUSHIM_AGENT_CPUS=0- DPUSHIM_MIN_BYTES=1" \
        "+DPUSHIM_AGENT_CPUS='0-'" "+ialltoall $off"
    cfg_case "$mpi" "bad STATS" "DPUSHIM_STATS=maybe DPUSHIM_STATS2=1" \
        "+DPUSHIM_STATS='maybe'"
    cfg_case "$mpi" "unknown variable warned" \
        "DPUSHIM_OFLOAD=0 DPUSHIM_MIN_BYTES=4k" \
        "+warning: unknown variable DPUSHIM_OFLOAD" "+ialltoall $on"
    cfg_case "$mpi" "missing agent binary" "DPUSHIM_AGENT=/nonexistent/a DPUSHIM_MIN_BYTES=1" \
        "+/nonexistent/a is not executable.*DPUSHIM_AGENT" \
        "+ialltoall $off" "+ibcast $off"
    cfg_case "$mpi" "RANKS_PER_DPU=1: one agent per rank" \
        "DPUSHIM_RANKS_PER_DPU=1 DPUSHIM_MIN_BYTES=0" "+ialltoall $on" \
        "+ibcast $on" "+^dpushim: agents cpu_ms=[0-9.]+ collectives=2 "
}
