#!/usr/bin/env bash
# Side-by-side overlap benchmark: tests/bench/overlap (OSU method) on stock MPI
# and under the shim, alternating, repeated; medians per size in one table per
# MPI, collective and compute mode (OSU busy time, fixed work), plus CSV and
# PNG plots in results/<mode>/; then the idle-host scenario
# (scripts/bench/bench_idle.sh: the compute phase sleeps; stock, shim and
# MPICH's progress thread), the blocking-call costs, the examples, the 3-D FFT
# and the closing comparisons.
#
# usage: scripts/bench/bench.sh [MPI...]   (MPI: openmpi, mpich; default both)
# environment (all optional):
#   BENCH_REPS=3          repetitions of each stock/shim pair (medians)
#   BENCH_SIZES=1:4194304 message sizes, powers of two (bytes per block)
#   BENCH_NP=2            ranks
#   BENCH_ITERS=100       timed iterations per size (a tenth above 64 KiB)
#   BENCH_TESTS=0         MPI_Test calls during compute (OMB -t)
#   BENCH_COLLS="ialltoall ibcast iallgather iallreduce"  collectives
#                         (busy and idle tables)
#   BENCH_MODES="time work"  busy compute modes: a fixed time (OMB) and a
#                         fixed amount of work (shows what offload costs)
#   BENCH_IDLE=1          0 skips the idle-host scenario (bench_idle.sh)
#   BENCH_CLUSTER=1       0 skips the scenario across emulated hosts
#                         (bench_cluster.sh, as root: stock, agents on the
#                         hosts, agents on emulated DPUs, MPICH's thread)
#   BENCH_SHIM_VARS="DPUSHIM_MIN_BYTES=1"  variables for the shim runs
#   BENCH_RANK_CPUS=      CPU list to bind the ranks to (one core each);
#                         default 0,1,...,NP-1 when NP fits the CPUs (the
#                         standard placement: one rank per core, agents
#                         sharing those cores), else no binding
#   BENCH_AGENT_CPUS=     CPU list for the agents (DPUSHIM_AGENT_CPUS)
#   BENCH_RPD=0           ranks per agent (DPUSHIM_RANKS_PER_DPU)
#   BENCH_BLOCKING=1      0 skips the blocking-call costs (stock vs shim)
#   BENCH_APPS=1          0 skips the examples (scripts/bench/bench_examples.sh:
#                         ring broadcast and 3-D halo, plain MPI against
#                         dpushim groups and neighbourhood collectives)
#   BENCH_FFT=1           0 skips the 3-D FFT (scripts/bench/bench_fft.sh:
#                         stock, shim and MPICH's progress thread, N 64
#                         to 256, K 1 4 8, cpu and gpu-like compute)
#   BENCH_EXTRA=1         0 skips the closing comparisons (registration
#                         cache on/off, copy threads 1 vs default, staged
#                         against direct data path, a strided receive
#                         type against stock MPI)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source scripts/lib.sh
dps_mpis_ready "$@" || exit 1
set -- "${DPS_MPIS[@]}"

REPS=${BENCH_REPS:-3}
SIZES=${BENCH_SIZES:-1:4194304}
NP=${BENCH_NP:-2}
ITERS=${BENCH_ITERS:-100}
TESTS=${BENCH_TESTS:-0}
MODES=${BENCH_MODES:-${BENCH_MODE:-time work}}
export BENCH_COLLS=${BENCH_COLLS:-ialltoall ibcast iallgather iallreduce}
for coll in $BENCH_COLLS; do
    case $coll in ialltoall|ibcast|iallgather|iallreduce) ;;
    *) echo "BENCH_COLLS: $coll is not ialltoall, ibcast, iallgather or iallreduce" >&2
       exit 2 ;; esac
done
SHIM_VARS=${BENCH_SHIM_VARS:-DPUSHIM_MIN_BYTES=1}
[ -n "${BENCH_AGENT_CPUS:-}" ] && SHIM_VARS="$SHIM_VARS DPUSHIM_AGENT_CPUS=$BENCH_AGENT_CPUS"
SHIM_VARS="$SHIM_VARS DPUSHIM_RANKS_PER_DPU=${BENCH_RPD:-0}"
if [ -z "${BENCH_RANK_CPUS+x}" ] && [ "$NP" -le "$(nproc)" ]; then
    BENCH_RANK_CPUS=$(seq -s, 0 $((NP - 1)))
fi
export DPS_RANK_CPUS=${BENCH_RANK_CPUS:-}
for MODE in $MODES; do
case $MODE in time) mflag=() ;; work) mflag=(-W) ;;
    *) echo "BENCH_MODES: $MODE is not time or work" >&2; exit 2 ;; esac
done
TOP=results
RAWTOP=$TOP/raw
mkdir -p "$RAWTOP"
rm -f "$RAWTOP"/*.txt # this run's medians only

for MODE in $MODES; do
case $MODE in time) mflag=() ;; work) mflag=(-W) ;; esac
OUT=$TOP/$MODE
RAW=$OUT/raw
mkdir -p "$RAW"
rm -f "$RAW"/*.txt "$OUT"/copylimit-*.txt
total=$(( $# * $(echo $BENCH_COLLS | wc -w) * REPS * 2 ))
n=0
for mpi in "$@"; do
    for coll in $BENCH_COLLS; do
        for rep in $(seq "$REPS"); do
            # Alternate the order so drift on a shared machine hits both.
            order="stock shim"
            [ $((rep % 2)) = 0 ] && order="shim stock"
            for kind in $order; do
                n=$((n + 1))
                printf '\r[%s %d/%d] %s %s rep %d %s            ' \
                    "$MODE" "$n" "$total" "$mpi" "$coll" "$rep" "$kind" >&2
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
# rank for Ibcast, every block once per other rank for Iallgather)
# through the same CMA path, timed alone.
max=${SIZES##*:}
build/"$1"/tests/copylimit $((NP * NP * max)) >"$OUT/copylimit-ialltoall.txt"
build/"$1"/tests/copylimit $(((NP - 1) * max)) >"$OUT/copylimit-ibcast.txt"
build/"$1"/tests/copylimit $((NP * (NP - 1) * max)) >"$OUT/copylimit-iallgather.txt"
BENCH_SHIM_DESC="$SHIM_VARS" /usr/bin/python3 scripts/bench/bench_report.py "$RAW" "$OUT" "$MODE" "$NP" \
    "$TESTS" "$@"
done   # modes
OUT=$TOP
RAW=$RAWTOP

if [ "${BENCH_IDLE:-1}" = 1 ]; then
    BENCH_REPS=$REPS BENCH_SHIM_VARS="$SHIM_VARS" scripts/bench/bench_idle.sh "$@" ||
        exit 1
fi
# Across emulated hosts (scripts/bench/bench_cluster.sh; root only).
flagged=0
if [ "${BENCH_CLUSTER:-1}" = 1 ]; then
    if [ "$(id -u)" = 0 ]; then
        BENCH_REPS=$REPS BENCH_SHIM_VARS="$SHIM_VARS" \
            scripts/bench/bench_cluster.sh "$@"
        rc=$?
        # 3: the DPUs' agents flagged against the hosts' (BENCH_DPU_FLAG);
        # the rest of the benchmark runs, and its status says so.
        [ $rc = 0 ] || [ $rc = 3 ] || exit 1
        [ $rc = 3 ] && flagged=1
    else
        echo "cluster scenario skipped: the emulated hosts need root"
    fi
fi

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
#  - on the staged data path, the pure-comm time of the largest Ialltoall
#    with DPUSHIM_PIPELINE_DEPTH=1 (one thread reads a chunk, then writes
#    it) and with the default depth, beside one direct copy of the bytes;
#  - the staged path (the agent copies every byte twice, through its own
#    buffers) against the direct one (the ranks' DMA engines, once): pure
#    comm, and overall with the compute phase asleep (idle host).
# The examples using dpushim.h (HPL-like ring broadcast, 3-D halo)
# against plain MPI point-to-point, their results checked.
if [ "${BENCH_APPS:-1}" = 1 ]; then
    BENCH_REPS=$REPS BENCH_NP=$NP BENCH_SHIM_VARS="$SHIM_VARS" \
        scripts/bench/bench_examples.sh "$@" || exit 1
fi
# The pipelined 3-D FFT (examples/fft3d.c): stock MPI, the shim and MPICH's
# progress thread, cpu and gpu-like compute (scripts/bench/bench_fft.sh).
if [ "${BENCH_FFT:-1}" = 1 ]; then
    BENCH_REPS=$REPS BENCH_NP=$NP BENCH_SHIM_VARS="$SHIM_VARS" \
        scripts/bench/bench_fft.sh "$@" || exit 1
fi

[ "${BENCH_EXTRA:-1}" = 1 ] || exit 0
# pair MPI STEM REP "VARS for run a" "VARS for run b" PROGRAM ARGS...: run
# a (the shim without the feature) and b (with it) once each, appending
# to $RAW/MPI-STEM-{a,b}.txt.
pair() {
    local mpi=$1 stem=$2 rep=$3 avars=$4 bvars=$5 kind v
    shift 5
    for kind in a b; do
        printf '\r%s %s rep %d %s            ' "$mpi" "$stem" "$rep" \
            "$kind" >&2
        v="$SHIM_VARS $([ $kind = a ] && echo "$avars" || echo "$bvars")"
        dps_launch "$mpi" "$NP" 1 "$v" "$@" >>"$RAW/$mpi-$stem-$kind.txt" 2>&1
    done
}
# pure MPI STEM KIND: the median pure-comm time of a pair's runs.
pure() {
    awk '$1 ~ /^[0-9]+$/ && NF >= 5 {print $2}' "$RAW/$1-$2-$3.txt" | median
}
max=${SIZES##*:}
# The idle-host compute time at the largest size (2 x stock pure), for
# the staged/direct comparison with the compute phase asleep.
for mpi in "$@"; do
    rm -f "$RAW/$mpi"-postcost-?.txt "$RAW/$mpi"-pipe-?.txt \
          "$RAW/$mpi"-perspost-*.txt \
          "$RAW/$mpi"-path-?.txt "$RAW/$mpi"-pathidle-?.txt \
          "$RAW/$mpi"-strided-*.txt
    ctime=$(sed 's/,/\n/g' "$RAW/../raw-idle/$mpi-ialltoall-times.txt" 2>/dev/null |
            sed -n "s/^$max=//p")
    for rep in $(seq "$REPS"); do
        pair "$mpi" postcost "$rep" DPUSHIM_REGCACHE_BYTES=0 "" \
            "build/$mpi/tests/postcost" -m 1024 -i 1000
        # A persistent alltoall started the same way: stock MPI's own
        # persistent collective against the shim's.
        for kind in stock shim; do
            dps_launch "$mpi" "$NP" "$([ $kind = shim ] && echo 1 || echo 0)" \
                "$SHIM_VARS" "build/$mpi/tests/postcost" -m 1024 -i 1000 -p \
                >>"$RAW/$mpi-perspost-$kind.txt" 2>&1
        done
        pair "$mpi" pipe "$rep" \
            "DPUSHIM_DATA_PATH=staged DPUSHIM_PIPELINE_DEPTH=1" \
            "DPUSHIM_DATA_PATH=staged" \
            "build/$mpi/tests/overlap" -c ialltoall -m "$max:$max" -i "$ITERS"
        pair "$mpi" path "$rep" DPUSHIM_DATA_PATH=staged "" \
            "build/$mpi/tests/overlap" -c ialltoall -m "$max:$max" -i "$ITERS"
        [ -z "$ctime" ] ||
            pair "$mpi" pathidle "$rep" DPUSHIM_DATA_PATH=staged "" \
                "build/$mpi/tests/overlap" -c ialltoall -m "$max:$max" \
                -i "$ITERS" -S -T "$max=$ctime"
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
    for kind in stock shim; do
        f="$RAW/$mpi-perspost-$kind.txt"
        printf '  %-28s post %6s   whole call %7s\n' \
            "persistent, MPI_Start, $kind" \
            "$(sed -n 's/.*post_us=\([0-9.]*\).*/\1/p' "$f" | median)" \
            "$(sed -n 's/.*call_us=\([0-9.]*\).*/\1/p' "$f" | median)"
    done
    echo "== $mpi: Ialltoall of $max B blocks (medians of $REPS runs, us)"
    printf '  staged path, pure comm: PIPELINE_DEPTH=1 %s, default depth %s\n' \
        "$(pure "$mpi" pipe a)" "$(pure "$mpi" pipe b)"
    printf '  pure comm: staged (two copies, by the agent) %s, direct (one, by the DMA engines) %s\n' \
        "$(pure "$mpi" path a)" "$(pure "$mpi" path b)"
    if [ -n "$ctime" ]; then
        printf '  idle host, compute %s us asleep, overall: staged %s, direct %s\n' \
            "$ctime" \
            "$(awk '$1 ~ /^[0-9]+$/ && NF >= 5 {print $3}' "$RAW/$mpi-pathidle-a.txt" | median)" \
            "$(awk '$1 ~ /^[0-9]+$/ && NF >= 5 {print $3}' "$RAW/$mpi-pathidle-b.txt" | median)"
    fi
    sed -n 's/.*bytes=\([0-9]*\) agent_path_us=\([0-9.]*\) single_copy_us=\([0-9.]*\).*/  copies of the same bytes alone: two (read, write) \2, one direct \3/p' \
        "$TOP/$(echo $MODES | cut -d' ' -f1)/copylimit-ialltoall.txt"
    # Strided datatypes (an FFT transpose's): Ialltoall received into runs
    # of one double and of 512 (4 KiB), as far apart, and sent from such
    # runs too (-B); stock MPI against the shim, which reads runs of 2 KiB
    # and more in place through iovecs (receive and send side) and
    # unpacks or packs shorter ones (shim/data/types.c). Pure comm.
    for spec in 1 512 "512 -B"; do
        tag=${spec// /}
        for rep in $(seq "$REPS"); do
            for kind in stock shim; do
                printf '\r%s strided %s rep %d %s            ' "$mpi" "$spec" \
                    "$rep" "$kind" >&2
                # shellcheck disable=SC2086
                dps_launch "$mpi" "$NP" \
                    "$([ $kind = shim ] && echo 1 || echo 0)" \
                    "$([ $kind = shim ] && echo "$SHIM_VARS DPUSHIM_STATS=1")" \
                    "build/$mpi/tests/overlap" -c ialltoall -V $spec \
                    -m "$((max / 4)):$max" -i "$ITERS" \
                    >>"$RAW/$mpi-strided$tag-$kind.txt" 2>&1
            done
        done
        printf '\r%60s\r' "" >&2
        echo "== $mpi: Ialltoall, runs of ${spec%% *} double(s) as far apart," \
             "$([ "$spec" = "${spec% -B}" ] && echo "received" ||
                echo "sent and received") (medians of $REPS runs, us)"
        for ((sz = max / 4; sz <= max; sz *= 2)); do
            printf '  %8d B blocks: pure comm stock %s, shim %s; shim post %s\n' \
                "$sz" \
                "$(awk -v s="$sz" '$1 == s && NF >= 5 {print $2}' \
                   "$RAW/$mpi-strided$tag-stock.txt" | median)" \
                "$(awk -v s="$sz" '$1 == s && NF >= 5 {print $2}' \
                   "$RAW/$mpi-strided$tag-shim.txt" | median)" \
                "$(awk -v s="$sz" '$1 == s && NF >= 5 {print $6}' \
                   "$RAW/$mpi-strided$tag-shim.txt" | median)"
        done
        sed -n 's/^dpushim: dma engines .*\(scattered=[0-9]* gathered=[0-9]*\).*/  in place (last run): \1/p' \
            "$RAW/$mpi-strided$tag-shim.txt" | tail -1
    done
done
if [ "$flagged" = 1 ]; then
    echo
    echo "FLAGGED: the cluster scenario's DPU agents were more than" \
         "${BENCH_DPU_FLAG:-3} x slower than the host agents (its tables" \
         "above say where)"
    exit 3
fi
