// Variators in a whole lock-step session (server/src/variators.cpp through WorldCore::RequestParamSet): a
// triangle on the road traffic's desired speed, a step on its time headway and a toggle on the lead car's
// lead_hold over 120 s of sim time are logged as parameter events with the same values at the same sim
// times in two runs, and the values are the ones their definitions allow.
#include "../support/in_process_session.hpp"

#include "platoon/config/session.hpp"
#include "platoon/server/variators.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/null_sink.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace platoon::testing {

namespace variators_session_test_detail {

const char* kVariatorSession = R"(
[session]
name = "variators"
mode = "lockstep"
step_hz = 20
end_s = 120

[road]
generate_length_m = 4000
seed = 1
lanes = 2

[[node]]
name = "lead"
role = "traffic"
traffic_model = "road"
vehicles = 1
speed_mps = 30
lead = "driver"
lead_gap_m = 40

[[node]]
name = "traffic"
role = "traffic"
traffic_model = "road"
vehicles = 3
speed_mps = 25

[[node]]
name = "driver"
role = "driver"
input = "model:follow"
start_s_m = 40
start_lane = -1
start_speed_mps = 22
headless = true

[[variator]]
param = "node.traffic.desired_speed_mps"
kind = "triangle"
min = 15
max = 30
duration_s = [20, 40]
start_s = 5
period_s = 0.1

[[variator]]
param = "node.traffic.time_headway_s"
kind = "step"
min = 1.0
max = 2.5
duration_s = [5, 15]

[[variator]]
param = "node.lead.lead_hold"
kind = "toggle"
duration_s = [10, 30]
)";

// Every parameter event of the session's log: "<sim ns> <source> <path = value>".
class VariatorParamLog final : public server::WorldSystem {
 public:
  void OnLoggedEvent(const protocol::LoggedEvent& e, int64_t) override {
    if (e.kind == protocol::LoggedEvent::Kind::kParam) entries.push_back(e);
  }
  std::vector<protocol::LoggedEvent> entries;
};

std::vector<protocol::LoggedEvent> RunVariatorSession() {
  auto log = std::make_shared<VariatorParamLog>();
  InProcessOptions options;
  options.setup_core = [&](server::WorldCore& core) {
    server::InstallVariators(core, std::make_shared<spdlog::logger>("variators", std::make_shared<spdlog::sinks::null_sink_mt>()));
    core.AddSystem(log);
  };
  const config::SessionDef session = config::LoadSessionText(kVariatorSession, "variators.toml");
  config::ValidateSession(session);
  RunInProcess(session, 1, options);
  return log->entries;
}

// The values one parameter was set to, in order.
std::vector<std::string> ValuesOf(const std::vector<protocol::LoggedEvent>& log, const std::string& path) {
  std::vector<std::string> out;
  for (const auto& e : log)
    if (e.text.rfind(path + " = ", 0) == 0) out.push_back(e.text.substr(path.size() + 3));
  return out;
}

}  // namespace variators_session_test_detail

TEST_CASE("variators session: triangle step and toggle values are logged identically in two lock-step runs") {
  using namespace variators_session_test_detail;
  const auto first = RunVariatorSession();
  const auto second = RunVariatorSession();
  const auto speed = ValuesOf(first, "node.traffic.desired_speed_mps");
  const auto headway = ValuesOf(first, "node.traffic.time_headway_s");
  const auto hold = ValuesOf(first, "node.lead.lead_hold");
  MESSAGE(first.size() << " parameter events: " << speed.size() << " speeds, " << headway.size() << " headways, "
                       << hold.size() << " lead_hold toggles");
  // Triangle: every 0.1 s from 5 s to the end (the last steps' answers may still be on their way).
  CHECK(speed.size() >= 1100);
  CHECK(speed.size() <= 1151);
  double lowest = 1e9, highest = -1e9;
  for (const auto& v : speed) {
    lowest = std::min(lowest, std::stod(v));
    highest = std::max(highest, std::stod(v));
  }
  CHECK(lowest == doctest::Approx(15));
  CHECK(highest <= 30);
  CHECK(highest > 29.5);  // at least one peak in 115 s of cycles of at most 40 s
  // Step: a new value every 5..15 s over 120 s.
  CHECK(headway.size() >= 8);
  CHECK(headway.size() <= 25);
  for (const auto& v : headway) {
    CHECK(std::stod(v) >= 1.0);
    CHECK(std::stod(v) <= 2.5);
  }
  // Toggle: from true, flipped after each 10..30 s dwell.
  REQUIRE(hold.size() >= 4);
  CHECK(hold.size() <= 12);
  for (size_t k = 0; k < hold.size(); ++k) CHECK(hold[k] == (k % 2 == 0 ? "true" : "false"));
  // Every event from a variator, and the same in both runs: source, sim time and value.
  REQUIRE(first.size() == second.size());
  size_t differ = 0;
  for (size_t k = 0; k < first.size(); ++k) {
    CHECK(first[k].source.rfind("variator:", 0) == 0);
    if (first[k].text != second[k].text || first[k].sim_time_ns != second[k].sim_time_ns ||
        first[k].source != second[k].source)
      ++differ;
  }
  CHECK(differ == 0);
}

}  // namespace platoon::testing
