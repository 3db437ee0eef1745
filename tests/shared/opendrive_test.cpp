// OpenDRIVE export and import (shared/src/road/opendrive.cpp, xml_reader.cpp): platoon -> .xodr -> platoon
// reproduces every lane centre; a hand-written fixture with spirals imports onto independently computed
// points; what the import does not support fails with file:line; SUMO's netconvert reads every export and
// its lane shapes lie on platoon's lane centres.
#include "platoon/config/session.hpp"
#include "platoon/road/opendrive.hpp"
#include "platoon/road/road_file.hpp"
#include "platoon/road/road_generator.hpp"
#include "platoon/road/session_road.hpp"

#include "../../shared/src/road/xml_reader.hpp"
#include "../support/session_fixture.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <numbers>
#include <sstream>
#include <string>
#include <unistd.h>

using namespace std::chrono_literals;

using namespace platoon;
using namespace platoon::road;

namespace {

std::string SourcePath(const std::string& rel) {
#ifdef PLATOON_SOURCE_DIR
  return std::string(PLATOON_SOURCE_DIR) + "/" + rel;
#else
  for (const char* up : {"", "../", "../../", "../../../"})
    if (std::filesystem::exists(std::string(up) + rel)) return std::string(up) + rel;
  return rel;
#endif
}

// A fresh directory under the system temp dir, removed with the object.
struct OpenDriveTempDir {
  std::filesystem::path path;
  explicit OpenDriveTempDir(const std::string& tag) {
    path = std::filesystem::temp_directory_path() /
           ("platoon_opendrive_" + tag + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~OpenDriveTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string File(const std::string& name) const { return (path / name).string(); }
};

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A network with what the generator and ring.toml lack: several roads, a heading, a grade, uneven lane widths,
// every marking, a left-only road, links in both directions and a speed limit.
std::vector<RoadDef> MixedDefs() {
  RoadDef a = DefaultRoadDef();
  a.id = 3;
  a.start_x_m = -120.5;
  a.start_y_m = 48.25;
  a.start_heading_rad = 2.4;
  a.start_height_m = 7.0;
  a.grade = -0.045;
  a.speed_limit_mps = 100.0 / 3.6;
  a.sections = {LineSection(40), ClothoidSection(35, 0, -0.03), ArcSection(22.5, -0.03),
                ClothoidSection(60, -0.03, 0.012), ClothoidSection(17, 0.012, 0.0)};
  a.lane_widths_left_m = {3.25, 2.9, 3.6};
  a.lane_widths_right_m = {3.5, 3.0};
  a.markings = {Marking::kSolid, Marking::kBottsDots, Marking::kDashed, Marking::kDouble, Marking::kDashed,
                Marking::kNone};
  a.successor_id = 9;
  RoadDef b = DefaultRoadDef();
  b.id = 9;
  b.start_x_m = 500;
  b.start_y_m = -300;
  b.start_heading_rad = -1.0;
  b.sections = {ArcSection(120, 0.004), LineSection(80)};
  b.lane_widths_left_m = {3.75};
  b.lane_widths_right_m = {};
  b.markings = {Marking::kSolid, Marking::kSolid};
  b.predecessor_id = 3;
  return {a, b};
}

RoadNetwork GeneratedSessionNetwork() {
  config::RoadSessionDef def;
  def.seed = 20261123;
  def.generate_length_m = 2500;
  def.lanes = 3;
  def.speed_limit_kmh = 90;
  return SessionRoadNetwork(def);
}

// Largest distance between the two networks' lane centres, every 1 m (and at the end) along every lane of
// every road, heights included; also checks that both have the same roads, lanes, markings and links.
double MaxLaneCentreError(const RoadNetwork& a, const RoadNetwork& b, int* samples) {
  REQUIRE(a.Roads().size() == b.Roads().size());
  double worst = 0;
  for (size_t i = 0; i < a.Roads().size(); ++i) {
    const Road& ra = a.Roads()[i];
    const Road& rb = b.Roads()[i];
    CHECK(ra.Id() == rb.Id());
    REQUIRE(ra.LanesLeft() == rb.LanesLeft());
    REQUIRE(ra.LanesRight() == rb.LanesRight());
    CHECK(ra.Def().successor_id == rb.Def().successor_id);
    CHECK(ra.Def().predecessor_id == rb.Def().predecessor_id);
    CHECK(std::abs(ra.Def().speed_limit_mps - rb.Def().speed_limit_mps) < 1e-9);
    CHECK(std::abs(ra.Length() - rb.Length()) < 1e-9);
    for (int bnd = ra.LanesLeft(); bnd >= -ra.LanesRight(); --bnd)
      CHECK(ra.BoundaryMarking(bnd) == rb.BoundaryMarking(bnd));
    for (int lane = ra.LanesLeft(); lane >= -ra.LanesRight(); --lane) {
      if (lane == 0) continue;
      CHECK(ra.LaneWidth(lane) == rb.LaneWidth(lane));
      for (double s = 0;; s += 1.0) {
        const double ss = std::min(s, ra.Length());
        worst = std::max(worst, (ra.LaneCenter(ss, lane) - rb.LaneCenter(ss, lane)).norm());
        ++*samples;
        if (ss >= ra.Length()) break;
      }
    }
  }
  return worst;
}

std::string ErrorOf(const std::string& text) {
  try {
    (void)LoadOpenDriveText(text, "x.xodr");
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

// A one-road document; `geometry`, `lanes` and `extra` (after the planView) replace its parts.
const std::string kRightLane =
    "<lane id=\"-1\" type=\"driving\"><width sOffset=\"0\" a=\"3.5\" b=\"0\" c=\"0\" d=\"0\"/>"
    "<roadMark sOffset=\"0\" type=\"solid\"/></lane>";

std::string Doc(const std::string& geometry = "<geometry s=\"0\" x=\"0\" y=\"0\" hdg=\"0\" length=\"100\"><line/></geometry>",
                const std::string& right_lane = kRightLane, const std::string& extra = "") {
  return "<?xml version=\"1.0\"?>\n"                                    // line 1
         "<OpenDRIVE>\n"                                                // 2
         "<header revMajor=\"1\" revMinor=\"6\"/>\n"                    // 3
         "<road id=\"1\" length=\"100\" junction=\"-1\">\n"             // 4
         "<planView>\n" +                                               // 5
         geometry + "\n" +                                              // 6
         "</planView>\n" +                                              // 7
         extra + "\n" +                                                 // 8
         "<lanes><laneSection s=\"0\">\n"                               // 9
         "<center><lane id=\"0\" type=\"none\"/></center>\n"            // 10
         "<right>\n" +                                                  // 11
         right_lane + "\n" +                                            // 12
         "</right>\n"                                                   // 13
         "</laneSection></lanes>\n"                                     // 14
         "</road>\n"                                                    // 15
         "</OpenDRIVE>\n";
}

bool Has(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return true;
  MESSAGE("\"" << text << "\" lacks \"" << part << "\"");
  return false;
}

}  // namespace

TEST_CASE("opendrive: ring.toml, a generated session road and a mixed network round-trip within 1 mm") {
  const std::vector<std::pair<std::string, RoadNetwork>> cases = {
      {"ring", LoadRoadFile(SourcePath("configs/roads/ring.toml"))},
      {"generated", GeneratedSessionNetwork()},
      {"mixed", RoadNetwork(MixedDefs())},
  };
  for (const auto& [name, net] : cases) {
    CAPTURE(name);
    const std::string xodr = ExportOpenDrive(net);
    const RoadNetwork back = LoadOpenDriveText(xodr, name + ".xodr");
    int samples = 0;
    const double err = MaxLaneCentreError(net, back, &samples);
    MESSAGE(name << ": " << samples << " lane-centre samples, worst " << err << " m");
    CHECK(samples > 500);
    CHECK(err < 1e-3);
    // Exact definitions: the same sections, start, grade; so a second export is byte-identical.
    CHECK(ExportOpenDrive(back) == xodr);
  }
  // The ring's eight sections: two lines, four spirals (the transitions) and two arcs.
  const std::string ring = ExportOpenDrive(cases[0].second);
  size_t spirals = 0, arcs = 0, lines = 0;
  for (size_t p = 0; (p = ring.find("<spiral ", p)) != std::string::npos; ++p) ++spirals;
  for (size_t p = 0; (p = ring.find("<arc ", p)) != std::string::npos; ++p) ++arcs;
  for (size_t p = 0; (p = ring.find("<line/>", p)) != std::string::npos; ++p) ++lines;
  CHECK(spirals == 4);
  CHECK(arcs == 2);
  CHECK(lines == 2);
  CHECK(Has(ring, "<roadMark sOffset=\"0\" type=\"solid solid\""));
  CHECK(Has(ring, "<successor elementType=\"road\" elementId=\"1\" contactPoint=\"start\"/>"));
}

TEST_CASE("opendrive: a road file or a session's [road] file ending in .xodr loads as OpenDRIVE") {
  OpenDriveTempDir dir("session");
  const RoadNetwork mixed(MixedDefs());
  WriteText(dir.File("mixed.xodr"), ExportOpenDrive(mixed));
  const RoadNetwork loaded = LoadRoadFile(dir.File("mixed.xodr"));
  int samples = 0;
  CHECK(MaxLaneCentreError(mixed, loaded, &samples) < 1e-3);

  WriteText(dir.File("s.toml"), R"([road]
file = "mixed.xodr"
road_id = 9

[[node]]
name = "driver"
role = "driver"
input = "model:follow"
headless = true
start_lane = 1
)");
  const config::SessionDef s = config::LoadSession(dir.File("s.toml"));
  config::ValidateSession(s);
  const Road r = SessionRoad(s.road);
  CHECK(r.Id() == 9);
  CHECK(r.LanesLeft() == 1);
  CHECK(r.LanesRight() == 0);

  // A broken .xodr named by a session fails with the .xodr's own file:line.
  WriteText(dir.File("mixed.xodr"), Doc("<geometry s=\"0\" x=\"0\" y=\"0\" hdg=\"0\" length=\"100\"><spline a=\"0\" "
                                        "b=\"0\" c=\"0\" d=\"0\"/></geometry>"));
  std::string err;
  try {
    config::ValidateSession(config::LoadSession(dir.File("s.toml")));
  } catch (const config::ConfigError& e) {
    err = e.what();
  }
  CHECK(Has(err, "mixed.xodr:6: <spline> geometry is not supported (supported: line, arc, spiral, poly3, paramPoly3)"));
}

TEST_CASE("opendrive: the hand-written spiral fixture imports onto independently computed points") {
  const RoadNetwork net = LoadRoadFile(SourcePath("tests/data/roads/spiral.xodr"));
  REQUIRE(net.Roads().size() == 2);
  const Road& r = net.Roads()[0];
  const RoadDef& d = r.Def();
  CHECK(r.Id() == 7);
  REQUIRE(d.sections.size() == 6);
  CHECK(r.Length() == doctest::Approx(235.0).epsilon(1e-12));
  // Each geometry's start as the fixture writes it (Simpson, 200000 steps, outside platoon).
  struct Start {
    double s, x, y, hdg;
  };
  const Start starts[] = {{0, 100, -50, 0.5},
                          {30, 126.327476856753, -35.617233841822, 0.5},
                          {70, 157.423747762787, -11.167217108906, 1.0},
                          {105, 161.928339634859, 22.426215373403, 1.875},
                          {185, 106.898920050760, 78.976703596428, 2.275},
                          {215, 91.147243568196, 104.429453758392, 2.05},
                          {235, 81.92578974066187, 122.17670113110043, 2.05}};
  double worst = 0;
  for (const Start& st : starts) {
    const RoadPoint p = r.Evaluate(st.s);
    worst = std::max(worst, std::hypot(p.position_m.x() - st.x, p.position_m.y() - st.y));
    CHECK(p.heading_rad == doctest::Approx(st.hdg).epsilon(1e-12));
  }
  MESSAGE("fixture geometry starts: worst distance " << worst << " m");
  CHECK(worst < 1e-8);
  // Heading and curvature of the spiral through zero, analytically: k(u) = 0.025 - 0.04 u / 80,
  // heading 1.875 + 0.025 u - 0.00025 u^2.
  for (double u : {0.0, 10.0, 50.0, 62.5, 80.0}) {
    CHECK(r.Curvature(105 + u) == doctest::Approx(0.025 - 0.0005 * u).epsilon(1e-12));
    CHECK(r.Heading(105 + u) == doctest::Approx(1.875 + 0.025 * u - 0.00025 * u * u).epsilon(1e-12));
  }
  // Elevation, lanes, markings, speed, links.
  CHECK(r.Height(0) == doctest::Approx(12.5));
  CHECK(r.Height(235) == doctest::Approx(19.55));
  CHECK(r.LanesLeft() == 2);
  CHECK(r.LanesRight() == 2);
  CHECK(r.LaneWidth(2) == 3.0);
  CHECK(r.LaneWidth(1) == 3.25);
  CHECK(r.LaneWidth(-1) == 3.5);
  CHECK(r.LaneWidth(-2) == 3.75);
  CHECK(r.LaneCenterOffset(-2) == doctest::Approx(-5.375));
  CHECK(r.BoundaryMarking(2) == Marking::kSolid);
  CHECK(r.BoundaryMarking(1) == Marking::kDashed);
  CHECK(r.BoundaryMarking(0) == Marking::kDouble);
  CHECK(r.BoundaryMarking(-1) == Marking::kBottsDots);
  CHECK(r.BoundaryMarking(-2) == Marking::kSolid);
  CHECK(d.speed_limit_mps == doctest::Approx(80 / 3.6));
  CHECK(d.successor_id == 8);
  CHECK(net.Roads()[1].Def().predecessor_id == 7);
  CHECK(net.Roads()[1].BoundaryMarking(-1) == Marking::kNone);
  const auto gaps = net.CheckLinks();
  REQUIRE(gaps.size() == 1);
  CHECK(gaps[0].gap_m < 1e-6);
  CHECK(std::abs(gaps[0].height_error_m) < 1e-9);
}

TEST_CASE("opendrive: what the import does not support fails with file:line and the supported subset") {
  CHECK(ErrorOf(Doc()).empty());
  // Numbers as XML Schema writes them: a leading '+', exponents, surrounding space.
  CHECK(ErrorOf(Doc("<geometry s=\"+0\" x=\" 1e2 \" y=\"-2.5E-1\" hdg=\"+0.0\" length=\"+100\"><line/></geometry>"))
            .empty());
  const std::string line = "<geometry s=\"0\" x=\"0\" y=\"0\" hdg=\"0\" length=\"100\">";
  CHECK(Has(ErrorOf(Doc(line + "<paramPoly3 aU=\"0\"/></geometry>")), "x.xodr:6: <paramPoly3> needs attribute bU"));
  CHECK(Has(ErrorOf(Doc(line + "<clothoid/></geometry>")),
            "x.xodr:6: <clothoid> geometry is not supported (supported: line, arc, spiral, poly3, paramPoly3)"));
  CHECK(Has(ErrorOf(Doc("<geometry s=\"0\" x=\"0\" y=\"0\" hdg=\"0\" length=\"1OO\"><line/></geometry>")),
            "x.xodr:6: geometry.length: expected a number in [1e-06, 1e+06], got \"1OO\""));
  CHECK(Has(ErrorOf(Doc("<geometry s=\"0\" x=\"0\" y=\"nan\" hdg=\"0\" length=\"100\"><line/></geometry>")),
            "x.xodr:6: geometry.y: expected a number, got \"nan\""));
  CHECK(Has(ErrorOf(Doc(line + "<arc curvature=\"0.01\" foo=\"1\"/></geometry>")),
            "x.xodr:6: attribute foo of <arc> is not supported (supported: curvature)"));
  CHECK(Has(ErrorOf(Doc(line + "<arc/></geometry>")), "x.xodr:6: <arc> needs attribute curvature"));
  CHECK(Has(ErrorOf(Doc(line + "<spiral curvStart=\"0\" curvEnd=\"12\"/></geometry>")),
            "x.xodr:6: spiral.curvEnd: expected a number in [-10, 10], got 12"));
  // A second geometry that does not continue the first.
  CHECK(Has(ErrorOf(Doc("<geometry s=\"0\" x=\"0\" y=\"0\" hdg=\"0\" length=\"50\"><line/></geometry>"
                        "<geometry s=\"50\" x=\"50\" y=\"0.01\" hdg=\"0\" length=\"50\"><line/></geometry>")),
            "x.xodr:6: geometry starts 0.01 m and 0 rad away from where the previous geometry ends"));
  CHECK(Has(ErrorOf(Doc("<geometry s=\"0\" x=\"0\" y=\"0\" hdg=\"0\" length=\"50\"><line/></geometry>"
                        "<geometry s=\"60\" x=\"50\" y=\"0\" hdg=\"0\" length=\"50\"><line/></geometry>")),
            "x.xodr:6: geometry.s 60 is not where the previous geometries end (50)"));
  // Width polynomials and lane types besides driving are read (opendrive_import_test.cpp has their fixtures).
  CHECK(ErrorOf(Doc(line + "<line/></geometry>",
                    "<lane id=\"-1\" type=\"driving\"><width sOffset=\"0\" a=\"3.5\" b=\"0.01\" c=\"0\" d=\"0\"/>"
                    "</lane>")).empty());
  CHECK(ErrorOf(Doc(line + "<line/></geometry>",
                    "<lane id=\"-1\" type=\"sidewalk\"><width sOffset=\"0\" a=\"2\" b=\"0\" c=\"0\" d=\"0\"/></lane>"))
            .empty());
  CHECK(Has(ErrorOf(Doc(line + "<line/></geometry>",
                        "<lane id=\"-1\" type=\"sidewalks\"><width sOffset=\"0\" a=\"2\" b=\"0\" c=\"0\" d=\"0\"/></lane>")),
            "x.xodr:12: lane type \"sidewalks\" is not an OpenDRIVE lane type"));
  CHECK(Has(ErrorOf(Doc(line + "<line/></geometry>",
                        "<lane id=\"-1\" type=\"driving\"><width sOffset=\"0\" a=\"3\" b=\"0\" c=\"0\" d=\"0\"/>"
                        "<roadMark sOffset=\"0\" type=\"dotted\"/></lane>")),
            "x.xodr:12: roadMark type \"dotted\" is not an OpenDRIVE road mark type (none, solid, broken, solid solid, "
            "solid broken, broken solid, broken broken, botts dots, grass, curb, custom, edge)"));
  CHECK(Has(ErrorOf(Doc(line + "<line/></geometry>",
                        "<lane id=\"-2\" type=\"driving\"><width sOffset=\"0\" a=\"3\" b=\"0\" c=\"0\" d=\"0\"/></lane>")),
            "x.xodr:12: lane.id: lane -2 leaves a gap"));
  CHECK(Has(ErrorOf(Doc(line + "<line/></geometry>", "<lane id=\"-1\" type=\"driving\"/>")),
            "x.xodr:12: lane -1 needs a <width>"));
  // Curved elevation and superelevation are read.
  CHECK(ErrorOf(Doc(line + "<line/></geometry>", kRightLane, "<elevationProfile><elevation s=\"0\" a=\"1\" b=\"0\" "
                                                       "c=\"0.001\" d=\"0\"/></elevationProfile>")).empty());
  CHECK(ErrorOf(Doc(line + "<line/></geometry>", kRightLane, "<lateralProfile><superelevation s=\"0\" a=\"0.1\" b=\"0\" "
                                                       "c=\"0\" d=\"0\"/></lateralProfile>")).empty());
  CHECK(Has(ErrorOf(Doc(line + "<line/></geometry>", kRightLane, "<link><successor elementType=\"junction\" elementId=\"4\" "
                                                           "contactPoint=\"start\"/></link>")),
            "x.xodr:8: successor.elementId: no junction with id 4 in this file"));
  CHECK(Has(ErrorOf(Doc(line + "<line/></geometry>", kRightLane, "<link><successor elementType=\"station\" elementId=\"4\" "
                                                           "contactPoint=\"start\"/></link>")),
            "x.xodr:8: successor.elementType \"station\" is not supported (supported: road, junction)"));
  CHECK(Has(ErrorOf(Doc(line + "<line/></geometry>", kRightLane, "<link><successor elementType=\"road\" elementId=\"4\" "
                                                           "contactPoint=\"start\"/></link>")),
            "x.xodr:8: successor.elementId: no road with id 4 in this file"));
  CHECK(ErrorOf(Doc(line + "<line/></geometry>", kRightLane, "<surface/>")).empty());
  CHECK(Has(ErrorOf(Doc(line + "<line/></geometry>", kRightLane, "<crossSection/>")),
            "x.xodr:8: <crossSection> is not supported here (supported: link, type, planView"));
  // A second lane section without lanes.
  std::string two = Doc();
  two.replace(two.find("</laneSection></lanes>"), 22,
              "</laneSection>\n<laneSection s=\"50\"><center><lane id=\"0\"/></center></laneSection></lanes>");
  CHECK(Has(ErrorOf(two), "x.xodr:15: <laneSection> has no lanes besides the centre lane"));
  // Junctions and a road length that disagrees with its geometries.
  std::string junction = Doc();
  junction.replace(junction.find("</OpenDRIVE>"), 12, "<junctions id=\"5\" name=\"j\"/>\n</OpenDRIVE>");
  CHECK(Has(ErrorOf(junction), "x.xodr:16: <junctions> is not supported here (supported: header, road, junction"));
  std::string length = Doc();
  length.replace(length.find("length=\"100\" junction"), 12, "length=\"101\"");
  CHECK(Has(ErrorOf(length), "x.xodr:4: road.length 101 differs from its geometries' total 100"));
}

TEST_CASE("opendrive: the XML reader resolves entities and comments and names the line of a syntax error") {
  const xml::Element root = xml::Parse(
      "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- a comment -->\n<a x='1 &amp; 2' y=\"&lt;&gt;&quot;"
      "&apos;&#65;&#x42;\">\n  <b/><!-- inside --><c>t&amp;u<![CDATA[<raw>]]></c>\n</a>\n<!-- after -->\n",
      "a.xml");
  CHECK(root.name == "a");
  CHECK(root.line == 3);
  REQUIRE(root.Find("x"));
  CHECK(root.Find("x")->value == "1 & 2");
  CHECK(root.Find("y")->value == "<>\"'AB");
  REQUIRE(root.children.size() == 2);
  CHECK(root.children[0].name == "b");
  CHECK(root.children[1].text == "t&u<raw>");
  CHECK(root.children[1].line == 4);

  auto error = [](const std::string& text) {
    try {
      (void)xml::Parse(text, "a.xml");
    } catch (const xml::XmlError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(Has(error("<a>\n<b>\n</a>"), "a.xml:3: end tag </a> does not match <b> of line 2"));
  CHECK(Has(error("<a>\n<b/>\n"), "a.xml:1: element <a> is not closed (missing </a>)"));
  CHECK(Has(error("<a x=\"1\" x=\"2\"/>"), "a.xml:1: attribute x appears twice in <a>"));
  CHECK(Has(error("<a>\n &nbsp; </a>"), "a.xml:2: unknown entity &nbsp; (supported: &amp; &lt; &gt; &quot; &apos;"));
  CHECK(Has(error("<a x=1/>"), "a.xml:1: expected a quoted value for attribute x"));
  CHECK(Has(error("<a/>\n<b/>"), "a.xml:2: content after the root element's end tag"));
  CHECK(Has(error("<!DOCTYPE a>\n<a/>"), "a.xml:1: a DOCTYPE is not supported"));
  CHECK(Has(error("<a>\n<!-- x -- y -->\n</a>"), "a.xml:2: '--' inside a comment"));
  CHECK(Has(error("\n\n"), "a.xml:3: the document has no root element"));
  // Nesting is bounded (the reader recurses): 256 levels read, 257 are refused, a million do not crash.
  auto deep = [](int n) {
    std::string t;
    for (int i = 0; i < n; ++i) t += "<e>";
    for (int i = 0; i < n; ++i) t += "</e>";
    return t;
  };
  CHECK(error(deep(256)).empty());
  CHECK(Has(error(deep(257)), "a.xml:1: elements nest deeper than 256 levels"));
  CHECK(Has(error(deep(1000000)), "a.xml:1: elements nest deeper than 256 levels"));
  // Through the OpenDRIVE loader, the same message as a ConfigError.
  CHECK(Has(ErrorOf("<OpenDRIVE>\n<header>\n</OpenDRIVE>"), "x.xodr:3: end tag </OpenDRIVE> does not match <header>"));
  CHECK(Has(ErrorOf("<OpenDRIVE>\n<road id=\"1\" length=\"1\"/>\n</OpenDRIVE>"), "x.xodr:2: <road> before <header>"));
  CHECK(Has(ErrorOf("<xodr/>"), "x.xodr:1: the root element is <xodr>, expected <OpenDRIVE>"));
}

namespace {

// Points "x,y[,z] x,y[,z] ..." of a SUMO shape attribute.
std::vector<Vec3> ParseShape(const std::string& shape) {
  std::vector<Vec3> out;
  std::istringstream is(shape);
  for (std::string p; is >> p;) {
    double v[3] = {0, 0, 0};
    int n = 0;
    std::istringstream ps(p);
    for (std::string c; n < 3 && std::getline(ps, c, ',');) v[n++] = std::stod(c);
    REQUIRE(n >= 2);
    out.emplace_back(v[0], v[1], v[2]);
  }
  return out;
}

// Horizontal distance from `p` to the polyline `line`.
double DistanceToPolyline(const Vec3& p, const std::vector<Vec3>& line) {
  // Plain doubles, squared distances: called for every metre of every lane against every segment, and the
  // test sources compile with -Og, where Eigen's small expressions are not inlined.
  double best2 = 1e300;
  const double qx = p.x(), qy = p.y();
  for (size_t i = 0; i + 1 < line.size(); ++i) {
    const double ax = line[i].x(), ay = line[i].y();
    const double abx = line[i + 1].x() - ax, aby = line[i + 1].y() - ay;
    const double len2 = abx * abx + aby * aby;
    const double u = len2 > 0 ? std::clamp(((qx - ax) * abx + (qy - ay) * aby) / len2, 0.0, 1.0) : 0.0;
    const double dx = ax + u * abx - qx, dy = ay + u * aby - qy;
    best2 = std::min(best2, dx * dx + dy * dy);
  }
  return std::sqrt(best2);
}

struct NetconvertResult {
  int lanes = 0;                 // SUMO lanes compared
  int points = 0;                // their shape points
  double worst_shape_m = 0;      // largest distance of a SUMO shape point from platoon's lane centre (3D)
  double worst_centre_m = 0;     // largest horizontal distance of platoon's lane centre (every 1 m) from the SUMO lane
  double worst_uncovered_m = 0;  // largest length of a platoon lane that no SUMO lane covers (cut back at junctions)
};

// Exports `net`, runs netconvert on it and compares every SUMO lane with platoon's lane of its origId
// ("<road>_<lane>"; netconvert splits a closed road into two edges, so a lane may have several pieces).
NetconvertResult CompareWithNetconvert(const RoadNetwork& net, const OpenDriveTempDir& dir, const std::string& name) {
  const std::string xodr = dir.File(name + ".xodr"), out = dir.File(name + ".net.xml"), log = dir.File(name + ".log");
  WriteText(xodr, ExportOpenDrive(net));
  // --xml-validation never: Debian's sumo package has no schemas (they come with sumo-tools) and would
  // otherwise fail on its built-in type map. Fine curve resolution and 4 decimals keep the shapes exact.
  const std::string cmd = "netconvert --xml-validation never --opendrive-files '" + xodr + "' -o '" + out +
                          "' --offset.disable-normalization --opendrive.curve-resolution 0.25 --precision 4 "
                          "--output.original-names --no-internal-links --no-turnarounds > '" + log + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  const std::string log_text = ReadText(log);
  CAPTURE(log_text);
  REQUIRE(rc == 0);
  CHECK(log_text.find("Error") == std::string::npos);
  const xml::Element root = xml::Parse(ReadText(out), out);
  NetconvertResult r;
  // Per platoon lane, the stretches of s that SUMO's lanes cover.
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> covered;
  for (const xml::Element& e : root.children) {
    if (e.name == "location") {
      REQUIRE(e.Find("netOffset"));
      const std::vector<Vec3> offset = ParseShape(e.Find("netOffset")->value);
      REQUIRE(offset.size() == 1);
      CHECK(offset[0].norm() == 0.0);  // --offset.disable-normalization: SUMO's coordinates are platoon's
    }
    if (e.name != "edge" || (e.Find("function") && e.Find("function")->value == "internal")) continue;
    for (const xml::Element& lane : e.children) {
      if (lane.name != "lane") continue;
      std::string orig;
      for (const xml::Element& p : lane.children)
        if (p.name == "param" && p.Find("key") && p.Find("key")->value == "origId") orig = p.Find("value")->value;
      CAPTURE(orig);
      const size_t us = orig.rfind('_');
      REQUIRE(us != std::string::npos);
      const int road_id = std::stoi(orig.substr(0, us)), lane_id = std::stoi(orig.substr(us + 1));
      const Road* road = net.Find(road_id);
      REQUIRE(road != nullptr);
      REQUIRE(lane_id != 0);
      REQUIRE(lane_id <= road->LanesLeft());
      REQUIRE(-lane_id <= road->LanesRight());
      CHECK(std::stod(lane.Find("width")->value) == doctest::Approx(road->LaneWidth(lane_id)).epsilon(1e-3));
      const std::vector<Vec3> shape = ParseShape(lane.Find("shape")->value);
      REQUIRE(shape.size() >= 2);
      ++r.lanes;
      std::vector<double> s_of;
      for (const Vec3& p : shape) {
        // The SUMO point's place along platoon's road (its projection), moved onto the lane centre.
        const RoadCoord c = road->Project(p);
        r.worst_shape_m = std::max(r.worst_shape_m, (road->LaneCenter(c.s_m, lane_id) - p).norm());
        s_of.push_back(c.s_m);
        ++r.points;
      }
      auto& cover = covered[{road_id, lane_id}];
      // A closed road (its own successor) starts where it ends: a piece across that seam covers its two ends.
      const bool closed = road->Def().successor_id == road->Id();
      for (size_t i = 0; i + 1 < s_of.size(); ++i) {
        const double a = std::min(s_of[i], s_of[i + 1]), b = std::max(s_of[i], s_of[i + 1]);
        std::vector<std::pair<double, double>> pieces = {{a, b}};
        if (closed && b - a > 0.5 * road->Length()) pieces = {{0.0, a}, {b, road->Length()}};
        for (const auto& [lo, hi] : pieces) {
          cover.emplace_back(lo, hi);
          // Platoon's lane centre every 1 m along this piece lies on SUMO's polyline.
          for (double s = lo;; s += 1.0) {
            const double ss = std::min(s, hi);
            r.worst_centre_m = std::max(r.worst_centre_m, DistanceToPolyline(road->LaneCenter(ss, lane_id), shape));
            if (ss >= hi) break;
          }
        }
      }
    }
  }
  // Every platoon lane is in SUMO's network, cut back only where it meets a junction.
  size_t lanes = 0;
  for (const Road& road : net.Roads()) lanes += static_cast<size_t>(road.LanesLeft() + road.LanesRight());
  CHECK(covered.size() == lanes);
  for (auto& [key, cover] : covered) {
    std::sort(cover.begin(), cover.end());
    double total = 0, reach = -1e300;
    for (const auto& [a, b] : cover) {
      if (b <= reach) continue;
      total += b - std::max(a, reach);
      reach = b;
    }
    r.worst_uncovered_m = std::max(r.worst_uncovered_m, net.Find(key.first)->Length() - total);
  }
  return r;
}

}  // namespace

TEST_CASE("opendrive: netconvert reads every export and its lane shapes lie within 5 cm of platoon's lane centres") {
  if (std::system("command -v netconvert > /dev/null 2>&1") != 0) {
    // Said, not passed silently: doctest prints a WARN that fails.
    WARN_MESSAGE(false, "skipped: netconvert not found (Debian package sumo; scripts/install-deps.sh installs it)");
    return;
  }
  OpenDriveTempDir dir("netconvert");
  const std::vector<std::pair<std::string, RoadNetwork>> cases = {
      {"ring", LoadRoadFile(SourcePath("configs/roads/ring.toml"))},
      {"generated", GeneratedSessionNetwork()},
      {"mixed", RoadNetwork(MixedDefs())},
      {"spiral", LoadRoadFile(SourcePath("tests/data/roads/spiral.xodr"))},
  };
  for (const auto& [name, net] : cases) {
    CAPTURE(name);
    const NetconvertResult r = CompareWithNetconvert(net, dir, name);
    MESSAGE(name << ": " << r.lanes << " SUMO lanes, " << r.points << " shape points; worst shape point "
                 << r.worst_shape_m << " m, worst lane centre " << r.worst_centre_m << " m off SUMO's lane; at most "
                 << r.worst_uncovered_m << " m of a lane cut back at junctions");
    CHECK(r.points > 100);
    CHECK(r.worst_shape_m < 0.05);
    CHECK(r.worst_centre_m < 0.05);
    // netconvert trims lanes where they meet a junction, by a few metres, never more.
    CHECK(r.worst_uncovered_m < 25.0);
  }
}

namespace {

// Runs `platoon ARGS...`; returns its exit status and output lines.
std::pair<int, std::vector<std::string>> RunPlatoon(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {testing::BinDir() + "/platoon"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto c = process::Child::Spawn(argv);
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline && c.ReadLine(1s)) {
  }
  const auto st = c.WaitFor(20s);
  REQUIRE(st.has_value());
  return {*st, c.Lines()};
}

}  // namespace

TEST_CASE("opendrive: platoon road export and info, with usage errors exiting 2") {
  OpenDriveTempDir dir("cli");
  const std::string ring = SourcePath("configs/roads/ring.toml"), out = dir.File("ring.xodr");
  const auto [rc, lines] = RunPlatoon({"road", "export", ring, "-o", out});
  CAPTURE(lines);
  CHECK(rc == 0);
  CHECK(testing::AnyLineContains(lines, "wrote " + out + ": 1 road(s), 1128.319 m of reference line"));
  const RoadNetwork back = LoadRoadFile(out);
  int samples = 0;
  CHECK(MaxLaneCentreError(LoadRoadFile(ring), back, &samples) < 1e-3);
  CHECK(ReadText(out).find("name=\"ring\"") != std::string::npos);

  // A session's generated road, exported the same way.
  const std::string session = dir.File("s.toml");
  WriteText(session, "[road]\ngenerate_length_m = 800\nseed = 5\n\n[[node]]\nname = \"t\"\nrole = \"traffic\"\n"
                     "traffic_model = \"road\"\nvehicles = 1\n");
  const auto [rc_s, lines_s] = RunPlatoon({"road", "export", session, "-o", dir.File("gen.xodr")});
  CAPTURE(lines_s);
  CHECK(rc_s == 0);
  config::RoadSessionDef gen;
  gen.seed = 5;
  gen.generate_length_m = 800;
  CHECK(MaxLaneCentreError(SessionRoadNetwork(gen), LoadRoadFile(dir.File("gen.xodr")), &samples) < 1e-3);

  const auto [rc_i, lines_i] = RunPlatoon({"road", "info", out});
  CAPTURE(lines_i);
  CHECK(rc_i == 0);
  CHECK(testing::AnyLineContains(lines_i, "road 1: 1128.319 m, 8 sections (2 lines, 2 arcs, 4 spirals)"));
  CHECK(testing::AnyLineContains(lines_i, "markings (left edge to right edge) solid double dashed solid"));

  // Usage errors: a bad file names its line, a missing -o, no subcommand.
  WriteText(dir.File("bad.xodr"), Doc("<geometry s=\"0\" x=\"0\" y=\"0\" hdg=\"0\" length=\"100\"><spline/></geometry>"));
  const auto [rc_b, lines_b] = RunPlatoon({"road", "info", dir.File("bad.xodr")});
  CHECK(rc_b == 2);
  CHECK(testing::AnyLineContains(lines_b, "bad.xodr:6: <spline> geometry is not supported"));
  // A real map's elements: road info says what the import read and what it accepted and ignored.
  const auto [rc_c, lines_c] = RunPlatoon({"road", "info", SourcePath("tests/data/opendrive/combined.xodr")});
  CAPTURE(lines_c);
  CHECK(rc_c == 0);
  CHECK(testing::AnyLineContains(lines_c, "OpenDRIVE: 8 road(s), 1 junction(s)"));
  CHECK(testing::AnyLineContains(lines_c, "read: paramPoly3 x 1"));
  CHECK(testing::AnyLineContains(lines_c, "<surface> accepted and ignored (1 in the file, first at "));
  CHECK(testing::AnyLineContains(lines_c, "1 poly3/paramPoly3"));
  // The town map's lane graph: 32 connecting lanes, 4 approaches that give way and 4 that stop, none leading nowhere.
  const auto [rc_j, lines_j] = RunPlatoon({"road", "info", SourcePath("configs/roads/junctions.xodr")});
  CAPTURE(lines_j);
  CHECK(rc_j == 0);
  CHECK(testing::AnyLineContains(lines_j, "lane graph (traffic_model = \"network\"): 52 driving lane pieces, 32 of them "
                                          "connecting lanes in junctions; 4 approaches give way, 4 stop; 0 lead nowhere"));
  CHECK(RunPlatoon({"road", "export", ring}).first == 2);
  CHECK(RunPlatoon({"road"}).first == 2);
  CHECK(RunPlatoon({"road", "export", dir.File("missing.toml"), "-o", out}).first == 2);
}
