#include "platoon/log/session_events.hpp"

#include "platoon/log/session_log.hpp"

#include <fmt/format.h>

#include <cmath>

namespace platoon::session_log {
namespace {

using protocol::SessionPhase;

// The session event of a phase change `from` -> `to` (to != from).
std::string_view PhaseEvent(SessionPhase from, SessionPhase to) {
  switch (to) {
    case SessionPhase::kStarting: return "start";
    case SessionPhase::kRunning: return from == SessionPhase::kPaused ? "resume" : "running";
    case SessionPhase::kPaused: return "pause";
    case SessionPhase::kStopped: return "stop";
    case SessionPhase::kWaiting: return "waiting";
  }
  return "unknown";
}

Event Stamped(std::string type, std::string event, const protocol::WorldState& w) {
  Event e;
  e.type = std::move(type);
  e.event = std::move(event);
  e.sim_time_ns = w.sim_time_ns;
  e.server_time_ns = w.server_time_ns;
  e.world_seq = w.sequence;
  return e;
}

Event NodeEvent(std::string event, const protocol::NodeInfo& n, const protocol::WorldState& w) {
  Event e = Stamped("node", std::move(event), w);
  e.Add("node_id", static_cast<int64_t>(n.node_id))
      .Add("name", n.name)
      .Add("role", protocol::RoleName(n.role))
      .Add("host", n.host)
      .Add("pid", static_cast<int64_t>(n.pid));
  return e;
}

const char* LoggedEventName(protocol::LoggedEvent::Kind kind) {
  switch (kind) {
    case protocol::LoggedEvent::Kind::kMarker: return "mark";
    case protocol::LoggedEvent::Kind::kParam: return "set";
    case protocol::LoggedEvent::Kind::kFired: return "fired";
    case protocol::LoggedEvent::Kind::kAction: return "action";
    case protocol::LoggedEvent::Kind::kMessage: return "message";
  }
  return "";
}

}  // namespace

void EventDeriver::LoggedEvents(const protocol::WorldState& w, std::vector<Event>& out) {
  for (const auto& l : w.events) {
    // A server that restarted numbers from 1 again: far below what was seen means a new log.
    if (l.sequence + kMaxLoggedBack < logged_seq_) logged_seq_ = 0;
    // World states repeat an entry for a second: each sequence is written once.
    if (l.sequence <= logged_seq_) continue;
    logged_seq_ = l.sequence;
    Event e;
    e.type = std::string(protocol::EventKindName(l.kind));
    e.event = LoggedEventName(l.kind);
    e.sim_time_ns = l.sim_time_ns;  // the event's own sim time, not the state's that carried it
    e.server_time_ns = w.server_time_ns;
    e.world_seq = w.sequence;
    e.Add("sequence", static_cast<int64_t>(l.sequence)).Add("source", l.source).Add("text", l.text);
    if (!l.detail.empty()) e.Add("detail", l.detail);  // JSON object text, kept as a string (flat events)
    if (l.target_node != 0) e.Add("target_node", static_cast<int64_t>(l.target_node));
    if (l.entity_id != 0) e.Add("entity_id", static_cast<int64_t>(l.entity_id));
    out.push_back(std::move(e));
  }
}

std::string_view EventSchema() {
  static constexpr std::string_view kSchema = R"json({
  "title": "platoon.Event",
  "description": "A session, node, parameter or marker event of a platoon session log (docs/RECORDING.md)",
  "type": "object",
  "properties": {
    "type": {"type": "string", "description": "session, node, marker, param, fired, action or message"},
    "event": {"type": "string", "description": "what happened, e.g. pause, joined, lost"},
    "sim_time_ns": {"type": "integer", "description": "session sim time, ns"},
    "server_time_ns": {"type": "integer", "description": "server reference time, ns"},
    "world_seq": {"type": "integer", "description": "sequence number of the world state that showed it; 0: none"}
  },
  "required": ["type", "event", "sim_time_ns", "server_time_ns", "world_seq"],
  "additionalProperties": true
})json";
  return kSchema;
}

Event& Event::Add(std::string key, std::string_view text) {
  fields.emplace_back(std::move(key), JsonQuote(text));
  return *this;
}

Event& Event::Add(std::string key, int64_t value) {
  fields.emplace_back(std::move(key), std::to_string(value));
  return *this;
}

Event& Event::Add(std::string key, double value) {
  // JSON has no NaN or infinity.
  fields.emplace_back(std::move(key), std::isfinite(value) ? fmt::format("{}", value) : std::string("null"));
  return *this;
}

Event& Event::Add(std::string key, bool value) {
  fields.emplace_back(std::move(key), value ? "true" : "false");
  return *this;
}

std::string Event::Json() const {
  std::string out = fmt::format("{{\"type\":{},\"event\":{},\"sim_time_ns\":{},\"server_time_ns\":{},\"world_seq\":{}",
                                JsonQuote(type), JsonQuote(event), sim_time_ns, server_time_ns, world_seq);
  for (const auto& [key, value] : fields) out += "," + JsonQuote(key) + ":" + value;
  out += "}";
  return out;
}

std::vector<Event> EventDeriver::OnWorld(const protocol::WorldState& w) {
  std::vector<Event> out;
  // Session phase: the phase when recording began, then every change.
  if (!phase_seen_) {
    Event e = Stamped("session", "recording", w);
    e.Add("phase", protocol::PhaseName(w.phase));
    out.push_back(std::move(e));
    phase_seen_ = true;
  } else if (w.phase != phase_) {
    Event e = Stamped("session", std::string(PhaseEvent(phase_, w.phase)), w);
    e.Add("phase", protocol::PhaseName(w.phase)).Add("previous_phase", protocol::PhaseName(phase_));
    out.push_back(std::move(e));
  }
  phase_ = w.phase;
  LoggedEvents(w, out);

  // Node table: only keyframes (and states that carry one) hold it; a delta says nothing about nodes.
  if (!w.keyframe && w.nodes.empty()) return out;
  std::map<uint32_t, protocol::NodeInfo> now;
  for (const auto& n : w.nodes) now.emplace(n.node_id, n);
  if (!nodes_seen_) {
    for (const auto& [id, n] : now) out.push_back(NodeEvent("present", n, w));
    if (!now.empty()) {
      nodes_seen_ = true;
      nodes_ = std::move(now);
    }
    return out;
  }
  for (const auto& [id, n] : now) {
    const auto before = nodes_.find(id);
    if (before == nodes_.end()) {
      out.push_back(NodeEvent("joined", n, w));
      if (n.lost) out.push_back(NodeEvent("lost", n, w));
      continue;
    }
    const protocol::NodeInfo& b = before->second;
    if (n.pid != b.pid && n.pid != 0 && b.pid != 0) out.push_back(NodeEvent("restarted", n, w));
    if (n.lost && !b.lost) out.push_back(NodeEvent("lost", n, w));
    if (!n.lost && b.lost) out.push_back(NodeEvent("back", n, w));
  }
  for (const auto& [id, b] : nodes_)
    if (!now.count(id)) out.push_back(NodeEvent("left", b, w));
  nodes_ = std::move(now);
  return out;
}

}  // namespace platoon::session_log
