#!/usr/bin/env bash
# The 3-D FFT (examples/fft3d.c) side by side: stock MPI, the shim, and
# for MPICH its asynchronous progress thread (MPIR_CVAR_ASYNC_PROGRESS=1,
# fft3d -M: MPI_THREAD_MULTIPLE), alternating, BENCH_REPS times, for each
# transpose variant (pack: packed buffers, as P3DFFT; dtype: derived
# datatypes between the layouts, fft3d -d, as dtFFT), N, pipeline chunk
# count K and compute mode (cpu: FFTW on the rank's core; gpu-like: the
# rank sleeps as while a GPU computes, for the FFT time per step that a
# cpu run of stock MPI measured for that N and MPI first (packed layout,
# K=1) x F, fft3d -t, so every column and variant sleeps alike). In cpu
# mode the shim runs twice: with the default DPUSHIM_MIN_BYTES (auto:
# no offload where the ranks have every core) and forced (BENCH_SHIM_VARS).
# Prints per MPI the median step time (one forward+backward transform),
# the share of it spent in MPI_Wait and the ratio to stock MPI; fails
# (exit 1) if any run fails, times out, does not print "fft3d: ok", or a
# shim run forced to offload (MIN_BYTES=1) offloaded no ialltoall. Raw
# output in results/fft/raw/, the table in results/fft/table.txt, medians
# in results/fft/fft.csv, and with gnuplot results/fft/fft-<mpi>.png
# (step time against N, each column, both modes, at K =
# BENCH_FFT_PLOT_K, for the variant BENCH_FFT_PLOT_V).
#
# usage: scripts/bench/bench_fft.sh [MPI...]   (openmpi, mpich; default both)
# environment (all optional):
#   BENCH_REPS=3              repetitions of each column (medians)
#   BENCH_NP=2                ranks, grid 1xNP (slab)
#   BENCH_FFT_N="64 128 256"  sizes (N x N x N complex doubles)
#   BENCH_FFT_K="1 4 8"       pipeline chunks (1: none)
#   BENCH_FFT_MODES="cpu gpu-like"
#   BENCH_FFT_VARIANTS="pack dtype"
#   BENCH_FFT_FACTOR=1        gpu-like: sleep = CPU FFT time x this
#   BENCH_FFT_STEPS=5         timed steps per run (fft3d -s)
#   BENCH_FFT_ARGS=           more fft3d options (e.g. -p: persistent)
#   BENCH_FFT_PLOT_K=         K of the plot (default: the last of the list)
#   BENCH_FFT_PLOT_V=         variant of the plot (default: the last)
#   BENCH_SHIM_VARS="DPUSHIM_MIN_BYTES=1"  variables for the shim runs
#   BENCH_RANK_CPUS=          CPU list to bind the ranks to (one core
#                             each); default 0,...,NP-1 when NP fits
#   BENCH_TIMEOUT=300         seconds allowed for each run
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source scripts/lib.sh
dps_mpis_ready "$@" || exit 1
set -- "${DPS_MPIS[@]}"

REPS=${BENCH_REPS:-3}
NP=${BENCH_NP:-2}
SIZES=${BENCH_FFT_N:-64 128 256}
KS=${BENCH_FFT_K:-1 4 8}
MODES=${BENCH_FFT_MODES:-cpu gpu-like}
VARIANTS=${BENCH_FFT_VARIANTS:-pack dtype}
FACTOR=${BENCH_FFT_FACTOR:-1}
STEPS=${BENCH_FFT_STEPS:-5}
PLOT_K=${BENCH_FFT_PLOT_K:-${KS##* }}
PLOT_V=${BENCH_FFT_PLOT_V:-${VARIANTS##* }}
SHIM_VARS=${BENCH_SHIM_VARS:-DPUSHIM_MIN_BYTES=1}
TIMEOUT=${BENCH_TIMEOUT:-300}
for m in $MODES; do
    case $m in cpu|gpu-like) ;;
    *) echo "BENCH_FFT_MODES: $m is not cpu or gpu-like" >&2; exit 2 ;; esac
done
for v in $VARIANTS; do
    case $v in pack|dtype) ;;
    *) echo "BENCH_FFT_VARIANTS: $v is not pack or dtype" >&2; exit 2 ;; esac
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

# columns MPI MODE: stock, the shim (in cpu mode also with the default
# DPUSHIM_MIN_BYTES: auto), and MPICH's progress thread.
columns() {
    echo "stock$([ "$2" = cpu ] && echo " auto") shim$([ "$1" = mpich ] &&
        echo " async")"
}

# The FFT time per step gpu-like mode sleeps, per MPI and N (fft3d -t).
declare -A FFT_MS

FAILED=0
# job FILE MPI SHIM VARS ARGS...: one fft3d job of NP ranks (JOB_NP to
# change it) into FILE, tagged, under the time limit; its exit status
# (124: timed out).
job() {
    local f=$1 mpi=$2 shim=$3 vars=$4 rc np=${JOB_NP:-$NP}
    shift 4
    NJOB=$((NJOB + 1))
    TAG="$$-$NJOB"
    timeout -k 5 "$TIMEOUT" bash -c \
        'source scripts/lib.sh; dps_launch "$@"' _ "$mpi" "$np" "$shim" \
        "DPS_BENCH_JOB=$TAG $vars" "build/$mpi/examples/fft3d" "$@" \
        >"$f" 2>&1 &
    JOB=$!
    wait "$JOB"
    rc=$?
    JOB=
    leftovers "$TAG" "$f" || FAILED=1
    TAG=
    return $rc
}

# failed FILE RC: records a failure and shows the end of the output.
failed() {
    echo >&2
    echo "FAILED (exit $2$([ "$2" = 124 ] && echo ": timed out")): $1" >&2
    tail -n 15 "$1" | sed 's/^/    | /' >&2
    FAILED=1
}

# calibrate MPI N: FFT_MS[MPI-N], the FFT time per step of a cpu run of
# stock MPI (packed layout, K=1), which every gpu-like run sleeps x F.
calibrate() {
    local f="$RAW/$1-N$2-calibrate.txt" rc ms
    job "$f" "$1" 0 "" -n "$2" -g "1x$NP" -k 1 -m cpu -s "$STEPS"
    rc=$?
    ms=$(sed -n 's/^fft3d: N=.* fft_ms=\([0-9.]*\).*/\1/p' "$f")
    if [ $rc -ne 0 ] || [ -z "$ms" ]; then
        failed "$f" "$rc"
        ms=1
    fi
    FFT_MS[$1-$2]=$ms
}

# run MPI VARIANT N K MODE COLUMN REP: one job into its raw file.
run() {
    local mpi=$1 v=$2 n=$3 k=$4 mode=$5 col=$6 rep=$7 shim=0 vars="" rc
    local f="$RAW/$1-$2-N$3-K$4-$5-$6-$7.txt" args
    # shellcheck disable=SC2206
    args=(-n "$n" -g "1x$NP" -k "$k" -m "$mode" -f "$FACTOR" -s "$STEPS"
          ${BENCH_FFT_ARGS:-})
    [ "$v" = dtype ] && args+=(-d)
    [ "$mode" = gpu-like ] && args+=(-t "${FFT_MS[$mpi-$n]}")
    case $col in
    shim) shim=1 vars="$SHIM_VARS DPUSHIM_STATS=1" ;;
    auto) shim=1 vars="DPUSHIM_STATS=1" ;;
    async) vars="MPIR_CVAR_ASYNC_PROGRESS=1" args+=(-M) ;;
    esac
    job "$f" "$mpi" "$shim" "$vars" "${args[@]}"
    rc=$?
    if [ $rc -ne 0 ] || ! grep -q '^fft3d: ok ' "$f" ||
       { [ "$col" = shim ] &&
         [[ " $SHIM_VARS " == *" DPUSHIM_MIN_BYTES=1 "* ]] &&
         ! grep -Eq '^dpushim: (ialltoall|alltoall_init) offloaded=[1-9]' \
             "$f"; }; then
        failed "$f" "$rc"
    fi
}

# med MPI VARIANT N K MODE COLUMN KEY: the median of KEY=value over the
# reps.
med() {
    cat "$RAW/$1-$2-N$3-K$4-$5-$6"-*.txt 2>/dev/null |
        sed -n "s/^fft3d: N=.* $7=\([0-9.eE+-]*\).*/\1/p" | sort -g |
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
    for n in $SIZES; do
        printf '\r%s N=%s calibrating          ' "$mpi" "$n" >&2
        calibrate "$mpi" "$n"
        for v in $VARIANTS; do for k in $KS; do for mode in $MODES; do
            cols=$(columns "$mpi" "$mode")
            for rep in $(seq "$REPS"); do
                order=$cols
                [ $((rep % 2)) = 0 ] && order=$(echo "$cols" | tr ' ' '\n' |
                                                 tac | tr '\n' ' ')
                for col in $order; do
                    printf '\r%s %s N=%s K=%s %s rep %d/%d %s          ' \
                        "$mpi" "$v" "$n" "$k" "$mode" "$rep" "$REPS" "$col" >&2
                    run "$mpi" "$v" "$n" "$k" "$mode" "$col" "$rep"
                done
            done
        done; done; done
    done
done
printf '\r%70s\r' "" >&2

# Pencils, for correctness only (4 ranks on the cores the machine has,
# oversubscribed): a 2x2 grid, each variant, stock MPI and the shim, the
# checked result; no timing is reported.
PENCIL=
for mpi in "$@"; do
    for v in $VARIANTS; do for shim in 0 1; do
        f="$RAW/$mpi-$v-pencil-shim$shim.txt"
        printf '\r%s %s 2x2 pencils, %s          ' "$mpi" "$v" \
            "$([ $shim = 1 ] && echo shim || echo stock)" >&2
        # shellcheck disable=SC2046
        DPS_RANK_CPUS='' JOB_NP=4 job "$f" "$mpi" "$shim" \
            "DPUSHIM_MIN_BYTES=1 DPUSHIM_RANKS_PER_DPU=2" -n 64 -g 2x2 -k 4 \
            -s 2 -c serial $([ "$v" = dtype ] && echo -d)
        rc=$?
        if [ $rc -ne 0 ] || ! grep -q '^fft3d: ok ' "$f"; then
            failed "$f" "$rc"
        else
            PENCIL="$PENCIL $mpi/$v/$([ $shim = 1 ] && echo shim ||
                echo stock)"
        fi
    done; done
done
printf '\r%70s\r' "" >&2

# table MPI: the medians, one row per variant, N, K and mode; CSV rows
# too.
table() {
    local mpi=$1 v n k mode col s w r row pct f base all
    all="stock auto shim$([ "$mpi" = mpich ] && echo " async")"
    echo "== $mpi, $NP ranks (1x$NP slab), medians of $REPS alternating" \
         "runs, $STEPS steps each; shim: $SHIM_VARS (auto: the default);" \
         "gpu-like sleeps stock cpu's FFT time per step x $FACTOR:" \
         "$(for n in $SIZES; do printf 'N=%s %s ms; ' "$n" \
            "${FFT_MS[$mpi-$n]:-}"; done)"
    printf '  %-5s %4s %2s %-8s' var N K mode
    for col in $all; do
        printf ' | %-5s %8s %5s %6s' "$col" step_ms wait /stock
    done
    echo
    for v in $VARIANTS; do
    for n in $SIZES; do for k in $KS; do for mode in $MODES; do
        printf '  %-5s %4s %2s %-8s' "$v" "$n" "$k" "$mode"
        base=$(med "$mpi" "$v" "$n" "$k" "$mode" stock step_ms)
        for col in $all; do
            if [[ " $(columns "$mpi" "$mode") " != *" $col "* ]]; then
                printf ' | %-5s %8s %5s %6s' "" "" "" ""
                continue
            fi
            s=$(med "$mpi" "$v" "$n" "$k" "$mode" "$col" step_ms)
            w=$(med "$mpi" "$v" "$n" "$k" "$mode" "$col" wait_share)
            r=$(ratio "$base" "$s")
            pct=$(awk -v w="$w" 'BEGIN {
                      print w == "-" ? "-" : int(100 * w + 0.5) }')
            printf ' | %-5s %8s %4s%% %6s' "" "$s" "$pct" "$r"
            echo "$mpi,$v,$n,$k,$mode,$col,$s,$(med "$mpi" "$v" "$n" "$k" \
                "$mode" "$col" wait_ms),$w,$(med "$mpi" "$v" "$n" "$k" \
                "$mode" "$col" move_ms),$r" >>"$OUT/fft.csv"
        done
        echo
    done; done; done
    done
    # The offload statistics of the last forced shim run.
    row=
    for f in "$RAW/$mpi"-*-shim-"$REPS".txt; do [ -f "$f" ] && row=$f; done
    [ -n "$row" ] && sed -n -E \
        's/^dpushim: (ialltoall|alltoall_init) /  last shim run: &/p' "$row"
}

# plot MPI: step time against N, each column and mode, at K = PLOT_K and
# the variant PLOT_V.
plot() {
    local mpi=$1 dat="$OUT/fft-$1.dat" col mode n p="" i=2
    command -v gnuplot >/dev/null || return 0
    for n in $SIZES; do
        printf '%s' "$n"
        for mode in $MODES; do for col in $(columns "$mpi" "$mode"); do
            printf ' %s' "$(med "$mpi" "$PLOT_V" "$n" "$PLOT_K" "$mode" \
                            "$col" step_ms)"
        done; done
        echo
    done >"$dat"
    for mode in $MODES; do for col in $(columns "$mpi" "$mode"); do
        p="$p${p:+, }'$dat' using 1:$i with linespoints title '$col $mode'"
        i=$((i + 1))
    done; done
    gnuplot <<EOF || echo "warning: no plot for $mpi" >&2
set terminal pngcairo size 800,500
set output '$OUT/fft-$mpi.png'
set title 'fft3d, $mpi, $NP ranks 1x$NP, $PLOT_V, K=$PLOT_K: median step (fwd+bwd)'
set xlabel 'N (N^3 complex doubles)'
set ylabel 'step time (ms)'
set logscale xy
set datafile missing '-'
set key top left
plot $p
EOF
}

echo "mpi,variant,n,k,mode,column,step_ms,wait_ms,wait_share,move_ms,ratio_to_stock" \
    >"$OUT/fft.csv"
{
    for mpi in "$@"; do
        table "$mpi"
        plot "$mpi"
    done
    echo "2x2 pencils, 4 ranks, N=64 K=4, checked against serial FFTW (no" \
         "timing): ok:${PENCIL:- none}"
} | tee "$OUT/table.txt"

if [ $FAILED -ne 0 ]; then
    echo "bench_fft: some runs FAILED (see above and $RAW/)" >&2
    exit 1
fi
