#!/usr/bin/env python3
"""Tells a stalled CPU from a slow test: one sleeper pinned to each CPU wakes every millisecond and
reports every wake-up later than --threshold-ms, with the CPU, the monotonic and wall-clock gaps and
the wall-clock time. A CPU the hypervisor did not run (a stalled vCPU, a paused VM) shows here while
the test that failed in the same second shows the rest. Used by scripts/stress_suite.sh; runs until
killed.

    scripts/cpu_stall_probe.py [--threshold-ms 250] [--out FILE]
    e.g. scripts/cpu_stall_probe.py --threshold-ms 100 --out /tmp/stalls.log & ...; kill %1
"""
import argparse
import ctypes
import os
import signal
import sys
import time


def probe(cpu: int, threshold_s: float, out) -> None:
    os.sched_setaffinity(0, {cpu})
    asked = 0.001
    last_m, last_w = time.monotonic(), time.time()
    while True:
        time.sleep(asked)
        now_m, now_w = time.monotonic(), time.time()
        late = now_m - last_m - asked
        if late > threshold_s:
            out.write(f"{time.strftime('%H:%M:%S', time.localtime(now_w))} cpu {cpu}: woke {late * 1e3:.0f} ms "
                      f"late (wall clock gap {(now_w - last_w) * 1e3:.0f} ms)\n")
            out.flush()
        last_m, last_w = now_m, now_w


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threshold-ms", type=float, default=250.0, help="report wake-ups later than this (default 250)")
    ap.add_argument("--out", default="-", help="file to append reports to (default: stdout)")
    args = ap.parse_args()
    if not args.threshold_ms > 0:
        print(f"cpu_stall_probe.py: --threshold-ms must be > 0, got {args.threshold_ms}", file=sys.stderr)
        return 2
    try:
        out = sys.stdout if args.out == "-" else open(args.out, "a", encoding="utf-8")
    except OSError as e:
        print(f"cpu_stall_probe.py: cannot open --out '{args.out}': {e.strerror}", file=sys.stderr)
        return 2
    # One process a CPU (no shared interpreter lock), each pinned; they die with this one.
    children = []
    for cpu in sorted(os.sched_getaffinity(0)):
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            try:  # die with the parent, even when it is killed with SIGKILL (PR_SET_PDEATHSIG = 1)
                ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
            except (OSError, AttributeError):
                pass
            probe(cpu, args.threshold_ms / 1e3, out)
        children.append(pid)

    def stop(*_):
        for pid in children:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main())
