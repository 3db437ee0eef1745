#!/usr/bin/env python3
"""platoon.score_lct / score_drt / score_car_following (python/platoon/tasks.py, docs/TASKS.md) against hand
computations and against `platoon task score` on the same CSV.

    tasks_test.py PLATOON_BINARY WORK_DIR      (PYTHONPATH=build/python)

Exit 0 pass, 1 fail, 77 skip (numpy or pandas missing)."""

import math
import os
import subprocess
import sys

try:
    import pandas as pd
except ImportError:
    print("SKIPPED: pandas missing")
    sys.exit(77)

import platoon

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def centre(lane, w):
    return -(abs(lane) - 0.5) * w


def main():
    binary, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)

    # Lane change test: a driver who jumps to each sign's lane at the sign, 1000 rows a second at 60 km/h (the jump
    # between two rows 17 mm apart takes off a negligible sliver of the triangles).
    w, v, dt = 3.5, 60 / 3.6, 0.001
    signs = [(200.0, -1), (350.0, -3), (500.0, -2)]
    rows, lane, nxt, k = [], -2, 0, 0
    while True:
        t = k * dt
        s = 20 + v * t
        if s > 650:
            break
        while nxt < len(signs) and signs[nxt][0] <= s:
            lane = signs[nxt][1]
            nxt += 1
        marker = ""
        for at, l in signs:
            if at - 40 <= s < at - 40 + v * dt:
                marker = "lct:%d@%g" % (l, at)
        rows.append({"name": "participant", "sim_time_s": t, "s_m": s, "lane": lane, "lane_offset_m": 0.0,
                     "marker": marker})
        k += 1
    df = pd.DataFrame(rows)
    path = os.path.join(work, "lct.csv")
    df.to_csv(path, index=False)
    # By hand: two triangles of 10 m by dy / 2 per change.
    length = rows[-1]["s_m"] - 20
    area, lane = 0.0, -2
    for _, l in signs:
        area += 10 * abs(centre(l, w) - centre(lane, w)) / 2
        lane = l
    py = platoon.score_lct(platoon.read_csv(path))
    check(py["signs"] == 3, "score_lct found the 3 signs in the markers: %s" % py["signs"])
    check(abs(py["mean_deviation_m"] - area / length) <= 0.01 * area / length,
          "score_lct %.5f m within 1 %% of the hand computation %.5f m" % (py["mean_deviation_m"], area / length))
    out = subprocess.run([binary, "task", "score", "lct", path], capture_output=True, text=True, check=True).stdout
    cli = float(out.splitlines()[1].split(",")[1])
    check(abs(cli - py["mean_deviation_m"]) <= 1e-5 * max(1.0, cli),
          "platoon task score lct %.6f equals score_lct %.6f" % (cli, py["mean_deviation_m"]))

    # Detection response task at the window edges.
    onsets = [10.0, 14.0, 18.0, 22.0, 26.0, 30.0]
    delays = [0.099, 0.1, 2.5, 2.501, 0.7, None]
    responses = [o + d for o, d in zip(onsets, delays) if d is not None]
    drt = platoon.score_drt(onsets=onsets, responses=responses)
    hits = [t["hit"] for t in drt["trials"]]
    check(hits == [False, True, True, False, True, False], "score_drt hits at 99, 100, 2500, 2501, 700 ms, none: %s" % hits)
    check(abs(drt["mean_rt_s"] - (0.1 + 2.5 + 0.7) / 3) < 1e-9, "score_drt mean response time %.4f s" % drt["mean_rt_s"])
    check(drt["premature"] == 1 and drt["extra"] == 1, "one premature and one extra response")

    # Car following: gain 0.6, delay 1.5 s at 0.05 Hz.
    t = [i * 0.01 for i in range(40001)]
    lead = pd.DataFrame({"sim_time_s": t, "speed_mps": [20 + 2 * math.sin(2 * math.pi * 0.05 * x) for x in t]})
    fol = pd.DataFrame({"sim_time_s": t,
                        "speed_mps": [20 + 1.2 * math.sin(2 * math.pi * 0.05 * (x - 1.5)) + 0.2 * math.sin(2 * math.pi * 0.37 * x)
                                      for x in t]})
    cf = platoon.score_car_following(fol, lead, 0.05)
    check(abs(cf["gain"] - 0.6) <= 0.006, "score_car_following gain %.4f (0.6)" % cf["gain"])
    check(abs(cf["delay_s"] - 1.5) <= 0.015, "score_car_following delay %.4f s (1.5 s)" % cf["delay_s"])

    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
