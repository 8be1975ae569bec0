# shellcheck shell=bash
# The benchmarks' jobs across the emulated hosts (scripts/bench/bench_cluster.sh,
# scripts/bench/bench_scale.sh): one job at a time, in the background so
# that a signal ends it at once; the DPUs' listening agents; the cleanup.
# Sourced; uses JOB (the running job's pid) and LPIDS (the listeners').

JOB=
LPIDS=()

# bench_dpus_stop: end the listening agents started into LPIDS.
bench_dpus_stop() {
    local p
    for p in ${LPIDS[@]+"${LPIDS[@]}"}; do
        kill "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    LPIDS=()
}

# bench_cleanup: the job, the listeners and the cluster (the EXIT trap).
bench_cleanup() {
    [ -z "${JOB:-}" ] || { kill -TERM "$JOB" 2>/dev/null; wait "$JOB" 2>/dev/null; }
    bench_dpus_stop
    scripts/cluster/cluster.sh down >/dev/null 2>&1
}

# bench_job FILE DONE GRACE TIMEOUT ARGS...: scripts/cluster/cluster-mpirun.sh
# ARGS, its output appended to FILE, within TIMEOUT s. MPICH 4.0 over
# UCX 1.13 on TCP may hang in its own MPI_Finalize (docs/tests.md): a
# job still running GRACE s after a line matching DONE (grep -E) is
# ended, with a note in FILE, and counts as done (status 0). Else the
# job's status.
bench_job() {
    local f=$1 done_re=$2 grace=$3 limit=$4 t_done="" rc
    shift 4
    timeout -k 5 "$limit" scripts/cluster/cluster-mpirun.sh "$@" >>"$f" 2>&1 &
    JOB=$!
    while kill -0 "$JOB" 2>/dev/null; do
        sleep 0.5
        if [ -z "$t_done" ]; then
            grep -Eq "$done_re" "$f" && t_done=$SECONDS
        elif [ $((SECONDS - t_done)) -ge "$grace" ]; then
            kill -TERM "$JOB" 2>/dev/null
            wait "$JOB" 2>/dev/null
            echo "note: MPI_Finalize did not return $grace s after the" \
                 "last result (MPICH over UCX on TCP): the job was ended" >>"$f"
            JOB=
            return 0
        fi
    done
    wait "$JOB"
    rc=$?
    JOB=
    return $rc
}
