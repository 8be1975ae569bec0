#!/usr/bin/env bash
# The tests that only a cluster can run (issue 23; DESIGN.md decision 11),
# on emulated hosts (scripts/cluster/cluster.sh): suites across hosts with both
# MPIs through mpirun, mpiexec and srun, agents listening on the DPUs,
# and faults across hosts, each within a stated bound. docs/tests.md
# ("Across hosts") lists what runs and why.
#
# usage: scripts/test/cluster_check.sh [MPI...]      (MPI: openmpi, mpich)
#
# Functions for bin/dps-test: its cases of fixture "cluster" (tests/cases.py,
# CLUSTER) run in one session of scripts/test/case.sh, which brings the
# cluster up (cl_fixture_up), runs each case after cl_need (what the case
# needs on it: nothing, the DPUs' listening agents, or the agent
# services) and takes it down; the last case, cl_left_case, checks that
# nothing is left on the nodes. check.sh's cases (shim_case, err_case)
# run across the hosts through run_job, which cl_fixture_up redefines.
# Run alone, it is bin/dps-test -k cluster/ MPI... (DPS_CLUSTER_CASES=service:
# -k cluster/service/); with DPS_CLUSTER_SCALE=1 (make check-scale) it runs
# the scale cases itself (cl_main).
#
# Not root, or no namespaces here (a container that forbids them): one
# line "SKIP cluster: REASON", nothing else. A tool that scripts/deps.sh
# installs but is missing fails, as a missing MPI does in check.sh.
#
# Its cluster (3 hosts and their DPUs, Slurm on the hosts) lives in a run
# directory of its own, /run/dpushim-check/cluster.PID, taken down on
# every exit path (and, if this run was killed with SIGKILL, by the next).
#
# Environment:
#   DPU_AGENT      command that runs a DPU's listening agent, given
#                  --listen and --secret-dir after it (default: the
#                  aarch64 agent under qemu-user, "scripts/cluster/arm64-run.sh
#                  dpu_agent", as a BlueField's Arm cores run it; the
#                  first MPI's build/MPI/dpu_agent if build/arm64/ is
#                  not built)
#   DPU_AGENT_ENV  VAR=value words for that agent (default none)
#   DPS_CLUSTER_FULL=1  every suite (t_colls, t_persist, t_neigh, t_group,
#                  t_dtypes, t_outside, f_colls) in every layout (host
#                  agents, srun 3 x 1, the DPUs' agents) for every MPI,
#                  and the erroneous calls at 3 x 1 too: about 15 minutes
#                  more than the default, which CI's 30 minutes cannot
#                  hold; the default spreads the suites over the layouts
#   DPS_CLUSTER_CASES=service  run alone: only the agent service's
#                  cases (service_tests.sh), on the same cluster
# (DPS_CLUSTER_FULL, DPS_CLUSTER_DPU_TESTS and DPS_CLUSTER_ERR_CASES say
# which cases there are: tests/cases.py's cluster_cases reads them.)
#   DPS_CLUSTER_BUDGET  seconds for the whole part (default 1200, 3000
#                  with DPS_CLUSTER_FULL=1); cases
#                  not started by then fail as not run
#   DPS_CLUSTER_JOB_TIMEOUT  seconds for one job (default 240; 2400 with
#                  DPS_CLUSTER_SCALE=1)
#   DPS_CLUSTER_DPU_TESTS  programs run with the DPUs' agents, [MPI/]PROG
#                  words (default "openmpi/t_persist mpich/t_colls
#                  mpich/t_outside"; no MPI: the first one given)
#   DPS_CLUSTER_ERR_CASES  erroneous calls, [MPI/]CASE:HANDLER words
#                  (default "openmpi/a2a_size:fatal openmpi/a2a_size:return
#                  mpich/bcast_len:fatal mpich/bcast_len:return")

# shellcheck source=scripts/test/service_tests.sh
source "$(dirname "${BASH_SOURCE[0]}")/service_tests.sh"

# One job across the hosts: shim jobs with 4 ranks run 2 per host on
# host1 and host2, with 3 ranks one per host; CL_LAUNCH says how (mpirun:
# mpirun or mpiexec; srun). Every rank's agent sleeps when idle
# (DPUSHIM_AGENT_SCHED=eager): the emulated hosts share this machine's
# cores, and an agent that believed it had a core of its own would poll.
# cl_run_job LOG MPI NP SHIM VARS PROG...: check.sh's run_job, which
# cl_main replaces with it.
cl_run_job() {
    local log=$1 mpi=$2 np=$3 shim=$4 vars=$5 hosts opt=() rc
    shift 5
    hosts=$(cl_layout "$np") ||
        { echo "cluster run_job: no layout for $np ranks" >"$log"; return 1; }
    # Through Slurm the shim comes by the runner, as a user would start
    # it there (srun dpushim ./app), elsewhere by LD_PRELOAD.
    if [ "$shim" = 1 ] && [ "$CL_LAUNCH" = srun ]; then
        set -- "$CL_ROOT/scripts/dpushim" "$@"
    elif [ "$shim" = 1 ]; then
        opt+=(--shim)
    fi
    [ "$CL_LAUNCH" = srun ] && opt+=(--srun)
    # shellcheck disable=SC2086 # VARS are words
    cl_launch "$log" "$np" "$mpi" "${opt[@]}" "$mpi" "$hosts" \
        DPUSHIM_AGENT_SCHED=eager DPUSHIM_LOG=info $vars "$@"
    rc=$?
    [ $rc = 0 ] || return $rc
    cl_hosts_offloaded "$log" "$np" "$vars" && cl_data_path "$log" "$vars"
}

# cl_layout NP: the hosts of a job of NP ranks, as HOST:SLOTS words
# joined by commas: 2, 3 and 4 ranks as above; more spread evenly over
# the CL_NHOSTS hosts (the first ones take one more when NP does not
# divide). Fails for a job of more than 4 ranks but fewer than hosts.
cl_layout() {
    local np=$1 n=$CL_NHOSTS h spec=""
    case $np in
    2) echo host1:1,host2:1; return ;;
    3) echo host1:1,host2:1,host3:1; return ;;
    4) echo host1:2,host2:2; return ;;
    esac
    [ "$np" -ge "$n" ] || return 1
    for ((h = 1; h <= n; h++)); do
        spec+="${spec:+,}host$h:$((np / n + (h <= np % n)))"
    done
    echo "$spec"
}

# cl_nhosts LAYOUT: how many hosts a cl_layout names.
cl_nhosts() {
    echo "$1" | tr ',' '\n' | wc -l
}

# cl_data_path LOG VARS: a job across hosts that printed its result and
# the agents' statistics moved no byte through a rank's own UCX worker
# (ucx_bytes=0: the ranks' CPUs are out of the data path, issue 35);
# agents on DPUs reached their ranks by DMA through the ranks' grants
# (dma_bytes > 0), agents on hosts by CMA; between hosts the agents
# carried the bytes (net_bytes > 0): pushed, node to node (pushes > 0;
# a transfer larger than the room the receiver's agent grants is
# fetched), or with DPUSHIM_PUSH=0 fetched only (fetches > 0, no push).
# 0 if so or not asked (no statistics, DPUSHIM_TRANSPORT=ucx, or a job
# that failed over); else says why in LOG.
cl_data_path() {
    local log=$1 vars=$2 line
    grep -q '^result: ok' "$log" || return 0
    [[ " $vars " == *" DPUSHIM_TRANSPORT=ucx "* ]] && return 0
    line=$(grep -E '^dpushim: agents cpu_ms=' "$log") || return 0
    [[ $line =~ \ ucx_bytes=0\  ]] ||
        { echo "data path: bytes served by ranks' UCX workers: $line" >>"$log"; return 1; }
    [[ $line =~ \ net_bytes=[1-9] ]] ||
        { echo "data path: no bytes between agents: $line" >>"$log"; return 1; }
    if [[ " $vars " == *" DPUSHIM_PUSH=0 "* ]]; then
        [[ $line =~ \ fetches=[1-9] && $line =~ \ pushes=0\  ]] ||
            { echo "data path: DPUSHIM_PUSH=0 but not fetched: $line" >>"$log"; return 1; }
    else
        [[ $line =~ \ pushes=[1-9] ]] ||
            { echo "data path: not pushed node to node: $line" >>"$log"; return 1; }
    fi
    if [[ $vars == *DPUSHIM_AGENT_MAP=* ]]; then
        [[ $line =~ \ dma_bytes=[1-9] && $line =~ \ cma_bytes=0\  ]] ||
            { echo "data path: the DPUs' agents did not DMA: $line" >>"$log"; return 1; }
    fi
    return 0
}

# cl_launch LOG NP MPI ARGS...: scripts/cluster/cluster-mpirun.sh ARGS under
# the job time limit, output in LOG. MPICH 4.0 over UCX 1.13 on TCP can hang in
# its own MPI_Finalize (docs/tests.md): once every rank has logged that the
# shim's part of MPI_Finalize is done, an MPICH job still running CL_FIN_GRACE
# s later is ended and judged by its output, with a note in the log. Returns
# the job's status (0 for such a job).
cl_launch() {
    local log=$1 np=$2 mpi=$3 pid t0 done_at="" n
    shift 3
    timeout -k 5 "$CL_JOB_TIMEOUT" "$CL_ROOT/scripts/cluster/cluster-mpirun.sh" \
        "$@" >"$log" 2>&1 &
    pid=$!
    t0=$SECONDS
    while kill -0 "$pid" 2>/dev/null; do
        sleep 0.2
        [ "$mpi" = mpich ] || continue
        if [ -z "$done_at" ] && cl_fin_done "$log" "$np"; then
            done_at=$SECONDS
        elif [ -n "$done_at" ] && [ $((SECONDS - done_at)) -ge "$CL_FIN_GRACE" ]; then
            cl_fin_end "$pid" "$log"
            echo "job time: $((SECONDS - t0)) s" >>"$log"
            return 0
        fi
    done
    wait "$pid"
    n=$?
    echo "job time: $((SECONDS - t0)) s, exit status $n" >>"$log"
    return $n
}

# cl_fin_done LOG NP: every one of the NP ranks has logged that the
# shim's part of MPI_Finalize is done (what follows is MPI's own). Not
# anchored at a line's start: the ranks write at once, and another rank's
# statistics line can precede one on the same line (a CI run's did).
cl_fin_done() {
    local n
    n=$(grep -o "dpushim\[[0-9]*\]: info: MPI_Finalize: the shim's part is done" \
        "$1" | sort -u | wc -l)
    [ "$n" -ge "$2" ]
}

# cl_fin_end PID LOG: end an MPICH job hung in its own MPI_Finalize
# after every rank left the shim; it is judged by its output (LOG says
# so).
cl_fin_end() {
    kill -TERM "$1" 2>/dev/null
    wait "$1" 2>/dev/null
    echo "note: every rank had left the shim; MPICH's own MPI_Finalize" \
         "did not return in $CL_FIN_GRACE s (UCX on TCP, docs/tests.md):" \
         "the job was ended and is judged by its output" >>"$2"
    CL_FIN_HANGS=$((CL_FIN_HANGS + 1))
}

# cl_hosts_offloaded LOG NP VARS: with DPUSHIM_STATS=2, a job that printed
# its result must show, for every host of its layout, an agent whose
# ranks offloaded calls (and, with an agent map, an agent on that host's
# DPU). 0 if so or not asked; else says which host in LOG.
cl_hosts_offloaded() {
    local log=$1 np=$2 vars=$3 h n ok=0 where
    [[ " $vars " == *" DPUSHIM_STATS=2 "* ]] || return 0
    grep -q '^result: ok' "$log" || return 0
    n=$(cl_nhosts "$(cl_layout "$np")")
    for ((h = 1; h <= n; h++)); do
        where=".*"
        [[ $vars == *DPUSHIM_AGENT_MAP=* ]] && where=".* on host$h-dpu\)"
        grep -Eq "^dpushim: agent [0-9]+ of host$h \($where\): ranks=[0-9,-]+ offloaded=[1-9][0-9]* cpu_ms=" "$log" || {
            echo "host$h: no agent line with offloaded > 0" \
                 "$([ "$where" = ".*" ] || echo "(on host$h-dpu)")" >>"$log"
            ok=1
        }
    done
    return $ok
}

# The processes left on the hosts and DPUs (cluster.sh status) besides
# the cluster's own: the node servers, Slurm's daemons and munge, and the
# DPUs' listening agents while they are meant to run (CL_LISTEN_PIDS).
# Prints them; always 0.
cl_leftovers() {
    local p
    "$CL_ROOT/scripts/cluster/cluster.sh" status 2>&1 | grep -E '^    [0-9]' |
        grep -Ev 'cluster_node\.py|slurmd|slurmctld|slurmscriptd|munged' |
        while read -r p rest; do
            [[ " ${CL_LISTEN_PIDS[*]} " == *" $p "* ]] ||
                echo "left: $p $rest"
        done
    return 0
}

# cl_wait_clean SECONDS: until nothing is left (cl_leftovers); prints
# what is left at the end. 0 if clean in time.
cl_wait_clean() {
    local i left
    for ((i = 0; i < $1 * 5; i++)); do
        left=$(cl_leftovers)
        [ -z "$left" ] && return 0
        sleep 0.2
    done
    echo "$left"
    return 1
}

# cl_node_pids NAME PATTERN: root-namespace pids of NAME's processes
# whose command line matches PATTERN (as cluster.sh status lists them).
cl_node_pids() {
    "$CL_ROOT/scripts/cluster/cluster.sh" status 2>/dev/null | awk -v n="$1" -v p="$2" '
        /^[^ ]/ { on = ($1 == n) }
        on && /^    [0-9]/ && $0 ~ p { print $1 }'
}

# Listening agents on the DPUs of the hosts numbered in CL_DPUS (default
# host1 and host2; hostN-dpu:7420), the map and the secret directory
# under the run directory, which every host sees. Sets CL_MAP, CL_SEC and
# CL_LISTEN_PIDS; 0 when every one listens.
cl_listeners_up() {
    local h i n up w lv=
    CL_SEC=$CL_RUN/secrets CL_MAP=$CL_RUN/dpus.map
    mkdir -p "$CL_SEC" && chmod 700 "$CL_SEC"
    : >"$CL_MAP"
    for h in $CL_DPUS; do
        echo "host$h host$h-dpu:7420" >>"$CL_MAP"
    done
    # The first DPU's agent moves bytes with 2 workers (dpu_agent
    # --workers, as on a BlueField's cores), the others with their event
    # loop alone: every job runs both.
    # At scale the agents log at info: a pass of an agent's loop that
    # took over a second is in its listener's log (what a rank that
    # failed its agent for silence had to wait for).
    [ "$CL_SCALE" = 1 ] && lv=DPUSHIM_LOG=info
    for h in $CL_DPUS; do
        w=
        [ "$h" = "${CL_DPUS%% *}" ] && w="--workers 2"
        # shellcheck disable=SC2086 # command, VAR=value and option words
        "$CL_ROOT/scripts/cluster/cluster.sh" run "host$h-dpu" env $CL_DPU_ENV $lv \
            $CL_DPU_AGENT $w --listen 0.0.0.0:7420 \
            --secret-dir "$CL_SEC" >"$LOGS/listener-host$h-dpu.log" 2>&1 &
        CL_LISTENERS+=($!)
    done
    # qemu-user starts each Arm agent in about a second; 8 at once on 2
    # cores take longer.
    for ((i = 0; i < 600; i++)); do
        n=0 up=0
        for h in $CL_DPUS; do
            n=$((n + 1))
            grep -q '^dpu_agent: listening on' \
                "$LOGS/listener-host$h-dpu.log" && up=$((up + 1))
        done
        if [ "$up" = "$n" ]; then
            CL_LISTEN_PIDS=()
            for h in $CL_DPUS; do
                # shellcheck disable=SC2207 # one pid a word
                CL_LISTEN_PIDS+=($(cl_node_pids "host$h-dpu" ' --listen'))
            done
            return 0
        fi
        sleep 0.1
    done
    return 1
}

cl_listeners_down() {
    local p
    for p in "${CL_LISTENERS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${CL_LISTENERS[@]}"; do wait "$p" 2>/dev/null; done
    CL_LISTENERS=() CL_LISTEN_PIDS=()
}

# cl_wait_line LOG REGEX SECONDS PID: until REGEX is in LOG (0), PID ends
# or the time is up (1).
cl_wait_line() {
    local i
    for ((i = 0; i < $3 * 10; i++)); do
        grep -Eqs "$2" "$1" && return 0 # the job may not have written yet
        kill -0 "$4" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# cl_fault_case NAME MPI LAUNCH VARS INJECT BOUND CHECK TITLE: a job of
# failover_target (CL_FAULT_NP ranks, default 4, laid out by cl_layout;
# FO_HOW=none) whose first rank of the last host (rank 2 on host2 at 4
# ranks) stops after posting its first collective and waits for a file,
# so that every other rank has collectives pending; INJECT (a function) makes the
# fault, then the file is made and the collectives go on. With CL_HEAL
# (a function) and CL_HEAL_AFTER (seconds, or "job"), the fault is
# undone that long after it began, or once the job has ended. The job
# must end within BOUND s of the fault as CHECK (a function of the log)
# says, and nothing may be left on any host or DPU 30 s after the job
# (the DPUs' listeners and the cluster's daemons aside).
cl_fault_case() {
    local name=$1 mpi=$2 launch=$3 vars=$4 inject=$5 bound=$6 check=$7
    local title=$8 log="$LOGS/$mpi-fault-$1.log" go="$CL_RUN/go-$1"
    local pid ok=1 t0 left hosts opt=(--shim) np=${CL_FAULT_NP:-4} rph fin_at=
    local heal=${CL_HEAL:-} heal_after=${CL_HEAL_AFTER:-job}
    hosts=$(cl_layout "$np")
    rph=$((np / $(cl_nhosts "$hosts")))
    rm -f "$go"
    [ "$launch" = srun ] && opt+=(--srun)
    # shellcheck disable=SC2086 # VARS are words
    DPS_SRUN_NAME="dps-fault-$name" timeout -k 5 "$CL_JOB_TIMEOUT" \
        "$CL_ROOT/scripts/cluster/cluster-mpirun.sh" "${opt[@]}" "$mpi" "$hosts" \
        DPUSHIM_AGENT_SCHED=eager DPUSHIM_MIN_BYTES=1 DPUSHIM_STATS=1 \
        DPUSHIM_LOG=info FO_HOW=none FO_RPD="$rph" FO_WAIT="$go" $vars \
        "build/$mpi/tests/failover_target" >"$log" 2>&1 &
    pid=$!
    if ! cl_wait_line "$log" '^rank [0-9]+: collectives pending, waiting for' \
        "$CL_REACH" "$pid"; then
        echo "the job did not reach its collectives" >>"$log"
        ok=0
    else
        t0=$SECONDS
        "$inject" "$log" || { echo "fault injection failed" >>"$log"; ok=0; }
        touch "$go"
        while kill -0 "$pid" 2>/dev/null &&
              [ $((SECONDS - t0)) -le "$bound" ]; do
            sleep 0.2
            if [ -n "$heal" ] && [ "$heal_after" != job ] &&
               [ $((SECONDS - t0)) -ge "$heal_after" ]; then
                "$heal" "$log" || echo "$heal failed" >>"$log"
                heal=
            fi
            # MPICH's own MPI_Finalize may hang (as in cl_launch): the
            # job ended when its last rank left the shim.
            [ "$mpi" = mpich ] || continue
            if [ -z "$fin_at" ] && cl_fin_done "$log" "$np"; then
                fin_at=$SECONDS
            elif [ -n "$fin_at" ] &&
                 [ $((SECONDS - fin_at)) -ge "$CL_FIN_GRACE" ]; then
                cl_fin_end "$pid" "$log"
                break
            fi
        done
        if [ -n "$fin_at" ]; then
            echo "the job ended $((fin_at - t0)) s after the fault (bound" \
                 "$bound s; its last rank left the shim then)" >>"$log"
            echo "$CL_MARK: $mpi fault $name: the job ended $((fin_at - t0))" \
                 "s after the fault (bound $bound s)"
        elif kill -0 "$pid" 2>/dev/null; then
            echo "the job did not end within $bound s of the fault" >>"$log"
            kill -TERM "$pid" 2>/dev/null
            ok=0
        else
            echo "the job ended $((SECONDS - t0)) s after the fault (bound" \
                 "$bound s)" >>"$log"
            echo "$CL_MARK: $mpi fault $name: the job ended $((SECONDS - t0))" \
                 "s after the fault (bound $bound s)"
        fi
    fi
    wait "$pid" 2>/dev/null
    "$check" "$log" || ok=0
    [ -z "$heal" ] || "$heal" "$log" || echo "$heal failed" >>"$log"
    if ! left=$(cl_wait_clean 30); then
        echo "left 30 s after the job: $left" >>"$log"
        ok=0
    fi
    report "$mpi $title" "$ok" "$log"
}

# A job that survived or took over: exact data and every pending request
# ended (the program's "result: ok"), through MPI_Finalize.
cl_ended_well() {
    local r ok=0
    grep -q '^result: ok' "$1" || { echo "no 'result: ok'" >>"$1"; ok=1; }
    for ((r = 0; r < ${CL_FAULT_NP:-4}; r++)); do
        grep -Eq "^rank $r: pending collectives: [0-9]+ ended well" "$1" ||
            { echo "rank $r did not end its pending collectives" >>"$1"; ok=1; }
    done
    return $ok
}

# ... and stock MPI took over from the failed agent.
cl_took_over() {
    cl_ended_well "$1" || return 1
    grep -Eq '^dpushim: (ialltoall|ibcast) after agent failure: redone=[0-9]+ failed=[0-9]+ stock=[1-9]' "$1" ||
        { echo "no statistics of collectives after the failure" >>"$1"; return 1; }
}

# (a) the DPU agent process of host CL_VICTIM (default 2; the listener's
# child serving this job) killed while the job's collectives are pending.
cl_kill_dpu_agent() {
    local p n=0 all d=host${CL_VICTIM:-2}-dpu
    all=" $(cl_node_pids "$d" dpu_agent | tr '\n' ' ') "
    for p in $all; do
        # a job's agent process is the listener's child
        [[ $all == *" $(ps -o ppid= -p "$p" | tr -d ' ') "* ]] || continue
        echo "fault: killing $d's agent process for the job, pid $p" >>"$1"
        kill -9 "$p" && n=$((n + 1))
    done
    [ $n -gt 0 ]
}

# (b) host2's link down, then up (CL_HEAL).
cl_host_link_down() {
    echo "fault: host2 eth0 down" >>"$1"
    "$CL_ROOT/scripts/cluster/cluster.sh" run host2 ip link set eth0 down
}
cl_host_link_up() {
    echo "fault: host2 eth0 up, $((SECONDS - t0)) s after it went down" >>"$1"
    "$CL_ROOT/scripts/cluster/cluster.sh" run host2 ip link set eth0 up
}

# (c) host2-dpu's link cut (up again once the job has ended).
cl_dpu_link_cut() {
    echo "fault: host2-dpu eth0 down" >>"$1"
    "$CL_ROOT/scripts/cluster/cluster.sh" run host2-dpu ip link set eth0 down
}
cl_dpu_link_up() {
    echo "host2-dpu eth0 up again (the job has ended)" >>"$1"
    "$CL_ROOT/scripts/cluster/cluster.sh" run host2-dpu ip link set eth0 up
}

# (d) the Slurm job cancelled while its collectives are pending.
cl_scancel() {
    local id
    id=$("$CL_ROOT/scripts/cluster/cluster.sh" run host1 squeue -h -o %i -n dps-fault-scancel)
    echo "fault: scancel $id" >>"$1"
    [ -n "$id" ] && "$CL_ROOT/scripts/cluster/cluster.sh" run host1 scancel "$id"
}
# A cancelled job ends with Slurm's message, and no rank went on.
cl_cancelled() {
    grep -Eq 'CANCELLED|Job step aborted|cancelled' "$1" ||
        { echo "no message from Slurm that the job was cancelled" >>"$1"; return 1; }
    ! grep -q '^result: ok' "$1" ||
        { echo "the job went on to its end" >>"$1"; return 1; }
}

cl_up() {
    local log=$LOGS/up.log
    "$CL_ROOT/scripts/cluster/cluster.sh" up "$CL_NHOSTS" --dpu >"$log" 2>&1 ||
        return 1
    [ "$CL_SCALE" = 1 ] ||
        "$CL_ROOT/scripts/cluster/cluster-slurm.sh" up >>"$log" 2>&1
}

cl_down() {
    [ -n "${CL_RUN:-}" ] || return 0
    cl_listeners_down
    "$CL_ROOT/scripts/cluster/cluster-slurm.sh" down >/dev/null 2>&1
    "$CL_ROOT/scripts/cluster/cluster.sh" down >/dev/null 2>&1
    rm -f "$CL_BASE/cluster.$CL_OWNER.owner"
}

# Clusters of runs that are gone (killed with SIGKILL): take them down.
cl_reap_stale() {
    local f pid
    for f in "$CL_BASE"/cluster.*.owner; do
        [ -e "$f" ] || continue
        pid=$(cat "$f" 2>/dev/null)
        [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && continue
        DPS_CLUSTER_DIR=${f%.owner} "$CL_ROOT/scripts/cluster/cluster.sh" down \
            >/dev/null 2>&1
        rm -f "$f"
    done
}

# Why the cluster cannot be made here (empty if it can).
cl_cannot() {
    local out
    if [ "$(id -u)" -ne 0 ]; then
        echo "not root (the emulated hosts need namespaces, veths and mounts)"
        return
    fi
    if ! out=$(unshare --net --pid --uts --mount --ipc --fork true 2>&1); then
        echo "no namespaces here (unshare: ${out:-failed})"
        return
    fi
}

# The cases (tests/cases.py, CLUSTER lists them and their order). Each
# suite checks every byte itself; DPUSHIM_STATS=2 makes the shim name
# each host's agent and the calls its ranks handed it, which run_job
# checks for every host.
CL_S2="DPUSHIM_STATS=2 DPUSHIM_MIN_BYTES=1"

# cl_need WHAT: the cluster as the next case needs it: "none", or
# "listeners" (agents listening on the DPUs: DPU_AGENT, DPU_AGENT_ENV) or
# "service" (the DPUs' agent services, service_tests.sh), the other
# taken down first. A fixture that failed to start is reported once and
# fails every later need of it (its cases are then not run).
declare -A CL_BROKEN=()
cl_need() {
    [ "$1" = "${CL_HAVE:-none}" ] && return 0
    [ -z "${CL_BROKEN[$1]:-}" ] || return 1
    case ${CL_HAVE:-none} in
    listeners) cl_listeners_down ;;
    service) sv_down ;;
    esac
    CL_HAVE=none
    case $1 in
    listeners)
        if ! cl_listeners_up; then
            CL_BROKEN[$1]=1
            report "listening agents start on host1-dpu and host2-dpu" 0 \
                "$LOGS/listener-host1-dpu.log"
            cl_listeners_down
            return 1
        fi ;;
    service)
        if ! sv_up "${CL_MPIS[@]}"; then
            CL_BROKEN[$1]=1
            report "the DPUs' agent services start (munged, users, /etc/dpushim)" 0 \
                "$LOGS/service-up.log"
            sv_down
            return 1
        fi ;;
    esac
    CL_HAVE=$1
}

cl_dpu_vars() { echo "DPUSHIM_AGENT_MAP=$CL_MAP DPUSHIM_SECRET_DIR=$CL_SEC"; }

# cl_host_case MPI PROG: 2 hosts x 2 ranks, an agent started on each
# host (the longest suites, t_colls and t_persist, 20-36 s each across
# hosts, once per MPI here and once with the DPUs' agents).
cl_host_case() {
    CL_LAUNCH=mpirun
    shim_case "$1" "build/$1/$2" 4 "$CL_S2" \
        "2 hosts x 2 ranks, $(cl_launcher "$1")"
}

# cl_srun_case MPI PROG: 3 hosts x 1 rank through Slurm (t_colls at 3
# ranks runs on one host already; here the launch and the odd layout
# matter).
cl_srun_case() {
    CL_LAUNCH=srun
    shim_case "$1" "build/$1/$2" 3 "$CL_S2" \
        "3 hosts x 1 rank, srun dpushim (the runner)"
    CL_LAUNCH=mpirun
}

# cl_err_case MPI NP CASE HANDLER: check.sh's erroneous call across the
# hosts: the job aborts across them (fatal), or the right ranks get the
# error and the job goes on (return); 4 ranks by mpirun, 3 by srun.
cl_err_case() {
    CL_LAUNCH=mpirun
    [ "$2" = 3 ] && CL_LAUNCH=srun
    err_case "$@"
    CL_LAUNCH=mpirun
}

# cl_dpu_case MPI PROG: 2 hosts x 2 ranks served by the DPUs' listening
# agents.
cl_dpu_case() {
    CL_LAUNCH=mpirun
    shim_case "$1" "build/$1/$2" 4 "$CL_S2 $(cl_dpu_vars)" \
        "2 hosts x 2 ranks, $CL_DPU_KIND listening on their DPUs, $(cl_launcher "$1")" \
        -dpu
}

# cl_fetch_case MPI: the earlier plan between nodes, kept to compare
# (DPUSHIM_PUSH=0: the receivers' agents fetch every chunk, cl_data_path
# checks so).
cl_fetch_case() {
    CL_LAUNCH=mpirun
    shim_case "$1" "build/$1/tests/t_neigh" 4 \
        "$CL_S2 $(cl_dpu_vars) DPUSHIM_PUSH=0" \
        "2 hosts x 2 ranks, $CL_DPU_KIND listening on their DPUs, fetching (DPUSHIM_PUSH=0), $(cl_launcher "$1")" \
        -dpu-fetch
}

# Faults, each with its bound (cl_fault_case).
cl_fault_dpu_kill() {
    cl_fault_case dpu-kill "$1" mpirun "$(cl_dpu_vars)" cl_kill_dpu_agent 20 \
        cl_took_over \
        "host2-dpu's agent killed mid-collective: host2's ranks see its connection end, stock MPI takes over, exact, within 20 s"
}
cl_fault_dpu_link() {
    CL_HEAL=cl_dpu_link_up cl_fault_case dpu-link "$1" mpirun \
        "$(cl_dpu_vars) DPUSHIM_AGENT_TIMEOUT=3" cl_dpu_link_cut 25 cl_took_over \
        "host2-dpu's link cut mid-collective: its pings go unanswered (DPUSHIM_AGENT_TIMEOUT=3), stock MPI takes over, exact, within 25 s"
}
cl_fault_link() {
    CL_HEAL=cl_host_link_up CL_HEAL_AFTER=$CL_LINK_DOWN \
        cl_fault_case link "$1" mpirun "" cl_host_link_down 40 cl_ended_well \
        "host2's link down ${CL_LINK_DOWN} s mid-collective, then up: the job ends, exact, within 40 s"
}
cl_fault_scancel() {
    cl_fault_case scancel "$1" srun "" cl_scancel 20 cl_cancelled \
        "Slurm job cancelled (scancel) mid-collective: its ranks and agents are gone within 20 s"
}

# cl_left_case: the last case of a session: listeners and services down,
# nothing may be left on any host or DPU.
cl_left_case() {
    local left
    CL_HAVE=none
    cl_listeners_down
    sv_down
    # The listeners' node servers reap them within moments; until then
    # they are listed (as zombies, with no command line).
    left=$(cl_wait_clean 30)
    echo "${left:-nothing left}" >"$LOGS/left.log"
    report "no process left on any host or DPU after the jobs" \
        "$([ -z "$left" ] && echo 1 || echo 0)" "$LOGS/left.log"
    [ "$CL_FIN_HANGS" = 0 ] ||
        echo "$CL_MARK: note: $CL_FIN_HANGS MPICH job(s) hung in MPICH's own MPI_Finalize, after the shim's part (UCX on TCP; docs/tests.md)"
    echo "$CL_MARK: $((SECONDS - CL_T0)) s in all"
}

# At scale (DPS_CLUSTER_SCALE=1): CL_NHOSTS hosts, each with a DPU whose
# agent listens; the suites at CL_SCALE_RANKS ranks spread over them,
# every byte checked and every host's DPU agent offloading; then, per
# MPI, the DPU agent of host CL_SCALE_VICTIM killed while the job's
# collectives are pending, its ranks taken over by stock MPI, exact,
# within CL_SCALE_BOUND s. Every rank's agent sleeps when idle, and
# Open MPI's ranks yield while they wait (cluster-mpirun.sh): 32 ranks
# and 8 agents share 2 cores.
cl_scale_cases() {
    local mpi t np=$CL_SCALE_RANKS dpu
    # A case's watchdog (tests/mpi/tcommon.h) at 32 ranks on 2 cores:
    # stock MPICH alone took 72 s for t_dtypes' rooted 5000-element case
    # there (the shim 31 s), past the suites' 30 s, and MPICH's t_colls
    # 278 s for its "large reductions" under the shim.
    # An agent's answer to its ranks' pings at 32 ranks and 8 agents on 2
    # cores: all 8 agents stalled together for 8.2 s mid-pass (each in a
    # different part of its loop: the machine, not the agents; the
    # kernel reported a workqueue stuck for 35 s meanwhile), and a rank
    # failed its agent for silence in 4 of 8 t_colls runs with the
    # default 10 s, in 1 of 1 with 30 s, in none of 5 with 60 s or more.
    # The faults' cases set their own.
    local s2="DPUSHIM_STATS=2 DPUSHIM_MIN_BYTES=1 DPUSHIM_AGENT_TIMEOUT=60 T_WATCHDOG=$CL_SCALE_WATCHDOG $CL_SCALE_VARS"
    local where="$CL_NHOSTS hosts x $((np / CL_NHOSTS)) ranks"
    CL_DPUS=$(seq -s ' ' 1 "$CL_NHOSTS")
    if ! cl_listeners_up; then
        report "listening agents start on the $CL_NHOSTS DPUs" 0 \
            "$LOGS/listener-host1-dpu.log"
        return
    fi
    dpu="DPUSHIM_AGENT_MAP=$CL_MAP DPUSHIM_SECRET_DIR=$CL_SEC"
    CL_LAUNCH=mpirun
    for mpi in "$@"; do
        for t in $CL_SCALE_TESTS; do
            cl_budget_left || return
            shim_case "$mpi" "build/$mpi/tests/$t" "$np" "$s2 $dpu" \
                "$where, $CL_DPU_KIND listening on their DPUs, $(cl_launcher "$mpi")" \
                -scale
        done
        cl_budget_left || return
        # 64 KiB large blocks: 3 pending Ialltoalls of 32 blocks on 32
        # ranks stay within the machine's memory. The ranks agree on what
        # to redo through stock MPI, each when it gets a core: 32 ranks
        # on 2 cores take longer than the default 10 s takeover deadline.
        CL_FAULT_NP=$np CL_VICTIM=$CL_SCALE_VICTIM CL_REACH=600 \
            cl_fault_case scale-dpu-kill "$mpi" mpirun \
            "$dpu FO_BIG=65536 FO_WAIT_S=900 DPUSHIM_AGENT_TIMEOUT=30" \
            cl_kill_dpu_agent \
            "$CL_SCALE_BOUND" cl_took_over \
            "$where: host$CL_SCALE_VICTIM-dpu's agent (one of $CL_NHOSTS) killed mid-collective: stock MPI takes over, exact, within $CL_SCALE_BOUND s"
    done
}

cl_launcher() {
    [ "$CL_LAUNCH" = srun ] && { echo srun; return; }
    [ "$1" = mpich ] && echo mpiexec || echo mpirun
}

# 0 while time is left; else fails the rest once.
cl_budget_left() {
    [ $((SECONDS - CL_T0)) -lt "$CL_BUDGET" ] && return 0
    if [ -z "${CL_OVER:-}" ]; then
        CL_OVER=1
        report "cluster tests within DPS_CLUSTER_BUDGET=$CL_BUDGET s (the rest not run)" 0
    fi
    return 1
}

# cl_fixture_up MPI...: the cluster up (taken down on exit, also when
# interrupted). Its logs are in $LOGS/cluster/, its results say
# "cluster:". 0 when up; 1 when it did not come up (reported); 2 when it
# cannot here (one line "SKIP cluster: REASON", nothing else).
cl_fixture_up() {
    local why t tool
    why=$(cl_cannot)
    if [ -n "$why" ]; then
        echo "SKIP cluster: $why"
        return 2
    fi
    CL_MPIS=("$@")
    CL_ROOT=$DPS_ROOT
    CL_BASE=/run/dpushim-check
    CL_OWNER=$BASHPID
    CL_RUN=$CL_BASE/cluster.$CL_OWNER
    CL_FULL=${DPS_CLUSTER_FULL:-0}
    CL_SCALE=${DPS_CLUSTER_SCALE:-0}
    CL_BUDGET=${DPS_CLUSTER_BUDGET:-1200}
    [ "$CL_FULL" = 1 ] && CL_BUDGET=${DPS_CLUSTER_BUDGET:-3000}
    [ "$CL_SCALE" = 1 ] && CL_BUDGET=${DPS_CLUSTER_BUDGET:-7200}
    CL_JOB_TIMEOUT=${DPS_CLUSTER_JOB_TIMEOUT:-240}
    # MPICH's t_colls at 32 ranks on 2 cores: 1680 s (its ranks poll
    # without yielding; Open MPI's take 101 s).
    [ "$CL_SCALE" = 1 ] && CL_JOB_TIMEOUT=${DPS_CLUSTER_JOB_TIMEOUT:-2400}
    CL_NHOSTS=3 CL_DPUS="1 2" CL_REACH=120
    CL_SCALE_RANKS=${DPS_SCALE_RANKS:-32}
    CL_SCALE_TESTS=${DPS_SCALE_TESTS:-t_colls t_persist t_neigh t_group t_dtypes}
    CL_SCALE_VICTIM=${DPS_SCALE_VICTIM:-4}
    CL_SCALE_BOUND=${DPS_SCALE_BOUND:-60}
    CL_SCALE_VARS=${DPS_SCALE_VARS:-}
    CL_SCALE_WATCHDOG=${DPS_SCALE_WATCHDOG:-600}
    if [ "$CL_SCALE" = 1 ]; then
        CL_NHOSTS=${DPS_SCALE_HOSTS:-8}
        LOGS=$LOGS/scale
        # The victim: host 4 of 8, or the last host of fewer.
        [ -n "${DPS_SCALE_VICTIM:-}" ] || [ "$CL_NHOSTS" -ge 4 ] ||
            CL_SCALE_VICTIM=$CL_NHOSTS
        case $CL_SCALE_VICTIM in
        '' | *[!0-9]* | 0*) CL_SCALE_VICTIM=0 ;;
        esac
        case $CL_SCALE_WATCHDOG in
        '' | *[!0-9]* | 0*)
            report "DPS_SCALE_WATCHDOG=$CL_SCALE_WATCHDOG is a number of seconds, at least 1" 0
            return ;;
        esac
        if [ "$CL_SCALE_VICTIM" -lt 1 ] || [ "$CL_SCALE_VICTIM" -gt "$CL_NHOSTS" ]; then
            report "DPS_SCALE_VICTIM=${DPS_SCALE_VICTIM:-} is a host number from 1 to $CL_NHOSTS (DPS_SCALE_HOSTS)" 0
            return 1
        fi
    fi
    CL_FIN_GRACE=3
    CL_FIN_HANGS=0
    CL_LINK_DOWN=3
    CL_LISTENERS=() CL_LISTEN_PIDS=()
    # The DPUs' agents are the Arm build under qemu-user when it is
    # built (make check builds it): the protocol between x86-64 ranks and
    # an aarch64 agent across hosts.
    CL_DPU_KIND="agents"
    # At scale the x86-64 build unless DPU_AGENT says otherwise: eight
    # agents under qemu-user on 2 cores would measure the emulator.
    if [ -n "${DPU_AGENT:-}" ]; then
        CL_DPU_AGENT=$DPU_AGENT
    elif [ "$CL_SCALE" != 1 ] && [ -x "$CL_ROOT/build/arm64/dpu_agent" ]; then
        CL_DPU_AGENT="$CL_ROOT/scripts/cluster/arm64-run.sh dpu_agent"
        CL_DPU_KIND="aarch64 agents (qemu-user)"
    else
        CL_DPU_AGENT=$CL_ROOT/build/$1/dpu_agent
        CL_DPU_KIND="x86-64 agents"
    fi
    CL_DPU_ENV=${DPU_AGENT_ENV:-}
    CL_T0=$SECONDS
    [ "$CL_SCALE" = 1 ] || LOGS=$LOGS/cluster
    rm -rf "$LOGS"
    mkdir -p "$LOGS"
    # Every result of this part is check.sh's report, marked "cluster:"
    # ("scale:" at scale).
    eval "cl_check_report() $(declare -f report | tail -n +2)"
    CL_MARK=cluster
    [ "$CL_SCALE" = 1 ] && CL_MARK=scale
    report() { cl_check_report "$CL_MARK: $1" "${@:2}"; }
    # ... and check.sh's cases run their jobs across the hosts.
    run_job() { cl_run_job "$@"; }
    export DPS_CLUSTER_DIR=$CL_RUN
    mkdir -p "$CL_BASE" && chmod 700 "$CL_BASE"
    cl_reap_stale
    echo "$CL_OWNER" >"$CL_BASE/cluster.$CL_OWNER.owner"
    trap cl_down EXIT
    trap 'exit 143' TERM INT HUP
    for tool in unshare nsenter ip tc python3 slurmctld slurmd munged srun seq; do
        command -v "$tool" >/dev/null || {
            echo "$tool not found: scripts/deps.sh installs it" >"$LOGS/up.log"
            report "$tool installed" 0 "$LOGS/up.log"
            return 1
        }
    done
    t=$SECONDS
    if ! cl_up; then
        report "$CL_NHOSTS emulated hosts with DPUs$([ "$CL_SCALE" = 1 ] || echo " and Slurm") come up" \
            0 "$LOGS/up.log"
        return 1
    fi
    if [ "$CL_SCALE" = 1 ]; then
        echo "scale: $CL_NHOSTS hosts and $CL_NHOSTS DPUs up in $((SECONDS - t)) s"
    else
        echo "cluster: 3 hosts, 3 DPUs and Slurm up in $((SECONDS - t)) s"
    fi
}

# At scale (make check-scale): up, the scale cases, nothing left, down.
cl_main() {
    cl_fixture_up "$@" || return 0
    cl_scale_cases "$@"
    cl_left_case
}

# Run alone: bin/dps-test's cluster cases, or at scale the scale cases.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    cd "$(dirname "$0")/../.." || exit 2
    if [ "${DPS_CLUSTER_SCALE:-0}" != 1 ]; then
        sel=(-k cluster/)
        [ "${DPS_CLUSTER_CASES:-all}" = service ] && sel=(-k cluster/service/)
        exec bin/dps-test "${sel[@]}" "$@"
    fi
    source scripts/lib.sh
    source scripts/test/common.sh
    dps_mpis_ready "$@" || exit 1
    # shellcheck disable=SC2034 # common.sh's report and run_job use them
    PASS=0 FAIL=0 LOGS=build/check-logs TIMEOUT=${DPS_TEST_TIMEOUT:-180} \
        TIMES=build/check-logs/times.txt REPORT_T=$SECONDS
    mkdir -p "$LOGS"
    : >"$TIMES"
    cl_main "${DPS_MPIS[@]}"
    echo "$PASS passed, $FAIL failed"
    [ "$FAIL" = 0 ]
fi
