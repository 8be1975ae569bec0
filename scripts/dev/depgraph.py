#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The dependency graph of dpushim's sources: which file calls which, which
header includes which, the loops among them and the longest include chain.

  scripts/dev/depgraph.py [--check] [--dot FILE] [-I DIR]...
                      [--layers NAME "TOP > NEXT OTHER > ... > BOTTOM"]
                      --part NAME "CC FLAGS" SRC... [--part ...]

Calls are read from the objects (nm): file A depends on file B when A's
object refers to a symbol B's object defines, whether it calls it or takes
its address. A callback handed down (a table of function pointers filled in
by the upper layer) is therefore no edge from the lower file to the upper.
Includes are read from the `#include "..."` lines. --layers gives a part's
folders from the top down (folders between the same two '>' are peers):
a call or include from a folder to one above it is reported as upward.
--check exits 1 when a loop of more than one file or an upward dependency
exists, calls or includes (make check runs it).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

INC_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sccs(nodes, edges):
    """Tarjan's strongly connected components, iterative."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def longest_chain(nodes, edges):
    """The longest path (in files) through an acyclic graph; loops are
    cut where first met, so the answer stays defined if one remains."""
    memo, busy = {}, set()

    def walk(v):
        if v in memo:
            return memo[v]
        busy.add(v)
        best = [v]
        for w in sorted(edges.get(v, ())):
            if w in busy:
                continue
            sub = walk(w)
            if len(sub) + 1 > len(best):
                best = [v] + sub
        busy.discard(v)
        memo[v] = best
        return best

    best = []
    for v in sorted(nodes):
        chain = walk(v)
        if len(chain) > len(best):
            best = chain
    return best


def includes(path):
    """The quoted includes of a file, resolved against its own folder
    first, then against each -I folder (the compiler's order)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found = []
    for name in INC_RE.findall(text):
        for base in [os.path.dirname(path)] + includes.dirs:
            cand = os.path.normpath(os.path.join(base, name))
            if os.path.exists(cand):
                found.append(cand)
                break
    return found


includes.dirs = []


def symbols(obj):
    """(defined, undefined) global symbol names of one object."""
    out = subprocess.run(["nm", "-P", obj], check=True, text=True,
                         capture_output=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind.isupper() and kind not in "NW":
            defined.add(name)
    return defined, undefined


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if a loop of more than one file exists")
    ap.add_argument("--dot", help="write the call graph as Graphviz dot")
    ap.add_argument("-I", dest="incdirs", action="append", default=[],
                    help="an include folder (as the compiler's -I)")
    ap.add_argument("--layers", action="append", nargs=2, default=[],
                    metavar=("NAME", "ORDER"),
                    help="a part's folders, top first: 'a > b c > d'")
    ap.add_argument("--part", dest="parts", action="append", nargs="+",
                    required=True, metavar="NAME CC SRC",
                    help="a part: its name, its compiler with flags (one "
                    "word), its sources")
    args = ap.parse_args()
    includes.dirs = args.incdirs

    status = 0
    tmp = tempfile.mkdtemp(prefix="dps-depgraph.")
    try:
        for spec in args.parts:
            if len(spec) < 3:
                ap.error(f"--part {' '.join(spec)}: give NAME, CC, SRC...")
            part, cc, srcs = spec[0], spec[1], spec[2:]
            status |= report(part, cc.split(), srcs, tmp, args)
    finally:
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        os.rmdir(tmp)
    return status


def layer_of(path, layers):
    """The index of the folder holding path (0 is the top), or None."""
    best, at = None, None
    for i, folders in enumerate(layers):
        for d in folders:
            d = d.rstrip("/") + "/"
            if path.startswith(d) and (best is None or len(d) > len(best)):
                best, at = d, i
    return at


def upward(graph, layers):
    """The edges that go from a folder to one above it."""
    out = []
    for s in sorted(graph):
        ls = layer_of(s, layers)
        for d in sorted(graph[s]):
            ld = layer_of(d, layers)
            if ls is not None and ld is not None and ld < ls:
                out.append((s, d))
    return out


def report(part, cc, srcs, tmp, args):
    defs, uses = {}, {}
    for src in srcs:
        obj = os.path.join(tmp, src.replace("/", "_") + ".o")
        subprocess.run(cc + ["-c", "-o", obj, src], check=True)
        defs[src], uses[src] = symbols(obj)
    owner = {}
    for src, names in defs.items():
        for n in names:
            owner.setdefault(n, src)
    calls = {s: {owner[n] for n in uses[s] if n in owner} - {s}
             for s in srcs}
    inc, todo = {}, list(srcs)
    while todo:
        f = todo.pop()
        if f in inc:
            continue
        inc[f] = set(includes(f)) - {f}
        todo.extend(inc[f])

    bad = 0
    print(f"== {part}: {len(srcs)} sources, {len(inc) - len(srcs)} headers")
    for kind, graph in (("call", calls), ("include", inc)):
        loops = [c for c in sccs(sorted(graph), graph) if len(c) > 1]
        print(f"{kind} loops of more than one file: {len(loops)}")
        for c in loops:
            print(f"  {len(c)} files: {' '.join(c)}")
        bad |= bool(loops)
        for name, order in args.layers:
            if name != part:
                continue
            layers = [lvl.split() for lvl in order.split(">")]
            up = upward(graph, layers)
            print(f"upward {kind}s: {len(up)}")
            for a, b in up:
                print(f"  {a} -> {b}")
            bad |= bool(up)
        chain = longest_chain(graph, graph)
        print(f"longest {kind} chain: {len(chain)} files: "
              f"{' -> '.join(chain)}")
    if args.dot:
        with open(args.dot if len(args.parts) == 1
                  else f"{args.dot}.{part}", "w", encoding="utf-8") as f:
            f.write(f"digraph {part} {{\n  rankdir=TB;\n")
            for s in sorted(calls):
                for d in sorted(calls[s]):
                    f.write(f'  "{s}" -> "{d}";\n')
            f.write("}\n")
    return 1 if (bad and args.check) else 0


if __name__ == "__main__":
    sys.exit(main())
