// Road traffic at scale: the spatial index along the road against a brute-force search.
#include "platoon/road/endless_road.hpp"
#include "platoon/road/road_generator.hpp"
#include "platoon/vehicle/road_traffic.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace platoon;
using namespace platoon::vehicle;

namespace {

// Bitwise equality of two vehicles (doubles compared by their bits: the index must not change one rounding).
bool Same(const TrafficCar& a, const TrafficCar& b) {
  const auto bits = [](double v) {
    uint64_t u;
    std::memcpy(&u, &v, sizeof u);
    return u;
  };
  return a.index == b.index && a.lane == b.lane && a.target_lane == b.target_lane &&
         bits(a.lane_change_progress) == bits(b.lane_change_progress) && bits(a.s_m) == bits(b.s_m) &&
         bits(a.speed_mps) == bits(b.speed_mps) && bits(a.accel_mps2) == bits(b.accel_mps2) &&
         bits(a.cooldown_s) == bits(b.cooldown_s) && a.lane_changes == b.lane_changes;
}

// External vehicles: some at random places, some exactly at a car's s (ties), some a hair from one.
std::vector<ExternalCar> RandomExternals(const RoadTraffic& t, std::mt19937_64& rng, double s_lo, double s_hi) {
  std::vector<ExternalCar> out;
  std::uniform_real_distribution<double> s(s_lo, s_hi);
  std::uniform_int_distribution<size_t> pick(0, t.Cars().size() - 1), lane(0, t.Lanes().size() - 1);
  for (int i = 0; i < 20; ++i) out.push_back(ExternalCar{t.Lanes()[lane(rng)], s(rng), 20.0});
  for (int i = 0; i < 10; ++i) {
    const TrafficCar& c = t.Cars()[pick(rng)];
    out.push_back(ExternalCar{c.lane, i % 2 ? c.s_m : std::nextafter(c.s_m, 1e9), 10.0});
  }
  return out;
}

// Every leader and follower query of `indexed` equals the scan of `scanned` (same vehicles): at every
// vehicle (as itself and as nobody), at every external, and at random places, in every lane.
void CheckQueries(const RoadTraffic& indexed, const RoadTraffic& scanned, const std::vector<ExternalCar>& ext,
                  std::mt19937_64& rng, double s_lo, double s_hi, size_t& queries) {
  std::vector<std::pair<double, int>> at;
  for (size_t i = 0; i < indexed.Cars().size(); ++i) at.emplace_back(indexed.Cars()[i].s_m, static_cast<int>(i));
  for (size_t j = 0; j < ext.size(); ++j) at.emplace_back(ext[j].s_m, -2 - static_cast<int>(j));
  std::uniform_real_distribution<double> s(s_lo, s_hi);
  for (int k = 0; k < 200; ++k) at.emplace_back(s(rng), -1);
  for (const auto& [s_m, self] : at)
    for (int lane : indexed.Lanes())
      for (int who : {self, -1}) {
        const auto li = indexed.Leader(lane, s_m, who), ls = scanned.Leader(lane, s_m, who);
        const auto fi = indexed.Follower(lane, s_m, who), fs = scanned.Follower(lane, s_m, who);
        REQUIRE(li.car == ls.car);
        REQUIRE(li.gap_m == ls.gap_m);
        REQUIRE(fi.car == fs.car);
        REQUIRE(fi.gap_m == fs.gap_m);
        queries += 2;
      }
}

}  // namespace

TEST_CASE("traffic scale: the lane index gives exactly the leaders, followers and traffic of a scan on a dense periodic road") {
  road::RoadGeneratorDef gen = road::DefaultRoadGeneratorDef();
  gen.seed = 3;
  gen.layout.lane_widths_right_m = {3.5, 3.5, 3.5};
  const road::Road road(road::GenerateRoad(gen, 3000.0));
  RoadTrafficDef def = DefaultRoadTrafficDef();
  def.vehicles = 600;  // 200 a lane on 3 km: 15 m apart, bumper to bumper 10.5 m; jams and lane changes
  def.idm.desired_speed_mps = 25;
  def.seed = 11;
  RoadTrafficDef scan_def = def;
  scan_def.spatial_index = false;
  RoadTraffic indexed(road, def), scanned(road, scan_def);
  std::mt19937_64 rng(5);
  size_t queries = 0;
  for (int step = 0; step < 400; ++step) {
    // External vehicles change every 50 steps (both traffics get the same ones).
    if (step % 50 == 0) {
      auto ext = RandomExternals(indexed, rng, 0.0, road.Length());
      std::mt19937_64 query_rng(static_cast<uint64_t>(step));
      indexed.SetExternal(ext);
      scanned.SetExternal(ext);
      CheckQueries(indexed, scanned, ext, query_rng, 0.0, road.Length(), queries);
    }
    indexed.Step(0.05);
    scanned.Step(0.05);
    REQUIRE(indexed.Cars().size() == scanned.Cars().size());
    for (size_t i = 0; i < indexed.Cars().size(); ++i) REQUIRE(Same(indexed.Cars()[i], scanned.Cars()[i]));
  }
  MESSAGE("periodic: " << queries << " queries equal, lane changes " << indexed.LaneChanges());
  CHECK(indexed.LaneChanges() > 50);  // lane changes happened, so the index followed them within a step
  CHECK(indexed.Check().overlaps == scanned.Check().overlaps);
}

TEST_CASE("traffic scale: the lane index gives exactly the leaders, followers and traffic of a scan on an endless road") {
  road::EndlessRoadDef def_road;
  def_road.generator.seed = 9;
  def_road.generator.layout.lane_widths_right_m = {3.5, 3.5, 3.5};
  road::EndlessRoad road(def_road);
  road.Cover(0.0, 0.0);
  RoadTrafficDef def = DefaultRoadTrafficDef();
  def.vehicles = 400;
  def.idm.desired_speed_mps = 25;
  def.seed = 12;
  RoadTrafficDef scan_def = def;
  scan_def.spatial_index = false;
  RoadTraffic indexed(road, def), scanned(road, scan_def);
  std::mt19937_64 rng(6);
  size_t queries = 0;
  for (int step = 0; step < 300; ++step) {
    if (step % 50 == 0) {
      auto ext = RandomExternals(indexed, rng, road.WindowStart(), road.WindowEnd());
      std::mt19937_64 query_rng(static_cast<uint64_t>(step));
      indexed.SetExternal(ext);
      scanned.SetExternal(ext);
      CheckQueries(indexed, scanned, ext, query_rng, road.WindowStart(), road.WindowEnd(), queries);
    }
    indexed.Step(0.05);
    scanned.Step(0.05);
    // Spawns and removals (a scenario's) change the vehicle list: the index is rebuilt.
    if (step == 100) {
      CHECK(indexed.Remove(indexed.Cars()[7].index) == scanned.Remove(scanned.Cars()[7].index));
      CHECK(indexed.Spawn(indexed.Cars()[3].s_m + 30.0, -2, 20.0) == scanned.Spawn(scanned.Cars()[3].s_m + 30.0, -2, 20.0));
    }
    REQUIRE(indexed.Cars().size() == scanned.Cars().size());
    for (size_t i = 0; i < indexed.Cars().size(); ++i) REQUIRE(Same(indexed.Cars()[i], scanned.Cars()[i]));
  }
  MESSAGE("endless: " << queries << " queries equal, lane changes " << indexed.LaneChanges());
  CHECK(indexed.LaneChanges() > 20);
}

TEST_CASE("traffic scale: a remote vehicle projected near its last s lands where the whole road puts it") {
  road::RoadGeneratorDef gen = road::DefaultRoadGeneratorDef();
  gen.seed = 4;
  gen.layout.lane_widths_right_m = {3.5, 3.5, 3.5};
  const road::Road road(road::GenerateRoad(gen, 5000.0));
  RoadTraffic traffic(road, DefaultRoadTrafficDef());
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<double> s(0.0, road.Length()), t(-12.0, 4.0), move(-10.0, 10.0), far(-150.0, 150.0);
  int on = 0;
  for (int k = 0; k < 2000; ++k) {
    const double s0 = s(rng), t0 = t(rng);
    const Vec3 p = road.PointAt(s0, t0);
    double s_whole = 0, d_whole = 0, s_near = 0, d_near = 0;
    const auto whole = traffic.OnLane(p, &s_whole, &d_whole);
    // Followed from a hint up to 10 m off (one step of a fast car is under 1 m); every fourth one jumped
    // up to 150 m (beyond the window: the whole road decides).
    const auto near = traffic.OnLaneNear(p, s0 + (k % 4 == 0 ? far(rng) : move(rng)), 60.0, &s_near, &d_near);
    REQUIRE(whole.has_value() == near.has_value());
    // Newton from the hint (converged to 1e-9 m along the road) against the sampled search (golden section
    // to 1e-7 m of s, where the squared distance is flat: about 1e-6 m): the same foot point.
    CHECK(std::abs(s_whole - s_near) < 1e-5);
    CHECK(std::abs(d_whole - d_near) < 1e-6);
    if (whole) {
      CHECK(whole->first == near->first);
      ++on;
    }
  }
  CHECK(on > 1000);
}
