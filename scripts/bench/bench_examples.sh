#!/usr/bin/env bash
# The example applications side by side (examples/ring_bcast.c, an
# HPL-like pipelined panel broadcast under a DGEMM update, and
# examples/halo3d.c, a 3-D halo exchange under a Jacobi sweep): each
# example's plain MPI point-to-point mode on stock MPI against its
# persistent dpushim group under the shim, and halo3d's persistent
# neighbourhood alltoallw on stock MPI against the same under the shim;
# alternating, BENCH_REPS times, with the compute phase busy (real
# compute) and idle (the ranks sleep as long, as while a GPU computes;
# the length is the busy stock runs' median compute time, the same for
# every idle run). Prints, per MPI, the median time_s of each column and
# the ratio shim/stock, and the group's statistics line; fails (exit 1)
# if any run fails, times out, does not print "check: ok", or a shim run
# did not offload what it should. Raw output in results/raw-examples/,
# medians in results/examples.csv.
#
# usage: scripts/bench/bench_examples.sh [MPI...]   (openmpi, mpich; default both)
# environment (all optional):
#   BENCH_REPS=3            repetitions of each column (medians)
#   BENCH_NP=2              ranks
#   BENCH_RANK_CPUS=        CPU list to bind the ranks to (one core each);
#                           default 0,...,NP-1 when NP fits the CPUs
#   BENCH_COMPUTE="busy idle"  compute modes
#   BENCH_EXAMPLES="ring_bcast halo3d"
#   BENCH_RING_ARGS=        extra ring_bcast options (sizes: -n -b -M -i)
#   BENCH_HALO_ARGS=        extra halo3d options (sizes: -n -i)
#   BENCH_SHIM_VARS="DPUSHIM_MIN_BYTES=1"  variables for the shim runs
#   BENCH_TIMEOUT=120       seconds allowed for each run
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source scripts/lib.sh
dps_mpis_ready "$@" || exit 1
set -- "${DPS_MPIS[@]}"

REPS=${BENCH_REPS:-3}
NP=${BENCH_NP:-2}
COMPUTE=${BENCH_COMPUTE:-busy idle}
EXAMPLES=${BENCH_EXAMPLES:-ring_bcast halo3d}
SHIM_VARS=${BENCH_SHIM_VARS:-DPUSHIM_MIN_BYTES=1}
TIMEOUT=${BENCH_TIMEOUT:-120}
for c in $COMPUTE; do
    case $c in busy|idle) ;;
    *) echo "BENCH_COMPUTE: $c is not busy or idle" >&2; exit 2 ;; esac
done
for ex in $EXAMPLES; do
    case $ex in ring_bcast|halo3d) ;;
    *) echo "BENCH_EXAMPLES: $ex is not ring_bcast or halo3d" >&2
       exit 2 ;; esac
done
if [ -z "${BENCH_RANK_CPUS+x}" ] && [ "$NP" -le "$(nproc)" ]; then
    BENCH_RANK_CPUS=$(seq -s, 0 $((NP - 1)))
fi
export DPS_RANK_CPUS=${BENCH_RANK_CPUS:-}
OUT=results
RAW=$OUT/raw-examples
mkdir -p "$RAW"
rm -f "$RAW"/*.txt

# The job under way (its timeout's pid), stopped with the script: timeout
# passes the signal on to the launcher, which ends the ranks. Every job's
# ranks (and the agents they start) carry DPS_BENCH_JOB=<this shell>-<n>
# in their environment, so that what a job leaves behind is told apart
# from other jobs' processes on the machine with certainty.
JOB=
NJOB=0
TAG=
trap '[ -n "$JOB" ] && kill -TERM "$JOB" 2>/dev/null && wait "$JOB"
      [ -n "$TAG" ] && leftovers "$TAG" /dev/null; exit 130' INT TERM

# Build the examples for one MPI where missing or older than the source.
CFLAGS_EX="-O2 -std=gnu11 -Wall -Wextra -Iinclude"
build() {
    local mpi=$1 ex dir="build/$1/examples"
    mkdir -p "$dir"
    for ex in $EXAMPLES; do
        if [ ! -x "$dir/$ex" ] || [ "examples/$ex.c" -nt "$dir/$ex" ] ||
           [ include/dpushim.h -nt "$dir/$ex" ]; then
            echo "mpicc.$mpi $CFLAGS_EX -o $dir/$ex examples/$ex.c -lm" >&2
            # shellcheck disable=SC2086
            "mpicc.$mpi" $CFLAGS_EX -o "$dir/$ex.tmp" "examples/$ex.c" \
                -lm && mv -f "$dir/$ex.tmp" "$dir/$ex" || return 1
        fi
    done
}

# The columns of one example, in stock/shim pairs: KIND-MODE, KIND stock
# (no shim) or shim (preloaded), MODE the example's -m.
columns() {
    case $1 in
    ring_bcast) echo "stock-mpi shim-group" ;;
    halo3d) echo "stock-mpi shim-group stock-neighbor shim-neighbor" ;;
    esac
}

FAILED=0
# run MPI EXAMPLE COMPUTE COLUMN REP [extra args]: one job into its file;
# records a failure (and shows the end of the output) when the job fails,
# prints no "check: ok", or a shim run offloaded nothing.
run() {
    local mpi=$1 ex=$2 comp=$3 col=$4 rep=$5 shim=0 mode rc
    local f="$RAW/$1-$2-$3-$4-$5.txt" args want vars
    shift 5
    NJOB=$((NJOB + 1))
    TAG="$$-$NJOB"
    vars="DPS_BENCH_JOB=$TAG"
    mode=${col#*-}
    args=(-m "$mode")
    [ "$comp" = idle ] && args+=(-c sleep)
    if [ "${col%%-*}" = shim ]; then
        shim=1
        vars="$vars $SHIM_VARS DPUSHIM_STATS=1"
    fi
    # shellcheck disable=SC2206
    [ "$ex" = ring_bcast ] && args+=(${BENCH_RING_ARGS:-})
    # shellcheck disable=SC2206
    [ "$ex" = halo3d ] && args+=(${BENCH_HALO_ARGS:-})
    timeout -k 5 "$TIMEOUT" bash -c \
        'source scripts/lib.sh; dps_launch "$@"' _ "$mpi" "$NP" "$shim" \
        "$vars" "build/$mpi/examples/$ex" "${args[@]}" "$@" >"$f" 2>&1 &
    JOB=$!
    wait "$JOB"
    rc=$?
    JOB=
    leftovers "$TAG" "$f" || FAILED=1
    TAG=
    want=""
    [ "$col" = shim-group ] && want=group_init
    [ "$col" = shim-neighbor ] && want=neighbor_alltoallw_init
    if [ $rc -ne 0 ] || ! grep -q '^check: ok' "$f" ||
       ! grep -q '^time_s: ' "$f" ||
       { [ -n "$want" ] &&
         ! grep -Eq "^dpushim: $want offloaded=[1-9]" "$f"; }; then
        echo >&2
        echo "FAILED (exit $rc$([ $rc = 124 ] && echo ": timed out")):" \
             "$f" >&2
        tail -n 15 "$f" | sed 's/^/    | /' >&2
        FAILED=1
        return 1
    fi
}

# tagged TAG: the pids of the processes whose environment holds
# DPS_BENCH_JOB=TAG (a job's ranks and agents).
tagged() {
    local n
    for n in dpu_agent pattern ring_bcast halo3d; do
        dps_pids_tagged "$n" "DPS_BENCH_JOB=$1"
    done
}

# leftovers TAG FILE: 0 when none of the job's processes is left (after
# up to 10 s: an agent exits once its rank is gone); else ends them by
# pid, notes it in FILE and returns 1.
leftovers() {
    local i pids
    for i in 1 2 3 4 5 6 7 8 9 10; do
        pids=$(tagged "$1")
        [ -z "$pids" ] && return 0
        sleep 1
    done
    echo "processes left by job $1: ${pids//$'\n'/ } (killed)" |
        tee -a "$2" >&2
    # shellcheck disable=SC2086
    kill -9 $pids 2>/dev/null
    return 1
}

# median [DIGITS]: of the numbers on stdin (empty: "-").
median() {
    sort -g | awk -v d="${1:-3}" '{v[NR] = $1}
        END {if (NR == 0) {print "-"; exit}
             if (NR % 2) m = v[(NR + 1) / 2]
             else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
             printf "%.*f", d, m}'
}

# The median of a line "KEY: value" over the runs of one column.
col_median() {
    local key=$1 pat=$2 digits=${3:-3}
    # shellcheck disable=SC2086
    cat $pat 2>/dev/null | sed -n "s/^$key: \([0-9.eE+-]*\).*/\1/p" |
        median "$digits"
}

ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a == "-" || b == "-" || a + 0 == 0) print "-"
        else printf "%.2f", b / a }'
}

for mpi in "$@"; do
    build "$mpi" || { echo "building the examples for $mpi failed" >&2
                      exit 1; }
done

echo "mpi,example,compute,stock_mode,stock_s,shim_mode,shim_s,ratio" \
    >"$OUT/examples.csv"
declare -A SLEEP
for mpi in "$@"; do
    SLEEP=()
    for comp in $COMPUTE; do
        for ex in $EXAMPLES; do
            extra=()
            if [ "$comp" = idle ]; then
                # Sleep as long as stock MPI's busy runs computed (their
                # median), or, without busy runs, as one stock idle run
                # measured it: the same length in every idle run.
                us=$(col_median compute_us \
                     "$RAW/$mpi-$ex-busy-stock-mpi-*.txt" 1)
                how="stock MPI's busy runs' median compute time"
                if [ "$us" = - ]; then
                    how="measured by one stock MPI idle run"
                    printf '\r%s %s: calibration            ' "$mpi" \
                        "$ex" >&2
                    run "$mpi" "$ex" idle stock-mpi 0
                    us=$(col_median compute_us \
                         "$RAW/$mpi-$ex-idle-stock-mpi-0.txt" 1)
                    rm -f "$RAW/$mpi-$ex-idle-stock-mpi-0.txt"
                fi
                [ "$us" = - ] && continue   # the failure is recorded
                SLEEP[$ex]="$us us per step ($how)"
                extra=(-S "$us")
            fi
            cols=$(columns "$ex")
            for rep in $(seq "$REPS"); do
                order=$cols
                # Alternate the order, so that drift hits every column.
                [ $((rep % 2)) = 0 ] &&
                    order=$(echo "$cols" | tr ' ' '\n' | tac | tr '\n' ' ')
                for col in $order; do
                    printf '\r%s %s %s rep %d/%d %s            ' "$mpi" \
                        "$ex" "$comp" "$rep" "$REPS" "$col" >&2
                    run "$mpi" "$ex" "$comp" "$col" "$rep" "${extra[@]}"
                done
            done
        done
    done
    printf '\r%70s\r' "" >&2

    echo
    echo "== $mpi, $NP ranks, median time_s of $REPS alternating runs;" \
         "shim runs with $SHIM_VARS"
    printf '  %-10s %-7s  %-10s %8s   %-10s %8s  %s\n' example compute \
        "stock mode" time_s "shim mode" time_s shim/stock
    for comp in $COMPUTE; do
        for ex in $EXAMPLES; do
            # Columns in pairs: stock, then shim.
            read -ra cs <<<"$(columns "$ex")"
            for ((i = 0; i + 1 < ${#cs[@]}; i += 2)); do
                s=${cs[i]} h=${cs[i + 1]}
                a=$(col_median time_s "$RAW/$mpi-$ex-$comp-$s-*.txt")
                b=$(col_median time_s "$RAW/$mpi-$ex-$comp-$h-*.txt")
                r=$(ratio "$a" "$b")
                printf '  %-10s %-7s  %-10s %8s   %-10s %8s  %10s\n' \
                    "$ex" "$comp" "${s#*-}" "$a" "${h#*-}" "$b" "$r"
                echo "$mpi,$ex,$comp,${s#*-},$a,${h#*-},$b,$r" \
                    >>"$OUT/examples.csv"
            done
        done
    done
    for ex in $EXAMPLES; do
        [ -n "${SLEEP[$ex]:-}" ] && echo "  idle: $ex sleeps ${SLEEP[$ex]}"
    done
    # The offload statistics, once: the last shim run's of each kind.
    STATS_RE='group_init|neighbor_alltoallw_init'
    for ex in $EXAMPLES; do
        for col in shim-group shim-neighbor; do
            f=
            for comp in $COMPUTE; do
                [ -f "$RAW/$mpi-$ex-$comp-$col-$REPS.txt" ] &&
                    f="$RAW/$mpi-$ex-$comp-$col-$REPS.txt"
            done
            [ -n "$f" ] && sed -n -E "s/^dpushim: ($STATS_RE) /  $ex: &/p" "$f"
        done
    done
done

if [ $FAILED -ne 0 ]; then
    echo "bench_examples: some runs FAILED (see above and $RAW/)" >&2
    exit 1
fi
