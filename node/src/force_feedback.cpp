#include "platoon/node/force_feedback.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace platoon::node {

double ForceFeedbackTorque(const ForceFeedbackDef& def, const ForceFeedbackFeed& feed) {
  // The tyres' torque plus a spring and a damper that both oppose the wheel, then the limit.
  const double torque = def.gain_per_knm * feed.aligning_nm / 1000.0 - def.spring * feed.steer -
                        def.damping * feed.steer_rate_ps;
  if (!std::isfinite(torque)) return 0.0;
  return std::clamp(torque, -def.max_torque, def.max_torque);
}

ForceFeedbackOutput ForceFeedbackUpdate(const ForceFeedbackDef& def, const ForceFeedbackFeed& feed, int64_t feed_ns,
                                        int64_t world_ns, int64_t now_ns) {
  if (feed_ns < 0 || now_ns - feed_ns > kForceFeedbackStaleNs) return {0.0, "no dynamics"};
  if (world_ns < 0 || now_ns - world_ns > kForceFeedbackLossNs) return {0.0, "no world"};
  return {ForceFeedbackTorque(def, feed), ""};
}

std::string ValidateForceFeedbackDef(const ForceFeedbackDef& def) {
  char buf[128];
  const auto bad = [&](const char* key, const char* rule, double v) {
    std::snprintf(buf, sizeof buf, "%s must be %s, got %g", key, rule, v);
    return std::string(buf);
  };
  if (!(def.gain_per_knm >= 0 && def.gain_per_knm <= 100)) return bad("ffb_gain", "in [0, 100]", def.gain_per_knm);
  if (!(def.spring >= 0 && def.spring <= 1)) return bad("ffb_spring", "in [0, 1]", def.spring);
  if (!(def.damping >= 0 && def.damping <= 1)) return bad("ffb_damping", "in [0, 1]", def.damping);
  if (!(def.max_torque > 0 && def.max_torque <= 1)) return bad("ffb_max_torque", "in (0, 1]", def.max_torque);
  return {};
}

}  // namespace platoon::node
