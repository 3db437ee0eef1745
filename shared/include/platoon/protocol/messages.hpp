#pragma once
/// platoon's messages as plain C++ data. The wire format (Cap'n Proto, shared/schema/platoon.capnp)
/// appears only in codec.cpp; everything else in platoon speaks these types.

#include "platoon/geometry.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace platoon::protocol {

/// Version of the wire protocol; a peer speaking another version is refused at join.
inline constexpr uint16_t kProtocolVersion = 1;

/// What a node does in the session.
enum class Role : uint8_t { kUnknown, kObserver, kTraffic, kDriver, kSensor, kFusion, kViewer };
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
  bool operator==(const NodeInfo&) const = default;
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
  bool operator==(const WorldState&) const = default;
};

/// Any client -> server: session control.
struct SessionControl {
  enum class Command : uint8_t { kStart, kPause, kResume, kStop };
  Command command = Command::kStart;
  int64_t at_server_time_ns = 0;  ///< For start: reference time at which sim time T0 begins.
  int64_t sim_t0_ns = 0;          ///< For start: sim time at that instant.
  bool operator==(const SessionControl&) const = default;
};

/// Server -> client: session state.
struct SessionStatus {
  SessionPhase phase = SessionPhase::kWaiting;
  int64_t sim_time_ns = 0;
  int64_t server_time_ns = 0;
  int64_t start_at_ns = 0;
  bool operator==(const SessionStatus&) const = default;
};

/// A virtual parameter (seed 004 §3.4): a path, a TOML literal value, and whether it can be set.
struct Parameter {
  std::string path;         ///< e.g. "server.broadcast_hz".
  std::string value;        ///< TOML literal: 60, 0.5, true, "text".
  bool writable = false;
  std::string description;
  bool operator==(const Parameter&) const = default;
};

/// Client -> server: list parameters under a prefix.
struct ParamListRequest {
  std::string prefix;
  bool operator==(const ParamListRequest&) const = default;
};
/// Server -> client: parameter list.
struct ParamList {
  std::vector<Parameter> params;
  bool operator==(const ParamList&) const = default;
};
/// Client -> server: read one parameter.
struct ParamGet {
  std::string path;
  bool operator==(const ParamGet&) const = default;
};
/// Client -> server: write one parameter.
struct ParamSet {
  std::string path;
  std::string value;
  bool operator==(const ParamSet&) const = default;
};
/// Server -> client: result of a get or set.
struct ParamReply {
  bool ok = false;
  Parameter param;
  std::string error;
  bool operator==(const ParamReply&) const = default;
};
/// Client -> server: ask for the world state's node table and session status once.
struct StatusRequest {
  bool operator==(const StatusRequest&) const = default;
};

/// Any platoon message.
using Message = std::variant<Join, Welcome, Refuse, Leave, Heartbeat, TimeRequest, TimeReply, NodeState,
                             WorldState, SessionControl, SessionStatus, ParamListRequest, ParamList,
                             ParamGet, ParamSet, ParamReply, StatusRequest>;

/// Short name of the message's type, for logs ("join", "world_state", ...).
std::string_view MessageName(const Message& message);

}  // namespace platoon::protocol
