// Light and weather in whole lock-step sessions: variators on light.sun_elevation_deg (triangle),
// weather.fog_visibility_m (step) and light.headlights (toggle) are logged identically in two runs and reach
// the nodes with the world; a live change of weather.fog_visibility_m changes a node's lidar output.
#include "../support/in_process_session.hpp"

#include "platoon/config/session.hpp"
#include "platoon/point_record.hpp"
#include "platoon/server/variators.hpp"
#include "platoon/server/world_core.hpp"
#include "platoon/sensors/lidar.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/null_sink.h>

#include <algorithm>
#include <string>
#include <vector>

namespace platoon::testing {

namespace conditions_session_test_detail {

const char* kConditionsVariatorSession = R"(
[session]
name = "conditions"
mode = "lockstep"
step_hz = 20
end_s = 120

[light]
time_of_day_h = 19
day_of_year = 200
latitude_deg = 50

[weather]
fog_visibility_m = 300

[[node]]
name = "cars"
role = "traffic"
traffic_model = "route"
vehicles = 1
speed_mps = 10
[node.route]
waypoints = [0, 0,  5000, 0]

[[variator]]
param = "light.sun_elevation_deg"
kind = "triangle"
min = -10
max = 30
duration_s = [20, 40]
period_s = 0.5

[[variator]]
param = "weather.fog_visibility_m"
kind = "step"
min = 40
max = 400
duration_s = [5, 15]

[[variator]]
param = "light.headlights"
kind = "toggle"
duration_s = [10, 30]
initial = false
)";

// Every parameter event of the session's log.
class ConditionsParamLog final : public server::WorldSystem {
 public:
  void OnLoggedEvent(const protocol::LoggedEvent& e, int64_t) override {
    if (e.kind == protocol::LoggedEvent::Kind::kParam) entries.push_back(e);
  }
  std::vector<protocol::LoggedEvent> entries;
};

struct ConditionsRun {
  std::vector<protocol::LoggedEvent> params;
  std::vector<world::WorldConditions> broadcast;  // every world state's conditions, when it carried them
  uint64_t world_states = 0;
};

ConditionsRun RunConditionsVariators() {
  ConditionsRun run;
  auto log = std::make_shared<ConditionsParamLog>();
  InProcessOptions options;
  options.setup_core = [&](server::WorldCore& core) {
    server::InstallVariators(core, std::make_shared<spdlog::logger>("variators", std::make_shared<spdlog::sinks::null_sink_mt>()));
    core.AddSystem(log);
  };
  options.on_world = [&](const protocol::WorldState& w, const std::string&) {
    ++run.world_states;
    if (w.conditions) run.broadcast.push_back(*w.conditions);
  };
  const config::SessionDef session = config::LoadSessionText(kConditionsVariatorSession, "conditions.toml");
  config::ValidateSession(session);
  RunInProcess(session, 1, options);
  run.params = log->entries;
  return run;
}

std::vector<std::string> ConditionValues(const std::vector<protocol::LoggedEvent>& log, const std::string& path) {
  std::vector<std::string> out;
  for (const auto& e : log)
    if (e.text.rfind(path + " = ", 0) == 0) out.push_back(e.text.substr(path.size() + 3));
  return out;
}

// Sets weather.fog_visibility_m = 25 once sim time reaches 1.5 s.
class FogAt final : public server::WorldSystem {
 public:
  explicit FogAt(server::WorldCore& core) : core_(core) {}
  void OnAdvance(int64_t sim_ns, int64_t now_ns) override {
    if (done_ || sim_ns < 1'500'000'000) return;
    done_ = true;
    const auto reply = core_.RequestParamSet("weather.fog_visibility_m", "25", "test", now_ns);
    CHECK((!reply || reply->ok));
  }

 private:
  server::WorldCore& core_;
  bool done_ = false;
};

}  // namespace conditions_session_test_detail

TEST_CASE("conditions session: variators on sun elevation fog visibility and headlights log the same values in two runs") {
  using namespace conditions_session_test_detail;
  const ConditionsRun first = RunConditionsVariators();
  const ConditionsRun second = RunConditionsVariators();
  const auto sun = ConditionValues(first.params, "light.sun_elevation_deg");
  const auto fog = ConditionValues(first.params, "weather.fog_visibility_m");
  const auto lights = ConditionValues(first.params, "light.headlights");
  MESSAGE(first.params.size() << " parameter events: " << sun.size() << " sun elevations, " << fog.size()
                              << " fog visibilities, " << lights.size() << " headlight toggles; " << first.broadcast.size()
                              << " of " << first.world_states << " world states carried the conditions");
  // Triangle every 0.5 s over 120 s, between -10 and 30 deg, reaching both ends.
  CHECK(sun.size() >= 200);
  CHECK(sun.size() <= 241);
  double lowest = 1e9, highest = -1e9;
  for (const auto& v : sun) lowest = std::min(lowest, std::stod(v)), highest = std::max(highest, std::stod(v));
  CHECK(lowest == doctest::Approx(-10));
  CHECK(highest <= 30);
  CHECK(highest > 29);
  // Step: a new visibility every 5..15 s, within [40, 400].
  CHECK(fog.size() >= 8);
  CHECK(fog.size() <= 25);
  for (const auto& v : fog) {
    CHECK(std::stod(v) >= 40);
    CHECK(std::stod(v) <= 400);
  }
  // Toggle from false, flipped after each 10..30 s dwell.
  REQUIRE(lights.size() >= 4);
  CHECK(lights.size() <= 12);
  for (size_t k = 0; k < lights.size(); ++k) CHECK(lights[k] == (k % 2 == 0 ? "false" : "true"));
  // The same events at the same sim times in both runs.
  REQUIRE(first.params.size() == second.params.size());
  size_t differ = 0;
  for (size_t k = 0; k < first.params.size(); ++k)
    if (first.params[k].text != second.params[k].text || first.params[k].sim_time_ns != second.params[k].sim_time_ns ||
        first.params[k].source != second.params[k].source)
      ++differ;
  CHECK(differ == 0);
  // The nodes got them: the last broadcast conditions hold the last values set, and not every world state
  // carried them (keyframes and changes only).
  REQUIRE_FALSE(first.broadcast.empty());
  const world::WorldConditions& last = first.broadcast.back();
  CHECK(last.weather.fog_visibility_m == doctest::Approx(std::stod(fog.back())));
  CHECK(last.light.sun_elevation_deg == doctest::Approx(std::stod(sun.back())));
  CHECK(last.light.headlights == (lights.back() == "true"));
  CHECK(last.light.sun_set_directly);
  CHECK(first.broadcast.size() < first.world_states);
  CHECK(first.broadcast == second.broadcast);
}

TEST_CASE("conditions session: a sensor node's lidar sees a live change of the fog visibility") {
  const config::SessionDef session = config::LoadSessionText(R"(
[session]
mode = "lockstep"
step_hz = 100
end_s = 3

[[scene.box]]
id = 9001
position = [30, 0, 1]
size = [1, 20, 2]

[[node]]
name = "cars"
role = "traffic"
traffic_model = "route"
vehicles = 1
speed_mps = 0.5
[node.route]
waypoints = [0, 0,  500, 0]

[[node]]
name = "probe"
role = "sensor"
attach_to = "cars:0"
[[node.sensor]]
id = "lidar"
type = "lidar"
preset = "vlp16"
position = [1.0, 0.0, 1.0]

)", "fog.toml");
  struct Scan {
    int64_t stamp_ns;
    size_t points = 0, soft = 0, far = 0;
  };
  std::vector<Scan> scans;
  InProcessOptions options;
  // The operator's set at 1.5 s of sim time, through the path ctl, scenario actions and variators take.
  options.setup_core = [](server::WorldCore& core) { core.AddSystem(std::make_shared<conditions_session_test_detail::FogAt>(core)); };
  options.on_data = [&](const protocol::Message& m) {
    const auto* cloud = std::get_if<protocol::PointCloud>(&m);
    if (!cloud) return;
    Scan s{cloud->header.stamp_ns};
    for (const PointRecord& p : UnpackPointRecords(cloud->points, cloud->point_count, cloud->point_stride)) {
      ++s.points;
      if (p.class_id == sensors::kWeatherClassId) ++s.soft;
      if (std::sqrt(double(p.x_m) * p.x_m + double(p.y_m) * p.y_m) > 20.0) ++s.far;
    }
    scans.push_back(s);
  };
  RunInProcess(session, 1, options);
  size_t before = 0, after = 0;
  for (const Scan& s : scans) {
    if (s.stamp_ns + 100'000'000 < 1'500'000'000) {  // measured (at the scan end) before the set
      ++before;
      CHECK(s.soft == 0);  // clear air: no echo from it
      CHECK(s.far > 0);    // the box 29 m ahead
    } else if (s.stamp_ns >= 1'600'000'000) {
      ++after;
      CHECK(s.soft > 1000);  // fog of 25 m: most beams echo from the air
      CHECK(s.far == 0);     // nothing 20 m away comes back through it
    }
  }
  MESSAGE(scans.size() << " scans: " << before << " before the fog, " << after << " in it");
  CHECK(before >= 5);
  CHECK(after >= 5);
}

}  // namespace platoon::testing
