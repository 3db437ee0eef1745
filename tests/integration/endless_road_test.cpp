// Endless roads (docs/ROADS.md §7): the road is drawn chunk by chunk from the seed ahead of the drivers
// and dropped behind them, identically in every process; road traffic is removed and spawned in zones
// no driver sees and never jumps. Core cases drive a scripted vehicle 10 km in lock-step against
// RoadTraffic; the session case runs a road traffic node and a scripted driver node in one process
// (tests/support/in_process_session.hpp) and judges what the world broadcast shows.
#include "../support/in_process_session.hpp"

#include "platoon/config/session.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/node/road_traffic_module.hpp"
#include "platoon/road/endless_road.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/vehicle/road_traffic.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

namespace platoon::testing {
namespace {

road::EndlessRoadDef Def(uint64_t seed) {
  road::EndlessRoadDef d;
  d.generator.seed = seed;
  d.generator.layout.lane_widths_right_m = {3.5, 3.5};
  return d;
}

// Whether `p` lies within `range_m` of a driver at `from` heading `heading_rad`, inside +-60 degrees.
bool InViewCone(const Vec3& from, double heading_rad, const Vec3& p, double range_m) {
  const Vec3 d = p - from;
  const double dist = d.head<2>().norm();
  if (dist > range_m) return false;
  if (dist < 1e-9) return true;
  const double bearing = std::atan2(d.y(), d.x()) - heading_rad;
  return std::abs(std::remainder(bearing, 2 * M_PI)) <= M_PI / 3;
}

}  // namespace

TEST_CASE("endless road: chunks from the seed alone, the same in two roads built differently, joined G2 and dropped behind") {
  road::EndlessRoad stepped(Def(42)), jumped(Def(42)), other(Def(43));
  const double chunk = Def(42).chunk_length_m;
  size_t most_chunks = 0;
  // One road follows a driver in 25 m steps to 10 km; the other jumps there in one call.
  for (double s = 0; s <= 10000; s += 25) {
    stepped.Cover(s, s);
    most_chunks = std::max(most_chunks, stepped.Chunks().size());
    CHECK(stepped.WindowEnd() >= s + 2000);
    CHECK(stepped.WindowStart() <= std::max(0.0, s - 500));
  }
  jumped.Cover(10000, 10000);
  other.Cover(10000, 10000);
  REQUIRE(stepped.ChunksKnown() >= 12000 / (2 * chunk));
  REQUIRE(jumped.ChunksKnown() == stepped.ChunksKnown());
  int differ_from_other_seed = 0;
  for (int64_t k = 0; k < stepped.ChunksKnown(); ++k) {
    CHECK(stepped.ChunkHash(k) == jumped.ChunkHash(k));
    differ_from_other_seed += stepped.ChunkHash(k) != other.ChunkHash(k);
  }
  CHECK(differ_from_other_seed == stepped.ChunksKnown());
  // The window stays bounded: 2.5 km of road plus a chunk or two at either end; old chunks were dropped.
  CHECK(most_chunks <= static_cast<size_t>(2500 / chunk) + 3);
  CHECK(stepped.ChunksDropped() > 0);
  CHECK(stepped.WindowStart() > 8000);
  // Consecutive chunks join in position, heading and (zero) curvature.
  const auto& c = stepped.Chunks();
  for (size_t i = 0; i + 1 < c.size(); ++i) {
    const road::RoadPoint end = c[i].road.Evaluate(c[i].road.Length());
    const road::RoadPoint start = c[i + 1].road.Evaluate(0);
    CHECK((end.position_m - start.position_m).norm() < 1e-9);
    CHECK(std::abs(end.heading_rad - start.heading_rad) < 1e-12);
    CHECK(end.curvature_1pm == 0.0);
    CHECK(start.curvature_1pm == 0.0);
    CHECK(c[i + 1].start_s_m == doctest::Approx(c[i].start_s_m + c[i].road.Length()).epsilon(1e-12));
  }
  // A window that moves back rebuilds the dropped chunks identically.
  stepped.Cover(1000, 1000);
  CHECK(stepped.WindowStart() <= 500);
  for (const auto& ch : stepped.Chunks()) CHECK(ch.hash == jumped.ChunkHash(ch.index));
  // Locate finds a point far beyond the window by drawing the road up to it.
  road::EndlessRoad fresh(Def(42));
  const Vec3 far = jumped.PointAt(9500, -1.75);
  const road::RoadCoord at = fresh.Locate(far);
  CHECK(at.s_m == doctest::Approx(9500).epsilon(1e-9));
  CHECK(at.lane == -1);
  CHECK(at.distance_m == doctest::Approx(1.75).epsilon(1e-6));
}

TEST_CASE("endless road: a session road with endless = true starts with the endless road's geometry, and bad keys are refused") {
  const char* text = R"(
[session]
mode = "lockstep"
end_s = 1
[road]
endless = true
seed = 9
lanes = 2
generate_length_m = 1500
)";
  const config::SessionDef s = config::LoadSessionText(text, "endless.toml");
  REQUIRE(s.road.endless);
  const road::Road prefix = road::SessionRoad(s.road);
  road::EndlessRoad endless(road::SessionEndlessRoadDef(s.road));
  CHECK(prefix.Length() >= 1500);
  double worst = 0;
  for (double x = 0; x <= prefix.Length(); x += 7.3)
    worst = std::max(worst, (prefix.LaneCenter(x, -2) - endless.PointAt(x, prefix.LaneCenterOffset(-2))).norm());
  CHECK(worst < 1e-6);
  // A road file cannot be endless.
  std::string message;
  try {
    (void)config::LoadSessionText("[road]\nfile = \"ring.toml\"\nendless = true\n", "bad.toml");
  } catch (const config::ConfigError& e) {
    message = e.what();
  }
  CHECK(message.find("bad.toml") != std::string::npos);
  CHECK(message.find("road.endless") != std::string::npos);
}

TEST_CASE("endless road: a scripted driver covers 10 km in lock-step among recycled traffic that never jumps or spawns in view") {
  road::EndlessRoad road(Def(5));
  vehicle::RoadTrafficDef def = vehicle::DefaultRoadTrafficDef();
  def.vehicles = 40;
  def.idm.desired_speed_mps = 25;
  def.seed = 11;
  vehicle::RoadTraffic traffic(road, def);
  const double dt = 0.05, driver_speed = 32.0, lateral = road.Layout().LaneCenterOffset(-2);
  double s = 20.0;
  std::map<uint32_t, std::pair<Vec3, double>> last;  // index -> (position, speed)
  int jumps = 0, spawns_in_view = 0, steps = 0;
  uint64_t spawned = 0, removed = 0;
  double worst_excess = -1e9, least_to_end = 1e9;
  while (s < 10020) {
    const Vec3 driver = road.PointAt(s, lateral);
    const double heading = road.Heading(s);
    road.Cover(s, s);
    least_to_end = std::min(least_to_end, road.WindowEnd() - s);
    traffic.SetExternal({vehicle::ExternalCar{-2, s, driver_speed}});
    traffic.Step(dt);
    const auto r = traffic.Recycle({driver}, {s});
    spawned += r.spawned.size();
    removed += r.removed.size();
    const std::set<uint32_t> fresh(r.spawned.begin(), r.spawned.end());
    std::map<uint32_t, std::pair<Vec3, double>> now;
    for (const auto& c : traffic.Cars()) {
      const Vec3 p = traffic.State(c, 0).pose.position_m;
      now[c.index] = {p, c.speed_mps};
      if (fresh.count(c.index)) {
        spawns_in_view += InViewCone(driver, heading, p, 150.0) || (p - driver).head<2>().norm() < 150.0;
        CHECK(!last.count(c.index));
        continue;
      }
      const auto it = last.find(c.index);
      if (it == last.end()) continue;
      const double moved = (p - it->second.first).norm();
      const double allowed = std::max(it->second.second, c.speed_mps) * dt + 1.0;
      worst_excess = std::max(worst_excess, moved - allowed);
      jumps += moved > allowed;
    }
    last = std::move(now);
    s += driver_speed * dt;
    ++steps;
  }
  MESSAGE("steps ", steps, ", spawned ", spawned, ", removed ", removed, ", chunks generated ",
          road.ChunksGenerated(), ", least road ahead ", least_to_end, " m");
  CHECK(jumps == 0);
  CHECK(worst_excess < 0);
  CHECK(spawns_in_view == 0);
  CHECK(least_to_end >= 2000);
  // The driver outruns the traffic: it passes vehicles that are removed behind it, and new ones appear ahead.
  CHECK(spawned >= 20);
  CHECK(removed >= 20);
  CHECK(traffic.Cars().size() >= 30);
  CHECK(traffic.Cars().size() <= 40);
  const vehicle::TrafficCheck check = traffic.Check();
  CHECK(check.overlaps == 0);
}

namespace {

// What the scripted driver saw of its own road, kept by the test (modules end with the session).
struct DriverLog {
  double s_m = 0;
  std::vector<uint64_t> hashes;  // chunk k's hash at [k]
};

// A driver that follows lane -2 of the endless session road at a fixed speed: the "scripted driver".
class ScriptedDriver final : public node::Module {
 public:
  ScriptedDriver(const config::SessionDef& session, std::string name, double speed_mps, DriverLog& log)
      : road_(road::SessionEndlessRoadDef(session.road)), id_(VehicleId(name, 0)), speed_(speed_mps), log_(log) {}
  std::string Name() const override { return "scripted-driver"; }
  double RateHz() const override { return 10.0; }
  void Step(const node::StepInfo& info, node::ModuleContext& context) override {
    s_m_ += speed_ * NsToS(info.dt_ns);
    road_.Cover(s_m_, s_m_);
    const double heading = road_.Heading(s_m_);
    protocol::EntityState e;
    e.id = id_;
    e.kind = protocol::EntityKind::kCar;
    e.kinematics.stamp_ns = info.sim_ns;
    e.kinematics.pose.position_m = road_.PointAt(s_m_, road_.Layout().LaneCenterOffset(-2));
    e.kinematics.pose.orientation = Quat(Eigen::AngleAxisd(heading, Vec3::UnitZ()));
    e.kinematics.velocity_mps = speed_ * (e.kinematics.pose.orientation * Vec3::UnitX());
    context.Publish(e);
    log_.s_m = s_m_;
    for (int64_t k = static_cast<int64_t>(log_.hashes.size()); k < road_.ChunksKnown(); ++k)
      log_.hashes.push_back(road_.ChunkHash(k));
  }

 private:
  road::EndlessRoad road_;
  uint64_t id_;
  double speed_;
  DriverLog& log_;
  double s_m_ = 20.0;
};

}  // namespace

TEST_CASE("endless road: in a lock-step session a driver covers 10 km, both nodes draw the same road, traffic never jumps or spawns in view") {
  const char* text = R"(
[session]
mode = "lockstep"
step_hz = 10
end_s = 205

[road]
endless = true
seed = 21
lanes = 2

[[node]]
name = "city"
role = "traffic"
traffic_model = "road"
vehicles = 30
speed_mps = 25
module_rate_hz = 10

[[node]]
name = "scripted"
role = "driver"
headless = true
input = "model:follow"
)";
  config::SessionDef session = config::LoadSessionText(text, "endless.toml");
  config::ValidateSession(session);
  DriverLog driver;
  bool scripted = false;
  const node::RoadTrafficModule* traffic = nullptr;  // valid while the session runs
  std::vector<uint64_t> traffic_hashes;
  double traffic_window_end = 0;
  InProcessOptions options;
  options.publish_every_step = true;
  options.on_modules = [&](const config::NodeDef& n, std::vector<std::unique_ptr<node::Module>>& modules) {
    if (n.name == "scripted") {
      // The driver node's seat gives way to the scripted driver (same node, same vehicle id).
      modules.clear();
      modules.push_back(std::make_unique<ScriptedDriver>(session, n.name, 50.0, driver));
      scripted = true;
    } else if (n.name == "city") {
      traffic = dynamic_cast<const node::RoadTrafficModule*>(modules.front().get());
    }
  };
  struct Last {
    int64_t t_ns;
    Vec3 p;
    double v;
  };
  std::map<uint64_t, Last> last;
  const uint64_t driver_id = VehicleId("scripted", 0);
  int jumps = 0, spawns_in_view = 0;
  size_t new_ids = 0;
  double worst_excess = -1e9;
  options.on_world = [&](const protocol::WorldState& w, const std::string&) {
    if (const road::EndlessRoad* road = traffic ? traffic->Endless() : nullptr) {
      for (int64_t k = static_cast<int64_t>(traffic_hashes.size()); k < road->ChunksKnown(); ++k)
        traffic_hashes.push_back(road->ChunkHash(k));
      traffic_window_end = road->WindowEnd();
    }
    const protocol::EntityState* d = nullptr;
    for (const auto& e : w.entities)
      if (e.id == driver_id) d = &e;
    for (const auto& e : w.entities) {
      if (e.id == driver_id) continue;
      const Vec3 p = e.kinematics.pose.position_m;
      const double v = e.kinematics.velocity_mps.norm();
      const auto it = last.find(e.id);
      if (it == last.end()) {
        // A new vehicle after the first second: spawned, so nowhere near the driver's view.
        if (w.sim_time_ns > 1'000'000'000 && d) {
          ++new_ids;
          const Vec3 f = d->kinematics.pose.orientation * Vec3::UnitX();
          spawns_in_view += InViewCone(d->kinematics.pose.position_m, std::atan2(f.y(), f.x()), p, 150.0);
        }
      } else if (e.kinematics.stamp_ns > it->second.t_ns) {
        const double dt = (e.kinematics.stamp_ns - it->second.t_ns) * 1e-9;
        const double moved = (p - it->second.p).head<2>().norm();
        const double allowed = std::max(v, it->second.v) * dt + 1.0;
        worst_excess = std::max(worst_excess, moved - allowed);
        jumps += moved > allowed;
      }
      if (it == last.end() || e.kinematics.stamp_ns > it->second.t_ns) last[e.id] = Last{e.kinematics.stamp_ns, p, v};
    }
  };
  const InProcessResult r = RunInProcess(session, 1, options);
  REQUIRE(scripted);
  REQUIRE(traffic);
  CHECK(r.sim_time_ns == 205'000'000'000);
  MESSAGE("driver s ", driver.s_m, " m, spawned vehicle ids ", new_ids, ", worst excess ", worst_excess,
          " m, chunks ", driver.hashes.size(), " / ", traffic_hashes.size());
  CHECK(driver.s_m >= 10000);
  CHECK(traffic_window_end >= driver.s_m + 1500);
  CHECK(jumps == 0);
  CHECK(spawns_in_view == 0);
  CHECK(new_ids >= 10);
  // The traffic follows the driver along the road: a driver mislocated on a part of the road that passes near
  // itself would empty the traffic (many more spawns) and draw road the driver never needs.
  CHECK(new_ids <= 250);
  CHECK(traffic_hashes.size() <= driver.hashes.size() + 2);
  // Both nodes drew the same road: every chunk either generated has the same hash.
  const size_t common = std::min(driver.hashes.size(), traffic_hashes.size());
  CHECK(common >= 12);
  for (size_t k = 0; k < common; ++k) CHECK(driver.hashes[k] == traffic_hashes[k]);
}

}  // namespace platoon::testing
