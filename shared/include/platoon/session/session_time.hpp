#pragma once
/// The session's sim time as a function of the reference clock (docs/ARCHITECTURE.md eq. 11). The one
/// place where sim time is computed: the server's world core, every session client (nodes, viewer,
/// tools) and the replay all call SimTimeAt.

#include "platoon/protocol/messages.hpp"

#include <cstdint>

namespace platoon::session {

/// Where the session's sim time stands: `sim_ns` at reference time `ref_ns`, in `phase`.
struct SessionAnchor {
  protocol::SessionPhase phase = protocol::SessionPhase::kWaiting;
  int64_t sim_ns = 0;  ///< Sim time at the anchor, in ns.
  int64_t ref_ns = 0;  ///< Reference (server) time of the anchor, in ns.
  double rate = 1.0;   ///< Sim ns per reference ns while running: 1 live, a replay's speed otherwise.
  bool operator==(const SessionAnchor&) const = default;
};

/// Eq. 11: sim time at reference time `ref_ns`. Running: sim advances `rate` ns (1 live) per reference ns
/// from the anchor. Starting: counts up to the anchor (negative offsets before the start instant). Waiting,
/// paused, stopped: sim time stands at the anchor.
int64_t SimTimeAt(const SessionAnchor& anchor, int64_t ref_ns);

/// True while sim time advances.
inline bool Advancing(const SessionAnchor& anchor) { return anchor.phase == protocol::SessionPhase::kRunning; }

}  // namespace platoon::session
