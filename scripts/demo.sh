#!/usr/bin/env bash
# The demo: a 1 MiB MPI_Ialltoall and a 1 MiB MPI_Ibcast, overlapped with
# computation the OSU way, on stock MPI and under the shim, for each MPI
# given, in the two settings that matter:
#   busy  the ranks compute on every core (OSU's busy loop): offload
#         cannot win here without a DPU, it can only cost little;
#   idle  the ranks' compute phase leaves the core idle (it sleeps, as
#         while a GPU kernel runs or I/O is waited for): stock MPI makes
#         no progress meanwhile, the agent and the DMA engines do.
# Shows that the collectives were offloaded and what it bought.
#
# usage: scripts/demo.sh [MPI...]   (MPI: openmpi, mpich; default both)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
source scripts/lib.sh
dps_mpis_ready "$@" || exit 1
set -- "${DPS_MPIS[@]}"

NP=${DPS_DEMO_NP:-2}
# The standard placement: one rank per core (the agent shares the cores).
if [ -z "${DPS_RANK_CPUS+x}" ] && [ "$NP" -le "$(nproc)" ]; then
    DPS_RANK_CPUS=$(seq -s, 0 $((NP - 1)))
    export DPS_RANK_CPUS
fi
SIZE=$((1 << 20))
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

field() { # file column -> that column of the single size's row
    awk -v c="$2" '$1 ~ /^[0-9]+$/ && NF >= 5 {print $c}' "$1"
}

# job MPI SHIM(0|1) FILE overlap-args...: one run, or the reason it failed.
job() {
    local mpi=$1 shim=$2 f=$3 vars=""
    shift 3
    # Forced on: by default (MIN_BYTES=auto) agents that share every core
    # with ranks offload nothing, since on a busy host it does not pay.
    [ "$shim" = 1 ] && vars="DPUSHIM_STATS=1 DPUSHIM_MIN_BYTES=1"
    dps_launch "$mpi" "$NP" "$shim" "$vars" build/"$mpi"/tests/overlap \
        -c "$coll" -m $SIZE:$SIZE -i 200 "$@" >"$f" 2>&1 &&
        [ -n "$(field "$f" 2)" ] || {
        echo "run failed ($mpi $coll, shim=$shim):"
        cat "$f"
        exit 1
    }
}

# scenario MPI HOST(busy|idle) [overlap args...]: stock and shim rows for
# $coll, and the shim's statistics line (it must show offloaded calls).
scenario() {
    local mpi=$1 host=$2 mode f
    shift 2
    for mode in stock shim; do
        f="$out/$mpi-$coll-$host-$mode"
        job "$mpi" "$([ $mode = shim ] && echo 1 || echo 0)" "$f" "$@"
        printf "%-8s %-10s %-6s %9.1f %9.1f %7.1f%%\n" "$host" "$coll" \
            $mode "$(field "$f" 2)" "$(field "$f" 3)" "$(field "$f" 5)"
    done
    grep -E "^dpushim: $coll offloaded=[1-9]" "$f" || {
        echo "the shim run did not offload $coll:"
        cat "$f"
        exit 1
    }
}

for mpi in "$@"; do
    echo
    echo "== $mpi, $NP ranks, 1 MiB per rank pair, OSU overlap method (times in us)"
    printf "%-8s %-10s %-6s %9s %9s %8s\n" host collective mode pure overall overlap
    for coll in ialltoall ibcast; do
        # busy: OSU's busy compute for the pure-comm time
        scenario "$mpi" busy
        # idle: the compute phase sleeps for 2 x stock's pure-comm time,
        # the same for both
        c=$(awk -v p="$(field "$out/$mpi-$coll-busy-stock" 2)" 'BEGIN {printf "%.1f", 2 * p}')
        scenario "$mpi" idle -S -T "$SIZE=$c"
        awk -v bs="$(field "$out/$mpi-$coll-busy-stock" 3)" \
            -v bh="$(field "$out/$mpi-$coll-busy-shim" 3)" \
            -v is="$(field "$out/$mpi-$coll-idle-stock" 3)" \
            -v ih="$(field "$out/$mpi-$coll-idle-shim" 3)" -v c="$c" \
            'BEGIN {printf "         shim/stock overall time: busy %.2f, idle %.2f (compute %s us asleep)\n",
                    bh / bs, ih / is, c}'
    done
done
cat <<'EOF'

pure = post + wait; overall = post + compute + wait; overlap = 100 - 100 *
(overall - compute) / pure (OSU Micro-Benchmarks). busy: the ranks compute
on every core for the pure-comm time (OSU); idle: they sleep for twice
stock MPI's pure-comm time, as ranks do while their GPU kernels run or
they wait for I/O. The shim runs set DPUSHIM_MIN_BYTES=1: by default
(auto) nothing is offloaded where the agents share every core with ranks,
because a busy host (no spare cycles, no DPU) pays for offload instead of
gaining from it; an idle or DPU-equipped host gains. docs/results.md,
"Measured results", has the full tables (make bench).
EOF
