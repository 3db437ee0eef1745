#include "platoon/road/environment.hpp"
#include "platoon/road/road_file.hpp"
#include "platoon/road/road_generator.hpp"
#include "platoon/road/road_network.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numbers>
#include <string>

using namespace platoon;
using namespace platoon::road;

namespace {

constexpr double kPi = std::numbers::pi;

RoadDef OneSection(SectionDef sec, double x0 = 0, double y0 = 0, double th0 = 0) {
  RoadDef d = DefaultRoadDef();
  d.start_x_m = x0;
  d.start_y_m = y0;
  d.start_heading_rad = th0;
  d.sections = {sec};
  return d;
}

// Reference clothoid point by composite Simpson in long double, independent of the library's quadrature.
Vec3 ReferenceClothoid(double x0, double y0, double th0, double k0, double k1, double s, int steps) {
  const long double h = static_cast<long double>(s) / steps;
  long double sx = 0, sy = 0;
  for (int i = 0; i <= steps; ++i) {
    const long double v = h * i;
    const long double th = th0 + k0 * v + 0.5L * k1 * v * v;
    const long double w = (i == 0 || i == steps) ? 1 : (i % 2 ? 4 : 2);
    sx += w * std::cos(th);
    sy += w * std::sin(th);
  }
  return Vec3(static_cast<double>(x0 + sx * h / 3), static_cast<double>(y0 + sy * h / 3), 0);
}

std::string RingPath() {
#ifdef PLATOON_SOURCE_DIR
  return std::string(PLATOON_SOURCE_DIR) + "/configs/roads/ring.toml";
#else
  for (const char* p : {"configs/roads/ring.toml", "../configs/roads/ring.toml", "../../configs/roads/ring.toml",
                        "../../../configs/roads/ring.toml"})
    if (std::filesystem::exists(p)) return p;
  return "configs/roads/ring.toml";
#endif
}

std::string RoadErrorOf(const std::string& text) {
  try {
    LoadRoadText(text, "roads.toml");
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

// Independent footprint test for the environment: do two boxes' outlines cross or nest?
struct Box2 {
  double x[4], y[4];
};
Box2 Outline(const EnvObject& o) {
  const double c = std::cos(o.yaw_rad), s = std::sin(o.yaw_rad), hl = o.size_m.x() / 2, hw = o.size_m.y() / 2;
  const double sl[4] = {1, -1, -1, 1}, sw[4] = {1, 1, -1, -1};
  Box2 b{};
  for (int i = 0; i < 4; ++i) {
    b.x[i] = o.position_m.x() + sl[i] * hl * c - sw[i] * hw * s;
    b.y[i] = o.position_m.y() + sl[i] * hl * s + sw[i] * hw * c;
  }
  return b;
}
bool Inside(const EnvObject& o, double x, double y) {
  const double dx = x - o.position_m.x(), dy = y - o.position_m.y();
  const double c = std::cos(o.yaw_rad), s = std::sin(o.yaw_rad);
  return std::abs(dx * c + dy * s) < o.size_m.x() / 2 && std::abs(-dx * s + dy * c) < o.size_m.y() / 2;
}
double Cross(double ax, double ay, double bx, double by) { return ax * by - ay * bx; }
bool SegmentsCross(double ax, double ay, double bx, double by, double cx, double cy, double dx, double dy) {
  const double d1 = Cross(bx - ax, by - ay, cx - ax, cy - ay), d2 = Cross(bx - ax, by - ay, dx - ax, dy - ay);
  const double d3 = Cross(dx - cx, dy - cy, ax - cx, ay - cy), d4 = Cross(dx - cx, dy - cy, bx - cx, by - cy);
  return ((d1 > 0) != (d2 > 0)) && ((d3 > 0) != (d4 > 0)) && d1 != 0 && d2 != 0 && d3 != 0 && d4 != 0;
}
bool OutlinesIntersect(const EnvObject& a, const EnvObject& b) {
  const Box2 A = Outline(a), B = Outline(b);
  for (int i = 0; i < 4; ++i) {
    if (Inside(b, A.x[i], A.y[i]) || Inside(a, B.x[i], B.y[i])) return true;
    for (int j = 0; j < 4; ++j)
      if (SegmentsCross(A.x[i], A.y[i], A.x[(i + 1) % 4], A.y[(i + 1) % 4], B.x[j], B.y[j], B.x[(j + 1) % 4],
                        B.y[(j + 1) % 4]))
        return true;
  }
  return false;
}

}  // namespace

TEST_CASE("road: a line section matches the closed form to 1e-9 m over 500 m") {
  const Road r(OneSection(LineSection(500), 1.0, 2.0, 0.3));
  CHECK(r.Length() == doctest::Approx(500.0));
  double worst = 0;
  for (double s = 0; s <= 500; s += 7.3) {
    const Vec3 p = r.ReferencePoint(s);
    worst = std::max(worst, std::hypot(p.x() - (1 + s * std::cos(0.3)), p.y() - (2 + s * std::sin(0.3))));
    CHECK(r.Heading(s) == doctest::Approx(0.3));
    CHECK(r.Curvature(s) == 0.0);
  }
  MESSAGE("line: worst position error " << worst << " m");
  CHECK(worst < 1e-9);
}

TEST_CASE("road: an arc section matches the circle to 1e-9 m over 500 m, for both turn directions") {
  for (double k : {0.01, -0.02, 0.2}) {
    const double th0 = 0.7;
    const Road r(OneSection(ArcSection(500, k), -3.0, 4.0, th0));
    double worst = 0;
    for (double s = 0; s <= 500; s += 3.1) {
      const Vec3 p = r.ReferencePoint(s);
      const double x = -3.0 + (std::sin(th0 + k * s) - std::sin(th0)) / k;
      const double y = 4.0 - (std::cos(th0 + k * s) - std::cos(th0)) / k;
      worst = std::max(worst, std::hypot(p.x() - x, p.y() - y));
      CHECK(r.Heading(s) == doctest::Approx(th0 + k * s));
      CHECK(r.Curvature(s) == doctest::Approx(k));
    }
    MESSAGE("arc k=" << k << ": worst position error " << worst << " m");
    CHECK(worst < 1e-9);
  }
}

TEST_CASE("road: a clothoid matches a fine numerical reference to 1 mm over 500 m") {
  struct Case {
    double k0, k1end;
  };
  for (Case c : {Case{0.0, 0.02}, Case{-0.01, 0.02}, Case{0.05, 0.0}}) {
    const double L = 500, rate = (c.k1end - c.k0) / L;
    const Road r(OneSection(ClothoidSection(L, c.k0, c.k1end), 10, -5, -1.0));
    double worst = 0;
    for (double s : {0.0, 1.0, 50.0, 123.4, 250.0, 377.7, 499.0, 500.0}) {
      const Vec3 ref = ReferenceClothoid(10, -5, -1.0, c.k0, rate, s, 200000);
      const Vec3 p = r.ReferencePoint(s);
      worst = std::max(worst, std::hypot(p.x() - ref.x(), p.y() - ref.y()));
      CHECK(r.Heading(s) == doctest::Approx(-1.0 + c.k0 * s + 0.5 * rate * s * s));
      CHECK(r.Curvature(s) == doctest::Approx(c.k0 + rate * s));
    }
    MESSAGE("clothoid " << c.k0 << " -> " << c.k1end << " 1/m: worst position error " << worst << " m");
    CHECK(worst < 1e-3);
    CHECK(worst < 1e-8);
  }
}

TEST_CASE("road: sections chain G1-continuously (position and heading agree across every joint)") {
  RoadGeneratorDef g = DefaultRoadGeneratorDef();
  g.seed = 7;
  const Road r(GenerateRoad(g, 3000));
  double worst_gap = 0, worst_heading = 0;
  for (size_t i = 1; i < r.Def().sections.size(); ++i) {
    const double s = r.SectionStart(i);
    // Either side of the joint, less the travel along the tangent and the turn over 2e-7 m.
    const double eps = 1e-7;
    const RoadPoint a = r.Evaluate(s - eps), b = r.Evaluate(s + eps);
    const Vec3 tangent(std::cos(a.heading_rad), std::sin(a.heading_rad), 0);
    worst_gap = std::max(worst_gap, (b.position_m - a.position_m - 2 * eps * tangent).norm());
    worst_heading = std::max(worst_heading, std::abs(b.heading_rad - a.heading_rad - 2 * eps * a.curvature_1pm));
  }
  MESSAGE("joints: " << r.Def().sections.size() - 1 << ", worst gap " << worst_gap << " m, worst heading jump "
                     << worst_heading << " rad");
  CHECK(worst_gap < 1e-9);
  CHECK(worst_heading < 1e-10);
}

TEST_CASE("road: height follows the grade") {
  RoadDef d = OneSection(ArcSection(200, 0.01));
  d.start_height_m = 12;
  d.grade = 0.04;
  const Road r(d);
  CHECK(r.Height(100) == doctest::Approx(16));
  CHECK(r.ReferencePoint(150).z() == doctest::Approx(18));
  CHECK(r.LaneCenter(150, -1).z() == doctest::Approx(18));
}

TEST_CASE("road: lane centres, widths, edges and markings") {
  RoadDef d = OneSection(LineSection(100));
  d.lane_widths_left_m = {3.0, 2.5};
  d.lane_widths_right_m = {3.5, 3.25, 3.0};
  d.markings = {Marking::kSolid, Marking::kDashed, Marking::kDouble, Marking::kDashed, Marking::kBottsDots,
                Marking::kSolid};
  const Road r(d);
  CHECK(r.LanesLeft() == 2);
  CHECK(r.LanesRight() == 3);
  CHECK(r.LaneWidth(2) == 2.5);
  CHECK(r.LaneWidth(-3) == 3.0);
  CHECK(r.LaneCenterOffset(1) == doctest::Approx(1.5));
  CHECK(r.LaneCenterOffset(2) == doctest::Approx(4.25));
  CHECK(r.LaneCenterOffset(-1) == doctest::Approx(-1.75));
  CHECK(r.LaneCenterOffset(-3) == doctest::Approx(-8.25));
  CHECK(r.LeftEdgeOffset() == doctest::Approx(5.5));
  CHECK(r.RightEdgeOffset() == doctest::Approx(-9.75));
  CHECK(r.BoundaryMarking(2) == Marking::kSolid);
  CHECK(r.BoundaryMarking(0) == Marking::kDouble);
  CHECK(r.BoundaryMarking(-2) == Marking::kBottsDots);
  CHECK(r.BoundaryMarking(-3) == Marking::kSolid);
  CHECK(r.LaneAt(0.1) == 1);
  CHECK(r.LaneAt(5.0) == 2);
  CHECK(r.LaneAt(-4.0) == -2);
  CHECK(r.LaneAt(-9.0) == -3);
  CHECK(r.LaneAt(6.0) == 0);
  CHECK(r.LaneAt(-10.0) == 0);
  // On a straight heading +x the lane centre is offset along +y.
  const Vec3 c = r.LaneCenter(40, -2);
  CHECK(c.x() == doctest::Approx(40));
  CHECK(c.y() == doctest::Approx(-5.125));
  // Default markings: solid edges, dashed inside.
  const Road plain(OneSection(LineSection(10)));
  CHECK(plain.BoundaryMarking(1) == Marking::kSolid);
  CHECK(plain.BoundaryMarking(0) == Marking::kDashed);
  CHECK(plain.BoundaryMarking(-1) == Marking::kSolid);
}

TEST_CASE("road: projection round trip within 1 mm on lines, arcs and clothoids") {
  // An S-bend with radius-20 m arcs: tight enough that |t| = 8 m is 40 % of the radius, but no two
  // parts of the road come within 16 m of each other, so the foot point is the unique nearest one.
  RoadDef d = DefaultRoadDef();
  d.start_heading_rad = 0.4;
  d.sections = {LineSection(50),          ClothoidSection(30, 0, 0.05),  ArcSection(40, 0.05),
                ClothoidSection(60, 0.05, -0.05), ArcSection(40, -0.05), ClothoidSection(30, -0.05, 0),
                LineSection(50)};
  const Road r(d);
  double worst = 0;
  int n = 0;
  for (double s = 0.0; s <= r.Length(); s += 0.37) {
    for (double t : {-8.0, -5.25, -1.75, 0.0, 1.75, 3.4, 8.0}) {
      const Vec3 p = r.PointAt(s, t);
      const RoadCoord c = r.Project(p);
      const double err = std::max(std::abs(c.s_m - s), std::abs(c.t_m - t));
      worst = std::max(worst, err);
      if (err > 1e-3) MESSAGE("s=" << s << " t=" << t << " -> s=" << c.s_m << " t=" << c.t_m);
      CHECK(err < 1e-3);
      CHECK(c.distance_m == doctest::Approx(std::abs(t)).epsilon(1e-6).scale(1));
      if (t != 0.0) CHECK(c.lane == r.LaneAt(t));  // t = 0 is a boundary: either side is right
      ++n;
    }
  }
  MESSAGE("projection: " << n << " points on an S-bend of radius 20 m, worst |ds|,|dt| " << worst << " m");
  CHECK(worst < 1e-3);
}

TEST_CASE("road: projection never misses a nearer part of a random winding road") {
  // A random road may pass close to itself; then the nearest foot point is elsewhere, but it is never
  // farther than the known one, and where the known one is the nearest it is found within 1 mm.
  RoadGeneratorDef g = DefaultRoadGeneratorDef();
  g.seed = 3;
  g.curvature_max_1pm = 0.05;
  g.curvature_min_1pm = 0.01;
  const Road r(GenerateRoad(g, 2000));
  int n = 0, elsewhere = 0;
  double worst = 0;
  for (double s = 0.5; s < r.Length() - 0.5; s += 3.7) {
    for (double t : {-8.0, -1.75, 0.0, 3.4, 8.0}) {
      const RoadCoord c = r.Project(r.PointAt(s, t));
      CHECK(c.distance_m <= std::abs(t) + 1e-6);
      if (c.distance_m < std::abs(t) - 1e-3) {
        ++elsewhere;
        CHECK(std::abs(c.s_m - s) > 1.0);
      } else {
        worst = std::max(worst, std::abs(c.s_m - s));
      }
      ++n;
    }
  }
  MESSAGE("random road: " << n << " points, " << elsewhere << " nearer to another part, worst |ds| " << worst << " m");
  CHECK(worst < 1e-3);
}

TEST_CASE("road: projection picks the nearest of several roads and reports the lane") {
  RoadDef a = OneSection(LineSection(100));
  a.id = 5;
  a.successor_id = 6;
  RoadDef b = OneSection(ArcSection(100, 0.02), 100, 0, 0);
  b.id = 6;
  b.predecessor_id = 5;
  const RoadNetwork net({a, b});
  const RoadCoord c = net.Project(Vec3(50, -2, 0));
  CHECK(c.road_id == 5);
  CHECK(c.s_m == doctest::Approx(50));
  CHECK(c.t_m == doctest::Approx(-2));
  CHECK(c.lane == -1);
  const Road* rb = net.Find(6);
  REQUIRE(rb != nullptr);
  const RoadCoord d = net.Project(rb->PointAt(60, 1.0));
  CHECK(d.road_id == 6);
  CHECK(d.s_m == doctest::Approx(60));
  CHECK(d.lane == 1);
  const auto links = net.CheckLinks();
  REQUIRE(links.size() == 1);
  CHECK(links[0].gap_m < 1e-9);
  CHECK(std::abs(links[0].heading_error_rad) < 1e-12);
  CHECK(net.Find(99) == nullptr);
}

TEST_CASE("road file: the ring closes on itself within 1 cm, G1") {
  const RoadNetwork net = LoadRoadFile(RingPath());
  REQUIRE(net.Roads().size() == 1);
  const Road& r = net.Roads()[0];
  CHECK(r.Length() == doctest::Approx(2 * (200 + 50 + 264.1592653589793 + 50)));
  const auto links = net.CheckLinks();
  REQUIRE(links.size() == 1);
  MESSAGE("ring: length " << r.Length() << " m, closing gap " << links[0].gap_m << " m, heading error "
                          << links[0].heading_error_rad << " rad");
  CHECK(links[0].gap_m < 0.01);
  CHECK(std::abs(links[0].heading_error_rad) < 1e-6);
  CHECK(r.Heading(r.Length()) == doctest::Approx(2 * kPi));
  CHECK(r.LanesLeft() == 1);
  CHECK(r.LanesRight() == 2);
  CHECK(r.BoundaryMarking(0) == Marking::kDouble);
  // Projection round trip on the ring's curves too.
  for (double s = 1; s < r.Length() - 1; s += 11.1) {
    const RoadCoord c = r.Project(r.PointAt(s, -5.25));
    CHECK(std::abs(c.s_m - s) < 1e-3);
    CHECK(c.lane == -2);
  }
}

TEST_CASE("road file: errors name the file, the line and the key") {
  const std::string head = "[[road]]\nid = 1\n";
  CHECK(RoadErrorOf(head + "[[road.section]]\nlength_m = 10\n[[road.section]]\nlength_m = -5\n")
            .find("roads.toml:6: road[0].section[1].length_m") != std::string::npos);
  CHECK(RoadErrorOf(head + "lane_widht_m = 3\n[[road.section]]\nlength_m = 10\n")
            .find("roads.toml:3: road[0].lane_widht_m: unknown key") != std::string::npos);
  CHECK(RoadErrorOf(head + "markings = \"solid zigzag solid\"\n[[road.section]]\nlength_m = 10\n")
            .find("roads.toml:3: road[0].markings: unknown marking \"zigzag\"") != std::string::npos);
  CHECK(RoadErrorOf(head + "markings = \"solid solid\"\n[[road.section]]\nlength_m = 10\n")
            .find("road[0].markings: expected 3 markings") != std::string::npos);
  CHECK(RoadErrorOf(head + "successor = 4\n[[road.section]]\nlength_m = 10\n")
            .find("roads.toml:3: road[0].successor: no road with id 4") != std::string::npos);
  CHECK(RoadErrorOf(head + "\n").find("road[0].section: at least one") != std::string::npos);
  CHECK(RoadErrorOf("[[road]]\nlanes_left = 1\n[[road.section]]\nlength_m = 10\n").find("road[0].id: is required") !=
        std::string::npos);
  CHECK(RoadErrorOf(head + "[[road.section]]\nlength_m = 10\n[[road]]\nid = 1\n[[road.section]]\nlength_m = 10\n")
            .find("roads.toml:6: road[1].id: duplicate road id 1") != std::string::npos);
  CHECK(RoadErrorOf(head + "[[road.section]]\nlength_m = 10\ncurvature_start_1pm = 20\n")
            .find("roads.toml:5: road[0].section[0].curvature_start_1pm") != std::string::npos);
  CHECK(RoadErrorOf("[[road]\n").find("roads.toml:1:") != std::string::npos);
  CHECK(RoadErrorOf("").find("road: a road file needs at least one [[road]]") != std::string::npos);
  const std::string e = RoadErrorOf(head + "[[road.section]]\nlength_m = 10\n[[road.section]]\nlength_m = -5\n");
  MESSAGE("example error: " << e);
}

TEST_CASE("road generator: the same seed gives the same road, another seed another") {
  RoadGeneratorDef g = DefaultRoadGeneratorDef();
  g.seed = 42;
  const RoadDef a = GenerateRoad(g, 5000), b = GenerateRoad(g, 5000);
  REQUIRE(a.sections.size() == b.sections.size());
  for (size_t i = 0; i < a.sections.size(); ++i) {
    CHECK(a.sections[i].length_m == b.sections[i].length_m);
    CHECK(a.sections[i].curvature_start_1pm == b.sections[i].curvature_start_1pm);
    CHECK(a.sections[i].curvature_end_1pm == b.sections[i].curvature_end_1pm);
  }
  g.seed = 43;
  const RoadDef c = GenerateRoad(g, 5000);
  bool differs = c.sections.size() != a.sections.size();
  for (size_t i = 0; !differs && i < a.sections.size(); ++i) differs = a.sections[i].length_m != c.sections[i].length_m;
  CHECK(differs);
  // Generating in pieces continues the same road.
  g.seed = 42;
  RoadGenerator gen(g);
  auto pieces = gen.Next(1000);
  for (auto& s : gen.Next(4000)) pieces.push_back(s);
  const size_t n = std::min(pieces.size(), a.sections.size());
  for (size_t i = 0; i < n; ++i) CHECK(pieces[i].length_m == a.sections[i].length_m);
  CHECK(gen.GeneratedLength() >= 5000);
}

TEST_CASE("road generator: a chain of generated roads is one continuous road, linked end to start") {
  RoadGeneratorDef g = DefaultRoadGeneratorDef();
  g.seed = 17;
  const std::vector<RoadDef> defs = GenerateRoadChain(g, 5, 700.0, 40);
  REQUIRE(defs.size() == 5);
  const RoadNetwork net(defs);
  double total = 0.0;
  for (size_t k = 0; k < defs.size(); ++k) {
    CHECK(defs[k].id == 40 + static_cast<int>(k));
    CHECK(defs[k].predecessor_id == (k == 0 ? -1 : defs[k - 1].id));
    CHECK(defs[k].successor_id == (k + 1 == defs.size() ? -1 : defs[k + 1].id));
    CHECK(net.Roads()[k].Length() >= 700.0);
    total += net.Roads()[k].Length();
  }
  // Each end meets the next start in place and heading (what CheckLinks measures), so the chain is
  // one road of the total length.
  const std::vector<LinkGap> gaps = net.CheckLinks();
  REQUIRE(gaps.size() == 4);
  for (const LinkGap& gap : gaps) {
    CHECK(gap.gap_m < 1e-9);
    CHECK(std::abs(gap.heading_error_rad) < 1e-12);
  }
  CHECK(total >= 3500.0);
  // The same generator drew them in order: the first road is the one GenerateRoad makes.
  const RoadDef alone = GenerateRoad(g, 700.0);
  CHECK(alone.sections.size() == defs[0].sections.size());
}

TEST_CASE("road generator: curvature and its rate stay within the configured bounds") {
  RoadGeneratorDef g = DefaultRoadGeneratorDef();
  g.curvature_min_1pm = 0.004;
  g.curvature_max_1pm = 0.02;
  g.max_curvature_rate_1pm2 = 5e-4;
  g.straight_probability = 0.25;
  int straights = 0, arcs = 0, clothoids = 0;
  double max_k = 0, max_rate = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    g.seed = seed;
    const Road r(GenerateRoad(g, 4000));
    CHECK(r.Length() >= 4000);
    for (const auto& s : r.Def().sections) {
      max_k = std::max({max_k, std::abs(s.curvature_start_1pm), std::abs(s.curvature_end_1pm)});
      const double rate = std::abs(s.curvature_end_1pm - s.curvature_start_1pm) / s.length_m;
      max_rate = std::max(max_rate, rate);
      if (s.curvature_start_1pm != s.curvature_end_1pm) ++clothoids;
      else if (s.curvature_start_1pm == 0) ++straights;
      else {
        ++arcs;
        CHECK(std::abs(s.curvature_start_1pm) >= g.curvature_min_1pm);
      }
    }
    for (double s = 0; s < r.Length(); s += 5) CHECK(std::abs(r.Curvature(s)) <= g.curvature_max_1pm + 1e-15);
  }
  MESSAGE("generator: straights " << straights << ", arcs " << arcs << ", clothoids " << clothoids << ", max |k| "
                                  << max_k << " 1/m, max |dk/ds| " << max_rate << " 1/m^2");
  CHECK(max_k <= g.curvature_max_1pm);
  CHECK(max_rate <= g.max_curvature_rate_1pm2 * (1 + 1e-12));
  CHECK(straights > 0);
  CHECK(arcs > 0);
  CHECK(ValidateRoadGeneratorDef(g).empty());
  g.curvature_min_1pm = 0.05;
  CHECK(ValidateRoadGeneratorDef(g).find("curvature_1pm") != std::string::npos);
}

TEST_CASE("environment: objects never overlap and never touch the carriageway, rural and urban") {
  RoadGeneratorDef g = DefaultRoadGeneratorDef();
  g.seed = 11;
  g.curvature_max_1pm = 0.03;
  const Road generated(GenerateRoad(g, 1500));
  const RoadNetwork ring = LoadRoadFile(RingPath());
  for (const Road* road : {&generated, &ring.Roads()[0]}) {
    for (const EnvironmentDef& base : {DefaultEnvironmentDef(), UrbanEnvironmentDef()}) {
      EnvironmentDef def = base;
      def.street_lights.enabled = true;
      const auto objs = GenerateEnvironment(*road, def);
      std::map<ObjectKind, int> counts;
      for (const auto& o : objs) ++counts[o.kind];
      MESSAGE("road " << road->Length() << " m: " << objs.size() << " objects (buildings " << counts[ObjectKind::kBuilding]
                      << ", trees " << counts[ObjectKind::kTree] << ", guard rails " << counts[ObjectKind::kGuardRail]
                      << ", lights " << counts[ObjectKind::kStreetLight] << ", signs " << counts[ObjectKind::kSign]
                      << ")");
      CHECK(counts[ObjectKind::kBuilding] > 0);
      CHECK(counts[ObjectKind::kTree] > 0);
      CHECK(counts[ObjectKind::kStreetLight] > 0);
      CHECK(counts[ObjectKind::kSign] > 0);
      // No two footprints intersect (independent outline test).
      int overlaps = 0;
      for (size_t i = 0; i < objs.size(); ++i)
        for (size_t j = i + 1; j < objs.size(); ++j)
          if (OutlinesIntersect(objs[i], objs[j])) ++overlaps;
      CHECK(overlaps == 0);
      // No point of any outline lies on the carriageway (projection onto the road).
      int on_road = 0;
      for (const auto& o : objs) {
        const Box2 b = Outline(o);
        for (int i = 0; i < 4; ++i)
          for (double f = 0; f < 1; f += 0.05) {
            const double x = b.x[i] + f * (b.x[(i + 1) % 4] - b.x[i]), y = b.y[i] + f * (b.y[(i + 1) % 4] - b.y[i]);
            const RoadCoord c = road->Project(Vec3(x, y, 0));
            const bool beside = std::abs(c.distance_m - std::abs(c.t_m)) < 1e-6;
            if (beside && c.t_m <= road->LeftEdgeOffset() && c.t_m >= road->RightEdgeOffset()) ++on_road;
          }
      }
      CHECK(on_road == 0);
    }
  }
}

TEST_CASE("environment: the same seed places the same objects, disabled kinds are absent") {
  RoadGeneratorDef g = DefaultRoadGeneratorDef();
  const Road r(GenerateRoad(g, 1000));
  EnvironmentDef def = DefaultEnvironmentDef();
  def.seed = 5;
  const auto a = GenerateEnvironment(r, def), b = GenerateEnvironment(r, def);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].kind == b[i].kind);
    CHECK(a[i].position_m == b[i].position_m);
    CHECK(a[i].yaw_rad == b[i].yaw_rad);
    CHECK(a[i].size_m == b[i].size_m);
  }
  def.seed = 6;
  const auto c = GenerateEnvironment(r, def);
  CHECK((c.size() != a.size() || c[c.size() / 2].position_m != a[a.size() / 2].position_m));
  def.trees.enabled = false;
  def.guard_rails.enabled = false;
  for (const auto& o : GenerateEnvironment(r, def)) {
    CHECK(o.kind != ObjectKind::kTree);
    CHECK(o.kind != ObjectKind::kGuardRail);
  }
  // Lateral range: every building's near face lies within [min, max] of the edge.
  def = DefaultEnvironmentDef();
  for (const auto& o : GenerateEnvironment(r, def)) {
    if (o.kind != ObjectKind::kBuilding) continue;
    const double edge = o.side > 0 ? r.LeftEdgeOffset() : -r.RightEdgeOffset();
    const RoadCoord p = r.Project(o.position_m);
    const double near_face = std::abs(p.t_m) - o.size_m.y() / 2 - edge;
    CHECK(near_face >= def.buildings.lateral_min_m - 1e-6);
    CHECK(near_face <= def.buildings.lateral_max_m + 1e-6);
  }
  CHECK(ValidateEnvironmentDef(def).empty());
  def.trees.lateral_max_m = -1;
  CHECK(ValidateEnvironmentDef(def).find("tree") != std::string::npos);
}
