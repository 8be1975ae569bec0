#!/usr/bin/env bash
# Install what `make` built: scripts/install.sh PREFIX MPI...
#   PREFIX/include/dpushim.h
#   PREFIX/lib/dpushim/MPI/libdpushim.so and dpu_agent (the shim starts
#       the agent found beside itself)
#   PREFIX/lib/pkgconfig/dpushim-MPI.pc, and dpushim.pc for the first MPI
#       named (Debian's default MPI, Open MPI, when both are built)
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
