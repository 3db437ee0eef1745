// The radar kind: [[node.sensor]] keys (docs/SENSORS.md) and one ARS 408-style object list per cycle.
#include "sensor_kinds.hpp"

#include "platoon/sensors/mounting.hpp"
#include "platoon/sensors/radar.hpp"
#include "platoon/sensors/weather.hpp"

#include <random>

namespace platoon::sensors::kinds {
namespace {

RadarClass RadarClassOf(protocol::EntityKind k) {
  switch (k) {
    case protocol::EntityKind::kCar: return RadarClass::kCar;
    case protocol::EntityKind::kTruck: return RadarClass::kTruck;
    case protocol::EntityKind::kMotorcycle: return RadarClass::kMotorcycle;
    case protocol::EntityKind::kBicycle: return RadarClass::kBicycle;
    case protocol::EntityKind::kPedestrian: return RadarClass::kPedestrian;
    default: return RadarClass::kUnknown;
  }
}

class RadarSensor final : public SensorInstance {
 public:
  explicit RadarSensor(const SensorSpec& spec) : spec_(spec), rng_(spec.seed) {}

  std::optional<Measurement> Measure(const SensorWorldView& world, int64_t t_ns) override {
    const Scene& scene = world.SceneAt(t_ns);
    const KinematicState vehicle = world.EgoAt(t_ns);
    const KinematicState mount = MountPointKinematics(vehicle, spec_.mounting);
    std::vector<RadarTarget> targets;
    for (const auto& e : world.OthersAt(t_ns))
      targets.push_back(RadarTarget{TruthLabel(e.id), RadarClassOf(e.kind), EntityBoxPose(e.kinematics, e.box_size_m),
                                    e.kinematics.velocity_mps, e.box_size_m});
    // Rain shortens the range (docs/WORLD.md "Weather").
    const RadarDef def = RadarInConditions(spec_.radar, world.Conditions());
    const auto objects = sensors::Measure(targets, &scene, SensorPoseInWorld(vehicle.pose, spec_.mounting),
                                          mount.velocity_mps, def, rng_);
    protocol::RadarScan msg;
    msg.header.stamp_ns = t_ns;
    for (const auto& o : objects)
      msg.detections.push_back(protocol::RadarDetection{
          static_cast<float>(o.range_m), static_cast<float>(o.azimuth_rad), static_cast<float>(o.range_rate_mps),
          static_cast<float>(o.rcs_dbsm), static_cast<uint8_t>(o.object_class), o.entity_id, o.is_false_positive,
          static_cast<float>(o.length_m), static_cast<float>(o.width_m), static_cast<float>(o.orientation_rad),
          static_cast<float>(o.x_m), static_cast<float>(o.y_m)});
    const uint64_t n = msg.detections.size();
    return Measurement{std::move(msg), n};
  }

 private:
  SensorSpec spec_;
  std::mt19937_64 rng_;
};

}  // namespace

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
  d.frequency_ghz = t.GetDouble("frequency_ghz", d.frequency_ghz, 1, 1000);
  if (const std::string why = d.Validate(); !why.empty()) t.Fail("type", "invalid radar: " + why);
  d.mounting = s.mounting;
  s.radar = d;
  s.rate_hz = d.rate_hz;
}

std::unique_ptr<SensorInstance> MakeRadar(const SensorSpec& spec, const SensorServices&) {
  return std::make_unique<RadarSensor>(spec);
}

}  // namespace platoon::sensors::kinds
