#!/usr/bin/env python3
"""The calibration board acceptance check (issue 42): OpenCV finds the inner corners of the board in a camera
sensor's rendered frame, and they lie where the camera's intrinsics and the board's pose put them.

board_check.py SESSION.toml IMAGE.pgm [--offset-m D]

SESSION.toml is the session the frame was rendered from; this script reads the numbers it needs from it (the
camera's focal length, sensor and image size; the board's pose in the camera frame, squares and square size)
and projects every inner corner itself, with no platoon code:
  board frame B: origin at the centre, face in the y-z plane looking along -x, inner corner (c, r) at
    (0, ((columns - 2) / 2 - c) s, ((rows - 2) / 2 - r) s), row by row from the top-left one;
  camera frame C = R(roll, pitch, yaw) B + position, R = Rz(yaw) Ry(pitch) Rx(roll);
  optical frame: x_O = -y_C, y_O = -z_C, z_O = x_C;
  u = fx x_O / z_O + W / 2, v = fy y_O / z_O + H / 2 with fx = f W / w_sensor, fy = f H / h_sensor, in
    platoon's continuous pixel coordinates (pixel i covers [i, i + 1]); OpenCV's pixel (0, 0) is the centre of
    the top-left pixel, so OpenCV's coordinates are u - 0.5, v - 0.5.
--offset-m moves the expected board by D metres along its own y (to show that a wrong pose fails).
Exit 0 when the largest distance is within 0.5 px, 1 otherwise, 77 when cv2 or numpy is missing.
"""
import argparse
import math
import sys
import tomllib

try:
    import cv2
    import numpy as np
except ImportError as e:  # test-only dependency: python3-opencv
    print(f"SKIPPED: {e} (install python3-opencv)")
    sys.exit(77)

TOLERANCE_PX = 0.5


def rotation(roll, pitch, yaw):
    cr, sr, cp, sp, cy, sy = math.cos(roll), math.sin(roll), math.cos(pitch), math.sin(pitch), math.cos(yaw), math.sin(yaw)
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def expected_corners(session, offset_m):
    board = session["scene"]["calibration_board"][0]
    camera = next(s for n in session["node"] for s in n.get("sensor", []) if s["id"] == board["camera"])
    cols, rows = board.get("squares", [9, 7])
    s = board.get("square_m", 0.1)
    pos = np.array(board["position_m"], dtype=float)
    roll, pitch, yaw = (math.radians(a) for a in board.get("rpy_deg", [0, 0, 0]))
    rot = rotation(roll, pitch, yaw)
    width, height = camera["image_width_px"], camera["image_height_px"]
    fx = camera["focal_length_mm"] * width / camera["sensor_width_mm"]
    fy = camera["focal_length_mm"] * height / camera["sensor_height_mm"]
    out = []
    for r in range(rows - 1):
        for c in range(cols - 1):
            p_b = np.array([0.0, ((cols - 2) / 2 - c) * s + offset_m, ((rows - 2) / 2 - r) * s])
            p_c = rot @ p_b + pos
            x_o, y_o, z_o = -p_c[1], -p_c[2], p_c[0]
            u = fx * x_o / z_o + width / 2
            v = fy * y_o / z_o + height / 2
            out.append((u - 0.5, v - 0.5))
    return np.array(out), (cols - 1, rows - 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("session")
    ap.add_argument("image")
    ap.add_argument("--offset-m", type=float, default=0.0)
    a = ap.parse_args()
    with open(a.session, "rb") as f:
        session = tomllib.load(f)
    want, pattern = expected_corners(session, a.offset_m)
    img = cv2.imread(a.image, cv2.IMREAD_GRAYSCALE)
    if img is None:
        print(f"{a.image}: expected a readable image")
        return 1
    found, corners = cv2.findChessboardCorners(img, pattern, flags=cv2.CALIB_CB_ADAPTIVE_THRESH | cv2.CALIB_CB_NORMALIZE_IMAGE)
    if not found:
        print(f"{a.image}: findChessboardCorners found no {pattern[0]} x {pattern[1]} board")
        return 1
    # The frame is not antialiased: a slight blur spreads each edge's staircase over the gradients cornerSubPix
    # fits (symmetric, so it moves no corner), and a 19 x 19 px window stays inside the ~28 px squares.
    smooth = cv2.GaussianBlur(img, (0, 0), 1.0)
    corners = cv2.cornerSubPix(smooth, corners, (9, 9), (-1, -1),
                               (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 100, 1e-4)).reshape(-1, 2)
    # OpenCV may list the corners from either end of the board: take the order that matches.
    err = min((np.linalg.norm(corners - w, axis=1) for w in (want, want[::-1])), key=lambda e: e.mean())
    print(f"{len(err)} inner corners ({pattern[0]} x {pattern[1]}): reprojection error max {err.max():.3f} px, "
          f"mean {err.mean():.3f} px (tolerance {TOLERANCE_PX} px; expected board offset {a.offset_m} m)")
    return 0 if err.max() <= TOLERANCE_PX else 1


if __name__ == "__main__":
    sys.exit(main())
