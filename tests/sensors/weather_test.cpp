// What the weather does to the sensor models (sensors/src/weather.cpp, the soft echoes of sensors/src/lidar.cpp,
// the rain range of sensors/src/radar.cpp). Expected figures come from closed forms written out here.
#include "platoon/point_record.hpp"
#include "platoon/sensors/lidar.hpp"
#include "platoon/sensors/radar.hpp"
#include "platoon/sensors/scene.hpp"
#include "platoon/sensors/weather.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <vector>

namespace platoon::sensors {
namespace weather_test_detail {

// Lambert's W (principal branch, x >= 0) by Newton's method: w e^w = x.
double LambertW(double x) {
  double w = std::log1p(x);
  for (int i = 0; i < 100; ++i) w -= (w * std::exp(w) - x) / (std::exp(w) * (w + 1.0));
  return w;
}

// A night in fog of `visibility_m` (no sun background), or clear night air for 0.
world::WorldConditions Night(double visibility_m, double rain_mm_h = 0.0) {
  world::WorldConditions c;
  c.light.sun_set_directly = true;
  c.light.sun_elevation_deg = -20.0;
  c.weather.fog_visibility_m = visibility_m;
  c.weather.rain_mm_h = rain_mm_h;
  return c;
}

// One horizontal channel of 5 columns around +x, one ray per beam, no range noise, a 10 % material 0.
LidarDef PencilDef() {
  LidarDef d = DefaultLidarDef();
  d.channel_elevations_rad = {0.0};
  d.azimuth_min_rad = -0.002;
  d.azimuth_max_rad = 0.002;
  d.azimuth_resolution_rad = 0.001;
  d.divergence_sampling = DivergenceSampling::kCentre;
  d.max_range_m = 5000.0;
  d.range_noise_k = 0.0;
  d.materials = {LidarMaterial{0.10, 1.0, 0.0}};
  return d;
}

// Whether a wall of material 0 facing the sensor at `distance_m` gives a surface echo.
bool WallSeen(const LidarDef& def, double distance_m) {
  Scene scene;
  Pose wall;
  wall.position_m = Vec3(distance_m + 1.0, 0, 0);
  scene.AddBox(wall, Vec3(1.0, 50.0, 50.0), SurfaceTag{0, 7, 3});
  scene.Commit();
  std::mt19937_64 rng(3);
  for (const LidarPoint& p : Scan(scene, Pose{}, Vec3::Zero(), Vec3::Zero(), def, rng))
    if (p.class_id != kWeatherClassId) return true;
  return false;
}

}  // namespace weather_test_detail

TEST_CASE("weather lidar: a 10 percent target's maximum range in fog is the analytic figure within 5 percent") {
  using namespace weather_test_detail;
  const LidarDef clear = PencilDef();
  for (double visibility_m : {40.0, 120.0, 400.0}) {
    const LidarDef def = LidarInConditions(clear, Night(visibility_m));
    // Koschmieder (5 % contrast): alpha = ln(20) / V; below 500 m visibility no wavelength dependence.
    const double alpha = std::log(20.0) / visibility_m;
    CHECK(def.extinction_coefficient_per_m == doctest::Approx(alpha).epsilon(1e-9));
    // Night: noise is the dark current only. SNR(d) = P_t A_r eta rho exp(-2 alpha d) / (pi d^2 P_dk) = thr
    // gives d exp(alpha d) = S, S = sqrt(P_t A_r eta rho / (pi thr P_dk)): d = W(alpha S) / alpha.
    const double p_dark = clear.dark_current_a / clear.responsivity_a_per_w;
    const double s = std::sqrt(clear.transmit_power_w * clear.receiver_aperture_area_m2 * clear.optics_efficiency * 0.10 /
                               (std::numbers::pi * clear.snr_threshold * p_dark));
    const double analytic_m = LambertW(alpha * s) / alpha;
    // The scan's own maximum range: bisection on the wall distance.
    double lo = 1.0, hi = 3.0 * analytic_m;
    REQUIRE(WallSeen(def, lo));
    REQUIRE_FALSE(WallSeen(def, hi));
    for (int i = 0; i < 30; ++i) {
      const double mid = 0.5 * (lo + hi);
      (WallSeen(def, mid) ? lo : hi) = mid;
    }
    MESSAGE("V = " << visibility_m << " m: analytic " << analytic_m << " m, scan " << lo << " m");
    CHECK(std::abs(lo - analytic_m) <= 0.05 * analytic_m);
    CHECK(MaxDetectionRangeM(def, 0.10, 0.0) == doctest::Approx(analytic_m).epsilon(0.01));
  }
}

TEST_CASE("weather lidar: soft echoes come back as often as the speckle model says and never in clear air") {
  using namespace weather_test_detail;
  LidarDef def = DefaultLidarDef();  // 16 channels x 440 columns, nothing to hit
  def.extinction_coefficient_per_m = 0.0;
  def.sun_irradiance_w_per_m2_nm = 0.0;
  Scene empty;
  empty.Commit();
  std::mt19937_64 rng(11);
  // Clear air: no backscatter coefficient, no echo at all.
  CHECK(Scan(empty, Pose{}, Vec3::Zero(), Vec3::Zero(), def, rng).empty());
  // A backscatter coefficient: P_bs = P_t eta A_r beta (c tau / 2) / R^2 at R = 2 m, SNR_bs = P_bs / P_dk, and a
  // beam's exponentially distributed echo clears the threshold with probability exp(-thr / SNR_bs).
  def.backscatter_per_m_sr = 2.0e-5;
  const double depth_m = 0.5 * 299792458.0 * def.pulse_duration_s;
  const double p_bs = def.transmit_power_w * def.optics_efficiency * def.receiver_aperture_area_m2 *
                      def.backscatter_per_m_sr * depth_m / (2.0 * 2.0);
  const double snr = p_bs / (def.dark_current_a / def.responsivity_a_per_w);
  const double p = std::exp(-def.snr_threshold / snr);
  const double beams = def.BeamCount();
  const auto points = Scan(empty, Pose{}, Vec3::Zero(), Vec3::Zero(), def, rng);
  const double expected = beams * p, sigma = std::sqrt(beams * p * (1.0 - p));
  MESSAGE(points.size() << " soft echoes of " << beams << " beams, expected " << expected << " +- " << sigma);
  CHECK(p > 0.2);
  CHECK(p < 0.9);
  CHECK(std::abs(static_cast<double>(points.size()) - expected) < 5.0 * sigma);
  for (const LidarPoint& pt : points) {
    CHECK(pt.class_id == kWeatherClassId);
    CHECK(pt.entity_id == 0u);
    CHECK(pt.RangeM() >= 2.0 - 1e-4);
    CHECK(pt.RangeM() <= 2.0 + depth_m + 1e-4);
    CHECK(pt.snr >= def.snr_threshold * (1 - 1e-6));
  }
}

TEST_CASE("weather lidar: fog brings soft echoes before the surface and rain adds Carbonneau's extinction") {
  using namespace weather_test_detail;
  const LidarDef clear = PencilDef();
  // Clear night: the lidar keeps its own extinction and no backscatter.
  const LidarDef night = LidarInConditions(clear, Night(0.0));
  CHECK(night.extinction_coefficient_per_m == clear.extinction_coefficient_per_m);
  CHECK(night.backscatter_per_m_sr == 0.0);
  CHECK(night.sun_irradiance_w_per_m2_nm == 0.0);
  // Noon: the sun background as configured.
  CHECK(LidarInConditions(clear, world::WorldConditions{}).sun_irradiance_w_per_m2_nm == clear.sun_irradiance_w_per_m2_nm);
  // Rain alone, 25 mm/h: A = 1.076 R^0.67 dB/km on top of the clear air.
  const double a_db_km = 1.076 * std::pow(25.0, 0.67);
  const double rain_alpha = a_db_km / (10.0 * std::log10(std::exp(1.0)) * 1000.0);
  const LidarDef rain = LidarInConditions(clear, Night(0.0, 25.0));
  CHECK(rain.extinction_coefficient_per_m == doctest::Approx(clear.extinction_coefficient_per_m + rain_alpha).epsilon(1e-9));
  CHECK(rain.backscatter_per_m_sr == doctest::Approx(rain_alpha / 18.8).epsilon(1e-9));
  // Dense fog: a wall at 12 m (inside the 19.7 m a 10 % target reaches in it) is still seen, behind a soft
  // echo on most beams (first and last returns).
  const LidarDef fog = LidarInConditions(clear, Night(30.0));
  CHECK(fog.backscatter_per_m_sr == doctest::Approx(std::log(20.0) / 30.0 / 18.8).epsilon(1e-9));
  Scene scene;
  Pose wall;
  wall.position_m = Vec3(13.0, 0, 0);
  scene.AddBox(wall, Vec3(1.0, 50.0, 50.0), SurfaceTag{0, 7, 3});
  scene.Commit();
  std::mt19937_64 rng(5);
  int soft = 0, hard = 0;
  for (const LidarPoint& p : Scan(scene, Pose{}, Vec3::Zero(), Vec3::Zero(), fog, rng)) {
    if (p.class_id == kWeatherClassId) {
      ++soft;
      CHECK(p.echo == 0);
      CHECK(p.return_type == static_cast<uint8_t>(point_record::ReturnType::kFirst));
    } else {
      ++hard;
      CHECK(p.RangeM() == doctest::Approx(12.0).epsilon(1e-3));
    }
  }
  CHECK(soft >= 3);
  CHECK(hard == 5);
}

TEST_CASE("weather radar: rain shortens the detection range to the link budget's closed form") {
  using namespace weather_test_detail;
  // ITU-R P.838-3's own table values (horizontal polarisation) at 1, 10 and 30 GHz.
  struct Row { double f, k, alpha; };
  for (const Row& r : {Row{1, 0.0000259, 0.9691}, Row{10, 0.01217, 1.2571}, Row{30, 0.2403, 0.9485}}) {
    const RainCoefficients c = ItuRainCoefficients(r.f, false);
    CHECK(c.k == doctest::Approx(r.k).epsilon(0.01));
    CHECK(c.alpha == doctest::Approx(r.alpha).epsilon(0.001));
  }
  RadarDef def = DefaultRadarDef();
  def.range_sigma_m = 0.0;
  def.range_resolution_m = 0.0;
  def.Class(RadarClass::kCar).detection_probability = 1.0;
  for (auto& c : def.classes) c.false_positives_per_frame = 0.0;
  world::WorldConditions rain;
  rain.weather.rain_mm_h = 25.0;
  const RadarDef wet = RadarInConditions(def, rain);
  const RainCoefficients c = ItuRainCoefficients(def.frequency_ghz, false);
  const double gamma = c.k * std::pow(25.0, c.alpha);
  CHECK(wet.rain_attenuation_db_per_km == doctest::Approx(gamma).epsilon(1e-12));
  // 40 log10(R0 / R) = 2 gamma R / 1000: R e^(kR) = R0 with k = gamma ln(10) / 20000, R = W(k R0) / k.
  const double k = gamma * std::log(10.0) / 20000.0;
  const double r0 = def.fov_inner_range_m;
  const double analytic = LambertW(k * r0) / k;
  MESSAGE("25 mm/h at " << def.frequency_ghz << " GHz: " << gamma << " dB/km, range " << r0 << " m -> " << analytic << " m");
  CHECK(wet.MaxRangeM(0.0) == doctest::Approx(analytic).epsilon(1e-9));
  CHECK(analytic < r0);
  // A car on the boresight just inside and just outside the shortened range.
  const auto seen_at = [&](const RadarDef& d, double x) {
    RadarTarget t;
    t.entity_id = 1;
    t.pose.position_m = Vec3(x, 0, 0.75);  // the field of view holds the box centre
    std::mt19937_64 rng(1);
    for (const RadarObject& o : Measure({t}, nullptr, Pose{}, Vec3::Zero(), d, rng))
      if (o.entity_id == 1) return true;
    return false;
  };
  CHECK(seen_at(wet, 0.98 * analytic));
  CHECK_FALSE(seen_at(wet, 1.02 * analytic));
  CHECK(seen_at(def, 1.02 * analytic));  // dry, the same car is seen
}

TEST_CASE("weather objects: fog hides objects beyond the contrast range and thins them before it") {
  const VisibilityDetectionDef def;
  const double v = 80.0;
  // C0 = 1 against a 5 % threshold: ln(1 / 0.05) / sigma = V exactly; full detection while C >= 0.25.
  CHECK(VisibilityRangeM(v, def) == doctest::Approx(v).epsilon(1e-12));
  const double d_full = v * std::log(1.0 / 0.25) / std::log(20.0);
  CHECK(VisibilityDetectionFactor(0.99 * d_full, v, def) == 1.0);
  CHECK(VisibilityDetectionFactor(1.001 * v, v, def) == 0.0);
  const double mid = 0.5 * (d_full + v);
  CHECK(VisibilityDetectionFactor(mid, v, def) == doctest::Approx(0.5).epsilon(1e-9));
  CHECK(VisibilityDetectionFactor(1000.0, 0.0, def) == 1.0);  // no fog
  // Many objects at three distances: all, about half, none kept.
  std::vector<GroundTruthObject> truth;
  for (uint32_t i = 0; i < 3000; ++i) {
    GroundTruthObject o;
    o.id = i;
    o.position_m = Vec3(i % 3 == 0 ? 0.9 * d_full : i % 3 == 1 ? mid : 1.01 * v, 0, 0);
    truth.push_back(o);
  }
  std::mt19937_64 rng(2);
  ApplyVisibility(truth, v, def, rng);
  int near = 0, middle = 0, far = 0;
  for (const auto& o : truth) (o.id % 3 == 0 ? near : o.id % 3 == 1 ? middle : far)++;
  CHECK(near == 1000);
  CHECK(far == 0);
  CHECK(std::abs(middle - 500) < 5 * std::sqrt(1000 * 0.25));
  // Clear weather draws nothing: the generator is untouched.
  std::mt19937_64 a(9), b(9);
  std::vector<GroundTruthObject> same = truth;
  ApplyVisibility(same, 0.0, def, a);
  CHECK(same.size() == truth.size());
  CHECK(a() == b());
}

}  // namespace platoon::sensors
