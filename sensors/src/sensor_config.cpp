#include "platoon/sensors/sensor_config.hpp"

#include <cmath>

namespace platoon::sensors {
namespace {

constexpr double kDeg = M_PI / 180.0;

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
  if (const std::string why = d.Validate(); !why.empty()) t.Fail("type", "invalid lidar: " + why);
  s.lidar = d;
  s.rate_hz = d.rotation_rate_hz;
}

void ReadRadar(const config::Table& t, SensorSpec& s) {
  RadarDef d = DefaultRadarDef();
  d.fov_inner_half_angle_rad = t.GetDouble("fov_inner_half_angle_deg", d.fov_inner_half_angle_rad / kDeg, 0, 180) * kDeg;
  d.fov_inner_range_m = t.GetDouble("fov_inner_range_m", d.fov_inner_range_m, 0, 1e4);
  d.fov_outer_half_angle_rad = t.GetDouble("fov_outer_half_angle_deg", d.fov_outer_half_angle_rad / kDeg, 0, 180) * kDeg;
  d.fov_outer_range_m = t.GetDouble("fov_outer_range_m", d.fov_outer_range_m, 0, 1e4);
  d.range_resolution_m = t.GetDouble("range_resolution_m", d.range_resolution_m, 0, 100);
  d.range_sigma_m = t.GetDouble("range_sigma_m", d.range_sigma_m, 0, 100);
  d.occlusion_rays = static_cast<int>(t.GetInt("occlusion_rays", d.occlusion_rays, 1, 1024));
  d.rate_hz = t.GetDouble("rate_hz", d.rate_hz, 0.1, 1000);
  if (const std::string why = d.Validate(); !why.empty()) t.Fail("type", "invalid radar: " + why);
  s.radar = d;
  s.rate_hz = d.rate_hz;
}

void ReadCamera(const config::Table& t, SensorSpec& s) {
  CameraDef d = DefaultCameraDef();
  d.image_width_px = static_cast<uint32_t>(t.GetInt("image_width_px", d.image_width_px, 1, 16384));
  d.image_height_px = static_cast<uint32_t>(t.GetInt("image_height_px", d.image_height_px, 1, 16384));
  d.focal_length_mm = t.GetDouble("focal_length_mm", d.focal_length_mm, 0.1, 1000);
  d.sensor_width_mm = t.GetDouble("sensor_width_mm", d.sensor_width_mm, 0.1, 1000);
  d.sensor_height_mm = t.GetDouble("sensor_height_mm", d.sensor_height_mm, 0.1, 1000);
  d.rate_hz = t.GetDouble("rate_hz", d.rate_hz, 0.1, 1000);
  d.render = t.GetString("render", d.render, {"none", "rgb8", "png"});
  s.camera = d;
  s.rate_hz = d.rate_hz;
}

void ReadImu(const config::Table& t, SensorSpec& s) {
  ImuDef d = DefaultImuDef();
  d.rate_hz = t.GetDouble("rate_hz", d.rate_hz, 0.1, 10000);
  d.gyro_noise_density_radps_rthz = t.GetDouble("gyro_noise_density", d.gyro_noise_density_radps_rthz, 0, 1);
  d.gyro_bias_random_walk_radps2_rthz = t.GetDouble("gyro_bias_random_walk", d.gyro_bias_random_walk_radps2_rthz, 0, 1);
  d.accel_noise_density_mps2_rthz = t.GetDouble("accel_noise_density", d.accel_noise_density_mps2_rthz, 0, 10);
  d.accel_bias_random_walk_mps3_rthz = t.GetDouble("accel_bias_random_walk", d.accel_bias_random_walk_mps3_rthz, 0, 10);
  if (const std::string why = ValidateImuDef(d); !why.empty()) t.Fail("type", "invalid imu: " + why);
  s.imu = d;
  s.rate_hz = d.rate_hz;
}

void ReadGnss(const config::Table& t, SensorSpec& s) {
  GnssDef d = DefaultGnssDef();
  d.rate_hz = t.GetDouble("rate_hz", d.rate_hz, 0.01, 1000);
  d.horizontal_sigma_m = t.GetDouble("horizontal_sigma_m", d.horizontal_sigma_m, 0, 1000);
  d.vertical_sigma_m = t.GetDouble("vertical_sigma_m", d.vertical_sigma_m, 0, 1000);
  d.velocity_sigma_mps = t.GetDouble("velocity_sigma_mps", d.velocity_sigma_mps, 0, 100);
  d.origin.latitude_deg = t.GetDouble("origin_lat_deg", d.origin.latitude_deg, -90, 90);
  d.origin.longitude_deg = t.GetDouble("origin_lon_deg", d.origin.longitude_deg, -180, 180);
  d.origin.altitude_m = t.GetDouble("origin_alt_m", d.origin.altitude_m, -1e4, 1e5);
  if (const std::string why = ValidateGnssDef(d); !why.empty()) t.Fail("type", "invalid gnss: " + why);
  s.gnss = d;
  s.rate_hz = d.rate_hz;
}

}  // namespace

std::optional<LidarDef> LidarPreset(std::string_view name) {
  if (name == "default") return DefaultLidarDef();
  if (name == "ibeo_lux") return IbeoLuxDef();
  if (name == "valeo_scala") return ValeoScalaDef();
  if (name == "vlp16") return Vlp16Def();
  if (name == "hdl64") return Hdl64Def();
  if (name == "os1_128") return Os1_128Def();
  return std::nullopt;
}

Mounting MountingFromRpy(const Vec3& position_m, double roll_deg, double pitch_deg, double yaw_deg) {
  Mounting m;
  m.position_m = position_m;
  m.orientation = (Eigen::AngleAxisd(yaw_deg * kDeg, Vec3::UnitZ()) * Eigen::AngleAxisd(pitch_deg * kDeg, Vec3::UnitY()) *
                   Eigen::AngleAxisd(roll_deg * kDeg, Vec3::UnitX()))
                      .normalized();
  return m;
}

SensorSpec ReadSensorSpec(const config::Table& t) {
  SensorSpec s;
  s.id = t.RequireString("id");
  if (s.id.empty() || s.id.find_first_of(" \t/\\") != std::string::npos)
    t.Fail("id", "expected a non-empty id without spaces or slashes, got \"" + s.id + "\"");
  const std::string type = t.RequireString("type", {"lidar", "radar", "camera", "imu", "gnss"});
  s.kind = protocol::StreamKindFromName(type);
  const auto pos = t.GetDoubleArray("position", {0, 0, 0}, 3, -100, 100);
  const auto rpy = t.GetDoubleArray("rpy_deg", {0, 0, 0}, 3, -360, 360);
  s.mounting = MountingFromRpy(Vec3(pos[0], pos[1], pos[2]), rpy[0], rpy[1], rpy[2]);
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the id: distinct, stable default seeds
  for (unsigned char c : s.id) h = (h ^ c) * 1099511628211ull;
  s.seed = static_cast<uint64_t>(t.GetInt("seed", static_cast<int64_t>(h >> 1), 0));
  switch (s.kind) {
    case protocol::StreamKind::kLidar: ReadLidar(t, s); break;
    case protocol::StreamKind::kRadar: ReadRadar(t, s); s.radar.mounting = s.mounting; break;
    case protocol::StreamKind::kCamera: ReadCamera(t, s); s.camera.mounting = s.mounting; break;
    case protocol::StreamKind::kImu: ReadImu(t, s); s.imu.mounting = s.mounting; break;
    case protocol::StreamKind::kGnss: ReadGnss(t, s); s.gnss.mounting = s.mounting; break;
    default: break;
  }
  t.RejectUnknownKeys();
  return s;
}

}  // namespace platoon::sensors
