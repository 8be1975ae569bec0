# shellcheck shell=bash
# make check's part (cases of tests/cases.py): programs as users write them: the examples, Fortran in three binding styles, the completion calls' answers, MPI_Comm_idup beside collectives, mpi4py.
# Sourced by scripts/test/case.sh (which defines LOGS, TIMEOUT, PASS and
# FAIL); functions only.

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

# fortran_case MPI PROG RUN: a Fortran program (tests/fortran/, each in
# every binding style), RUN stock (MPI alone), np2 (the shim, 2 ranks with
# one agent) or np4-rpd2 (4 with two): every element checked, the collectives offloaded as the
# program's "expect~:" lines say; f_colls: requests started in one
# language and completed in the other; f_rtypes: reductions of Fortran
# datatypes, bit for bit as stock MPI's.
fortran_case() {
    local mpi=$1 f=$2 t=build/$1/ftests/$2 log ok
    case $3 in
    stock)
        log="$LOGS/$mpi-$f-stock.log"
        run_job "$log" "$mpi" 2 0 "" "$t"
        ok=$?
        [ $ok = 0 ] && grep -q '^result: ok' "$log" && ok=1 || ok=0
        report "$mpi Fortran $f stock MPI, 2 ranks" "$ok" "$log" ;;
    np2)
        shim_case "$mpi" "$t" 2 "DPUSHIM_STATS=1 DPUSHIM_MIN_BYTES=1" \
            "(Fortran) 2 ranks, 1 agent" ;;
    np4-rpd2)
        shim_case "$mpi" "$t" 4 \
            "DPUSHIM_STATS=1 DPUSHIM_MIN_BYTES=1 DPUSHIM_RANKS_PER_DPU=2" \
            "(Fortran) 4 ranks, 2 agents" ;;
    *)
        report "$mpi Fortran $f: no run named '$3'" 0 ;;
    esac
}

# answers_case MPI PROG WHAT: every completion call answers under the
# shim (WHAT: offloaded, above, default) what it answered on stock MPI
# (WHAT stock, run first) in the same build (tests/mpi/answers.c, and
# tests/fortran/f_answers.F90 in each binding style): return codes,
# flags, indices (MPICH 4.0.2's mpi_f08 ones count from 0), outcounts,
# statuses word for word, what became of each request; with the shim
# offloading the collectives among them, with the agents up and nothing
# offloaded (a threshold above the 64 KiB blocks), and with the default
# threshold (here, on 2 cores, stock MPI beneath a watching shim). 2
# ranks.
answers_case() {
    local mpi=$1 name t=build/$1/$2 what=$3 log ok vars
    name=$(basename "$t")
    if [ "$what" = stock ]; then
        log="$LOGS/$mpi-$name-stock.log"
        # The answers are compared line by line: stderr apart.
        RUN_JOB_SPLIT=1 run_job "$log" "$mpi" 2 0 "" "$t"
        ok=$?
        [ $ok = 0 ] && grep -q '^result: ok' "$log" &&
            [ "$(grep -c '^ans: ' "$log")" -ge 100 ] && ok=1 || ok=0
        report "$mpi $name stock MPI, 2 ranks: $(grep -c '^ans: ' "$log") answers" \
            "$ok" "$log"
        return
    fi
    vars="DPUSHIM_STATS=1"
    [ "$what" = offloaded ] && vars+=" DPUSHIM_MIN_BYTES=1"
    [ "$what" = above ] && vars+=" DPUSHIM_MIN_BYTES=1m"
    log="$LOGS/$mpi-$name-$what.log"
    RUN_JOB_SPLIT=1 run_job "$log" "$mpi" 2 1 "$vars" "$t"
    ok=$?
    [ $ok = 0 ] && grep -q '^result: ok' "$log" && ok=1 || ok=0
    diff <(grep '^ans: ' "$LOGS/$mpi-$name-stock.log") \
         <(grep '^ans: ' "$log") >>"$log" || ok=0
    if [ "$what" = offloaded ]; then
        grep -Eq '^dpushim: ialltoall offloaded=[1-9]' "$log" ||
            { echo "nothing offloaded" >>"$log"; ok=0; }
    elif [ "$what" = above ]; then
        grep -Eq '^dpushim: ialltoall offloaded=0 ' "$log" ||
            { echo "offloaded above the threshold" >>"$log"; ok=0; }
    fi
    report "$mpi $name under the shim ($what), 2 ranks: the same answers as stock MPI" \
        "$ok" "$log"
}

# idup_case MPI RUN: nonblocking collectives and MPI_Comm_idup
# outstanding together, then work on the new communicators
# (tests/mpi/idup_nbc.c, the pattern of MPICH's comm/comm_idup_nb), three
# rounds a job. RUN: stock (stock MPI, 4 ranks), or NP:RPD under the shim
# offloading them (NP ranks; RPD ranks an agent, 0: one agent).
idup_case() {
    local mpi=$1 run=$2 log ok np rpd vars
    if [ "$run" = stock ]; then
        log="$LOGS/$mpi-idup_nbc-stock.log"
        run_job "$log" "$mpi" 4 0 "IDUP_ROUNDS=3" "build/$mpi/tests/idup_nbc"
        ok=$?
        [ $ok = 0 ] && grep -q '^result: ok' "$log" && ok=1 || ok=0
        report "$mpi idup_nbc stock MPI, 4 ranks" "$ok" "$log"
        return
    fi
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
