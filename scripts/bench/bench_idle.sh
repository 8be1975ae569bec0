#!/usr/bin/env bash
# The idle-host scenario: ranks whose compute phase leaves the CPU idle
# (they sleep, as while a GPU kernel runs or I/O is waited for), the
# OSU overlap method otherwise (tests/bench/overlap -S). Stock MPI, the
# shim, and for MPICH its asynchronous progress thread
# (MPIR_CVAR_ASYNC_PROGRESS=1 under MPI_THREAD_MULTIPLE), alternating, in
# one run; the compute time C is 2 x stock MPI's pure-comm time at each
# size, measured first, and the same for every column. Medians over the
# repetitions, a table per MPI and collective, results/idle.csv.
#
# usage: scripts/bench/bench_idle.sh [MPI...]     (default: openmpi mpich)
# environment (all optional):
#   BENCH_REPS=5            repetitions of each column (at least 5)
#   BENCH_IDLE_SIZES=1024:4194304  sizes in bytes, powers of two
#   BENCH_NP=2              ranks, bound one per CPU (BENCH_RANK_CPUS)
#   BENCH_ITERS=100         timed iterations per size (a tenth above 64 KiB)
#   BENCH_SHIM_VARS="DPUSHIM_MIN_BYTES=1"  variables for the shim runs
#   BENCH_COLLS="ialltoall ibcast iallgather iallreduce"
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source scripts/lib.sh
dps_mpis_ready "$@" || exit 1
set -- "${DPS_MPIS[@]}"

REPS=${BENCH_REPS:-5}
[ "$REPS" -ge 5 ] || REPS=5
SIZES=${BENCH_IDLE_SIZES:-1024:4194304}
NP=${BENCH_NP:-2}
ITERS=${BENCH_ITERS:-100}
SHIM_VARS=${BENCH_SHIM_VARS:-DPUSHIM_MIN_BYTES=1}
COLLS=${BENCH_COLLS:-ialltoall ibcast iallgather iallreduce}
if [ -z "${BENCH_RANK_CPUS+x}" ] && [ "$NP" -le "$(nproc)" ]; then
    BENCH_RANK_CPUS=$(seq -s, 0 $((NP - 1)))
fi
export DPS_RANK_CPUS=${BENCH_RANK_CPUS:-}
OUT=results
RAW=$OUT/raw-idle
mkdir -p "$RAW"
rm -f "$RAW"/*.txt

# run MPI KIND COLL FILE [overlap args...]: one job, appended to FILE.
run() {
    local mpi=$1 kind=$2 coll=$3 f=$4
    shift 4
    case $kind in
    stock) dps_launch "$mpi" "$NP" 0 "" "build/$mpi/tests/overlap" \
               -c "$coll" -m "$SIZES" -i "$ITERS" "$@" ;;
    shim)  dps_launch "$mpi" "$NP" 1 "$SHIM_VARS DPUSHIM_STATS=1" \
               "build/$mpi/tests/overlap" -c "$coll" -m "$SIZES" \
               -i "$ITERS" "$@" ;;
    async) dps_launch "$mpi" "$NP" 0 "MPIR_CVAR_ASYNC_PROGRESS=1" \
               "build/$mpi/tests/overlap" -c "$coll" -m "$SIZES" \
               -i "$ITERS" -M "$@" ;;
    esac >>"$f" 2>&1 || { echo; echo "run failed: $f" >&2; tail "$f" >&2;
                          return 1; }
}

for mpi in "$@"; do
    kinds="stock shim"
    [ "$mpi" = mpich ] && kinds="stock shim async"
    for coll in $COLLS; do
        # C = 2 x stock's pure-comm time, per size: the lower of two
        # first stock runs (the first job after a pause runs slow).
        cal="$RAW/$mpi-$coll-calibration.txt"
        printf '\r%s %s: calibration            ' "$mpi" "$coll" >&2
        # -S in these too: its 1 ns timer slack changes stock MPI's own
        # pure-comm time (Open MPI 1 KiB Ialltoall: 1 us against 10 us).
        run "$mpi" stock "$coll" "$cal" -S || exit 1
        run "$mpi" stock "$coll" "$cal" -S || exit 1
        times=$(dps_compute_times "$cal")
        echo "$times" >"$RAW/$mpi-$coll-times.txt"
        for rep in $(seq "$REPS"); do
            order=$kinds
            # Alternate the order, so that drift hits every column.
            [ $((rep % 2)) = 0 ] && order=$(echo "$kinds" | tr ' ' '\n' | tac | tr '\n' ' ')
            for kind in $order; do
                printf '\r%s %s rep %d/%d %s            ' "$mpi" "$coll" \
                    "$rep" "$REPS" "$kind" >&2
                run "$mpi" "$kind" "$coll" "$RAW/$mpi-$coll-$kind-$rep.txt" \
                    -S -T "$times" || exit 1
            done
        done
    done
done
printf '\r%60s\r' "" >&2
BENCH_SHIM_DESC="$SHIM_VARS" /usr/bin/python3 scripts/bench/idle_report.py \
    "$RAW" "$OUT" "$NP" "$COLLS" "$@"
