#!/usr/bin/env python3
"""Point clouds out of a session log (issue 41 item 4), end to end.

cloud_log_sample writes a log with three lidar scans of walls of known reflectance; `platoon export --pcd
--ply --stream lidar_a` writes them as files; this script reads the PCD and PLY files with its own parsers
(written from the PCD v0.7 and PLY formats, not platoon's), platoon.read_clouds() reads the log, and
every point must be identical in all three. The calibrated reflectivity (the "intensity" field) must read
the walls' reflectance in percent whatever their range, and the retro-reflector above 100.
With --pcl: also pcl_pcd2ply (Debian pcl-tools, test-only) converts each PCD, and its PLY must hold the same
points; exit 77 (a ctest skip) when pcl_pcd2ply is missing.

usage: check_clouds.py SAMPLE_WRITER PLATOON_BINARY WORK_DIR [--pcl]
"""
import json
import math
import os
import shutil
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("SKIPPED: numpy missing")
    sys.exit(77)

import platoon

FIELDS = ["x", "y", "z", "power", "snr", "t", "ring", "echo", "source", "entity", "class", "intensity", "return_type"]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def numpy_type(size, kind):
    return {("F", 4): "<f4", ("F", 8): "<f8", ("U", 1): "u1", ("U", 2): "<u2", ("U", 4): "<u4", ("I", 1): "i1",
            ("I", 2): "<i2", ("I", 4): "<i4"}[(kind, size)]


def read_pcd(path):
    """A binary PCD v0.7 file: (header dict, structured array), from the format's header rules."""
    data = open(path, "rb").read()
    header, pos = {}, 0
    while True:
        end = data.index(b"\n", pos)
        line = data[pos:end].decode("ascii").strip()
        pos = end + 1
        if not line or line.startswith("#"):
            continue
        key, *values = line.split()
        header[key] = values
        if key == "DATA":
            break
    check(header["DATA"] == ["binary"], f"{path}: DATA {header['DATA']}")
    names = header["FIELDS"]
    sizes = [int(s) for s in header["SIZE"]]
    dtype = np.dtype({"names": names, "formats": [numpy_type(s, k) for s, k in zip(sizes, header["TYPE"])],
                      "offsets": list(np.cumsum([0] + sizes[:-1])), "itemsize": sum(sizes)})
    n = int(header["POINTS"][0])
    check(len(data) - pos == n * dtype.itemsize, f"{path}: {len(data) - pos} data bytes for {n} points")
    return header, np.frombuffer(data[pos:], dtype=dtype)


PLY_TYPES = {"char": "i1", "uchar": "u1", "short": "<i2", "ushort": "<u2", "int": "<i4", "uint": "<u4",
             "float": "<f4", "double": "<f8", "int8": "i1", "uint8": "u1", "int16": "<i2", "uint16": "<u2",
             "int32": "<i4", "uint32": "<u4", "float32": "<f4", "float64": "<f8"}


def read_ply(path):
    """The vertex element of a PLY file (binary_little_endian or ascii 1.0), as a structured array."""
    data = open(path, "rb").read()
    end = data.index(b"end_header\n") + len(b"end_header\n")
    lines = data[:end].decode("ascii").splitlines()
    check(lines[0] == "ply", f"{path}: not a PLY file")
    fmt = lines[1].split()[1]
    names, types, count, in_vertex = [], [], 0, False
    for line in lines[2:]:
        t = line.split()
        if t[0] == "element":
            in_vertex = t[1] == "vertex"
            if in_vertex:
                count = int(t[2])
        elif t[0] == "property" and in_vertex:
            check(t[1] != "list", f"{path}: list property in vertex")
            names.append(t[2])
            types.append(PLY_TYPES[t[1]])
    dtype = np.dtype({"names": names, "formats": types})
    if fmt == "binary_little_endian":
        return np.frombuffer(data[end:end + count * dtype.itemsize], dtype=dtype)
    check(fmt == "ascii", f"{path}: format {fmt}")
    rows = data[end:].decode("ascii").split("\n")[:count]
    out = np.zeros(count, dtype=dtype)
    for i, row in enumerate(rows):
        for name, v in zip(names, row.split()):
            out[name][i] = float(v) if dtype[name].kind == "f" else int(v)
    return out


def same_points(a, b, fields, what):
    check(len(a) == len(b), f"{what}: {len(a)} vs {len(b)} points")
    for f in fields:
        x, y = np.asarray(a[f]), np.asarray(b[f])
        if x.dtype.kind == "f":
            equal = np.array_equal(x.view(np.uint32 if x.itemsize == 4 else np.uint64),
                                   y.astype(x.dtype).view(np.uint32 if x.itemsize == 4 else np.uint64))
        else:
            equal = np.array_equal(x.astype(np.int64), y.astype(np.int64))
        check(equal, f"{what}: field {f} differs")


def run(cmd, expect_rc):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != expect_rc:
        fail(f"{' '.join(cmd)}: exit {p.returncode}, expected {expect_rc}\n{p.stdout}\n{p.stderr}")
    return p


def main():
    writer, binary, work = sys.argv[1], sys.argv[2], sys.argv[3]
    with_pcl = "--pcl" in sys.argv[4:]
    pcd2ply = shutil.which("pcl_pcd2ply")
    if with_pcl and not pcd2ply:
        print("SKIPPED: pcl_pcd2ply missing (Debian package pcl-tools, test-only)")
        sys.exit(77)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    log = os.path.join(work, "clouds.mcap")
    info = json.loads(run([writer, log], 0).stdout)

    # Export as PCD and PLY.
    pcd_dir, ply_dir = os.path.join(work, "pcd"), os.path.join(work, "ply")
    run([binary, "export", log, "--pcd", pcd_dir, "--ply", ply_dir, "--stream", "lidar_a"], 0)
    index = open(os.path.join(pcd_dir, "clouds.csv")).read().splitlines()
    check(index[0] == "file,sim_time_s,stamp_ns,points,frame,entity_id", f"clouds.csv header {index[0]}")
    rows = [r.split(",") for r in index[1:]]
    check([r[0] for r in rows] == ["000000.100000000", "000000.200000000", "000000.300000000"],
          f"file names {[r[0] for r in rows]}")
    check(sum(int(r[3]) for r in rows) == info["points"], "clouds.csv point total")

    # Python reads the same clouds from the log.
    clouds = platoon.read_clouds(log, "lidar_a")
    check(len(clouds) == 3, f"read_clouds: {len(clouds)} clouds")
    check([c.stamp_ns for c in clouds] == [int(r[2]) for r in rows], "stamps")
    for c, r in zip(clouds, rows):
        header, pcd = read_pcd(os.path.join(pcd_dir, r[0] + ".pcd"))
        check(header["FIELDS"] == FIELDS, f"PCD FIELDS {header['FIELDS']}")
        check(header["VERSION"] == ["0.7"], "PCD VERSION")
        vp = [float(v) for v in header["VIEWPOINT"]]
        check(np.allclose(vp[:3], c.mount_position) and np.allclose(vp[3:], c.mount_orientation),
              f"VIEWPOINT {vp} vs mount {c.mount_position} {c.mount_orientation}")
        same_points(pcd, c.points, FIELDS, f"{r[0]}.pcd vs read_clouds")
        ply = read_ply(os.path.join(ply_dir, r[0] + ".ply"))
        same_points(ply, c.points, FIELDS, f"{r[0]}.ply vs read_clouds")
        check(c.frame_id == "sensor" and not c.fused and c.entity_id == 0x1234, "cloud metadata")
        if with_pcl:
            out = os.path.join(work, r[0] + "_pcl.ply")
            run([pcd2ply, os.path.join(pcd_dir, r[0] + ".pcd"), out], 0)
            pcl = read_ply(out)
            # pcl_pcd2ply keeps every field it can name in PLY (x y z and the scalar fields).
            shared = [f for f in FIELDS if f in pcl.dtype.names]
            check({"x", "y", "z", "intensity"} <= set(shared), f"pcl_pcd2ply's PLY fields {pcl.dtype.names}")
            same_points(pcl, c.points, shared, f"pcl_pcd2ply {r[0]} vs read_clouds")
            print(f"pcl_pcd2ply {r[0]}.pcd: {len(pcl)} points, fields {', '.join(shared)} identical")
    if with_pcl:
        return 0

    # The calibrated reflectivity: a full-beam echo (the beam's only one) reads rho x cos(incidence) in percent
    # at 15 m and at 30 m alike; the retro-reflector reads above 100.
    pts = np.concatenate([c.points for c in clouds])
    r = np.sqrt(pts["x"].astype(float) ** 2 + pts["y"] ** 2 + pts["z"] ** 2)
    cos_i = pts["x"] / r  # walls face -x; the sensor sits at the origin, unrotated, in the scan
    for entity, rho in ((1, 10.0), (2, 80.0)):
        sel = (pts["entity"] == entity) & (pts["return_type"] == 1)
        check(sel.sum() > 100, f"entity {entity}: {sel.sum()} full-beam points")
        err = np.abs(pts["intensity"][sel] - rho * cos_i[sel])
        check(err.max() <= 1.0, f"entity {entity}: reflectivity off by {err.max():.2f} counts")
        print(f"wall {entity} (rho {rho:g} %, {np.median(r[sel]):.1f} m): {sel.sum()} points, intensity "
              f"{pts['intensity'][sel].min()}..{pts['intensity'][sel].max()}, power "
              f"{pts['power'][sel].min():.3g}..{pts['power'][sel].max():.3g} W")
    sign = pts["entity"] == 3
    check(sign.sum() > 3 and pts["intensity"][sign].min() > 100, "retro-reflector reads above 100")
    print(f"sign: {sign.sum()} points, intensity {pts['intensity'][sign].min()}..{pts['intensity'][sign].max()}")
    check(set(np.unique(pts["return_type"])) <= {1, 2, 3, 4} and 1 in pts["return_type"], "return types")

    # A fused cloud is in the vehicle frame; a time window selects clouds.
    fused = platoon.read_clouds(log, "fused")
    check(len(fused) == 1 and fused[0].fused and fused[0].frame_id == "vehicle", "fused cloud")
    same_points(fused[0].points, clouds[1].points, FIELDS, "fused vs its scan")
    check([c.stamp_ns for c in platoon.read_clouds(log, "lidar_a", start=0.15, end=0.3)] == [200000000, 300000000],
          "start/end window")
    check(list(clouds[0].frame().columns) == FIELDS if _have_pandas() else True, "DataFrame columns")

    # Errors: name the log's point-cloud streams.
    for stream, words in (("nope", "no data stream"), ("radar_a", "carries no point clouds")):
        try:
            platoon.read_clouds(log, stream)
            fail(f"read_clouds({stream!r}) did not raise")
        except ValueError as e:
            check(words in str(e) and "(its point-cloud streams: fused, lidar_a)" in str(e), f"read_clouds({stream!r}): {e}")
    p = run([binary, "export", log, "--pcd", pcd_dir, "--stream", "radar_a"], 2)
    check("carries radar messages, not point clouds" in p.stderr and "fused, lidar_a" in p.stderr, p.stderr)
    p = run([binary, "export", log, "--pcd", pcd_dir, "--stream", "nope"], 2)
    check('has no data stream "nope"' in p.stderr, p.stderr)
    p = run([binary, "export", log, "--pcd", pcd_dir], 2)
    check("--pcd needs --stream ID" in p.stderr and "fused, lidar_a" in p.stderr, p.stderr)
    p = run([binary, "export", log, "--ply", ply_dir, "--stream", "lidar_a", "--from", "5"], 1)
    check("nothing written" in p.stderr, p.stderr)

    # Radar, objects, IMU and GNSS streams as DataFrames, with the values the sample wrote.
    if _have_pandas():
        radar = platoon.read_stream(log, "radar_a")
        check(radar.attrs["kind"] == "radar" and len(radar) == 2, f"radar rows {len(radar)}")
        check(list(radar["id"]) == [77, 0] and list(radar["false_positive"]) == [False, True], "radar ids")
        check(np.allclose(radar["range"], [20, 25]) and np.allclose(radar["azimuth"], [-0.1, 0.1]), "radar range/az")
        check(np.allclose(radar["sim_time"], 0.2) and np.allclose(radar["rcs_dbsm"], [10, 11]), "radar time/rcs")
        objects = platoon.read_stream(log, "objects_a")
        check(len(objects) == 1 and objects["id"][0] == 77 and np.isclose(objects["vx"][0], 8.0)
              and np.isclose(objects["height"][0], 1.5), "objects row")
        imu = platoon.read_stream(log, "imu_a")
        check(len(imu) == 3 and np.allclose(imu["ax"], [1, 2, 3]) and np.allclose(imu["wz"], 0.2)
              and list(imu["stamp_ns"]) == [100000000, 200000000, 300000000], "imu rows")
        check(len(platoon.read_stream(log, "imu_a", start=0.25)) == 1, "imu window")
        gnss = platoon.read_stream(log, "gnss_a")
        check(len(gnss) == 1 and gnss["latitude"][0] == 48.1372 and gnss["altitude"][0] == 519.25
              and gnss["vn"][0] == 2.0 and gnss["id"][0] == 0x1234, "gnss row")
        try:
            platoon.read_stream(log, "lidar_a")
            fail("read_stream of a cloud stream did not raise")
        except ValueError as e:
            check("read_clouds" in str(e) and "radar_a (radar)" in str(e), str(e))
        print(f"streams: radar {len(radar)} detections, objects {len(objects)}, imu {len(imu)}, gnss {len(gnss)}")
    print(f"OK: {len(clouds)} clouds, {len(pts)} points identical in PCD, PLY and read_clouds")
    return 0


def _have_pandas():
    try:
        import pandas  # noqa: F401
        return True
    except ImportError:
        return False


if __name__ == "__main__":
    sys.exit(main())
