#!/usr/bin/env bash
# The 3-D FFT (examples/fft3d.c) side by side: stock MPI, the shim, and
# for MPICH its asynchronous progress thread (MPIR_CVAR_ASYNC_PROGRESS=1,
# fft3d -M: MPI_THREAD_MULTIPLE), alternating, BENCH_REPS times, for each
# N, pipeline chunk count K and compute mode (cpu: FFTW on the rank's
# core; gpu-like: the rank sleeps for its FFTs' measured CPU time x F,
# as while a GPU computes). Prints per MPI the median step time (one
# forward+backward transform), the share of it spent in MPI_Wait and
# the ratio to stock MPI; fails (exit 1) if any run fails, times out, does
# not print "fft3d: ok", or a shim run forced to offload (MIN_BYTES=1)
# offloaded no ialltoall. Raw output in results/fft/raw/, the table in
# results/fft/table.txt, medians in results/fft/fft.csv, and with
# gnuplot results/fft/fft-<mpi>.png (step time against N, each column,
# both modes, at K = BENCH_FFT_PLOT_K).
#
# usage: scripts/bench_fft.sh [MPI...]   (openmpi, mpich; default both)
# environment (all optional):
#   BENCH_REPS=3              repetitions of each column (medians)
#   BENCH_NP=2                ranks, grid 1xNP (slab)
#   BENCH_FFT_N="64 128 256"  sizes (N x N x N complex doubles)
#   BENCH_FFT_K="1 4 8"       pipeline chunks (1: none)
#   BENCH_FFT_MODES="cpu gpu-like"
#   BENCH_FFT_FACTOR=1        gpu-like: sleep = CPU FFT time x this
#   BENCH_FFT_STEPS=10        timed steps per run (fft3d -s)
#   BENCH_FFT_ARGS=           more fft3d options (e.g. -p: persistent)
#   BENCH_FFT_PLOT_K=         K of the plot (default: the last of the list)
#   BENCH_SHIM_VARS="DPUSHIM_MIN_BYTES=1"  variables for the shim runs
#   BENCH_RANK_CPUS=          CPU list to bind the ranks to (one core
#                             each); default 0,...,NP-1 when NP fits
#   BENCH_TIMEOUT=300         seconds allowed for each run
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
source scripts/lib.sh
dps_mpis_ready "$@" || exit 1
set -- "${DPS_MPIS[@]}"

REPS=${BENCH_REPS:-3}
NP=${BENCH_NP:-2}
SIZES=${BENCH_FFT_N:-64 128 256}
KS=${BENCH_FFT_K:-1 4 8}
MODES=${BENCH_FFT_MODES:-cpu gpu-like}
FACTOR=${BENCH_FFT_FACTOR:-1}
STEPS=${BENCH_FFT_STEPS:-10}
PLOT_K=${BENCH_FFT_PLOT_K:-${KS##* }}
SHIM_VARS=${BENCH_SHIM_VARS:-DPUSHIM_MIN_BYTES=1}
TIMEOUT=${BENCH_TIMEOUT:-300}
for m in $MODES; do
    case $m in cpu|gpu-like) ;;
    *) echo "BENCH_FFT_MODES: $m is not cpu or gpu-like" >&2; exit 2 ;; esac
done
if [ -z "${BENCH_RANK_CPUS+x}" ] && [ "$NP" -le "$(nproc)" ]; then
    BENCH_RANK_CPUS=$(seq -s, 0 $((NP - 1)))
fi
export DPS_RANK_CPUS=${BENCH_RANK_CPUS:-}
OUT=results/fft
RAW=$OUT/raw
mkdir -p "$RAW"
rm -f "$RAW"/*.txt

# The job under way (its timeout's pid), stopped with the script; every
# job's ranks and agents carry DPS_BENCH_JOB=<this shell>-<n>, so what a
# job leaves behind is told apart from other jobs' processes.
JOB=
NJOB=0
TAG=
trap '[ -n "$JOB" ] && kill -TERM "$JOB" 2>/dev/null && wait "$JOB"
      [ -n "$TAG" ] && leftovers "$TAG" /dev/null; exit 130' INT TERM

# tagged TAG: the pids of a job's ranks and agents.
tagged() {
    local n
    for n in dpu_agent fft3d; do
        dps_pids_tagged "$n" "DPS_BENCH_JOB=$1"
    done
}

# leftovers TAG FILE: 0 when none of the job's processes is left (after
# up to 10 s); else ends them by pid, notes it in FILE and returns 1.
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

# The columns for one MPI: MPICH has its progress thread too.
columns() {
    [ "$1" = mpich ] && echo "stock shim async" || echo "stock shim"
}

FAILED=0
# run MPI N K MODE COLUMN REP: one job into its raw file; records a
# failure (and shows the end of the output) when it fails.
run() {
    local mpi=$1 n=$2 k=$3 mode=$4 col=$5 rep=$6 shim=0 rc vars
    local f="$RAW/$1-N$2-K$3-$4-$5-$6.txt" args
    NJOB=$((NJOB + 1))
    TAG="$$-$NJOB"
    vars="DPS_BENCH_JOB=$TAG"
    # shellcheck disable=SC2206
    args=(-n "$n" -g "1x$NP" -k "$k" -m "$mode" -f "$FACTOR" -s "$STEPS"
          ${BENCH_FFT_ARGS:-})
    case $col in
    shim) shim=1 vars="$vars $SHIM_VARS DPUSHIM_STATS=1" ;;
    async) vars="$vars MPIR_CVAR_ASYNC_PROGRESS=1" args+=(-M) ;;
    esac
    timeout -k 5 "$TIMEOUT" bash -c \
        'source scripts/lib.sh; dps_launch "$@"' _ "$mpi" "$NP" "$shim" \
        "$vars" "build/$mpi/examples/fft3d" "${args[@]}" >"$f" 2>&1 &
    JOB=$!
    wait "$JOB"
    rc=$?
    JOB=
    leftovers "$TAG" "$f" || FAILED=1
    TAG=
    if [ $rc -ne 0 ] || ! grep -q '^fft3d: ok ' "$f" ||
       { [ "$col" = shim ] &&
         [[ " $SHIM_VARS " == *" DPUSHIM_MIN_BYTES=1 "* ]] &&
         ! grep -Eq '^dpushim: (ialltoall|alltoall_init) offloaded=[1-9]' \
             "$f"; }; then
        echo >&2
        echo "FAILED (exit $rc$([ $rc = 124 ] && echo ": timed out")):" \
             "$f" >&2
        tail -n 15 "$f" | sed 's/^/    | /' >&2
        FAILED=1
    fi
}

# med MPI N K MODE COLUMN KEY: the median of KEY=value over the reps.
med() {
    cat "$RAW/$1-N$2-K$3-$4-$5"-*.txt 2>/dev/null |
        sed -n "s/^fft3d: N=.* $6=\([0-9.eE+-]*\).*/\1/p" | sort -g |
        awk '{v[NR] = $1}
             END {if (NR == 0) {print "-"; exit}
                  m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                  printf "%.3f", m}'
}

ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a == "-" || b == "-" || a + 0 == 0) print "-"
        else printf "%.2f", b / a }'
}

# The runs, every column in turn, the order reversed every other rep.
for mpi in "$@"; do
    cols=$(columns "$mpi")
    for n in $SIZES; do for k in $KS; do for mode in $MODES; do
        for rep in $(seq "$REPS"); do
            order=$cols
            [ $((rep % 2)) = 0 ] && order=$(echo "$cols" | tr ' ' '\n' |
                                             tac | tr '\n' ' ')
            for col in $order; do
                printf '\r%s N=%s K=%s %s rep %d/%d %s          ' "$mpi" \
                    "$n" "$k" "$mode" "$rep" "$REPS" "$col" >&2
                run "$mpi" "$n" "$k" "$mode" "$col" "$rep"
            done
        done
    done; done; done
done
printf '\r%70s\r' "" >&2

# table MPI: the medians, one row per N, K and mode; CSV rows too.
table() {
    local mpi=$1 n k mode col s w r row pct f
    echo "== $mpi, $NP ranks (1x$NP slab), medians of $REPS alternating" \
         "runs, $STEPS steps each; shim: $SHIM_VARS; gpu-like x $FACTOR"
    printf '  %4s %2s %-8s' N K mode
    for col in $(columns "$mpi"); do
        printf ' | %-5s %8s %5s %6s' "$col" step_ms wait /stock
    done
    echo
    for n in $SIZES; do for k in $KS; do for mode in $MODES; do
        printf '  %4s %2s %-8s' "$n" "$k" "$mode"
        base=$(med "$mpi" "$n" "$k" "$mode" stock step_ms)
        for col in $(columns "$mpi"); do
            s=$(med "$mpi" "$n" "$k" "$mode" "$col" step_ms)
            w=$(med "$mpi" "$n" "$k" "$mode" "$col" wait_share)
            r=$(ratio "$base" "$s")
            pct=$(awk -v w="$w" 'BEGIN {
                      print w == "-" ? "-" : int(100 * w + 0.5) }')
            printf ' | %-5s %8s %4s%% %6s' "" "$s" "$pct" "$r"
            echo "$mpi,$n,$k,$mode,$col,$s,$(med "$mpi" "$n" "$k" "$mode" \
                "$col" wait_ms),$w,$r" >>"$OUT/fft.csv"
        done
        echo
    done; done; done
    # The offload statistics of the last shim run.
    row=
    for f in "$RAW/$mpi"-*-shim-"$REPS".txt; do [ -f "$f" ] && row=$f; done
    [ -n "$row" ] && sed -n -E \
        's/^dpushim: (ialltoall|alltoall_init) /  last shim run: &/p' "$row"
}

# plot MPI: step time against N, each column and mode, at K = PLOT_K.
plot() {
    local mpi=$1 dat="$OUT/fft-$1.dat" col mode n p="" i=2
    command -v gnuplot >/dev/null || return 0
    for n in $SIZES; do
        printf '%s' "$n"
        for mode in $MODES; do for col in $(columns "$mpi"); do
            printf ' %s' "$(med "$mpi" "$n" "$PLOT_K" "$mode" "$col" step_ms)"
        done; done
        echo
    done >"$dat"
    for mode in $MODES; do for col in $(columns "$mpi"); do
        p="$p${p:+, }'$dat' using 1:$i with linespoints title '$col $mode'"
        i=$((i + 1))
    done; done
    gnuplot <<EOF || echo "warning: no plot for $mpi" >&2
set terminal pngcairo size 800,500
set output '$OUT/fft-$mpi.png'
set title 'fft3d, $mpi, $NP ranks 1x$NP, K=$PLOT_K: median step (fwd+bwd)'
set xlabel 'N (N^3 complex doubles)'
set ylabel 'step time (ms)'
set logscale xy
set datafile missing '-'
set key top left
plot $p
EOF
}

echo "mpi,n,k,mode,column,step_ms,wait_ms,wait_share,ratio_to_stock" \
    >"$OUT/fft.csv"
for mpi in "$@"; do
    table "$mpi"
    plot "$mpi"
done | tee "$OUT/table.txt"

if [ $FAILED -ne 0 ]; then
    echo "bench_fft: some runs FAILED (see above and $RAW/)" >&2
    exit 1
fi
