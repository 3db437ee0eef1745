#include "platoon/road/opendrive.hpp"

#include "platoon/config/table.hpp"
#include "xml_reader.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <numbers>
#include <optional>
#include <set>
#include <sstream>

namespace platoon::road {
namespace {

using xml::Element;

// ---------------------------------------------------------------------------------------------------------------
// Export

// Shortest text that reads back as the same double.
std::string Num(double v) {
  if (v == 0) return "0";  // also folds -0
  char buf[40];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

// OpenDRIVE roadMark type of a platoon marking.
const char* MarkType(Marking m) {
  switch (m) {
    case Marking::kNone: return "none";
    case Marking::kSolid: return "solid";
    case Marking::kDashed: return "broken";
    case Marking::kDouble: return "solid solid";
    case Marking::kBottsDots: return "botts dots";
  }
  return "none";
}

constexpr const char* kSupportedMarkTypes = "none, solid, broken, solid solid, botts dots";

bool MarkingOfType(const std::string& type, Marking* out) {
  for (Marking m : {Marking::kNone, Marking::kSolid, Marking::kDashed, Marking::kDouble, Marking::kBottsDots})
    if (type == MarkType(m)) {
      *out = m;
      return true;
    }
  return false;
}

void WriteLane(std::ostringstream& os, const Road& road, const RoadNetwork& net, int id) {
  const RoadDef& d = road.Def();
  auto has_lane = [&](int road_id, int lane) {
    const Road* r = net.Find(road_id);
    return r && (lane > 0 ? lane <= r->LanesLeft() : -lane <= r->LanesRight());
  };
  os << "          <lane id=\"" << id << "\" type=\"" << (id == 0 ? "none" : "driving") << "\" level=\"false\">\n";
  if (id != 0) {
    const bool pred = d.predecessor_id >= 0 && has_lane(d.predecessor_id, id);
    const bool succ = d.successor_id >= 0 && has_lane(d.successor_id, id);
    if (pred || succ) {
      os << "            <link>\n";
      if (pred) os << "              <predecessor id=\"" << id << "\"/>\n";
      if (succ) os << "              <successor id=\"" << id << "\"/>\n";
      os << "            </link>\n";
    }
    os << "            <width sOffset=\"0\" a=\"" << Num(road.LaneWidth(id)) << "\" b=\"0\" c=\"0\" d=\"0\"/>\n";
  }
  const Marking m = road.BoundaryMarking(id);
  os << "            <roadMark sOffset=\"0\" type=\"" << MarkType(m) << "\" weight=\"standard\" color=\"standard\"";
  if (m != Marking::kNone) os << " width=\"0.12\"";
  os << " laneChange=\"" << (m == Marking::kDashed ? "both" : m == Marking::kNone ? "both" : "none") << "\"/>\n";
  // The speed limit again per lane: SUMO's netconvert takes lane speeds, not the road type's.
  if (id != 0 && d.speed_limit_mps > 0)
    os << "            <speed sOffset=\"0\" max=\"" << Num(d.speed_limit_mps) << "\" unit=\"m/s\"/>\n";
  os << "          </lane>\n";
}

// ---------------------------------------------------------------------------------------------------------------
// Import

class Importer {
 public:
  explicit Importer(const std::string& source) : source_(source) {}

  std::vector<RoadDef> Read(const std::string& text) {
    Element root;
    try {
      root = xml::Parse(text, source_);
    } catch (const xml::XmlError& e) {
      throw config::ConfigError(e.what());
    }
    if (root.name != "OpenDRIVE")
      Fail(root.line, "the root element is <" + root.name + ">, expected <OpenDRIVE>");
    Attributes(root, {}, {"xmlns:xsi", "xsi:noNamespaceSchemaLocation"});
    NoText(root);
    bool header = false;
    std::vector<RoadDef> defs;
    std::vector<int> road_lines;
    for (const Element& c : root.children) {
      if (c.name == "userData") continue;
      if (c.name == "header") {
        if (header) Fail(c.line, "a second <header>");
        if (!defs.empty()) Fail(c.line, "<header> must come before the roads");
        header = true;
        Header(c);
      } else if (c.name == "road") {
        if (!header) Fail(c.line, "<road> before <header> (an OpenDRIVE file starts with its <header>)");
        defs.push_back(RoadAt(c));
        road_lines.push_back(c.line);
      } else {
        Unsupported(c, "header, road, userData");
      }
    }
    if (!header) Fail(root.line, "<OpenDRIVE> has no <header>");
    if (defs.empty()) Fail(root.line, "<OpenDRIVE> has no <road>");
    std::map<int, size_t> index;
    for (size_t i = 0; i < defs.size(); ++i)
      if (!index.emplace(defs[i].id, i).second)
        Fail(road_lines[i], "road.id: duplicate road id " + std::to_string(defs[i].id));
    for (size_t i = 0; i < defs.size(); ++i) {
      const auto& lk = links_[i];
      if (defs[i].predecessor_id >= 0 && !index.count(defs[i].predecessor_id))
        Fail(lk.predecessor_line,
             "predecessor.elementId: no road with id " + std::to_string(defs[i].predecessor_id) + " in this file");
      if (defs[i].successor_id >= 0 && !index.count(defs[i].successor_id))
        Fail(lk.successor_line,
             "successor.elementId: no road with id " + std::to_string(defs[i].successor_id) + " in this file");
    }
    return defs;
  }

 private:
  struct LinkLines {
    int predecessor_line = 0;
    int successor_line = 0;
  };

  [[noreturn]] void Fail(int line, const std::string& what) const {
    throw config::ConfigError(source_ + ":" + std::to_string(line) + ": " + what);
  }

  [[noreturn]] void Unsupported(const Element& e, const std::string& supported) const {
    Fail(e.line, "<" + e.name + "> is not supported here (supported: " + supported + ")");
  }

  // Every attribute must be one of `read` (used) or `ignored` (accepted, no effect in platoon).
  void Attributes(const Element& e, std::initializer_list<const char*> read,
                  std::initializer_list<const char*> ignored = {}) const {
    for (const auto& a : e.attributes) {
      bool known = false;
      for (const char* n : read) known = known || a.name == n;
      for (const char* n : ignored) known = known || a.name == n;
      if (known) continue;
      std::string list;
      for (const char* n : read) list += (list.empty() ? "" : ", ") + std::string(n);
      for (const char* n : ignored) list += (list.empty() ? "" : ", ") + std::string(n);
      Fail(a.line, "attribute " + a.name + " of <" + e.name + "> is not supported (supported: " +
                       (list.empty() ? "none" : list) + ")");
    }
  }

  void NoText(const Element& e) const {
    for (char c : e.text)
      if (c != ' ' && c != '\t' && c != '\r' && c != '\n')
        Fail(e.line, "<" + e.name + "> holds text; it holds only elements");
  }

  void NoChildren(const Element& e) const {
    for (const auto& c : e.children)
      if (c.name != "userData") Fail(c.line, "<" + c.name + "> inside <" + e.name + "> is not supported");
    NoText(e);
  }

  const xml::Attribute& Required(const Element& e, const char* name) const {
    const xml::Attribute* a = e.Find(name);
    if (!a) Fail(e.line, "<" + e.name + "> needs attribute " + name);
    return *a;
  }

  static std::string Trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return {};
    const size_t e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
  }

  // A number's text without surrounding space and without the leading '+' XML Schema allows (from_chars does not).
  static std::string NumberText(const std::string& s) {
    std::string v = Trim(s);
    if (v.size() > 1 && v[0] == '+' && v[1] != '-' && v[1] != '+') v.erase(0, 1);
    return v;
  }

  double Number(const Element& e, const xml::Attribute& a, double min = -1e300, double max = 1e300) const {
    const std::string v = NumberText(a.value);
    double out = 0;
    const auto r = std::from_chars(v.data(), v.data() + v.size(), out);
    std::ostringstream range;
    range << "[" << Num(min) << ", " << Num(max) << "]";
    const std::string expect = min <= -1e300 ? "a number" : "a number in " + range.str();
    if (v.empty() || r.ec != std::errc() || r.ptr != v.data() + v.size() || !std::isfinite(out))
      Fail(a.line, e.name + "." + a.name + ": expected " + expect + ", got \"" + a.value + "\"");
    if (out < min || out > max)
      Fail(a.line, e.name + "." + a.name + ": expected " + expect + ", got " + v);
    return out;
  }

  double Number(const Element& e, const char* name, double fallback, double min = -1e300, double max = 1e300) const {
    const xml::Attribute* a = e.Find(name);
    return a ? Number(e, *a, min, max) : fallback;
  }

  double RequiredNumber(const Element& e, const char* name, double min = -1e300, double max = 1e300) const {
    return Number(e, Required(e, name), min, max);
  }

  int Integer(const Element& e, const xml::Attribute& a, int min, int max) const {
    const std::string v = NumberText(a.value);
    long long out = 0;
    const auto r = std::from_chars(v.data(), v.data() + v.size(), out);
    if (v.empty() || r.ec != std::errc() || r.ptr != v.data() + v.size() || out < min || out > max)
      Fail(a.line, e.name + "." + a.name + ": expected an integer in [" + std::to_string(min) + ", " +
                       std::to_string(max) + "], got \"" + a.value + "\"");
    return static_cast<int>(out);
  }

  void Header(const Element& h) {
    Attributes(h, {"revMajor", "revMinor"},
               {"name", "version", "date", "north", "south", "east", "west", "vendor"});
    if (const auto* a = h.Find("revMajor"); a && Integer(h, *a, 0, 1000) != 1)
      Fail(a->line, "header.revMajor: expected 1 (OpenDRIVE 1.x), got " + a->value);
    if (const auto* a = h.Find("revMinor")) (void)Integer(h, *a, 0, 1000);
    for (const Element& c : h.children) {
      if (c.name == "geoReference" || c.name == "userData") continue;  // platoon keeps coordinates as written
      Unsupported(c, "geoReference (kept as text, coordinates are used as written), userData");
    }
  }

  RoadDef RoadAt(const Element& r) {
    Attributes(r, {"id", "length", "junction", "rule"}, {"name"});
    NoText(r);
    RoadDef d = DefaultRoadDef();
    d.id = Integer(r, Required(r, "id"), 0, 1000000000);
    const double length = RequiredNumber(r, "length", 0.0);
    if (const auto* a = r.Find("junction"); a && Trim(a->value) != "-1")
      Fail(a->line, "a road inside a junction (road.junction=\"" + a->value + "\") is not supported (supported: "
                    "junction=\"-1\")");
    if (const auto* a = r.Find("rule"); a && a->value != "RHT")
      Fail(a->line, "road.rule \"" + a->value + "\" is not supported (supported: RHT)");
    LinkLines lines;
    const Element* plan = nullptr;
    const Element* elevation = nullptr;
    const Element* lanes = nullptr;
    bool type = false;
    for (const Element& c : r.children) {
      auto once = [&](const Element*& slot) {
        if (slot) Fail(c.line, "a second <" + c.name + "> in <road>");
        slot = &c;
      };
      if (c.name == "link") {
        RoadLink(c, d, lines);
      } else if (c.name == "type") {
        if (type) Fail(c.line, "a second <type> is not supported (supported: one road type, at s=0)");
        type = true;
        RoadType(c, d);
      } else if (c.name == "planView") {
        once(plan);
      } else if (c.name == "elevationProfile") {
        once(elevation);
      } else if (c.name == "lanes") {
        once(lanes);
      } else if (c.name == "lateralProfile" || c.name == "objects" || c.name == "signals") {
        Attributes(c, {});
        for (const Element& g : c.children)
          if (g.name != "userData")
            Fail(g.line, "<" + g.name + "> in <" + c.name + "> is not supported (supported: an empty <" + c.name +
                             ">)");
        NoText(c);
      } else if (c.name != "userData") {
        Unsupported(c, "link, type, planView, elevationProfile, lateralProfile (empty), lanes, objects (empty), "
                       "signals (empty), userData");
      }
    }
    if (!plan) Fail(r.line, "<road> needs a <planView>");
    if (!lanes) Fail(r.line, "<road> needs <lanes>");
    PlanView(*plan, d);
    double total = 0;
    for (const auto& s : d.sections) total += s.length_m;
    if (std::abs(total - length) > kOpenDriveMaxGapM)
      Fail(Required(r, "length").line, "road.length " + Num(length) + " differs from its geometries' total " +
                                           Num(total) + " by more than " + Num(kOpenDriveMaxGapM) + " m");
    if (elevation) Elevation(*elevation, d);
    Lanes(*lanes, d);
    if (const std::string e = ValidateRoadDef(d); !e.empty()) Fail(r.line, "road " + std::to_string(d.id) + ": " + e);
    Continuity(d);
    links_.push_back(lines);
    return d;
  }

  void RoadLink(const Element& l, RoadDef& d, LinkLines& lines) {
    Attributes(l, {});
    NoText(l);
    for (const Element& c : l.children) {
      if (c.name == "userData") continue;
      const bool pred = c.name == "predecessor";
      if (!pred && c.name != "successor") Unsupported(c, "predecessor, successor");
      Attributes(c, {"elementType", "elementId", "contactPoint"});
      NoChildren(c);
      const auto& type = Required(c, "elementType");
      if (type.value != "road")
        Fail(type.line, c.name + ".elementType \"" + type.value + "\" is not supported (supported: road)");
      const int id = Integer(c, Required(c, "elementId"), 0, 1000000000);
      const char* want = pred ? "end" : "start";
      const auto& cp = Required(c, "contactPoint");
      if (cp.value != want)
        Fail(cp.line, c.name + ".contactPoint \"" + cp.value + "\" is not supported (supported: " + want + ": " +
                          (pred ? "the predecessor's end precedes this road's start"
                                : "the successor's start follows this road's end") + ")");
      (pred ? d.predecessor_id : d.successor_id) = id;
      (pred ? lines.predecessor_line : lines.successor_line) = c.line;
    }
  }

  void RoadType(const Element& t, RoadDef& d) {
    Attributes(t, {"s"}, {"type", "country"});
    NoText(t);
    if (const auto* a = t.Find("s"); a && Number(t, *a) != 0.0)
      Fail(a->line, "type.s: a road type that starts after s=0 is not supported (supported: one type at s=0)");
    for (const Element& c : t.children) {
      if (c.name == "userData") continue;
      if (c.name != "speed") Unsupported(c, "speed");
      Attributes(c, {"max", "unit"});
      NoChildren(c);
      const auto& max = Required(c, "max");
      if (max.value == "no limit" || max.value == "undefined") {
        d.speed_limit_mps = 0;
        continue;
      }
      d.speed_limit_mps = SpeedMps(c, max);
    }
  }

  // A <speed max unit> value in m/s.
  double SpeedMps(const Element& c, const xml::Attribute& max) const {
    double v = Number(c, max, 0.0, 1000.0);
    const std::string unit = c.Find("unit") ? c.Find("unit")->value : "m/s";
    if (unit == "km/h") v /= 3.6;
    else if (unit == "mph") v *= 0.44704;
    else if (unit != "m/s")
      Fail(c.Find("unit")->line, "speed.unit \"" + unit + "\" is not supported (supported: m/s, km/h, mph)");
    return v;
  }

  void PlanView(const Element& p, RoadDef& d) {
    Attributes(p, {});
    NoText(p);
    d.sections.clear();
    geometry_.clear();
    for (const Element& g : p.children) {
      if (g.name == "userData") continue;
      if (g.name != "geometry") Unsupported(g, "geometry");
      Attributes(g, {"s", "x", "y", "hdg", "length"});
      NoText(g);
      Geometry rec;
      rec.line = g.line;
      rec.s = RequiredNumber(g, "s", 0.0);
      rec.x = RequiredNumber(g, "x");
      rec.y = RequiredNumber(g, "y");
      rec.hdg = RequiredNumber(g, "hdg");
      SectionDef sec;
      sec.length_m = RequiredNumber(g, "length", 1e-6, 1e6);
      const Element* shape = nullptr;
      for (const Element& c : g.children) {
        if (c.name == "userData") continue;
        if (shape) Fail(c.line, "<geometry> holds a second shape <" + c.name + "> (one of line, arc, spiral)");
        shape = &c;
      }
      if (!shape) Fail(g.line, "<geometry> needs a shape: <line/>, <arc/> or <spiral/>");
      const Element& c = *shape;
      if (c.name == "line") {
        Attributes(c, {});
      } else if (c.name == "arc") {
        Attributes(c, {"curvature"});
        sec.curvature_start_1pm = sec.curvature_end_1pm = RequiredNumber(c, "curvature", -10.0, 10.0);
      } else if (c.name == "spiral") {
        Attributes(c, {"curvStart", "curvEnd"});
        sec.curvature_start_1pm = RequiredNumber(c, "curvStart", -10.0, 10.0);
        sec.curvature_end_1pm = RequiredNumber(c, "curvEnd", -10.0, 10.0);
      } else {
        Fail(c.line, "<" + c.name + "> geometry is not supported (supported: line, arc, spiral)");
      }
      NoChildren(c);
      if (d.sections.empty()) {
        d.start_x_m = rec.x;
        d.start_y_m = rec.y;
        d.start_heading_rad = rec.hdg;
      }
      d.sections.push_back(sec);
      geometry_.push_back(rec);
    }
    if (d.sections.empty()) Fail(p.line, "<planView> needs at least one <geometry>");
  }

  // The chain platoon builds must pass through every geometry's written start.
  void Continuity(const RoadDef& d) const {
    const Road road(d);
    for (size_t i = 0; i < geometry_.size(); ++i) {
      const Geometry& g = geometry_[i];
      const double s0 = road.SectionStart(i);
      if (std::abs(g.s - s0) > kOpenDriveMaxGapM)
        Fail(g.line, "geometry.s " + Num(g.s) + " is not where the previous geometries end (" + Num(s0) +
                         "); gaps and overlaps in s are not supported (supported: geometries chained end to start)");
      if (i == 0) continue;
      const RoadPoint p = road.Evaluate(s0);
      const double gap = std::hypot(p.position_m.x() - g.x, p.position_m.y() - g.y);
      const double dh = std::remainder(p.heading_rad - g.hdg, 2 * std::numbers::pi);
      if (gap > kOpenDriveMaxGapM || std::abs(dh) > kOpenDriveMaxHeadingJumpRad) {
        std::ostringstream os;
        os << "geometry starts " << gap << " m and " << std::abs(dh)
           << " rad away from where the previous geometry ends (x=" << Num(p.position_m.x())
           << ", y=" << Num(p.position_m.y()) << ", hdg=" << Num(p.heading_rad)
           << "); jumps are not supported (supported: geometries chained within " << Num(kOpenDriveMaxGapM)
           << " m and " << Num(kOpenDriveMaxHeadingJumpRad) << " rad)";
        Fail(g.line, os.str());
      }
    }
  }

  void Elevation(const Element& e, RoadDef& d) const {
    Attributes(e, {});
    NoText(e);
    bool first = true;
    double a0 = 0, b0 = 0;
    for (const Element& c : e.children) {
      if (c.name == "userData") continue;
      if (c.name != "elevation") Unsupported(c, "elevation");
      Attributes(c, {"s", "a", "b", "c", "d"});
      NoChildren(c);
      const double s = RequiredNumber(c, "s", 0.0);
      const double a = RequiredNumber(c, "a", -1e4, 1e4);
      const double b = RequiredNumber(c, "b", -1.0, 1.0);
      const double cc = Number(c, "c", 0.0), dd = Number(c, "d", 0.0);
      if (cc != 0.0 || dd != 0.0)
        Fail(c.line, "a curved elevation (c or d not 0) is not supported (supported: a constant grade, "
                     "elevation a + b*ds with c=0 and d=0)");
      if (first) {
        if (s != 0.0) Fail(c.line, "elevation.s: the first elevation must start at s=0, got " + Num(s));
        a0 = a;
        b0 = b;
        first = false;
      } else if (std::abs(b - b0) > 1e-9 || std::abs(a - (a0 + b0 * s)) > 1e-6) {
        Fail(c.line, "a change of grade is not supported (supported: one constant grade; this record does not "
                     "continue a=" + Num(a0) + ", b=" + Num(b0) + ")");
      }
    }
    d.start_height_m = a0;
    d.grade = b0;
  }

  void Lanes(const Element& l, RoadDef& d) const {
    Attributes(l, {});
    NoText(l);
    const Element* section = nullptr;
    for (const Element& c : l.children) {
      if (c.name == "userData") continue;
      if (c.name == "laneOffset") {
        Attributes(c, {"s", "a", "b", "c", "d"});
        NoChildren(c);
        for (const char* k : {"a", "b", "c", "d"})
          if (Number(c, k, 0.0) != 0.0)
            Fail(c.line, "a lane offset that is not 0 is not supported (supported: laneOffset with a=b=c=d=0)");
      } else if (c.name == "laneSection") {
        if (section)
          Fail(c.line, "a second <laneSection> is not supported (supported: one laneSection at s=0; platoon lanes "
                       "keep their count and width along the road)");
        section = &c;
      } else {
        Unsupported(c, "laneOffset (zero), laneSection, userData");
      }
    }
    if (!section) Fail(l.line, "<lanes> needs a <laneSection>");
    const Element& ls = *section;
    Attributes(ls, {"s", "singleSide"});
    NoText(ls);
    if (RequiredNumber(ls, "s") != 0.0) Fail(ls.line, "laneSection.s: the lane section must start at s=0");
    if (const auto* a = ls.Find("singleSide"); a && a->value != "false")
      Fail(a->line, "laneSection.singleSide \"" + a->value + "\" is not supported (supported: false)");
    std::map<int, LaneRead> lanes;
    bool center = false;
    for (const Element& side : ls.children) {
      if (side.name == "userData") continue;
      int sign = 0;
      if (side.name == "left") sign = 1;
      else if (side.name == "right") sign = -1;
      else if (side.name != "center") Unsupported(side, "left, center, right");
      if (sign == 0) {
        if (center) Fail(side.line, "a second <center>");
        center = true;
      }
      Attributes(side, {});
      NoText(side);
      for (const Element& lane : side.children) {
        if (lane.name == "userData") continue;
        if (lane.name != "lane") Unsupported(lane, "lane");
        const LaneRead lr = LaneAt(lane, sign);
        if (!lanes.emplace(lr.id, lr).second) Fail(lane.line, "lane.id: lane " + std::to_string(lr.id) + " appears twice");
      }
    }
    if (!center || !lanes.count(0)) Fail(ls.line, "<laneSection> needs <center> with its lane id=\"0\"");
    int left = 0, right = 0;
    while (lanes.count(left + 1)) ++left;
    while (lanes.count(-(right + 1))) ++right;
    for (const auto& [id, lr] : lanes)
      if (id > left || -id > right)
        Fail(lr.line, "lane.id: lane " + std::to_string(id) + " leaves a gap (left lanes are numbered 1, 2, ... "
                      "outwards, right lanes -1, -2, ...)");
    if (left + right == 0) Fail(ls.line, "<laneSection> has no driving lanes");
    d.lane_widths_left_m.clear();
    d.lane_widths_right_m.clear();
    for (int i = 1; i <= left; ++i) d.lane_widths_left_m.push_back(lanes.at(i).width);
    for (int i = 1; i <= right; ++i) d.lane_widths_right_m.push_back(lanes.at(-i).width);
    d.markings.clear();
    for (int b = left; b >= -right; --b) d.markings.push_back(lanes.at(b).marking);
    // Lane speeds: platoon has one speed limit per road; lanes may restate it (the export does, for SUMO).
    for (const auto& [id, lr] : lanes) {
      if (!lr.speed_line) continue;
      if (d.speed_limit_mps > 0 && std::abs(lr.speed_mps - d.speed_limit_mps) > 1e-9 * d.speed_limit_mps) {
        std::ostringstream os;
        os << "lane " << id << " speed " << lr.speed_mps << " m/s differs from the road's " << d.speed_limit_mps
           << " m/s; per-lane speed limits are not supported (supported: one speed limit per road)";
        Fail(lr.speed_line, os.str());
      }
      d.speed_limit_mps = lr.speed_mps;
    }
  }

  struct LaneRead {
    int id = 0;
    int line = 0;
    double width = 0;
    Marking marking = Marking::kNone;
    double speed_mps = 0;  // lane <speed>, when speed_line != 0
    int speed_line = 0;
  };

  LaneRead LaneAt(const Element& lane, int sign) const {
    Attributes(lane, {"id", "type", "level"});
    NoText(lane);
    LaneRead lr;
    lr.line = lane.line;
    const auto& ida = Required(lane, "id");
    lr.id = Integer(lane, ida, sign < 0 ? -64 : sign > 0 ? 1 : 0, sign < 0 ? -1 : sign > 0 ? 64 : 0);
    if (const auto* a = lane.Find("level"); a && a->value != "false" && a->value != "0")
      Fail(a->line, "lane.level \"" + a->value + "\" is not supported (supported: false)");
    const std::string type = lane.Find("type") ? lane.Find("type")->value : "";
    if (sign != 0 && type != "driving")
      Fail(lane.Find("type") ? lane.Find("type")->line : lane.line,
           "lane type \"" + type + "\" is not supported (supported: driving)");
    bool width = false, mark = false;
    for (const Element& c : lane.children) {
      if (c.name == "userData") continue;
      if (c.name == "link") {
        // Lane links follow the road links: platoon joins lanes of linked roads by id.
        Attributes(c, {});
        NoText(c);
        for (const Element& g : c.children) {
          if (g.name == "userData") continue;
          if (g.name != "predecessor" && g.name != "successor") Unsupported(g, "predecessor, successor");
          Attributes(g, {"id"});
          NoChildren(g);
          (void)Integer(g, Required(g, "id"), -64, 64);
        }
      } else if (c.name == "width" && sign != 0) {
        Attributes(c, {"sOffset", "a", "b", "c", "d"});
        NoChildren(c);
        const double so = RequiredNumber(c, "sOffset", 0.0);
        const double a = RequiredNumber(c, "a", 0.0, 100.0);
        for (const char* k : {"b", "c", "d"})
          if (Number(c, k, 0.0) != 0.0)
            Fail(c.line, "a lane width that changes along the road is not supported (supported: constant width, "
                         "width a with b=c=d=0)");
        if (!width && so != 0.0) Fail(c.line, "width.sOffset: the first width must start at sOffset=0");
        if (width && a != lr.width)
          Fail(c.line, "a lane width that changes along the road is not supported (supported: one constant width)");
        if (!(a > 0)) Fail(c.line, "width.a: a lane must be wider than 0 m, got " + Num(a));
        lr.width = a;
        width = true;
      } else if (c.name == "roadMark") {
        Attributes(c, {"sOffset", "type"}, {"weight", "color", "material", "width", "laneChange", "height"});
        const double so = RequiredNumber(c, "sOffset", 0.0);
        for (const Element& g : c.children)
          if (g.name != "userData")
            Fail(g.line, "<" + g.name + "> in <roadMark> is not supported (supported: the roadMark type attribute)");
        NoText(c);
        const auto& ta = Required(c, "type");
        Marking m;
        if (!MarkingOfType(ta.value, &m))
          Fail(ta.line, "roadMark type \"" + ta.value + "\" is not supported (supported: " + kSupportedMarkTypes + ")");
        if (!mark && so != 0.0) Fail(c.line, "roadMark.sOffset: the first road mark must start at sOffset=0");
        if (mark && m != lr.marking)
          Fail(c.line, "a road mark that changes along the road is not supported (supported: one type per lane)");
        lr.marking = m;
        mark = true;
      } else if (c.name == "speed" && sign != 0) {
        Attributes(c, {"sOffset", "max", "unit"});
        NoChildren(c);
        if (lr.speed_line)
          Fail(c.line, "a lane speed that changes along the road is not supported (supported: one speed per lane)");
        if (RequiredNumber(c, "sOffset", 0.0) != 0.0)
          Fail(c.line, "speed.sOffset: a lane speed must start at sOffset=0");
        lr.speed_mps = SpeedMps(c, Required(c, "max"));
        lr.speed_line = c.line;
      } else {
        Unsupported(c, sign != 0 ? "link, width, roadMark, speed, userData" : "link, roadMark, userData (a centre "
                                                                               "lane has no width)");
      }
    }
    if (sign != 0 && !width) Fail(lane.line, "lane " + std::to_string(lr.id) + " needs a <width>");
    return lr;
  }

  struct Geometry {
    int line = 0;
    double s = 0, x = 0, y = 0, hdg = 0;
  };

  const std::string& source_;
  std::vector<Geometry> geometry_;
  std::vector<LinkLines> links_;
};

}  // namespace

bool IsOpenDrivePath(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  std::string lower;
  for (char c : ext) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower == ".xodr";
}

std::string ExportOpenDrive(const RoadNetwork& network, const OpenDriveHeader& header) {
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  os << "<OpenDRIVE>\n";
  os << "  <header revMajor=\"1\" revMinor=\"6\" name=\"" << Escape(header.name) << "\" version=\"1.00\"";
  if (!header.date.empty()) os << " date=\"" << Escape(header.date) << "\"";
  os << "/>\n";
  for (const Road& road : network.Roads()) {
    const RoadDef& d = road.Def();
    os << "  <road name=\"road " << d.id << "\" length=\"" << Num(road.Length()) << "\" id=\"" << d.id
       << "\" junction=\"-1\">\n";
    if (d.predecessor_id >= 0 || d.successor_id >= 0) {
      os << "    <link>\n";
      if (d.predecessor_id >= 0)
        os << "      <predecessor elementType=\"road\" elementId=\"" << d.predecessor_id << "\" contactPoint=\"end\"/>\n";
      if (d.successor_id >= 0)
        os << "      <successor elementType=\"road\" elementId=\"" << d.successor_id << "\" contactPoint=\"start\"/>\n";
      os << "    </link>\n";
    }
    if (d.speed_limit_mps > 0)
      os << "    <type s=\"0\" type=\"rural\">\n      <speed max=\"" << Num(d.speed_limit_mps)
         << "\" unit=\"m/s\"/>\n    </type>\n";
    os << "    <planView>\n";
    for (size_t i = 0; i < d.sections.size(); ++i) {
      const SectionDef& sec = d.sections[i];
      const double s0 = road.SectionStart(i);
      // The first geometry starts exactly where the definition does; later ones where platoon's chain reaches.
      const RoadPoint p = road.Evaluate(s0);
      const double x = i == 0 ? d.start_x_m : p.position_m.x();
      const double y = i == 0 ? d.start_y_m : p.position_m.y();
      const double hdg = i == 0 ? d.start_heading_rad : p.heading_rad;
      os << "      <geometry s=\"" << Num(s0) << "\" x=\"" << Num(x) << "\" y=\"" << Num(y) << "\" hdg=\"" << Num(hdg)
         << "\" length=\"" << Num(sec.length_m) << "\">\n";
      if (sec.curvature_start_1pm != sec.curvature_end_1pm)
        os << "        <spiral curvStart=\"" << Num(sec.curvature_start_1pm) << "\" curvEnd=\""
           << Num(sec.curvature_end_1pm) << "\"/>\n";
      else if (sec.curvature_start_1pm != 0)
        os << "        <arc curvature=\"" << Num(sec.curvature_start_1pm) << "\"/>\n";
      else
        os << "        <line/>\n";
      os << "      </geometry>\n";
    }
    os << "    </planView>\n";
    os << "    <elevationProfile>\n      <elevation s=\"0\" a=\"" << Num(d.start_height_m) << "\" b=\"" << Num(d.grade)
       << "\" c=\"0\" d=\"0\"/>\n    </elevationProfile>\n";
    os << "    <lateralProfile/>\n";
    os << "    <lanes>\n      <laneSection s=\"0\">\n";
    if (road.LanesLeft() > 0) {
      os << "        <left>\n";
      for (int id = road.LanesLeft(); id >= 1; --id) WriteLane(os, road, network, id);
      os << "        </left>\n";
    }
    os << "        <center>\n";
    WriteLane(os, road, network, 0);
    os << "        </center>\n";
    if (road.LanesRight() > 0) {
      os << "        <right>\n";
      for (int id = -1; id >= -road.LanesRight(); --id) WriteLane(os, road, network, id);
      os << "        </right>\n";
    }
    os << "      </laneSection>\n    </lanes>\n";
    os << "  </road>\n";
  }
  os << "</OpenDRIVE>\n";
  return os.str();
}

std::vector<RoadDef> ReadOpenDrive(const std::string& text, const std::string& source_name) {
  return Importer(source_name).Read(text);
}

RoadNetwork LoadOpenDriveText(const std::string& text, const std::string& source_name) {
  return RoadNetwork(ReadOpenDrive(text, source_name));
}

RoadNetwork LoadOpenDriveFile(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) throw config::ConfigError(path + ": cannot read road file: no such file");
  if (!std::filesystem::is_regular_file(status)) throw config::ConfigError(path + ": not a regular file");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw config::ConfigError(path + ": cannot read road file: " + ec.message());
  if (size > static_cast<uintmax_t>(config::kMaxConfigBytes))
    throw config::ConfigError(path + ": " + std::to_string(size) + " bytes is too large for a road file (at most " +
                              std::to_string(config::kMaxConfigBytes >> 20) + " MiB)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config::ConfigError(path + ": cannot read road file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return LoadOpenDriveText(ss.str(), path);
}

}  // namespace platoon::road
