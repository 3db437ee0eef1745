// Parameters by path: the typed registry every process keeps.
#include "platoon/config/params.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace platoon;
using config::ParamRegistry;

namespace {

struct Tunables {
  double speed = 15;
  int64_t vehicles = 30;
  bool lights = true;
  std::string policy = "freeze";
};

ParamRegistry Make(Tunables& t) {
  ParamRegistry r;
  r.AddFloat("node.traffic.desired_speed_mps", "m/s", config::Range{1, 70}, "Mean desired speed",
             [&t] { return t.speed; }, [&t](double v) { t.speed = v; });
  r.AddInt("node.traffic.vehicles", "", config::bounds::kVehicles, "Vehicles", [&t] { return t.vehicles; },
           [&t](int64_t v) { t.vehicles = v; });
  r.AddBool("node.traffic.lights", "Headlights", [&t] { return t.lights; }, [&t](bool v) { t.lights = v; });
  r.AddString("server.stale_policy", "Stale policy", [&t] { return t.policy; },
              [&t](const std::string& v) { t.policy = v; }, {"freeze", "remove"});
  r.AddFloat("server.entities", "", config::Range{0, 1e9}, "Read-only count", [] { return 7.0; });
  return r;
}

}  // namespace

TEST_CASE("params: list by prefix gives type, unit, range, writability and the current value") {
  Tunables t;
  auto r = Make(t);
  const auto all = r.List("");
  REQUIRE(all.size() == 5);
  const auto node = r.List("node.traffic.");
  REQUIRE(node.size() == 3);
  CHECK(node[0].path == "node.traffic.desired_speed_mps");
  CHECK(node[0].value == "15");
  CHECK(node[0].type == "float");
  CHECK(node[0].unit == "m/s");
  CHECK(node[0].min == 1);
  CHECK(node[0].max == 70);
  CHECK(node[0].writable);
  CHECK(r.Get("server.entities").param.writable == false);
  CHECK(r.Get("server.stale_policy").param.value == "\"freeze\"");
}

TEST_CASE("params: a valid set changes the value and answers with it") {
  Tunables t;
  auto r = Make(t);
  auto reply = r.Set("node.traffic.desired_speed_mps", "22.5");
  CHECK(reply.ok);
  CHECK(t.speed == 22.5);
  CHECK(reply.param.value == "22.5");
  CHECK(r.Set("node.traffic.vehicles", "12").ok);
  CHECK(t.vehicles == 12);
  CHECK(r.Set("node.traffic.lights", "false").ok);
  CHECK_FALSE(t.lights);
  CHECK(r.Set("server.stale_policy", "\"remove\"").ok);
  CHECK(t.policy == "remove");
  CHECK(r.Set("server.stale_policy", "freeze").ok);  // a bare word is the string itself
  CHECK(t.policy == "freeze");
}

TEST_CASE("params: NaN, infinity, out of range and wrong types are refused, naming path and range, changing nothing") {
  Tunables t;
  auto r = Make(t);
  const std::string path = "node.traffic.desired_speed_mps";
  struct Case {
    const char* text;
    const char* got;
  };
  for (const Case c : {Case{"nan", "got nan"}, Case{"NaN", "got nan"}, Case{"inf", "got inf"}, Case{"-inf", "got -inf"},
                       Case{"0.5", "got 0.5"}, Case{"70.01", "got 70.01"}, Case{"\"fast\"", "got \"fast\""},
                       Case{"true", "got true"}, Case{"", "got nothing"}, Case{"12 m/s", "got 12 m/s"}}) {
    CAPTURE(c.text);
    const auto reply = r.Set(path, c.text);
    CHECK_FALSE(reply.ok);
    CHECK(reply.error == path + ": expected a number in [1, 70] m/s, " + c.got);
    CHECK(t.speed == 15);
    CHECK(reply.param.value == "15");  // the refusal shows the value that stays
  }
  CHECK(r.Set("node.traffic.vehicles", "2.5").error == "node.traffic.vehicles: expected an integer in [0, 65535], got 2.5");
  CHECK(r.Set("node.traffic.vehicles", "70000").error.find("[0, 65535]") != std::string::npos);
  CHECK(t.vehicles == 30);
  CHECK(r.Set("node.traffic.lights", "1").error == "node.traffic.lights: expected true or false, got 1");
  CHECK(t.lights);
  CHECK(r.Set("server.stale_policy", "drop").error ==
        "server.stale_policy: expected one of \"freeze\", \"remove\", got \"drop\"");
  CHECK(t.policy == "freeze");
}

TEST_CASE("params: unknown paths and read-only entries are refused") {
  Tunables t;
  auto r = Make(t);
  const auto unknown = r.Set("node.traffic.no_such", "1");
  CHECK_FALSE(unknown.ok);
  CHECK(unknown.error == "node.traffic.no_such: no such parameter");
  CHECK_FALSE(r.Get("node.traffic.no_such").ok);
  const auto ro = r.Set("server.entities", "3");
  CHECK_FALSE(ro.ok);
  CHECK(ro.error == "server.entities: read-only");
}

TEST_CASE("params: a further check refuses values that depend on another setting") {
  Tunables t;
  auto r = Make(t);
  r.AddCheck("node.traffic.vehicles", [&t](const config::ParamValue& v) {
    return std::get<int64_t>(v) > t.speed ? std::string() : "must exceed the speed";
  });
  CHECK(r.Set("node.traffic.vehicles", "10").error == "node.traffic.vehicles: must exceed the speed");
  CHECK(t.vehicles == 30);
  CHECK(r.Set("node.traffic.vehicles", "16").ok);
}

TEST_CASE("params: Check validates without applying") {
  Tunables t;
  auto r = Make(t);
  std::string error;
  const auto v = r.Check("node.traffic.desired_speed_mps", "30", error);
  REQUIRE(v);
  CHECK(std::get<double>(*v) == 30);
  CHECK(t.speed == 15);
  r.Apply("node.traffic.desired_speed_mps", *v);
  CHECK(t.speed == 30);
  CHECK_FALSE(r.Check("node.traffic.desired_speed_mps", "inf", error));
  CHECK(error.find("got inf") != std::string::npos);
}

TEST_CASE("params: values format as TOML literals that read back") {
  CHECK(config::FormatNumber(0.1) == "0.1");
  CHECK(config::FormatNumber(15) == "15");
  CHECK(config::FormatValue(config::ParamValue{std::string("a\"b")}) == "\"a\\\"b\"");
  CHECK(config::FormatValue(config::ParamValue{int64_t{-3}}) == "-3");
  CHECK(std::stod(config::FormatNumber(1.0 / 3.0)) == 1.0 / 3.0);
}

TEST_CASE("params: fault injector settings use the [faults] bounds and the fault definition's own check") {
  transport::FaultDef faults;
  int changes = 0;
  ParamRegistry r;
  config::AddFaultParams(r, "node.a.faults.", faults, [&] { ++changes; });
  CHECK(r.Set("node.a.faults.drop", "0.25").ok);
  CHECK(faults.drop_probability == 0.25);
  CHECK(changes == 1);
  const auto reorder = r.Set("node.a.faults.reorder", "0.6");
  CHECK(reorder.error == "node.a.faults.reorder: expected a number in [0, 0.5], got 0.6");
  CHECK(r.Set("node.a.faults.delay_ms", "nan").error == "node.a.faults.delay_ms: expected a number in [0, 60000] ms, got nan");
  CHECK(faults.reorder_probability == 0);
  CHECK(changes == 1);
}
