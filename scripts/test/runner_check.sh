#!/usr/bin/env bash
# make check's cases for the runner (scripts/dpushim, issue 25) and what
# make install adds with it, sourced by scripts/test/case.sh: the rn_*_tests
# functions (cases runner/... of tests/cases.py) use its report, run_job,
# stats_match and $LOGS. About 30 s. Run alone
# (scripts/test/runner_check.sh [MPI...]), it is bin/dps-test -k runner/.
#
# Which MPI the runner tells for C and Fortran programs of both MPIs and
# for mpi4py, its errors (exit status 2, naming both sides) for a program
# of no MPI, a static one, a missing one, a script, a mismatch with
# --mpi, --lib or an installed library; its options as variables and
# --config's sources; real jobs through mpirun and mpiexec, also from an
# installed tree (PATH, man pages, modulefile); the man pages render
# without a warning and dpushim(7) lists the variables' table.

# rn_expect_fail LOG WORD... : the runner's last command (its output in
# LOG, its exit status in $rn_rc) failed with status 2, saying every WORD.
rn_expect_fail() {
    local log=$1 w
    shift
    [ "$rn_rc" = 2 ] || { echo "exit status $rn_rc, not 2" >>"$log"; return 1; }
    for w in "$@"; do
        grep -qF -- "$w" "$log" || {
            echo "the message does not say '$w'" >>"$log"
            return 1
        }
    done
}

# rn_run LOG ARGS...: the build tree's runner, output to LOG (appended,
# after the command line), exit status in rn_rc.
rn_run() {
    local log=$1
    shift
    echo "\$ scripts/dpushim $*" >>"$log"
    scripts/dpushim "$@" >>"$log" 2>&1
    rn_rc=$?
    echo "(exit status $rn_rc)" >>"$log"
}

# rn_preloads LOG LIB: the dry run in LOG preloads LIB first.
rn_preloads() {
    grep -Eq "^LD_PRELOAD=$1(:|$)" "$2" || {
        echo "not preloaded first: $1" >>"$2"
        return 1
    }
}

# Which MPI, for the C test programs and every Fortran one of each MPI.
rn_detect_tests() {
    local mpi=$1 log ok f n
    local lib="$PWD/build/$mpi/libdpushim.so"
    log="$LOGS/$mpi-runner-detect-c.log"
    : >"$log"
    ok=1
    rn_run "$log" --dry-run "build/$mpi/tests/t_colls" -x
    [ "$rn_rc" = 0 ] && rn_preloads "$lib" "$log" || ok=0
    report "$mpi runner: a C program (t_colls) gets build/$mpi/libdpushim.so" \
        "$ok" "$log"
    log="$LOGS/$mpi-runner-detect-fortran.log"
    : >"$log"
    ok=1
    n=0
    for f in build/"$mpi"/ftests/*; do
        [ -f "$f" ] && [ -x "$f" ] || continue
        n=$((n + 1))
        rn_run "$log" --dry-run "$f"
        [ "$rn_rc" = 0 ] && rn_preloads "$lib" "$log" || ok=0
    done
    [ "$n" -ge 3 ] || { echo "only $n Fortran programs found" >>"$log"; ok=0; }
    report "$mpi runner: every Fortran program (mpif.h, use mpi, use mpi_f08; $n) gets build/$mpi/libdpushim.so" \
        "$ok" "$log"
}

# mpi4py (Debian builds it for Open MPI: tested when Open MPI is): the
# interpreter, a #! script; a Python without mpi4py is an error.
rn_python_tests() {
    local log="$LOGS/runner-mpi4py.log" ok=1 dir="$LOGS/runner-py"
    : >"$log"
    rm -rf "$dir"
    mkdir -p "$dir/fake"
    if [[ " $* " != *" openmpi "* ]]; then
        :
    elif ! /usr/bin/python3 -c 'import mpi4py' 2>/dev/null; then
        echo "python3-mpi4py not installed (scripts/deps.sh installs it)" >>"$log"
        report "runner: mpi4py programs get Open MPI's library" 0 "$log"
    else
        rn_run "$log" --dry-run /usr/bin/python3 tests/thirdparty/mpi4py_nbc.py
        [ "$rn_rc" = 0 ] && rn_preloads "$PWD/build/openmpi/libdpushim.so" \
            "$log" && grep -q 'mpi4py' "$log" || ok=0
        printf '#!/usr/bin/env python3\nfrom mpi4py import MPI\n' \
            >"$dir/app.py"
        chmod +x "$dir/app.py"
        PATH="/usr/bin:$PATH" rn_run "$log" --dry-run "$dir/app.py"
        [ "$rn_rc" = 0 ] && rn_preloads "$PWD/build/openmpi/libdpushim.so" \
            "$log" || ok=0
        report "runner: mpi4py programs (python3 app.py, a #!/usr/bin/env python3 script) get Open MPI's library" \
            "$ok" "$log"
    fi
    # An interpreter that cannot import mpi4py.
    log="$LOGS/runner-python-nompi4py.log"
    : >"$log"
    printf '#!/bin/sh\nexit 1\n' >"$dir/fake/python3"
    chmod +x "$dir/fake/python3"
    rn_run "$log" "$dir/fake/python3" app.py
    ok=0
    rn_expect_fail "$log" "cannot import mpi4py" "--mpi" && ok=1
    report "runner: a Python that cannot import mpi4py is an error (status 2)" \
        "$ok" "$log"
}

# Programs whose MPI cannot be told, or that cannot be preloaded.
rn_error_tests() {
    local log ok dir="$LOGS/runner-err" mpi=$1
    rm -rf "$dir"
    mkdir -p "$dir"
    log="$LOGS/runner-nompi.log"
    : >"$log"
    ok=0
    rn_run "$log" /bin/true
    rn_expect_fail "$log" "/bin/true links no MPI library" \
        "libmpi.so.40" "libmpich.so.12" && ok=1
    report "runner: a program of no MPI (/bin/true) is an error naming both MPIs' libraries (status 2)" \
        "$ok" "$log"
    log="$LOGS/runner-static.log"
    : >"$log"
    ok=0
    printf 'int main(void) { return 0; }\n' >"$dir/static.c"
    if gcc -static -o "$dir/static" "$dir/static.c" >>"$log" 2>&1; then
        rn_run "$log" "$dir/static"
        rn_expect_fail "$log" "statically linked" && ok=1
    fi
    # Debian's ldconfig is a static PIE.
    if [ -x /sbin/ldconfig ] && LC_ALL=C ldd /sbin/ldconfig 2>&1 |
            grep -q 'statically linked'; then
        rn_run "$log" --mpi "$mpi" /sbin/ldconfig
        rn_expect_fail "$log" "statically linked" || ok=0
    fi
    report "runner: a static program is an error, also with --mpi (status 2)" \
        "$ok" "$log"
    log="$LOGS/runner-missing.log"
    : >"$log"
    ok=1
    rn_run "$log" "$dir/nonexistent"
    rn_expect_fail "$log" "$dir/nonexistent does not exist" || ok=0
    rn_run "$log" no-such-program-here
    rn_expect_fail "$log" "no program 'no-such-program-here'" || ok=0
    rn_run "$log" "$dir"
    rn_expect_fail "$log" "is not a file" || ok=0
    if [ "$(id -u)" != 0 ]; then
        cp /bin/true "$dir/unreadable"
        chmod 0111 "$dir/unreadable"
        rn_run "$log" "$dir/unreadable"
        rn_expect_fail "$log" "cannot be read" || ok=0
    else
        echo "(root reads any file: no unreadable case)" >>"$log"
    fi
    report "runner: a missing, non-file or unreadable program is an error (status 2)" \
        "$ok" "$log"
    # A shell script: its MPI is told with --mpi.
    log="$LOGS/runner-script.log"
    : >"$log"
    ok=1
    printf '#!/bin/sh\nexec "$@"\n' >"$dir/wrap.sh"
    chmod +x "$dir/wrap.sh"
    rn_run "$log" "$dir/wrap.sh" "build/$mpi/tests/t_colls"
    rn_expect_fail "$log" "script for /bin/sh" "give --mpi" || ok=0
    rn_run "$log" --dry-run --mpi "$mpi" "$dir/wrap.sh"
    [ "$rn_rc" = 0 ] && rn_preloads "$PWD/build/$mpi/libdpushim.so" "$log" ||
        ok=0
    report "runner: a shell script is an error without --mpi, preloaded with it" \
        "$ok" "$log"
}

# Mismatches: --mpi, --lib (where both MPIs are tested), a library
# installed under the wrong MPI's name.
rn_mismatch_tests() {
    local log="$LOGS/runner-mismatch.log" ok=1 a b prefix what
    : >"$log"
    for a in "$@"; do
        b=$([ "$a" = openmpi ] && echo mpich || echo openmpi)
        rn_run "$log" --mpi "$b" "build/$a/tests/t_colls"
        rn_expect_fail "$log" "--mpi $b" \
            "links $([ "$a" = openmpi ] && echo "Open MPI (libmpi.so.40)" ||
                     echo "MPICH (libmpich.so.12)")" || ok=0
        [[ " $* " == *" $b "* ]] || continue
        rn_run "$log" --lib "build/$b/libdpushim.so" "build/$a/ftests/f_colls_f08"
        rn_expect_fail "$log" "build/$b/libdpushim.so is built for" \
            "$([ "$b" = openmpi ] && echo "Open MPI (libmpi.so.40)" ||
               echo "MPICH (libmpich.so.12)")" || ok=0
    done
    what="--mpi"
    [ $# -ge 2 ] && what="--mpi or --lib"
    report "runner: $what for the other MPI than the program links is an error naming both (status 2)" \
        "$ok" "$log"
    # A library for the other MPI where the installed one should be.
    [ $# -ge 2 ] || return 0
    log="$LOGS/runner-mismatch-installed.log"
    : >"$log"
    ok=0
    prefix="$PWD/$LOGS/runner-bad-prefix"
    rm -rf "$prefix"
    scripts/install.sh "$prefix" "$1" "$2" >>"$log" 2>&1 &&
        cp "$prefix/lib/dpushim/$2/libdpushim.so" \
           "$prefix/lib/dpushim/$1/libdpushim.so" && {
        echo "\$ $prefix/bin/dpushim build/$1/tests/t_colls" >>"$log"
        "$prefix/bin/dpushim" "build/$1/tests/t_colls" >>"$log" 2>&1
        rn_rc=$?
        rn_expect_fail "$log" "lib/dpushim/$1/libdpushim.so is built for" \
            "uses $([ "$1" = openmpi ] && echo "Open MPI" || echo "MPICH")"
    } && ok=1
    rm -rf "$prefix"
    report "runner: an installed libdpushim.so built for the other MPI is an error naming both (status 2)" \
        "$ok" "$log"
}

# Options as variables; --config's values and sources.
rn_option_tests() {
    local mpi=$1 log="$LOGS/runner-options.log" ok=1 n want
    : >"$log"
    rn_run "$log" --dry-run --stats=2 --only ialltoall,MPI_Ibcast \
        --min-bytes 64k --require --agent-map README.md \
        "build/$mpi/tests/t_colls"
    [ "$rn_rc" = 0 ] || ok=0
    for want in DPUSHIM_STATS=2 DPUSHIM_IALLTOALL=1 DPUSHIM_IBCAST=1 \
                DPUSHIM_IBARRIER=0 DPUSHIM_ALLTOALL_INIT=0 DPUSHIM_GROUP=0 \
                DPUSHIM_MIN_BYTES=64k DPUSHIM_REQUIRE=1 \
                "DPUSHIM_AGENT_MAP=$PWD/README.md"; do
        grep -qxF "$want" "$log" || { echo "no line $want" >>"$log"; ok=0; }
    done
    rn_run "$log" --dry-run --except ialltoall,alltoall_init \
        "build/$mpi/tests/t_colls"
    grep -qxF DPUSHIM_ALLTOALL_INIT=0 "$log" || ok=0
    rn_run "$log" --dry-run --only ialltoall --mpi "$mpi" /bin/true
    [ "$rn_rc" = 0 ] || ok=0
    rn_run "$log" --only ialltoal "build/$mpi/tests/t_colls"
    rn_expect_fail "$log" "unknown collective 'ialltoal'" || ok=0
    rn_run "$log" --stats=3 "build/$mpi/tests/t_colls"
    rn_expect_fail "$log" "--stats=3" || ok=0
    # Kept: an LD_PRELOAD already set, after ours.
    LD_PRELOAD=libm.so.6 rn_run "$log" --dry-run "build/$mpi/tests/t_colls"
    grep -qxF "LD_PRELOAD=$PWD/build/$mpi/libdpushim.so:libm.so.6" "$log" ||
        ok=0
    report "$mpi runner: options set their variables (--stats, --only, --except, --min-bytes, --require, --agent-map), a wrong one is an error, LD_PRELOAD kept" \
        "$ok" "$log"
    log="$LOGS/runner-config.log"
    : >"$log"
    ok=1
    DPUSHIM_MIN_BYTES=1 DPUSHIM_NO_SUCH=1 DPUSHIM_STATS=1 \
        rn_run "$log" --config --stats=2 "build/$mpi/tests/t_colls"
    [ "$rn_rc" = 0 ] || ok=0
    grep -Eq '^DPUSHIM_OFFLOAD=1 +# default$' "$log" || ok=0
    grep -Eq '^DPUSHIM_MIN_BYTES=1 +# environment$' "$log" || ok=0
    grep -Eq '^DPUSHIM_STATS=2 +# option --stats=2$' "$log" || ok=0
    grep -Eq '^DPUSHIM_NO_SUCH=1 +# environment: unknown' "$log" || ok=0
    grep -q "^# LD_PRELOAD=$PWD/build/$mpi/libdpushim.so" "$log" || ok=0
    # Every variable of the table, once.
    n=$("build/$mpi/dpu_agent" --config-markdown | grep -c '^| `DPUSHIM_')
    [ "$(grep -Ec '^DPUSHIM_[A-Z_]+=.*# (default|environment|option .*)$' \
         "$log")" = "$n" ] || { echo "not $n variables" >>"$log"; ok=0; }
    report "$mpi runner --config: all $n variables, each value's source (default, environment, option), unknown names" \
        "$ok" "$log"
    log="$LOGS/runner-cli.log"
    : >"$log"
    ok=1
    rn_run "$log" --help
    [ "$rn_rc" = 0 ] && grep -q '^usage: ' "$log" || ok=0
    rn_run "$log" --version
    [ "$rn_rc" = 0 ] && grep -Eq '^dpushim [0-9]+\.[0-9]+ \(build tree' "$log" ||
        ok=0
    rn_run "$log" --probe
    grep -q '^BlueField DPU: ' "$log" || ok=0
    report "runner --help, --version, --probe (dpu_agent's)" "$ok" "$log"
}

# rn_job LOG MPI NP TITLE RUNNER ARGS...: a real job through the launcher
# (dps_launch's flags, no preload of its own); the program checks its
# result, and its statistics lines must show offloaded calls.
rn_job() {
    local log=$1 mpi=$2 np=$3 title=$4 ok=0
    shift 4
    run_job "$log" "$mpi" "$np" 0 "" "$@" && grep -q '^result: ok' "$log" &&
        grep -Eq '^dpushim: [a-z_0-9]+ offloaded=[1-9]' "$log" && ok=1
    if [ "$ok" = 1 ] && grep -q '^expect' "$log"; then
        stats_match "$log" || ok=0
    fi
    report "$title" "$ok" "$log"
}

# Real jobs from the build tree.
rn_job_tests() {
    local mpi=$1 launcher log ok
    launcher=$([ "$mpi" = openmpi ] && echo "mpirun -np 2" ||
               echo "mpiexec.mpich -n 2")
    rn_job "$LOGS/$mpi-runner-job-t_colls.log" "$mpi" 2 \
        "$mpi: $launcher scripts/dpushim --stats --min-bytes 1 t_colls: results and statistics lines exact" \
        "$PWD/scripts/dpushim" --stats --min-bytes 1 "build/$mpi/tests/t_colls"
    rn_job "$LOGS/$mpi-runner-job-f_colls_f08.log" "$mpi" 2 \
        "$mpi: $launcher scripts/dpushim --stats --min-bytes 1 f_colls_f08 (Fortran): offloaded, results ok" \
        "$PWD/scripts/dpushim" --stats --min-bytes 1 "build/$mpi/ftests/f_colls_f08"
    if [ "$mpi" = openmpi ] && /usr/bin/python3 -c 'import mpi4py, numpy' \
            2>/dev/null; then
        log="$LOGS/openmpi-runner-job-mpi4py.log"
        ok=0
        run_job "$log" openmpi 2 0 "" "$PWD/scripts/dpushim" --stats \
            --min-bytes 256k /usr/bin/python3 tests/thirdparty/mpi4py_nbc.py &&
            grep -q '^mpi4py result: ok' "$log" &&
            grep -Eq '^dpushim: ialltoall offloaded=[1-9]' "$log" && ok=1
        report "openmpi: mpirun -np 2 scripts/dpushim --stats python3 mpi4py_nbc.py: offloaded, same results as stock" \
            "$ok" "$log"
    fi
}

# The manual's pages: groff -ww prints nothing; dpushim(7) is the table.
rn_man_tests() {
    local log="$LOGS/runner-man.log" ok=1 p out
    : >"$log"
    if ! command -v groff >/dev/null; then
        echo "groff not installed (scripts/deps.sh installs it)" >>"$log"
        ok=0
    fi
    for p in man/dpushim.1 man/dpushim.7 man/dpushim.h.3 man/dpu_agent.8; do
        [ -f "$p" ] || { echo "$p missing" >>"$log"; ok=0; continue; }
        [ "$ok" = 1 ] || continue
        out=$(LC_ALL=C.UTF-8 groff -ww -man -Tutf8 "$p" 2>&1 >/dev/null)
        if [ -n "$out" ]; then
            echo "$p: $out" >>"$log"
            ok=0
        fi
    done
    report "man pages dpushim(1), dpushim(7), dpushim.h(3), dpu_agent(8) render without a warning (groff -ww)" \
        "$ok" "$log"
    log="$LOGS/runner-man-table.log"
    ok=1
    scripts/dev/readme_table.sh --check >"$log" 2>&1
    if grep -q '^man/dpushim.7' "$log" || ! grep -q '^\.TP$' man/dpushim.7
    then
        ok=0
    fi
    report "man/dpushim.7 lists every variable as common/dps_config.c's table (scripts/dev/readme_table.sh)" \
        "$ok" "$log"
}

# rn_path_job DIR MPI: a job through the runner in DIR, called by name
# through PATH, as the modulefile sets it.
rn_path_job() {
    local PATH="$1:$PATH" mpi=$2
    rn_job "$LOGS/$mpi-runner-installed-job.log" "$mpi" 2 \
        "$mpi: the installed dpushim on PATH: $([ "$mpi" = openmpi ] &&
            echo "mpirun -np 2" || echo "mpiexec.mpich -n 2") dpushim --stats t_colls, statistics lines exact" \
        dpushim --stats --min-bytes 1 "build/$mpi/tests/t_colls"
}

# make install: the runner on PATH, its man pages, the modulefile; a real
# job for each MPI through the installed runner, called by name.
rn_install_tests() {
    local prefix="$PWD/$LOGS/runner-prefix" log ok mpi v
    log="$LOGS/runner-install.log"
    rm -rf "$prefix"
    ok=0
    v=$(sed -n 's/^#define DPUSHIM_VERSION_MAJOR \([0-9]*\)/\1/p' \
        include/dpushim.h).$(sed -n \
        's/^#define DPUSHIM_VERSION_MINOR \([0-9]*\)/\1/p' include/dpushim.h)
    scripts/install.sh "$prefix" "$@" >"$log" 2>&1 &&
        [ -x "$prefix/bin/dpushim" ] &&
        [ -f "$prefix/share/man/man1/dpushim.1" ] &&
        [ -f "$prefix/share/man/man3/dpushim.h.3" ] &&
        [ -f "$prefix/share/man/man7/dpushim.7" ] &&
        [ -f "$prefix/share/man/man8/dpu_agent.8" ] &&
        [ -f "$prefix/share/modulefiles/dpushim/$v" ] &&
        "$prefix/bin/dpushim" --version >>"$log" 2>&1 &&
        grep -qx "dpushim $v (installed in $prefix)" "$log" &&
        MANPATH="$prefix/share/man:" man -w dpushim.h dpu_agent >>"$log" 2>&1 &&
        ok=1
    # The modulefile, evaluated by Tcl with the commands it uses stubbed.
    if [ "$ok" = 1 ]; then
        env -u MANPATH tclsh <(cat <<'TCL'
proc prepend-path {var val} {
    global env
    if {[info exists env($var)] && $env($var) ne ""} {
        set env($var) "$val:$env($var)"
    } else {
        set env($var) $val
    }
    puts "$var=$env($var)"
}
proc setenv {var val} { global env; set env($var) $val }
proc module-whatis {s} {}
proc conflict {m} {}
source [lindex $argv 0]
TCL
) "$prefix/share/modulefiles/dpushim/$v" >>"$log" 2>&1 &&
            grep -qx "PATH=$prefix/bin:.*" "$log" &&
            grep -qx "MANPATH=$prefix/share/man::" "$log" &&
            grep -qx "PKG_CONFIG_PATH=$prefix/lib/pkgconfig" "$log" || ok=0
    fi
    report "make install PREFIX=...: bin/dpushim, man pages (man -w finds them), modulefile dpushim/$v prepending PATH, MANPATH, PKG_CONFIG_PATH" \
        "$ok" "$log"
    for mpi in "$@"; do
        log="$LOGS/$mpi-runner-installed.log"
        ok=0
        echo "\$ $prefix/bin/dpushim --dry-run build/$mpi/tests/t_colls" >"$log"
        "$prefix/bin/dpushim" --dry-run "build/$mpi/tests/t_colls" >>"$log" 2>&1 &&
            rn_preloads "$prefix/lib/dpushim/$mpi/libdpushim.so" "$log" &&
            ok=1
        report "$mpi installed runner preloads PREFIX/lib/dpushim/$mpi/libdpushim.so" \
            "$ok" "$log"
        rn_path_job "$prefix/bin" "$mpi"
    done
    rm -rf "$prefix"
}

# Run alone: bin/dps-test, these cases only.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    exec "$(dirname "$0")/../../bin/dps-test" -k runner/ "$@"
fi
