#!/usr/bin/env python3
"""Where two runs' host clocks part: compares the EIDOLON_HOST_CLOCK_TRACE directories of two runs
of the same program (gpu-emu/README.md "Host time"). The trace files of each run are paired in pid
order (the launcher starts ranks in rank order). For each pair it prints the first line where the
thread, the cause or its cost differ (sync amounts are compared only by cause: they absorb earlier
differences), with the lines around it, and the causes whose counts differ over the whole run.

Usage: host-clock-diff.py RUN_A_DIR RUN_B_DIR [--context N]
"""
import argparse
import collections
import glob
import os
import sys


def load(directory):
    files = sorted(glob.glob(os.path.join(directory, "host-clock-*.tsv")),
                   key=lambda f: int(os.path.basename(f)[len("host-clock-"):-len(".tsv")]))
    runs = []
    for path in files:
        with open(path) as f:
            rows = [line.rstrip("\n").split("\t") for line in f][1:]
        runs.append((path, rows))
    return runs


def key(row):
    thread, what, by, _ = row
    return (thread, what) if what == "sync" else (thread, what, by)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--context", type=int, default=6)
    opts = ap.parse_args()
    a_runs, b_runs = load(opts.a), load(opts.b)
    if not a_runs or not b_runs:
        sys.exit("no host-clock-*.tsv files in %s" % (opts.a if not a_runs else opts.b))
    if len(a_runs) != len(b_runs):
        print("different process counts: %d and %d" % (len(a_runs), len(b_runs)))
    same = True
    for (a_path, a), (b_path, b) in zip(a_runs, b_runs):
        print("== %s | %s: %d and %d lines" % (a_path, b_path, len(a), len(b)))
        first = next((i for i, (x, y) in enumerate(zip(a, b)) if key(x) != key(y)), None)
        if first is None and len(a) == len(b):
            print("   same")
            continue
        same = False
        first = min(len(a), len(b)) if first is None else first
        for i in range(max(0, first - opts.context), first + opts.context):
            left = "\t".join(a[i]) if i < len(a) else ""
            right = "\t".join(b[i]) if i < len(b) else ""
            print("%s %7d  %-48s %s" % (">" if i == first else " ", i + 1, left, right))
        count_a = collections.Counter(row[1] for row in a)
        count_b = collections.Counter(row[1] for row in b)
        differ = {w: (count_a[w], count_b[w]) for w in sorted(set(count_a) | set(count_b))
                  if count_a[w] != count_b[w]}
        print("   counts that differ (a, b): %s" % (differ or "none"))
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
