#include "platoon/server/sync_server.hpp"

#include "platoon/dead_reckoning_kinds.hpp"
#include "platoon/protocol/codec.hpp"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <sstream>

namespace platoon::server {
namespace {

using protocol::Decode;
using protocol::DecodeError;
using protocol::Encode;
using protocol::SessionPhase;

constexpr int64_t kSecond = 1'000'000'000;

std::string FormatUs(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f", static_cast<double>(ns) / 1e3);
  return buf;
}

}  // namespace

SyncServer::SyncServer(const config::SessionDef& session, std::shared_ptr<spdlog::logger> logger,
                       const clock::Oscillator& reference)
    : session_(session),
      log_(std::move(logger)),
      reference_(reference),
      control_(context_, transport::Pattern::kRouter, transport::ChannelDef{.faults = session.faults}),
      time_(context_, transport::Pattern::kRouter, transport::ChannelDef{.faults = session.faults}),
      world_(context_, transport::Pattern::kPub),
      state_(context_, transport::Pattern::kPull, transport::ChannelDef{.faults = session.faults}) {}

BoundPorts SyncServer::Bind() {
  const auto& s = session_.server;
  BoundPorts p;
  using transport::PortOf;
  using transport::TcpEndpoint;
  p.control = PortOf(control_.Bind(TcpEndpoint(s.bind_address, s.control_port)));
  p.time = PortOf(time_.Bind(TcpEndpoint(s.bind_address, s.time_port)));
  p.world = PortOf(world_.Bind(TcpEndpoint(s.bind_address, s.world_port)));
  p.state = PortOf(state_.Bind(TcpEndpoint(s.bind_address, s.state_port)));
  session_.server.control_port = p.control;
  session_.server.time_port = p.time;
  session_.server.world_port = p.world;
  session_.server.state_port = p.state;
  return p;
}

int64_t SyncServer::SimTimeAt(int64_t ref_ns) const {
  switch (phase_) {
    case SessionPhase::kRunning: return sim_at_anchor_ns_ + (ref_ns - anchor_ref_ns_);
    case SessionPhase::kStarting: return sim_at_anchor_ns_ + std::min<int64_t>(0, ref_ns - anchor_ref_ns_);
    default: return sim_at_anchor_ns_;
  }
}

void SyncServer::Run(const std::atomic<bool>& stop) {
  const int64_t broadcast_period = static_cast<int64_t>(1e9 / session_.server.broadcast_hz);
  const int64_t status_period = static_cast<int64_t>(session_.server.status_interval_s * 1e9);
  const int64_t forward_delay = static_cast<int64_t>(session_.server.max_forward_delay_ms * 1e6);
  const int64_t forward_interval = static_cast<int64_t>(session_.server.min_forward_interval_ms * 1e6);
  int64_t last_forward = INT64_MIN / 2;
  // A delta goes out once the oldest change has waited forward_delay and the last delta is forward_interval old.
  auto forward_due = [&] { return std::max(first_change_ns_ + forward_delay, last_forward + forward_interval); };
  int64_t next_broadcast = reference_.NowNs();
  int64_t next_status = next_broadcast + status_period;
  std::array<transport::Channel*, 3> inputs = {&time_, &control_, &state_};

  while (!stop.load(std::memory_order_relaxed)) {
    const int64_t now = reference_.NowNs();
    int64_t next_due = std::min(next_broadcast, status_period > 0 ? next_status : INT64_MAX);
    if (first_change_ns_ >= 0) next_due = std::min(next_due, forward_due());
    transport::WaitAny(inputs, std::chrono::nanoseconds(std::clamp<int64_t>(next_due - now, 0, 50'000'000)));

    // Time first: its replies are stamped as close to arrival as the loop allows.
    while (auto p = time_.TryReceive()) HandleTime(*p);
    int64_t t = reference_.NowNs();
    while (auto p = control_.TryReceive()) HandleControl(*p, t);
    while (auto p = state_.TryReceive()) HandleState(*p, t);

    t = reference_.NowNs();
    if (phase_ == SessionPhase::kStarting && t >= anchor_ref_ns_) {
      phase_ = SessionPhase::kRunning;
      log_->info("session running: sim time {:.3f} s", static_cast<double>(SimTimeAt(t)) / 1e9);
    }
    CheckLost(t);
    if (t >= next_broadcast) {
      Broadcast(t, true);
      // Keep the schedule; after a stall, skip missed slots instead of bursting.
      next_broadcast += broadcast_period;
      if (next_broadcast < t) next_broadcast = t + broadcast_period;
    }
    else if (first_change_ns_ >= 0 && t >= forward_due()) {
      // Forward merged updates now instead of holding them for the next periodic broadcast.
      Broadcast(t, false);
      last_forward = t;
    }
    if (status_period > 0 && t >= next_status) {
      PrintStatus(t);
      next_status = t + status_period;
    }
  }
  // Tell everyone the session is over; nodes keep their dead-reckoned world until they stop.
  log_->info("server stopping");
}

void SyncServer::CountDecodeError(const std::string& where, const std::string& detail) {
  ++counters_.decode_errors;
  ++errors_since_log_;
  // Bad network input is counted always and logged at most once a second.
  const int64_t now = reference_.NowNs();
  if (now - last_error_log_ns_ >= kSecond) {
    log_->warn("dropped {} undecodable message(s) on {} socket (last: {})", errors_since_log_, where, detail);
    last_error_log_ns_ = now;
    errors_since_log_ = 0;
  }
}

NodeRecord* SyncServer::FindByPeer(const std::string& peer) {
  for (auto& [id, n] : nodes_)
    if (n.peer == peer) return &n;
  return nullptr;
}

void SyncServer::ReplyControl(const std::string& peer, const protocol::Message& message) {
  control_.Send(transport::Packet{peer, Encode(message)});
}

template <class T>
const T* SyncServer::Expect(const protocol::Decoded& d, const char* socket) {
  // Bad input is counted (and logged at a limited rate); the caller just skips it.
  if (d.error != DecodeError::kNone) {
    if (d.error == DecodeError::kVersionMismatch) ++counters_.version_refused;
    else CountDecodeError(socket, d.detail);
    return nullptr;
  }
  const T* m = std::get_if<T>(&*d.message);
  if (!m) ++counters_.unexpected_message;
  return m;
}

void SyncServer::HandleTime(const transport::Packet& packet) {
  const int64_t t2 = reference_.NowNs();
  const auto d = Decode(packet.data);
  const auto* req = Expect<protocol::TimeRequest>(d, "time");
  if (!req) return;
  protocol::TimeReply reply{req->sequence, req->t1_ns, t2, 0};
  reply.t3_ns = reference_.NowNs();
  time_.Send(transport::Packet{packet.peer, Encode(reply)});
  ++counters_.time_replies;
}

void SyncServer::HandleControl(const transport::Packet& packet, int64_t now) {
  const auto d = Decode(packet.data);
  if (d.error == DecodeError::kVersionMismatch && d.message && std::holds_alternative<protocol::Join>(*d.message)) {
    HandleJoin(packet, std::get<protocol::Join>(*d.message), d.peer_version, now);
    return;
  }
  if (d.error != DecodeError::kNone) {
    if (d.error == DecodeError::kVersionMismatch) {
      ++counters_.version_refused;
      ReplyControl(packet.peer, protocol::Refuse{d.detail, protocol::kProtocolVersion});
    } else {
      CountDecodeError("control", d.detail);
    }
    return;
  }
  const auto& m = *d.message;
  if (const auto* join = std::get_if<protocol::Join>(&m)) {
    HandleJoin(packet, *join, d.peer_version, now);
    return;
  }
  // Session control, parameters and status may come from tools that never joined (a viewer, a script).
  if (const auto* c = std::get_if<protocol::SessionControl>(&m)) {
    HandleSessionControl(*c, now);
    ReplyControl(packet.peer, protocol::SessionStatus{phase_, SimTimeAt(now), now, start_at_ns_});
    return;
  }
  if (const auto* r = std::get_if<protocol::ParamListRequest>(&m)) {
    ReplyControl(packet.peer, protocol::ParamList{ListParams(r->prefix)});
    return;
  }
  if (const auto* g = std::get_if<protocol::ParamGet>(&m)) {
    ReplyControl(packet.peer, GetParam(g->path));
    return;
  }
  if (const auto* s = std::get_if<protocol::ParamSet>(&m)) {
    ReplyControl(packet.peer, SetParam(s->path, s->value));
    return;
  }
  if (std::holds_alternative<protocol::StatusRequest>(m)) {
    // The Clone pattern's snapshot: a late joiner (or a node that saw a gap) gets the full state
    // over the reliable control socket, numbered like the broadcast it follows.
    ReplyControl(packet.peer, Snapshot(now));
    return;
  }

  NodeRecord* node = FindByPeer(packet.peer);
  if (!node) {
    ++counters_.unknown_sender;
    // A node the server does not know (e.g. after a server restart) is told to join again.
    ReplyControl(packet.peer, protocol::Refuse{"unknown node: join first", protocol::kProtocolVersion});
    return;
  }
  node->info.last_seen_ns = now;
  if (const auto* hb = std::get_if<protocol::Heartbeat>(&m)) {
    node->info.clock_offset_ns = hb->clock_offset_ns;
    node->info.rtt_ns = hb->rtt_ns;
    if (node->info.lost) log_->info("node '{}' is back", node->info.name);
    MarkOwnerAlive(*node);
  } else if (const auto* leave = std::get_if<protocol::Leave>(&m)) {
    log_->info("node '{}' left: {}", node->info.name, leave->reason);
    for (auto it = entities_.begin(); it != entities_.end();) {
      if (it->second.state.owner_node == node->info.node_id) {
        removed_.push_back(it->first);
        changed_.erase(it->first);
        it = entities_.erase(it);
      } else {
        ++it;
      }
    }
    nodes_.erase(node->info.node_id);
  } else {
    ++counters_.unexpected_message;
  }
}

void SyncServer::HandleJoin(const transport::Packet& packet, const protocol::Join& join, uint16_t peer_version,
                            int64_t now) {
  const std::string& peer = packet.peer;
  if (peer_version != protocol::kProtocolVersion || join.protocol_version != protocol::kProtocolVersion) {
    ++counters_.version_refused;
    const uint16_t v = peer_version != protocol::kProtocolVersion ? peer_version : join.protocol_version;
    const std::string reason = "protocol version mismatch: node '" + join.name + "' speaks " + std::to_string(v) +
                               ", server speaks " + std::to_string(protocol::kProtocolVersion);
    log_->error("refused join from {} on {}: {}", join.name, join.host, reason);
    ReplyControl(peer, protocol::Refuse{reason, protocol::kProtocolVersion});
    return;
  }
  if (join.name.empty()) {
    ReplyControl(peer, protocol::Refuse{"node name must not be empty", protocol::kProtocolVersion});
    return;
  }
  // A node that joins again under its name (restart, reconnect) keeps its id and so its entities.
  NodeRecord* record = nullptr;
  for (auto& [id, n] : nodes_)
    if (n.info.name == join.name) record = &n;
  if (record) {
    log_->info("node '{}' rejoined from {} (pid {}) as id {}", join.name, join.host, join.pid, record->info.node_id);
  } else {
    const uint32_t id = next_node_id_++;
    record = &nodes_[id];
    record->info.node_id = id;
    log_->info("node '{}' ({}) joined from {} (pid {}) as id {}", join.name, protocol::RoleName(join.role), join.host,
               join.pid, id);
  }
  AdoptSession(join);
  record->info.name = join.name;
  record->info.role = join.role;
  record->info.host = join.host;
  record->info.pid = join.pid;
  // Data streams are reached at the address this join came from, unless the node names one.
  record->info.endpoints = join.endpoints;
  for (auto& e : record->info.endpoints)
    if (e.address.empty()) e.address = packet.peer_address.empty() ? "127.0.0.1" : packet.peer_address;
  for (const auto& e : record->info.endpoints)
    log_->info("node '{}' publishes {} stream '{}' at {}", join.name, protocol::StreamKindName(e.kind), e.stream_id,
               e.Endpoint());
  record->info.last_seen_ns = now;
  MarkOwnerAlive(*record);
  record->peer = peer;
  record->joined_ns = now;
  protocol::Welcome w;
  w.node_id = record->info.node_id;
  w.session_name = session_.name;
  w.heartbeat_interval_ns = static_cast<int64_t>(session_.server.heartbeat_interval_s * 1e9);
  w.lost_timeout_ns = static_cast<int64_t>(session_.server.lost_timeout_s * 1e9);
  w.server_time_ns = reference_.NowNs();
  w.time_port = session_.server.time_port;
  w.world_port = session_.server.world_port;
  w.state_port = session_.server.state_port;
  ReplyControl(peer, w);
}

void SyncServer::HandleSessionControl(const protocol::SessionControl& c, int64_t now) {
  using Command = protocol::SessionControl::Command;
  switch (c.command) {
    case Command::kStart:
      // The seed's simultaneous start: every node begins sim time T0 at the same reference instant.
      phase_ = SessionPhase::kStarting;
      anchor_ref_ns_ = std::max(c.at_server_time_ns, now);
      start_at_ns_ = anchor_ref_ns_;
      sim_at_anchor_ns_ = c.sim_t0_ns;
      log_->info("session starts at sim time {:.3f} s in {:.3f} s", static_cast<double>(c.sim_t0_ns) / 1e9,
                 static_cast<double>(anchor_ref_ns_ - now) / 1e9);
      break;
    case Command::kPause:
      if (phase_ == SessionPhase::kRunning) {
        sim_at_anchor_ns_ = SimTimeAt(now);
        anchor_ref_ns_ = now;
        phase_ = SessionPhase::kPaused;
        log_->info("session paused at sim time {:.3f} s", static_cast<double>(sim_at_anchor_ns_) / 1e9);
      }
      break;
    case Command::kResume:
      if (phase_ == SessionPhase::kPaused) {
        anchor_ref_ns_ = now;
        phase_ = SessionPhase::kRunning;
        log_->info("session resumed");
      }
      break;
    case Command::kStop:
      sim_at_anchor_ns_ = SimTimeAt(now);
      anchor_ref_ns_ = now;
      phase_ = SessionPhase::kStopped;
      log_->info("session stopped at sim time {:.3f} s", static_cast<double>(sim_at_anchor_ns_) / 1e9);
      break;
  }
}

std::vector<protocol::Parameter> SyncServer::ListParams(const std::string& prefix) const {
  std::vector<protocol::Parameter> out;
  for (const char* path : {"session.name", "server.broadcast_hz", "server.lost_timeout_s", "server.status_interval_s",
                           "server.stale_grace_s", "server.nodes", "server.entities", "server.refused.undecodable",
                           "server.refused.version", "server.refused.unknown_sender", "server.refused.foreign_entity",
                           "server.refused.stale_update"}) {
    if (std::string(path).rfind(prefix, 0) == 0) out.push_back(GetParam(path).param);
  }
  return out;
}

protocol::ParamReply SyncServer::GetParam(const std::string& path) const {
  auto number = [](double v) {
    std::ostringstream os;
    os << v;
    return os.str();
  };
  if (path == "session.name") return {true, {path, "\"" + session_.name + "\"", false, "Session name"}, {}};
  if (path == "server.broadcast_hz")
    return {true, {path, number(session_.server.broadcast_hz), true, "World-state broadcast rate, Hz"}, {}};
  if (path == "server.lost_timeout_s")
    return {true, {path, number(session_.server.lost_timeout_s), true, "Silence before a node is lost, s"}, {}};
  if (path == "server.status_interval_s")
    return {true, {path, number(session_.server.status_interval_s), true, "Status table period, s (0: off)"}, {}};
  if (path == "server.nodes") return {true, {path, std::to_string(nodes_.size()), false, "Joined nodes"}, {}};
  if (path == "server.entities") return {true, {path, std::to_string(entities_.size()), false, "Merged entities"}, {}};
  auto counter = [&](uint64_t v, const char* what) {
    return protocol::ParamReply{true, {path, std::to_string(v), false, what}, {}};
  };
  if (path == "server.refused.undecodable") return counter(counters_.decode_errors, "Undecodable messages dropped");
  if (path == "server.refused.version") return counter(counters_.version_refused, "Messages of another protocol version");
  if (path == "server.refused.unknown_sender") return counter(counters_.unknown_sender, "Messages from unjoined peers");
  if (path == "server.refused.foreign_entity")
    return counter(counters_.foreign_entity, "Entity updates from a node that does not own the entity");
  if (path == "server.refused.stale_update") return counter(counters_.stale_update, "Entity updates older than the merged state");
  if (path == "server.stale_grace_s")
    return {true, {path, number(session_.server.stale_grace_s), true, "Dead-reckoning time of a lost node's entities, s"}, {}};
  return {false, {path, "", false, ""}, "no parameter named '" + path + "'"};
}

protocol::ParamReply SyncServer::SetParam(const std::string& path, const std::string& value) {
  auto current = GetParam(path);
  if (!current.ok) return current;
  if (!current.param.writable) return {false, current.param, "parameter '" + path + "' is read-only"};
  double v = 0;
  try {
    size_t used = 0;
    v = std::stod(value, &used);
    if (used != value.size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    return {false, current.param, "parameter '" + path + "' expects a number, got '" + value + "'"};
  }
  if (path == "server.broadcast_hz") {
    if (!(v >= 1 && v <= 1000)) return {false, current.param, "server.broadcast_hz must be in [1, 1000]"};
    session_.server.broadcast_hz = v;
  } else if (path == "server.lost_timeout_s") {
    if (!(v > session_.server.heartbeat_interval_s)) return {false, current.param, "must exceed the heartbeat interval"};
    session_.server.lost_timeout_s = v;
  } else if (path == "server.stale_grace_s") {
    if (!(v >= 0)) return {false, current.param, "must be >= 0"};
    session_.server.stale_grace_s = v;
  } else if (path == "server.status_interval_s") {
    if (!(v >= 0)) return {false, current.param, "must be >= 0"};
    session_.server.status_interval_s = v;
  }
  log_->info("parameter {} set to {}", path, value);
  return GetParam(path);
}

void SyncServer::HandleState(const transport::Packet& packet, int64_t now) {
  const auto d = Decode(packet.data);
  const auto* ns = Expect<protocol::NodeState>(d, "state");
  if (!ns) return;
  auto it = nodes_.find(ns->node_id);
  if (it == nodes_.end()) {
    ++counters_.unknown_sender;
    return;
  }
  NodeRecord& node = it->second;
  node.info.last_seen_ns = now;
  if (node.info.lost) MarkOwnerAlive(node);
  if (node.last_state_ns > 0) {
    // Exponential smoothing over about 20 states.
    const double dt = static_cast<double>(now - node.last_state_ns) / 1e9;
    node.mean_interval_s = node.mean_interval_s > 0 ? 0.95 * node.mean_interval_s + 0.05 * dt : dt;
    node.info.update_rate_hz = node.mean_interval_s > 0 ? static_cast<float>(1.0 / node.mean_interval_s) : 0.f;
  }
  node.last_state_ns = now;
  ++node.states_received;
  if (node.last_state_sequence != 0 && ns->sequence > node.last_state_sequence + 1)
    node.states_missed += ns->sequence - node.last_state_sequence - 1;
  node.last_state_sequence = std::max(node.last_state_sequence, ns->sequence);
  const uint64_t expected = node.states_received + node.states_missed;
  node.info.loss_fraction = expected ? static_cast<float>(node.states_missed) / static_cast<float>(expected) : 0.f;
  for (const auto& e : ns->entities) {
    auto [slot, inserted] = entities_.try_emplace(e.id, MergedEntity{e});
    MergedEntity& merged = slot->second;
    if (!inserted) {
      // Ownership: an entity belongs to the node that created it.
      if (merged.state.owner_node != node.info.node_id) {
        ++counters_.foreign_entity;
        continue;
      }
      // Order by the entity's own stamp: older or duplicate updates never overwrite newer ones.
      if (e.kinematics.stamp_ns <= merged.state.kinematics.stamp_ns) {
        ++counters_.stale_update;
        continue;
      }
      merged.state = e;
    }
    merged.state.owner_node = node.info.node_id;
    merged.state.stale = false;
    merged.stale_since_ns = -1;
    merged.frozen = false;
    changed_.insert(e.id);
    if (first_change_ns_ < 0) first_change_ns_ = now;
  }
}

void SyncServer::MarkOwnerAlive(NodeRecord& node) {
  node.info.lost = false;
  for (auto& [id, e] : entities_) {
    if (e.state.owner_node != node.info.node_id || e.stale_since_ns < 0) continue;
    e.stale_since_ns = -1;
    e.state.stale = false;
    changed_.insert(id);
  }
}

void SyncServer::AdoptSession(const protocol::Join& join) {
  // A restarted server resumes the session the nodes are in, instead of starting a new sim time.
  // "Fresh" means no node has joined yet, whatever the autostart did meanwhile.
  const bool fresh = !any_joined_;
  any_joined_ = true;
  const bool theirs_live = join.session_phase == SessionPhase::kRunning || join.session_phase == SessionPhase::kPaused;
  if (!fresh) return;
  if (!theirs_live) {
    if (autostart_s_ >= 0 && phase_ == SessionPhase::kWaiting) {
      const int64_t now = reference_.NowNs();
      HandleSessionControl(protocol::SessionControl{protocol::SessionControl::Command::kStart,
                                                   now + static_cast<int64_t>(autostart_s_ * 1e9), 0},
                           now);
    }
    return;
  }
  phase_ = join.session_phase;
  sim_at_anchor_ns_ = join.sim_anchor_ns;
  anchor_ref_ns_ = join.ref_anchor_ns;
  start_at_ns_ = join.ref_anchor_ns;
  log_->info("resuming session '{}' from node '{}': {} at sim time {:.3f} s", session_.name, join.name,
             protocol::PhaseName(phase_), static_cast<double>(SimTimeAt(reference_.NowNs())) / 1e9);
}

void SyncServer::CheckLost(int64_t now) {
  const int64_t timeout = static_cast<int64_t>(session_.server.lost_timeout_s * 1e9);
  for (auto& [id, n] : nodes_) {
    if (n.info.lost || now - n.info.last_seen_ns <= timeout) continue;
    n.info.lost = true;
    size_t count = 0;
    for (auto& [eid, e] : entities_) {
      if (e.state.owner_node != id) continue;
      e.stale_since_ns = now;
      e.state.stale = true;
      changed_.insert(eid);
      ++count;
    }
    log_->warn("node '{}' lost: silent for {:.2f} s; {} entities stale", n.info.name,
               static_cast<double>(now - n.info.last_seen_ns) / 1e9, count);
  }
  // Stale entities are dead-reckoned by every receiver for the grace period, then frozen or removed.
  const int64_t grace = static_cast<int64_t>(session_.server.stale_grace_s * 1e9);
  for (auto it = entities_.begin(); it != entities_.end();) {
    MergedEntity& e = it->second;
    if (e.stale_since_ns < 0 || e.frozen || now - e.stale_since_ns < grace) {
      ++it;
      continue;
    }
    if (session_.server.stale_remove) {
      removed_.push_back(it->first);
      changed_.erase(it->first);
      it = entities_.erase(it);
      continue;
    }
    const int64_t sim_now = SimTimeAt(now);
    const auto model = dr::ModelForKind(e.state.kind);
    KinematicState held = dr::ExtrapolateState(model, e.state.kinematics, std::max(sim_now, e.state.kinematics.stamp_ns));
    held.velocity_mps.setZero();
    held.acceleration_mps2.setZero();
    held.angular_velocity_radps.setZero();
    e.state.kinematics = held;
    e.frozen = true;
    changed_.insert(it->first);
    ++it;
  }
}

protocol::WorldState SyncServer::Snapshot(int64_t now) const {
  protocol::WorldState w;
  w.sequence = world_sequence_;
  w.server_time_ns = now;
  w.sim_time_ns = SimTimeAt(now);
  w.phase = phase_;
  w.keyframe = true;
  w.entities.reserve(entities_.size());
  for (const auto& [id, e] : entities_) w.entities.push_back(e.state);
  for (const auto& [id, n] : nodes_) w.nodes.push_back(n.info);
  return w;
}

void SyncServer::Broadcast(int64_t now, bool periodic) {
  ++world_sequence_;
  protocol::WorldState w;
  if (periodic && now >= next_keyframe_ns_) {
    // Keyframe: the full set; receivers drop what it does not list.
    w = Snapshot(now);
    next_keyframe_ns_ = now + static_cast<int64_t>(session_.server.keyframe_interval_s * 1e9);
  } else {
    w.sequence = world_sequence_;
    w.server_time_ns = now;
    w.sim_time_ns = SimTimeAt(now);
    w.phase = phase_;
    w.keyframe = false;
    w.entities.reserve(changed_.size());
    for (uint64_t id : changed_) w.entities.push_back(entities_.at(id).state);
    w.removed_entities = removed_;
    // The node table rides on keyframes only (status changes slowly); deltas stay small.
  }
  changed_.clear();
  removed_.clear();
  first_change_ns_ = -1;
  world_.Send(Encode(w));
  ++counters_.world_states_sent;
}

void SyncServer::PrintStatus(int64_t now) {
  std::ostringstream os;
  os << "session '" << session_.name << "' " << protocol::PhaseName(phase_) << ", sim "
     << static_cast<double>(SimTimeAt(now)) / 1e9 << " s, " << nodes_.size() << " node(s), " << entities_.size()
     << " entities, bad input " << counters_.decode_errors + counters_.version_refused + counters_.foreign_entity;
  log_->info("{}", os.str());
  if (nodes_.empty()) return;
  log_->info("  {:>3} {:<14} {:<9} {:<16} {:>10} {:>8} {:>8} {:>6} {:>7} {}", "id", "node", "role", "host", "offset us",
             "rtt us", "upd/s", "loss", "seen s", "state");
  for (const auto& [id, n] : nodes_) {
    log_->info("  {:>3} {:<14} {:<9} {:<16} {:>10} {:>8.1f} {:>8.1f} {:>5.1f}% {:>7.2f} {}", id, n.info.name,
               protocol::RoleName(n.info.role), n.info.host, FormatUs(n.info.clock_offset_ns),
               static_cast<double>(n.info.rtt_ns) / 1e3, n.info.update_rate_hz, 100.0 * n.info.loss_fraction,
               static_cast<double>(now - n.info.last_seen_ns) / 1e9, n.info.lost ? "LOST" : "ok");
  }
}

}  // namespace platoon::server
