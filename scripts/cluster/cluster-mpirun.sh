#!/usr/bin/env bash
# One MPI job across the emulated hosts of scripts/cluster/cluster.sh, started
# on host1 the way a cluster starts it (the launcher reaches the other hosts
# through its ssh agent, here scripts/cluster/cluster-rsh), with or without the
# shim. Prints the launcher's command line first ("+ ..."), then its output;
# exits with its status.
#
# usage: scripts/cluster/cluster-mpirun.sh [--shim] [--srun] MPI HOSTS [VAR=value...] PROGRAM [ARG...]
#   MPI     openmpi or mpich (build/MPI/ must be built)
#   HOSTS   host1:2,host2:2 (name:slots; the ranks fill them in order)
#   --shim  preload build/MPI/libdpushim.so into the ranks (only them)
#   --srun  start the job with Slurm's srun instead (scripts/cluster/cluster-slurm.sh
#           up first): every host the same number of ranks; the job is
#           named $DPS_SRUN_NAME (default dpushim), for squeue and scancel
#   VAR=value  passed to every rank (-x / -genv; for srun, in srun's
#           environment, which it passes on), e.g. DPUSHIM_STATS=1
# Environment: DPS_RUN_AS=USER (with --srun) submits the job as USER, a
#           user of the cluster's own passwd (scripts/cluster/cluster.sh),
#           from /tmp, with an environment of its own (PATH, HOME=/tmp,
#           USER and the VARs): Slurm starts the ranks as USER. PROGRAM
#           must be where USER can read it (a copy under the hosts' /tmp).
#           DPS_SRUN_OPTS: more srun options (words), e.g. --dpushim=on.
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
#   --mca mpi_yield_when_idle 1   a rank waiting in MPI yields its core.
#                           The emulated hosts' packets cross their veths
#                           in softirqs that ksoftirqd runs, on the same
#                           cores as the ranks; a rank spinning in
#                           MPI_Wait holds it off until the scheduler's
#                           next tick (4 ms at HZ=250). Without it every
#                           Ialltoall took 1 tick up to 32 KiB and 3 from
#                           64 KiB (4.0 and 12.0 ms, the "floor" earlier
#                           benches showed); with it 0.03 ms at 1 KiB, 0.11
#                           ms at 64 KiB, 1.85 ms at 1 MiB (tests/overlap,
#                           2 hosts, pure comm). MPICH (UCX) was not held.
# srun (Slurm 22.05):
#   --mpi=pmix (Open MPI) / --mpi=pmi2 (MPICH)   the PMI each MPI speaks
#   -N, -w, --ntasks-per-node   the hosts and ranks of HOSTS, in order
#   --export=ALL,LD_PRELOAD=... the shim for the ranks only, not for srun
#   -K                          a rank that fails ends the job's other ranks
#   OMPI_MCA_pml, _btl, _btl_tcp_if_include, _mpi_yield_when_idle   as
#                           for mpirun above (the environment, srun has
#                           no -x)
# MPICH 4.0 (mpiexec.mpich, Hydra; Debian builds ch4:ucx):
#   -launcher ssh -launcher-exec cluster-rsh   Hydra's ssh launcher (it
#                           adds -x, which cluster-rsh ignores as ssh would)
#   -iface eth0             Hydra's own control connections on the
#                           cluster's network
#   UCX picks tcp between hosts (only eth0 besides lo), posix/cma within
#   one; no UCX_TLS needed.
set -euo pipefail

DPS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RSH=$DPS_ROOT/scripts/cluster/cluster-rsh
shim=0 srun=0
while [ $# -gt 0 ]; do
    case $1 in
    --shim) shim=1 ;;
    --srun) srun=1 ;;
    *) break ;;
    esac
    shift
done
if [ $# -lt 3 ]; then
    sed -n '/^# usage:/,/^#           environment, which/s/^# \{0,1\}//p' \
        "${BASH_SOURCE[0]}" >&2
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
np=0 names="" per=""
IFS=, read -ra hl <<<"$hosts"
for h in "${hl[@]}"; do
    n=${h#*:}
    [[ $h == *:* ]] || n=1
    np=$((np + n))
    names+=${names:+,}${h%%:*}
    if [ $srun = 1 ] && [ -n "$per" ] && [ "$per" != "$n" ]; then
        echo "cluster-mpirun.sh: --srun: every host needs as many ranks" >&2
        exit 2
    fi
    per=$n
done
lib=$DPS_ROOT/build/$mpi/libdpushim.so
if [ $srun = 1 ]; then
    env=(env)
    case $mpi in
    openmpi)
        pmi=pmix
        # shellcheck disable=SC2054 # the commas are the value's
        env+=(OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,vader,self
              OMPI_MCA_btl_tcp_if_include=eth0
              OMPI_MCA_mpi_yield_when_idle=1) ;;
    mpich) pmi=pmi2 ;;
    *) echo "cluster-mpirun.sh: unknown MPI '$mpi' (openmpi or mpich)" >&2
       exit 2 ;;
    esac
    env+=(${vars[@]+"${vars[@]}"})
    exp=ALL
    [ $shim = 1 ] && exp+=",LD_PRELOAD=$lib"
    user=()
    if [ -n "${DPS_RUN_AS:-}" ]; then
        # Nothing of root's environment, as a user's login would have.
        env=(env -i PATH=/usr/bin:/bin HOME=/tmp USER="$DPS_RUN_AS"
             LOGNAME="$DPS_RUN_AS" "${env[@]:1}")
        user=(setpriv --reuid="$DPS_RUN_AS" --regid="$DPS_RUN_AS"
              --init-groups)
    fi
    args=("${env[@]}" ${user[@]+"${user[@]}"} srun
          -J "${DPS_SRUN_NAME:-dpushim}" -N "${#hl[@]}"
          -n "$np" -w "$names" --ntasks-per-node="$per" --mpi="$pmi" -K
          --export="$exp")
    [ -n "${DPS_RUN_AS:-}" ] && args+=(--chdir=/tmp)
    # shellcheck disable=SC2206 # option words
    [ -n "${DPS_SRUN_OPTS:-}" ] && args+=($DPS_SRUN_OPTS)
    echo "+ scripts/cluster/cluster.sh run host1 ${args[*]} $*"
    cd "$DPS_ROOT"
    exec "$DPS_ROOT/scripts/cluster/cluster.sh" run host1 "${args[@]}" "$@" </dev/null
fi
case $mpi in
openmpi)
    # shellcheck disable=SC2054 # the commas are the values'
    args=(mpirun.openmpi --allow-run-as-root --oversubscribe
          --host "$hosts" -np "$np"
          --mca plm_rsh_agent "$RSH"
          --mca pml ob1 --mca btl tcp,vader,self
          --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0
          --mca mpi_yield_when_idle 1)
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
echo "+ scripts/cluster/cluster.sh run host1 ${args[*]} $*"
cd "$DPS_ROOT"
exec "$DPS_ROOT/scripts/cluster/cluster.sh" run host1 "${args[@]}" "$@" </dev/null
