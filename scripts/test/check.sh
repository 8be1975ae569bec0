#!/usr/bin/env bash
# Run the whole test suite: Check unit tests, the manual's checks
# (scripts/dev/readme_table.sh, scripts/dev/doc_refs.sh, the example), and for
# every MPI given the MPI tests (2 ranks with one agent, 4 ranks with two
# agents, and the same programs on stock MPI), the configuration tests
# and the no-orphan-agent tests. Ends with one line "N passed, M failed"
# and exits non-zero if anything failed.
#
# usage: scripts/test/check.sh [MPI...]    (MPI: openmpi, mpich; default both)
# DPS_CHECK_PART=FUNC: only that part (FUNC MPI..., e.g. runner_tests),
# then its own "N passed, M failed" (scripts/test/runner_check.sh and
# scripts/test/deb_check.sh run alone this way).
# An MPI that is not installed or not built, or missing unit or fuzz
# programs, fail the run before anything else: skipping is never green.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source scripts/lib.sh
source scripts/test/listen_tests.sh
source scripts/test/arm64_tests.sh
source scripts/test/fft_check.sh
source scripts/test/runner_check.sh
source scripts/test/deb_check.sh

dps_mpis_ready "$@" || {
    echo "check.sh: cannot test the MPIs above; 'make check' installs and" \
         "builds everything (as root)" >&2
    exit 1
}
set -- "${DPS_MPIS[@]}"

PASS=0
FAIL=0
LOGS=build/check-logs
mkdir -p "$LOGS"
TIMEOUT=${DPS_TEST_TIMEOUT:-180}
# Seconds since the previous result, and its name: where make check's
# time goes (CI allows 30 minutes in all).
TIMES=$LOGS/times.txt
: >"$TIMES"
REPORT_T=$SECONDS

# The parts (scripts/test/), each a set of functions over this file's
# counters.
source scripts/test/common.sh
source scripts/test/tree.sh
source scripts/test/config.sh
source scripts/test/failover.sh
source scripts/test/programs.sh
source scripts/test/listen.sh


# scripts/test/cluster_check.sh run alone takes the functions above only.
[ "${DPS_CHECK_LIB:-0}" = 1 ] && return 0
if [ -n "${DPS_CHECK_PART:-}" ]; then
    "$DPS_CHECK_PART" "$@"
    echo "$PASS passed, $FAIL failed"
    [ "$FAIL" = 0 ]
    exit
fi
if [ -n "$(dps_agents_left)" ]; then
    echo "note: dpu_agent processes of this run's tag ($DPS_RUN_TAG) were" \
         "running before the suite: $(dps_agents_left | tr '\n' ' ')"
fi
unit_tests "$@"
readme_check
layout_check "$1"
shellcheck_check
format_check
fuzz_decoder
arm64_wire_tests
install_check "$@"
runner_tests "$@"
deb_tests "$@"
for mpi in "$@"; do
    mpi_tests "$mpi"
    config_tests "$mpi"
    regcache_off_case "$mpi"
    # Each erroneous call with a fatal handler at 2 and 3 ranks, with
    # MPI_ERRORS_RETURN at 3 and 4 (and across hosts in the cluster part).
    for cas in bcast_len bcast_len2 a2a_size alias; do
        for np in 2 3; do
            err_case "$mpi" "$np" "$cas" fatal
        done
        for np in 3 4; do
            err_case "$mpi" "$np" "$cas" return
        done
    done
    agent_cli_tests "$mpi"
    kill_case "$mpi" all-ranks
    kill_case "$mpi" leader
    listen_agent_tests "$mpi"
    listen_job_tests "$mpi"
    listen_remote_tests "$mpi"
    # The aarch64 agent under qemu: its command line and jobs for one
    # MPI, reductions of every type for the other (about 2 min in all).
    if [ "$mpi" = openmpi ]; then
        arm64_agent_tests "$mpi"
    else
        arm64_reduce_tests "$mpi"
    fi
    listen_pidns_tests "$mpi"
    listen_bad_input_tests "$mpi"
    for np in 2 4; do
        failover_case "$mpi" "$np" kill
        failover_case "$mpi" "$np" stop
        failover_case "$mpi" "$np" recv
        failover_case "$mpi" "$np" bcast
    done
    failover_kinds_case "$mpi"
    pers_order_failover_case "$mpi" 3
    pers_order_failover_case "$mpi" 4
    outsiders_case "$mpi"
    example_tests "$mpi"
    fft_tests "$mpi"
    fortran_tests "$mpi"
    answers_tests "$mpi"
    idup_tests "$mpi"
    kill_case "$mpi" launcher
    [ "$mpi" = openmpi ] && thirdparty_mpi4py
done
source scripts/test/cluster_check.sh "$@"  # across emulated hosts; SKIP if not root
no_agents_left
echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
