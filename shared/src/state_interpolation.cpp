#include "platoon/state_interpolation.hpp"

#include <algorithm>

namespace platoon {

KinematicState InterpolateKinematics(const KinematicState& a, const KinematicState& b, int64_t t_ns) {
  KinematicState k = a;
  k.stamp_ns = t_ns;
  const double h = NsToS(b.stamp_ns - a.stamp_ns);
  if (h <= 0.0) return k;
  const double s = std::clamp(NsToS(t_ns - a.stamp_ns) / h, 0.0, 1.0);
  // Cubic Hermite basis: exact for motion of constant acceleration, smooth through both states.
  const double s2 = s * s, s3 = s2 * s;
  const double h00 = 2 * s3 - 3 * s2 + 1, h10 = s3 - 2 * s2 + s, h01 = -2 * s3 + 3 * s2, h11 = s3 - s2;
  k.pose.position_m = h00 * a.pose.position_m + h10 * h * a.velocity_mps + h01 * b.pose.position_m +
                      h11 * h * b.velocity_mps;
  k.pose.orientation = a.pose.orientation.slerp(s, b.pose.orientation).normalized();
  k.velocity_mps = (1 - s) * a.velocity_mps + s * b.velocity_mps;
  k.acceleration_mps2 = (1 - s) * a.acceleration_mps2 + s * b.acceleration_mps2;
  k.angular_velocity_radps = (1 - s) * a.angular_velocity_radps + s * b.angular_velocity_radps;
  return k;
}

KinematicState InterpolateKinematics(const KinematicState& a, const KinematicState& b, int64_t t_ns, dr::Model model) {
  const double h = NsToS(b.stamp_ns - a.stamp_ns);
  if (h <= 0.0) return a;
  const int64_t t = std::clamp(t_ns, a.stamp_ns, b.stamp_ns);
  const double s = NsToS(t - a.stamp_ns) / h;
  const double w = s * s * (3 - 2 * s);
  KinematicState k = dr::ExtrapolateState(model, a, t);
  const KinematicState at_b = dr::ExtrapolateState(model, a, b.stamp_ns);
  k.pose.position_m += w * (b.pose.position_m - at_b.pose.position_m);
  k.velocity_mps += w * (b.velocity_mps - at_b.velocity_mps);
  // The rotation that b's orientation corrected, phased in.
  const Quat correction = (b.pose.orientation * at_b.pose.orientation.conjugate()).normalized();
  k.pose.orientation = (Quat::Identity().slerp(w, correction) * k.pose.orientation).normalized();
  // Rates as both states say them, blended linearly (as the cubic does).
  k.acceleration_mps2 = (1 - s) * a.acceleration_mps2 + s * b.acceleration_mps2;
  k.angular_velocity_radps = (1 - s) * a.angular_velocity_radps + s * b.angular_velocity_radps;
  k.stamp_ns = t_ns;
  return k;
}

bool IsJump(const KinematicState& a, const KinematicState& b) {
  const double dt = NsToS(b.stamp_ns - a.stamp_ns);
  const double reach = std::max(a.velocity_mps.norm(), b.velocity_mps.norm()) * dt + 1.0;
  return (b.pose.position_m - a.pose.position_m).norm() > reach;
}

}  // namespace platoon
