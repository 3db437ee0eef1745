// The objects sensor kind (sensors/src/kinds/objects_sensor.cpp): its [[node.sensor]] keys, their errors
// with file, line and key, and its ground truth in the sensor frame of a mounted, yawed sensor.
#include "platoon/config/table.hpp"
#include "platoon/sensors/sensor_config.hpp"
#include "platoon/sensors/sensor_registry.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <variant>

using namespace platoon;
using namespace platoon::sensors;

namespace {

constexpr double kDeg = std::numbers::pi / 180.0;

SensorSpec ObjectsSpec(const std::string& body) {
  const auto t = config::Table::ParseText("[[s]]\nid = \"obj\"\ntype = \"objects\"\n" + body, "host.toml");
  return ReadSensorSpec(t.TableArray("s")[0]);
}

std::string ObjectsSpecError(const std::string& body) {
  try {
    ObjectsSpec(body);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

// An ego at (100, 50) heading north (yaw 90 deg); a car 20 m ahead of it and 2 m to its right heading
// east, a truck behind it.
class World final : public SensorWorldView {
 public:
  World() {
    ego_.pose.position_m = Vec3(100, 50, 0);
    ego_.pose.orientation = Quat(Eigen::AngleAxisd(90 * kDeg, Vec3::UnitZ()));
    car_.id = 0x2'0000'0007ull;
    car_.kind = protocol::EntityKind::kCar;
    car_.kinematics.pose.position_m = Vec3(102, 70, 0);
    car_.kinematics.velocity_mps = Vec3(10, 0, 0);
    truck_.id = 0x3'0000'0001ull;
    truck_.kind = protocol::EntityKind::kTruck;
    truck_.box_size_m = Vec3(10, 2.5, 3.5);
    truck_.kinematics.pose.position_m = Vec3(100, 20, 0);
  }
  KinematicState EgoAt(int64_t t_ns) const override {
    KinematicState k = ego_;
    k.stamp_ns = t_ns;
    return k;
  }
  std::vector<protocol::EntityState> OthersAt(int64_t) const override { return {car_, truck_}; }
  const Scene& SceneAt(int64_t) const override { return scene_; }

  KinematicState ego_;
  protocol::EntityState car_, truck_;
  Scene scene_;
};

const protocol::ObjectList& Measure(SensorInstance& s, const SensorWorldView& w, std::optional<Measurement>& m) {
  m = s.Measure(w, 1'000'000'000);
  REQUIRE(m);
  REQUIRE(std::holds_alternative<protocol::ObjectList>(m->message));
  return std::get<protocol::ObjectList>(m->message);
}

}  // namespace

TEST_CASE("objects sensor: defaults are the chain's, every key is read") {
  const SensorSpec d = ObjectsSpec("");
  CHECK(d.kind == protocol::StreamKind::kObjects);
  CHECK(d.rate_hz == doctest::Approx(20));
  CHECK(d.objects.fov.range_max_m == doctest::Approx(200));
  CHECK(d.objects.classes.rules.size() == 1);

  const SensorSpec s = ObjectsSpec(R"(
rate_hz = 25
range_min_m = 1
range_max_m = 120
fov_half_angle_deg = 60
detection_probability = 0.9
detection_probability_by_class = { pedestrian = 0.7, truck = 0.95 }
position_sigma_m = [0.1, 0.2, 0.0]
position_offset_sigma_m = [0.0, 0.0, 0.0]
velocity_sigma_mps = [0.3, 0.1, 0.0]
velocity_offset_sigma_mps = [0.0, 0.0, 0.0]
track_timeout_frames = 5
class_rules = [ { truth = "truck", initial = "car", final = "truck", length_threshold_m = 6.0, width_threshold_m = 0 } ]
)");
  const auto& o = s.objects;
  CHECK(s.rate_hz == doctest::Approx(25));
  CHECK(o.rate_hz == doctest::Approx(25));
  CHECK(o.fov.range_min_m == doctest::Approx(1));
  CHECK(o.fov.range_max_m == doctest::Approx(120));
  CHECK(o.fov.azimuth_half_rad == doctest::Approx(60 * kDeg));
  CHECK(o.detection.default_probability == doctest::Approx(0.9));
  CHECK(o.detection.probability.at(ObjectClass::kPedestrian) == doctest::Approx(0.7));
  CHECK(o.detection.probability.at(ObjectClass::kTruck) == doctest::Approx(0.95));
  CHECK(o.detection.probability.size() == 2);
  CHECK(o.noise.position_sigma_m == Vec3(0.1, 0.2, 0.0));
  CHECK(o.noise.position_offset_sigma_m == Vec3::Zero());
  CHECK(o.noise.velocity_sigma_mps == Vec3(0.3, 0.1, 0.0));
  CHECK(o.noise.track_timeout_frames == 5);
  CHECK(o.classes.track_timeout_frames == 5);
  REQUIRE(o.classes.rules.size() == 1);
  CHECK(o.classes.rules[0].truth_class == ObjectClass::kTruck);
  CHECK(o.classes.rules[0].initial_class == ObjectClass::kCar);
  CHECK(o.classes.rules[0].final_class == ObjectClass::kTruck);
  CHECK(o.classes.rules[0].length_threshold_m == doctest::Approx(6));
  // An empty list switches class transitions off.
  CHECK(ObjectsSpec("class_rules = []\n").objects.classes.rules.empty());
}

TEST_CASE("objects sensor: bad keys are errors naming file, line and key") {
  CHECK(ObjectsSpecError("detection_probability = 1.5\n").find("host.toml:4: s[0].detection_probability") != std::string::npos);
  CHECK(ObjectsSpecError("detection_probability_by_class = { cars = 0.5 }\n").find("cars") != std::string::npos);
  CHECK(ObjectsSpecError("detection_probability_by_class = { cars = 0.5 }\n").find("unknown key") != std::string::npos);
  CHECK(ObjectsSpecError("range_min_m = 50\nrange_max_m = 40\n").find("host.toml:5: s[0].range_max_m") != std::string::npos);
  CHECK(ObjectsSpecError("position_sigma_m = [0.1, 0.1]\n").find("position_sigma_m") != std::string::npos);
  CHECK(ObjectsSpecError("position_sigma_m = [0.1, -0.1, 0]\n").find("position_sigma_m") != std::string::npos);
  CHECK(ObjectsSpecError("fov_half_angle_deg = 0\n").find("fov_half_angle_deg") != std::string::npos);
  CHECK(ObjectsSpecError("class_rules = [ { truth = \"lorry\" } ]\n").find("lorry") != std::string::npos);
  CHECK(ObjectsSpecError("class_rules = [ { truth = \"car\", colour = \"red\" } ]\n").find("colour") != std::string::npos);
  CHECK(ObjectsSpecError("class_rules = [ { truth = \"car\" }, { truth = \"car\" } ]\n").find("second rule") != std::string::npos);
  CHECK(ObjectsSpecError("noise = 1\n").find("s[0].noise: unknown key") != std::string::npos);
}

TEST_CASE("objects sensor: without noise it reports box centres in the frame of a mounted, yawed sensor") {
  const SensorSpec spec = ObjectsSpec(R"(
position = [3.0, 0.5, 1.0]
rpy_deg = [0, 0, 10]
position_sigma_m = [0, 0, 0]
position_offset_sigma_m = [0, 0, 0]
velocity_sigma_mps = [0, 0, 0]
velocity_offset_sigma_mps = [0, 0, 0]
)");
  World world;
  auto sensor = MakeSensorInstance(spec, SensorServices{});
  std::optional<Measurement> m;
  const auto& list = Measure(*sensor, world, m);
  // Only the car: the truck is behind. Written out: the sensor sits at ego + R(90 deg) (3, 0.5) =
  // (99.5, 53) and looks at 100 deg; the car's box centre is its rear axle + 0.3 * 4.5 m east.
  REQUIRE(list.objects.size() == 1);
  const auto& o = list.objects[0];
  CHECK(o.track_id == TruthLabel(world.car_.id));
  CHECK(o.truth_class == static_cast<uint8_t>(ObjectClass::kCar));
  CHECK(o.object_class == static_cast<uint8_t>(ObjectClass::kCar));  // 4.5 m > 2 m: classified at once
  const double dx = 102 + 1.35 - 99.5, dy = 70 - 53, a = 100 * kDeg;
  CHECK(o.position_m.x() == doctest::Approx(std::cos(a) * dx + std::sin(a) * dy).epsilon(1e-9));
  CHECK(o.position_m.y() == doctest::Approx(-std::sin(a) * dx + std::cos(a) * dy).epsilon(1e-9));
  CHECK(o.position_m.z() == doctest::Approx(0.75 - 1.0));
  CHECK(o.velocity_mps.x() == doctest::Approx(10 * std::cos(a)));
  CHECK(o.velocity_mps.y() == doctest::Approx(-10 * std::sin(a)));
  CHECK(o.size_m == world.car_.box_size_m);

  SUBCASE("a wide field of view sees the truck too, classified once its length passes the threshold") {
    auto wide = ObjectsSpec("fov_half_angle_deg = 180\nclass_rules = [ { truth = \"truck\", initial = \"unclassified\", "
                     "length_threshold_m = 12, width_threshold_m = 0 } ]\n");
    auto s = MakeSensorInstance(wide, SensorServices{});
    const auto& l = Measure(*s, world, m);
    REQUIRE(l.objects.size() == 2);
    CHECK(l.objects[1].truth_class == static_cast<uint8_t>(ObjectClass::kTruck));
    CHECK(l.objects[1].object_class == static_cast<uint8_t>(ObjectClass::kUnclassified));  // 10 m < 12 m
    CHECK(l.objects[0].object_class == static_cast<uint8_t>(ObjectClass::kCar));          // no rule: true class
  }
  SUBCASE("detection probability 0 for cars reports nothing") {
    auto s = MakeSensorInstance(ObjectsSpec("detection_probability_by_class = { car = 0.0 }\n"), SensorServices{});
    CHECK(Measure(*s, world, m).objects.empty());
  }
}
