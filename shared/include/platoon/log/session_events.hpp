#pragma once
/// The events of a session log (/platoon/events): one flat JSON object per event, and the pure rules
/// that derive session and node events from the world-state stream (phase changes; nodes appearing in,
/// leaving, lost from and back in the server's node table). Recorders write them; export, replay and
/// validate read them. Field layout and meanings: docs/RECORDING.md, "Channels".
///
/// Every event object has the same five leading fields, then fields of its type:
///   "type"            "session", "node", or the kind of a logged event (protocol::EventKindName):
///                     "marker", "param", "fired", "action", "message"
///   "event"           what happened (session: recording, start, running, pause, resume, stop, waiting;
///                     node: present, joined, left, lost, back, restarted)
///   "sim_time_ns"     session sim time of the world state that showed it, in ns
///   "server_time_ns"  server reference time of that world state, in ns
///   "world_seq"       its sequence number (0 for events not seen in a world state)
/// Values are strings, integers, numbers or booleans only, never nested, so a flat reader reads them.

#include "platoon/protocol/messages.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace platoon::session_log {

/// Schema name of /platoon/events (JSON; its JSON schema is EventSchema()).
inline constexpr std::string_view kEventSchemaName = "platoon.Event";

/// The JSON schema of an event object (the common fields; type-specific fields are additional).
std::string_view EventSchema();

/// One event. Build one, add its type's fields, write Json().
struct Event {
  std::string type;             ///< "session", "node", "param", "marker".
  std::string event;            ///< What happened, e.g. "pause", "lost".
  int64_t sim_time_ns = 0;      ///< Sim time it was seen at, in ns.
  int64_t server_time_ns = 0;   ///< Server reference time it was seen at, in ns.
  uint64_t world_seq = 0;       ///< Sequence number of the world state that showed it; 0: none.
  /// Further fields in order: key and a JSON literal value (use the Add helpers).
  std::vector<std::pair<std::string, std::string>> fields;

  Event& Add(std::string key, std::string_view text);  ///< A string field.
  Event& Add(std::string key, const char* text) { return Add(std::move(key), std::string_view(text)); }
  Event& Add(std::string key, int64_t value);          ///< An integer field.
  Event& Add(std::string key, double value);           ///< A number field.
  Event& Add(std::string key, bool value);             ///< A boolean field.
  /// The flat JSON object.
  std::string Json() const;
};

/// Derives events from the world states a client receives, in order. Pure: handed states, returns events.
///   session: "recording" for the first state seen (field "phase": the phase then); after that one event
///            per phase change: "start" (-> starting), "running" (-> running, not from paused), "pause",
///            "resume" (paused -> running), "stop", "waiting" (a restarted server that lost the session).
///            Fields "phase" and "previous_phase".
///   node:    from the node table (keyframes carry it, every keyframe_interval_s, default 1 s): "present"
///            for each node of the first table seen, then "joined" (a new node id), "left" (gone from the
///            table), "lost" and "back" (its lost flag set and cleared), "restarted" (same id, new pid).
///            Fields "node_id", "name", "role", "host", "pid".
///   logged:  the session's event log entries the state carries (markers, parameter changes, scenario
///            firings, actions, seat messages), each sequence once: type = its kind, event "mark", "set",
///            "fired", "action" or "message", sim_time_ns its own sim time; fields "sequence", "source",
///            "text", and when set "detail" (JSON object text), "target_node", "entity_id".
class EventDeriver {
 public:
  /// The events `state` shows, in order: session events first, then node events by node id.
  std::vector<Event> OnWorld(const protocol::WorldState& state);

 private:
  // Logged entries this far below the newest written mean the server restarted and numbers afresh.
  static constexpr uint64_t kMaxLoggedBack = 1000;
  void LoggedEvents(const protocol::WorldState& state, std::vector<Event>& out);
  uint64_t logged_seq_ = 0;
  bool phase_seen_ = false;
  protocol::SessionPhase phase_ = protocol::SessionPhase::kWaiting;
  bool nodes_seen_ = false;
  std::map<uint32_t, protocol::NodeInfo> nodes_;  // node id -> its row in the last table
};

}  // namespace platoon::session_log
