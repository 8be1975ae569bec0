#!/usr/bin/env bash
# Emulated cluster on one machine (DESIGN.md decision 11): hosts that share
# no process ids, no /tmp or /dev/shm, no SysV IPC and no memory, joined
# only by a network, so that what only a cluster does runs here.
#
# usage: scripts/cluster/cluster.sh up H [--dpu] [--rate RATE]
#        scripts/cluster/cluster.sh down
#        scripts/cluster/cluster.sh run HOST CMD [ARG...]
#        scripts/cluster/cluster.sh status
#
# up H      H emulated hosts host1..hostH (1 <= H <= 50). Each is a set of
#           Linux namespaces of its own (network, PID, UTS, mount, IPC)
#           whose PID 1 is scripts/cluster/cluster_node.py: hostname hostN; private
#           tmpfs on /tmp, /dev/shm and /run (the run directory kept at
#           its path); /etc the machine's, read-only, with the cluster's
#           own passwd and group ($RUN/etc/: add users there, in place)
#           and /etc/dpushim ($RUN/etc/dpushim) over it, and a hosts file
#           naming every host on /etc/hosts (the machine's stays
#           untouched); hostN and hostN-dpu share $RUN/pcie/hostN at
#           /run/dpushim/grant (their PCIe link, for a DPU's agent
#           service: docs/admin.md);
#           loopback up; eth0 = 10.77.0.N/24, a veth whose other end is a
#           port of bridge br0 in one more namespace set, "switch". The
#           rest of the file system (/work, /usr) is the machine's, at the
#           same paths. Nothing is made in the root namespace: no
#           interface, no mount; only the run directory, processes and
#           a CPU group (cgroup) that holds them all, so that they
#           cannot starve the kernel threads that carry the network
#           (cg_make below says why), with a group of its own inside it
#           for each host, DPU and the switch (cg_node says why).
#   --dpu   also hostN-dpu for each host: one more namespace set with its
#           own hostname and eth0 = 10.77.0.(100+N), which its host reaches
#           only over the network.
#   --rate RATE  a token bucket (tc tbf) on every link, both directions:
#           RATE as tc writes it: 100mbit, 1gbit, 500kbit.
# down      ends every namespace set (the switch and its bridge with them)
#           and what runs inside, removes the run directory. Finds its
#           processes by the run directory in their command lines, so it
#           works after a crash or kill -9 of anything, and when there is
#           nothing to remove (exit 0).
# run HOST CMD [ARG...]  runs CMD inside HOST (a host, a DPU, or "switch")
#           with this process's stdin/stdout/stderr, environment and
#           working directory; exit status passed through (128+N if killed
#           by signal N, 255 if HOST cannot be reached). Works from the
#           root namespace and from inside any host. If this command is
#           killed, CMD's session gets SIGTERM, then SIGKILL 3 s later.
# status    hosts, DPUs, addresses, link rates and the processes running
#           in each (pid in the root namespace, pid inside, command);
#           exit 1 if the cluster is not up.
#
# Exit status: 0 ok; 1 failed; 2 usage; 77 not root (the namespaces,
# veths and mounts need root: it says so and does nothing).
#
# Launchers across hosts (scripts/cluster/cluster-rsh is ssh for these hosts):
#   scripts/cluster/cluster.sh run host1 mpirun.openmpi --allow-run-as-root \
#       --oversubscribe --host host1:2,host2:2 -np 4 \
#       --mca plm_rsh_agent "$PWD/scripts/cluster/cluster-rsh" \
#       --mca btl tcp,vader,self --mca btl_tcp_if_include eth0 \
#       --mca oob_tcp_if_include eth0 --mca pml ob1 build/openmpi/tests/t_colls
#   scripts/cluster/cluster.sh run host1 mpiexec.mpich -hosts host1:2,host2:2 -n 4 \
#       -launcher ssh -launcher-exec "$PWD/scripts/cluster/cluster-rsh" \
#       build/mpich/tests/t_colls
# scripts/cluster/cluster-mpirun.sh wraps these with the settings that work
# here (and says why each is there); scripts/cluster/cluster-slurm.sh up starts
# Slurm on the hosts (srun --mpi=pmix for Open MPI, --mpi=pmi2 for MPICH).
# A DPU's listening agent (with --dpu; the map names hostN-dpu:PORT):
#   scripts/cluster/cluster.sh run host1-dpu \
#       build/openmpi/dpu_agent --listen 0.0.0.0:7420 --secret-dir DIR
# (DIR: one the hosts see too, e.g. under the run directory). The agent
# copies with CMA only ranks whose token it reads back at their pid
# (common/dps_cma.h): none of another PID namespace, so it serves them
# over UCX ("ranks 0-1 share this agent's node name but not its process
# space (No such process): served over UCX"). Agents of 2026-12 copied
# them with CMA by node name alone and failed with "No such process"
# unless DPUSHIM_TRANSPORT=ucx.
#
# Environment: DPS_CLUSTER_DIR (default /run/dpushim-cluster) is the run
# directory: one cluster per directory, so two can coexist (their networks
# are separate namespaces; the addresses may repeat).
# DPS_CLUSTER_CG_NODES=0 keeps every host and DPU in the cluster's one
# CPU group (to measure what the groups apart change; cg_node).
# Needs: util-linux (unshare, nsenter), iproute2 (ip, tc), python3
# (scripts/deps.sh installs them).
set -euo pipefail

SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NODE_PY=$SCRIPTS/cluster_node.py
RUN=${DPS_CLUSTER_DIR:-/run/dpushim-cluster}
case $RUN/ in
/tmp/* | /dev/shm/*)
    echo "cluster.sh: DPS_CLUSTER_DIR=$RUN: the hosts have a /tmp and" \
         "/dev/shm of their own, so the run directory cannot be there" >&2
    exit 2 ;;
esac
NET=10.77.0
MAX_HOSTS=50
DPU_BASE=100

usage() {
    sed -n '/^# usage:/,/^#        scripts\/cluster.sh status/s/^# \{0,1\}//p' \
        "${BASH_SOURCE[0]}" >&2
    exit 2
}

say() { echo "cluster.sh: $*" >&2; }

# The holders (PID 1 of each namespace set, and the unshare above each)
# of this run directory: their command line names cluster_node.py, serve
# and a socket in $RUN.
holder_pids() {
    python3 "$NODE_PY" holders "$RUN"
}

# node_pid NAME: the pid (root namespace) of NAME's PID 1, checked.
node_pid() {
    local pid
    pid=$(cat "$RUN/$1.pid" 2>/dev/null) || return 1
    tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" |
        grep -qF -- "cluster_node.py serve $RUN/$1.sock" || return 1
    echo "$pid"
}

# in_net NAME CMD...: CMD in NAME's network namespace only (set-up).
in_net() {
    local pid
    pid=$(node_pid "$1") || { say "$1 is not running"; return 1; }
    shift
    nsenter -t "$pid" -n -- "$@"
}

# pcie_dir NAME: the directory hostN and hostN-dpu share (their PCIe
# link: a service's grant directory), none for the switch.
pcie_dir() {
    case $1 in
    switch) ;;
    *) echo "$RUN/pcie/${1%-dpu}" ;;
    esac
}

# etc_make: what the nodes see over the machine's /etc: a copy of its
# passwd and group (the cluster's users: add lines in place, e.g. with
# >>, so that the nodes' bind mounts keep seeing the file) and
# /etc/dpushim (empty), which tests fill from the root namespace.
etc_make() {
    mkdir -p "$RUN/etc-top/dpushim" "$RUN/etc/dpushim"
    chmod 0755 "$RUN/etc-top" "$RUN/etc-top/dpushim" "$RUN/etc" \
        "$RUN/etc/dpushim"
    cp /etc/passwd /etc/group "$RUN/etc/"
    chmod 0644 "$RUN/etc/passwd" "$RUN/etc/group"
}

# start_node NAME: a namespace set with NAME's hostname, PID 1 the holder.
start_node() {
    local name=$1 upid pid i
    # setsid: out of the caller's session, so that a timeout or ^C around
    # `up` leaves the cluster running. --kill-child: the namespace set
    # also ends if its unshare is killed.
    # The tree of these scripts stays visible at its path where a private
    # /tmp or /dev/shm would hide it (a checkout under /tmp, as CI's may
    # be): bound aside first, then back in place, as a cluster's shared
    # home directory. The node's server starts in /; each command it runs
    # gets its caller's directory.
    setsid unshare --net --pid --uts --mount --ipc --fork --mount-proc \
        --propagation private --kill-child=SIGKILL -- /bin/sh -c '
            set -e
            hostname "$1"
            keep=
            case $5/ in /tmp/*|/dev/shm/*) keep=$5 ;; esac
            if [ -n "$keep" ]; then
                mkdir -p "$6"
                mount --bind "$keep" "$6"
            fi
            mount -t tmpfs -o mode=1777 tmpfs /tmp
            mount -t tmpfs -o mode=1777 tmpfs /dev/shm
            if [ -n "$keep" ]; then
                mkdir -p "$keep"
                mount --bind "$6" "$keep"
                umount "$6"
            fi
            # A /run of its own (munged'"'"'s socket, an agent service'"'"'s
            # grants), the run directory kept at its path.
            run=
            case $7/ in /run/*) run=$7 ;; esac
            if [ -n "$run" ]; then
                mkdir -p /tmp/.dps-run
                mount --bind "$run" /tmp/.dps-run
            fi
            mount -t tmpfs -o mode=0755 tmpfs /run
            mkdir -p /run/lock /run/munge /run/user
            if [ -n "$run" ]; then
                mkdir -p "$run"
                mount --bind /tmp/.dps-run "$run"
                umount /tmp/.dps-run
                rmdir /tmp/.dps-run
            fi
            # The PCIe link of a host and its DPU: the one directory
            # both see, where a service'"'"'s worker takes its ranks'"'"' grants.
            if [ -n "$8" ]; then
                mkdir -p /run/dpushim/grant
                mount --bind "$8" /run/dpushim/grant
            fi
            # The machine'"'"'s /etc, read-only, with the cluster'"'"'s
            # users (passwd, group) and /etc/dpushim over it.
            mount -t overlay overlay -o "lowerdir=$7/etc-top:/etc" /etc
            mount --bind "$7/etc/passwd" /etc/passwd
            mount --bind "$7/etc/group" /etc/group
            mount --bind "$7/etc/dpushim" /etc/dpushim
            mount --bind "$2" /etc/hosts
            cd /
            exec python3 "$3" serve "$4"' \
        sh "$name" "$RUN/hosts" "$NODE_PY" "$RUN/$name.sock" \
        "$(cd "$SCRIPTS/../.." && pwd)" "$RUN/tree.$name" "$RUN" \
        "$(pcie_dir "$name")" \
        </dev/null >>"$RUN/$name.log" 2>&1 &
    upid=$!
    # Up to 20 s: python's start on a loaded machine.
    for ((i = 0; i < 400; i++)); do
        pid=$(cat "/proc/$upid/task/$upid/children" 2>/dev/null || true)
        pid=${pid%% *}
        if [ -n "$pid" ] && [ -S "$RUN/$name.sock" ]; then
            echo "$pid" >"$RUN/$name.pid"
            node_pid "$name" >/dev/null || continue
            cg_node "$name" "$upid" "$pid"
            return 0
        fi
        kill -0 "$upid" 2>/dev/null || break
        sleep 0.05
    done
    say "$name did not start:"
    cat "$RUN/$name.log" >&2
    return 1
}

# The cluster's CPU group (cgroup v1 "cpu", or v2 with the cpu controller):
# every process of every host, DPU and the switch is in it, so that all
# of them together weigh as one ordinary task against the kernel's own
# threads. Those threads are this emulation's network: the veths'
# packets are processed in softirqs that ksoftirqd runs, neighbour (ARP)
# entries are refreshed by kworkers. 32 ranks and 8 agents (some at nice
# -10) on 2 cores starved them: the kernel reported "workqueue lockup ...
# stuck for 143s!", TCP connects between hosts failed ("Open MPI failed to
# TCP connect to a peer"), and jobs stalled 30-120 s, stock MPI alone
# too. A real cluster's network needs no CPU of its hosts. Prints the
# group's directory, or nothing where no cpu controller can be used.
cg_make() {
    local base name
    name=$(basename "$RUN")
    case $name in dpushim*) ;; *) name=dpushim-$name ;; esac
    if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
        base=/sys/fs/cgroup
        grep -qw cpu "$base/cgroup.controllers" || return 0
        grep -qw cpu "$base/cgroup.subtree_control" ||
            echo +cpu >"$base/cgroup.subtree_control" 2>/dev/null || return 0
    elif [ -f /sys/fs/cgroup/cpu/cgroup.procs ]; then
        base=/sys/fs/cgroup/cpu
    else
        return 0
    fi
    mkdir -p "$base/$name" 2>/dev/null && [ -f "$base/$name/cgroup.procs" ] ||
        return 0
    echo "$base/$name"
}

# cg_node NAME PID...: NAME's own group inside the cluster's, PIDs moved
# into it (what they start inherits it). Each host and DPU is a machine
# of its own: inside the cluster's group, its processes compete with one
# another, and the machines with each other as wholes. Without this (all
# of the cluster's processes in one flat group; DPS_CLUSTER_CG_NODES=0)
# a DPU's polling agent held off the ranks it serves and the agents of
# other DPUs for a scheduler slice at a time: a 64 KiB Ibcast between
# 2 hosts x 2 ranks took 5.7 ms with the DPUs' agents, 0.69 ms with
# machines apart (and 0.45 ms with agents that sleep when idle). Before
# the cluster had a group, the kernel's autogroups (one per session:
# each host, each command started in it) kept them apart the same way.
cg_node() {
    local name=$1 cg p
    shift
    cg=$(cat "$RUN/cgroup" 2>/dev/null) || return 0
    [ -n "$cg" ] && [ "${DPS_CLUSTER_CG_NODES:-1}" = 1 ] || return 0
    mkdir -p "$cg/$name" 2>/dev/null || return 0
    for p in "$@"; do echo "$p" >"$cg/$name/cgroup.procs" 2>/dev/null; done
}

# Remove the group once its processes are gone (down).
cg_remove() {
    local cg i
    cg=$(cat "$RUN/cgroup" 2>/dev/null) || return 0
    [ -n "$cg" ] && [ -d "$cg" ] || return 0
    for ((i = 0; i < 100; i++)); do
        find "$cg" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
        rmdir "$cg" 2>/dev/null && return 0
        sleep 0.05
    done
    say "down: cannot remove the CPU group $cg (processes left in it?)"
}

# Bucket size for a tbf at RATE: 10 ms worth, at least 64 KiB (a GSO
# packet must fit, and a smaller bucket would cap the rate below RATE).
tbf_burst() {
    local r=$1 n unit bps
    if ! [[ $r =~ ^([0-9]+)([kmgt]?)bit$ ]]; then
        return 1
    fi
    n=${BASH_REMATCH[1]} unit=${BASH_REMATCH[2]}
    case $unit in
    k) bps=$((n * 1000)) ;; m) bps=$((n * 1000000)) ;;
    g) bps=$((n * 1000000000)) ;; t) bps=$((n * 1000000000000)) ;;
    *) bps=$n ;;
    esac
    local b=$((bps / 8 / 100))
    [ "$b" -lt 65536 ] && b=65536
    echo "$b"
}

# link NAME ADDR: eth0 in NAME, its peer NAME on the bridge.
link_node() {
    local name=$1 addr=$2 pid
    pid=$(node_pid "$name")
    # Made inside the switch: no interface ever exists in the root
    # namespace, so a crash leaves none behind there.
    in_net switch ip link add "$name" type veth peer name eth0 netns "$pid"
    in_net switch ip link set "$name" master br0 up
    in_net "$name" ip link set lo up
    in_net "$name" ip addr add "$addr/24" dev eth0
    in_net "$name" ip link set eth0 up
    if [ -n "$RATE" ]; then
        in_net "$name" tc qdisc replace dev eth0 root tbf rate "$RATE" \
            burst "$BURST" latency 50ms
        in_net switch tc qdisc replace dev "$name" root tbf rate "$RATE" \
            burst "$BURST" latency 50ms
    fi
}

cmd_up() {
    local h="" dpu=0 i name
    RATE=""
    while [ $# -gt 0 ]; do
        case $1 in
        --dpu) dpu=1 ;;
        --rate) [ $# -ge 2 ] || usage; RATE=$2; shift ;;
        --rate=*) RATE=${1#--rate=} ;;
        [0-9]*) h=$1 ;;
        *) usage ;;
        esac
        shift
    done
    if ! [[ $h =~ ^[0-9]+$ ]] || [ "$h" -lt 1 ] || [ "$h" -gt $MAX_HOSTS ]; then
        say "up: H must be 1 to $MAX_HOSTS"
        exit 2
    fi
    if [ -n "$RATE" ] && ! BURST=$(tbf_burst "$RATE"); then
        say "up: --rate '$RATE': expected a number and kbit, mbit or gbit"
        exit 2
    fi
    if [ -e "$RUN" ] || [ -n "$(holder_pids)" ]; then
        say "a cluster is up in $RUN (scripts/cluster/cluster.sh down first)"
        exit 1
    fi
    mkdir -p "$RUN"
    chmod 0700 "$RUN"
    trap 'say "up failed; taking down what was made"; cmd_down >/dev/null' ERR
    {
        echo "127.0.0.1 localhost"
        echo "::1 localhost ip6-localhost ip6-loopback"
        for ((i = 1; i <= h; i++)); do echo "$NET.$i host$i"; done
        if [ $dpu = 1 ]; then
            for ((i = 1; i <= h; i++)); do
                echo "$NET.$((DPU_BASE + i)) host$i-dpu"
            done
        fi
    } >"$RUN/hosts"
    : >"$RUN/nodes"
    etc_make
    for ((i = 1; i <= h; i++)); do
        mkdir -p "$RUN/pcie/host$i"
        chmod 0755 "$RUN/pcie" "$RUN/pcie/host$i"
    done
    # This process joins the group: the namespace sets it starts, and all
    # that runs in them, inherit it.
    CG=$(cg_make)
    if [ -n "$CG" ] && echo $$ >"$CG/cgroup.procs" 2>/dev/null; then
        echo "$CG" >"$RUN/cgroup"
    else
        say "up: no CPU group for the cluster (no usable cpu cgroup" \
            "controller): at scale its processes can starve the kernel's" \
            "network threads"
        : >"$RUN/cgroup"
    fi
    start_node switch
    in_net switch ip link set lo up
    in_net switch ip link add br0 type bridge
    in_net switch ip link set br0 up
    for ((i = 1; i <= h; i++)); do
        echo "host$i host $NET.$i" >>"$RUN/nodes"
        [ $dpu = 1 ] && echo "host$i-dpu dpu $NET.$((DPU_BASE + i))" >>"$RUN/nodes"
    done
    while read -r name _ addr; do
        start_node "$name"
        link_node "$name" "$addr"
    done <"$RUN/nodes"
    echo "${RATE:-none}" >"$RUN/rate"
    trap - ERR
    echo "cluster.sh: up: $h host(s)$([ $dpu = 1 ] && echo ", $h DPU(s)")," \
         "$NET.0/24, rate ${RATE:-unlimited}, run directory $RUN"
}

cmd_down() {
    local pids p i
    pids=$(holder_pids)
    if [ -z "$pids" ] && [ ! -e "$RUN" ]; then
        echo "cluster.sh: down: nothing to take down"
        return 0
    fi
    # SIGKILL to a PID 1 ends every process of its PID namespace; the
    # namespaces, the veths and the mounts go with their last process.
    for p in $pids; do kill -KILL "$p" 2>/dev/null || true; done
    for ((i = 0; i < 200; i++)); do
        pids=$(holder_pids)
        [ -z "$pids" ] && break
        sleep 0.05
    done
    if [ -n "$pids" ]; then
        say "down: holders still running: $pids"
        return 1
    fi
    cg_remove
    rm -rf "$RUN"
    echo "cluster.sh: down: done"
}

cmd_run() {
    [ $# -ge 2 ] || usage
    local host=$1
    shift
    if [ ! -S "$RUN/$host.sock" ]; then
        say "run: no host '$host' (scripts/cluster/cluster.sh status)"
        exit 255
    fi
    exec python3 "$NODE_PY" call "$RUN/$host.sock" "$@"
}

cmd_status() {
    local pids
    python3 "$NODE_PY" status "$RUN" && return 0
    pids=$(holder_pids)
    [ -e "$RUN/nodes" ] || [ -z "$pids" ] ||
        echo "  stray holders (scripts/cluster/cluster.sh down): $pids"
    return 1
}

[ $# -ge 1 ] || usage
case $1 in
up | down | run | status) ;;
-h | --help | help) usage ;;
*) usage ;;
esac
if [ "$(id -u)" -ne 0 ]; then
    say "must run as root (it makes namespaces, veths and mounts); nothing done"
    exit 77
fi
for t in unshare nsenter ip tc python3; do
    command -v "$t" >/dev/null ||
        { say "$t not found: run scripts/deps.sh as root"; exit 1; }
done
cmd=$1
shift
"cmd_$cmd" "$@"
