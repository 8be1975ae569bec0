#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# make deb: Debian binary packages of the tree, by Debian's own tools
# (debian/, dpkg-buildpackage -b -us -uc), checked by lintian. It builds
# on a copy of the tree's files (no build/, no .git) in a temporary
# directory, since dpkg-buildpackage cleans the tree and writes beside
# it; the packages, .buildinfo and .changes go to build/deb/, lintian's
# report to build/deb/lintian.txt. Nothing else is left behind.
#
# usage: scripts/dev/deb.sh [--arm64] [--if-changed]
#   --arm64       the agent's package alone (dpushim-agent), for arm64 (a
#                 BlueField's Arm cores), cross-built (dpkg-buildpackage
#                 -aarm64 -B -Ppkg.dpushim.agent-only; the cross compiler
#                 and arm64 UCX of scripts/deps.sh --full): build/deb-arm64/
#   --if-changed  keep the packages if built from these very files
#                 (build/deb*/SOURCE: a hash of every file copied)
# environment: DEB_BUILD_OPTIONS, as for dpkg-buildpackage (default:
#              parallel=<CPUs>)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=build/deb
BUILD=(-b)

if_changed=0 tools=(dpkg-buildpackage dh lintian)
for arg; do
    case $arg in
    --if-changed) if_changed=1 ;;
    --arm64)
        OUT=build/deb-arm64
        BUILD=(-aarm64 -B -Ppkg.dpushim.agent-only)
        tools+=(aarch64-linux-gnu-gcc) ;;
    *) echo "usage: scripts/dev/deb.sh [--arm64] [--if-changed]" >&2; exit 2 ;;
    esac
done
for t in "${tools[@]}"; do
    command -v "$t" >/dev/null || {
        echo "deb.sh: $t not found: run scripts/deps.sh --deb (--full for --arm64) as root" >&2
        exit 2
    }
done

# The files of the tree: those git knows (tracked, or new and not
# ignored) that exist; outside a git checkout, all but build/.
tree_files() {
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files -z --cached --others --exclude-standard |
            while IFS= read -r -d '' f; do
                [ -f "$f" ] && printf '%s\0' "$f"
            done
    else
        find . -path ./build -prune -o -path ./.git -prune -o -type f \
            -printf '%P\0'
    fi
}

source_hash=$(tree_files | sort -z | xargs -0 sha256sum | sha256sum |
              cut -d' ' -f1)
if [ $if_changed = 1 ] && [ -f "$OUT/SOURCE" ] &&
        [ "$(cat "$OUT/SOURCE")" = "$source_hash" ] &&
        compgen -G "$OUT/*.deb" >/dev/null; then
    echo "deb.sh: $OUT is up to date"
    exit 0
fi

# The packages' version is debian/changelog's: it must be the header's.
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
hversion=$(sed -n 's/^#define DPUSHIM_VERSION_MAJOR \([0-9]*\)/\1/p' \
           include/dpushim.h).$(sed -n \
           's/^#define DPUSHIM_VERSION_MINOR \([0-9]*\)/\1/p' include/dpushim.h)
[ "$version" = "$hversion" ] || {
    echo "deb.sh: debian/changelog says $version, include/dpushim.h $hversion:" \
         "give debian/changelog an entry for $hversion" >&2
    exit 1
}
WORK=$(mktemp -d /var/tmp/dpushim-deb.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
SRC=$WORK/dpushim-$version
mkdir "$SRC"
tree_files | tar -c --null -T - -f - | tar -x -C "$SRC" -f -

t0=$SECONDS
echo "== deb.sh: dpkg-buildpackage ${BUILD[*]} -us -uc (dpushim $version)"
(cd "$SRC" &&
    DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-parallel=$(nproc)} \
        dpkg-buildpackage "${BUILD[@]}" -us -uc) >"$WORK/build.log" 2>&1 || {
    tail -n 40 "$WORK/build.log" >&2
    echo "deb.sh: dpkg-buildpackage failed" >&2
    exit 1
}
rm -rf "$OUT"
mkdir -p "$OUT"
# With the debug symbols' packages (-dbgsym, dh_strip's).
mv "$WORK"/*.deb "$WORK"/*.buildinfo "$WORK"/*.changes "$OUT"/
mv "$WORK/build.log" "$OUT/build.log"
echo "   built in $((SECONDS - t0)) s:"
for f in "$OUT"/*.deb; do echo "   ${f##*/}"; done

# lintian: errors and warnings fail; informational tags are shown. No
# tag is overridden (--show-overrides would list any).
echo "== deb.sh: lintian"
rc=0
lintian --fail-on error,warning --display-info --show-overrides \
    "$OUT"/*.changes >"$OUT/lintian.txt" 2>&1 || rc=$?
sed 's/^/   /' "$OUT/lintian.txt"
if [ $rc != 0 ]; then
    echo "deb.sh: lintian found errors or warnings (exit $rc)" >&2
    exit 1
fi
echo "$source_hash" >"$OUT/SOURCE"
echo "deb.sh: lintian clean (errors, warnings); packages in $OUT/"
