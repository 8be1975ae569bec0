#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Medians of scripts/bench/bench_cluster.sh runs: a table per link rate,
compute mode, MPI and collective, results/cluster/cluster.csv and a
gnuplot PNG for each of them (overall time per size for every column).

The DPUs' agents against the hosts' (dpu against shim, pure time, each
size): a ratio above BENCH_DPU_FLAG (default 3) is flagged at the end
and the exit status is 3. The DPU path has more hops than the hosts'
agents (DMA into the DPU, the network, DMA out) but no more waiting:
above that factor the emulation, not the design, is the likelier cause
(a polling agent holding the ranks' cores put a 5 ms floor under every
DPU-path collective once, 19 x the host agents' time at 64 KiB).

usage: cluster_report.py RAW OUT "RATES" "MODES" "COLLS" MPI..."""
import glob
import os
import re
import statistics
import subprocess
import sys

from idle_report import medians  # the same raw format

KINDS = ("stock", "shim", "dpu", "dpufetch", "dpuucx", "async")


FLAG = float(os.environ.get("BENCH_DPU_FLAG") or 3)
flags = []

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


def agent_stat(files, field):
    """Median over runs of a field of the agents' statistics line (every
    agent, the whole job), or None."""
    vals = []
    for f in files:
        with open(f) as fh:
            m = re.search(r"^dpushim: agents cpu_ms=.* " + field +
                          r"=(\S+)", fh.read(), re.M)
        if m:
            vals.append(float(m.group(1)))
    return statistics.median(vals) if vals else None


def agent_cpu(files):
    """The agents' CPU per collective, us (agent_stat)."""
    return agent_stat(files, "cpu_us_per_collective")


def cpu_table(cols, agents, mode):
    """Host CPU per collective (overlap -C: every process of each emulated
    host, per iteration and host), each column beside stock's."""
    if not all(len(v) >= 7 for k in cols for v in cols[k].values()):
        return
    st = cols["stock"]
    print(f"   host CPU per collective, us (ranks and all their threads, "
          f"the launcher's daemon, host agents){'' if mode == 'idle' else ', compute included'}:")
    head = f"{'size':>8}"
    for k in cols:
        head += f" | {k + ' cpu':>10}"
    for k in cols:
        if k != "stock":
            head += f" {k + '/stock':>11}"
    print(head)
    for s in sorted(st):
        line = f"{s:>8}"
        for k in cols:
            v = cols[k].get(s)
            line += f" | {v[6]:>10.1f}" if v else f" | {'-':>10}"
        for k in cols:
            v = cols[k].get(s)
            if k != "stock":
                line += (f" {v[6] / st[s][6]:>11.2f}" if v and st[s][6] > 0
                         else f" {'-':>11}")
        print(line)
    for k, a in agents.items():
        if a is not None:
            print(f"   {k}: agents' CPU per collective, whole job, every "
                  f"size: {a:.1f} us")


def table(c, raw, out, rate, mode, mpi, coll):
    """One table (and plot, and CSV rows) from RAW/RATE/MPI-COLL-MODE-*."""
    cols, runs, agents, msgs = {}, {}, {}, {}
    for k in KINDS:
        files = glob.glob(f"{raw}/{rate}/{mpi}-{coll}-{mode}-{k}-*.txt")
        m, n = medians(files)
        if n:
            cols[k], runs[k] = m, n
            agents[k] = agent_cpu(files)
            msgs[k] = agent_stat(files, "agent_msgs_per_collective")
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
                    str(runs[k]),
                    f"{v[6]:.2f}" if len(v) >= 7 else "",
                    f"{agents[k]:.1f}" if agents[k] is not None else ""])
                    + "\n")
        print(line)
        d, h = cols.get("dpu", {}).get(s), cols.get("shim", {}).get(s)
        if d and h and h[0] > 0 and d[0] / h[0] > FLAG:
            flags.append(f"{rate} {mode} {mpi} {coll} {s} B: DPU agents "
                         f"{d[0]:.1f} us pure, host agents {h[0]:.1f} us "
                         f"({d[0] / h[0]:.1f} x)")
    cpu_table(cols, agents, mode)
    for k, v in msgs.items():
        if v is not None:
            print(f"   {k}: network messages between agents per "
                  f"collective, all agents, every size: {v:.1f}")
    plot(out, f"cluster-{mpi}-{coll}-{mode}-{rate}",
         f"{mpi} {coll} across emulated hosts, {links}, "
         f"{MODE_SAYS.get(mode, mode)}", cols, sizes)


def main():
    raw, out, rates, modes, colls = sys.argv[1:6]
    mpis = sys.argv[6:]
    csv = os.path.join(out, "cluster.csv")
    with open(csv, "w") as c:
        c.write("rate,mode,mpi,collective,size,compute_us,kind,pure_us,"
                "overall_us,overlap_pct,post_us,over_stock,runs,"
                "host_cpu_us,agent_cpu_us_per_coll\n")
        for rate in rates.split():
            for mode in modes.split():
                for mpi in mpis:
                    for coll in colls.split():
                        table(c, raw, out, rate, mode, mpi, coll)
    print(f"\nCSV: {csv}; plots: "
          f"{out}/cluster-<mpi>-<collective>-<mode>-<rate>.png")
    if flags:
        print(f"\nFLAGGED: the DPUs' agents took more than {FLAG:g} x the "
              f"host agents' pure time (BENCH_DPU_FLAG); look at the "
              f"emulation (how agents wait, the CPU groups) first:")
        for f in flags:
            print(f"  {f}")
        sys.exit(3)


if __name__ == "__main__":
    main()
