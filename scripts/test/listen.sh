# shellcheck shell=bash
# make check's part (cases of tests/cases.py): listening agents (dpu_agent --listen, as on a DPU): jobs served, other hosts, a PID namespace of their own, bad input.
# Sourced by scripts/test/case.sh (which defines LOGS, TIMEOUT, PASS and
# FAIL); functions only.

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

# listen_bad_input_case MPI WHAT: bad input for listening agents, one
# line naming the cause at MPI_Init, then stock MPI (or, with
# DPUSHIM_REQUIRE=1, an abort). WHAT: map-unreadable, map-require,
# map-no-line, no-listener, secret-not-dir, secret-open, secret-full.
listen_bad_input_case() {
    local mpi=$1 what=$2 off="offloaded=0 fallback=2 bytes=0" dir full
    local run="DPUSHIM_MIN_BYTES=1 DPUSHIM_AGENT_MAP"
    dir=$(mktemp -d /tmp/dpushim-bad.XXXXXX)
    chmod 700 "$dir"
    printf '* 127.0.0.1:1\n' >"$dir/map"
    case $what in
    map-unreadable)
        cfg_case "$mpi" "unreadable agent map" \
            "$run=$dir/nonexistent DPUSHIM_SECRET_DIR=$dir/sec" \
            "+cannot read agent map $dir/nonexistent: No such file or directory" \
            "+ialltoall $off" "+ibcast $off" ;;
    map-require)
        require_case "$mpi" "unreadable agent map" \
            "DPUSHIM_REQUIRE=1 $run=$dir/nonexistent DPUSHIM_SECRET_DIR=$dir/sec" \
            "cannot read agent map" ;;
    map-no-line)
        printf 'no-such-host 127.0.0.1:1\n' >"$dir/map"
        cfg_case "$mpi" "agent map without a line for this host" \
            "$run=$dir/map DPUSHIM_SECRET_DIR=$dir/sec" \
            "+agent map $dir/map has no line for host" "+ialltoall $off" ;;
    no-listener)
        cfg_case "$mpi" "no agent listening at the mapped address" \
            "$run=$dir/map DPUSHIM_SECRET_DIR=$dir/sec" \
            "+cannot connect to agent 127.0.0.1:1" "+ialltoall $off" ;;
    secret-not-dir)
        cfg_case "$mpi" "secret directory not writable (a file in the way)" \
            "$run=$dir/map DPUSHIM_SECRET_DIR=/etc/hostname/dpushim" \
            "+/etc/hostname/dpushim.*Not a directory" "+ialltoall $off" ;;
    secret-open)
        mkdir -p "$dir/open" && chmod 777 "$dir/open"
        cfg_case "$mpi" "secret directory writable by others" \
            "$run=$dir/map DPUSHIM_SECRET_DIR=$dir/open" \
            "+$dir/open.*writable by" "+ialltoall $off" ;;
    secret-full)
        # A small tmpfs where allowed, else a file size limit of 0 (the
        # write fails the same way to the shim).
        full="$dir/full"
        mkdir -p "$full"
        if mount -t tmpfs -o size=8k,mode=700 tmpfs "$full" 2>/dev/null; then
            dd if=/dev/zero of="$full/fill" bs=1k count=64 2>/dev/null
            cfg_case "$mpi" "secret directory on a full file system" \
                "$run=$dir/map DPUSHIM_SECRET_DIR=$full" \
                "+cannot write $full/job-[0-9a-f]+\.key: No space left on device" \
                "+ialltoall $off"
            [ -z "$(find "$full" -mindepth 1 -maxdepth 1 ! -name fill)" ] ||
                report "$mpi no partial secret file left on a full file system" 0
            umount "$full"
        else
            ( ulimit -f 0; trap '' XFSZ
              cfg_case "$mpi" "secret file cannot be written (file size limit 0; tmpfs not mountable here)" \
                  "$run=$dir/map DPUSHIM_SECRET_DIR=$full" \
                  "+cannot write $full/job-[0-9a-f]+\.key" "+ialltoall $off"
              echo "$PASS $FAIL" >"$dir/counts" )
            read -r PASS FAIL <"$dir/counts"
        fi ;;
    *)
        report "listen_bad_input_case: unknown check '$what'" 0 ;;
    esac
    rm -rf "$dir"
}
