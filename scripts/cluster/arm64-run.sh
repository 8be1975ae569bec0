#!/usr/bin/env bash
# Run a program of build/arm64/ (make agent-arm64: dpu_agent, mkseeds,
# wire_dump) on this x86-64 machine under qemu-user, as a BlueField's Arm
# cores would run it: the protocol between x86-64 ranks and an Arm agent
# (docs/bluefield.md).
#
# usage: scripts/cluster/arm64-run.sh PROGRAM [ARG...]
#   scripts/cluster/arm64-run.sh dpu_agent --probe
#   scripts/cluster/arm64-run.sh dpu_agent --listen 127.0.0.1:0 --secret-dir DIR
#
# The arguments go to the program unchanged; this script execs qemu, so
# its pid is the program's (a signal to it reaches the agent). qemu is
# named explicitly: binfmt_misc need not be registered (a container may
# not have it). The arm64 C library, UCX and rdma-core are Debian's
# multiarch packages (scripts/deps.sh), found by the aarch64 dynamic
# linker in /lib/aarch64-linux-gnu as on an Arm machine: no -L prefix,
# which would pair the cross toolchain's libc with the multiarch one's
# libraries. qemu-user 7.2 has no process_vm_readv: an emulated agent
# cannot copy with CMA itself (its ranks' DMA engines can).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [ $# -lt 1 ]; then
    sed -n '/^# usage:/,/^#   scripts.*--listen/s/^# \{0,1\}//p' \
        "${BASH_SOURCE[0]}" >&2
    exit 2
fi
prog=$root/build/arm64/$1
shift
qemu=
for q in qemu-aarch64 qemu-aarch64-static; do
    if command -v "$q" >/dev/null; then
        qemu=$q
        break
    fi
done
if [ -z "$qemu" ]; then
    echo "dpushim: qemu-aarch64 not found: run 'make deps-full' as root" >&2
    exit 2
fi
if [ ! -e /lib/ld-linux-aarch64.so.1 ]; then
    echo "dpushim: no arm64 C library (/lib/ld-linux-aarch64.so.1):" \
         "run 'make deps-full' as root" >&2
    exit 2
fi
if [ ! -x "$prog" ]; then
    echo "dpushim: $prog not built: run 'make agent-arm64'" >&2
    exit 2
fi
# The arm64 libmunge.so.2 scripts/deps.sh --full unpacks (libmunge2 is
# not Multi-Arch: it cannot be installed beside the amd64 one), for an
# agent service's MUNGE.
munge=/usr/local/lib/dpushim-arm64
if [ -e "$munge/libmunge.so.2" ]; then
    exec "$qemu" -E "LD_LIBRARY_PATH=$munge" "$prog" "$@"
fi
exec "$qemu" "$prog" "$@"
