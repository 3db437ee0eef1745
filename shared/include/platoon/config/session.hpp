#pragma once
/// The session file: one TOML file that describes a whole session (server, clock, faults, nodes).
/// The launcher runs it on one machine; on a LAN every PC reads the same file and starts its own
/// processes by name. Format and examples: docs/DEPLOYMENT.md and configs/demo.toml.

#include "platoon/clock/slewed_clock.hpp"
#include "platoon/config/scenario.hpp"
#include "platoon/config/variators.hpp"
#include "platoon/config/table.hpp"
#include "platoon/data/columns.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/protocol/messages.hpp"
#include "platoon/road/environment.hpp"
#include "platoon/road/signs.hpp"
#include "platoon/transport/fault_injector.hpp"
#include "platoon/transport/security.hpp"
#include "platoon/world/conditions.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace platoon::config {

/// Highest control port whose three followers (time, world, state at +1, +2, +3) are still ports.
inline constexpr int kMaxControlPort = 65532;

struct ServerDef;
/// Moves the server's sockets to `control_port` and the three after it (time, world, state); 0 binds
/// every socket to a free port. The caller checks 0 <= control_port <= kMaxControlPort.
void SetControlPort(ServerDef& server, int control_port);

/// The sync server's settings ([server]).
struct ServerDef {
  /// Interface to bind: "127.0.0.1" (this PC only, the default), "*" for all, or an address. Beyond
  /// loopback the session needs CURVE keys ([security]).
  std::string bind_address = "127.0.0.1";
  uint16_t control_port = 7400;      ///< ROUTER: join, heartbeat, session control, parameters. At most 65532.
  uint16_t time_port = 7401;         ///< ROUTER: time exchanges. Default: control_port + 1.
  uint16_t world_port = 7402;        ///< PUB: world states. Default: control_port + 2.
  uint16_t state_port = 7403;        ///< PULL: node states upstream. Default: control_port + 3.
  double broadcast_hz = 60.0;        ///< Periodic world-state broadcast rate (node table, keyframes), in Hz.
  double max_forward_delay_ms = 0.0; ///< Merged updates go out as a delta within this delay of arriving, in ms (0: each loop pass).
  double min_forward_interval_ms = 0.0;  ///< Deltas are at least this far apart (coalescing under load), in ms; 0: none.
  double heartbeat_interval_s = 0.25;  ///< Heartbeat period asked of nodes, in s.
  double lost_timeout_s = 1.0;       ///< Silence after which a node is marked lost, in s.
  double status_interval_s = 3.0;    ///< Status table print period, in s; 0 = never.
  double keyframe_interval_s = 1.0;  ///< Full world snapshot period between deltas, in s.
  /// How a keyframe goes out: 0 (auto) whole up to 512 entities, else spread over the periodic broadcasts
  /// of one keyframe interval (a rolling keyframe, a slice each); 1 always whole; N > 1 spread over N
  /// periodic broadcasts. Typical 0.
  int keyframe_parts = 0;
  double stale_grace_s = 2.0;        ///< A lost node's entities are dead-reckoned this long, in s.
  bool stale_remove = false;         ///< After the grace: remove the entities (true) or freeze them (false).
  std::string log_level = "info";    ///< trace, debug, info, warn, error, critical or off.
  // Bounds: nothing a peer sends can grow the server's tables without limit.
  int max_nodes = 256;               ///< Nodes in the table (lost ones included); further joins are refused.
  int max_entities = 20000;          ///< Merged entities in all; new entities beyond it are refused.
  int max_entities_per_node = 10000; ///< Entities one node may own; new ones beyond it are refused.
  double forget_lost_s = 60.0;       ///< A lost node that owns no entity is dropped from the table after this long, in s.
  // Fairness: no peer can hold the loop or starve the broadcast (docs/DEPLOYMENT.md "Limits").
  int max_messages_per_turn = 256;   ///< Messages read from each socket per loop turn; the world broadcast is due between turns.
  double peer_rate_hz = 500.0;       ///< Messages per second one peer may send on the control or the time socket; excess dropped.
  int peer_burst = 1000;             ///< Messages one peer may send at once beyond peer_rate_hz (its token bucket's size).
  /// Messages per second all connections from one address (or one CURVE key) that hold no joined node
  /// may send on the control socket, and all from it on the time socket, times (1 + nodes joined from
  /// it); excess dropped. Typical 500.
  double peer_address_rate_hz = 500.0;
  int peer_address_burst = 1000;     ///< The address's bucket size, times (1 + nodes joined from it). Typical 1000.
  /// Joins under a name the server does not hold, per second, from one address (and one CURVE key); a join
  /// beyond it is not answered (the client retries it every 0.25 s). Typical 20.
  double join_rate_hz = 20.0;
  int join_burst = 64;               ///< Joins of new names one address (or key) may send at once. Typical 64.
  int max_replies_per_turn = 64;     ///< Control replies per loop turn; further requests wait unread for the next turn.
  int64_t max_message_bytes = 4 << 20; ///< Largest message read, in bytes; a larger one closes its connection. Typical 4 MiB.
};

/// Per-sample CSV of a driver's own vehicle ([node.data_write]; docs/RECORDING.md, "Data write").
struct DataWriteDef {
  double rate_hz = 100.0;            ///< Rows per sim second; 1000 / rate_hz is a whole number of 1 ms dynamics steps. Typical 100.
  std::vector<data::Column> columns; ///< Columns in file order, sim_time always first. Default: every column.
  /// CSV file, "{node}" replaced by the node name. A relative path is taken from the working directory
  /// of the node process (where `platoon run` was started), not from the session file's folder.
  std::string path = "data/{node}.csv";
  /// Sample period, in ns (a multiple of 1 ms).
  int64_t PeriodNs() const { return static_cast<int64_t>(1e9 / rate_hz + 0.5); }
};

/// recorder: what a recorder node writes (the [[node]] keys of role "recorder"; docs/RECORDING.md,
/// "The recorder role").
struct RecorderDef {
  /// The .mcap file. "{session}" (session name), "{node}" (node name) and "{time}" (local time at start,
  /// YYYYmmdd-HHMMSS) are replaced when the recorder starts (RecordingPath); a relative path is taken
  /// from the node process's working directory (where `platoon run` was started).
  std::string path;
  bool overwrite = false;            ///< Replace an existing file; false: refuse to start and say so.
  std::vector<std::string> streams;  ///< Data stream ids to record; {"*"}: every stream of the node table. Default none.
  bool foxglove = true;              ///< Also write the Foxglove channels (/foxglove/scene, /foxglove/tf, /foxglove/cloud/<id>).
  double foxglove_hz = 10.0;         ///< /foxglove/tf messages per sim second, in Hz (Foxglove interpolates between them). Typical 10..20.
  double foxglove_cloud_hz = 10.0;   ///< /foxglove/cloud/<id> messages per sim second and stream, in Hz: every scan of a 10 Hz lidar. Typical 2..10.
  bool ros2 = false;                 ///< Also write ROS 2 channels (ros2msg schemas, CDR; rosbag2's conventions) and metadata.yaml beside the file.
  std::string compression = "zstd";  ///< Chunk compression: "zstd", "lz4" or "none" (docs/RECORDING.md, "Compression").
  std::string where;                 ///< "file:line: node[i].path" of the path key, for the messages of later checks.
};

/// `def.path` with its placeholders replaced: {session} by `session_name`, {node} by `node_name`, {time}
/// by `start` as local time YYYYmmdd-HHMMSS. Characters other than letters, digits, '-', '_' and '.' in
/// the names become '_'.
std::string RecordingPath(const RecorderDef& def, const std::string& session_name, const std::string& node_name,
                          int64_t start_unix_s);

/// driver, input = "model:follow": a driver model that drives the seat's car without a person (batches,
/// tests): IDM car following of the vehicle ahead, lane keeping by pure pursuit, with a reaction time
/// ([node.driver_model]; docs/EXPERIMENTS.md, "Scenario events"). Deterministic: no wall clock.
struct DriverModelDef {
  double desired_speed_mps = 25.0;   ///< Free-road speed, in m/s. Typical 15..35.
  double time_gap_s = 1.0;           ///< Desired time gap to the vehicle ahead, in s. Typical 0.8..2.
  double min_gap_m = 2.0;            ///< Gap kept at standstill, in m.
  double max_accel_mps2 = 2.0;       ///< Largest acceleration it asks for, in m/s^2.
  double comfort_decel_mps2 = 3.0;   ///< Comfortable deceleration, in m/s^2 (IDM b).
  double reaction_time_s = 0.8;      ///< It sees the vehicle ahead as it was this long ago, in s. Typical 0.5..1.5.
  double lateral_accel_mps2 = 3.0;   ///< Lateral acceleration it accepts in curves (curve speed sqrt(a / |kappa|)), in m/s^2. Typical 2..4.
};

/// The controller layer between whoever drives (a person, a script, a model) and the vehicle model
/// ([node.controller]; docs/VEHICLES.md, "Controller layer"): driver seats and route traffic.
struct ControllerDef {
  double speed_limit_mps = 0;        ///< Speed limiter: throttle capped near this speed, in m/s; 0: no limiter.
  double limiter_gain_per_mps = 0.5; ///< Limiter: throttle cap falls by this per m/s of approach, in 1/(m/s). Typical 0.3..1.
  bool abs = false;                  ///< ABS-like brake modulation: no axle's brake force beyond its friction.
  double abs_utilization = 0.995;    ///< ABS: brake force of the critical axle as a share of its peak friction. Typical 0.95..1.
  double abs_min_speed_mps = 2.0;    ///< ABS: inactive below this speed, in m/s.
  /// Whether any intervention is on.
  bool Any() const { return abs || speed_limit_mps > 0; }
};

/// traffic, traffic_model = "route": vehicles that follow a path with pure pursuit on the single-track
/// model ([node.route]; docs/VEHICLES.md, "Route traffic").
struct RouteDef {
  std::vector<Vec3> waypoints_m;     ///< The path's points (z = 0), in m; empty: a lane of the session road.
  int lane = -1;                     ///< Without waypoints: the session road's lane to follow (-1 first right, +1 first left).
  double from_s_m = 0;               ///< Without waypoints: where along the road the path starts, in m.
  double to_s_m = 0;                 ///< Without waypoints: where it ends, in m (0: the road's end).
  bool loop = false;                 ///< The last waypoint joins the first (a closed route); else vehicles stop at the end.
  double spacing_m = 25;             ///< Start distance between consecutive vehicles along the path, in m.
  double lookahead_min_m = 4.0;      ///< Pure pursuit look-ahead at standstill, in m.
  double lookahead_gain_s = 0.6;     ///< Look-ahead growth per m/s of speed, in s.
  std::string where;                 ///< "file:line: node[i].route", for later checks.
};

/// driver: one [[node.mirror]] table: changes the seat window's mirror of that name ("interior", "left",
/// "right"; the keys it leaves out keep that mirror's defaults) or adds a mirror (then position, yaw_deg and
/// screen are required). Unset fields are nullopt; the seat window fills them (viewer::DefaultMirrors).
struct SeatMirrorDef {
  std::string name;                              ///< Which mirror.
  bool enabled = true;                           ///< false: this mirror is not drawn.
  std::optional<Vec3> position_m;                ///< Viewpoint in the vehicle frame (rear-axle centre, x forward, y left), in m.
  std::optional<double> yaw_deg;                 ///< Direction the reflected view looks, from x forward, in deg (180: straight back).
  std::optional<double> pitch_deg;               ///< Elevation of that direction, in deg (negative: down).
  std::optional<double> hfov_deg;                ///< Horizontal field of view, in deg.
  std::optional<std::array<double, 4>> screen;   ///< Left, top, right, bottom on the window, fractions 0..1.
};

/// driver: one [[node.screen]] table: a monitor or projection surface of the seat (docs/INPUTS.md, "Screens"),
/// its visible image area given by three corners in the vehicle frame; each screen is a window of its own
/// showing the view through that rectangle from the (head-tracked) eye. No tables: one window with the
/// symmetric view_hfov_deg frustum.
struct SeatScreenDef {
  Vec3 lower_left_m = Vec3::Zero();   ///< Visible area's lower left corner (vehicle frame: rear-axle centre, x forward, y left), in m.
  Vec3 lower_right_m = Vec3::Zero();  ///< Lower right corner, in m.
  Vec3 upper_left_m = Vec3::Zero();   ///< Upper left corner, in m.
  int display = 0;                    ///< SDL display index the window opens on (0: the first).
  bool fullscreen = false;            ///< Borderless fullscreen on `display` at the desktop's resolution.
  uint32_t width_px = 1280;           ///< Window width when not fullscreen, in px.
  uint32_t height_px = 720;           ///< Window height when not fullscreen, in px.
  std::optional<std::array<int, 2>> position_px;  ///< Window's top-left on the desktop, in px (unset: centred on `display`).
  bool main = false;                  ///< This screen also shows the own car, the mirrors and the texts.
  std::string where;                  ///< "file:line: node[i].screen[j]", for errors found when the window opens.
};

/// traffic, traffic_model = "pedestrians": one person walking a path ([[node.pedestrian]]).
struct PedestrianDef {
  std::vector<Vec3> waypoints_m;     ///< The path's points (z = 0), in m; at least two.
  double speed_mps = 1.4;            ///< Walking speed, in m/s. Typical 1.0..1.6.
  bool loop = false;                 ///< true: the last point joins the first; false: walk to the end and back.
  double start_offset_m = 0;         ///< Starts this far along the path, in m.
  /// Open paths: true walks back from the end; false stands at the end (an OpenSCENARIO pedestrian's
  /// straight walk). Set by the scenario mapping, not read from a session file.
  bool turn_back = true;
};

/// One node process of the session ([[node]]).
struct NodeDef {
  std::string name;                  ///< Unique name; the launcher and `platoon-node --name` use it.
  protocol::Role role = protocol::Role::kObserver;
  std::string host = "localhost";    ///< PC that runs this node (for multi-PC runs).
  double drift_ppm = 0.0;            ///< Demo/test only: make the local oscillator drift, in ppm.
  double status_interval_s = 1.0;    ///< Clock-status print period, in s; 0 = never.
  std::string log_level = "info";
  int vehicles = 50;                 ///< traffic: number of vehicles.
  double speed_mps = 15.0;           ///< traffic: cruising speed, in m/s.
  double module_rate_hz = 100.0;     ///< Step rate of the role's main module, in Hz.
  double monitor_rate_hz = 1000.0;   ///< Rate of the clock monitor (checks every tick of the synced clock), in Hz.
  std::string traffic_model = "stadium";  ///< traffic: "stadium" (closed track, checkable truth), "road" ([road], IDM + MOBIL), "route" ([node.route]) or "pedestrians" ([[node.pedestrian]]).
  /// traffic (road): its vehicles change lanes by MOBIL; false: each keeps its lane (a study's lead car; scenario
  /// change_lane actions still move it).
  bool lane_changes = true;
  /// traffic (road): its first vehicle stays lead_gap_m ahead of this driver node's car (a study's lead car); "": none.
  std::string lead;
  double lead_gap_m = 40.0;          ///< traffic (road) with lead: bumper-to-bumper distance ahead of that car, in m.
  bool lead_follows_lane = true;     ///< traffic (road) with lead: the lead car moves into that car's lane when it changes lanes.
  /// traffic (road): per vehicle index, a lane it starts in and never leaves on its own (0: free); driving lanes only.
  std::vector<int> vehicle_lanes;
  /// traffic, driver: readable names of the node's vehicles by index (EntityDisplayName); none: "<node>:<index>",
  /// a driver's car the node name.
  std::vector<std::string> vehicle_names;
  std::optional<Vec3> track_center_m; ///< traffic (stadium): centre of the track, in m (default: from the node name).
  /// sensor, fusion: the vehicle the sensors sit on: "node" (its first vehicle) or "node:index".
  std::string attach_to;
  uint16_t data_port = 0;            ///< sensor, fusion: TCP port of the data PUB socket (0: any free port).
  std::string advertise_address;     ///< sensor, fusion: address others reach the data socket at ("": as the server sees this node).
  std::vector<Table> sensors;        ///< sensor: the [[node.sensor]] tables, read by platoon::sensors (docs/SENSORS.md).
  std::optional<Table> fusion;       ///< fusion: the [node.fusion] table, read by the fusion role (docs/FUSION.md).

  // driver (seed 004 §5.9, §5.11): one vehicle driven by a person (or a script), seen from its seat.
  /// driver: where the driver's commands come from: "sdl" (wheel, pedals, gamepad, keyboard fallback) or
  /// "scripted:<file>" (an input script, docs/INPUTS.md; a relative path is found next to the session file)
  /// or "model:follow" (DriverModelDef).
  std::string input = "sdl";
  DriverModelDef driver_model;       ///< driver, input = "model:follow": the [node.driver_model] table.
  double start_speed_mps = 0.0;      ///< driver: initial speed, in m/s; traffic (road): the first vehicle's speed (also its desired speed).
  bool start_given = false;          ///< traffic (road): start_s_m / start_lane were given: the first vehicle starts there.
  std::optional<Table> input_mapping; ///< driver: the [node.input_mapping] table (the keys of an [input] table, docs/INPUTS.md).
  double start_s_m = 20.0;           ///< driver: start this far along the session road (or the stadium track without [road]), in m; traffic (road): the first vehicle.
  int start_lane = -1;               ///< driver: start lane on the session road: -1 the first lane right of the reference line, +1 the first left; traffic (road): the first vehicle.
  Vec3 eye_m = Vec3(1.2, 0.35, 1.2); ///< driver: eye point in the vehicle frame (origin at the rear-axle centre, x forward, y left), in m.
  double view_hfov_deg = 70.0;       ///< driver: horizontal field of view of the seat window, in deg. Typical 60..100.
  uint32_t view_width_px = 1280;     ///< driver: seat window width, in px.
  uint32_t view_height_px = 720;     ///< driver: seat window height, in px.
  double view_fps = 60.0;            ///< driver: frames per second the seat window aims at, in Hz. Typical 30..144.
  bool headless = false;             ///< driver: no window (tests, headless PCs); also the fallback when no display opens.
  bool hud = false;                  ///< driver: the seat window shows its debug text from the start (Tab toggles it).
  bool cockpit = true;               ///< driver: the seat window draws the own car (bonnet, dashboard, A-pillars, instruments).
  bool mirrors = true;               ///< driver: the seat window shows its mirrors (interior, left, right; see mirror).
  std::vector<SeatMirrorDef> mirror; ///< driver: the [[node.mirror]] tables, in file order.
  std::vector<SeatScreenDef> screen; ///< driver: the [[node.screen]] tables, in file order (empty: one window, view_hfov_deg).
  // The seat's sound (docs/INPUTS.md, "Sound"): played when the seat has a window and an audio device opens.
  bool sound = true;                 ///< driver: the seat plays engine, tyre, wind and indicator sound (with a window).
  double sound_volume = 0.5;         ///< driver: master level of the seat's sound, 0..1.
  double sound_engine = 1.0;         ///< driver: engine layer level, 0..1.
  double sound_tyres = 1.0;          ///< driver: tyre layer level (rolling and squeal), 0..1.
  double sound_wind = 1.0;           ///< driver: wind layer level, 0..1.
  double sound_indicator = 1.0;      ///< driver: indicator click level, 0..1.
  int engine_cylinders = 4;          ///< driver: cylinders of the four-stroke engine the sound plays (firing frequency), 1..16.
  /// driver, input = "stream": UDP port of the control stream (docs/PROTOCOL.md, "External streams"); 0: none.
  uint16_t stream_port = 0;
  /// driver: UDP port of the head-tracking pose stream that moves the seat's eye; 0: none.
  uint16_t head_tracking_port = 0;
  std::string stream_address = "127.0.0.1";  ///< driver: IPv4 address the stream sockets bind ("0.0.0.0": every interface).
  double stream_timeout_s = 0.2;     ///< driver: without a control datagram for this long the vehicle brakes to a stop, in s.
  double head_tracking_timeout_s = 0.5;  ///< driver: without a pose for this long the eye returns to its rest point, in s.
  std::string gaze;                      ///< driver: Pupil Remote's endpoint of an eye tracker ("tcp://127.0.0.1:50020"); "": none.
  std::string gaze_path = "data/{node}_gaze.csv";  ///< driver: the gaze CSV ({node} replaced when read).
  double gaze_min_confidence = 0.6;      ///< driver: gaze samples below this Pupil confidence are not mapped (0..1).
  /// driver: the CAN bus the seat sends its vehicle signals on and, with input = "can", takes its commands
  /// from (docs/CAN.md): "udp:LOCAL:PORT>PEER:PORT", "socketcan:can0" or "candump:in.log>out.log"; "": none.
  std::string can_bus;
  /// driver: the CAN mapping file (signals <-> seat variables, docs/CAN.md), resolved next to the session file.
  std::string can_map;
  /// driver, input = "sdl": force feedback on the wheel when it has a constant-force motor (docs/INPUTS.md,
  /// "Force feedback"); false: never.
  bool force_feedback = true;
  double ffb_gain = 2.0;         ///< driver: fraction of full scale per kN m of front aligning torque. Typical 2.
  double ffb_spring = 0.1;       ///< driver: centring spring, fraction of full scale at full lock. Typical 0.1.
  double ffb_damping = 0.05;     ///< driver: damping, fraction of full scale per full lock per second. Typical 0.05.
  double ffb_max_torque = 0.8;   ///< driver: torque limit, fraction of the wheel's full scale, in (0, 1]. Typical 0.8.
  double can_timeout_s = 0.2;        ///< driver, input = "can": without a command frame for this long (sim time) the vehicle brakes to a stop, in s.
  std::string can_where;             ///< driver: "FILE:LINE: node[i].can_map", for messages about the mapping.
  RecorderDef recorder;              ///< recorder: the file, the streams and the Foxglove channels it writes.
  std::optional<DataWriteDef> data_write;  ///< driver: the [node.data_write] table; nullopt: no data write.
  /// driver, traffic (route): the vehicle model: "single_track" (the default), "bullet" (driver only: 3D
  /// ground contact, reverse gear; docs/BULLET_VEHICLE.md) or "fmu" (an FMI 2.0 co-simulation FMU, one
  /// instance per route vehicle; docs/VEHICLES.md).
  std::string vehicle_model = "single_track";
  /// driver, traffic (route), vehicle_model = "fmu": the .fmu file, found next to the session file when relative.
  std::string fmu;
  std::string fmu_where;             ///< vehicle_model = "fmu": "FILE:LINE: node[i].fmu", for messages about the FMU.
  ControllerDef controller;          ///< driver, traffic (route): the [node.controller] table.
  std::optional<double> tyre_mu;     ///< driver, traffic (route): road friction scale (VehicleDef::mu); nullopt: the default 1.0.
  /// Seconds this node's world view blends a correction of a remote entity over (dr::TrackDef::blend_time_s);
  /// 0 shows the newest estimate at once. nullopt: the role's default, 0.15 s for a driver seat (what a
  /// person sees should not jump), 0 for every other role (sensors, traffic and observers take the
  /// estimate, which is closer to the owner's truth: docs/BENCHMARKS.md, "Road traffic at scale").
  std::optional<double> blend_time_s;
  /// Fastest a blend moves the view, in m/s (dr::TrackDef::max_correction_mps); nullopt: 0.3.
  std::optional<double> blend_speed_mps;
  RouteDef route;                    ///< traffic (route): the [node.route] table.
  std::vector<PedestrianDef> pedestrians;  ///< traffic (pedestrians): the [[node.pedestrian]] tables.

  // Where the entry came from, for the messages of checks made after loading (ValidateSession).
  std::string where;                 ///< "file:line: node[i]" of the [[node]] table.
  /// This node's client secret key file (CURVE), relative to the session file; "" uses [security] key.
  std::string key;
  std::string attach_to_where;       ///< "file:line: node[i].attach_to" of the attach_to key.
};

/// A static box of the scene ([[scene.box]]): a pole, a wall, a parked object.
struct SceneBoxDef {
  uint32_t id = 0;                   ///< Entity id for ground-truth labels (non-zero).
  Vec3 position_m = Vec3::Zero();    ///< Centre of the footprint on the ground, in m (world frame).
  Vec3 size_m = Vec3(1, 1, 1);       ///< Length (along yaw), width, height, in m.
  double yaw_rad = 0;                ///< Rotation about z, in rad (config: yaw_deg).
  uint32_t material = 2;             ///< Lidar material index (docs/LIDAR.md; 2 = concrete).
};

/// A chessboard calibration target ([[scene.calibration_board]], seed 004 §5.5, docs/WORLD.md): black and
/// white squares inside a white border one square wide, drawn unlit. Board frame B: origin at the centre,
/// the printed face in B's y-z plane looking along -x (so rpy 0 faces a camera at -x looking along +x),
/// y to the left and z up as that camera sees it; the top-left square (largest y and z) is black.
struct CalibrationBoardDef {
  std::string camera;                ///< Camera sensor id whose frame C holds the board (it moves with it); "": world frame.
  Vec3 position_m = Vec3::Zero();    ///< Board centre in that frame, in m. Typical 2-5 m ahead of the camera.
  Vec3 rpy_rad = Vec3::Zero();       ///< Roll, pitch, yaw of B in that frame, applied z-y-x (config rpy_deg), in rad.
  int columns = 9;                   ///< Squares across (along -y of B). At least 2.
  int rows = 7;                      ///< Squares down (along -z of B). At least 2.
  double square_m = 0.1;             ///< Edge of one square, in m. Typical 0.03-0.2.
  std::string where;                 ///< "file:line: scene.calibration_board[i]" for messages.
};

/// Static geometry the sensors see ([scene]).
struct SceneDef {
  bool ground = true;                ///< A flat asphalt ground plane at z = 0.
  double ground_half_size_m = 2000;  ///< Half the side of the ground square, in m.
  bool road_environment = false;     ///< Add the [road]'s generated environment objects (buildings, trees, ...).
  std::string environment_preset = "rural";  ///< "rural" or "urban": the densities the [scene.<kind>] tables start from.
  road::EnvironmentDef environment = road::DefaultEnvironmentDef();  ///< The preset with the [scene.<kind>] keys applied (seed: [road] seed).
  double road_brightness = 1.0;      ///< Scale of the road surface's albedo in rendered views (1: the default asphalt).
  double marking_contrast = 1.0;     ///< Markings' brightness between the road surface (0) and white paint (1).
  std::vector<SceneBoxDef> boxes;    ///< [[scene.box]] entries.
  std::vector<CalibrationBoardDef> calibration_boards;  ///< [[scene.calibration_board]] entries.
};

/// The session's road ([road]): a road file, or a generated road.
struct RoadSessionDef {
  std::string file;                  ///< Road file (TOML), relative to the session file; empty: generate.
  int road_id = 0;                   ///< Road of the file to drive on (0: the first).
  double generate_length_m = 3000;   ///< Length of a generated road, in m.
  uint64_t seed = 1;                 ///< Generator seed.
  int lanes = 2;                     ///< Lanes in the driving direction of a generated road.
  int oncoming_lanes = 1;            ///< Lanes of a generated road in the other direction (left of the reference line); 0: one way.
  double lane_width_m = 3.5;         ///< Width of each lane of a generated road, in m.
  double straight_share = 0.3;       ///< Chance that the generator's next element is a straight.
  double straight_length_min_m = 50, straight_length_max_m = 300;  ///< Range of a straight's length, in m.
  double curve_length_min_m = 30, curve_length_max_m = 200;        ///< Range of a curve's constant-radius part, in m.
  double curve_radius_min_m = 100, curve_radius_max_m = 500;       ///< Range of curve radii, in m.
  double curvature_shape = 1.0;      ///< |k| = 1/max_r + (1/min_r - 1/max_r) u^shape: > 1 favours gentle curves.
  double left_turn_share = 0.5;      ///< Chance that a curve turns left.
  double transition_min_length_m = 20;  ///< Shortest clothoid between a straight and a curve, in m.
  double speed_limit_kmh = 0;        ///< Speed limit of a generated road, in km/h (0: none).
  bool endless = false;              ///< Generated road only: endless, drawn ahead of the drivers and dropped behind (docs/ROADS.md §6).
  double ahead_m = 2000;             ///< Endless: road kept ahead of the foremost driver, in m.
  double behind_m = 500;             ///< Endless: road kept behind the last driver, in m.
  std::string where;                 ///< "file:line: road.file" (or "file:line: road") of the session file, for messages.
};

/// How the session's sim time advances ([session] mode, step_hz, ...).
struct StepDef {
  bool lockstep = false;             ///< false: real time (sim time follows the synced clock); true: lock-step.
  double step_hz = 100.0;            ///< Lock-step rate in steps per sim second. Typical 100 (10 ms steps).
  double deadline_s = 1.0;           ///< Lock-step: a member that has not finished a step after this wall time is named in the log, in s.
  bool drop_late = false;            ///< Lock-step: after the deadline, drop the late member (true) or keep waiting (false).
  double end_s = 0;                  ///< Lock-step: stop the session at this sim time, in s (0: run until stopped).
  /// Step period in ns.
  int64_t StepNs() const { return static_cast<int64_t>(1e9 / step_hz + 0.5); }
};

/// When the server's sockets use CURVE ([security] mode).
enum class SecurityMode : uint8_t {
  kAuto,   ///< CURVE when the server binds beyond loopback.
  kCurve,  ///< Always CURVE (also on loopback; tests, one-PC checks of a classroom file).
  kOff,    ///< Never; allowed only for a loopback-only server.
};

/// [security]: who may connect and who may steer the session (docs/DEPLOYMENT.md "Keys and a classroom").
/// Key paths are relative to the session file, resolved when it loads.
struct SecurityDef {
  /// Client key names (the ZAP user id) allowed to control the session, set parameters and add markers.
  std::vector<std::string> operators;
  bool open_status = true;           ///< Status, list and get reads from any authenticated client.
  SecurityMode mode = SecurityMode::kAuto;  ///< When CURVE is on.
  std::string server_key;            ///< The server's secret key file (on the server PC only), e.g. "keys/server.key_secret".
  std::string server_public_key;     ///< The server's public key file every client needs, e.g. "keys/server.key".
  std::string clients;               ///< Folder of the authorised client public keys (<name>.key), e.g. "keys/clients".
  std::string key;                   ///< This PC's client secret key file: the default of its nodes, ctl and viewer.
  bool present = false;              ///< The file has a [security] table.
  std::string where;                 ///< "file:line: security" of the table (or the file), for messages.
};

/// A whole session.
struct SessionDef {
  std::string file;                  ///< Path it was loaded from.
  std::string name = "platoon";      ///< Session name.
  std::string server_host = "127.0.0.1";  ///< Address nodes use to reach the server.
  ServerDef server;
  StepDef step;                      ///< Real time or lock-step ([session] mode).
  clock::ClockDef clock = clock::DefaultClockDef();
  transport::FaultDef faults;        ///< Receive-path faults applied in every process ([faults]).
  RoadSessionDef road;               ///< The road traffic drives on ([road]).
  bool has_road = false;             ///< Whether the file has a [road] table.
  SceneDef scene;                    ///< Static sensor scene ([scene]).
  world::WorldConditions conditions; ///< Light and weather at the start ([light], [weather]; docs/WORLD.md).
  road::SignGeneratorDef sign_generator;  ///< Signs the generator places along the road ([signs]; docs/WORLD.md "Signs").
  std::vector<road::Sign> signs;     ///< Signs listed in the file ([[sign]]), ids from 1, in file order.
  std::vector<NodeDef> nodes;
  std::vector<EventDef> events;      ///< Scenario events ([[event]]), evaluated by the server.
  /// [scenario] file: the OpenSCENARIO file whose entities and storyboard became nodes and events ("": none;
  /// docs/SCENARIOS.md).
  std::string scenario_file;
  /// Scenario parameters' starting values (an OpenSCENARIO file's ParameterDeclarations), name -> value text.
  std::vector<std::pair<std::string, std::string>> scenario_params;
  std::vector<VariatorDef> variators;  ///< Variators during a run ([[variator]]), applied by the server.
  SecurityDef security;              ///< Keys and roles ([security]).
  /// [markers] publish: the ZeroMQ endpoint the server publishes the session's markers and events on for
  /// external recorders, e.g. "tcp://127.0.0.1:5560" (docs/PROTOCOL.md "Marker stream"); "": off.
  std::string markers_publish;

  /// The node named `name`, or nullptr.
  const NodeDef* FindNode(const std::string& name) const;
};

/// Whether `address` binds this PC's loopback only ("127.x.y.z", "::1", "localhost").
bool IsLoopbackAddress(const std::string& address);
/// Whether the session's server sockets use CURVE: mode "curve", or "auto" with a bind beyond loopback.
bool CurveOn(const SessionDef& session);
/// One line for the start log: whether authentication is on, and why.
std::string SecuritySummary(const SessionDef& session);
/// The server's CURVE settings and its authorised client keys (name -> public key); throws ConfigError
/// naming the [security] key and the file when a key file is missing or malformed.
struct ServerCurve {
  transport::CurveDef socket;                     ///< The server sockets' settings.
  std::map<std::string, std::string> authorised;  ///< Client key name -> public key (Z85).
};
ServerCurve LoadServerCurve(const SessionDef& session);
/// A client's CURVE settings from `key_file` (a secret key file; "" uses [security] key), or nullopt
/// when the session's CURVE is off. Throws ConfigError naming the file and what is wrong.
std::optional<transport::CurveDef> LoadClientCurve(const SessionDef& session, const std::string& key_file);
/// The key file of node `node`: its own key, else [security] key.
std::string NodeKeyFile(const SessionDef& session, const NodeDef& node);
/// The [security] checks of ValidateSession, also made by the server after its --bind override: a
/// server that binds beyond loopback has CURVE on and names its keys (or the message says how to make
/// them), mode = "off" only on loopback, every node has a client key, and the key files present on this
/// PC are well-formed. Throws ConfigError.
void ValidateSecurity(const SessionDef& session);

/// Loads and validates a session file; throws ConfigError naming file, line, key and expectation.
SessionDef LoadSession(const std::string& path);
/// Same, from text (for tests); `source_name` appears in messages.
SessionDef LoadSessionText(const std::string& text, const std::string& source_name);

/// Checks what spans the whole session and what the processes would otherwise find only when they start:
/// a sensor or fusion node's attach_to names a traffic or driver node of the session (and a vehicle index
/// it has), sensor and fusion nodes have their tables, and the [road] loads (a road file that is missing, unreadable or
/// has a bad value; road_id names a road). Throws ConfigError naming the file, line and key.
/// `platoon check` and `platoon run` both call it (with the role checks of platoon::sensors and
/// platoon::node), so a session that passes check does not fail at start for a config reason.
void ValidateSession(const SessionDef& session);

/// How the session's nodes call their vehicles (EntityDisplayName): names, driver seats, vehicle_names.
std::vector<NodeNaming> SessionNaming(const SessionDef& session);

/// Reads a [clock] table.
clock::ClockDef ReadClockDef(const Table& t);
/// Reads a [faults] table.
transport::FaultDef ReadFaultDef(const Table& t);

}  // namespace platoon::config
