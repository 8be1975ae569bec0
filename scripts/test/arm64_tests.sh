# shellcheck shell=bash
# Tests of the agent built for aarch64 (a BlueField's Arm cores: make
# agent-arm64) and run under qemu-user (scripts/cluster/arm64-run.sh), serving
# x86-64 ranks: the protocol proven between ISAs (DESIGN.md decision 11).
# Source it; it defines functions only. The caller provides
#   report NAME OK(1 pass, 0 fail) [LOG], run_job LOG MPI NP SHIM VARS
#   PROG..., stats_match LOG, and LOGS (a log directory),
# as scripts/test/case.sh does, and calls (cases arm64/... of tests/cases.py):
#   arm64_wire_tests          no MPI: encoders, decoders, layouts (2 s)
#   arm64_agent_tests MPI     jobs served by an Arm listening agent
#   arm64_reduce_tests MPI    every reduction type computed on Arm
# Times here (2 cores shared with other jobs, load 8 to 16): wire 1-3 s;
# agent 25-100 s per MPI (Open MPI's the longer); reduce 20-60 s per MPI.

# _a64_start DIR [HOSTNAME]: the aarch64 agent listening on 127.0.0.1 (any
# port), secrets in DIR/sec, output in DIR/listener.log; its environment
# is this shell's plus the caller's assignments. Sets _a64_pid, writes
# DIR/map. With HOSTNAME, in a UTS namespace of that name: the ranks take
# it for an agent on another machine (no shared memory, no CMA, no DMA
# engines: UCX get/put, as a DPU's agent).
_a64_start() {
    local dir=$1 name=${2:-} port='' _
    mkdir -p "$dir/sec" && chmod 700 "$dir" "$dir/sec"
    if [ -n "$name" ]; then
        # shellcheck disable=SC2016 # expanded by that sh, not here
        unshare -u sh -c 'hostname "$1" && shift && exec "$@"' _ "$name" \
            scripts/cluster/arm64-run.sh dpu_agent --listen 127.0.0.1:0 \
            --secret-dir "$dir/sec" >"$dir/listener.log" 2>&1 &
    else
        scripts/cluster/arm64-run.sh dpu_agent --listen 127.0.0.1:0 \
            --secret-dir "$dir/sec" >"$dir/listener.log" 2>&1 &
    fi
    _a64_pid=$!
    # qemu starts in a second or two; more on a loaded machine.
    for _ in $(seq 300); do
        port=$(sed -n 's/^dpu_agent: listening on .*:\([0-9][0-9]*\)$/\1/p' \
            "$dir/listener.log")
        [ -n "$port" ] && break
        kill -0 "$_a64_pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "* 127.0.0.1:$port" >"$dir/map"
    [ -n "$port" ]
}

_a64_stop() {
    kill "$_a64_pid" 2>/dev/null
    wait "$_a64_pid" 2>/dev/null
}

# _a64_is_arm PID: PID is qemu running the aarch64 agent (never the host's
# dpu_agent by mistake).
_a64_is_arm() {
    [[ $(readlink "/proc/$1/exe" 2>/dev/null) == */qemu-aarch64* ]] &&
        tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null |
        grep -q 'build/arm64/dpu_agent'
}

# No build/arm64/ or no qemu: one failure naming the cause, never a skip.
_a64_ready() {
    local log=$1
    if [ ! -x build/arm64/dpu_agent ] || [ ! -x build/arm64/wire_dump ] ||
       [ ! -x build/arm64/mkseeds ] || [ ! -x build/tools/wire_dump ] ||
       [ ! -x build/fuzz/mkseeds ]; then
        echo "build/arm64/ not built: run 'make agent-arm64'" >"$log"
        return 1
    fi
    if ! command -v qemu-aarch64 >/dev/null; then
        echo "qemu-aarch64 not installed: run 'make deps-full' as root" >"$log"
        return 1
    fi
}

# The wire on both ISAs: one valid message of every type (and the
# listeners' hellos) encoded on aarch64 gives the bytes x86-64's encoder
# gives; x86-64's messages decode to the same fields on aarch64; every
# field of the messages and of the shared-memory segment lies at the same
# offset with the same size.
arm64_wire_tests() {
    local log="$LOGS/arm64-wire.log" d ok=1
    _a64_ready "$log" || {
        report "aarch64 agent's wire (make agent-arm64, qemu-user)" 0 "$log"
        return
    }
    d=$(mktemp -d /tmp/dpushim-arm64-wire.XXXXXX)
    mkdir -p "$d/x" "$d/xh" "$d/a" "$d/ah"
    {
        build/fuzz/mkseeds "$d/x" "$d/xh" &&
            timeout 60 scripts/cluster/arm64-run.sh mkseeds "$d/a" "$d/ah" &&
            diff -r "$d/x" "$d/a" && diff -r "$d/xh" "$d/ah"
    } >"$log" 2>&1 || ok=0
    report "wire messages of every type and listener hellos encoded on aarch64 (qemu): byte for byte x86-64's" \
        "$ok" "$log"
    log="$LOGS/arm64-decode.log" ok=1
    {
        build/tools/wire_dump "$d"/x/* >"$d/x.txt" &&
            timeout 60 scripts/cluster/arm64-run.sh wire_dump "$d"/x/* >"$d/a.txt" &&
            build/tools/wire_dump --hello "$d"/xh/* >>"$d/x.txt" &&
            timeout 60 scripts/cluster/arm64-run.sh wire_dump --hello "$d"/xh/* \
                >>"$d/a.txt" &&
            diff "$d/x.txt" "$d/a.txt" &&
            [ "$(grep -c '^[a-z_]*: ' "$d/x.txt")" -ge 20 ]
    } >"$log" 2>&1 || ok=0
    report "x86-64's wire messages decode on aarch64 (qemu) to the same fields" \
        "$ok" "$log"
    log="$LOGS/arm64-layout.log" ok=1
    {
        build/tools/wire_dump --layout >"$d/xl.txt" &&
            timeout 60 scripts/cluster/arm64-run.sh wire_dump --layout >"$d/al.txt" &&
            diff "$d/xl.txt" "$d/al.txt"
    } >"$log" 2>&1 || ok=0
    report "wire and shared-memory layouts (every field's offset and size) equal on x86-64 and aarch64" \
        "$ok" "$log"
    rm -rf "$d"
}

# The aarch64 agent beside build/MPI/dpu_agent:
# - its command line prints what the host's agent prints;
# - listening on this host (same host name), it serves x86-64 ranks
#   through the shared-memory channel (work requests and completions in
#   one segment both ISAs map); qemu-user 7.2 has no process_vm_readv, so
#   the agent cannot read the ranks' CMA tokens and moves their data with
#   UCX get/put, as an agent on a DPU does;
#   two agents (DPUSHIM_RANKS_PER_DPU=1), so every wire message type but
#   PING/PONG passes (PING's body is HELLO's, PONG is a header): t_colls;
# - from a UTS namespace of its own (an agent on another machine, a DPU)
#   it serves them with UCX get/put over TCP, with keys packed by the
#   ranks' x86-64 UCX and unpacked by its aarch64 UCX: t_colls, staged.
arm64_agent_tests() {
    local mpi=$1 dir log ok vars o x a
    log="$LOGS/$mpi-arm64-start.log"
    _a64_ready "$log" || {
        report "$mpi aarch64 agent (make agent-arm64, qemu-user)" 0 "$log"
        return
    }
    # Its command line: what the host's agent prints, exit status too
    # (--probe: 1 here, no BlueField).
    log="$LOGS/$mpi-arm64-cli.log" ok=1
    for o in --help --probe --config-markdown --types-markdown; do
        x=$("build/$mpi/dpu_agent" "$o" 2>&1; echo "exit $?")
        a=$(timeout 60 scripts/cluster/arm64-run.sh dpu_agent "$o" 2>&1; echo "exit $?")
        [ "$x" = "$a" ] || {
            echo "dpu_agent $o differs:"
            diff <(echo "$x") <(echo "$a")
            ok=0
        }
    done >"$log" 2>&1
    report "$mpi aarch64 dpu_agent (qemu) --help, --probe, --config-markdown, --types-markdown: as the x86-64 agent's, exit status too" \
        "$ok" "$log"
    dir=$(mktemp -d /tmp/dpushim-arm64.XXXXXX)
    if ! _a64_start "$dir" || ! _a64_is_arm "$_a64_pid"; then
        cp "$dir/listener.log" "$log"
        report "$mpi aarch64 listening agent starts under qemu" 0 "$log"
        _a64_stop
        rm -rf "$dir"
        return
    fi
    vars="DPUSHIM_STATS=1 DPUSHIM_MIN_BYTES=1 DPUSHIM_AGENT_MAP=$dir/map DPUSHIM_SECRET_DIR=$dir/sec DPUSHIM_RANKS_PER_DPU=1"
    log="$LOGS/$mpi-arm64-colls.log"
    run_job "$log" "$mpi" 2 1 "$vars" "build/$mpi/tests/t_colls" &&
        grep -q '^result: ok' "$log" && stats_match "$log" &&
        grep -Eq '^dpushim: agents .* ucx_bytes=0 dma_bytes=[1-9]' "$log" && ok=1 || ok=0
    kill -0 "$_a64_pid" 2>/dev/null || { echo "listener died" >>"$log"; ok=0; }
    { echo "-- listener:"; cat "$dir/listener.log"; } >>"$log"
    report "$mpi x86-64 ranks, aarch64 agents (qemu, listening, 2 agents): t_colls exact through the shared-memory channel, data by DMA through the ranks' grants (qemu-user has no process_vm_readv: the agent cannot read the ranks' tokens, so no CMA; pread/pwrite on the granted descriptor work)" \
        "$ok" "$log"
    _a64_stop
    rm -rf "$dir"

    dir=$(mktemp -d /tmp/dpushim-arm64.XXXXXX)
    log="$LOGS/$mpi-arm64-remote-start.log"
    if ! DPUSHIM_TRANSPORT=ucx _a64_start "$dir" dpu-arm64 ||
       ! _a64_is_arm "$_a64_pid"; then
        cp "$dir/listener.log" "$log"
        report "$mpi aarch64 listening agent in its own UTS namespace starts under qemu" 0 "$log"
        _a64_stop
        rm -rf "$dir"
        return
    fi
    vars="DPUSHIM_STATS=1 DPUSHIM_MIN_BYTES=1 DPUSHIM_LOG=info DPUSHIM_AGENT_MAP=$dir/map DPUSHIM_SECRET_DIR=$dir/sec DPUSHIM_RANKS_PER_DPU=1 DPUSHIM_DATA_PATH=staged"
    log="$LOGS/$mpi-arm64-remote.log"
    run_job "$log" "$mpi" 2 1 "$vars" "build/$mpi/tests/t_colls" &&
        grep -q '^result: ok' "$log" && stats_match "$log" &&
        grep -q 'on dpu-arm64) for job' "$log" && ok=1 || ok=0
    kill -0 "$_a64_pid" 2>/dev/null || { echo "listener died" >>"$log"; ok=0; }
    { echo "-- listener:"; cat "$dir/listener.log"; } >>"$log"
    report "$mpi x86-64 ranks, aarch64 agents on another host (qemu, own host name, 2 agents): t_colls exact over UCX get/put with x86-64's packed keys" \
        "$ok" "$log"
    _a64_stop
    rm -rf "$dir"
}

# Reductions of every predefined type and operation computed by the
# aarch64 agent, bit for bit the MPI library's; the x87 types (x86-64's
# long double) go to stock MPI, as the agent's READY says it lacks them.
arm64_reduce_tests() {
    local mpi=$1 dir log ok vars
    log="$LOGS/$mpi-arm64-rtypes.log"
    _a64_ready "$log" || {
        report "$mpi aarch64 agent (make agent-arm64, qemu-user)" 0 "$log"
        return
    }
    dir=$(mktemp -d /tmp/dpushim-arm64.XXXXXX)
    if ! _a64_start "$dir" || ! _a64_is_arm "$_a64_pid"; then
        cp "$dir/listener.log" "$log"
        report "$mpi aarch64 listening agent starts under qemu" 0 "$log"
        _a64_stop
        rm -rf "$dir"
        return
    fi
    vars="DPUSHIM_STATS=2 DPUSHIM_MIN_BYTES=1 DPUSHIM_AGENT_MAP=$dir/map DPUSHIM_SECRET_DIR=$dir/sec T_AGENT_NO_X87=1"
    run_job "$log" "$mpi" 2 1 "$vars" "build/$mpi/tests/t_rtypes" &&
        grep -q '^result: ok' "$log" && stats_match "$log" && ok=1 || ok=0
    { echo "-- listener:"; cat "$dir/listener.log"; } >>"$log"
    report "$mpi reductions of every type computed by aarch64 agents (qemu): results exact, x87 types on stock MPI" \
        "$ok" "$log"
    _a64_stop
    rm -rf "$dir"
}
