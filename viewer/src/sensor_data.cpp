#include "platoon/viewer/sensor_data.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace platoon::viewer {

std::vector<WorldPoint> ReadPoints(const std::string& blob, uint32_t count, uint16_t stride, const Pose& frame_to_world) {
  std::vector<WorldPoint> out;
  if (stride < kMinPointStride || blob.size() < static_cast<size_t>(count) * stride) return out;
  out.reserve(count);
  const Eigen::Matrix3d r = frame_to_world.orientation.toRotationMatrix();
  for (uint32_t i = 0; i < count; ++i) {
    const char* rec = blob.data() + static_cast<size_t>(i) * stride;
    // Only the leading fields are read, so records with a short or extended stride still place.
    using point_record::Load;
    const Vec3 local(Load<float>(rec + point_record::kOffsetX), Load<float>(rec + point_record::kOffsetY),
                     Load<float>(rec + point_record::kOffsetZ));
    WorldPoint p;
    p.position_m = r * local + frame_to_world.position_m;
    p.intensity = Load<float>(rec + point_record::kOffsetIntensity);
    p.source = Load<uint8_t>(rec + point_record::kOffsetSource);
    out.push_back(p);
  }
  return out;
}

std::vector<WorldPoint> FusedPointsInWorld(const protocol::FusedCloud& cloud, const Pose& ego) {
  return ReadPoints(cloud.points, cloud.point_count, cloud.point_stride, ego);
}

std::vector<RadarMarker> RadarMarkersInWorld(const protocol::RadarScan& scan, const Pose& ego) {
  // Sensor-to-world = vehicle-to-world * sensor-to-vehicle.
  const Quat q = (ego.orientation * scan.header.mount_orientation).normalized();
  const Vec3 origin = ego.orientation * scan.header.mount_position_m + ego.position_m;
  const Vec3 fwd = q * Vec3::UnitX();
  const double sensor_yaw = std::atan2(fwd.y(), fwd.x());
  std::vector<RadarMarker> out;
  out.reserve(scan.detections.size());
  for (const auto& d : scan.detections) {
    RadarMarker m;
    m.position_m = q * Vec3(d.x_m, d.y_m, 0.0) + origin;
    m.yaw_rad = sensor_yaw + d.orientation_rad;
    m.length_m = d.length_m;
    m.width_m = d.width_m;
    m.object_class = d.object_class;
    m.false_positive = d.false_positive;
    out.push_back(m);
  }
  return out;
}

std::pair<float, float> LogIntensityRange(const std::vector<WorldPoint>& points) {
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (const auto& p : points) {
    if (!(p.intensity > 0.0f)) continue;
    const float l = std::log10(p.intensity);
    lo = std::min(lo, l);
    hi = std::max(hi, l);
  }
  if (!(lo <= hi)) return {-12.0f, -6.0f};
  return {lo, hi};
}

Rgb IntensityColour(float intensity_w, float log_min, float log_max) {
  const float l = intensity_w > 0.0f ? std::log10(intensity_w) : log_min;
  const float span = log_max - log_min;
  const float t = span > 1e-6f ? std::clamp((l - log_min) / span, 0.0f, 1.0f) : 1.0f;
  // Dark blue -> cyan-green -> yellow.
  if (t < 0.5f) {
    const float u = t * 2.0f;
    return Rgb{0.10f, 0.15f + 0.65f * u, 0.55f - 0.15f * u};
  }
  const float u = (t - 0.5f) * 2.0f;
  return Rgb{0.10f + 0.90f * u, 0.80f + 0.15f * u, 0.40f - 0.30f * u};
}

Rgb SourceColour(uint8_t source) {
  static constexpr Rgb kPalette[] = {{1.00f, 0.30f, 0.25f}, {0.25f, 0.65f, 1.00f}, {0.35f, 0.95f, 0.35f},
                                     {1.00f, 0.85f, 0.20f}, {0.85f, 0.40f, 1.00f}, {0.20f, 0.95f, 0.90f},
                                     {1.00f, 0.55f, 0.10f}, {0.95f, 0.95f, 0.95f}};
  return kPalette[source % 8];
}

}  // namespace platoon::viewer
