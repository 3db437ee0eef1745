// Route traffic with vehicle_model = "fmu" (node/src/route_traffic.cpp; docs/VEHICLES.md, "FMI 2.0 vehicle
// models"): one instance of the test FMU (tests/fmu, the single-track model as an FMU) per route vehicle
// against the built-in single-track model, a failing FMU that holds its vehicles while the module goes on,
// and the configuration's refusals (session file and `platoon check`).
#include "../support/session_fixture.hpp"

#include "platoon/config/session.hpp"
#include "platoon/node/route_traffic.hpp"
#include "platoon/process/child.hpp"

#include <doctest/doctest.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/ringbuffer_sink.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

namespace platoon::testing {
namespace route_fmu_test_detail {

using namespace std::chrono_literals;

std::string RouteFmuPath(const std::string& name) { return std::string(PLATOON_TEST_FMU_DIR) + "/" + name + ".fmu"; }

// A module context that keeps what the module publishes and has no remote entities.
class RouteFmuContext final : public node::ModuleContext {
 public:
  std::vector<node::RemoteEntity> RemoteEntities(int64_t) const override { return {}; }
  void Publish(const protocol::EntityState& truth) override { published.push_back(truth); }
  void WorldStats(uint64_t& received, int64_t& max_gap_ns) const override { received = 0, max_gap_ns = 0; }
  uint32_t NodeId() const override { return 1; }
  std::vector<protocol::EntityState> published;
};

// A route node of two vehicles on a ring of 72 waypoints (radius 60 m) with `model_keys` added.
std::string RouteFmuSession(const std::string& model_keys) {
  std::string ring;
  for (int k = 0; k < 72; ++k)
    ring += (k ? ", " : "") + std::to_string(60 * std::cos(k * M_PI / 36)) + ", " + std::to_string(60 * std::sin(k * M_PI / 36));
  return "[[node]]\nname = \"ring\"\nrole = \"traffic\"\ntraffic_model = \"route\"\nvehicles = 2\nspeed_mps = 12\n" + model_keys +
         "[node.route]\nwaypoints = [" + ring + "]\nloop = true\nspacing_m = 60\n";
}

config::SessionDef LoadRouteFmu(const TempDir& dir, const std::string& text) {
  config::SessionDef s = config::LoadSessionText(text, dir.Path() + "/route.toml");
  config::ValidateSession(s);
  return s;
}

// The message of the ConfigError that loading `text` throws ("" when none).
std::string RouteFmuConfigError(const TempDir& dir, const std::string& text) {
  try {
    (void)LoadRouteFmu(dir, text);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

bool RouteFmuHas(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace route_fmu_test_detail

using namespace route_fmu_test_detail;

TEST_CASE("route fmu: two route vehicles on FMU instances follow the built-in single-track trajectories within 1 cm over 30 s") {
  TempDir dir;
  const config::SessionDef builtin = LoadRouteFmu(dir, RouteFmuSession(""));
  const config::SessionDef fmu = LoadRouteFmu(dir, RouteFmuSession("vehicle_model = \"fmu\"\nfmu = \"" + RouteFmuPath("single_track") + "\"\n"));
  node::RouteTrafficModule a(builtin, builtin.nodes.at(0));
  node::RouteTrafficModule b(fmu, fmu.nodes.at(0));
  CHECK_FALSE(a.UsesFmu());
  REQUIRE(b.UsesFmu());
  REQUIRE(b.Vehicles() == 2);
  RouteFmuContext ca, cb;
  // 30 s at the module's 100 Hz; the first step (dt 0) only places the vehicles.
  const int64_t dt_ns = static_cast<int64_t>(1e9 / a.RateHz() + 0.5);
  const int steps = static_cast<int>(30.0 * a.RateHz());
  double worst_m = 0, travelled_m[2] = {0, 0};
  for (int k = 0; k <= steps; ++k) {
    std::array<Vec3, 2> before;
    for (size_t i = 0; i < 2; ++i) before[i] = Vec3(a.State(i).x_m, a.State(i).y_m, 0);
    const node::StepInfo info{k * dt_ns, k == 0 ? 0 : dt_ns};
    a.Step(info, ca);
    b.Step(info, cb);
    for (size_t i = 0; i < 2; ++i) {
      worst_m = std::max(worst_m, std::hypot(a.State(i).x_m - b.State(i).x_m, a.State(i).y_m - b.State(i).y_m));
      travelled_m[i] += (Vec3(a.State(i).x_m, a.State(i).y_m, 0) - before[i]).norm();
    }
  }
  MESSAGE("largest distance between the FMU and built-in vehicles ", worst_m, " m; built-in vehicles travelled ", travelled_m[0],
          " m and ", travelled_m[1], " m");
  CHECK(worst_m < 0.01);
  // The vehicles drove round the ring (12 m/s for 30 s), so the comparison covers a real drive.
  CHECK(travelled_m[0] > 0.8 * 12 * 30);
  CHECK(travelled_m[1] > 0.8 * 12 * 30);
  // Pure pursuit saw the same vehicles: the same largest lateral error (measured 0.26 m on this 60 m ring).
  CHECK(b.MaxLateralErrorM() == doctest::Approx(a.MaxLateralErrorM()).epsilon(0.01));
  CHECK(b.MaxLateralErrorM() < 0.4);
  CHECK(cb.published.size() == ca.published.size());
  CHECK_FALSE(b.FmuFailed(0));
  CHECK(b.FmuHeldSteps() == 0);
}

TEST_CASE("route fmu: vehicles whose FMU step fails are held and logged once while the module goes on") {
  TempDir dir;
  const config::SessionDef session =
      LoadRouteFmu(dir, RouteFmuSession("vehicle_model = \"fmu\"\nfmu = \"" + RouteFmuPath("single_track_failing") + "\"\n"));
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  auto log = std::make_shared<spdlog::logger>("node.ring", sink);
  node::RouteTrafficModule m(session, session.nodes.at(0), log);
  RouteFmuContext context;
  // The failing test FMU refuses its 3001st step: at 100 Hz, the step to 30.01 s. Run to 35 s.
  const int64_t dt_ns = static_cast<int64_t>(1e9 / m.RateHz() + 0.5);
  const int steps = static_cast<int>(35.0 * m.RateHz());
  const int fail_step = 3001;
  std::array<Vec3, 2> at_30s, at_35s;
  std::array<double, 2> speed_before{}, speed_after{};
  for (int k = 0; k <= steps; ++k) {
    m.Step(node::StepInfo{k * dt_ns, k == 0 ? 0 : dt_ns}, context);
    for (size_t i = 0; i < 2; ++i) {
      if (k == fail_step - 1) {
        at_30s[i] = Vec3(m.State(i).x_m, m.State(i).y_m, 0);
        speed_before[i] = m.State(i).vx_mps;
      }
      if (k == steps) {
        at_35s[i] = Vec3(m.State(i).x_m, m.State(i).y_m, 0);
        speed_after[i] = m.State(i).vx_mps;
      }
    }
  }
  for (size_t i = 0; i < 2; ++i) {
    MESSAGE("vehicle ", i, ": ", speed_before[i], " m/s before the failure, moved ", (at_35s[i] - at_30s[i]).norm(), " m after it");
    CHECK(m.FmuFailed(i));
    CHECK(speed_before[i] > 5.0);
    CHECK(speed_after[i] == 0.0);
    CHECK((at_35s[i] - at_30s[i]).norm() < 1e-9);
  }
  // Every step from the failing one on held both vehicles; the module published them at every step.
  CHECK(m.FmuHeldSteps() == static_cast<uint64_t>(2 * (steps - fail_step + 1)));
  CHECK(context.published.size() == static_cast<size_t>(2 * (steps + 1)));
  // One error line per vehicle, naming it and the FMU's reason.
  int held_lines = 0;
  for (const std::string& line : sink->last_formatted())
    if (RouteFmuHas(line, "held where it stands")) {
      ++held_lines;
      CHECK(RouteFmuHas(line, "fmi2DoStep at t = 30.000 s returned fmi2Error"));
    }
  CHECK(held_lines == 2);
  std::vector<std::string> fields;
  m.Summarize(fields);
  std::string summary;
  for (const auto& f : fields) summary += f + ",";
  CHECK(RouteFmuHas(summary, "\"route_fmu_failed_vehicles\":2"));
  CHECK(RouteFmuHas(summary, "\"route_fmu_held_steps\":" + std::to_string(2 * (steps - fail_step + 1))));
}

TEST_CASE("route fmu: vehicle_model and fmu on route traffic are checked with the file and line") {
  TempDir dir;
  // Route traffic takes single_track and fmu; the Bullet vehicle is the driver seat's.
  CHECK(RouteFmuHas(RouteFmuConfigError(dir, RouteFmuSession("vehicle_model = \"bullet\"\n")), "route.toml:7"));
  CHECK(RouteFmuHas(RouteFmuConfigError(dir, RouteFmuSession("vehicle_model = \"bullet\"\n")), "\"single_track\""));
  CHECK(RouteFmuConfigError(dir, RouteFmuSession("vehicle_model = \"single_track\"\n")).empty());
  CHECK(RouteFmuHas(RouteFmuConfigError(dir, RouteFmuSession("vehicle_model = \"fmu\"\n")), "needs fmu = "));
  CHECK(RouteFmuHas(RouteFmuConfigError(dir, RouteFmuSession("fmu = \"car.fmu\"\n")), "is for vehicle_model = \"fmu\""));
  // Other traffic models take no vehicle model.
  const std::string stadium = "[[node]]\nname = \"t\"\nrole = \"traffic\"\nvehicle_model = \"fmu\"\nfmu = \"car.fmu\"\n";
  CHECK(RouteFmuHas(RouteFmuConfigError(dir, stadium), "route.toml:4"));
  CHECK(RouteFmuHas(RouteFmuConfigError(dir, stadium), "traffic_model = \"route\""));
  // platoon check opens every instance: a good FMU passes, a broken one exits 2 naming the fmu key's line.
  const std::string good = dir.Write("good.toml", RouteFmuSession("vehicle_model = \"fmu\"\nfmu = \"" + RouteFmuPath("single_track") + "\"\n"));
  auto ok = process::Child::Spawn({BinDir() + "/platoon", "check", good});
  const auto ok_status = RunToExit(ok, 60s);
  REQUIRE(ok_status.has_value());
  CHECK(*ok_status == 0);
  const std::string bad = dir.Write("bad.toml", RouteFmuSession("vehicle_model = \"fmu\"\nfmu = \"" + RouteFmuPath("no_vx") + "\"\n"));
  auto check = process::Child::Spawn({BinDir() + "/platoon", "check", bad});
  const auto status = RunToExit(check, 60s);
  REQUIRE(status.has_value());
  CHECK(*status == 2);
  bool named = false;
  for (const auto& line : check.Lines())
    named = named || RouteFmuHas(line, bad + ":8: node[0].fmu: " + RouteFmuPath("no_vx") + ": modelDescription.xml: missing variable \"vx\"");
  INFO("last line: " << (check.Lines().empty() ? std::string() : check.Lines().back()));
  CHECK(named);
}

}  // namespace platoon::testing
