// The lidar kind: [[node.sensor]] keys (docs/SENSORS.md) and the scan of one rotation per measurement.
#include "sensor_kinds.hpp"

#include "platoon/sensors/lidar.hpp"
#include "platoon/sensors/mounting.hpp"
#include "platoon/sensors/point_cloud.hpp"
#include "platoon/sensors/weather.hpp"

#include <fmt/format.h>

#include <random>

namespace platoon::sensors::kinds {
namespace {

class LidarSensor final : public SensorInstance {
 public:
  explicit LidarSensor(const SensorSpec& spec) : spec_(spec), rng_(spec.seed) {}

  std::optional<Measurement> Measure(const SensorWorldView& world, int64_t t_ns) override {
    // The scan that completes now: it started one scan period ago (flash: now).
    const bool flash = spec_.lidar.kind == ScanKind::kFlash;
    const int64_t duration = flash ? 0 : SToNs(1.0 / spec_.lidar.rotation_rate_hz);
    const int64_t start = t_ns - duration;
    const KinematicState vehicle = world.EgoAt(start);
    const KinematicState mount = MountPointKinematics(vehicle, spec_.mounting);
    // Boxes are posed at each block's own firing time, so moving targets are where the rays meet them.
    const Scene& scene = world.SceneAt(start);
    // The session's fog, rain and sun now (docs/WORLD.md "Weather").
    const LidarDef def = LidarInConditions(spec_.lidar, world.Conditions());
    ScanInto(scene, SensorPoseInWorld(vehicle.pose, spec_.mounting), mount.velocity_mps, vehicle.angular_velocity_radps,
             def, rng_, raw_, [&](double t_s) { world.SceneAt(start + SToNs(t_s)); });
    const auto& raw = raw_;
    for (const LidarPoint& p : raw) backscatter_points_ += p.class_id == kWeatherClassId ? 1 : 0;
    protocol::PointCloud msg;
    msg.header.stamp_ns = start;
    msg.duration_ns = duration;
    msg.point_count = static_cast<uint32_t>(raw.size());
    msg.point_stride = point_record::kStride;
    msg.points = PackLidarPoints(raw, 0);
    return Measurement{std::move(msg), raw.size()};
  }

  void Summarize(std::string& json_members) const override {
    json_members += fmt::format(",\"backscatter_points\":{}", backscatter_points_);
  }

 private:
  SensorSpec spec_;
  std::mt19937_64 rng_;
  uint64_t backscatter_points_ = 0;  // echoes from fog or rain (class kWeatherClassId) so far
  std::vector<LidarPoint> raw_;       // the last scan's points (its memory reused by the next)
};

}  // namespace

void ReadLidar(const config::Table& t, SensorSpec& s) {
  const std::string preset = t.GetString("preset", "default", {"default", "ibeo_lux", "valeo_scala", "vlp16", "hdl64", "os1_128"});
  LidarDef d = *LidarPreset(preset);
  if (t.Has("channels_deg")) {
    d.channel_elevations_rad.clear();
    for (double e : t.GetDoubleArray("channels_deg", {}, 0, -90, 90)) d.channel_elevations_rad.push_back(e * kDeg);
  }
  d.azimuth_min_rad = t.GetDouble("azimuth_min_deg", d.azimuth_min_rad / kDeg, -360, 360) * kDeg;
  d.azimuth_max_rad = t.GetDouble("azimuth_max_deg", d.azimuth_max_rad / kDeg, -360, 360) * kDeg;
  d.azimuth_resolution_rad = t.GetDouble("azimuth_resolution_deg", d.azimuth_resolution_rad / kDeg, 1e-3, 90) * kDeg;
  d.kind = t.GetString("scan", d.kind == ScanKind::kFlash ? "flash" : "rotating", {"rotating", "flash"}) == "flash"
               ? ScanKind::kFlash
               : ScanKind::kRotating;
  d.rotation_rate_hz = t.GetDouble("rate_hz", d.rotation_rate_hz, 0.1, 1000);
  d.clockwise = t.GetBool("clockwise", d.clockwise);
  d.min_range_m = t.GetDouble("min_range_m", d.min_range_m, 0, 1e4);
  d.max_range_m = t.GetDouble("max_range_m", d.max_range_m, 0.1, 1e4);
  d.transmit_power_w = t.GetDouble("transmit_power_w", d.transmit_power_w, 1e-6, 1e6);
  d.sun_irradiance_w_per_m2_nm = t.GetDouble("sun_irradiance_w_per_m2_nm", d.sun_irradiance_w_per_m2_nm, 0, 10);
  d.extinction_coefficient_per_m = t.GetDouble("extinction_coefficient_per_m", d.extinction_coefficient_per_m, 0, 10);
  d.snr_threshold = t.GetDouble("snr_threshold", d.snr_threshold, 0, 1e6);
  d.range_law = *ParseRangeLaw(t.GetString("range_law", std::string(RangeLawName(d.range_law)), {"lambertian_d2", "seed_d3"}));
  d.range_resolution_m = t.GetDouble("range_resolution_m", d.range_resolution_m, 0, 10);
  d.range_noise_k = t.GetDouble("range_noise_k", d.range_noise_k, 0, 100);
  const std::string div = t.GetString("divergence", "", {"", "centre", "elevation_pair", "azimuth_pair", "cross"});
  if (div == "centre") d.divergence_sampling = DivergenceSampling::kCentre;
  if (div == "elevation_pair") d.divergence_sampling = DivergenceSampling::kElevationPair;
  if (div == "azimuth_pair") d.divergence_sampling = DivergenceSampling::kAzimuthPair;
  if (div == "cross") d.divergence_sampling = DivergenceSampling::kCross;
  d.echo_merge_distance_m = t.GetDouble("echo_merge_distance_m", d.echo_merge_distance_m, 0, 100);
  d.max_echoes = static_cast<int>(t.GetInt("max_echoes", d.max_echoes, 1, 8));
  // Weather (docs/WORLD.md "Weather"): what fog and rain do depends on these.
  d.wavelength_nm = t.GetDouble("wavelength_nm", d.wavelength_nm, 300, 2000);
  d.pulse_duration_s = t.GetDouble("pulse_duration_s", d.pulse_duration_s, 0, 1e-6);
  d.overlap_range_m = t.GetDouble("overlap_range_m", d.overlap_range_m, 0, 100);
  // Execution only: threads per scan (the points are the same for any value).
  d.threads = static_cast<int>(t.GetInt("threads", d.threads, 1, 64));
  if (const std::string why = d.Validate(); !why.empty()) t.Fail("type", "invalid lidar: " + why);
  s.lidar = d;
  s.rate_hz = d.rotation_rate_hz;
}

std::unique_ptr<SensorInstance> MakeLidar(const SensorSpec& spec, const SensorServices&) {
  return std::make_unique<LidarSensor>(spec);
}

}  // namespace platoon::sensors::kinds
