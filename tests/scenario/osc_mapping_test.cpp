// OpenSCENARIO mapping (shared/src/scenario/osc_mapping.cpp, osc_expression.cpp): parameters and
// expressions, entities to road traffic nodes or seats, the storyboard to events, coverage and refusals
// with file:line. Fixtures in tests/data/scenarios/ are written for these tests.
#include "../support/session_fixture.hpp"

#include "platoon/config/session.hpp"
#include "platoon/process/child.hpp"
#include "platoon/scenario/osc.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

namespace platoon::scenario {
namespace osc_mapping_test_detail {

std::string Fixture(const std::string& name) { return std::string(PLATOON_SOURCE_DIR) + "/tests/data/scenarios/" + name; }

// The start of a minimal scenario around one storyboard body (entities: Car at s = 20 m in lane -1).
std::string Scenario(const std::string& story, const std::string& params = "") {
  return std::string(R"(<?xml version="1.0"?>
<OpenSCENARIO>
  <FileHeader revMajor="1" revMinor="1" date="2026-11-28T12:00:00" description="t" author="platoon"/>
  <ParameterDeclarations>)") + params + R"(</ParameterDeclarations>
  <Entities>
    <ScenarioObject name="Car"><Vehicle name="car" vehicleCategory="car"/></ScenarioObject>
  </Entities>
  <Storyboard>
    <Init><Actions><Private entityRef="Car"><PrivateAction><TeleportAction><Position>
      <LanePosition roadId="0" laneId="-1" s="20"/></Position></TeleportAction></PrivateAction></Private></Actions></Init>
)" + story + R"(
  </Storyboard>
</OpenSCENARIO>
)";
}

// 1-based line of the first occurrence of `needle` in `text`.
int LineOf(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  REQUIRE(at != std::string::npos);
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const CoverageItem* Find(const OscMapping& m, const std::string& element_tail) {
  for (const auto& c : m.coverage)
    if (c.element.size() >= element_tail.size() &&
        c.element.compare(c.element.size() - element_tail.size(), element_tail.size(), element_tail) == 0)
      return &c;
  return nullptr;
}

}  // namespace osc_mapping_test_detail

using namespace osc_mapping_test_detail;

TEST_CASE("osc: expressions follow arithmetic precedence over declared parameters") {
  const std::map<std::string, std::string> p = {{"a", "3"}, {"b", "4.5"}, {"on", "true"}, {"name", "x"}};
  CHECK(EvaluateExpression("1 + 2 * 3", p) == 7);
  CHECK(EvaluateExpression("(1 + 2) * 3", p) == 9);
  CHECK(EvaluateExpression("$a * $b - 1", p) == doctest::Approx(12.5));
  CHECK(EvaluateExpression("-$a + 10 % 4", p) == -1);
  CHECK(EvaluateExpression("round(2.5) + floor(-1.5) + ceil(0.2)", p) == 3 + -2 + 1);
  CHECK(EvaluateExpression("sqrt(16) + pow(2, 10)", p) == 4 + 1024);
  CHECK(EvaluateExpression("$on and not 0", p) == 1);
  CHECK(EvaluateExpression("72 / 3.6", p) == doctest::Approx(20.0));
  CHECK_THROWS_WITH_AS(EvaluateExpression("$missing + 1", p), doctest::Contains("no parameter \"missing\""), std::invalid_argument);
  CHECK_THROWS_WITH_AS(EvaluateExpression("$name * 2", p), doctest::Contains("a numeric parameter"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(EvaluateExpression("1 / 0", p), doctest::Contains("divisor"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(EvaluateExpression("2 +", p), doctest::Contains("at character 4"), std::invalid_argument);
}

TEST_CASE("osc: the linear speed fixture maps to a traffic node and events with resolved parameters") {
  const OscMapping m = LoadOpenScenarioFile(Fixture("linear_speed.xosc"));
  REQUIRE(m.nodes.size() == 1);
  const config::NodeDef& n = m.nodes[0];
  CHECK(n.name == "Car");
  CHECK(n.role == protocol::Role::kTraffic);
  CHECK(n.traffic_model == "road");
  CHECK(n.vehicles == 1);
  CHECK(n.start_s_m == 50);
  CHECK(n.start_lane == -1);
  CHECK(n.start_speed_mps == 10);  // $StartSpeed
  CHECK_FALSE(n.lane_changes);
  // The act's start event first, then the maneuver's events.
  REQUIRE(m.events.size() == 3);
  CHECK(m.events[0].name == "act:act");
  CHECK(m.events[1].name == "speed_up");
  CHECK(m.events[2].name == "after");
  const config::EventDef& e = m.events[1];
  CHECK(e.priority == "overwrite");
  CHECK(e.group == "group/maneuver");
  CHECK(e.max_count == 1);
  // Its condition: the act started AND sim time > 2 s (rising).
  REQUIRE(e.any.size() == 1);
  REQUIRE(e.any[0].size() == 2);
  CHECK(e.any[0][0].kind == config::ConditionDef::Kind::kEventState);
  CHECK(e.any[0][0].text == "act:act");
  CHECK(e.any[0][1].kind == config::ConditionDef::Kind::kSimTime);
  CHECK(e.any[0][1].sim_time_s == doctest::Approx(2.0));  // greaterThan: from 1 ns after 2 s
  CHECK(e.any[0][1].edge == config::ConditionDef::Edge::kRising);
  REQUIRE(e.actions.size() == 1);
  const config::ActionDef& a = e.actions[0];
  CHECK(a.kind == config::ActionDef::Kind::kSpeed);
  CHECK(a.target == "Car");
  CHECK(a.shape == "linear");
  CHECK(a.dimension == "rate");
  CHECK(a.amount == 2);                                // $Rate
  CHECK(a.speed_mps == doctest::Approx(72.0 / 3.6));   // ${$TargetKmh / 3.6}
  // completeState of speed_up: its event done.
  REQUIRE(m.events[2].any.size() == 1);
  CHECK(m.events[2].any[0][1].kind == config::ConditionDef::Kind::kEventState);
  CHECK(m.events[2].any[0][1].text == "speed_up");
  CHECK(m.events[2].any[0][1].state == "done");
  CHECK(m.events[2].actions[0].kind == config::ActionDef::Kind::kScenarioParam);
  // Parameters keep their declared values for the session.
  CHECK(m.params.size() == 3);
  // Coverage: every element accounted for, nothing refused; the bounding box is ignored with its reason.
  CHECK(m.refused == 0);
  const CoverageItem* box = Find(m, "Vehicle/BoundingBox");
  REQUIRE(box);
  CHECK(box->status == CoverageItem::Status::kIgnored);
  CHECK(box->line == LineOf(ReadText(Fixture("linear_speed.xosc")), "<BoundingBox>"));
  const CoverageItem* dims = Find(m, "BoundingBox/Dimensions");
  REQUIRE(dims);
}

TEST_CASE("osc: a linear rate reaches the target at dv over a and a sinusoid is sampled on its curve") {
  config::ActionDef a;
  a.kind = config::ActionDef::Kind::kSpeed;
  a.shape = "linear";
  a.dimension = "rate";
  a.amount = 2.0;
  // 10 -> 20 m/s at 2 m/s^2: 5 s; held afterwards.
  auto p = config::SpeedProfilePoints(a, 10, 20);
  REQUIRE(p.size() == 3);
  CHECK(p[0] == std::pair<double, double>{0.0, 10.0});
  CHECK(p[1] == std::pair<double, double>{5.0, 20.0});
  CHECK(p[2].first > 1e5);
  CHECK(p[2].second == 20.0);
  // Over a distance: the mean speed covers it: 150 m at (10 + 20) / 2 takes 10 s.
  a.dimension = "distance";
  a.amount = 150;
  CHECK(config::ActionDuration(a, 10, 20) == doctest::Approx(10.0));
  // Sinusoidal over 2 s: at a quarter, (1 - cos(pi / 4)) / 2 of the change.
  a.shape = "sinusoidal";
  a.dimension = "time";
  a.amount = 2.0;
  p = config::SpeedProfilePoints(a, 0, 10);
  REQUIRE(p.size() == 42);  // 40 pieces at 20 Hz, and the hold
  CHECK(p[10].first == doctest::Approx(0.5));
  CHECK(p[10].second == doctest::Approx(10 * (1 - std::cos(M_PI / 4)) / 2));
  CHECK(config::TransitionShape("cubic", 0.25) == doctest::Approx(0.15625));
}

TEST_CASE("osc: a synchronize profile covers its distance in its time and a timed path profile keeps every time") {
  // Integrated independently at 1 ms (trapezoid of the piecewise linear speed).
  auto speed_at = [](const std::vector<std::pair<double, double>>& p, double t) {
    if (t <= p.front().first) return p.front().second;
    for (size_t k = 1; k < p.size(); ++k)
      if (t <= p[k].first) return p[k - 1].second + (t - p[k - 1].first) / (p[k].first - p[k - 1].first) * (p[k].second - p[k - 1].second);
    return p.back().second;
  };
  auto distance = [&](const std::vector<std::pair<double, double>>& p, double until) {
    double d = 0;
    for (double t = 0; t < until - 1e-12; t += 1e-3) d += 0.5e-3 * (speed_at(p, t) + speed_at(p, t + 1e-3));
    return d;
  };
  // 424.85 m in 18.99 s from 15 m/s, arriving at 20 m/s: the middle speed 2 d / T - (v0 + vf) / 2.
  auto p = config::SynchronizeProfile(424.85, 18.99, 15, 20.0);
  REQUIRE(p.size() == 4);
  CHECK(p[1].second == doctest::Approx(2 * 424.85 / 18.99 - 17.5));
  CHECK(distance(p, 18.99) == doctest::Approx(424.85).epsilon(1e-6));
  CHECK(speed_at(p, 18.99) == doctest::Approx(20.0));
  // Without a final speed: one ramp; impossible without reversing: empty.
  p = config::SynchronizeProfile(100, 10, 5, std::nullopt);
  CHECK(distance(p, 10) == doctest::Approx(100).epsilon(1e-6));
  CHECK(config::SynchronizeProfile(10, 10, 20, std::nullopt).empty());
  CHECK(config::SynchronizeProfile(10, 10, 20, 20.0).empty());
  // A timed path: 30, 44, 38 and 80 m at 1.5, 3.5, 5.5, 9.5 s from 20 m/s: each distance exact at its time.
  const std::vector<double> t = {1.5, 3.5, 5.5, 9.5}, s = {30, 74, 112, 192};
  bool exact = false;
  p = config::TimedPathProfile(t, s, 20, &exact);
  CHECK(exact);
  for (size_t k = 0; k < t.size(); ++k) CHECK(distance(p, t[k]) == doctest::Approx(s[k]).epsilon(1e-6));
  CHECK(speed_at(p, 100) == doctest::Approx(80.0 / 4.0).epsilon(0.02));
  // Times that ask it to go back: it waits (speed 0) and says so.
  p = config::TimedPathProfile({1, 2}, {30, 20}, 20, &exact);
  CHECK_FALSE(exact);
  for (const auto& [time, v] : p) CHECK(v >= 0);
}

TEST_CASE("osc: synchronize and follow_path in a session file are checked with file and line") {
  auto load = [](const std::string& actions) {
    const std::string text = "[session]\nname = \"x\"\n[road]\nlanes = 2\n[[node]]\nname = \"a\"\nrole = \"traffic\"\n"
                             "traffic_model = \"road\"\nvehicles = 1\n[[node]]\nname = \"b\"\nrole = \"traffic\"\n"
                             "traffic_model = \"road\"\nvehicles = 1\n[[event]]\nname = \"e\"\nwhen = { sim_time = 1.0 }\n"
                             "do = [ " + actions + " ]\n";
    config::SessionDef s = config::LoadSessionText(text, "s.toml");
    config::ValidateSession(s);
    return s;
  };
  const auto ok = load(R"({ action = "synchronize", target = "a", master = "b", point = [100.0, -1.75], master_point = [90.0, -5.25], final_factor = 1.1 })");
  const auto& a = ok.events[0].actions[0];
  CHECK(a.kind == config::ActionDef::Kind::kSynchronize);
  CHECK(a.relative_to == "b");
  CHECK(a.factor);
  CHECK(a.delta_mps == doctest::Approx(1.1));
  CHECK_THROWS_WITH_AS(load(R"({ action = "synchronize", target = "a", master = "b", point = [100.0] , master_point = [1.0, 2.0] })"),
                       doctest::Contains("s.toml:18: event[0].do[0].point: expected 2 numbers"), config::ConfigError);
  CHECK_THROWS_WITH_AS(load(R"({ action = "synchronize", target = "a", master = "b", point = [1.0, 2.0] })"),
                       doctest::Contains("master_point"), config::ConfigError);
  CHECK_THROWS_WITH_AS(load(R"({ action = "synchronize", target = "a", master = "nobody", point = [1.0, 2.0], master_point = [1.0, 2.0] })"),
                       doctest::Contains("nobody"), config::ConfigError);
  CHECK_THROWS_WITH_AS(load(R"({ action = "synchronize", target = "a", master = "b", point = [1.0, 2.0], master_point = [1.0, 2.0], final_speed_mps = 3.0, final_factor = 1.0 })"),
                       doctest::Contains("one of final_speed_mps"), config::ConfigError);
  const auto path = load(R"({ action = "follow_path", target = "a", path = [10.0, -1.75, 20.0, -3.0], times_s = [1.0, 2.0] })");
  CHECK(path.events[0].actions[0].path_xy.size() == 4);
  CHECK_THROWS_WITH_AS(load(R"({ action = "follow_path", target = "a", path = [10.0, -1.75, 20.0] })"),
                       doctest::Contains("expected pairs x, y"), config::ConfigError);
  CHECK_THROWS_WITH_AS(load(R"({ action = "follow_path", target = "a", path = [10.0, -1.75, 20.0, -3.0], times_s = [1.0] })"),
                       doctest::Contains("one time per point"), config::ConfigError);
  CHECK_THROWS_WITH_AS(load(R"({ action = "follow_path", target = "a", path = [10.0, -1.75, 20.0, -3.0], times_s = [2.0, 1.0] })"),
                       doctest::Contains("times must increase"), config::ConfigError);
}

TEST_CASE("osc: the cut-in fixture reads catalog vehicles and places relative to another entity") {
  const OscMapping m = LoadOpenScenarioFile(Fixture("cut_in.xosc"));
  REQUIRE(m.nodes.size() == 2);
  CHECK(m.nodes[0].name == "Ego");
  CHECK(m.nodes[1].name == "Cutter");
  // RelativeLanePosition dLane -1 from lane -1: lane -2 (to the right), 5 m further; 25 + 3 m/s.
  CHECK(m.nodes[1].start_lane == -2);
  CHECK(m.nodes[1].start_s_m == 105);
  CHECK(m.nodes[1].start_speed_mps == 28);
  // Ego's controller is interactive, but no seat was given: road traffic drives it, with a warning.
  bool warned = false;
  for (const auto& w : m.warnings) warned = warned || w.find("interactive controller but no seat") != std::string::npos;
  CHECK(warned);
  // The catalog entry is in the coverage with its own file.
  bool catalog = false;
  for (const auto& c : m.coverage) catalog = catalog || c.file.find("catalogs/cars.xosc") != std::string::npos;
  CHECK(catalog);
  // storyboard_stop, the act, cut_in, close_behind.
  REQUIRE(m.events.size() == 4);
  CHECK(m.events[0].name == "storyboard_stop");
  const config::EventDef& cut = m.events[2];
  CHECK(cut.name == "cut_in");
  REQUIRE(cut.any.size() == 1);
  // act started AND storyboard not stopped AND distance > 15.
  const auto& g = cut.any[0];
  REQUIRE(g.size() == 3);
  CHECK(g[1].negate);
  CHECK(g[2].quantity == config::Quantity::kDistance);
  CHECK(g[2].entity == "Cutter");
  CHECK(g[2].other == "Ego");
  CHECK(g[2].measure == "longitudinal");
  CHECK(g[2].above == 15);
  CHECK(cut.actions[0].kind == config::ActionDef::Kind::kChangeLane);
  CHECK(cut.actions[0].relative_to == "Ego");
  CHECK(cut.actions[0].direction == 0);
  CHECK(cut.actions[0].duration_s == 3);
  CHECK(cut.actions[0].shape == "cubic");
  // close_behind: one group ANDing the cut-in's completion and the headway.
  REQUIRE(m.events[3].any.size() == 1);
  CHECK(m.events[3].any[0].size() == 4);
}

TEST_CASE("osc: with a seat the entity is the driver node's car and starts where Init puts it") {
  const std::string dir = std::string(PLATOON_SOURCE_DIR) + "/tests/data/scenarios";
  const config::SessionDef s = config::LoadSessionText(R"(
[session]
name = "seat"
[[node]]
name = "driver"
role = "driver"
input = "model:follow"
headless = true
[scenario]
file = ")" + dir + R"(/cut_in.xosc"
seats = ["Ego=driver"]
)", dir + "/seat.toml");
  config::ValidateSession(s);
  // The seat plus Cutter's traffic node; Ego has none of its own.
  REQUIRE(s.nodes.size() == 2);
  CHECK(s.nodes[0].name == "driver");
  CHECK(s.nodes[0].start_given);
  CHECK(s.nodes[0].start_s_m == 100);
  CHECK(s.nodes[0].start_lane == -1);
  CHECK(s.nodes[0].start_speed_mps == 25);
  CHECK(s.nodes[1].name == "Cutter");
  CHECK(s.has_road);
  CHECK(s.events.size() == 4);
  // Conditions on Ego measure the seat's car.
  CHECK(s.events[3].any[0][3].entity == "driver");
  CHECK(s.scenario_params.size() == 2);
}

TEST_CASE("osc: unsupported and malformed content fails with file and line") {
  // An unsupported condition: refused by name, with its line.
  const std::string story = R"(    <Story name="s"><Act name="a">
      <ManeuverGroup name="g" maximumExecutionCount="1">
        <Actors selectTriggeringEntities="false"><EntityRef entityRef="Car"/></Actors>
        <Maneuver name="m"><Event name="e" priority="overwrite">
          <Action name="x"><PrivateAction><LongitudinalAction><SpeedAction>
            <SpeedActionDynamics dynamicsShape="step" value="0" dynamicsDimension="time"/>
            <SpeedActionTarget><AbsoluteTargetSpeed value="5"/></SpeedActionTarget>
          </SpeedAction></LongitudinalAction></PrivateAction></Action>
          <StartTrigger><ConditionGroup><Condition name="c" delay="0" conditionEdge="rising">
            <ByEntityCondition><TriggeringEntities triggeringEntitiesRule="any"><EntityRef entityRef="Car"/></TriggeringEntities>
              <EntityCondition><CollisionCondition><EntityRef entityRef="Car"/></CollisionCondition></EntityCondition>
            </ByEntityCondition></Condition></ConditionGroup></StartTrigger>
        </Event></Maneuver>
      </ManeuverGroup></Act></Story>)";
  const std::string text = Scenario(story);
  const int line = LineOf(text, "<CollisionCondition");
  CHECK_THROWS_WITH_AS(MapOpenScenario(text, "u.xosc", "."),
                       doctest::Contains(std::string("u.xosc:" + std::to_string(line) + ": CollisionCondition is not supported").c_str()),
                       config::ConfigError);
  // keep_going: the same file gives a coverage with the refusal.
  OscOptions keep;
  keep.keep_going = true;
  const OscMapping m = MapOpenScenario(text, "u.xosc", ".", keep);
  CHECK(m.refused == 1);
  const CoverageItem* c = Find(m, "EntityCondition/CollisionCondition");
  REQUIRE(c);
  CHECK(c->status == CoverageItem::Status::kRefused);
  CHECK(c->line == line);
  // An element platoon does not know at all, in a place it reads: refused by name.
  const std::string unknown = Scenario("<Story name=\"s\"/>\n    <Gadget/>");
  CHECK_THROWS_WITH_AS(MapOpenScenario(unknown, "g.xosc", "."), doctest::Contains(std::string("g.xosc:" + std::to_string(LineOf(unknown, "<Gadget")) + ": Gadget is not supported").c_str()),
                       config::ConfigError);
  // XML syntax: the reader's line.
  CHECK_THROWS_WITH_AS(MapOpenScenario("<OpenSCENARIO>\n<FileHeader>\n</OpenSCENARIO>", "m.xosc", "."),
                       doctest::Contains("m.xosc:3"), config::ConfigError);
  // A parameter that is not declared.
  const std::string param = Scenario("<Story name=\"s\"><Act name=\"a\"><ManeuverGroup name=\"g\" maximumExecutionCount=\"$n\"/></Act></Story>");
  CHECK_THROWS_WITH_AS(MapOpenScenario(param, "p.xosc", "."), doctest::Contains(std::string("p.xosc:" + std::to_string(LineOf(param, "<ManeuverGroup")) +
                                        ": ManeuverGroup.maximumExecutionCount: expected a declared parameter, got $n").c_str()),
                       config::ConfigError);
  // A left lane (positive id): road traffic drives the right-hand lanes.
  std::string left = Scenario("");
  left.replace(left.find("laneId=\"-1\""), 11, "laneId=\"2\"");
  CHECK_THROWS_WITH_AS(MapOpenScenario(left, "l.xosc", "."), doctest::Contains(std::string("l.xosc:" + std::to_string(LineOf(left, "<LanePosition")) + ": LanePosition is not supported: lane 2").c_str()),
                       config::ConfigError);
}


TEST_CASE("osc: pedestrians (inline and from a catalog) become pedestrians nodes, and what they cannot do is refused by line") {
  const std::string dir = std::string(PLATOON_SOURCE_DIR) + "/tests/data/scenarios";
  const std::string text = ReadText(Fixture("pedestrian.xosc"));
  const OscMapping m = MapOpenScenario(text, "p.xosc", dir);
  int walkers = 0;
  for (const auto& n : m.nodes)
    if (n.traffic_model == "pedestrians") {
      ++walkers;
      REQUIRE(n.pedestrians.size() == 1);
      CHECK_FALSE(n.pedestrians.front().turn_back);
    }
  CHECK(walkers == 2);
  CHECK(m.refused == 0);
  // A lane change is not a pedestrian's: refused where it stands.
  std::string lateral = text;
  const auto at = lateral.find("<LongitudinalAction>", lateral.find("walk_action"));
  REQUIRE(at != std::string::npos);
  lateral.insert(at, "<LateralAction><LaneOffsetAction continuous=\"false\"><LaneOffsetActionDynamics dynamicsShape=\"step\"/>"
                     "<LaneOffsetTarget><AbsoluteTargetLaneOffset value=\"1\"/></LaneOffsetTarget></LaneOffsetAction></LateralAction>\n"
                     "</PrivateAction></Action><Action name=\"second\"><PrivateAction>");
  CHECK_THROWS_WITH_AS(MapOpenScenario(lateral, "p.xosc", dir),
                       doctest::Contains(std::string("p.xosc:" + std::to_string(LineOf(lateral, "<LateralAction")) +
                                                     ": LateralAction is not supported: a pedestrian's actions").c_str()),
                       config::ConfigError);
  // Not placed in Init: named with its ScenarioObject.
  std::string unplaced = text;
  const auto init = unplaced.find("<Private entityRef=\"Bystander\">");
  unplaced.replace(init, unplaced.find("</Private>", init) + 10 - init, "");
  CHECK_THROWS_WITH_AS(MapOpenScenario(unplaced, "p.xosc", dir),
                       doctest::Contains(std::string("p.xosc:" + std::to_string(LineOf(unplaced, "<ScenarioObject name=\"Bystander\"")) +
                                                     ": Entities.ScenarioObject \"Bystander\": Pedestrian: expected a TeleportAction").c_str()),
                       config::ConfigError);
  // A position on a road other than the session's is refused where it stands (not put on the session's road).
  std::string other_road = text;
  other_road.replace(other_road.find("roadId=\"1\" laneId=\"1\""), 10, "roadId=\"7\"");
  CHECK_THROWS_WITH_AS(MapOpenScenario(other_road, "p.xosc", dir),
                       doctest::Contains(std::string("p.xosc:" + std::to_string(LineOf(other_road, "roadId=\"7\"")) +
                                                     ": LanePosition is not supported: road 7: the scenario's vehicles drive "
                                                     "the session's road 1").c_str()),
                       config::ConfigError);
  // A seat drives a car.
  OscOptions seated;
  seated.seats["Walker"] = "seat";
  CHECK_THROWS_WITH_AS(MapOpenScenario(text, "p.xosc", dir, seated), doctest::Contains("a seat drives a car, not a pedestrian"),
                       config::ConfigError);
}

TEST_CASE("osc: a MiscObject stands on any lane, or at a RoadPosition's s and t off the carriageway") {
  const std::string dir = std::string(PLATOON_SOURCE_DIR) + "/tests/data/scenarios";
  const std::string text = ReadText(Fixture("entities.xosc"));
  const std::string cone = "<LanePosition roadId=\"1\" laneId=\"-2\" offset=\"0\" s=\"300\"/>";
  REQUIRE(text.find(cone) != std::string::npos);
  // On lane 1, left of the reference line (straight.xodr: lanes 3.5 m wide, its centre at y = 1.75).
  std::string left = text;
  left.replace(left.find(cone), cone.size(), "<LanePosition roadId=\"1\" laneId=\"1\" offset=\"0.5\" s=\"250\"/>");
  const OscMapping l = MapOpenScenario(left, "e.xosc", dir);
  REQUIRE(l.boxes.size() == 1);
  CHECK(l.boxes[0].position_m.x() == doctest::Approx(250.0));
  CHECK(l.boxes[0].position_m.y() == doctest::Approx(2.25));
  // Beyond the carriageway's right edge (lanes -1, -2 end at t = -7 m): at t = -9 m, turned a quarter.
  std::string off = text;
  off.replace(off.find(cone), cone.size(),
              "<RoadPosition roadId=\"1\" s=\"120\" t=\"-9\"><Orientation type=\"relative\" h=\"1.5707963267948966\"/></RoadPosition>");
  const OscMapping o = MapOpenScenario(off, "e.xosc", dir);
  REQUIRE(o.boxes.size() == 1);
  CHECK(o.boxes[0].position_m.x() == doctest::Approx(120.0));
  CHECK(o.boxes[0].position_m.y() == doctest::Approx(-9.0));
  CHECK(o.boxes[0].yaw_rad == doctest::Approx(M_PI / 2));
  // s beyond the road: named with its line.
  std::string beyond = text;
  beyond.replace(beyond.find(cone), cone.size(), "<RoadPosition roadId=\"1\" s=\"2500\" t=\"0\"/>");
  CHECK_THROWS_WITH_AS(MapOpenScenario(beyond, "e.xosc", dir),
                       doctest::Contains(std::string("e.xosc:" + std::to_string(LineOf(beyond, "s=\"2500\"")) +
                                                     ": RoadPosition.s: expected 0 to 2000.00 m on the road").c_str()),
                       config::ConfigError);
}

TEST_CASE("osc: synchronize and polyline trajectories map to actions, their unsupported variants refused by line") {
  // The synchronize fixture: Other's action names Ego as master and both points as world points.
  const OscMapping sync = LoadOpenScenarioFile(Fixture("synchronize.xosc"));
  CHECK(sync.refused == 0);
  const config::ActionDef* a = nullptr;
  for (const auto& e : sync.events)
    for (const auto& act : e.actions)
      if (act.kind == config::ActionDef::Kind::kSynchronize) a = &act;
  REQUIRE(a);
  CHECK(a->target == "Other");
  CHECK(a->master == "Ego");
  REQUIRE(a->point.size() == 2);
  CHECK(a->point[0] == doctest::Approx(450.0));
  CHECK(a->point[1] == doctest::Approx(-5.25));  // LanePosition lane -2 on straight.xodr
  CHECK(a->master_point[1] == doctest::Approx(-1.75));
  CHECK(a->final_speed);
  CHECK(a->relative_to == "Ego");
  CHECK_FALSE(a->factor);
  // The trajectory fixture: four world points with their relative times.
  const OscMapping traj = LoadOpenScenarioFile(Fixture("trajectory.xosc"));
  CHECK(traj.refused == 0);
  const config::ActionDef* f = nullptr;
  for (const auto& e : traj.events)
    for (const auto& act : e.actions)
      if (act.kind == config::ActionDef::Kind::kFollowPath) f = &act;
  REQUIRE(f);
  const std::vector<double> want = {100, -1.75, 144, -3.5, 182, -5.25, 262, -5.25};
  REQUIRE(f->path_xy.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) CHECK(f->path_xy[k] == doctest::Approx(want[k]).epsilon(1e-9));
  CHECK(f->times_s == std::vector<double>{1.5, 3.5, 5.5, 9.5});
  CHECK_FALSE(f->absolute_times);
  // Refused, by name and line: a clothoid shape, a closed trajectory, a steady state before the target, a route.
  const std::string traj_text = ReadText(Fixture("trajectory.xosc"));
  auto refused = [&](std::string text, const std::string& from, const std::string& to, const std::string& what) {
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    const std::string dir = std::string(PLATOON_SOURCE_DIR) + "/tests/data/scenarios";
    const std::string needle = to.substr(0, to.find_first_of(" >"));
    CHECK_THROWS_WITH_AS(MapOpenScenario(text, "r.xosc", dir),
                         doctest::Contains(("r.xosc:" + std::to_string(LineOf(text, needle)) + ": " + what).c_str()),
                         config::ConfigError);
  };
  std::string clothoid = traj_text;
  clothoid.replace(clothoid.find("<Polyline>"), 10, "<Clothoid curvature=\"0\" curvatureDot=\"0\" length=\"10\"/><!--");
  clothoid.replace(clothoid.find("</Polyline>"), 11, "-->");
  refused(clothoid, "<Clothoid", "<Clothoid", "Clothoid is not supported: trajectory shapes: Polyline");
  refused(traj_text, "closed=\"false\"", "closed=\"true\"", "Trajectory is not supported: a closed trajectory");
  const std::string sync_text = ReadText(Fixture("synchronize.xosc"));
  refused(sync_text, "<RelativeSpeedToMaster value=\"0\" speedTargetValueType=\"delta\"/>",
          "<AbsoluteSpeed value=\"3\"><SteadyState><TargetTimeSteadyState value=\"2\"/></SteadyState></AbsoluteSpeed>",
          "SteadyState is not supported");
  std::string route = traj_text;
  route.replace(route.find("<FollowTrajectoryAction>"), 24, "<AssignRouteAction/><!--");
  route.replace(route.find("</FollowTrajectoryAction>"), 25, "-->");
  refused(route, "<AssignRouteAction/>", "<AssignRouteAction/>", "AssignRouteAction is not supported: routing actions");
}

}  // namespace platoon::scenario

namespace platoon::scenario {
namespace osc_mapping_test_detail {

// Runs `platoon <args>` and returns its exit status and output lines (stdout and stderr).
std::pair<int, std::vector<std::string>> RunPlatoon(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {std::string(PLATOON_BIN_DIR) + "/platoon"};
  argv.insert(argv.end(), args.begin(), args.end());
  process::Child c = process::Child::Spawn(argv);
  std::vector<std::string> lines;
  while (auto line = c.ReadLine(std::chrono::milliseconds(5000))) lines.push_back(*line);
  const auto status = c.WaitFor(std::chrono::milliseconds(5000));
  REQUIRE(status);
  return {*status, lines};
}

}  // namespace osc_mapping_test_detail

TEST_CASE("osc: platoon scenario check prints every element and exits 1 on a refusal and 2 on a malformed file") {
  // The cut-in fixture: every element listed with its line and status, the counts, the entities' nodes.
  const auto [ok, lines] = RunPlatoon({"scenario", "check", Fixture("cut_in.xosc"), "--events"});
  CHECK(ok == 0);
  const std::string text = [&] {
    std::string t;
    for (const auto& l : lines) t += l + "\n";
    return t;
  }();
  const std::string xosc = ReadText(Fixture("cut_in.xosc"));
  CHECK(text.find(std::to_string(LineOf(xosc, "<RelativeDistanceCondition")) +
                  "  mapped   OpenSCENARIO/Storyboard/Story/Act/ManeuverGroup/Maneuver/Event/StartTrigger/ConditionGroup/"
                  "Condition/ByEntityCondition/EntityCondition/RelativeDistanceCondition: distance (longitudinal) to Ego") !=
        std::string::npos);
  CHECK(text.find("ignored  Catalog/Vehicle/BoundingBox: road traffic cars are 4.5 m x 1.8 m boxes") != std::string::npos);
  CHECK(text.find("0 refused; 2 nodes, 4 events") != std::string::npos);
  CHECK(text.find("entity Cutter -> node Cutter") != std::string::npos);
  CHECK(text.find("event cut_in: 1 condition group(s), 1 action(s), group cutter_group/cut_in_maneuver (overwrite)") !=
        std::string::npos);
  // A refused element: listed, exit 1. A malformed file: file:line on stderr, exit 2.
  const testing::TempDir dir;
  const std::string bad = Scenario("<Story name=\"s\"/>\n    <Gadget/>");
  const std::string refused = dir.Write("refused.xosc", bad);
  const std::string broken = dir.Write("broken.xosc", "<OpenSCENARIO>\n<FileHeader>\n</OpenSCENARIO>\n");
  const auto [r1, l1] = RunPlatoon({"scenario", "check", refused});
  CHECK(r1 == 1);
  bool listed = false;
  for (const auto& l : l1)
    listed = listed || l.find(std::to_string(LineOf(bad, "<Gadget")) + "  refused  OpenSCENARIO/Storyboard/Gadget") != std::string::npos;
  CHECK(listed);
  const auto [r2, l2] = RunPlatoon({"scenario", "check", broken});
  CHECK(r2 == 2);
  REQUIRE_FALSE(l2.empty());
  CHECK(l2[0].find(broken + ":3:") != std::string::npos);
  // run and check refuse it alike (exit 2, file:line).
  const auto [r3, l3] = RunPlatoon({"check", refused});
  CHECK(r3 == 2);
  REQUIRE_FALSE(l3.empty());
  CHECK(l3[0].find("Gadget is not supported") != std::string::npos);
}

}  // namespace platoon::scenario

namespace platoon::scenario {

TEST_CASE("osc distribution: deterministic lists and sets, stochastic draws, and refusals with file and line") {
  auto dist = [](const std::string& body) {
    return std::string("<?xml version=\"1.0\"?>\n<OpenSCENARIO>\n<FileHeader revMajor=\"1\" revMinor=\"2\" date=\"2026-11-28T12:00:00\" "
                       "description=\"d\" author=\"platoon\"/>\n<ParameterValueDistribution>\n<ScenarioFile filepath=\"s.xosc\"/>\n") +
           body + "\n</ParameterValueDistribution>\n</OpenSCENARIO>\n";
  };
  // The fixture: 2 x 4 values, a range inclusive of its upper limit.
  const std::string fixture = std::string(PLATOON_SOURCE_DIR) + "/tests/data/scenarios/cut_in_variants.xosc";
  std::ifstream in(fixture);
  std::stringstream ss;
  ss << in.rdbuf();
  const ParameterDistribution d = ReadParameterDistribution(ss.str(), "v.xosc", "/base");
  CHECK(d.scenario_file == "/base/cut_in.xosc");
  REQUIRE(d.lists.size() == 2);
  CHECK(d.lists[0].values == std::vector<std::string>{"22", "25"});
  CHECK(d.lists[1].values == std::vector<std::string>{"10", "15", "20", "25"});
  // A range whose steps do not land on the upper limit stops below it; 0.1 steps do not lose the last to rounding.
  const auto r = ReadParameterDistribution(dist("<Deterministic><DeterministicSingleParameterDistribution parameterName=\"A\">"
                                                "<DistributionRange stepWidth=\"0.1\"><Range lowerLimit=\"0\" upperLimit=\"0.3\"/>"
                                                "</DistributionRange></DeterministicSingleParameterDistribution></Deterministic>"),
                                           "r.xosc", "");
  CHECK(r.lists[0].values.size() == 4);
  // Value sets: one run per set.
  const auto sets = ReadParameterDistribution(
      dist("<Deterministic><DeterministicMultiParameterDistribution><ValueSetDistribution>"
           "<ParameterValueSet><ParameterAssignment parameterRef=\"A\" value=\"1\"/><ParameterAssignment parameterRef=\"B\" value=\"x\"/></ParameterValueSet>"
           "<ParameterValueSet><ParameterAssignment parameterRef=\"A\" value=\"2\"/><ParameterAssignment parameterRef=\"B\" value=\"y\"/></ParameterValueSet>"
           "</ValueSetDistribution></DeterministicMultiParameterDistribution></Deterministic>"),
      "s.xosc", "");
  REQUIRE(sets.sets.size() == 2);
  CHECK(sets.sets[1].at("B") == "y");
  // Stochastic: runs, seed, a normal's standard deviation from its variance, a truncation range, weights.
  const auto st = ReadParameterDistribution(
      dist("<Stochastic numberOfTestRuns=\"8\" randomSeed=\"42\">"
           "<StochasticDistribution parameterName=\"A\"><NormalDistribution expectedValue=\"20\" variance=\"4\"><Range lowerLimit=\"15\" upperLimit=\"25\"/></NormalDistribution></StochasticDistribution>"
           "<StochasticDistribution parameterName=\"B\"><UniformDistribution><Range lowerLimit=\"1\" upperLimit=\"2\"/></UniformDistribution></StochasticDistribution>"
           "<StochasticDistribution parameterName=\"C\"><ProbabilityDistributionSet><Element value=\"a\" weight=\"3\"/><Element value=\"b\" weight=\"1\"/></ProbabilityDistributionSet></StochasticDistribution>"
           "</Stochastic>"),
      "st.xosc", "");
  CHECK(st.runs == 8);
  CHECK(st.seed == 42);
  REQUIRE(st.draws.size() == 3);
  CHECK(st.draws[0].stddev == doctest::Approx(2.0));
  CHECK(st.draws[0].truncated);
  CHECK(st.draws[1].dist == "uniform");
  CHECK(st.draws[2].weights == std::vector<double>{3, 1});
  // Refusals name the file and line.
  const std::string poisson = dist("<Stochastic numberOfTestRuns=\"2\">\n<StochasticDistribution parameterName=\"A\">\n"
                                   "<PoissonDistribution expectedValue=\"3\"><Range lowerLimit=\"0\" upperLimit=\"9\"/></PoissonDistribution>"
                                   "</StochasticDistribution></Stochastic>");
  CHECK_THROWS_WITH_AS(ReadParameterDistribution(poisson, "p.xosc", ""), doctest::Contains("p.xosc:8: PoissonDistribution is not supported"),
                       config::ConfigError);
  const std::string both = dist("<Deterministic><DeterministicSingleParameterDistribution parameterName=\"A\"><DistributionSet><Element value=\"1\"/></DistributionSet></DeterministicSingleParameterDistribution>\n"
                                "<DeterministicMultiParameterDistribution><ValueSetDistribution><ParameterValueSet><ParameterAssignment parameterRef=\"B\" value=\"1\"/></ParameterValueSet></ValueSetDistribution></DeterministicMultiParameterDistribution></Deterministic>");
  CHECK_THROWS_WITH_AS(ReadParameterDistribution(both, "b.xosc", ""), doctest::Contains("either the product"), config::ConfigError);
  CHECK_THROWS_WITH_AS(ReadParameterDistribution(dist(""), "e.xosc", ""), doctest::Contains("e.xosc:4: ParameterValueDistribution: expected Deterministic or Stochastic"),
                       config::ConfigError);
  const std::string twice = dist("<Deterministic><DeterministicSingleParameterDistribution parameterName=\"A\"><DistributionSet><Element value=\"1\"/></DistributionSet></DeterministicSingleParameterDistribution>\n"
                                 "<DeterministicSingleParameterDistribution parameterName=\"A\"><DistributionSet><Element value=\"2\"/></DistributionSet></DeterministicSingleParameterDistribution></Deterministic>");
  CHECK_THROWS_WITH_AS(ReadParameterDistribution(twice, "t.xosc", ""), doctest::Contains("t.xosc:7: DeterministicSingleParameterDistribution: parameter A is distributed twice"),
                       config::ConfigError);
  // A session's [scenario] parameters replace the declared values; an undeclared one is an error.
  OscOptions o;
  o.parameters["CutInDistance"] = "21";
  const OscMapping m = LoadOpenScenarioFile(std::string(PLATOON_SOURCE_DIR) + "/tests/data/scenarios/cut_in.xosc", o);
  bool found = false;
  for (const auto& [name, value] : m.params) found = found || (name == "CutInDistance" && value == "21");
  CHECK(found);
  o.parameters["Nope"] = "1";
  o.parameters_where = "x.toml:3: scenario.parameters";
  CHECK_THROWS_WITH_AS(LoadOpenScenarioFile(std::string(PLATOON_SOURCE_DIR) + "/tests/data/scenarios/cut_in.xosc", o),
                       doctest::Contains("x.toml:3: scenario.parameters: parameter Nope is not declared"), config::ConfigError);
}

}  // namespace platoon::scenario
