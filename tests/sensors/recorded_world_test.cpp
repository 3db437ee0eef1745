// The recorded ground truth of a session log (sensors/src/validation/recorded_world.cpp): entity
// histories from keyframes and deltas, removals, interpolation and dead reckoning between states.
#include "platoon/validation/recorded_world.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace platoon;
using namespace platoon::validation;

namespace {

// A car at x = x0 + v t + a t^2 / 2 along the world x axis.
protocol::EntityState Accelerating(uint64_t id, double t_s, double v0 = 10, double a = 2) {
  protocol::EntityState e;
  e.id = id;
  e.kind = protocol::EntityKind::kCar;
  e.kinematics.stamp_ns = SToNs(t_s);
  e.kinematics.pose.position_m = Vec3(v0 * t_s + 0.5 * a * t_s * t_s, 0, 0);
  e.kinematics.velocity_mps = Vec3(v0 + a * t_s, 0, 0);
  e.kinematics.acceleration_mps2 = Vec3(a, 0, 0);
  return e;
}

protocol::WorldState World(double t_s, bool keyframe, std::vector<protocol::EntityState> entities,
                           std::vector<uint64_t> removed = {}) {
  protocol::WorldState w;
  w.sim_time_ns = SToNs(t_s);
  w.keyframe = keyframe;
  w.entities = std::move(entities);
  w.removed_entities = std::move(removed);
  return w;
}

}  // namespace

TEST_CASE("recorded world: interpolation between states is exact for constant acceleration, extrapolation after the last") {
  RecordedWorld world;
  for (int i = 0; i <= 10; ++i) world.Add(World(i * 0.2, i == 0, {Accelerating(1, i * 0.2)}));
  CHECK(world.Broadcasts() == 11);
  CHECK(world.EntityCount() == 1);
  for (double t : {0.0, 0.05, 0.13, 0.77, 1.99, 2.0}) {
    const auto s = world.StateAt(1, SToNs(t), TruthMethod::kInterpolate);
    REQUIRE(s);
    CHECK(s->kinematics.stamp_ns == SToNs(t));
    CHECK(s->kinematics.pose.position_m.x() == doctest::Approx(Accelerating(1, t).kinematics.pose.position_m.x()).epsilon(1e-12));
    CHECK(s->kinematics.velocity_mps.x() == doctest::Approx(10 + 2 * t));
  }
  // Dead reckoning from the state before: the model (RVB) carries the acceleration, so also exact here.
  const auto dr = world.StateAt(1, SToNs(0.77), TruthMethod::kDeadReckon);
  REQUIRE(dr);
  CHECK(dr->kinematics.pose.position_m.x() == doctest::Approx(Accelerating(1, 0.77).kinematics.pose.position_m.x()).epsilon(1e-9));
  // Before the first state: not there. Past the last broadcast: extrapolated up to the horizon, then gone.
  CHECK_FALSE(world.StateAt(1, -SToNs(0.01), TruthMethod::kInterpolate));
  CHECK(world.StateAt(1, SToNs(2.4), TruthMethod::kInterpolate));
  CHECK_FALSE(world.StateAt(1, SToNs(2.6), TruthMethod::kInterpolate));
  CHECK_FALSE(world.StateAt(99, SToNs(1.0), TruthMethod::kInterpolate));
}

TEST_CASE("recorded world: a turning car is slerped between states") {
  // Yaw 0 at t = 0 and 90 deg at t = 1 s: 45 deg half way.
  protocol::EntityState a, b;
  a.id = b.id = 5;
  b.kinematics.stamp_ns = SToNs(1.0);
  b.kinematics.pose.orientation = Quat(Eigen::AngleAxisd(M_PI / 2, Vec3::UnitZ()));
  const KinematicState k = InterpolateKinematics(a.kinematics, b.kinematics, SToNs(0.5));
  CHECK(AngleBetween(k.pose.orientation, Quat(Eigen::AngleAxisd(M_PI / 4, Vec3::UnitZ()))) < 1e-12);
}

TEST_CASE("recorded world: removals by delta and by keyframe end an entity until it is listed again") {
  RecordedWorld world;
  world.Add(World(0.0, true, {Accelerating(1, 0.0), Accelerating(2, 0.0), Accelerating(3, 0.0)}));
  world.Add(World(0.1, false, {Accelerating(1, 0.1), Accelerating(2, 0.1), Accelerating(3, 0.1)}));
  world.Add(World(0.2, false, {Accelerating(1, 0.2)}, {2}));  // 2 removed by the delta
  world.Add(World(1.0, true, {Accelerating(1, 1.0)}));         // 3 left out of a keyframe: removed
  world.Add(World(1.5, false, {Accelerating(3, 1.5)}));        // 3 comes back
  world.Add(World(2.0, true, {Accelerating(1, 2.0), Accelerating(3, 2.0)}));
  auto ids_at = [&](double t) {
    std::vector<uint64_t> ids;
    for (const auto& e : world.EntitiesAt(SToNs(t), TruthMethod::kInterpolate)) ids.push_back(e.id);
    return ids;
  };
  CHECK(ids_at(0.05) == std::vector<uint64_t>{1, 2, 3});
  CHECK(ids_at(0.15) == std::vector<uint64_t>{1, 2, 3});  // removed at 0.2: still there at 0.15
  CHECK(ids_at(0.5) == std::vector<uint64_t>{1, 3});
  CHECK(ids_at(1.2) == std::vector<uint64_t>{1});
  CHECK(ids_at(1.7) == std::vector<uint64_t>{1, 3});
  // Between its removal and its return, entity 3 is not interpolated across the gap.
  CHECK_FALSE(world.StateAt(3, SToNs(1.4), TruthMethod::kInterpolate));
  CHECK(world.EntitiesAt(SToNs(1.7), TruthMethod::kInterpolate, 1).size() == 1);  // ego excluded
}

TEST_CASE("recorded world: truth method names round-trip") {
  for (auto m : {TruthMethod::kInterpolate, TruthMethod::kDeadReckon}) CHECK(TruthMethodFromName(TruthMethodName(m)) == m);
  CHECK_FALSE(TruthMethodFromName("linear"));
}

TEST_CASE("recorded world: a jump (a respawn far away) is dead-reckoned, never interpolated across") {
  // 10 m/s along x, then at t = 1 s the car is back at x = -500 m (a road's end wrapping to its start).
  auto at = [](double t, double x) {
    protocol::EntityState e;
    e.id = 4;
    e.kind = protocol::EntityKind::kCar;
    e.kinematics.stamp_ns = SToNs(t);
    e.kinematics.pose.position_m = Vec3(x, 0, 0);
    e.kinematics.velocity_mps = Vec3(10, 0, 0);
    return e;
  };
  RecordedWorld world;
  world.Add(World(0.9, true, {at(0.9, 9)}));
  world.Add(World(1.0, false, {at(1.0, -500)}));
  const auto s = world.StateAt(4, SToNs(0.95), TruthMethod::kInterpolate);
  REQUIRE(s);
  CHECK(s->kinematics.pose.position_m.x() == doctest::Approx(9.5));
  CHECK(world.StateAt(4, SToNs(1.0), TruthMethod::kInterpolate)->kinematics.pose.position_m.x() == doctest::Approx(-500));
}
