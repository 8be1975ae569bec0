#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# make check's cases for the Debian packages (make deb, debian/), sourced
# by scripts/test/case.sh: deb_tests MPI... (case deb/packages of
# tests/cases.py) uses its report and $LOGS. Run alone
# (scripts/test/deb_check.sh [MPI...], as root), it is bin/dps-test -k deb/.
#
# The packages build and lintian finds no error or warning in them
# (scripts/dev/deb.sh, kept if built from the same files); the agent's
# package cross-builds for arm64 (scripts/deps.sh --full's compiler),
# and its agent runs under qemu-user. Both agent packages hold the service
# (dpushim-agent.service) and its settings (/etc/dpushim/agent.conf, a
# conffile), the same files. dpushim-slurm holds the Slurm plugin and its
# plugstack.conf line (/etc/slurm/plugstack.conf.d/dpushim.conf, a
# conffile, default=off); the arm64 build has no dpushim-slurm.
# Then, as scripts/test/fresh.sh does, a minimal Debian 12 root file system
# (mmdebstrap --variant=apt): apt installs the packages there, pulling
# in the MPI libraries by their dependencies (the launchers, which they
# only recommend, by name), and an example built here
# runs through the installed runner, found on PATH: mpirun -np 2 dpushim
# --stats ./halo3d (and mpiexec for MPICH), its result checked and its
# collectives offloaded. There systemd-analyze verify finds nothing to
# say about the service as installed, and the package enabled it. The
# Slurm plugin installed there exports what SPANK looks up, was built for
# the Slurm release apt installed with it (slurmd -V), and srun --help,
# by Debian's plugstack.conf, loads it and offers --dpushim.
# Everything it made is removed and every process started inside the
# root killed, also on timeout or interrupt.
#
# Not root, the packages are built and checked, not installed (a line
# "SKIP Debian packages in a fresh root: not root", as the cluster's).
#
# environment: DPS_DEB_CHECK=0  skip these cases (one line SKIP)
#              FRESH_MIRROR     Debian mirror (default: mmdebstrap's)

# shellcheck source=scripts/test/root.sh
source "$(dirname "${BASH_SOURCE[0]}")/root.sh"

# The fresh root's directory while it exists (deb_root_cleanup).
DEB_WORK=""
# 1 once make deb has built and lintian passed the packages of this tree.
DEB_BUILT=0

deb_root_cleanup() {
    [ -n "$DEB_WORK" ] || return 0
    root_leave "$DEB_WORK/root"
    rm -rf --one-file-system "$DEB_WORK"
    DEB_WORK=""
}

# deb_root_make LOG: a minimal Debian 12 root with /proc, /sys and /dev
# mounted, in $DEB_WORK/root.
deb_root_make() {
    local log=$1 root
    DEB_WORK=$(mktemp -d /var/tmp/dpushim-debroot.XXXXXX) || return 1
    root=$DEB_WORK/root
    # Its package lists kept, for the apt-get install that follows.
    # shellcheck disable=SC2086
    timeout -k 10 600 mmdebstrap --quiet --variant=apt \
        --skip=cleanup/apt/lists bookworm "$root" \
        ${FRESH_MIRROR:-} >>"$log" 2>&1 || {
        echo "mmdebstrap failed" >>"$log"
        return 1
    }
    root_enter "$root" 2>>"$log"
}

# deb_in_root LOG SECONDS COMMAND: COMMAND by bash, as root in the root,
# with a clean environment; its output appended to LOG.
deb_in_root() {
    local log=$1 secs=$2
    echo "# $3" >>"$log"
    timeout -k 10 "$secs" chroot "$DEB_WORK/root" /usr/bin/env -i \
        HOME=/root LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        OMPI_MCA_btl_base_warn_component_unused=0 \
        /bin/bash -c "$3" >>"$log" 2>&1
}

# deb_agent_ships DEB LOG: dpushim-agent's package DEB holds the service's
# unit and its settings, these as a conffile, and no agents.map (the
# admin's to write). The unit's directory is /lib's or /usr/lib's, as
# debhelper puts it.
deb_agent_ships() {
    local deb=$1 log=$2 list
    echo "# $deb" >>"$log"
    list=$(dpkg-deb -c "$deb" 2>>"$log") || return 1
    grep -E 'systemd|/etc/' <<<"$list" >>"$log"
    dpkg-deb -I "$deb" conffiles >>"$log" 2>&1
    grep -Eq ' \./(usr/)?lib/systemd/system/dpushim-agent\.service$' \
        <<<"$list" &&
        grep -q ' \./etc/dpushim/agent\.conf$' <<<"$list" &&
        ! grep -q 'agents\.map' <<<"$list" &&
        dpkg-deb -I "$deb" conffiles 2>/dev/null |
        grep -qx /etc/dpushim/agent.conf
}

# deb_member DEB PATTERN: the content of DEB's one file whose path
# matches PATTERN (grep -E).
deb_member() {
    local path
    path=$(dpkg-deb -c "$1" | awk '{print $NF}' | grep -E "$2") || return 1
    dpkg-deb --fsys-tarfile "$1" | tar -xOf - "$path"
}

# The plugstack.conf line dpushim-slurm ships: opt-in per job.
DEB_SLURM_LINE="optional /usr/lib/dpushim/slurm/spank_dpushim.so default=off runner=/usr/bin/dpushim"

# deb_slurm_ships DEB LOG: dpushim-slurm's package DEB holds the plugin
# and /etc/slurm/plugstack.conf.d/dpushim.conf as a conffile, whose one
# line that is not a comment is DEB_SLURM_LINE.
deb_slurm_ships() {
    local deb=$1 log=$2 list conf
    echo "# $deb" >>"$log"
    list=$(dpkg-deb -c "$deb" 2>>"$log") || return 1
    grep -E '/slurm/|/etc/' <<<"$list" >>"$log"
    dpkg-deb -I "$deb" conffiles >>"$log" 2>&1
    conf=$(deb_member "$deb" '^\./etc/slurm/plugstack\.conf\.d/dpushim\.conf$' |
           grep -Ev '^[[:space:]]*(#|$)') || return 1
    echo "its line: $conf" >>"$log"
    grep -q ' \./usr/lib/dpushim/slurm/spank_dpushim\.so$' <<<"$list" &&
        dpkg-deb -I "$deb" conffiles 2>/dev/null |
        grep -qx /etc/slurm/plugstack.conf.d/dpushim.conf &&
        [ "$conf" = "$DEB_SLURM_LINE" ]
}

# deb_build_tests: make deb, its lintian; the arm64 agent's package; the
# service's files in both; the Slurm plugin's package.
deb_build_tests() {
    local log="$LOGS/deb-build.log" ok=0 deb arm_built=0 arm amd f a b
    scripts/dev/deb.sh --if-changed >"$log" 2>&1 && ok=1
    for deb in dpushim dpushim-openmpi dpushim-mpich dpushim-agent \
               dpushim-dev dpushim-slurm; do
        compgen -G "build/deb/${deb}_*.deb" >/dev/null || {
            echo "no package $deb in build/deb/" >>"$log"
            ok=0
        }
    done
    report "make deb: dpushim, dpushim-openmpi, dpushim-mpich, dpushim-agent, dpushim-dev, dpushim-slurm built by dpkg-buildpackage; lintian: no error or warning" \
        "$ok" "$log"
    DEB_BUILT=$ok
    log="$LOGS/deb-slurm-files.log"
    : >"$log"
    ok=0
    if [ "$DEB_BUILT" = 1 ]; then
        deb_slurm_ships "$(echo build/deb/dpushim-slurm_*.deb)" "$log" &&
            ok=1
    else
        echo "the packages did not build (make deb)" >>"$log"
    fi
    report "make deb: dpushim-slurm ships spank_dpushim.so and /etc/slurm/plugstack.conf.d/dpushim.conf (a conffile: $DEB_SLURM_LINE)" \
        "$ok" "$log"
    log="$LOGS/deb-service-files.log"
    : >"$log"
    ok=0
    if [ "$DEB_BUILT" = 1 ]; then
        deb_agent_ships "$(echo build/deb/dpushim-agent_*.deb)" "$log" &&
            ok=1
    else
        echo "the packages did not build (make deb)" >>"$log"
    fi
    report "make deb: dpushim-agent ships dpushim-agent.service and /etc/dpushim/agent.conf (a conffile), no agents.map" \
        "$ok" "$log"
    log="$LOGS/deb-build-arm64.log"
    ok=0
    if ! command -v aarch64-linux-gnu-gcc >/dev/null; then
        echo "aarch64-linux-gnu-gcc not installed (scripts/deps.sh --full)" >"$log"
    else
        # Its agent, under qemu-user as scripts/cluster/arm64-run.sh runs it:
        # the multiarch arm64 libraries (scripts/deps.sh --full) stand in for
        # the DPU's. --probe exits 1 where no DPU is found.
        rm -rf "$LOGS/deb-arm64-x"
        scripts/dev/deb.sh --arm64 --if-changed >"$log" 2>&1 && arm_built=1
        [ $arm_built = 1 ] &&
            dpkg-deb -x build/deb-arm64/dpushim-agent_*_arm64.deb \
                "$LOGS/deb-arm64-x" &&
            LC_ALL=C readelf -h "$LOGS/deb-arm64-x/usr/sbin/dpu_agent" \
                >>"$log" 2>&1 &&
            grep -q 'Machine: *AArch64' "$log" && ok=1
        timeout 60 qemu-aarch64 "$LOGS/deb-arm64-x/usr/sbin/dpu_agent" \
            --probe >>"$log" 2>&1
        grep -q '^BlueField DPU: ' "$log" || ok=0
        rm -rf "$LOGS/deb-arm64-x"
        # The agent-only profile leaves the Slurm plugin out.
        if compgen -G "build/deb-arm64/dpushim-slurm*" >/dev/null; then
            echo "build/deb-arm64/ has dpushim-slurm" >>"$log"
            ok=0
        fi
    fi
    report "make deb-arm64: dpushim-agent alone for arm64 (a DPU's agent), its AArch64 dpu_agent runs (qemu-user, --probe); lintian: no error or warning" \
        "$ok" "$log"
    # The arm64 agent's service: the amd64 package's very unit and
    # settings, so that what the fresh root verifies holds for both.
    log="$LOGS/deb-service-files-arm64.log"
    : >"$log"
    arm=$(echo build/deb-arm64/dpushim-agent_*_arm64.deb)
    amd=$(echo build/deb/dpushim-agent_*.deb)
    ok=0
    if [ $arm_built != 1 ] || [ "$DEB_BUILT" != 1 ]; then
        echo "the amd64 or the arm64 packages did not build" >>"$log"
    elif deb_agent_ships "$arm" "$log"; then
        ok=1
        for f in '/systemd/system/dpushim-agent\.service$' \
                 '^\./etc/dpushim/agent\.conf$'; do
            if ! a=$(deb_member "$arm" "$f") ||
                    ! b=$(deb_member "$amd" "$f") || [ "$a" != "$b" ]; then
                echo "$f: not the amd64 package's file" >>"$log"
                ok=0
            fi
        done
    fi
    report "make deb-arm64: dpushim-agent ships dpushim-agent.service and /etc/dpushim/agent.conf (a conffile), the amd64 package's files" \
        "$ok" "$log"
}

# deb_install_tests MPI...: the packages into a fresh root by apt; an
# example through the installed runner under each MPI's launcher.
deb_install_tests() {
    local log="$LOGS/deb-install.log" ok=0 mpi debs pkgs t0 t1 launcher job
    : >"$log"
    t0=$SECONDS
    debs="dpushim dpushim-agent dpushim-dev dpushim-slurm"
    pkgs="pkg-config systemd man-db slurm-client slurmd binutils"
    for mpi in "$@"; do
        debs+=" dpushim-$mpi"
        pkgs+=" $([ "$mpi" = openmpi ] && echo openmpi-bin || echo mpich)"
        [ -x "build/$mpi/examples/halo3d" ] || {
            echo "build/$mpi/examples/halo3d not built (make MPI=$mpi)" >>"$log"
            report "Debian packages installed by apt into a fresh Debian 12 root" 0 "$log"
            return
        }
    done
    if [ "$(id -u)" != 0 ]; then
        # As the cluster's part: the root's mounts and chroot need root.
        echo "SKIP Debian packages in a fresh root: not root"
        return 0
    elif [ "$DEB_BUILT" != 1 ]; then
        # build/deb/ may hold an older build's packages: not those.
        echo "the packages did not build (make deb)" >>"$log"
    elif ! command -v mmdebstrap >/dev/null; then
        echo "mmdebstrap not installed (scripts/deps.sh --full)" >>"$log"
    elif deb_root_make "$log"; then
        echo "root made in $((SECONDS - t0)) s" >>"$log"
        mkdir -p "$DEB_WORK/root/tmp/debs" "$DEB_WORK/root/root/app"
        for d in $debs; do
            cp build/deb/"${d}"_*.deb "$DEB_WORK/root/tmp/debs/"
        done
        for mpi in "$@"; do
            cp "build/$mpi/examples/halo3d" "$DEB_WORK/root/root/app/halo3d-$mpi"
        done
        # The launchers (openmpi-bin, mpich) by name: the packages only
        # recommend them; the MPI libraries come as their dependencies.
        # pkg-config: to read dpushim-dev's files. systemd: systemd-analyze
        # and the units the service names; man-db: the man command that
        # finds its man page (deb_service_tests). slurm-client (srun),
        # slurmd and binutils (nm, objdump): deb_slurm_tests; dpushim-slurm
        # brings only the Slurm plugins' package. Their init scripts (munge,
        # slurmd) start nothing here: with no init system running,
        # invoke-rc.d blocks them (Debian 12's, policy-rc.d or not).
        # shellcheck disable=SC2086
        deb_in_root "$log" 600 "apt-get install -y -q --no-install-recommends \
            /tmp/debs/*.deb $pkgs" && ok=1
        for d in $debs; do
            deb_in_root "$log" 30 "dpkg-query -W -f='\${Package} \${Version} \${Status}\n' $d" ||
                ok=0
        done
        deb_in_root "$log" 30 "dpushim --version | grep -x 'dpushim [0-9.]* (installed in /usr)'" ||
            ok=0
        # dpushim-dev's pkg-config files name the installed libraries.
        for mpi in "$@"; do
            deb_in_root "$log" 30 "pkg-config --cflags --libs dpushim-$mpi &&
                test -f \$(pkg-config --variable=preload dpushim-$mpi) &&
                test -f \$(pkg-config --variable=includedir dpushim-$mpi)/dpushim.h" ||
                ok=0
        done
        echo "installed in $((SECONDS - t0)) s" >>"$log"
    fi
    report "Debian packages ($debs) installed by apt into a fresh Debian 12 root, with their dependencies; dpushim --version and pkg-config name the installed files" \
        "$ok" "$log"
    deb_service_tests "$ok"
    deb_slurm_tests "$ok"
    for mpi in "$@"; do
        log="$LOGS/$mpi-deb-job.log"
        launcher=$([ "$mpi" = openmpi ] && echo "mpirun -np 2" ||
                   echo "mpiexec.mpich -n 2")
        : >"$log"
        job=0
        if [ "$ok" = 1 ]; then
            t1=$SECONDS
            deb_in_root "$log" 120 "cd /root/app && $launcher dpushim --stats \
                --min-bytes 1 ./halo3d-$mpi -m neighbor -n 14,11,9 -i 20" &&
                grep -q '^check: ok' "$log" &&
                grep -Eq '^dpushim: neighbor_alltoallw_init offloaded=[1-9]' \
                    "$log" && job=1
            echo "$mpi job: $((SECONDS - t1)) s" >>"$LOGS/deb-install.log"
        else
            echo "the packages are not installed" >>"$log"
        fi
        report "$mpi, installed packages in a fresh root: $launcher dpushim --stats halo3d (the installed runner, library, agent): result checked, offloaded" \
            "$job" "$log"
    done
    echo "in all $((SECONDS - t0)) s" >>"$LOGS/deb-install.log"
    if [ -n "$DEB_WORK" ] && [ -n "$(root_pids "$DEB_WORK/root")" ]; then
        echo "processes left in the root: $(root_pids "$DEB_WORK/root" | tr '\n' ' ')" \
            >>"$LOGS/deb-install.log"
        report "no process left in the packages' fresh root" 0 \
            "$LOGS/deb-install.log"
    fi
    deb_root_cleanup
}

# deb_service_tests INSTALLED: dpushim-agent.service as the packages
# installed it in the fresh root (INSTALLED: 1 if they were), not
# started. systemd-analyze verify has nothing to say about it: the unit
# parses, its ExecStart binary and its Documentation= man page are there.
# On systemd 252 an unknown key or a value it cannot parse is only
# warned about (exit 0), hence no output at all is asked for too. And
# the package enabled it.
deb_service_tests() {
    local log="$LOGS/deb-service.log" ok=0
    : >"$log"
    if [ "$1" != 1 ]; then
        echo "the packages are not installed" >>"$log"
    else
        deb_in_root "$log" 60 '
            out=$(systemd-analyze verify dpushim-agent.service 2>&1)
            rc=$?
            [ -z "$out" ] || printf "%s\n" "$out"
            echo "systemd-analyze verify: exit $rc"
            [ "$rc" = 0 ] && [ -z "$out" ]' &&
            deb_in_root "$log" 30 'systemctl is-enabled dpushim-agent.service |
                grep -x enabled' && ok=1
        # How exposed systemd judges it, for the log.
        deb_in_root "$log" 60 '
            unit=$(dpkg -L dpushim-agent | grep "/dpushim-agent\.service$")
            systemd-analyze security --offline=yes --no-pager "$unit" |
                tail -n 1'
    fi
    report "dpushim-agent.service installed in the fresh root: systemd-analyze verify finds nothing to say (the unit, its binary, its man page); enabled" \
        "$ok" "$log"
}

# deb_root_slurm_plugin: in the fresh root (by declare -f), the installed
# plugin exports the symbols SPANK looks up (SPANK_PLUGIN's three and the
# two functions it defines), and the Slurm release it records in
# plugin_version is slurmd -V's X.Y: the Slurm apt chose by the
# package's dependency. plugin_version is 0xMMmmuu (SLURM_VERSION_NUM),
# its bytes read little-endian as amd64 stores them.
deb_root_slurm_plugin() {
    local so=/usr/lib/dpushim/slurm/spank_dpushim.so ok=1 syms s addr
    local hex="" built=unknown slurmd
    syms=$(nm -D --defined-only "$so") || return 1
    printf '%s\n' "$syms"
    for s in slurm_spank_init slurm_spank_task_init plugin_name \
             plugin_type plugin_version; do
        awk -v s="$s" '$3 == s { f = 1 } END { exit !f }' <<<"$syms" || {
            echo "no symbol $s"
            ok=0
        }
    done
    addr=$(awk '$3 == "plugin_version" { print $1 }' <<<"$syms")
    if [ -n "$addr" ]; then
        hex=$(objdump -s --start-address="0x$addr" \
                  --stop-address="$(printf '0x%x' $((0x$addr + 4)))" "$so" |
              awk '$1 ~ /^[0-9a-f]+$/ && NF >= 2 { w = $2 } END { print w }')
        [[ $hex =~ ^[0-9a-f]{8}$ ]] &&
            built=$((16#${hex:4:2})).$(printf %02d $((16#${hex:2:2})))
    fi
    slurmd=$(slurmd -V | awk '{ print $2 }' | cut -d. -f1,2)
    echo "plugin built for Slurm $built (plugin_version's bytes: ${hex:-none});" \
         "slurmd -V: $slurmd"
    [ "$built" = "$slurmd" ] && [ $ok = 1 ]
}

# deb_root_slurm_srun: in the fresh root, srun reads Debian's
# /etc/slurm/plugstack.conf, which includes plugstack.conf.d/dpushim.conf,
# loads the plugin with the arguments shipped, and lists its option in
# --help. An optional plugin that fails to load (another Slurm release)
# or to take its arguments is skipped: the option is missing. srun needs
# a slurm.conf to start: a scratch one, where Debian's is, since Slurm
# looks for plugstack.conf beside it (SLURM_CONF=/tmp/... would miss
# Debian's); no daemon runs.
deb_root_slurm_srun() {
    local out
    printf '%s\n' ClusterName=check SlurmctldHost=localhost \
        'NodeName=localhost CPUs=1 State=UNKNOWN' \
        'PartitionName=check Nodes=localhost Default=YES' \
        >/etc/slurm/slurm.conf
    cat /etc/slurm/plugstack.conf
    out=$(srun -v --help 2>&1)
    grep -iE 'spank|dpushim' <<<"$out"
    grep -Eq '^ +--dpushim=on\|off ' <<<"$out"
}

# deb_slurm_tests INSTALLED: dpushim-slurm as installed in the fresh root
# (INSTALLED: 1 if the packages were): deb_root_slurm_plugin and
# deb_root_slurm_srun there.
deb_slurm_tests() {
    local log="$LOGS/deb-slurm.log" ok=0
    : >"$log"
    if [ "$1" != 1 ]; then
        echo "the packages are not installed" >>"$log"
    else
        deb_in_root "$log" 60 "$(declare -f deb_root_slurm_plugin)
            deb_root_slurm_plugin" && ok=1
    fi
    report "dpushim-slurm installed in the fresh root: spank_dpushim.so exports slurm_spank_init, slurm_spank_task_init, plugin_name, plugin_type, plugin_version; built for the installed Slurm's release (slurmd -V)" \
        "$ok" "$log"
    log="$LOGS/deb-slurm-srun.log"
    : >"$log"
    ok=0
    if [ "$1" != 1 ]; then
        echo "the packages are not installed" >>"$log"
    else
        deb_in_root "$log" 60 "$(declare -f deb_root_slurm_srun)
            deb_root_slurm_srun" && ok=1
    fi
    report "dpushim-slurm in the fresh root: srun --help, by Debian's plugstack.conf and dpushim.conf, loads the plugin and offers --dpushim" \
        "$ok" "$log"
}

# deb_tests MPI...: every case above, for the MPIs given.
deb_tests() {
    if [ "${DPS_DEB_CHECK:-1}" = 0 ]; then
        echo "SKIP Debian packages (DPS_DEB_CHECK=0)"
        return 0
    fi
    trap deb_root_cleanup EXIT
    trap 'exit 143' TERM INT HUP
    deb_build_tests
    deb_install_tests "$@"
    trap - EXIT TERM INT HUP
}

# Run alone: bin/dps-test, these cases only.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    exec "$(dirname "$0")/../../bin/dps-test" -k deb/ "$@"
fi
