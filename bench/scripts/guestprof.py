#!/usr/bin/env python3
"""Summarise a V8 .cpuprofile (node --cpu-prof) by function: self and
inclusive share of the samples whose stack contains ROOT (a substring of a
function name, e.g. BenchmarkDefaultPath.func1), top N (default 30).

usage: guestprof.py FILE.cpuprofile [ROOT] [N]   (see guestprof.mjs)"""
import collections, json, sys

prof = json.load(open(sys.argv[1]))
root = sys.argv[2] if len(sys.argv) > 2 else ""
top = int(sys.argv[3]) if len(sys.argv) > 3 else 30
nodes = {n["id"]: n for n in prof["nodes"]}
parent = {c: n["id"] for n in prof["nodes"] for c in n.get("children", [])}
selfc, incl, total = collections.Counter(), collections.Counter(), 0
for s in prof["samples"]:
    chain, i = [], s
    while i is not None:
        chain.append(nodes[i]["callFrame"]["functionName"] or "(anonymous)")
        i = parent.get(i)
    if root and not any(root in f for f in chain):
        continue
    total += 1
    selfc[chain[0]] += 1
    for f in set(chain):
        incl[f] += 1
if total == 0:
    sys.exit("no samples under %r" % root)
print("%d samples%s" % (total, " under " + root if root else ""))
for f, c in selfc.most_common(top):
    print("%5.1f%% self %5.1f%% incl  %s" % (100 * c / total, 100 * incl[f] / total, f))
