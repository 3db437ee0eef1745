// Traffic through junctions in a lock-step session (issue 38): a traffic node with traffic_model = "network" on
// junction_network.xodr runs 10 minutes of sim time in lock-step, in-process with the server's world core. Judged
// from the world the server broadcasts: every vehicle stays on a driving lane's centre, never jumps, never
// overlaps another; the node drove every movement of every junction; a second run gives the same session hash.
#include "../support/in_process_session.hpp"

#include "platoon/config/session.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/node/network_traffic_module.hpp"
#include "platoon/road/opendrive.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/server/scenario_system.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/null_sink.h>

#include <array>
#include <cmath>
#include <map>
#include <string>

namespace platoon::testing {
namespace {

std::string JunctionSession(double end_s) {
  return "[session]\nmode = \"lockstep\"\nstep_hz = 20\nend_s = " + std::to_string(end_s) +
         "\n\n[road]\nfile = \"" + std::string(PLATOON_SOURCE_DIR) +
         "/configs/roads/junctions.xodr\"\nseed = 5\n\n"
         "[[node]]\nname = \"town\"\nrole = \"traffic\"\ntraffic_model = \"network\"\nvehicles = 40\nspeed_mps = 13.9\n"
         "module_rate_hz = 20\nstatus_interval_s = 0\n";
}

// Footprint corners (4.5 m x 1.8 m) of an entity, from its pose.
std::array<Vec3, 4> Corners(const protocol::EntityState& e) {
  const Vec3 c = e.kinematics.pose.position_m;
  const Vec3 f = e.kinematics.pose.orientation * Vec3(2.25, 0, 0), s = e.kinematics.pose.orientation * Vec3(0, 0.9, 0);
  return {c + f + s, c + f - s, c - f - s, c - f + s};
}

// Whether two convex footprints overlap (separating axes).
bool FootprintsOverlap(const std::array<Vec3, 4>& a, const std::array<Vec3, 4>& b) {
  for (const auto* poly : {&a, &b})
    for (size_t k = 0; k < 4; ++k) {
      const Vec3 e = (*poly)[(k + 1) % 4] - (*poly)[k];
      const Vec3 n(-e.y(), e.x(), 0);
      double a0 = 1e18, a1 = -1e18, b0 = 1e18, b1 = -1e18;
      for (const Vec3& p : a) a0 = std::min(a0, p.dot(n)), a1 = std::max(a1, p.dot(n));
      for (const Vec3& p : b) b0 = std::min(b0, p.dot(n)), b1 = std::max(b1, p.dot(n));
      if (a1 <= b0 || b1 <= a0) return false;
    }
  return true;
}

}  // namespace

TEST_CASE("junction session: 10 minutes of lock-step network traffic through three junctions stays on its lanes") {
  config::SessionDef session = config::LoadSessionText(JunctionSession(600), "junctions.toml");
  config::ValidateSession(session);
  const road::OpenDriveMap map = road::LoadOpenDriveMapFile(session.road.file);
  const road::RoadNetwork network(map.roads);
  const node::NetworkTrafficModule* town = nullptr;
  InProcessOptions options;
  options.publish_every_step = true;
  options.on_modules = [&](const config::NodeDef& n, std::vector<std::unique_ptr<node::Module>>& modules) {
    if (n.name == "town") town = dynamic_cast<const node::NetworkTrafficModule*>(modules.front().get());
  };
  std::map<uint64_t, std::pair<int64_t, Vec3>> last;
  double worst_jump = 0.0, worst_off = 0.0;
  int overlaps = 0;
  uint64_t worlds = 0;
  size_t movements = 0, driven = 0;  // the module's, read while it lives (it ends with the session)
  std::vector<std::string> fields;
  options.on_world = [&](const protocol::WorldState& w, const std::string&) {
    if (town) {
      movements = 0;
      for (const auto& p : town->Graph().Pieces()) movements += p.junction_id >= 0 ? 1 : 0;
      driven = town->Traffic().Movements().size();
      if (w.sim_time_ns >= 599'000'000'000 && fields.empty()) town->Summarize(fields);
    }
    if (w.entities.empty()) return;
    ++worlds;
    for (const auto& e : w.entities) {
      const Vec3 p = e.kinematics.pose.position_m;
      auto it = last.find(e.id);
      if (it != last.end() && w.sim_time_ns > it->second.first) {
        const double dt = (w.sim_time_ns - it->second.first) / 1e9;
        worst_jump = std::max(worst_jump, (p - it->second.second).head<2>().norm() / dt);
      }
      last[e.id] = {w.sim_time_ns, p};
      // Every 5 s: on a driving lane's centre of some road (junctions' connecting roads overlap; any will do).
      if (w.sim_time_ns % 5'000'000'000 == 0) {
        double off = 1e9;
        for (const auto& road : network.Roads()) {
          const road::RoadCoord c = road.Project(p);
          if (c.s_m <= 0.0 || c.s_m >= road.Length()) continue;
          for (int lane = -road.LanesRightAt(c.s_m); lane <= road.LanesLeftAt(c.s_m); ++lane)
            if (lane != 0 && road.IsDrivingLane(c.s_m, lane))
              off = std::min(off, std::abs(c.t_m - road.LaneCenterOffsetAt(c.s_m, lane)));
        }
        worst_off = std::max(worst_off, off);
      }
    }
    for (size_t a = 0; a < w.entities.size(); ++a)
      for (size_t b = a + 1; b < w.entities.size(); ++b)
        if ((w.entities[a].kinematics.pose.position_m - w.entities[b].kinematics.pose.position_m).norm() < 6.3 &&
            FootprintsOverlap(Corners(w.entities[a]), Corners(w.entities[b])))
          ++overlaps;
  };
  const InProcessResult a = RunInProcess(session, 1, options);
  REQUIRE(town != nullptr);
  REQUIRE(!fields.empty());
  MESSAGE("steps ", a.steps, ", entities ", a.entities, ", worlds ", worlds, ", fastest ", worst_jump, " m/s, off lane ",
          worst_off, " m, overlaps ", overlaps, "; ", fields.front());
  CHECK(a.steps == 12001);
  CHECK(a.entities == 40);
  CHECK(worst_off < 0.02);
  CHECK(worst_jump < 50 / 3.6 + 0.01);  // never faster than the roads' 50 km/h: no jumps at links
  CHECK(overlaps == 0);
  CHECK(movements > 0);
  CHECK(driven == movements);

  // Lock-step: a second run of the same session gives the same hash.
  InProcessOptions plain;
  plain.publish_every_step = true;
  const InProcessResult b = RunInProcess(config::LoadSessionText(JunctionSession(600), "junctions.toml"), 1, plain);
  CHECK(b.server_hash == a.server_hash);
}

}  // namespace platoon::testing

namespace platoon::testing {

TEST_CASE("junction session: traffic_model = \"network\" without a road file is refused naming the node") {
  const char* text = "[road]\ngenerate_length_m = 500\n\n[[node]]\nname = \"town\"\nrole = \"traffic\"\ntraffic_model = \"network\"\n";
  config::SessionDef session = config::LoadSessionText(text, "generated.toml");
  try {
    config::ValidateSession(session);
    FAIL("accepted");
  } catch (const config::ConfigError& e) {
    const std::string what = e.what();
    CHECK(what.find("traffic_model") != std::string::npos);
    CHECK(what.find("[road] file") != std::string::npos);
    CHECK(what.find("a generated road") != std::string::npos);
  }
}

}  // namespace platoon::testing

namespace platoon::testing {

TEST_CASE("junction session: the stop signs of the map's other roads stand where their signals are") {
  config::SessionDef session = config::LoadSessionText(JunctionSession(10), "junctions.toml");
  config::ValidateSession(session);
  // The session drives road 1 (the first); the stop signs stand on roads 3 and 2, 3 m from J1's north and south
  // mouths, 8.5 m left of the reference line: (-8.5, 18) and (8.5, -18).
  CHECK(road::SessionSigns(session).empty());
  const auto placed = road::SessionPlacedSigns(session);
  REQUIRE(placed.size() == 2);
  CHECK(placed[0].sign.id != placed[1].sign.id);
  for (const auto& p : placed) {
    CHECK(p.sign.type == road::SignType::kStop);
    const Vec3 at = p.pose.plate_m;
    const double to_north = std::hypot(at.x() + 8.5, at.y() - 18.0), to_south = std::hypot(at.x() - 8.5, at.y() + 18.0);
    CHECK(std::min(to_north, to_south) < 2.0);
  }
}

}  // namespace platoon::testing

namespace platoon::testing {

TEST_CASE("junction session: scenario events stop, resume and remove network traffic vehicles") {
  const std::string text = JunctionSession(90) +
                           "\n[[event]]\nname = \"halt\"\nwhen = { sim_time = 20.0 }\n"
                           "do = [ { action = \"stop\", target = \"town:0\", decel_mps2 = 4.0 } ]\n"
                           "\n[[event]]\nname = \"go\"\nwhen = { sim_time = 50.0 }\n"
                           "do = [ { action = \"resume\", target = \"town:0\" } ]\n"
                           "\n[[event]]\nname = \"gone\"\nwhen = { sim_time = 70.0 }\n"
                           "do = [ { action = \"remove\", target = \"town:1\" } ]\n";
  config::SessionDef session = config::LoadSessionText(text, "junctions.toml");
  config::ValidateSession(session);
  InProcessOptions options;
  options.publish_every_step = true;
  std::shared_ptr<server::ScenarioSystem> system;  // the server's scenario system carries the events out
  options.setup_core = [&](server::WorldCore& core) {
    system = server::InstallScenario(core, std::make_shared<spdlog::logger>("junctions", std::make_shared<spdlog::sinks::null_sink_mt>()));
  };
  const uint64_t halted = VehicleId("town", 0), removed = VehicleId("town", 1);
  double max_speed_stopped = 0, moved_after = 0;
  int64_t last_seen_removed = 0;
  Vec3 at_resume = Vec3::Zero(), at_end = Vec3::Zero();
  options.on_world = [&](const protocol::WorldState& w, const std::string&) {
    for (const auto& e : w.entities) {
      if (e.id == halted) {
        const double v = e.kinematics.velocity_mps.norm();
        // Stopped within 14 m/s / 4 m/s^2 = 3.5 s of the event, and standing until it resumes at 50 s.
        if (w.sim_time_ns > 25'000'000'000 && w.sim_time_ns < 50'000'000'000) max_speed_stopped = std::max(max_speed_stopped, v);
        if (w.sim_time_ns == 50'000'000'000) at_resume = e.kinematics.pose.position_m;
        at_end = e.kinematics.pose.position_m;
      }
      if (e.id == removed) last_seen_removed = w.sim_time_ns;
    }
  };
  const InProcessResult r = RunInProcess(session, 1, options);
  moved_after = (at_end - at_resume).head<2>().norm();
  MESSAGE("town:0 fastest while stopped ", max_speed_stopped, " m/s, moved ", moved_after, " m after the resume; town:1 last seen at ",
          last_seen_removed / 1e9, " s; entities at the end ", r.entities);
  CHECK(max_speed_stopped < 0.01);
  CHECK(moved_after > 50.0);
  CHECK(last_seen_removed > 69'000'000'000);
  CHECK(last_seen_removed < 71'000'000'000);
  CHECK(r.entities == 39);
}

TEST_CASE("junction session: a lane change on a network traffic vehicle is refused naming the traffic model") {
  const std::string text = JunctionSession(10) +
                           "\n[[event]]\nname = \"swerve\"\nwhen = { sim_time = 2.0 }\n"
                           "do = [ { action = \"change_lane\", target = \"town:0\", lane = -2 } ]\n";
  config::SessionDef session = config::LoadSessionText(text, "junctions.toml");
  try {
    config::ValidateSession(session);
    FAIL("accepted");
  } catch (const config::ConfigError& e) {
    CHECK(std::string(e.what()).find("brake, stop and resume also on \"network\"") != std::string::npos);
  }
}

}  // namespace platoon::testing
