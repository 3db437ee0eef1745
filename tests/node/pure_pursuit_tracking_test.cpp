// Closed-loop: the pure pursuit driver steering the dynamic single-track vehicle along a lane of a
// generated road (acceptance: at 15 m/s, lateral RMS error <= 0.2 m).
#include "platoon/road/road_generator.hpp"
#include "platoon/vehicle/driver_models.hpp"
#include "platoon/vehicle/single_track.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

using namespace platoon;
using namespace platoon::vehicle;

namespace {

// Projection near the previous arc length: a driver knows where it is on its road, and a road that
// passes close to an earlier stretch of itself must not make the projection jump there.
road::RoadCoord LocalProject(const road::Road& road, const Vec3& p, double s_hint) {
  auto dist2 = [&](double s) { return (road.ReferencePoint(s).head<2>() - p.head<2>()).squaredNorm(); };
  double best = std::max(0.0, s_hint - 2.0);
  for (double s = best; s <= std::min(road.Length(), s_hint + 20.0); s += 0.5)
    if (dist2(s) < dist2(best)) best = s;
  double lo = std::max(0.0, best - 0.5), hi = std::min(road.Length(), best + 0.5);
  for (int i = 0; i < 40; ++i) {
    const double m1 = lo + (hi - lo) / 3, m2 = hi - (hi - lo) / 3;
    (dist2(m1) < dist2(m2) ? hi : lo) = (dist2(m1) < dist2(m2) ? m2 : m1);
  }
  road::RoadCoord c;
  c.s_m = 0.5 * (lo + hi);
  const double h = road.Heading(c.s_m);
  const Vec3 d = p - road.ReferencePoint(c.s_m);
  c.t_m = -std::sin(h) * d.x() + std::cos(h) * d.y();
  return c;
}

struct TrackingResult {
  double rms_m = 0, max_m = 0, mean_speed_mps = 0, distance_m = 0;
};

TrackingResult Track(const road::Road& road, int lane, double speed_mps, const PurePursuitDef& pp) {
  const VehicleDef vd = DefaultVehicleDef();
  const double L = vd.WheelbaseM();
  // Start on the lane centre, rear axle at s = 10 m, heading along the lane, at speed.
  const double yaw0 = road.Heading(10.0);
  const Vec3 rear0 = road.LaneCenter(10.0, lane);
  VehicleState st;
  st.x_m = rear0.x() + vd.cg_to_rear_m * std::cos(yaw0);
  st.y_m = rear0.y() + vd.cg_to_rear_m * std::sin(yaw0);
  st.yaw_rad = yaw0;
  st.vx_mps = speed_mps;
  VehicleInput input;
  double sum2 = 0, max_err = 0, speed_sum = 0;
  int samples = 0;
  double s_now = 10.0;
  const double end_s = road.Length() - 50.0;
  for (int step = 0;; ++step) {
    if (step % 10 == 0) {
      // Driver at 100 Hz: where am I, where is my goal point, what steering puts me through it.
      const Vec3 rear(st.x_m - vd.cg_to_rear_m * std::cos(st.yaw_rad), st.y_m - vd.cg_to_rear_m * std::sin(st.yaw_rad), 0);
      const road::RoadCoord at = LocalProject(road, rear, s_now);
      s_now = at.s_m;
      if (at.s_m >= end_s) break;
      const double err = at.t_m - road.LaneCenterOffset(lane);
      if (step >= 2000) {  // after 2 s of settling
        sum2 += err * err;
        max_err = std::max(max_err, std::abs(err));
        speed_sum += st.vx_mps;
        ++samples;
      }
      const Vec3 goal = road.LaneCenter(std::min(at.s_m + LookaheadM(pp, st.vx_mps), road.Length()), lane) - rear;
      const double c = std::cos(st.yaw_rad), s = std::sin(st.yaw_rad);
      const double gx = c * goal.x() + s * goal.y(), gy = -s * goal.x() + c * goal.y();
      input.steer = std::clamp(PurePursuitSteerRad(gx, gy, L) / vd.max_steer_rad, -1.0, 1.0);
      const double dv = speed_mps - st.vx_mps;
      input.throttle = std::clamp(0.4 * dv, 0.0, 1.0);
      input.brake = std::clamp(-0.2 * dv, 0.0, 1.0);
    }
    st = Step(vd, st, input, 0.001);
    REQUIRE(step < 10'000'000);
  }
  TrackingResult r;
  r.rms_m = std::sqrt(sum2 / std::max(1, samples));
  r.max_m = max_err;
  r.mean_speed_mps = speed_sum / std::max(1, samples);
  r.distance_m = st.distance_m;
  return r;
}

}  // namespace

TEST_CASE("pure pursuit: tracks a generated road at 15 m/s with lateral RMS error <= 0.2 m") {
  road::RoadGeneratorDef gen = road::DefaultRoadGeneratorDef();
  gen.layout.lane_widths_right_m = {3.5, 3.5};
  for (uint64_t seed : {3u, 11u}) {
    gen.seed = seed;
    const road::Road road(road::GenerateRoad(gen, 2500.0));
    const TrackingResult r = Track(road, -1, 15.0, DefaultPurePursuitDef());
    MESSAGE("seed " << seed << ": lateral RMS " << r.rms_m << " m, max " << r.max_m << " m, mean speed "
                    << r.mean_speed_mps << " m/s over " << r.distance_m << " m");
    CHECK(r.distance_m > 2000);
    CHECK(r.mean_speed_mps == doctest::Approx(15.0).epsilon(0.03));
    CHECK(r.rms_m <= 0.2);
  }
}
