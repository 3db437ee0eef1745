// Validation of object lists against recorded ground truth (sensors/src/validation/object_validation.cpp)
// on synthetic drives whose answer is known: a turning ego among moving, oncoming and parked cars,
// recorded as world broadcasts every 50 ms, measured by the real object-list chain between broadcasts.
#include "platoon/sensors/object_list.hpp"
#include "platoon/sensors/sensor_instance.hpp"
#include "platoon/validation/object_validation.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <random>
#include <tuple>
#include <vector>

using namespace platoon;
using namespace platoon::validation;
using sensors::ObjectClass;

namespace {

constexpr double kPi = std::numbers::pi;
constexpr uint64_t kEgo = 0x0001'0000'0001ull;
const Vec3 kCarSize(4.5, 1.8, 1.5);

// Uniform motion on a circle about the origin: counter-clockwise for speed > 0, clockwise for < 0.
struct Circle {
  double radius_m = 150;
  double speed_mps = 15;
  double phase_rad = 0;  // angular position at t = 0
};

protocol::EntityState StateOn(uint64_t id, const Circle& c, double t_s) {
  const double w = c.speed_mps / c.radius_m;  // rad/s, signed
  const double th = c.phase_rad + w * t_s;
  const double heading = th + (c.speed_mps >= 0 ? kPi / 2 : -kPi / 2);
  protocol::EntityState e;
  e.id = id;
  e.kind = protocol::EntityKind::kCar;
  e.box_size_m = kCarSize;
  auto& k = e.kinematics;
  k.stamp_ns = SToNs(t_s);
  k.pose.position_m = Vec3(c.radius_m * std::cos(th), c.radius_m * std::sin(th), 0);
  k.pose.orientation = Quat(Eigen::AngleAxisd(heading, Vec3::UnitZ()));
  k.velocity_mps = w * c.radius_m * Vec3(-std::sin(th), std::cos(th), 0);
  k.acceleration_mps2 = -w * w * c.radius_m * Vec3(std::cos(th), std::sin(th), 0);
  k.angular_velocity_radps = Vec3(0, 0, w);
  return e;
}

double Yaw(const Quat& q) { return std::atan2(2 * (q.w() * q.z() + q.x() * q.y()), 1 - 2 * (q.y() * q.y() + q.z() * q.z())); }

// A drive: the ego on a circle of 150 m at 15 m/s (turning at 0.1 rad/s), cars ahead in its lane and the
// lane to its left at other speeds, oncoming cars, and parked cars outside the ring; a sensor mounted
// 3.7 m ahead, 0.3 m left, yawed 5 deg.
struct Drive {
  Circle ego{150, 15, 0};
  std::vector<std::pair<uint64_t, Circle>> others;
  double mount_x_m = 3.7, mount_y_m = 0.3, mount_z_m = 0.5, mount_yaw_rad = 5 * kPi / 180;
  double world_period_s = 0.05;   // broadcasts at 20 Hz
  double sensor_period_s = 0.05;  // the sensor at 20 Hz, 17 ms after each broadcast
  double sensor_offset_s = 0.017;

  Drive() {
    uint64_t id = 100;
    for (auto [speed, ahead_m] : {std::pair{13.0, 20.0}, {14.0, 40.0}, {16.0, 30.0}, {17.0, 10.0}})
      others.push_back({id++, Circle{150, speed, ahead_m / 150}});
    for (auto [speed, ahead_m] : {std::pair{15.5, 25.0}, {14.5, 55.0}, {16.5, -5.0}})
      others.push_back({id++, Circle{146.5, speed, ahead_m / 146.5}});
    for (int i = 0; i < 4; ++i) others.push_back({id++, Circle{153.5, -14.0, 0.6 + i * 1.5}});
    for (int i = 0; i < 12; ++i) others.push_back({id++, Circle{157.5, 0.0, i * 2 * kPi / 12}});
  }

  sensors::Mounting Mount() const {
    return sensors::Mounting{Vec3(mount_x_m, mount_y_m, mount_z_m), Quat(Eigen::AngleAxisd(mount_yaw_rad, Vec3::UnitZ()))};
  }

  // The recorded world: every entity at every broadcast; a keyframe each second, deltas between.
  RecordedWorld Record(double duration_s) const {
    RecordedWorld world;
    const int n = static_cast<int>(duration_s / world_period_s) + 2;
    for (int i = 0; i <= n; ++i) {
      const double t = i * world_period_s;
      protocol::WorldState w;
      w.sim_time_ns = SToNs(t);
      w.keyframe = i % 20 == 0;
      w.entities.push_back(StateOn(kEgo, ego, t));
      for (const auto& [id, c] : others) w.entities.push_back(StateOn(id, c, t));
      world.Add(w);
    }
    return world;
  }

  // Ground truth in the sensor frame at t, by planar geometry written out here (independent of the
  // library's transforms): box centre = rear axle + R(yaw) (0.3 L, 0, h/2); sensor = ego + R(yaw_ego) mount.
  std::vector<sensors::GroundTruthObject> Truth(double t) const {
    const auto e = StateOn(kEgo, ego, t).kinematics;
    const double ye = Yaw(e.pose.orientation);
    const double sx = e.pose.position_m.x() + std::cos(ye) * mount_x_m - std::sin(ye) * mount_y_m;
    const double sy = e.pose.position_m.y() + std::sin(ye) * mount_x_m + std::cos(ye) * mount_y_m;
    const double ys = ye + mount_yaw_rad;
    std::vector<sensors::GroundTruthObject> out;
    for (const auto& [id, c] : others) {
      const auto k = StateOn(id, c, t).kinematics;
      const double y = Yaw(k.pose.orientation);
      const double bx = k.pose.position_m.x() + std::cos(y) * 0.3 * kCarSize.x() - sx;
      const double by = k.pose.position_m.y() + std::sin(y) * 0.3 * kCarSize.x() - sy;
      sensors::GroundTruthObject g;
      g.id = sensors::TruthLabel(id);
      g.object_class = ObjectClass::kCar;
      g.position_m = Vec3(std::cos(ys) * bx + std::sin(ys) * by, -std::sin(ys) * bx + std::cos(ys) * by,
                          0.5 * kCarSize.z() - mount_z_m);
      g.size_m = kCarSize;
      out.push_back(g);
    }
    return out;
  }

  // `frames` sensor cycles of the chain, as an objects sensor on the ego would send them.
  std::vector<SensorFrame> Measure(sensors::ObjectListChain& chain, int frames, uint64_t seed) const {
    std::mt19937_64 rng(seed);
    std::vector<SensorFrame> out;
    for (int i = 0; i < frames; ++i) {
      const double t = sensor_offset_s + i * sensor_period_s;
      protocol::ObjectList list;
      list.header.stamp_ns = SToNs(t);
      list.header.entity_id = kEgo;
      list.header.mount_position_m = Mount().position_m;
      list.header.mount_orientation = Mount().orientation;
      for (const auto& o : chain.Process(Truth(t), rng))
        list.objects.push_back(protocol::DetectedObject{o.id, static_cast<uint8_t>(o.object_class),
                                                        static_cast<uint8_t>(o.truth_class), o.position_m, o.velocity_mps,
                                                        o.size_m});
      out.push_back(FrameOf(list));
    }
    return out;
  }
};

// The chain of the acceptance: sigma 0.1 m white noise (no per-track offset), detection probability 0.9.
sensors::ObjectListDef AcceptanceDef() {
  sensors::ObjectListDef def = sensors::DefaultObjectListDef();
  def.detection.default_probability = 0.9;
  def.noise.position_sigma_m = Vec3(0.1, 0.1, 0.0);
  def.noise.position_offset_sigma_m = Vec3::Zero();
  return def;
}

ValidationDef FovDef() {
  ValidationDef def;
  def.azimuth_half_rad = kPi / 4;  // the chain's own field of view
  return def;
}

// The acceptance figures: sigma per axis within 5 % of 0.1 m, no bias, the rate's interval holding 0.9.
bool Reproduces(const Report& r) {
  const auto& e = r.all.error;
  return std::abs(e.sigma_x_m / 0.1 - 1) < 0.05 && std::abs(e.sigma_y_m / 0.1 - 1) < 0.05 && std::abs(e.mean_x_m) < 0.01 &&
         std::abs(e.mean_y_m) < 0.01 && r.all.detection.lower <= 0.9 && 0.9 <= r.all.detection.upper;
}

}  // namespace

TEST_CASE("object validation: sigma 0.1 m and detection 0.9 through the real chain are reproduced on a turning drive") {
  const Drive drive;
  const int frames = 3000;  // 150 s at 20 Hz
  const RecordedWorld world = drive.Record(frames * drive.sensor_period_s);
  sensors::ObjectListChain chain(AcceptanceDef());
  const auto measured = drive.Measure(chain, frames, 20260523);
  const Report r = Compare(world, measured, FovDef());
  MESSAGE(FormatTable(r, "synthetic", "objects"));

  CHECK(r.frames == frames);
  CHECK(r.frames_without_ego == 0);
  CHECK(r.all.truth > 10000);
  CHECK(r.matched_by_distance == 0);  // the chain gives every object its track id
  // Every range bin is populated: the drive sweeps targets through 0-80 m.
  for (const auto& b : r.by_range) CHECK(b.figures.truth > 300);
  // Detection rate: 0.9 inside the 95 % interval overall, within 4 binomial sigma in every bin.
  CHECK(r.all.detection.lower <= 0.9);
  CHECK(0.9 <= r.all.detection.upper);
  for (const auto& b : r.by_range) {
    const double n = static_cast<double>(b.figures.truth), sd = std::sqrt(0.9 * 0.1 / n);
    CHECK(std::abs(b.figures.detection.value - 0.9) < 4 * sd);
  }
  // Position error: sigma within 5 % of 0.1 m on both axes and in every bin, its interval holding 0.1,
  // no bias, RMSE sqrt(2) sigma.
  const auto& e = r.all.error;
  CHECK(e.sigma_x_m == doctest::Approx(0.1).epsilon(0.05));
  CHECK(e.sigma_y_m == doctest::Approx(0.1).epsilon(0.05));
  CHECK(e.sigma_x_lower_m <= 0.1);
  CHECK(0.1 <= e.sigma_x_upper_m);
  CHECK(std::abs(e.mean_x_m) < 0.005);
  CHECK(std::abs(e.mean_y_m) < 0.005);
  CHECK(e.rmse_m == doctest::Approx(0.1 * std::sqrt(2.0)).epsilon(0.05));
  for (const auto& b : r.by_range) {
    CHECK(b.figures.error.sigma_x_m == doctest::Approx(0.1).epsilon(0.1));
    CHECK(b.figures.error.sigma_y_m == doctest::Approx(0.1).epsilon(0.1));
  }
  CHECK(Reproduces(r));
  // Classes: all cars, reported as cars once the length rule fired (at once: 4.5 m > 2 m); no false positives.
  REQUIRE(r.by_class.size() == 1);
  CHECK(r.by_class[0].object_class == ObjectClass::kCar);
  CHECK(r.by_class[0].figures.class_correct.value == 1.0);
  CHECK(r.all.false_positives == 0);
  CHECK(r.false_positive_fraction.value == 0.0);

  SUBCASE("dead-reckoned truth gives the same figures (the motion is on circles, which RVB extrapolates exactly)") {
    ValidationDef def = FovDef();
    def.truth = TruthMethod::kDeadReckon;
    CHECK(Reproduces(Compare(world, measured, def)));
  }
  SUBCASE("without track ids, nearest-neighbour association finds the same objects") {
    ValidationDef def = FovDef();
    def.use_track_ids = false;
    const Report n = Compare(world, measured, def);
    CHECK(n.matched_by_id == 0);
    CHECK(n.matched_by_distance == r.matched_by_id);
    CHECK(Reproduces(n));
  }
}

TEST_CASE("object validation: a wrong sensor-frame transform fails the acceptance") {
  const Drive drive;
  const int frames = 1200;
  const RecordedWorld world = drive.Record(frames * drive.sensor_period_s);
  sensors::ObjectListChain chain(AcceptanceDef());
  const auto measured = drive.Measure(chain, frames, 7);
  REQUIRE(Reproduces(Compare(world, measured, FovDef())));

  SUBCASE("the mount's 5 deg yaw ignored") {
    auto wrong = measured;
    for (auto& f : wrong) f.mount.orientation = Quat::Identity();
    CHECK_FALSE(Reproduces(Compare(world, wrong, FovDef())));
  }
  SUBCASE("the mount's lever arm ignored") {
    auto wrong = measured;
    for (auto& f : wrong) f.mount.position_m = Vec3::Zero();
    CHECK_FALSE(Reproduces(Compare(world, wrong, FovDef())));
  }
  SUBCASE("the ego's pose taken one broadcast late (it moved 0.75 m and turned 0.3 deg)") {
    auto wrong = measured;
    for (auto& f : wrong) f.stamp_ns += SToNs(drive.world_period_s);
    const Report r = Compare(world, wrong, FovDef());
    CHECK_FALSE(Reproduces(r));
  }
  SUBCASE("the ego's turn ignored (heading held at its start)") {
    RecordedWorld straight;
    const int n = static_cast<int>(frames * drive.sensor_period_s / drive.world_period_s) + 2;
    for (int i = 0; i <= n; ++i) {
      const double t = i * drive.world_period_s;
      protocol::WorldState w;
      w.sim_time_ns = SToNs(t);
      w.keyframe = true;
      auto ego = StateOn(kEgo, drive.ego, t);
      ego.kinematics.pose.orientation = Quat(Eigen::AngleAxisd(kPi / 2, Vec3::UnitZ()));
      ego.kinematics.angular_velocity_radps = Vec3::Zero();
      w.entities.push_back(ego);
      for (const auto& [id, c] : drive.others) w.entities.push_back(StateOn(id, c, t));
      straight.Add(w);
    }
    CHECK_FALSE(Reproduces(Compare(straight, measured, FovDef())));
  }
}

TEST_CASE("object validation: false positives are counted by range bin, per frame and as a fraction") {
  // A parked ego at the origin looking east; three parked cars; the sensor reports them exactly, plus
  // per frame two false positives in the region, one beyond the last bin, one outside the azimuth, and
  // one object without a track id next to a car.
  RecordedWorld world;
  for (int i = 0; i <= 100; ++i) {
    protocol::WorldState w;
    w.sim_time_ns = SToNs(i * 0.1);
    w.keyframe = true;
    protocol::EntityState ego;
    ego.id = kEgo;
    ego.kind = protocol::EntityKind::kCar;
    ego.kinematics.stamp_ns = w.sim_time_ns;
    w.entities.push_back(ego);
    for (auto [id, x, y, kind] : {std::tuple{201, 15.0, 0.0, protocol::EntityKind::kCar},
                                  {202, 35.0, 3.0, protocol::EntityKind::kTruck},
                                  {203, 50.0, -3.0, protocol::EntityKind::kPedestrian}}) {
      protocol::EntityState e;
      e.id = static_cast<uint64_t>(id);
      e.kind = kind;
      e.kinematics.stamp_ns = w.sim_time_ns;
      e.kinematics.pose.position_m = Vec3(x, y, 0);
      w.entities.push_back(e);
    }
    world.Add(w);
  }
  auto centre = [](double x, double y) { return Vec3(x + 0.3 * 4.5, y, 0.75); };  // default box 4.5 x 1.8 x 1.5
  std::vector<SensorFrame> frames;
  const int n = 1000;
  for (int i = 0; i < n; ++i) {
    SensorFrame f;
    f.stamp_ns = SToNs(0.005 + i * 0.0099);
    f.ego_id = kEgo;
    f.objects = {
        {201, centre(15, 0), ObjectClass::kCar},
        {202, centre(35, 3), ObjectClass::kCar},              // a truck reported as a car
        {0, centre(50, -3) + Vec3(0.4, 0.3, 0), ObjectClass::kPedestrian},  // no id: associated by distance
        {0, Vec3(30, 10, 0), ObjectClass::kCar},              // false positive, 20-40 m
        {0, Vec3(60, -20, 0), std::nullopt},                  // false positive, 40-80 m, no class
        {0, Vec3(100, 0, 0), ObjectClass::kCar},              // beyond 80 m: not evaluated
        {0, Vec3(10, 30, 0), ObjectClass::kCar},              // azimuth 72 deg: not evaluated
    };
    frames.push_back(f);
  }
  const Report r = Compare(world, frames, FovDef());
  MESSAGE(FormatTable(r, "fp", "objects"));
  CHECK(r.frames == n);
  CHECK(r.reported == 7u * n);
  CHECK(r.all.truth == 3u * n);
  CHECK(r.all.detection.value == 1.0);
  CHECK(r.matched_by_id == 2u * n);
  CHECK(r.matched_by_distance == 1u * n);
  CHECK(r.outside_region == 2u * n);
  CHECK(r.all.false_positives == 2u * n);
  CHECK(r.all.false_positives_per_frame.value == doctest::Approx(2.0));
  CHECK(r.all.false_positives_per_frame.lower < 2.0);
  CHECK(r.all.false_positives_per_frame.upper > 2.0);
  CHECK(r.false_positive_fraction.value == doctest::Approx(2.0 / 5.0));
  REQUIRE(r.by_range.size() == 4);
  CHECK(r.by_range[0].figures.false_positives == 0);
  CHECK(r.by_range[1].figures.false_positives == 0);
  CHECK(r.by_range[2].figures.false_positives == 1u * n);
  CHECK(r.by_range[3].figures.false_positives == 1u * n);
  CHECK(r.by_range[3].figures.false_positives_per_frame.value == doctest::Approx(1.0));
  // The pedestrian's offset shows as its bias; the exact ones have none.
  CHECK(r.by_range[3].figures.error.mean_x_m == doctest::Approx(0.4));
  CHECK(r.by_range[3].figures.error.mean_y_m == doctest::Approx(0.3));
  CHECK(r.by_range[1].figures.error.rmse_m == doctest::Approx(0.0));
  // Classes: truth rows for car, truck, pedestrian; false positives by reported class (car; none -> unclassified).
  std::map<ObjectClass, Figures> by;
  for (const auto& c : r.by_class) by[c.object_class] = c.figures;
  CHECK(by.at(ObjectClass::kCar).truth == 1u * n);
  CHECK(by.at(ObjectClass::kCar).false_positives == 1u * n);
  CHECK(by.at(ObjectClass::kTruck).class_correct.value == 0.0);
  CHECK(by.at(ObjectClass::kPedestrian).class_correct.value == 1.0);
  CHECK(by.at(ObjectClass::kUnclassified).truth == 0);
  CHECK(by.at(ObjectClass::kUnclassified).false_positives == 1u * n);
}

TEST_CASE("object validation: a frame whose ego is not in the recorded world is skipped and counted") {
  RecordedWorld world;
  protocol::WorldState w;
  w.sim_time_ns = SToNs(1.0);
  w.entities.push_back(StateOn(kEgo, Circle{}, 1.0));
  world.Add(w);
  std::vector<SensorFrame> frames(2);
  frames[0].ego_id = kEgo;
  frames[0].stamp_ns = SToNs(0.5);  // before the ego's first state
  frames[1].ego_id = 77;            // another vehicle
  frames[1].stamp_ns = SToNs(1.0);
  const Report r = Compare(world, frames, ValidationDef{});
  CHECK(r.frames == 0);
  CHECK(r.frames_without_ego == 2);
}

TEST_CASE("object validation: Wilson, Garwood and chi-square 95 % intervals match their reference values") {
  // Wilson score interval of 90 / 100.
  const Rate b = BinomialRate(90, 100);
  CHECK(b.value == doctest::Approx(0.9));
  CHECK(b.lower == doctest::Approx(0.8256).epsilon(1e-3));
  CHECK(b.upper == doctest::Approx(0.9448).epsilon(1e-3));
  CHECK(BinomialRate(0, 50).lower == 0.0);
  CHECK(BinomialRate(50, 50).upper == 1.0);
  CHECK(std::isnan(BinomialRate(0, 0).value));
  // Garwood interval of 10 events: 4.7954 .. 18.3904 (chi-square quantiles); per 5 frames.
  const Rate p = PoissonRate(10, 5);
  CHECK(p.value == doctest::Approx(2.0));
  CHECK(p.lower * 5 == doctest::Approx(4.7954).epsilon(1e-4));
  CHECK(p.upper * 5 == doctest::Approx(18.3904).epsilon(1e-4));
  CHECK(PoissonRate(0, 10).lower == 0.0);
  CHECK(PoissonRate(0, 10).upper * 10 == doctest::Approx(3.6889).epsilon(1e-4));
  CHECK(PoissonRate(1, 1).lower == doctest::Approx(0.025318).epsilon(1e-4));  // exact even for tiny counts
  CHECK(PoissonRate(1, 1).upper == doctest::Approx(5.5716).epsilon(1e-4));
  // The sigma interval of 2 samples (1 dof): chi2(1) 0.025 / 0.975 = 0.000982 / 5.0239.
  Validator v(ValidationDef{});
  SensorFrame f;
  f.objects = {{1, Vec3(5.1, 0, 0), ObjectClass::kCar}, {2, Vec3(6.9, 0, 0), ObjectClass::kCar}};
  v.Add(f, {TruthObject{1, ObjectClass::kCar, Vec3(5, 0, 0)}, TruthObject{2, ObjectClass::kCar, Vec3(7, 0, 0)}});
  const ErrorStats e = v.Finish().all.error;
  CHECK(e.sigma_x_m == doctest::Approx(std::sqrt(0.02)));
  CHECK(e.sigma_x_lower_m == doctest::Approx(std::sqrt(0.02 / 5.0239)).epsilon(1e-3));
  CHECK(e.sigma_x_upper_m == doctest::Approx(std::sqrt(0.02 / 0.000982)).epsilon(1e-3));
}

TEST_CASE("object validation: bins, gate and field of view are checked") {
  ValidationDef d;
  CHECK(ValidateValidationDef(d).empty());
  d.range_bins_m = {0, 20, 10};
  CHECK(ValidateValidationDef(d).find("increase") != std::string::npos);
  d.range_bins_m = {5};
  CHECK_FALSE(ValidateValidationDef(d).empty());
  d = ValidationDef{};
  d.gate_m = 0;
  CHECK(ValidateValidationDef(d).find("gate") != std::string::npos);
  d = ValidationDef{};
  d.azimuth_half_rad = 4;
  CHECK_FALSE(ValidateValidationDef(d).empty());
}

TEST_CASE("object validation: radar detections keep their entity ids, positions and mapped classes") {
  protocol::RadarScan scan;
  scan.header.stamp_ns = 42;
  scan.header.entity_id = kEgo;
  scan.header.mount_position_m = Vec3(3.7, 0, 0.5);
  protocol::RadarDetection d;
  d.entity_id = 17;
  d.x_m = 20;
  d.y_m = -1;
  d.object_class = 3;  // ARS 408 pedestrian
  scan.detections.push_back(d);
  d.false_positive = true;  // a false positive's id is never trusted
  d.entity_id = 18;
  d.object_class = 6;
  scan.detections.push_back(d);
  const SensorFrame f = FrameOf(scan);
  CHECK(f.stamp_ns == 42);
  CHECK(f.ego_id == kEgo);
  CHECK(f.mount.position_m == Vec3(3.7, 0, 0.5));
  REQUIRE(f.objects.size() == 2);
  CHECK(f.objects[0].track_id == 17);
  CHECK(f.objects[0].position_m == Vec3(20, -1, 0));
  CHECK(f.objects[0].reported_class == ObjectClass::kPedestrian);
  CHECK(f.objects[1].track_id == 0);
  CHECK(f.objects[1].reported_class == ObjectClass::kUnclassified);
}

TEST_CASE("object validation: CSVs have one row per bin plus all, one per class, and the summary's columns") {
  Validator v(ValidationDef{});
  SensorFrame f;
  f.objects = {{1, Vec3(5.1, 0, 0), ObjectClass::kCar}};
  v.Add(f, {TruthObject{1, ObjectClass::kCar, Vec3(5, 0, 0)}, TruthObject{2, ObjectClass::kTruck, Vec3(30, 0, 0)}});
  const Report r = v.Finish();
  const std::string range = ByRangeCsv(r), cls = ByClassCsv(r), sum = SummaryCsv(r, "front", "objects");
  CHECK(std::count(range.begin(), range.end(), '\n') == 1 + 4 + 1);
  CHECK(range.find("\n0-10,0,10,1,1,1,") != std::string::npos);
  CHECK(range.find("\n20-40,20,40,1,0,0,") != std::string::npos);
  CHECK(range.find("\nall,0,80,2,1,0.5,") != std::string::npos);
  CHECK(std::count(cls.begin(), cls.end(), '\n') == 1 + 2);
  CHECK(cls.find("\ncar,1,1,1,") != std::string::npos);
  CHECK(cls.find("\ntruck,1,0,0,") != std::string::npos);
  CHECK(std::count(sum.begin(), sum.end(), '\n') == 2);
  CHECK(sum.find("sensor,kind,frames,") == 0);
  CHECK(sum.find("\nfront,objects,1,0,1,1,0,0,2,1,0.5,") != std::string::npos);
}
