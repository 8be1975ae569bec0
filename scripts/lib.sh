# shellcheck shell=bash
# Shared helpers for the scripts: launching a program under one MPI, with
# or without the shim. Source it; it defines functions only.

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI: no warnings about missing high-speed networks on a laptop-
# class machine; the shim does not depend on these settings.
export OMPI_MCA_btl_base_warn_component_unused=0

DPS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# This run's mark. Every process a script starts inherits it: launchers
# pass the environment to their ranks, ranks to the agents they spawn,
# and listening agents started here have it too. Checks and kills find
# their own processes by it (read back from /proc/PID/environ), so a run
# never counts or kills another job's ranks or agents, nor a node's
# listening agent. A process group would not do: MPI launchers put ranks
# in groups of their own.
: "${DPS_RUN_TAG:=run-$$-$(date +%s%N)}"
export DPS_RUN_TAG

# dps_launch MPI NP SHIM(0|1) "VAR=value ..." program [args...]
# Runs the program with NP ranks; SHIM=1 preloads build/MPI/libdpushim.so.
# The listed variables are passed to every rank. DPS_RANK_CPUS (a CPU list
# such as 0-1) binds the ranks, one core each, to those CPUs; unset, the
# launcher's default placement applies.
dps_launch() {
    local mpi=$1 np=$2 shim=$3 vars=$4
    shift 4
    local lib="$DPS_ROOT/build/$mpi/libdpushim.so" args=() kv rf=""
    local cpus=() per=() c i
    # One CPU for every rank, round robin over the expanded list.
    if [ -n "${DPS_RANK_CPUS:-}" ]; then
        for c in ${DPS_RANK_CPUS//,/ }; do
            if [[ $c == *-* ]]; then
                for ((i = ${c%-*}; i <= ${c#*-}; i++)); do cpus+=("$i"); done
            else
                cpus+=("$c")
            fi
        done
        for ((i = 0; i < np; i++)); do per+=("${cpus[i % ${#cpus[@]}]}"); done
    fi
    case $mpi in
    openmpi)
        args=(mpirun.openmpi --oversubscribe -np "$np")
        # A rank file: Open MPI 4.1 binds nothing with --cpu-set and
        # --bind-to core under --oversubscribe.
        # Named by its contents and kept, so that a launch killed by a
        # time limit leaves nothing new behind.
        if [ ${#per[@]} -gt 0 ]; then
            rf="${TMPDIR:-/tmp}/dpushim-rankfile-$(id -u)-$(IFS=_; echo "${per[*]}")"
            if [ ! -f "$rf" ]; then
                for ((i = 0; i < np; i++)); do
                    echo "rank $i=localhost slot=${per[i]}"
                done >"$rf.$$" && mv -f "$rf.$$" "$rf"
            fi
            args+=(--rankfile "$rf")
        fi
        [ "$shim" = 1 ] && args+=(-x "LD_PRELOAD=$lib")
        for kv in $vars; do args+=(-x "$kv"); done
        ;;
    mpich)
        args=(mpiexec.mpich -n "$np")
        # Hydra binds only the ranks its list names and takes no ranges.
        if [ ${#per[@]} -gt 0 ]; then
            args+=(-bind-to "user:$(IFS=,; echo "${per[*]}")")
        fi
        [ "$shim" = 1 ] && args+=(-genv LD_PRELOAD "$lib")
        for kv in $vars; do args+=(-genv "${kv%%=*}" "${kv#*=}"); done
        ;;
    *)
        echo "unknown MPI '$mpi' (expected openmpi or mpich)" >&2
        return 2
        ;;
    esac
    "${args[@]}" "$@" </dev/null
}

# dps_pids_tagged NAME ENTRY: the pids of the processes named NAME (as in
# /proc/PID/comm) whose environment holds ENTRY (VAR=value).
dps_pids_tagged() {
    local name=$1 entry=$2 d c
    for d in /proc/[0-9]*; do
        c=
        { read -r c <"$d/comm"; } 2>/dev/null || continue
        [ "$c" = "$name" ] || continue
        grep -qxzF -- "$entry" "$d/environ" 2>/dev/null && echo "${d#/proc/}"
    done
    return 0
}

# dps_own_pids NAME...: this run's processes of those names.
dps_own_pids() {
    local n
    for n in "$@"; do
        dps_pids_tagged "$n" "DPS_RUN_TAG=$DPS_RUN_TAG"
    done
}

# This run's agents still running: their pids.
dps_agents_left() {
    dps_own_pids dpu_agent
}

# dps_pids_describe PID...: "PID: command line" for each one alive.
dps_pids_describe() {
    local p
    for p in "$@"; do
        [ -r "/proc/$p/cmdline" ] &&
            echo "$p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
    done
    return 0
}

# This run's agents still running, each as "PID: command line".
dps_agents_described() {
    local pids
    mapfile -t pids < <(dps_agents_left)
    dps_pids_describe "${pids[@]}"
}

# dps_mpis_ready [MPI...]: sets DPS_MPIS to the MPIs given (none given:
# openmpi and mpich), after checking that each is installed and built.
# Prints what is missing, naming it, and returns 1 when any is: a script
# must never report success for an MPI it could not run.
dps_mpis_ready() {
    local mpi bad=0 launcher mpicc
    DPS_MPIS=("$@")
    [ ${#DPS_MPIS[@]} -gt 0 ] || DPS_MPIS=(openmpi mpich)
    for mpi in "${DPS_MPIS[@]}"; do
        case $mpi in
        openmpi) launcher=mpirun.openmpi mpicc=mpicc.openmpi ;;
        mpich) launcher=mpiexec.mpich mpicc=mpicc.mpich ;;
        *)
            echo "dpushim: unknown MPI '$mpi' (expected openmpi or mpich)" >&2
            bad=1
            continue
            ;;
        esac
        if ! command -v "$launcher" >/dev/null || ! command -v "$mpicc" >/dev/null; then
            echo "dpushim: $mpi is not installed ($launcher or $mpicc not" \
                 "found): run 'make deps' as root" >&2
            bad=1
        elif [ ! -f "$DPS_ROOT/build/$mpi/libdpushim.so" ] ||
             [ ! -x "$DPS_ROOT/build/$mpi/dpu_agent" ] ||
             [ ! -d "$DPS_ROOT/build/$mpi/tests" ]; then
            echo "dpushim: $mpi is not built (build/$mpi/libdpushim.so," \
                 "dpu_agent or tests missing): run 'make MPI=$mpi'" >&2
            bad=1
        fi
    done
    return $bad
}

# dps_compute_times FILE: "SIZE=US,..." with US = 2 x the lowest pure-comm
# time at each size among the overlap runs in FILE (the idle and cluster
# benchmarks' compute phase, the same for every column).
dps_compute_times() {
    awk '$1 ~ /^[0-9]+$/ && NF >= 5 {
             if (!($1 in p) || $2 < p[$1]) p[$1] = $2
             if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
         END { for (i = 1; i <= n; i++)
                   printf "%s%s=%.2f", (i > 1 ? "," : ""), order[i], 2 * p[order[i]] }' "$1"
}
