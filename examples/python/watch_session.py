#!/usr/bin/env python3
"""Watch a running platoon session: the node table, then one line per second with the session phase,
sim time and every entity (id, kind, owner, position, speed), and the session's events as they come.

    PYTHONPATH=build/python python3 examples/python/watch_session.py --server 127.0.0.1:7400

Start a session first, e.g. `build/bin/platoon run configs/demo.toml`. Ctrl-C stops watching.
"""
import argparse
import time

import platoon


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", default=None,
                    help="HOST:PORT of the server (default: PLATOON_SERVER, else the session running here, else 127.0.0.1:7400)")
    ap.add_argument("--period", type=float, default=1.0, help="seconds between two prints (default %(default)s)")
    ap.add_argument("--count", type=int, default=0, help="stop after this many prints (0: until Ctrl-C)")
    ap.add_argument("--max-rows", type=int, default=10, help="entities printed per line at most (default %(default)s)")
    args = ap.parse_args()
    if args.period <= 0:
        ap.error("--period must be > 0")

    with platoon.Session(args.server, name="watch", timeout=10) as s:
        print(f"joined session '{s.session_name}' at {s.server} as node {s.node_id}")
        time.sleep(0.5)  # the first keyframe brings the node table
        for n in s.nodes():
            print(f"  node {n['id']:>3} {n['name']:<16} {n['role']:<9} {n['host']:<16} "
                  f"{n['rate_hz']:6.1f} Hz  {'LOST' if n['lost'] else 'ok'}")
        printed = 0
        try:
            while args.count == 0 or printed < args.count:
                e = s.entities(dead_reckoned=True)
                print(f"[{s.phase:>8}] sim {s.sim_time:9.3f} s  {len(e['id'])} entities")
                for i in range(min(len(e["id"]), args.max_rows)):
                    x, y, _ = e["position"][i]
                    print(f"    {int(e['id'][i]):>16x} {platoon.KIND_NAMES[e['kind'][i]]:<10} owner {int(e['owner'][i]):>3}"
                          f"  x {x:9.2f}  y {y:9.2f}  {e['speed'][i]:6.2f} m/s")
                for ev in s.new_events():
                    print(f"    event #{ev['sequence']} {ev['kind']} at {ev['sim_time']:.3f} s from "
                          f"{ev['source']}: {ev['text']}")
                printed += 1
                time.sleep(args.period)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
