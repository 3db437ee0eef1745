#include "platoon/session/session_time.hpp"

#include <algorithm>

namespace platoon::session {

int64_t SimTimeAt(const SessionAnchor& a, int64_t ref_ns) {
  switch (a.phase) {
    case protocol::SessionPhase::kRunning: return a.sim_ns + (ref_ns - a.ref_ns);
    case protocol::SessionPhase::kStarting: return a.sim_ns + std::min<int64_t>(0, ref_ns - a.ref_ns);
    default: return a.sim_ns;
  }
}

}  // namespace platoon::session
