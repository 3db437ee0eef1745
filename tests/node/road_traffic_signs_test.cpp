#include "platoon/road/signs.hpp"
#include "platoon/vehicle/road_traffic.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

using namespace platoon;
using namespace platoon::vehicle;

namespace road_traffic_signs_test_detail {

road::Sign SignAt(road::SignType type, double value, double s_m) {
  road::Sign g;
  g.type = type;
  g.value = value;
  g.s_m = s_m;
  return g;
}

// One vehicle alone on a straight 5 km road, starting at s = 0 at `start_mps`, wishing `desired_mps`.
RoadTrafficDef Lone(double desired_mps, double start_mps) {
  RoadTrafficDef def = DefaultRoadTrafficDef();
  def.vehicles = 1;
  def.desired_speed_spread = 0;
  def.lane_changes = false;
  def.idm.desired_speed_mps = desired_mps;
  def.first_s_m = 0;
  def.first_lane = -1;
  def.first_speed_mps = start_mps;
  return def;
}

}  // namespace road_traffic_signs_test_detail

using road_traffic_signs_test_detail::Lone;
using road_traffic_signs_test_detail::SignAt;

TEST_CASE("road traffic signs: a car at 100 km/h slows to 50 after the sign within its comfortable deceleration") {
  road::RoadDef rd = road::DefaultRoadDef();
  rd.sections = {road::LineSection(5000)};
  const road::Road road(rd);
  const double v100 = 100 / 3.6, v50 = 50 / 3.6, sign_s = 600, end_s = 2500;
  RoadTrafficDef def = Lone(v100, v100);
  RoadTraffic traffic(road, def);
  traffic.SetSigns({SignAt(road::SignType::kSpeedLimit, 50, sign_s), SignAt(road::SignType::kEndOfLimit, 50, end_s)});
  CHECK(traffic.SignLimitAt(sign_s - 1) == 0);
  CHECK(traffic.SignLimitAt(sign_s + 1) == doctest::Approx(v50));
  const double b = def.idm.comfort_decel_mps2, dt = 0.01;
  double hardest = 0, speed_at_sign = -1, s_reached_50 = -1, max_after = 0, prev_speed = traffic.Cars()[0].speed_mps;
  for (int k = 0; k < static_cast<int>(400 / dt); ++k) {
    traffic.Step(dt);
    const TrafficCar& c = traffic.Cars()[0];
    const double a = (c.speed_mps - prev_speed) / dt;
    prev_speed = c.speed_mps;
    hardest = std::min(hardest, a);
    if (c.s_m < sign_s) {
      CHECK(c.speed_mps >= v100 - 0.05);  // no braking before the sign
      speed_at_sign = c.speed_mps;
    } else if (c.s_m < end_s) {
      if (s_reached_50 < 0 && c.speed_mps <= v50 + 0.05) s_reached_50 = c.s_m;
      if (s_reached_50 >= 0) max_after = std::max(max_after, c.speed_mps);
    } else if (c.s_m > end_s + 1500) {
      break;
    }
  }
  const TrafficCar& c = traffic.Cars()[0];
  MESSAGE("speed at the sign " << speed_at_sign * 3.6 << " km/h, 50 km/h reached " << s_reached_50 - sign_s
                               << " m after it, hardest braking " << hardest << " m/s^2, end speed " << c.speed_mps * 3.6
                               << " km/h");
  CHECK(speed_at_sign == doctest::Approx(v100).epsilon(0.005));
  CHECK(hardest >= -b - 1e-6);  // never beyond the comfortable deceleration
  CHECK(hardest <= -0.95 * b);  // and it does brake at about that
  // Braking at b down to b * tau above the limit (tau = 1 s, the easing time), then an exponential approach
  // dv(t) = b tau e^(-t / tau) to within 0.05 m/s: (v100^2 - (v50 + b tau)^2) / 2b + v50 tau ln(b tau / 0.05)
  // + b tau^2 (1 - 0.05 / (b tau)) of road.
  const double tau = 1.0, dv_end = 0.05;
  const double expected_m = (v100 * v100 - (v50 + b * tau) * (v50 + b * tau)) / (2 * b) +
                            v50 * tau * std::log(b * tau / dv_end) + b * tau * tau * (1 - dv_end / (b * tau));
  MESSAGE("expected " << expected_m << " m from the sign to 50 km/h");
  REQUIRE(s_reached_50 > sign_s);
  CHECK(s_reached_50 - sign_s == doctest::Approx(expected_m).epsilon(0.03));
  // Never shorter than braking at b all the way.
  CHECK(s_reached_50 - sign_s >= (v100 * v100 - v50 * v50) / (2 * b));
  CHECK(max_after <= v50 + 0.06);  // holds the limit up to its end
  CHECK(c.s_m > end_s + 1500);
  CHECK(c.speed_mps > v100 - 0.5);  // and speeds up again after it
}

TEST_CASE("road traffic signs: a limit above the own wish changes nothing and a road limit holds after an end") {
  road::RoadDef rd = road::DefaultRoadDef();
  rd.sections = {road::LineSection(3000)};
  rd.speed_limit_mps = 80 / 3.6;
  const road::Road road(rd);
  RoadTraffic traffic(road, Lone(70 / 3.6, 70 / 3.6));
  traffic.SetSigns({SignAt(road::SignType::kSpeedLimit, 120, 100), SignAt(road::SignType::kEndOfLimit, 120, 500)});
  CHECK(traffic.SignLimitAt(300) == doctest::Approx(120 / 3.6));
  CHECK(traffic.SignLimitAt(600) == doctest::Approx(80 / 3.6));  // the road's own limit again
  for (int k = 0; k < 3000; ++k) {
    traffic.Step(0.01);
    CHECK(traffic.Cars()[0].speed_mps == doctest::Approx(70 / 3.6).epsilon(0.002));
  }
}
