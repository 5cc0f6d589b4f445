#!/usr/bin/env python3
"""bench-paired.py OLD.txt NEW.txt: paired old/new ratios of Go benchmark runs.

bench-compare.sh runs the old and the new binary of each package back to back
in every round, so the i-th result of a benchmark in OLD and in NEW were
measured under the same machine load. This prints, per benchmark and unit,
the median over rounds of new/old (and the min and max), which cancels load
that drifts between rounds far better than comparing two unpaired medians.
"""
import collections, re, statistics, sys

line = re.compile(r"^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$")

def load(path):
    out = collections.defaultdict(list)
    pkg = ""
    for l in open(path):
        if l.startswith("pkg: "):
            pkg = l[5:].strip().split("/")[-1]
        m = line.match(l.strip())
        if not m:
            continue
        f = m.group(2).split()
        for v, u in zip(f[0::2], f[1::2]):
            out[(pkg, m.group(1), u)].append(float(v))
    return out

old, new = load(sys.argv[1]), load(sys.argv[2])
print(f"{'benchmark':52} {'unit':14} {'old median':>12} {'new median':>12} {'new/old (paired median, min..max)':>36}")
for k in sorted(old):
    if k not in new:
        continue
    o, n = old[k], new[k]
    r = [b / a for a, b in zip(o, n) if a]
    if not r:
        continue
    name = f"{k[0]}.{k[1]}"
    print(f"{name:52} {k[2]:14} {statistics.median(o):12.4g} {statistics.median(n):12.4g} "
          f"{statistics.median(r):10.3f} ({min(r):.2f}..{max(r):.2f})")
