"""platoon from Python: join a running session, read and publish entities, steer the session, read logs.

    import platoon
    with platoon.Session("127.0.0.1:7400", name="py", wait_world=True) as s:
        world = s.entities()                      # dict of numpy arrays, one row per entity
        s.publish(position=(0, 0, 0), yaw=0.0, velocity=(5, 0, 0))
        s.set("server.broadcast_hz", 30)
        s.mark("participant ready")
    df = platoon.read_log("recordings/drivers-....mcap")   # pandas DataFrame of entity states

The session client is platoon's own C++ core (the one platoon-node, platoon-viewer and platoon ctl use),
running on a background thread; messages go through platoon's one codec. docs/EXPERIMENTS.md, "Python",
has the whole API.
"""
import json
import math
import os
import time

from . import _platoon
from ._platoon import KIND_NAMES, PROTOCOL_VERSION, Refused, free_ports, vehicle_id
from .logs import drive_metrics, entity_names, read_csv, read_log, read_log_events, read_log_info
from .clouds import CLOUD_DTYPE, STREAM_KINDS, Cloud, clouds_of, read_clouds, read_stream, stream_rows_of, xyz
from .tasks import score_car_following, score_drt, score_lct

__all__ = ["Session", "Refused", "ParamError", "KIND_NAMES", "PROTOCOL_VERSION", "DEFAULT_SERVER", "free_ports",
           "vehicle_id", "resolve_server", "read_log", "read_log_events", "read_log_info", "entity_names", "read_csv", "drive_metrics", "read_clouds", "read_stream", "Cloud", "CLOUD_DTYPE", "xyz", "to_toml",
           "from_toml", "score_lct", "score_drt", "score_car_following"]

#: The server refused a parameter request (the message is its reason); the same class as Refused.
ParamError = Refused

#: The server a Session joins when nothing else names one (see resolve_server).
DEFAULT_SERVER = "127.0.0.1:7400"


def _find_server(server, session):
    """(HOST:PORT, where it came from) for Session(server, session=...): see resolve_server."""
    if server:
        if session:
            raise ValueError("give either server or session, not both")
        return str(server), "argument"
    found = _platoon.find_server(str(session or ""))
    return found["server"], found["source"]


def resolve_server(server=None, session=None):
    """The "HOST:PORT" a Session joins, in the order platoon ctl and platoon-viewer use
    (docs/EXPERIMENTS.md, "Finding the server"): `server` when given; else the running session named
    `session` on this machine; else the environment variable PLATOON_SERVER (e.g. "lab-server:7400");
    else the one session `platoon run` started on this machine (its discovery file); else DEFAULT_SERVER.
    Raises ValueError for a malformed PLATOON_SERVER, an unknown session name, or several sessions
    running here with nothing to choose between them (the message lists them)."""
    return _find_server(server, session)[0]


def to_toml(value):
    """A Python value as the TOML literal a parameter takes: True -> true, 30 -> 30, "a" -> "a"."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"parameter values must be finite, got {value}")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # JSON's string escapes are TOML basic-string escapes
    raise TypeError(f"parameter values are bool, int, float or str, got {type(value).__name__}")


def from_toml(text):
    """A parameter's TOML literal as a Python value: true -> True, 60 -> 60, 0.5 -> 0.5, "a" -> "a"."""
    t = text.strip()
    if t in ("true", "false"):
        return t == "true"
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        if t[0] == '"':
            try:
                return json.loads(t)
            except json.JSONDecodeError:
                pass
        return t[1:-1]
    try:
        return int(t.replace("_", ""))
    except ValueError:
        pass
    try:
        return float(t.replace("_", ""))
    except ValueError:
        return t


class Session:
    """One client of a running platoon session (a sync server, `platoon run`, or `platoon replay`).

    server:     "HOST:PORT" of the server's control socket, e.g. "127.0.0.1:7400". None (default): the
                environment variable PLATOON_SERVER, else the session `platoon run` started on this
                machine, else "127.0.0.1:7400" (see resolve_server).
    name:       node name, unique in the session (default "py-<pid>").
    role:       role reported at join: "observer" (default), "traffic", "driver", ... The role only names
                the node in the node table; any role may publish entities.
    timeout:    seconds to wait for the join (0: do not wait; check `joined` or call wait_joined).
    verbose:    log the session client's join and clock lines on stderr.
    session:    with server None: the running session of this name on this machine (when several run).
    wait_world: also wait (within `timeout`) until the first world state arrived, so that entities()
                returns the whole world at once; otherwise it is empty for a moment after the join
                (about one round trip to the server; call wait_world() later instead).

    Joins on construction; raises ConnectionError when the server refuses or does not answer within
    `timeout`, TimeoutError when wait_world and no world state arrived within it. Use it as a context
    manager, or call close(), to leave the session.
    """

    def __init__(self, server=None, name=None, role="observer", timeout=10.0, verbose=False, wait_world=False,
                 session=None):
        server, source = _find_server(server, session)
        if wait_world and not timeout:
            raise ValueError("wait_world=True needs a timeout > 0 (seconds to wait for the join and the world)")
        try:
            self._c = _platoon.Session(server, name or f"py-{os.getpid()}", role, verbose)
        except ValueError as err:
            if source != "argument":
                raise ValueError(f"{server} ({source}): {err}") from None
            raise
        self.timeout = 5.0  #: seconds to wait for the server's answers
        where = server if source == "argument" else f"{server} ({source})"
        if timeout and not self.wait_joined(timeout):
            why = self._c.refusal()
            self._c.close()
            if why:
                raise ConnectionError(f"the server at {where} refused the join: {why}")
            raise ConnectionError(f"no answer from the server at {where} within {timeout:g} s "
                                  "(is platoon-server or platoon run running there, on that control port?)")
        if wait_world and not self.wait_world(timeout):
            self._c.close()
            raise TimeoutError(f"joined the session at {where}, but no world state arrived within {timeout:g} s")

    # --- membership -------------------------------------------------------------------------------
    def wait_joined(self, timeout=10.0):
        """Waits until the server welcomed this client; True when joined."""
        return self._c.wait_joined(timeout)

    def wait_world(self, timeout=None):
        """Waits until the first world state since the join arrived (a snapshot or a whole keyframe), so
        that entities() holds the whole world; True then, False when `timeout` s (default self.timeout)
        passed first. Returns at once when it already arrived."""
        return self._c.wait_world(self.timeout if timeout is None else float(timeout))

    def close(self):
        """Leaves the session and stops the client's thread (idempotent)."""
        self._c.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return (f"platoon.Session(server={self.server!r}, name={self.name!r}, joined={self.joined}, "
                f"phase={self.phase!r}, sim_time={self.sim_time:.3f})")

    joined = property(lambda self: self._c.joined, doc="True while joined.")
    node_id = property(lambda self: self._c.node_id, doc="Node id the server gave this client (owner of its entities).")
    name = property(lambda self: self._c.name, doc="This client's node name.")
    server = property(lambda self: self._c.server, doc="HOST:PORT of the server.")
    session_name = property(lambda self: self._c.session_name, doc="Name of the session.")
    session_file = property(lambda self: self._c.session_file,
                            doc="The session file's TOML text as the server's Welcome carried it (a replay: the "
                                "recorded one); \"\" when the server has none.")
    session_file_path = property(lambda self: self._c.session_file_path,
                                 doc="Where that session file was on the server's PC (\"\" when unknown).")
    phase = property(lambda self: self._c.phase,
                     doc='Phase of the session: "waiting", "starting", "running", "paused", "stopped".')
    sim_time = property(lambda self: self._c.sim_time_ns * 1e-9, doc="Session sim time now, in s.")
    sim_time_ns = property(lambda self: self._c.sim_time_ns, doc="Session sim time now, in ns.")
    lockstep = property(lambda self: self._c.step_ns > 0, doc="True in a lock-step session.")

    def stats(self):
        """What the client has seen of the world stream (world_received, world_gaps, snapshots, ...)."""
        return self._c.stats()

    def wait_sim_time(self, sim_time, timeout=None):
        """Waits until session sim time reaches `sim_time` s (or the timeout); returns the sim time then."""
        return self._c.wait_sim_time(float(sim_time), self.timeout if timeout is None else timeout)

    # --- live data streams --------------------------------------------------------------------------
    def streams(self):
        """Every data stream of the session's node table: {stream id: kind} ("lidar", "fused", "radar",
        "objects", "imu", "gnss", "camera")."""
        return dict(self._c.streams())

    def _stream(self, stream, kinds, reader, timeout):
        stream = str(stream)
        # Right after the join the node table may still be on its way: wait for the stream within `timeout`.
        deadline = time.monotonic() + timeout
        streams = self._c.streams()
        while stream not in streams and time.monotonic() < deadline:
            time.sleep(0.02)
            streams = self._c.streams()
        kind = streams.get(stream)
        if kind not in kinds:
            known = ", ".join(f"{s} ({k})" for s, k in sorted(streams.items()) if k in kinds) or "none"
            what = "has no data stream" if kind is None else f"carries {kind} messages on"
            raise ValueError(f"the session at {self.server} {what} {stream!r}; {reader} reads "
                             f"{', '.join(kinds)} streams (the session's: {known})")
        return stream, kind

    def subscribe(self, stream):
        """Starts keeping the messages of data stream `stream` for clouds() or sensor(), which subscribe at
        their first call too: subscribe first to miss nothing from a moment on. The newest 256 messages
        (at most 64 MB) are kept per stream; older ones are dropped and counted."""
        self._c.subscribe(str(stream))

    def unsubscribe(self, stream):
        """Stops keeping the messages of `stream` (what was kept is dropped)."""
        self._c.unsubscribe(str(stream))

    def clouds(self, stream, timeout=None, max_clouds=16):
        """Live point clouds of lidar or fused stream `stream`: the clouds that arrived since the last call
        (at most `max_clouds`, oldest first), as read_clouds() returns them from a log (a list of Cloud),
        waiting up to `timeout` s (default self.timeout) for the first; [] when none came. The first call
        subscribes (see subscribe). Raises ValueError when the node table has no such cloud stream (after
        waiting up to `timeout` for it to appear, as right after the join).

            with platoon.Session() as s:
                for c in s.clouds("lidar_front", timeout=2.0):
                    print(c.sim_time, len(c), c.points["intensity"].mean())
        """
        timeout = self.timeout if timeout is None else float(timeout)
        stream, _ = self._stream(stream, ("lidar", "fused"), "clouds()", timeout)
        self._c.subscribe(stream)
        r = self._c.take_clouds(stream, int(max_clouds), timeout)
        self.dropped = int(r["dropped"])
        return clouds_of(r, stream)

    def sensor(self, stream, timeout=None, frame=True, max_messages=256):
        """Live radar, object-list, IMU or GNSS messages of `stream` since the last call, as read_stream()
        returns them from a log (a DataFrame with the same columns; frame=False: a dict of numpy arrays),
        waiting up to `timeout` s (default self.timeout) for the first message; an empty frame when none
        came. The first call subscribes (see subscribe). Raises ValueError when the node table has no such
        stream.

            with platoon.Session() as s:
                imu = s.sensor("imu", timeout=1.0)    # columns sim_time, stamp_ns, id, wx .. az
        """
        timeout = self.timeout if timeout is None else float(timeout)
        stream, kind = self._stream(stream, STREAM_KINDS, "sensor()", timeout)
        self._c.subscribe(stream)
        r = self._c.take_sensor(stream, int(max_messages), timeout)
        self.dropped = int(r["dropped"])
        return stream_rows_of(r, kind, frame)

    #: Messages of the last clouds() or sensor() call's stream dropped before it (the bound of subscribe).
    dropped = 0

    # --- the world --------------------------------------------------------------------------------
    def entities(self, dead_reckoned=False):
        """Every entity of the session as numpy arrays, one row per entity, sorted by id.

        Keys: id (uint64), kind (uint8, names in platoon.KIND_NAMES), owner (node id), stamp_ns, stamp (s),
        position (N x 3, m), orientation (N x 4, w x y z), yaw (rad), yaw_rate (rad/s), velocity (N x 3,
        m/s), speed (m/s), acceleration (N x 3, m/s^2), size (N x 3, length width height, m), steer,
        throttle, brake, stale, own (published by this client, as the server echoed it back).
        dead_reckoned: positions extrapolated to now, as a viewer shows them; else as last broadcast.
        """
        return self._c.entities(dead_reckoned)

    def entities_frame(self, dead_reckoned=False):
        """entities() as a pandas DataFrame, one row per entity, sorted by id. Columns:

        ====== ========= ======= ============================================================================
        column unit      dtype   meaning
        ====== ========= ======= ============================================================================
        id               uint64  entity id (a node's vehicles: platoon.vehicle_id(node name, index))
        kind             object  entity kind by name: "car", "truck", ... (platoon.KIND_NAMES)
        owner            uint32  node id of the publishing node (nodes() names it; this client: node_id)
        stamp  s         float64 sim time the state is for: its owner's stamp (dead_reckoned: now)
        x      m         float64 origin of the entity's body frame in the world frame (z up); a vehicle's
                                 is its rear-axle centre
        y      m         float64
        z      m         float64
        yaw    rad       float64 heading about z, counter-clockwise from +x, in (-pi, pi]
        vx     m/s       float64 velocity in the world frame
        vy     m/s       float64
        vz     m/s       float64
        speed  m/s       float64 norm of (vx, vy, vz)
        stale            bool    the owner is lost: the server dead-reckons, then freezes, the entity
        own              bool    published by this client (publish), as the server echoed it back
        ====== ========= ======= ============================================================================

        dead_reckoned: positions, yaw and velocities extrapolated to now, as a viewer shows them; else as
        last broadcast. entities() has the rest (orientation, yaw_rate, acceleration, size, controls).
        """
        import pandas as pd
        e = self.entities(dead_reckoned)
        return pd.DataFrame({
            "id": e["id"], "kind": [KIND_NAMES[k] for k in e["kind"]], "owner": e["owner"], "stamp": e["stamp"],
            "x": e["position"][:, 0], "y": e["position"][:, 1], "z": e["position"][:, 2], "yaw": e["yaw"],
            "vx": e["velocity"][:, 0], "vy": e["velocity"][:, 1], "vz": e["velocity"][:, 2], "speed": e["speed"],
            "stale": e["stale"], "own": e["own"]})

    def nodes(self):
        """The server's node table: a list of dicts (id, name, role, host, pid, lost, rate_hz, loss, ...)."""
        return self._c.nodes()

    def publish(self, position, yaw=0.0, velocity=(0.0, 0.0, 0.0), *, index=0, entity_id=None, kind="car",
                size=(4.5, 1.8, 1.5), acceleration=(0.0, 0.0, 0.0), yaw_rate=0.0, steer=0.0, throttle=0.0,
                brake=0.0, stamp=None):
        """Publishes the state of one entity this client owns; returns its id.

        position (m, world frame), yaw (rad, about z), velocity (m/s, world frame). The entity is
        `entity_id`, or this node's vehicle `index` (platoon.vehicle_id(name, index), as a node's
        vehicles are numbered). stamp: sim time of the state in s (default: now). The state goes to the
        server as a NodeState carrying this client's state token, as a node's modules send theirs;
        entities() lists it (own = True) once the server broadcast it. Publish at least once a second:
        the server freezes, then removes, entities whose owner falls silent.
        """
        eid = vehicle_id(self.name, index) if entity_id is None else int(entity_id)
        stamp_ns = -1 if stamp is None else int(round(float(stamp) * 1e9))
        return self._c.publish(eid, [float(v) for v in position], float(yaw), [float(v) for v in velocity], kind,
                               [float(v) for v in size], [float(v) for v in acceleration], float(yaw_rate),
                               float(steer), float(throttle), float(brake), stamp_ns)

    # --- parameters ---------------------------------------------------------------------------------
    def params(self, prefix=""):
        """Parameters under `prefix` (e.g. "server."): a list of dicts with path, value (Python value),
        literal (TOML text), writable, description, type, unit, min, max."""
        out = []
        for p in self._c.params(prefix, self.timeout):
            p["literal"] = p["value"]
            p["value"] = from_toml(p["literal"])
            out.append(p)
        return out

    def get(self, path):
        """The value of parameter `path` (e.g. "server.broadcast_hz") as a Python value.
        Raises platoon.ParamError with the server's reason when there is no such parameter."""
        return from_toml(self._c.get(path, self.timeout)["value"])

    def param(self, path):
        """Parameter `path` with its description, type, unit and range (a dict, as params() lists them)."""
        p = self._c.get(path, self.timeout)
        p["literal"] = p["value"]
        p["value"] = from_toml(p["literal"])
        return p

    def set(self, path, value):
        """Sets parameter `path` to `value` (bool, int, float, str; a str is sent as a TOML string) and
        returns the value now in force: a get() that follows reads it. A node's parameter (node.<name>.*)
        takes effect before the node's modules step next; the node answers then (within one module period,
        at most 50 ms in real time). Raises platoon.ParamError with the server's reason when it refuses
        (read-only, out of range, wrong type, unknown path, or the node did not answer within 0.5 s), and
        TimeoutError when the server does not answer within self.timeout s."""
        return from_toml(self._c.set(path, to_toml(value), self.timeout)["value"])

    # --- markers and the session event log ----------------------------------------------------------
    def mark(self, text, sim_time=None):
        """Logs a marker in the session's event log (at `sim_time` s, default: now on the server); returns
        the logged event (dict: sequence, sim_time, kind, source, text, ...)."""
        return self._c.mark(str(text), math.nan if sim_time is None else float(sim_time), self.timeout)

    def events(self, after=0):
        """The server's event log (markers, parameter changes, scenario firings, actions, messages) after
        sequence `after`, oldest first, as a list of dicts."""
        return self._c.events(int(after), self.timeout)

    def new_events(self):
        """Events that arrived with world states since the last call, each once (at most 1000 kept)."""
        return self._c.take_events()

    # --- session control ----------------------------------------------------------------------------
    def start(self, at_sim=0.0):
        """Starts a waiting or stopped session now from sim time `at_sim` s; waits until it runs. Raises
        platoon.Refused with the server's reason when the session is starting, running or paused (use
        restart) or when this process has no operator token (docs/DEPLOYMENT.md)."""
        return self._c.control("start", float(at_sim), self.timeout)

    def restart(self, reason, at_sim=0.0):
        """Begins the session again now from sim time `at_sim` s, in any phase; the server logs `reason`.
        Operators only (the token the server wrote for this user); waits until it runs."""
        return self._c.control("restart", float(at_sim), self.timeout, str(reason))

    def pause(self):
        """Pauses a running session; waits until it is paused. Raises platoon.Refused when not running."""
        return self._c.control("pause", 0.0, self.timeout)

    def resume(self):
        """Resumes a paused session; waits until it runs. Raises platoon.Refused when not paused."""
        return self._c.control("resume", 0.0, self.timeout)

    def stop(self):
        """Stops the session; waits until it is stopped."""
        return self._c.control("stop", 0.0, self.timeout)
