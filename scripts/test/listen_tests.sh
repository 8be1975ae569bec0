# shellcheck shell=bash
# Tests of `dpu_agent --listen` (one listener, one agent process per job).
# Source it; it defines functions only. The caller provides
#   report NAME OK(1 pass, 0 fail) [LOG]   and   LOGS (a log directory),
# as scripts/test/case.sh does, and calls: listen_agent_tests MPI
# Every step has a time limit; the whole function takes about 25 s.

# Variables the steps share (set by listen_agent_tests).
_lt_agent='' _lt_client='' _lt_probe='' _lt_tmp='' _lt_dir='' _lt_port=''
_lt_pid='' _lt_llog='' _lt_ver='' _lt_tag=''

# _lt_wait SECONDS COMMAND...: retry COMMAND every 0.1 s until it succeeds.
_lt_wait() {
    local i n=$(($1 * 10))
    shift
    for ((i = 0; i < n; i++)); do
        "$@" && return 0
        sleep 0.1
    done
    "$@"
}

# _lt_logged REGEX: the listener's log has a line matching REGEX.
_lt_logged() {
    grep -Eq -- "$1" "$_lt_llog"
}

# _lt_expect_log LOG REGEX: wait up to 5 s for REGEX in the listener's log;
# note in LOG if it never comes.
_lt_expect_log() {
    _lt_wait 5 _lt_logged "$2" && return 0
    echo "listener log has no line matching /$2/" >>"$1"
    return 1
}

# Our dpu_agent processes (the listener and its children carry the tag in
# their environment), whatever else runs on the machine.
_lt_ours() {
    dps_pids_tagged dpu_agent "DPS_LISTEN_TEST_TAG=$_lt_tag"
}

_lt_alive() {
    kill -0 "$1" 2>/dev/null &&
        [ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" != Z ]
}

_lt_gone() {
    ! _lt_alive "$1"
}

# _lt_probe ARGS...: the raw-protocol client, 10 s at most.
_lt_probe() {
    timeout -k 2 10 /usr/bin/python3 "$_lt_probe" 127.0.0.1 "$_lt_port" \
        "$_lt_ver" "$@"
}

# _lt_handshake LOG JOB: a full handshake with the shim's client library
# (closed at once); the answer must be "ok PID HOST HEX".
_lt_handshake() {
    local log=$1 job=$2 out
    out=$(timeout -k 2 15 "$_lt_client" -d "$_lt_dir" \
          "127.0.0.1:$_lt_port" "$job" </dev/null 2>&1)
    echo "handshake $job: ${out:0:100}" >>"$log"
    [[ $out =~ ^ok\ [0-9]+\ [^\ ]+\ [0-9a-f]+(\ /[^\ ]+)?$ ]]
}

# Build the test client with the library the shim links (no Makefile rule
# of its own: it is a test tool).
_lt_build_client() {
    local mpi=$1
    local log=$2 src common
    # The library's common sources, as the Makefile lists them.
    read -r -a common < <(make -s --no-print-directory print-COMMON_SRC)
    src=(tests/tools/listen_client.c "${common[@]}")
    _lt_client=build/$mpi/listen_client
    ${CC:-cc} -std=gnu11 -Wall -Wextra -Werror -I. -O2 -g -o "$_lt_client" \
        "${src[@]}" -lucp -lucs >>"$log" 2>&1
}

_lt_start() {
    local mpi=$1
    local log=$2
    _lt_tmp=$(mktemp -d "${TMPDIR:-/tmp}/dps-listen.XXXXXX") || return 1
    _lt_dir=$_lt_tmp/secrets
    _lt_tag=$$.$RANDOM
    _lt_llog=$LOGS/$mpi-listen-agent.log
    DPUSHIM_LOG=info DPS_LISTEN_TEST_TAG=$_lt_tag \
        "$_lt_agent" --listen 127.0.0.1:0 --secret-dir "$_lt_dir" \
        >"$_lt_tmp/stdout" 2>"$_lt_llog" </dev/null &
    _lt_pid=$!
    _lt_wait 5 grep -q '^dpu_agent: listening on ' "$_lt_tmp/stdout"
    _lt_port=$(sed -n 's/^dpu_agent: listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' \
               "$_lt_tmp/stdout")
    cat "$_lt_tmp/stdout" >>"$log"
    [ -n "$_lt_port" ] && [ "$_lt_port" != 0 ] &&
        [ "$(stat -c %a "$_lt_dir")" = 700 ]
}

# (a) a job gets its own agent, which ends with the job's connection.
_lt_valid() {
    local mpi=$1
    local log=$LOGS/$mpi-listen-valid.log ok=1 hold out apid
    : >"$log"
    mkfifo "$_lt_tmp/hold"
    timeout -k 2 20 "$_lt_client" -d "$_lt_dir" "127.0.0.1:$_lt_port" jobA \
        <"$_lt_tmp/hold" >"$_lt_tmp/a.out" 2>&1 &
    local client=$!
    exec {hold}>"$_lt_tmp/hold"
    _lt_wait 10 grep -q . "$_lt_tmp/a.out"
    out=$(head -n 1 "$_lt_tmp/a.out")
    echo "client: ${out:0:100}" >>"$log"
    if [[ $out =~ ^ok\ ([0-9]+)\ [^\ ]+\ [0-9a-f]+(\ /[^\ ]+)?$ ]]; then
        apid=${BASH_REMATCH[1]}
        if [ "$(ps -o ppid= -p "$apid" | tr -d ' ')" != "$_lt_pid" ] ||
           [ "$(ps -o comm= -p "$apid")" != dpu_agent ]; then
            echo "pid $apid is not a dpu_agent child of the listener" >>"$log"
            ok=0
        fi
        [ -e "$_lt_dir/jobA.key" ] && {
            echo "client left its secret file" >>"$log"; ok=0; }
    else
        echo "no 'ok PID HOST HEX' answer" >>"$log"
        ok=0
    fi
    exec {hold}>&-
    wait "$client" || { echo "client failed" >>"$log"; ok=0; }
    if [ -n "${apid:-}" ]; then
        _lt_wait 5 _lt_gone "$apid" || {
            echo "agent $apid still running after the job closed" >>"$log"
            ok=0; }
        _lt_expect_log "$log" "job 'jobA' \\(pid $apid\\) ended: exit status 0" ||
            ok=0
    fi
    report "$mpi listen: a job gets an agent of its own, which ends with the connection" \
        "$ok" "$log"
}

# (b) each refusal, logged with its reason; service goes on.
_lt_refusals() {
    local mpi=$1
    local log=$LOGS/$mpi-listen-refusals.log ok=1 ans peer
    peer='refused 127\.0\.0\.1:[0-9]+'
    : >"$log"
    _lt_probe writekey "$_lt_dir" jobB 600 >/dev/null
    _lt_probe writekey "$_lt_dir" jobM 644 >/dev/null
    # name ans-regex log-regex
    local cases=(
        "wrong secret|hello jobB random|^refused wrong secret$|$peer job 'jobB': wrong secret$"
        "wrong version|hello jobB random $((_lt_ver - 1))|^refused protocol version|$peer: protocol version $((_lt_ver - 1)), this agent speaks $_lt_ver$"
        "missing secret file|hello nojob random|^refused no secret file|$peer job 'nojob': no secret file $_lt_dir/nojob\\.key$"
        "name with '/'|rawname ../x|^refused malformed hello|$peer: malformed hello: name has '/'$"
        "secret file mode 0644|hello jobM random|^refused secret file|$peer job 'jobM': secret file .*mode 0644"
    )
    local c name args are lre
    for c in "${cases[@]}"; do
        IFS='|' read -r name args are lre <<<"$c"
        # shellcheck disable=SC2086
        ans=$(_lt_probe $args 2>&1)
        echo "$name: $ans" >>"$log"
        [[ $ans =~ $are ]] || { echo "  unexpected answer" >>"$log"; ok=0; }
        _lt_expect_log "$log" "$lre" || ok=0
    done
    _lt_alive "$_lt_pid" || { echo "listener died" >>"$log"; ok=0; }
    _lt_handshake "$log" jobB2 || ok=0
    report "$mpi listen: wrong secret, version, missing key, '/' in name, mode 0644 refused with the reason logged; service goes on" \
        "$ok" "$log"
}

# (c) a few hundred hostile or broken clients; the listener survives.
_lt_fuzz() {
    local mpi=$1
    local log=$LOGS/$mpi-listen-fuzz.log ok=1
    : >"$log"
    timeout -k 2 30 /usr/bin/python3 "$_lt_probe" 127.0.0.1 "$_lt_port" \
        "$_lt_ver" fuzz "${DPS_LISTEN_FUZZ_SECONDS:-8}" "$_lt_dir" \
        >>"$log" 2>&1 || ok=0
    _lt_alive "$_lt_pid" || { echo "listener died" >>"$log"; ok=0; }
    _lt_handshake "$log" jobC || ok=0
    report "$mpi listen: fuzzed clients all refused, listener alive and serving" \
        "$ok" "$log"
}

# (d) SIGKILL of a job's agent: logged, the listener serves on.
_lt_kill_child() {
    local mpi=$1
    local log=$LOGS/$mpi-listen-kill.log ok=1 hold out apid
    : >"$log"
    rm -f "$_lt_tmp/hold"
    mkfifo "$_lt_tmp/hold"
    timeout -k 2 20 "$_lt_client" -d "$_lt_dir" "127.0.0.1:$_lt_port" jobD \
        <"$_lt_tmp/hold" >"$_lt_tmp/d.out" 2>&1 &
    local client=$!
    exec {hold}>"$_lt_tmp/hold"
    _lt_wait 10 grep -q . "$_lt_tmp/d.out"
    out=$(head -n 1 "$_lt_tmp/d.out")
    if [[ $out =~ ^ok\ ([0-9]+)\  ]]; then
        apid=${BASH_REMATCH[1]}
        kill -9 "$apid"
        _lt_expect_log "$log" \
            "job 'jobD' \\(pid $apid\\) ended: killed by signal 9" || ok=0
    else
        echo "no agent for jobD: ${out:0:100}" >>"$log"
        ok=0
    fi
    exec {hold}>&-
    wait "$client"
    _lt_alive "$_lt_pid" || { echo "listener died" >>"$log"; ok=0; }
    _lt_handshake "$log" jobD2 || ok=0
    report "$mpi listen: SIGKILL of a job's agent is logged, the listener serves on" \
        "$ok" "$log"
}

# (e) --help documents the options.
_lt_help() {
    local mpi=$1
    local log=$LOGS/$mpi-listen-help.log ok=1 o
    "$_lt_agent" --help >"$log" 2>&1 || ok=0
    for o in --listen --secret-dir; do
        grep -q -- "^ *$o" "$log" || {
            echo "option $o not documented" >>"$log"; ok=0; }
    done
    report "$mpi listen: dpu_agent --help documents --listen and --secret-dir" \
        "$ok" "$log"
}

_lt_stop() {
    local mpi=$1
    local log=$LOGS/$mpi-listen-stop.log ok=1 left
    : >"$log"
    kill -TERM "$_lt_pid" 2>/dev/null
    _lt_wait 5 _lt_gone "$_lt_pid" || {
        echo "listener ignored SIGTERM" >>"$log"; ok=0; kill -9 "$_lt_pid"; }
    wait "$_lt_pid" 2>/dev/null
    _lt_expect_log "$log" 'stopping on signal 15' || ok=0
    left=$(_lt_ours)
    if [ -n "$left" ]; then
        echo "dpu_agent processes of this test left: $left" >>"$log"
        # shellcheck disable=SC2086 # one pid a word
        kill -9 $left
        ok=0
    fi
    echo "this run's dpu_agent processes: $(dps_agents_left |
          tr '\n' ' ')" >>"$log"
    rm -rf "$_lt_tmp"
    report "$mpi listen: listener stops on SIGTERM, no agent of its left" \
        "$ok" "$log"
}

# listen_agent_tests MPI: every test above against build/MPI/dpu_agent.
listen_agent_tests() {
    local mpi=$1
    local log=$LOGS/$mpi-listen-start.log
    _lt_agent=build/$mpi/dpu_agent
    _lt_probe=tests/tools/listen_probe.py
    _lt_ver=$(sed -n 's/^#define DPS_PROTO_VERSION *\([0-9]*\).*/\1/p' \
              common/dps_proto.h)
    : >"$log"
    if ! _lt_build_client "$mpi" "$log"; then
        report "$mpi listen: build the test client" 0 "$log"
        return
    fi
    if ! _lt_start "$mpi" "$log"; then
        cat "$_lt_llog" >>"$log" 2>/dev/null
        report "$mpi listen: listener starts on 127.0.0.1:0 and says its port" \
            0 "$log"
        [ -n "$_lt_pid" ] && kill -9 "$_lt_pid" 2>/dev/null
        rm -rf "$_lt_tmp"
        return
    fi
    report "$mpi listen: listener starts on 127.0.0.1:0 and says its port" \
        1 "$log"
    _lt_valid "$mpi"
    _lt_refusals "$mpi"
    _lt_fuzz "$mpi"
    _lt_kill_child "$mpi"
    _lt_help "$mpi"
    _lt_stop "$mpi"
}
