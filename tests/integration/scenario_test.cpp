// Scenario events in sessions (server/src/scenario_system.cpp, the road traffic's and the seat's
// OnEvent): the headway stimulus in lock-step fires at the same sim time in two runs, the lead car then
// decelerates at the commanded rate; sim-time, marker, delay, once and repeat; in real time a firing
// follows the state that made its condition true at the next poll.
#include "../support/in_process_session.hpp"

#include "platoon/config/session.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/server/scenario_system.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/null_sink.h>

#include <map>
#include <string>
#include <vector>

namespace platoon::testing {
namespace {

std::shared_ptr<spdlog::logger> Quiet() {
  return std::make_shared<spdlog::logger>("scenario-test", std::make_shared<spdlog::sinks::null_sink_mt>());
}

const char* kHeadway = R"(
[session]
name = "headway"
mode = "lockstep"
step_hz = 100
end_s = 16

[road]
generate_length_m = 2000
seed = 1
lanes = 1

[[node]]
name = "lead"
role = "traffic"
traffic_model = "road"
vehicles = 1
start_s_m = 100
start_lane = -1
start_speed_mps = 20

[[node]]
name = "driver"
role = "driver"
input = "model:follow"
start_s_m = 40
start_lane = -1
start_speed_mps = 24
headless = true
[node.driver_model]
desired_speed_mps = 30
time_gap_s = 1.0
reaction_time_s = 0.8

[[event]]
name = "lead_brakes"
when = { entity = "driver", quantity = "time_headway", below = 1.5 }
do = [ { action = "brake", target = "ahead", decel_mps2 = 6.0, duration_s = 2.0 },
       { action = "message", text = "brake!" } ]
)";

// What one in-process run leaves: the server's firings, every logged event (by sequence) and the lead
// car's speed at each step's world state.
struct Run {
  std::vector<server::ScenarioFiring> firings;
  std::map<uint64_t, protocol::LoggedEvent> events;
  std::vector<std::pair<int64_t, double>> lead_speed;  // (sim ns, m/s)
  std::vector<std::pair<int64_t, double>> driver_speed;
  double min_distance_m = 1e9;  // between the two cars' reference points
  std::vector<std::pair<int64_t, world::WorldConditions>> conditions;  // (sim ns, conditions) as broadcast
  InProcessResult result;
};

Run RunSession(const std::string& text) {
  Run run;
  std::shared_ptr<server::ScenarioSystem> system;
  InProcessOptions options;
  options.publish_every_step = true;
  options.setup_core = [&](server::WorldCore& core) { system = server::InstallScenario(core, Quiet()); };
  const uint64_t lead = VehicleId("lead", 0), driver = VehicleId("driver", 0);
  std::map<uint64_t, Vec3> positions;
  options.on_world = [&](const protocol::WorldState& w, const std::string&) {
    for (const auto& e : w.events) run.events.emplace(e.sequence, e);
    if (w.conditions) run.conditions.emplace_back(w.sim_time_ns, *w.conditions);
    for (const auto& e : w.entities) {
      if (e.id == lead && w.step > 0) run.lead_speed.emplace_back(e.kinematics.stamp_ns, e.kinematics.velocity_mps.norm());
      if (e.id == driver && w.step > 0) run.driver_speed.emplace_back(e.kinematics.stamp_ns, e.kinematics.velocity_mps.norm());
      positions[e.id] = e.kinematics.pose.position_m;
    }
    if (positions.size() == 2) run.min_distance_m = std::min(run.min_distance_m, (positions[lead] - positions[driver]).norm());
  };
  const config::SessionDef session = config::LoadSessionText(text, "headway.toml");
  config::ValidateSession(session);
  run.result = RunInProcess(session, 1, options);
  REQUIRE(system);
  run.firings.assign(system->Firings().begin(), system->Firings().end());
  return run;
}

TEST_CASE("scenario: the headway stimulus fires at the same sim time in two lock-step runs") {
  const Run a = RunSession(kHeadway);
  const Run b = RunSession(kHeadway);
  REQUIRE(a.firings.size() == 1);
  REQUIRE(b.firings.size() == 1);
  CHECK(a.firings[0].name == "lead_brakes");
  // The model driver closes in from 2.3 s of headway; the same step both times.
  CHECK(a.firings[0].sim_time_ns > 0);
  CHECK(a.firings[0].sim_time_ns == b.firings[0].sim_time_ns);
  CHECK(a.firings[0].detail == b.firings[0].detail);
  CHECK(a.result.server_hash == b.result.server_hash);
  // The values that fired it: a time headway just below 1.5 s, the lead car ahead.
  CHECK(a.firings[0].detail.find("\"quantity\":\"time_headway\"") != std::string::npos);
  CHECK(a.firings[0].detail.find("\"ahead\":" + std::to_string(VehicleId("lead", 0))) != std::string::npos);
  // Their readable names beside the ids: the seat's car by its node name, the traffic car by node and index.
  CHECK(a.firings[0].detail.find("\"entity_name\":\"driver\"") != std::string::npos);
  CHECK(a.firings[0].detail.find("\"ahead_name\":\"lead:0\"") != std::string::npos);
  const auto at = a.firings[0].detail.find("\"value\":");
  REQUIRE(at != std::string::npos);
  const double thw = std::atof(a.firings[0].detail.c_str() + at + 8);
  CHECK(thw < 1.5);
  CHECK(thw > 1.3);

  // The firing and its actions are in the event log that went out with the world, at the firing's sim time.
  int fired = 0, brake = 0, message = 0;
  for (const auto& [seq, e] : a.events) {
    if (e.kind == protocol::LoggedEvent::Kind::kFired && e.text == "lead_brakes") ++fired;
    if (e.kind == protocol::LoggedEvent::Kind::kAction && e.text == "brake") {
      ++brake;
      CHECK(e.entity_id == VehicleId("lead", 0));
      CHECK(e.detail.find("\"target_name\":\"lead:0\"") != std::string::npos);
      CHECK(e.target_node != 0);
      CHECK(e.source == "event:lead_brakes");
      CHECK(e.sim_time_ns == a.firings[0].sim_time_ns);
    }
    if (e.kind == protocol::LoggedEvent::Kind::kMessage) ++message;
  }
  CHECK(fired == 1);
  CHECK(brake == 1);
  CHECK(message == 1);
}

TEST_CASE("scenario: the lead car decelerates at the commanded rate, then drives on") {
  const Run run = RunSession(kHeadway);
  REQUIRE(run.firings.size() == 1);
  const int64_t t0 = run.firings[0].sim_time_ns;
  // Its speed 0.5 s and 1.5 s into the 2 s of braking (the action rides in the grant of the firing).
  auto speed_in = [&](const std::vector<std::pair<int64_t, double>>& series, int64_t t) {
    double v = -1;
    for (const auto& [ns, s] : series)
      if (ns <= t) v = s;
    return v;
  };
  auto speed_at = [&](int64_t t) { return speed_in(run.lead_speed, t); };
  const double v1 = speed_at(t0 + 500'000'000), v2 = speed_at(t0 + 1'500'000'000);
  REQUIRE(v1 > 0);
  CHECK((v1 - v2) / 1.0 == doctest::Approx(6.0).epsilon(0.03));
  // Before the firing it cruised; 3 s after it, it accelerates again.
  CHECK(speed_at(t0 - 100'000'000) == doctest::Approx(20.0).epsilon(0.05));
  CHECK(speed_at(t0 + 4'000'000'000) > speed_at(t0 + 2'100'000'000));
  // The model driver behind brakes only after its reaction time (0.8 s), then hard enough not to hit it.
  // (Its speed loss in the 0.7 s after the firing is that of the 0.7 s before; a second later it brakes hard.)
  auto driver_at = [&](int64_t dt) { return speed_in(run.driver_speed, t0 + dt); };
  const double before = driver_at(-700'000'000) - driver_at(0), during = driver_at(0) - driver_at(700'000'000);
  CHECK(during < before + 0.3);
  CHECK(driver_at(1'000'000'000) - driver_at(2'000'000'000) > 2.0);
  CHECK(run.min_distance_m > 5.0);  // reference points more than a car length apart: no crash
}

// A lock-step session of one road-traffic car ("lead", 20 m/s from s = 100 m on a 1 km generated road) and
// `rest` (the [session] table's name and end, signs, events).
std::string SignSession(const std::string& rest) {
  return rest + R"(
[road]
generate_length_m = 1000
seed = 1
lanes = 1

[[node]]
name = "lead"
role = "traffic"
traffic_model = "road"
vehicles = 1
start_s_m = 100
start_lane = -1
start_speed_mps = 20
speed_mps = 20
)";
}

TEST_CASE("scenario: sign conditions fire at the distance to the next sign ahead and back to the last one passed") {
  const std::string text = SignSession(R"(
[session]
name = "signs"
mode = "lockstep"
step_hz = 100
end_s = 7

[[sign]]
s_m = 180
type = "speed_limit"
value = 60

[[sign]]
s_m = 150
type = "warning_general"

[[event]]
name = "near_limit"
when = { entity = "lead", quantity = "sign_ahead_distance", sign = "speed_limit", below = 30 }
do = [ { action = "mark", text = "limit ahead" } ]

[[event]]
name = "passed_limit"
when = { entity = "lead", quantity = "sign_passed_distance", sign = "speed_limit", above = 10 }
do = [ { action = "mark", text = "limit passed" } ]

[[event]]
name = "limit_value"
when = { entity = "lead", quantity = "sign_passed_value", sign = "speed_limit", equals = 60 }
do = [ { action = "mark", text = "under 60" } ]

[[event]]
name = "any_sign_near"
when = { entity = "lead", quantity = "sign_ahead_distance", below = 30 }
do = [ { action = "mark", text = "a sign ahead" } ]

[[event]]
name = "stop_ahead"
when = { entity = "lead", quantity = "sign_ahead_distance", sign = "stop", below = 1000 }
do = [ { action = "mark", text = "never" } ]
)");
  const Run run = RunSession(text);
  std::map<std::string, server::ScenarioFiring> fired;
  for (const auto& f : run.firings) fired.emplace(f.name, f);
  CHECK(fired.count("stop_ahead") == 0);  // no stop sign on the road
  REQUIRE(fired.count("near_limit") == 1);
  REQUIRE(fired.count("passed_limit") == 1);
  REQUIRE(fired.count("limit_value") == 1);
  REQUIRE(fired.count("any_sign_near") == 1);
  auto value = [&](const std::string& name) {
    const std::string& d = fired.at(name).detail;
    const auto at = d.find("\"value\":");
    REQUIRE(at != std::string::npos);
    return std::atof(d.c_str() + at + 8);
  };
  // 20 m/s moves 0.2 m per 10 ms step: each fires within one step's travel of its threshold.
  CHECK(value("near_limit") < 30.0);
  CHECK(value("near_limit") > 29.7);
  CHECK(value("passed_limit") > 10.0);
  CHECK(value("passed_limit") < 10.3);
  CHECK(value("limit_value") == 60.0);
  CHECK(value("any_sign_near") < 30.0);  // the warning at 150 m comes first: 30 m before it
  const int64_t near = fired.at("near_limit").sim_time_ns, any = fired.at("any_sign_near").sim_time_ns;
  const int64_t passed = fired.at("passed_limit").sim_time_ns, limited = fired.at("limit_value").sim_time_ns;
  MESSAGE("any sign within 30 m at " << any / 1e9 << " s, the limit within 30 m at " << near / 1e9 << " s, passed at "
                                     << limited / 1e9 << " s, 10 m behind at " << passed / 1e9 << " s");
  // The road the car drove between two firings, from its speeds at every step: the warning (at 150 m) is
  // 30 m ahead 30 m before the limit (at 180 m) is; the limit is passed 30 m later, and 10 m behind 10 m after.
  auto driven = [&](int64_t from, int64_t to) {
    double m = 0;
    for (size_t i = 1; i < run.lead_speed.size(); ++i) {
      const auto [t0, v0] = run.lead_speed[i - 1];
      const auto [t1, v1] = run.lead_speed[i];
      if (t0 >= from && t1 <= to) m += 0.5 * (v0 + v1) * (t1 - t0) / 1e9;
    }
    return m;
  };
  MESSAGE("driven between the firings: " << driven(any, near) << " m, " << driven(near, limited) << " m, "
                                         << driven(limited, passed) << " m");
  CHECK(std::abs(driven(any, near) - 30.0) < 0.5);
  CHECK(std::abs(driven(near, limited) - 30.0) < 0.5);
  CHECK(std::abs(driven(limited, passed) - 10.0) < 0.5);
}

TEST_CASE("scenario: a variable message sign set by an event changes the limit traffic obeys and what the conditions say") {
  const std::string text = SignSession(R"(
[session]
name = "vms"
mode = "lockstep"
step_hz = 100
end_s = 12

[[sign]]
s_m = 180
type = "blank"
mount = "gantry"
variable = true

[[event]]
name = "show_50"
when = { sim_time = 1.0 }
do = [ { action = "set_param", path = "signs.vms_1", value = "speed_limit 50" } ]

[[event]]
name = "under_50"
when = { entity = "lead", quantity = "sign_passed_value", sign = "speed_limit", equals = 50 }
do = [ { action = "mark", text = "under 50" } ]
)");
  const Run run = RunSession(text);
  std::map<std::string, server::ScenarioFiring> fired;
  for (const auto& f : run.firings) fired.emplace(f.name, f);
  REQUIRE(fired.count("show_50") == 1);
  REQUIRE(fired.count("under_50") == 1);  // the blank gantry became a 50 limit the condition sees
  // The broadcast conditions: blank before the set, a 50 limit after it.
  bool blank_before = false, limit_after = false;
  for (const auto& [t, c] : run.conditions) {
    REQUIRE(c.variable_signs.size() == 1);
    CHECK(c.variable_signs[0].id == 1);
    if (t < 1'000'000'000 && c.variable_signs[0].type == static_cast<uint8_t>(road::SignType::kBlank)) blank_before = true;
    if (t > 1'100'000'000 && c.variable_signs[0].type == static_cast<uint8_t>(road::SignType::kSpeedLimit) &&
        c.variable_signs[0].value == 50)
      limit_after = true;
  }
  CHECK(blank_before);
  CHECK(limit_after);
  // Road traffic obeys it: 20 m/s while the gantry was blank, 50 km/h (13.9 m/s) after passing it.
  const int64_t passed = fired.at("under_50").sim_time_ns;
  double before = -1, after = -1;
  for (const auto& [t, v] : run.lead_speed) {
    if (t <= 900'000'000) before = v;  // before the sign was set
    if (t <= passed + 6'000'000'000) after = v;
  }
  MESSAGE("lead at " << before << " m/s before the sign was set, " << after << " m/s 6 s after passing it");
  CHECK(before == doctest::Approx(20.0).epsilon(0.05));
  CHECK(after == doctest::Approx(50.0 / 3.6).epsilon(0.05));
}

TEST_CASE("scenario: sim-time and marker conditions, delay, once and repeat") {
  const std::string text = R"(
[session]
mode = "lockstep"
step_hz = 100
end_s = 4

[road]
generate_length_m = 1000
lanes = 2

[[node]]
name = "lead"
role = "traffic"
traffic_model = "road"
vehicles = 2

[[event]]
name = "first_tick"
when = { sim_time = 1.0 }
do = [ { action = "mark", text = "tick" } ]
[[event]]
name = "second_tick"
when = { sim_time = 2.0 }
do = [ { action = "mark", text = "tick" } ]
[[event]]
name = "every_tick"
when = { marker = "tick" }
repeat = true
do = [ { action = "mark", text = "tock" } ]
[[event]]
name = "once_tick"
when = { marker = "tick" }
do = [ { action = "mark", text = "tock once" } ]
[[event]]
name = "later"
when = { sim_time = 1.0 }
delay_s = 0.5
do = [ { action = "stop", target = "lead:1", decel_mps2 = 3.0 } ]
)";
  const Run run = RunSession(text);
  std::map<std::string, std::vector<int64_t>> fired;
  for (const auto& f : run.firings) fired[f.name].push_back(f.sim_time_ns);
  REQUIRE(fired["first_tick"].size() == 1);
  CHECK(fired["first_tick"][0] == 1'000'000'000);
  REQUIRE(fired["second_tick"].size() == 1);
  CHECK(fired["second_tick"][0] == 2'000'000'000);
  // A marker is seen at the evaluation after it was logged: the next step.
  REQUIRE(fired["every_tick"].size() == 2);
  CHECK(fired["every_tick"][0] == 1'010'000'000);
  CHECK(fired["every_tick"][1] == 2'010'000'000);
  CHECK(fired["once_tick"].size() == 1);
  // The delayed action comes 0.5 s after its firing (logged at 1.0 s).
  REQUIRE(fired["later"].size() == 1);
  CHECK(fired["later"][0] == 1'000'000'000);
  int stops = 0, tocks = 0;
  for (const auto& [seq, e] : run.events) {
    if (e.kind == protocol::LoggedEvent::Kind::kAction && e.text == "stop") {
      ++stops;
      CHECK(e.sim_time_ns == 1'500'000'000);
      CHECK(e.entity_id == VehicleId("lead", 1));
    }
    if (e.kind == protocol::LoggedEvent::Kind::kMarker && e.text == "tock") ++tocks;
  }
  CHECK(stops == 1);
  CHECK(tocks == 2);
}

TEST_CASE("scenario: in real time a firing follows the state that made it true at the next poll") {
  config::SessionDef session = config::LoadSessionText(R"(
[road]
generate_length_m = 1000
lanes = 2

[[node]]
name = "a"
role = "traffic"
traffic_model = "road"
[[node]]
name = "b"
role = "traffic"
traffic_model = "road"

[[event]]
name = "close"
when = { entity = "a", quantity = "gap", below = 20 }
do = [ { action = "mark", text = "close" } ]
)", "rt.toml");
  server::WorldCore core(session, Quiet());
  auto system = server::InstallScenario(core, Quiet());
  REQUIRE(system);
  const road::Road road = road::SessionRoad(session.road);
  const int64_t t0 = 10'000'000'000;
  core.Poll(t0);
  core.Control(protocol::SessionControl{protocol::SessionControl::Command::kStart, t0, 0, 1.0}, t0);
  core.Poll(t0);
  // Two cars in lane -1 at 10 m/s: b ahead of a by `gap` metres of road.
  auto place = [&](uint64_t id, double s_m, int64_t now) {
    protocol::EntityState e;
    e.id = id;
    e.kind = protocol::EntityKind::kCar;
    e.kinematics.stamp_ns = core.SimTimeAt(now);
    e.kinematics.pose.position_m = road.LaneCenter(s_m, -1);
    const double h = road.Heading(s_m);
    e.kinematics.pose.orientation = Quat(Eigen::AngleAxisd(h, Vec3::UnitZ()));
    core.Inject(e, now);
  };
  const uint64_t a = VehicleId("a", 0), b = VehicleId("b", 0);
  int64_t now = t0 + 10'000'000;
  place(a, 100, now);
  place(b, 150, now);
  core.Poll(now);
  CHECK(system->Firings().empty());
  // Step after step the gap closes; the firing comes at the poll of the state that brought it below 20 m.
  int64_t true_at = -1;
  for (int k = 1; k <= 40 && system->Firings().empty(); ++k) {
    now += 10'000'000;
    const double ahead = 150 - k;
    place(b, ahead, now);
    if (true_at < 0 && ahead - 100 - 4.5 < 20) true_at = core.SimTimeAt(now);
    core.Poll(now);
  }
  REQUIRE(system->Firings().size() == 1);
  CHECK(system->Firings()[0].sim_time_ns == true_at);
  const auto events = core.EventsAfter(0);
  bool marked = false;
  for (const auto& e : events) marked = marked || (e.kind == protocol::LoggedEvent::Kind::kMarker && e.text == "close");
  CHECK(marked);
}

TEST_CASE("scenario: target ahead of a named vehicle acts on its leader at a sim-time firing") {
  // The study's "the car ahead of the participant brakes at 3 s": a time condition names no entity, the
  // target names the vehicle the leader is found for. The lead traffic node keeps its lane (lane_changes).
  std::string text = kHeadway;
  const std::string event = text.substr(text.find("[[event]]"));
  text.replace(text.find("[[event]]"), event.size(),
               "[[event]]\nname = \"lead_brakes\"\nwhen = { sim_time = 3.0 }\n"
               "do = [ { action = \"brake\", target = \"ahead:driver\", decel_mps2 = 6.0, duration_s = 1.0 } ]\n");
  text.replace(text.find("traffic_model = \"road\"\n"), 23, "traffic_model = \"road\"\nlane_changes = false\n");
  const Run run = RunSession(text);
  REQUIRE(run.firings.size() == 1);
  CHECK(run.firings[0].sim_time_ns == 3'000'000'000);
  int brake = 0;
  for (const auto& [seq, e] : run.events)
    if (e.kind == protocol::LoggedEvent::Kind::kAction && e.text == "brake") {
      ++brake;
      CHECK(e.entity_id == VehicleId("lead", 0));
    }
  CHECK(brake == 1);
  // It did brake: a second after the firing it is slower than at the firing.
  double at = -1, after = -1;
  for (const auto& [ns, v] : run.lead_speed) {
    if (ns <= 3'000'000'000) at = v;
    if (ns <= 3'900'000'000) after = v;
  }
  CHECK(at - after > 4.0);

  // "ahead" alone needs a condition entity; the error says how to name one. "ahead:<node>" must name a vehicle.
  auto error_of = [&](const std::string& target) {
    std::string t = kHeadway;
    const std::string ev = t.substr(t.find("[[event]]"));
    t.replace(t.find("[[event]]"), ev.size(),
              "[[event]]\nname = \"e\"\nwhen = { sim_time = 3.0 }\ndo = [ { action = \"brake\", target = \"" + target + "\" } ]\n");
    try {
      config::ValidateSession(config::LoadSessionText(t, "study.toml"));
    } catch (const config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error_of("ahead").find("ahead:<node>") != std::string::npos);
  CHECK(error_of("ahead:nobody").find("names no vehicle") != std::string::npos);
  CHECK(error_of("ahead:driver").empty());
}

TEST_CASE("scenario: lead names a driver node of a road traffic node and lead_gap_m needs it") {
  auto error_of = [](const std::string& lead_keys) {
    std::string t = kHeadway;
    t.replace(t.find("start_speed_mps = 20\n"), 21, "start_speed_mps = 20\n" + lead_keys);
    try {
      config::ValidateSession(config::LoadSessionText(t, "lead.toml"));
    } catch (const config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error_of("lead = \"driver\"\nlead_gap_m = 30\n").empty());
  CHECK(error_of("lead = \"nobody\"\n").find("lead: expected the name of a driver node (driver), got \"nobody\"") !=
        std::string::npos);
  CHECK(error_of("lead = \"lead\"\n").find("expected the name of a driver node") != std::string::npos);
  CHECK(error_of("lead_gap_m = 30\n").find("needs lead") != std::string::npos);
}

}  // namespace
}  // namespace platoon::testing
