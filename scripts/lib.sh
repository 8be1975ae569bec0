# shellcheck shell=bash
# Shared helpers for the scripts: launching a program under one MPI, with
# or without the shim. Source it; it defines functions only.

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI: no warnings about missing high-speed networks on a laptop-
# class machine; the shim does not depend on these settings.
export OMPI_MCA_btl_base_warn_component_unused=0

DPS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

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

# Agents still running (from any job): prints their pids.
dps_agents_left() {
    pgrep -x dpu_agent || true
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
