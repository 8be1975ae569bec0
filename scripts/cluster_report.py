#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Medians of scripts/bench_cluster.sh runs: a table per link rate,
compute mode, MPI and collective, results/cluster/cluster.csv and a
gnuplot PNG for each of them (overall time per size for every column).

usage: cluster_report.py RAW OUT "RATES" "MODES" "COLLS" MPI..."""
import glob
import os
import subprocess
import sys

from idle_report import medians  # the same raw format

KINDS = ("stock", "shim", "dpu", "async")


MODE_SAYS = {"idle": "compute phase asleep", "busy": "compute phase spinning"}


def plot(out, name, title, cols, sizes):
    dat = os.path.join(out, f"{name}.dat")
    with open(dat, "w") as d:
        for s in sizes:
            d.write(f"{s} " + " ".join(
                f"{cols[k][s][1]:.2f}" if s in cols[k] else "NaN"
                for k in cols) + "\n")
    png = os.path.join(out, f"{name}.png")
    lines = ", ".join(f"'{dat}' using 1:{i + 2} with linespoints title '{k}'"
                      for i, k in enumerate(cols))
    script = f"""
set terminal png size 800,480
set output '{png}'
set title '{title}'
set logscale xy 2
set format x '2^{{%L}}'
set xlabel 'bytes per block'
set ylabel 'overall time per iteration (us)'
set key top left
plot {lines}
"""
    try:
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"warning: no plot {png}: {e}", file=sys.stderr)


def table(c, raw, out, rate, mode, mpi, coll):
    """One table (and plot, and CSV rows) from RAW/RATE/MPI-COLL-MODE-*."""
    cols, runs = {}, {}
    for k in KINDS:
        m, n = medians(glob.glob(f"{raw}/{rate}/{mpi}-{coll}-{mode}-{k}-*.txt"))
        if n:
            cols[k], runs[k] = m, n
    if "stock" not in cols:
        return
    st = cols["stock"]
    links = "links unlimited" if rate == "none" else f"links {rate}"
    print(f"\n== cluster, {links}, {MODE_SAYS.get(mode, mode)}: {mpi} "
          f"{coll}; {os.environ.get('BENCH_DESC', '')}; C = 2 x stock "
          f"pure; medians of {runs['stock']} alternating runs, us")
    head = f"{'size':>8} {'C':>8}"
    for k in cols:
        head += f" | {k + ' overall':>14} {'ovl%':>5}"
    for k in cols:
        if k != "stock":
            head += f" {k + '/stock':>11}"
    print(head)
    sizes = sorted(st)
    for s in sizes:
        line = f"{s:>8} {st[s][2]:>8.1f}"
        for k in cols:
            v = cols[k].get(s)
            line += (f" | {v[1]:>14.1f} {v[3]:>5.1f}" if v
                     else f" | {'-':>14} {'-':>5}")
        for k in cols:
            v = cols[k].get(s)
            if k != "stock":
                line += (f" {v[1] / st[s][1]:>11.2f}" if v else f" {'-':>11}")
            if v:
                c.write(",".join([
                    rate, mode, mpi, coll, str(s), f"{st[s][2]:.2f}", k,
                    f"{v[0]:.2f}", f"{v[1]:.2f}", f"{v[3]:.1f}",
                    f"{v[4]:.2f}", f"{v[1] / st[s][1]:.3f}",
                    str(runs[k])]) + "\n")
        print(line)
    plot(out, f"cluster-{mpi}-{coll}-{mode}-{rate}",
         f"{mpi} {coll} across emulated hosts, {links}, "
         f"{MODE_SAYS.get(mode, mode)}", cols, sizes)


def main():
    raw, out, rates, modes, colls = sys.argv[1:6]
    mpis = sys.argv[6:]
    csv = os.path.join(out, "cluster.csv")
    with open(csv, "w") as c:
        c.write("rate,mode,mpi,collective,size,compute_us,kind,pure_us,"
                "overall_us,overlap_pct,post_us,over_stock,runs\n")
        for rate in rates.split():
            for mode in modes.split():
                for mpi in mpis:
                    for coll in colls.split():
                        table(c, raw, out, rate, mode, mpi, coll)
    print(f"\nCSV: {csv}; plots: "
          f"{out}/cluster-<mpi>-<collective>-<mode>-<rate>.png")


if __name__ == "__main__":
    main()
