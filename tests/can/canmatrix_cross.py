#!/usr/bin/python3
"""platoon's DBC codec against python3-canmatrix, in both directions, through candump logs.

usage: canmatrix_cross.py CAN_CODEC_TOOL DBC WORKDIR

For every message of DBC, a deterministic set of samples (each signal's raw extremes within its [min|max],
zero, and random raw values; for a multiplexed message, every multiplexor value of the file) is turned into
physical values on the signal's grid (raw * factor + offset, computed in decimal).
  platoon -> canmatrix: can_codec_tool encodes the samples into a candump log; this script reads the log
    (its own candump parser), decodes each frame with canmatrix and compares with the samples.
  canmatrix -> platoon: canmatrix packs the same samples (raw values rounded here, half away from zero),
    this script writes the candump log by hand, can_codec_tool decodes it, and the values are compared.
Values agree within half the signal's factor (IEEE float signals: relative 1e-6), and the two logs' payloads
must be byte for byte the same. Exit 77 (a ctest skip) when canmatrix cannot be imported.
"""
import decimal
import os
import random
import subprocess
import sys

try:
    import canmatrix
    import canmatrix.formats
except ImportError as e:  # pragma: no cover
    print("SKIPPED: canmatrix missing for %s: %s" % (sys.executable, e))
    sys.exit(77)

D = decimal.Decimal
decimal.getcontext().prec = 60


def raw_range(sig):
    """Raw integer range of the signal's bits, within its [min|max] when it has one."""
    n = sig.size
    lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if sig.is_signed else (0, (1 << n) - 1)
    if not (D(sig.min) == 0 and D(sig.max) == 0) and D(sig.factor) > 0:
        to_raw_lo = (D(sig.min) - D(sig.offset)) / D(sig.factor)
        to_raw_hi = (D(sig.max) - D(sig.offset)) / D(sig.factor)
        lo = max(lo, int(to_raw_lo.to_integral_value(rounding=decimal.ROUND_CEILING)))
        hi = min(hi, int(to_raw_hi.to_integral_value(rounding=decimal.ROUND_FLOOR)))
    return lo, hi


def physical_text(sig, raw):
    """The physical value of an integer raw value, as exact decimal text."""
    return str(D(raw) * D(sig.factor) + D(sig.offset))


def samples_for(frame, rng):
    """Lists of {signal: physical text} for one frame."""
    muxer = next((s for s in frame.signals if s.is_multiplexer), None)
    mux_values = sorted({s.mux_val for s in frame.signals if s.mux_val is not None}) if muxer else [None]
    out = []
    for mux in mux_values:
        chosen = [s for s in frame.signals if s.mux_val is None or s.mux_val == mux]
        for k in range(12):
            sample = {}
            for sig in chosen:
                if sig is muxer:
                    sample[sig.name] = str(mux)
                    continue
                if sig.is_float:
                    value = [0.0, 1.5, -1234.5, rng.uniform(-1e4, 1e4)][min(k, 3)]
                    sample[sig.name] = repr(value * float(sig.factor) + float(sig.offset))
                    continue
                lo, hi = raw_range(sig)
                # Beyond 53 bits a double cannot carry every raw value: random values stay within 2^52.
                rlo, rhi = max(lo, -(1 << 52)), min(hi, 1 << 52)
                raw = [lo, hi, min(max(0, lo), hi)][k] if k < 3 else rng.randint(rlo, rhi)
                sample[sig.name] = physical_text(sig, raw)
            out.append(sample)
    return out


def raw_of(sig, text):
    """canmatrix's raw value for a physical text: rounded half away from zero (phys2raw truncates)."""
    if sig.is_float:
        return (float(text) - float(sig.offset)) / float(sig.factor)
    q = (D(text) - D(sig.offset)) / D(sig.factor)
    return int(q.to_integral_value(rounding=decimal.ROUND_HALF_UP))


def parse_candump(path):
    """(id, extended, fd, payload bytes) of each line: the format of can-utils' candump -l."""
    frames = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            _, _, frame = line.split()
            ident, _, data = frame.partition("#")
            fd = data.startswith("#")
            if fd:
                data = data[2:]  # '#' and the flags nibble
            frames.append((int(ident, 16), len(ident) == 8, fd, bytes.fromhex(data)))
    return frames


def close(sig, got, want):
    got, want = float(got), float(want)
    if sig.is_float:
        return abs(got - want) <= 1e-6 * max(1.0, abs(want))
    return abs(got - want) <= float(abs(D(sig.factor))) / 2 * (1 + 1e-12) + 1e-9 * abs(want)


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    tool, dbc, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    db = canmatrix.formats.loadp_flat(dbc)
    rng = random.Random(44)
    table = []  # (frame, sample)
    for frame in db.frames:
        for sample in samples_for(frame, rng):
            table.append((frame, sample))
    failures = []

    # platoon -> canmatrix.
    table_path = os.path.join(work, "samples.txt")
    with open(table_path, "w") as f:
        for i, (frame, sample) in enumerate(table):
            f.write("%d.%06d %s %s\n" % (i // 1000, i % 1000, frame.name, " ".join("%s=%s" % kv for kv in sample.items())))
    platoon_log = os.path.join(work, "platoon.log")
    subprocess.run([tool, "encode", dbc, table_path, platoon_log], check=True)
    platoon_frames = parse_candump(platoon_log)
    if len(platoon_frames) != len(table):
        failures.append("platoon wrote %d frames for %d samples" % (len(platoon_frames), len(table)))
    for (frame, sample), (ident, extended, fd, data) in zip(table, platoon_frames):
        if (ident, extended) != (frame.arbitration_id.id, frame.arbitration_id.extended) or fd != bool(frame.is_fd) or len(data) != frame.size:
            failures.append("%s: platoon's frame %x ext=%s fd=%s len=%d, canmatrix %x ext=%s fd=%s len=%d" % (
                frame.name, ident, extended, fd, len(data), frame.arbitration_id.id, frame.arbitration_id.extended,
                frame.is_fd, frame.size))
            continue
        decoded = frame.decode(bytearray(data))
        for name, want in sample.items():
            sig = frame.signal_by_name(name)
            got = decoded[name].phys_value if name in decoded else None
            if got is None or not close(sig, got, want):
                failures.append("platoon->canmatrix %s.%s: wrote %s, canmatrix read %s" % (frame.name, name, want, got))

    # canmatrix -> platoon.
    canmatrix_log = os.path.join(work, "canmatrix.log")
    canmatrix_payloads = []
    with open(canmatrix_log, "w") as f:
        for i, (frame, sample) in enumerate(table):
            raw = {name: raw_of(frame.signal_by_name(name), text) for name, text in sample.items()}
            data = bytes(frame.encode(raw))
            canmatrix_payloads.append(data)
            ident = ("%08X" if frame.arbitration_id.extended else "%03X") % frame.arbitration_id.id
            sep = "##0" if frame.is_fd else "#"
            f.write("(%d.%06d) can0 %s%s%s\n" % (i // 1000, i % 1000, ident, sep, data.hex().upper()))
    out = subprocess.run([tool, "decode", dbc, canmatrix_log], check=True, capture_output=True, text=True).stdout.splitlines()
    if len(out) != len(table):
        failures.append("platoon decoded %d frames of %d" % (len(out), len(table)))
    for (frame, sample), line in zip(table, out):
        fields = line.split()
        values = dict(kv.split("=", 1) for kv in fields[1:])
        if fields[0] != frame.name or set(values) != set(sample):
            failures.append("canmatrix->platoon: %s decoded as %s with %s, expected %s" % (frame.name, fields[0], sorted(values), sorted(sample)))
            continue
        for name, want in sample.items():
            if not close(frame.signal_by_name(name), values[name], want):
                failures.append("canmatrix->platoon %s.%s: canmatrix wrote %s, platoon read %s" % (frame.name, name, want, values[name]))

    # The same samples give the same bytes.
    for (frame, sample), (_, _, _, mine), theirs in zip(table, platoon_frames, canmatrix_payloads):
        if mine != theirs:
            failures.append("%s %s: platoon %s, canmatrix %s" % (frame.name, sample, mine.hex(), theirs.hex()))

    kinds = {
        "standard": sum(1 for fr in db.frames if not fr.arbitration_id.extended),
        "extended": sum(1 for fr in db.frames if fr.arbitration_id.extended),
        "fd": sum(1 for fr in db.frames if fr.is_fd),
        "motorola signals": sum(1 for fr in db.frames for s in fr.signals if not s.is_little_endian),
        "signed signals": sum(1 for fr in db.frames for s in fr.signals if s.is_signed),
        "multiplexed": sum(1 for fr in db.frames if fr.is_multiplexed),
    }
    print("%d messages (%s), %d samples, %d signal values each way" % (
        len(db.frames), ", ".join("%s %d" % kv for kv in kinds.items()), len(table), sum(len(s) for _, s in table)))
    for line in failures[:40]:
        print("FAIL:", line)
    if failures:
        print("%d disagreements" % len(failures))
        return 1
    print("platoon and canmatrix agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
