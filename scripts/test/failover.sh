# shellcheck shell=bash
# make check's part (cases of tests/cases.py): agents that fail: killed, stopped or silent mid-collective, the takeover by stock MPI, and the processes beside the job left alone.
# Sourced by scripts/test/case.sh (which defines LOGS, TIMEOUT, PASS and
# FAIL); functions only.

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
