#!/usr/bin/env python3
"""Analyse a session log with pandas: per-vehicle speed statistics, the session's events, and (when
matplotlib is installed) a plot of every vehicle's speed over sim time.

    PYTHONPATH=build/python python3 examples/python/analyse_log.py recordings/drivers-....mcap \
        --plot speeds.png

The log is any MCAP file a recorder node wrote (docs/RECORDING.md); it is read by platoon's own reader.
"""
import argparse
import sys

import platoon


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log", help="session log (.mcap)")
    ap.add_argument("--plot", metavar="PNG", help="draw speed over time into this file (needs matplotlib)")
    ap.add_argument("--csv", metavar="FILE", help="also write the per-vehicle statistics as CSV")
    args = ap.parse_args()

    try:
        df = platoon.read_log(args.log)
    except (OSError, ValueError, RuntimeError) as e:
        sys.exit(f"analyse_log: {args.log}: {e}")
    for p in df.attrs["problems"]:
        print(f"warning: {p}", file=sys.stderr)
    if df.empty:
        sys.exit(f"analyse_log: {args.log}: no entity states")
    info = platoon.read_log_info(args.log)
    print(f"session '{info.get('name', '?')}': {len(df)} states of {df['id'].nunique()} entities, "
          f"sim time {df['sim_time'].min():.2f} .. {df['sim_time'].max():.2f} s, {df.attrs['world_states']} world states")

    # Per-vehicle statistics.
    stats = df.groupby(["owner_name", "id"]).agg(kind=("kind", "first"), states=("speed", "size"),
                                                 first_s=("sim_time", "min"), last_s=("sim_time", "max"),
                                                 mean_speed_mps=("speed", "mean"), max_speed_mps=("speed", "max"),
                                                 min_speed_mps=("speed", "min"))
    print(stats.to_string(float_format=lambda v: f"{v:.2f}"))
    if args.csv:
        stats.to_csv(args.csv)
        print(f"wrote {args.csv}")

    # The session's events (markers, parameter changes, pauses ...).
    events = platoon.read_log_events(args.log)
    if not events.empty:
        cols = [c for c in ("sim_time", "type", "event", "name", "text", "path", "value") if c in events.columns]
        print(events[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}"))

    if args.plot:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            sys.exit("analyse_log: --plot needs matplotlib (Debian python3-matplotlib)")
        fig, ax = plt.subplots(figsize=(10, 5))
        for (owner, vid), g in df.groupby(["owner_name", "id"]):
            ax.plot(g["sim_time"], g["speed"], lw=0.8, label=f"{owner}:{int(vid) & 0xFFFF}")
        ax.set_xlabel("sim time [s]")
        ax.set_ylabel("speed [m/s]")
        if df["id"].nunique() <= 12:
            ax.legend(fontsize="small")
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
