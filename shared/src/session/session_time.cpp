#include "platoon/session/session_time.hpp"

#include <algorithm>
#include <cmath>

namespace platoon::session {

int64_t SimTimeAt(const SessionAnchor& a, int64_t ref_ns) {
  switch (a.phase) {
    case protocol::SessionPhase::kRunning: {
      const int64_t elapsed = ref_ns - a.ref_ns;
      if (a.rate == 1.0) return a.sim_ns + elapsed;  // live sessions: exact integer arithmetic
      return a.sim_ns + static_cast<int64_t>(std::llround(static_cast<double>(elapsed) * a.rate));
    }
    case protocol::SessionPhase::kStarting: return a.sim_ns + std::min<int64_t>(0, ref_ns - a.ref_ns);
    default: return a.sim_ns;
  }
}

}  // namespace platoon::session
