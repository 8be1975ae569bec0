#!/usr/bin/env bash
# Install what `make` built: scripts/install.sh PREFIX MPI...
#   PREFIX/include/dpushim.h
#   PREFIX/lib/dpushim/MPI/libdpushim.so and dpu_agent (the shim starts
#       the agent found beside itself)
#   PREFIX/lib/pkgconfig/dpushim-MPI.pc, and dpushim.pc for the first MPI
#       named (Debian's default MPI, Open MPI, when both are built)
#   PREFIX/bin/dpushim, the runner (scripts/dpushim), which then takes the
#       libraries from PREFIX/lib/dpushim/
#   PREFIX/share/man/man{1,3,7,8}/: man/'s pages
#   PREFIX/share/modulefiles/dpushim/VERSION: a modulefile (Environment
#       Modules and Lmod) putting PREFIX's bin, man pages and pkg-config
#       files on PATH, MANPATH and PKG_CONFIG_PATH
#   PREFIX/lib/dpushim/slurm/spank_dpushim.so, the Slurm SPANK plugin, if
#       built (make slurm-plugin: it needs Slurm's headers, not every
#       site has them); plugstack.conf names it, as printed
# DESTDIR, if set, is prepended to every path written (packaging).
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:?usage: scripts/install.sh PREFIX MPI...}
shift
[ $# -gt 0 ] || { echo "install.sh: no MPI named" >&2; exit 2; }
case $prefix in
/*) ;;
*) echo "install.sh: PREFIX must be an absolute path, not '$prefix'" >&2
   exit 2 ;;
esac
dest=${DESTDIR:-}
version=$(sed -n 's/^#define DPUSHIM_VERSION_MAJOR \([0-9]*\)/\1/p' \
          include/dpushim.h).$(sed -n \
          's/^#define DPUSHIM_VERSION_MINOR \([0-9]*\)/\1/p' include/dpushim.h)
install -d "$dest$prefix/include" "$dest$prefix/lib/pkgconfig"
install -m 0644 include/dpushim.h "$dest$prefix/include/dpushim.h"
first=""
for mpi in "$@"; do
    for f in libdpushim.so dpu_agent; do
        [ -f "build/$mpi/$f" ] || {
            echo "install.sh: build/$mpi/$f missing (make MPI=$mpi)" >&2
            exit 1
        }
    done
    lib=$prefix/lib/dpushim/$mpi
    install -d "$dest$lib"
    install -m 0755 "build/$mpi/libdpushim.so" "$dest$lib/libdpushim.so"
    install -m 0755 "build/$mpi/dpu_agent" "$dest$lib/dpu_agent"
    cat >"$dest$prefix/lib/pkgconfig/dpushim-$mpi.pc" <<PC
prefix=$prefix
includedir=\${prefix}/include
libdir=\${prefix}/lib/dpushim/$mpi
# LD_PRELOAD=\$(pkg-config --variable=preload dpushim-$mpi) runs an
# unmodified program under the shim.
preload=\${libdir}/libdpushim.so

Name: dpushim-$mpi
Description: MPI collective and pattern offload to a DPU agent ($mpi build)
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -ldpushim
PC
    if [ -z "$first" ]; then
        first=$mpi
        sed "s/^Name: dpushim-$mpi/Name: dpushim/" \
            "$dest$prefix/lib/pkgconfig/dpushim-$mpi.pc" \
            >"$dest$prefix/lib/pkgconfig/dpushim.pc"
    fi
    echo "installed $mpi: $lib (pkg-config dpushim-$mpi)"
done
echo "installed $prefix/include/dpushim.h; pkg-config dpushim is $first"

# The runner, told it is installed and its version (it reads them from
# the build tree otherwise).
install -d "$dest$prefix/bin"
sed -e 's/^DPS_LAYOUT=build$/DPS_LAYOUT=install/' \
    -e "s/^DPS_VERSION=\$/DPS_VERSION=$version/" scripts/dpushim \
    >"$dest$prefix/bin/dpushim"
chmod 0755 "$dest$prefix/bin/dpushim"
grep -qx "DPS_VERSION=$version" "$dest$prefix/bin/dpushim" || {
    echo "install.sh: scripts/dpushim has no line DPS_VERSION=" >&2
    exit 1
}

# The man pages, their footer naming the version.
for page in man/*.[1-8]; do
    sec=${page##*.}
    install -d "$dest$prefix/share/man/man$sec"
    sed "s/^\(\.TH .*\) \"dpushim\" /\1 \"dpushim $version\" /" "$page" \
        >"$dest$prefix/share/man/man$sec/${page#man/}"
    chmod 0644 "$dest$prefix/share/man/man$sec/${page#man/}"
done

# The modulefile (Tcl: Environment Modules 3 to 5, and Lmod).
mod=$dest$prefix/share/modulefiles/dpushim
install -d "$mod"
cat >"$mod/$version" <<MOD
#%Module1.0
## dpushim $version, installed by scripts/install.sh in $prefix
proc ModulesHelp { } {
    puts stderr "dpushim $version: MPI collectives offloaded to a DPU agent."
    puts stderr "Run a program under it: mpirun -np 4 dpushim ./app"
    puts stderr "(mpiexec, srun alike); man dpushim, man 7 dpushim."
}
module-whatis "dpushim $version: MPI collectives offloaded to a DPU agent (mpirun -np 4 dpushim ./app)"
conflict dpushim
set root {$prefix}
prepend-path PATH            \$root/bin
# An empty MANPATH element keeps man's default search path: with MANPATH
# unset, prepending alone would hide every other manual page.
if { ![info exists ::env(MANPATH)] || \$::env(MANPATH) eq "" } {
    setenv MANPATH :
}
prepend-path MANPATH         \$root/share/man
prepend-path PKG_CONFIG_PATH \$root/lib/pkgconfig
MOD
chmod 0644 "$mod/$version"
echo "installed $prefix/bin/dpushim, man pages in $prefix/share/man," \
     "modulefile $prefix/share/modulefiles/dpushim/$version"

# The Slurm plugin, only if built. Its runner= must name this PREFIX's
# runner: the plugin's default is the package's, /usr/bin/dpushim.
if [ -f build/slurm/spank_dpushim.so ]; then
    install -d "$dest$prefix/lib/dpushim/slurm"
    install -m 0755 build/slurm/spank_dpushim.so \
        "$dest$prefix/lib/dpushim/slurm/spank_dpushim.so"
    echo "installed $prefix/lib/dpushim/slurm/spank_dpushim.so; in" \
         "plugstack.conf: optional $prefix/lib/dpushim/slurm/spank_dpushim.so" \
         "default=off runner=$prefix/bin/dpushim"
fi
