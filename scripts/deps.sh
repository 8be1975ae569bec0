#!/usr/bin/env bash
# Install the Debian packages dpushim needs, if any are missing.
# As root it runs apt-get; otherwise it prints the command to run.
# usage: scripts/deps.sh [--full | --deb]
#   (none)  what building and running needs (make build, make demo)
#   --deb   also Debian's packaging tools (make deb)
#   --full  also those, the emulated cluster's and the Arm agent's
#           packages (make check, make bench)
set -euo pipefail

full=0 deb=0
case ${1:-} in
--full) full=1 deb=1 ;;
--deb) deb=1 ;;
"") ;;
*) echo "usage: scripts/deps.sh [--full | --deb]" >&2; exit 2 ;;
esac
PKGS=(build-essential gfortran pkg-config libucx-dev ucx-utils uthash-dev check
      libibverbs-dev openmpi-bin libopenmpi-dev mpich libmpich-dev
      gnuplot-nox procps python3-mpi4py python3-numpy clang libclang-rt-14-dev
      libfftw3-dev)
# libfftw3-dev: examples/fft3d.c's 1-D transforms.
[ $full = 1 ] && PKGS+=(iproute2 util-linux python3 slurm-wlm munge
                        libslurm-dev groff-base man-db tcl shellcheck
                        clang-format)
# iproute2, util-linux, python3: scripts/cluster/cluster.sh (namespaces, veths,
# tc; nsenter, unshare; its node holder, scripts/cluster/cluster_node.py);
# slurm-wlm, munge: scripts/cluster/cluster-slurm.sh (srun across the emulated
# hosts) and the agent service's MUNGE credentials (libmunge2, opened at
# run time); libslurm-dev: the SPANK plugin's slurm/spank.h (make
# slurm-plugin). debhelper, dpkg-dev, lintian: make deb (dpkg-buildpackage, debian/);
# mmdebstrap: the fresh root the packages are installed into
# (scripts/test/deb_check.sh, scripts/test/fresh.sh).
[ $deb = 1 ] && PKGS+=(debhelper dpkg-dev lintian libslurm-dev)
[ $full = 1 ] && PKGS+=(mmdebstrap)
# groff-base, man-db, tcl: make check's man pages (groff -ww renders each,
# man -w finds the installed ones) and modulefile (evaluated by tclsh);
# scripts/test/runner_check.sh. shellcheck: make check lints the scripts;
# clang-format: it checks the C sources' style (make format-check).
# The agent for a BlueField's Arm cores (make agent-arm64), run here under
# qemu-user (scripts/cluster/arm64-run.sh): Debian's cross compiler and its C
# library, and the arm64 builds of what the agent links, through
# multiarch (Multi-Arch: same, beside the amd64 ones; their arm64 C
# library is what qemu runs the agent with). qemu-user, not
# qemu-user-static: a fifth of the download, and no binfmt_misc needed.
ARM64_PKGS=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
            libucx-dev:arm64 libibverbs-dev:arm64)
[ $full = 1 ] || ARM64_PKGS=()
# The arm64 libmunge.so.2, for the Arm agent's service under qemu-user
# (scripts/cluster/arm64-run.sh): Debian's libmunge2 is not Multi-Arch,
# so its arm64 build cannot be installed beside the amd64 one; its
# library alone is unpacked here instead (from Debian's archive: apt-get
# download). A failure only leaves the emulated DPUs' services x86-64.
ARM64_MUNGE=/usr/local/lib/dpushim-arm64
arm_munge=0
[ $full = 1 ] && [ ! -e "$ARM64_MUNGE/libmunge.so.2" ] && arm_munge=1

installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null |
        grep -q "install ok installed"
}

missing=() arm_missing=()
for p in "${PKGS[@]}"; do
    installed "$p" || missing+=("$p")
done
for p in "${ARM64_PKGS[@]}"; do
    installed "$p" || arm_missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ] && [ ${#arm_missing[@]} -eq 0 ] &&
   [ $arm_munge = 0 ]; then
    exit 0
fi
arch_add=0
dpkg --print-foreign-architectures | grep -qx arm64 || arch_add=1
if [ "$(id -u)" -ne 0 ]; then
    echo "dpushim: missing packages; run as root:" >&2
    [ $arch_add = 0 ] || echo "  dpkg --add-architecture arm64" >&2
    [ $arm_munge = 0 ] || echo "  (and scripts/deps.sh --full: the arm64 libmunge.so.2)" >&2
    echo "  apt-get update && apt-get install -y" \
         "${missing[*]} ${arm_missing[*]}" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if { [ ${#arm_missing[@]} -gt 0 ] || [ $arm_munge = 1 ]; } &&
   [ $arch_add = 1 ]; then
    dpkg --add-architecture arm64
fi
apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
    echo "dpushim: installing ${missing[*]}"
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ ${#arm_missing[@]} -gt 0 ]; then
    # Multi-Arch: same packages must match their amd64 twins' versions:
    # apt may upgrade those, and must never remove anything for them.
    plan=$(apt-get install -s --no-install-recommends "${arm_missing[@]}" 2>&1) || {
        echo "dpushim: the arm64 packages cannot be installed:" >&2
        echo "$plan" | grep -E '^(E:| )' >&2
        exit 1
    }
    if echo "$plan" | grep -q '^Remv '; then
        echo "dpushim: installing ${arm_missing[*]} would remove:" >&2
        echo "$plan" | sed -n 's/^Remv /  /p' >&2
        echo "dpushim: not installed; make agent-arm64 needs them" >&2
        exit 1
    fi
    echo "dpushim: installing ${arm_missing[*]}"
    apt-get install -y -qq --no-install-recommends "${arm_missing[@]}" >/dev/null
fi
if [ $arm_munge = 1 ]; then
    tmp=$(mktemp -d)
    if (cd "$tmp" && apt-get download -qq libmunge2:arm64 >/dev/null 2>&1 &&
        dpkg-deb -x libmunge2_*_arm64.deb x) &&
       mkdir -p "$ARM64_MUNGE" &&
       cp -P "$tmp"/x/usr/lib/aarch64-linux-gnu/libmunge.so.2* "$ARM64_MUNGE/"; then
        echo "dpushim: the arm64 libmunge.so.2 in $ARM64_MUNGE"
    else
        echo "dpushim: warning: no arm64 libmunge.so.2 (apt-get download" \
             "libmunge2:arm64 failed): the emulated DPUs' services run the" \
             "x86-64 agent" >&2
    fi
    rm -rf "$tmp"
fi
