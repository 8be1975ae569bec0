#!/usr/bin/env bash
# Run the whole test suite: Check unit tests, the README/config table
# check, and for every MPI given the MPI tests (2 ranks with one agent, 4
# ranks with two agents, and the same programs on stock MPI), the
# configuration tests and the no-orphan-agent tests. Ends with one line
# "N passed, M failed" and exits non-zero if anything failed.
#
# usage: scripts/check.sh MPI...      (MPI: openmpi, mpich)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
source scripts/lib.sh

PASS=0
FAIL=0
LOGS=build/check-logs
mkdir -p "$LOGS"
TIMEOUT=${DPS_TEST_TIMEOUT:-180}

# report NAME OK(0|1) [LOG]: count one result; show the log of a failure.
report() {
    if [ "$2" = 1 ]; then
        PASS=$((PASS + 1))
        echo "PASS $1"
    else
        FAIL=$((FAIL + 1))
        echo "FAIL $1"
        if [ -n "${3:-}" ] && [ -f "$3" ]; then
            sed 's/^/    | /' "$3" | tail -n 40
        fi
    fi
}

# run_job LOG MPI NP SHIM VARS PROG...: a job under a time limit.
run_job() {
    local log=$1
    shift
    timeout -k 5 "$TIMEOUT" bash -c 'source scripts/lib.sh; dps_launch "$@"' \
        _ "$@" >"$log" 2>&1
}

# The stats lines must equal the program's own "expect:" lines, and match
# its "expect~: REGEX" lines (for counts it can only bound).
stats_match() {
    local log=$1 want re
    want=$(grep '^expect: ' "$log" | sed 's/^expect: /dpushim: /')
    [ -n "$want" ] || return 1
    while IFS= read -r line; do
        grep -qxF "$line" "$log" || {
            echo "missing statistics line: $line" >>"$log"
            return 1
        }
    done <<<"$want"
    while IFS= read -r re; do
        [ -n "$re" ] || continue
        grep -Eqx "dpushim: $re" "$log" || {
            echo "no statistics line matches: dpushim: $re" >>"$log"
            return 1
        }
    done < <(grep '^expect~: ' "$log" | sed 's/^expect~: //')
}

unit_tests() {
    local t log out n f e
    for t in build/unit/check_*; do
        [ -x "$t" ] || continue
        log="$LOGS/unit-$(basename "$t").log"
        timeout -k 5 "$TIMEOUT" "$t" >"$log" 2>&1
        out=$(grep -Eo 'Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' \
              "$log" | tail -n 1)
        if [ -z "$out" ]; then
            report "unit $(basename "$t") (no summary)" 0 "$log"
            continue
        fi
        read -r n f e < <(echo "$out" | grep -Eo '[0-9]+' | tr '\n' ' ')
        PASS=$((PASS + n - f - e))
        FAIL=$((FAIL + f + e))
        echo "$( [ $((f + e)) = 0 ] && echo PASS || echo FAIL ) unit" \
             "$(basename "$t"): $out"
        [ $((f + e)) = 0 ] || sed 's/^/    | /' "$log" | grep -v ':P:' |
            tail -n 40
    done
}

readme_check() {
    local log="$LOGS/readme.log" ok=1
    scripts/readme_table.sh --check >"$log" 2>&1 || ok=0
    report "README's DPUSHIM_* table matches common/dps_config.c" "$ok" \
        "$log"
}

mpi_tests() {
    local mpi=$1 t name log ok rc
    local base="DPUSHIM_STATS=1 DPUSHIM_MIN_BYTES=1"
    for t in build/"$mpi"/tests/t_*; do
        [ -x "$t" ] || continue
        name=$(basename "$t")
        log="$LOGS/$mpi-$name-stock.log"
        run_job "$log" "$mpi" 2 0 "" "$t"
        rc=$?
        ok=0
        [ $rc = 0 ] && grep -q '^result: ok' "$log" && ok=1
        report "$mpi $name stock MPI, 2 ranks" "$ok" "$log"

        shim_case "$mpi" "$t" 2 "$base" "2 ranks, 1 agent"
        shim_case "$mpi" "$t" 4 "$base DPUSHIM_RANKS_PER_DPU=2" \
            "4 ranks, 2 agents"
    done
    # The UCX get/put path that serves ranks of other nodes on a cluster.
    # Here UCX emulates RMA with messages the ranks progress in MPI calls,
    # so programs that block in MPI_Recv while data is due are left out.
    for name in t_alltoall_sizes t_bcast_roots t_comms t_edge t_buffers \
                t_regcache t_regmem t_reglru; do
        shim_case "$mpi" "build/$mpi/tests/$name" 4 \
            "$base DPUSHIM_RANKS_PER_DPU=2 DPUSHIM_TRANSPORT=ucx" \
            "4 ranks, 2 agents, UCX get/put for every rank"
    done
}

# shim_case MPI PROG NP VARS TITLE: data correct and statistics as expected.
shim_case() {
    local mpi=$1 t=$2 np=$3 vars=$4 title=$5 log ok
    log="$LOGS/$mpi-$(basename "$t")-np$np${vars//[^a-z]/}.log"
    run_job "$log" "$mpi" "$np" 1 "$vars" "$t"
    ok=$?
    [ $ok = 0 ] && grep -q '^result: ok' "$log" && stats_match "$log" &&
        ok=1 || ok=0
    report "$mpi $(basename "$t") $title" "$ok" "$log"
}

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
    local mpi=$1 log="$LOGS/$mpi-agent-probe.log" rc ok=0 o
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
    for o in --addr-fd --parent-fd --probe --help --config-markdown; do
        grep -q -- "^ *$o" "$log" || {
            echo "option $o not documented" >>"$log"; ok=0; }
    done
    "build/$mpi/dpu_agent" --bogus >>"$log" 2>&1
    [ $? = 2 ] || { echo "unknown option not refused with 2" >>"$log"; ok=0; }
    report "$mpi dpu_agent --help documents every option" "$ok" "$log"
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
    [ -z "$(dps_agents_left)" ] || { echo "agent left" >>"$log"; ok=0; }
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

# Kill ranks of a running job; no agent may survive it.
kill_case() {
    local mpi=$1 what=$2 ok=1 _
    local log="$LOGS/$mpi-kill-$what.log" job="$LOGS/$mpi-kill-$what.job"
    : >"$log"
    local np=2 vars="DPUSHIM_MIN_BYTES=1"
    ( dps_launch "$mpi" "$np" 1 "$vars" "build/$mpi/tests/kill_target" ) \
        >"$job" 2>&1 &
    local launcher=$!
    for _ in $(seq 100); do
        grep -q running "$job" && [ -n "$(dps_agents_left)" ] && break
        sleep 0.1
    done
    if [ -z "$(dps_agents_left)" ]; then
        echo "no agent was running" >>"$log"
        ok=0
    fi
    case $what in
    all-ranks) pgrep -x kill_target | xargs -r kill -9 ;;
    leader)    # the rank whose child the agent is
               ps -o ppid= -p "$(dps_agents_left | head -n 1)" |
                   xargs -r kill -9 ;;
    launcher)  # mpirun / mpiexec itself (Debian's names included)
               for _ in mpirun mpirun.openmpi orterun mpiexec \
                        mpiexec.mpich mpiexec.hydra; do
                   pgrep -x "$_"
               done | xargs -r kill -9 ;;
    esac
    for _ in $(seq 100); do
        [ -z "$(dps_agents_left)" ] && break
        sleep 0.1
    done
    if [ -n "$(dps_agents_left)" ]; then
        echo "agents left 10 s after killing $what: $(dps_agents_left)" \
            >>"$log"
        ok=0
    fi
    # Clean up the rest of the job, whatever the launcher does.
    pgrep -x kill_target | xargs -r kill -9
    kill -9 "$launcher" 2>/dev/null
    wait "$launcher" 2>/dev/null
    { echo "-- job output:"; cat "$job"; } >>"$log"
    report "$mpi no agent survives SIGKILL of $what" "$ok" "$log"
}

# failover_case MPI NP HOW: an agent is SIGKILLed (HOW=kill) or SIGSTOPped
# (stop: it stops answering) right after collectives were posted. Every
# pending request must end, successful ones with exact data; later
# collectives run on stock MPI, are counted, and are right; the job ends
# through MPI_Finalize within the bound: DPUSHIM_AGENT_TIMEOUT (2 s for
# stop, default 10 s for kill) plus start-up and the rest of the program.
failover_case() {
    local mpi=$1 np=$2 how=$3 ok=1 t0 t1 bound=40 r
    local log="$LOGS/$mpi-failover-np$np-$how.log"
    local vars="DPUSHIM_MIN_BYTES=1 DPUSHIM_STATS=1 DPUSHIM_RANKS_PER_DPU=2 FO_RPD=2 FO_HOW=$how"
    [ "$how" = stop ] && vars="$vars DPUSHIM_AGENT_TIMEOUT=2"
    t0=$(date +%s.%N)
    run_job "$log" "$mpi" "$np" 1 "$vars" "build/$mpi/tests/failover_target" ||
        ok=0
    t1=$(date +%s.%N)
    grep -q '^result: ok' "$log" || ok=0
    for ((r = 0; r < np; r++)); do
        grep -Eq "^rank $r: pending collectives: [0-9]+ ended well" "$log" ||
            { echo "rank $r did not finish its pending collectives" >>"$log"; ok=0; }
    done
    grep -Eq '^dpushim: ialltoall after agent failure: redone=[0-9]+ failed=[0-9]+ stock=[1-9]' "$log" &&
        grep -Eq '^dpushim: ibcast after agent failure: redone=[0-9]+ failed=[0-9]+ stock=[1-9]' "$log" ||
        { echo "no statistics of collectives after the failure" >>"$log"; ok=0; }
    if awk -v a="$t0" -v b="$t1" -v m="$bound" 'BEGIN { exit !(b - a > m) }'; then
        echo "job took $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s, bound $bound s" >>"$log"
        ok=0
    fi
    for _ in $(seq 50); do
        [ -z "$(dps_agents_left)" ] && break
        sleep 0.1
    done
    [ -z "$(dps_agents_left)" ] || { echo "agents left: $(dps_agents_left)" >>"$log"; ok=0; }
    local what="killed (SIGKILL)"
    [ "$how" = stop ] && what="stopped (SIGSTOP, silent)"
    report "$mpi agent $what mid-collective, $np ranks: requests end, results exact, job finishes on stock MPI" \
        "$ok" "$log"
}

# A third-party program: mpi4py (built by Debian for Open MPI only).
thirdparty_mpi4py() {
    local np log ok vars
    [ -x /usr/bin/python3 ] &&
        /usr/bin/python3 -c 'import mpi4py, numpy' 2>/dev/null || {
        report "openmpi mpi4py program (python3-mpi4py not installed)" 0
        return
    }
    for np in 2 4; do
        log="$LOGS/openmpi-mpi4py-np$np.log"
        vars="DPUSHIM_STATS=1 DPUSHIM_RANKS_PER_DPU=2 DPUSHIM_MIN_BYTES=256k"
        run_job "$log" openmpi "$np" 1 "$vars" /usr/bin/python3 \
            tests/thirdparty/mpi4py_nbc.py
        ok=$?
        [ $ok = 0 ] && grep -q '^mpi4py result: ok' "$log" &&
            grep -Eq '^dpushim: ialltoall offloaded=[1-9]' "$log" &&
            grep -Eq '^dpushim: ibcast offloaded=[1-9]' "$log" && ok=1 || ok=0
        report "openmpi mpi4py program, $np ranks, $((np / 2)) agent(s): same results as stock, both collectives offloaded" \
            "$ok" "$log"
    done
}

# The decoder under libFuzzer with AddressSanitizer, briefly (longer by
# hand: build/fuzz/fuzz_decode -max_total_time=600 build/fuzz/corpus).
fuzz_decoder() {
    local log="$LOGS/fuzz-decode.log" ok=0 seeds=build/fuzz/seeds
    if [ ! -x build/fuzz/fuzz_decode ]; then
        echo "build/fuzz/fuzz_decode not built (make fuzz, needs clang)" >"$log"
    else
        rm -rf "$seeds" && mkdir -p "$seeds" build/fuzz/corpus &&
            build/fuzz/mkseeds "$seeds" &&
            timeout 120 build/fuzz/fuzz_decode -max_total_time=${DPS_FUZZ_SECONDS:-15} \
                -seed=1 -artifact_prefix=build/fuzz/ build/fuzz/corpus "$seeds" \
                >"$log" 2>&1 &&
            grep -q '^Done [0-9]* runs' "$log" && ok=1
    fi
    report "wire decoder fuzzed (libFuzzer, ASan, UBSan) without a fault" \
        "$ok" "$log"
}

no_agents_left() {
    local log="$LOGS/agents-left.log" left
    left=$(dps_agents_left)
    echo "dpu_agent processes: ${left:-none}" >"$log"
    report "no dpu_agent process left after the suite" \
        "$([ -z "$left" ] && echo 1 || echo 0)" "$log"
    [ -z "$left" ] || kill -9 $left  # this suite failed anyway
}

if [ -n "$(dps_agents_left)" ]; then
    echo "note: dpu_agent processes were running before the suite:" \
         "$(dps_agents_left | tr '\n' ' ')"
fi
unit_tests
readme_check
fuzz_decoder
for mpi in "$@"; do
    mpi_tests "$mpi"
    config_tests "$mpi"
    regcache_off_case "$mpi"
    agent_cli_tests "$mpi"
    kill_case "$mpi" all-ranks
    kill_case "$mpi" leader
    for np in 2 4; do
        failover_case "$mpi" "$np" kill
        failover_case "$mpi" "$np" stop
    done
    kill_case "$mpi" launcher
    [ "$mpi" = openmpi ] && thirdparty_mpi4py
done
no_agents_left
echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
