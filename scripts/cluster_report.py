#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Medians of scripts/bench_cluster.sh runs: a table per MPI and
collective, results/cluster/cluster.csv and a gnuplot PNG per MPI and
collective (overall time per size for every column)."""
import glob
import os
import subprocess
import sys

from idle_report import medians  # the same raw format

KINDS = ("stock", "shim", "dpu", "async")


def plot(out, mpi, coll, cols, sizes):
    dat = os.path.join(out, f"cluster-{mpi}-{coll}.dat")
    with open(dat, "w") as d:
        for s in sizes:
            d.write(f"{s} " + " ".join(
                f"{cols[k][s][1]:.2f}" if s in cols[k] else "NaN"
                for k in cols) + "\n")
    png = os.path.join(out, f"cluster-{mpi}-{coll}.png")
    lines = ", ".join(f"'{dat}' using 1:{i + 2} with linespoints title '{k}'"
                      for i, k in enumerate(cols))
    script = f"""
set terminal png size 800,480
set output '{png}'
set title '{mpi} {coll} across emulated hosts, compute phase asleep'
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
        print(f"warning: no plot for {mpi} {coll}: {e}", file=sys.stderr)


def main():
    raw, out, colls = sys.argv[1:4]
    mpis = sys.argv[4:]
    csv = os.path.join(out, "cluster.csv")
    with open(csv, "w") as c:
        c.write("mpi,collective,size,compute_us,kind,pure_us,overall_us,"
                "overlap_pct,post_us,over_stock,runs\n")
        for mpi in mpis:
            for coll in colls.split():
                cols, runs = {}, {}
                for k in KINDS:
                    m, n = medians(glob.glob(f"{raw}/{mpi}-{coll}-{k}-*.txt"))
                    if n:
                        cols[k], runs[k] = m, n
                if "stock" not in cols:
                    continue
                st = cols["stock"]
                print(f"\n== cluster, {mpi} {coll}: "
                      f"{os.environ.get('BENCH_DESC', '')}; compute phase "
                      f"sleeps C = 2 x stock pure; medians of "
                      f"{runs['stock']} alternating runs, us")
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
                        if k == "stock":
                            continue
                        v = cols[k].get(s)
                        line += (f" {v[1] / st[s][1]:>11.2f}" if v
                                 else f" {'-':>11}")
                        if v:
                            c.write(",".join([
                                mpi, coll, str(s), f"{st[s][2]:.2f}", k,
                                f"{v[0]:.2f}", f"{v[1]:.2f}", f"{v[3]:.1f}",
                                f"{v[4]:.2f}", f"{v[1] / st[s][1]:.3f}",
                                str(runs[k])]) + "\n")
                    print(line)
                    v = st[s]
                    c.write(",".join([mpi, coll, str(s), f"{v[2]:.2f}",
                                      "stock", f"{v[0]:.2f}", f"{v[1]:.2f}",
                                      f"{v[3]:.1f}", f"{v[4]:.2f}", "1.000",
                                      str(runs["stock"])]) + "\n")
                plot(out, mpi, coll, cols, sizes)
    print(f"\nCSV: {csv}; plots: {out}/cluster-<mpi>-<collective>.png")


if __name__ == "__main__":
    main()
