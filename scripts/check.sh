#!/usr/bin/env bash
# Run the whole test suite: Check unit tests, the manual's checks
# (scripts/readme_table.sh, scripts/doc_refs.sh, the example), and for
# every MPI given the MPI tests (2 ranks with one agent, 4 ranks with two
# agents, and the same programs on stock MPI), the configuration tests
# and the no-orphan-agent tests. Ends with one line "N passed, M failed"
# and exits non-zero if anything failed.
#
# usage: scripts/check.sh [MPI...]    (MPI: openmpi, mpich; default both)
# DPS_CHECK_PART=FUNC: only that part (FUNC MPI..., e.g. runner_tests),
# then its own "N passed, M failed" (scripts/runner_check.sh and
# scripts/deb_check.sh run alone this way).
# An MPI that is not installed or not built, or missing unit or fuzz
# programs, fail the run before anything else: skipping is never green.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
source scripts/lib.sh
source scripts/listen_tests.sh
source scripts/arm64_tests.sh
source scripts/fft_check.sh
source scripts/runner_check.sh
source scripts/deb_check.sh

dps_mpis_ready "$@" || {
    echo "check.sh: cannot test the MPIs above; 'make check' installs and" \
         "builds everything (as root)" >&2
    exit 1
}
set -- "${DPS_MPIS[@]}"

PASS=0
FAIL=0
LOGS=build/check-logs
mkdir -p "$LOGS"
TIMEOUT=${DPS_TEST_TIMEOUT:-180}
# Seconds since the previous result, and its name: where make check's
# time goes (CI allows 30 minutes in all).
TIMES=$LOGS/times.txt
: >"$TIMES"
REPORT_T=$SECONDS

# report NAME OK(0|1) [LOG]: count one result; show the log of a failure.
report() {
    echo "$((SECONDS - REPORT_T)) $1" >>"$TIMES"
    REPORT_T=$SECONDS
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
    grep -Eq '^expect~?: ' "$log" || return 1
    # A statistics line for a collective the program did not expect is a
    # call counted where it was not made.
    while IFS= read -r name; do
        grep -Eq "^expect~?: $name offloaded=" "$log" || {
            echo "unexpected statistics line for $name" >>"$log"
            return 1
        }
    done < <(sed -n 's/^dpushim: \([a-z_]*\) offloaded=.*/\1/p' "$log")
    while IFS= read -r line; do
        [ -n "$line" ] || continue
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

# runner ARGS...: cases of the matrix (tests/cases.py) run by
# bin/dps-test with ARGS, their results added to this run's.
runner() {
    local out=$LOGS/dps-test.out n f
    bin/dps-test --logs "$LOGS" --times "$TIMES" --timeout "$TIMEOUT" "$@" |
        tee "$out"
    read -r n f < <(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' \
                    "$out" | tail -n 1)
    if [ -z "${n:-}" ]; then
        report "bin/dps-test $* (no summary)" 0 "$out"
        return
    fi
    PASS=$((PASS + n))
    FAIL=$((FAIL + f))
    REPORT_T=$SECONDS
}

# The unit tests, and for each MPI the collectives' table against its
# names (tests/unit/check_colls.c).
unit_tests() {
    runner --kind unit "$@"
}

# The shell scripts pass shellcheck at severity warning (a finding that
# is the intent carries a disable comment saying why).
shellcheck_check() {
    local log=$LOGS/shellcheck.log ok=1
    shellcheck -S warning -f gcc scripts/*.sh scripts/dpushim \
        scripts/cluster-rsh .ci/run >"$log" 2>&1 || ok=0
    report "shell scripts pass shellcheck -S warning" "$ok" "$log"
}

# The sources' layout (docs/architecture.md): no two files call or include
# each other in a loop, and no folder calls or includes one above it.
layout_check() {
    local log="$LOGS/depgraph.log" ok=1
    make -s --no-print-directory MPI="$1" depgraph >"$log" 2>&1 ||
        ok=0
    report "sources: no call or include loop between files, none up between folders (make depgraph)" \
        "$ok" "$log"
}

# The manual (README.md, docs/) against the tree: its generated tables,
# its complete example, the source paths it names and its links.
readme_check() {
    local log="$LOGS/readme.log" ok=1
    scripts/readme_table.sh --check >"$log" 2>&1 || ok=0
    report "docs/variables.md's DPUSHIM_* table and docs/reductions.md's reducible datatypes match common/dps_config.c and common/dps_rtypes.h" "$ok" \
        "$log"
    log="$LOGS/readme-example.log"
    ok=1
    diff <(sed -n '/^A complete program/,/^Build and run it/p' docs/api.md |
           sed -n '/^```c$/,/^```$/p' | sed '1d;$d') \
         <(sed -n '/^#include <dpushim.h>/,$p' examples/pattern.c) \
        >"$log" 2>&1 || ok=0
    report "docs/api.md's complete dpushim.h example is examples/pattern.c" \
        "$ok" "$log"
    # Source files moved or renamed leave the manual naming old paths:
    # the log lists each as FILE:LINE.
    log="$LOGS/readme-refs.log"
    ok=1
    scripts/doc_refs.sh >"$log" 2>&1 || ok=0
    report "README.md and docs/ name only source paths that exist, and their links resolve" \
        "$ok" "$log"
}

# The MPI programs of tests/mpi, each several ways (tests/cases.py).
mpi_tests() {
    runner --kind mpi "$1"
}

# shim_case MPI PROG NP VARS TITLE [TAG]: data correct, statistics as
# expected, and no offloaded collective left running at MPI_Finalize. TAG
# tells apart the logs of cases whose VARS differ only in numbers.
shim_case() {
    local mpi=$1 t=$2 np=$3 vars=$4 title=$5 log ok
    log="$LOGS/$mpi-$(basename "$t")-np$np${vars//[^a-z]/}${6:-}.log"
    run_job "$log" "$mpi" "$np" 1 "$vars" "$t"
    ok=$?
    [ $ok = 0 ] && grep -q '^result: ok' "$log" && stats_match "$log" &&
        ok=1 || ok=0
    if grep -q 'offloaded collectives still running' "$log"; then
        echo "offloaded collectives left running at MPI_Finalize" >>"$log"
        ok=0
    fi
    report "$mpi $(basename "$t") $title" "$ok" "$log"
}

# err_case MPI NP CASE HANDLER: an erroneous call to an offloaded
# collective (tests/mpi/err_target.c) ends within 30 s: with MPI's fatal
# handler the job aborts with the shim's or the agent's message naming
# what is wrong; with MPI_ERRORS_RETURN every rank returns from its calls,
# an error reported (a rank whose own part had completed before the
# mismatch was seen may keep its data). No agent may be left.
err_case() {
    local mpi=$1 np=$2 cas=$3 h=$4 ok=1 r t0 t1 n
    local log="$LOGS/$mpi-err-$cas-$h-np$np.log"
    local re='do not match|own arguments are erroneous|overlaps the receive buffer|differs from the receive block'
    t0=$(date +%s)
    run_job "$log" "$mpi" "$np" 1 \
        "DPUSHIM_MIN_BYTES=1 DPUSHIM_RANKS_PER_DPU=2 ERR_CASE=$cas ERR_HANDLER=$h" \
        "build/$mpi/tests/err_target"
    r=$?
    t1=$(date +%s)
    [ $((t1 - t0)) -le 30 ] || { echo "took $((t1 - t0)) s" >>"$log"; ok=0; }
    grep -Eq "$re" "$log" ||
        { echo "no message saying what is wrong" >>"$log"; ok=0; }
    if [ "$h" = fatal ]; then
        [ $r != 0 ] && [ $r != 124 ] && [ $r != 137 ] ||
            { echo "exit status $r: expected an abort" >>"$log"; ok=0; }
        ! grep -q 'result: ended' "$log" ||
            { echo "the fatal handler did not end the job" >>"$log"; ok=0; }
    else
        # Not anchored: the launcher may forward one rank's line in two
        # pieces with another rank's line between them (seen with Hydra).
        [ $r = 0 ] && grep -q 'result: ended' "$log" ||
            { echo "exit status $r, or not every rank ended" >>"$log"; ok=0; }
        n=$(grep -o 'rank [0-9]*: post class' "$log" | wc -l)
        [ "$n" = "$np" ] || { echo "$n of $np ranks returned" >>"$log"; ok=0; }
        grep -q 'error reported' "$log" ||
            { echo "no rank got an error" >>"$log"; ok=0; }
    fi
    for _ in $(seq 50); do
        [ -z "$(dps_agents_left)" ] && break
        sleep 0.1
    done
    [ -z "$(dps_agents_left)" ] || {
        echo "agents left: $(dps_agents_described)" >>"$log"
        ok=0; }
    report "$mpi erroneous call ($cas, $np ranks, $([ $h = fatal ] &&
        echo "fatal handler: aborts" || echo "MPI_ERRORS_RETURN: errors returned")), no hang" \
        "$ok" "$log"
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
    all-ranks) dps_own_pids kill_target | xargs -r kill -9 ;;
    leader)    # the rank whose child the agent is
               ps -o ppid= -p "$(dps_agents_left | head -n 1)" |
                   xargs -r kill -9 ;;
    launcher)  # mpirun / mpiexec itself (Debian's names included)
               dps_own_pids mpirun mpirun.openmpi orterun mpiexec \
                   mpiexec.mpich mpiexec.hydra | xargs -r kill -9 ;;
    esac
    for _ in $(seq 100); do
        [ -z "$(dps_agents_left)" ] && break
        sleep 0.1
    done
    if [ -n "$(dps_agents_left)" ]; then
        echo "agents left 10 s after killing $what:" \
            "$(dps_agents_described)" >>"$log"
        ok=0
    fi
    # Clean up the rest of the job, whatever the launcher does.
    dps_own_pids kill_target | xargs -r kill -9
    kill -9 "$launcher" 2>/dev/null
    wait "$launcher" 2>/dev/null
    { echo "-- job output:"; cat "$job"; } >>"$log"
    report "$mpi no agent survives SIGKILL of $what" "$ok" "$log"
}

# failover_case MPI NP HOW: an agent is SIGKILLed (HOW=kill) or SIGSTOPped
# (stop: it stops answering) right after collectives were posted; recv,
# bcast: killed, and all ranks but 0 wait in MPI_Recv (a blocking
# MPI_Bcast) for rank 0, which sends once its collectives are done (the
# takeover must reach them there). Every
# pending request must end, successful ones with exact data; later
# collectives run on stock MPI, are counted, and are right; the job ends
# through MPI_Finalize within the bound: DPUSHIM_AGENT_TIMEOUT (2 s for
# stop, default 10 s for kill) plus start-up and the rest of the program.
failover_case() {
    local mpi=$1 np=$2 how=$3 ok=1 t0 t1 bound=40 r
    local log="$LOGS/$mpi-failover-np$np-$how.log"
    local vars="DPUSHIM_MIN_BYTES=1 DPUSHIM_STATS=1 DPUSHIM_RANKS_PER_DPU=2 FO_RPD=2"
    case $how in
    stop) vars="$vars FO_HOW=stop DPUSHIM_AGENT_TIMEOUT=2" ;;
    recv) vars="$vars FO_HOW=kill FO_BLOCK=$how" ;;
    bcast) vars="$vars FO_HOW=kill FO_BLOCK=$how DPUSHIM_AGENT_TIMEOUT=3"
           bound=20 ;;
    *)    vars="$vars FO_HOW=kill" ;;
    esac
    t0=$(date +%s.%N)
    run_job "$log" "$mpi" "$np" 1 "$vars" "build/$mpi/tests/failover_target"
    r=$?
    t1=$(date +%s.%N)
    if [ "$how" = bcast ] && [ $r = 0 ]; then
        # Every rank heard of the failure before it blocked (which ranks
        # do is a race): then the takeover must have worked as usual.
        echo "(the ranks joined the takeover before blocking)" >>"$log"
        how=bcast-joined
    fi
    if [ "$how" = bcast ]; then
        # Ranks blocked in MPI's own MPI_Bcast cannot join the takeover:
        # the job must abort once DPUSHIM_AGENT_TIMEOUT has passed, saying
        # which agent failed, who did not join and what is lost.
        [ $r != 0 ] && [ $r != 124 ] && [ $r != 137 ] ||
            { echo "exit status $r: expected an abort" >>"$log"; ok=0; }
        ! grep -q '^result: ok' "$log" ||
            { echo "the job went on" >>"$log"; ok=0; }
        grep -Eq "agent pid [0-9]+.* died.*stock MPI could not take over within 3 s \(DPUSHIM_AGENT_TIMEOUT\): ranks? [0-9, ]+ never joined it.*Collectives that cannot be recovered: (ialltoall|ibcast) #[0-9]+ on (MPI_COMM_WORLD|communicator) .*Aborting the job" "$log" ||
            { echo "no message naming the agent, the ranks and the lost collectives" >>"$log"; ok=0; }
    else
        [ $r = 0 ] || ok=0
        grep -q '^result: ok' "$log" || ok=0
        for ((r = 0; r < np; r++)); do
            grep -Eq "^rank $r: pending collectives: [0-9]+ ended well" "$log" ||
                { echo "rank $r did not finish its pending collectives" >>"$log"; ok=0; }
        done
        grep -Eq '^dpushim: ialltoall after agent failure: redone=[0-9]+ failed=[0-9]+ stock=[1-9]' "$log" &&
            grep -Eq '^dpushim: ibcast after agent failure: redone=[0-9]+ failed=[0-9]+ stock=[1-9]' "$log" ||
            { echo "no statistics of collectives after the failure" >>"$log"; ok=0; }
    fi
    if awk -v a="$t0" -v b="$t1" -v m="$bound" 'BEGIN { exit !(b - a > m) }'; then
        echo "job took $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s, bound $bound s" >>"$log"
        ok=0
    fi
    for _ in $(seq 50); do
        [ -z "$(dps_agents_left)" ] && break
        sleep 0.1
    done
    [ -z "$(dps_agents_left)" ] || { echo "agents left: $(dps_agents_described)" >>"$log"; ok=0; }
    local what="killed (SIGKILL)"
    local outcome="requests end, results exact, job finishes on stock MPI"
    [ "$how" = stop ] && what="stopped (SIGSTOP, silent)"
    [ "$how" = recv ] && what="killed while ranks block in MPI_Recv,"
    if [ "${how#bcast}" != "$how" ]; then
        what="killed while ranks block in MPI's own MPI_Bcast,"
        outcome="the job aborts after DPUSHIM_AGENT_TIMEOUT, naming the agent and what is lost (or, ranks having heard of it first, finishes on stock MPI)"
    fi
    report "$mpi agent $what mid-collective, $np ranks: $outcome" "$ok" "$log"
}

# failover_kinds_case MPI: an agent killed while one collective of every
# kind is pending (tests/mpi/failover_kinds.c): each request ends, exact
# where it ends well; then every kind runs, exact, on stock MPI.
failover_kinds_case() {
    local mpi=$1 np=4 ok=1 r name
    local log="$LOGS/$mpi-failover-kinds-np$np.log"
    run_job "$log" "$mpi" "$np" 1 \
        "DPUSHIM_MIN_BYTES=1 DPUSHIM_STATS=1 DPUSHIM_RANKS_PER_DPU=2 FO_RPD=2" \
        "build/$mpi/tests/failover_kinds" || ok=0
    grep -q '^result: ok' "$log" || ok=0
    for ((r = 0; r < np; r++)); do
        grep -Eq "^rank $r: pending collectives: [0-9]+ ended well" "$log" ||
            { echo "rank $r did not finish its pending collectives" >>"$log"; ok=0; }
    done
    for name in ibarrier ibcast igather igatherv iscatter iscatterv \
                iallgather iallgatherv ialltoall ialltoallv ialltoallw \
                ireduce iallreduce ireduce_scatter ireduce_scatter_block \
                iscan iexscan ineighbor_alltoall alltoall_init group_init; do
        grep -Eq "^dpushim: $name after agent failure: redone=[0-9]+ failed=[0-9]+ stock=[1-9]" "$log" ||
            { echo "no statistics of $name after the failure" >>"$log"; ok=0; }
    done
    [ -z "$(dps_agents_left)" ] || sleep 2
    [ -z "$(dps_agents_left)" ] || { echo "agents left: $(dps_agents_described)" >>"$log"; ok=0; }
    report "$mpi agent killed with one collective of every kind pending, $np ranks: each ends (exact, or an error), all run on stock MPI after" "$ok" "$log"
}

# outsiders_case MPI: the failure tests (ranks and agents killed, an
# agent killed mid-collective, an erroneous call) run beside an unrelated
# listening agent and an unrelated MPI job under the shim, both started
# under another run's tag, as another user's would be. The tests must
# pass and both outsiders survive untouched; then they are ended by pid.
outsiders_case() {
    local mpi=$1 ok=1 dir own=$DPS_RUN_TAG other p lp jp outs=() _
    local log="$LOGS/$mpi-outsiders.log"
    dir=$(mktemp -d)
    other="outsider-$$-$RANDOM"
    DPS_RUN_TAG=$other
    start_listener "$mpi" "$dir" || echo "outsider listener not up" >>"$log"
    lp=$LISTEN_PID
    ( dps_launch "$mpi" 2 1 "DPUSHIM_MIN_BYTES=1" \
        "build/$mpi/tests/kill_target" ) >"$dir/job.log" 2>&1 &
    jp=$!
    DPS_RUN_TAG=$own
    for _ in $(seq 100); do
        grep -q running "$dir/job.log" &&
            [ -n "$(dps_pids_tagged dpu_agent "DPS_RUN_TAG=$other")" ] && break
        sleep 0.1
    done
    # shellcheck disable=SC2207 # one pid a word
    outs=($( { echo "$lp"; dps_pids_tagged kill_target "DPS_RUN_TAG=$other"
               dps_pids_tagged dpu_agent "DPS_RUN_TAG=$other"; } | sort -u))
    [ ${#outs[@]} -ge 4 ] || {
        echo "outsiders not all up: ${outs[*]}" >>"$log"; ok=0; }
    kill_case "$mpi" all-ranks
    kill_case "$mpi" leader
    failover_case "$mpi" 2 kill
    err_case "$mpi" 2 alias return
    for p in "${outs[@]}"; do
        if ! kill -0 "$p" 2>/dev/null ||
                [ "$(ps -o stat= -p "$p" | cut -c1)" = Z ]; then
            echo "outsider $p was killed" >>"$log"
            ok=0
        fi
    done
    echo "outsiders: $(dps_pids_describe "${outs[@]}")" >>"$log"
    dps_pids_tagged kill_target "DPS_RUN_TAG=$other" | xargs -r kill -9
    kill "$lp" 2>/dev/null
    wait "$jp" "$lp" 2>/dev/null
    for _ in $(seq 50); do
        [ -z "$(dps_pids_tagged dpu_agent "DPS_RUN_TAG=$other")" ] && break
        sleep 0.1
    done
    dps_pids_tagged dpu_agent "DPS_RUN_TAG=$other" | xargs -r kill -9
    rm -rf "$dir"
    report "$mpi failure tests beside another job and a listening agent: both untouched" \
        "$ok" "$log"
}

# pers_order_failover_case MPI NP: t_pers_order with an agent killed in
# round 5 (PO_KILL): the round's requests all end, and every later round,
# started in rank-dependent orders, is exact on stock MPI.
pers_order_failover_case() {
    local mpi=$1 np=$2 ok=1 r
    local log="$LOGS/$mpi-pers-order-failover-np$np.log"
    run_job "$log" "$mpi" "$np" 1 \
        "DPUSHIM_MIN_BYTES=1 DPUSHIM_RANKS_PER_DPU=2 FO_RPD=2 PO_KILL=5" \
        "build/$mpi/tests/t_pers_order" || ok=0
    grep -q '^result: ok' "$log" || ok=0
    for ((r = 0; r < np; r++)); do
        grep -q "^rank $r: round 5 ended after the agent failure" "$log" ||
            { echo "rank $r did not end its round" >>"$log"; ok=0; }
    done
    report "$mpi persistent collectives in rank-dependent orders, agent killed, $np ranks: later rounds exact on stock MPI" "$ok" "$log"
}

# install_check MPI...: `make install` into a scratch prefix; the API
# example built with pkg-config runs under the shim through the linked
# library alone (no LD_PRELOAD), and built with the header alone runs on
# stock MPI, told that offload is not available.
install_check() {
    local prefix="$PWD/$LOGS/prefix" mpi log ok pc
    rm -rf "$prefix"
    log="$LOGS/install.log"
    scripts/install.sh "$prefix" "$@" >"$log" 2>&1
    ok=$?
    [ $ok = 0 ] && [ -f "$prefix/include/dpushim.h" ] &&
        [ -f "$prefix/lib/pkgconfig/dpushim.pc" ] && ok=1 || ok=0
    report "make install PREFIX=...: header, libraries, agents, pkg-config" \
        "$ok" "$log"
    for mpi in "$@"; do
        log="$LOGS/$mpi-install-linked.log"
        pc="PKG_CONFIG_PATH=$prefix/lib/pkgconfig"
        ok=0
        env "$pc" bash -c "mpicc.$mpi -o $LOGS/$mpi-pattern examples/pattern.c \
            \$(pkg-config --cflags --libs dpushim-$mpi)" >"$log" 2>&1 &&
            run_job "$log.run" "$mpi" 2 0 \
                "DPUSHIM_MIN_BYTES=1 DPUSHIM_STATS=1" "$LOGS/$mpi-pattern" &&
            grep -q '^ok: 0 wrong values' "$log.run" &&
            grep -Eq '^dpushim: group_init offloaded=20 fallback=0' \
                "$log.run" && ok=1
        cat "$log.run" >>"$log" 2>/dev/null
        report "$mpi installed: examples/pattern.c linked with pkg-config dpushim-$mpi offloads its group, no LD_PRELOAD" "$ok" "$log"
        log="$LOGS/$mpi-install-header.log"
        ok=0
        env "$pc" bash -c "mpicc.$mpi -o $LOGS/$mpi-pattern-h examples/pattern.c \
            \$(pkg-config --cflags dpushim-$mpi)" >"$log" 2>&1 &&
            run_job "$log.run" "$mpi" 2 0 "" "$LOGS/$mpi-pattern-h" &&
            grep -q '^no offload (offload is not available' "$log.run" &&
            grep -q '^ok: 0 wrong values' "$log.run" && ok=1
        cat "$log.run" >>"$log" 2>/dev/null
        report "$mpi installed: the header alone, without the library, falls back to MPI" "$ok" "$log"
    done
}

# example_case MPI NP SHIM STATLINE PROG ARGS...: an example (examples/,
# small sizes) checks its own numerical result; under the shim the named
# statistics line shows offloaded calls.
example_case() {
    local mpi=$1 np=$2 shim=$3 stat=$4 prog=$5 log ok=0
    shift 5
    log="$LOGS/$mpi-example-$prog-np$np-shim$shim-${*//[^a-z0-9]/}.log"
    run_job "$log" "$mpi" "$np" "$shim" \
        "DPUSHIM_MIN_BYTES=1 DPUSHIM_STATS=1 DPUSHIM_RANKS_PER_DPU=2" \
        "build/$mpi/examples/$prog" "$@" &&
        grep -q '^check: ok' "$log" && ok=1
    if [ "$shim" = 1 ] && ! grep -Eq "^dpushim: $stat offloaded=[1-9]" \
            "$log"; then
        echo "no $stat calls offloaded" >>"$log"
        ok=0
    fi
    report "$mpi example $prog $* ($np ranks, $([ "$shim" = 1 ] &&
        echo "shim" || echo "stock MPI")): result checked" "$ok" "$log"
}

example_tests() {
    local mpi=$1 np
    for np in 2 4; do
        example_case "$mpi" "$np" 1 group_init ring_bcast -m group \
            -n 256 -b 16 -M 32 -i 20
        example_case "$mpi" "$np" 1 group_init halo3d -m group -n 14,11,9 \
            -i 20
        example_case "$mpi" "$np" 1 neighbor_alltoallw_init halo3d \
            -m neighbor -n 14,11,9 -i 20
    done
    example_case "$mpi" 2 0 - ring_bcast -m group -n 256 -b 16 -M 32 -i 20
    example_case "$mpi" 2 0 - halo3d -m group -n 14,11,9 -i 20
}

# fortran_tests MPI: the Fortran programs (tests/fortran/), each in every
# binding style, on stock MPI and under the shim (2 ranks with one agent,
# 4 with two): every element checked, the collectives offloaded as the
# program's "expect~:" lines say; f_colls: requests started in one
# language and completed in the other; f_rtypes: reductions of Fortran
# datatypes, bit for bit as stock MPI's.
fortran_tests() {
    local mpi=$1 f t log ok
    for f in f_colls_mpif f_colls_mpi f_colls_f08 f_rtypes_mpif f_rtypes_mpi \
             f_rtypes_f08; do
        t=build/$mpi/ftests/$f
        log="$LOGS/$mpi-$f-stock.log"
        run_job "$log" "$mpi" 2 0 "" "$t"
        ok=$?
        [ $ok = 0 ] && grep -q '^result: ok' "$log" && ok=1 || ok=0
        report "$mpi Fortran $f stock MPI, 2 ranks" "$ok" "$log"
        shim_case "$mpi" "$t" 2 "DPUSHIM_STATS=1 DPUSHIM_MIN_BYTES=1" \
            "(Fortran) 2 ranks, 1 agent"
        shim_case "$mpi" "$t" 4 \
            "DPUSHIM_STATS=1 DPUSHIM_MIN_BYTES=1 DPUSHIM_RANKS_PER_DPU=2" \
            "(Fortran) 4 ranks, 2 agents"
    done
}

# answers_tests MPI: every completion call answers under the shim what
# it answers on stock MPI in the same build (tests/mpi/answers.c, and
# tests/fortran/f_answers.F90 in each binding style): return codes,
# flags, indices (MPICH 4.0.2's mpi_f08 ones count from 0), outcounts,
# statuses word for word, what became of each request; with the shim
# offloading the collectives among them, with the agents up and nothing
# offloaded (a threshold above the 64 KiB blocks), and with the default
# threshold (here, on 2 cores, stock MPI beneath a watching shim). 2
# ranks.
answers_tests() {
    local mpi=$1 t name log ok vars what
    for t in tests/answers ftests/f_answers_mpif ftests/f_answers_mpi \
             ftests/f_answers_f08; do
        name=$(basename "$t")
        t=build/$mpi/$t
        log="$LOGS/$mpi-$name-stock.log"
        run_job "$log" "$mpi" 2 0 "" "$t"
        ok=$?
        [ $ok = 0 ] && grep -q '^result: ok' "$log" &&
            [ "$(grep -c '^ans: ' "$log")" -ge 100 ] && ok=1 || ok=0
        report "$mpi $name stock MPI, 2 ranks: $(grep -c '^ans: ' "$log") answers" \
            "$ok" "$log"
        for what in offloaded above default; do
            vars="DPUSHIM_STATS=1"
            [ $what = offloaded ] && vars+=" DPUSHIM_MIN_BYTES=1"
            [ $what = above ] && vars+=" DPUSHIM_MIN_BYTES=1m"
            log="$LOGS/$mpi-$name-$what.log"
            run_job "$log" "$mpi" 2 1 "$vars" "$t"
            ok=$?
            [ $ok = 0 ] && grep -q '^result: ok' "$log" && ok=1 || ok=0
            diff <(grep '^ans: ' "$LOGS/$mpi-$name-stock.log") \
                 <(grep '^ans: ' "$log") >>"$log" || ok=0
            if [ $what = offloaded ]; then
                grep -Eq '^dpushim: ialltoall offloaded=[1-9]' "$log" ||
                    { echo "nothing offloaded" >>"$log"; ok=0; }
            elif [ $what = above ]; then
                grep -Eq '^dpushim: ialltoall offloaded=0 ' "$log" ||
                    { echo "offloaded above the threshold" >>"$log"; ok=0; }
            fi
            report "$mpi $name under the shim ($what), 2 ranks: the same answers as stock MPI" \
                "$ok" "$log"
        done
    done
}

# idup_tests MPI: nonblocking collectives and MPI_Comm_idup outstanding
# together, then work on the new communicators (tests/mpi/idup_nbc.c,
# the pattern of MPICH's comm/comm_idup_nb), three rounds a job, on stock
# MPI and under the shim offloading them, at 2 and 4 ranks.
idup_tests() {
    local mpi=$1 log ok run np rpd vars
    log="$LOGS/$mpi-idup_nbc-stock.log"
    run_job "$log" "$mpi" 4 0 "IDUP_ROUNDS=3" "build/$mpi/tests/idup_nbc"
    ok=$?
    [ $ok = 0 ] && grep -q '^result: ok' "$log" && ok=1 || ok=0
    report "$mpi idup_nbc stock MPI, 4 ranks" "$ok" "$log"
    for run in 2:0 4:0 4:2; do
        np=${run%:*} rpd=${run#*:}
        vars="IDUP_ROUNDS=3 DPUSHIM_STATS=1 DPUSHIM_MIN_BYTES=1"
        [ "$rpd" = 0 ] || vars+=" DPUSHIM_RANKS_PER_DPU=$rpd"
        log="$LOGS/$mpi-idup_nbc-np$np-rpd$rpd.log"
        run_job "$log" "$mpi" "$np" 1 "$vars" "build/$mpi/tests/idup_nbc"
        ok=$?
        [ $ok = 0 ] && grep -q '^result: ok' "$log" && ok=1 || ok=0
        grep -Eq '^dpushim: ialltoall offloaded=[1-9]' "$log" ||
            { echo "nothing offloaded" >>"$log"; ok=0; }
        report "$mpi idup_nbc under the shim, $np ranks, $([ "$rpd" = 0 ] && echo 1 agent || echo "$rpd ranks an agent"): collectives and MPI_Comm_idup together" \
            "$ok" "$log"
    done
}

# start_listener MPI DIR [HOSTNAME|pidns]: a listening agent on 127.0.0.1
# (any port) with secrets in DIR/sec; sets LISTEN_PID and LISTEN_PORT,
# writes DIR/map. With HOSTNAME it runs in a UTS namespace of that host
# name, so the ranks take it for an agent on another machine (a DPU): no
# pids, no wake-up sockets, its death seen by the end of its connection.
# With pidns it runs in a PID namespace of its own (and a /proc of it),
# with this host's name and network, logging at info level; its UCX on
# TCP only (UCX's shared-memory transports cannot cross PID namespaces).
start_listener() {
    local mpi=$1 dir=$2 name=${3:-} _
    mkdir -p "$dir/sec" && chmod 700 "$dir" "$dir/sec"
    if [ "$name" = pidns ]; then
        DPUSHIM_LOG=info UCX_TLS=tcp,self \
            unshare -p -f --kill-child --mount-proc \
            "build/$mpi/dpu_agent" --listen 127.0.0.1:0 --secret-dir "$dir/sec" \
            >"$dir/listener.log" 2>&1 &
    elif [ -n "$name" ]; then
        unshare -u sh -c 'hostname "$1" && exec "$2" --listen 127.0.0.1:0 --secret-dir "$3"' \
            _ "$name" "build/$mpi/dpu_agent" "$dir/sec" >"$dir/listener.log" 2>&1 &
    else
        "build/$mpi/dpu_agent" --listen 127.0.0.1:0 --secret-dir "$dir/sec" \
            >"$dir/listener.log" 2>&1 &
    fi
    LISTEN_PID=$!
    LISTEN_PORT=
    for _ in $(seq 50); do
        LISTEN_PORT=$(sed -n 's/^dpu_agent: listening on .*:\([0-9][0-9]*\)$/\1/p' \
            "$dir/listener.log")
        [ -n "$LISTEN_PORT" ] && break
        sleep 0.1
    done
    echo "* 127.0.0.1:$LISTEN_PORT" >"$dir/map"
    [ -n "$LISTEN_PORT" ]
}

stop_listener() {
    kill "$LISTEN_PID" 2>/dev/null
    wait "$LISTEN_PID" 2>/dev/null
}

# The listener of start_listener MPI DIR pidns: unshare ignores SIGTERM
# while it waits for its child, so the agent itself (that child, the
# namespace's init) is stopped; unshare then exits.
stop_pidns_listener() {
    local child
    child=$(ps -o pid= --ppid "$LISTEN_PID" 2>/dev/null)
    [ -n "$child" ] && kill $child 2>/dev/null
    wait "$LISTEN_PID" 2>/dev/null
}

# Jobs served by one listening agent (dpu_agent --listen): two at once,
# one refused (its secret is not where the agent looks) while another
# runs, a job whose ranks are killed, and the job after that.
listen_job_tests() {
    local mpi=$1 dir ok log logb vars pa pb
    dir=$(mktemp -d /tmp/dpushim-listen.XXXXXX)
    log="$LOGS/$mpi-listen-start.log"
    if ! start_listener "$mpi" "$dir"; then
        cp "$dir/listener.log" "$log"
        report "$mpi listening agent starts" 0 "$log"
        return
    fi
    vars="DPUSHIM_STATS=1 DPUSHIM_MIN_BYTES=1 DPUSHIM_AGENT_MAP=$dir/map DPUSHIM_SECRET_DIR=$dir/sec"

    # Two jobs at once; each checks its data and its statistics.
    log="$LOGS/$mpi-listen-two-a.log" logb="$LOGS/$mpi-listen-two-b.log"
    run_job "$log" "$mpi" 2 1 "$vars" "build/$mpi/tests/t_alltoall_sizes" &
    pa=$!
    run_job "$logb" "$mpi" 4 1 "$vars DPUSHIM_RANKS_PER_DPU=2" \
        "build/$mpi/tests/t_bcast_roots" &
    pb=$!
    ok=1
    wait $pa || ok=0
    wait $pb || ok=0
    for l in "$log" "$logb"; do
        grep -q '^result: ok' "$l" && stats_match "$l" &&
            grep -Eq '^dpushim: (ialltoall|ibcast) offloaded=[1-9]' "$l" || ok=0
    done
    [ -z "$(ls -A "$dir/sec")" ] || { echo "secret files left: $(ls "$dir/sec")" >>"$log"; ok=0; }
    cat "$logb" >>"$log"
    report "$mpi two jobs at once on one listening agent (2 ranks; 4 ranks, 2 agent processes): results and statistics exact, secrets removed" \
        "$ok" "$log"

    # While a served job runs: a client with a wrong secret is refused,
    # and a job whose secret the agent cannot find is refused, with the
    # reason, and runs on stock MPI.
    log="$LOGS/$mpi-listen-refused.log" logb="$LOGS/$mpi-listen-served.log"
    local ver probe=tests/tools/listen_probe.py ans
    ver=$(sed -n 's/^#define DPS_PROTO_VERSION *\([0-9]*\).*/\1/p' common/dps_proto.h)
    mkdir -p "$dir/other" && chmod 700 "$dir/other"
    run_job "$logb" "$mpi" 2 1 "$vars" "build/$mpi/tests/t_regcache" &
    pb=$!
    sleep 0.5
    /usr/bin/python3 "$probe" 127.0.0.1 "$LISTEN_PORT" "$ver" writekey \
        "$dir/sec" intruder 600 >/dev/null
    ans=$(timeout 10 /usr/bin/python3 "$probe" 127.0.0.1 "$LISTEN_PORT" \
        "$ver" hello intruder random 2>&1)
    run_job "$log" "$mpi" 2 1 "DPUSHIM_STATS=1 DPUSHIM_MIN_BYTES=1 DPUSHIM_AGENT_MAP=$dir/map DPUSHIM_SECRET_DIR=$dir/other" \
        "build/$mpi/tests/cfg_probe"
    ok=$?
    [ $ok = 0 ] && ok=1 || ok=0
    { echo "-- client with a wrong secret got: $ans"; } >>"$log"
    [[ $ans == "refused wrong secret"* ]] &&
        grep -q "refused .* job 'intruder': wrong secret" "$dir/listener.log" ||
        { echo "wrong secret not refused and logged" >>"$log"; ok=0; }
    wait $pb || ok=0
    grep -q '^result: ok' "$log" &&
        [ "$(grep -c 'refused the job: .*no secret file' "$log")" = 1 ] &&
        grep -q '^dpushim: ialltoall offloaded=0 fallback=2' "$log" &&
        grep -q "refused .*no secret file" "$dir/listener.log" ||
        { echo "refusal not reported (job, or listener log)" >>"$log"; ok=0; }
    grep -q '^result: ok' "$logb" && stats_match "$logb" || ok=0
    { echo "-- served job:"; cat "$logb"; echo "-- listener:"; cat "$dir/listener.log"; } >>"$log"
    report "$mpi listening agent, while serving a job (exact): refuses a wrong secret and a job whose secret is elsewhere, logged; that job runs on stock MPI" \
        "$ok" "$log"

    # Malformed and random hellos sent to the port by a fuzzer while a
    # job is served: the job is exact, the listener serves the next one.
    log="$LOGS/$mpi-listen-fuzz-job.log" logb="$LOGS/$mpi-listen-fuzzer.log"
    timeout -k 2 40 /usr/bin/python3 tests/tools/listen_probe.py 127.0.0.1 \
        "$LISTEN_PORT" "$ver" fuzz 8 "$dir/sec" >"$logb" 2>&1 &
    pb=$!
    for _ in $(seq 100); do
        grep -q '^fuzz: crowd gone' "$logb" && break
        sleep 0.1
    done
    run_job "$log" "$mpi" 2 1 "$vars" "build/$mpi/tests/t_regcache"
    ok=$?
    [ $ok = 0 ] && ok=1 || ok=0
    grep -q '^result: ok' "$log" && stats_match "$log" || ok=0
    wait $pb || { echo "fuzzer failed" >>"$log"; ok=0; }
    kill -0 "$LISTEN_PID" 2>/dev/null || { echo "listener died" >>"$log"; ok=0; }
    run_job "$log.next" "$mpi" 2 1 "$vars" "build/$mpi/tests/cfg_probe" &&
        grep -Eq '^dpushim: ialltoall offloaded=[1-9]' "$log.next" ||
        { echo "the next job was not served" >>"$log"; ok=0; }
    { echo "-- fuzzer:"; cat "$logb"; } >>"$log"
    report "$mpi listening agent fuzzed (random, truncated, flipped, slow hellos) while serving a job: job exact, next job served" \
        "$ok" "$log"

    # Kill a served job's ranks: its agent process ends, the listener
    # serves the next job.
    log="$LOGS/$mpi-listen-jobkill.log" ok=1
    ( dps_launch "$mpi" 2 1 "$vars" "build/$mpi/tests/kill_target" ) \
        >"$log.job" 2>&1 &
    pa=$!
    for _ in $(seq 100); do
        grep -q running "$log.job" && [ -n "$(pgrep -P "$LISTEN_PID")" ] && break
        sleep 0.1
    done
    [ -n "$(pgrep -P "$LISTEN_PID")" ] || { echo "no agent process served the job" >"$log"; ok=0; }
    dps_own_pids kill_target | xargs -r kill -9
    wait $pa 2>/dev/null
    for _ in $(seq 100); do
        [ -z "$(pgrep -P "$LISTEN_PID")" ] && break
        sleep 0.1
    done
    [ -z "$(pgrep -P "$LISTEN_PID")" ] || { echo "agent processes left: $(pgrep -P "$LISTEN_PID")" >>"$log"; ok=0; }
    kill -0 "$LISTEN_PID" 2>/dev/null || { echo "listener died" >>"$log"; ok=0; }
    run_job "$log.next" "$mpi" 2 1 "$vars" "build/$mpi/tests/cfg_probe" &&
        grep -q '^result: ok' "$log.next" &&
        grep -Eq '^dpushim: ialltoall offloaded=[1-9]' "$log.next" ||
        { echo "the next job was not served" >>"$log"; ok=0; }
    cat "$log.job" "$log.next" "$dir/listener.log" >>"$log"
    report "$mpi SIGKILL of a served job's ranks ends its agent process; the listener serves the next job" \
        "$ok" "$log"

    # A job's listening agent killed mid-collective: the job finishes on
    # stock MPI (its rank sees the connection end), the listener serves on.
    log="$LOGS/$mpi-listen-failover.log"
    run_job "$log" "$mpi" 2 1 "$vars FO_LISTENER=$LISTEN_PID FO_HOW=kill" \
        "build/$mpi/tests/failover_target"
    ok=$?
    [ $ok = 0 ] && ok=1 || ok=0
    grep -q '^result: ok' "$log" &&
        grep -q '^rank 0: killing agent pid' "$log" &&
        grep -Eq '^dpushim: ialltoall after agent failure: redone=[0-9]+ failed=[0-9]+ stock=[1-9]' "$log" || ok=0
    kill -0 "$LISTEN_PID" 2>/dev/null || { echo "listener died" >>"$log"; ok=0; }
    report "$mpi listening agent killed mid-collective: requests end, results exact, job finishes on stock MPI, listener serves on" \
        "$ok" "$log"

    stop_listener
    rm -rf "$dir"
}

# A listening agent the ranks take for one on another machine (its host
# name differs): jobs are exact without pids or wake-up sockets, and when
# its processes are killed mid-collective the ranks see their connections
# end, tell the others, and finish on stock MPI.
listen_remote_tests() {
    local mpi=$1 dir log ok vars
    dir=$(mktemp -d /tmp/dpushim-remote.XXXXXX)
    log="$LOGS/$mpi-remote-start.log"
    if ! start_listener "$mpi" "$dir" dpu-emulated; then
        cp "$dir/listener.log" "$log"
        report "$mpi listening agent in its own UTS namespace starts (unshare -u)" 0 "$log"
        rm -rf "$dir"
        return
    fi
    vars="DPUSHIM_STATS=1 DPUSHIM_MIN_BYTES=1 DPUSHIM_LOG=info DPUSHIM_AGENT_MAP=$dir/map DPUSHIM_SECRET_DIR=$dir/sec DPUSHIM_RANKS_PER_DPU=2"
    log="$LOGS/$mpi-remote-job.log"
    run_job "$log" "$mpi" 4 1 "$vars" "build/$mpi/tests/t_alltoall_sizes" &&
        grep -q '^result: ok' "$log" && stats_match "$log" &&
        grep -q 'on dpu-emulated) for job' "$log" && ok=1 || ok=0
    report "$mpi agents on another host (emulated: own host name), 4 ranks, 2 agents: results and statistics exact" \
        "$ok" "$log"
    log="$LOGS/$mpi-remote-failover.log"
    run_job "$log" "$mpi" 4 1 "$vars FO_LISTENER=$LISTEN_PID FO_HOW=kill" \
        "build/$mpi/tests/failover_target" &&
        grep -q '^result: ok' "$log" &&
        grep -Eq 'error: the connection to agent 127\.0\.0\.1:[0-9]+ \(pid [0-9]+ on dpu-emulated\) ended' "$log" &&
        grep -Eq '^dpushim: ialltoall after agent failure: redone=[0-9]+ failed=[0-9]+ stock=[1-9]' "$log" &&
        ok=1 || ok=0
    report "$mpi agents on another host killed mid-collective: seen by their connections' end, job finishes on stock MPI" \
        "$ok" "$log"
    stop_listener
    rm -rf "$dir"
}

# A listening agent in a PID namespace of its own on this host, with its
# name (a container, or a DPU's agent as a test would run it): the ranks'
# pids name nothing there. Agents of 2026-12 copied the ranks' memory by
# pid all the same (same node id: "No such process", and on a real DPU
# whatever process had that pid); now each rank's token is not read back,
# the agents say so and serve every rank over UCX, and the ranks neither
# pin, watch, kick nor kill the pid the agent reports (another process
# here).
listen_pidns_tests() {
    local mpi=$1 dir log ok vars
    dir=$(mktemp -d /tmp/dpushim-pidns.XXXXXX)
    log="$LOGS/$mpi-pidns-start.log"
    if ! start_listener "$mpi" "$dir" pidns; then
        cp "$dir/listener.log" "$log"
        report "$mpi listening agent in its own PID namespace starts (unshare -p)" 0 "$log"
        stop_pidns_listener
        rm -rf "$dir"
        return
    fi
    vars="DPUSHIM_STATS=1 DPUSHIM_MIN_BYTES=1 DPUSHIM_LOG=info DPUSHIM_AGENT_MAP=$dir/map DPUSHIM_SECRET_DIR=$dir/sec DPUSHIM_RANKS_PER_DPU=2"
    log="$LOGS/$mpi-pidns-job.log"
    run_job "$log" "$mpi" 4 1 "$vars" "build/$mpi/tests/t_alltoall_sizes" &&
        grep -q '^result: ok' "$log" && stats_match "$log" &&
        grep -Eq '^dpushim: agents .* cma_bytes=0 ucx_bytes=0 dma_bytes=[1-9][0-9]* ' "$log" &&
        grep -q "shares this host's name but not its process space" "$log" &&
        ! grep -q 'runs on the' "$log" && ok=1 || ok=0
    stop_pidns_listener
    grep -q "ranks 0-3 share this agent's node name but not its process space (No such process): reached by DMA through their grants, by their own agent" \
        "$dir/listener.log" || ok=0
    ! grep -q 'No such process$' "$dir/listener.log" || ok=0
    sed 's/^/listener: /' "$dir/listener.log" >>"$log"
    report "$mpi agents in their own PID namespace (same host name), 4 ranks, 2 agents: no CMA by pid (tokens not read back, said once), every rank reached by DMA through its grant (no byte served by a rank's UCX worker), results and statistics exact" \
        "$ok" "$log"
    rm -rf "$dir"
}

# Bad input for listening agents: one line naming the cause at MPI_Init,
# then stock MPI (or, with DPUSHIM_REQUIRE=1, an abort).
listen_bad_input_tests() {
    local mpi=$1 off="offloaded=0 fallback=2 bytes=0" dir full
    dir=$(mktemp -d /tmp/dpushim-bad.XXXXXX)
    chmod 700 "$dir"
    cfg_case "$mpi" "unreadable agent map" \
        "DPUSHIM_MIN_BYTES=1 DPUSHIM_AGENT_MAP=$dir/nonexistent DPUSHIM_SECRET_DIR=$dir/sec" \
        "+cannot read agent map $dir/nonexistent: No such file or directory" \
        "+ialltoall $off" "+ibcast $off"
    require_case "$mpi" "unreadable agent map" \
        "DPUSHIM_REQUIRE=1 DPUSHIM_MIN_BYTES=1 DPUSHIM_AGENT_MAP=$dir/nonexistent DPUSHIM_SECRET_DIR=$dir/sec" \
        "cannot read agent map"
    printf 'no-such-host 127.0.0.1:1\n' >"$dir/map"
    cfg_case "$mpi" "agent map without a line for this host" \
        "DPUSHIM_MIN_BYTES=1 DPUSHIM_AGENT_MAP=$dir/map DPUSHIM_SECRET_DIR=$dir/sec" \
        "+agent map $dir/map has no line for host" "+ialltoall $off"
    printf '* 127.0.0.1:1\n' >"$dir/map"
    cfg_case "$mpi" "no agent listening at the mapped address" \
        "DPUSHIM_MIN_BYTES=1 DPUSHIM_AGENT_MAP=$dir/map DPUSHIM_SECRET_DIR=$dir/sec" \
        "+cannot connect to agent 127.0.0.1:1" "+ialltoall $off"
    cfg_case "$mpi" "secret directory not writable (a file in the way)" \
        "DPUSHIM_MIN_BYTES=1 DPUSHIM_AGENT_MAP=$dir/map DPUSHIM_SECRET_DIR=/etc/hostname/dpushim" \
        "+/etc/hostname/dpushim.*Not a directory" "+ialltoall $off"
    mkdir -p "$dir/open" && chmod 777 "$dir/open"
    cfg_case "$mpi" "secret directory writable by others" \
        "DPUSHIM_MIN_BYTES=1 DPUSHIM_AGENT_MAP=$dir/map DPUSHIM_SECRET_DIR=$dir/open" \
        "+$dir/open.*writable by" "+ialltoall $off"
    # A full file system: a small tmpfs where allowed, else a file size
    # limit of 0 (the write fails the same way to the shim).
    full="$dir/full"
    mkdir -p "$full"
    if mount -t tmpfs -o size=8k,mode=700 tmpfs "$full" 2>/dev/null; then
        dd if=/dev/zero of="$full/fill" bs=1k count=64 2>/dev/null
        cfg_case "$mpi" "secret directory on a full file system" \
            "DPUSHIM_MIN_BYTES=1 DPUSHIM_AGENT_MAP=$dir/map DPUSHIM_SECRET_DIR=$full" \
            "+cannot write $full/job-[0-9a-f]+\.key: No space left on device" \
            "+ialltoall $off"
        [ -z "$(find "$full" -mindepth 1 -maxdepth 1 ! -name fill)" ] ||
            report "$mpi no partial secret file left on a full file system" 0
        umount "$full"
    else
        ( ulimit -f 0; trap '' XFSZ
          cfg_case "$mpi" "secret file cannot be written (file size limit 0; tmpfs not mountable here)" \
              "DPUSHIM_MIN_BYTES=1 DPUSHIM_AGENT_MAP=$dir/map DPUSHIM_SECRET_DIR=$full" \
              "+cannot write $full/job-[0-9a-f]+\.key" "+ialltoall $off"
          echo "$PASS $FAIL" >"$dir/counts" )
        read -r PASS FAIL <"$dir/counts"
    fi
    rm -rf "$dir"
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

# The decoders under libFuzzer with AddressSanitizer, briefly (longer by
# hand: build/fuzz/fuzz_decode -max_total_time=600 build/fuzz/corpus, and
# build/fuzz/fuzz_hello -max_total_time=600 build/fuzz/hello-corpus): the
# wire messages of ranks and agents, and the hello a listening agent takes
# from anyone who connects.
fuzz_decoder() {
    local log="$LOGS/fuzz-decode.log" logh="$LOGS/fuzz-hello.log" ok=0
    local seeds=build/fuzz/seeds hseeds=build/fuzz/hello-seeds
    local t=${DPS_FUZZ_SECONDS:-15}
    if [ ! -x build/fuzz/fuzz_decode ] || [ ! -x build/fuzz/fuzz_hello ]; then
        echo "build/fuzz/fuzz_decode or fuzz_hello not built (make fuzz, needs clang)" >"$log"
        cp "$log" "$logh"
    else
        rm -rf "$seeds" "$hseeds" &&
            mkdir -p "$seeds" "$hseeds" build/fuzz/corpus build/fuzz/hello-corpus &&
            build/fuzz/mkseeds "$seeds" "$hseeds" &&
            timeout 120 build/fuzz/fuzz_decode -max_total_time="$t" \
                -seed=1 -artifact_prefix=build/fuzz/ build/fuzz/corpus "$seeds" \
                >"$log" 2>&1 &&
            grep -q '^Done [0-9]* runs' "$log" && ok=1
    fi
    report "wire decoder fuzzed (libFuzzer, ASan, UBSan) without a fault" \
        "$ok" "$log"
    ok=0
    [ -x build/fuzz/fuzz_hello ] &&
        timeout 120 build/fuzz/fuzz_hello -max_total_time="$t" -seed=1 \
            -artifact_prefix=build/fuzz/hello- build/fuzz/hello-corpus "$hseeds" \
            >"$logh" 2>&1 &&
        grep -q '^Done [0-9]* runs' "$logh" && ok=1
    report "listener hello decoder fuzzed (libFuzzer, ASan, UBSan): accepted hellos re-encode exactly" \
        "$ok" "$logh"
}

no_agents_left() {
    local log="$LOGS/agents-left.log" left
    left=$(dps_agents_left)
    echo "this run's dpu_agent processes: ${left:-none}" >"$log"
    dps_pids_describe $left >>"$log"
    report "no dpu_agent process left after the suite" \
        "$([ -z "$left" ] && echo 1 || echo 0)" "$log"
    [ -z "$left" ] || kill -9 $left  # this suite failed anyway
}

# scripts/cluster_check.sh run alone takes the functions above only.
[ "${DPS_CHECK_LIB:-0}" = 1 ] && return 0
if [ -n "${DPS_CHECK_PART:-}" ]; then
    "$DPS_CHECK_PART" "$@"
    echo "$PASS passed, $FAIL failed"
    [ "$FAIL" = 0 ]
    exit
fi
if [ -n "$(dps_agents_left)" ]; then
    echo "note: dpu_agent processes of this run's tag ($DPS_RUN_TAG) were" \
         "running before the suite: $(dps_agents_left | tr '\n' ' ')"
fi
unit_tests "$@"
readme_check
layout_check "$1"
shellcheck_check
fuzz_decoder
arm64_wire_tests
install_check "$@"
runner_tests "$@"
deb_tests "$@"
for mpi in "$@"; do
    mpi_tests "$mpi"
    config_tests "$mpi"
    regcache_off_case "$mpi"
    # Each erroneous call with a fatal handler at 2 and 3 ranks, with
    # MPI_ERRORS_RETURN at 3 and 4 (and across hosts in the cluster part).
    for cas in bcast_len bcast_len2 a2a_size alias; do
        for np in 2 3; do
            err_case "$mpi" "$np" "$cas" fatal
        done
        for np in 3 4; do
            err_case "$mpi" "$np" "$cas" return
        done
    done
    agent_cli_tests "$mpi"
    kill_case "$mpi" all-ranks
    kill_case "$mpi" leader
    listen_agent_tests "$mpi"
    listen_job_tests "$mpi"
    listen_remote_tests "$mpi"
    # The aarch64 agent under qemu: its command line and jobs for one
    # MPI, reductions of every type for the other (about 2 min in all).
    if [ "$mpi" = openmpi ]; then
        arm64_agent_tests "$mpi"
    else
        arm64_reduce_tests "$mpi"
    fi
    listen_pidns_tests "$mpi"
    listen_bad_input_tests "$mpi"
    for np in 2 4; do
        failover_case "$mpi" "$np" kill
        failover_case "$mpi" "$np" stop
        failover_case "$mpi" "$np" recv
        failover_case "$mpi" "$np" bcast
    done
    failover_kinds_case "$mpi"
    pers_order_failover_case "$mpi" 3
    pers_order_failover_case "$mpi" 4
    outsiders_case "$mpi"
    example_tests "$mpi"
    fft_tests "$mpi"
    fortran_tests "$mpi"
    answers_tests "$mpi"
    idup_tests "$mpi"
    kill_case "$mpi" launcher
    [ "$mpi" = openmpi ] && thirdparty_mpi4py
done
source scripts/cluster_check.sh "$@"  # across emulated hosts; SKIP if not root
no_agents_left
echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
