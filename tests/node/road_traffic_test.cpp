#include "platoon/road/opendrive.hpp"
#include "platoon/road/road_generator.hpp"
#include "platoon/vehicle/road_traffic.hpp"

#include <doctest/doctest.h>

using namespace platoon;
using namespace platoon::vehicle;

TEST_CASE("road traffic: 200 vehicles for 10 simulated minutes on a generated road have no collisions") {
  road::RoadGeneratorDef gen = road::DefaultRoadGeneratorDef();
  gen.seed = 7;
  gen.layout.lane_widths_right_m = {3.5, 3.5};
  const road::Road road(road::GenerateRoad(gen, 6000.0));
  REQUIRE(road.LanesRight() >= 2);
  RoadTrafficDef def = DefaultRoadTrafficDef();
  def.vehicles = 200;
  def.idm.desired_speed_mps = 15;
  RoadTraffic traffic(road, def);
  const double dt = 0.05;
  TrafficCheck worst;
  double mean_speed = 0;
  for (int step = 0; step < static_cast<int>(600 / dt); ++step) {
    traffic.Step(dt);
    if (step % 10 == 0) {
      const TrafficCheck c = traffic.Check();
      worst.overlaps += c.overlaps;
      worst.min_gap_m = std::min(worst.min_gap_m, c.min_gap_m);
      worst.min_accel_mps2 = c.min_accel_mps2;
    }
  }
  for (const auto& c : traffic.Cars()) mean_speed += c.speed_mps / static_cast<double>(traffic.Cars().size());
  MESSAGE("10 min, 200 vehicles: overlaps " << worst.overlaps << ", smallest gap " << worst.min_gap_m
                                            << " m, hardest braking " << worst.min_accel_mps2 << " m/s^2, lane changes "
                                            << traffic.LaneChanges() << ", mean speed " << mean_speed << " m/s");
  CHECK(worst.overlaps == 0);
  CHECK(worst.min_gap_m > 0.5);
  CHECK(worst.min_accel_mps2 > -9.0);   // never beyond what tyres can do
  CHECK(traffic.LaneChanges() > 10);    // MOBIL actually changes lanes
  CHECK(mean_speed > 5.0);              // steady traffic, not a jam
}

TEST_CASE("road traffic: on a one-way road of three lanes every vehicle drives with the road, no collisions") {
  road::RoadGeneratorDef gen = road::DefaultRoadGeneratorDef();
  gen.seed = 5;
  gen.layout.lane_widths_left_m = {};  // [road] oncoming_lanes = 0
  gen.layout.lane_widths_right_m = {3.5, 3.5, 3.5};
  const road::Road road(road::GenerateRoad(gen, 3000.0));
  REQUIRE(road.LanesLeft() == 0);
  RoadTrafficDef def = DefaultRoadTrafficDef();
  def.vehicles = 60;
  RoadTraffic traffic(road, def);
  int overlaps = 0;
  for (int step = 0; step < 2400; ++step) {
    traffic.Step(0.05);
    if (step % 20 == 0) overlaps += traffic.Check().overlaps;
    for (const auto& c : traffic.Cars()) REQUIRE(c.lane < 0);
  }
  CHECK(overlaps == 0);
  CHECK(traffic.LaneChanges() > 0);
}

TEST_CASE("road traffic: the same seed gives the same traffic") {
  road::RoadGeneratorDef gen = road::DefaultRoadGeneratorDef();
  gen.layout.lane_widths_right_m = {3.5, 3.5};
  const road::Road road(road::GenerateRoad(gen, 2000.0));
  RoadTrafficDef def = DefaultRoadTrafficDef();
  def.vehicles = 40;
  RoadTraffic a(road, def), b(road, def);
  for (int i = 0; i < 600; ++i) {
    a.Step(0.05);
    b.Step(0.05);
  }
  for (size_t i = 0; i < a.Cars().size(); ++i) {
    CHECK(a.Cars()[i].s_m == b.Cars()[i].s_m);
    CHECK(a.Cars()[i].lane == b.Cars()[i].lane);
  }
}

TEST_CASE("road traffic: vehicles react to an external vehicle stopped in their lane: they stop or pass, never hit it") {
  road::RoadGeneratorDef gen = road::DefaultRoadGeneratorDef();
  gen.layout.lane_widths_right_m = {3.5, 3.5};
  const road::Road road(road::GenerateRoad(gen, 2000.0));
  RoadTrafficDef def = DefaultRoadTrafficDef();
  def.vehicles = 30;
  RoadTraffic traffic(road, def);
  // A stopped car (a human driver who parked in lane -1) 500 m along the road.
  traffic.SetExternal({ExternalCar{-1, 500.0, 0.0}});
  int overlaps = 0;
  for (int i = 0; i < 3600; ++i) {  // 3 minutes at 20 Hz
    traffic.Step(0.05);
    overlaps += traffic.Check().overlaps;
  }
  // Nobody drove through it: every car in lane -1 just behind it is stopped or changing lanes.
  CHECK(overlaps == 0);
  CHECK(traffic.LaneChanges() > 0);
  const auto on = traffic.OnLane(road.LaneCenter(200.0, -2));
  REQUIRE(on.has_value());
  CHECK(on->first == -2);
  CHECK(on->second == doctest::Approx(200.0).epsilon(1e-3));
}

TEST_CASE("road traffic: the road's speed limit caps desired speeds") {
  road::RoadGeneratorDef gen = road::DefaultRoadGeneratorDef();
  gen.layout.speed_limit_mps = 8.0;
  const road::Road road(road::GenerateRoad(gen, 2000.0));
  RoadTrafficDef def = DefaultRoadTrafficDef();
  def.vehicles = 10;
  def.idm.desired_speed_mps = 15;
  RoadTraffic traffic(road, def);
  for (int i = 0; i < 2400; ++i) traffic.Step(0.05);
  for (const auto& c : traffic.Cars()) {
    CHECK(c.desired_speed_mps <= 8.0);
    CHECK(c.speed_mps <= 8.0 + 1e-6);
  }
}

TEST_CASE("road traffic: with lane_changes false every vehicle keeps its lane and a commanded change still happens") {
  road::RoadGeneratorDef gen = road::DefaultRoadGeneratorDef();
  gen.seed = 7;
  gen.layout.lane_widths_right_m = {3.5, 3.5};
  const road::Road road(road::GenerateRoad(gen, 3000.0));
  RoadTrafficDef def = DefaultRoadTrafficDef();
  def.vehicles = 120;
  def.idm.desired_speed_mps = 15;
  def.desired_speed_spread = 0.3;  // fast cars behind slow ones: MOBIL wants to pass
  RoadTraffic free(road, def);
  def.lane_changes = false;
  RoadTraffic kept(road, def);
  std::vector<int> lanes;
  for (const auto& c : kept.Cars()) lanes.push_back(c.lane);
  int overlaps = 0;
  for (int step = 0; step < 1200; ++step) {  // 60 s
    free.Step(0.05);
    kept.Step(0.05);
    if (step % 20 == 0) overlaps += kept.Check().overlaps;
  }
  MESSAGE("60 s, 120 vehicles: lane changes " << free.LaneChanges() << " with MOBIL, " << kept.LaneChanges() << " without");
  CHECK(free.LaneChanges() > 0);  // the same traffic does change lanes when allowed
  CHECK(kept.LaneChanges() == 0);
  for (size_t i = 0; i < kept.Cars().size(); ++i) CHECK(kept.Cars()[i].lane == lanes[i]);
  CHECK(overlaps == 0);
  // A scenario's change_lane still moves a vehicle that keeps its lane on its own.
  const uint32_t lead = kept.Cars()[0].index;
  const int from = kept.Cars()[0].lane, to = from == road.LanesRight() * -1 ? from + 1 : from - 1;
  REQUIRE(kept.ChangeLane(lead, to));
  for (int step = 0; step < 200; ++step) kept.Step(0.05);  // 10 s: a change takes 3 s
  CHECK(kept.Cars()[0].lane == to);
}

TEST_CASE("road traffic: a lead car keeps its gap ahead of a participant who speeds up and slows down and a brake command overrides it") {
  road::RoadGeneratorDef gen = road::DefaultRoadGeneratorDef();
  gen.seed = 3;
  gen.layout.lane_widths_right_m = {3.5, 3.5};
  const road::Road road(road::GenerateRoad(gen, 4000.0));
  RoadTrafficDef def = DefaultRoadTrafficDef();
  def.vehicles = 1;
  def.first_s_m = 300;
  def.first_lane = -1;
  def.first_speed_mps = 15;
  def.lead_of_id = 42;
  def.lead_gap_m = 40;
  RoadTraffic traffic(road, def);
  // The participant: 20 m/s from s = 100 for 40 s, then 28 m/s for 40 s, then 12 m/s for 40 s.
  double s = 100, v = 20;
  const double dt = 0.05;
  auto gap = [&] { return traffic.Cars()[0].s_m - s - def.vehicle_length_m; };
  std::vector<double> settled;
  for (int step = 0; step < 2400; ++step) {
    const double t = step * dt;
    v = t < 40 ? 20 : (t < 80 ? 28 : 12);
    s += v * dt;
    traffic.SetExternal({ExternalCar{-2, s, v, 42}});
    traffic.Step(dt);
    // The last 8 s of each phase: the gap has settled (the steps are instant, the car's acceleration is
    // bounded by max_accel 1.5 and comfort_decel 2 m/s^2, so it lags behind each step for a while).
    if ((t > 32 && t < 40) || (t > 72 && t < 80) || (t > 112 && t < 120)) settled.push_back(gap());
  }
  double worst = 0;
  for (double g : settled) worst = std::max(worst, std::abs(g - 40.0));
  MESSAGE("lead car: worst gap error " << worst << " m once settled, at 20, 28 and 12 m/s");
  CHECK(worst < 2.0);
  CHECK(traffic.Check().min_accel_mps2 >= -def.idm.comfort_decel_mps2 - 1e-9);  // within its comfortable braking
  // A scenario's brake command overrides the keeping.
  const double v_before = traffic.Cars()[0].speed_mps;
  REQUIRE(traffic.Brake(0, 6.0, 1.0));
  traffic.SetExternal({ExternalCar{-2, s, v, 42}});
  traffic.Step(dt);
  CHECK(traffic.Cars()[0].speed_mps == doctest::Approx(v_before - 6.0 * dt).epsilon(1e-6));  // the command wins
}

TEST_CASE("road traffic: on an OpenDRIVE road cars keep to the driving lanes and to their centres as laneOffset and widths change") {
  // lane_profile.xodr: a laneOffset cubic, lane -1's width growing from s = 40 m, lane -2 a shoulder in the first
  // section and a lane opening from width 0 in the second: only lane -1 is driving all along.
  const road::Road road = road::LoadOpenDriveFile(std::string(PLATOON_SOURCE_DIR) + "/tests/data/opendrive/lane_profile.xodr").Roads().front();
  RoadTrafficDef def = DefaultRoadTrafficDef();
  def.vehicles = 4;
  def.idm.desired_speed_mps = 12;
  RoadTraffic traffic(road, def);
  REQUIRE(traffic.Lanes() == std::vector<int>{-1});
  double worst = 0, t_min = 1e9, t_max = -1e9;
  for (int step = 0; step < 600; ++step) {
    traffic.Step(0.05);
    for (const auto& c : traffic.Cars()) {
      CHECK(c.lane == -1);
      const Vec3 p = traffic.State(c, 0).pose.position_m;
      const road::RoadCoord at = road.Project(p);
      const double centre = road.LaneCenterOffsetAt(at.s_m, -1);
      worst = std::max(worst, std::abs(at.t_m - centre));
      t_min = std::min(t_min, at.t_m);
      t_max = std::max(t_max, at.t_m);
    }
  }
  MESSAGE("largest distance from lane -1's centre: " << worst << " m; the centre ranged over t = " << t_min << " .. " << t_max);
  CHECK(worst < 1e-6);
  CHECK(t_max - t_min > 0.3);  // the centre moved: the test is not on a constant lane
  // lane_types.xodr: driving -1 and -2, then a shoulder, a border, parking, biking and walking: traffic takes -1 and -2.
  const road::Road types = road::LoadOpenDriveFile(std::string(PLATOON_SOURCE_DIR) + "/tests/data/opendrive/lane_types.xodr").Roads().front();
  RoadTraffic on_types(types, def);
  CHECK(on_types.Lanes() == std::vector<int>{-1, -2});
}
