#!/usr/bin/env bash
# What grows with the job (issue 37): tests/bench/scale on emulated
# clusters of H hosts, each with a DPU whose agent listens, at N ranks
# spread evenly over the hosts; stock MPI and the shim (the DPUs'
# agents, DPUSHIM_STATS=2) alternating, REPS times each. Per H and N:
# the time of MPI_Init (agents wired), one Ialltoall and one Iallreduce
# at each size (slowest rank, median over iterations, then median over
# repetitions), the agents' peak resident memory, endpoints, keys,
# schedules and steps, and the schedules' steps and compile time.
# Results: results/scale/scale.csv, a Markdown table (scale.md) and
# plots (scale-time.png, scale-growth.png) by scripts/bench/scale_report.py.
#
# usage: scripts/bench/bench_scale.sh [MPI]   (default: openmpi)
# environment (all optional):
#   BENCH_SCALE_HOSTS="2 4 8"     emulated hosts (each with a DPU)
#   BENCH_SCALE_RANKS="8 16 32"   ranks (at least one per host)
#   BENCH_SCALE_SIZES=65536,1048576  bytes: Ialltoall block, Iallreduce
#                                 vector
#   BENCH_SCALE_ITERS=5           timed iterations per size and job
#   BENCH_REPS=3                  jobs per column and point (medians)
#   BENCH_SHIM_VARS="DPUSHIM_MIN_BYTES=1"  variables for the shim jobs
#   BENCH_SCALE_KINDS="stock dpu"  the columns; dpufetch: the DPUs'
#                                 agents on the earlier plan between
#                                 nodes (DPUSHIM_PUSH=0), to compare
#   BENCH_DPU_AGENT=build/MPI/dpu_agent    the DPUs' agent (x86-64:
#                                 qemu's speed would distort timings)
# 32 ranks and 8 agents share this machine's 2 cores: times are of the
# emulation, growth counts are the design's (docs/results.md). Needs
# root (namespaces): as another user it says so and exits 77.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source scripts/lib.sh
if [ "$(id -u)" != 0 ]; then
    echo "bench_scale.sh: the emulated hosts need root (namespaces): skipped" >&2
    exit 77
fi
dps_mpis_ready "${1:-openmpi}" || exit 1
MPI=${DPS_MPIS[0]}

HOSTS=${BENCH_SCALE_HOSTS:-2 4 8}
RANKS=${BENCH_SCALE_RANKS:-8 16 32}
SIZES=${BENCH_SCALE_SIZES:-65536,1048576}
ITERS=${BENCH_SCALE_ITERS:-5}
REPS=${BENCH_REPS:-3}
SHIM_VARS=${BENCH_SHIM_VARS:-DPUSHIM_MIN_BYTES=1}
KINDS=${BENCH_SCALE_KINDS:-stock dpu}
AGENT=${BENCH_DPU_AGENT:-build/$MPI/dpu_agent}
FIN_GRACE=10
export DPS_CLUSTER_DIR=/run/dpushim-bench-scale
OUT=results/scale
RAW=$OUT/raw
rm -rf "$RAW"
mkdir -p "$RAW"

source scripts/bench/jobs.sh
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

# up H: H hosts with DPUs, a listening agent on each DPU, the map.
up() {
    local h log
    scripts/cluster/cluster.sh down >/dev/null 2>&1
    scripts/cluster/cluster.sh up "$1" --dpu >/dev/null ||
        { echo "cluster.sh up $1 --dpu failed" >&2; return 1; }
    mkdir -p "$DPS_CLUSTER_DIR/sec" && chmod 700 "$DPS_CLUSTER_DIR/sec"
    : >"$DPS_CLUSTER_DIR/map"
    for ((h = 1; h <= $1; h++)); do
        # shellcheck disable=SC2086 # the agent command may be words
        scripts/cluster/cluster.sh run "host$h-dpu" \
            $AGENT --listen 0.0.0.0:7420 --secret-dir "$DPS_CLUSTER_DIR/sec" \
            >"$RAW/h$1-dpu$h.log" 2>&1 &
        LPIDS+=($!)
        echo "host$h host$h-dpu:7420" >>"$DPS_CLUSTER_DIR/map"
    done
    for ((h = 1; h <= $1; h++)); do
        log=$RAW/h$1-dpu$h.log
        for _ in $(seq 200); do
            grep -q "listening on" "$log" && break
            sleep 0.1
        done
        grep -q "listening on" "$log" ||
            { echo "the agent on host$h-dpu did not start:" >&2; cat "$log" >&2; return 1; }
    done
}

# layout H N: host1:K,... with N ranks spread evenly over H hosts.
layout() {
    local h s=""
    for ((h = 1; h <= $1; h++)); do
        s+="${s:+,}host$h:$(($2 / $1 + (h <= $2 % $1)))"
    done
    echo "$s"
}

# run KIND H N FILE: one job, its output in FILE. MPICH over UCX on TCP
# may hang in its own MPI_Finalize (docs/tests.md): a job still running
# FIN_GRACE s after its "result:" line is ended, with a note, and kept.
run() {
    local kind=$1 h=$2 n=$3 f=$4 args=()
    local prog=(build/"$MPI"/tests/scale -m "$SIZES" -i "$ITERS")
    # shellcheck disable=SC2206 # SHIM_VARS is a list of VAR=value
    case $kind in
    stock) args=("$MPI" "$(layout "$h" "$n")" "${prog[@]}") ;;
    dpu | dpufetch)
        args=(--shim "$MPI" "$(layout "$h" "$n")" $SHIM_VARS
              DPUSHIM_STATS=2 DPUSHIM_AGENT_SCHED=eager
              "DPUSHIM_PUSH=$([ "$kind" = dpu ] && echo 1 || echo 0)"
              "DPUSHIM_AGENT_MAP=$DPS_CLUSTER_DIR/map"
              "DPUSHIM_SECRET_DIR=$DPS_CLUSTER_DIR/sec" "${prog[@]}") ;;
    *) echo "BENCH_SCALE_KINDS: $kind is not stock, dpu or dpufetch" >&2
       return 1 ;;
    esac
    : >"$f"
    bench_job "$f" '^result: ' "$FIN_GRACE" 1200 "${args[@]}" &&
        grep -q '^result: ok' "$f" && return 0
    echo "run failed: $f" >&2
    tail -5 "$f" >&2
    return 1
}

fail=0
for h in $HOSTS; do
    up "$h" || exit 1
    for n in $RANKS; do
        [ "$n" -ge "$h" ] || continue
        for ((r = 1; r <= REPS; r++)); do
            for kind in $KINDS; do
                f=$RAW/$MPI-h$h-n$n-$kind-$r.txt
                printf '%s: %d hosts, %d ranks, %s, rep %d\n' "$MPI" "$h" "$n" "$kind" "$r"
                run "$kind" "$h" "$n" "$f" || fail=1
            done
        done
    done
    bench_dpus_stop
done
scripts/cluster/cluster.sh down >/dev/null 2>&1
python3 scripts/bench/scale_report.py "$RAW" "$OUT" || fail=1
exit $fail
