#!/usr/bin/env bash
# Run the whole test suite (make check): every case of tests/cases.py
# through bin/dps-test: the unit tests, the MPI programs' matrix, and the
# shell cases of scripts/test/ (the manual, the tree, the runner, the
# packages, the configuration, failover, listening agents, the Arm agent,
# the examples, the emulated cluster), for every MPI given. Ends with one
# line "N passed, M failed" and exits non-zero if anything failed.
#
# usage: scripts/test/check.sh [MPI...]    (MPI: openmpi, mpich; default both)
# Any other bin/dps-test selection runs a part alone (docs/tests.md):
# bin/dps-test -k runner/ MPI..., bin/dps-test -k deb MPI...,
# bin/dps-test -k cluster/ MPI....
# An MPI that is not installed or not built, or missing unit or fuzz
# programs, fail the run before anything else: skipping is never green.
# DPS_TEST_JOBS: unit and matrix cases run at once (default 2).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source scripts/lib.sh

dps_mpis_ready "$@" || {
    echo "check.sh: cannot test the MPIs above; 'make check' installs and" \
         "builds everything (as root)" >&2
    exit 1
}
set -- "${DPS_MPIS[@]}"

LOGS=build/check-logs
mkdir -p "$LOGS"
# Seconds each case took, and its name: where make check's time goes
# (CI allows 30 minutes in all).
TIMES=$LOGS/times.txt
: >"$TIMES"
if [ -n "$(dps_agents_left)" ]; then
    echo "note: dpu_agent processes of this run's tag ($DPS_RUN_TAG) were" \
         "running before the suite: $(dps_agents_left | tr '\n' ' ')"
fi
bin/dps-test --logs "$LOGS" --times "$TIMES" \
    --timeout "${DPS_TEST_TIMEOUT:-180}" -j "${DPS_TEST_JOBS:-2}" "$@"
