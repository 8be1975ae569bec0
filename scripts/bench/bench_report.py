#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Medians of scripts/bench/bench.sh runs: tables, CSV and gnuplot PNGs."""
import glob
import os
import statistics
import subprocess
import sys


def parse(path):
    """size -> (pure, overall, compute, overlap, agent cpu us/collective)
    of one overlap run; the agent CPU comes from the statistics line that
    follows a size's row (shim runs have one job per size), else nan."""
    rows, last = {}, None
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 5 and p[0].isdigit():
                last = int(p[0])
                rows[last] = [float(x) for x in p[1:5]] + [float("nan")]
            elif line.startswith("dpushim: agents ") and last is not None:
                for kv in p[2:]:
                    if kv.startswith("cpu_us_per_collective="):
                        rows[last][4] = float(kv.split("=")[1])
    return {k: tuple(v) for k, v in rows.items()}


def medians(files):
    runs = [parse(f) for f in files]
    sizes = sorted(set().union(*runs)) if runs else []
    out = {}
    for s in sizes:
        vals = [r[s] for r in runs if s in r]
        out[s] = tuple(statistics.median(v[i] for v in vals)
                       for i in range(5))
    return out


COLLS = os.environ.get("BENCH_COLLS", "ialltoall ibcast").split()


def main():
    raw, out, mode, np_, tests = sys.argv[1:6]
    mpis = sys.argv[6:]
    csv = os.path.join(out, "bench.csv")
    with open(csv, "w") as c:
        c.write("mpi,collective,size,stock_pure_us,stock_overall_us,"
                "stock_overlap_pct,shim_pure_us,shim_overall_us,"
                "shim_overlap_pct,pure_ratio,overall_ratio,"
                "agent_cpu_us_per_collective\n")
        for mpi in mpis:
            for coll in COLLS:
                st = medians(glob.glob(f"{raw}/{mpi}-{coll}-stock-*.txt"))
                sh = medians(glob.glob(f"{raw}/{mpi}-{coll}-shim-*.txt"))
                print(f"\n== {mpi} {coll}: {np_} ranks, compute mode {mode},"
                      f" MPI_Test calls {tests}; medians, times in us")
                print(f"   ranks on CPUs {os.environ.get('DPS_RANK_CPUS') or 'unbound'};"
                      f" shim variables: {os.environ.get('BENCH_SHIM_DESC', '')}")
                print(f"{'size':>9} | {'stock pure':>10} {'overall':>9} "
                      f"{'ovl%':>5} | {'shim pure':>10} {'overall':>9} "
                      f"{'ovl%':>5} | {'pure x':>6} {'overall x':>9} | "
                      f"{'agent cpu':>9}")
                dat = os.path.join(out, f"bench-{mpi}-{coll}.dat")
                with open(dat, "w") as d:
                    for s in sorted(set(st) & set(sh)):
                        a, b = st[s], sh[s]
                        rp, ro = b[0] / a[0], b[1] / a[1]
                        print(f"{s:>9} | {a[0]:>10.1f} {a[1]:>9.1f} "
                              f"{a[3]:>5.1f} | {b[0]:>10.1f} {b[1]:>9.1f} "
                              f"{b[3]:>5.1f} | {rp:>6.2f} {ro:>9.2f} | "
                              f"{b[4]:>9.1f}")
                        c.write(f"{mpi},{coll},{s},{a[0]:.2f},{a[1]:.2f},"
                                f"{a[3]:.1f},{b[0]:.2f},{b[1]:.2f},"
                                f"{b[3]:.1f},{rp:.3f},{ro:.3f},"
                                f"{b[4]:.1f}\n")
                        d.write(f"{s} {a[1]} {a[3]} {b[1]} {b[3]}\n")
                plot(out, mpi, coll, dat, mode)
    model(out, mpis, np_)
    print(f"\nCSV: {csv}; plots: {out}/bench-<mpi>-<collective>.png")


def model(out, mpis, np_):
    """The shim's pure-comm time at the largest size beside the time of
    the bare copies of the same bytes (copylimit): once (the direct data
    path's work) and twice (the staged path's)."""
    print(f"\n== copy limit at the largest size ({np_} ranks, one agent)")
    for coll in COLLS:
        try:
            with open(os.path.join(out, f"copylimit-{coll}.txt")) as f:
                kv = dict(x.split("=") for x in f.read().split()[1:])
        except (OSError, ValueError):
            continue
        agent, single = float(kv["agent_path_us"]), float(kv["single_copy_us"])
        mib = int(kv["bytes"]) / 2**20
        for mpi in mpis:
            rows = {}
            with open(os.path.join(out, "bench.csv")) as f:
                for line in f:
                    p = line.strip().split(",")
                    if p[0] == mpi and p[1] == coll:
                        rows[int(p[2])] = p
            if not rows:
                continue
            s = max(rows)
            pure, stock = float(rows[s][6]), float(rows[s][3])
            print(f"{mpi} {coll} {s} B: {mib:.0f} MiB to move; shim pure "
                  f"comm {pure:.0f} us, stock {stock:.0f} us; one copy of "
                  f"the bytes on one core {single:.0f} us (the direct "
                  f"path's work, split over the ranks' engines), two "
                  f"copies (the staged path's) {agent:.0f} us")


def plot(out, mpi, coll, dat, mode):
    png = os.path.join(out, f"bench-{mpi}-{coll}.png")
    script = f"""
set terminal png size 1000,420
set output '{png}'
set multiplot layout 1,2 title '{mpi} {coll} (OSU method, compute: {mode})'
set logscale x 2
set format x '2^{{%L}}'
set xlabel 'message size (bytes, log2)'
set ylabel 'overlap (%)'
set yrange [0:105]
set key top left
plot '{dat}' using 1:3 with linespoints title 'stock', \\
     '{dat}' using 1:5 with linespoints title 'dpushim'
set logscale y
set yrange [*:*]
set ylabel 'overall time (us)'
plot '{dat}' using 1:2 with linespoints title 'stock', \\
     '{dat}' using 1:4 with linespoints title 'dpushim'
unset multiplot
"""
    try:
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"warning: no plot for {mpi} {coll}: {e}", file=sys.stderr)


if __name__ == "__main__":
    main()
