#!/usr/bin/env python3
"""Draws the produce-latency percentile curves of Kafka and sluice from loadgen's JSON report.

usage: plot.py REPORT.json OUT.png
One panel per (flush mode, workload) measured by the franz-go load generator; x is the
percentile on a log scale of 1/(1-q), y is milliseconds on a log scale. Solid lines are
produce latency, dotted lines end-to-end latency.
"""
import json
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    src, out = sys.argv[1], sys.argv[2]
    with open(src) as f:
        rep = json.load(f)
    results = [r for r in rep["results"] if r.get("latency") and r["tool"] == "franz-go loadgen"]
    panels = []
    for r in results:
        key = (r["mode"], r["workload"], r["title"])
        if key not in panels:
            panels.append(key)
    if not panels:
        print("no latency curves to plot", file=sys.stderr)
        sys.exit(1)
    per_mode = {}
    for mode, _, _ in panels:
        per_mode[mode] = per_mode.get(mode, 0) + 1
    cols = max(per_mode.values())
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
    colors = {"kafka": "tab:red", "sluice": "tab:blue"}
    ticks = [0.5, 0.9, 0.99, 0.999, 0.9999]
    for ax, (mode, wid, title) in zip(axes.flat, panels):
        for r in results:
            if r["mode"] != mode or r["workload"] != wid:
                continue
            for series, style, label in (("latency", "-", "produce"), ("e2e", ":", "end-to-end")):
                pts = [p for p in r.get(series) or [] if p["q"] < 1 and p["ms"] > 0]
                if not pts:
                    continue
                xs = [1 / (1 - p["q"]) for p in pts]
                ys = [p["ms"] for p in pts]
                ax.plot(xs, ys, style, marker="o", ms=3, color=colors.get(r["broker"], "gray"),
                        label=f'{r["broker"]} {label}')
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks([1 / (1 - q) for q in ticks])
        ax.set_xticklabels([f"p{q * 100:g}" for q in ticks])
        ax.set_ylabel("ms")
        ax.set_title(f"{title}\n({mode} mode)", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    m = re.search(r"kafka-([0-9][0-9.]*)", rep.get("config", {}).get("KafkaLib", ""))
    kafka = f"Kafka {m.group(1)}" if m else "Kafka"
    fig.suptitle(f"Produce and end-to-end latency percentiles, {kafka} vs sluice (franz-go loadgen, same run)")
    fig.tight_layout()
    fig.savefig(out, dpi=90)


if __name__ == "__main__":
    main()
