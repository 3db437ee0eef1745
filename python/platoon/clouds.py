"""Point clouds of session logs as numpy structured arrays (docs/RECORDING.md, "Point clouds in Python"),
and their radar, object-list, IMU and GNSS streams as DataFrames (read_stream; "Sensor streams in Python").

    import platoon
    clouds = platoon.read_clouds("recordings/lidar_farm.mcap", "lidar_front")
    c = clouds[0]
    c.sim_time, len(c.points), c.points["intensity"].max()     # s, points, reflectivity 0..255
    xyz = platoon.xyz(c.points)                                # N x 3 float32
    df = c.frame()                                             # pandas DataFrame, one row per point

Each point is the recorded 36-byte point record (shared/include/platoon/point_record.hpp), with the field
names of the PCD and PLY files `platoon export --pcd/--ply` writes: x y z (m), power (received power, W),
snr, t (s after the scan start), ring, echo, source, entity, class, intensity (calibrated reflectivity
0..255: 0-100 diffuse reflectance in %, 101-255 retro-reflectors; docs/LIDAR.md), return_type
(0 unknown, 1 only, 2 first, 3 last, 4 intermediate echo of its beam).
"""
import numpy as np

from . import _platoon

#: The point record as a numpy dtype: little-endian, packed, 36 bytes, the PCD/PLY field names.
CLOUD_DTYPE = np.dtype({
    "names": ["x", "y", "z", "power", "snr", "t", "ring", "echo", "source", "entity", "class", "intensity",
              "return_type"],
    "formats": ["<f4", "<f4", "<f4", "<f4", "<f4", "<f4", "<u2", "u1", "u1", "<u4", "<u2", "u1", "u1"],
    "offsets": [0, 4, 8, 12, 16, 20, 24, 26, 27, 28, 32, 34, 35],
    "itemsize": 36,
})

#: PointRecord::return_type values by name.
RETURN_TYPES = {0: "unknown", 1: "only", 2: "first", 3: "last", 4: "intermediate"}


class Cloud:
    """One recorded cloud: sim_time (s), stamp_ns, entity_id (the vehicle carrying the sensor), fused
    (a fusion stream's cloud, in the vehicle frame) or a raw scan (in the sensor frame, whose pose on the
    vehicle is mount_position (m) and mount_orientation (w, x, y, z)), and points (CLOUD_DTYPE array)."""

    __slots__ = ("stream", "stamp_ns", "entity_id", "fused", "mount_position", "mount_orientation", "points")

    def __init__(self, stream, stamp_ns, entity_id, fused, mount_position, mount_orientation, points):
        self.stream = stream
        self.stamp_ns = int(stamp_ns)
        self.entity_id = int(entity_id)
        self.fused = bool(fused)
        self.mount_position = mount_position
        self.mount_orientation = mount_orientation
        self.points = points

    sim_time = property(lambda self: self.stamp_ns * 1e-9, doc="Sim time of the cloud (scan start), in s.")
    frame_id = property(lambda self: "vehicle" if self.fused else "sensor",
                        doc='"sensor" (a raw scan, sensor frame) or "vehicle" (a fused cloud).')

    def frame(self):
        """The points as a pandas DataFrame, one row per point, columns as CLOUD_DTYPE's fields."""
        import pandas as pd
        return pd.DataFrame({name: self.points[name] for name in CLOUD_DTYPE.names})

    def __len__(self):
        return len(self.points)

    def __repr__(self):
        return (f"platoon.Cloud(stream={self.stream!r}, sim_time={self.sim_time:.6f}, points={len(self.points)}, "
                f"frame={self.frame_id!r})")


def xyz(points):
    """The x, y, z of a CLOUD_DTYPE array as an N x 3 float32 array."""
    return np.stack([points["x"], points["y"], points["z"]], axis=1)


def read_clouds(path, stream, start=None, end=None, strict=False):
    """Every recorded cloud of data stream `stream` (a lidar's or a fusion's id) of the session log at
    `path`, in log order, as a list of Cloud; only those with sim time in [start, end] s when given.

    The points are the records exactly as recorded (the same bytes `platoon export --pcd` writes).
    Raises ValueError naming the log's point-cloud streams when `stream` is none of them; strict=True
    also raises on any problem the reader found (a log cut by a crash is otherwise read up to its cut).
    """
    from_ns = -(2 ** 63) if start is None else int(round(float(start) * 1e9))
    to_ns = 2 ** 63 - 1 if end is None else int(round(float(end) * 1e9))
    r = _platoon.read_log_clouds(str(path), str(stream), from_ns, to_ns)
    if r["problems"] and strict:
        raise ValueError(f"{path}: " + "; ".join(r["problems"]))
    streams = r["streams"]
    if not streams.get(str(stream), False):
        clouds = ", ".join(sorted(s for s, is_cloud in streams.items() if is_cloud)) or "none"
        what = "has no data stream" if str(stream) not in streams else "carries no point clouds on"
        raise ValueError(f"{path} {what} {stream!r} (its point-cloud streams: {clouds})")
    return clouds_of(r, stream)


def clouds_of(r, stream):
    """The Cloud list of the compiled core's cloud columns `r` (read_clouds, Session.clouds)."""
    all_points = np.frombuffer(r["points"], dtype=CLOUD_DTYPE)
    out = []
    first = 0
    for i, n in enumerate(r["point_count"]):
        n = int(n)
        out.append(Cloud(str(stream), r["stamp_ns"][i], r["entity_id"][i], r["fused"][i], r["mount_position"][i],
                         r["mount_orientation"][i], all_points[first:first + n]))
        first += n
    return out


# Column order and units of read_stream, per stream kind (docs/RECORDING.md, "Sensor streams in Python").
_STREAM_COLUMNS = {
    "radar": ["range", "azimuth", "range_rate", "rcs_dbsm", "object_class", "false_positive", "length", "width",
              "orientation", "x", "y"],
    "objects": ["object_class", "truth_class", "x", "y", "z", "vx", "vy", "vz", "length", "width", "height"],
    "imu": ["wx", "wy", "wz", "ax", "ay", "az"],
    "gnss": ["latitude", "longitude", "altitude", "ve", "vn", "vu", "horizontal_sigma", "vertical_sigma"],
}
_INTEGER_COLUMNS = {"object_class", "truth_class"}


def read_stream(path, stream, start=None, end=None, frame=True, strict=False):
    """The radar, object-list, IMU or GNSS messages of data stream `stream` of a session log, in log order.

    One row per detection (radar), per object (objects) or per message (imu, gnss), with sim_time (s),
    stamp_ns and id (radar: the detection's ground-truth entity, 0 for a false positive; objects: the
    track id; imu, gnss: the vehicle carrying the sensor), then by kind:
      radar:   range (m), azimuth (rad), range_rate (m/s), rcs_dbsm, object_class, false_positive, length,
               width (m), orientation (rad), x, y (m, sensor frame)
      objects: object_class, truth_class, x, y, z (m), vx, vy, vz (m/s, sensor-frame axes), length, width,
               height (m)
      imu:     wx, wy, wz (rad/s), ax, ay, az (m/s^2), sensor frame
      gnss:    latitude, longitude (deg), altitude (m), ve, vn, vu (m/s, ENU), horizontal_sigma,
               vertical_sigma (m)
    DataFrame.attrs["kind"] names the kind. frame=False returns a dict of numpy arrays. Only rows with sim
    time in [start, end] s when given. Raises ValueError naming the log's streams of these kinds when
    `stream` is none of them (point clouds: read_clouds).
    """
    from_ns = -(2 ** 63) if start is None else int(round(float(start) * 1e9))
    to_ns = 2 ** 63 - 1 if end is None else int(round(float(end) * 1e9))
    r = _platoon.read_log_sensor(str(path), str(stream), from_ns, to_ns)
    if r["problems"] and strict:
        raise ValueError(f"{path}: " + "; ".join(r["problems"]))
    streams = r["streams"]
    kind = streams.get(str(stream))
    if kind not in _STREAM_COLUMNS:
        known = ", ".join(f"{s} ({k})" for s, k in sorted(streams.items()) if k in _STREAM_COLUMNS) or "none"
        what = "has no data stream" if kind is None else f"carries {kind} messages on"
        raise ValueError(f"{path} {what} {stream!r}; read_stream reads radar, objects, imu and gnss streams "
                         f"(the log's: {known}; point clouds: read_clouds)")
    return stream_rows_of(r, kind, frame, r["problems"])


#: The stream kinds read_stream and Session.sensor read.
STREAM_KINDS = tuple(_STREAM_COLUMNS)


def stream_rows_of(r, kind, frame, problems=()):
    """read_stream's DataFrame (or dict, frame=False) of the compiled core's sensor columns `r`."""
    cols = {"sim_time": r["stamp_ns"] * 1e-9, "stamp_ns": r["stamp_ns"], "id": r["id"]}
    n = len(r["stamp_ns"])
    for name in _STREAM_COLUMNS[kind]:
        v = r["columns"].get(name, np.zeros(n))
        if name in _INTEGER_COLUMNS:
            v = v.astype(np.uint8)
        elif name == "false_positive":
            v = v.astype(bool)
        cols[name] = v
    if not frame:
        cols["kind"] = kind
        return cols
    import pandas as pd
    df = pd.DataFrame(cols)
    df.attrs["kind"] = kind
    df.attrs["problems"] = list(problems)
    return df
