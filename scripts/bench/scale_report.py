#!/usr/bin/env python3
"""The report of scripts/bench/bench_scale.sh: from its raw job outputs
(RAW/MPI-hH-nN-KIND-REP.txt) the medians per hosts, ranks and column,
as scale.csv, a Markdown table (scale.md) with the growth exponent of
each count against the ranks (log-log slope from the fewest to the most
ranks at the most hosts), and two plots (gnuplot, if installed).

usage: scale_report.py RAW OUT
"""
import glob
import math
import os
import re
import shutil
import statistics
import subprocess
import sys

NAME = re.compile(r"(\w+)-h(\d+)-n(\d+)-(stock|dpu|dpufetch)-(\d+)\.txt$")


def parse(path):
    """The numbers one job printed, by name."""
    v = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"scale: ranks=\d+ init_ms_max=([\d.]+)", line)
            if m:
                v["init_ms"] = float(m.group(1))
            m = re.match(r"scale: (\w+) bytes=(\d+) median_us=([\d.]+)", line)
            if m:
                v[f"{m.group(1)}_{m.group(2)}_us"] = float(m.group(3))
            m = re.match(r"dpushim: agents cpu_ms=.* "
                         r"agent_msgs_per_collective=([\d.]+)", line)
            if m:
                v["msgs_per_coll"] = float(m.group(1))
            if line.startswith("dpushim: growth "):
                for k, x in re.findall(r"(\w+)=([\d.]+)", line):
                    v[k] = float(x)
            m = re.match(r"dpushim: schedules (\w+) compiled=(\d+) "
                         r"steps_per_rank=([\d.]+) compile_us=([\d.]+)", line)
            if m:
                v[f"{m.group(1)}_steps"] = float(m.group(3))
                v[f"{m.group(1)}_compile_us"] = float(m.group(4))
            if line.startswith("result: ok"):
                v["ok"] = 1
    return v


def collect(raw):
    """{(mpi, hosts, ranks, kind): {name: median over repetitions}}"""
    runs = {}
    for p in sorted(glob.glob(os.path.join(raw, "*.txt"))):
        m = NAME.search(os.path.basename(p))
        if not m:
            continue
        key = (m.group(1), int(m.group(2)), int(m.group(3)), m.group(4))
        v = parse(p)
        # A shim job that printed no growth line did not offload (its
        # agents did not come up): not a point of the shim's column.
        if v.get("ok") and (key[3] == "stock" or "wire_ms_max" in v):
            runs.setdefault(key, []).append(v)
        else:
            print(f"scale_report.py: {p}: left out (no result, or the "
                  "shim did not offload)", file=sys.stderr)
    out = {}
    for key, vs in runs.items():
        names = set().union(*vs)
        out[key] = {n: statistics.median([v[n] for v in vs if n in v])
                    for n in names}
        out[key]["reps"] = len(vs)
    return out


def fmt(x, unit=""):
    if x is None:
        return "–"
    if x >= 100:
        return f"{x:.0f}{unit}"
    return f"{x:.1f}{unit}"


def slope(points):
    """log-log slope between the first and last (x, y) with y > 0."""
    pts = [(x, y) for x, y in points if y and y > 0]
    if len(pts) < 2 or pts[0][0] == pts[-1][0]:
        return None
    (x0, y0), (x1, y1) = pts[0], pts[-1]
    return math.log(y1 / y0) / math.log(x1 / x0)


def main():
    raw, out = sys.argv[1], sys.argv[2]
    d = collect(raw)
    if not d:
        print("scale_report.py: no finished job in " + raw, file=sys.stderr)
        return 1
    os.makedirs(out, exist_ok=True)
    sizes = sorted({int(n.split("_")[1]) for v in d.values() for n in v
                    if re.fullmatch(r"ialltoall_\d+_us", n)})
    metrics = (["init_ms"] +
               [f"{c}_{s}_us" for s in sizes for c in ("ialltoall",
                                                       "iallreduce")] +
               ["wire_ms_max", "rss_kb_max", "rss_kb_sum", "endpoints_max",
                "endpoints_sum", "keys_max", "scheds_max", "steps_max",
                "ialltoall_steps", "iallreduce_steps",
                "ialltoall_compile_us", "iallreduce_compile_us",
                "msgs_per_coll"])
    with open(os.path.join(out, "scale.csv"), "w") as f:
        f.write("mpi,hosts,ranks,kind,reps," + ",".join(metrics) + "\n")
        for k in sorted(d):
            f.write(",".join(map(str, k)) + f",{d[k]['reps']}," +
                    ",".join(str(d[k].get(m, "")) for m in metrics) + "\n")
    mpis = sorted({k[0] for k in d})
    lines = []
    for mpi in mpis:
        pts = sorted({(k[1], k[2]) for k in d if k[0] == mpi})
        kinds = [k for k in ("stock", "dpu", "dpufetch")
                 if any(x[0] == mpi and x[3] == k for x in d)]
        lines.append(f"#### {mpi}: times (ms: MPI_Init; us: one call, "
                     "slowest rank, median), " + " / ".join(kinds) +
                     " (dpu: the DPUs' agents, node to node; dpufetch: "
                     "the same on the earlier plan, DPUSHIM_PUSH=0); "
                     "messages between agents per collective, all "
                     "agents\n")
        head = ["hosts", "ranks", "MPI_Init ms"]
        for s in sizes:
            head += [f"Ialltoall {s // 1024} KiB", f"Iallreduce {s // 1024} KiB"]
        head.append("agent msgs / coll")
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        for h, n in pts:
            cs = [d.get((mpi, h, n, k), {}) for k in kinds]
            row = [str(h), str(n),
                   " / ".join(fmt(c.get("init_ms")) for c in cs)]
            for s in sizes:
                for c in ("ialltoall", "iallreduce"):
                    row.append(" / ".join(fmt(x.get(f"{c}_{s}_us"))
                                          for x in cs))
            row.append(" / ".join(fmt(x.get("msgs_per_coll"))
                                  for x, k in zip(cs, kinds) if k != "stock"))
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
        lines.append(f"#### {mpi}: growth (the DPUs' agents: largest one; "
                     "steps: one rank's schedule)\n")
        cols = [("wire_ms_max", "wire ms"), ("rss_kb_max", "agent RSS KiB"),
                ("endpoints_max", "endpoints"), ("keys_max", "keys"),
                ("scheds_max", "schedules"), ("steps_max", "steps held"),
                ("ialltoall_steps", "Ialltoall steps"),
                ("iallreduce_steps", "Iallreduce steps"),
                ("ialltoall_compile_us", "Ialltoall compile us"),
                ("iallreduce_compile_us", "Iallreduce compile us")]
        lines.append("| hosts | ranks | " +
                     " | ".join(c[1] for c in cols) + " |")
        lines.append("|" + "---|" * (len(cols) + 2))
        for h, n in pts:
            sh = d.get((mpi, h, n, "dpu"), {})
            lines.append(f"| {h} | {n} | " +
                         " | ".join(fmt(sh.get(c[0])) for c in cols) + " |")
        hmax = max(h for h, _ in pts)
        lines.append("")
        lines.append(f"Growth exponent against the ranks at {hmax} hosts "
                     "(log-log slope, fewest to most ranks; 1: O(P), "
                     "2: O(P^2)): " + ", ".join(
                         f"{c[1]} {fmt(slope([(n, d.get((mpi, h, n, 'dpu'), {}).get(c[0])) for h, n in pts if h == hmax]))}"
                         for c in cols[:8]))
        lines.append("")
    with open(os.path.join(out, "scale.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    plot(d, out, mpis[0])
    return 0


def plot(d, out, mpi):
    """scale-growth.png: counts against ranks, one line per host count."""
    if shutil.which("gnuplot") is None:
        return
    hosts = sorted({k[1] for k in d if k[0] == mpi})
    dat = os.path.join(out, "scale-growth.dat")
    with open(dat, "w") as f:
        for h in hosts:
            f.write(f"# hosts {h}\n")
            for n in sorted({k[2] for k in d if k[0] == mpi and k[1] == h}):
                v = d.get((mpi, h, n, "dpu"), {})
                if "wire_ms_max" not in v:
                    continue
                f.write(f"{n} {v.get('ialltoall_steps', 0)} "
                        f"{v.get('endpoints_max', 0)} "
                        f"{v.get('rss_kb_max', 0) / 1024} "
                        f"{v.get('wire_ms_max', 0)}\n")
            f.write("\n\n")
    panels = [(2, "Ialltoall steps (one rank)"), (3, "endpoints (largest agent)"),
              (4, "agent RSS MiB (largest)"), (5, "MPI_Init wire ms (slowest)")]
    script = ["set terminal pngcairo size 1000,700 noenhanced",
              f"set output '{os.path.join(out, 'scale-growth.png')}'",
              "set multiplot layout 2,2",
              "set xlabel 'ranks'", "set key top left", "set grid"]
    for col, title in panels:
        script.append(f"set title '{title}'")
        script.append("plot " + ", ".join(
            f"'{dat}' index {i} using 1:{col} with linespoints "
            f"title '{h} hosts'" for i, h in enumerate(hosts)))
    script.append("unset multiplot")
    subprocess.run(["gnuplot"], input="\n".join(script), text=True,
                   check=False)


if __name__ == "__main__":
    sys.exit(main())
