#include "platoon/vehicle/driver_models.hpp"

#include <algorithm>
#include <cmath>

namespace platoon::vehicle {

double LookaheadM(const PurePursuitDef& def, double speed_mps) {
  return std::clamp(def.lookahead_min_m + def.lookahead_gain_s * std::max(0.0, speed_mps), def.lookahead_min_m,
                    def.lookahead_max_m);
}

double PurePursuitSteerRad(double goal_x_m, double goal_y_m, double wheelbase_m) {
  // The circle through the rear axle, tangent to the heading, and through the goal has curvature
  // kappa = 2 y / l_d^2 (= 2 sin(alpha) / l_d); the bicycle model steers delta = atan(L kappa).
  const double ld2 = goal_x_m * goal_x_m + goal_y_m * goal_y_m;
  if (ld2 < 1e-9) return 0.0;
  return std::atan(wheelbase_m * 2.0 * goal_y_m / ld2);
}

double IdmAccel(const IdmDef& d, double v, double gap, double dv) {
  const double free = 1.0 - std::pow(std::max(0.0, v) / d.desired_speed_mps, d.exponent);
  if (!std::isfinite(gap)) return d.max_accel_mps2 * free;
  // Desired gap s* = s0 + v T + v dv / (2 sqrt(a b)), never below s0.
  const double s_star =
      d.min_gap_m + std::max(0.0, v * d.time_headway_s + v * dv / (2.0 * std::sqrt(d.max_accel_mps2 * d.comfort_decel_mps2)));
  const double g = std::max(gap, 0.01);
  return d.max_accel_mps2 * (free - (s_star / g) * (s_star / g));
}

bool MobilAllows(const MobilDef& d, const LaneChangeAccels& a, bool toward_right) {
  if (a.new_follower_after < -d.safe_decel_mps2) return false;  // safety criterion
  const double incentive = a.self_after - a.self_now +
                           d.politeness * (a.new_follower_after - a.new_follower_now + a.old_follower_after - a.old_follower_now);
  const double bias = toward_right ? d.keep_right_bias_mps2 : -d.keep_right_bias_mps2;
  return incentive > d.threshold_mps2 - bias;
}

std::string ValidateIdmDef(const IdmDef& d) {
  if (!(d.desired_speed_mps > 0)) return "desired_speed_mps must be > 0";
  if (!(d.time_headway_s >= 0)) return "time_headway_s must be >= 0";
  if (!(d.min_gap_m >= 0)) return "min_gap_m must be >= 0";
  if (!(d.max_accel_mps2 > 0)) return "max_accel_mps2 must be > 0";
  if (!(d.comfort_decel_mps2 > 0)) return "comfort_decel_mps2 must be > 0";
  if (!(d.exponent > 0)) return "exponent must be > 0";
  return {};
}

}  // namespace platoon::vehicle
