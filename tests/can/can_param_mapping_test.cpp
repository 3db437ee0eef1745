// Live parameters in the CAN mapping core (shared/src/can/mapping.cpp, docs/CAN.md "Live parameters"):
// param = "PATH" beside variable in the mapping file, the values a tx signal carries, received values
// reported once per change, and the registry text of numbers, integers and booleans. And the seat's
// resolution of the paths in a node's registry (node/src/driver_seat.cpp, ResolveCanParams).
#include "../support/session_fixture.hpp"
#include "platoon/can/dbc.hpp"
#include "platoon/can/mapping.hpp"
#include "platoon/config/params.hpp"
#include "platoon/config/table.hpp"
#include "platoon/node/driver_seat.hpp"

#include <doctest/doctest.h>

#include <cmath>

namespace can_param_mapping_test_detail {

using namespace platoon;

// A DBC of our own: a tx message with a 0.01 friction and a 1 kg mass, an rx one with a friction and a flag.
constexpr const char* kParamDbc =
    "BU_: Seat Ecu\n"
    "BO_ 300 Out: 4 Seat\n"
    " SG_ Mu : 0|8@1+ (0.01,0) [0|2.55] \"\" Ecu\n"
    " SG_ Mass : 8|16@1+ (1,0) [0|65535] \"kg\" Ecu\n"
    "BO_ 301 In: 4 Ecu\n"
    " SG_ MuCmd : 0|8@1+ (0.01,0) [0|2.55] \"\" Seat\n"
    " SG_ Flag : 8|1@1+ (1,0) [0|1] \"\" Seat\n"
    " SG_ Steer : 16|8@1- (1,0) [-100|100] \"%\" Seat\n"
    "BA_DEF_ BO_ \"GenMsgCycleTime\" INT 0 10000;\n"
    "BA_ \"GenMsgCycleTime\" BO_ 300 100;\n";

constexpr const char* kParamMap =
    "dbc = \"p.dbc\"\n"
    "[[message]]\nname = \"Out\"\ndirection = \"tx\"\n"
    "[[message.signal]]\nname = \"Mu\"\nparam = \"tyre_mu\"\n"
    "[[message.signal]]\nname = \"Mass\"\nparam = \"node.seat.vehicle_mass_kg\"\nfactor = 2\n"
    "[[message]]\nname = \"In\"\ndirection = \"rx\"\n"
    "[[message.signal]]\nname = \"MuCmd\"\nparam = \"tyre_mu\"\n"
    "[[message.signal]]\nname = \"Flag\"\nparam = \"flag\"\n";

can::MappingDef ParamMapping(const testing::TempDir& dir, const std::string& body) {
  dir.Write("p.dbc", kParamDbc);
  return can::LoadMapping(dir.Write("map.toml", body));
}

std::string ParamMappingError(const testing::TempDir& dir, const std::string& body) {
  try {
    ParamMapping(dir, body);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// An In frame with the friction's and the flag's raw values.
can::Frame InFrame(const can::Message& in, double mu, double flag) {
  return can::EncodeMessage(in, {{"MuCmd", mu}, {"Flag", flag}, {"Steer", 0}});
}

}  // namespace can_param_mapping_test_detail

using namespace can_param_mapping_test_detail;

TEST_CASE("can params: a signal takes exactly one of variable and param and the path must be a parameter path") {
  const testing::TempDir dir;
  CHECK(ParamMappingError(dir, kParamMap) == "");
  const std::string head = "dbc = \"p.dbc\"\n[[message]]\nname = \"In\"\ndirection = \"rx\"\n[[message.signal]]\nname = \"MuCmd\"\n";
  const std::string both = ParamMappingError(dir, head + "variable = \"steer\"\nparam = \"tyre_mu\"\n");
  CHECK(both.find("map.toml:8: message[0].signal[0].param: a signal carries either a variable or a param, got both") !=
        std::string::npos);
  const std::string neither = ParamMappingError(dir, head + "factor = 0.01\n");
  CHECK(neither.find("map.toml:6: message[0].signal[0].name: expected variable = ") != std::string::npos);
  CHECK(neither.find("or param = ") != std::string::npos);
  for (const char* bad : {"", "node..tyre_mu", ".tyre_mu", "tyre_mu.", "tyre mu", "tyre_mu\\\"x"}) {
    INFO("path: " << bad);
    CHECK(ParamMappingError(dir, head + "param = \"" + bad + "\"\n").find("map.toml:7: message[0].signal[0].param: expected a parameter path") !=
          std::string::npos);
  }
  // A string in place of the path, and a number.
  CHECK(ParamMappingError(dir, head + "param = 3\n").find("map.toml:7") != std::string::npos);
  // What the seat needs to resolve and to refuse: the path as written and where it stands.
  const can::MappingDef d = ParamMapping(dir, kParamMap);
  REQUIRE(d.params.size() == 4);
  CHECK(d.params[1].path == "node.seat.vehicle_mass_kg");
  CHECK(d.params[1].direction == can::Direction::kTx);
  CHECK(d.params[2].direction == can::Direction::kRx);
  CHECK(d.params[3].where == dir.Path() + "/map.toml:20: message[1].signal[1].param");
  CHECK(d.params[3].message == "In");
  CHECK(d.params[3].signal == "Flag");
  CHECK(d.messages[0].signals[1].param == 1);
  CHECK(d.messages[1].signals[0].param == 2);
}

TEST_CASE("can params: a tx parameter signal carries the value the seat hands within its resolution and raw 0 without one") {
  const testing::TempDir dir;
  can::CanMapping mapping(ParamMapping(dir, kParamMap), 0.2);
  const can::Message* out = mapping.Def().dbc.FindMessage("Out");
  REQUIRE(out);
  CHECK(mapping.HasTx());
  CHECK_FALSE(mapping.HasRx());  // no command variable is received
  CHECK(mapping.HasParamRx());
  // Values indexed like Def().params: mu 0.73, mass 1437 kg (factor 2: the DBC carries half), the rx ones unused.
  const double mu = 0.73, mass = 1437;
  const auto frames = mapping.Due(200'000'000, can::VariableValues{}, {mu, mass, 9.0, 9.0});
  REQUIRE(frames.size() == 1);
  const auto v = can::DecodeMessage(*out, frames[0].frame);
  CHECK(std::abs(v.at("Mu") - mu) <= 0.005 + 1e-9);
  CHECK(std::abs(v.at("Mass") * 2 - mass) <= 2 * 0.5 + 1e-9);
  // The next period slot, without parameter values (a NaN, a shorter vector): raw 0.
  const auto bare = mapping.Due(300'000'000, can::VariableValues{}, {std::nan(""), 1000.0});
  REQUIRE(bare.size() == 1);
  CHECK(can::DecodeMessage(*out, bare[0].frame).at("Mu") == 0.0);
  CHECK(can::DecodeMessage(*out, bare[0].frame).at("Mass") == 500.0);
  const auto none = mapping.Due(400'000'000, can::VariableValues{});
  REQUIRE(none.size() == 1);
  CHECK(can::DecodeMessage(*out, none[0].frame).at("Mass") == 0.0);
}

TEST_CASE("can params: a received parameter value is reported once until it changes and the newest per take") {
  const testing::TempDir dir;
  can::CanMapping mapping(ParamMapping(dir, kParamMap), 0.2);
  const can::Message* in = mapping.Def().dbc.FindMessage("In");
  REQUIRE(in);
  // The same frame every 10 ms for a second: one update each for the friction and the flag.
  for (int k = 0; k < 100; ++k) CHECK(mapping.Take(InFrame(*in, 0.5, 1), k * 10'000'000));
  auto updates = mapping.TakeParamUpdates();
  REQUIRE(updates.size() == 2);
  CHECK(updates[0].param == 2);
  CHECK(updates[0].value == doctest::Approx(0.5));
  CHECK(updates[0].sim_ns == 0);
  CHECK(updates[1].param == 3);
  CHECK(updates[1].value == 1.0);
  for (int k = 100; k < 200; ++k) mapping.Take(InFrame(*in, 0.5, 1), k * 10'000'000);
  CHECK(mapping.TakeParamUpdates().empty());
  // Two changes of the friction before the seat takes them: only the newest, at its own time.
  mapping.Take(InFrame(*in, 0.6, 1), 2'000'000'000);
  mapping.Take(InFrame(*in, 0.7, 1), 2'010'000'000);
  updates = mapping.TakeParamUpdates();
  REQUIRE(updates.size() == 1);
  CHECK(updates[0].value == doctest::Approx(0.7));
  CHECK(updates[0].sim_ns == 2'010'000'000);
  // A parameter-only frame is no command: the seat's commands stay as before the first one.
  CHECK_FALSE(mapping.Command(2'010'000'000).active);
  CHECK(mapping.Command(2'010'000'000).brake == 1.0);
  CHECK(mapping.Counters().rx_frames == 202);
  // What the seat made of them is counted by it.
  mapping.CountParam(true);
  mapping.CountParam(false);
  mapping.CountParam(false);
  CHECK(mapping.Counters().param_updates == 1);
  CHECK(mapping.Counters().param_refused == 2);
}

TEST_CASE("can params: received values become registry text for numbers integers and booleans and strings are refused") {
  std::string error;
  CHECK(can::ParamText(0.5, "float", error) == "0.5");
  CHECK(can::ParamText(0.73, "", error) == "0.73");
  const auto exact = can::ParamText(0.1 * 3, "float", error);
  REQUIRE(exact);
  CHECK(std::strtod(exact->c_str(), nullptr) == 0.1 * 3);  // reads back exactly
  CHECK(can::ParamText(2.6, "int", error) == "3");
  CHECK(can::ParamText(-4.0, "int", error) == "-4");
  CHECK(can::ParamText(1.0, "bool", error) == "true");
  CHECK(can::ParamText(0.0, "bool", error) == "false");
  CHECK_FALSE(can::ParamText(0.5, "bool", error));
  CHECK(error == "expected 1 or 0 for a boolean, got 0.5");
  CHECK_FALSE(can::ParamText(2.0, "bool", error));
  CHECK_FALSE(can::ParamText(1.0, "string", error));
  CHECK(error.find("string parameter") != std::string::npos);
  CHECK_FALSE(can::ParamText(std::nan(""), "float", error));
  CHECK_FALSE(can::ParamText(INFINITY, "int", error));
  // A parameter's value text as a signal sends it.
  CHECK(can::ParamNumber("0.5") == 0.5);
  CHECK(can::ParamNumber("1500") == 1500.0);
  CHECK(can::ParamNumber("true") == 1.0);
  CHECK(can::ParamNumber("false") == 0.0);
  CHECK_FALSE(can::ParamNumber("\"freeze\""));
  CHECK_FALSE(can::ParamNumber("1.5x"));
  CHECK_FALSE(can::ParamNumber(""));
}

TEST_CASE("can params: the seat resolves paths in its node and refuses an unknown a string a read-only and another node's path") {
  const testing::TempDir dir;
  double mu = 1.0;
  bool flag = false;
  config::ParamRegistry known;
  known.AddFloat("node.seat.tyre_mu", "", config::bounds::kTyreFriction, "friction", [&] { return mu; }, [&](double v) { mu = v; });
  known.AddBool("node.seat.flag", "a flag", [&] { return flag; }, [&](bool v) { flag = v; });
  known.AddFloat("node.seat.sim_time_s", "s", config::Range{-INFINITY, INFINITY}, "sim time", [] { return 1.0; });
  known.AddString("node.seat.role", "role", [] { return std::string("driver"); });
  known.AddFloat("node.seat.vehicle_mass_kg", "kg", config::bounds::kVehicleMassKg, "mass", [] { return 1500.0; },
                 [](double) {});
  known.AddFloat("node.other.tyre_mu", "", config::bounds::kTyreFriction, "friction", [] { return 1.0; }, [](double) {});
  const auto targets = node::ResolveCanParams(ParamMapping(dir, kParamMap), known, "seat");
  REQUIRE(targets.size() == 4);
  CHECK(targets[0].path == "node.seat.tyre_mu");
  CHECK(targets[0].type == "float");
  CHECK(targets[1].path == "node.seat.vehicle_mass_kg");
  CHECK(targets[3].path == "node.seat.flag");
  CHECK(targets[3].type == "bool");

  const auto error_of = [&](const std::string& body) -> std::string {
    try {
      node::ResolveCanParams(ParamMapping(dir, body), known, "seat");
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  const std::string rx = "dbc = \"p.dbc\"\n[[message]]\nname = \"In\"\ndirection = \"rx\"\n[[message.signal]]\nname = \"MuCmd\"\n";
  const std::string tx = "dbc = \"p.dbc\"\n[[message]]\nname = \"Out\"\ndirection = \"tx\"\n[[message.signal]]\nname = \"Mu\"\n";
  const std::string unknown = error_of(rx + "param = \"tyre_muu\"\n");
  CHECK(unknown.find("map.toml:7: message[0].signal[0].param: expected a parameter of node \"seat\" that a signal can set "
                     "(flag, tyre_mu, vehicle_mass_kg;") != std::string::npos);
  CHECK(unknown.find("got \"tyre_muu\"") != std::string::npos);
  // tx lists the read-only ones too, never the string.
  const std::string unknown_tx = error_of(tx + "param = \"speed\"\n");
  CHECK(unknown_tx.find("can carry (flag, sim_time_s, tyre_mu, vehicle_mass_kg;") != std::string::npos);
  CHECK(error_of(tx + "param = \"role\"\n").find("map.toml:7: message[0].signal[0].param: node.seat.role is a string parameter") !=
        std::string::npos);
  CHECK(error_of(rx + "param = \"sim_time_s\"\n").find("node.seat.sim_time_s is read-only") != std::string::npos);
  CHECK(error_of(tx + "param = \"sim_time_s\"\n") == "");  // read-only is fine to send
  CHECK(error_of(rx + "param = \"node.other.tyre_mu\"\n")
            .find("expected a parameter of this seat's node (node.seat.<name>, or <name> alone), got \"node.other.tyre_mu\"") !=
        std::string::npos);
  CHECK(error_of(rx + "param = \"tyre_mu\"\n[[message.signal]]\nname = \"Flag\"\nparam = \"node.seat.tyre_mu\"\n")
            .find("map.toml:10: message[0].signal[1].param: node.seat.tyre_mu is already received at") != std::string::npos);
  // The entry's own check, run on its current value: a parameter fixed at start cannot be received.
  known.AddCheck("node.seat.tyre_mu", [](const config::ParamValue&) { return std::string("is fixed at start"); });
  CHECK(error_of(rx + "param = \"tyre_mu\"\n").find("an rx signal cannot set it: ") != std::string::npos);
}
