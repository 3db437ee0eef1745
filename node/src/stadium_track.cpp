#include "platoon/node/stadium_track.hpp"

#include <cmath>
#include <numbers>

namespace platoon::node {

double StadiumTrack::LengthM() const { return 2 * straight_m + 2 * std::numbers::pi * radius_m; }

KinematicState StadiumTrack::At(double s_m, double v, int64_t stamp_ns) const {
  const double L = LengthM();
  double s = std::fmod(s_m, L);
  if (s < 0) s += L;
  const double half = straight_m / 2, arc = std::numbers::pi * radius_m;
  Vec3 p;
  double heading = 0, curvature = 0;
  if (s < straight_m) {  // bottom straight, heading +x
    p = Vec3(-half + s, -radius_m, 0);
  } else if (s < straight_m + arc) {  // right half circle, turning left
    const double a = (s - straight_m) / radius_m;  // angle travelled
    p = Vec3(half + radius_m * std::sin(a), -radius_m * std::cos(a), 0);
    heading = a;
    curvature = 1 / radius_m;
  } else if (s < 2 * straight_m + arc) {  // top straight, heading -x
    p = Vec3(half - (s - straight_m - arc), radius_m, 0);
    heading = std::numbers::pi;
  } else {  // left half circle
    const double a = (s - 2 * straight_m - arc) / radius_m;
    p = Vec3(-half - radius_m * std::sin(a), radius_m * std::cos(a), 0);
    heading = std::numbers::pi + a;
    curvature = 1 / radius_m;
  }
  KinematicState k;
  k.stamp_ns = stamp_ns;
  k.pose.position_m = center_m + p;
  k.pose.orientation = Quat(Eigen::AngleAxisd(heading, Vec3::UnitZ()));
  const Vec3 forward(std::cos(heading), std::sin(heading), 0), left(-std::sin(heading), std::cos(heading), 0);
  k.velocity_mps = v * forward;
  k.acceleration_mps2 = v * v * curvature * left;
  k.angular_velocity_radps = Vec3(0, 0, v * curvature);
  return k;
}

}  // namespace platoon::node
