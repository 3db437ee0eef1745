// FMI 2.0 co-simulation vehicle models (node/vehicle/src/fmu.cpp, the seat's vehicle_model = "fmu"):
// the project's test FMU (tests/fmu, the single-track model as an FMU) against vehicle::Step itself, the
// message of every FMU the shell refuses, a step that fails in the middle of a session (the seat holds its
// car, the session goes on), and `platoon check` on a broken FMU.
#include "../support/in_process_session.hpp"
#include "../support/session_fixture.hpp"

#include "platoon/config/session.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/node/driver_seat.hpp"
#include "platoon/process/child.hpp"
#include "platoon/vehicle/fmu.hpp"
#include "platoon/vehicle/single_track.hpp"

#include <doctest/doctest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

namespace platoon::testing {
namespace fmu_vehicle_test_detail {

using namespace std::chrono_literals;

std::string TestFmu(const std::string& name) { return std::string(PLATOON_TEST_FMU_DIR) + "/" + name + ".fmu"; }

// The 30 s drive: accelerate, slalom while holding speed, coast into a curve, brake to a stop.
vehicle::VehicleInput Drive(double t_s) {
  vehicle::VehicleInput in;
  if (t_s < 8) {
    in.throttle = 0.6;
  } else if (t_s < 20) {
    in.throttle = 0.25;
    in.steer = 0.35 * std::sin(2 * M_PI * (t_s - 8) / 4.0);
  } else if (t_s < 24) {
    in.steer = 0.2;
  } else {
    in.steer = 0.1;
    in.brake = 0.5;
  }
  return in;
}

// What FmuVehicle::Open refuses, as its message ("" when it opens).
std::string OpenError(const std::string& path) {
  vehicle::FmuDef def = vehicle::DefaultFmuDef();
  def.path = path;
  try {
    (void)vehicle::FmuVehicle::Open(def);
  } catch (const vehicle::FmuError& e) {
    return e.what();
  }
  return "";
}

bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace fmu_vehicle_test_detail

using namespace fmu_vehicle_test_detail;

TEST_CASE("fmu vehicle: the test FMU reproduces the single-track trajectory within 1 cm over a 30 s drive with steering and braking") {
  const vehicle::VehicleDef def = vehicle::DefaultVehicleDef();
  vehicle::FmuDef fd = vehicle::DefaultFmuDef();
  fd.path = TestFmu("single_track");
  fd.step_s = 0.001;  // the driver seat's 1 kHz
  fd.start = vehicle::FmuStart{12.0, -4.0, 0.3, 2.0};
  std::vector<std::string> messages;
  auto fmu = vehicle::FmuVehicle::Open(fd, [&](vehicle::FmuLogLevel, const std::string& m) { messages.push_back(m); });
  REQUIRE(fmu);
  CHECK(fmu->TakesStartPose());
  CHECK(fmu->Description().model_identifier == "single_track");
  // The reference: the built-in model from the same start.
  vehicle::VehicleState ref;
  ref.x_m = 12.0, ref.y_m = -4.0, ref.yaw_rad = 0.3, ref.vx_mps = 2.0;
  CHECK(std::abs(fmu->State().x_m - ref.x_m) < 1e-12);
  CHECK(std::abs(fmu->State().yaw_rad - ref.yaw_rad) < 1e-12);

  double max_position_m = 0, max_yaw_rad = 0, max_speed_mps = 0, top_speed = 0, max_yaw_rate = 0;
  const int steps = 30'000;
  for (int i = 0; i < steps; ++i) {
    const vehicle::VehicleInput in = Drive(i * 0.001);
    ref = vehicle::Step(def, ref, in, 0.001);
    vehicle::FmuInput fin;
    fin.steer = in.steer, fin.throttle = in.throttle, fin.brake = in.brake;
    REQUIRE(fmu->Step(fin));
    const vehicle::VehicleState& s = fmu->State();
    max_position_m = std::max(max_position_m, std::hypot(s.x_m - ref.x_m, s.y_m - ref.y_m));
    max_yaw_rad = std::max(max_yaw_rad, std::abs(std::remainder(s.yaw_rad - ref.yaw_rad, 2 * M_PI)));
    max_speed_mps = std::max(max_speed_mps, std::abs(s.vx_mps - ref.vx_mps));
    top_speed = std::max(top_speed, ref.vx_mps);
    max_yaw_rate = std::max(max_yaw_rate, std::abs(ref.yaw_rate_radps));
  }
  MESSAGE("FMU vs vehicle::Step over 30 s at 1 kHz: max position difference ", max_position_m, " m, yaw ", max_yaw_rad,
          " rad, speed ", max_speed_mps, " m/s; drive: ", ref.distance_m, " m, top ", top_speed, " m/s, end ", ref.vx_mps, " m/s");
  CHECK(max_position_m < 0.01);
  CHECK(max_yaw_rad < 1e-3);
  CHECK(std::abs(fmu->TimeS() - 30.0) < 1e-9);
  // The drive was one: it went far and fast, turned, and braked to (near) rest.
  CHECK(ref.distance_m > 150.0);
  CHECK(top_speed > 12.0);
  CHECK(max_yaw_rate > 0.2);
  CHECK(ref.vx_mps < 1.0);
  CHECK(std::abs(fmu->State().distance_m - ref.distance_m) < 0.05);
  CHECK(messages.empty());
}

TEST_CASE("fmu vehicle: each FMU the shell refuses gives its message and leaves no temporary folder") {
  TempDir dir;
  // The unzipped FMUs go under TMPDIR: here, so that what is left behind can be counted.
  const std::string tmp = dir.Path() + "/tmp";
  std::filesystem::create_directories(tmp);
  const char* old_tmp = getenv("TMPDIR");
  const std::string saved = old_tmp ? old_tmp : "";
  setenv("TMPDIR", tmp.c_str(), 1);

  const std::string missing = dir.Path() + "/nowhere.fmu";
  CHECK(OpenError(missing) == missing + ": no such file");
  const std::string text = dir.Write("text.fmu", "this is no zip archive\n");
  CHECK(OpenError(text) == text + ": expected an FMU (a zip archive), got a file that is not a zip archive");
  CHECK(Has(OpenError(TestFmu("no_description")), "no_description.fmu: the archive has no modelDescription.xml"));
  const std::string v1 = OpenError(TestFmu("fmi1"));
  CHECK(Has(v1, "fmi1.fmu: modelDescription.xml:6: fmiVersion: expected \"2.0\" (FMI 2.0), got \"1.0\""));
  const std::string me = OpenError(TestFmu("model_exchange"));
  CHECK(Has(me, "model_exchange.fmu: modelDescription.xml:6: the FMU is for model exchange only"));
  const std::string no_vx = OpenError(TestFmu("no_vx"));
  CHECK(Has(no_vx, "no_vx.fmu: modelDescription.xml: missing variable \"vx\" (causality output, Real: speed along the body x axis, in m/s); "
                   "its outputs: x, y, yaw, speed, vy, yaw_rate, ax, ay, steer_angle"));
  CHECK(Has(OpenError(TestFmu("no_binary")),
            "no_binary.fmu: no binaries/linux64/single_track.so (the library for 64-bit Linux); the FMU has binaries for: none"));
  CHECK(Has(OpenError(TestFmu("incomplete")),
            "incomplete.fmu: binaries/linux64/incomplete.so has no function fmi2Instantiate"));
  // Every refusal removed its folder.
  size_t left = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(tmp)) ++left;
  CHECK(left == 0);
  // And an FMU that opens removes its folder when it is closed.
  {
    vehicle::FmuDef fd = vehicle::DefaultFmuDef();
    fd.path = TestFmu("single_track");
    auto fmu = vehicle::FmuVehicle::Open(fd);
    size_t open = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(tmp)) ++open;
    CHECK(open == 1);
  }
  left = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(tmp)) ++left;
  CHECK(left == 0);
  if (old_tmp) setenv("TMPDIR", saved.c_str(), 1);
  else unsetenv("TMPDIR");
}

TEST_CASE("fmu vehicle: modelDescription.xml errors name the line and what was expected") {
  const auto error_of = [](const std::string& xml) {
    try {
      (void)vehicle::ParseFmuDescription(xml, "car.fmu: modelDescription.xml");
    } catch (const vehicle::FmuError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error_of("<model/>") == "car.fmu: modelDescription.xml:1: expected the root element <fmiModelDescription>, got <model>");
  CHECK(error_of("<fmiModelDescription guid=\"g\"/>") == "car.fmu: modelDescription.xml:1: fmiVersion: expected \"2.0\" (FMI 2.0), got none");
  CHECK(error_of("<fmiModelDescription fmiVersion=\"2.0\">\n<CoSimulation/>\n</fmiModelDescription>") ==
        "car.fmu: modelDescription.xml:2: <CoSimulation>: expected a modelIdentifier, got none");
  CHECK(error_of("<fmiModelDescription fmiVersion=\"2.0\"><CoSimulation modelIdentifier=\"m\"/><ModelVariables>\n"
                 "<ScalarVariable name=\"x\" valueReference=\"-1\"><Real/></ScalarVariable></ModelVariables></fmiModelDescription>") ==
        "car.fmu: modelDescription.xml:2: variable \"x\": expected a valueReference (an unsigned integer), got \"-1\"");
  CHECK(Has(error_of("<fmiModelDescription fmiVersion=\"2.0\">"), "car.fmu: modelDescription.xml:"));
  // A good one: every variable with its reference, causality, type and start.
  const vehicle::FmuDescription d = vehicle::ParseFmuDescription(
      "<fmiModelDescription fmiVersion=\"2.0\" modelName=\"car\" guid=\"{1}\">\n"
      "<CoSimulation modelIdentifier=\"car\" canHandleVariableCommunicationStepSize=\"true\"/>\n<ModelVariables>\n"
      "<ScalarVariable name=\"steer\" valueReference=\"7\" causality=\"input\"><Real start=\"0.5\"/></ScalarVariable>\n"
      "<ScalarVariable name=\"gear\" valueReference=\"2\" causality=\"input\"><Integer start=\"1\"/></ScalarVariable>\n"
      "</ModelVariables></fmiModelDescription>",
      "car.fmu: modelDescription.xml");
  CHECK(d.model_identifier == "car");
  CHECK(d.guid == "{1}");
  CHECK(d.can_handle_variable_step);
  REQUIRE(d.variables.size() == 2);
  REQUIRE(d.Find("steer"));
  CHECK(d.Find("steer")->value_reference == 7);
  CHECK(d.Find("steer")->start == 0.5);
  CHECK(d.Find("steer")->line == 4);
  CHECK(d.Find("gear")->type == "Integer");
  CHECK(d.Find("vx") == nullptr);
}

TEST_CASE("fmu vehicle: a failed fmi2DoStep keeps the last state and says when and why") {
  vehicle::FmuDef fd = vehicle::DefaultFmuDef();
  fd.path = TestFmu("single_track_failing");
  std::vector<std::pair<vehicle::FmuLogLevel, std::string>> log;
  auto fmu = vehicle::FmuVehicle::Open(fd, [&](vehicle::FmuLogLevel l, const std::string& m) { log.emplace_back(l, m); });
  vehicle::FmuInput in;
  in.throttle = 0.5;
  int ok = 0;
  while (ok < 5000 && fmu->Step(in)) ++ok;
  CHECK(ok == 3000);  // the failing build refuses its 3001st step
  CHECK(fmu->Failed());
  const vehicle::VehicleState held = fmu->State();
  CHECK(held.vx_mps > 1.0);
  CHECK(Has(fmu->Error(), "single_track_failing.fmu: fmi2DoStep at t = 3.000 s returned fmi2Error (the FMU said: deliberate failure"));
  CHECK_FALSE(fmu->Step(in));
  CHECK(fmu->State() == held);
  REQUIRE(log.size() == 1);  // the FMU's own message, once
  CHECK(log.front().first == vehicle::FmuLogLevel::kError);
  CHECK(Has(log.front().second, "deliberate failure of the test FMU after 3000 steps"));
}

TEST_CASE("fmu vehicle: a seat whose FMU fails stops its car while the session goes on") {
  TempDir dir;
  const std::string script = dir.Write("go.csv", "time_s, steer, throttle, brake\n0, 0, 0.5, 0\n8, 0, 0.5, 0\n");
  const std::string text = R"(
[session]
mode = "lockstep"
step_hz = 100
end_s = 6

[[node]]
name = "fmucar"
role = "driver"
vehicle_model = "fmu"
fmu = ")" + TestFmu("single_track_failing") + R"("
headless = true
input = "scripted:)" + script + R"("

[[node]]
name = "builtin"
role = "driver"
headless = true
start_s_m = 40
input = "scripted:)" + script + R"("
)";
  config::SessionDef session = config::LoadSessionText(text, dir.Path() + "/fmu.toml");
  config::ValidateSession(session);
  std::map<std::string, node::DriverSeatModule*> seats;
  uint64_t held = 0;
  std::string error;
  InProcessOptions options;
  options.publish_every_step = true;
  options.on_modules = [&](const config::NodeDef& n, std::vector<std::unique_ptr<node::Module>>& modules) {
    seats[n.name] = dynamic_cast<node::DriverSeatModule*>(modules.front().get());
  };
  options.on_poll = [&](server::WorldCore&, int64_t) {
    if (seats["fmucar"] && seats["fmucar"]->Fmu()) {
      held = seats["fmucar"]->FmuHeldSteps();
      error = seats["fmucar"]->Fmu()->Error();
    }
  };
  // Each car's world position at each stamp.
  std::map<uint64_t, std::vector<std::pair<int64_t, Vec3>>> track;
  options.on_world = [&](const protocol::WorldState& w, const std::string&) {
    for (const auto& e : w.entities) {
      auto& t = track[e.id];
      if (t.empty() || t.back().first < e.kinematics.stamp_ns) t.emplace_back(e.kinematics.stamp_ns, e.kinematics.pose.position_m);
    }
  };
  const InProcessResult r = RunInProcess(session, 1, options);
  CHECK(r.sim_time_ns == 6'000'000'000);  // the session ran to its end
  REQUIRE(seats["fmucar"]);
  CHECK(held > 2000);  // held from about 3 s to 6 s of sim time
  CHECK(Has(error, "fmi2DoStep at t = 3.000 s returned fmi2Error"));
  // Where each car was at sim time t (the last state at or before it).
  const auto at = [&](const std::string& name, double t_s) {
    const auto& t = track.at(VehicleId(name, 0));
    Vec3 p = t.front().second;
    for (const auto& [ns, pos] : t)
      if (ns <= static_cast<int64_t>(t_s * 1e9)) p = pos;
    return p;
  };
  const double before = (at("fmucar", 2.9) - at("fmucar", 0.1)).norm();
  const double after = (at("fmucar", 5.9) - at("fmucar", 3.1)).norm();
  const double other = (at("builtin", 5.9) - at("builtin", 3.1)).norm();
  MESSAGE("FMU car: ", before, " m before the failure, ", after, " m after it; the other car ", other, " m after it");
  CHECK(before > 5.0);
  CHECK(after < 1e-6);
  CHECK(other > 10.0);
}

TEST_CASE("fmu vehicle: platoon check refuses a broken FMU with the session file's line and exit code 2") {
  TempDir dir;
  const std::string good = dir.Write("good.toml", "[[node]]\nname = \"d\"\nrole = \"driver\"\nheadless = true\n"
                                                  "vehicle_model = \"fmu\"\nfmu = \"" + TestFmu("single_track") + "\"\n");
  auto ok = process::Child::Spawn({BinDir() + "/platoon", "check", good});
  const auto ok_status = RunToExit(ok, 60s);
  REQUIRE(ok_status.has_value());
  CHECK(*ok_status == 0);
  const std::string bad = dir.Write("bad.toml", "[[node]]\nname = \"d\"\nrole = \"driver\"\nheadless = true\n"
                                                "vehicle_model = \"fmu\"\nfmu = \"" + TestFmu("no_vx") + "\"\n");
  auto check = process::Child::Spawn({BinDir() + "/platoon", "check", bad});
  const auto status = RunToExit(check, 60s);
  REQUIRE(status.has_value());
  CHECK(*status == 2);
  bool named = false;
  for (const auto& line : check.Lines())
    named = named || (Has(line, bad + ":6: node[0].fmu: " + TestFmu("no_vx") + ": modelDescription.xml: missing variable \"vx\""));
  INFO("last line: " << (check.Lines().empty() ? std::string() : check.Lines().back()));
  CHECK(named);
  // A relative fmu is found next to the session file; a missing one is named.
  const std::string missing = dir.Write("missing.toml", "[[node]]\nname = \"d\"\nrole = \"driver\"\nvehicle_model = \"fmu\"\nfmu = \"car.fmu\"\n");
  auto check2 = process::Child::Spawn({BinDir() + "/platoon", "check", missing});
  const auto status2 = RunToExit(check2, 60s);
  REQUIRE(status2.has_value());
  CHECK(*status2 == 2);
  bool named2 = false;
  for (const auto& line : check2.Lines()) named2 = named2 || Has(line, missing + ":5: node[0].fmu: " + dir.Path() + "/car.fmu: no such file");
  CHECK(named2);
}

}  // namespace platoon::testing
