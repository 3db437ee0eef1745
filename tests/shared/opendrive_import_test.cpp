// OpenDRIVE import of real maps' elements (shared/src/road/opendrive.cpp, road_network.cpp, road_profile.hpp):
// one hand-written fixture per element that blocked real maps (tests/data/opendrive/*.xodr), each compared with
// reference points that tests/shared/opendrive_reference.py integrates from the OpenDRIVE formulas by itself
// (within 1 mm), and with SUMO's netconvert (within 5 cm); a file combining them imports and reports what it
// accepted and ignored; what stays unsupported fails with file:line.
#include "platoon/config/table.hpp"
#include "platoon/road/opendrive.hpp"
#include "platoon/road/road_network.hpp"

#include "../../shared/src/road/xml_reader.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace platoon;
using namespace platoon::road;

namespace opendrive_import_detail {

std::string FixturePath(const std::string& name) {
  const std::string rel = "tests/data/opendrive/" + name;
#ifdef PLATOON_SOURCE_DIR
  return std::string(PLATOON_SOURCE_DIR) + "/" + rel;
#else
  for (const char* up : {"", "../", "../../", "../../../"})
    if (std::filesystem::exists(std::string(up) + rel)) return std::string(up) + rel;
  return rel;
#endif
}

std::string ScriptPath() {
#ifdef PLATOON_SOURCE_DIR
  return std::string(PLATOON_SOURCE_DIR) + "/tests/shared/opendrive_reference.py";
#else
  return "tests/shared/opendrive_reference.py";
#endif
}

std::string TempFile(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("platoon_odr_import_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Python() {
  if (const char* p = std::getenv("PLATOON_TEST_PYTHON3")) return p;
  return "/usr/bin/python3";
}

struct ReferenceRow {
  int road = 0;
  double s = 0;
  int lane = 0;
  double x = 0, y = 0, z = 0, heading = 0;
};

// The reference script's points for `fixture`.
std::vector<ReferenceRow> Reference(const std::string& fixture) {
  const std::string out = TempFile(fixture + ".csv");
  const std::string cmd = Python() + " '" + ScriptPath() + "' '" + FixturePath(fixture) + "' '" + out + "' 5";
  REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, "the reference script failed: " << cmd);
  std::istringstream in(Slurp(out));
  std::filesystem::remove(out);
  std::string line;
  std::getline(in, line);  // header
  std::vector<ReferenceRow> rows;
  while (std::getline(in, line)) {
    ReferenceRow r;
    char c;
    std::istringstream ls(line);
    ls >> r.road >> c >> r.s >> c >> r.lane >> c >> r.x >> c >> r.y >> c >> r.z >> c >> r.heading;
    REQUIRE(!ls.fail());
    rows.push_back(r);
  }
  return rows;
}

struct Worst {
  double reference_m = 0;  // reference line points, 3D
  double lane_m = 0;       // lane centres on the surface, 3D
  double heading_rad = 0;
  size_t points = 0;
};

// platoon's reference line and lane centres against the reference script's.
Worst CompareWithReference(const RoadNetwork& net, const std::string& fixture) {
  Worst w;
  for (const ReferenceRow& r : Reference(fixture)) {
    const Road* road = net.Find(r.road);
    REQUIRE(road != nullptr);
    const Vec3 want(r.x, r.y, r.z);
    if (r.lane == 0) {
      const RoadPoint p = road->Evaluate(r.s);
      w.reference_m = std::max(w.reference_m, (p.position_m - want).norm());
      w.heading_rad = std::max(w.heading_rad, std::abs(std::remainder(p.heading_rad - r.heading, 2 * std::numbers::pi)));
    } else {
      REQUIRE(r.lane <= road->LanesLeftAt(r.s));
      REQUIRE(-r.lane <= road->LanesRightAt(r.s));
      const Vec3 got = road->SurfacePoint(r.s, road->LaneCenterOffsetAt(r.s, r.lane));
      w.lane_m = std::max(w.lane_m, (got - want).norm());
    }
    ++w.points;
  }
  return w;
}

void CheckAgainstReference(const RoadNetwork& net, const std::string& fixture) {
  const Worst w = CompareWithReference(net, fixture);
  MESSAGE(fixture << ": " << w.points << " reference points; worst reference line " << w.reference_m
                  << " m, worst lane centre " << w.lane_m << " m, worst heading " << w.heading_rad << " rad");
  CHECK(w.points > 20);
  CHECK(w.reference_m < 1e-3);
  CHECK(w.lane_m < 1e-3);
  CHECK(w.heading_rad < 1e-6);
}

OpenDriveMap LoadFixture(const std::string& name) { return LoadOpenDriveMapFile(FixturePath(name)); }

bool Mentions(const std::vector<std::string>& lines, const std::string& what) {
  for (const auto& l : lines)
    if (l.find(what) != std::string::npos) return true;
  return false;
}

std::string ImportError(const std::string& text) {
  try {
    (void)ReadOpenDriveMap(text, "bad.xodr");
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return {};
}

// One straight road whose lane -1 and road body are the caller's.
std::string OneRoad(const std::string& road_attrs, const std::string& body, const std::string& lane_attrs = "type=\"driving\"",
                    const std::string& lane_body = "<width sOffset=\"0\" a=\"3.5\" b=\"0\" c=\"0\" d=\"0\"/>",
                    const std::string& geometry = "<line/>") {
  return "<OpenDRIVE>\n<header revMajor=\"1\" revMinor=\"7\"/>\n<road id=\"1\" length=\"100\" junction=\"-1\" " +
         road_attrs + ">\n" + body + "\n<planView><geometry s=\"0\" x=\"0\" y=\"0\" hdg=\"0\" length=\"100\">" +
         geometry + "</geometry></planView>\n<lanes><laneSection s=\"0\"><center><lane id=\"0\" type=\"none\"/>"
         "</center><right>\n<lane id=\"-1\" " + lane_attrs + ">" + lane_body +
         "</lane></right></laneSection></lanes>\n</road>\n</OpenDRIVE>\n";
}

}  // namespace opendrive_import_detail

using namespace opendrive_import_detail;

TEST_CASE("opendrive import: paramPoly3 and poly3 roads lie on independently integrated points within 1 mm") {
  const OpenDriveMap map = LoadFixture("param_poly3.xodr");
  const RoadNetwork net(map.roads);
  REQUIRE(net.Roads().size() == 4);
  CHECK(net.Find(1)->Def().sections[0].kind == GeometryKind::kParamPoly3);
  CHECK(net.Find(1)->Def().sections[0].p_normalized);
  CHECK_FALSE(net.Find(2)->Def().sections[0].p_normalized);
  CHECK(net.Find(3)->Def().sections[0].kind == GeometryKind::kPoly3);
  // Road 4 starts off its frame's origin: the curve's start is x + R(hdg) (aU, aV), its heading hdg + atan2(bV, bU).
  const RoadPoint p0 = net.Find(4)->Evaluate(0);
  CHECK(p0.position_m.x() == doctest::Approx(-120 + std::cos(0.7) * 1 - std::sin(0.7) * 0.5).epsilon(1e-12));
  CHECK(p0.position_m.y() == doctest::Approx(80 + std::sin(0.7) * 1 + std::cos(0.7) * 0.5).epsilon(1e-12));
  CHECK(p0.heading_rad == doctest::Approx(0.7 + std::atan2(5.0, 30.0)).epsilon(1e-12));
  // The frame written back is the file's.
  CHECK(net.Find(4)->SectionFrame(0).x() == doctest::Approx(-120));
  CHECK(net.Find(4)->SectionFrame(0).z() == doctest::Approx(0.7));
  CheckAgainstReference(net, "param_poly3.xodr");
  // Projection finds the s of a point on a paramPoly3 lane centre.
  const Road& r1 = *net.Find(1);
  const Vec3 q = r1.LaneCenter(31.0, -1);
  const RoadCoord c = net.Project(q);
  CHECK(c.road_id == 1);
  CHECK(c.s_m == doctest::Approx(31.0).epsilon(1e-6));
  CHECK(c.lane == -1);
}

TEST_CASE("opendrive import: lane types are kept and only driving lanes are for traffic") {
  const OpenDriveMap map = LoadFixture("lane_types.xodr");
  const RoadNetwork net(map.roads);
  const Road& r = net.Roads().at(0);
  REQUIRE(r.HasLaneProfile());
  CHECK(r.LanesLeftAt(50) == 4);
  CHECK(r.LanesRightAt(50) == 7);
  const std::vector<std::pair<int, LaneType>> types = {
      {4, LaneType::kSidewalk}, {3, LaneType::kRestricted}, {2, LaneType::kDriving}, {1, LaneType::kMedian},
      {-1, LaneType::kDriving}, {-2, LaneType::kDriving}, {-3, LaneType::kShoulder}, {-4, LaneType::kBorder},
      {-5, LaneType::kParking}, {-6, LaneType::kBiking}, {-7, LaneType::kWalking}};
  int driving = 0;
  for (const auto& [id, type] : types) {
    CAPTURE(id);
    CHECK(r.LaneTypeAt(50, id) == type);
    driving += r.IsDrivingLane(50, id) ? 1 : 0;
  }
  CHECK(driving == 3);
  // Widths add up outwards: lane -7's outer edge is the sum of the seven right widths.
  CHECK(r.BoundaryOffsetAt(10, -7) == doctest::Approx(-(3.5 + 3.25 + 1.0 + 0.5 + 2.5 + 1.5 + 2.0)));
  CHECK(r.LaneCenterOffsetAt(10, 2) == doctest::Approx(1.0 + 1.75));
  // Road marks keep their OpenDRIVE type, colour, width and line definitions; the drawn marking follows the type.
  const RoadMarkDef* centre = r.BoundaryMarkAt(10, 0);
  REQUIRE(centre);
  CHECK(centre->type == "solid solid");
  CHECK(centre->color == MarkColor::kYellow);
  CHECK(centre->width_m == doctest::Approx(0.35));
  CHECK(centre->has_lines);
  CHECK(r.BoundaryMarking(0) == Marking::kDouble);
  CHECK(r.BoundaryMarkAt(10, -1)->has_lines);
  CHECK(r.BoundaryMarking(-1) == Marking::kDashed);
  CHECK(r.BoundaryMarkAt(10, -6)->color == MarkColor::kBlue);
  CHECK(r.BoundaryMarkAt(10, 1)->type == "curb");
  CHECK(r.BoundaryMarking(1) == Marking::kNone);
  CHECK(r.BoundaryMarkAt(10, -5) == nullptr);
  // Speed from the road type; the lane speed is kept per lane.
  CHECK(r.Def().speed_limit_mps == doctest::Approx(120 / 3.6));
  CHECK(r.Def().lane_sections[0].right[0].speed_mps == doctest::Approx(90 / 3.6));
  // Projection names the lane of every type.
  const Vec3 on_sidewalk = r.SurfacePoint(60, r.LaneCenterOffsetAt(60, 4));
  CHECK(net.Project(on_sidewalk).lane == 4);
  // What platoon does not use is accepted and named once.
  CHECK(Mentions(map.ignored, "<surface> accepted and ignored (1 in the file"));
  CHECK(Mentions(map.ignored, "<material> accepted and ignored"));
  CHECK(Mentions(map.read, "lane type sidewalk x 1"));
  CHECK(Mentions(map.read, "roadMark <type>"));
  CheckAgainstReference(net, "lane_types.xodr");
}

TEST_CASE("opendrive import: laneOffset width polynomials a border and two lane sections follow s") {
  const OpenDriveMap map = LoadFixture("lane_profile.xodr");
  const RoadNetwork net(map.roads);
  const Road& r = net.Roads().at(0);
  REQUIRE(r.Def().lane_sections.size() == 2);
  CHECK(r.LanesRightAt(79.9) == 2);
  CHECK(r.LanesRightAt(80) == 3);
  CHECK(r.LaneSectionAt(120) == 1);
  // laneOffset: 0.5 + 0.0002 s^2 - 1e-6 s^3 before s = 100, 0.5 - 0.01 (s - 100) after.
  CHECK(r.LaneOffsetAt(50) == doctest::Approx(0.5 + 0.0002 * 2500 - 1e-6 * 125000));
  CHECK(r.LaneOffsetAt(120) == doctest::Approx(0.5 - 0.2));
  // Lane -1 widens from s = 40: 3.5 + 0.02 ds - 0.0002 ds^2.
  CHECK(r.LaneWidthAt(60, -1) == doctest::Approx(3.5 + 0.02 * 20 - 0.0002 * 400));
  // Lane -2 is a border at t = -6 - 0.005 s in the first section.
  CHECK(r.BoundaryOffsetAt(30, -2) == doctest::Approx(-6 - 0.005 * 30));
  // The opening lane -2 of the second section has width 0 at its start and 3.12 m from its second record.
  CHECK(r.LaneWidthAt(80, -2) == doctest::Approx(0).scale(1));
  CHECK(r.LaneWidthAt(140, -2) == doctest::Approx(3.12));
  CHECK(r.BoundaryMarkAt(90, -1)->type == "broken");
  CHECK(r.BoundaryMarkAt(115, -1)->type == "solid");
  // Two road types: the first one's speed is the road's.
  CHECK(r.Def().speed_limit_mps == doctest::Approx(50 / 3.6));
  CHECK(Mentions(map.read, "road type x 2"));
  CheckAgainstReference(net, "lane_profile.xodr");
}

TEST_CASE("opendrive import: curved elevation and superelevation give the surface height and roll") {
  const OpenDriveMap map = LoadFixture("elevation.xodr");
  const RoadNetwork net(map.roads);
  const Road& r = net.Roads().at(0);
  CHECK(r.Height(30) == doctest::Approx(5 + 0.02 * 30 + 0.0004 * 900 - 3e-6 * 27000));
  CHECK(r.Height(100) == doctest::Approx(7.6 + 0.02 * 40 - 0.0002 * 1600 + 1e-6 * 64000));
  CHECK(r.Slope(30) == doctest::Approx(0.02 + 2 * 0.0004 * 30 - 3 * 3e-6 * 900));
  CHECK(r.Roll(20) == doctest::Approx(0.02));
  CHECK(r.Roll(80) == doctest::Approx(0.05 - 1e-5 * 900));
  // A point 3 m left of the reference line at s = 80 lies 3 tan(roll) above it.
  CHECK(r.SurfacePoint(80, 3).z() - r.Height(80) == doctest::Approx(3 * std::tan(0.05 - 1e-5 * 900)));
  CHECK(Mentions(map.ignored, "<shape> accepted and ignored"));
  CheckAgainstReference(net, "elevation.xodr");
}

TEST_CASE("opendrive import: objects and signals are kept with their boxes outlines and values") {
  const OpenDriveMap map = LoadFixture("objects_signals.xodr");
  REQUIRE(map.roads.size() == 1);
  const RoadDef& d = map.roads[0];
  REQUIRE(d.objects.size() == 4);
  CHECK(d.objects[0].type == "building");
  CHECK(d.objects[0].length_m == 20);
  CHECK(d.objects[0].width_m == 8);
  CHECK(d.objects[0].height_m == 9);
  CHECK(d.objects[0].heading_rad == doctest::Approx(0.1));
  CHECK(d.objects[0].s_m == 30);
  CHECK(d.objects[0].t_m == -12);
  CHECK(d.objects[1].radius_m == doctest::Approx(0.15));
  REQUIRE(d.objects[2].outline.size() == 4);
  CHECK_FALSE(d.objects[2].outline_in_road_frame);
  CHECK(d.objects[2].outline[1].u_m == 5);
  CHECK(d.objects[2].outline[1].height_m == doctest::Approx(0.15));
  REQUIRE(d.objects[3].outline.size() == 2);
  CHECK(d.objects[3].outline_in_road_frame);
  CHECK(d.objects[3].outline[1].u_m == 180);
  CHECK(d.objects[3].outline[1].v_m == doctest::Approx(-4.2));
  REQUIRE(d.signals.size() == 3);
  CHECK(d.signals[0].country == "DE");
  CHECK(d.signals[0].type == "274");
  CHECK(d.signals[0].has_value);
  CHECK(d.signals[0].value == 50);
  CHECK(d.signals[0].unit == "km/h");
  CHECK(d.signals[0].orientation == "+");
  CHECK(d.signals[0].z_offset_m == doctest::Approx(1.8));
  CHECK(d.signals[1].dynamic);
  CHECK_FALSE(d.signals[1].has_value);
  CHECK(d.signals[2].text == "STOP");
  CHECK(d.signals[2].orientation == "-");
  CHECK(d.signals[2].h_offset_rad == doctest::Approx(0.05));
  for (const char* ignored : {"<repeat>", "<objectReference>", "<bridge>", "<signalReference>", "<validity>"})
    CHECK_MESSAGE(Mentions(map.ignored, ignored), ignored);
  // The export writes them back.
  const OpenDriveMap again = ReadOpenDriveMap(ExportOpenDrive(RoadNetwork(map.roads)), "again.xodr");
  REQUIRE(again.roads.size() == 1);
  CHECK(again.roads[0].objects.size() == 4);
  CHECK(again.roads[0].objects[3].outline.size() == 2);
  CHECK(again.roads[0].signals.size() == 3);
  CHECK(again.roads[0].signals[2].text == "STOP");
}

TEST_CASE("opendrive import: a T junction imports with its connecting roads and links of either contact point") {
  const OpenDriveMap map = LoadFixture("junction.xodr");
  REQUIRE(map.junctions.size() == 1);
  const JunctionDef& j = map.junctions[0];
  CHECK(j.id == 100);
  REQUIRE(j.connections.size() == 3);
  CHECK(j.connections[2].incoming_road_id == 3);
  CHECK(j.connections[2].connecting_road_id == 12);
  REQUIRE(j.connections[2].lane_links.size() == 1);
  CHECK(j.connections[2].lane_links[0] == std::pair<int, int>{1, -1});
  const RoadNetwork net(map.roads);
  CHECK(net.Find(11)->Def().junction_id == 100);
  CHECK(net.Find(1)->Def().successor_junction_id == 100);
  CHECK(net.Find(1)->Def().predecessor_contact == ContactPoint::kStart);
  CHECK(net.Find(3)->Def().successor_contact == ContactPoint::kEnd);
  // Every link joins: connecting roads to their roads, start to start and end to end included.
  const auto gaps = net.CheckLinks();
  CHECK(gaps.size() == 5);  // roads 3 and 7 (end to end), 10, 11, 12
  for (const LinkGap& g : gaps) {
    CAPTURE(g.road_id);
    CHECK(g.gap_m < 1e-9);
    CHECK(std::abs(g.heading_error_rad) < 1e-9);
  }
  CheckAgainstReference(net, "junction.xodr");
  // The junction's <priority high="1" low="3">: read (road 3 gives way to road 1), no longer ignored.
  REQUIRE(map.junctions.size() == 1);
  CHECK(map.junctions[0].priorities == std::vector<std::pair<int, int>>{{1, 3}});
  CHECK(Mentions(map.read, "junction priority"));
  CHECK_FALSE(Mentions(map.ignored, "<priority>"));
}

TEST_CASE("opendrive import: a file combining many elements imports and reports what it read and ignored") {
  const OpenDriveMap map = LoadFixture("combined.xodr");
  const RoadNetwork net(map.roads);
  CHECK(net.Roads().size() == 8);
  for (const char* read : {"paramPoly3 x 1", "spiral x 1", "laneSection x", "laneOffset x 1", "lane border x 1",
                           "junction x 1", "object x 4", "signal x 3", "superelevation x 1", "elevation x 1"})
    CHECK_MESSAGE(Mentions(map.read, read), read);
  for (const char* ignored : {"<geoReference>", "<offset>", "<userData>", "<surface>", "<height>", "<controller>"})
    CHECK_MESSAGE(Mentions(map.ignored, ignored), ignored);
  for (const auto& line : map.read) MESSAGE("read: " << line);
  for (const auto& line : map.ignored) MESSAGE(line);
  CheckAgainstReference(net, "combined.xodr");
  // Export and import again: the same lane centres everywhere.
  const RoadNetwork again(ReadOpenDriveMap(ExportOpenDrive(net), "again.xodr").roads);
  double worst = 0;
  for (const Road& r : net.Roads()) {
    const Road& q = *again.Find(r.Id());
    for (double s = 0; s <= r.Length(); s += 2.5)
      for (int lane = -r.LanesRightAt(s); lane <= r.LanesLeftAt(s); ++lane) {
        if (lane == 0) continue;
        worst = std::max(worst, (r.SurfacePoint(s, r.LaneCenterOffsetAt(s, lane)) -
                                 q.SurfacePoint(s, q.LaneCenterOffsetAt(s, lane))).norm());
      }
  }
  MESSAGE("export round trip: worst lane centre " << worst << " m");
  CHECK(worst < 1e-9);
}

TEST_CASE("opendrive import: what stays unsupported or is malformed fails with file:line") {
  CHECK(ImportError(OneRoad("", "")).empty());
  CHECK(ImportError(OneRoad("rule=\"LHT\"", "")).find("bad.xodr:3: road.rule \"LHT\" is not supported") == 0);
  CHECK(ImportError(OneRoad("", "", "type=\"drivng\"")).find("bad.xodr:7: lane type \"drivng\" is not an OpenDRIVE "
                                                             "lane type") == 0);
  CHECK(ImportError(OneRoad("", "", "type=\"driving\"", "")).find("bad.xodr:7: lane -1 needs a <width> or a "
                                                                   "<border>") == 0);
  CHECK(ImportError(OneRoad("", "", "type=\"driving\"",
                            "<width sOffset=\"0\" a=\"3\"/><roadMark sOffset=\"0\" type=\"dotted\"/>"))
            .find("bad.xodr:7: roadMark type \"dotted\" is not an OpenDRIVE road mark type") == 0);
  CHECK(ImportError(OneRoad("", "", "type=\"driving\"",
                            "<width sOffset=\"0\" a=\"3\"/><roadMark sOffset=\"0\" type=\"solid\" color=\"pink\"/>"))
            .find("bad.xodr:7: roadMark.color \"pink\" is not an OpenDRIVE colour") == 0);
  CHECK(ImportError(OneRoad("", "", "type=\"driving\"", "<width sOffset=\"0\" a=\"3\"/>",
                            "<paramPoly3 aU=\"0\" bU=\"1\" cU=\"0\" dU=\"0\" aV=\"0\" bV=\"0\" cV=\"0\" dV=\"0\" "
                            "pRange=\"percent\"/>"))
            .find("bad.xodr:5: paramPoly3.pRange: expected arcLength or normalized, got \"percent\"") == 0);
  CHECK(ImportError(OneRoad("", "", "type=\"driving\"", "<width sOffset=\"0\" a=\"3\"/>",
                            "<paramPoly3 aU=\"0\" bU=\"0\" cU=\"1\" dU=\"0\" aV=\"0\" bV=\"0\" cV=\"0\" dV=\"0\"/>"))
            .find("bad.xodr:5: paramPoly3: bU and bV are both 0") == 0);
  CHECK(ImportError(OneRoad("", "", "type=\"driving\"", "<width sOffset=\"0\" a=\"3\"/>",
                            "<poly3 a=\"0\" b=\"0\" c=\"0\" d=\"1e5\"/>"))
            .find("bad.xodr:5: poly3.d: expected a number in [-10000, 10000], got 1e5") == 0);
  CHECK(ImportError(OneRoad("", "", "type=\"driving\"", "<width sOffset=\"0\" a=\"3\"/>",
                            "<paramPoly3 aU=\"0\" bU=\"1\" cU=\"0\" dU=\"1e6\" aV=\"0\" bV=\"0\" cV=\"0\" "
                            "dV=\"0\" pRange=\"arcLength\"/>"))
            .find("bad.xodr:5: geometry reaches beyond 1e8 m from the origin") == 0);
  CHECK(ImportError(OneRoad("", "<link><successor elementType=\"road\" elementId=\"1\" contactPoint=\"middle\"/></link>"))
            .find("bad.xodr:4: successor.contactPoint: expected start or end, got \"middle\"") == 0);
  CHECK(ImportError(OneRoad("", "<link><successor elementType=\"junction\" elementId=\"9\"/></link>"))
            .find("bad.xodr:4: successor.elementId: no junction with id 9 in this file") == 0);
  CHECK(ImportError(OneRoad("", "<elevationProfile><elevation s=\"50\" a=\"1\"/><elevation s=\"10\" a=\"1\"/>"
                                "</elevationProfile>"))
            .find("bad.xodr:4: elevation.s 10 comes before the previous record's 50") == 0);
  CHECK(ImportError(OneRoad("", "<lateralProfile><superelevation s=\"0\" a=\"2\"/></lateralProfile>"))
            .find("bad.xodr:4: superelevation.a: expected a number in [-1.5, 1.5], got 2") == 0);
  CHECK(ImportError(OneRoad("", "<objects><object id=\"1\" s=\"5\"/></objects>"))
            .find("bad.xodr:4: <object> needs attribute t") == 0);
  CHECK(ImportError(OneRoad("", "<signals><signal id=\"1\" s=\"x\" t=\"0\"/></signals>"))
            .find("bad.xodr:4: signal.s: expected a number in [0, 1e+300], got \"x\"") == 0);
  CHECK(ImportError(OneRoad("", "<crossSection/>")).find("bad.xodr:4: <crossSection> is not supported here") == 0);
  std::string junction = OneRoad("", "");
  junction.replace(junction.find("</OpenDRIVE>"), 12, "<junction id=\"3\" type=\"virtual\"/>\n</OpenDRIVE>");
  CHECK(ImportError(junction).find("bad.xodr:9: junction.type \"virtual\" is not supported (supported: default)") == 0);
}

TEST_CASE("opendrive import: netconvert reads the fixtures and its lane shapes lie within 5 cm of platoon's") {
  if (std::system("command -v netconvert > /dev/null 2>&1") != 0) {
    WARN_MESSAGE(false, "skipped: netconvert not found (Debian package sumo; scripts/install-deps.sh installs it)");
    return;
  }
  // netconvert (SUMO 1.15) gives each lane one constant width per edge, so lanes whose width changes along s
  // (lane_profile.xodr, combined.xodr) are not compared: their difference is the width change itself.
  // And the junction network of configs/junctions.toml (three junctions, turn lanes, laneOffset in the right turns).
  for (const char* fixture :
       {"param_poly3.xodr", "lane_types.xodr", "elevation.xodr", "junction.xodr", "../../../configs/roads/junctions.xodr"}) {
    const std::string name = std::filesystem::path(fixture).filename().string();
    CAPTURE(name);
    const RoadNetwork net(LoadFixture(fixture).roads);
    const std::string out = TempFile(name + ".net.xml"), log = TempFile(name + ".log");
    const std::string cmd = "netconvert --xml-validation never --opendrive-files '" + FixturePath(fixture) +
                            "' -o '" + out + "' --offset.disable-normalization --opendrive.curve-resolution 0.25 "
                            "--precision 4 --output.original-names --no-internal-links --no-turnarounds "
                            "--opendrive.import-all-lanes --opendrive.lane-shapes > '" + log + "' 2>&1";
    const int rc = std::system(cmd.c_str());
    const std::string log_text = Slurp(log);
    CAPTURE(log_text);
    REQUIRE(rc == 0);
    const xml::Element root = xml::Parse(Slurp(out), out);
    std::filesystem::remove(out);
    std::filesystem::remove(log);
    double worst = 0;
    std::string worst_at;
    double worst_centre = 0;
    int points = 0, lanes = 0, centres = 0;
    for (const xml::Element& e : root.children) {
      if (e.name != "edge" || (e.Find("function") && e.Find("function")->value == "internal")) continue;
      for (const xml::Element& lane : e.children) {
        if (lane.name != "lane") continue;
        std::string orig;
        for (const xml::Element& p : lane.children)
          if (p.name == "param" && p.Find("key") && p.Find("key")->value == "origId") orig = p.Find("value")->value;
        const size_t us = orig.rfind('_');
        REQUIRE(us != std::string::npos);
        const int road_id = std::stoi(orig.substr(0, us)), lane_id = std::stoi(orig.substr(us + 1));
        const Road* road = net.Find(road_id);
        REQUIRE(road != nullptr);
        ++lanes;
        std::istringstream shape(lane.Find("shape")->value);
        std::string point;
        std::vector<std::pair<double, double>> line;
        double s_lo = 1e300, s_hi = -1e300;
        while (shape >> point) {
          double x = 0, y = 0;
          REQUIRE(std::sscanf(point.c_str(), "%lf,%lf", &x, &y) == 2);
          line.emplace_back(x, y);
          const RoadCoord c = road->Project(Vec3(x, y, 0));
          // A lane section's first point may belong to the section before (SUMO splits the edge there).
          double best = 1e300;
          for (const double ds : {0.0, -1e-6, 1e-6}) {
            const double s = std::clamp(c.s_m + ds, 0.0, road->Length());
            if (lane_id > road->LanesLeftAt(s) || -lane_id > road->LanesRightAt(s)) continue;
            best = std::min(best, std::abs(c.t_m - road->LaneCenterOffsetAt(s, lane_id)));
          }
          REQUIRE(best < 1e300);
          s_lo = std::min(s_lo, c.s_m);
          s_hi = std::max(s_hi, c.s_m);
          if (best > worst) worst_at = orig + " s=" + std::to_string(c.s_m);
          worst = std::max(worst, best);
          ++points;
        }
        // platoon's lane centre every 1 m along the stretch SUMO covers lies on SUMO's polyline.
        for (double s = s_lo; s <= s_hi; s += 1.0) {
          const Vec3 p = road->PointAt(s, road->LaneCenterOffsetAt(s, lane_id));
          double d2 = 1e300;
          for (size_t i = 0; i + 1 < line.size(); ++i) {
            const double ax = line[i].first, ay = line[i].second;
            const double bx = line[i + 1].first - ax, by = line[i + 1].second - ay;
            const double len2 = bx * bx + by * by;
            const double u = len2 > 0 ? std::clamp(((p.x() - ax) * bx + (p.y() - ay) * by) / len2, 0.0, 1.0) : 0.0;
            d2 = std::min(d2, std::pow(ax + u * bx - p.x(), 2) + std::pow(ay + u * by - p.y(), 2));
          }
          worst_centre = std::max(worst_centre, std::sqrt(d2));
          ++centres;
        }
      }
    }
    MESSAGE(name << ": " << lanes << " SUMO lanes, " << points << " shape points; worst " << worst
                    << " m from platoon's lane centre (at lane " << worst_at << "); platoon's centre every 1 m ("
                    << centres << " points) at most " << worst_centre << " m from SUMO's lane");
    CHECK(points >= 2 * lanes);
    CHECK(centres > 100);
    CHECK(worst < 0.05);
    CHECK(worst_centre < 0.05);
  }
}
