#!/usr/bin/env python3
"""Plots of a `platoon validate` report (docs/RECORDING.md, "Validation reports").

    python3 scripts/validate_plot.py DIR

reads DIR/by_range.csv and DIR/summary.csv and writes
  DIR/detection_rate.png   detection rate per range bin with its 95 % interval, and false positives per frame;
  DIR/position_error.png   position error per range bin: sigma x, sigma y (95 % intervals), RMSE and mean errors.

Exit codes: 0 written, 2 usage or unreadable CSV, 3 matplotlib missing (Debian: apt install python3-matplotlib).
"""
import csv
import math
import os
import sys


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(row, key):
    try:
        return float(row[key])
    except (KeyError, ValueError):
        return math.nan


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr if len(argv) != 2 else sys.stdout)
        return 0 if len(argv) == 2 else 2
    out = argv[1]
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        print("validate_plot: matplotlib is not installed (Debian: apt install python3-matplotlib)", file=sys.stderr)
        return 3
    try:
        bins = [r for r in read_rows(os.path.join(out, "by_range.csv")) if r["bin"] != "all"]
        summary = read_rows(os.path.join(out, "summary.csv"))[0]
    except (OSError, IndexError, KeyError) as e:
        print(f"validate_plot: cannot read the report in {out}: {e}", file=sys.stderr)
        return 2

    labels = [r["bin"] for r in bins]
    x = list(range(len(bins)))
    title = f"{summary.get('sensor', '?')} ({summary.get('kind', '?')}), {summary.get('frames', '?')} frames"

    # Detection rate with its Wilson 95 % interval, false positives per frame on a second axis.
    rate = [num(r, "detection_rate") for r in bins]
    lo = [v - num(r, "detection_rate_lo95") for v, r in zip(rate, bins)]
    hi = [num(r, "detection_rate_hi95") - v for v, r in zip(rate, bins)]
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    ax.bar(x, rate, color="#4c72b0", alpha=0.8, label="detection rate")
    ax.errorbar(x, rate, yerr=[lo, hi], fmt="none", ecolor="black", capsize=4, label="95 % interval")
    for xi, r in zip(x, bins):
        ax.text(xi, 0.45, f"n = {r['truth']}", ha="center", fontsize=8, color="white")
    ax.set_ylim(0, 1.05)
    ax.set_xticks(x, labels)
    ax.set_xlabel("range in the sensor frame (m)")
    ax.set_ylabel("detection rate")
    ax2 = ax.twinx()
    ax2.plot(x, [num(r, "fp_per_frame") for r in bins], "o-", color="#dd8452", label="false positives / frame")
    ax2.set_ylabel("false positives per frame")
    ax2.set_ylim(bottom=0)
    handles = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    ax.legend(handles, [h.get_label() for h in handles], loc="lower left", fontsize=8)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "detection_rate.png"))
    plt.close(fig)

    # Position error: sigma per axis with its 95 % interval, RMSE, and the mean (bias) per axis.
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    for key, dx, colour in (("sigma_x", -0.1, "#4c72b0"), ("sigma_y", 0.1, "#55a868")):
        v = [num(r, key + "_m") for r in bins]
        e_lo = [a - num(r, key + "_lo95_m") for a, r in zip(v, bins)]
        e_hi = [num(r, key + "_hi95_m") - a for a, r in zip(v, bins)]
        ax.errorbar([xi + dx for xi in x], v, yerr=[e_lo, e_hi], fmt="o", color=colour, capsize=4, label=key.replace("_", " "))
    ax.plot(x, [num(r, "rmse_m") for r in bins], "s--", color="#c44e52", label="RMSE")
    ax.plot(x, [num(r, "mean_x_m") for r in bins], "x:", color="#4c72b0", label="mean x")
    ax.plot(x, [num(r, "mean_y_m") for r in bins], "x:", color="#55a868", label="mean y")
    ax.axhline(0, color="grey", linewidth=0.5)
    ax.set_xticks(x, labels)
    ax.set_xlabel("range in the sensor frame (m)")
    ax.set_ylabel("position error (m)")
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "position_error.png"))
    plt.close(fig)
    print(f"validate_plot: wrote {os.path.join(out, 'detection_rate.png')} and {os.path.join(out, 'position_error.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
