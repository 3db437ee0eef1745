"""Reading what a session leaves behind: session logs (MCAP, docs/RECORDING.md) and data-write CSVs.

read_log(path)         entity states of the log's /platoon/world channel, one row per entity and stamp
read_log_events(path)  the /platoon/events channel (session and node events, markers, parameter changes)
read_log_info(path)    the /platoon/session record (session name, the session file's text, recorder)
read_csv(path)         a driver's data-write CSV, with the unit of each column from its header suffix
entity_names(ids, ...) readable entity names ("ego", "city:3", a session file's vehicle_names)

The MCAP file is read by platoon's own reader and codec (the compiled _platoon module). pandas is
needed for DataFrames; without it, pass frame=False to get dicts of numpy arrays.
"""
import json

from . import _platoon

# Header suffix -> unit, as docs/RECORDING.md names the data-write columns ("speed_mps": m/s).
_UNITS = {"_s": "s", "_m": "m", "_rad": "rad", "_mps": "m/s", "_mps2": "m/s^2", "_radps": "rad/s", "_norm": "1"}


def _problems(path, problems, strict):
    if problems and strict:
        raise ValueError(f"{path}: " + "; ".join(problems))


def _vehicle_hash(node):
    """FNV-1a (32 bit) of a node name: the upper part of its vehicles' ids (platoon.vehicle_id)."""
    h = 2166136261
    for c in node.encode():
        h = ((h ^ c) * 16777619) & 0xFFFFFFFF
    return h


def entity_names(ids, node_names=(), session_text=None):
    """Readable names of entity ids, {id: name}, as the viewer, events, exports and the seat's data
    write name them: a session-file name ([[node]] vehicle_names), a driver seat's car by its node name
    ("ego"), another node's vehicle "<node>:<index>" ("city:3"), else "#" and the id in 16 hex digits.
    node_names: names of nodes the session file may not list; session_text: the session file's text
    (read_log_info(path)["config"]) for roles and vehicle_names."""
    naming = []  # (node, driver, vehicle_names), the session file's first
    if session_text:
        import tomllib
        try:
            doc = tomllib.loads(session_text)
        except tomllib.TOMLDecodeError:
            doc = {}
        for n in doc.get("node", []):
            if isinstance(n, dict) and isinstance(n.get("name"), str):
                names = n.get("vehicle_names", [])
                naming.append((n["name"], n.get("role") == "driver", list(names) if isinstance(names, list) else []))
    naming += [(str(n), False, []) for n in node_names]
    by_hash = {}
    for entry in naming:
        by_hash.setdefault(_vehicle_hash(entry[0]), entry)
    out = {}
    for i in {int(x) for x in ids}:
        entry = by_hash.get(i >> 16) if i >> 48 == 0 else None
        index = i & 0xFFFF
        if entry is None:
            out[i] = f"#{i:016x}"
            continue
        node, driver, vehicle_names = entry
        if index < len(vehicle_names) and vehicle_names[index]:
            out[i] = vehicle_names[index]
        elif driver and index == 0:
            out[i] = node
        else:
            out[i] = f"{node}:{index}"
    return out


def read_log(path, frame=True, strict=False):
    """Entity states of a session log: one row per entity and stamp (as the world broadcasts carried
    them, each distinct state once), sorted by sim time then id.

    Columns: sim_time (s, the state's stamp), stamp_ns, id, name (the entity's readable name, entity_names),
    kind (name), owner (node id), owner_name,
    x, y, z (m), yaw (rad), yaw_rate (rad/s), vx, vy, vz, speed (m/s), ax, ay, az (m/s^2), length,
    width, height (m), steer, throttle, brake, stale.
    DataFrame.attrs: node_names {id: name}, world_states, removals (dict of id, sim_time_ns arrays),
    problems (what the reader found wrong: a log cut by a crash is read up to its cut). strict=True
    raises ValueError on any problem. frame=False returns a dict of numpy arrays instead.
    """
    r = _platoon.read_log_states(str(path))
    _problems(path, r["problems"], strict)
    s = r["states"]
    names = r["node_names"]
    info = read_log_info(path)
    display = entity_names(s["id"], names.values(), info.get("config"))
    cols = {
        "sim_time": s["stamp"], "stamp_ns": s["stamp_ns"], "id": s["id"],
        "name": [display[int(i)] for i in s["id"]],
        "kind": [_platoon.KIND_NAMES[k] if k < len(_platoon.KIND_NAMES) else "unknown" for k in s["kind"]],
        "owner": s["owner"], "owner_name": [names.get(int(o), "") for o in s["owner"]],
        "x": s["position"][:, 0], "y": s["position"][:, 1], "z": s["position"][:, 2],
        "yaw": s["yaw"], "yaw_rate": s["yaw_rate"],
        "vx": s["velocity"][:, 0], "vy": s["velocity"][:, 1], "vz": s["velocity"][:, 2], "speed": s["speed"],
        "ax": s["acceleration"][:, 0], "ay": s["acceleration"][:, 1], "az": s["acceleration"][:, 2],
        "length": s["size"][:, 0], "width": s["size"][:, 1], "height": s["size"][:, 2],
        "steer": s["steer"], "throttle": s["throttle"], "brake": s["brake"], "stale": s["stale"],
    }
    meta = {"node_names": names, "world_states": r["world_states"], "removals": r["removals"],
            "problems": r["problems"]}
    if not frame:
        cols.update(meta)
        return cols
    import pandas as pd
    df = pd.DataFrame(cols)
    df.attrs.update(meta)
    return df


def read_log_events(path, frame=True, strict=False):
    """The events of a session log (/platoon/events), one row per event in log order.

    Every event has type ("session", "node", "param", "marker", ...), event, sim_time_ns,
    server_time_ns and world_seq, then fields of its type (docs/RECORDING.md, "Channels"); a column a
    type lacks is NaN. A column sim_time (s) is added. frame=False returns a list of dicts.
    """
    r = _platoon.read_log_json(str(path))
    _problems(path, r["problems"], strict)
    events = []
    for text, log_ns in zip(r["events"], r["log_time_ns"]):
        try:
            e = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: /platoon/events at log time {int(log_ns)} ns is not JSON: {err}") from None
        e.setdefault("sim_time_ns", int(log_ns))
        e["sim_time"] = e["sim_time_ns"] * 1e-9
        events.append(e)
    if not frame:
        return events
    import pandas as pd
    return pd.DataFrame(events)


def read_log_info(path):
    """The /platoon/session record of a log as a dict (name, config, config_path, recorder); {} if absent."""
    r = _platoon.read_log_json(str(path))
    return json.loads(r["session"][0]) if r["session"] else {}


def read_csv(path):
    """A data-write CSV (docs/RECORDING.md, "Data write") as a pandas DataFrame. The header names carry
    their units ("speed_mps"); DataFrame.attrs["units"] maps each column to its unit ("m/s"; "" for
    road_id, lane and the first column, name: the seat's car by its readable name). The last column,
    marker, is text: the session's markers in the row's period joined by " | ", "" in a row without any;
    df[df.marker != ""] lists the rows that hold one."""
    import pandas as pd
    df = pd.read_csv(path, dtype={"marker": str})
    if "marker" in df.columns:
        df["marker"] = df["marker"].fillna("").astype(str)
    units = {}
    for c in df.columns:
        units[c] = ""
        for suffix in sorted(_UNITS, key=len, reverse=True):
            if c.endswith(suffix):
                units[c] = _UNITS[suffix]
                break
    df.attrs["units"] = units
    return df


def drive_metrics(data, event=None, **settings):
    """Driving metrics of a drive or of a window of it (docs/RECORDING.md, "Driving metrics"): SDLP, time
    headway, TTC, time to line crossing, steering reversal rate, speed mean and SD, brake reaction time.

    data: a data-write CSV as read_csv gives it (a pandas DataFrame), or a dict of columns; the columns are
    named as the CSV names them ("sim_time_s", "speed_mps", "steer_norm", "brake_norm", "lane",
    "lane_offset_m", "time_headway_s", "ttc_s") or as [node.data_write] variables ("speed"); sim_time_s is
    required, the others feed the metrics they are for; rows in sim-time order.
    event: sim time in s of the event the brake reaction time is measured from (None: none).
    settings: steering_wheel_lock_deg (450), reversal_cutoff_hz (0.6), reversal_gap_deg (2), lane_width_m
    (3.5), vehicle_width_m (1.8), brake_threshold (0.1), thw_short_s (1), reaction_window_s (5).

        df = platoon.read_csv("out/robot_0.csv")
        m = platoon.drive_metrics(df[(df.sim_time_s >= 60) & (df.sim_time_s < 70)], event=60.0)
        print(m["sdlp_m"], m["reversal_rate_per_min"], m["brake_reaction_s"])

    Returns a dict: rows, duration_s, speed_mean_mps, speed_sd_mps, sdlp_m, lane_changes, thw_mean_s,
    thw_min_s, thw_below_share, ttc_min_s, tlc_min_s, reversals, reversal_rate_per_min, brake_reaction_s
    (NaN where the rows gave nothing to compute it from).
    """
    if hasattr(data, "columns") and hasattr(data, "__getitem__") and not isinstance(data, dict):
        columns = {str(c): [float(v) for v in data[c].to_numpy(dtype=float)] for c in data.columns
                   if c in _METRIC_COLUMNS}
    else:
        columns = {str(k): [float(v) for v in data[k]] for k in data}
    if event is not None:
        settings["event_s"] = float(event)
    return _platoon.drive_metrics_of_columns(columns, settings)


# The data-write columns the drive metrics read (CSV headers and variable names).
_METRIC_COLUMNS = {"sim_time_s", "speed_mps", "steer_norm", "brake_norm", "lane", "lane_offset_m", "time_headway_s",
                   "ttc_s", "sim_time", "speed", "steer", "brake", "lane_offset", "time_headway", "ttc"}
