# shellcheck shell=bash
# make check's cases for examples/fft3d.c (the pipelined 3-D FFT), sourced
# by scripts/test/case.sh: fft_case and fft_bad_case (cases MPI/fft/... of
# tests/cases.py) use its report, run_job and $LOGS.
# Small sizes, a few steps: about 15 s per MPI on two cores.

# fft_case MPI NP SHIM ARGS...: one run of fft3d; its result line must be
# "fft3d: ok" (forward against a serial FFTW 3-D transform, backward
# against the input, and the input again after the timed steps). Under
# the shim the transposes must be offloaded (ialltoall, or alltoall_init
# with -p), and the result line must equal the same arguments' stock
# run's: the shim moves the same bytes, so the errors are the same
# numbers, not merely within the tolerance. FFT_INPLACE=yes: the DMA
# engines' statistics must show data read and written in place (the
# datatypes' runs are 256 B and more).
fft_case() {
    local mpi=$1 np=$2 shim=$3 log stock stat=ialltoall ok=0 res tag
    shift 3
    tag="$*"
    tag=${tag//[^a-z0-9-]/}
    log="$LOGS/$mpi-fft3d-np$np-shim$shim$tag.log"
    stock="$LOGS/$mpi-fft3d-np$np-shim0$tag.log"
    [[ " $* " == *" -p "* ]] && stat=alltoall_init
    run_job "$log" "$mpi" "$np" "$shim" \
        "DPUSHIM_MIN_BYTES=1 DPUSHIM_STATS=1 DPUSHIM_RANKS_PER_DPU=2" \
        "build/$mpi/examples/fft3d" "$@" &&
        grep -q '^fft3d: ok ' "$log" && ok=1
    if [ "$shim" = 1 ]; then
        if ! grep -Eq "^dpushim: $stat offloaded=[1-9]" "$log"; then
            echo "no $stat calls offloaded" >>"$log"
            ok=0
        fi
        if [ "${FFT_INPLACE:-}" = yes ] && ! grep -Eq \
            '^dpushim: dma engines .* scattered=[1-9][0-9]* gathered=[1-9]' \
            "$log"; then
            echo "no data read and written in place" >>"$log"
            ok=0
        fi
        res=$(grep '^fft3d: ok ' "$log")
        if [ -f "$stock" ] && [ "$res" != "$(grep '^fft3d: ok ' "$stock")" ]
        then
            echo "result differs from stock MPI's ($stock)" >>"$log"
            ok=0
        fi
    fi
    report "$mpi fft3d $* ($np ranks, $([ "$shim" = 1 ] && echo "shim" ||
        echo "stock MPI")): checked against serial FFTW and the input" \
        "$ok" "$log"
}

# fft_bad_case MPI: a grid that does not divide N is refused by name
# (exit status 2, a message naming -n), before any transform.
fft_bad_case() {
    local mpi=$1 log="$LOGS/$1-fft3d-bad-grid.log" rc ok=0
    run_job "$log" "$mpi" 2 0 "" "build/$mpi/examples/fft3d" -n 15 -g 1x2
    rc=$?
    [ "$rc" != 0 ] && grep -q 'N=15 (-n) is not divisible by the grid' \
        "$log" && ok=1
    report "$mpi fft3d -n 15 -g 1x2 refused: N not divisible by the grid" \
        "$ok" "$log"
}
