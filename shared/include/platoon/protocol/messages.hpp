#pragma once
/// platoon's messages as plain C++ data. The wire format (Cap'n Proto, shared/schema/platoon.capnp)
/// appears only in codec.cpp; everything else in platoon speaks these types.

#include "platoon/geometry.hpp"
#include "platoon/world/conditions.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace platoon::protocol {

/// Version of the wire protocol; a peer speaking another version is refused at join.
inline constexpr uint16_t kProtocolVersion = 3;
/// The oldest version whose messages Decode still reads (recordings made by older builds): version 1
/// differs from 2 only in how entities are laid out (EntityState lists instead of CompactEntity); version
/// 3 adds a rolling keyframe's kept ids (WorldState::kept_entities), which a version 2 receiver would not
/// know to keep (its slice sweep would drop them), hence the new version.
inline constexpr uint16_t kOldestReadableVersion = 1;

/// What a node does in the session.
enum class Role : uint8_t { kUnknown, kObserver, kTraffic, kDriver, kSensor, kFusion, kViewer, kRecorder };
/// Lower-case name of a role ("observer", "traffic", ...).
std::string_view RoleName(Role role);
/// Parses a role name; returns kUnknown for anything else.
Role RoleFromName(std::string_view name);

/// Class of a simulated entity.
enum class EntityKind : uint8_t { kUnknown, kCar, kTruck, kMotorcycle, kBicycle, kPedestrian, kStaticObject };

/// Phase of the session's sim clock.
enum class SessionPhase : uint8_t { kWaiting, kStarting, kRunning, kPaused, kStopped };
/// Lower-case name of a phase.
std::string_view PhaseName(SessionPhase phase);

/// Kind of a data stream a node publishes.
enum class StreamKind : uint8_t { kUnknown, kLidar, kRadar, kCamera, kImu, kGnss, kFused, kObjects };
/// Lower-case name of a stream kind ("lidar", ...).
std::string_view StreamKindName(StreamKind kind);
/// Parses a stream kind name; kUnknown for anything else.
StreamKind StreamKindFromName(std::string_view name);

/// A data stream a node publishes on its own PUB socket (sensor outputs never pass through the server).
struct DataEndpoint {
  std::string stream_id;              ///< Sensor id, unique in the session, e.g. "lidar_front"; also the PUB topic.
  StreamKind kind = StreamKind::kUnknown;
  uint16_t port = 0;                  ///< TCP port of the node's data PUB socket.
  std::string address;                ///< Host address. Empty in a Join: the server fills in the peer address.
  /// "tcp://address:port".
  std::string Endpoint() const;
  bool operator==(const DataEndpoint&) const = default;
};

/// Node -> server: ask to join the session.
struct Join {
  std::string name;                               ///< Unique node name in the session.
  Role role = Role::kUnknown;                     ///< What the node does.
  std::string host;                               ///< Hostname of the node's PC.
  uint16_t protocol_version = kProtocolVersion;   ///< Version the node speaks.
  uint32_t pid = 0;                               ///< Process id, for the status table.
  SessionPhase session_phase = SessionPhase::kWaiting;  ///< The node's view of the session, for a restarted server.
  int64_t sim_anchor_ns = 0;                      ///< Sim time at ref_anchor_ns (running/paused sessions).
  int64_t ref_anchor_ns = 0;                      ///< Reference time of that anchor.
  std::vector<DataEndpoint> endpoints;            ///< Data streams the node publishes.
  bool lockstep_member = false;                   ///< Lock-step steps wait for this peer's acknowledgements (nodes that step modules).
  bool operator==(const Join&) const = default;
};

/// Server -> node: join accepted.
struct Welcome {
  uint32_t node_id = 0;                 ///< Id assigned to the node; owner id of its entities.
  std::string session_name;             ///< Name of the session.
  int64_t heartbeat_interval_ns = 0;    ///< How often the node must send a heartbeat.
  int64_t lost_timeout_ns = 0;          ///< Silence after which the server marks the node lost.
  int64_t server_time_ns = 0;           ///< Reference time when the welcome was sent.
  uint16_t time_port = 0;               ///< TCP port of the time service.
  uint16_t world_port = 0;              ///< TCP port of the world-state publisher.
  uint16_t state_port = 0;              ///< TCP port for node state upstream.
  int64_t step_ns = 0;                  ///< Lock-step period of the session, in ns; 0: real time.
  bool time_control = false;            ///< The server accepts seek and speed commands (a replay).
  uint64_t state_token = 0;             ///< Random per join: every NodeState of this node carries it.
  /// The session file's TOML text ("" when the server has none: a session built in code, an old server),
  /// so that a client started without the file (a viewer with only --server) draws the session's road and
  /// scene. A replay serves its recording's file. Typical 1-20 kB.
  std::string session_file;
  std::string session_file_path;        ///< Where that file was on the server's PC ("" when unknown).
  bool operator==(const Welcome&) const = default;
};

/// Server -> node: join refused, with the reason.
struct Refuse {
  std::string reason;                                  ///< Human-readable reason.
  uint16_t server_protocol_version = kProtocolVersion; ///< Version the server speaks.
  bool operator==(const Refuse&) const = default;
};

/// Node -> server: leaving on purpose.
struct Leave {
  uint32_t node_id = 0;
  std::string reason;
  bool operator==(const Leave&) const = default;
};

/// Node -> server: alive, with the node's clock-sync figures.
struct Heartbeat {
  uint32_t node_id = 0;
  int64_t sim_time_ns = 0;           ///< The node's synced reference time at send.
  int64_t clock_offset_ns = 0;       ///< The node's current offset estimate against the server.
  int64_t rtt_ns = 0;                ///< The node's minimum round-trip time in its sample window.
  int64_t rate_correction_ppb = 0;   ///< The node's current rate correction, parts per billion.
  bool operator==(const Heartbeat&) const = default;
};

/// Node -> server: NTP-style time request.
struct TimeRequest {
  uint32_t node_id = 0;
  uint32_t sequence = 0;
  int64_t t1_ns = 0;  ///< Node local time at send.
  bool operator==(const TimeRequest&) const = default;
};

/// Server -> node: NTP-style time reply.
struct TimeReply {
  uint32_t sequence = 0;
  int64_t t1_ns = 0;  ///< Echo of the request's t1.
  int64_t t2_ns = 0;  ///< Server reference time at receive.
  int64_t t3_ns = 0;  ///< Server reference time at send.
  bool operator==(const TimeReply&) const = default;
};

/// Driver commands of a vehicle.
struct Controls {
  float steer = 0;     ///< Normalised steering, -1 (right) .. 1 (left).
  float throttle = 0;  ///< 0 .. 1.
  float brake = 0;     ///< 0 .. 1.
  bool operator==(const Controls&) const = default;
};

/// Vehicle lights.
struct Lights {
  bool headlights = false;
  bool brake = false;
  bool indicator_left = false;
  bool indicator_right = false;
  bool reverse = false;
  bool operator==(const Lights&) const = default;
};

/// State of one entity, as synced between processes.
struct EntityState {
  uint64_t id = 0;                    ///< Session-unique entity id.
  uint32_t owner_node = 0;            ///< Node id of the owner; only it may update the entity.
  EntityKind kind = EntityKind::kUnknown;
  KinematicState kinematics;          ///< Stamp (sim time), pose, velocities, acceleration.
  Vec3 box_size_m = Vec3(4.5, 1.8, 1.5);  ///< Length, width, height, in m.
  Controls controls;
  Lights lights;
  bool stale = false;                 ///< Set by the server while the owner is lost.
  bool operator==(const EntityState&) const = default;
};

/// Node -> server: the node's owned entities.
struct NodeState {
  uint32_t node_id = 0;
  uint64_t sequence = 0;
  std::vector<EntityState> entities;
  uint64_t step_done = 0;       ///< Lock-step: the node finished this step (sent after its states); 0 in real time.
  uint64_t next_step = 0;       ///< Lock-step: no module of the node is due before this step, so steps before it are not waited for; 0: the next step.
  uint64_t token = 0;           ///< The state token of the node's Welcome; the server refuses states without it.
  bool operator==(const NodeState&) const = default;
};

/// One row of the server's node table.
struct NodeInfo {
  uint32_t node_id = 0;
  std::string name;
  Role role = Role::kUnknown;
  std::string host;
  int64_t clock_offset_ns = 0;
  int64_t rtt_ns = 0;
  float update_rate_hz = 0;
  float loss_fraction = 0;
  int64_t last_seen_ns = 0;   ///< Server reference time of the node's last message.
  bool lost = false;
  std::vector<DataEndpoint> endpoints;  ///< The node's data streams, with the address the server saw it at.
  uint32_t pid = 0;                     ///< Process id; a restarted node has a new one.
  bool operator==(const NodeInfo&) const = default;
};

/// One entry of the session's event log (markers, parameter changes, scenario firings and actions),
/// numbered by the server. World states carry the entries of the last second; receivers drop sequences
/// they have seen.
struct LoggedEvent {
  enum class Kind : uint8_t {
    kMarker,   ///< A marker (platoon ctl mark, a key on a seat, a scenario action).
    kParam,    ///< A parameter changed: text "path = value".
    kFired,    ///< A scenario event fired: text is its name, detail the values that fired it.
    kAction,   ///< A scenario action for node `target_node` to carry out at sim_time_ns.
    kMessage,  ///< A message to show in seat windows (target_node 0: every seat).
  };
  uint64_t sequence = 0;      ///< 1, 2, ... per server run.
  int64_t sim_time_ns = 0;    ///< Session sim time of the event.
  Kind kind = Kind::kMarker;
  std::string source;         ///< "ctl", a node name, "event:<name>".
  std::string text;           ///< Marker text, "path = value", event name, action name, message.
  std::string detail;         ///< JSON object: values that fired an event, an action's arguments; may be empty.
  uint32_t target_node = 0;   ///< Action/message: the node that carries it out; 0: none or every node.
  uint64_t entity_id = 0;     ///< The entity concerned; 0: none.
  bool operator==(const LoggedEvent&) const = default;
};

/// Server -> every node: the merged world.
struct WorldState {
  uint64_t sequence = 0;
  int64_t server_time_ns = 0;   ///< Reference time when built.
  int64_t sim_time_ns = 0;      ///< Session sim time when built.
  SessionPhase phase = SessionPhase::kWaiting;
  bool keyframe = true;         ///< True: `entities` is the full set; false: only changes.
  std::vector<EntityState> entities;
  std::vector<uint64_t> removed_entities;
  std::vector<NodeInfo> nodes;
  uint64_t step = 0;            ///< Lock-step: grants step `step`, to be computed at sim_time_ns; 0 in real time.
  double sim_rate = 1.0;        ///< Sim ns per reference ns while running (a replay's speed); 1 live.
  std::vector<LoggedEvent> events;  ///< Events of the last second (repeated for loss); dedupe by sequence.
  /// Rolling keyframe (docs/PROTOCOL.md, "Keyframes"): with keyframe_parts > 1 (and keyframe false) this
  /// broadcast also lists every live entity whose id % keyframe_parts == keyframe_part, so a receiver drops
  /// the ids of that slice it does not list. 0 parts: no slice.
  uint16_t keyframe_part = 0;
  uint16_t keyframe_parts = 0;   ///< Slices of the rolling keyframe, typically broadcast_hz * keyframe_interval_s.
  /// Rolling keyframe slice (version 3): live ids of the slice listed by id only, their state unchanged
  /// since it last went out on the broadcast stream, within the last keyframe interval. A receiver keeps
  /// them as it holds them (it sweeps neither these nor `entities`).
  std::vector<uint64_t> kept_entities;
  /// The session's light and weather ([light], [weather], live parameters light.* and weather.*): on every
  /// keyframe (and a rolling keyframe's first slice) and on any broadcast after they changed; absent
  /// otherwise (the receiver keeps what it has). Older peers ignore it.
  std::optional<world::WorldConditions> conditions;
  bool operator==(const WorldState&) const = default;
};

/// True when `w` lists every live entity with id `id`: a whole keyframe, or the slice of a rolling
/// keyframe that holds `id`. A receiver drops a covered id that `w` does not list.
inline bool KeyframeCovers(const WorldState& w, uint64_t id) {
  return w.keyframe || (w.keyframe_parts > 1 && id % w.keyframe_parts == w.keyframe_part);
}

/// True when `w` is authoritative for some ids (a whole keyframe or a rolling keyframe's slice).
inline bool HasKeyframe(const WorldState& w) { return w.keyframe || w.keyframe_parts > 1; }

/// The ids a keyframe or a slice lists as live, sorted: those of `entities` and the slice's kept ids. A
/// receiver drops a held id that `w` covers (KeyframeCovers) and that is not in here.
std::vector<uint64_t> KeyframeListed(const WorldState& w);

/// True when `listed` (sorted, from KeyframeListed) holds `id`.
bool Listed(const std::vector<uint64_t>& listed, uint64_t id);

/// Any client -> server: session control.
struct SessionControl {
  /// kSeek and kSpeed act on replays only (a live server refuses them). kStart is refused while the
  /// session is starting, running or paused; kRestart (operators only, any phase, with a reason) is the
  /// deliberate way to begin again at T0.
  enum class Command : uint8_t { kStart, kPause, kResume, kStop, kSeek, kSpeed, kRestart };
  Command command = Command::kStart;
  int64_t at_server_time_ns = 0;  ///< For start and restart: reference time at which sim time T0 begins.
  int64_t sim_t0_ns = 0;          ///< For start and restart: sim time at that instant; for seek: the target sim time.
  double speed = 1.0;             ///< For speed: sim ns per reference ns (> 0).
  std::string reason = {};        ///< For restart: why, e.g. "scenario B"; logged by the server (required).
  bool operator==(const SessionControl&) const = default;
};

/// Server -> client: session state.
struct SessionStatus {
  SessionPhase phase = SessionPhase::kWaiting;
  int64_t sim_time_ns = 0;
  int64_t server_time_ns = 0;
  int64_t start_at_ns = 0;
  std::string error;  ///< Non-empty: the command was refused (nothing changed), and why.
  bool operator==(const SessionStatus&) const = default;
};

/// A virtual parameter (seed 004 §3.4): a path, a TOML literal value, whether it can be set, and what
/// values it takes.
struct Parameter {
  std::string path;         ///< e.g. "server.broadcast_hz", "node.traffic.desired_speed".
  std::string value;        ///< TOML literal: 60, 0.5, true, "text".
  bool writable = false;
  std::string description;
  std::string type = {};    ///< "float", "int", "bool", "string"; empty: not stated.
  std::string unit = {};    ///< SI unit ("m/s", "Hz"); empty: none.
  double min = -std::numeric_limits<double>::infinity();  ///< Inclusive numeric range.
  double max = std::numeric_limits<double>::infinity();
  bool operator==(const Parameter&) const = default;
};

// request_id: chosen by the asker and copied into the answer (the server forwards node.<name>.* paths
// to their node under an id of its own).

/// Client -> server: list parameters under a prefix.
struct ParamListRequest {
  std::string prefix;
  uint64_t request_id = 0;
  bool operator==(const ParamListRequest&) const = default;
};
/// Server -> client: parameter list.
struct ParamList {
  std::vector<Parameter> params;
  uint64_t request_id = 0;
  std::vector<std::string> errors;  ///< Nodes that did not answer in time: "node.<name>: <why>".
  bool operator==(const ParamList&) const = default;
};
/// Client -> server: read one parameter.
struct ParamGet {
  std::string path;
  uint64_t request_id = 0;
  bool operator==(const ParamGet&) const = default;
};
/// Client -> server: write one parameter.
struct ParamSet {
  std::string path;
  std::string value;
  uint64_t request_id = 0;
  bool operator==(const ParamSet&) const = default;
};
/// Server -> client: result of a get or set.
struct ParamReply {
  bool ok = false;
  Parameter param;
  std::string error;
  uint64_t request_id = 0;
  bool operator==(const ParamReply&) const = default;
};

/// Client -> server: a marker on the synced clock; answered with an EventList holding the logged marker.
struct Mark {
  std::string text;
  int64_t sim_time_ns = 0;    ///< Sim time of the marker; 0: the server's sim time on arrival.
  uint64_t request_id = 0;
  bool operator==(const Mark&) const = default;
};
/// Client -> server: the logged events after `after_sequence`, oldest first.
struct EventsRequest {
  uint64_t after_sequence = 0;
  uint64_t request_id = 0;
  bool operator==(const EventsRequest&) const = default;
};
/// Server -> client: logged events (the answer to Mark and EventsRequest).
struct EventList {
  std::vector<LoggedEvent> events;
  uint64_t request_id = 0;
  std::string error;          ///< Non-empty: the request was refused, and why.
  bool operator==(const EventList&) const = default;
};

/// Client -> server: ask for the world state's node table and session status once.
struct StatusRequest {
  bool operator==(const StatusRequest&) const = default;
};

/// Client -> server, on a session without CURVE: the operator token the server wrote to a file only its
/// user can read (session::FindOperatorToken). A right token makes the connection an operator; nothing
/// is answered. A wrong one is counted as not_operator.
struct OperatorHello {
  std::string token;  ///< The token file's text, e.g. 64 hex digits.
  bool operator==(const OperatorHello&) const = default;
};

/// What every sensor output carries: who measured, when, and where the sensor sits on its vehicle.
struct SensorHeader {
  std::string sensor_id;               ///< Stream id (session-unique).
  StreamKind kind = StreamKind::kUnknown;
  uint32_t node_id = 0;                ///< Publishing node.
  uint64_t sequence = 0;               ///< Per stream, from 1; restarts at 1 with the host.
  int64_t stamp_ns = 0;                ///< Sim time of the measurement (scan start for a lidar).
  uint64_t entity_id = 0;              ///< Entity the sensor is mounted on.
  Vec3 mount_position_m = Vec3::Zero();  ///< Sensor origin in the vehicle frame (rear-axle centre), in m.
  Quat mount_orientation = Quat::Identity();  ///< Sensor-to-vehicle rotation.
  uint64_t host_epoch = 0;             ///< Random per host process run (restart detection).
  bool operator==(const SensorHeader& o) const {
    return sensor_id == o.sensor_id && kind == o.kind && node_id == o.node_id && sequence == o.sequence &&
           stamp_ns == o.stamp_ns && entity_id == o.entity_id && mount_position_m == o.mount_position_m &&
           mount_orientation.coeffs() == o.mount_orientation.coeffs() && host_epoch == o.host_epoch;
  }
};

/// Sensor host -> subscribers: one lidar scan as packed point records (layout: docs/PROTOCOL.md).
struct PointCloud {
  SensorHeader header;
  int64_t duration_ns = 0;       ///< Scan duration; point time offsets lie in [0, duration].
  uint32_t point_count = 0;
  uint16_t point_stride = 0;     ///< Bytes per record.
  std::string points;            ///< point_count * point_stride bytes.
  bool vehicle_frame = false;    ///< False: sensor frame at each point's own time.
  bool operator==(const PointCloud&) const = default;
};

/// One radar object on the wire.
struct RadarDetection {
  float range_m = 0, azimuth_rad = 0, range_rate_mps = 0, rcs_dbsm = 0;
  uint8_t object_class = 6;      ///< 1 car, 2 truck, 3 pedestrian, 4 motorcycle, 5 bicycle, 6 unknown.
  uint32_t entity_id = 0;        ///< Ground truth; 0 for a false positive.
  bool false_positive = false;
  float length_m = 0, width_m = 0, orientation_rad = 0, x_m = 0, y_m = 0;
  bool operator==(const RadarDetection&) const = default;
};

/// Sensor host -> subscribers: one radar cycle.
struct RadarScan {
  SensorHeader header;
  std::vector<RadarDetection> detections;
  bool operator==(const RadarScan&) const = default;
};

/// Sensor host -> subscribers: one IMU sample (sensor frame).
struct ImuMeasurement {
  SensorHeader header;
  Vec3 angular_velocity_radps = Vec3::Zero();
  Vec3 acceleration_mps2 = Vec3::Zero();
  bool operator==(const ImuMeasurement&) const = default;
};

/// Sensor host -> subscribers: one GNSS fix.
struct GnssMeasurement {
  SensorHeader header;
  double latitude_deg = 0, longitude_deg = 0, altitude_m = 0;
  Vec3 velocity_enu_mps = Vec3::Zero();
  double horizontal_sigma_m = 0, vertical_sigma_m = 0;
  bool operator==(const GnssMeasurement&) const = default;
};

/// A ground-truth 2D box on the wire.
struct CameraRoi {
  uint32_t entity_id = 0, class_id = 0;
  float u_min = 0, v_min = 0, u_max = 0, v_max = 0;  ///< px, u right, v down.
  float depth_m = 0, occlusion_ratio = 0;
  bool truncated = false;
  uint32_t detail = 0;  ///< Class detail: for a sign road::SignDetail (type * 65536 + value); 0 none.
  bool operator==(const CameraRoi&) const = default;
};

/// Sensor host -> subscribers: one camera frame: intrinsics, ROI ground truth and, optionally, the image.
struct CameraFrame {
  SensorHeader header;
  uint32_t width = 0, height = 0;
  double fx = 0, fy = 0, cx = 0, cy = 0;
  std::vector<CameraRoi> rois;
  std::string encoding;          ///< "" (no image), "rgb8" or "png".
  std::string image;
  bool operator==(const CameraFrame&) const = default;
};

/// How one source took part in a fused frame.
enum class SourceStatus : uint8_t { kOk, kLate, kMissing };
/// Lower-case name ("ok", "late", "missing").
std::string_view SourceStatusName(SourceStatus s);

/// One source's metadata in a fused frame.
struct FusedSource {
  std::string sensor_id;
  int64_t stamp_ns = 0;          ///< Scan start of the merged cloud (0 when missing).
  uint32_t point_count = 0;
  SourceStatus status = SourceStatus::kMissing;
  uint64_t host_epoch = 0;
  uint64_t sequence = 0;         ///< The source cloud's sequence number.
  /// Index of this source's first record in the fused blob: its `point_count` records follow. The fusion
  /// node lays the groups out in the order the clouds arrived (in a lock-step session, the clouds due at
  /// one step in source order) and always writes this field. kInSourceOrder: a frame from before this
  /// field, whose groups lie in source order (FusedGroups says where), except a voxel- or ground-reduced
  /// one, whose points were not grouped (each carries its source index).
  uint32_t first_point = kInSourceOrder;
  static constexpr uint32_t kInSourceOrder = 0xffffffffu;
  bool operator==(const FusedSource&) const = default;
};

/// Fusion node -> subscribers: the merged, motion-compensated cloud in the ego vehicle frame.
struct FusedCloud {
  std::string sensor_id;         ///< Fusion stream id.
  uint32_t node_id = 0;
  uint64_t sequence = 0;
  int64_t reference_ns = 0;      ///< Sim time every point is compensated to.
  uint64_t entity_id = 0;        ///< Ego vehicle.
  std::vector<FusedSource> sources;
  uint32_t point_count = 0;
  uint16_t point_stride = 0;
  std::string points;
  bool motion_compensated = true;
  bool operator==(const FusedCloud&) const = default;
};

/// Where each source's records lie in a fused frame: {first record, count} per entry of `sources`
/// (count 0 where the source gave none). Every first_point kInSourceOrder (a frame from before the
/// field): the groups in source order, clamped to `point_count` (not meaningful for a reduced frame of
/// that time, see FusedSource::first_point). nullopt when the frame's groups are not valid: some given
/// and some not, or a group reaching past `point_count` (Decode refuses such a frame).
std::optional<std::vector<std::pair<uint32_t, uint32_t>>> FusedGroups(const FusedCloud& frame);

/// One object of an object list on the wire (classes as sensors::ObjectClass).
struct DetectedObject {
  uint32_t track_id = 0;          ///< Ground-truth entity id the track follows; 0 for a false positive.
  uint8_t object_class = 0;       ///< Reported: 0 unclassified, 1 car, 2 truck, 3 motorbike, 4 bicycle, 5 pedestrian.
  uint8_t truth_class = 0;        ///< Ground-truth class, for evaluation.
  Vec3 position_m = Vec3::Zero(); ///< Reference point in the sensor frame, in m.
  Vec3 velocity_mps = Vec3::Zero();  ///< Absolute velocity in sensor-frame axes, in m/s.
  Vec3 size_m = Vec3::Zero();     ///< Length, width, height, in m.
  bool operator==(const DetectedObject&) const = default;
};

/// Sensor host -> subscribers: one object-list sensor cycle.
struct ObjectList {
  SensorHeader header;
  std::vector<DetectedObject> objects;
  bool operator==(const ObjectList&) const = default;
};

/// Any platoon message.
using Message = std::variant<Join, Welcome, Refuse, Leave, Heartbeat, TimeRequest, TimeReply, NodeState,
                             WorldState, SessionControl, SessionStatus, ParamListRequest, ParamList,
                             ParamGet, ParamSet, ParamReply, StatusRequest, PointCloud, RadarScan,
                             ImuMeasurement, GnssMeasurement, CameraFrame, FusedCloud, ObjectList, Mark,
                             EventsRequest, EventList, OperatorHello>;

/// Short name of the message's type, for logs ("join", "world_state", ...).
std::string_view MessageName(const Message& message);
/// Lower-case name of a logged event's kind ("marker", "param", "fired", "action", "message").
std::string_view EventKindName(LoggedEvent::Kind kind);

}  // namespace platoon::protocol
