#!/usr/bin/env python3
"""Speed and headway of each participant around the lead car's braking (docs/STUDIES.md).

    plot_braking.py STUDY_OUT [--marker "lead braking"] [--before 5] [--after 15]

Reads STUDY_OUT/study_long.csv (`platoon study collect STUDY_OUT`), finds in every block the first row whose
marker column holds the marker, and takes the rows from BEFORE seconds before it to AFTER seconds after it.
Writes STUDY_OUT/braking_window.csv (participant, block, condition, t_rel_s, speed_mps, headway_m,
brake_norm) with the standard library only, and, when matplotlib is installed, STUDY_OUT/braking.png: speed
and headway over the time since the marker, one line per participant and block.
"""
import argparse
import csv
import os
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", help="the study's output folder (holds study_long.csv)")
    ap.add_argument("--marker", default="lead braking", help="the marker text the window is around")
    ap.add_argument("--before", type=float, default=5.0, help="seconds before the marker")
    ap.add_argument("--after", type=float, default=15.0, help="seconds after the marker")
    a = ap.parse_args()
    path = os.path.join(a.out, "study_long.csv")
    if not os.path.exists(path):
        sys.exit(f"plot_braking: {path} not found (run `platoon study collect {a.out}` first)")

    # Every block's rows, and the time of its first marker row.
    blocks = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["participant"], row["block"], row["condition"])
            blocks.setdefault(key, {"rows": [], "t0": None})
            b = blocks[key]
            t = float(row["sim_time_s"])
            b["rows"].append((t, row))
            if b["t0"] is None and a.marker in row["marker"].split(" | "):
                b["t0"] = t

    # The window around the marker of each block that has one.
    window = []
    for (participant, block, condition), b in sorted(blocks.items()):
        if b["t0"] is None:
            continue
        for t, row in b["rows"]:
            rel = t - b["t0"]
            if -a.before <= rel <= a.after:
                window.append([participant, block, condition, f"{rel:.2f}", row.get("speed_mps", ""),
                               row.get("headway_m", ""), row.get("brake_norm", "")])
    out_csv = os.path.join(a.out, "braking_window.csv")
    with open(out_csv, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["participant", "block", "condition", "t_rel_s", "speed_mps", "headway_m", "brake_norm"])
        w.writerows(window)
    with_marker = sum(1 for b in blocks.values() if b["t0"] is not None)
    print(f"plot_braking: {with_marker} block(s) with \"{a.marker}\", {len(window)} rows -> {out_csv}")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_braking: matplotlib is not installed (apt install python3-matplotlib): no plot drawn")
        return
    fig, (ax_v, ax_h) = plt.subplots(2, 1, sharex=True, figsize=(8, 6))
    lines = {}
    for participant, block, condition, rel, speed, headway, _ in window:
        line = lines.setdefault((participant, block, condition), ([], [], []))
        line[0].append(float(rel))
        line[1].append(float(speed) if speed else float("nan"))
        line[2].append(float(headway) if headway else float("nan"))
    for (participant, block, condition), (t, v, h) in sorted(lines.items()):
        label = f"{participant} {condition or block}"
        ax_v.plot(t, v, label=label)
        ax_h.plot(t, h, label=label)
    for ax in (ax_v, ax_h):
        ax.axvline(0.0, color="black", linewidth=0.8)
        ax.grid(True, alpha=0.3)
    ax_v.set_ylabel("speed (m/s)")
    ax_h.set_ylabel("headway (m)")
    ax_h.set_xlabel(f"time since \"{a.marker}\" (s)")
    ax_v.legend(fontsize="small")
    png = os.path.join(a.out, "braking.png")
    fig.savefig(png, dpi=100, bbox_inches="tight")
    print(f"plot_braking: {png}")


if __name__ == "__main__":
    main()
