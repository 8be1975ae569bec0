#!/usr/bin/env bash
# The demo: one 1 MiB MPI_Ialltoall and one 1 MiB MPI_Ibcast, overlapped
# with computation the OSU way, on stock MPI and under the shim, for each
# MPI given. Shows that the collectives were offloaded and what it bought.
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
    export DPS_RANK_CPUS=$(seq -s, 0 $((NP - 1)))
fi
SIZE=$((1 << 20))
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

row() { # file -> "pure overall overlap" of the single size
    awk '$1 ~ /^[0-9]+$/ && NF >= 5 {printf "%9.1f %9.1f %7.1f%%", $2, $3, $5}' "$1"
}

for mpi in "$@"; do
    echo
    echo "== $mpi, $NP ranks, 1 MiB per rank pair, OSU overlap method (times in us)"
    printf "%-10s %-6s %9s %9s %8s\n" collective mode pure overall overlap
    for coll in ialltoall ibcast; do
        for mode in stock shim; do
            f="$out/$mpi-$coll-$mode"
            if [ $mode = stock ]; then
                dps_launch "$mpi" "$NP" 0 "" build/"$mpi"/tests/overlap \
                    -c $coll -m $SIZE:$SIZE -i 200 >"$f" 2>&1
            else
                # Forced on: by default (MIN_BYTES=auto) agents that share
                # every core with ranks offload nothing, as it does not pay.
                dps_launch "$mpi" "$NP" 1 "DPUSHIM_STATS=1 DPUSHIM_MIN_BYTES=1" \
                    build/"$mpi"/tests/overlap -c $coll -m $SIZE:$SIZE \
                    -i 200 >"$f" 2>&1
            fi || { echo "run failed:"; cat "$f"; exit 1; }
            r=$(row "$f")
            [ -n "$r" ] || { echo "no result line from the $mode run:"; cat "$f"; exit 1; }
            printf "%-10s %-6s %s\n" $coll $mode "$r"
        done
        grep -E "^dpushim: $coll offloaded=[1-9]" "$out/$mpi-$coll-shim" || {
            echo "the shim run did not offload $coll:"
            cat "$out/$mpi-$coll-shim"
            exit 1
        }
        awk '$1 ~ /^[0-9]+$/ && NF >= 5 {v[FILENAME] = $3}
             END {printf "           shim/stock overall time: %.2f\n",
                  v[ARGV[2]] / v[ARGV[1]]}' \
            "$out/$mpi-$coll-stock" "$out/$mpi-$coll-shim"
    done
done
echo
echo "pure = post + wait; overall = post + compute(pure) + wait;"
echo "overlap = 100 - 100 * (overall - compute) / pure (OSU Micro-Benchmarks)."
echo "The shim runs set DPUSHIM_MIN_BYTES=1: by default (auto) agents that would"
echo "share every core with computing ranks offload nothing, because on such a"
echo "machine offload was measured to cost more than it saves. The agent then"
echo "competes with the ranks for CPU; README.md, 'Measured results', explains."
