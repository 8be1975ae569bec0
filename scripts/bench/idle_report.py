#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Medians of scripts/bench/bench_idle.sh runs: a table per MPI and collective
and results/idle.csv (stock, shim and MPICH's progress thread side by
side, the compute phase sleeping for 2 x stock's pure-comm time)."""
import glob
import os
import statistics
import sys


def parse(path):
    """size -> (pure, overall, compute, overlap, post[, rank_cpu,
    host_cpu]) of one run (the CPU columns with overlap -C)."""
    rows = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 6 and p[0].isdigit():
                rows[int(p[0])] = tuple(float(x) for x in p[1:8])
    return rows


def medians(files):
    runs = [parse(f) for f in files]
    out = {}
    for s in sorted(set().union(*runs)) if runs else []:
        vals = [r[s] for r in runs if s in r]
        out[s] = tuple(statistics.median(v[i] for v in vals)
                       for i in range(min(len(v) for v in vals)))
    return out, len(runs)


def main():
    raw, out, np_, colls = sys.argv[1:5]
    mpis = sys.argv[5:]
    csv = os.path.join(out, "idle.csv")
    with open(csv, "w") as c:
        c.write("mpi,collective,size,compute_us,stock_pure_us,"
                "stock_overall_us,shim_pure_us,shim_overall_us,"
                "shim_overlap_pct,shim_post_us,async_overall_us,"
                "shim_over_stock,shim_over_async\n")
        for mpi in mpis:
            for coll in colls.split():
                st, n = medians(glob.glob(f"{raw}/{mpi}-{coll}-stock-*.txt"))
                sh, _ = medians(glob.glob(f"{raw}/{mpi}-{coll}-shim-*.txt"))
                asy, na = medians(glob.glob(f"{raw}/{mpi}-{coll}-async-*.txt"))
                print(f"\n== idle host, {mpi} {coll}: {np_} ranks on CPUs "
                      f"{os.environ.get('DPS_RANK_CPUS') or 'unbound'}, "
                      f"compute phase sleeps C = 2 x stock pure; medians "
                      f"of {n} alternating runs, us")
                print(f"   shim: {os.environ.get('BENCH_SHIM_DESC', '')}"
                      + ("; async: MPICH, MPIR_CVAR_ASYNC_PROGRESS=1, "
                         "MPI_THREAD_MULTIPLE" if na else ""))
                head = (f"{'size':>8} {'C':>7} | {'stock pure':>10} "
                        f"{'overall':>8} | {'shim pure':>9} {'overall':>8} "
                        f"{'ovl%':>5} {'post':>5}")
                if na:
                    head += f" | {'async overall':>13}"
                head += f" | {'shim/stock':>10}"
                if na:
                    head += f" {'shim/async':>10}"
                print(head)
                for s in sorted(set(st) & set(sh)):
                    a, b = st[s], sh[s]
                    line = (f"{s:>8} {b[2]:>7.1f} | {a[0]:>10.1f} "
                            f"{a[1]:>8.1f} | {b[0]:>9.1f} {b[1]:>8.1f} "
                            f"{b[3]:>5.1f} {b[4]:>5.1f}")
                    x = asy.get(s)
                    if na:
                        line += f" | {x[1]:>13.1f}" if x else f" | {'-':>13}"
                    line += f" | {b[1] / a[1]:>10.2f}"
                    if na and x:
                        line += f" {b[1] / x[1]:>10.2f}"
                    print(line)
                    row = [mpi, coll, str(s)] + [
                        f"{v:.2f}" for v in (b[2], a[0], a[1], b[0], b[1])]
                    row += [f"{b[3]:.1f}", f"{b[4]:.2f}",
                            f"{x[1]:.2f}" if x else "",
                            f"{b[1] / a[1]:.3f}",
                            f"{b[1] / x[1]:.3f}" if x else ""]
                    c.write(",".join(row) + "\n")
    print(f"\nCSV: {csv}")


if __name__ == "__main__":
    main()
