# shellcheck shell=bash
# SPDX-License-Identifier: BSD-3-Clause
# A fresh Debian root file system to run in by chroot, as root: its
# mounts, its processes and their end. Sourced by scripts/test/fresh.sh (make
# demo or check on a fresh Debian 12) and scripts/test/deb_check.sh (the
# packages installed there); it defines functions only. Whoever calls
# root_enter also calls root_leave, on every way out (a trap on EXIT).

# root_pids ROOT: the processes whose root directory is ROOT.
root_pids() {
    local p r
    for p in /proc/[0-9]*; do
        r=$(readlink "$p/root" 2>/dev/null) || continue
        [ "$r" = "$1" ] && echo "${p#/proc/}"
    done
}

# root_enter ROOT: make ROOT (made by mmdebstrap) ready for chroot: the
# host's resolver, localhost, /proc, /sys and /dev (its own devpts and
# /dev/shm). Returns 1, with a message, if a mount fails.
root_enter() {
    local root=$1
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    grep -q localhost "$root/etc/hosts" 2>/dev/null ||
        printf '127.0.0.1 localhost\n::1 localhost\n' >"$root/etc/hosts"
    mount -t proc proc "$root/proc" &&
        mount -t sysfs sysfs "$root/sys" &&
        mount --bind /dev "$root/dev" &&
        mount --make-private "$root/dev" && # mounts below stay in the chroot
        mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts" &&
        mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm" || {
        echo "could not mount /proc, /sys and /dev in $root" >&2
        return 1
    }
}

# root_leave ROOT: kill every process running in ROOT, then unmount what
# root_enter mounted (ROOT itself is left to the caller to remove).
root_leave() {
    local root=$1 pids _ m
    for _ in 1 2 3; do
        pids=$(root_pids "$root")
        [ -n "$pids" ] || break
        # shellcheck disable=SC2086
        kill -9 $pids 2>/dev/null
        sleep 0.5
    done
    for m in dev/shm dev/pts dev sys proc; do
        mountpoint -q "$root/$m" && umount -l "$root/$m"
    done
    return 0
}
