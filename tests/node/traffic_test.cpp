#include "platoon/node/traffic.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace platoon;
using namespace platoon::node;

TEST_CASE("stadium track: the path is continuous and closes on itself") {
  StadiumTrack track;
  const double L = track.LengthM();
  CHECK(L == doctest::Approx(2 * 100 + 2 * M_PI * 30));
  // Small steps along the whole track never jump, and heading changes smoothly.
  KinematicState prev = track.At(0, 10, 0);
  for (double s = 0.05; s <= L + 1e-9; s += 0.05) {
    const KinematicState k = track.At(s, 10, 0);
    CHECK((k.pose.position_m - prev.pose.position_m).norm() <= 0.0501);
    CHECK(AngleBetween(k.pose.orientation, prev.pose.orientation) <= 0.05 / 30 + 1e-9);
    prev = k;
  }
  CHECK((track.At(L, 10, 0).pose.position_m - track.At(0, 10, 0).pose.position_m).norm() < 1e-9);
}

TEST_CASE("stadium track: velocity is tangent, acceleration centripetal in the bends") {
  StadiumTrack track;
  const double v = 15;
  const KinematicState straight = track.At(50, v, 0);
  CHECK(straight.velocity_mps.norm() == doctest::Approx(v));
  CHECK(straight.acceleration_mps2.norm() == doctest::Approx(0));
  const KinematicState bend = track.At(100 + 0.5 * M_PI * 30, v, 0);  // middle of the right half circle
  CHECK(bend.acceleration_mps2.norm() == doctest::Approx(v * v / 30));
  CHECK(bend.angular_velocity_radps.z() == doctest::Approx(v / 30));
  // Centripetal: acceleration is perpendicular to velocity and points to the bend's centre (+x side at 50 m).
  CHECK(std::abs(bend.acceleration_mps2.dot(bend.velocity_mps)) < 1e-9);
  CHECK(bend.acceleration_mps2.x() < 0);
}

TEST_CASE("traffic truth: ids are stable and distinct, the truth is a pure function of sim time") {
  config::NodeDef node;
  node.name = "north";
  node.vehicles = 3;
  CHECK(VehicleId("north", 2) == VehicleId("north", 2));
  CHECK(VehicleId("north", 2) != VehicleId("north", 1));
  CHECK(VehicleId("north", 0) != VehicleId("south", 0));
  const auto a = TrafficTruth(node, 1, 5'000'000'000);
  const auto b = TrafficTruth(node, 1, 5'000'000'000);
  CHECK(a == b);
  CHECK(a.id == VehicleId("north", 1));
  // Moving at speed_mps x (1 + 0.01 index).
  CHECK(a.kinematics.velocity_mps.norm() == doctest::Approx(node.speed_mps * 1.01));
}
