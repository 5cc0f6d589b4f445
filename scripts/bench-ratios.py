#!/usr/bin/env python3
"""bench-ratios.py FILE: the ratio targets (issues 20 and 29) from a `make bench-targets` log.

For each path with a ratio target, the median over the rounds of the
path's median-ns/op divided by its floor's, and the ratio within each
round (make bench-targets runs a pair's benchmarks one after the other in
each round, so a round's two figures share that moment's load).
"""
import re
import statistics
import sys

PAIRS = [  # path, floor, target (None: reported, no target)
    # Issue 29: the decide within 2.5x of its floor using the same
    # libraries (encoding/json for the five lines, the schema library).
    ("BenchmarkDecideInProcess", "BenchmarkDecideFloor", 2.5),
    # Issue 20's floor, which encodes nothing: reported.
    ("BenchmarkDecideInProcess", "BenchmarkDecidePhysicalFloor", None),
    ("BenchmarkSubprocessAsk", "BenchmarkSubprocessFloor", 2.0),
    ("BenchmarkMCPHTTPClientFloor", "BenchmarkHTTPRoundTrip", 2.5),
    ("BenchmarkMCPHTTPAsk", "BenchmarkHTTPRoundTrip", 5.0),
]
LINE = re.compile(r"^(Benchmark\S+?)-\d+\s+\d+\s.*?\s(\S+) median-ns/op")


def main(path):
    runs = {}
    for line in open(path):
        m = LINE.match(line)
        if m:
            runs.setdefault(m.group(1), []).append(float(m.group(2)))
    worst = 0
    for a, b, target in PAIRS:
        if a not in runs or b not in runs:
            print(f"{a} / {b}: not in {path}")
            worst = 1
            continue
        pa, pb = runs[a], runs[b]
        per = [x / y for x, y in zip(pa, pb)]
        ratio = statistics.median(pa) / statistics.median(pb)
        ok = "reported" if target is None else ("met" if ratio <= target else "NOT MET")
        print(f"{a} {statistics.median(pa)/1000:.1f} µs / {b} {statistics.median(pb)/1000:.1f} µs = "
              f"{ratio:.2f}x (per round median {statistics.median(per):.2f}x, "
              f"{min(per):.2f}-{max(per):.2f}); " + (f"target <= {target}x: {ok}" if target else ok))
    return worst


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
