// Probabilistic radar model (sensors/src/radar.cpp), with occluders from the Embree scene.
#include "platoon/sensors/radar.hpp"
#include "platoon/sensors/scene.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <vector>

using namespace platoon;
using namespace platoon::sensors;

namespace {

constexpr double kRadarTestDeg = std::numbers::pi / 180.0;
constexpr int kFrames = 10000;

// Default radar with every accuracy noise and every false positive switched off.
RadarDef QuietDef() {
  RadarDef d = DefaultRadarDef();
  d.range_sigma_m = 0.0;
  d.azimuth_sigma_rad = 0.0;
  d.range_rate_sigma_mps = 0.0;
  for (RadarClassParams& c : d.classes) c.false_positives_per_frame = 0.0;
  return d;
}

// Target of class `c` at sensor-frame (x, y) with the sensor at the world origin; `yaw_rad` turns its length axis.
RadarTarget TargetAt(double x, double y, RadarClass c = RadarClass::kCar, double yaw_rad = 0.0,
                     uint32_t id = 7) {
  RadarTarget t;
  t.entity_id = id;
  t.object_class = c;
  t.pose.position_m = Vec3(x, y, 0.0);
  t.pose.orientation = Quat(Eigen::AngleAxisd(yaw_rad, Vec3::UnitZ()));
  t.size_m = Vec3(4.5, 1.8, 1.5);
  return t;
}

}  // namespace

TEST_CASE("radar: default definition is valid and has the ARS 408 near-range shape") {
  const RadarDef d = DefaultRadarDef();
  CHECK(d.Validate().empty());
  CHECK(d.rate_hz == 20.0);
  CHECK(d.MaxRangeM(0.0) == doctest::Approx(70.0));
  CHECK(d.MaxRangeM(40.0 * kRadarTestDeg) == doctest::Approx(70.0));
  CHECK(d.MaxRangeM(-50.0 * kRadarTestDeg) == doctest::Approx(45.0));  // halfway: (70 + 20) / 2
  CHECK(d.MaxRangeM(60.0 * kRadarTestDeg) == doctest::Approx(20.0));
  CHECK(d.MaxRangeM(60.5 * kRadarTestDeg) == 0.0);
  RadarDef bad = d;
  bad.Class(RadarClass::kPedestrian).detection_probability = 1.5;
  CHECK(bad.Validate() == "radar.classes.pedestrian.detection_probability must be in [0, 1]");
}

TEST_CASE("radar: false-negative rate of a car at 30 m matches P_d = 0.9 within 5 sigma over 10^4 frames") {
  RadarDef d = QuietDef();
  d.Class(RadarClass::kCar).detection_probability = 0.9;
  d.Class(RadarClass::kPedestrian).detection_probability = 0.6;
  std::mt19937_64 rng(1);
  const std::vector<RadarTarget> targets = {TargetAt(30.0, 0.0, RadarClass::kCar, 0.0, 1),
                                            TargetAt(20.0, 10.0, RadarClass::kPedestrian, 0.0, 2)};
  int car = 0, ped = 0;
  for (int i = 0; i < kFrames; ++i) {
    for (const RadarObject& o : Measure(targets, nullptr, Pose{}, Vec3::Zero(), d, rng)) {
      car += o.entity_id == 1;
      ped += o.entity_id == 2;
    }
  }
  const auto within = [](int hits, double p) {
    const double sigma = std::sqrt(p * (1.0 - p) / kFrames);
    const double frac = static_cast<double>(hits) / kFrames;
    MESSAGE("detection fraction " << frac << " for P_d " << p << " (5 sigma = " << 5 * sigma << ")");
    return std::abs(frac - p) < 5.0 * sigma;
  };
  CHECK(within(car, 0.9));
  CHECK(within(ped, 0.6));
}

TEST_CASE("radar: false positives per frame match the Poisson means, lie in the FoV and carry no entity") {
  RadarDef d = QuietDef();
  d.Class(RadarClass::kCar).false_positives_per_frame = 0.5;
  d.Class(RadarClass::kPedestrian).false_positives_per_frame = 0.2;
  d.Class(RadarClass::kUnknown).false_positives_per_frame = 2.0;
  // Classes are reported after reclassification; keep them by switching it off for this count.
  for (RadarClassParams& c : d.classes) c.classification_range_m = 1e9;
  // Without gates and noise the reported position is the generated one, which must lie in the shape.
  d.range_resolution_m = 0.0;
  d.azimuth_resolution_rad = 0.0;
  std::mt19937_64 rng(2);
  double n_car = 0, n_ped = 0, n_unk = 0, sum_sq_unk = 0;
  bool all_in_fov = true, all_flagged = true;
  for (int i = 0; i < kFrames; ++i) {
    int unk_frame = 0;
    for (const RadarObject& o : Measure({}, nullptr, Pose{}, Vec3::Zero(), d, rng)) {
      all_flagged = all_flagged && o.is_false_positive && o.entity_id == 0;
      all_in_fov = all_in_fov && d.InFieldOfView(o.x_m, o.y_m);
      n_car += o.object_class == RadarClass::kCar;
      n_ped += o.object_class == RadarClass::kPedestrian;
      unk_frame += o.object_class == RadarClass::kUnknown;
    }
    n_unk += unk_frame;
    sum_sq_unk += unk_frame * unk_frame;
  }
  CHECK(all_flagged);
  CHECK(all_in_fov);
  // Mean count per frame: Poisson, so sigma of the mean is sqrt(lambda / N).
  const auto within = [](double total, double lambda) {
    const double mean = total / kFrames;
    MESSAGE("false positives per frame " << mean << " for mean " << lambda);
    return std::abs(mean - lambda) < 5.0 * std::sqrt(lambda / kFrames);
  };
  CHECK(within(n_car, 0.5));
  CHECK(within(n_ped, 0.2));
  CHECK(within(n_unk, 2.0));
  // Poisson: variance equals mean (sigma of the sample variance ~ sqrt((lambda + 2 lambda^2) / N)).
  const double mean_unk = n_unk / kFrames;
  const double var_unk = sum_sq_unk / kFrames - mean_unk * mean_unk;
  CHECK(std::abs(var_unk - 2.0) < 5.0 * std::sqrt((2.0 + 2.0 * 4.0) / kFrames));
}

TEST_CASE("radar: noise-free ranges are multiples of the range resolution, within half a gate of the truth") {
  RadarDef d = QuietDef();
  for (RadarClassParams& c : d.classes) c.detection_probability = 1.0;
  std::mt19937_64 rng(3);
  std::mt19937_64 placement(33);
  std::uniform_real_distribution<double> range(1.0, 69.0);
  int bad_multiple = 0, bad_distance = 0, reported = 0;
  for (int i = 0; i < kFrames; ++i) {
    const double r = range(placement);
    for (const RadarObject& o : Measure({TargetAt(r, 0.0)}, nullptr, Pose{}, Vec3::Zero(), d, rng)) {
      ++reported;
      const double gates = o.range_m / d.range_resolution_m;
      bad_multiple += std::abs(gates - std::round(gates)) > 1e-9;
      bad_distance += std::abs(o.range_m - r) > 0.5 * d.range_resolution_m + 1e-9;
    }
  }
  CHECK(reported == kFrames);
  CHECK(bad_multiple == 0);
  CHECK(bad_distance == 0);
}

TEST_CASE("radar: range accuracy noise around the gate has the configured sigma over 10^4 frames") {
  RadarDef d = DefaultRadarDef();
  for (RadarClassParams& c : d.classes) {
    c.detection_probability = 1.0;
    c.false_positives_per_frame = 0.0;
  }
  const double r_true = 30.0;
  const double gated = std::round(r_true / d.range_resolution_m) * d.range_resolution_m;
  std::mt19937_64 rng(4);
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < kFrames; ++i) {
    const double e = Measure({TargetAt(r_true, 0.0)}, nullptr, Pose{}, Vec3::Zero(), d, rng).at(0).range_m - gated;
    sum += e;
    sum_sq += e * e;
  }
  const double mean = sum / kFrames;
  const double sd = std::sqrt(sum_sq / kFrames - mean * mean);
  MESSAGE("range error mean " << mean << " m, sd " << sd << " m (sigma " << d.range_sigma_m << ")");
  CHECK(std::abs(mean) < 5.0 * d.range_sigma_m / std::sqrt(kFrames));
  // sigma of the sample sd ~ sigma / sqrt(2N).
  CHECK(std::abs(sd - d.range_sigma_m) < 5.0 * d.range_sigma_m / std::sqrt(2.0 * kFrames));
}

TEST_CASE("radar: class becomes unknown just beyond the configured distance and not before") {
  RadarDef d = QuietDef();
  for (RadarClassParams& c : d.classes) c.detection_probability = 1.0;
  std::mt19937_64 rng(5);
  struct Case {
    RadarClass c;
    double limit_m;
  };
  for (const Case& k : {Case{RadarClass::kCar, 50.0}, Case{RadarClass::kTruck, 50.0},
                        Case{RadarClass::kMotorcycle, 50.0}, Case{RadarClass::kPedestrian, 30.0},
                        Case{RadarClass::kBicycle, 30.0}}) {
    CAPTURE(RadarClassName(k.c));
    CHECK(d.Class(k.c).classification_range_m == k.limit_m);
    for (double r : {k.limit_m - 5.0, k.limit_m - 0.01, k.limit_m}) {
      const auto objs = Measure({TargetAt(r, 0.0, k.c)}, nullptr, Pose{}, Vec3::Zero(), d, rng);
      REQUIRE(objs.size() == 1);
      CHECK(objs[0].object_class == k.c);
    }
    for (double r : {k.limit_m + 0.01, k.limit_m + 5.0}) {
      const auto objs = Measure({TargetAt(r, 0.0, k.c)}, nullptr, Pose{}, Vec3::Zero(), d, rng);
      REQUIRE(objs.size() == 1);
      CHECK(objs[0].object_class == RadarClass::kUnknown);
    }
  }
}

TEST_CASE("radar: targets outside the field-of-view shape are never reported, inside always (P_d = 1)") {
  RadarDef d = QuietDef();
  for (RadarClassParams& c : d.classes) c.detection_probability = 1.0;
  std::mt19937_64 rng(6);
  std::mt19937_64 placement(66);
  std::uniform_real_distribution<double> coord(-80.0, 80.0);
  int outside_reported = 0, inside_missed = 0, inside = 0;
  for (int i = 0; i < kFrames; ++i) {
    const double x = coord(placement), y = coord(placement);
    const bool in = d.InFieldOfView(x, y);
    inside += in;
    const size_t n = Measure({TargetAt(x, y)}, nullptr, Pose{}, Vec3::Zero(), d, rng).size();
    outside_reported += !in && n > 0;
    inside_missed += in && n == 0;
  }
  MESSAGE(inside << " of " << kFrames << " random targets inside the FoV");
  CHECK(inside > 1000);
  CHECK(outside_reported == 0);
  CHECK(inside_missed == 0);
  // Edges of the shape: 57.5 m is the limit at 45 deg.
  const auto seen = [&](double r, double az_deg) {
    return !Measure({TargetAt(r * std::cos(az_deg * kRadarTestDeg), r * std::sin(az_deg * kRadarTestDeg))}, nullptr, Pose{},
                    Vec3::Zero(), d, rng).empty();
  };
  CHECK(seen(69.9, 0.0));
  CHECK_FALSE(seen(70.1, 0.0));
  CHECK(seen(69.9, -39.9));
  CHECK(seen(57.4, 45.0));
  CHECK_FALSE(seen(57.6, 45.0));
  CHECK(seen(19.9, -59.9));
  CHECK_FALSE(seen(10.0, 61.0));
  CHECK_FALSE(seen(10.0, 180.0));
}

TEST_CASE("radar: a car half hidden behind a wall has its RCS reduced by the visible fraction") {
  RadarDef d = QuietDef();
  for (RadarClassParams& c : d.classes) c.detection_probability = 1.0;
  // Car broadside at 30 m (length across the line of sight); its own box is in the scene too.
  const RadarTarget car = TargetAt(30.0, 0.0, RadarClass::kCar, 90.0 * kRadarTestDeg, 42);
  Scene scene;
  scene.AddDynamicBox(0.5 * car.size_m, SurfaceTag{0, 42, 1}, car.pose);
  // Wall at x = 15 m covering y < 0: it hides the right half of the car (cross-range s < 0).
  scene.AddBox(Pose{Vec3(15.0, -10.0, 0.0), Quat::Identity()}, Vec3(0.1, 10.0, 5.0), SurfaceTag{0, 9, 2});
  scene.Commit();
  std::mt19937_64 rng(7);

  CHECK(VisibleFraction(car, &scene, Pose{}, d) == doctest::Approx(0.5));
  auto objs = Measure({car}, &scene, Pose{}, Vec3::Zero(), d, rng);
  REQUIRE(objs.size() == 1);
  const double rcs = d.Class(RadarClass::kCar).rcs_dbsm;
  CHECK(objs[0].rcs_dbsm == doctest::Approx(rcs + 10.0 * std::log10(0.5)));
  MESSAGE("half-hidden car: RCS " << objs[0].rcs_dbsm << " dBsm (unoccluded " << rcs << ")");

  // Unoccluded (no scene, or only its own box): full RCS.
  objs = Measure({car}, nullptr, Pose{}, Vec3::Zero(), d, rng);
  REQUIRE(objs.size() == 1);
  CHECK(objs[0].rcs_dbsm == doctest::Approx(rcs));

  // Fully behind the wall: not reported.
  const RadarTarget hidden = TargetAt(30.0, -8.0, RadarClass::kCar, 90.0 * kRadarTestDeg, 43);
  CHECK(VisibleFraction(hidden, &scene, Pose{}, d) == 0.0);
  CHECK(Measure({hidden}, &scene, Pose{}, Vec3::Zero(), d, rng).empty());

  // Aspect (seed Fig. 15): seen end-on, only the width projects across the line of sight.
  objs = Measure({TargetAt(30.0, 0.0, RadarClass::kCar, 0.0)}, nullptr, Pose{}, Vec3::Zero(), d, rng);
  REQUIRE(objs.size() == 1);
  CHECK(objs[0].rcs_dbsm == doctest::Approx(rcs + 10.0 * std::log10(1.8 / 4.5)));
}

TEST_CASE("radar: range rate is the relative velocity along the line of sight, sensor pose is honoured") {
  RadarDef d = QuietDef();
  d.range_rate_resolution_mps = 0.0;
  d.azimuth_resolution_rad = 0.0;
  for (RadarClassParams& c : d.classes) c.detection_probability = 1.0;
  std::mt19937_64 rng(8);
  // Sensor at (100, 50) facing north (+y world), moving north at 5 m/s; car 30 m ahead coming at 10 m/s.
  Pose sensor{Vec3(100.0, 50.0, 0.5), Quat(Eigen::AngleAxisd(90.0 * kRadarTestDeg, Vec3::UnitZ()))};
  RadarTarget car = TargetAt(100.0, 80.0);
  car.pose.position_m.z() = 0.5;
  car.velocity_mps = Vec3(0.0, -10.0, 0.0);
  const auto objs = Measure({car}, nullptr, sensor, Vec3(0.0, 5.0, 0.0), d, rng);
  REQUIRE(objs.size() == 1);
  CHECK(objs[0].range_rate_mps == doctest::Approx(-15.0));
  CHECK(objs[0].azimuth_rad == doctest::Approx(0.0));
  CHECK(objs[0].x_m == doctest::Approx(std::round(30.0 / d.range_resolution_m) * d.range_resolution_m));
  CHECK(objs[0].orientation_rad == doctest::Approx(-90.0 * kRadarTestDeg));
}

TEST_CASE("radar: the same seed gives the same object list") {
  RadarDef d = DefaultRadarDef();
  for (RadarClassParams& c : d.classes) c.false_positives_per_frame = 0.3;
  const std::vector<RadarTarget> targets = {TargetAt(30.0, 2.0), TargetAt(20.0, -5.0, RadarClass::kPedestrian, 0, 8)};
  std::mt19937_64 a(9), b(9);
  for (int i = 0; i < 100; ++i) {
    const auto oa = Measure(targets, nullptr, Pose{}, Vec3(3, 0, 0), d, a);
    const auto ob = Measure(targets, nullptr, Pose{}, Vec3(3, 0, 0), d, b);
    REQUIRE(oa.size() == ob.size());
    for (size_t k = 0; k < oa.size(); ++k) {
      CHECK(oa[k].range_m == ob[k].range_m);
      CHECK(oa[k].azimuth_rad == ob[k].azimuth_rad);
      CHECK(oa[k].rcs_dbsm == ob[k].rcs_dbsm);
      CHECK(oa[k].object_class == ob[k].object_class);
    }
  }
}
