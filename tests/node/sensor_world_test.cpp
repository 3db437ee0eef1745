#include "platoon/config/session.hpp"
#include "platoon/dead_reckoning.hpp"
#include "platoon/dead_reckoning_kinds.hpp"
#include "platoon/node/node_runtime.hpp"
#include "platoon/node/sensor_host.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace platoon;
using namespace platoon::node;

namespace {

// A remote entity received at t = 0 moving at `speed` along +x while yawing at `yaw_rate`, whose
// displayed pose at `shown_ns` (a blend still running) is `shown`.
RemoteEntity Moving(uint64_t id, protocol::EntityKind kind, double speed, double yaw_rate, const Pose& shown) {
  RemoteEntity r;
  r.state.id = id;
  r.state.kind = kind;
  r.state.kinematics.velocity_mps = Vec3(speed, 0, 0);
  r.state.kinematics.angular_velocity_radps = Vec3(0, 0, yaw_rate);
  r.displayed = shown;
  return r;
}

const config::SessionDef kSession = config::LoadSessionText(
    "[[node]]\nname = \"s\"\nrole = \"sensor\"\nattach_to = \"ego\"\n[[node.sensor]]\nid = \"i\"\ntype = \"imu\"\n", "s.toml");

}  // namespace

TEST_CASE("sensor world: poses start from the displayed pose, not from the last received state") {
  const uint64_t ego = AttachedVehicleId("ego");
  SensorWorld world(kSession, ego);
  // Received at x = 0, dead reckoning says x = 10 at 1 s; the blend still shows x = 9.5.
  const Pose shown{Vec3(9.5, 0.2, 0), Quat::Identity()};
  world.Update({Moving(ego, protocol::EntityKind::kCar, 10, 0, shown), Moving(7, protocol::EntityKind::kCar, 10, 0, shown)},
               1'000'000'000);
  REQUIRE(world.HasEgo());
  CHECK((world.EgoAt(1'000'000'000).pose.position_m - shown.position_m).norm() < 1e-9);
  // 0.1 s later the display has moved on from where it was shown, at the received speed.
  CHECK((world.EgoAt(1'100'000'000).pose.position_m - Vec3(10.5, 0.2, 0)).norm() < 1e-9);
  const auto others = world.OthersAt(900'000'000);
  REQUIRE(others.size() == 1);
  CHECK(others[0].id == 7);
  CHECK((others[0].kinematics.pose.position_m - Vec3(8.5, 0.2, 0)).norm() < 1e-9);
}

TEST_CASE("sensor world: each entity kind is carried with its own dead-reckoning model") {
  SensorWorld world(kSession, AttachedVehicleId("ego"));
  const Pose shown{Vec3::Zero(), Quat::Identity()};
  // The same motion (3 m/s along +x, yawing at 0.5 rad/s) for three kinds of entity.
  const auto kinds = {protocol::EntityKind::kPedestrian, protocol::EntityKind::kCar, protocol::EntityKind::kStaticObject};
  std::vector<RemoteEntity> remote;
  uint64_t id = 0;
  for (auto kind : kinds) remote.push_back(Moving(++id, kind, 3, 0.5, shown));
  world.Update(remote, 0);
  const auto at = world.OthersAt(1'000'000'000);
  REQUIRE(at.size() == 3);
  for (size_t i = 0; i < at.size(); ++i) {
    const Pose expected = dr::Extrapolate(dr::ModelForKind(at[i].kind), remote[i].state.kinematics, 1'000'000'000);
    CHECK((at[i].kinematics.pose.position_m - expected.position_m).norm() < 1e-9);
    CHECK(AngleBetween(at[i].kinematics.pose.orientation, expected.orientation) < 1e-9);
  }
  // They differ: FPW holds the heading, RVB turns with the yaw rate, static holds the pose.
  CHECK(AngleBetween(at[0].kinematics.pose.orientation, Quat::Identity()) < 1e-12);
  CHECK(AngleBetween(at[1].kinematics.pose.orientation, Quat::Identity()) == doctest::Approx(0.5));
  CHECK(at[0].kinematics.pose.position_m.x() == doctest::Approx(3.0));
  CHECK(at[2].kinematics.pose.position_m.norm() < 1e-12);
}

TEST_CASE("world view blend: a driver seat blends corrections, every other role shows the estimate, keys override") {
  const auto session = config::LoadSessionText(R"(
[[node]]
name = "seat"
role = "driver"
input = "model:follow"
headless = true
[[node]]
name = "lidar"
role = "sensor"
attach_to = "seat"
[[node.sensor]]
name = "imu"
type = "imu"
[[node]]
name = "obs"
role = "observer"
[[node]]
name = "calm"
role = "observer"
blend_time_s = 0.2
blend_speed_mps = 0.5
[[node]]
name = "sharp"
role = "driver"
input = "model:follow"
headless = true
blend_time_s = 0
)", "blend.toml");
  const auto track = [&](const char* name) { return ViewTrackDef(*session.FindNode(name)); };
  CHECK(track("seat").blend_time_s == doctest::Approx(0.15));
  CHECK(track("seat").max_correction_mps == doctest::Approx(0.3));
  CHECK(track("lidar").blend_time_s == 0);
  CHECK(track("obs").blend_time_s == 0);
  CHECK(track("calm").blend_time_s == doctest::Approx(0.2));
  CHECK(track("calm").max_correction_mps == doctest::Approx(0.5));
  CHECK(track("sharp").blend_time_s == 0);
  for (const char* name : {"seat", "lidar", "obs", "calm", "sharp"}) CHECK(dr::ValidateTrackDef(track(name)).empty());

  // A blend of 0 shows a correction at once; the seat's default spreads it.
  dr::RemoteTrack snap(track("obs")), smooth(track("seat"));
  KinematicState k;
  k.stamp_ns = 0;
  k.velocity_mps = Vec3(10, 0, 0);
  for (auto* t : {&snap, &smooth}) t->OnUpdate(k, 0);
  k.stamp_ns = 100'000'000;
  k.pose.position_m = Vec3(1.05, 0, 0);  // 5 cm ahead of the dead-reckoned 1.0 m
  for (auto* t : {&snap, &smooth}) t->OnUpdate(k, 100'000'000);
  CHECK(snap.At(100'000'000).position_m.x() == doctest::Approx(1.05));
  CHECK(smooth.At(100'000'000).position_m.x() == doctest::Approx(1.0).epsilon(1e-6));

  // Out-of-range values are refused with the key.
  for (const char* bad : {"blend_time_s = -1", "blend_time_s = 11", "blend_speed_mps = 0"}) {
    INFO(bad);
    try {
      config::LoadSessionText(std::string("[[node]]\nname = \"x\"\n") + bad + "\n", "bad.toml");
      FAIL("accepted");
    } catch (const config::ConfigError& e) {
      CHECK(std::string(e.what()).find(std::string(bad).substr(0, std::string(bad).find(' '))) != std::string::npos);
    }
  }
}
