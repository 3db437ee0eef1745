// The lane graph of an OpenDRIVE map (issue 38): pieces per driving lane and lane section in their direction of
// travel, linked through road links (either contact point, with and without lane links) and through junction
// connections; lengths of turn lanes against the arc length computed by hand.
#include "platoon/road/lane_graph.hpp"
#include "platoon/road/opendrive.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <set>
#include <string>

namespace platoon::road {
namespace {

std::string LaneGraphFixture(const std::string& rel) { return std::string(PLATOON_SOURCE_DIR) + "/tests/data/opendrive/" + rel; }

// "road:lane" of every piece following (road, lane).
std::set<std::string> NextLanes(const LaneGraph& g, int road, int lane) {
  std::set<std::string> out;
  for (const auto& p : g.Pieces())
    if (p.road_id == road && p.lane == lane)
      for (uint32_t n : p.next) out.insert(std::to_string(g.Pieces()[n].road_id) + ":" + std::to_string(g.Pieces()[n].lane));
  return out;
}

}  // namespace

TEST_CASE("lane graph: the T junction's lanes link through road links and junction connections") {
  const OpenDriveMap map = LoadOpenDriveMapFile(LaneGraphFixture("junction.xodr"));
  const RoadNetwork network(map.roads);
  const LaneGraph g(network, map.junctions);
  // Every lane of junction.xodr is a driving lane: two per ordinary road, one per connecting road.
  CHECK(g.Pieces().size() == 5 * 2 + 3);
  CHECK(g.Notes().empty());
  // Into the junction: road 1's right lane to the straight (10) and the right turn (11).
  CHECK(NextLanes(g, 1, -1) == std::set<std::string>{"10:-1", "11:-1"});
  // Road 3's left lane drives towards its start, into the junction (connection 2).
  CHECK(NextLanes(g, 3, 1) == std::set<std::string>{"12:-1"});
  // Out of the connecting roads by their road links.
  CHECK(NextLanes(g, 10, -1) == std::set<std::string>{"2:-1"});
  CHECK(NextLanes(g, 11, -1) == std::set<std::string>{"3:-1"});
  CHECK(NextLanes(g, 12, -1) == std::set<std::string>{"2:-1"});
  // Contact points without lane links: start to start (road 1 and 5) and end to end (road 3 and 7) swap the
  // direction of travel, so the lane number changes sign.
  CHECK(NextLanes(g, 1, 1) == std::set<std::string>{"5:-1"});
  CHECK(NextLanes(g, 5, 1) == std::set<std::string>{"1:-1"});
  CHECK(NextLanes(g, 3, -1) == std::set<std::string>{"7:1"});
  CHECK(NextLanes(g, 7, -1) == std::set<std::string>{"3:1"});
  // Road 2 leads nowhere, and nothing leaves the junction towards road 1.
  CHECK(NextLanes(g, 2, -1).empty());
  CHECK(NextLanes(g, 2, 1).empty());

  // Lengths: the right turn's reference line is an arc of radius 10; its lane centre lies 1.75 m inside it.
  const double turn = (10.0 - 1.75) * std::numbers::pi / 2;
  for (uint32_t i = 0; i < g.Pieces().size(); ++i) {
    const LanePiece& p = g.Pieces()[i];
    if (p.road_id == 11) {
      CHECK(p.length_m == doctest::Approx(turn).epsilon(1e-9));
      CHECK(p.max_curvature_1pm == doctest::Approx(1.0 / 8.25).epsilon(1e-9));
      // Halfway along, the lane centre is on the circle of radius 8.25 around (-10, -10), heading south-east.
      const LanePose mid = g.Pose(i, turn / 2);
      CHECK(std::hypot(mid.position_m.x() + 10.0, mid.position_m.y() + 10.0) == doctest::Approx(8.25).epsilon(1e-9));
      CHECK(mid.heading_rad == doctest::Approx(-std::numbers::pi / 4).epsilon(1e-9));
      CHECK(mid.curvature_1pm == doctest::Approx(-1.0 / 8.25).epsilon(1e-9));
    }
    if (p.road_id == 1 && p.lane == 1) {
      // Driven towards -s: entered at s = 90, heading west, on the north side.
      CHECK(p.s_begin_m == 90.0);
      CHECK(p.s_end_m == 0.0);
      const LanePose at = g.Pose(i, 10.0);
      CHECK(at.s_m == doctest::Approx(80.0));
      CHECK(at.position_m.y() == doctest::Approx(1.75));
      CHECK(std::cos(at.heading_rad) == doctest::Approx(-1.0));
    }
  }
  // The junction's <priority high="1" low="3">: road 3's lane into the junction gives way; road 1's does not.
  CHECK(g.Pieces()[g.PieceAt(3, 1, 45.0)].yield == Yield::kGiveWay);
  CHECK(g.Pieces()[g.PieceAt(1, -1, 45.0)].yield == Yield::kNone);
  // A piece found by road, lane and s.
  const int64_t k = g.PieceAt(3, 1, 45.0);
  REQUIRE(k >= 0);
  CHECK(g.Pieces()[k].road_id == 3);
  CHECK(g.PieceAt(3, 2, 45.0) == -1);
  // The straight and the right turn leave road 1's lane together: they conflict; the turn from road 3 merges
  // into road 2 with the straight.
  const int64_t straight = g.PieceAt(10, -1, 1.0), right = g.PieceAt(11, -1, 1.0), from3 = g.PieceAt(12, -1, 1.0);
  CHECK(g.Crosses(straight, right, 2.5));
  CHECK(g.Crosses(straight, from3, 2.5));
  CHECK_FALSE(g.Crosses(straight, straight, 2.5));
}

}  // namespace platoon::road

namespace platoon::road {

TEST_CASE("lane graph: stop signs and junction priorities of the town map say who gives way where") {
  const OpenDriveMap map = LoadOpenDriveMapFile(std::string(PLATOON_SOURCE_DIR) + "/configs/roads/junctions.xodr");
  const RoadNetwork network(map.roads);
  const LaneGraph g(network, map.junctions);
  auto yield = [&](int road, int lane, double s) {
    const int64_t k = g.PieceAt(road, lane, s);
    REQUIRE(k >= 0);
    return g.Pieces()[static_cast<size_t>(k)].yield;
  };
  // J1: stop signs for the traffic arriving on roads 3 (north) and 2 (south), both lanes; none on roads 1 and 5.
  for (int lane : {1, 2}) {
    CHECK(yield(3, lane, 10.0) == Yield::kStop);
    CHECK(yield(2, lane, 10.0) == Yield::kStop);
    CHECK(yield(1, lane, 10.0) == Yield::kNone);
    CHECK(yield(5, lane, 10.0) == Yield::kNone);
  }
  // J2: road 1 (its end, right lanes) gives way to roads 3 and 4; J3: road 2's end gives way to 4 and 5.
  CHECK(yield(1, -1, 200.0) == Yield::kGiveWay);
  CHECK(yield(2, -2, 200.0) == Yield::kGiveWay);
  CHECK(yield(3, -1, 700.0) == Yield::kNone);
  CHECK(yield(4, 1, 100.0) == Yield::kNone);
  // Away from junctions nothing: the sign on road 3 is for the lanes driven towards its start only.
  CHECK(yield(3, -1, 10.0) == Yield::kNone);
}

}  // namespace platoon::road
