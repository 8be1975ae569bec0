# shellcheck shell=bash
# make check's cases for examples/fft3d.c (the pipelined 3-D FFT), sourced
# by scripts/test/check.sh: fft_tests MPI uses its report, run_job and $LOGS.
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

# fft_tests MPI: slab (1x2, 2 ranks) and pencil (2x2, 4 ranks with two
# agents), N = 16 and 24, K = 1 and 4, persistent and not, stock MPI
# first then the shim (compared with it), and gpu-like mode once. Then
# the transposes by derived datatype (-d): at N = 64 (slab) and 32
# (pencil) their runs are 256 B and more, which the DMA engines read and
# write in place (shim/data/types.c); at N = 24 T2's runs (64 B) and T1's
# on A (192 B) are packed in the call and unpacked at completion, beside
# T1's on B (2304 B), in place.
fft_tests() {
    local mpi=$1 shim
    for shim in 0 1; do
        fft_case "$mpi" 2 "$shim" -n 16 -g 1x2 -k 1 -s 3
        fft_case "$mpi" 2 "$shim" -n 16 -g 1x2 -k 4 -p -s 3
        fft_case "$mpi" 4 "$shim" -n 24 -g 2x2 -k 4 -s 3
        fft_case "$mpi" 4 "$shim" -n 24 -g 2x2 -k 1 -p -s 3
        FFT_INPLACE=yes fft_case "$mpi" 2 "$shim" -n 64 -g 1x2 -k 2 -d \
            -c serial -s 2
        FFT_INPLACE=yes fft_case "$mpi" 4 "$shim" -n 32 -g 2x2 -k 1 -d -p -s 2
        fft_case "$mpi" 4 "$shim" -n 24 -g 2x2 -k 3 -d -s 2
    done
    fft_case "$mpi" 2 0 -n 16 -g 1x2 -k 4 -m gpu-like -f 0.5 -s 3
    fft_case "$mpi" 2 1 -n 16 -g 1x2 -k 4 -m gpu-like -f 0.5 -s 3
    fft_case "$mpi" 2 0 -n 32 -g 1x2 -k 2 -d -m gpu-like -t 2 -s 3
    fft_case "$mpi" 2 1 -n 32 -g 1x2 -k 2 -d -m gpu-like -t 2 -s 3
    fft_bad_case "$mpi"
}
