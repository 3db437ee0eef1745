#pragma once
/// Sensor data for display: fused clouds and radar objects placed in the world. Point records are read
/// through the one shared definition (platoon/point_record.hpp; docs/PROTOCOL.md "Data streams"): x, y,
/// z, intensity and the source index only, so a record extended by appended fields still reads. Pure
/// functions, no OSG: unit-testable.

#include "platoon/geometry.hpp"
#include "platoon/point_record.hpp"
#include "platoon/protocol/messages.hpp"
#include "platoon/viewer/vehicle_model.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace platoon::viewer {

/// One point of a cloud, in the world.
struct WorldPoint {
  Vec3 position_m = Vec3::Zero();  ///< World position, in m.
  float intensity = 0.0f;          ///< Received power P_r, in W.
  uint8_t source = 0;              ///< Source index in a fused frame.
};

/// The smallest record the reader accepts (intensity at 12, source at 27).
inline constexpr uint16_t kMinPointStride = point_record::kOffsetSource + 1;

/// Reads `count` records of `stride` bytes from `blob` (sensor or vehicle frame, unchanged), transformed
/// by `frame_to_world`. Returns nothing when the stride is below kMinPointStride or the blob is short.
std::vector<WorldPoint> ReadPoints(const std::string& blob, uint32_t count, uint16_t stride, const Pose& frame_to_world);

/// The fused cloud's points in the world: they are in the ego vehicle frame at reference_ns, placed
/// with `ego` (the ego entity's displayed pose, vehicle-to-world).
std::vector<WorldPoint> FusedPointsInWorld(const protocol::FusedCloud& cloud, const Pose& ego);

/// One radar object, placed in the world.
struct RadarMarker {
  Vec3 position_m = Vec3::Zero();  ///< Object centre on the sensor's plane, in the world, in m.
  double yaw_rad = 0.0;            ///< Heading of the object's box in the world (sensor yaw + orientation_rad).
  double length_m = 0.0, width_m = 0.0;
  uint8_t object_class = 6;
  bool false_positive = false;
};

/// The scan's detections in the world: x_m, y_m are in the sensor frame, which sits at the header's
/// mount pose on the vehicle, which sits at `ego`.
std::vector<RadarMarker> RadarMarkersInWorld(const protocol::RadarScan& scan, const Pose& ego);

/// log10 of the smallest and largest positive intensity in `points` ({-12, -6} when there is none).
std::pair<float, float> LogIntensityRange(const std::vector<WorldPoint>& points);
/// Colour of a point by intensity on a log scale: log10(P_r) from log_min to log_max maps from dark blue
/// through green to yellow (clamped).
Rgb IntensityColour(float intensity_w, float log_min, float log_max);
/// Palette colour of source index `source` (distinct for 0..7, then repeating).
Rgb SourceColour(uint8_t source);

}  // namespace platoon::viewer
