// Lidar model (sensors/src/lidar.cpp) and its Embree scene (sensors/src/scene.cpp).
#include "platoon/point_record.hpp"
#include "platoon/sensors/fast_exp.hpp"
#include "platoon/sensors/lidar.hpp"
#include "platoon/sensors/scene.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numbers>
#include <random>
#include <vector>

using namespace platoon;
using namespace platoon::sensors;

namespace {

constexpr double kLidarTestDeg = std::numbers::pi / 180.0;

// Pose of a wall box whose front face is the plane n.p = distance_m, n = (cos yaw, sin yaw, 0).
Pose WallPose(double distance_m, double yaw_rad, double half_thickness_m) {
  Pose p;
  p.position_m = Vec3(std::cos(yaw_rad), std::sin(yaw_rad), 0.0) * (distance_m + half_thickness_m);
  p.orientation = Quat(Eigen::AngleAxisd(yaw_rad, Vec3::UnitZ()));
  return p;
}

// One horizontal channel, no motion distortion, no range noise unless a test asks for it.
LidarDef FanDef(double half_fov_deg, double resolution_deg) {
  LidarDef d = IbeoLuxDef();
  d.channel_elevations_rad = {0.0};
  d.azimuth_min_rad = -half_fov_deg * kLidarTestDeg;
  d.azimuth_max_rad = half_fov_deg * kLidarTestDeg;
  d.azimuth_resolution_rad = resolution_deg * kLidarTestDeg;
  d.clockwise = false;
  d.max_range_m = 1000.0;
  d.range_noise_k = 0.0;
  // Sub-rays off a flat wall lengthen the averaged range by ~(1 - cos(div/2)); tests that need exact
  // geometry use the central ray only, the SNR and echo tests switch sub-rays back on.
  d.divergence_sampling = DivergenceSampling::kCentre;
  return d;
}

constexpr uint32_t kConcrete = 2;

}  // namespace

TEST_CASE("lidar scene: box hit returns distance, outward normal and tags, dynamic boxes re-pose") {
  Scene scene;
  scene.AddBox(WallPose(10.0, 0.0, 0.5), Vec3(0.5, 5, 5), SurfaceTag{2, 7, 3});
  const DynamicId car = scene.AddDynamicBox(Vec3(2.3, 0.9, 0.75), SurfaceTag{3, 42, 1},
                                            Pose{Vec3(5.0, 0.0, 0.0), Quat::Identity()});
  scene.Commit();

  Hit h = scene.Intersect(Vec3::Zero(), Vec3::UnitX(), 100.0);
  REQUIRE(h.valid);
  CHECK(h.distance_m == doctest::Approx(5.0 - 2.3).epsilon(1e-6));
  CHECK(h.tag.entity_id == 42);
  CHECK(h.normal.isApprox(-Vec3::UnitX(), 1e-6));

  // Moving the car sideways uncovers the wall behind it.
  scene.SetDynamicPose(car, Pose{Vec3(5.0, 3.0, 0.0), Quat(Eigen::AngleAxisd(0.3, Vec3::UnitZ()))});
  scene.Commit();
  h = scene.Intersect(Vec3::Zero(), Vec3(2.0, 0.0, 0.0), 100.0);  // direction need not be unit
  REQUIRE(h.valid);
  CHECK(h.distance_m == doctest::Approx(10.0).epsilon(1e-6));
  CHECK(h.tag.entity_id == 7);
  CHECK(h.tag.material_id == 2);
  CHECK(h.tag.class_id == 3);

  // Rotated dynamic box: the world normal follows the instance orientation.
  h = scene.Intersect(Vec3(5.0, 0.0, 0.0), Vec3::UnitY(), 100.0);
  REQUIRE(h.valid);
  CHECK(h.tag.entity_id == 42);
  CHECK(h.normal.dot(-Vec3::UnitY()) > 0.9);
  CHECK(h.normal.norm() == doctest::Approx(1.0));

  // Miss within tmax; batched casting equals single casting.
  CHECK_FALSE(scene.Intersect(Vec3::Zero(), Vec3::UnitX(), 9.0).valid);
  std::vector<Ray> rays{{Vec3::Zero(), Vec3::UnitX(), 100.0}, {Vec3::Zero(), -Vec3::UnitX(), 100.0}};
  std::vector<Hit> hits(rays.size());
  scene.IntersectBatch(rays, hits);
  CHECK(hits[0].valid);
  CHECK(hits[0].distance_m == doctest::Approx(10.0).epsilon(1e-6));
  CHECK_FALSE(hits[1].valid);

  // Packets (rtcIntersect16) give bit-identical results to single rays, for any batch length.
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  rays.clear();
  for (int i = 0; i < 1000; ++i)
    rays.push_back({Vec3(u(rng), u(rng), u(rng)), Vec3(1.0, 2.0 * u(rng), 0.5 * u(rng)), 8.0 + 4.0 * (i % 3)});
  rays.push_back({Vec3::Zero(), Vec3::Zero(), 10.0});  // degenerate direction: no hit
  hits.assign(rays.size(), Hit{});
  scene.IntersectBatch(rays, hits);
  int n_hits = 0;
  for (size_t i = 0; i < rays.size(); ++i) {
    const Hit one = scene.Intersect(rays[i].origin_m, rays[i].direction, rays[i].tmax_m);
    REQUIRE(one.valid == hits[i].valid);
    if (!one.valid) continue;
    ++n_hits;
    CHECK(one.distance_m == hits[i].distance_m);
    CHECK(one.normal == hits[i].normal);
    CHECK(one.tag.entity_id == hits[i].tag.entity_id);
  }
  CHECK(n_hits > 200);
  CHECK_FALSE(hits.back().valid);
}

TEST_CASE("lidar: flat wall at a known distance and angle gives the configured mean range and sigma") {
  const double distance_m = 20.0, yaw_rad = 30.0 * kLidarTestDeg;
  Scene scene;
  scene.AddBox(WallPose(distance_m, yaw_rad, 0.1), Vec3(0.1, 60, 60), SurfaceTag{kConcrete, 1, 1});
  scene.Commit();

  LidarDef def = FanDef(10.0, 0.1);
  def.range_resolution_m = 0.04;
  def.range_noise_k = 0.5;  // sigma = 2 cm
  const double sigma_m = def.range_noise_k * def.range_resolution_m;
  REQUIRE(def.Validate().empty());

  std::mt19937_64 rng(1234);
  double sum = 0.0, sum2 = 0.0;
  int n = 0;
  for (int scan = 0; scan < 30; ++scan) {
    const auto pts = Scan(scene, Pose{}, Vec3::Zero(), Vec3::Zero(), def, rng);
    REQUIRE(pts.size() == static_cast<size_t>(def.BeamCount()));  // sub-rays on one wall merge: one echo each
    for (const auto& p : pts) {
      const double az = std::atan2(p.y_m, p.x_m);
      const double incidence = az - yaw_rad;
      const double expected = distance_m / std::cos(incidence);
      const double e = p.RangeM() - expected;
      sum += e;
      sum2 += e * e;
      ++n;
      CHECK(p.echo == 0);
      // Reported SNR is eq. 2 at this range and incidence (sub-ray spread costs < 0.1 %).
      CHECK(p.snr == doctest::Approx(LidarSnr(def, 0.3, incidence, expected)).epsilon(2e-3));
    }
  }
  const double mean = sum / n;
  const double sd = std::sqrt(sum2 / n - mean * mean);
  MESSAGE("wall at 20 m / 30 deg: ", n, " points, mean error ", mean * 1e3, " mm, sigma ", sd * 1e3,
          " mm (configured ", sigma_m * 1e3, " mm)");
  CHECK(std::abs(mean) < 4.0 * sigma_m / std::sqrt(n) + 1e-4);
  CHECK(sd == doctest::Approx(sigma_m).epsilon(0.05));
}

TEST_CASE("lidar: returns vanish where the closed-form SNR = 5 distance says, within 1 %") {
  for (const RangeLaw law : {RangeLaw::kLambertianD2, RangeLaw::kSeedD3}) {
    for (const uint32_t material : {1u, kConcrete, 4u}) {
      LidarDef def = FanDef(0.0, 0.25);  // one beam on the boresight, 3 sub-rays
      def.divergence_sampling = DivergenceSampling::kElevationPair;
      def.range_law = law;
      def.kind = ScanKind::kFlash;
      REQUIRE(def.BeamCount() == 1);
      REQUIRE(def.snr_threshold == 5.0);
      const double reflectance = def.materials[material].reflectance;
      const double r_max = MaxDetectionRangeM(def, reflectance, 0.0);
      REQUIRE(r_max > 10.0);
      CHECK(LidarSnr(def, reflectance, 0.0, r_max) == doctest::Approx(5.0).epsilon(1e-9));

      // Move the wall outward in 0.1 % steps and record the first distance without a return.
      Scene scene;
      const DynamicId wall = scene.AddDynamicBox(Vec3(0.1, 80, 80), SurfaceTag{material, 1, 1}, Pose{});
      std::mt19937_64 rng(7);
      double vanished_m = 0.0;
      for (int step = 0; step <= 200; ++step) {
        const double d = r_max * (0.9 + 0.001 * step);
        scene.SetDynamicPose(wall, WallPose(d, 0.0, 0.1));
        scene.Commit();
        if (Scan(scene, Pose{}, Vec3::Zero(), Vec3::Zero(), def, rng).empty()) {
          vanished_m = d;
          break;
        }
      }
      MESSAGE(RangeLawName(law), " rho ", reflectance, ": closed form ", r_max, " m, returns vanish at ",
              vanished_m, " m");
      REQUIRE(vanished_m > 0.0);
      CHECK(std::abs(vanished_m - r_max) / r_max < 0.01);
    }
  }
}

TEST_CASE("lidar: the transmission's exponential is within 1 ulp of std::exp for every x <= 0") {
  auto ulps = [](double a, double b) {  // distance in units in the last place of b (b > 0)
    return std::abs(a - b) / (std::nextafter(b, 2.0 * b + 1.0) - b);
  };
  CHECK(ExpNonPositive(0.0) == 1.0);
  CHECK(ExpNonPositive(-0.0) == 1.0);
  CHECK(ExpNonPositive(-708.0) == doctest::Approx(std::exp(-708.0)).epsilon(1e-15));
  // Held at e^-708 below it: never zero, never subnormal.
  CHECK(ExpNonPositive(-1000.0) == ExpNonPositive(-708.0));
  CHECK(std::isnormal(ExpNonPositive(-1e300)));
  // 10^6 arguments over every scale a lidar meets (alpha d from 1e-12 to 708), and the multiples of
  // ln 2 / 2 where the range reduction switches k.
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  double worst = 0.0, worst_x = 0.0;
  for (int i = 0; i < 1'000'000; ++i) {
    const double x = i % 2 ? -708.0 * unit(rng) : -std::pow(10.0, -12.0 + 14.85 * unit(rng));
    const double u = ulps(ExpNonPositive(x), std::exp(x));
    if (u > worst) worst = u, worst_x = x;
  }
  for (int j = 1; j < 2000; ++j)
    for (const double eps : {-1e-12, 0.0, 1e-12}) {
      const double x = -0.5 * std::numbers::ln2 * j + eps;
      if (x > 0.0) continue;
      const double u = ulps(ExpNonPositive(x), std::exp(x));
      if (u > worst) worst = u, worst_x = x;
    }
  MESSAGE("ExpNonPositive: worst ", worst, " ulp at x = ", worst_x);
  CHECK(worst <= 1.0);
}

TEST_CASE("lidar: a one-ray beam reports eq. 2's SNR at its range, in clear air and in fog, for both range laws") {
  // The batched per-ray physics (transmission, received power, background) against LidarSnr's closed
  // form, evaluated in double at the reported range: float rounding of the point leaves about 1e-6.
  int checked = 0;
  for (const RangeLaw law : {RangeLaw::kLambertianD2, RangeLaw::kSeedD3}) {
    for (const double alpha : {2.0e-4, 0.03, 0.2}) {
      for (const double distance_m : {5.0, 20.0, 60.0}) {
        LidarDef def = FanDef(0.0, 0.25);  // one beam on the boresight, the central ray only
        def.range_law = law;
        def.extinction_coefficient_per_m = alpha;
        def.kind = ScanKind::kFlash;
        REQUIRE(def.Validate().empty());
        REQUIRE(def.RaysPerBeam() == 1);
        Scene scene;
        scene.AddBox(WallPose(distance_m, 0.0, 0.1), Vec3(0.1, 40, 40), SurfaceTag{kConcrete, 1, 1});
        scene.Commit();
        std::mt19937_64 rng(3);
        const auto pts = Scan(scene, Pose{}, Vec3::Zero(), Vec3::Zero(), def, rng);
        const double reflectance = def.materials[kConcrete].reflectance;
        const double expected_snr = LidarSnr(def, reflectance, 0.0, distance_m);
        if (expected_snr < def.snr_threshold) {  // far walls in fog: below the threshold, no point
          CHECK(distance_m > 5.0);                // the near wall is seen through any of these
          CHECK(pts.empty());
          continue;
        }
        REQUIRE(pts.size() == 1);
        CHECK(pts[0].RangeM() == doctest::Approx(distance_m).epsilon(1e-6));
        CHECK(pts[0].snr == doctest::Approx(LidarSnr(def, reflectance, 0.0, pts[0].RangeM())).epsilon(2e-6));
        ++checked;
      }
    }
  }
  MESSAGE(checked, " of 18 walls detected");
  CHECK(checked >= 6);  // at least every near wall
}

TEST_CASE("lidar: a moving rotating sensor shows the expected motion distortion across the scan") {
  const double wall_x_m = 20.0, speed_mps = 20.0;
  Scene scene;
  scene.AddBox(WallPose(wall_x_m, 0.0, 0.1), Vec3(0.1, 60, 60), SurfaceTag{kConcrete, 1, 1});
  scene.Commit();
  LidarDef def = FanDef(45.0, 0.5);
  def.rotation_rate_hz = 10.0;
  const double scan_s = def.ColumnTimeOffsetS(def.ColumnCount() - 1);
  CHECK(scan_s == doctest::Approx(0.25 / 10.0));  // 90 deg of a 10 Hz revolution
  std::mt19937_64 rng(3);

  SUBCASE("linear velocity: later columns see the wall closer by v t") {
    const auto pts = Scan(scene, Pose{}, Vec3(speed_mps, 0, 0), Vec3::Zero(), def, rng);
    REQUIRE(pts.size() == static_cast<size_t>(def.ColumnCount()));
    for (const auto& p : pts) CHECK(p.x_m == doctest::Approx(wall_x_m - speed_mps * p.time_offset_s).epsilon(1e-5));
    const double spread_m = pts.front().x_m - pts.back().x_m;
    MESSAGE("20 m/s, 90 deg at 10 Hz: wall x spread across the scan ", spread_m, " m (v T = ", speed_mps * scan_s, ")");
    CHECK(spread_m == doctest::Approx(speed_mps * scan_s).epsilon(1e-3));
  }
  SUBCASE("yaw rate: each column looks along its azimuth plus the yaw turned so far") {
    const double yaw_rate = 1.0;  // rad/s
    const auto pts = Scan(scene, Pose{}, Vec3::Zero(), Vec3(0, 0, yaw_rate), def, rng);
    REQUIRE(pts.size() == static_cast<size_t>(def.ColumnCount()));
    for (const auto& p : pts) {
      const double az = std::atan2(p.y_m, p.x_m);
      const double expected_range = wall_x_m / std::cos(az + yaw_rate * p.time_offset_s);
      CHECK(p.RangeM() == doctest::Approx(expected_range).epsilon(1e-5));
    }
  }
  SUBCASE("flash sensor: every beam at t = 0, no distortion") {
    def.kind = ScanKind::kFlash;
    const auto pts = Scan(scene, Pose{}, Vec3(speed_mps, 0, 0), Vec3::Zero(), def, rng);
    for (const auto& p : pts) {
      CHECK(p.time_offset_s == 0.0f);
      CHECK(p.x_m == doctest::Approx(wall_x_m).epsilon(1e-5));
    }
  }
}

TEST_CASE("lidar: divergence sub-rays at an edge give two echoes, nearest first") {
  Scene scene;
  // Near box covers y >= 0.05 m at x = 10 m; the far wall at x = 20 m fills the rest of the beam.
  Pose near;
  near.position_m = Vec3(10.5, 2.55, 0.0);
  scene.AddBox(near, Vec3(0.5, 2.5, 2.0), SurfaceTag{3, 11, 1});
  scene.AddBox(WallPose(20.0, 0.0, 0.1), Vec3(0.1, 60, 60), SurfaceTag{kConcrete, 22, 2});
  scene.Commit();

  LidarDef def = FanDef(0.0, 0.25);
  def.divergence_sampling = DivergenceSampling::kAzimuthPair;
  def.beam_divergence_h_rad = 2.0 * kLidarTestDeg;  // +1 deg sub-ray reaches y = 0.17 m at 10 m
  def.echo_merge_distance_m = 0.5;
  REQUIRE(def.RaysPerBeam() == 3);
  std::mt19937_64 rng(5);
  auto pts = Scan(scene, Pose{}, Vec3::Zero(), Vec3::Zero(), def, rng);
  REQUIRE(pts.size() == 2);
  CHECK(pts[0].echo == 0);
  CHECK(pts[0].entity_id == 11);
  CHECK(pts[0].RangeM() == doctest::Approx(10.0 / std::cos(1.0 * kLidarTestDeg)).epsilon(1e-5));
  CHECK(pts[1].echo == 1);
  CHECK(pts[1].entity_id == 22);
  CHECK(pts[1].RangeM() == doctest::Approx(0.5 * (20.0 + 20.0 / std::cos(1.0 * kLidarTestDeg))).epsilon(1e-5));
  // Partial illumination: the near echo carries 1 of 3 sub-rays' power, the far one 2 of 3 (eq. 3, d^2 law).
  const double a = def.extinction_coefficient_per_m, c1 = std::cos(1.0 * kLidarTestDeg);
  auto power = [&](double rho, double cos_i, double d) { return rho * cos_i * std::exp(-2 * a * d) / (d * d); };
  const double near_w = power(0.5, c1, 10.0 / c1);
  const double far_w = power(0.3, 1.0, 20.0) + power(0.3, c1, 20.0 / c1);
  CHECK(pts[0].intensity_w / pts[1].intensity_w == doctest::Approx(near_w / far_w).epsilon(1e-4));
  for (const auto& p : pts) CHECK(p.ring == 0);
  // Return types name first and last; each echo's calibrated reflectivity is that of the beam fraction it
  // fills (1/3 of car paint 0.5 at cos 1 deg; 2/3 of concrete 0.3), as a real sensor reports an edge.
  CHECK(pts[0].return_type == static_cast<uint8_t>(point_record::ReturnType::kFirst));
  CHECK(pts[1].return_type == static_cast<uint8_t>(point_record::ReturnType::kLast));
  CHECK(pts[0].reflectivity == std::lround(100.0 * 0.5 * c1 / 3.0));
  CHECK(std::abs(pts[1].reflectivity - 100.0 * 0.3 * 2.0 / 3.0) <= 1.0);

  // A merge distance beyond the depth gap fuses both into one averaged echo.
  def.echo_merge_distance_m = 15.0;
  pts = Scan(scene, Pose{}, Vec3::Zero(), Vec3::Zero(), def, rng);
  REQUIRE(pts.size() == 1);
  CHECK(pts[0].echo == 0);
  CHECK(pts[0].return_type == static_cast<uint8_t>(point_record::ReturnType::kOnly));
  // Centre-only sampling cannot see the near box at all.
  def.divergence_sampling = DivergenceSampling::kCentre;
  pts = Scan(scene, Pose{}, Vec3::Zero(), Vec3::Zero(), def, rng);
  REQUIRE(pts.size() == 1);
  CHECK(pts[0].entity_id == 22);
}

TEST_CASE("lidar: a scan is a deterministic function of the seed") {
  Scene scene;
  std::vector<Vec3> ground{{-200, -200, -1.8}, {200, -200, -1.8}, {200, 200, -1.8}, {-200, 200, -1.8}};
  std::vector<std::array<uint32_t, 3>> tris{{0, 1, 2}, {0, 2, 3}};
  scene.AddMesh(ground, tris, SurfaceTag{1, 0, 0});
  for (int i = 0; i < 20; ++i) {
    const double a = i * 0.31;
    scene.AddDynamicBox(Vec3(2.3, 0.9, 0.75), SurfaceTag{3, 100u + i, 1},
                        Pose{Vec3(15 * std::cos(a), 15 * std::sin(a), -1.0), Quat(Eigen::AngleAxisd(a, Vec3::UnitZ()))});
  }
  scene.Commit();
  const LidarDef def = Vlp16Def();
  const Pose start{Vec3(0.5, 0.2, 0.0), Quat::Identity()};
  auto run = [&](uint64_t seed) {
    std::mt19937_64 rng(seed);
    return Scan(scene, start, Vec3(10, 0, 0), Vec3(0, 0, 0.2), def, rng);
  };
  const auto a = run(42), b = run(42), c = run(43);
  REQUIRE(a.size() > 1000);
  REQUIRE(a.size() == b.size());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(LidarPoint)) == 0);
  REQUIRE(a.size() == c.size());  // detection does not depend on the noise draws
  CHECK(std::memcmp(a.data(), c.data(), a.size() * sizeof(LidarPoint)) != 0);
  bool saw_car = false, saw_ground = false;
  for (const auto& p : a) (p.class_id == 1 ? saw_car : saw_ground) = true;
  CHECK(saw_car);
  CHECK(saw_ground);
}

TEST_CASE("lidar: presets validate and range law names round-trip") {
  for (const LidarDef& d : {DefaultLidarDef(), IbeoLuxDef(), ValeoScalaDef(), Vlp16Def(), Hdl64Def(), Os1_128Def()})
    CHECK(d.Validate().empty());
  CHECK(IbeoLuxDef().ColumnCount() == 441);
  CHECK(IbeoLuxDef().channel_elevations_rad.size() == 4);
  CHECK(ValeoScalaDef().ColumnCount() == 581);
  CHECK(Hdl64Def().channel_elevations_rad.size() == 64);
  CHECK(Os1_128Def().ColumnCount() == 1024);
  CHECK(Vlp16Def().ColumnCount() == 1800);
  CHECK(ParseRangeLaw("seed_d3") == RangeLaw::kSeedD3);
  CHECK(ParseRangeLaw(RangeLawName(RangeLaw::kLambertianD2)) == RangeLaw::kLambertianD2);
  CHECK_FALSE(ParseRangeLaw("d4").has_value());
  LidarDef bad = IbeoLuxDef();
  bad.rotation_rate_hz = -5;
  CHECK(bad.Validate().find("rotation_rate_hz") != std::string::npos);
}

TEST_CASE("lidar scene: SoA packets give the distances, incidence and tags of single rays") {
  Scene scene;
  scene.AddBox(WallPose(10.0, 0.2, 0.5), Vec3(0.5, 5, 5), SurfaceTag{2, 7, 3});
  std::vector<Vec3> ground{{-50, -50, -1}, {50, -50, -1}, {50, 50, -1}, {-50, 50, -1}};
  std::vector<std::array<uint32_t, 3>> tris{{0, 1, 2}, {0, 2, 3}};
  scene.AddMesh(ground, tris, SurfaceTag{1, 0, 0});
  scene.AddDynamicBox(Vec3(2.3, 0.9, 0.75), SurfaceTag{3, 42, 1},
                      Pose{Vec3(5.0, 1.0, 0.0), Quat(Eigen::AngleAxisd(0.4, Vec3::UnitZ()))});
  scene.Commit();

  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<RayPacket16> packets(40);
  std::vector<Vec3> origins, dirs;
  for (size_t p = 0; p < packets.size(); ++p) {
    packets[p].count = p + 1 == packets.size() ? 7 : 16;  // a partial last packet
    for (int i = 0; i < packets[p].count; ++i) {
      const Vec3 o(u(rng), u(rng), u(rng));
      const Vec3 d = Vec3(1.0, 1.5 * u(rng), 0.5 * u(rng)).normalized();
      packets[p].org_x[i] = float(o.x()), packets[p].org_y[i] = float(o.y()), packets[p].org_z[i] = float(o.z());
      packets[p].dir_x[i] = float(d.x()), packets[p].dir_y[i] = float(d.y()), packets[p].dir_z[i] = float(d.z());
      packets[p].tmax_m[i] = 30.0f;
      origins.push_back(Vec3(packets[p].org_x[i], packets[p].org_y[i], packets[p].org_z[i]));
      dirs.push_back(Vec3(packets[p].dir_x[i], packets[p].dir_y[i], packets[p].dir_z[i]));
    }
  }
  std::vector<HitPacket16> hits(packets.size());
  scene.IntersectPackets(packets, hits);
  int n_hits = 0, n_car = 0, k = 0;
  for (size_t p = 0; p < packets.size(); ++p)
    for (int i = 0; i < packets[p].count; ++i, ++k) {
      const Hit one = scene.Intersect(origins[k], dirs[k], 30.0);
      REQUIRE(one.valid == std::isfinite(hits[p].distance_m[i]));
      if (!one.valid) continue;
      ++n_hits;
      n_car += one.tag.entity_id == 42;
      CHECK(hits[p].distance_m[i] == doctest::Approx(one.distance_m).epsilon(1e-6));
      CHECK(hits[p].cos_incidence[i] == doctest::Approx(std::abs(one.normal.dot(dirs[k].normalized()))).epsilon(1e-5));
      CHECK(hits[p].tag[i].entity_id == one.tag.entity_id);
      CHECK(hits[p].tag[i].material_id == one.tag.material_id);
    }
  CHECK(n_hits > 300);
  CHECK(n_car > 20);  // the rotated instance: its normal is turned into the world frame
}

namespace {

// Ground, 20 cars around the sensor and a wall: a scene where every lidar code path runs.
Scene StreetScene() {
  Scene scene;
  std::vector<Vec3> ground{{-200, -200, -1.8}, {200, -200, -1.8}, {200, 200, -1.8}, {-200, 200, -1.8}};
  std::vector<std::array<uint32_t, 3>> tris{{0, 1, 2}, {0, 2, 3}};
  scene.AddMesh(ground, tris, SurfaceTag{1, 0, 0});
  for (int i = 0; i < 20; ++i) {
    const double a = i * 0.31;
    scene.AddDynamicBox(Vec3(2.3, 0.9, 0.75), SurfaceTag{3, 100u + i, 1},
                        Pose{Vec3(15 * std::cos(a), 15 * std::sin(a), -1.0), Quat(Eigen::AngleAxisd(a, Vec3::UnitZ()))});
  }
  scene.AddBox(WallPose(40.0, 0.0, 0.5), Vec3(0.5, 30, 10), SurfaceTag{5, 500, 2});  // vegetation: noise x5
  scene.Commit();
  return scene;
}

}  // namespace

TEST_CASE("lidar: 1, 2 and 3 threads give bit-identical scans, with and without re-posing per block") {
  Scene scene = StreetScene();
  const Pose start{Vec3(0.5, 0.2, 0.0), Quat::Identity()};
  for (LidarDef def : {Vlp16Def(), IbeoLuxDef()}) {
    def.max_echoes = 3;
    std::vector<LidarPoint> reference;
    std::vector<double> reference_times;
    for (const int threads : {1, 2, 3}) {
      def.threads = threads;
      REQUIRE(def.Validate().empty());
      // Car 0 drives through the scan: the hook re-poses it at each block's time, on the calling thread.
      std::vector<double> times;
      const auto repose = [&](double t_s) {
        times.push_back(t_s);
        scene.SetDynamicPose(0, Pose{Vec3(12.0 + 30.0 * t_s, -4.0, -1.0), Quat::Identity()});
        scene.Commit();
      };
      scene.SetDynamicPose(0, Pose{Vec3(15.0, 0.0, -1.0), Quat::Identity()});  // as StreetScene() placed it
      scene.Commit();
      std::mt19937_64 rng(42);
      const auto plain = Scan(scene, start, Vec3(10, 0, 0), Vec3(0, 0, 0.2), def, rng);
      const auto posed = Scan(scene, start, Vec3(10, 0, 0), Vec3(0, 0, 0.2), def, rng, repose);
      REQUIRE(plain.size() > 500);
      CHECK(times.size() == static_cast<size_t>((def.ColumnCount() + 63) / 64));
      CHECK(std::is_sorted(times.begin(), times.end()));
      if (threads == 1) {
        reference = plain;
        reference.insert(reference.end(), posed.begin(), posed.end());
        reference_times = times;
        continue;
      }
      CHECK(times == reference_times);
      REQUIRE(plain.size() + posed.size() == reference.size());
      CHECK(std::memcmp(plain.data(), reference.data(), plain.size() * sizeof(LidarPoint)) == 0);
      CHECK(std::memcmp(posed.data(), reference.data() + plain.size(), posed.size() * sizeof(LidarPoint)) == 0);
      // Points come in firing order whatever the thread split.
      CHECK(std::is_sorted(posed.begin(), posed.end(),
                           [](const LidarPoint& a, const LidarPoint& b) { return a.column < b.column; }));
    }
  }
  LidarDef bad = Vlp16Def();
  bad.threads = 0;
  CHECK(bad.Validate().find("threads") != std::string::npos);
}

TEST_CASE("lidar: range noise is uncorrelated between neighbouring columns and between scans") {
  // Per-column noise streams come from (scan seed, column): neighbours and successive scans must not share draws.
  Scene scene;
  scene.AddBox(WallPose(20.0, 0.0, 0.1), Vec3(0.1, 60, 60), SurfaceTag{kConcrete, 1, 1});
  scene.Commit();
  LidarDef def = FanDef(30.0, 0.1);
  def.range_noise_k = 0.5;
  def.channel_elevations_rad = {-0.5 * kLidarTestDeg, 0.5 * kLidarTestDeg};
  const double sigma_m = def.range_noise_k * def.range_resolution_m;
  std::mt19937_64 rng(77);
  auto errors = [&] {
    const auto pts = Scan(scene, Pose{}, Vec3::Zero(), Vec3::Zero(), def, rng);
    REQUIRE(pts.size() == static_cast<size_t>(def.BeamCount()));
    std::vector<double> e;
    for (const auto& p : pts) {
      const double dir_x = p.x_m / p.RangeM();
      e.push_back((p.RangeM() - 20.0 / dir_x) / sigma_m);
    }
    return e;
  };
  const auto a = errors(), b = errors();
  auto correlation = [](const std::vector<double>& x, size_t x0, const std::vector<double>& y, size_t y0, size_t n) {
    double sxy = 0, sxx = 0, syy = 0;
    for (size_t i = 0; i < n; ++i) sxy += x[x0 + i] * y[y0 + i], sxx += x[x0 + i] * x[x0 + i], syy += y[y0 + i] * y[y0 + i];
    return sxy / std::sqrt(sxx * syy);
  };
  const size_t n = a.size() - 2;
  const double bound = 4.0 / std::sqrt(static_cast<double>(n));
  const double same_ring_next_column = correlation(a, 0, a, 2, n);  // two channels per column
  const double next_ring = correlation(a, 0, a, 1, n);
  const double next_scan = correlation(a, 0, b, 0, n);
  MESSAGE("noise correlation: next column ", same_ring_next_column, ", next ring ", next_ring, ", next scan ",
          next_scan, " (bound ", bound, ", ", n, " pairs)");
  CHECK(std::abs(same_ring_next_column) < bound);
  CHECK(std::abs(next_ring) < bound);
  CHECK(std::abs(next_scan) < bound);
}

TEST_CASE("lidar: reflectivity maps 0-100 % diffuse to 0-100 and retro-reflectors to 101-255") {
  // Values computed from the documented mapping (docs/LIDAR.md, "Calibrated reflectivity").
  CHECK(ReflectivityValue(0.0) == 0);
  CHECK(ReflectivityValue(-0.5) == 0);
  CHECK(ReflectivityValue(std::nan("")) == 0);
  CHECK(ReflectivityValue(0.004) == 0);
  CHECK(ReflectivityValue(0.006) == 1);
  CHECK(ReflectivityValue(0.1) == 10);
  CHECK(ReflectivityValue(0.8) == 80);
  CHECK(ReflectivityValue(1.0) == 100);
  CHECK(ReflectivityValue(1.0 + 1e-9) == 101);
  CHECK(ReflectivityValue(10.0) == 101 + 51);   // 154 / 3 = 51.33 counts per decade
  CHECK(ReflectivityValue(95.0) == 101 + static_cast<int>(std::floor(154.0 * std::log10(95.0) / 3.0)));
  CHECK(ReflectivityValue(1000.0) == 255);
  CHECK(ReflectivityValue(1e9) == 255);
  for (double rho = 0.0; rho < 1000.0; rho = rho * 1.01 + 1e-3)  // monotonic
    CHECK(ReflectivityValue(rho) <= ReflectivityValue(rho * 1.01 + 1e-3));
}

TEST_CASE("lidar: a 10 % and an 80 % diffuse wall read reflectivity 10 and 80 at 10 m and at 50 m") {
  for (const RangeLaw law : {RangeLaw::kLambertianD2, RangeLaw::kSeedD3}) {
    LidarDef def = FanDef(4.0, 0.25);  // 33 beams within +-4 deg: cos >= 0.9976, below half a count at 80 %
    def.range_law = law;
    def.kind = ScanKind::kFlash;
    def.range_noise_k = 0.5;  // range noise on: the calibration divides by the measured range
    def.divergence_sampling = DivergenceSampling::kElevationPair;
    def.materials = {LidarMaterial{0.2}, LidarMaterial{0.1}, LidarMaterial{0.8}};
    // Enough power that the 10 % wall is seen at 50 m under either law.
    while (MaxDetectionRangeM(def, 0.1, 4.0 * kLidarTestDeg) < 60.0) def.transmit_power_w *= 2.0;
    REQUIRE(def.Validate().empty());
    for (const uint32_t material : {1u, 2u}) {
      const double rho = def.materials[material].reflectance;
      double mean_at[2] = {}, power_at[2] = {};
      for (const int k : {0, 1}) {
        const double distance_m = k == 0 ? 10.0 : 50.0;
        Scene scene;
        scene.AddBox(WallPose(distance_m, 0.0, 0.1), Vec3(0.1, 40, 40), SurfaceTag{material, 1, 1});
        scene.Commit();
        std::mt19937_64 rng(17);
        const auto pts = Scan(scene, Pose{}, Vec3::Zero(), Vec3::Zero(), def, rng);
        CAPTURE(RangeLawName(law));
        CAPTURE(rho);
        CAPTURE(distance_m);
        REQUIRE(pts.size() == static_cast<size_t>(def.BeamCount()));
        for (const auto& p : pts) {
          CHECK(std::abs(p.reflectivity - 100.0 * rho) <= 1.0);
          mean_at[k] += p.reflectivity;
          power_at[k] += p.intensity_w;
        }
        mean_at[k] /= static_cast<double>(pts.size());
        power_at[k] /= static_cast<double>(pts.size());
      }
      // The same value at both ranges, while the received power (its own field) fell by the range law.
      CHECK(std::abs(mean_at[0] - 100.0 * rho) < 0.5);
      CHECK(std::abs(mean_at[1] - mean_at[0]) < 0.5);
      CHECK(power_at[0] / power_at[1] > (law == RangeLaw::kSeedD3 ? 100.0 : 20.0));
    }
  }
}

TEST_CASE("lidar: a retro-reflective sign reads above 100 and a white wall beside it at most 100") {
  LidarDef def = FanDef(4.0, 0.25);
  def.kind = ScanKind::kFlash;
  def.range_noise_k = 0.5;
  const std::vector<LidarMaterial> materials = DefaultLidarMaterials();
  REQUIRE(materials.size() > 6);
  REQUIRE(materials[6].retro_gain > 1.0);
  const double retro_rho = materials[6].reflectance * materials[6].retro_gain;
  for (const double distance_m : {10.0, 40.0}) {
    // The sign covers y > 0, a white wall (material 4) y < 0, both at the same distance.
    Scene scene;
    scene.AddBox(Pose{Vec3(distance_m + 0.1, 10.0, 0.0), Quat::Identity()}, Vec3(0.1, 10.0, 10.0), SurfaceTag{6, 1, 6});
    scene.AddBox(Pose{Vec3(distance_m + 0.1, -10.0, 0.0), Quat::Identity()}, Vec3(0.1, 10.0, 10.0), SurfaceTag{4, 2, 3});
    scene.Commit();
    std::mt19937_64 rng(23);
    const auto pts = Scan(scene, Pose{}, Vec3::Zero(), Vec3::Zero(), def, rng);
    size_t signs = 0, walls = 0;
    for (const auto& p : pts) {
      if (p.y_m > 0.2f && p.entity_id == 1) {
        ++signs;
        CHECK(p.reflectivity > 100);
        CHECK(std::abs(p.reflectivity - ReflectivityValue(retro_rho)) <= 1);
      } else if (p.y_m < -0.2f && p.entity_id == 2) {
        ++walls;
        CHECK(p.reflectivity <= 100);
        CHECK(std::abs(p.reflectivity - 100.0 * materials[4].reflectance) <= 1.0);
      }
    }
    CHECK(signs > 5);
    CHECK(walls > 5);
  }
}

TEST_CASE("lidar: calibrated reflectance inverts eq. 3 at normal incidence and reads darker in fog") {
  for (const RangeLaw law : {RangeLaw::kLambertianD2, RangeLaw::kSeedD3}) {
    LidarDef def = FanDef(0.0, 0.25);
    def.range_law = law;
    def.kind = ScanKind::kFlash;
    def.materials = {LidarMaterial{0.2}, LidarMaterial{0.35}};
    for (const double alpha : {kReflectivityCalibrationExtinctionPerM, 0.03}) {
      def.extinction_coefficient_per_m = alpha;
      Scene scene;
      scene.AddBox(WallPose(12.0, 0.0, 0.1), Vec3(0.1, 40, 40), SurfaceTag{1, 1, 1});
      scene.Commit();
      std::mt19937_64 rng(3);
      const auto pts = Scan(scene, Pose{}, Vec3::Zero(), Vec3::Zero(), def, rng);
      REQUIRE(pts.size() == 1);
      const double rho = CalibratedReflectance(def, pts[0].intensity_w, pts[0].RangeM());
      // In clear air the calibration's own; in fog the two-way loss beyond it: exp(-2 (alpha - alpha_cal) d).
      const double expected = 0.35 * std::exp(-2.0 * (alpha - kReflectivityCalibrationExtinctionPerM) * 12.0);
      CHECK(rho == doctest::Approx(expected).epsilon(1e-5));
      CHECK(pts[0].reflectivity == ReflectivityValue(expected));
    }
  }
  CHECK(CalibratedReflectance(DefaultLidarDef(), 0.0, 10.0) == 0.0);
  CHECK(CalibratedReflectance(DefaultLidarDef(), 1e-6, 0.0) == 0.0);
}
