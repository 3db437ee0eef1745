#pragma once
/// The closed test track of the stadium traffic model and of a driver's start pose without a road:
/// geometry only, shared by the traffic and driver roles without either including the other.

#include "platoon/geometry.hpp"

#include <cstdint>

namespace platoon::node {

/// A stadium track: two straights joined by two half circles, driven counter-clockwise.
struct StadiumTrack {
  Vec3 center_m = Vec3::Zero();  ///< Centre of the stadium, in m.
  double straight_m = 100.0;     ///< Length of each straight, in m.
  double radius_m = 30.0;        ///< Radius of the half circles, in m.
  /// Track length, in m.
  double LengthM() const;
  /// State of a point moving at `speed_mps` that is `s_m` along the track (wrapped), stamped `stamp_ns`.
  KinematicState At(double s_m, double speed_mps, int64_t stamp_ns) const;
};

}  // namespace platoon::node
