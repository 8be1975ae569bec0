# shellcheck shell=bash
# make check's part (cases of tests/cases.py): the tree itself: unit tests, shellcheck, the layout of the sources, the manual against the tree, the decoder fuzzed, the installed tree, the MPI programs through the matrix, and no agent left behind.
# Sourced by scripts/test/case.sh (which defines LOGS, TIMEOUT, PASS and
# FAIL); functions only.

# The shell scripts pass shellcheck at severity warning (a finding that
# is the intent carries a disable comment saying why).
shellcheck_check() {
    local log=$LOGS/shellcheck.log ok=1
    shellcheck -S warning -f gcc scripts/*.sh scripts/*/*.sh scripts/dpushim \
        scripts/cluster/cluster-rsh .ci/run >"$log" 2>&1 || ok=0
    report "shell scripts pass shellcheck -S warning" "$ok" "$log"
}

# The C sources are as clang-format writes them (.clang-format): the
# log names each file that is not (make format rewrites them).
format_check() {
    local log=$LOGS/clang-format.log ok=1
    make -s --no-print-directory format-check >"$log" 2>&1 || ok=0
    report "C sources are as clang-format writes them (.clang-format)" \
        "$ok" "$log"
}

# The sources' layout (docs/architecture.md): no two files call or include
# each other in a loop, and no folder calls or includes one above it.
layout_check() {
    local log="$LOGS/depgraph.log" ok=1
    make -s --no-print-directory MPI="$1" depgraph >"$log" 2>&1 ||
        ok=0
    report "sources: no call or include loop between files, none up between folders (make depgraph)" \
        "$ok" "$log"
}

# No room of shim/ writes state another owns (docs/architecture.md, "Who
# writes what").
owners_check() {
    local log="$LOGS/owners.log" ok=1
    make -s --no-print-directory owners >"$log" 2>&1 || ok=0
    report "sources: no room of shim/ writes state another owns, nor takes shim.lock outside core, failover and base (make owners)" \
        "$ok" "$log"
}

# The manual (README.md, docs/) against the tree: its generated tables,
# its complete example, the source paths it names and its links.
readme_check() {
    local log="$LOGS/readme.log" ok=1
    scripts/dev/readme_table.sh --check >"$log" 2>&1 || ok=0
    report "docs/variables.md's DPUSHIM_* table and docs/reductions.md's reducible datatypes match common/dps_config.c and common/dps_rtypes.h" "$ok" \
        "$log"
    log="$LOGS/readme-example.log"
    ok=1
    diff <(sed -n '/^A complete program/,/^Build and run it/p' docs/api.md |
           sed -n '/^```c$/,/^```$/p' | sed '1d;$d') \
         <(sed -n '/^#include <dpushim.h>/,$p' examples/pattern.c) \
        >"$log" 2>&1 || ok=0
    report "docs/api.md's complete dpushim.h example is examples/pattern.c" \
        "$ok" "$log"
    # Source files moved or renamed leave the manual naming old paths:
    # the log lists each as FILE:LINE.
    log="$LOGS/readme-refs.log"
    ok=1
    scripts/dev/doc_refs.sh >"$log" 2>&1 || ok=0
    report "README.md and docs/ name only source paths that exist, and their links resolve" \
        "$ok" "$log"
}

# The decoders under libFuzzer with AddressSanitizer, briefly (longer by
# hand: build/fuzz/fuzz_decode -max_total_time=600 build/fuzz/corpus, and
# build/fuzz/fuzz_hello -max_total_time=600 build/fuzz/hello-corpus): the
# wire messages of ranks and agents, and the hello a listening agent takes
# from anyone who connects.
fuzz_decoder() {
    local log="$LOGS/fuzz-decode.log" logh="$LOGS/fuzz-hello.log" ok=0
    local seeds=build/fuzz/seeds hseeds=build/fuzz/hello-seeds
    local t=${DPS_FUZZ_SECONDS:-15}
    if [ ! -x build/fuzz/fuzz_decode ] || [ ! -x build/fuzz/fuzz_hello ]; then
        echo "build/fuzz/fuzz_decode or fuzz_hello not built (make fuzz, needs clang)" >"$log"
        cp "$log" "$logh"
    else
        rm -rf "$seeds" "$hseeds" &&
            mkdir -p "$seeds" "$hseeds" build/fuzz/corpus build/fuzz/hello-corpus &&
            build/fuzz/mkseeds "$seeds" "$hseeds" &&
            timeout 120 build/fuzz/fuzz_decode -max_total_time="$t" \
                -seed=1 -artifact_prefix=build/fuzz/ build/fuzz/corpus "$seeds" \
                >"$log" 2>&1 &&
            grep -q '^Done [0-9]* runs' "$log" && ok=1
    fi
    report "wire decoder fuzzed (libFuzzer, ASan, UBSan) without a fault" \
        "$ok" "$log"
    ok=0
    [ -x build/fuzz/fuzz_hello ] &&
        timeout 120 build/fuzz/fuzz_hello -max_total_time="$t" -seed=1 \
            -artifact_prefix=build/fuzz/hello- build/fuzz/hello-corpus "$hseeds" \
            >"$logh" 2>&1 &&
        grep -q '^Done [0-9]* runs' "$logh" && ok=1
    report "listener hello decoder fuzzed (libFuzzer, ASan, UBSan): accepted hellos re-encode exactly" \
        "$ok" "$logh"
}

# install_check MPI...: `make install` into a scratch prefix; the API
# example built with pkg-config runs under the shim through the linked
# library alone (no LD_PRELOAD), and built with the header alone runs on
# stock MPI, told that offload is not available.
install_check() {
    local prefix="$PWD/$LOGS/prefix" mpi log ok pc
    rm -rf "$prefix"
    log="$LOGS/install.log"
    scripts/install.sh "$prefix" "$@" >"$log" 2>&1
    ok=$?
    [ $ok = 0 ] && [ -f "$prefix/include/dpushim.h" ] &&
        [ -f "$prefix/lib/pkgconfig/dpushim.pc" ] && ok=1 || ok=0
    report "make install PREFIX=...: header, libraries, agents, pkg-config" \
        "$ok" "$log"
    for mpi in "$@"; do
        log="$LOGS/$mpi-install-linked.log"
        pc="PKG_CONFIG_PATH=$prefix/lib/pkgconfig"
        ok=0
        env "$pc" bash -c "mpicc.$mpi -o $LOGS/$mpi-pattern examples/pattern.c \
            \$(pkg-config --cflags --libs dpushim-$mpi)" >"$log" 2>&1 &&
            run_job "$log.run" "$mpi" 2 0 \
                "DPUSHIM_MIN_BYTES=1 DPUSHIM_STATS=1" "$LOGS/$mpi-pattern" &&
            grep -q '^ok: 0 wrong values' "$log.run" &&
            grep -Eq '^dpushim: group_init offloaded=20 fallback=0' \
                "$log.run" && ok=1
        cat "$log.run" >>"$log" 2>/dev/null
        report "$mpi installed: examples/pattern.c linked with pkg-config dpushim-$mpi offloads its group, no LD_PRELOAD" "$ok" "$log"
        log="$LOGS/$mpi-install-header.log"
        ok=0
        env "$pc" bash -c "mpicc.$mpi -o $LOGS/$mpi-pattern-h examples/pattern.c \
            \$(pkg-config --cflags dpushim-$mpi)" >"$log" 2>&1 &&
            run_job "$log.run" "$mpi" 2 0 "" "$LOGS/$mpi-pattern-h" &&
            grep -q '^no offload (offload is not available' "$log.run" &&
            grep -q '^ok: 0 wrong values' "$log.run" && ok=1
        cat "$log.run" >>"$log" 2>/dev/null
        report "$mpi installed: the header alone, without the library, falls back to MPI" "$ok" "$log"
    done
}

no_agents_left() {
    local log="$LOGS/agents-left.log" left
    left=$(dps_agents_left)
    echo "this run's dpu_agent processes: ${left:-none}" >"$log"
    dps_pids_describe $left >>"$log"
    report "no dpu_agent process left after the suite" \
        "$([ -z "$left" ] && echo 1 || echo 0)" "$log"
    [ -z "$left" ] || kill -9 $left  # this suite failed anyway
}

# No script sources another that sources it back, directly or not: the
# graph of the `source` lines of scripts/ (paths as written, relative to
# the tree or to the sourcing file's folder) has no loop (tsort).
source_loop_check() {
    local log=$LOGS/source-graph.log ok=1 f t dir line
    local here='$(dirname ${BASH_SOURCE[0]})'
    for f in scripts/*.sh scripts/*/*.sh; do
        dir=$(dirname "$f")
        grep -E '^[[:space:]]*([A-Z_]+=[^ ]* )*source ' "$f" |
            while read -r line; do
                t=${line#*source }
                t=${t//\"/}
                t=${t//"$here"/$dir}
                t=${t%% *}
                case $t in
                *.sh) ;;
                *) continue ;;  # not a shell file (a Tcl line in a here-document)
                esac
                case $t in
                *'$'*) echo "$f -> $t: not a path" ;;
                *) echo "$f $t" ;;
                esac
            done
    done >"$log"
    grep -q 'not a path' "$log" && ok=0
    grep -v 'not a path' "$log" | tsort >/dev/null 2>>"$log" || ok=0
    report "scripts: no script sources one that sources it back (tsort of the source lines)" \
        "$ok" "$log"
}
