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
