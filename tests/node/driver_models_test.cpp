#include "platoon/vehicle/driver_models.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using namespace platoon::vehicle;

TEST_CASE("pure pursuit: look-ahead grows with speed within its bounds") {
  const PurePursuitDef d = DefaultPurePursuitDef();
  CHECK(LookaheadM(d, 0) == doctest::Approx(d.lookahead_min_m));
  CHECK(LookaheadM(d, 10) == doctest::Approx(d.lookahead_min_m + 10 * d.lookahead_gain_s));
  CHECK(LookaheadM(d, 1000) == doctest::Approx(d.lookahead_max_m));
}

TEST_CASE("pure pursuit: the steering angle drives the rear axle through the goal on a circle") {
  // A goal on a circle of radius R through the rear axle: steering atan(L / R) follows it exactly.
  const double R = 50, L = 2.7, theta = 0.3;
  const double gx = R * std::sin(theta), gy = R * (1 - std::cos(theta));
  CHECK(PurePursuitSteerRad(gx, gy, L) == doctest::Approx(std::atan(L / R)));
  CHECK(PurePursuitSteerRad(gx, -gy, L) == doctest::Approx(-std::atan(L / R)));
  CHECK(PurePursuitSteerRad(10, 0, L) == doctest::Approx(0));
}

TEST_CASE("idm: free road accelerates toward the desired speed and holds it") {
  const IdmDef d = DefaultIdmDef();
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(IdmAccel(d, 0, inf, 0) == doctest::Approx(d.max_accel_mps2));
  CHECK(IdmAccel(d, d.desired_speed_mps, inf, 0) == doctest::Approx(0));
  CHECK(IdmAccel(d, d.desired_speed_mps * 1.2, inf, 0) < 0);
}

TEST_CASE("idm: equilibrium gap behind a leader at the same speed is s0 + vT over sqrt(1 - (v/v0)^delta)") {
  const IdmDef d = DefaultIdmDef();
  const double v = 10;
  const double s_eq = (d.min_gap_m + v * d.time_headway_s) / std::sqrt(1 - std::pow(v / d.desired_speed_mps, d.exponent));
  CHECK(IdmAccel(d, v, s_eq, 0) == doctest::Approx(0).epsilon(1e-9));
  CHECK(IdmAccel(d, v, s_eq * 0.8, 0) < 0);
  CHECK(IdmAccel(d, v, s_eq * 1.2, 0) > 0);
  // Closing in fast on a stopped leader brakes harder than comfortable.
  CHECK(IdmAccel(d, 15, 30, 15) < -d.comfort_decel_mps2);
}

TEST_CASE("mobil: changes when the own gain beats the threshold, never when it makes the follower brake too hard") {
  const MobilDef d = DefaultMobilDef();
  LaneChangeAccels a;
  a.self_now = -1.0;
  a.self_after = 0.5;  // clear lane ahead
  CHECK(MobilAllows(d, a, false));
  a.new_follower_after = -d.safe_decel_mps2 - 0.1;  // would cut in too close
  CHECK_FALSE(MobilAllows(d, a, false));
  LaneChangeAccels small;
  small.self_now = 0.0;
  small.self_after = 0.15;  // below threshold to the left ...
  CHECK_FALSE(MobilAllows(d, small, false));
  CHECK(MobilAllows(d, small, true));  // ... but enough with the keep-right bias
}
