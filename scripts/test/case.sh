#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# One session of bin/dps-test's shell cases (tests/cases.py: SCRIPT,
# CLUSTER, FINAL): the parts' functions loaded, the fixture set up, each
# case's command run, the fixture taken down. Not for running by hand:
# bin/dps-test -k NAME runs a case (and its fixture).
#
# usage: scripts/test/case.sh FIXTURE MPI... -- NAME COMMAND [NAME COMMAND]...
#   FIXTURE  none, root, qemu (nothing to set up: the cases check what
#            they need) or cluster (cl_fixture_up, then cl_down on exit;
#            a case after DPS_CLUSTER_BUDGET is not run, the last one,
#            cluster/no-process-left, always is)
#   COMMAND  a shell function of scripts/test/ and its words, quoted
#
# Prints "@@case NAME" before a case and "@@end NAME PASS FAIL" after it,
# and between them the case's result lines (report, common.sh). Uses
# DPS_LOGS (the logs' directory) and DPS_TEST_TIMEOUT (a job's limit).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source scripts/lib.sh
# The parts: functions only (none sources another but cluster_check.sh
# service_tests.sh, and deb_check.sh root.sh).
source scripts/test/common.sh
source scripts/test/tree.sh
source scripts/test/config.sh
source scripts/test/failover.sh
source scripts/test/programs.sh
source scripts/test/listen.sh
source scripts/test/listen_tests.sh
source scripts/test/arm64_tests.sh
source scripts/test/fft_check.sh
source scripts/test/runner_check.sh
source scripts/test/deb_check.sh
source scripts/test/cluster_check.sh

fixture=$1
shift
mpis=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
    mpis+=("$1")
    shift
done
shift

PASS=0
FAIL=0
LOGS=${DPS_LOGS:-build/check-logs}
TIMEOUT=${DPS_TEST_TIMEOUT:-180}
# bin/dps-test writes each case's time; report's own lines go nowhere.
TIMES=/dev/null
REPORT_T=$SECONDS
mkdir -p "$LOGS"

if [ "$fixture" = cluster ]; then
    cl_fixture_up "${mpis[@]}"
    case $? in
    0) ;;
    2) exit 0 ;;  # SKIP cluster: said why
    *) exit 1 ;;  # reported
    esac
fi

while [ $# -ge 2 ]; do
    name=$1 cmd=$2
    shift 2
    if [ "$fixture" = cluster ] && [ "$name" != cluster/no-process-left ]; then
        cl_budget_left || continue
    fi
    echo "@@case $name"
    p0=$PASS f0=$FAIL
    eval "$cmd"
    echo "@@end $name $((PASS - p0)) $((FAIL - f0))"
done
