// The projection grid of Road and RoadNetwork (shared/src/road/road_network.cpp) against the brute force
// it replaces: the same road, s and t within 1e-9 m, for random queries near and far, on roads that pass
// near themselves and on networks of several roads.
#include "platoon/road/road_file.hpp"
#include "platoon/road/road_generator.hpp"
#include "platoon/road/road_network.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <string>
#include <vector>

using namespace platoon;
using namespace platoon::road;

namespace {

constexpr double kRixTolM = 1e-9;

// Uniform double in [lo, hi) from the raw generator (std distributions differ between libraries).
double RixUniform(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * (static_cast<double>(rng() >> 11) * 0x1.0p-53);
}

// Compares one query's indexed result with the brute force; counts and reports the first mismatches.
struct RixTally {
  int queries = 0;
  int mismatches = 0;
  double worst_m = 0.0;

  void Compare(const RoadCoord& indexed, const RoadCoord& brute, const Vec3& p) {
    ++queries;
    const double err = std::max(std::abs(indexed.s_m - brute.s_m), std::abs(indexed.t_m - brute.t_m));
    worst_m = std::max(worst_m, err);
    const bool same = indexed.road_id == brute.road_id && err <= kRixTolM && indexed.lane == brute.lane &&
                      std::abs(indexed.distance_m - brute.distance_m) <= kRixTolM;
    if (same) return;
    if (++mismatches <= 5)
      MESSAGE("query (" << p.x() << ", " << p.y() << "): indexed road " << indexed.road_id << " s " << indexed.s_m
                        << " t " << indexed.t_m << ", brute force road " << brute.road_id << " s " << brute.s_m
                        << " t " << brute.t_m);
  }
};

void RixCompareRoad(const Road& r, const Vec3& p, RixTally& tally) { tally.Compare(r.Project(p), r.ProjectBruteForce(p), p); }

void RixCompareNetwork(const RoadNetwork& net, const Vec3& p, RixTally& tally) {
  tally.Compare(net.Project(p), net.ProjectBruteForce(p), p);
}

// A random point near road r: s uniform over the road, t within +-t_max_m.
Vec3 RixNear(const Road& r, std::mt19937_64& rng, double t_max_m) {
  return r.PointAt(RixUniform(rng, 0.0, r.Length()), RixUniform(rng, -t_max_m, t_max_m));
}

// A point `distance_m` from a random point of road r, in a random direction.
Vec3 RixAway(const Road& r, std::mt19937_64& rng, double distance_m) {
  const Vec3 c = r.ReferencePoint(RixUniform(rng, 0.0, r.Length()));
  const double a = RixUniform(rng, 0.0, 2 * std::numbers::pi);
  return c + distance_m * Vec3(std::cos(a), std::sin(a), 0.0);
}


// A U-turn: two 150 m straights `gap_m` apart joined by a half circle, with clothoid entry and exit.
RoadDef RixHairpin(double gap_m, int id) {
  RoadDef d = DefaultRoadDef();
  d.id = id;
  const double k = 2.0 / gap_m;
  d.sections = {LineSection(150), ArcSection(std::numbers::pi / k, k), LineSection(150)};
  return d;
}

}  // namespace

TEST_CASE("road index: a generated road with curves and spirals projects as the brute force does") {
  RoadGeneratorDef g = DefaultRoadGeneratorDef();
  g.seed = 11;
  g.curvature_max_1pm = 0.03;  // radius down to 33 m: sample steps shorter than 1 m
  const Road r(GenerateRoad(g, 4000));
  std::mt19937_64 rng(20261127);
  RixTally near, mid;
  for (int i = 0; i < 25000; ++i) RixCompareRoad(r, RixNear(r, rng, 12.0), near);
  for (int i = 0; i < 5000; ++i) RixCompareRoad(r, RixAway(r, rng, RixUniform(rng, 12.0, 250.0)), mid);
  MESSAGE("generated road " << r.Length() << " m: " << near.queries << " near, worst " << near.worst_m << " m; "
                            << mid.queries << " 12-250 m off, worst " << mid.worst_m << " m");
  CHECK(near.queries == 25000);
  CHECK(near.mismatches == 0);
  CHECK(mid.mismatches == 0);
}

TEST_CASE("road index: roads that pass near themselves project as the brute force does") {
  // A hairpin of 10 m (the legs' carriageways touch), one of 3 m (queries between the legs are nearer
  // the other leg), the ring road file, and a tight random road that crosses itself.
  std::vector<Road> roads = {Road(RixHairpin(10.0, 1)), Road(RixHairpin(3.0, 2)), LoadRoadFile(
      std::string(PLATOON_SOURCE_DIR) + "/configs/roads/ring.toml").Roads().front()};
  RoadGeneratorDef g = DefaultRoadGeneratorDef();
  g.seed = 3;
  g.curvature_max_1pm = 0.05;
  g.curvature_min_1pm = 0.01;
  roads.emplace_back(GenerateRoad(g, 2000));
  std::mt19937_64 rng(7);
  RixTally tally;
  for (const Road& r : roads) {
    for (int i = 0; i < 6000; ++i) RixCompareRoad(r, RixNear(r, rng, 15.0), tally);
    for (int i = 0; i < 500; ++i) RixCompareRoad(r, RixAway(r, rng, RixUniform(rng, 15.0, 200.0)), tally);
  }
  // On the hairpins' middle line exactly: both legs equally near, the first in s wins in both.
  RixTally middle;
  for (double x = -20.0; x <= 170.0; x += 0.25) {
    RixCompareRoad(roads[0], Vec3(x, 5.0, 0.0), middle);
    RixCompareRoad(roads[1], Vec3(x, 1.5, 0.0), middle);
  }
  MESSAGE(tally.queries << " queries near four self-approaching roads, worst " << tally.worst_m << " m; "
                        << middle.queries << " on the hairpins' middle lines");
  CHECK(tally.mismatches == 0);
  CHECK(middle.mismatches == 0);
  CHECK(tally.queries == 26000);
}

TEST_CASE("road index: a network of chained crossing and coincident roads picks the road the brute force picks") {
  // Eight chained generated roads (one winding 8 km road in pieces), a second chain of four whose start
  // lies in the first one's area (so they cross), and a copy of the first piece under another id, defined
  // after it: on equal distances the road defined first must win, in both.
  RoadGeneratorDef g = DefaultRoadGeneratorDef();
  g.seed = 5;
  g.curvature_max_1pm = 0.02;
  std::vector<RoadDef> defs = GenerateRoadChain(g, 8, 1000, 1);
  RoadGeneratorDef g2 = g;
  g2.seed = 6;
  g2.layout.start_x_m = 400;
  g2.layout.start_y_m = -300;
  g2.layout.start_heading_rad = 1.2;
  for (RoadDef& d : GenerateRoadChain(g2, 4, 800, 20)) defs.push_back(d);
  RoadDef copy = defs.front();
  copy.id = 99;
  copy.successor_id = -1;
  defs.push_back(copy);
  const RoadNetwork net(defs);
  std::mt19937_64 rng(99);
  RixTally tally;
  int on_copy = 0;
  for (int i = 0; i < 30000; ++i) {
    const Road& r = net.Roads()[static_cast<size_t>(rng() % net.Roads().size())];
    const Vec3 p = i % 10 == 0 ? RixAway(r, rng, RixUniform(rng, 10.0, 300.0)) : RixNear(r, rng, 12.0);
    RixCompareNetwork(net, p, tally);
    on_copy += net.Project(p).road_id == 99;
  }
  MESSAGE(tally.queries << " queries on " << net.Roads().size() << " roads, worst " << tally.worst_m << " m");
  CHECK(tally.mismatches == 0);
  CHECK(tally.queries == 30000);
  CHECK(on_copy == 0);  // the copy always ties with road 1, defined first
}

TEST_CASE("road index: points 1 km away and points exactly on the line project as the brute force does") {
  RoadGeneratorDef g = DefaultRoadGeneratorDef();
  g.seed = 8;
  g.curvature_max_1pm = 0.02;
  const RoadNetwork net(GenerateRoadChain(g, 3, 1500, 1));
  const Road& r = net.Roads()[1];
  std::mt19937_64 rng(1000);
  RixTally far, on_line, net_far;
  for (int i = 0; i < 2000; ++i) RixCompareRoad(r, RixAway(r, rng, 1000.0), far);
  for (int i = 0; i < 2000; ++i) RixCompareNetwork(net, RixAway(r, rng, 1000.0), net_far);
  // On the line: at random s, and at every metre (where the samples lie when the step is 1 m).
  for (int i = 0; i < 8000; ++i) RixCompareRoad(r, r.PointAt(RixUniform(rng, 0.0, r.Length()), 0.0), on_line);
  for (double s = 0.0; s <= r.Length(); s += 1.0) RixCompareRoad(r, r.PointAt(s, 0.0), on_line);
  for (const Road& each : net.Roads())
    for (int i = 0; i < 2000; ++i) RixCompareNetwork(net, each.PointAt(RixUniform(rng, 0.0, each.Length()), 0.0), on_line);
  MESSAGE((far.queries + net_far.queries) << " queries 1 km off, " << on_line.queries << " on the line, worst "
                                          << on_line.worst_m << " m");
  CHECK(far.mismatches == 0);
  CHECK(net_far.mismatches == 0);
  CHECK(on_line.mismatches == 0);
  CHECK(on_line.queries >= 15000);
}
