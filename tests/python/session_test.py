#!/usr/bin/env python3
"""ctest python_session: the Python package `platoon` against a real session.

    session_test.py PLATOON SOURCE_DIR WORK_DIR      (PYTHONPATH=build/python)

Starts `platoon run` on a session written into WORK_DIR (four free loopback ports from
platoon.free_ports; road traffic, a scripted driver seat with a data write, a recorder), then, from
Python:
  - joins, waits for the session to run and reads the traffic node's vehicles as numpy arrays
    (as many as configured, each with the id VehicleId("traffic", i), owned by the traffic node);
  - joins with wait_world=True and finds the whole world in entities() at once; joins through
    PLATOON_SERVER and through the discovery file platoon run writes (a private XDG_RUNTIME_DIR);
    reads the session file the server's Welcome carried;
  - sets a node parameter and reads it back at once, several times (the set returns once in force);
  - publishes a car for a stretch of sim time and sees it come back: in its own world (own = True,
    the stamp and position it sent) and in a second client's world (owned by the first);
  - lists, gets and sets a server parameter and reads it back; a refused set raises ParamError;
  - sets a marker and finds it in the server's event log; pauses and resumes the session;
  - reads the seat's lidar and IMU live (Session.clouds, Session.sensor) and finds the same clouds and
    rows, byte for byte, in the recorder's log afterwards (read_clouds, read_stream);
  - stops the session and reads the recorder's log into a pandas DataFrame (rows, monotone sim time,
    the traffic ids and the published car with the positions it was sent with), its events, and the
    seat's data-write CSV.
Exit 77 (ctest: skipped) when numpy or pandas is missing.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    import pandas as pd
except ImportError as e:
    print(f"SKIPPED: {e} (scripts/install-deps.sh installs python3-pandas)")
    sys.exit(77)

import platoon

VEHICLES = 4          # traffic vehicles in the session
CSV_RATE_HZ = 20      # the seat's data-write rate
PUBLISH_HZ = 20       # how often the test publishes its car
PUBLISH_S = 3.0       # sim seconds it publishes for


def fail(why):
    print(f"FAIL: {why}", file=sys.stderr)
    sys.exit(1)


def check(cond, why):
    if not cond:
        fail(why)
    print(f"ok: {why}")


RUN = None       # the `platoon run` process and its log's path


def wait_for(what, cond, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if RUN and RUN[0].poll() is not None:
            with open(RUN[1]) as f:
                tail = f.readlines()[-30:]
            fail(f"platoon run exited with {RUN[0].returncode} while waiting for {what}:\n" + "".join(tail))
        v = cond()
        if v:
            return v
        time.sleep(0.02)
    fail(f"timed out after {timeout_s} s waiting for {what}")


def session_text(ports):
    return f"""
[session]
name = "pytest"
server_host = "127.0.0.1"

[server]
bind_address = "127.0.0.1"
control_port = {ports[0]}
time_port = {ports[1]}
world_port = {ports[2]}
state_port = {ports[3]}

[road]
generate_length_m = 1000
seed = 1
lanes = 2
speed_limit_kmh = 80

[[node]]
name = "traffic"
role = "traffic"
traffic_model = "road"
vehicles = {VEHICLES}
speed_mps = 15

[[node]]
name = "robot"
role = "driver"
input = "scripted:inputs/lane_change.csv"
start_s_m = 80
start_lane = -2
headless = true

[node.data_write]
rate_hz = {CSV_RATE_HZ}
path = "data/{{node}}.csv"

[[node]]
name = "robot_sensors"
role = "sensor"
attach_to = "robot"

[[node.sensor]]
id = "lidar_robot"
type = "lidar"
preset = "vlp16"
position = [1.5, 0.0, 1.9]
rate_hz = 10

[[node.sensor]]
id = "imu_robot"
type = "imu"
position = [1.3, 0.0, 0.5]
rate_hz = 100

[[node]]
name = "recorder"
role = "recorder"
path = "recordings/pytest.mcap"
overwrite = true
streams = ["*"]
"""


def test_offline():
    # Parameter values: Python <-> TOML literal, both ways.
    for v in (True, False, 0, -7, 30, 0.25, -1e-3, "text", 'say "hi"\\', "a\\nb\n", "ü"):
        check(platoon.from_toml(platoon.to_toml(v)) == v and type(platoon.from_toml(platoon.to_toml(v))) is type(v),
              f"parameter value {v!r} survives to_toml/from_toml as {platoon.to_toml(v)}")
    # Bad arguments name what was expected.
    for bad, expected in (("nohost", "HOST:PORT"), ("127.0.0.1:99999", "1..65535")):
        try:
            platoon.Session(bad, timeout=0)
            fail(f"server {bad!r} was accepted")
        except ValueError as err:
            check(expected in str(err), f"server {bad!r} is refused: {err}")
    try:
        platoon.Session("127.0.0.1:7400", role="pilot", timeout=0)
        fail("role 'pilot' was accepted")
    except ValueError as err:
        check("observer" in str(err), f"an unknown role is refused: {err}")
    # Names follow the server's rule (text::CheckName): refused here, before any connection.
    for bad, expected in (("lab pc", "space"), ("evil\nline", "newline"), ("x" * 200, "200 bytes")):
        try:
            platoon.Session("127.0.0.1:7400", name=bad, timeout=0)
            fail(f"name {bad!r} was accepted")
        except ValueError as err:
            check(str(err).startswith("name: ") and expected in str(err), f"name {bad[:20]!r} is refused: {err}")
    # The server: the argument, else PLATOON_SERVER, else a session running here (none yet), else 127.0.0.1:7400.
    saved = os.environ.pop("PLATOON_SERVER", None)
    try:
        check(platoon.resolve_server() == "127.0.0.1:7400" == platoon.DEFAULT_SERVER,
              "without an argument, PLATOON_SERVER or a running session the server is 127.0.0.1:7400")
        os.environ["PLATOON_SERVER"] = "127.0.0.1:9"
        check(platoon.resolve_server() == "127.0.0.1:9", "PLATOON_SERVER names the server")
        check(platoon.resolve_server("127.0.0.1:7600") == "127.0.0.1:7600", "the argument comes before PLATOON_SERVER")
        with platoon.Session(timeout=0) as nobody:
            check(nobody.server == "127.0.0.1:9", "Session() goes to PLATOON_SERVER's server")
        try:
            platoon.Session(timeout=0.3)
            fail("a join nobody answers was accepted")
        except ConnectionError as err:
            check("PLATOON_SERVER" in str(err), f"the error says where the server came from: {err}")
        os.environ["PLATOON_SERVER"] = "lab-server"
        try:
            platoon.Session(timeout=0)
            fail("PLATOON_SERVER without a port was accepted")
        except ValueError as err:
            check("PLATOON_SERVER" in str(err) and "HOST:PORT" in str(err), f"a bad PLATOON_SERVER is named: {err}")
    finally:
        os.environ.pop("PLATOON_SERVER", None)
        if saved is not None:
            os.environ["PLATOON_SERVER"] = saved
    try:
        platoon.Session("127.0.0.1:7400", timeout=0, wait_world=True)
        fail("wait_world with timeout 0 was accepted")
    except ValueError as err:
        check("timeout" in str(err), f"wait_world needs a timeout: {err}")


def main():
    platoon_bin, source, work = sys.argv[1:4]
    # A discovery folder of this test's own: platoon run announces the session there, and no other
    # session running on this machine is found.
    xdg = tempfile.mkdtemp(prefix="platoon-pytest-xdg-")
    os.environ["XDG_RUNTIME_DIR"] = xdg
    test_offline()
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "inputs"))
    shutil.copy(os.path.join(source, "configs/inputs/lane_change.csv"), os.path.join(work, "inputs"))
    ports = platoon.free_ports(4)
    config = os.path.join(work, "pytest.toml")
    with open(config, "w") as f:
        f.write(session_text(ports))
    server = f"127.0.0.1:{ports[0]}"
    log_path = os.path.join(work, "run.log")
    log = open(log_path, "w")
    t0 = time.monotonic()
    run = subprocess.Popen([platoon_bin, "run", config], cwd=work, stdout=log, stderr=subprocess.STDOUT)
    global RUN
    RUN = (run, log_path)
    try:
        test_session(server, config)
    finally:
        # platoon run stops every process on SIGINT (the recorder closes its file).
        if run.poll() is None:
            run.send_signal(signal.SIGINT)
        try:
            run.wait(timeout=20)
        except subprocess.TimeoutExpired:
            run.kill()
            fail("platoon run did not stop within 20 s of SIGINT")
        log.close()
    print(f"session done after {time.monotonic() - t0:.1f} s; platoon run exited with {run.returncode}")
    check(run.returncode == 0, "platoon run exited cleanly")
    # No process logged an error (spdlog: "HH:MM:SS.mmm error [logger] ...", relayed as "name | ...").
    with open(log_path) as f:
        errors = [l for l in f if re.search(r"\d\d:\d\d:\d\d\.\d+\s+(error|critical)\s", l) or "terminate called" in l]
    # Each client joined once and left on close (a client that rejoined after its Leave would be lost).
    with open(log_path) as f:
        text = f.read()
    for name in ("pytest-client", "pytest-watcher"):
        check(text.count(f"node '{name}' (observer) joined") == 1 and f"node '{name}' left" in text
              and f"node '{name}' lost" not in text, f"{name} joined once and left on close")
    check(not errors, "no process logged an error" + ("".join(["\n  " + l.rstrip() for l in errors])))
    test_logs(work)
    shutil.rmtree(xdg, ignore_errors=True)
    print(f"PASS in {time.monotonic() - t0:.1f} s")


def test_session(server, config):
    # Join once the server listens (platoon run starts it first).
    wait_for("the server to listen", lambda: "listening on" in open(RUN[1]).read(), 20)
    with platoon.Session(server, name="pytest-client", timeout=20) as s, \
         platoon.Session(server, name="pytest-watcher", timeout=20) as w:
        check(s.joined and s.node_id > 0 and s.session_name == "pytest", "joined the session 'pytest'")
        # The server starts the session a second after the first join.
        wait_for("the session to run", lambda: s.phase == "running", 20)
        nodes = wait_for("the traffic node in the node table",
                         lambda: {n["name"]: n for n in s.nodes() if n["name"] == "traffic"}, 20)
        traffic_id = nodes["traffic"]["id"]

        # The traffic node's vehicles, as numpy arrays.
        def traffic_rows():
            e = s.entities()
            mask = e["owner"] == traffic_id
            return e if mask.sum() == VEHICLES else None
        e = wait_for(f"{VEHICLES} traffic vehicles", traffic_rows, 20)
        mask = e["owner"] == traffic_id
        ids = set(int(i) for i in e["id"][mask])
        expected = {platoon.vehicle_id("traffic", i) for i in range(VEHICLES)}
        check(ids == expected, f"the traffic vehicles carry the ids VehicleId('traffic', 0..{VEHICLES - 1})")

        # wait_world: a client that joins now has the whole world at once, not an empty one for a moment.
        with platoon.Session(server, name="pytest-world", timeout=20, wait_world=True) as q:
            e = q.entities()
            check(int((e["owner"] == traffic_id).sum()) == VEHICLES,
                  f"with wait_world, entities() holds the {VEHICLES} traffic vehicles right after the join")
            check(q.wait_world(0), "wait_world() returns True at once once the world is here")
        # PLATOON_SERVER names the server when the argument does not.
        os.environ["PLATOON_SERVER"] = server
        try:
            with platoon.Session(name="pytest-env", timeout=20) as q:
                check(q.joined and q.server == server and q.session_name == "pytest",
                      "Session() without a server joins PLATOON_SERVER's")
        finally:
            del os.environ["PLATOON_SERVER"]
        # Without either: the session platoon run announced on this machine (its discovery file).
        check(platoon.resolve_server() == server and platoon.resolve_server(session="pytest") == server,
              "without a server or PLATOON_SERVER, the running session's discovery file names the server")
        with platoon.Session(name="pytest-found", timeout=20) as q:
            check(q.joined and q.server == server, "Session() without a server joins the session running here")
        try:
            platoon.resolve_server(session="no-such-session")
            fail("an unknown session name was accepted")
        except ValueError as err:
            check("no-such-session" in str(err), f"an unknown session name is refused: {err}")
        # The session file the server loaded, as its Welcome carried it.
        with open(config) as f:
            check(s.session_file == f.read(), "session_file is the text of the file platoon run started")
        check(os.path.samefile(s.session_file_path, config), f"session_file_path names it: {s.session_file_path}")
        check(e["position"].shape == (len(e["id"]), 3) and e["velocity"].shape == (len(e["id"]), 3),
              "positions and velocities come as N x 3 arrays")
        check(all(platoon.KIND_NAMES[k] == "car" for k in e["kind"][mask]), "traffic vehicles are cars")
        check(bool(np.all(np.isfinite(e["position"]))) and float(e["speed"][mask].max()) > 0.5,
              "traffic vehicles have finite positions and move")

        # Live sensor streams: the seat's lidar and IMU, as read_clouds/read_stream give them from a log.
        check(s.streams().get("lidar_robot") == "lidar" and s.streams().get("imu_robot") == "imu",
              f"streams() lists the node table's data streams: {s.streams()}")
        s.subscribe("imu_robot")
        live_clouds = []
        deadline = time.monotonic() + 20
        while len(live_clouds) < 3 and time.monotonic() < deadline:
            live_clouds += s.clouds("lidar_robot", timeout=2.0)
        robot_id = platoon.vehicle_id("robot", 0)
        check(len(live_clouds) >= 3 and all(c.entity_id == robot_id and len(c) > 1000 and not c.fused for c in live_clouds),
              f"clouds() returns the seat lidar's scans live ({len(live_clouds)}, "
              f"{[len(c) for c in live_clouds]} points, on VehicleId('robot', 0))")
        stamps = [c.stamp_ns for c in live_clouds]
        check(stamps == sorted(set(stamps)), f"live clouds come oldest first, each once: {stamps}")
        check(live_clouds[0].points.dtype == platoon.CLOUD_DTYPE and int(live_clouds[0].points["intensity"].max()) <= 255
              and tuple(live_clouds[0].mount_position) == (1.5, 0.0, 1.9),
              "a live cloud's points are the recorded record layout, its mount the session file's")
        imu = s.sensor("imu_robot", timeout=5.0)
        check(len(imu) >= 10 and list(imu.columns) == ["sim_time", "stamp_ns", "id", "wx", "wy", "wz", "ax", "ay", "az"]
              and imu.attrs["kind"] == "imu" and set(imu["id"]) == {robot_id},
              f"sensor() returns the IMU's rows kept since subscribe() ({len(imu)} rows)")
        # platoon's sign (sensors/imu.hpp): kinematic acceleration plus the gravity vector, -g up when level.
        check(abs(float(imu["az"].median()) + 9.81) < 0.5, f"the level IMU reads gravity as -g: az {float(imu['az'].median()):.2f}")
        global LIVE
        LIVE = (live_clouds, imu)
        for bad, reader in (("imu_robot", s.clouds), ("no_such_stream", s.clouds), ("lidar_robot", s.sensor)):
            try:
                reader(bad, timeout=0.1)
                fail(f"{reader.__name__}({bad!r}) was accepted")
            except ValueError as err:
                check(bad in str(err) and ("lidar_robot" in str(err) or "imu_robot" in str(err)),
                      f"{reader.__name__}({bad!r}) is refused naming the session's streams: {err}")
        s.unsubscribe("imu_robot")
        # Right after a join the node table is on its way: clouds() waits for the stream, then for a cloud.
        with platoon.Session(server, name="pytest-fresh", timeout=20) as q:
            got = q.clouds("lidar_robot", timeout=5.0)
            check(len(got) >= 1 and got[0].entity_id == robot_id,
                  f"clouds() right after a join waits for the node table and returns the lidar's scan ({len(got)})")

        # Publish a car along x at 5 m/s; remember what was sent at each stamp.
        sent = []
        start = s.sim_time
        my_id = platoon.vehicle_id(s.name, 0)
        while s.sim_time < start + PUBLISH_S:
            t = s.sim_time
            x = 5.0 * (t - start)
            check_id = s.publish(position=(x, 500.0, 0.0), yaw=0.0, velocity=(5.0, 0.0, 0.0), throttle=0.3)
            sent.append((t, x))
            time.sleep(1.0 / PUBLISH_HZ)
        check(check_id == my_id, "publish returns VehicleId(name, 0)")

        def echoed():
            e = s.entities()
            rows = np.nonzero((e["id"] == my_id) & e["own"])[0]
            return (e, rows[0]) if len(rows) else None
        e, i = wait_for("the published car in the world", echoed, 10)
        check(int(e["owner"][i]) == s.node_id, "the published car is owned by this client")
        xs = np.array([x for _, x in sent])
        check(float(np.min(np.abs(xs - e["position"][i, 0]))) < 1e-6 and abs(e["position"][i, 1] - 500.0) < 1e-9,
              "the echoed car is at a position it was sent with")
        check(abs(float(e["velocity"][i, 0]) - 5.0) < 1e-9 and platoon.KIND_NAMES[e["kind"][i]] == "car",
              "the echoed car has the velocity and kind it was sent with")

        def seen_by_watcher():
            e = w.entities()
            rows = np.nonzero(e["id"] == my_id)[0]
            return (e, rows[0]) if len(rows) else None
        we, wi = wait_for("the published car in a second client's world", seen_by_watcher, 10)
        check(int(we["owner"][wi]) == s.node_id and not we["own"][wi], "a second client sees the car, owned by the first")
        df = w.entities_frame()
        check(my_id in set(df["id"]) and set(df.columns) >= {"x", "y", "speed", "kind"}, "entities_frame() has the car")
        # The columns and dtypes its docstring and docs/EXPERIMENTS.md document, no more and no fewer.
        documented = {"id": "uint64", "kind": "object", "owner": "uint32", "stamp": "float64", "x": "float64",
                      "y": "float64", "z": "float64", "yaw": "float64", "vx": "float64", "vy": "float64",
                      "vz": "float64", "speed": "float64", "stale": "bool", "own": "bool"}
        check({c: str(t) for c, t in df.dtypes.items()} == documented,
              "entities_frame() has the documented columns with their dtypes")
        check(all(c in platoon.Session.entities_frame.__doc__ for c in documented),
              "entities_frame's docstring names every column")

        # Parameters: list, get, set, read back, refusals.
        params = {p["path"]: p for p in s.params("server.")}
        check("server.broadcast_hz" in params and params["server.broadcast_hz"]["writable"],
              "server.broadcast_hz is listed as writable")
        old = s.get("server.broadcast_hz")
        new = 40 if old != 40 else 50
        check(s.set("server.broadcast_hz", new) == new, f"set server.broadcast_hz {old} -> {new}")
        check(s.get("server.broadcast_hz") == new, "get reads the new value back")
        try:
            s.set("server.no_such_parameter", 1)
            fail("a set of an unknown parameter was accepted")
        except platoon.ParamError as err:
            check("no_such_parameter" in str(err) or str(err), f"an unknown parameter is refused: {err}")
        s.set("server.broadcast_hz", old)
        # A node's parameter: the set returns once the node applied it, so a get right after reads it
        # (the node applies sets before its next step; answering before that left a window of up to 50 ms).
        path = "node.traffic.desired_speed_mps"
        first = s.get(path)
        for i, v in enumerate((11.0, 17.5, 12.25, 19.0, 13.5, 16.0)):
            check(s.set(path, v) == v and s.get(path) == v, f"set {path} {v}: a get right after reads {v}")
        s.set(path, first)
        check(s.get(path) == first, f"{path} back to {first}")

        # A marker, in the server's event log.
        ev = s.mark("python test marker")
        check(ev["kind"] == "marker" and ev["text"] == "python test marker" and ev["sequence"] > 0,
              f"mark logged marker #{ev['sequence']} at sim time {ev['sim_time']:.3f} s")
        logged = s.events(after=ev["sequence"] - 1)
        check(any(x["sequence"] == ev["sequence"] and x["text"] == ev["text"] for x in logged),
              "the marker is in the server's event log")
        # The seat writes the marker into the row whose period holds it: let the session run past that row
        # (a loaded machine could otherwise pause and restart it before the row exists).
        s.wait_sim_time(ev["sim_time"] + 0.3, timeout=10)

        # Session control.
        check(s.pause() == "paused" and w.phase in ("running", "paused"), "pause")
        paused_at = s.sim_time
        time.sleep(0.3)
        check(abs(s.sim_time - paused_at) < 1e-3, "sim time stands still while paused")
        check(s.resume() == "running", "resume")
        check(s.resume() == "running", "a resume of a running session leaves it running")
        # A start of the running session is refused with the server's reason, at once, and the session runs on.
        before = s.sim_time
        t0 = time.monotonic()
        try:
            s.start()
            fail("a start of a running session was accepted")
        except platoon.Refused as err:
            check("already running" in str(err) and time.monotonic() - t0 < 2.0,
                  f"a start of a running session is refused in {time.monotonic() - t0:.2f} s: {err}")
        check(s.sim_time >= before, "sim time did not move back")
        # A restart is deliberate, needs a reason, and begins again near sim time 0.
        check(s.restart("python test: run 2") == "running", "restart with a reason")
        check(s.sim_time < before, f"restarted: sim time {s.sim_time:.3f} s (was {before:.3f} s)")
        # Some more sim time for the log, then stop.
        s.wait_sim_time(s.sim_time + 1.0, timeout=10)
        check(s.stop() == "stopped", "stop")
        try:
            s.pause()
            fail("a pause of a stopped session was accepted")
        except platoon.Refused as err:
            check("stopped" in str(err), f"a pause of a stopped session is refused: {err}")
        global PUBLISHED
        PUBLISHED = (my_id, s.name, sent)


def test_logs(work):
    my_id, my_name, sent = PUBLISHED
    path = os.path.join(work, "recordings", "pytest.mcap")
    check(os.path.exists(path), f"the recorder wrote {path}")
    df = platoon.read_log(path)
    print(df.head())
    check(len(df) > VEHICLES, f"the log holds {len(df)} entity states")
    check(df.attrs["problems"] == [], "the log was read without problems")
    check(bool(df["sim_time"].is_monotonic_increasing), "rows come in sim-time order")
    traffic = {platoon.vehicle_id("traffic", i) for i in range(VEHICLES)}
    check(traffic <= set(df["id"]), "every traffic vehicle is in the log")
    check(set(df.loc[df["id"].isin(traffic), "owner_name"]) == {"traffic"}, "traffic states name their owner")
    # Readable names: traffic vehicles "traffic:<index>", computed here from the index.
    for i in range(VEHICLES):
        got = set(df.loc[df["id"] == platoon.vehicle_id("traffic", i), "name"])
        check(got == {f"traffic:{i}"}, f"traffic vehicle {i} is named traffic:{i}: {got}")
    robot_rows = df[df["id"] == platoon.vehicle_id("robot", 0)]
    check(len(robot_rows) > 0 and set(robot_rows["name"]) == {"robot"}, "the driver seat's car is named by its node")
    named = platoon.entity_names(
        [platoon.vehicle_id("robot", 0), platoon.vehicle_id("traffic", 1), platoon.vehicle_id("traffic", 2), 0xabcdef],
        ["traffic"], '[[node]]\nname = "robot"\nrole = "driver"\n[[node]]\nname = "traffic"\nrole = "traffic"\n'
        'vehicle_names = ["", "lead"]\n')
    check(named == {platoon.vehicle_id("robot", 0): "robot", platoon.vehicle_id("traffic", 1): "lead",
                    platoon.vehicle_id("traffic", 2): "traffic:2", 0xabcdef: "#0000000000abcdef"},
          f"entity_names: session names, seat by node, node:index, hex fallback: {named}")
    mine = df[df["id"] == my_id]
    # Broadcasts (40-60 Hz) outpace the 20 Hz publishing, so nearly every state sent is recorded.
    check(len(mine) >= len(sent) // 2 and set(mine["owner_name"]) == {my_name},
          f"the published car is in the log ({len(mine)} of {len(sent)} states sent)")
    xs = np.array([x for _, x in sent])
    err = np.min(np.abs(mine["x"].to_numpy()[:, None] - xs[None, :]), axis=1)
    check(float(err.max()) < 1e-6, "every logged state of the car is at a position it was sent with")
    speeds = df[df["id"].isin(traffic)].groupby("id")["speed"].mean()
    check(len(speeds) == VEHICLES and float(speeds.max()) > 1.0, "pandas: per-vehicle mean speed")

    # What was read live is in the log, the same bytes.
    live_clouds, imu = LIVE
    logged = {c.stamp_ns: c for c in platoon.read_clouds(path, "lidar_robot")}
    same = [c.stamp_ns in logged and logged[c.stamp_ns].points.tobytes() == c.points.tobytes() for c in live_clouds]
    check(all(same), f"each live cloud is in the log with identical points ({sum(same)} of {len(same)})")
    rows = platoon.read_stream(path, "imu_robot")
    joined = imu.merge(rows, on="stamp_ns", suffixes=("", "_log"))
    check(len(joined) == len(imu) and all(np.array_equal(joined[c].to_numpy(), joined[c + "_log"].to_numpy())
                                          for c in ("wx", "wy", "wz", "ax", "ay", "az")),
          f"each live IMU row is in the log with the same values ({len(joined)} of {len(imu)})")

    events = platoon.read_log_events(path)
    check(len(events) > 0 and {"type", "event", "sim_time"} <= set(events.columns), f"{len(events)} logged events")
    check(((events["type"] == "session") & (events["event"] == "pause")).any(), "the log has the pause")
    info = platoon.read_log_info(path)
    check(info.get("name") == "pytest" and info.get("recorder") == "recorder", "the log's session record")

    csv = platoon.read_csv(os.path.join(work, "data", "robot.csv"))
    check(list(csv.columns)[0] == "name" and set(csv["name"]) == {"robot"},
          "the seat's data write names its car by the driver node's name in a first column")
    check(len(csv) > 10 and csv.attrs["units"]["speed_mps"] == "m/s", f"the seat's data write: {len(csv)} rows")
    t = csv["sim_time_s"].to_numpy()
    check(bool(np.all(np.diff(t) > 0)) and abs(np.median(np.diff(t)) - 1.0 / CSV_RATE_HZ) < 1e-6,
          f"data-write rows every {1000 / CSV_RATE_HZ:g} ms of sim time")
    # The marker the session set, in the marker column of exactly the row whose period (previous row, row]
    # holds its sim time (as the log's event entry has it).
    logged = events[(events["type"] == "marker") & (events["text"] == "python test marker")]
    check(len(logged) == 1, f"the log holds the marker once ({len(logged)})")
    mark_s = float(logged["sim_time_ns"].iloc[0]) * 1e-9
    rows = [i for i, m in enumerate(csv["marker"]) if "python test marker" in m.split(" | ")]
    check(len(rows) == 1 and t[rows[0]] >= mark_s - 1e-9 and (rows[0] == 0 or t[rows[0] - 1] < mark_s - 1e-9),
          f"the marker at sim {mark_s:.3f} s is in the data write's marker column, in rows {[float(t[i]) for i in rows]}")

    # Driving metrics of that drive (a scripted lane change) against pandas computing the same definitions.
    m = platoon.drive_metrics(csv)
    check(m["rows"] == len(csv) and abs(m["speed_mean_mps"] - float(csv["speed_mps"].mean())) < 1e-9,
          f"drive_metrics: {m['rows']} rows, mean speed {m['speed_mean_mps']:.3f} m/s as pandas computes it")
    on = csv[csv["lane_offset_m"].notna() & (csv["lane"] != 0)]
    stretch = (on["lane"] != on["lane"].shift()).cumsum()
    dev = on["lane_offset_m"] - on.groupby(stretch)["lane_offset_m"].transform("mean")
    sdlp = float(np.sqrt((dev ** 2).sum() / (len(on) - stretch.nunique())))
    check(stretch.nunique() >= 1 and m["lane_changes"] == stretch.nunique() - 1 and abs(m["sdlp_m"] - sdlp) < 1e-9,
          f"drive_metrics: SDLP {m['sdlp_m']:.4f} m pooled over {stretch.nunique()} lane stretches, as pandas computes it")
    try:
        platoon.drive_metrics({"sim_time_s": [0.0, 1.0], "speed_kmh": [1.0, 2.0]})
        check(False, "drive_metrics refuses an unknown column")
    except ValueError as e:
        check("speed_kmh" in str(e), f"drive_metrics refuses an unknown column: {e}")


if __name__ == "__main__":
    main()
