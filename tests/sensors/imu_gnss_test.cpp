// Tests of sensors/src/mounting.cpp, imu.cpp and gnss.cpp (figures quoted in docs/SENSORS.md).
#include "platoon/sensors/gnss.hpp"
#include "platoon/sensors/imu.hpp"
#include "platoon/sensors/mounting.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <numbers>
#include <random>
#include <string>
#include <vector>

namespace {

using platoon::KinematicState;
using platoon::Pose;
using platoon::Quat;
using platoon::Vec3;
namespace s = platoon::sensors;

constexpr double kPi = std::numbers::pi;

Quat YawPitchRoll(double yaw, double pitch, double roll) {
  return Quat(Eigen::AngleAxisd(yaw, Vec3::UnitZ()) * Eigen::AngleAxisd(pitch, Vec3::UnitY()) *
              Eigen::AngleAxisd(roll, Vec3::UnitX()));
}

// ------------------------------------------------------------------------------------------------
// Allan deviation

// Overlapping Allan deviation of a stream sampled every tau0_s, at cluster sizes `m`. One O(N) pass per
// cluster size over the cumulative sum S_k = sum_{i<k} (y_i - mean): the difference of two adjacent cluster
// means is (S_{k+2m} - 2 S_{k+m} + S_k) / m, so
//   sigma^2(m tau0) = 1 / (2 (N - 2m + 1)) * sum_k ((S_{k+2m} - 2 S_{k+m} + S_k) / m)^2.
std::vector<double> OverlappingAdev(const std::vector<double>& y, const std::vector<std::size_t>& m) {
  const std::size_t n = y.size();
  double mean = 0.0;
  for (double v : y) mean += v;
  mean /= static_cast<double>(n);
  // Removing the mean keeps the cumulative sum small, so no precision is lost at large k.
  std::vector<double> cs(n + 1, 0.0);
  for (std::size_t i = 0; i < n; ++i) cs[i + 1] = cs[i] + (y[i] - mean);

  std::vector<double> adev;
  for (std::size_t mi : m) {
    double acc = 0.0;
    const std::size_t terms = n - 2 * mi + 1;
    for (std::size_t k = 0; k < terms; ++k) {
      const double d = cs[k + 2 * mi] - 2.0 * cs[k + mi] + cs[k];
      acc += d * d;
    }
    adev.push_back(std::sqrt(acc / (2.0 * static_cast<double>(terms))) / static_cast<double>(mi));
  }
  return adev;
}

// White noise of density N plus bias random walk of strength K give sigma^2(tau) = N^2 / tau + K^2 tau / 3.
// Weighted least squares of that model on sigma^2 (weights edf / sigma^4, edf ~ T / tau), re-weighted with the
// model twice. Returns {N, K}: the -1/2 line read at tau = 1 s, and the +1/2 line read at tau = 3 s.
std::array<double, 2> FitWhiteAndRandomWalk(const std::vector<double>& tau_s, const std::vector<double>& adev,
                                            double duration_s) {
  double a = 0.0, b = 0.0;
  for (int pass = 0; pass < 3; ++pass) {
    double s11 = 0, s12 = 0, s22 = 0, r1 = 0, r2 = 0;
    for (std::size_t i = 0; i < tau_s.size(); ++i) {
      const double t = tau_s[i], v = adev[i] * adev[i];
      const double model = pass == 0 ? v : a / t + b * t;
      const double w = (duration_s / t) / (model * model);
      s11 += w / (t * t);
      s12 += w;
      s22 += w * t * t;
      r1 += w * v / t;
      r2 += w * v * t;
    }
    const double det = s11 * s22 - s12 * s12;
    a = (r1 * s22 - r2 * s12) / det;
    b = (s11 * r2 - s12 * r1) / det;
  }
  return {std::sqrt(std::max(a, 0.0)), std::sqrt(std::max(3.0 * b, 0.0))};
}

// Least-squares slope of log sigma against log tau over tau in [lo, hi].
double LogLogSlope(const std::vector<double>& tau_s, const std::vector<double>& adev, double lo, double hi) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int n = 0;
  for (std::size_t i = 0; i < tau_s.size(); ++i) {
    if (tau_s[i] < lo || tau_s[i] > hi) continue;
    const double x = std::log(tau_s[i]), yv = std::log(adev[i]);
    sx += x, sy += yv, sxx += x * x, sxy += x * yv, ++n;
  }
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

// Two simulated hours of a level IMU at rest; returns the six streams (gyro x y z, accel x y z).
std::array<std::vector<double>, 6> TwoHoursAtRest(const s::ImuDef& def, uint64_t seed) {
  const std::size_t n = static_cast<std::size_t>(2.0 * 3600.0 * def.rate_hz);
  std::mt19937_64 rng(seed);
  s::ImuState state = s::InitialImuState(def, rng);
  KinematicState rest;
  std::array<std::vector<double>, 6> out;
  for (auto& v : out) v.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    rest.stamp_ns = platoon::SToNs(static_cast<double>(i) / def.rate_hz);
    const s::ImuSample smp = s::Measure(rest, def, state, rng);
    for (int k = 0; k < 3; ++k) {
      out[k][i] = smp.angular_velocity_radps[k];
      out[3 + k][i] = smp.acceleration_mps2[k];
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// Mounting

TEST_CASE("mounting: sensor -> vehicle -> world and back is the identity to 1e-12 m") {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);  // test inputs only; not part of the model
  double worst = 0.0;
  for (int i = 0; i < 1000; ++i) {
    const s::Mounting mount{Vec3(2 * u(rng), u(rng), 1 + u(rng)), YawPitchRoll(kPi * u(rng), 1.5 * u(rng), kPi * u(rng))};
    const Pose vehicle{Vec3(1e4 * u(rng), 1e4 * u(rng), 50 * u(rng)), YawPitchRoll(kPi * u(rng), 0.2 * u(rng), 0.2 * u(rng))};
    const Vec3 p_s(50 * u(rng), 50 * u(rng), 5 * u(rng));
    worst = std::max(worst, (s::VehicleToSensor(mount, s::SensorToVehicle(mount, p_s)) - p_s).norm());
    worst = std::max(worst, (s::WorldToSensor(vehicle, mount, s::SensorToWorld(vehicle, mount, p_s)) - p_s).norm());
    // Composition T^W_S = T^W_V * T^V_S agrees with transforming point by point.
    const Pose ws = s::SensorPoseInWorld(vehicle, mount);
    worst = std::max(worst, (ws.orientation * p_s + ws.position_m - s::SensorToWorld(vehicle, mount, p_s)).norm());
  }
  MESSAGE("mounting round trip, worst error " << worst << " m");
  CHECK(worst < 1e-9);
}

TEST_CASE("mounting: eq. 1 places the sensor origin at the mount position and turns its axes") {
  const s::Mounting mount{Vec3(3.5, -0.4, 0.6), YawPitchRoll(kPi / 2, 0, 0)};  // sensor x looks left
  CHECK((s::SensorToVehicle(mount, Vec3::Zero()) - Vec3(3.5, -0.4, 0.6)).norm() < 1e-12);
  CHECK((s::SensorToVehicle(mount, Vec3(10, 0, 0)) - Vec3(3.5, 9.6, 0.6)).norm() < 1e-12);
  // As the homogeneous matrix T^V_Sensor of eq. 1.
  Eigen::Matrix4d t = Eigen::Matrix4d::Identity();
  t.topLeftCorner<3, 3>() = mount.orientation.toRotationMatrix();
  t.topRightCorner<3, 1>() = mount.position_m;
  const Eigen::Vector4d d(1.0, 2.0, 3.0, 1.0);
  CHECK(((t * d).head<3>() - s::SensorToVehicle(mount, d.head<3>())).norm() < 1e-12);
}

TEST_CASE("mounting: lever arm of a vehicle yawing at 0.5 rad/s adds w x r and w x (w x r)") {
  KinematicState v;
  v.angular_velocity_radps = Vec3(0, 0, 0.5);
  const s::Mounting mount{Vec3(2.0, 0.0, 0.0), Quat::Identity()};
  const KinematicState m = s::MountPointKinematics(v, mount);
  CHECK((m.velocity_mps - Vec3(0, 1.0, 0)).norm() < 1e-12);            // w x r = 0.5 * 2 m/s to the left
  CHECK((m.acceleration_mps2 - Vec3(-0.5, 0, 0)).norm() < 1e-12);      // -w^2 r, towards the axis
  CHECK((m.angular_velocity_radps - v.angular_velocity_radps).norm() < 1e-15);
}

TEST_CASE("mounting: mount-point velocity and acceleration match finite differences on a curving, spinning-up path") {
  // Vehicle path with varying speed, yaw rate and yaw acceleration; the mount point is off every axis.
  auto yaw = [](double t) { return 0.3 * t + 0.1 * t * t; };
  auto pos = [](double t) { return Vec3(5 * t + 0.5 * t * t, std::sin(t), 0.1 * t); };
  auto state = [&](double t) {
    KinematicState k;
    k.pose.position_m = pos(t);
    k.pose.orientation = Quat(Eigen::AngleAxisd(yaw(t), Vec3::UnitZ()));
    k.velocity_mps = Vec3(5 + t, std::cos(t), 0.1);
    k.acceleration_mps2 = Vec3(1, -std::sin(t), 0);
    k.angular_velocity_radps = Vec3(0, 0, 0.3 + 0.2 * t);
    return k;
  };
  const s::Mounting mount{Vec3(1.3, 0.4, 0.8), YawPitchRoll(0.2, 0.1, -0.1)};
  const double t = 1.7, h = 1e-3;
  auto p = [&](double tt) { return s::SensorPoseInWorld(state(tt).pose, mount).position_m; };
  const Vec3 v_fd = (p(t + h) - p(t - h)) / (2 * h);
  const Vec3 a_fd = (p(t + h) - 2 * p(t) + p(t - h)) / (h * h);
  const KinematicState m = s::MountPointKinematics(state(t), mount, Vec3(0, 0, 0.2));
  MESSAGE("lever arm: |dv| " << (m.velocity_mps - v_fd).norm() << " m/s, |da| " << (m.acceleration_mps2 - a_fd).norm()
                             << " m/s^2");
  CHECK((m.velocity_mps - v_fd).norm() < 1e-5);
  CHECK((m.acceleration_mps2 - a_fd).norm() < 1e-4);
  // Without the Euler term the acceleration is off by dw/dt x r.
  const KinematicState no_euler = s::MountPointKinematics(state(t), mount);
  CHECK((no_euler.acceleration_mps2 - a_fd).norm() > 0.05);
}

// ------------------------------------------------------------------------------------------------
// IMU

TEST_CASE("imu: noise-free reading is gravity (0, 0, -g) in the sensor frame, plus lever-arm terms") {
  s::ImuDef def = s::DefaultImuDef();
  CHECK(s::ValidateImuDef(def).empty());

  // Level, at rest.
  KinematicState v;
  s::ImuSample t = s::TrueImuSample(v, def);
  CHECK((t.acceleration_mps2 - Vec3(0, 0, -9.80665)).norm() < 1e-12);
  CHECK(t.angular_velocity_radps.norm() == 0.0);

  // Pitched nose-down by 10 deg: gravity shows on the sensor's x axis.
  v.pose.orientation = YawPitchRoll(0.3, 10.0 * kPi / 180.0, 0.0);
  t = s::TrueImuSample(v, def);
  CHECK(t.acceleration_mps2.x() == doctest::Approx(9.80665 * std::sin(10.0 * kPi / 180.0)).epsilon(1e-12));
  CHECK(t.acceleration_mps2.z() == doctest::Approx(-9.80665 * std::cos(10.0 * kPi / 180.0)).epsilon(1e-12));

  // Level, yawing at 0.5 rad/s; the IMU at x = 1.3 m sees -w^2 r = -0.325 m/s^2 on x and 0.5 rad/s on z.
  v = KinematicState{};
  v.angular_velocity_radps = Vec3(0, 0, 0.5);
  def.mounting = s::Mounting{Vec3(1.3, 0.0, 0.5), Quat::Identity()};
  t = s::TrueImuSample(v, def);
  CHECK((t.acceleration_mps2 - Vec3(-0.325, 0, -9.80665)).norm() < 1e-12);
  CHECK((t.angular_velocity_radps - Vec3(0, 0, 0.5)).norm() < 1e-12);

  // Same, IMU turned 90 deg about z (its x looks left): the centripetal term moves to its -y axis.
  def.mounting.orientation = YawPitchRoll(kPi / 2, 0, 0);
  t = s::TrueImuSample(v, def);
  CHECK((t.acceleration_mps2 - Vec3(0, 0.325, -9.80665)).norm() < 1e-12);
}

TEST_CASE("imu: same seed, same samples, bad definitions are named") {
  const s::ImuDef def = s::DefaultImuDef();
  std::mt19937_64 r1(42), r2(42);
  s::ImuState s1 = s::InitialImuState(def, r1), s2 = s::InitialImuState(def, r2);
  KinematicState v;
  for (int i = 0; i < 1000; ++i) REQUIRE(s::Measure(v, def, s1, r1) == s::Measure(v, def, s2, r2));
  CHECK(s1 == s2);

  s::ImuDef bad = def;
  bad.rate_hz = -5;
  CHECK(s::ValidateImuDef(bad) == "imu.rate_hz must be > 0, got -5");
  bad = def;
  bad.accel_noise_density_mps2_rthz = -1;
  CHECK(s::ValidateImuDef(bad).find("accel_noise_density_mps2_rthz") != std::string::npos);
}

TEST_CASE("imu: two simulated hours at rest: Allan deviation within 10 % of noise density and bias random walk") {
  // Allan-test IMU: Kalibr's ADIS16448 noise densities with bias walks chosen so the curve's bottom sits at
  // tau_c = sqrt(3) N / K ~ 4 s: the -1/2 region (10 ms - 1 s) and the +1/2 region (15 s - 10 min) both lie in 2 h.
  s::ImuDef def = s::DefaultImuDef();
  def.gyro_noise_density_radps_rthz = 4.0e-4;
  def.gyro_bias_random_walk_radps2_rthz = 1.75e-4;
  def.accel_noise_density_mps2_rthz = 6.0e-3;
  def.accel_bias_random_walk_mps3_rthz = 2.6e-3;
  REQUIRE(s::ValidateImuDef(def).empty());
  const double tau0 = 1.0 / def.rate_hz, duration_s = 7200.0;
  const auto streams = TwoHoursAtRest(def, 20260521);
  REQUIRE(streams[0].size() == 720000);

  // Cluster sizes on a log grid, 10 per decade, from 10 ms to a tenth of the record (631 s); tau = 1 s is on it.
  std::vector<std::size_t> m;
  for (double tau = tau0; tau <= duration_s / 10.0 * 1.0001; tau *= std::pow(10.0, 0.1)) {
    const auto mi = static_cast<std::size_t>(std::llround(tau / tau0));
    if (m.empty() || mi != m.back()) m.push_back(mi);
  }
  std::vector<double> tau_s;
  for (std::size_t mi : m) tau_s.push_back(static_cast<double>(mi) * tau0);
  const std::size_t i1 = static_cast<std::size_t>(std::find(m.begin(), m.end(), std::size_t{100}) - m.begin());
  REQUIRE(i1 < m.size());

  for (int axis = 0; axis < 6; ++axis) {
    const bool gyro = axis < 3;
    const double n_cfg = gyro ? def.gyro_noise_density_radps_rthz : def.accel_noise_density_mps2_rthz;
    const double k_cfg = gyro ? def.gyro_bias_random_walk_radps2_rthz : def.accel_bias_random_walk_mps3_rthz;
    const std::vector<double> adev = OverlappingAdev(streams[axis], m);
    const auto [n_fit, k_fit] = FitWhiteAndRandomWalk(tau_s, adev, duration_s);
    const double slope_white = LogLogSlope(tau_s, adev, 0.01, 0.1);
    const double slope_walk = LogLogSlope(tau_s, adev, 20.0, 1000.0);  // reported; too noisy to assert tightly
    const auto min_it = std::min_element(adev.begin(), adev.end());
    const double tau_min_s = tau_s[static_cast<std::size_t>(min_it - adev.begin())];
    const std::string label = std::string(gyro ? "gyro " : "accel ") + "xyz"[axis % 3];
    MESSAGE(label << ": sigma(1 s) / N = " << adev[i1] / n_cfg
                                         << ", N line / N = " << n_fit / n_cfg << ", K line / K = " << k_fit / k_cfg
                                         << ", slopes " << slope_white << " / " << slope_walk << ", bottom at "
                  << tau_min_s << " s");
    // Noise density: the Allan deviation at tau = 1 s, and the -1/2 line read at 1 s.
    CHECK(adev[i1] == doctest::Approx(n_cfg).epsilon(0.10));
    CHECK(n_fit == doctest::Approx(n_cfg).epsilon(0.10));
    // Bias random walk: the +1/2 line read at tau = 3 s.
    CHECK(k_fit == doctest::Approx(k_cfg).epsilon(0.10));
    // Both regions are visible: slope -1/2 at short tau, a bottom near tau_c, and a rise of > 3x by 631 s.
    CHECK(slope_white == doctest::Approx(-0.5).epsilon(0.05));
    CHECK(tau_min_s >= 1.0);
    CHECK(tau_min_s <= 20.0);
    CHECK(adev.back() > 3.0 * *min_it);
  }
}

TEST_CASE("imu: two simulated hours at rest, level: the z acceleration is near -9.81, the rest near 0") {
  const s::ImuDef def = s::DefaultImuDef();  // ADIS16448-like, with turn-on biases
  const auto streams = TwoHoursAtRest(def, 3);
  std::array<double, 6> mean{};
  for (int k = 0; k < 6; ++k) {
    for (double v : streams[k]) mean[k] += v;
    mean[k] /= static_cast<double>(streams[k].size());
  }
  MESSAGE("2 h means: gyro " << mean[0] << " " << mean[1] << " " << mean[2] << " rad/s, accel " << mean[3] << " "
                             << mean[4] << " " << mean[5] << " m/s^2");
  CHECK(mean[5] == doctest::Approx(-9.81).epsilon(0.01));  // within 0.1 m/s^2
  for (int k = 0; k < 3; ++k) CHECK(std::abs(mean[k]) < 0.01);
  for (int k = 3; k < 5; ++k) CHECK(std::abs(mean[k]) < 0.1);
}

// ------------------------------------------------------------------------------------------------
// GNSS

TEST_CASE("gnss: WGS-84 reference points") {
  const double a = s::kWgs84A_m, b = a * (1 - s::kWgs84F);
  CHECK((s::GeodeticToEcef({0, 0, 0}) - Vec3(a, 0, 0)).norm() < 1e-9);
  CHECK((s::GeodeticToEcef({90, 0, 0}) - Vec3(0, 0, b)).norm() < 1e-9);
  CHECK((s::GeodeticToEcef({0, 90, 100}) - Vec3(0, a + 100, 0)).norm() < 1e-9);
  const s::Geodetic pole = s::EcefToGeodetic(Vec3(0, 0, b + 10));
  CHECK(pole.latitude_deg == doctest::Approx(90.0).epsilon(1e-12));
  CHECK(pole.altitude_m == doctest::Approx(10.0).epsilon(1e-9));
  const s::Geodetic eq = s::EcefToGeodetic(Vec3(a + 5, 0, 0));
  CHECK(std::abs(eq.latitude_deg) < 1e-12);
  CHECK(eq.altitude_m == doctest::Approx(5.0).epsilon(1e-9));
}

TEST_CASE("gnss: the local <-> geodetic round trip is within 1 cm over 10 km") {
  const std::array<s::Geodetic, 5> origins{{{52.1670, 10.5490, 80.0},
                                            {0.0, 0.0, 0.0},
                                            {-33.9, 151.2, 40.0},
                                            {78.2, 15.6, 20.0},
                                            {35.0, -179.99, 2000.0}}};
  double worst_local = 0.0, worst_geo_m = 0.0, worst_alt_m = 0.0, worst_origin_enu = 0.0;
  int points = 0;
  for (const auto& origin : origins) {
    worst_origin_enu = std::max(worst_origin_enu, s::GeodeticToLocal(origin, origin).norm());
    for (double e = -10000; e <= 10000; e += 500) {
      for (double n = -10000; n <= 10000; n += 500) {
        if (std::hypot(e, n) > 10000.0) continue;
        for (double up : {-100.0, 0.0, 250.0, 500.0, 1000.0}) {
          const Vec3 enu(e, n, up);
          const s::Geodetic g = s::LocalToGeodetic(enu, origin);
          worst_local = std::max(worst_local, (s::GeodeticToLocal(g, origin) - enu).norm());
          // geodetic -> ECEF -> geodetic, measured as a distance in ECEF.
          const s::Geodetic g2 = s::EcefToGeodetic(s::GeodeticToEcef(g));
          worst_geo_m = std::max(worst_geo_m, (s::GeodeticToEcef(g2) - s::GeodeticToEcef(g)).norm());
          worst_alt_m = std::max(worst_alt_m, std::abs(g2.altitude_m - g.altitude_m));
          ++points;
        }
      }
    }
  }
  MESSAGE(points << " points: local round trip worst " << worst_local << " m, geodetic round trip worst " << worst_geo_m
                 << " m");
  CHECK(worst_local < 0.01);
  CHECK(worst_geo_m < 0.01);
  CHECK(worst_alt_m < 0.01);
  CHECK(worst_origin_enu < 1e-6);
}

TEST_CASE("gnss: the tangent plane agrees with seed 003's flat eq. 3-4 to within 0.5 % of the offset") {
  const s::Geodetic origin{52.1670, 10.5490, 80.0};
  for (const Vec3& enu : {Vec3(1000, 0, 0), Vec3(0, 1000, 0), Vec3(-700, 700, 0)}) {
    const s::Geodetic exact = s::LocalToGeodetic(enu, origin);
    const s::Geodetic flat = s::FlatLocalToGeodetic(enu, origin);
    // Where the flat geodetic point lands in the exact tangent plane.
    const double err = (s::GeodeticToLocal(flat, origin) - enu).head<2>().norm();
    CHECK(err < 0.005 * enu.norm());
    CHECK(std::abs(exact.latitude_deg - flat.latitude_deg) < 1e-4);
  }
}

TEST_CASE("gnss: fixes report the antenna, with the configured horizontal and vertical sigma") {
  s::GnssDef def = s::DefaultGnssDef();
  CHECK(s::ValidateGnssDef(def).empty());

  // Vehicle at world (100, 200, 0) facing north: the antenna's 1 m forward offset goes north.
  KinematicState v;
  v.pose.position_m = Vec3(100, 200, 0);
  v.pose.orientation = YawPitchRoll(kPi / 2, 0, 0);
  v.velocity_mps = Vec3(0, 10, 0);
  const s::GnssFix truth = s::TrueGnssFix(v, def);
  CHECK((s::GeodeticToLocal(truth.position, def.origin) - Vec3(100, 201, 1.5)).norm() < 1e-6);
  CHECK((truth.velocity_enu_mps - Vec3(0, 10, 0)).norm() < 1e-12);

  // Noise statistics over 20000 fixes.
  std::mt19937_64 rng(11);
  const int n = 20000;
  Vec3 sum = Vec3::Zero(), sum2 = Vec3::Zero();
  for (int i = 0; i < n; ++i) {
    const s::GnssFix f = s::Measure(v, def, rng);
    const Vec3 d = s::GeodeticToLocal(f.position, def.origin) - Vec3(100, 201, 1.5);
    sum += d;
    sum2 += d.cwiseProduct(d);
  }
  const Vec3 mean = sum / n;
  const Vec3 sd = (sum2 / n - mean.cwiseProduct(mean)).cwiseSqrt();
  MESSAGE("gnss sigma e/n/u: " << sd.x() << " " << sd.y() << " " << sd.z() << " m");
  CHECK(sd.x() == doctest::Approx(def.horizontal_sigma_m).epsilon(0.03));
  CHECK(sd.y() == doctest::Approx(def.horizontal_sigma_m).epsilon(0.03));
  CHECK(sd.z() == doctest::Approx(def.vertical_sigma_m).epsilon(0.03));
  CHECK(mean.norm() < 0.1);

  def.rate_hz = 0;
  CHECK(s::ValidateGnssDef(def) == "gnss.rate_hz must be > 0, got 0");
}

}  // namespace
