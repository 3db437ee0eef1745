// OpenDRIVE import benchmark (issue 38): a generated grid map of --junctions junctions (default 200), each
// joined to its neighbours by two-way roads with sidewalks and crossed by six connecting roads (two straight,
// four right turns), written as OpenDRIVE text; measured: the import (ReadOpenDriveMap) and the network build
// (RoadNetwork: samples and projection grids) as load time, then road queries (x, y -> road, s, t, lane) per
// second on one core through the projection grid, in random order and in a coherent one (as vehicles ask), against
// the brute force over every road in the same run.
#include "platoon/road/opendrive.hpp"
#include "platoon/road/road_network.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numbers>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace platoon;
using namespace platoon::road;

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Lanes of an ordinary road: a driving lane and a sidewalk each side.
const char* kRoadLanes =
    "<lanes><laneSection s=\"0\"><left>"
    "<lane id=\"2\" type=\"sidewalk\"><width sOffset=\"0\" a=\"2\" b=\"0\" c=\"0\" d=\"0\"/>"
    "<roadMark sOffset=\"0\" type=\"curb\"/></lane>"
    "<lane id=\"1\" type=\"driving\"><width sOffset=\"0\" a=\"3.5\" b=\"0\" c=\"0\" d=\"0\"/>"
    "<roadMark sOffset=\"0\" type=\"solid\"/></lane></left>"
    "<center><lane id=\"0\" type=\"none\"><roadMark sOffset=\"0\" type=\"broken\"/></lane></center><right>"
    "<lane id=\"-1\" type=\"driving\"><width sOffset=\"0\" a=\"3.5\" b=\"0\" c=\"0\" d=\"0\"/>"
    "<roadMark sOffset=\"0\" type=\"solid\"/></lane>"
    "<lane id=\"-2\" type=\"sidewalk\"><width sOffset=\"0\" a=\"2\" b=\"0\" c=\"0\" d=\"0\"/>"
    "<roadMark sOffset=\"0\" type=\"curb\"/></lane></right></laneSection></lanes>";
// Lanes of a connecting road: one driving lane right.
const char* kConnectingLanes =
    "<lanes><laneSection s=\"0\"><center><lane id=\"0\" type=\"none\"/></center><right>"
    "<lane id=\"-1\" type=\"driving\"><width sOffset=\"0\" a=\"3.5\" b=\"0\" c=\"0\" d=\"0\"/></lane></right>"
    "</laneSection></lanes>";

struct MapText {
  std::string text;
  double road_m = 0;        // ordinary roads' length
  double connecting_m = 0;  // connecting roads' length
  int roads = 0;
  int junctions = 0;
};

// A grid of cols x rows junctions `spacing_m` apart, each `half_m` from its centre to where its roads start.
MapText GridMap(int cols, int rows, double spacing_m, double half_m) {
  MapText m;
  std::ostringstream os;
  os.precision(17);
  os << "<?xml version=\"1.0\"?>\n<OpenDRIVE>\n<header revMajor=\"1\" revMinor=\"7\" name=\"grid\"/>\n";
  int id = 1;
  auto road = [&](int junction, double x, double y, double hdg, double length, const std::string& shape,
                  const char* lanes) {
    os << "<road id=\"" << id++ << "\" length=\"" << length << "\" junction=\"" << junction << "\"><planView>"
       << "<geometry s=\"0\" x=\"" << x << "\" y=\"" << y << "\" hdg=\"" << hdg << "\" length=\"" << length
       << "\">" << shape << "</geometry></planView>" << lanes << "</road>\n";
    ++m.roads;
    (junction < 0 ? m.road_m : m.connecting_m) += length;
  };
  const double link_m = spacing_m - 2 * half_m;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const double cx = c * spacing_m, cy = r * spacing_m;
      // Roads to the east and north neighbours.
      if (c + 1 < cols) road(-1, cx + half_m, cy, 0.0, link_m, "<line/>", kRoadLanes);
      if (r + 1 < rows) road(-1, cx, cy + half_m, std::numbers::pi / 2, link_m, "<line/>", kRoadLanes);
    }
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const double cx = c * spacing_m, cy = r * spacing_m;
      const int j = r * cols + c;
      // Two straight connecting roads and four right turns (arcs of radius half_m).
      road(j, cx - half_m, cy, 0.0, 2 * half_m, "<line/>", kConnectingLanes);
      road(j, cx, cy - half_m, std::numbers::pi / 2, 2 * half_m, "<line/>", kConnectingLanes);
      const double arc = half_m * std::numbers::pi / 2;
      const std::string right = "<arc curvature=\"" + std::to_string(-1.0 / half_m) + "\"/>";
      road(j, cx - half_m, cy, 0.0, arc, right, kConnectingLanes);
      road(j, cx + half_m, cy, std::numbers::pi, arc, right, kConnectingLanes);
      road(j, cx, cy - half_m, std::numbers::pi / 2, arc, right, kConnectingLanes);
      road(j, cx, cy + half_m, -std::numbers::pi / 2, arc, right, kConnectingLanes);
    }
  for (int j = 0; j < rows * cols; ++j) os << "<junction id=\"" << j << "\" name=\"j" << j << "\"/>\n";
  m.junctions = rows * cols;
  os << "</OpenDRIVE>\n";
  m.text = os.str();
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"OpenDRIVE import and road query benchmark on a generated grid map"};
  int cols = 20, rows = 10;
  double spacing = 155.0;  // 370 roads of 135 m: 50 km
  size_t queries = 2000000, brute = 2000;
  uint64_t seed = 1;
  app.add_option("--cols", cols, "Junctions per row")->check(CLI::Range(2, 1000));
  app.add_option("--rows", rows, "Rows of junctions")->check(CLI::Range(2, 1000));
  app.add_option("--spacing", spacing, "Junction spacing, in m")->check(CLI::Range(50.0, 10000.0));
  app.add_option("--queries", queries, "Grid queries to time")->check(CLI::Range(1000, 1000000000));
  app.add_option("--brute", brute, "Brute-force queries to time (the baseline)")->check(CLI::Range(100, 1000000));
  app.add_option("--seed", seed, "Seed of the query points");
  CLI11_PARSE(app, argc, argv);

  const MapText map = GridMap(cols, rows, spacing, 10.0);
  std::printf("map: %d junctions, %d roads, %.1f km of roads + %.1f km of connecting roads, %.1f MB of OpenDRIVE\n",
              map.junctions, map.roads, map.road_m / 1000, map.connecting_m / 1000, map.text.size() / 1e6);

  // Load: parse and read, then build the network.
  auto t0 = Clock::now();
  OpenDriveMap read = ReadOpenDriveMap(map.text, "grid.xodr");
  const double read_s = Seconds(t0);
  t0 = Clock::now();
  const RoadNetwork net(std::move(read.roads));
  const double build_s = Seconds(t0);
  std::printf("load: import %.3f s + network build %.3f s = %.3f s\n", read_s, build_s, read_s + build_s);

  // Query points on the carriageways and sidewalks: a random road, s and t within its lanes.
  std::mt19937_64 rng(seed);
  std::vector<Vec3> points;
  for (int i = 0; i < 100000; ++i) {
    const Road& r = net.Roads()[rng() % net.Roads().size()];
    const double s = std::uniform_real_distribution<double>(0, r.Length())(rng);
    const double t = std::uniform_real_distribution<double>(r.BoundaryOffsetAt(s, -r.LanesRightAt(s)),
                                                            r.BoundaryOffsetAt(s, r.LanesLeftAt(s)))(rng);
    points.push_back(r.PointAt(s, t));
  }
  double checksum = 0;
  int lanes_found = 0;
  t0 = Clock::now();
  for (size_t i = 0; i < queries; ++i) {
    const RoadCoord c = net.Project(points[i % points.size()]);
    checksum += c.s_m;
    lanes_found += c.lane != 0;
  }
  const double grid_qps = static_cast<double>(queries) / Seconds(t0);
  // The same points in a coherent order (by 50 m strips of x, then y), as vehicles ask: successive queries
  // near each other, so the index's memory is mostly in cache. The random order above misses it almost every time.
  std::vector<Vec3> coherent = points;
  std::sort(coherent.begin(), coherent.end(), [](const Vec3& a, const Vec3& b) {
    const double ax = std::floor(a.x() / 50.0), bx = std::floor(b.x() / 50.0);
    return ax != bx ? ax < bx : a.y() < b.y();
  });
  double coherent_sum = 0;
  t0 = Clock::now();
  for (size_t i = 0; i < queries; ++i) coherent_sum += net.Project(coherent[i % coherent.size()]).s_m;
  const double coherent_qps = static_cast<double>(queries) / Seconds(t0);
  double brute_sum = 0;
  std::vector<RoadCoord> answers;
  answers.reserve(brute);
  t0 = Clock::now();
  for (size_t i = 0; i < brute; ++i) {
    answers.push_back(net.ProjectBruteForce(points[i % points.size()]));
    brute_sum += answers.back().s_m;
  }
  const double brute_qps = static_cast<double>(brute) / Seconds(t0);
  int same = 0;
  for (size_t i = 0; i < brute; ++i) {
    const RoadCoord g = net.Project(points[i % points.size()]);
    same += answers[i].road_id == g.road_id && answers[i].s_m == g.s_m && answers[i].lane == g.lane;
  }
  std::printf("queries (x, y -> road, s, t, lane), one core: grid %.3g /s in random order, %.3g /s in coherent order; "
              "brute force %.3g /s (%.0fx); %d of %zu brute-force answers equal the grid's; %.1f%% of grid answers in a "
              "lane; checksum %.6g %.6g %.6g\n",
              grid_qps, coherent_qps, brute_qps, grid_qps / brute_qps, same, brute, 100.0 * lanes_found / queries,
              checksum, coherent_sum, brute_sum);
  return 0;
}
