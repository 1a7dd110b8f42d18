#!/usr/bin/python3
"""Plots an eidolon-incast run: completion times of both models and the packet model's queue.

    build/bin/eidolon-incast --out=out/incast && scripts/plot-incast.py out/incast
writes out/incast/incast.png. Uses Debian's python3-matplotlib (hence /usr/bin/python3).
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(directory):
    with open(f"{directory}/completions.csv") as f:
        rows = list(csv.DictReader(f))
    fluid = sorted(int(r["flow_model_ns"]) / 1e3 for r in rows)
    packets = sorted(int(r["packet_model_ns"]) / 1e3 for r in rows)
    with open(f"{directory}/queue.csv") as f:
        queue = [(int(r["time_ns"]) / 1e3, int(r["packets"])) for r in csv.DictReader(f)]

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    n = len(rows)
    cdf = [(i + 1) / n for i in range(n)]
    left.step(fluid, cdf, where="post", label="flow model (max-min fair share)")
    left.step(packets, cdf, where="post", label="packet model (ns-3 packets)")
    left.set_xlabel("flow completion time (us)")
    left.set_ylabel("fraction of flows done")
    left.set_title(f"incast: {n} senders into one GPU")
    left.legend(loc="upper left")
    left.grid(alpha=0.3)

    if queue:
        t, q = zip(*queue)
        right.step(t, q, where="post", color="tab:red")
    right.set_xlabel("time (us)")
    right.set_ylabel("packets queued at the bottleneck port")
    right.set_title("packet model: queue at the leaf port facing the receiver's NIC")
    right.grid(alpha=0.3)
    fig.tight_layout()
    out = f"{directory}/incast.png"
    fig.savefig(out, dpi=110)
    print(out)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "out/incast")
