#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Check that no room of shim/ writes state another room owns.

usage: scripts/dev/owners.py [ROOT]

docs/architecture.md ("Who writes what") says who owns what; this is that
table, checked by pattern over shim/**/*.[ch]: an assignment (=, +=, ++,
--, ...) to an owned field, or taking shim.lock, outside its owners is a
finding, printed as FILE:LINE: text (the rule). Exit 1 if any. Comments
are skipped; a pattern is a regular expression on one line of code.
"""
import os
import re
import sys

# What is written (a regular expression matching the written thing
# followed by an assignment), and the rooms (folders of shim/) allowed to.
ASSIGN = r"\s*(?:[-+*/|&^]?=(?!=)|\+\+|--)"
RULES = [
    (r"shim\.chan\.[a-z_]+(?:\[[^]]*\])*" + ASSIGN, ("core",),
     "the channel is core's: boot/ opens it with shim_chan_* calls"),
    (r"&shim\.chan\.(?!cma_token\b)", ("core",),
     "the channel's fields are handed to a writer only in core "
     "(base's shim_hello gives the agent the token's address)"),
    (r"\b(?:mem(?:cpy|move|set)|str(?:n?cpy|ncat|cat)|v?snprintf|"
     r"v?sprintf|read|recv|fgets)\(\s*shim\.chan\.", ("core",),
     "the channel's buffers are filled only in core"),
    (r"shim\.done_list" + ASSIGN, ("core",),
     "the done list is core's: shim_op_done"),
    (r"\bop->(?:status|finishing|next_done|redo|raise|after)" + ASSIGN,
     ("core",), "an operation's fields are core's: shim_op_done, "
                "shim_op_redo"),
    (r"->fo\.[a-z_]+(?:\[[^]]*\])*" + ASSIGN, ("failover",),
     "the fo members of core's structures are failover's"),
    (r"shim\.fo\.[a-z_]+(?:\[[^]]*\])*" + ASSIGN, ("failover", "base"),
     "the takeover's state is failover's (shim_fo_notice in base)"),
    (r"shim\.active" + ASSIGN, ("boot",),
     "shim.active is boot's"),
    (r"pthread_mutex_(?:try)?lock\(&shim\.lock\)", ("core", "failover",
                                                     "base"),
     "shim.lock is taken inside core (and failover, base)"),
]


def code_lines(text):
    """(line number, line) of text with comments blanked."""
    text = re.sub(r"/\*.*?\*/",
                  lambda m: re.sub(r"[^\n]", " ", m.group(0)), text,
                  flags=re.S)
    for n, line in enumerate(text.splitlines(), 1):
        yield n, re.sub(r"//.*", "", line)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    rules = [(re.compile(p), rooms, why) for p, rooms, why in RULES]
    bad = 0
    shim = os.path.join(root, "shim")
    for room in sorted(os.listdir(shim)):
        for dirpath, _, files in os.walk(os.path.join(shim, room)):
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, errors="replace") as fh:
                    text = fh.read()
                for n, line in code_lines(text):
                    for rx, rooms, why in rules:
                        if room not in rooms and rx.search(line):
                            print(f"{os.path.relpath(path, root)}:{n}: "
                                  f"{line.strip()}  ({why})")
                            bad = 1
    if not bad:
        print(f"owners: no room writes another's state ({len(RULES)} rules)")
    return bad


if __name__ == "__main__":
    sys.exit(main())
