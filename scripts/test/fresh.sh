#!/usr/bin/env bash
# The newcomer's path, checked: build a minimal Debian 12 root file system
# with mmdebstrap (apt, git and make, nothing else), clone the commit under
# test into it, and run `make demo` (or the target given) there as root in
# a chroot with /proc, /sys and /dev mounted. For demo it passes only if
# both MPIs' tables and offload statistics lines appear; for check, only
# if the suite ends "N passed, 0 failed". Everything it made is removed and
# every process it started inside the chroot is killed at the end, also on
# timeout or interrupt.
#
# usage: scripts/test/fresh.sh [demo|check]       (as root; default demo)
# environment: FRESH_MIRROR  Debian mirror (default: mmdebstrap's)
#              FRESH_TIMEOUT seconds for the make run (default 1500)
#              FRESH_KEEP=1  keep the root file system (path printed)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source scripts/test/root.sh
REPO=$(pwd)
TARGET=${1:-demo}
TIMEOUT=${FRESH_TIMEOUT:-1500}

case $TARGET in demo | check) ;;
*) echo "usage: scripts/test/fresh.sh [demo|check]" >&2; exit 2 ;; esac
if [ "$(id -u)" -ne 0 ]; then
    echo "fresh.sh: needs root (mmdebstrap, chroot, mounts); run it as root" >&2
    exit 1
fi
if ! command -v mmdebstrap >/dev/null; then
    echo "fresh.sh: installing mmdebstrap"
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq mmdebstrap >/dev/null; } || {
        echo "fresh.sh: could not install mmdebstrap" \
             "(apt-get update && apt-get install -y mmdebstrap)" >&2
        exit 1
    }
fi
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    echo "fresh.sh: note: uncommitted changes are not tested, only HEAD" \
         "($(git rev-parse --short HEAD))"
fi

WORK=$(mktemp -d /var/tmp/dpushim-fresh.XXXXXX) || exit 1
ROOT=$WORK/root
LOG=$WORK/make.log

cleanup() {
    root_leave "$ROOT"
    if [ "${FRESH_KEEP:-0}" = 1 ]; then
        echo "fresh.sh: kept $WORK"
    else
        rm -rf --one-file-system "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t0=$(date +%s)
echo "== fresh.sh: a minimal Debian 12 root file system (mmdebstrap)"
# shellcheck disable=SC2086
mmdebstrap --quiet --variant=apt --include=git,make,ca-certificates \
    bookworm "$ROOT" ${FRESH_MIRROR:-} || {
    echo "fresh.sh: mmdebstrap failed" >&2
    exit 1
}
t1=$(date +%s)
echo "   made in $((t1 - t0)) s: $(du -sh "$ROOT" | cut -f1)"

echo "== fresh.sh: cloning $(git rev-parse --short HEAD) into it"
git clone -q --no-hardlinks "$REPO" "$ROOT/root/dpushim" &&
    git -C "$ROOT/root/dpushim" checkout -q "$(git rev-parse HEAD)" || exit 1
root_enter "$ROOT" || exit 1

echo "== fresh.sh: make $TARGET, as root in the chroot (limit ${TIMEOUT} s)"
timeout -k 10 "$TIMEOUT" chroot "$ROOT" /usr/bin/env -i HOME=/root \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 TERM=dumb \
    /bin/bash -c "cd /root/dpushim && make $TARGET" 2>&1 | tee "$LOG"
rc=${PIPESTATUS[0]}
t2=$(date +%s)
echo "== fresh.sh: make $TARGET exited $rc after $((t2 - t1)) s" \
     "($((t2 - t0)) s in all)"

ok=1
[ "$rc" = 0 ] || { echo "fresh.sh: make $TARGET failed (exit $rc)"; ok=0; }
if [ "$TARGET" = demo ]; then
    # Each MPI's section: its heading, eight table rows with numbers (busy
    # and idle host, two collectives, stock and shim), and statistics
    # lines with offloaded > 0 for each collective.
    for mpi in openmpi mpich; do
        awk -v mpi="$mpi" '
            /^== / { on = ($2 == mpi ",") }
            on && $1 ~ /^(busy|idle)$/ && $2 ~ /^(ialltoall|ibcast)$/ &&
                $3 ~ /^(stock|shim)$/ && $4 ~ /^[0-9.]+$/ &&
                $5 ~ /^[0-9.]+$/ { rows[$1 " " $2 " " $3] = 1 }
            on && /^dpushim: (ialltoall|ibcast) offloaded=[1-9]/ {
                stats[$2] = 1 }
            END {
                n = 0; for (r in rows) n++; m = 0; for (s in stats) m++
                exit !(n == 8 && m == 2)
            }' "$LOG" || {
            echo "fresh.sh: no complete demo table and statistics for $mpi"
            ok=0
        }
    done
else
    grep -Eq '^[0-9]+ passed, 0 failed$' "$LOG" || {
        echo "fresh.sh: the suite did not end 'N passed, 0 failed'"
        ok=0
    }
fi
if [ -n "$(root_pids "$ROOT")" ]; then
    echo "fresh.sh: processes left in the chroot: $(root_pids "$ROOT" | tr '\n' ' ')"
    ok=0
fi
[ $ok = 1 ] && echo "fresh.sh: PASS (make $TARGET on a fresh Debian 12)"
[ $ok = 1 ]
