#!/usr/bin/env bash
# The cluster scenario: ranks on different emulated hosts
# (scripts/cluster/cluster.sh, hosts that share no memory, /dev/shm or process
# ids, joined by a bridge), with the OSU overlap method
# (tests/bench/overlap -T): a collective is in flight while the compute
# phase sleeps (idle: a GPU kernel, I/O; overlap -S) or spins (busy: no
# spare cycles). Links unlimited and rate-limited with tc. Columns,
# alternating, in one run:
#   stock   stock MPI across the hosts (Open MPI: ob1/tcp; MPICH: ch4:ucx
#           over TCP)
#   shim    dpushim with agents spawned on the hosts
#   dpu     dpushim with listening agents (dpu_agent --listen) on each
#           host's emulated DPU, reached over the network only (x86-64
#           build: qemu's speed would distort timings; make check runs
#           the aarch64 build for correctness)
#   dpufetch  the same DPUs' agents on the earlier plan between nodes
#           (DPUSHIM_PUSH=0: the receiver's agent fetches each chunk,
#           every message on its own), to compare with dpu's pushes
#   dpuucx  the same DPUs' agents on the ranks' own UCX path
#           (DPUSHIM_TRANSPORT=ucx, ranks and agents): the agents get and
#           put the ranks' memory with their keys, as a NIC would over RDMA
#           (GVMI), served here by each rank's progress thread
#   async   the MPI's own progress thread: MPICH's
#           (MPIR_CVAR_ASYNC_PROGRESS=1), Open MPI's TCP one
#           (btl_tcp_progress_thread=1, which also polls its sockets at
#           once where stock Open MPI polls them every 10 ms)
# The compute time C is 2 x stock's pure-comm time at each size (the lower
# of two calibration runs, per link rate), the same for every column and
# both modes. Medians; a table per link rate, mode, MPI and collective,
# results/cluster/cluster.csv and a plot per MPI, collective, mode and
# rate (results/cluster/cluster-<mpi>-<collective>-<mode>-<rate>.png).
#
# usage: scripts/bench/bench_cluster.sh [MPI...]   (default: openmpi mpich)
# environment (all optional):
#   BENCH_REPS=5                repetitions of each column (at least 3)
#   BENCH_CLUSTER_SIZES=65536:4194304  sizes, bytes per block, powers of 2
#   BENCH_CLUSTER_HOSTS=2       hosts
#   BENCH_CLUSTER_RANKS=1       ranks per host (1: one core each here)
#   BENCH_CLUSTER_KINDS="stock shim dpu dpuucx async"  the columns
#   BENCH_CLUSTER_RATES="none 10gbit 1gbit"  tc rates on every link, one
#                               cluster each; none: the veths' own speed
#   BENCH_CLUSTER_MODES="idle busy"  the compute phase sleeps or spins
#   BENCH_ITERS=50              timed iterations per size (a tenth above
#                               64 KiB, as overlap does)
#   BENCH_COLLS="ialltoall ibcast iallreduce"
#   BENCH_SHIM_VARS="DPUSHIM_MIN_BYTES=1"  variables for the shim columns
#   BENCH_DPU_AGENT=build/MPI/dpu_agent    the DPUs' agent command
#   BENCH_DPU_ENV=              VAR=value... for the DPUs' agents
#   BENCH_DPU_FLAG=3            flag a DPU column whose pure time is more
#                               than this many times the host agents'
#                               (shim column) at any size: exit status 3
#                               after the tables (cluster_report.py)
# Needs root (namespaces): as another user it says so and exits 77.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source scripts/lib.sh
if [ "$(id -u)" != 0 ]; then
    echo "bench_cluster.sh: the emulated hosts need root (namespaces): skipped" >&2
    exit 77
fi
dps_mpis_ready "$@" || exit 1
set -- "${DPS_MPIS[@]}"

REPS=${BENCH_REPS:-5}
[ "$REPS" -ge 3 ] || REPS=3
SIZES=${BENCH_CLUSTER_SIZES:-65536:4194304}
HOSTS=${BENCH_CLUSTER_HOSTS:-2}
RATES=${BENCH_CLUSTER_RATES:-none 10gbit 1gbit}
MODES=${BENCH_CLUSTER_MODES:-idle busy}
ITERS=${BENCH_ITERS:-50}
COLLS=${BENCH_COLLS:-ialltoall ibcast iallreduce}
FIN_GRACE=10
SHIM_VARS=${BENCH_SHIM_VARS:-DPUSHIM_MIN_BYTES=1}
export DPS_CLUSTER_DIR=/run/dpushim-bench-cluster
OUT=results/cluster
RAW=$OUT/raw
rm -rf "$RAW"
mkdir -p "$RAW"
RANKS=${BENCH_CLUSTER_RANKS:-1}
KINDS=${BENCH_CLUSTER_KINDS:-stock shim dpu dpuucx async}
hostlist=$(seq -f "host%g:$RANKS" -s, 1 "$HOSTS")
source scripts/bench/jobs.sh
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

# cluster_up RATE: the hosts and their DPUs, links limited to RATE
# (none: unlimited).
cluster_up() {
    local up=(up "$HOSTS" --dpu)
    [ "$1" = none ] || up+=(--rate "$1")
    scripts/cluster/cluster.sh down >/dev/null 2>&1
    scripts/cluster/cluster.sh "${up[@]}" >/dev/null ||
        { echo "cluster.sh up ${up[*]} failed" >&2; return 1; }
}

# start_dpus MPI: a listening agent on every host's DPU; the map.
# Listening agents on each DPU: port 7420 (map), and, for the dpuucx
# column, port 7421 with DPUSHIM_TRANSPORT=ucx (map-ucx).
start_dpus() {
    local mpi=$1
    local agent=${BENCH_DPU_AGENT:-build/$mpi/dpu_agent} h ip p log
    mkdir -p "$DPS_CLUSTER_DIR/sec" && chmod 700 "$DPS_CLUSTER_DIR/sec"
    : >"$DPS_CLUSTER_DIR/map"
    : >"$DPS_CLUSTER_DIR/map-ucx"
    for h in $(seq "$HOSTS"); do
        ip=10.77.0.$((100 + h))
        for p in 7420 7421; do
            # shellcheck disable=SC2046,SC2086  # the agent command and
            # BENCH_DPU_ENV may be several words
            env ${BENCH_DPU_ENV:-} $([ $p = 7421 ] && echo DPUSHIM_TRANSPORT=ucx) \
                scripts/cluster/cluster.sh run "host$h-dpu" $agent --listen "$ip:$p" \
                --secret-dir "$DPS_CLUSTER_DIR/sec" \
                >"$R/$mpi-dpu$h-$p-agent.log" 2>&1 &
            LPIDS+=($!)
        done
        echo "host$h $ip:7420" >>"$DPS_CLUSTER_DIR/map"
        echo "host$h $ip:7421" >>"$DPS_CLUSTER_DIR/map-ucx"
    done
    for h in $(seq "$HOSTS"); do
        for p in 7420 7421; do
            log=$R/$mpi-dpu$h-$p-agent.log
            for _ in $(seq 100); do
                grep -q "listening on" "$log" && break
                sleep 0.1
            done
            grep -q "listening on" "$log" ||
                { echo "the agent on host$h-dpu:$p did not start:" >&2
                  cat "$log" >&2; return 1; }
        done
    done
}

# run MPI KIND COLL FILE [overlap args...]: one job, appended to FILE.
# It runs in the background (a signal to this script ends it at once,
# cleanup kills it). MPICH 4.0 over UCX 1.13 on TCP may hang in its own
# MPI_Finalize (docs/tests.md): a job still running FIN_GRACE s after it
# printed its last size's line is ended, with a note in FILE, and its
# results are kept.
run() {
    local mpi=$1 kind=$2 coll=$3 f=$4 args=()
    local last="^ +${SIZES#*:} "
    shift 4
    local prog=(build/"$mpi"/tests/overlap -c "$coll" -m "$SIZES" -i "$ITERS" -C)
    # shellcheck disable=SC2206  # SHIM_VARS is a list of VAR=value
    case $kind in
    stock) args=("$mpi" "$hostlist" "${prog[@]}" "$@") ;;
    shim)  args=(--shim "$mpi" "$hostlist" $SHIM_VARS DPUSHIM_STATS=1
                 "${prog[@]}" "$@") ;;
    dpu)   args=(--shim "$mpi" "$hostlist" $SHIM_VARS DPUSHIM_STATS=1
                 "DPUSHIM_AGENT_MAP=$DPS_CLUSTER_DIR/map"
                 "DPUSHIM_SECRET_DIR=$DPS_CLUSTER_DIR/sec" "${prog[@]}" "$@") ;;
    dpufetch) args=(--shim "$mpi" "$hostlist" $SHIM_VARS DPUSHIM_STATS=1
                 DPUSHIM_PUSH=0 "DPUSHIM_AGENT_MAP=$DPS_CLUSTER_DIR/map"
                 "DPUSHIM_SECRET_DIR=$DPS_CLUSTER_DIR/sec" "${prog[@]}" "$@") ;;
    dpuucx) args=(--shim "$mpi" "$hostlist" $SHIM_VARS DPUSHIM_STATS=1
                 DPUSHIM_TRANSPORT=ucx "DPUSHIM_AGENT_MAP=$DPS_CLUSTER_DIR/map-ucx"
                 "DPUSHIM_SECRET_DIR=$DPS_CLUSTER_DIR/sec" "${prog[@]}" "$@") ;;
    async) args=("$mpi" "$hostlist" MPIR_CVAR_ASYNC_PROGRESS=1
                 OMPI_MCA_btl_tcp_progress_thread=1 "${prog[@]}" -M "$@") ;;
    esac
    bench_job "$f" "$last" "$FIN_GRACE" 900 "${args[@]}" && return 0
    echo
    echo "run failed: $f" >&2
    tail "$f" >&2
    return 1
}

# One cluster per link rate; its raw results in $RAW/RATE/.
for rate in $RATES; do
    R=$RAW/$rate
    mkdir -p "$R"
    cluster_up "$rate" || exit 1
    for mpi in "$@"; do
        kinds=$KINDS
        start_dpus "$mpi" || exit 1
        for coll in $COLLS; do
            cal="$R/$mpi-$coll-calibration.txt"
            printf '\r%s %s %s: calibration            ' "$rate" "$mpi" \
                "$coll" >&2
            run "$mpi" stock "$coll" "$cal" -S || exit 1
            run "$mpi" stock "$coll" "$cal" -S || exit 1
            times=$(dps_compute_times "$cal")
            echo "$times" >"$R/$mpi-$coll-times.txt"
            for rep in $(seq "$REPS"); do
                order=$kinds
                [ $((rep % 2)) = 0 ] &&
                    order=$(echo "$kinds" | tr ' ' '\n' | tac | tr '\n' ' ')
                for mode in $MODES; do
                    sleep=-S
                    [ "$mode" = busy ] && sleep=
                    for kind in $order; do
                        printf '\r%s %s %s %s rep %d/%d %s            ' \
                            "$rate" "$mpi" "$coll" "$mode" "$rep" "$REPS" \
                            "$kind" >&2
                        # shellcheck disable=SC2086 # $sleep: none or -S
                        run "$mpi" "$kind" "$coll" \
                            "$R/$mpi-$coll-$mode-$kind-$rep.txt" \
                            $sleep -T "$times" || exit 1
                    done
                done
            done
        done
        bench_dpus_stop
    done
done
printf '\r%60s\r' "" >&2
BENCH_DESC="$HOSTS hosts x $RANKS rank(s); shim: $SHIM_VARS" \
    /usr/bin/python3 scripts/bench/cluster_report.py "$RAW" "$OUT" "$RATES" \
    "$MODES" "$COLLS" "$@"
