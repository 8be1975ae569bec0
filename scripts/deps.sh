#!/usr/bin/env bash
# Install the Debian packages dpushim needs, if any are missing.
# As root it runs apt-get; otherwise it prints the command to run.
set -euo pipefail

PKGS=(build-essential gfortran pkg-config libucx-dev ucx-utils uthash-dev check
      libibverbs-dev openmpi-bin libopenmpi-dev mpich libmpich-dev
      gnuplot-nox procps python3-mpi4py python3-numpy clang libclang-rt-14-dev
      iproute2 util-linux python3 slurm-wlm munge)
# iproute2, util-linux, python3: scripts/cluster.sh (namespaces, veths, tc;
# nsenter, unshare; its node holder, scripts/cluster_node.py); slurm-wlm,
# munge: scripts/cluster-slurm.sh (srun across the emulated hosts).

missing=()
for p in "${PKGS[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
            grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "dpushim: missing packages; run as root:" >&2
    echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
fi
echo "dpushim: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
