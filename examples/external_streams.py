#!/usr/bin/env python3
"""Sends the external streams of a driver seat (docs/PROTOCOL.md, "External streams"), standard library only.

  examples/external_streams.py control --port 47100 [--steer 0.1 --throttle 0.3 --seconds 10 --rate 100]
  examples/external_streams.py pose --port 47101 [--seconds 10 --rate 120]

`control` drives the seat configured with input = "stream", stream_port = PORT (constant steer, throttle and
brake; a real controller computes them from the world each period). `pose` moves the eye of a seat with
head_tracking_port = PORT: a slow lean and look around, as a head tracker would send.
"""
import argparse
import math
import socket
import struct
import sys
import time

CONTROL = struct.Struct("<4sIqddd")    # "PLC1", seq, sent_ns, steer, throttle, brake: 40 bytes
POSE = struct.Struct("<4sIqdddddd")    # "PLP1", seq, sent_ns, x, y, z (m), yaw, pitch, roll (rad): 64 bytes


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stream", choices=["control", "pose"])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=0.0, help="Hz (default: 100 control, 120 pose)")
    parser.add_argument("--steer", type=float, default=0.0, help="-1..1 of full lock, left positive")
    parser.add_argument("--throttle", type=float, default=0.3)
    parser.add_argument("--brake", type=float, default=0.0)
    args = parser.parse_args()
    if not 1 <= args.port <= 65535:
        print(f"--port: expected 1..65535, got {args.port}", file=sys.stderr)
        return 2
    rate = args.rate or (100.0 if args.stream == "control" else 120.0)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    start = time.monotonic()
    seq = 0
    while time.monotonic() - start < args.seconds:
        t = seq / rate
        if args.stream == "control":
            data = CONTROL.pack(b"PLC1", seq & 0xFFFFFFFF, time.time_ns(), args.steer, args.throttle, args.brake)
        else:
            data = POSE.pack(b"PLP1", seq & 0xFFFFFFFF, time.time_ns(), 0.10 * math.sin(math.pi * t),
                             0.05 * math.cos(math.pi * t), 0.0, 0.3 * math.sin(0.5 * math.pi * t), 0.0, 0.0)
        sock.sendto(data, (args.host, args.port))
        seq += 1
        time.sleep(max(0.0, start + seq / rate - time.monotonic()))
    print(f"sent {seq} {args.stream} datagrams to udp://{args.host}:{args.port}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
