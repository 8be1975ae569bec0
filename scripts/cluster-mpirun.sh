#!/usr/bin/env bash
# One MPI job across the emulated hosts of scripts/cluster.sh, started on
# host1 the way a cluster starts it (the launcher reaches the other hosts
# through its ssh agent, here scripts/cluster-rsh), with or without the
# shim. Prints the launcher's command line first ("+ ..."), then its
# output; exits with its status.
#
# usage: scripts/cluster-mpirun.sh [--shim] MPI HOSTS [VAR=value...] PROGRAM [ARG...]
#   MPI     openmpi or mpich (build/MPI/ must be built)
#   HOSTS   host1:2,host2:2 (name:slots; the ranks fill them in order)
#   --shim  preload build/MPI/libdpushim.so into the ranks (only them)
#   VAR=value  passed to every rank (-x / -genv), e.g. DPUSHIM_STATS=1
#
# Settings, and why:
# Open MPI 4.1 (mpirun.openmpi):
#   --allow-run-as-root     the cluster runs as root
#   --oversubscribe         more ranks than a host's cores (2 here)
#   --mca plm_rsh_agent cluster-rsh   its ssh: the other hosts' daemons
#                           (orted) start there, in their namespaces
#   --mca pml ob1 --mca btl tcp,vader,self   what Debian's build picks
#                           anyway without RDMA (pml ucx declines with no
#                           InfiniBand/RoCE device), named so that a host
#                           with UCX devices does not change the test;
#                           vader between ranks of one host (they share
#                           /dev/shm), tcp between hosts
#   --mca btl_tcp_if_include / oob_tcp_if_include eth0   the cluster's
#                           network only (lo is excluded by default; named
#                           for machines where the hosts have more links)
# MPICH 4.0 (mpiexec.mpich, Hydra; Debian builds ch4:ucx):
#   -launcher ssh -launcher-exec cluster-rsh   Hydra's ssh launcher (it
#                           adds -x, which cluster-rsh ignores as ssh would)
#   -iface eth0             Hydra's own control connections on the
#                           cluster's network
#   UCX picks tcp between hosts (only eth0 besides lo), posix/cma within
#   one; no UCX_TLS needed.
set -euo pipefail

DPS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RSH=$DPS_ROOT/scripts/cluster-rsh
shim=0
if [ "${1:-}" = --shim ]; then
    shim=1
    shift
fi
if [ $# -lt 3 ]; then
    sed -n '/^# usage:/,/^#   VAR=value/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
    exit 2
fi
mpi=$1 hosts=$2
shift 2
vars=()
while [ $# -gt 0 ] && [[ $1 =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; do
    vars+=("$1")
    shift
done
[ $# -ge 1 ] || { echo "cluster-mpirun.sh: no program" >&2; exit 2; }
np=0
IFS=, read -ra hl <<<"$hosts"
for h in "${hl[@]}"; do
    n=${h#*:}
    [[ $h == *:* ]] || n=1
    np=$((np + n))
done
lib=$DPS_ROOT/build/$mpi/libdpushim.so
case $mpi in
openmpi)
    args=(mpirun.openmpi --allow-run-as-root --oversubscribe
          --host "$hosts" -np "$np"
          --mca plm_rsh_agent "$RSH"
          --mca pml ob1 --mca btl tcp,vader,self
          --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0)
    [ $shim = 1 ] && args+=(-x "LD_PRELOAD=$lib")
    for kv in ${vars[@]+"${vars[@]}"}; do args+=(-x "$kv"); done
    ;;
mpich)
    args=(mpiexec.mpich -hosts "$hosts" -n "$np"
          -launcher ssh -launcher-exec "$RSH" -iface eth0)
    [ $shim = 1 ] && args+=(-genv LD_PRELOAD "$lib")
    for kv in ${vars[@]+"${vars[@]}"}; do args+=(-genv "${kv%%=*}" "${kv#*=}"); done
    ;;
*)
    echo "cluster-mpirun.sh: unknown MPI '$mpi' (openmpi or mpich)" >&2
    exit 2
    ;;
esac
echo "+ scripts/cluster.sh run host1 ${args[*]} $*"
cd "$DPS_ROOT"
exec "$DPS_ROOT/scripts/cluster.sh" run host1 "${args[@]}" "$@" </dev/null
