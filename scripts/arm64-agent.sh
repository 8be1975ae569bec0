#!/usr/bin/env bash
# Run the aarch64 dpu_agent (make agent-arm64) on this x86-64 machine
# under qemu-user, as a BlueField's Arm cores would run it: the protocol
# between x86-64 ranks and an Arm agent (docs/bluefield.md).
#   scripts/arm64-agent.sh --probe
#   scripts/arm64-agent.sh --listen 127.0.0.1:0 --secret-dir DIR
# Its arguments go to dpu_agent unchanged; it execs qemu, so its pid is
# the agent's (a signal to it reaches the agent). qemu is named
# explicitly: binfmt_misc need not be registered (a container may not
# have it). The arm64 C library, UCX and rdma-core are Debian's multiarch
# packages (scripts/deps.sh), found by the aarch64 dynamic linker in
# /lib/aarch64-linux-gnu as on an Arm machine: no -L prefix, whose mix of
# the cross toolchain's libc with multiarch libraries would be fragile.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
agent=$root/build/arm64/dpu_agent
qemu=

for q in qemu-aarch64 qemu-aarch64-static; do
    if command -v "$q" >/dev/null; then
        qemu=$q
        break
    fi
done
if [ -z "$qemu" ]; then
    echo "dpushim: qemu-aarch64 not found: run 'make deps' as root" >&2
    exit 2
fi
if [ ! -e /lib/ld-linux-aarch64.so.1 ]; then
    echo "dpushim: no arm64 C library (/lib/ld-linux-aarch64.so.1):" \
         "run 'make deps' as root" >&2
    exit 2
fi
if [ ! -x "$agent" ]; then
    echo "dpushim: $agent not built: run 'make agent-arm64'" >&2
    exit 2
fi
exec "$qemu" "$agent" "$@"
