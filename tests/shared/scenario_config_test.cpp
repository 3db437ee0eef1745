// [[event]] parsing (shared/src/config/scenario.cpp): conditions, actions, and errors that name the
// file, the line, the key and what was expected; ValidateSession (what `platoon check` and `platoon run`
// both call) checks what the events name against the session's nodes.
#include "platoon/config/scenario.hpp"
#include "platoon/config/session.hpp"
#include "platoon/entity_id.hpp"

#include <doctest/doctest.h>

#include <string>

namespace platoon::config {
namespace {

const std::string kNodes = R"(
[road]
generate_length_m = 1000
lanes = 2

[[node]]
name = "lead"
role = "traffic"
traffic_model = "road"
vehicles = 1
start_s_m = 110
start_speed_mps = 20

[[node]]
name = "driver"
role = "driver"
input = "model:follow"
headless = true
start_speed_mps = 20
[node.driver_model]
time_gap_s = 1.2
)";

// The ConfigError message of loading `text` (and validating it), or "" when it loads.
std::string ErrorOf(const std::string& text) {
  try {
    ValidateSession(LoadSessionText(text, "s.toml"));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("scenario config: the headway stimulus reads in a few lines") {
  const SessionDef s = LoadSessionText(kNodes + R"(
[[event]]
name = "lead_brakes"
when = { entity = "driver", quantity = "time_headway", below = 1.5 }
do = [ { action = "brake", target = "ahead", decel_mps2 = 6.0, duration_s = 3.0 } ]
)", "s.toml");
  ValidateSession(s);
  REQUIRE(s.events.size() == 1);
  const EventDef& e = s.events[0];
  CHECK(e.name == "lead_brakes");
  CHECK(e.when.kind == ConditionDef::Kind::kQuantity);
  CHECK(e.when.quantity == Quantity::kTimeHeadway);
  REQUIRE(e.when.below.has_value());
  CHECK(*e.when.below == doctest::Approx(1.5));
  CHECK_FALSE(e.when.above.has_value());
  CHECK_FALSE(e.repeat);
  CHECK(e.delay_s == 0);
  REQUIRE(e.actions.size() == 1);
  CHECK(e.actions[0].kind == ActionDef::Kind::kBrake);
  CHECK(e.actions[0].target == "ahead");
  CHECK(e.actions[0].decel_mps2 == doctest::Approx(6.0));
  CHECK(e.actions[0].duration_s == doctest::Approx(3.0));
  CHECK(e.where.find("s.toml:") == 0);
  // The node keys the example needs: a placed lead car, a model driver.
  const NodeDef* lead = s.FindNode("lead");
  REQUIRE(lead);
  CHECK(lead->start_given);
  CHECK(lead->start_s_m == doctest::Approx(110));
  const NodeDef* driver = s.FindNode("driver");
  REQUIRE(driver);
  CHECK(driver->input == "model:follow");
  CHECK(driver->driver_model.time_gap_s == doctest::Approx(1.2));
  CHECK(driver->start_speed_mps == doctest::Approx(20));
}

TEST_CASE("scenario config: every condition and action kind reads") {
  const SessionDef s = LoadSessionText(kNodes + R"(
[[event]]
name = "t"
when = { sim_time = 2.5 }
delay_s = 0.5
do = [ { action = "mark", text = "two and a half" },
       { action = "set_param", path = "server.broadcast_hz", value = 30 },
       { action = "spawn", node = "lead", s_m = 300, lane = -2, speed_mps = 15 },
       { action = "message", text = "hello", seat = "driver" } ]
[[event]]
name = "m"
when = { marker = "go" }
repeat = true
min_interval_s = 1.0
do = [ { action = "speed_profile", target = "lead", points = [0, 20, 5, 10, 10, 25] },
       { action = "change_lane", target = "lead:0", direction = "left" },
       { action = "stop", target = "lead" }, { action = "resume", target = "lead" }, { action = "remove", target = "lead" } ]
[[event]]
name = "k"
when = { key = "space", seat = "driver" }
do = [ { action = "mark", text = "pressed" } ]
[[event]]
name = "r"
when = { entity = "lead", quantity = "region", center = [100, 0], radius_m = 20 }
do = [ { action = "set_param", path = "node.lead.desired_speed_mps", value = "12" } ]
[[event]]
name = "l"
when = { entity = "driver", quantity = "lane", equals = -2 }
do = [ { action = "change_lane", target = "ahead", lane = -2 } ]
[[event]]
name = "ttc"
when = { entity = "driver", other = "lead", quantity = "ttc", below = 4, above = 0.5 }
do = [ { action = "brake", target = "ahead", decel_mps2 = 3 } ]
)", "s.toml");
  ValidateSession(s);
  REQUIRE(s.events.size() == 6);
  CHECK(s.events[0].when.kind == ConditionDef::Kind::kSimTime);
  CHECK(s.events[0].when.sim_time_s == doctest::Approx(2.5));
  CHECK(s.events[0].delay_s == doctest::Approx(0.5));
  CHECK(s.events[0].actions[1].value == "30");
  CHECK(s.events[0].actions[2].kind == ActionDef::Kind::kSpawn);
  CHECK(s.events[0].actions[2].lane == -2);
  CHECK(s.events[1].repeat);
  CHECK(s.events[1].min_interval_s == doctest::Approx(1.0));
  REQUIRE(s.events[1].actions[0].profile.size() == 3);
  CHECK(s.events[1].actions[0].profile[1].first == doctest::Approx(5));
  CHECK(s.events[1].actions[0].profile[1].second == doctest::Approx(10));
  CHECK(s.events[1].actions[1].direction == 1);
  CHECK(s.events[2].when.kind == ConditionDef::Kind::kKey);
  CHECK(s.events[2].when.text == "space");
  CHECK(s.events[3].when.circle);
  CHECK(s.events[3].actions[0].value == "\"12\"");
  REQUIRE(s.events[4].when.lane.has_value());
  CHECK(*s.events[4].when.lane == -2);
  CHECK(s.events[5].when.other == "lead");
  CHECK(EntityRefId("lead") == VehicleId("lead", 0));
  CHECK(EntityRefId("lead:3") == VehicleId("lead", 3));
  CHECK(EntityRefId("id:42") == 42);
  CHECK(EntityRefId("id:x") == 0);
}

TEST_CASE("scenario config: errors name the file, the line, the key and what was expected") {
  struct Case {
    const char* event;
    const char* expect;  // a piece of the message
  };
  const Case cases[] = {
      {"name = \"a\"\ndo = [ { action = \"mark\", text = \"x\" } ]", "event[0].when: is required"},
      {"name = \"a\"\nwhen = { sim_time = 1 }", "event[0].do: expected at least one action"},
      {"name = \"a\"\nwhen = { entity = \"driver\", quantity = \"headway\", below = 1 }\ndo = [ { action = \"mark\", text = \"x\" } ]",
       "quantity: expected one of \"speed\""},
      {"name = \"a\"\nwhen = { entity = \"driver\", quantity = \"speed\" }\ndo = [ { action = \"mark\", text = \"x\" } ]",
       "needs below = <value> and/or above = <value>"},
      {"name = \"a\"\nwhen = { sim_time = 1, marker = \"x\" }\ndo = [ { action = \"mark\", text = \"x\" } ]",
       "expected exactly one of sim_time"},
      {"name = \"a\"\nwhen = { sim_time = 1 }\ndo = [ { action = \"brake\", target = \"ahead\" } ]",
       "\"ahead\" is relative to the condition's entity"},
      {"name = \"a\"\nwhen = { sim_time = 1 }\ndo = [ { action = \"brake\", target = \"lead\", decel_mps2 = -3 } ]",
       "decel_mps2: expected a number in [0.1, 15], got -3"},
      {"name = \"a\"\nwhen = { sim_time = 1 }\ndo = [ { action = \"fly\" } ]", "action: expected one of \"set_param\""},
      {"name = \"a\"\nwhen = { sim_time = 1 }\ndo = [ { action = \"mark\", text = \"x\", colour = 3 } ]",
       "event[0].do[0].colour: unknown key"},
      {"name = \"a\"\nwhen = { sim_time = 1 }\ndo = [ { action = \"speed_profile\", target = \"lead\", points = [0, 20, 0, 10] } ]",
       "points: times must increase"},
      {"name = \"a\"\nwhen = { sim_time = 1 }\nmin_interval_s = 2\ndo = [ { action = \"mark\", text = \"x\" } ]",
       "min_interval_s: is for repeat = true events"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.event);
    const std::string message = ErrorOf(kNodes + "\n[[event]]\n" + c.event + "\n");
    CHECK(message.find(c.expect) != std::string::npos);
    // file:line first: the [[event]] follows the nodes, past line 20.
    CHECK(message.rfind("s.toml:", 0) == 0);
    CHECK(std::atoi(message.c_str() + 7) > 20);
  }
  // Two events of one name.
  CHECK(ErrorOf(kNodes + "[[event]]\nname = \"a\"\nwhen = { sim_time = 1 }\ndo = [ { action = \"mark\", text = \"x\" } ]\n"
                         "[[event]]\nname = \"a\"\nwhen = { sim_time = 2 }\ndo = [ { action = \"mark\", text = \"y\" } ]\n")
            .find("duplicate event name \"a\"") != std::string::npos);
}

TEST_CASE("scenario config: check and run refuse events that name what the session does not have") {
  // Loading succeeds; the session-wide check (ValidateSession, called by both) fails with file:line.
  const std::string unknown = kNodes + R"(
[[event]]
name = "a"
when = { entity = "nobody", quantity = "speed", above = 3 }
do = [ { action = "mark", text = "x" } ]
)";
  CHECK_NOTHROW(LoadSessionText(unknown, "s.toml"));
  const std::string m1 = ErrorOf(unknown);
  CHECK(m1.find("s.toml:") == 0);
  CHECK(m1.find("event[0].when.entity: \"nobody\" names no vehicle of this session (nodes with vehicles: lead, driver)") !=
        std::string::npos);
  // Vehicle commands act on road traffic, not on a seat's car.
  const std::string m2 = ErrorOf(kNodes + R"(
[[event]]
name = "a"
when = { sim_time = 1 }
do = [ { action = "brake", target = "driver" } ]
)");
  CHECK(m2.find("event[0].do[0].target: \"driver\": brake acts on road traffic vehicles") != std::string::npos);
  const std::string m3 = ErrorOf(kNodes + R"(
[[event]]
name = "a"
when = { sim_time = 1 }
do = [ { action = "message", text = "hi", seat = "lead" } ]
)");
  CHECK(m3.find("event[0].do[0].seat: \"lead\" is not a driver node") != std::string::npos);
  // The example session in configs/ passes the same check.
  CHECK_NOTHROW(ValidateSession(LoadSession(std::string(PLATOON_SOURCE_DIR) + "/configs/headway_brake.toml")));
}

TEST_CASE("scenario config: start keys place a road traffic lead car and stay refused elsewhere") {
  const std::string m = ErrorOf(R"(
[[node]]
name = "ring"
role = "traffic"
start_s_m = 10
)");
  CHECK(m.find("start_s_m: is a driver key: it needs role = \"driver\" (or a traffic node with traffic_model = \"road\")") !=
        std::string::npos);
  const std::string m2 = ErrorOf(R"(
[[node]]
name = "d"
role = "driver"
input = "model:swerve"
)");
  CHECK(m2.find("input: the driver model is \"model:follow\"") != std::string::npos);
}

}  // namespace
}  // namespace platoon::config
