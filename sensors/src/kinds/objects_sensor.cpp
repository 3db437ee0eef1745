// The objects kind: [[node.sensor]] keys (docs/SENSORS.md) and one object list per cycle from the
// object-list error chain (seed 002 ch. 3: field of view, detection, Gaussian noise, class transitions).
#include "sensor_kinds.hpp"

#include "platoon/can/transport.hpp"
#include "platoon/sensors/mounting.hpp"
#include "platoon/sensors/object_list.hpp"
#include "platoon/sensors/weather.hpp"

#include <random>

namespace platoon::sensors::kinds {
namespace {

class ObjectsSensor final : public SensorInstance {
 public:
  explicit ObjectsSensor(const SensorSpec& spec) : spec_(spec), chain_(spec.objects), rng_(spec.seed) {}

  std::optional<Measurement> Measure(const SensorWorldView& world, int64_t t_ns) override {
    // Ground truth: every other entity's box centre and velocity in the sensor frame at t.
    const KinematicState vehicle = world.EgoAt(t_ns);
    const Pose sensor_world = SensorPoseInWorld(vehicle.pose, spec_.mounting);
    const Quat to_sensor = sensor_world.orientation.conjugate();
    std::vector<GroundTruthObject> truth;
    for (const auto& e : world.OthersAt(t_ns)) {
      const Pose box = EntityBoxPose(e.kinematics, e.box_size_m);
      truth.push_back(GroundTruthObject{TruthLabel(e.id), ObjectClassOf(e.kind),
                                        to_sensor * (box.position_m - sensor_world.position_m),
                                        to_sensor * e.kinematics.velocity_mps, e.box_size_m});
    }
    // Fog hides what its contrast no longer shows (docs/WORLD.md "Weather"), then the error chain: Z_t = M(X_t).
    ApplyVisibility(truth, world.Conditions().weather.fog_visibility_m, VisibilityDetectionDef{}, rng_);
    const std::vector<SensedObject> sensed = chain_.Process(truth, rng_);
    protocol::ObjectList msg;
    msg.header.stamp_ns = t_ns;
    msg.objects.reserve(sensed.size());
    for (const auto& o : sensed)
      msg.objects.push_back(protocol::DetectedObject{o.id, static_cast<uint8_t>(o.object_class),
                                                     static_cast<uint8_t>(o.truth_class), o.position_m,
                                                     o.velocity_mps, o.size_m});
    const uint64_t n = msg.objects.size();
    return Measurement{std::move(msg), n};
  }

 private:
  SensorSpec spec_;
  ObjectListChain chain_;
  std::mt19937_64 rng_;
};

Vec3 ReadVec3(const config::Table& t, const std::string& key, const Vec3& fallback, double max) {
  const auto v = t.GetDoubleArray(key, {fallback.x(), fallback.y(), fallback.z()}, 3, 0, max);
  return Vec3(v[0], v[1], v[2]);
}

ObjectClass ReadClass(const config::Table& t, const std::string& key, const std::optional<ObjectClass>& fallback) {
  const std::string name = fallback ? t.GetString(key, std::string(ObjectClassName(*fallback)), ObjectClassNames())
                                    : t.RequireString(key, ObjectClassNames());
  return *ObjectClassFromName(name);
}

}  // namespace

void ReadObjects(const config::Table& t, SensorSpec& s) {
  ObjectListDef d = DefaultObjectListDef();
  d.rate_hz = t.GetDouble("rate_hz", d.rate_hz, 0.1, 1000);
  // Module 1: field of view.
  d.fov.range_min_m = t.GetDouble("range_min_m", d.fov.range_min_m, 0, 1e4);
  d.fov.range_max_m = t.GetDouble("range_max_m", d.fov.range_max_m, 0, 1e5);
  d.fov.azimuth_half_rad = t.GetDouble("fov_half_angle_deg", d.fov.azimuth_half_rad / kDeg, 0.1, 180) * kDeg;
  if (d.fov.range_max_m <= d.fov.range_min_m)
    t.Fail("range_max_m", "must be > range_min_m (" + std::to_string(d.fov.range_min_m) + "), got " +
                              std::to_string(d.fov.range_max_m));
  // Module 2: detection probability, one for all classes and one per class.
  d.detection.default_probability = t.GetDouble("detection_probability", d.detection.default_probability, 0, 1);
  if (auto by_class = t.Sub("detection_probability_by_class")) {
    // Every class name is asked for (-1: not given), so an unknown key's error lists them all.
    for (const auto& name : ObjectClassNames())
      if (const double p = by_class->GetDouble(name, -1, 0, 1); p >= 0) d.detection.probability[*ObjectClassFromName(name)] = p;
    by_class->RejectUnknownKeys();
  }
  // Module 3: white noise per frame and an offset per track, on position and velocity.
  d.noise.position_sigma_m = ReadVec3(t, "position_sigma_m", d.noise.position_sigma_m, 100);
  d.noise.position_offset_sigma_m = ReadVec3(t, "position_offset_sigma_m", d.noise.position_offset_sigma_m, 100);
  d.noise.velocity_sigma_mps = ReadVec3(t, "velocity_sigma_mps", d.noise.velocity_sigma_mps, 100);
  d.noise.velocity_offset_sigma_mps = ReadVec3(t, "velocity_offset_sigma_mps", d.noise.velocity_offset_sigma_mps, 100);
  d.noise.track_timeout_frames = static_cast<uint32_t>(t.GetInt("track_timeout_frames", d.noise.track_timeout_frames, 0, 1'000'000));
  d.classes.track_timeout_frames = d.noise.track_timeout_frames;
  // Module 4: class transitions; a given list (possibly empty) replaces the default car rule.
  if (t.Has("class_rules")) {
    d.classes.rules.clear();
    for (const auto& r : t.TableArray("class_rules")) {
      ClassTransitionRule rule;
      rule.truth_class = ReadClass(r, "truth", std::nullopt);
      rule.initial_class = ReadClass(r, "initial", ObjectClass::kUnclassified);
      rule.final_class = ReadClass(r, "final", rule.truth_class);
      rule.length_threshold_m = r.GetDouble("length_threshold_m", rule.length_threshold_m, 0, 100);
      rule.width_threshold_m = r.GetDouble("width_threshold_m", rule.width_threshold_m, -1, 100);
      r.RejectUnknownKeys();
      for (const auto& other : d.classes.rules)
        if (other.truth_class == rule.truth_class)
          r.Fail("truth", "a second rule for class \"" + std::string(ObjectClassName(rule.truth_class)) + "\"");
      d.classes.rules.push_back(rule);
    }
  }
  if (const std::string why = ValidateObjectListDef(d); !why.empty()) t.Fail("type", "invalid objects sensor: " + why);
  // CAN (docs/CAN.md, "Object lists"): every list also goes out as a header and one frame per object.
  s.can_bus = t.GetString("can_bus", "");
  s.can_map = t.GetString("can_map", "");
  if (s.can_bus.empty() != s.can_map.empty())
    t.Fail(s.can_bus.empty() ? "can_map" : "can_bus", "can_bus and can_map go together (the bus, and the object mapping file)");
  if (!s.can_bus.empty()) {
    try {
      can::ParseBusSpec(s.can_bus);
    } catch (const can::BusError& e) {
      t.Fail("can_bus", e.what());
    }
    // Relative files (the mapping, candump logs) are found next to the session file.
    const auto slash = t.File().rfind('/');
    s.can_dir = slash == std::string::npos ? std::string() : t.File().substr(0, slash);
    if (s.can_map.front() != '/' && !s.can_dir.empty()) s.can_map = s.can_dir + "/" + s.can_map;
    s.can_where = t.Where("can_map") + ": " + t.Path() + ".can_map";
  }
  s.objects = d;
  s.rate_hz = d.rate_hz;
}

std::unique_ptr<SensorInstance> MakeObjects(const SensorSpec& spec, const SensorServices&) {
  return std::make_unique<ObjectsSensor>(spec);
}

}  // namespace platoon::sensors::kinds
