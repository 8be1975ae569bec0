#!/usr/bin/env python3
"""A LogGP-style model of the agents running the compiled schedules
(issue 37; docs/results.md, "Projection").

The schedules are the shim's own: build/tools/sched_model runs the
builders for every rank of a communicator of P ranks, RPA per agent,
and sums each round's steps per agent (messages and bytes read from
another agent's ranks, bytes read from its own, bytes reduced or
copied). The model prices them:

  T = t0 + sum over rounds of [ L (if the round crosses agents)
        + max( max_g A_g, sum_g A_g / C ) ]
  A_g = o (messages) + G max(bytes in, bytes out) + Gl (local bytes +
        copies) + Gr (bytes reduced)

t0: posting and completing (host to agent and back); L: network
latency; o: an agent's cost per message; G: per byte on its link; Gl: per
byte moved between two ranks of its own node; Gr: per byte reduced; C:
the cores the agents share (the emulation: every agent shares this
machine's 2 cores; a cluster: each DPU its own, C infinite).

  model.py fit CSV        fit the emulation's parameters to
                          scripts/bench/bench_scale.sh's scale.csv on
                          the points with fewer hosts than the most,
                          predict the rest, print each error
  model.py project        BlueField-2 / HDR100 parameters (literature),
                          16, 32 and 64 nodes x 32 ranks: Ialltoall and
                          Iallreduce times and the host's share
"""
import functools
import math
import os
import re
import subprocess
import sys

TOOL = os.path.join(os.path.dirname(__file__), "../../build/tools/sched_model")
PARAMS = ["t0", "L", "o", "G", "Gl", "Gr"]


@functools.lru_cache(maxsize=None)
def rounds(coll, p, rpa, nbytes):
    """[[(msgs, in, out, local, reduce, copy) per agent] per round]"""
    out = subprocess.run([TOOL, coll, str(p), str(rpa), str(nbytes)],
                         capture_output=True, text=True, check=True).stdout
    rs = {}
    for line in out.splitlines():
        if not line.startswith("round "):
            continue
        head, body = line.split(":", 1)
        r, g = int(head.split()[1]), int(head.split()[3])
        v = dict(kv.split("=") for kv in body.split())
        rs.setdefault(r, []).append((
            int(v["remote_msgs"]) + int(v["local_msgs"]),
            int(v["remote_bytes"]), int(v["out_bytes"]),
            int(v["local_bytes"]), int(v["reduce_bytes"]),
            int(v["copy_bytes"]), int(v["remote_msgs"])))
    return [rs[k] for k in sorted(rs)]


def agent_terms(a):
    """The coefficients of o, G, Gl, Gr in one agent's round."""
    msgs, bin_, bout, loc, red, cp, _ = a
    return [msgs, max(bin_, bout), loc + cp, red]


def features(coll, p, rpa, nbytes, cores, prm):
    """Coefficients of PARAMS in T: linear once each round's binding term
    (the busiest agent, or all agents' work over the cores) is chosen
    with the parameters prm."""
    f = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    for rnd in rounds(coll, p, rpa, nbytes):
        if any(a[6] for a in rnd):
            f[1] += 1
        terms = [agent_terms(a) for a in rnd]
        cost = [sum(c * x for c, x in zip(t, prm[2:])) for t in terms]
        busiest = terms[cost.index(max(cost))]
        total = [sum(t[i] for t in terms) / cores for i in range(4)]
        tot_cost = sum(c * x for c, x in zip(total, prm[2:]))
        use = total if tot_cost > max(cost) else busiest
        for i in range(4):
            f[2 + i] += use[i]
    return f


def predict(coll, p, rpa, nbytes, cores, prm):
    return sum(c * x for c, x in
               zip(features(coll, p, rpa, nbytes, cores, prm), prm))


def solve(a, b):
    """Least squares of the small system a x = b (normal equations)."""
    n = len(a[0])
    m = [[sum(r[i] * r[j] for r in a) for j in range(n)] +
         [sum(r[i] * y for r, y in zip(a, b))] for i in range(n)]
    for c in range(n):
        piv = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[piv] = m[piv], m[c]
        if abs(m[c][c]) < 1e-30:
            continue
        for r in range(n):
            if r != c:
                k = m[r][c] / m[c][c]
                m[r] = [x - k * y for x, y in zip(m[r], m[c])]
    return [m[i][n] / m[i][i] if abs(m[i][i]) > 1e-30 else 0.0
            for i in range(n)]


def nnls(a, b):
    """Non-negative least squares by dropping the most negative
    coefficient until none is left (the problem is small)."""
    free = list(range(len(a[0])))
    while True:
        x = solve([[r[i] for i in free] for r in a], b)
        if min(x) >= 0 or len(free) == 1:
            full = [0.0] * len(a[0])
            for i, v in zip(free, x):
                full[i] = max(v, 0.0)
            return full
        del free[x.index(min(x))]


def fit(points, cores):
    """Parameters that fit [(coll, p, rpa, bytes, us)], the binding terms
    chosen again with each fit until they settle."""
    prm = [10.0, 10.0, 1.0, 1e-3, 1e-3, 1e-3]
    for _ in range(8):
        a = [features(c, p, r, n, cores, prm) for c, p, r, n, _ in points]
        b = [t for *_, t in points]
        # Relative error: scale each row by its measured time.
        new = nnls([[x / t for x in row] for row, t in zip(a, b)],
                   [1.0] * len(b))
        if all(abs(x - y) <= 1e-9 * max(1.0, abs(y))
               for x, y in zip(new, prm)):
            break
        prm = new
    return prm


def load_csv(path):
    rows = []
    with open(path) as f:
        head = f.readline().strip().split(",")
        for line in f:
            v = dict(zip(head, line.strip().split(",")))
            if v["kind"] != "dpu":
                continue
            h, n = int(v["hosts"]), int(v["ranks"])
            for k, x in v.items():
                m = re.fullmatch(r"(ialltoall|iallreduce)_(\d+)_us", k)
                if x and m:
                    coll, size = m.group(1), int(m.group(2))
                    if n % h == 0:
                        rows.append((h, coll, n, n // h, size, float(x)))
    return rows


def cmd_fit(path):
    rows = load_csv(path)
    if not rows:
        print("model.py: no shim points in " + path, file=sys.stderr)
        return 1
    hmax = max(r[0] for r in rows)
    train = [r[1:] for r in rows if r[0] < hmax]
    test = [r for r in rows if r[0] == hmax]
    prm = fit(train, 2)
    print("fitted on %d points (hosts < %d), emulation, C = 2 cores:" %
          (len(train), hmax))
    print("  " + "  ".join("%s=%.4g" % (k, v) for k, v in zip(PARAMS, prm)) +
          "   (us, us/message, us/byte)")
    print("%-6s %-11s %5s %9s %12s %12s %8s" % ("hosts", "collective",
          "ranks", "bytes", "measured us", "model us", "error"))
    errs = {"train": [], "test": []}
    for r in rows:
        h, coll, n, rpa, size, us = r
        m = predict(coll, n, rpa, size, 2, prm)
        e = (m - us) / us
        errs["test" if h == hmax else "train"].append(abs(e))
        print("%-6d %-11s %5d %9d %12.0f %12.0f %+7.0f%%" %
              (h, coll, n, size, us, m, 100 * e))
    for k, v in errs.items():
        if v:
            print("%s: median |error| %.0f%%, largest %.0f%% (%d points)" %
                  (k, 100 * sorted(v)[len(v) // 2], 100 * max(v), len(v)))
    return 0


# BlueField-2 with HDR100 (the seeds' Thor cluster: 32 nodes, 16-32
# ranks each, one BlueField-2 per node at 100 Gb/s): us and us/byte.
BF2 = {
    "t0": 2.0,        # post + completion across PCIe (MMIO + DMA write)
    "L": 1.5,         # Arm-initiated RDMA read across one IB switch
    "o": 1.0,         # an A72 core posting and polling one RDMA read
    "G": 1 / 12.5e3,  # 100 Gb/s: 12.5 GB/s
    "Gl": 1 / 12.5e3,  # host to host through the NIC (GVMI loopback)
    "Gr": 1 / 2.0e3,  # an A72 core summing doubles, ~2 GB/s
}
HOST = {"o": 0.3, "L": 1.0, "G": 1 / 12.5e3}  # host MPI over HDR100
# The host's own work for one offloaded collective: the post (0.8 us
# measured here, docs/results.md) and reading its completion.
HOST_CPU = 2.0


def host_alltoall(p, ppn, block):
    """Stock MPI's pairwise alltoall on the host, the same network: each
    rank's P-1 messages, the node's link shared by its ppn ranks."""
    node_bytes = ppn * (p - ppn) * block
    return HOST["L"] * (p - 1) / ppn + max((p - 1) * HOST["o"],
                                           node_bytes * HOST["G"])


def cmd_project():
    prm = [BF2[k] for k in PARAMS]
    # The same agent spreading its messages and reductions over the
    # DPU's 8 Arm cores (as BluesMPI's worker processes do).
    prm8 = prm[:2] + [prm[2] / 8, prm[3], prm[4], prm[5] / 8]
    print("BlueField-2 / HDR100 parameters: " +
          "  ".join("%s=%.3g" % (k, BF2[k]) for k in PARAMS))
    print("%-6s %6s %-11s %9s %11s %11s %11s %10s" % (
        "nodes", "ranks", "collective", "bytes", "agent us", "8 cores us",
        "host us", "host cpu"))
    for nodes in (16, 32, 64):
        p = nodes * 32
        for coll, sizes in (("ialltoall", (1024, 16384, 131072)),
                            ("iallreduce", (65536, 1048576))):
            for size in sizes:
                t = predict(coll, p, 32, size, math.inf, prm)
                t8 = predict(coll, p, 32, size, math.inf, prm8)
                host = "%11.0f" % host_alltoall(p, 32, size) \
                    if coll == "ialltoall" else "%11s" % "-"
                print("%-6d %6d %-11s %9d %11.0f %11.0f %s %9.3f%%" %
                      (nodes, p, coll, size, t, t8, host,
                       100 * HOST_CPU / t8))
    return 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "fit":
        return cmd_fit(sys.argv[2])
    if len(sys.argv) == 2 and sys.argv[1] == "project":
        return cmd_project()
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
