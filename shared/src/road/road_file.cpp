#include "platoon/road/road_file.hpp"

#include "platoon/road/opendrive.hpp"

#include <map>
#include <numbers>
#include <sstream>

namespace platoon::road {
namespace {

constexpr double kMaxCurvature1pm = 10.0;  // radius 0.1 m: anything tighter is a typo

SectionDef ReadSection(const config::Table& t) {
  SectionDef s;
  if (!t.Has("length_m")) t.Fail("length_m", "is required (section length in m, > 0)");
  s.length_m = t.GetDouble("length_m", 0.0, 1e-3, 1e5);
  s.curvature_start_1pm = t.GetDouble("curvature_start_1pm", 0.0, -kMaxCurvature1pm, kMaxCurvature1pm);
  // A section without an end curvature keeps its start curvature: a line or an arc.
  s.curvature_end_1pm = t.GetDouble("curvature_end_1pm", s.curvature_start_1pm, -kMaxCurvature1pm, kMaxCurvature1pm);
  t.RejectUnknownKeys();
  return s;
}

std::vector<Marking> ReadMarkings(const config::Table& t, int lanes_left, int lanes_right) {
  const std::string text = t.GetString("markings", "");
  if (text.empty()) return DefaultMarkings(lanes_left, lanes_right);
  std::vector<Marking> out;
  std::istringstream is(text);
  for (std::string word; is >> word;) {
    Marking m;
    if (!ParseMarking(word, &m))
      t.Fail("markings", "unknown marking \"" + word + "\" (expected none, solid, dashed, double or botts_dots)");
    out.push_back(m);
  }
  const size_t want = static_cast<size_t>(lanes_left + lanes_right + 1);
  if (out.size() != want)
    t.Fail("markings", "expected " + std::to_string(want) + " markings (lanes_left + lanes_right + 1, left edge to "
                       "right edge), got " + std::to_string(out.size()));
  return out;
}

RoadDef ReadRoad(const config::Table& t) {
  RoadDef d = DefaultRoadDef();
  if (!t.Has("id")) t.Fail("id", "is required (an integer road id >= 0)");
  d.id = static_cast<int>(t.GetInt("id", 0, 0, 1000000000));
  d.start_x_m = t.GetDouble("start_x_m", 0.0);
  d.start_y_m = t.GetDouble("start_y_m", 0.0);
  d.start_heading_rad = t.GetDouble("start_heading_deg", 0.0, -3600, 3600) * std::numbers::pi / 180.0;
  d.start_height_m = t.GetDouble("start_height_m", 0.0, -1e4, 1e4);
  d.grade = t.GetDouble("grade", 0.0, -1.0, 1.0);
  d.speed_limit_mps = t.GetDouble("speed_limit_kmh", 0.0, 0.0, 500.0) / 3.6;
  const int lanes_left = static_cast<int>(t.GetInt("lanes_left", 1, 0, 16));
  const int lanes_right = static_cast<int>(t.GetInt("lanes_right", 1, 0, 16));
  if (lanes_left + lanes_right == 0) t.Fail("lanes_right", "a road needs at least one lane (lanes_left + lanes_right > 0)");
  const double width = t.GetDouble("lane_width_m", 3.5, 0.5, 10.0);
  d.lane_widths_left_m.assign(static_cast<size_t>(lanes_left), t.GetDouble("lane_width_left_m", width, 0.5, 10.0));
  d.lane_widths_right_m.assign(static_cast<size_t>(lanes_right), t.GetDouble("lane_width_right_m", width, 0.5, 10.0));
  d.markings = ReadMarkings(t, lanes_left, lanes_right);
  d.successor_id = static_cast<int>(t.GetInt("successor", -1, -1, 1000000000));
  d.predecessor_id = static_cast<int>(t.GetInt("predecessor", -1, -1, 1000000000));
  d.sections.clear();
  for (const auto& s : t.TableArray("section")) d.sections.push_back(ReadSection(s));
  if (d.sections.empty()) t.Fail("section", "at least one [[road.section]] is required");
  t.RejectUnknownKeys();
  // Anything the per-key ranges let through but the core rejects still names the road.
  if (const std::string e = ValidateRoadDef(d); !e.empty()) t.Fail("section", e);
  return d;
}

}  // namespace

bool ParseMarking(const std::string& name, Marking* out) {
  for (Marking m : {Marking::kNone, Marking::kSolid, Marking::kDashed, Marking::kDouble, Marking::kBottsDots})
    if (name == MarkingName(m)) {
      *out = m;
      return true;
    }
  return false;
}

std::vector<RoadDef> ReadRoadDefs(const config::Table& root) {
  const auto tables = root.TableArray("road");
  if (tables.empty()) root.Fail("road", "a road file needs at least one [[road]]");
  std::vector<RoadDef> defs;
  std::map<int, size_t> index;
  for (const auto& t : tables) {
    RoadDef d = ReadRoad(t);
    if (!index.emplace(d.id, defs.size()).second) t.Fail("id", "duplicate road id " + std::to_string(d.id));
    defs.push_back(std::move(d));
  }
  // Links must name roads of this file.
  for (size_t i = 0; i < defs.size(); ++i) {
    if (defs[i].successor_id >= 0 && !index.count(defs[i].successor_id))
      tables[i].Fail("successor", "no road with id " + std::to_string(defs[i].successor_id) + " in this file");
    if (defs[i].predecessor_id >= 0 && !index.count(defs[i].predecessor_id))
      tables[i].Fail("predecessor", "no road with id " + std::to_string(defs[i].predecessor_id) + " in this file");
  }
  root.RejectUnknownKeys();
  return defs;
}

RoadNetwork LoadRoadFile(const std::string& path) {
  // An .xodr file is OpenDRIVE (opendrive.hpp); anything else is the TOML road format.
  if (IsOpenDrivePath(path)) return LoadOpenDriveFile(path);
  return RoadNetwork(ReadRoadDefs(config::Table::ParseFile(path)));
}

RoadNetwork LoadRoadText(const std::string& text, const std::string& source_name) {
  return RoadNetwork(ReadRoadDefs(config::Table::ParseText(text, source_name)));
}

}  // namespace platoon::road
