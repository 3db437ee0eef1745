#pragma once
/// Geometry types shared by every platoon process.
///
/// Frames: the world frame is ENU-like (x east, y north, z up), metres.
/// A vehicle frame has x forward, y left, z up, origin at the rear-axle centre.
/// Quaternions rotate body-frame vectors into the world frame.

#include <Eigen/Geometry>

#include <cstdint>

namespace platoon {

using Vec3 = Eigen::Vector3d;
using Quat = Eigen::Quaterniond;

/// Rigid pose of a body in the world frame.
struct Pose {
  Vec3 position_m = Vec3::Zero();        ///< Origin of the body frame in the world, in m.
  Quat orientation = Quat::Identity();   ///< Body-to-world rotation (unit quaternion).
  /// Exact equality of every coefficient (for round-trip tests, not for tolerance checks).
  bool operator==(const Pose& o) const {
    return position_m == o.position_m && orientation.coeffs() == o.orientation.coeffs();
  }
};

/// Kinematic state of a rigid body at one sim-time instant; what dead reckoning extrapolates.
/// All vectors are in the world frame.
struct KinematicState {
  int64_t stamp_ns = 0;                        ///< Sim time this state is valid at, in ns.
  Pose pose;                                   ///< Position and orientation.
  Vec3 velocity_mps = Vec3::Zero();            ///< Linear velocity, in m/s.
  Vec3 acceleration_mps2 = Vec3::Zero();       ///< Linear acceleration, in m/s^2.
  Vec3 angular_velocity_radps = Vec3::Zero();  ///< Angular velocity (world frame), in rad/s.
  bool operator==(const KinematicState&) const = default;
};

/// Rotation by angular velocity `w_radps` held for `dt_s` seconds (negative: backwards), as a unit quaternion.
Quat QuatFromAngularVelocity(const Vec3& w_radps, double dt_s);

/// Smallest angle between two orientations, in rad, in [0, pi].
double AngleBetween(const Quat& a, const Quat& b);

/// Centre of an entity's box in its own frame (origin at the rear-axle centre): the rear overhang is
/// 20 % of the length (a 4.5 m car: 0.9 m), the box stands on the ground. `size_m` = length, width, height.
inline Vec3 BoxCentreInBody(const Vec3& size_m) { return Vec3(0.3 * size_m.x(), 0.0, 0.5 * size_m.z()); }

/// Nanoseconds to seconds.
inline constexpr double NsToS(int64_t ns) { return static_cast<double>(ns) * 1e-9; }
/// Seconds to nanoseconds (rounded to nearest).
inline constexpr int64_t SToNs(double s) {
  return static_cast<int64_t>(s * 1e9 + (s >= 0 ? 0.5 : -0.5));
}

}  // namespace platoon
