#include "platoon/geometry.hpp"

#include <algorithm>
#include <cmath>

namespace platoon {

Quat QuatFromAngularVelocity(const Vec3& w_radps, double dt_s) {
  const double angle = w_radps.norm() * dt_s;
  // Below this the axis is numerically meaningless; the rotation is the identity to double precision.
  // A negative dt_s rotates backwards (used when extrapolating to an earlier time).
  if (std::abs(angle) < 1e-12) return Quat::Identity();
  return Quat(Eigen::AngleAxisd(angle, w_radps.normalized()));
}

double AngleBetween(const Quat& a, const Quat& b) {
  // |<a,b>| = cos(theta/2); the absolute value folds q and -q together.
  const double d = std::clamp(std::abs(a.normalized().dot(b.normalized())), 0.0, 1.0);
  return 2.0 * std::acos(d);
}

}  // namespace platoon
