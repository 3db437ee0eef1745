#include "platoon/config/table.hpp"
#include "platoon/point_record.hpp"
#include "platoon/sensors/sensor_config.hpp"
#include "platoon/sensors/sensor_registry.hpp"

#include <doctest/doctest.h>

#include <array>
#include <set>
#include <string>
#include <variant>

using namespace platoon;
using namespace platoon::sensors;

namespace {

// A flat world: the ground plane, one standing car 12 m ahead of a standing ego.
class FlatWorld final : public SensorWorldView {
 public:
  FlatWorld() {
    const double h = 200;
    const std::vector<Vec3> v = {Vec3(-h, -h, 0), Vec3(h, -h, 0), Vec3(h, h, 0), Vec3(-h, h, 0)};
    const std::vector<std::array<uint32_t, 3>> tri = {{0, 1, 2}, {0, 2, 3}};
    scene_.AddMesh(v, tri, SurfaceTag{1, 0, static_cast<uint32_t>(SemanticClass::kGround)});
    car_.id = 0x1234567;
    car_.kind = protocol::EntityKind::kCar;
    car_.kinematics.pose.position_m = Vec3(12, 0, 0);
    scene_.AddDynamicBox(0.5 * car_.box_size_m, SurfaceTag{3, TruthLabel(car_.id), static_cast<uint32_t>(SemanticClass::kVehicle)},
                         EntityBoxPose(car_.kinematics, car_.box_size_m));
    scene_.Commit();
  }
  KinematicState EgoAt(int64_t t_ns) const override {
    KinematicState k;
    k.stamp_ns = t_ns;
    return k;
  }
  std::vector<protocol::EntityState> OthersAt(int64_t) const override { return {car_}; }
  const Scene& SceneAt(int64_t t_ns) const override {
    posed_at.insert(t_ns);
    return scene_;
  }
  mutable std::set<int64_t> posed_at;  // every time the scene was asked for

 private:
  Scene scene_;
  protocol::EntityState car_;
};

SensorSpec Spec(const std::string& body) {
  const auto t = config::Table::ParseText("[[s]]\nid = \"x\"\nposition = [1.5, 0, 1.6]\n" + body, "host.toml");
  return ReadSensorSpec(t.TableArray("s")[0]);
}

template <typename M>
const M& As(const Measurement& m) {
  REQUIRE(std::holds_alternative<M>(m.message));
  return std::get<M>(m.message);
}

}  // namespace

TEST_CASE("sensor registry: every sensor stream kind has exactly one row, named as on the wire") {
  const std::set<std::string> expected = {"lidar", "radar", "camera", "imu", "gnss", "objects"};
  std::set<std::string> names;
  for (const auto& row : SensorKinds()) {
    CHECK(names.insert(std::string(row.name)).second);
    CHECK(row.name == protocol::StreamKindName(row.kind));
    CHECK(bool(row.read));
    CHECK(bool(row.make));
    CHECK(FindSensorKind(row.name) == &row);
    CHECK(FindSensorKind(row.kind) == &row);
  }
  CHECK(names == expected);
  CHECK(SensorKindNames().size() == expected.size());
  CHECK(FindSensorKind("sonar") == nullptr);
  CHECK(FindSensorKind(protocol::StreamKind::kFused) == nullptr);
  CHECK(FindSensorKind(protocol::StreamKind::kUnknown) == nullptr);
}

TEST_CASE("sensor registry: an unknown type is a config error naming file, line, key and the known kinds") {
  const auto t = config::Table::ParseText("[[s]]\nid = \"x\"\ntype = \"sonar\"\n", "host.toml");
  std::string what;
  try {
    ReadSensorSpec(t.TableArray("s")[0]);
  } catch (const config::ConfigError& e) {
    what = e.what();
  }
  REQUIRE_FALSE(what.empty());
  CHECK(what.find("host.toml:3") != std::string::npos);
  CHECK(what.find("type") != std::string::npos);
  CHECK(what.find("sonar") != std::string::npos);
  for (const auto& row : SensorKinds()) CHECK(what.find(std::string(row.name)) != std::string::npos);
}

TEST_CASE("sensor registry: each kind's row reads its keys and makes an instance that measures its message") {
  FlatWorld world;
  const SensorServices none;
  const int64_t t = 2'000'000'000;

  SUBCASE("lidar: one scan ending at t, stamped at its start, boxes posed per block") {
    const SensorSpec spec = Spec("type = \"lidar\"\npreset = \"vlp16\"\nrate_hz = 10\n");
    CHECK(spec.rate_hz == doctest::Approx(10));
    auto m = MakeSensorInstance(spec, none)->Measure(world, t);
    REQUIRE(m);
    const auto& pc = As<protocol::PointCloud>(*m);
    CHECK(pc.header.stamp_ns == t - 100'000'000);
    CHECK(pc.duration_ns == 100'000'000);
    CHECK(pc.point_stride == point_record::kStride);
    CHECK(pc.point_count == m->items);
    CHECK(pc.point_count > 100);
    CHECK(pc.points.size() == pc.point_count * size_t{point_record::kStride});
    CHECK(world.posed_at.size() > 2);  // the scan start and the blocks' own times
  }
  SUBCASE("radar: the car ahead is detected with its ground-truth label") {
    const SensorSpec spec = Spec("type = \"radar\"\nrate_hz = 20\n");
    CHECK(spec.radar.mounting.position_m == spec.mounting.position_m);
    auto m = MakeSensorInstance(spec, none)->Measure(world, t);
    REQUIRE(m);
    const auto& scan = As<protocol::RadarScan>(*m);
    CHECK(scan.header.stamp_ns == t);
    bool seen = false;
    for (const auto& d : scan.detections) seen |= d.entity_id == TruthLabel(0x1234567);
    CHECK(seen);
  }
  SUBCASE("camera: one ROI for the car, no image without an imager") {
    const SensorSpec spec = Spec("type = \"camera\"\nimage_width_px = 320\nimage_height_px = 180\nrender = \"png\"\n");
    auto m = MakeSensorInstance(spec, none)->Measure(world, t);
    REQUIRE(m);
    const auto& f = As<protocol::CameraFrame>(*m);
    CHECK(f.header.stamp_ns == t);
    REQUIRE(f.rois.size() == 1);
    CHECK(f.rois[0].entity_id == TruthLabel(0x1234567));
    CHECK(f.image.empty());
    CHECK(m->items == 1);
  }
  SUBCASE("imu: a standing, level vehicle measures gravity on z") {
    auto m = MakeSensorInstance(Spec("type = \"imu\"\nrate_hz = 100\n"), none)->Measure(world, t);
    REQUIRE(m);
    const auto& s = As<protocol::ImuMeasurement>(*m);
    CHECK(s.header.stamp_ns == t);
    CHECK(s.acceleration_mps2.z() == doctest::Approx(-9.81).epsilon(0.05));
  }
  SUBCASE("gnss: a fix near the configured origin") {
    auto m = MakeSensorInstance(Spec("type = \"gnss\"\norigin_lat_deg = 48.1\norigin_lon_deg = 11.5\n"), none)->Measure(world, t);
    REQUIRE(m);
    const auto& g = As<protocol::GnssMeasurement>(*m);
    CHECK(g.header.stamp_ns == t);
    CHECK(g.latitude_deg == doctest::Approx(48.1).epsilon(1e-3));
    CHECK(g.longitude_deg == doctest::Approx(11.5).epsilon(1e-3));
  }
  SUBCASE("objects: the car ahead in the object list with its track id and class") {
    auto m = MakeSensorInstance(Spec("type = \"objects\"\nrate_hz = 20\n"), none)->Measure(world, t);
    REQUIRE(m);
    const auto& list = As<protocol::ObjectList>(*m);
    CHECK(list.header.stamp_ns == t);
    REQUIRE(list.objects.size() == 1);
    CHECK(list.objects[0].track_id == TruthLabel(0x1234567));
    CHECK(list.objects[0].truth_class == static_cast<uint8_t>(ObjectClass::kCar));
    CHECK(m->items == 1);
  }
}

TEST_CASE("sensor registry: a camera that renders asks the host's imager and counts its images") {
  struct CountingImager final : CameraImager {
    int* calls;
    explicit CountingImager(int* c) : calls(c) {}
    std::string Render(const Pose&, const std::vector<protocol::EntityState>& others, protocol::CameraFrame& frame) override {
      ++*calls;
      CHECK(others.size() == 1);
      frame.image = "img";
      frame.encoding = "rgb8";
      return "";
    }
  };
  int calls = 0;
  SensorServices services;
  services.make_camera_imager = [&](const SensorSpec&) { return std::make_unique<CountingImager>(&calls); };
  FlatWorld world;
  auto camera = MakeSensorInstance(Spec("type = \"camera\"\nrender = \"rgb8\"\n"), services);
  for (int i = 0; i < 3; ++i) REQUIRE(camera->Measure(world, i * 100'000'000));
  CHECK(calls == 3);
  std::string members;
  camera->Summarize(members);
  CHECK(members.find(",\"images\":3,") == 0);
  // render = "none" never asks for an imager.
  auto plain = MakeSensorInstance(Spec("type = \"camera\"\nrender = \"none\"\n"), services);
  REQUIRE(plain->Measure(world, 0));
  CHECK(calls == 3);
}
