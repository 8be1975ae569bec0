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

Two plans between nodes: "rank" (DPUSHIM_PUSH=0, the earlier one: a
FETCH and its answer for each transfer and chunk, so messages are the
rank pairs' reads) and "node" (the default: an agent's data comes in one
message a peer agent and chunk, dpu_agent/move/agent_push.c; each
transfer still costs its DMA descriptors, od a piece).

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
                          Iallreduce times, both plans, 1 and 8 cores,
                          against the host's own, and the host's share
  model.py fit CSV rank   the same fit with the earlier plan's messages
"""
import functools
import math
import os
import re
import subprocess
import sys

TOOL = os.path.join(os.path.dirname(__file__), "../../build/tools/sched_model")
PARAMS = ["t0", "L", "o", "G", "Gl", "Gr", "od"]
CHUNK = 262144  # DPUSHIM_CHUNK_BYTES's default


@functools.lru_cache(maxsize=None)
def rounds(coll, p, rpa, nbytes):
    """[[(msgs, in, out, local, reduce, copy) per agent] per round]"""
    out = subprocess.run([TOOL, coll, str(p), str(rpa), str(nbytes),
                          str(CHUNK)],
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
            int(v["copy_bytes"]), int(v["remote_msgs"]),
            int(v["node_msgs"])))
    return [rs[k] for k in sorted(rs)]


def agent_terms(a, plan):
    """The coefficients of o, G, Gl, Gr, od in one agent's round."""
    msgs, bin_, bout, loc, red, cp, rmsg, nmsg = a
    if plan == "node":
        return [msgs - rmsg + nmsg, max(bin_, bout), loc + cp, red, rmsg]
    return [msgs, max(bin_, bout), loc + cp, red, 0]


def features(coll, p, rpa, nbytes, cores, prm, plan="node"):
    """Coefficients of PARAMS in T: linear once each round's binding term
    (the busiest agent, or all agents' work over the cores) is chosen
    with the parameters prm."""
    f = [1.0] + [0.0] * (len(PARAMS) - 1)
    n = len(PARAMS) - 2
    for rnd in rounds(coll, p, rpa, nbytes):
        if any(a[6] for a in rnd):
            f[1] += 1
        terms = [agent_terms(a, plan) for a in rnd]
        cost = [sum(c * x for c, x in zip(t, prm[2:])) for t in terms]
        busiest = terms[cost.index(max(cost))]
        total = [sum(t[i] for t in terms) / cores for i in range(n)]
        tot_cost = sum(c * x for c, x in zip(total, prm[2:]))
        use = total if tot_cost > max(cost) else busiest
        for i in range(n):
            f[2 + i] += use[i]
    return f


def predict(coll, p, rpa, nbytes, cores, prm, plan="node"):
    return sum(c * x for c, x in
               zip(features(coll, p, rpa, nbytes, cores, prm, plan), prm))


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


def fit(points, cores, plan):
    """Parameters that fit [(coll, p, rpa, bytes, us)], the binding terms
    chosen again with each fit until they settle."""
    prm = [10.0, 10.0, 1.0, 1e-3, 1e-3, 1e-3, 0.1]
    for _ in range(8):
        a = [features(c, p, r, n, cores, prm, plan)
             for c, p, r, n, _ in points]
        b = [t for *_, t in points]
        # Relative error: scale each row by its measured time.
        new = nnls([[x / t for x in row] for row, t in zip(a, b)],
                   [1.0] * len(b))
        if all(abs(x - y) <= 1e-9 * max(1.0, abs(y))
               for x, y in zip(new, prm)):
            break
        prm = new
    return prm


def load_csv(path, kind):
    """The shim's points of column kind (dpu: the node plan; dpufetch:
    the rank plan, DPUSHIM_PUSH=0)."""
    rows = []
    with open(path) as f:
        head = f.readline().strip().split(",")
        for line in f:
            v = dict(zip(head, line.strip().split(",")))
            if v["kind"] != kind:
                continue
            h, n = int(v["hosts"]), int(v["ranks"])
            for k, x in v.items():
                m = re.fullmatch(r"(ialltoall|iallreduce)_(\d+)_us", k)
                if x and m:
                    coll, size = m.group(1), int(m.group(2))
                    if n % h == 0:
                        rows.append((h, coll, n, n // h, size, float(x)))
    return rows


def cmd_fit(path, plan):
    kind = "dpu" if plan == "node" else "dpufetch"
    rows = load_csv(path, kind)
    if not rows:
        print("model.py: no %s points in %s" % (kind, path), file=sys.stderr)
        return 1
    hmax = max(r[0] for r in rows)
    train = [r[1:] for r in rows if r[0] < hmax]
    prm = fit(train, 2, plan)
    print("fitted on %d points (hosts < %d), emulation, C = 2 cores, "
          "%s plan:" % (len(train), hmax, plan))
    print("  " + "  ".join("%s=%.4g" % (k, v) for k, v in zip(PARAMS, prm)) +
          "   (us, us/message, us/byte)")
    print("%-6s %-11s %5s %9s %12s %12s %8s" % ("hosts", "collective",
          "ranks", "bytes", "measured us", "model us", "error"))
    errs = {"train": [], "test": []}
    for r in rows:
        h, coll, n, rpa, size, us = r
        m = predict(coll, n, rpa, size, 2, prm, plan)
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
    "od": 0.2,        # one DMA descriptor posted and its completion
                      # polled (DOCA DMA), a transfer's piece
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


def host_ring(p, ppn, nbytes):
    """The hosts' own ring allreduce of nbytes over p ranks: 2 (p - 1)
    steps, each a message of nbytes / p on every link (a node's link
    carries its one ring edge), latency and overhead each step."""
    return 2 * (p - 1) * (HOST["L"] + HOST["o"] + nbytes / p * HOST["G"])


def cmd_project():
    prm = [BF2[k] for k in PARAMS]
    # The same agent spreading its messages, DMA descriptors and
    # reductions over the DPU's 8 Arm cores (as BluesMPI's worker
    # processes do; dpu_agent --workers).
    prm8 = prm[:2] + [prm[2] / 8, prm[3], prm[4], prm[5] / 8, prm[6] / 8]
    print("BlueField-2 / HDR100 parameters: " +
          "  ".join("%s=%.3g" % (k, BF2[k]) for k in PARAMS))
    print("%-6s %6s %-11s %8s %10s %10s %10s %10s %10s %7s %9s" % (
        "nodes", "ranks", "collective", "bytes", "rank 1c", "rank 8c",
        "node 1c", "node 8c", "host", "node8/h", "host cpu"))
    for nodes in (16, 32, 64):
        p = nodes * 32
        for coll, sizes in (("ialltoall", (1024, 16384, 131072)),
                            ("iallreduce", (65536, 1048576))):
            for size in sizes:
                t = [predict(coll, p, 32, size, math.inf, x, plan)
                     for plan in ("rank", "node") for x in (prm, prm8)]
                host = host_alltoall(p, 32, size) \
                    if coll == "ialltoall" else host_ring(p, 32, size)
                print("%-6d %6d %-11s %8d %10.0f %10.0f %10.0f %10.0f "
                      "%10.0f %7.2f %8.3f%%" %
                      (nodes, p, coll, size, *t, host, t[3] / host,
                       100 * HOST_CPU / t[3]))
    print("host: stock MPI's pairwise alltoall, or a ring allreduce, on "
          "the hosts over the same network")
    return 0


def main():
    if len(sys.argv) in (3, 4) and sys.argv[1] == "fit":
        plan = sys.argv[3] if len(sys.argv) == 4 else "node"
        if plan not in ("node", "rank"):
            print("model.py: the plan is node or rank", file=sys.stderr)
            return 2
        return cmd_fit(sys.argv[2], plan)
    if len(sys.argv) == 2 and sys.argv[1] == "project":
        return cmd_project()
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
