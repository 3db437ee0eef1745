// Traffic a study controls (issue 43 item 4): fixed lanes per vehicle, a lead car that puts itself in front
// of a participant, follows it into its lane and can be released; the session keys and their errors.
#include "platoon/config/session.hpp"
#include "platoon/road/road_generator.hpp"
#include "platoon/vehicle/road_traffic.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

namespace study_traffic_test_detail {

using namespace platoon;
using namespace platoon::vehicle;

road::Road StudyRoad(int lanes) {
  road::RoadGeneratorDef gen = road::DefaultRoadGeneratorDef();
  gen.seed = 7;
  gen.layout.lane_widths_right_m.assign(static_cast<size_t>(lanes), 3.5);
  return road::Road(road::GenerateRoad(gen, 4000.0));
}

// The lead car's bumper-to-bumper gap ahead of a participant at s on a periodic road.
double StudyGap(const RoadTraffic& t, double s, double length_m, double road_length_m) {
  double ds = std::fmod(t.Cars()[0].s_m - s + 2 * road_length_m, road_length_m);
  if (ds > 0.5 * road_length_m) ds -= road_length_m;
  return ds - length_m;
}

std::string StudySessionError(const std::string& traffic_keys) {
  const std::string text = R"(
[session]
name = "study"
mode = "lockstep"
step_hz = 100
end_s = 5

[road]
generate_length_m = 2000
seed = 1
lanes = 2

[[node]]
name = "others"
role = "traffic"
traffic_model = "road"
vehicles = 4
)" + traffic_keys + R"(
[[node]]
name = "seat"
role = "driver"
input = "model:follow"
headless = true
)";
  try {
    config::ValidateSession(config::LoadSessionText(text, "study.toml"));
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return {};
}

}  // namespace study_traffic_test_detail

using namespace study_traffic_test_detail;

TEST_CASE("study traffic: vehicles with a fixed lane start in it and never leave it while the others change lanes") {
  const road::Road road = StudyRoad(3);
  RoadTrafficDef def = DefaultRoadTrafficDef();
  def.vehicles = 60;
  def.vehicle_lanes = {-3, -3, -1, -2, 0, -1};  // vehicle 4 free, as are 6..59
  RoadTraffic traffic(road, def);
  std::vector<int> start_lane;
  for (const auto& c : traffic.Cars()) start_lane.push_back(c.lane);
  for (size_t i = 0; i < def.vehicle_lanes.size(); ++i)
    if (def.vehicle_lanes[i] != 0) CHECK(start_lane[i] == def.vehicle_lanes[i]);
  uint64_t free_changes = 0;
  int overlaps = 0;
  for (int step = 0; step < 1200; ++step) {  // 60 s at 20 Hz
    traffic.Step(0.05);
    for (size_t i = 0; i < def.vehicle_lanes.size(); ++i)
      if (def.vehicle_lanes[i] != 0) {
        CHECK(traffic.Cars()[i].lane == def.vehicle_lanes[i]);
        CHECK(traffic.Cars()[i].target_lane == def.vehicle_lanes[i]);
      }
    if (step % 20 == 0) overlaps += traffic.Check().overlaps;
  }
  for (size_t i = def.vehicle_lanes.size(); i < traffic.Cars().size(); ++i) free_changes += traffic.Cars()[i].lane_changes;
  MESSAGE("fixed vehicles kept their lanes for 60 s; the 54 free ones changed lanes " << free_changes << " times");
  CHECK(free_changes > 0);  // MOBIL still runs for the others
  CHECK(overlaps == 0);
  // A scenario's change_lane still moves a fixed vehicle.
  REQUIRE(traffic.ChangeLane(2, -2));
  for (int step = 0; step < 100; ++step) traffic.Step(0.05);
  CHECK(traffic.Cars()[2].lane == -2);
}

TEST_CASE("study traffic: a lead car puts itself ahead of the participant and follows it into its lane") {
  const road::Road road = StudyRoad(2);
  RoadTrafficDef def = DefaultRoadTrafficDef();
  def.vehicles = 6;
  def.lead_of_id = 77;
  def.lead_gap_m = 35;
  def.lane_changes = false;
  def.idm.desired_speed_mps = 30;  // faster than the participant: released, it pulls away
  RoadTraffic traffic(road, def);
  // The participant at 22 m/s in lane -2 from s = 1000; it moves to lane -1 at t = 20 s.
  double s = 1000, v = 22;
  const double dt = 0.05;
  int lane = -2;
  traffic.SetExternal({ExternalCar{lane, s, v, 77}});
  traffic.Step(dt);
  REQUIRE(traffic.LeadPlaced());
  CHECK(traffic.Cars()[0].lane == -2);
  CHECK(StudyGap(traffic, s + v * 0, def.vehicle_length_m, road.Length()) ==
        doctest::Approx(def.lead_gap_m + v * dt).epsilon(0.01));  // placed, then one step at its speed
  double moved_at = -1, worst_settled = 0;
  for (int step = 1; step < 1200; ++step) {
    const double t = step * dt;
    if (t >= 20) lane = -1;
    s += v * dt;
    traffic.SetExternal({ExternalCar{lane, s, v, 77}});
    traffic.Step(dt);
    if (moved_at < 0 && traffic.Cars()[0].lane == -1) moved_at = t;
    // It acts on the participant's position as of the step's start and then moves a step: settled, it is
    // v dt beyond the gap when measured after the step.
    if (t > 50)
      worst_settled = std::max(worst_settled,
                               std::abs(StudyGap(traffic, s, def.vehicle_length_m, road.Length()) - def.lead_gap_m - v * dt));
  }
  MESSAGE("lead car in the participant's new lane " << moved_at - 20 << " s after it changed; worst gap error "
                                                    << worst_settled << " m over the last 10 s");
  // It waits lead_lane_delay_s, then a lane change of lane_change_time_s (to within a step each).
  CHECK(moved_at - 20 == doctest::Approx(def.lead_lane_delay_s + def.lane_change_time_s).epsilon(0.05));
  CHECK(worst_settled < 0.3);
  CHECK(traffic.Check().overlaps == 0);

  // Released (the lead_hold parameter), it drives on at its own desired speed, faster than the participant.
  REQUIRE(traffic.Cars()[0].desired_speed_mps > v + 2);
  traffic.SetLeadHold(false);
  const double gap_before = StudyGap(traffic, s, def.vehicle_length_m, road.Length());
  for (int step = 0; step < 600; ++step) {
    s += v * dt;
    traffic.SetExternal({ExternalCar{lane, s, v, 77}});
    traffic.Step(dt);
  }
  const double gap_after = StudyGap(traffic, s, def.vehicle_length_m, road.Length());
  MESSAGE("released: gap " << gap_before << " m -> " << gap_after << " m in 30 s");
  CHECK(gap_after > gap_before + 30);
}

TEST_CASE("study traffic: a lead car with lead_follows_lane false keeps its lane and one with start_s_m stays where it was put") {
  const road::Road road = StudyRoad(2);
  RoadTrafficDef def = DefaultRoadTrafficDef();
  def.vehicles = 1;
  def.lead_of_id = 77;
  def.lead_follows_lane = false;
  def.first_s_m = 300;
  def.first_lane = -1;
  def.first_speed_mps = 20;
  RoadTraffic traffic(road, def);
  double s = 100;
  for (int step = 0; step < 400; ++step) {
    s += 20 * 0.05;
    traffic.SetExternal({ExternalCar{-2, s, 20, 77}});
    traffic.Step(0.05);
  }
  CHECK_FALSE(traffic.LeadPlaced());
  CHECK(traffic.Cars()[0].lane == -1);
  CHECK(traffic.Cars()[0].lane_changes == 0);
}

TEST_CASE("study traffic config: vehicle_lanes and lead_follows_lane are checked with the key named") {
  CHECK(StudySessionError("vehicle_lanes = [-2, 0, -1]\n").empty());
  const std::string beyond = StudySessionError("vehicle_lanes = [-3]\n");
  MESSAGE(beyond);
  CHECK(beyond.find("vehicle_lanes: lane -3 is not a driving lane of the road (it has 2 lanes right") != std::string::npos);
  CHECK(StudySessionError("vehicle_lanes = [1]\n").find("vehicle_lanes") != std::string::npos);
  CHECK(StudySessionError("vehicle_lanes = [-1.5]\n").find("expected whole lanes") != std::string::npos);
  CHECK(StudySessionError("vehicle_lanes = [-1, -1, -1, -1, -1]\n").find("has 5 lanes for 4 vehicles") != std::string::npos);
  CHECK(StudySessionError("lead_follows_lane = false\n").find("lead_follows_lane") != std::string::npos);
  CHECK(StudySessionError("lead = \"seat\"\nlead_follows_lane = false\n").empty());
}
