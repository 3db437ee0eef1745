// A study's lead car in a whole lock-step session (road traffic node with lead = "driver", the seat's model
// driver): it puts itself lead_gap_m ahead of the seat's car at the start, holds that distance, and a
// set_param event on node.lead.lead_hold releases it, after which it drives away at its own speed.
#include "../support/in_process_session.hpp"

#include "platoon/config/session.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/server/scenario_system.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/null_sink.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace platoon::testing {

namespace study_traffic_session_test_detail {

const char* kStudyLead = R"(
[session]
name = "lead"
mode = "lockstep"
step_hz = 100
end_s = 40

[road]
generate_length_m = 3000
seed = 1
lanes = 2

[[node]]
name = "lead"
role = "traffic"
traffic_model = "road"
vehicles = 1
speed_mps = 35
lead = "driver"
lead_gap_m = 40

[[node]]
name = "driver"
role = "driver"
input = "model:follow"
start_s_m = 40
start_lane = -1
start_speed_mps = 22
headless = true
[node.driver_model]
desired_speed_mps = 22

[[event]]
name = "release"
when = { sim_time = 20.0 }
do = [ { action = "set_param", path = "node.lead.lead_hold", value = false } ]
)";

}  // namespace study_traffic_session_test_detail

TEST_CASE("study traffic session: the lead car places itself ahead of the seat and a set_param event releases it") {
  using namespace study_traffic_session_test_detail;
  InProcessOptions options;
  options.publish_every_step = true;
  options.setup_core = [](server::WorldCore& core) {
    server::InstallScenario(core, std::make_shared<spdlog::logger>("study-traffic", std::make_shared<spdlog::sinks::null_sink_mt>()));
  };
  const uint64_t lead = VehicleId("lead", 0), driver = VehicleId("driver", 0);
  std::vector<std::pair<double, double>> distance;  // (sim s, m) between the published positions
  std::map<uint64_t, Vec3> at;  // last published position of each
  options.on_world = [&](const protocol::WorldState& w, const std::string&) {
    for (const auto& e : w.entities) at[e.id] = e.kinematics.pose.position_m;
    if (at.count(lead) && at.count(driver) && w.step > 0)
      distance.emplace_back(static_cast<double>(w.sim_time_ns) * 1e-9, (at[lead] - at[driver]).head<2>().norm());
  };
  const config::SessionDef session = config::LoadSessionText(kStudyLead, "study_lead.toml");
  config::ValidateSession(session);
  RunInProcess(session, 1, options);
  REQUIRE(!distance.empty());
  // The traffic holds its centre lead_gap_m + one vehicle length (4.5 m) ahead of the seat's published
  // position along the lane (its own s against the seat's); a straight line is shorter only in curves.
  const double held_m = 40 + 4.5;
  double worst_held = 0, first = -1, placed_at = -1, last = 0;
  for (const auto& [t, d] : distance) {
    if (first < 0) first = d;
    if (placed_at < 0 && std::abs(d - held_m) < 0.05 * held_m) placed_at = t;
    if (t > 3 && t < 20) worst_held = std::max(worst_held, std::abs(d - held_m));
    last = d;
  }
  MESSAGE("first distance " << first << " m (where the traffic placed it), in place at " << placed_at << " s, held within " << worst_held << " m of " << held_m
                            << " m until the release at 20 s, " << last << " m at the end");
  // Placed within the first steps that see the seat's car, not closing in from where it was placed (a spring
  // within 1.5 m/s^2 would take tens of seconds for that distance).
  CHECK(std::abs(first - held_m) > 20);
  CHECK(placed_at >= 0);
  CHECK(placed_at < 0.1);
  CHECK(worst_held < 2.0);
  CHECK(last > held_m + 80);  // released at 20 s, it drives on at ~35 m/s against the seat's 22
}

}  // namespace platoon::testing
