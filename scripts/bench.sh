#!/usr/bin/env bash
# Side-by-side overlap benchmark: tests/bench/overlap (OSU method) on stock
# MPI and under the shim, alternating, repeated; medians per size in one
# table per MPI and collective, plus CSV and PNG plots in results/.
#
# usage: scripts/bench.sh [MPI...]   (MPI: openmpi, mpich; default both)
# environment (all optional):
#   BENCH_REPS=3          repetitions of each stock/shim pair (medians)
#   BENCH_SIZES=1:4194304 message sizes, powers of two (bytes per block)
#   BENCH_NP=2            ranks
#   BENCH_ITERS=100       timed iterations per size (a tenth above 64 KiB)
#   BENCH_TESTS=0         MPI_Test calls during compute (OMB -t)
#   BENCH_MODE=time       compute for a fixed time (OMB) or a fixed amount
#                         of work ("work": shows what the agents cost)
#   BENCH_SHIM_VARS="DPUSHIM_MIN_BYTES=1"  variables for the shim runs
#   BENCH_RANK_CPUS=      CPU list to bind the ranks to (one core each);
#                         default 0,1,...,NP-1 when NP fits the CPUs (the
#                         standard placement: one rank per core, agents
#                         sharing those cores), else no binding
#   BENCH_AGENT_CPUS=     CPU list for the agents (DPUSHIM_AGENT_CPUS)
#   BENCH_RPD=0           ranks per agent (DPUSHIM_RANKS_PER_DPU)
#   BENCH_BLOCKING=1      0 skips the blocking-call costs (stock vs shim)
#   BENCH_EXTRA=1         0 skips the closing comparisons (registration
#                         cache on/off, copy threads 1 vs default)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
source scripts/lib.sh
dps_mpis_ready "$@" || exit 1
set -- "${DPS_MPIS[@]}"

REPS=${BENCH_REPS:-3}
SIZES=${BENCH_SIZES:-1:4194304}
NP=${BENCH_NP:-2}
ITERS=${BENCH_ITERS:-100}
TESTS=${BENCH_TESTS:-0}
MODE=${BENCH_MODE:-time}
SHIM_VARS=${BENCH_SHIM_VARS:-DPUSHIM_MIN_BYTES=1}
[ -n "${BENCH_AGENT_CPUS:-}" ] && SHIM_VARS="$SHIM_VARS DPUSHIM_AGENT_CPUS=$BENCH_AGENT_CPUS"
SHIM_VARS="$SHIM_VARS DPUSHIM_RANKS_PER_DPU=${BENCH_RPD:-0}"
if [ -z "${BENCH_RANK_CPUS+x}" ] && [ "$NP" -le "$(nproc)" ]; then
    BENCH_RANK_CPUS=$(seq -s, 0 $((NP - 1)))
fi
export DPS_RANK_CPUS=${BENCH_RANK_CPUS:-}
OUT=results
RAW=$OUT/raw
mkdir -p "$RAW"
rm -f "$RAW"/*.txt "$OUT"/copylimit-*.txt # this run's medians only
case $MODE in time) mflag=() ;; work) mflag=(-W) ;;
    *) echo "BENCH_MODE must be time or work" >&2; exit 2 ;; esac

total=$(( $# * 2 * REPS * 2 ))
n=0
for mpi in "$@"; do
    for coll in ialltoall ibcast; do
        for rep in $(seq "$REPS"); do
            # Alternate the order so drift on a shared machine hits both.
            order="stock shim"
            [ $((rep % 2)) = 0 ] && order="shim stock"
            for kind in $order; do
                n=$((n + 1))
                printf '\r[%d/%d] %s %s rep %d %s            ' \
                    "$n" "$total" "$mpi" "$coll" "$rep" "$kind" >&2
                f="$RAW/$mpi-$coll-$kind-$rep.txt"
                if [ "$kind" = stock ]; then
                    dps_launch "$mpi" "$NP" 0 "" "build/$mpi/tests/overlap" \
                        -c "$coll" -m "$SIZES" -i "$ITERS" -t "$TESTS" \
                        "${mflag[@]}" >"$f" 2>&1
                else
                    # One job per size: its statistics (agent CPU time per
                    # collective) then belong to that size alone.
                    : >"$f"
                    for ((sz = ${SIZES%%:*}; sz <= ${SIZES##*:}; sz *= 2)); do
                        dps_launch "$mpi" "$NP" 1 \
                            "$SHIM_VARS DPUSHIM_STATS=1" \
                            "build/$mpi/tests/overlap" -c "$coll" \
                            -m "$sz:$sz" -i "$ITERS" -t "$TESTS" \
                            "${mflag[@]}" >>"$f" 2>&1 || break
                    done
                fi || { echo; echo "run failed: $f" >&2; tail "$f" >&2;
                        exit 1; }
            done
        done
    done
done
printf '\r%60s\r' "" >&2
# The copy limit for the largest size: what one agent must move (every
# block of every rank, twice, for Ialltoall; the message once per other
# rank for Ibcast) through the same CMA path, timed alone.
max=${SIZES##*:}
build/"$1"/tests/copylimit $((NP * NP * max)) >"$OUT/copylimit-ialltoall.txt"
build/"$1"/tests/copylimit $(((NP - 1) * max)) >"$OUT/copylimit-ibcast.txt"
BENCH_SHIM_DESC="$SHIM_VARS" /usr/bin/python3 scripts/bench_report.py "$RAW" "$OUT" "$MODE" "$NP" \
    "$TESTS" "$@"

# median [DIGITS]: the median of the numbers on stdin, DIGITS decimals (1).
median() {
    sort -n | awk -v d="${1:-1}" '{v[NR] = $1}
        END {if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
             printf "%.*f", d, m}'
}

# Blocking calls the shim does not offload: MPI's own under the shim, with
# offload on, against stock MPI, alternating runs (tests/bench/blockcost:
# each value the best of five rounds of 20000 calls); medians.
if [ "${BENCH_BLOCKING:-1}" = 1 ]; then
    breps=$(( REPS > 5 ? REPS : 5 ))
    for mpi in "$@"; do
        rm -f "$RAW/$mpi"-blockcost-*.txt
        for rep in $(seq "$breps"); do
            order="stock shim"
            [ $((rep % 2)) = 0 ] && order="shim stock"
            for kind in $order; do
                printf '\r%s blocking calls rep %d %s            ' "$mpi" \
                    "$rep" "$kind" >&2
                dps_launch "$mpi" "$NP" "$([ $kind = shim ] && echo 1 || echo 0)" \
                    "$([ $kind = shim ] && echo "$SHIM_VARS")" \
                    "build/$mpi/tests/blockcost" \
                    >>"$RAW/$mpi-blockcost-$kind.txt" 2>&1 ||
                    { echo; echo "blockcost failed ($mpi, $kind)" >&2; exit 1; }
            done
        done
    done
    printf '\r%60s\r' "" >&2
    echo
    echo "== blocking calls under the shim with offload on ($SHIM_VARS), $NP" \
         "ranks, medians of $breps alternating runs, us per call"
    printf '  %-8s %-24s %8s %8s %11s\n' MPI call stock shim shim/stock
    echo "mpi,call,stock_us,shim_us,ratio" >"$OUT/blockcost.csv"
    for mpi in "$@"; do
        for c in allreduce8:"MPI_Allreduce, 8 B" barrier:MPI_Barrier \
                 bcast8:"MPI_Bcast, 8 B" \
                 pingpong_half_rtt:"MPI_Send/Recv, half RTT"; do
            key=${c%%:*}
            a=$(sed -n "s/.*$key""_us=\([0-9.]*\).*/\1/p" \
                "$RAW/$mpi-blockcost-stock.txt" | median 3)
            b=$(sed -n "s/.*$key""_us=\([0-9.]*\).*/\1/p" \
                "$RAW/$mpi-blockcost-shim.txt" | median 3)
            r=$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f", b / a}')
            printf '  %-8s %-24s %8.3f %8.3f %11s\n' "$mpi" "${c#*:}" "$a" "$b" "$r"
            echo "$mpi,${c#*:},$a,$b,$r" >>"$OUT/blockcost.csv"
        done
    done
fi

# What caching and pipelining buy, each against the shim without it, in
# alternating runs (medians of REPS):
#  - a repeated small offloaded Ialltoall (1 KiB blocks, same buffers):
#    post and whole-call time with DPUSHIM_REGCACHE_BYTES=0 (every call
#    registers its buffers and sends their keys) and with the cache;
#  - the pure-comm time of the largest Ialltoall with
#    DPUSHIM_PIPELINE_DEPTH=1 (one thread reads a chunk, then writes it)
#    and with the default depth, beside one direct copy of the same bytes.
[ "${BENCH_EXTRA:-1}" = 1 ] || exit 0
# pair MPI STEM REP "VARS for run a" PROGRAM ARGS...: run a (the shim
# without the feature) and b (the default) once each, appending to
# $RAW/MPI-STEM-{a,b}.txt.
pair() {
    local mpi=$1 stem=$2 rep=$3 avars=$4 kind v
    shift 4
    for kind in a b; do
        printf '\r%s %s rep %d %s            ' "$mpi" "$stem" "$rep" \
            "$kind" >&2
        v=$SHIM_VARS
        [ $kind = a ] && v="$v $avars"
        dps_launch "$mpi" "$NP" 1 "$v" "$@" >>"$RAW/$mpi-$stem-$kind.txt" 2>&1
    done
}
for mpi in "$@"; do
    rm -f "$RAW/$mpi"-postcost-?.txt "$RAW/$mpi"-pipe-?.txt
    for rep in $(seq "$REPS"); do
        pair "$mpi" postcost "$rep" DPUSHIM_REGCACHE_BYTES=0 \
            "build/$mpi/tests/postcost" -m 1024 -i 1000
        pair "$mpi" pipe "$rep" DPUSHIM_PIPELINE_DEPTH=1 \
            "build/$mpi/tests/overlap" -c ialltoall -m "$max:$max" -i "$ITERS"
    done
    printf '\r%60s\r' "" >&2
    echo
    echo "== $mpi: repeated 1 KiB Ialltoall on the same buffers ($NP ranks," \
         "medians of $REPS runs, us)"
    for kind in a b; do
        f="$RAW/$mpi-postcost-$kind.txt"
        printf '  %-28s post %6s   whole call %7s\n' \
            "$([ $kind = a ] && echo "no cache (REGCACHE_BYTES=0)" ||
               echo "registration cache")" \
            "$(sed -n 's/.*post_us=\([0-9.]*\).*/\1/p' "$f" | median)" \
            "$(sed -n 's/.*call_us=\([0-9.]*\).*/\1/p' "$f" | median)"
    done
    echo "== $mpi: Ialltoall of $max B blocks, pure comm (medians of $REPS" \
         "runs, us)"
    for kind in a b; do
        printf '  %-28s %8s\n' \
            "$([ $kind = a ] && echo "PIPELINE_DEPTH=1" ||
               echo "default depth")" \
            "$(awk '$1 ~ /^[0-9]+$/ && NF >= 5 {print $2}' \
               "$RAW/$mpi-pipe-$kind.txt" | median)"
    done
    sed -n 's/.*bytes=\([0-9]*\) agent_path_us=\([0-9.]*\) single_copy_us=\([0-9.]*\).*/  copies of the same bytes alone: two (read, write) \2, one direct \3/p' \
        "$OUT/copylimit-ialltoall.txt"
done
