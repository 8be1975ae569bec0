# shellcheck shell=bash
# make check's part (cases of tests/cases.py): the DPUSHIM_* variables and the agent's command line: every bad value named, every switch honoured.
# Sourced by scripts/test/case.sh (which defines LOGS, TIMEOUT, PASS and
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
