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

// Cubic records <name s_attr=.. a b c d/>.
void WriteCubics(std::ostringstream& os, const char* indent, const char* name, const char* s_attr,
                 const std::vector<CubicPiece>& pieces) {
  for (const CubicPiece& p : pieces)
    os << indent << "<" << name << " " << s_attr << "=\"" << Num(p.s_m) << "\" a=\"" << Num(p.a) << "\" b=\"" << Num(p.b)
       << "\" c=\"" << Num(p.c) << "\" d=\"" << Num(p.d) << "\"/>\n";
}

void WriteMarks(std::ostringstream& os, const std::vector<RoadMarkDef>& marks) {
  for (const RoadMarkDef& m : marks)
    os << "            <roadMark sOffset=\"" << Num(m.s_offset_m) << "\" type=\"" << Escape(m.type) << "\" color=\""
       << MarkColorName(m.color) << "\" width=\"" << Num(m.width_m) << "\"/>\n";
}

void WriteProfileLane(std::ostringstream& os, const LaneDef& l) {
  os << "          <lane id=\"" << l.id << "\" type=\"" << LaneTypeName(l.type) << "\" level=\"false\">\n";
  if (l.predecessor != 0 || l.successor != 0) {
    os << "            <link>\n";
    if (l.predecessor != 0) os << "              <predecessor id=\"" << l.predecessor << "\"/>\n";
    if (l.successor != 0) os << "              <successor id=\"" << l.successor << "\"/>\n";
    os << "            </link>\n";
  }
  WriteCubics(os, "            ", l.border ? "border" : "width", "sOffset", l.width);
  WriteMarks(os, l.marks);
  if (l.speed_mps > 0) os << "            <speed sOffset=\"0\" max=\"" << Num(l.speed_mps) << "\" unit=\"m/s\"/>\n";
  os << "          </lane>\n";
}

void WriteLaneSection(std::ostringstream& os, const LaneSectionDef& ls) {
  os << "      <laneSection s=\"" << Num(ls.s_m) << "\">\n";
  if (!ls.left.empty()) {
    os << "        <left>\n";
    for (auto it = ls.left.rbegin(); it != ls.left.rend(); ++it) WriteProfileLane(os, *it);
    os << "        </left>\n";
  }
  os << "        <center>\n          <lane id=\"0\" type=\"none\" level=\"false\">\n";
  WriteMarks(os, ls.center_marks);
  os << "          </lane>\n        </center>\n";
  if (!ls.right.empty()) {
    os << "        <right>\n";
    for (const LaneDef& l : ls.right) WriteProfileLane(os, l);
    os << "        </right>\n";
  }
  os << "      </laneSection>\n";
}

void WriteObjectsAndSignals(std::ostringstream& os, const RoadDef& d) {
  if (!d.objects.empty()) {
    os << "    <objects>\n";
    for (const RoadObjectDef& o : d.objects) {
      os << "      <object id=\"" << Escape(o.id) << "\" name=\"" << Escape(o.name) << "\" type=\"" << Escape(o.type)
         << "\" s=\"" << Num(o.s_m) << "\" t=\"" << Num(o.t_m) << "\" zOffset=\"" << Num(o.z_offset_m) << "\" hdg=\""
         << Num(o.heading_rad) << "\" pitch=\"" << Num(o.pitch_rad) << "\" roll=\"" << Num(o.roll_rad) << "\"";
      if (o.length_m > 0) os << " length=\"" << Num(o.length_m) << "\"";
      if (o.width_m > 0) os << " width=\"" << Num(o.width_m) << "\"";
      if (o.height_m > 0) os << " height=\"" << Num(o.height_m) << "\"";
      if (o.radius_m > 0) os << " radius=\"" << Num(o.radius_m) << "\"";
      if (o.outline.empty()) {
        os << "/>\n";
        continue;
      }
      os << ">\n        <outline>\n";
      for (const OutlineCorner& k : o.outline) {
        if (o.outline_in_road_frame)
          os << "          <cornerRoad s=\"" << Num(k.u_m) << "\" t=\"" << Num(k.v_m) << "\" dz=\"" << Num(k.z_m);
        else
          os << "          <cornerLocal u=\"" << Num(k.u_m) << "\" v=\"" << Num(k.v_m) << "\" z=\"" << Num(k.z_m);
        os << "\" height=\"" << Num(k.height_m) << "\"/>\n";
      }
      os << "        </outline>\n      </object>\n";
    }
    os << "    </objects>\n";
  }
  if (!d.signals.empty()) {
    os << "    <signals>\n";
    for (const RoadSignalDef& g : d.signals) {
      os << "      <signal id=\"" << Escape(g.id) << "\" name=\"" << Escape(g.name) << "\" s=\"" << Num(g.s_m) << "\" t=\""
         << Num(g.t_m) << "\" zOffset=\"" << Num(g.z_offset_m) << "\" hOffset=\"" << Num(g.h_offset_rad)
         << "\" orientation=\"" << Escape(g.orientation.empty() ? "none" : g.orientation) << "\" dynamic=\""
         << (g.dynamic ? "yes" : "no") << "\" country=\"" << Escape(g.country) << "\" type=\"" << Escape(g.type)
         << "\" subtype=\"" << Escape(g.subtype) << "\"";
      if (g.has_value) os << " value=\"" << Num(g.value) << "\" unit=\"" << Escape(g.unit) << "\"";
      if (g.height_m > 0) os << " height=\"" << Num(g.height_m) << "\"";
      if (g.width_m > 0) os << " width=\"" << Num(g.width_m) << "\"";
      if (!g.text.empty()) os << " text=\"" << Escape(g.text) << "\"";
      os << "/>\n";
    }
    os << "    </signals>\n";
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Import

class Importer {
 public:
  explicit Importer(const std::string& source) : source_(source) {}

  OpenDriveMap Read(const std::string& text) {
    Element root;
    try {
      root = xml::Parse(text, source_);
    } catch (const xml::XmlError& e) {
      throw config::ConfigError(e.what());
    }
    if (root.name != "OpenDRIVE")
      Fail(root.line, "the root element is <" + root.name + ">, expected <OpenDRIVE>");
    for (const auto& a : root.attributes)
      if (a.name.rfind("xmlns", 0) != 0 && a.name.rfind("xsi:", 0) != 0)
        Fail(a.line, "attribute " + a.name + " of <OpenDRIVE> is not supported (supported: xmlns*, xsi:*)");
    NoText(root);
    bool header = false;
    OpenDriveMap map;
    std::vector<int> road_lines;
    std::vector<int> junction_lines;
    for (const Element& c : root.children) {
      if (c.name == "header") {
        if (header) Fail(c.line, "a second <header>");
        if (!map.roads.empty()) Fail(c.line, "<header> must come before the roads");
        header = true;
        Header(c);
      } else if (c.name == "road") {
        if (!header) Fail(c.line, "<road> before <header> (an OpenDRIVE file starts with its <header>)");
        map.roads.push_back(RoadAt(c));
        road_lines.push_back(c.line);
      } else if (c.name == "junction") {
        map.junctions.push_back(JunctionAt(c));
        junction_lines.push_back(c.line);
      } else if (c.name == "userData" || c.name == "controller" || c.name == "station" ||
                 c.name == "junctionGroup") {
        Ignore(c);
      } else {
        Unsupported(c, "header, road, junction, controller (ignored), station (ignored), junctionGroup (ignored), "
                       "userData (ignored)");
      }
    }
    if (!header) Fail(root.line, "<OpenDRIVE> has no <header>");
    if (map.roads.empty()) Fail(root.line, "<OpenDRIVE> has no <road>");
    std::map<int, size_t> index;
    for (size_t i = 0; i < map.roads.size(); ++i)
      if (!index.emplace(map.roads[i].id, i).second)
        Fail(road_lines[i], "road.id: duplicate road id " + std::to_string(map.roads[i].id));
    std::map<int, size_t> junctions;
    for (size_t i = 0; i < map.junctions.size(); ++i)
      if (!junctions.emplace(map.junctions[i].id, i).second)
        Fail(junction_lines[i], "junction.id: duplicate junction id " + std::to_string(map.junctions[i].id));
    for (size_t i = 0; i < map.roads.size(); ++i) {
      const RoadDef& d = map.roads[i];
      const auto& lk = links_[i];
      if (d.predecessor_id >= 0 && !index.count(d.predecessor_id))
        Fail(lk.predecessor_line, "predecessor.elementId: no road with id " + std::to_string(d.predecessor_id) +
                                      " in this file");
      if (d.successor_id >= 0 && !index.count(d.successor_id))
        Fail(lk.successor_line, "successor.elementId: no road with id " + std::to_string(d.successor_id) +
                                    " in this file");
      if (d.predecessor_junction_id >= 0 && !junctions.count(d.predecessor_junction_id))
        Fail(lk.predecessor_line, "predecessor.elementId: no junction with id " +
                                      std::to_string(d.predecessor_junction_id) + " in this file");
      if (d.successor_junction_id >= 0 && !junctions.count(d.successor_junction_id))
        Fail(lk.successor_line, "successor.elementId: no junction with id " +
                                    std::to_string(d.successor_junction_id) + " in this file");
      if (d.junction_id >= 0 && !junctions.count(d.junction_id))
        Fail(road_lines[i], "road.junction: no junction with id " + std::to_string(d.junction_id) + " in this file");
    }
    for (size_t j = 0; j < map.junctions.size(); ++j)
      for (size_t k = 0; k < map.junctions[j].connections.size(); ++k) {
        const JunctionConnection& c = map.junctions[j].connections[k];
        for (int id : {c.incoming_road_id, c.connecting_road_id})
          if (!index.count(id))
            Fail(connection_lines_[j][k], "connection: no road with id " + std::to_string(id) + " in this file");
      }
    for (const auto& [name, first] : ignored_) {
      std::ostringstream os;
      os << "<" << name << "> accepted and ignored (" << first.second << " in the file, first at " << source_ << ":"
         << first.first << ")";
      map.ignored.push_back(os.str());
    }
    for (const auto& [name, count] : read_) {
      std::ostringstream os;
      os << name << " x " << count;
      map.read.push_back(os.str());
    }
    return map;
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

  // An element accepted with no effect in platoon: counted for the report, its content not checked.
  void Ignore(const Element& e) {
    auto [it, fresh] = ignored_.emplace(e.name, std::pair<int, int>{e.line, 0});
    ++it->second.second;
  }

  // An element read into the road model: counted for the report.
  void Count(const std::string& what) { ++read_[what]; }

  void Header(const Element& h) {
    Attributes(h, {"revMajor", "revMinor"},
               {"name", "version", "date", "north", "south", "east", "west", "vendor"});
    if (const auto* a = h.Find("revMajor"); a && Integer(h, *a, 0, 1000) != 1)
      Fail(a->line, "header.revMajor: expected 1 (OpenDRIVE 1.x), got " + a->value);
    if (const auto* a = h.Find("revMinor")) (void)Integer(h, *a, 0, 1000);
    for (const Element& c : h.children) {
      // platoon keeps coordinates as written: a projection or an offset changes nothing in it.
      if (c.name == "geoReference" || c.name == "userData" || c.name == "offset" || c.name == "license" ||
          c.name == "defaultRegulations") {
        Ignore(c);
        continue;
      }
      Unsupported(c, "geoReference, offset, license, defaultRegulations, userData (all ignored)");
    }
  }

  // A whole number, or an id written as text that holds one.
  int Id(const Element& e, const char* name) const {
    return Integer(e, Required(e, name), -1, 1000000000);
  }

  RoadDef RoadAt(const Element& r) {
    Attributes(r, {"id", "length", "junction", "rule"}, {"name"});
    NoText(r);
    RoadDef d = DefaultRoadDef();
    d.id = Integer(r, Required(r, "id"), 0, 1000000000);
    const double length = RequiredNumber(r, "length", 0.0);
    if (const auto* a = r.Find("junction")) d.junction_id = Integer(r, *a, -1, 1000000000);
    if (const auto* a = r.Find("rule"); a && a->value != "RHT")
      Fail(a->line, "road.rule \"" + a->value + "\" is not supported (supported: RHT)");
    LinkLines lines;
    const Element* plan = nullptr;
    const Element* elevation = nullptr;
    const Element* lateral = nullptr;
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
        // Several types along s: the speed of the first one that names a speed is the road's.
        RoadType(c, d, type);
        type = true;
      } else if (c.name == "planView") {
        once(plan);
      } else if (c.name == "elevationProfile") {
        once(elevation);
      } else if (c.name == "lateralProfile") {
        once(lateral);
      } else if (c.name == "lanes") {
        once(lanes);
      } else if (c.name == "objects") {
        Objects(c, d);
      } else if (c.name == "signals") {
        Signals(c, d);
      } else if (c.name == "userData" || c.name == "surface" || c.name == "railroad") {
        Ignore(c);
      } else {
        Unsupported(c, "link, type, planView, elevationProfile, lateralProfile, lanes, objects, signals, surface "
                       "(ignored), railroad (ignored), userData (ignored)");
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
    if (lateral) Lateral(*lateral, d);
    Lanes(*lanes, d, total);
    // Speed: the road type's, else the first driving lane's.
    if (d.speed_limit_mps <= 0)
      for (const auto& ls : d.lane_sections)
        for (const auto* side : {&ls.right, &ls.left})
          for (const LaneDef& l : *side)
            if (d.speed_limit_mps <= 0 && l.type == LaneType::kDriving && l.speed_mps > 0) d.speed_limit_mps = l.speed_mps;
    if (const std::string e = ValidateRoadDef(d); !e.empty()) Fail(r.line, "road " + std::to_string(d.id) + ": " + e);
    Continuity(d);
    links_.push_back(lines);
    Count("road");
    return d;
  }

  void RoadLink(const Element& l, RoadDef& d, LinkLines& lines) {
    Attributes(l, {});
    NoText(l);
    for (const Element& c : l.children) {
      if (c.name == "userData" || c.name == "neighbor") {
        Ignore(c);
        continue;
      }
      const bool pred = c.name == "predecessor";
      if (!pred && c.name != "successor") Unsupported(c, "predecessor, successor, neighbor (ignored)");
      Attributes(c, {"elementType", "elementId", "contactPoint"}, {"elementS", "elementDir"});
      NoChildren(c);
      const auto& type = Required(c, "elementType");
      const int id = Integer(c, Required(c, "elementId"), 0, 1000000000);
      (pred ? lines.predecessor_line : lines.successor_line) = c.line;
      if (type.value == "junction") {
        (pred ? d.predecessor_junction_id : d.successor_junction_id) = id;
        Count("road link to a junction");
        continue;
      }
      if (type.value != "road")
        Fail(type.line, c.name + ".elementType \"" + type.value + "\" is not supported (supported: road, junction)");
      const auto& cp = Required(c, "contactPoint");
      ContactPoint contact;
      if (cp.value == "start") contact = ContactPoint::kStart;
      else if (cp.value == "end") contact = ContactPoint::kEnd;
      else Fail(cp.line, c.name + ".contactPoint: expected start or end, got \"" + cp.value + "\"");
      (pred ? d.predecessor_id : d.successor_id) = id;
      (pred ? d.predecessor_contact : d.successor_contact) = contact;
      Count("road link");
    }
  }

  void RoadType(const Element& t, RoadDef& d, bool later) {
    Attributes(t, {"s"}, {"type", "country"});
    NoText(t);
    (void)RequiredNumber(t, "s", 0.0);
    Count("road type");
    for (const Element& c : t.children) {
      if (c.name == "userData") {
        Ignore(c);
        continue;
      }
      if (c.name != "speed") Unsupported(c, "speed");
      Attributes(c, {"max", "unit"});
      NoChildren(c);
      const auto& max = Required(c, "max");
      if (later && d.speed_limit_mps > 0) continue;
      if (max.value == "no limit" || max.value == "undefined") {
        d.speed_limit_mps = 0;
        continue;
      }
      d.speed_limit_mps = SpeedMps(c, max);
    }
  }

  // A geometry's curve start in world coordinates and its start tangent: x, y, hdg of the <geometry> are the
  // local frame, the curve starts at (u(0), v(0)) in it with tangent atan2(v'(0), u'(0)).
  static void CurveStart(const SectionDef& sec, double x, double y, double hdg, double* sx, double* sy, double* sh) {
    double u0 = 0, v0 = 0, du = 1, dv = 0;
    if (sec.kind == GeometryKind::kPoly3) {
      v0 = sec.v_poly[0];
      dv = sec.v_poly[1];
    } else if (sec.kind == GeometryKind::kParamPoly3) {
      u0 = sec.u_poly[0];
      v0 = sec.v_poly[0];
      du = sec.u_poly[1];
      dv = sec.v_poly[1];
    }
    *sx = x + u0 * std::cos(hdg) - v0 * std::sin(hdg);
    *sy = y + u0 * std::sin(hdg) + v0 * std::cos(hdg);
    *sh = hdg + std::atan2(dv, du);
  }

  void PlanView(const Element& p, RoadDef& d) {
    Attributes(p, {});
    NoText(p);
    d.sections.clear();
    geometry_.clear();
    for (const Element& g : p.children) {
      if (g.name == "userData") {
        Ignore(g);
        continue;
      }
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
        if (c.name == "userData") {
          Ignore(c);
          continue;
        }
        if (shape)
          Fail(c.line, "<geometry> holds a second shape <" + c.name + "> (one of line, arc, spiral, poly3, paramPoly3)");
        shape = &c;
      }
      if (!shape) Fail(g.line, "<geometry> needs a shape: <line/>, <arc/>, <spiral/>, <poly3/> or <paramPoly3/>");
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
      } else if (c.name == "poly3") {
        Attributes(c, {"a", "b", "c", "d"});
        sec.kind = GeometryKind::kPoly3;
        // Bounded so that every point stays finite over the longest geometry (1e6 m).
        sec.v_poly = {RequiredNumber(c, "a", -1e4, 1e4), RequiredNumber(c, "b", -1e4, 1e4),
                      RequiredNumber(c, "c", -1e4, 1e4), RequiredNumber(c, "d", -1e4, 1e4)};
      } else if (c.name == "paramPoly3") {
        Attributes(c, {"aU", "bU", "cU", "dU", "aV", "bV", "cV", "dV", "pRange"});
        sec.kind = GeometryKind::kParamPoly3;
        sec.u_poly = {RequiredNumber(c, "aU", -1e6, 1e6), RequiredNumber(c, "bU", -1e6, 1e6),
                      RequiredNumber(c, "cU", -1e6, 1e6), RequiredNumber(c, "dU", -1e6, 1e6)};
        sec.v_poly = {RequiredNumber(c, "aV", -1e6, 1e6), RequiredNumber(c, "bV", -1e6, 1e6),
                      RequiredNumber(c, "cV", -1e6, 1e6), RequiredNumber(c, "dV", -1e6, 1e6)};
        // pRange defaults to normalized (OpenDRIVE 1.6 paramPoly3 attributes).
        const auto* pr = c.Find("pRange");
        const std::string range = pr ? pr->value : "normalized";
        if (range == "normalized") sec.p_normalized = true;
        else if (range == "arcLength") sec.p_normalized = false;
        else Fail(pr->line, "paramPoly3.pRange: expected arcLength or normalized, got \"" + range + "\"");
        if (sec.u_poly[1] == 0.0 && sec.v_poly[1] == 0.0)
          Fail(c.line, "paramPoly3: bU and bV are both 0; the curve has no start direction");
      } else {
        Fail(c.line, "<" + c.name + "> geometry is not supported (supported: line, arc, spiral, poly3, paramPoly3)");
      }
      NoChildren(c);
      Count(c.name);
      if (d.sections.empty()) CurveStart(sec, rec.x, rec.y, rec.hdg, &d.start_x_m, &d.start_y_m, &d.start_heading_rad);
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
      const RoadPoint p = road.Evaluate(s0);
      const RoadPoint e = road.Evaluate(s0 + d.sections[i].length_m);
      for (const RoadPoint* q : {&p, &e})
        if (!(std::abs(q->position_m.x()) < 1e8 && std::abs(q->position_m.y()) < 1e8 && std::isfinite(q->heading_rad)))
          Fail(g.line, "geometry reaches beyond 1e8 m from the origin; expected a road within +-1e8 m");
      if (i == 0) continue;
      double gx = 0, gy = 0, gh = 0;
      CurveStart(d.sections[i], g.x, g.y, g.hdg, &gx, &gy, &gh);
      const double gap = std::hypot(p.position_m.x() - gx, p.position_m.y() - gy);
      const double dh = std::remainder(p.heading_rad - gh, 2 * std::numbers::pi);
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

  // Cubic records <name s|sOffset a b c d> into pieces sorted by s.
  std::vector<CubicPiece> Cubics(const Element& parent, const std::string& name, const char* s_attr,
                                 double a_lo, double a_hi) const {
    std::vector<CubicPiece> out;
    for (const Element& c : parent.children) {
      if (c.name != name) continue;
      Attributes(c, {s_attr, "a", "b", "c", "d"});
      NoChildren(c);
      CubicPiece p;
      p.s_m = RequiredNumber(c, s_attr, 0.0);
      p.a = RequiredNumber(c, "a", a_lo, a_hi);
      p.b = Number(c, "b", 0.0);
      p.c = Number(c, "c", 0.0);
      p.d = Number(c, "d", 0.0);
      if (!out.empty() && p.s_m < out.back().s_m)
        Fail(c.line, name + "." + s_attr + " " + Num(p.s_m) + " comes before the previous record's " +
                         Num(out.back().s_m) + " (records are sorted by " + s_attr + ")");
      out.push_back(p);
    }
    return out;
  }

  void Elevation(const Element& e, RoadDef& d) {
    Attributes(e, {});
    NoText(e);
    for (const Element& c : e.children) {
      if (c.name == "userData") Ignore(c);
      else if (c.name != "elevation") Unsupported(c, "elevation");
    }
    d.elevation = Cubics(e, "elevation", "s", -1e4, 1e4);
    if (!d.elevation.empty()) {
      d.start_height_m = d.elevation.front().a;
      d.grade = 0;
      Count("elevation");
    }
  }

  void Lateral(const Element& e, RoadDef& d) {
    Attributes(e, {});
    NoText(e);
    for (const Element& c : e.children) {
      if (c.name == "userData" || c.name == "shape" || c.name == "crossfall") Ignore(c);
      else if (c.name != "superelevation") Unsupported(c, "superelevation, shape (ignored), crossfall (ignored)");
    }
    d.superelevation = Cubics(e, "superelevation", "s", -1.5, 1.5);
    if (!d.superelevation.empty()) Count("superelevation");
  }

  void Lanes(const Element& l, RoadDef& d, double road_length) {
    Attributes(l, {});
    NoText(l);
    d.lane_sections.clear();
    for (const Element& c : l.children) {
      if (c.name == "userData") Ignore(c);
      else if (c.name == "laneSection") d.lane_sections.push_back(LaneSection(c, road_length));
      else if (c.name != "laneOffset") Unsupported(c, "laneOffset, laneSection, userData (ignored)");
    }
    d.lane_offset = Cubics(l, "laneOffset", "s", -1e3, 1e3);
    if (!d.lane_offset.empty()) Count("laneOffset");
    if (d.lane_sections.empty()) Fail(l.line, "<lanes> needs a <laneSection>");
    for (size_t k = 1; k < d.lane_sections.size(); ++k)
      if (d.lane_sections[k].s_m < d.lane_sections[k - 1].s_m)
        Fail(section_lines_[k], "laneSection.s " + Num(d.lane_sections[k].s_m) + " comes before the previous "
                                "section's " + Num(d.lane_sections[k - 1].s_m));
    section_lines_.clear();
    // A road made of one constant section keeps platoon's constant layout (as the export writes it).
    if (d.lane_sections.size() == 1 && d.lane_offset.empty() && ConstantSection(d.lane_sections[0], d)) {
      d.lane_sections.clear();
      d.lane_offset.clear();
    }
  }

  // True (and d's constant layout set) when `ls` starts at 0 and holds only driving lanes of constant width with
  // one mark each, none yellow, and lane links only to the same id: platoon's own export. (Other lane links and
  // colours would be lost.)
  static bool ConstantSection(const LaneSectionDef& ls, RoadDef& d) {
    if (ls.s_m != 0.0) return false;
    if (ls.center_marks.size() > 1) return false;
    if (!ls.center_marks.empty() && ls.center_marks[0].color == MarkColor::kYellow) return false;
    std::vector<double> left, right;
    for (const auto* side : {&ls.left, &ls.right})
      for (const LaneDef& l : *side) {
        if (l.type != LaneType::kDriving || l.border || l.width.size() != 1 || l.marks.size() > 1) return false;
        if ((l.predecessor != 0 && l.predecessor != l.id) || (l.successor != 0 && l.successor != l.id)) return false;
        if (!l.marks.empty() && l.marks[0].color == MarkColor::kYellow) return false;
        const CubicPiece& w = l.width[0];
        if (w.s_m != 0.0 || w.b != 0.0 || w.c != 0.0 || w.d != 0.0 || !(w.a > 0)) return false;
        if (l.marks.size() == 1 && l.marks[0].s_offset_m != 0.0) return false;
        (side == &ls.left ? left : right).push_back(w.a);
      }
    if (left.empty() && right.empty()) return false;
    d.lane_widths_left_m = left;
    d.lane_widths_right_m = right;
    d.markings.clear();
    auto mark = [](const std::vector<RoadMarkDef>& m) { return m.empty() ? Marking::kNone : MarkingOfRoadMark(m[0].type); };
    for (int b = static_cast<int>(left.size()); b >= -static_cast<int>(right.size()); --b)
      d.markings.push_back(b > 0 ? mark(ls.left[static_cast<size_t>(b - 1)].marks)
                                 : b < 0 ? mark(ls.right[static_cast<size_t>(-b - 1)].marks) : mark(ls.center_marks));
    return true;
  }

  LaneSectionDef LaneSection(const Element& ls, double road_length) {
    Attributes(ls, {"s", "singleSide"});
    NoText(ls);
    section_lines_.push_back(ls.line);
    LaneSectionDef out;
    out.s_m = RequiredNumber(ls, "s", 0.0, road_length + kOpenDriveMaxGapM);
    if (const auto* a = ls.Find("singleSide"); a && a->value != "false" && a->value != "true")
      Fail(a->line, "laneSection.singleSide: expected true or false, got \"" + a->value + "\"");
    std::map<int, std::pair<LaneDef, int>> lanes;  // id -> (lane, line)
    bool center = false;
    for (const Element& side : ls.children) {
      if (side.name == "userData") {
        Ignore(side);
        continue;
      }
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
        if (lane.name == "userData") {
          Ignore(lane);
          continue;
        }
        if (lane.name != "lane") Unsupported(lane, "lane");
        LaneDef ld = LaneAt(lane, sign);
        if (sign == 0) out.center_marks = ld.marks;
        const int id = ld.id;
        if (!lanes.emplace(id, std::pair<LaneDef, int>{std::move(ld), lane.line}).second)
          Fail(lane.line, "lane.id: lane " + std::to_string(id) + " appears twice");
      }
    }
    if (!center || !lanes.count(0)) Fail(ls.line, "<laneSection> needs <center> with its lane id=\"0\"");
    int left = 0, right = 0;
    while (lanes.count(left + 1)) ++left;
    while (lanes.count(-(right + 1))) ++right;
    for (const auto& [id, lr] : lanes)
      if (id > left || -id > right)
        Fail(lr.second, "lane.id: lane " + std::to_string(id) + " leaves a gap (left lanes are numbered 1, 2, ... "
                        "outwards, right lanes -1, -2, ...)");
    if (left + right == 0) Fail(ls.line, "<laneSection> has no lanes besides the centre lane");
    for (int i = 1; i <= left; ++i) out.left.push_back(lanes.at(i).first);
    for (int i = 1; i <= right; ++i) out.right.push_back(lanes.at(-i).first);
    Count("laneSection");
    return out;
  }

  LaneDef LaneAt(const Element& lane, int sign) {
    Attributes(lane, {"id", "type", "level"}, {"advisory", "direction", "dynamicLaneDirection", "dynamicLaneType",
                                               "roadWorks", "uid"});
    NoText(lane);
    LaneDef ld;
    const auto& ida = Required(lane, "id");
    ld.id = Integer(lane, ida, sign < 0 ? -64 : sign > 0 ? 1 : 0, sign < 0 ? -1 : sign > 0 ? 64 : 0);
    if (const auto* a = lane.Find("level"); a && a->value != "false" && a->value != "0" && a->value != "true" &&
                                            a->value != "1")
      Fail(a->line, "lane.level: expected true or false, got \"" + a->value + "\"");
    if (sign != 0) {
      const auto& ta = Required(lane, "type");
      if (!ParseLaneType(ta.value, &ld.type))
        Fail(ta.line, "lane type \"" + ta.value + "\" is not an OpenDRIVE lane type (driving, shoulder, border, "
                      "sidewalk, parking, biking, median, restricted, none, ...)");
      Count(std::string("lane type ") + LaneTypeName(ld.type));
    }
    bool width = false, border = false;
    std::vector<CubicPiece> borders;
    for (const Element& c : lane.children) {
      if (c.name == "link") {
        Attributes(c, {});
        NoText(c);
        for (const Element& g : c.children) {
          if (g.name == "userData") {
            Ignore(g);
            continue;
          }
          if (g.name != "predecessor" && g.name != "successor") Unsupported(g, "predecessor, successor");
          Attributes(g, {"id"});
          NoChildren(g);
          const int id = Integer(g, Required(g, "id"), -64, 64);
          (g.name == "predecessor" ? ld.predecessor : ld.successor) = id;
        }
      } else if ((c.name == "width" || c.name == "border") && sign != 0) {
        (c.name == "width" ? width : border) = true;
      } else if (c.name == "roadMark") {
        ld.marks.push_back(RoadMark(c));
        if (!ld.marks.empty() && ld.marks.size() > 1 &&
            ld.marks.back().s_offset_m < ld.marks[ld.marks.size() - 2].s_offset_m)
          Fail(c.line, "roadMark.sOffset comes before the previous road mark's (road marks are sorted by sOffset)");
      } else if (c.name == "speed" && sign != 0) {
        Attributes(c, {"sOffset", "max", "unit"});
        NoChildren(c);
        (void)RequiredNumber(c, "sOffset", 0.0);
        if (ld.speed_mps <= 0) ld.speed_mps = SpeedMps(c, Required(c, "max"));
      } else if (c.name == "userData" || c.name == "material" || c.name == "visibility" || c.name == "access" ||
                 c.name == "height" || c.name == "rule") {
        Ignore(c);
      } else {
        Unsupported(c, sign != 0 ? "link, width, border, roadMark, speed, material, visibility, access, height, rule, "
                                   "userData (the last six ignored)"
                                 : "link, roadMark, userData (a centre lane has no width)");
      }
    }
    if (sign != 0) {
      // A lane with both: width wins (OpenDRIVE lanes: border records are then ignored).
      if (width) {
        ld.width = Cubics(lane, "width", "sOffset", -100.0, 100.0);
        Count("lane width");
      } else if (border) {
        ld.width = Cubics(lane, "border", "sOffset", -1000.0, 1000.0);
        ld.border = true;
        Count("lane border");
      } else {
        Fail(lane.line, "lane " + std::to_string(ld.id) + " needs a <width> or a <border>");
      }
    }
    return ld;
  }

  RoadMarkDef RoadMark(const Element& c) {
    Attributes(c, {"sOffset", "type", "color", "width"}, {"weight", "material", "laneChange", "height"});
    NoText(c);
    RoadMarkDef m;
    m.s_offset_m = RequiredNumber(c, "sOffset", 0.0);
    const auto& ta = Required(c, "type");
    static const char* kTypes[] = {"none", "solid", "broken", "solid solid", "solid broken", "broken solid",
                                   "broken broken", "botts dots", "grass", "curb", "custom", "edge"};
    bool known = false;
    for (const char* t : kTypes) known = known || ta.value == t;
    if (!known)
      Fail(ta.line, "roadMark type \"" + ta.value + "\" is not an OpenDRIVE road mark type (none, solid, broken, "
                    "solid solid, solid broken, broken solid, broken broken, botts dots, grass, curb, custom, edge)");
    m.type = ta.value;
    if (const auto* a = c.Find("color")) {
      bool ok = false;
      for (MarkColor col : {MarkColor::kStandard, MarkColor::kWhite, MarkColor::kYellow, MarkColor::kBlue,
                            MarkColor::kGreen, MarkColor::kRed, MarkColor::kOrange, MarkColor::kViolet,
                            MarkColor::kBlack})
        if (a->value == MarkColorName(col)) {
          m.color = col;
          ok = true;
        }
      if (!ok)
        Fail(a->line, "roadMark.color \"" + a->value + "\" is not an OpenDRIVE colour (standard, white, yellow, "
                      "blue, green, red, orange, violet, black)");
    }
    m.width_m = Number(c, "width", 0.12, 0.0, 10.0);
    for (const Element& g : c.children) {
      if (g.name == "type" || g.name == "explicit") {
        m.has_lines = true;
        Count("roadMark <" + g.name + "> (line definitions kept as the mark's type)");
      } else if (g.name == "userData" || g.name == "sway") {
        Ignore(g);
      } else {
        Unsupported(g, "type, explicit, sway (ignored), userData (ignored)");
      }
    }
    Count("roadMark " + m.type);
    return m;
  }

  void Objects(const Element& e, RoadDef& d) {
    Attributes(e, {});
    NoText(e);
    for (const Element& o : e.children) {
      if (o.name != "object") {
        if (o.name == "objectReference" || o.name == "tunnel" || o.name == "bridge" || o.name == "userData") {
          Ignore(o);
          continue;
        }
        Unsupported(o, "object, objectReference, tunnel, bridge, userData (the last four ignored)");
      }
      Attributes(o, {"id", "name", "type", "s", "t", "zOffset", "hdg", "pitch", "roll", "length", "width", "height",
                     "radius"},
                 {"subtype", "dynamic", "orientation", "validLength", "perpToRoad"});
      NoText(o);
      RoadObjectDef obj;
      obj.id = Required(o, "id").value;
      if (const auto* a = o.Find("name")) obj.name = a->value;
      if (const auto* a = o.Find("type")) obj.type = a->value;
      obj.s_m = RequiredNumber(o, "s", 0.0);
      obj.t_m = RequiredNumber(o, "t");
      obj.z_offset_m = Number(o, "zOffset", 0.0);
      obj.heading_rad = Number(o, "hdg", 0.0);
      obj.pitch_rad = Number(o, "pitch", 0.0);
      obj.roll_rad = Number(o, "roll", 0.0);
      obj.length_m = Number(o, "length", 0.0, 0.0);
      obj.width_m = Number(o, "width", 0.0, 0.0);
      obj.height_m = Number(o, "height", 0.0, 0.0);
      obj.radius_m = Number(o, "radius", 0.0, 0.0);
      for (const Element& c : o.children) {
        if (c.name == "outline") {
          Outline(c, obj);
        } else if (c.name == "outlines") {
          Attributes(c, {});
          for (const Element& g : c.children) {
            if (g.name == "outline" && obj.outline.empty()) Outline(g, obj);
            else Ignore(g);  // a second outline of the same object: platoon keeps the first
          }
        } else {
          Ignore(c);  // repeat, material, validity, parkingSpace, markings, borders, userData
        }
      }
      d.objects.push_back(std::move(obj));
      Count("object");
    }
  }

  void Outline(const Element& e, RoadObjectDef& obj) {
    for (const Element& c : e.children) {
      OutlineCorner k;
      if (c.name == "cornerLocal") {
        Attributes(c, {"u", "v", "z", "height"}, {"id"});
        k.u_m = RequiredNumber(c, "u");
        k.v_m = RequiredNumber(c, "v");
        k.z_m = Number(c, "z", 0.0);
        k.height_m = Number(c, "height", 0.0, 0.0);
      } else if (c.name == "cornerRoad") {
        Attributes(c, {"s", "t", "dz", "height"}, {"id"});
        k.u_m = RequiredNumber(c, "s");
        k.v_m = RequiredNumber(c, "t");
        k.z_m = Number(c, "dz", 0.0);
        k.height_m = Number(c, "height", 0.0, 0.0);
        obj.outline_in_road_frame = true;
      } else {
        Ignore(c);
        continue;
      }
      obj.outline.push_back(k);
    }
  }

  void Signals(const Element& e, RoadDef& d) {
    Attributes(e, {});
    NoText(e);
    for (const Element& g : e.children) {
      if (g.name != "signal") {
        if (g.name == "signalReference" || g.name == "userData") {
          Ignore(g);
          continue;
        }
        Unsupported(g, "signal, signalReference (ignored), userData (ignored)");
      }
      Attributes(g, {"id", "name", "s", "t", "zOffset", "hOffset", "orientation", "dynamic", "country", "type",
                     "subtype", "value", "unit", "height", "width", "text"},
                 {"countryRevision", "pitch", "roll"});
      NoText(g);
      RoadSignalDef sig;
      sig.id = Required(g, "id").value;
      if (const auto* a = g.Find("name")) sig.name = a->value;
      sig.s_m = RequiredNumber(g, "s", 0.0);
      sig.t_m = RequiredNumber(g, "t");
      sig.z_offset_m = Number(g, "zOffset", 0.0);
      sig.h_offset_rad = Number(g, "hOffset", 0.0);
      if (const auto* a = g.Find("orientation")) sig.orientation = a->value;
      if (const auto* a = g.Find("dynamic")) sig.dynamic = a->value == "yes" || a->value == "true";
      if (const auto* a = g.Find("country")) sig.country = a->value;
      if (const auto* a = g.Find("type")) sig.type = a->value;
      if (const auto* a = g.Find("subtype")) sig.subtype = a->value;
      if (const auto* a = g.Find("value")) {
        sig.value = Number(g, *a);
        sig.has_value = true;
      }
      if (const auto* a = g.Find("unit")) sig.unit = a->value;
      sig.height_m = Number(g, "height", 0.0, 0.0);
      sig.width_m = Number(g, "width", 0.0, 0.0);
      if (const auto* a = g.Find("text")) sig.text = a->value;
      for (const Element& c : g.children) Ignore(c);  // validity, dependency, reference, positionRoad, ...
      d.signals.push_back(std::move(sig));
      Count("signal");
    }
  }

  JunctionDef JunctionAt(const Element& j) {
    Attributes(j, {"id", "name", "type"}, {"mainRoad", "orientation", "sStart", "sEnd"});
    NoText(j);
    JunctionDef out;
    out.id = Integer(j, Required(j, "id"), 0, 1000000000);
    if (const auto* a = j.Find("name")) out.name = a->value;
    if (const auto* a = j.Find("type"); a && a->value != "default")
      Fail(a->line, "junction.type \"" + a->value + "\" is not supported (supported: default)");
    std::vector<int> lines;
    for (const Element& c : j.children) {
      if (c.name == "priority") {
        // Traffic from the low road gives way to traffic from the high one.
        Attributes(c, {}, {"high", "low"});
        NoText(c);
        const auto* high = c.Find("high");
        const auto* low = c.Find("low");
        if (high && low) {
          out.priorities.emplace_back(Integer(c, *high, 0, 1000000000), Integer(c, *low, 0, 1000000000));
          Count("junction priority");
        }
        continue;
      }
      if (c.name != "connection") {
        Ignore(c);  // controller, surface, boundary, elevationGrid, userData
        continue;
      }
      Attributes(c, {"id", "incomingRoad", "connectingRoad", "contactPoint"}, {"type"});
      JunctionConnection con;
      con.id = Required(c, "id").value;
      con.incoming_road_id = Integer(c, Required(c, "incomingRoad"), 0, 1000000000);
      con.connecting_road_id = Integer(c, Required(c, "connectingRoad"), 0, 1000000000);
      const auto& cp = Required(c, "contactPoint");
      if (cp.value == "start") con.contact = ContactPoint::kStart;
      else if (cp.value == "end") con.contact = ContactPoint::kEnd;
      else Fail(cp.line, "connection.contactPoint: expected start or end, got \"" + cp.value + "\"");
      for (const Element& l : c.children) {
        if (l.name != "laneLink") {
          Ignore(l);
          continue;
        }
        Attributes(l, {"from", "to"});
        con.lane_links.emplace_back(Integer(l, Required(l, "from"), -64, 64), Integer(l, Required(l, "to"), -64, 64));
      }
      out.connections.push_back(std::move(con));
      lines.push_back(c.line);
      Count("junction connection");
    }
    connection_lines_.push_back(lines);
    Count("junction");
    return out;
  }

  struct Geometry {
    int line = 0;
    double s = 0, x = 0, y = 0, hdg = 0;
  };

  const std::string& source_;
  std::vector<Geometry> geometry_;
  std::vector<LinkLines> links_;
  std::vector<int> section_lines_;
  std::vector<std::vector<int>> connection_lines_;
  std::map<std::string, std::pair<int, int>> ignored_;  // element name -> (first line, count)
  std::map<std::string, int> read_;                     // what was read -> count
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
        os << "      <predecessor elementType=\"road\" elementId=\"" << d.predecessor_id << "\" contactPoint=\""
           << (d.predecessor_contact == ContactPoint::kEnd ? "end" : "start") << "\"/>\n";
      if (d.successor_id >= 0)
        os << "      <successor elementType=\"road\" elementId=\"" << d.successor_id << "\" contactPoint=\""
           << (d.successor_contact == ContactPoint::kEnd ? "end" : "start") << "\"/>\n";
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
      const Vec3 frame = road.SectionFrame(i);
      const double x = frame.x(), y = frame.y(), hdg = frame.z();
      os << "      <geometry s=\"" << Num(s0) << "\" x=\"" << Num(x) << "\" y=\"" << Num(y) << "\" hdg=\"" << Num(hdg)
         << "\" length=\"" << Num(sec.length_m) << "\">\n";
      if (sec.kind == GeometryKind::kPoly3)
        os << "        <poly3 a=\"" << Num(sec.v_poly[0]) << "\" b=\"" << Num(sec.v_poly[1]) << "\" c=\""
           << Num(sec.v_poly[2]) << "\" d=\"" << Num(sec.v_poly[3]) << "\"/>\n";
      else if (sec.kind == GeometryKind::kParamPoly3)
        os << "        <paramPoly3 aU=\"" << Num(sec.u_poly[0]) << "\" bU=\"" << Num(sec.u_poly[1]) << "\" cU=\""
           << Num(sec.u_poly[2]) << "\" dU=\"" << Num(sec.u_poly[3]) << "\" aV=\"" << Num(sec.v_poly[0]) << "\" bV=\""
           << Num(sec.v_poly[1]) << "\" cV=\"" << Num(sec.v_poly[2]) << "\" dV=\"" << Num(sec.v_poly[3])
           << "\" pRange=\"" << (sec.p_normalized ? "normalized" : "arcLength") << "\"/>\n";
      else if (sec.curvature_start_1pm != sec.curvature_end_1pm)
        os << "        <spiral curvStart=\"" << Num(sec.curvature_start_1pm) << "\" curvEnd=\""
           << Num(sec.curvature_end_1pm) << "\"/>\n";
      else if (sec.curvature_start_1pm != 0)
        os << "        <arc curvature=\"" << Num(sec.curvature_start_1pm) << "\"/>\n";
      else
        os << "        <line/>\n";
      os << "      </geometry>\n";
    }
    os << "    </planView>\n";
    if (!d.elevation.empty()) {
      os << "    <elevationProfile>\n";
      WriteCubics(os, "      ", "elevation", "s", d.elevation);
      os << "    </elevationProfile>\n";
    } else {
      os << "    <elevationProfile>\n      <elevation s=\"0\" a=\"" << Num(d.start_height_m) << "\" b=\"" << Num(d.grade)
         << "\" c=\"0\" d=\"0\"/>\n    </elevationProfile>\n";
    }
    if (d.superelevation.empty()) {
      os << "    <lateralProfile/>\n";
    } else {
      os << "    <lateralProfile>\n";
      WriteCubics(os, "      ", "superelevation", "s", d.superelevation);
      os << "    </lateralProfile>\n";
    }
    if (road.HasLaneProfile()) {
      os << "    <lanes>\n";
      WriteCubics(os, "      ", "laneOffset", "s", d.lane_offset);
      for (const LaneSectionDef& ls : d.lane_sections) WriteLaneSection(os, ls);
      os << "    </lanes>\n";
      WriteObjectsAndSignals(os, d);
      os << "  </road>\n";
      continue;
    }
    os << "    <lanes>\n";
    WriteCubics(os, "      ", "laneOffset", "s", d.lane_offset);
    os << "      <laneSection s=\"0\">\n";
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
    WriteObjectsAndSignals(os, d);
    os << "  </road>\n";
  }
  os << "</OpenDRIVE>\n";
  return os.str();
}

std::vector<RoadDef> ReadOpenDrive(const std::string& text, const std::string& source_name) {
  return Importer(source_name).Read(text).roads;
}

OpenDriveMap ReadOpenDriveMap(const std::string& text, const std::string& source_name) {
  return Importer(source_name).Read(text);
}

RoadNetwork LoadOpenDriveText(const std::string& text, const std::string& source_name) {
  return RoadNetwork(ReadOpenDrive(text, source_name));
}

RoadNetwork LoadOpenDriveFile(const std::string& path) { return RoadNetwork(LoadOpenDriveMapFile(path).roads); }

OpenDriveMap LoadOpenDriveMapFile(const std::string& path) {
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
  return ReadOpenDriveMap(ss.str(), path);
}

}  // namespace platoon::road
