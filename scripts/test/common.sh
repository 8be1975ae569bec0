# shellcheck shell=bash
# make check's part (cases of tests/cases.py): the helpers every part uses: counting results, running a job under its time limit, matching the statistics lines, a case under the shim, an erroneous call.
# Sourced by scripts/test/case.sh (which defines LOGS, TIMEOUT, PASS and
# FAIL); functions only.

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
    local log=$1 rc
    shift
    if [ -z "${RUN_JOB_SPLIT:-}" ]; then
        timeout -k 5 "$TIMEOUT" bash -c 'source scripts/lib.sh; dps_launch "$@"' \
            _ "$@" >"$log" 2>&1
        return
    fi
    # RUN_JOB_SPLIT=1: the ranks' standard error after their standard
    # output, not within it: the launcher forwards the two streams in
    # chunks, and a line of one may be cut by a line of the other.
    timeout -k 5 "$TIMEOUT" bash -c 'source scripts/lib.sh; dps_launch "$@"' \
        _ "$@" >"$log" 2>"$log.err"
    rc=$?
    cat "$log.err" >>"$log"
    rm -f "$log.err"
    return $rc
}

# The stats lines must equal the program's own "expect:" lines, and match
# its "expect~: REGEX" lines (for counts it can only bound); none other
# may be printed. The rule is bin/dps-test's (one implementation), which
# appends to LOG what disagrees.
stats_match() {
    bin/dps-test --check-stats "$1"
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
# what is wrong (the erring rank's own check may abort the job before the
# agent's verdict is printed: Open MPI lost the other ranks' lines in one
# CI run); with MPI_ERRORS_RETURN every rank returns from its calls,
# an error reported (a rank whose own part had completed before the
# mismatch was seen may keep its data). No agent may be left.
err_case() {
    local mpi=$1 np=$2 cas=$3 h=$4 ok=1 r t0 t1 n
    local log="$LOGS/$mpi-err-$cas-$h-np$np.log"
    local re='do not match|own arguments are erroneous|overlaps the receive buffer|differs from the receive block|differ in size'
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
