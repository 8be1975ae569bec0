# shellcheck shell=bash
# SPDX-License-Identifier: BSD-3-Clause
# The cluster service (dpu_agent --service; docs/admin.md) on the emulated
# cluster of scripts/test/cluster_check.sh, which sources this file; its
# cases (sv_two_users ... sv_sigterm, tests/cases.py CLUSTER) run after
# cl_need service, which calls sv_up FIRST_MPI [SECOND_MPI] (Slurm up, no
# listening agent left). Uses its report, cl_launch, cl_took_over,
# cl_node_pids, CL_ROOT, CL_RUN and LOGS.
#
# Fixture (sv_up), as an administrator and two users would have it:
# - two users of the cluster's own passwd (cluster.sh): dpsalice (uid
#   4201, also in group dpsshare 4210) and dpsbob (uid 4202);
# - munged on every host and DPU at MUNGE's default socket (each node
#   has a /run of its own), one key for the cluster;
# - /etc/dpushim/agents.map "* {short}-dpu:7420", /etc/dpushim/agent.conf;
# - dpu_agent --service, run by root with no flag, on host1-dpu and
#   host2-dpu: the DPUs' agent of the cluster part (the aarch64 build
#   under qemu-user, as a BlueField's Arm cores run it) where the arm64
#   libmunge.so.2 is there (scripts/deps.sh --full unpacks it: Debian's
#   libmunge2 is not Multi-Arch, so it cannot be installed beside the
#   amd64 one), else the x86-64 build;
# - what the users run, copied to /tmp/dps-pub on each host (the tree
#   may be where only root reads, as CI's checkout is).
# Every case checks every byte (the programs' own checks) and says in
# its log what it saw; the services' logs are $LOGS/service-*.log.

SV_PUB=/tmp/dps-pub
SV_SOCK=/run/munge/munge.socket.2
SV_SVC=()     # per DPU number: the `cluster.sh run` of its service
SV_LOGLEN=()  # per DPU number: lines of its log before the case

sv_node() { "$CL_ROOT/scripts/cluster/cluster.sh" run "$@"; }

# sv_as NODE USER CMD...: CMD on NODE as USER (groups from the cluster's
# group file), with a user's plain environment.
sv_as() {
    local node=$1 user=$2
    shift 2
    # From /tmp: the caller's directory may be one the user cannot enter
    # (CI's checkout is in a directory of root's alone).
    "$CL_ROOT/scripts/cluster/cluster.sh" run "$node" env -i -C /tmp \
        PATH=/usr/bin:/bin HOME=/tmp USER="$user" \
        setpriv --reuid="$user" --regid="$user" --init-groups "$@"
}

# sv_timed CMD...: CMD (a function of this file included) within the
# job timeout, in a subshell; its status (124: timed out).
sv_timed() {
    local pid t=0
    ("$@") &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        sleep 0.2
        t=$((t + 1))
        if [ "$t" -ge $((CL_JOB_TIMEOUT * 5)) ]; then
            pkill -TERM -P "$pid" 2>/dev/null
            kill -TERM "$pid" 2>/dev/null
            wait "$pid"
            return 124
        fi
    done
    wait "$pid"
}

sv_log() { echo "$LOGS/service-host$1-dpu.log"; }

# sv_mark H: remember where host H's DPU's service log is now (0 lines
# before its first start).
sv_mark() { SV_LOGLEN[$1]=$( (wc -l <"$(sv_log "$1")") 2>/dev/null || echo 0); }

# sv_since H: what host H's DPU's service logged since sv_mark.
sv_since() { tail -n +"$((${SV_LOGLEN[$1]:-0} + 1))" "$(sv_log "$1")" 2>/dev/null; }

# sv_wait_since H REGEX SECONDS: until the service logs REGEX (0) or not.
sv_wait_since() {
    local i
    for ((i = 0; i < $3 * 10; i++)); do
        sv_since "$1" | grep -Eq "$2" && return 0
        sleep 0.1
    done
    return 1
}

# sv_service_start H: dpu_agent --service on hostH-dpu, as its unit
# starts it (root, no flag: /etc/dpushim/agent.conf).
sv_service_start() {
    local h=$1
    sv_mark "$h"
    # shellcheck disable=SC2086 # a command and its words
    sv_node "host$h-dpu" $SV_AGENT --service \
        >>"$(sv_log "$h")" 2>&1 </dev/null &
    SV_SVC[$h]=$!
    sv_wait_since "$h" '^dpu_agent: listening on 0\.0\.0\.0:7420' 60
}

# sv_service_pid H: the service's own pid (root namespace), not a
# worker's (a worker is the service's child).
sv_service_pid() {
    local all p
    all=" $(cl_node_pids "host$1-dpu" 'dpu_agent --service' | tr '\n' ' ') "
    for p in $all; do
        [[ $all == *" $(ps -o ppid= -p "$p" | tr -d ' ') "* ]] && continue
        echo "$p"
        return 0
    done
    return 1
}

# sv_service_stop H: SIGTERM to the service; 0 if it exits with 0 within
# 15 s and said it was ending its workers.
sv_service_stop() {
    local h=$1 p rc i
    p=$(sv_service_pid "$h") || return 1
    kill -TERM "$p"
    for ((i = 0; i < 150; i++)); do
        kill -0 "${SV_SVC[$h]}" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "${SV_SVC[$h]}" 2>/dev/null && return 1
    wait "${SV_SVC[$h]}"
    rc=$?
    SV_SVC[$h]=
    grep -q 'stopping on signal 15: ending [0-9]* worker' "$(sv_log "$h")" &&
        [ "$rc" = 0 ]
}

sv_up() {
    local log=$LOGS/service-up.log n m
    SV_MPI=$1
    SV_AGENT=$CL_ROOT/build/$SV_MPI/dpu_agent SV_KIND="x86-64"
    if [[ $CL_DPU_AGENT == *arm64-run.sh* ]] &&
       [ -e /usr/local/lib/dpushim-arm64/libmunge.so.2 ]; then
        SV_AGENT=$CL_DPU_AGENT SV_KIND="aarch64 (qemu-user)"
    fi
    echo "the DPUs' services: $SV_KIND dpu_agent ($SV_AGENT)" >>"$log"
    {
        echo "dpsalice:x:4201:4201:dpushim test user:/tmp:/bin/sh"
        echo "dpsbob:x:4202:4202:dpushim test user:/tmp:/bin/sh"
    } >>"$CL_RUN/etc/passwd"
    {
        echo "dpsalice:x:4201:"
        echo "dpsbob:x:4202:"
        echo "dpsshare:x:4210:dpsalice"
    } >>"$CL_RUN/etc/group"
    (umask 077 && head -c 1024 /dev/urandom >"$CL_RUN/munge.key")
    for n in host1 host2 host3 host1-dpu host2-dpu; do
        sv_node "$n" munged --force --key-file="$CL_RUN/munge.key" \
            --socket="$SV_SOCK" --pid-file=/run/munge/munged.pid \
            --seed-file=/run/munge/munged.seed \
            --log-file="$LOGS/munged-$n.log" >>"$log" 2>&1 || return 1
    done
    echo '* {short}-dpu:7420   # every host: its DPU' \
        >"$CL_RUN/etc/dpushim/agents.map"
    printf '%s\n' "# the emulated DPUs' services (docs/admin.md)" \
        "listen = 0.0.0.0:7420" "log_level = info" \
        >"$CL_RUN/etc/dpushim/agent.conf"
    chmod 0644 "$CL_RUN/etc/dpushim/"*
    # The test tools, built with the library the shim links; the SPANK
    # plugin, offered by every host's Slurm (off unless asked).
    (
        cd "$CL_ROOT" || exit 1
        make --no-print-directory build/slurm/spank_dpushim.so || exit 1
        read -r -a srcs < <(make -s --no-print-directory print-COMMON_SRC)
        for m in service_client grant_send; do
            ${CC:-cc} -std=gnu11 -Wall -Wextra -Werror -I. -O2 -g \
                -o "build/$SV_MPI/$m" "tests/tools/$m.c" "${srcs[@]}" \
                -lucp -lucs || exit 1
        done
    ) >>"$log" 2>&1 || return 1
    for n in host1 host2 host3; do
        # shellcheck disable=SC2016 # expanded by the node's shell
        sv_node "$n" sh -c '
            set -e
            d=$1 root=$2 first=$3
            shift 3
            rm -rf "$d"
            mkdir -p "$d/scripts" "$d/include"
            cp "$root/scripts/dpushim" "$d/scripts/"
            cp "$root/include/dpushim.h" "$d/include/"
            cp "$root/build/$first/service_client" \
               "$root/build/$first/grant_send" \
               "$root/build/slurm/spank_dpushim.so" "$d/"
            for m; do
                mkdir -p "$d/build/$m/tests" "$d/build/$m/examples"
                cp "$root/build/$m/libdpushim.so" "$root/build/$m/dpu_agent" \
                   "$d/build/$m/"
                cp "$root/build/$m/tests/t_colls" \
                   "$root/build/$m/tests/failover_target" "$d/build/$m/tests/"
                cp "$root/build/$m/examples/halo3d" \
                   "$root/build/$m/examples/fft3d" "$d/build/$m/examples/"
            done
            chmod -R a+rX "$d"' sh "$SV_PUB" "$CL_ROOT" "$SV_MPI" "$@" \
            >>"$log" 2>&1 || return 1
    done
    echo "optional $SV_PUB/spank_dpushim.so default=off runner=$SV_PUB/scripts/dpushim" \
        >"$CL_RUN/slurm/etc/plugstack.conf.d/dpushim.conf"
    sv_service_start 1 && sv_service_start 2
}

sv_down() {
    local h
    for h in 1 2; do
        [ -n "${SV_SVC[$h]:-}" ] || continue
        sv_service_stop "$h" || kill "${SV_SVC[$h]}" 2>/dev/null
    done
}

# sv_job LOG NP MPI USER VARS PROG...: a job of USER through srun (NP 2:
# host1 and host2, a rank each), the shim by the runner, judged as
# cluster_check.sh's jobs are (cl_launch).
sv_job() {
    local log=$1 np=$2 mpi=$3 user=$4 vars=$5
    shift 5
    # shellcheck disable=SC2086 # VARS are words
    DPS_RUN_AS=$user DPS_SRUN_NAME=dps-$user cl_launch "$log" "$np" "$mpi" \
        --srun "$mpi" "$(cl_layout "$np")" $vars \
        "$SV_PUB/scripts/dpushim" "$@"
}

# sv_offloaded LOG NHOSTS: with DPUSHIM_STATS=2, each of the job's hosts
# host1..hostNHOSTS had its DPU's agent offload (the shim names the
# agent's host).
sv_offloaded() {
    local h ok=0
    for ((h = 1; h <= $2; h++)); do
        grep -Eq "^dpushim: agent [0-9]+ of host$h \(.* on host$h-dpu\)\): ranks=[0-9,-]+ offloaded=[1-9]" "$1" || {
            echo "host$h: no line of its DPU's agent offloading" >>"$1"
            ok=1
        }
    done
    return $ok
}

# sv_workers H: the service's processes on hostH-dpu, one line each: pid,
# uid, gids, groups, effective capabilities.
sv_workers() {
    # shellcheck disable=SC2016 # expanded by the node's shell
    sv_node "host$1-dpu" sh -c '
        for p in /proc/[0-9]*; do
            c=$(tr "\0" " " <"$p/cmdline" 2>/dev/null) || continue
            case $c in *"dpu_agent --service"*) ;; *) continue ;; esac
            printf "pid %s " "${p#/proc/}"
            awk "/^(Uid|Gid|Groups|CapEff):/" "$p/status" | tr "\n\t" "  "
            echo
        done'
}

# (1) Both users' jobs at once on the same services, each MPI: every byte
# right, every host's DPU offloading, each worker its job's user with the
# user's groups and no capability.
sv_two_users() {
    local m1=$1 m2=$2 log=$LOGS/service-two-users.log ok=1 pa pb w
    local vars="DPUSHIM_STATS=2 DPUSHIM_MIN_BYTES=1 DPUSHIM_LOG=info"
    : >"$log"
    sv_mark 1
    sv_job "$LOGS/service-alice.log" 2 "$m1" dpsalice "$vars" \
        "$SV_PUB/build/$m1/tests/t_colls" &
    pa=$!
    sv_job "$LOGS/service-bob.log" 2 "$m2" dpsbob "$vars" \
        "$SV_PUB/build/$m2/tests/t_colls" &
    pb=$!
    if sv_wait_since 1 "of dpsalice \(uid 4201\)" 120 &&
       sv_wait_since 1 "of dpsbob \(uid 4202\)" 120; then
        w=$(sv_workers 1)
        echo "host1-dpu's service and workers while both jobs ran:" >>"$log"
        echo "$w" >>"$log"
        grep -Eq "Uid: 0 0 0 0 " <<<"$w" ||
            { echo "no service process of root" >>"$log"; ok=0; }
        grep -Eq "Uid: 4201 4201 4201 4201 +Gid: 4201 4201 4201 4201 +Groups: (.* )?4210 .*CapEff: 0+ " <<<"$w" ||
            { echo "no worker of dpsalice (4201, group 4210, no capability)" >>"$log"; ok=0; }
        grep -Eq "Uid: 4202 4202 4202 4202 +Gid: 4202 4202 4202 4202 .*CapEff: 0+ " <<<"$w" ||
            { echo "no worker of dpsbob (4202, no capability)" >>"$log"; ok=0; }
    else
        echo "host1-dpu's service did not start both users' workers" >>"$log"
        ok=0
    fi
    wait "$pa" || { echo "dpsalice's job failed" >>"$log"; ok=0; }
    wait "$pb" || { echo "dpsbob's job failed" >>"$log"; ok=0; }
    for w in alice bob; do
        grep -q '^result: ok' "$LOGS/service-$w.log" &&
            sv_offloaded "$LOGS/service-$w.log" 2 ||
            { echo "$w's job: see service-$w.log" >>"$log"; ok=0; }
    done
    report "$m1 and $m2: two users' jobs at once (srun, 2 hosts x 1 rank each) on the DPUs' agent services ($SV_KIND): each worker runs as its job's user, every byte right" \
        "$ok" "$log"
}

# (2) No DPUSHIM_* variable: the cluster's map, MUNGE, the runner (its
# --stats=2 only, to see the offload); srun across hosts and mpirun
# (mpiexec) on one host. fft3d -n 64 on 2 ranks: 1 MiB blocks, offloaded
# at DPUSHIM_MIN_BYTES=auto's 256 KiB; its transform checked against the
# serial one.
sv_no_variables() {
    local m=$1 log=$LOGS/service-novars-$1.log ok=1 run h
    local app=("$SV_PUB/build/$m/examples/fft3d" -n 64 -s 2)
    : >"$log"
    : >"$log.run"
    sv_mark 1
    sv_mark 2
    sv_job "$log.srun" 2 "$m" dpsbob "" --stats=2 "${app[@]}" || ok=0
    cat "$log.srun" >>"$log"
    grep -q '^fft3d: ok' "$log.srun" && sv_offloaded "$log.srun" 2 || ok=0
    for h in 1 2; do
        sv_since "$h" | grep -q "of dpsbob (uid 4202)" ||
            { echo "host$h-dpu served no job of dpsbob" >>"$log"; ok=0; }
    done
    sv_mark 1
    case $m in
    openmpi) run=(mpirun.openmpi -np 2) ;;
    *) run=(mpiexec.mpich -n 2) ;;
    esac
    echo "+ host1 as dpsalice: ${run[*]} dpushim --stats=2 fft3d" >>"$log.run"
    sv_timed sv_as host1 dpsalice "${run[@]}" \
        "$SV_PUB/scripts/dpushim" --stats=2 "${app[@]}" >>"$log.run" 2>&1 ||
        ok=0
    cat "$log.run" >>"$log"
    grep -q '^fft3d: ok' "$log.run" && sv_offloaded "$log.run" 1 || ok=0
    sv_since 1 | grep -q "of dpsalice (uid 4201)" ||
        { echo "host1-dpu served no job of dpsalice" >>"$log"; ok=0; }
    report "$m: no DPUSHIM_* variable: srun dpushim ./app (2 hosts) and ${run[0]} dpushim ./app offload to the DPUs' services (/etc/dpushim/agents.map, MUNGE), exact" \
        "$ok" "$log"
}

# (2b) The SPANK plugin: srun --dpushim ./app, no runner, no variable,
# uses the DPUs; a task that is no MPI program is left alone; without
# the option (the site's default here: off) nothing is preloaded.
sv_spank() {
    local m=$1 log=$LOGS/service-spank-$1.log ok=1 out h
    : >"$log"
    sv_mark 1
    sv_mark 2
    DPS_SRUN_OPTS=--dpushim DPS_RUN_AS=dpsalice DPS_SRUN_NAME=dps-spank \
        cl_launch "$log.srun" 2 "$m" --srun "$m" "$(cl_layout 2)" \
        "$SV_PUB/build/$m/examples/halo3d" || ok=0
    cat "$log.srun" >>"$log"
    grep -q '^check: ok' "$log.srun" || ok=0
    for h in 1 2; do
        sv_since "$h" | grep -q "of dpsalice (uid 4201)" ||
            { echo "host$h-dpu served no job of dpsalice" >>"$log"; ok=0; }
    done
    # shellcheck disable=SC2016 # the task's shell expands it
    out=$(sv_as host1 dpsalice srun --dpushim -N 1 -n 1 -w host1 --chdir=/tmp \
          /bin/sh -c 'echo "preload=[$LD_PRELOAD]"' 2>&1)
    echo "non-MPI task with --dpushim: $out" >>"$log"
    [ "$out" = "preload=[]" ] || ok=0
    # shellcheck disable=SC2016
    out=$(sv_as host1 dpsalice srun -N 1 -n 1 -w host1 --chdir=/tmp \
          /bin/sh -c 'echo "preload=[$LD_PRELOAD]"' 2>&1)
    echo "without --dpushim: $out" >>"$log"
    [ "$out" = "preload=[]" ] || ok=0
    report "$m: the SPANK plugin: srun --dpushim ./app (no runner, no DPUSHIM_* variable) uses the DPUs' services; other tasks are left alone" \
        "$ok" "$log"
}

# sv_refused LOG WHAT REGEX CMD...: CMD's output must match REGEX, and so
# must host1-dpu's service log since the mark.
sv_refused() {
    local log=$1 what=$2 re=$3 out
    shift 3
    sv_mark 1
    out=$("$@" 2>&1)
    echo "$what: $out" >>"$log"
    grep -Eq "$re" <<<"$out" || { echo "  expected: $re" >>"$log"; return 1; }
    sv_wait_since 1 "refused .*$re" 5 ||
        { echo "  not in the service's log: $re" >>"$log"; return 1; }
    sv_since 1 | grep -E "refused" >>"$log"
}

# (3) Credentials that must not pass, at the handshake: another user's,
# a replayed one, a forged one, none.
sv_credentials() {
    local log=$LOGS/service-credentials.log ok=1 c=$SV_PUB/service_client
    local to=host1-dpu:7420
    : >"$log"
    sv_as host1 dpsalice "$c" -c /tmp/alice.cred "$to" job-a1 >>"$log" 2>&1 &&
        sv_refused "$log" "dpsbob presents dpsalice's (unused) credential" \
            "credential of uid 4201 is not for this connection" \
            sv_as host1 dpsbob "$c" -p /tmp/alice.cred "$to" job-a1 || ok=0
    sv_as host1 dpsalice "$c" -w /tmp/alice2.cred "$to" job-a2 </dev/null \
        >>"$log" 2>&1 &&
        sv_refused "$log" "dpsalice's accepted credential replayed" \
            "[Rr]eplayed credential" \
            sv_as host1 dpsalice "$c" -p /tmp/alice2.cred "$to" job-a2 || ok=0
    sv_node host1 sh -c 'echo "MUNGE:AwQFAAC5Yh8b0bD2kEoU1fTwIYVnuGRK:" >/tmp/forged.cred'
    sv_refused "$log" "a forged credential" "credential refused by MUNGE" \
        sv_as host1 dpsbob "$c" -p /tmp/forged.cred "$to" job-b1 || ok=0
    sv_refused "$log" "no credential" "no credential" \
        sv_as host1 dpsbob "$c" -n "$to" job-b2 || ok=0
    report "the service refuses another user's credential, a replayed one, a forged one and none, saying why to the job and in its log" \
        "$ok" "$log"
}

# (4) Jobs the service refuses go on with stock MPI, exact, saying why
# (or abort with DPUSHIM_REQUIRE=1): a job with a secret file, one that
# cannot reach munged, one of root.
sv_refused_jobs() {
    local m=$1 log=$LOGS/service-refused-jobs.log ok=1 run out v
    local ompi=(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
    : >"$log"
    case $m in
    openmpi) run=(mpirun.openmpi --oversubscribe -np 2) ;;
    *) run=(mpiexec.mpich -n 2) ;;
    esac
    for v in "DPUSHIM_AUTH=secret:authenticates jobs by MUNGE" \
             "DPUSHIM_MUNGE_SOCKET=/nonexistent:cannot get a MUNGE credential"; do
        sv_mark 1
        out=$(sv_timed sv_as host1 dpsbob env \
              "${v%%:*}" DPUSHIM_STATS=1 "${run[@]}" "$SV_PUB/scripts/dpushim" \
              "$SV_PUB/build/$m/examples/halo3d" 2>&1)
        printf '%s\n%s\n' "+ dpsbob, ${v%%:*}:" "$out" >>"$log"
        grep -q "${v#*:}" <<<"$out" && grep -q '^check: ok' <<<"$out" &&
            ! grep -Eq 'offloaded=[1-9]' <<<"$out" ||
            { echo "  expected '${v#*:}', check: ok, nothing offloaded" >>"$log"; ok=0; }
        out=$(sv_timed sv_as host1 dpsbob env \
              "${v%%:*}" DPUSHIM_REQUIRE=1 "${run[@]}" \
              "$SV_PUB/scripts/dpushim" "$SV_PUB/build/$m/examples/halo3d" 2>&1)
        printf '%s\n%s\n' "+ dpsbob, ${v%%:*} DPUSHIM_REQUIRE=1:" "$out" >>"$log"
        grep -q "${v#*:}" <<<"$out" && ! grep -q '^check: ok' <<<"$out" ||
            { echo "  expected '${v#*:}' and no result" >>"$log"; ok=0; }
    done
    grep -q "authenticates jobs by MUNGE" "$(sv_log 1)" ||
        { echo "a secret-file job is not in host1-dpu's service log" >>"$log"; ok=0; }
    sv_mark 1
    out=$(sv_timed sv_node host1 env "${ompi[@]}" \
          DPUSHIM_STATS=1 "${run[@]}" "$CL_ROOT/scripts/dpushim" \
          "$CL_ROOT/build/$m/examples/halo3d" 2>&1)
    printf '%s\n%s\n' "+ root:" "$out" >>"$log"
    grep -q "jobs of root (uid 0) are not served" <<<"$out" &&
        grep -q '^check: ok' <<<"$out" ||
        { echo "  expected the refusal of root and check: ok" >>"$log"; ok=0; }
    sv_since 1 | grep -q "jobs of root (uid 0) are not served" ||
        { echo "root's job is not in the service's log" >>"$log"; ok=0; }
    report "$m: jobs the service refuses (a secret file, no munged, root's) go on with stock MPI, exact, saying why; DPUSHIM_REQUIRE=1 aborts them" \
        "$ok" "$log"
}

# (5) A grant from a process of another uid: root's reaches the worker
# and is refused there; another user's cannot reach its socket.
sv_foreign_grant() {
    local log=$LOGS/service-grant.log ok=1 fifo=$CL_RUN/sv-hold out path
    local hold pid i
    : >"$log"
    rm -f "$fifo"
    mkfifo "$fifo"
    sv_mark 1
    sv_as host1 dpsalice "$SV_PUB/service_client" host1-dpu:7420 job-grant \
        <"$fifo" >"$log.client" 2>&1 &
    pid=$!
    exec {hold}>"$fifo"
    for ((i = 0; i < 100; i++)); do
        grep -q '^ok ' "$log.client" && break
        sleep 0.1
    done
    out=$(cat "$log.client")
    path=${out##* }
    echo "dpsalice's worker: ${out:0:40}... grant socket $path" >>"$log"
    if [[ $path != /run/dpushim/grant/4201/g-* ]]; then
        echo "no grant socket under /run/dpushim/grant/4201" >>"$log"
        ok=0
    else
        out=$(sv_node host1 "$SV_PUB/grant_send" "$path" 0 0 2>&1)
        echo "root's grant: $out" >>"$log"
        sv_wait_since 1 "grant refused: from pid [0-9]+, uid 0" 10 ||
            { echo "the worker did not refuse root's grant" >>"$log"; ok=0; }
        out=$(sv_as host1 dpsbob "$SV_PUB/grant_send" "$path" 0 0 2>&1)
        echo "dpsbob's grant: $out" >>"$log"
        grep -q "not sent: Permission denied" <<<"$out" || ok=0
    fi
    sv_since 1 >>"$log"
    exec {hold}>&-
    wait "$pid"
    rm -f "$fifo"
    report "a DMA grant from another uid: root's is refused by the worker (its log says whose), another user's cannot reach dpsalice's socket" \
        "$ok" "$log"
}

# (6) Restarted while idle, the service serves the next job.
sv_restart() {
    local m=$1 log=$LOGS/service-restart.log ok=1
    : >"$log"
    sv_service_stop 1 || { echo "host1-dpu's service did not stop cleanly" >>"$log"; ok=0; }
    sv_service_start 1 || { echo "host1-dpu's service did not start again" >>"$log"; ok=0; }
    sv_job "$log.job" 2 "$m" dpsalice "DPUSHIM_STATS=2 DPUSHIM_MIN_BYTES=1" \
        "$SV_PUB/build/$m/examples/halo3d" || ok=0
    cat "$log.job" >>"$log"
    grep -q '^check: ok' "$log.job" && sv_offloaded "$log.job" 2 || ok=0
    sv_since 1 | grep -q "of dpsalice (uid 4201)" || ok=0
    report "$m: host1-dpu's service stopped (SIGTERM) and started while idle serves the next job" \
        "$ok" "$log"
}

# sv_fault_job LOG MPI USER NAME INJECT CASELOG: USER's failover_target
# on 2 hosts whose rank on host2 waits, its collectives pending, for
# /tmp/dps-pub/go-NAME on host2 (cluster_check.sh's fault cases); once it
# waits, INJECT CASELOG makes the fault; then the rank goes on, and the
# job must take over on stock MPI, exact. 0 if so; else says why in
# CASELOG.
sv_fault_job() {
    local log=$1 m=$2 user=$3 name=$4 inject=$5 caselog=$6 pid ok=0
    sv_node host2 rm -f "$SV_PUB/go-$name"
    sv_job "$log" 2 "$m" "$user" \
        "DPUSHIM_STATS=1 DPUSHIM_MIN_BYTES=1 DPUSHIM_LOG=info FO_HOW=none FO_RPD=1 FO_WAIT=$SV_PUB/go-$name" \
        "$SV_PUB/build/$m/tests/failover_target" &
    pid=$!
    if cl_wait_line "$log" '^rank [0-9]+: collectives pending, waiting for' \
        120 "$pid"; then
        "$inject" "$caselog" || ok=1
        sv_node host2 touch "$SV_PUB/go-$name"
    else
        echo "$user's job did not reach its collectives" >>"$caselog"
        ok=1
    fi
    wait "$pid"
    CL_FAULT_NP=2 cl_took_over "$log" ||
        { echo "$user's job: see $(basename "$log")" >>"$caselog"; ok=1; }
    return $ok
}

# Kill dpsalice's worker on host2-dpu (CASELOG says which).
sv_kill_alices_worker() {
    local w p
    w=$(sv_workers 2)
    p=$(awk '/Uid: 4201 /{print $2}' <<<"$w" | head -1)
    echo "host2-dpu: $w" >>"$1"
    if [ -z "$p" ]; then
        echo "no worker of dpsalice on host2-dpu" >>"$1"
        return 1
    fi
    echo "killing dpsalice's worker on host2-dpu (pid $p there)" >>"$1"
    sv_node host2-dpu kill -9 "$p"
}

# SIGTERM to host2-dpu's service, which must end its workers and exit 0.
sv_term_service() {
    sv_service_stop 2 ||
        { echo "host2-dpu's service did not end its workers and exit 0" >>"$1"; return 1; }
}

# (7) A worker killed mid-job: its job goes on with stock MPI, exact; the
# service and the other user's job run on.
sv_worker_kill() {
    local m1=$1 m2=$2 log=$LOGS/service-worker-kill.log ok=1 pb
    : >"$log"
    sv_mark 2
    sv_job "$LOGS/service-kill-bob.log" 2 "$m2" dpsbob \
        "DPUSHIM_STATS=2 DPUSHIM_MIN_BYTES=1" \
        "$SV_PUB/build/$m2/tests/t_colls" &
    pb=$!
    sv_fault_job "$LOGS/service-kill-alice.log" "$m1" dpsalice kill \
        sv_kill_alices_worker "$log" || ok=0
    wait "$pb"
    grep -q '^result: ok' "$LOGS/service-kill-bob.log" &&
        sv_offloaded "$LOGS/service-kill-bob.log" 2 ||
        { echo "dpsbob's job: see service-kill-bob.log" >>"$log"; ok=0; }
    sv_service_pid 2 >/dev/null ||
        { echo "host2-dpu's service is gone" >>"$log"; ok=0; }
    sv_since 2 | grep -Eq "job '.*' of dpsalice \(pid [0-9]+\) ended: killed by signal 9" ||
        { echo "the service did not log its worker's end" >>"$log"; ok=0; }
    echo | sv_as host1 dpsbob "$SV_PUB/service_client" host2-dpu:7420 \
        job-after-kill >>"$log" 2>&1 ||
        { echo "host2-dpu's service serves no new job" >>"$log"; ok=0; }
    report "$m1: a worker killed mid-job (dpsalice's on host2-dpu): her job goes on with stock MPI, exact; the service and dpsbob's $m2 job run on" \
        "$ok" "$log"
}

# (8) kill -TERM of the service mid-job: it ends its workers and exits 0;
# their jobs go on with stock MPI, exact.
sv_sigterm() {
    local m=$1 log=$LOGS/service-sigterm.log ok=1
    : >"$log"
    sv_fault_job "$LOGS/service-term-alice.log" "$m" dpsalice term \
        sv_term_service "$log" || ok=0
    sv_since 2 >>"$log"
    sv_since 2 | grep -q "stopping on signal 15: ending 1 worker" || ok=0
    report "$m: kill -TERM of host2-dpu's service mid-job: it ends its worker and exits 0, the job goes on with stock MPI, exact" \
        "$ok" "$log"
}
