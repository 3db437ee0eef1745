#!/usr/bin/env python3
"""Drive a car from Python: publish one vehicle that drives laps of a circle at a constant speed, as a
node of the session. Every other client (viewers, seats, traffic, recorders) sees it like any car.

    PYTHONPATH=build/python python3 examples/python/drive_car.py --server 127.0.0.1:7400 \
        --center 0 30 --radius 25 --speed 10 --laps 2

The car's state is sent at --rate Hz on the session's sim clock (position, heading, velocity, yaw rate,
and the centripetal acceleration, so dead reckoning on the receivers follows the circle). It leaves the
session when done; the server then removes the car.
"""
import argparse
import math
import time

import platoon


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", default=None,
                    help="HOST:PORT of the server (default: PLATOON_SERVER, else the session running here, else 127.0.0.1:7400)")
    ap.add_argument("--name", default="pycar", help="node name, unique in the session (default %(default)s)")
    ap.add_argument("--center", type=float, nargs=2, default=(0.0, 30.0), metavar=("X", "Y"),
                    help="centre of the circle, in m (default 0 30)")
    ap.add_argument("--radius", type=float, default=25.0, help="radius, in m (default %(default)s)")
    ap.add_argument("--speed", type=float, default=10.0, help="speed, in m/s (default %(default)s)")
    ap.add_argument("--laps", type=float, default=1.0, help="laps to drive (default %(default)s)")
    ap.add_argument("--rate", type=float, default=50.0, help="states per sim second (default %(default)s)")
    args = ap.parse_args()
    for what, v in (("--radius", args.radius), ("--speed", args.speed), ("--laps", args.laps), ("--rate", args.rate)):
        if not v > 0:
            ap.error(f"{what} must be > 0, got {v}")

    cx, cy = args.center
    omega = args.speed / args.radius  # rad/s, counter-clockwise
    lap_s = 2 * math.pi / omega
    with platoon.Session(args.server, name=args.name, role="driver", timeout=10) as s:
        print(f"joined session '{s.session_name}' as node {s.node_id}; waiting for it to run")
        while s.phase not in ("running",):
            time.sleep(0.05)
        t0 = s.sim_time
        print(f"driving {args.laps:g} lap(s) of {lap_s:.1f} s around ({cx:g}, {cy:g}), r = {args.radius:g} m")
        while True:
            t = s.sim_time - t0
            if t > args.laps * lap_s:
                break
            a = omega * t
            # Position on the circle, heading along it, velocity tangent, acceleration towards the centre.
            x, y = cx + args.radius * math.cos(a - math.pi / 2), cy + args.radius * math.sin(a - math.pi / 2)
            yaw = a
            vx, vy = args.speed * math.cos(yaw), args.speed * math.sin(yaw)
            ax, ay = -args.speed * omega * math.cos(a - math.pi / 2), -args.speed * omega * math.sin(a - math.pi / 2)
            s.publish(position=(x, y, 0.0), yaw=yaw, velocity=(vx, vy, 0.0), acceleration=(ax, ay, 0.0),
                      yaw_rate=omega, throttle=0.2, steer=min(1.0, 2.7 / args.radius))
            if s.phase == "stopped":
                break
            time.sleep(1.0 / args.rate)
        print(f"done at sim time {s.sim_time:.2f} s")


if __name__ == "__main__":
    main()
