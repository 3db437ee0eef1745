#!/usr/bin/env python3
"""ctest data_write_csv: the robot seat of configs/drivers.toml writes a CSV that pandas loads.

    check_csv.py RUNNER PLATOON SOURCE_DIR WORK_DIR

RUNNER (data_write_session, tests/data_write/run_session.cpp) runs the session through `platoon run`
and leaves the robot's CSV, its SUMMARY and the road's reference line (sampled every 5 cm with
Road::Evaluate) in WORK_DIR. This script then checks, with pandas:
  - every column of docs/RECORDING.md is there, in order, with its unit in the header;
  - the runner stops the robot's process for 0.6 s (a loaded machine): the stall shows in its SUMMARY
    and is caught up, no row missed;
  - rows come at the configured rate (within 0.1 %), on whole multiples of its period, time strictly
    increasing, as many as the SUMMARY says were written, none dropped or failed;
  - through configs/inputs/lane_change.csv, every row's lane and lane offset equal an independent
    projection of its x, y onto the road (nearest point of the 5 cm polyline, refined on its two
    segments) within 1 cm, while the offset moves by more than a metre.
Exit 77 (ctest: skipped) when pandas or numpy is missing (scripts/install-deps.sh installs python3-pandas).
"""
import json
import os
import subprocess
import sys

try:
    import numpy as np
    import pandas as pd
except ImportError as e:
    print(f"SKIPPED: {e} (scripts/install-deps.sh installs python3-pandas)")
    sys.exit(77)

RATE_HZ = 100.0  # configs/drivers.toml, [node.data_write] of the robot
DURATION_S = "14"
# The column table of docs/RECORDING.md, stated here independently of the code.
HEADER = ["sim_time_s", "x_m", "y_m", "z_m", "yaw_rad", "speed_mps", "accel_long_mps2", "accel_lat_mps2",
          "yaw_rate_radps", "steer_norm", "throttle_norm", "brake_norm", "road_id", "s_m", "lane",
          "lane_offset_m", "headway_m", "time_headway_s", "ttc_s", "next_sign_type", "next_sign_value",
          "next_sign_distance_m", "last_sign_type", "last_sign_value", "last_sign_distance_m"]
UNIT_SUFFIXES = ("_s", "_m", "_rad", "_mps", "_mps2", "_radps", "_norm")
UNITLESS = {"road_id", "lane", "next_sign_type", "next_sign_value", "last_sign_type", "last_sign_value"}  # ids, an index, sign classes and numbers


def fail(why):
    print(f"FAIL: {why}", file=sys.stderr)
    sys.exit(1)


def project(road, lanes, x, y):
    """Lane and lane offset of (x, y) by brute force on the sampled reference line."""
    px, py = road["x_m"].to_numpy(), road["y_m"].to_numpy()
    d2 = (px - x) ** 2 + (py - y) ** 2
    i = int(np.argmin(d2))
    best = None
    # The foot point lies on one of the two segments next to the nearest sample.
    for a, b in ((i - 1, i), (i, i + 1)):
        if a < 0 or b >= len(px):
            continue
        ax, ay, bx, by = px[a], py[a], px[b], py[b]
        ux, uy = bx - ax, by - ay
        seg2 = ux * ux + uy * uy
        u = min(1.0, max(0.0, ((x - ax) * ux + (y - ay) * uy) / seg2))
        fx, fy = ax + u * ux, ay + u * uy
        dist2 = (x - fx) ** 2 + (y - fy) ** 2
        # t: left of the direction of increasing s is positive.
        t = (ux * (y - ay) - uy * (x - ax)) / np.sqrt(seg2)
        if best is None or dist2 < best[0]:
            best = (dist2, t)
    t = best[1]
    for lane, c in lanes.items():
        half = 1.75  # every lane of the generated road is 3.5 m wide
        if c - half <= t <= c + half:
            return lane, (t - c) if lane < 0 else -(t - c)
    return 0, float("nan")


def main():
    runner, platoon, source, work = sys.argv[1:5]
    r = subprocess.run([runner, platoon, source, work, DURATION_S])
    if r.returncode != 0:
        fail(f"the session runner exited with {r.returncode} (log: {work}/run.log)")
    summary = json.load(open(os.path.join(work, "robot_summary.json")))
    csv_path = os.path.join(work, "data", "robot.csv")
    df = pd.read_csv(csv_path)
    print(f"{csv_path}: {len(df)} rows x {len(df.columns)} columns")

    # Columns, in order, each with its unit.
    # The first column names the seat's car: the node "robot" (docs/RECORDING.md, "Data write").
    # The last column holds the session's markers in each row's period (none in this session: all empty).
    if list(df.columns) != ["name"] + HEADER + ["marker"]:
        fail(f"header {list(df.columns)} != {['name'] + HEADER + ['marker']}")
    if df["marker"].notna().any():
        fail(f"marker column holds {sorted(set(df['marker'].dropna()))}, expected only empty fields (no marker set)")
    if set(df["name"]) != {"robot"}:
        fail(f"name column holds {sorted(set(df['name']))}, expected only 'robot'")
    df = df.drop(columns=["name", "marker"])
    for name in df.columns:
        if name not in UNITLESS and not name.endswith(UNIT_SUFFIXES):
            fail(f"column {name} names no unit")

    # Counts against the SUMMARY.
    if summary["data_write_path"] != os.path.realpath(csv_path):
        fail(f"SUMMARY path {summary['data_write_path']} is not {csv_path}")
    if summary["data_write_error"] != "":
        fail(f"data write error: {summary['data_write_error']}")
    # The runner stopped the robot for 0.6 s: the stall must show, and be caught up.
    if summary["loop_late_max_ms"] < 400:
        fail(f"the robot's loop was late by at most {summary['loop_late_max_ms']} ms: the 0.6 s stop did not take")
    if summary["data_write_missed"] != 0:
        fail(f"{summary['data_write_missed']} rows missed: the node stalled for over a second of sim time")
    if summary["data_write_dropped"] != 0 or summary["data_write_failed"] != 0:
        fail(f"rows dropped {summary['data_write_dropped']}, failed {summary['data_write_failed']}")
    if summary["data_write_rows"] != len(df):
        fail(f"SUMMARY says {summary['data_write_rows']} rows, the file has {len(df)}")

    # Time: strictly increasing, on whole multiples of the period, at the configured rate.
    t = df["sim_time_s"].to_numpy()
    dt = np.diff(t)
    if not (dt > 0).all():
        fail(f"time not strictly increasing at row {int(np.argmin(dt > 0)) + 1}")
    k = t * RATE_HZ
    if np.abs(k - np.round(k)).max() > 1e-6:
        fail("a row is not at a whole multiple of the period")
    rate = (len(t) - 1) / (t[-1] - t[0])
    print(f"rate {rate:.4f} Hz over {t[-1] - t[0]:.2f} s of sim time; step {dt.min():.6f}..{dt.max():.6f} s")
    if abs(rate / RATE_HZ - 1) > 1e-3:
        fail(f"rate {rate} Hz is not within 0.1 % of {RATE_HZ} Hz")
    if t[-1] - t[0] < 8:
        fail(f"only {t[-1] - t[0]:.1f} s of data: the lane change script needs 8 s")

    # Lane and lane offset of every row against the independent projection of its x, y. The script
    # steers left, counter-steers and drives on with the wheel straight while the road curves, so the
    # car wanders across its lane: the offset must move by a metre or more, or the check tells little.
    road = pd.read_csv(os.path.join(work, "road.csv"))
    lanes_all = pd.read_csv(os.path.join(work, "lanes.csv"))
    road_id = int(df["road_id"].iloc[0])
    road = road[road["road_id"] == road_id]
    mine = lanes_all[lanes_all["road_id"] == road_id]
    lanes = {int(l): c for l, c in zip(mine["lane"], mine["center_offset_m"])}
    worst, worst_t = 0.0, 0.0
    for row in df.itertuples():
        lane, offset = project(road, lanes, row.x_m, row.y_m)
        if lane != int(row.lane):
            fail(f"at {row.sim_time_s:.2f} s: lane {int(row.lane)} in the file, {lane} by projection")
        if abs(offset - row.lane_offset_m) > worst:
            worst, worst_t = abs(offset - row.lane_offset_m), row.sim_time_s
    lo, hi = df["lane_offset_m"].min(), df["lane_offset_m"].max()
    print(f"lanes {sorted(set(df['lane'].astype(int)))}, lane offset {lo:.3f}..{hi:.3f} m; "
          f"vs independent projection over {len(df)} rows: worst {worst * 1000:.3f} mm (at {worst_t:.2f} s)")
    if worst > 0.01:
        fail(f"lane offset differs from the projection by {worst:.4f} m (> 1 cm)")
    if hi - lo < 1.0:
        fail("the lane offset hardly moved during the script: the check would not tell much")
    print("ok")


if __name__ == "__main__":
    main()
