// OpenSCENARIO 1.x -> platoon session: entities to road traffic nodes (or seats), the storyboard to [[event]]s.
#include "platoon/scenario/osc.hpp"

#include "platoon/road/session_road.hpp"
#include "../road/xml_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

namespace platoon::scenario {
namespace osc_mapping_detail {

using config::ActionDef;
using config::ConditionDef;
using config::ConfigError;
using config::EventDef;
using road::xml::Element;
using Status = CoverageItem::Status;
using Dnf = std::vector<std::vector<ConditionDef>>;  // OR of AND groups

// Names usable as node names and entity references: letters, digits, '_', '-', '.'; others become '_'.
std::string Sanitize(const std::string& name) {
  std::string out;
  for (const char c : name)
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ? c : '_';
  if (out.empty()) out = "_";
  return out.substr(0, 100);
}

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// AND of two DNFs: every pair of groups joined.
Dnf Cross(const Dnf& a, const Dnf& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  Dnf out;
  for (const auto& x : a)
    for (const auto& y : b) {
      auto g = x;
      g.insert(g.end(), y.begin(), y.end());
      out.push_back(std::move(g));
    }
  return out;
}

ConditionDef EventState(const std::string& event, const std::string& state) {
  ConditionDef c;
  c.kind = ConditionDef::Kind::kEventState;
  c.text = event;
  c.state = state;
  return c;
}

// A pedestrian walks straight on from its start along a path this long, and stands at its end, in m.
constexpr double kWalkerPathM = 1000.0;

// A storyboard element's platoon events (for StoryboardElementState conditions).
struct ElementEvents {
  std::string started_event;            // act: its start event; "" for others (they start with their events)
  std::vector<std::string> events;      // the events it holds (or is)
};

struct Start {
  double s_m = 0;
  int lane = -1;
  double offset_m = 0;
  double speed_mps = 0;
  bool placed = false;
  bool has_speed = false;
};

class Mapper {
 public:
  Mapper(std::string file, std::string base_dir, const OscOptions& options)
      : file_(std::move(file)), base_dir_(std::move(base_dir)), options_(options) {
    out_.file = file_;
  }

  OscMapping Run(const std::string& text) {
    const Element root = Parse(text, file_);
    if (root.name != "OpenSCENARIO")
      throw ConfigError(fmt::format("{}:{}: expected the root element OpenSCENARIO, got {}", file_, root.line, root.name));
    Cover(root, "OpenSCENARIO", Status::kMapped, "the scenario");
    // Order matters: parameters, catalogs and the road before entities; entities before the storyboard.
    if (const Element* h = Child(root, "FileHeader")) {
      Cover(*h, "OpenSCENARIO/FileHeader", Status::kMapped,
            "revMajor/revMinor checked; description names the session");
      const std::string major = Attr(*h, "revMajor", false), minor = Attr(*h, "revMinor", false);
      if (!major.empty() && (major != "1" || (minor != "" && (minor < "0" || minor > "3" || minor.size() != 1))))
        Refuse(*h, "OpenSCENARIO/FileHeader", "OpenSCENARIO " + major + "." + minor + " (supported: 1.0 to 1.3)");
      out_.name = Attr(*h, "description", false);
    }
    if (const Element* p = Child(root, "ParameterDeclarations")) Parameters(*p, "OpenSCENARIO/ParameterDeclarations");
    // Values given from outside ([scenario] parameters, a batch run): they replace the declared ones.
    for (const auto& [name, value] : options_.parameters) {
      if (!params_.count(name)) {
        std::string declared;
        for (const auto& [n, v] : params_) declared += (declared.empty() ? "" : ", ") + n;
        throw ConfigError(fmt::format("{}: parameter {} is not declared in the scenario (its parameters: {})",
                                      options_.parameters_where.empty() ? file_ : options_.parameters_where, name,
                                      declared.empty() ? "none" : declared));
      }
      params_[name] = value;
    }
    if (const Element* c = Child(root, "CatalogLocations")) Catalogs(*c);
    if (const Element* r = Child(root, "RoadNetwork")) RoadNetwork(*r);
    if (const Element* e = Child(root, "Entities")) Entities(*e);
    if (const Element* s = Child(root, "Storyboard")) Storyboard(*s);
    else Refuse(root, "OpenSCENARIO", "a scenario without a Storyboard (a catalog; or a parameter distribution file, which platoon batch runs)");
    // Every element that nothing above read is refused by name: nothing is dropped silently.
    Sweep(root, "");
    // In file order (the scenario first, then each catalog file).
    std::stable_sort(out_.coverage.begin(), out_.coverage.end(), [&](const CoverageItem& a, const CoverageItem& b) {
      if (a.file != b.file) return a.file == file_ || (b.file != file_ && a.file < b.file);
      return a.line < b.line;
    });
    out_.params.assign(params_.begin(), params_.end());
    return std::move(out_);
  }

 private:
  // --- elements, attributes and coverage ---
  Element Parse(const std::string& text, const std::string& name) {
    try {
      return road::xml::Parse(text, name);
    } catch (const road::xml::XmlError& e) {
      throw ConfigError(e.what());
    }
  }
  std::string Where(const Element& e) const { return fmt::format("{}:{}", cur_file_.empty() ? file_ : cur_file_, e.line); }
  void Cover(const Element& e, const std::string& path, Status status, const std::string& why) {
    covered_.insert(&e);
    out_.coverage.push_back(CoverageItem{path, e.line, cur_file_.empty() ? file_ : cur_file_, status, why});
  }
  // An element platoon does not support: an error naming file:line, or (keep_going) a coverage entry.
  void Refuse(const Element& e, const std::string& path, const std::string& why) {
    Cover(e, path, Status::kRefused, why);
    Swallow(e);
    ++out_.refused;
    if (!options_.keep_going)
      throw ConfigError(fmt::format("{}: {} is not supported: {}", Where(e), e.name, why));
  }
  void Warn(const Element& e, const std::string& what) { out_.warnings.push_back(Where(e) + ": " + what); }
  const Element* Child(const Element& e, const std::string& name) {
    for (const auto& c : e.children)
      if (c.name == name) {
        seen_.insert(&c);
        return &c;
      }
    return nullptr;
  }
  std::vector<const Element*> Children(const Element& e, const std::string& name) {
    std::vector<const Element*> out;
    for (const auto& c : e.children)
      if (c.name == name) {
        seen_.insert(&c);
        out.push_back(&c);
      }
    return out;
  }
  // The one child element of a choice (SpeedActionTarget's AbsoluteTargetSpeed or RelativeTargetSpeed).
  const Element* OneChild(const Element& e) {
    if (e.children.size() != 1)
      throw ConfigError(fmt::format("{}: {}: expected one child element, got {}", Where(e), e.name, e.children.size()));
    seen_.insert(&e.children[0]);
    return &e.children[0];
  }
  // An attribute with parameters resolved: "$name" is the parameter's value, "${expr}" the expression's.
  std::string Attr(const Element& e, const std::string& name, bool required = true) {
    const road::xml::Attribute* a = e.Find(name);
    if (!a) {
      if (required) throw ConfigError(fmt::format("{}: {}: expected attribute {}, got none", Where(e), e.name, name));
      return {};
    }
    return Resolve(a->value, e, name);
  }
  std::string Resolve(const std::string& v, const Element& e, const std::string& attr) {
    if (v.size() >= 3 && v.compare(0, 2, "${") == 0 && v.back() == '}') {
      try {
        const double x = EvaluateExpression(v.substr(2, v.size() - 3), params_);
        return fmt::format("{}", x);
      } catch (const std::invalid_argument& err) {
        throw ConfigError(fmt::format("{}: {}.{}: {}", Where(e), e.name, attr, err.what()));
      }
    }
    if (v.size() >= 2 && v[0] == '$') {
      const auto it = params_.find(v.substr(1));
      if (it == params_.end())
        throw ConfigError(fmt::format("{}: {}.{}: expected a declared parameter, got {}", Where(e), e.name, attr, v));
      return it->second;
    }
    return v;
  }
  double Num(const Element& e, const std::string& name, std::optional<double> fallback = std::nullopt) {
    const std::string v = Attr(e, name, !fallback.has_value());
    if (v.empty() && fallback) return *fallback;
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !std::isfinite(x))
      throw ConfigError(fmt::format("{}: {}.{}: expected a number, got \"{}\"", Where(e), e.name, name, v));
    return x;
  }
  bool Bool(const Element& e, const std::string& name, bool fallback) {
    const std::string v = Attr(e, name, false);
    if (v.empty()) return fallback;
    if (v == "true" || v == "1") return true;
    if (v == "false" || v == "0") return false;
    throw ConfigError(fmt::format("{}: {}.{}: expected true or false, got \"{}\"", Where(e), e.name, name, v));
  }
  std::string Choice(const Element& e, const std::string& name, const std::vector<std::string>& allowed,
                     const std::string& fallback = {}) {
    const std::string v = Attr(e, name, fallback.empty());
    if (v.empty()) return fallback;
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw ConfigError(fmt::format("{}: {}.{}: expected one of {}, got \"{}\"", Where(e), e.name, name, list, v));
    }
    return v;
  }
  // The element's descendants are listed with its status: they are part of what its coverage entry says.
  void MarkTree(const Element& e, const std::string& path, Status status) {
    for (const auto& k : e.children) {
      seen_.insert(&k);
      Cover(k, path + "/" + k.name, status, "part of " + e.name);
      MarkTree(k, path + "/" + k.name, status);
    }
  }
  // Descendants of a refused element: not listed again (the refusal names the element).
  void Swallow(const Element& e) {
    for (const auto& k : e.children) {
      seen_.insert(&k);
      covered_.insert(&k);
      Swallow(k);
    }
  }
  // Elements nothing read: ignored where harmless, refused otherwise.
  void Sweep(const Element& e, const std::string& parent) {
    const std::string path = parent.empty() ? e.name : parent + "/" + e.name;
    if (!covered_.count(&e)) {
      static const std::set<std::string> harmless = {
          "Properties", "Property", "File", "Axles", "FrontAxle", "RearAxle", "AdditionalAxle", "License",
          "Orientation", "SceneGraphFile", "ControllerCatalog", "PedestrianCatalog", "MiscObjectCatalog",
          "EnvironmentCatalog", "ManeuverCatalog", "TrajectoryCatalog", "RouteCatalog", "Directory"};
      if (seen_.count(&e)) Cover(e, path, Status::kMapped, "read with " + parent.substr(parent.rfind('/') + 1));
      else if (harmless.count(e.name)) Cover(e, path, Status::kIgnored, "no effect in platoon");
      else Refuse(e, path, "platoon reads no " + e.name + " here (docs/SCENARIOS.md lists what it maps)");
    }
    for (const auto& c : e.children) Sweep(c, path);
  }

  // --- parameters, catalogs, road ---
  void Parameters(const Element& e, const std::string& path) {
    Cover(e, path, Status::kMapped, "scenario parameters");
    for (const Element* p : Children(e, "ParameterDeclaration")) {
      const std::string name = Attr(*p, "name");
      const std::string value = Attr(*p, "value");
      if (params_.count(name)) Warn(*p, "parameter " + name + " declared again: the new value " + value + " holds");
      params_[name] = value;
      Cover(*p, path + "/ParameterDeclaration", Status::kMapped, name + " = " + value);
      for (const Element* c : Children(*p, "ConstraintGroup"))
        Refuse(*c, path + "/ParameterDeclaration/ConstraintGroup", "value constraints (1.2) are not checked");
    }
  }
  void Catalogs(const Element& e) {
    Cover(e, "OpenSCENARIO/CatalogLocations", Status::kMapped, "catalog folders");
    for (const auto& c : e.children) {
      seen_.insert(&c);
      if (c.name == "VehicleCatalog") {
        const Element* d = Child(c, "Directory");
        if (!d) throw ConfigError(Where(c) + ": VehicleCatalog: expected a Directory element, got none");
        vehicle_catalog_dir_ = Path(Attr(*d, "path"));
        Cover(c, "OpenSCENARIO/CatalogLocations/VehicleCatalog", Status::kMapped, vehicle_catalog_dir_);
      } else if (c.name == "PedestrianCatalog") {
        const Element* d = Child(c, "Directory");
        if (!d) throw ConfigError(Where(c) + ": PedestrianCatalog: expected a Directory element, got none");
        pedestrian_catalog_dir_ = Path(Attr(*d, "path"));
        Cover(c, "OpenSCENARIO/CatalogLocations/PedestrianCatalog", Status::kMapped, pedestrian_catalog_dir_);
      } else {
        Cover(c, "OpenSCENARIO/CatalogLocations/" + c.name, Status::kIgnored,
              "only vehicle and pedestrian catalogs are read; a reference into this catalog is refused where it stands");
      }
    }
  }
  std::string Path(const std::string& p) const {
    if (p.empty() || p.front() == '/' || base_dir_.empty()) return p;
    return base_dir_ + "/" + p;
  }
  void RoadNetwork(const Element& e) {
    Cover(e, "OpenSCENARIO/RoadNetwork", Status::kMapped, "the session's road");
    if (const Element* l = Child(e, "LogicFile")) {
      const std::string path = Attr(*l, "filepath");
      if (path.empty()) {
        Cover(*l, "OpenSCENARIO/RoadNetwork/LogicFile", Status::kIgnored, "empty filepath: the session's [road]");
      } else {
        out_.road_file = Path(path);
        Cover(*l, "OpenSCENARIO/RoadNetwork/LogicFile", Status::kMapped,
              options_.road ? "the session's [road] is used instead" : "[road] file = " + out_.road_file);
      }
    }
    for (const Element* s : Children(e, "SceneGraphFile"))
      Cover(*s, "OpenSCENARIO/RoadNetwork/SceneGraphFile", Status::kIgnored, "platoon draws the road itself");
    for (const Element* s : Children(e, "TrafficSignals"))
      Refuse(*s, "OpenSCENARIO/RoadNetwork/TrafficSignals", "traffic signal controllers");
  }
  const road::Road& Road(const Element& at) {
    if (!road_) {
      config::RoadSessionDef def;
      if (options_.road) def = *options_.road;
      else if (!out_.road_file.empty()) def.file = out_.road_file;
      road_from_file_ = !def.file.empty();
      try {
        road_ = std::make_unique<road::Road>(road::SessionRoad(def));
      } catch (const ConfigError& err) {
        throw ConfigError(Where(at) + ": the road for this position: " + err.what());
      }
    }
    return *road_;
  }

  // --- entities ---
  void Entities(const Element& e) {
    Cover(e, "OpenSCENARIO/Entities", Status::kMapped, "vehicles of the session");
    for (const Element* o : Children(e, "ScenarioObject")) {
      const std::string name = Attr(*o, "name");
      const std::string path = "OpenSCENARIO/Entities/ScenarioObject";
      if (entities_.count(name)) throw ConfigError(Where(*o) + ": ScenarioObject: duplicate entity name \"" + name + "\"");
      bool human = false;
      if (const Element* c = Child(*o, "ObjectController")) human = Controller(*c, path + "/ObjectController");
      const Element* v = Child(*o, "Vehicle");
      const Element* ref = Child(*o, "CatalogReference");
      if (const Element* misc = Child(*o, "MiscObject"); misc && !v && !ref) {
        MiscObject(name, *o, *misc, path + "/MiscObject");
        continue;
      }
      if (const Element* ped = Child(*o, "Pedestrian"); ped && !v && !ref) {
        Pedestrian(*ped, path + "/Pedestrian");
        AddWalker(name, *o, "a pedestrian");
        continue;
      }
      if (const auto [entry, f] = ref ? FindCatalogEntry(*ref, pedestrian_catalog_dir_, "Pedestrian")
                                      : std::pair<const Element*, std::string>{};
          entry) {
        ReadCatalogEntry(*ref, *entry, f, [&, entry = entry] { Pedestrian(*entry, "Catalog/Pedestrian", true); });
        Cover(*ref, path + "/CatalogReference", Status::kMapped,
              "pedestrian " + Attr(*ref, "entryName") + " of catalog " + Attr(*ref, "catalogName") + " (" + f + ")");
        AddWalker(name, *o, "catalog pedestrian " + Attr(*ref, "entryName"));
        continue;
      }
      if (!v && !ref) {
        for (const auto& c : o->children)
          if (c.name == "ExternalObjectReference") {
            seen_.insert(&c);
            Refuse(c, path + "/" + c.name, "platoon's scenario entities are vehicles, pedestrians and MiscObjects");
          }
        if (options_.keep_going) continue;
        throw ConfigError(Where(*o) + ": ScenarioObject \"" + name + "\": expected a Vehicle, Pedestrian, MiscObject or a CatalogReference");
      }
      std::string why = "a vehicle";
      if (v) Vehicle(*v, path + "/Vehicle");
      else why = CatalogVehicle(*ref, path + "/CatalogReference");
      // The entity's node: a seat the session names for it, else a road traffic node of its own.
      const auto seat = options_.seats.find(name);
      entities_.insert(name);
      order_.push_back(name);
      if (seat != options_.seats.end()) {
        out_.entity_node[name] = seat->second;
        Cover(*o, path, Status::kMapped, why + " driven by the seat " + seat->second);
      } else {
        std::string node = Sanitize(name);
        while (node_names_.count(node)) node += "_";
        node_names_.insert(node);
        out_.entity_node[name] = node;
        if (human)
          Warn(*o, "entity " + name + " has an interactive controller but no seat: road traffic drives it "
                   "([scenario] seats = [\"" + name + "=<driver node>\"] gives it to a seat)");
        Cover(*o, path, Status::kMapped, why + " of the road traffic node " + node);
      }
      node_where_[name] = Where(*o) + ": Entities.ScenarioObject \"" + name + "\"";
    }
  }
  // A MiscObject: a static box of the scene, placed by its Init TeleportAction.
  void MiscObject(const std::string& name, const Element& object, const Element& misc, const std::string& path) {
    Attr(misc, "name", false);
    const Element* bb = Child(misc, "BoundingBox");
    const Element* dim = bb ? Child(*bb, "Dimensions") : nullptr;
    if (!dim) throw ConfigError(Where(misc) + ": MiscObject: expected a BoundingBox with Dimensions, got none");
    Misc m;
    m.size_m = Vec3(Num(*dim, "length"), Num(*dim, "width"), Num(*dim, "height"));
    for (int k = 0; k < 3; ++k)
      if (!(m.size_m[k] > 0.0 && m.size_m[k] < 1000.0))
        throw ConfigError(Where(*dim) + ": Dimensions: expected sizes in (0, 1000) m, got " +
                          fmt::format("{} x {} x {}", m.size_m.x(), m.size_m.y(), m.size_m.z()));
    if (const Element* c = Child(*bb, "Center")) {
      m.center_m = Vec3(Num(*c, "x"), Num(*c, "y"), Num(*c, "z"));
      seen_.insert(c);
    }
    seen_.insert(dim);
    Cover(*bb, path + "/BoundingBox", Status::kMapped, "the box's size");
    MarkTree(misc, path, Status::kMapped);
    m.where = Where(object);
    misc_[name] = m;
    entities_.insert(name);
    Cover(object, "OpenSCENARIO/Entities/ScenarioObject", Status::kMapped,
          "a static box of the scene (" + Attr(misc, "miscObjectCategory", false) + ")");
  }

  // Whether the controller marks the entity for a human (interactive or external).
  bool Controller(const Element& c, const std::string& path) {
    Cover(c, path, Status::kMapped, "who drives it: a seat named in the session, else road traffic");
    bool human = false;
    std::function<void(const Element&)> scan = [&](const Element& x) {
      seen_.insert(&x);
      for (const auto& a : x.attributes) {
        const std::string v = Lower(a.value);
        if (v.find("interactive") != std::string::npos || v.find("external") != std::string::npos) human = true;
      }
      for (const auto& k : x.children) scan(k);
    };
    for (const auto& k : c.children) scan(k);
    return human;
  }
  void Vehicle(const Element& v, const std::string& path, bool from_catalog = false) {
    Attr(v, "name");
    Cover(v, path, Status::kMapped, "a road traffic car (" + Attr(v, "vehicleCategory", false) + ")");
    if (const Element* b = Child(v, "BoundingBox"))
    {
      Cover(*b, path + "/BoundingBox", Status::kIgnored, "road traffic cars are 4.5 m x 1.8 m boxes");
      MarkTree(*b, path + "/BoundingBox", Status::kIgnored);
    }
    if (const Element* p = Child(v, "Performance"))
      Cover(*p, path + "/Performance", Status::kIgnored, "road traffic keeps within its own acceleration limits");
    for (const Element* a : Children(v, "Axles")) {
      Cover(*a, path + "/Axles", Status::kIgnored, "road traffic has its own vehicle model");
      MarkTree(*a, path + "/Axles", Status::kIgnored);
    }
    if (const Element* p = Child(v, "ParameterDeclarations")) {
      if (!from_catalog) Parameters(*p, path + "/ParameterDeclarations");
      else Cover(*p, path + "/ParameterDeclarations", Status::kMapped, "the entry's parameters, with the reference's assignments");
    }
  }
  // The entry `entryName` of kind `kind` (Vehicle, Pedestrian) in the catalog `catalogName` among the .xosc
  // files of `dir`, and its file; nullptr when there is none.
  std::pair<const Element*, std::string> FindCatalogEntry(const Element& ref, const std::string& dir, const std::string& kind) {
    const std::string catalog = Attr(ref, "catalogName"), entry = Attr(ref, "entryName");
    if (dir.empty()) return {nullptr, ""};
    std::error_code ec;
    std::vector<std::string> files;
    for (const auto& f : std::filesystem::directory_iterator(dir, ec))
      if (IsOpenScenarioPath(f.path().string())) files.push_back(f.path().string());
    if (ec) throw ConfigError(Where(ref) + ": " + kind + "Catalog directory " + dir + ": " + ec.message());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      catalog_docs_.push_back(std::make_unique<Element>(Parse(ss.str(), f)));
      for (const auto& c : catalog_docs_.back()->children) {
        if (c.name != "Catalog" || !c.Find("name") || c.Find("name")->value != catalog) continue;
        for (const auto& v : c.children)
          if (v.name == kind && v.Find("name") && v.Find("name")->value == entry) return {&v, f};
      }
    }
    return {nullptr, ""};
  }
  // Reads catalog entry `v` of file `f` with the reference's parameter assignments over its declarations.
  template <class Read>
  void ReadCatalogEntry(const Element& ref, const Element& v, const std::string& f, Read read) {
    std::map<std::string, std::string> assigned;
    if (const Element* pa = Child(ref, "ParameterAssignments"))
      for (const Element* a : Children(*pa, "ParameterAssignment")) assigned[Attr(*a, "parameterRef")] = Attr(*a, "value");
    const std::string saved = cur_file_;
    const auto saved_params = params_;
    cur_file_ = f;
    if (const Element* pd = Child(v, "ParameterDeclarations"))
      for (const Element* p : Children(*pd, "ParameterDeclaration")) {
        seen_.insert(p);
        params_[Attr(*p, "name")] = Attr(*p, "value");
      }
    for (const auto& [k, val] : assigned) params_[k] = val;
    read();
    cur_file_ = saved;
    params_ = saved_params;
  }
  std::string CatalogVehicle(const Element& ref, const std::string& path) {
    const std::string catalog = Attr(ref, "catalogName"), entry = Attr(ref, "entryName");
    if (vehicle_catalog_dir_.empty())
      throw ConfigError(Where(ref) + ": CatalogReference " + catalog + "/" + entry +
                        ": expected a CatalogLocations/VehicleCatalog directory, got none");
    const auto [v, f] = FindCatalogEntry(ref, vehicle_catalog_dir_, "Vehicle");
    if (!v)
      throw ConfigError(Where(ref) + ": CatalogReference: expected a Vehicle \"" + entry + "\" in a Catalog \"" + catalog +
                        "\" of " + vehicle_catalog_dir_ + ", found none");
    ReadCatalogEntry(ref, *v, f, [&, v = v] { Vehicle(*v, "Catalog/Vehicle", true); });
    Cover(ref, path, Status::kMapped, "vehicle " + entry + " of catalog " + catalog + " (" + f + ")");
    return "catalog vehicle " + entry;
  }

  // A Pedestrian (inline, or the entry a CatalogReference names): a person of a pedestrians node of its own,
  // walking straight on from where Init's TeleportAction puts it, at its Init speed and then the speeds the
  // storyboard's SpeedActions give it.
  void Pedestrian(const Element& p, const std::string& path, bool from_catalog = false) {
    Attr(p, "name", false);
    Cover(p, path, Status::kMapped, "a pedestrian (" + Attr(p, "pedestrianCategory", false) + ")");
    if (const Element* pd = Child(p, "ParameterDeclarations")) {
      if (!from_catalog) Parameters(*pd, path + "/ParameterDeclarations");
      else Cover(*pd, path + "/ParameterDeclarations", Status::kMapped, "the entry's parameters, with the reference's assignments");
    }
    if (const Element* bb = Child(p, "BoundingBox")) {
      Cover(*bb, path + "/BoundingBox", Status::kIgnored, "pedestrians are 0.5 m x 0.6 m x 1.75 m boxes");
      MarkTree(*bb, path + "/BoundingBox", Status::kIgnored);
    }
    for (const auto& c : p.children)
      if (!seen_.count(&c)) {
        Cover(c, path + "/" + c.name, Status::kIgnored, "a pedestrian's " + c.name + " has no effect in platoon");
        MarkTree(c, path + "/" + c.name, Status::kIgnored);
      }
  }
  // The entity of a Pedestrian: a pedestrians node of its own.
  void AddWalker(const std::string& name, const Element& object, const std::string& why) {
    if (Seated(name)) throw ConfigError(Where(object) + ": ScenarioObject \"" + name + "\": a seat drives a car, not a pedestrian");
    std::string node = Sanitize(name);
    while (node_names_.count(node)) node += "_";
    node_names_.insert(node);
    out_.entity_node[name] = node;
    walkers_[name].where = Where(object) + ": Entities.ScenarioObject \"" + name + "\"";
    entities_.insert(name);
    Cover(object, "OpenSCENARIO/Entities/ScenarioObject", Status::kMapped, why + " of the pedestrians node " + node);
  }

  std::string NodeOf(const Element& at, const std::string& entity) {
    const auto it = out_.entity_node.find(entity);
    if (it == out_.entity_node.end())
      throw ConfigError(Where(at) + ": " + at.name + ": expected an entity of the scenario, got \"" + entity + "\"");
    return it->second;
  }
  bool Seated(const std::string& entity) const { return options_.seats.count(entity) > 0; }

  // --- positions ---
  // A position as (s, lane, offset) on the session's road, for the entity's start or a relative reference.
  Start Position(const Element& pos, const std::string& path, bool any_lane = false) {
    const Element* p = OneChild(pos);
    const std::string at = path + "/" + p->name;
    Start s;
    s.placed = true;
    const road::Road* road = nullptr;
    auto lane_of_t = [&](double t) {
      const int lane = road->LaneAt(t);
      s.lane = lane;
      s.offset_m = lane == 0 ? 0 : t - road->LaneCenterOffset(lane);
    };
    if (p->name == "LanePosition") {
      if (!OnSessionRoad(*p, at)) {
        s.placed = false;
        return s;
      }
      s.s_m = Num(*p, "s");
      s.offset_m = Num(*p, "offset", 0.0);
      const std::string lane = Attr(*p, "laneId");
      s.lane = std::atoi(lane.c_str());
      Cover(*p, at, Status::kMapped, fmt::format("s = {} m, lane {} of the session's road", s.s_m, s.lane));
    } else if (p->name == "RoadPosition") {
      if (!OnSessionRoad(*p, at)) {
        s.placed = false;
        return s;
      }
      road = &Road(*p);
      s.s_m = Num(*p, "s");
      lane_of_t(Num(*p, "t"));
      Cover(*p, at, Status::kMapped, fmt::format("s = {} m, lane {}", s.s_m, s.lane));
    } else if (p->name == "WorldPosition") {
      road = &Road(*p);
      const Vec3 w(Num(*p, "x"), Num(*p, "y"), 0.0);
      const road::RoadCoord rc = road->Project(w);
      s.s_m = rc.s_m;
      lane_of_t(rc.t_m);
      Cover(*p, at, Status::kMapped, fmt::format("projected onto the road: s = {:.2f} m, lane {}", s.s_m, s.lane));
    } else if (p->name == "RelativeLanePosition" || p->name == "RelativeObjectPosition") {
      const std::string ref = Attr(*p, "entityRef");
      const auto it = starts_.find(ref);
      if (it == starts_.end() || !it->second.placed)
        throw ConfigError(Where(*p) + ": " + p->name + ".entityRef: expected an entity placed earlier in Init, got \"" + ref + "\"");
      const Start& o = it->second;
      if (p->name == "RelativeLanePosition") {
        const int d = static_cast<int>(std::lround(Num(*p, "dLane")));
        s.lane = o.lane < 0 ? o.lane + d : o.lane - d;
        s.s_m = o.s_m + Num(*p, "ds", 0.0);
        s.offset_m = Num(*p, "offset", 0.0);
        if (s.lane == 0 || (s.lane > 0) != (o.lane > 0))
          throw ConfigError(Where(*p) + ": RelativeLanePosition: lane " + std::to_string(o.lane) + " moved by dLane " +
                            std::to_string(d) + " is no lane on its side of the road");
      } else {
        road = &Road(*p);
        s.s_m = o.s_m + Num(*p, "dx");
        lane_of_t(road->LaneCenterOffset(o.lane) + o.offset_m + Num(*p, "dy"));
      }
      Cover(*p, at, Status::kMapped, fmt::format("relative to {}: s = {} m, lane {}", ref, s.s_m, s.lane));
    } else {
      Refuse(*p, at, "positions supported: WorldPosition, LanePosition, RoadPosition, RelativeLanePosition, "
                     "RelativeObjectPosition");
      s.placed = false;
      return s;
    }
    if (s.lane >= 0 && !(any_lane && s.lane > 0)) {
      Refuse(*p, at, "lane " + std::to_string(s.lane) + ": road traffic drives the lanes right of the reference line "
                     "(negative lane ids)");
      s.placed = false;
    }
    if (s.s_m < 0) throw ConfigError(Where(*p) + ": " + p->name + ": expected s >= 0 m on the road, got " + std::to_string(s.s_m));
    return s;
  }
  // Whether a Lane- or RoadPosition's roadId names the session's road. A road of an OpenDRIVE file has its
  // file's id; a generated road (no LogicFile, no [road] file) takes any id. Refused by line otherwise: the
  // scenario's vehicles drive the one road.
  bool OnSessionRoad(const Element& p, const std::string& at) {
    const std::string id = Attr(p, "roadId");
    const road::Road& road = Road(p);
    if (!road_from_file_ || id == std::to_string(road.Id())) return true;
    Refuse(p, at, fmt::format("road {}: the scenario's vehicles drive the session's road {} (the file's first road, or "
                              "[road] road_id); positions on other roads are not supported yet", id, road.Id()));
    return false;
  }
  // The world point of a position (for ReachPosition and Distance conditions).
  Vec3 WorldPoint(const Element& pos, const std::string& path) {
    const Element* p = OneChild(pos);
    if (p->name == "WorldPosition") {
      Cover(*p, path + "/WorldPosition", Status::kMapped, "the point");
      return Vec3(Num(*p, "x"), Num(*p, "y"), 0.0);
    }
    const Start s = Position(pos, path);
    if (!s.placed) return Vec3::Zero();
    const road::Road& road = Road(pos);
    return road.PointAt(s.s_m, road.LaneCenterOffset(s.lane) + s.offset_m);
  }

  // --- storyboard ---
  void Storyboard(const Element& sb) {
    Cover(sb, "OpenSCENARIO/Storyboard", Status::kMapped, "[[event]]s of the server's scenario system");
    if (const Element* init = Child(sb, "Init")) Init(*init);
    // Entities an AddEntityAction brings in later.
    std::function<void(const Element&)> scan = [&](const Element& x) {
      if (x.name == "EntityAction" && Child(x, "AddEntityAction")) added_later_.insert(Attr(x, "entityRef", false));
      for (const auto& c : x.children) scan(c);
    };
    for (const Element* story : Children(sb, "Story")) scan(*story);
    // Entities become nodes once their start is known; MiscObjects boxes.
    for (const auto& name : order_) MakeNode(name);
    for (const auto& [name, w] : walkers_) {
      if (!w.placed) throw ConfigError(w.where + ": Pedestrian: expected a TeleportAction in Init that places it");
      config::NodeDef n;
      n.name = out_.entity_node[name];
      n.role = protocol::Role::kTraffic;
      n.traffic_model = "pedestrians";
      config::PedestrianDef p;
      const Vec3 dir(std::cos(w.yaw_rad), std::sin(w.yaw_rad), 0.0);
      p.waypoints_m = {w.position_m, w.position_m + kWalkerPathM * dir};
      p.speed_mps = w.speed_mps;
      p.turn_back = false;
      n.pedestrians = {p};
      n.where = w.where;
      out_.nodes.push_back(std::move(n));
    }
    for (const auto& [name, m] : misc_) {
      if (!m.placed) throw ConfigError(m.where + ": MiscObject \"" + name + "\": expected a TeleportAction in Init that places it");
      config::SceneBoxDef b;
      b.id = kOscBoxIdBase + static_cast<uint32_t>(out_.boxes.size());
      const Vec3 c(std::cos(m.yaw_rad) * m.center_m.x() - std::sin(m.yaw_rad) * m.center_m.y(),
                   std::sin(m.yaw_rad) * m.center_m.x() + std::cos(m.yaw_rad) * m.center_m.y(), 0.0);
      b.position_m = Vec3(m.position_m.x() + c.x(), m.position_m.y() + c.y(), 0.0);
      b.size_m = m.size_m;
      b.yaw_rad = m.yaw_rad;
      out_.boxes.push_back(b);
    }
    // Pass 1: names of every act and event, for StoryboardElementState conditions anywhere.
    const auto stories = Children(sb, "Story");
    for (const Element* story : stories) Register(*story);
    // The storyboard's stop trigger: every act and event waits for it not to have fired.
    Dnf not_stopped;
    if (const Element* stop = Child(sb, "StopTrigger")) {
      double delay = 0;
      const Dnf when = Trigger(*stop, "OpenSCENARIO/Storyboard/StopTrigger", &delay);
      if (!when.empty()) {
        EventDef e = MakeEvent("storyboard_stop", *stop, when, delay);
        e.actions.push_back(Mark("storyboard stop", *stop));
        out_.events.push_back(std::move(e));
        ConditionDef c = EventState("storyboard_stop", "started");
        c.negate = true;
        not_stopped = {{c}};
      }
    }
    for (const Element* story : stories) Story(*story, not_stopped);
  }

  void Init(const Element& init) {
    Cover(init, "OpenSCENARIO/Storyboard/Init", Status::kMapped, "where the entities start and how fast");
    const Element* actions = Child(init, "Actions");
    if (!actions) return;
    const std::string path = "OpenSCENARIO/Storyboard/Init/Actions";
    Cover(*actions, path, Status::kMapped, "start placement and speed");
    for (const auto& a : actions->children) {
      seen_.insert(&a);
      if (a.name == "Private" && misc_.count(Attr(a, "entityRef"))) {
        MiscInit(a, path + "/Private");
      } else if (a.name == "Private" && walkers_.count(Attr(a, "entityRef"))) {
        WalkerInit(a, path + "/Private");
      } else if (a.name == "Private") {
        const std::string entity = Attr(a, "entityRef");
        NodeOf(a, entity);
        Cover(a, path + "/Private", Status::kMapped, "the start of " + entity);
        for (const Element* pa : Children(a, "PrivateAction")) InitAction(*pa, entity, path + "/Private/PrivateAction");
      } else if (a.name == "GlobalAction") {
        const Element* g = OneChild(a);
        if (g->name == "ParameterAction" || g->name == "VariableAction") {
          // A parameter set before the start: its starting value.
          ActionDef act;
          if (ParameterAction(*g, path + "/GlobalAction/" + g->name, act) && act.op == "set") params_[act.path] = act.text;
          Cover(a, path + "/GlobalAction", Status::kMapped, "a parameter's starting value");
        } else if (g->name == "EnvironmentAction") {
          Cover(a, path + "/GlobalAction", Status::kIgnored, "set light and weather in the session's [light] and [weather]");
          Cover(*g, path + "/GlobalAction/EnvironmentAction", Status::kIgnored, "the session's [light] and [weather] hold");
          MarkTree(*g, path + "/GlobalAction/EnvironmentAction", Status::kIgnored);
        } else {
          Refuse(*g, path + "/GlobalAction/" + g->name, "global actions in Init: ParameterAction, VariableAction");
        }
      } else {
        Refuse(a, path + "/" + a.name, "Init actions: Private and GlobalAction");
      }
    }
  }
  // A MiscObject's Init: its TeleportAction places the box (the bounding box's centre over the position).
  // Where a TeleportAction's position puts an object or a person, and which way it faces. Any lane, either
  // side (a cone on lane 1, a person on a sidewalk); a RoadPosition's (s, t) as given, on or off the carriageway.
  // Heading: a WorldPosition's h, else the road's direction there with an Orientation's h added.
  std::pair<Vec3, double> PlacedPose(const Element& pos, const std::string& path) {
    const Element* kind = OneChild(pos);
    const std::string at = path + "/" + kind->name;
    if (kind->name == "WorldPosition") {
      Cover(*kind, at, Status::kMapped, "the point");
      return {Vec3(Num(*kind, "x"), Num(*kind, "y"), 0.0), Num(*kind, "h", 0.0)};
    }
    Vec3 point = Vec3::Zero();
    double s_m = 0.0;
    if (kind->name == "RoadPosition") {
      if (!OnSessionRoad(*kind, at)) return {point, 0.0};
      const road::Road& road = Road(*kind);
      s_m = Num(*kind, "s");
      if (!(s_m >= 0.0 && s_m <= road.Length()))
        throw ConfigError(Where(*kind) + ": RoadPosition.s: expected 0 to " + fmt::format("{:.2f}", road.Length()) +
                          " m on the road, got " + fmt::format("{}", s_m));
      point = road.PointAt(s_m, Num(*kind, "t"));
      Cover(*kind, at, Status::kMapped, fmt::format("s = {} m, t = {} m", s_m, Num(*kind, "t")));
    } else {
      const Start st = Position(pos, path, true);
      if (!st.placed) return {point, 0.0};
      const road::Road& road = Road(pos);
      s_m = st.s_m;
      point = road.PointAt(s_m, road.LaneCenterOffsetAt(s_m, st.lane) + st.offset_m);
    }
    double yaw = Road(pos).Heading(s_m);
    if (const Element* o = Child(*kind, "Orientation")) {
      seen_.insert(o);
      yaw += Num(*o, "h", 0.0);
    }
    return {point, yaw};
  }
  void MiscInit(const Element& a, const std::string& path) {
    const std::string entity = Attr(a, "entityRef");
    Misc& m = misc_[entity];
    Cover(a, path, Status::kMapped, "where the box of " + entity + " stands");
    for (const Element* pa : Children(a, "PrivateAction")) {
      const Element* t = OneChild(*pa);
      if (t->name != "TeleportAction") {
        Refuse(*t, path + "/PrivateAction/" + t->name, "a MiscObject stands where its TeleportAction puts it");
        continue;
      }
      Cover(*pa, path + "/PrivateAction", Status::kMapped, "the box's place");
      Cover(*t, path + "/PrivateAction/TeleportAction", Status::kMapped, "the box's place");
      const Element* pos = Child(*t, "Position");
      if (!pos) throw ConfigError(Where(*t) + ": TeleportAction: expected a Position, got none");
      std::tie(m.position_m, m.yaw_rad) = PlacedPose(*pos, path + "/PrivateAction/TeleportAction/Position");
      m.placed = true;
    }
  }
  // Where a pedestrian starts, facing which way (a world position's h, else the road's direction there with an
  // Orientation's h added), and its Init speed.
  void WalkerInit(const Element& a, const std::string& path) {
    const std::string entity = Attr(a, "entityRef");
    Walker& w = walkers_[entity];
    Cover(a, path, Status::kMapped, "where " + entity + " starts and how fast it walks");
    for (const Element* pa : Children(a, "PrivateAction")) {
      const Element* t = OneChild(*pa);
      Cover(*pa, path + "/PrivateAction", Status::kMapped, "the start of " + entity);
      if (t->name == "TeleportAction") {
        Cover(*t, path + "/PrivateAction/TeleportAction", Status::kMapped, "the pedestrian's start");
        const Element* pos = Child(*t, "Position");
        if (!pos) throw ConfigError(Where(*t) + ": TeleportAction: expected a Position, got none");
        std::tie(w.position_m, w.yaw_rad) = PlacedPose(*pos, path + "/PrivateAction/TeleportAction/Position");
        w.placed = true;
      } else if (t->name == "LongitudinalAction" && Child(*t, "SpeedAction")) {
        const Element* sa = Child(*t, "SpeedAction");
        const Element* target = Child(*sa, "SpeedActionTarget");
        const Element* abs = target ? Child(*target, "AbsoluteTargetSpeed") : nullptr;
        if (!abs) {
          Refuse(*t, path + "/PrivateAction/LongitudinalAction", "a pedestrian's Init speed: AbsoluteTargetSpeed");
          continue;
        }
        w.speed_mps = Num(*abs, "value");
        if (!(w.speed_mps >= 0 && w.speed_mps <= 15))
          throw ConfigError(Where(*abs) + ": AbsoluteTargetSpeed: expected a walking or running speed in [0, 15] m/s, got " +
                            std::to_string(w.speed_mps));
        Cover(*t, path + "/PrivateAction/LongitudinalAction", Status::kMapped,
              fmt::format("walks at {} m/s from the start", w.speed_mps));
        MarkTree(*t, path + "/PrivateAction/LongitudinalAction", Status::kMapped);
      } else if (t->name == "ControllerAction" || t->name == "ActivateControllerAction") {
        Cover(*t, path + "/PrivateAction/" + t->name, Status::kIgnored, "the pedestrians node walks it");
        MarkTree(*t, path + "/PrivateAction/" + t->name, Status::kIgnored);
      } else {
        Refuse(*t, path + "/PrivateAction/" + t->name, "a pedestrian's Init actions: TeleportAction, SpeedAction");
      }
    }
  }
  void InitAction(const Element& pa, const std::string& entity, const std::string& path) {
    const Element* a = OneChild(pa);
    Start& s = starts_[entity];
    if (a->name == "TeleportAction") {
      const Element* pos = Child(*a, "Position");
      if (!pos) throw ConfigError(Where(*a) + ": TeleportAction: expected a Position, got none");
      Cover(*a, path + "/TeleportAction", Status::kMapped, "the start position");
      const Start p = Position(*pos, path + "/TeleportAction/Position");
      if (p.placed) {
        s.s_m = p.s_m;
        s.lane = p.lane;
        s.offset_m = p.offset_m;
        s.placed = true;
        if (std::abs(p.offset_m) > 1e-9 && !Seated(entity))
          Warn(*a, fmt::format("{} starts on its lane's centre (road traffic places no offset; it was {} m)", entity,
                               p.offset_m));
      }
    } else if (a->name == "LongitudinalAction") {
      const Element* sa = Child(*a, "SpeedAction");
      if (!sa) {
        Refuse(*OneChild(*a), path + "/LongitudinalAction/" + OneChild(*a)->name, "longitudinal actions: SpeedAction");
        return;
      }
      Cover(*a, path + "/LongitudinalAction", Status::kMapped, "the start speed");
      Cover(*sa, path + "/LongitudinalAction/SpeedAction", Status::kMapped, "the start speed (at once, whatever its dynamics)");
      const Element* target = Child(*sa, "SpeedActionTarget");
      if (!target) throw ConfigError(Where(*sa) + ": SpeedAction: expected a SpeedActionTarget, got none");
      if (const Element* d = Child(*sa, "SpeedActionDynamics"))
      {
        Cover(*d, path + "/LongitudinalAction/SpeedAction/SpeedActionDynamics", Status::kIgnored,
              "an Init speed holds from the start");
        MarkTree(*d, path + "/LongitudinalAction/SpeedAction/SpeedActionDynamics", Status::kIgnored);
      }
      const Element* t = OneChild(*target);
      if (t->name == "AbsoluteTargetSpeed") {
        s.speed_mps = Num(*t, "value");
      } else if (t->name == "RelativeTargetSpeed") {
        const std::string ref = Attr(*t, "entityRef");
        const auto it = starts_.find(ref);
        if (it == starts_.end() || !it->second.has_speed)
          throw ConfigError(Where(*t) + ": RelativeTargetSpeed.entityRef: expected an entity given a speed earlier in Init, got \"" + ref + "\"");
        const bool factor = Attr(*t, "speedTargetValueType", false) == "factor";
        s.speed_mps = factor ? it->second.speed_mps * Num(*t, "value") : it->second.speed_mps + Num(*t, "value");
      } else {
        Refuse(*t, path + "/LongitudinalAction/SpeedAction/SpeedActionTarget/" + t->name, "speed targets: Absolute, Relative");
      }
      if (s.speed_mps < 0 || s.speed_mps > 100)
        throw ConfigError(Where(*t) + ": " + t->name + ": expected a start speed in [0, 100] m/s, got " + std::to_string(s.speed_mps));
      s.has_speed = true;
    } else if (a->name == "ControllerAction" || a->name == "ActivateControllerAction") {
      Cover(*a, path + "/" + a->name, Status::kIgnored, "the session decides who drives: a seat, or road traffic");
      MarkTree(*a, path + "/" + a->name, Status::kIgnored);
    } else {
      Refuse(*a, path + "/" + a->name, "Init private actions: TeleportAction, LongitudinalAction/SpeedAction");
    }
  }
  void MakeNode(const std::string& entity) {
    const Start& s = starts_[entity];
    if (Seated(entity)) {
      out_.starts[entity] = OscMapping::Start{s.s_m, s.lane, s.speed_mps, s.offset_m};
      return;
    }
    config::NodeDef n;
    n.name = out_.entity_node[entity];
    n.role = protocol::Role::kTraffic;
    n.traffic_model = "road";
    // Brought in by an AddEntityAction and not placed in Init: absent until then (its spawn is vehicle 0).
    n.vehicles = added_later_.count(entity) && !s.placed ? 0 : 1;
    n.speed_mps = std::max(1.0, s.speed_mps);
    n.lane_changes = false;
    n.start_given = true;
    n.start_s_m = s.s_m;
    n.start_lane = s.lane;
    n.start_speed_mps = s.speed_mps;
    n.vehicle_names = {entity};
    n.where = node_where_[entity];
    if (!s.placed && n.vehicles > 0)
      out_.warnings.push_back(n.where + ": no TeleportAction in Init: it starts at s = 0 m in lane -1");
    out_.nodes.push_back(std::move(n));
  }

  // Pass 1: the platoon event names of every act, maneuver group, maneuver and event.
  void Register(const Element& story) {
    const std::string sname = Attr(story, "name");
    auto& story_ref = elements_["story:" + sname];
    for (const Element* act : Children(story, "Act")) {
      const std::string aname = Attr(*act, "name");
      auto& act_ref = elements_["act:" + aname];
      act_ref.started_event = Unique("act:" + Sanitize(aname));
      act_event_[act] = act_ref.started_event;
      for (const Element* mg : Children(*act, "ManeuverGroup")) {
        auto& mg_ref = elements_["maneuverGroup:" + Attr(*mg, "name")];
        for (const Element* m : Children(*mg, "Maneuver")) {
          auto& m_ref = elements_["maneuver:" + Attr(*m, "name")];
          for (const Element* ev : Children(*m, "Event")) {
            const std::string ename = Attr(*ev, "name");
            const std::string id = Unique(Sanitize(ename));
            event_name_[ev] = id;
            elements_["event:" + ename].events.push_back(id);
            for (const Element* a : Children(*ev, "Action")) elements_["action:" + Attr(*a, "name")].events.push_back(id);
            for (auto* r : {&m_ref, &mg_ref, &act_ref, &story_ref}) r->events.push_back(id);
          }
        }
      }
    }
  }
  std::string Unique(std::string name) {
    const std::string base = name;
    for (int k = 2; used_names_.count(name); ++k) name = base + "_" + std::to_string(k);
    used_names_.insert(name);
    return name;
  }

  EventDef MakeEvent(const std::string& name, const Element& at, Dnf any, double delay_s) {
    EventDef e;
    e.name = name;
    e.where = Where(at) + ": " + at.name + " \"" + (at.Find("name") ? at.Find("name")->value : name) + "\"";
    if (any.empty()) {
      ConditionDef c;
      c.kind = ConditionDef::Kind::kSimTime;
      c.sim_time_s = 0;
      any = {{c}};
    }
    e.any = std::move(any);
    e.delay_s = delay_s;
    return e;
  }
  ActionDef Mark(const std::string& text, const Element& at) {
    ActionDef a;
    a.kind = ActionDef::Kind::kMark;
    a.name = "mark";
    a.text = text;
    a.where = Where(at);
    return a;
  }

  void Story(const Element& story, const Dnf& not_stopped) {
    const std::string path = "OpenSCENARIO/Storyboard/Story";
    Cover(story, path, Status::kMapped, "its acts");
    if (const Element* p = Child(story, "ParameterDeclarations")) Parameters(*p, path + "/ParameterDeclarations");
    for (const Element* act : Children(story, "Act")) {
      const std::string apath = path + "/Act";
      const std::string act_event = act_event_[act];
      Cover(*act, apath, Status::kMapped, "event " + act_event + " starts it");
      double delay = 0;
      Dnf start;
      if (const Element* t = Child(*act, "StartTrigger")) start = Trigger(*t, apath + "/StartTrigger", &delay);
      EventDef ae = MakeEvent(act_event, *act, Cross(start, not_stopped), delay);
      ae.actions.push_back(Mark("act " + Attr(*act, "name") + " started", *act));
      out_.events.push_back(std::move(ae));
      // Its stop trigger: its events wait for it not to have fired.
      Dnf running = Cross({{EventState(act_event, "started")}}, not_stopped);
      if (const Element* t = Child(*act, "StopTrigger")) {
        double stop_delay = 0;
        const Dnf stop = Trigger(*t, apath + "/StopTrigger", &stop_delay);
        if (!stop.empty()) {
          const std::string stop_event = Unique("act_stop:" + Sanitize(Attr(*act, "name")));
          EventDef se = MakeEvent(stop_event, *t, Cross(Cross({{EventState(act_event, "started")}}, stop), not_stopped),
                                  stop_delay);
          se.actions.push_back(Mark("act " + Attr(*act, "name") + " stopped", *t));
          out_.events.push_back(std::move(se));
          ConditionDef c = EventState(stop_event, "started");
          c.negate = true;
          running = Cross(running, {{c}});
        }
      }
      for (const Element* mg : Children(*act, "ManeuverGroup")) ManeuverGroup(*mg, apath + "/ManeuverGroup", running);
    }
  }

  void ManeuverGroup(const Element& mg, const std::string& path, const Dnf& running) {
    const int count = static_cast<int>(Num(mg, "maximumExecutionCount", 1.0));
    if (count != 1) Warn(mg, "ManeuverGroup maximumExecutionCount " + std::to_string(count) + ": counted per event");
    // The actors: the entities its private actions act on.
    std::vector<std::string> actors;
    if (const Element* a = Child(mg, "Actors")) {
      Cover(*a, path + "/Actors", Status::kMapped, "the entities its actions act on");
      for (const Element* r : Children(*a, "EntityRef")) {
        actors.push_back(Attr(*r, "entityRef"));
        NodeOf(*r, actors.back());
      }
      if (Bool(*a, "selectTriggeringEntities", false) && actors.empty())
        Refuse(*a, path + "/Actors", "selectTriggeringEntities without EntityRefs (name the actors)");
    }
    for (const Element* c : Children(mg, "CatalogReference"))
      Refuse(*c, path + "/CatalogReference", "maneuver catalogs");
    Cover(mg, path, Status::kMapped, "actors of its maneuvers");
    for (const Element* m : Children(mg, "Maneuver")) {
      const std::string mpath = path + "/Maneuver";
      Cover(*m, mpath, Status::kMapped, "a group of events (priorities act within it)");
      if (const Element* p = Child(*m, "ParameterDeclarations")) Parameters(*p, mpath + "/ParameterDeclarations");
      const std::string group = Sanitize(Attr(mg, "name")) + "/" + Sanitize(Attr(*m, "name"));
      for (const Element* ev : Children(*m, "Event")) Event(*ev, mpath + "/Event", running, actors, group);
    }
  }

  void Event(const Element& ev, const std::string& path, const Dnf& running, const std::vector<std::string>& actors,
             const std::string& group) {
    double delay = 0;
    Dnf start;
    if (const Element* t = Child(ev, "StartTrigger")) start = Trigger(*t, path + "/StartTrigger", &delay);
    EventDef e = MakeEvent(event_name_[&ev], ev, Cross(running, start), delay);
    e.max_count = static_cast<int>(Num(ev, "maximumExecutionCount", 1.0));
    if (e.max_count < 1) throw ConfigError(Where(ev) + ": Event.maximumExecutionCount: expected >= 1, got " + std::to_string(e.max_count));
    e.repeat = e.max_count > 1;
    const std::string priority = Choice(ev, "priority", {"overwrite", "override", "skip", "parallel"}, "parallel");
    e.priority = priority == "override" ? "overwrite" : priority;
    e.group = group;
    Cover(ev, path, Status::kMapped,
          fmt::format("event {} (priority {}, at most {} firing{})", e.name, e.priority, e.max_count, e.max_count > 1 ? "s" : ""));
    for (const Element* a : Children(ev, "Action")) {
      const std::string apath = path + "/Action";
      Cover(*a, apath, Status::kMapped, "its actions");
      const Element* kind = OneChild(*a);
      if (kind->name == "PrivateAction") {
        Cover(*kind, apath + "/PrivateAction", Status::kMapped, "for each actor");
        for (const auto& actor : actors) {
          if (Seated(actor)) {
            Warn(*kind, "the seat drives " + actor + ": its private actions are left out");
            continue;
          }
          PrivateAction(*kind, apath + "/PrivateAction", out_.entity_node[actor], e.actions);
        }
        if (actors.empty()) Warn(*kind, "no actors: the action acts on nothing");
      } else if (kind->name == "GlobalAction") {
        Cover(*kind, apath + "/GlobalAction", Status::kMapped, "a parameter set, or an entity entering or leaving");
        const Element* g = OneChild(*kind);
        ActionDef act;
        if (g->name == "ParameterAction" || g->name == "VariableAction") {
          if (ParameterAction(*g, apath + "/GlobalAction/" + g->name, act)) e.actions.push_back(act);
        } else if (g->name == "EntityAction") {
          EntityAction(*g, apath + "/GlobalAction/EntityAction", e.actions);
        } else {
          Refuse(*g, apath + "/GlobalAction/" + g->name, "global actions: ParameterAction, VariableAction, EntityAction");
        }
      } else {
        Refuse(*kind, apath + "/" + kind->name, "actions: PrivateAction, GlobalAction");
      }
    }
    if (e.actions.empty()) e.actions.push_back(Mark("event " + e.name, ev));
    out_.events.push_back(std::move(e));
  }

  bool ParameterAction(const Element& g, const std::string& path, ActionDef& act) {
    const bool variable = g.name == "VariableAction";
    act.kind = ActionDef::Kind::kScenarioParam;
    act.name = "scenario_param";
    act.path = Attr(g, variable ? "variableRef" : "parameterRef");
    act.where = Where(g);
    const Element* op = OneChild(g);
    if (op->name == "SetAction") {
      act.op = "set";
      act.text = Attr(*op, "value");
      Cover(g, path, Status::kMapped, "scenario_param " + act.path + " = " + act.text);
    } else if (op->name == "ModifyAction") {
      const Element* rule = Child(*op, "Rule");
      if (!rule) throw ConfigError(Where(*op) + ": ModifyAction: expected a Rule, got none");
      const Element* r = OneChild(*rule);
      if (r->name == "AddValue") act.op = "add";
      else if (r->name == "MultiplyByValue") act.op = "multiply";
      else throw ConfigError(Where(*r) + ": Rule: expected AddValue or MultiplyByValue, got " + r->name);
      act.amount = Num(*r, "value");
      Cover(g, path, Status::kMapped, fmt::format("scenario_param {} {} {}", act.path, act.op, act.amount));
    } else {
      Refuse(*op, path + "/" + op->name, "parameter actions: SetAction, ModifyAction");
      return false;
    }
    if (!variable && !params_.count(act.path))
      throw ConfigError(Where(g) + ": ParameterAction.parameterRef: expected a declared parameter, got \"" + act.path + "\"");
    return true;
  }

  // AddEntityAction: the entity's road traffic node spawns its vehicle there (absent until then, unless Init
  // placed it); DeleteEntityAction: the vehicle leaves the session.
  void EntityAction(const Element& g, const std::string& path, std::vector<ActionDef>& out) {
    const std::string ref = Attr(g, "entityRef");
    const Element* k = OneChild(g);
    if (misc_.count(ref)) {
      Refuse(*k, path + "/" + k->name, "a MiscObject is a static box of the scene from the start to the end");
      return;
    }
    const std::string node = NodeOf(g, ref);
    if (Seated(ref)) {
      Refuse(*k, path + "/" + k->name, "the seat's car stays in the session");
      return;
    }
    ActionDef act;
    act.where = Where(*k);
    if (k->name == "DeleteEntityAction") {
      act.kind = ActionDef::Kind::kRemove;
      act.name = "remove";
      act.target = node;
      Cover(g, path, Status::kMapped, "the entity leaves or enters");
      Cover(*k, path + "/DeleteEntityAction", Status::kMapped, "remove: " + ref + " leaves the session");
      out.push_back(act);
    } else if (k->name == "AddEntityAction" && walkers_.count(ref)) {
      Refuse(*k, path + "/AddEntityAction", "a pedestrian is placed by its Init TeleportAction");
    } else if (k->name == "AddEntityAction") {
      const Element* pos = Child(*k, "Position");
      if (!pos) throw ConfigError(Where(*k) + ": AddEntityAction: expected a Position, got none");
      const Start p = Position(*pos, path + "/AddEntityAction/Position");
      if (!p.placed) return;
      act.kind = ActionDef::Kind::kSpawn;
      act.name = "spawn";
      act.node = node;
      act.s_m = p.s_m;
      act.lane = p.lane;
      // It enters at its Init speed (an Init SpeedAction of an entity placed later), else the node's.
      if (const auto st = starts_.find(ref); st != starts_.end() && st->second.has_speed) act.speed_mps = st->second.speed_mps;
      Cover(g, path, Status::kMapped, "the entity leaves or enters");
      Cover(*k, path + "/AddEntityAction", Status::kMapped,
            fmt::format("spawn: {} enters at s = {} m, lane {}", ref, p.s_m, p.lane));
      out.push_back(act);
    } else {
      Refuse(*k, path + "/" + k->name, "entity actions: AddEntityAction, DeleteEntityAction");
    }
  }

  static std::string ShapeName(const std::string& osc) {
    return osc == "step" ? "step" : osc == "linear" ? "linear" : osc == "sinusoidal" ? "sinusoidal" : "cubic";
  }

  void PrivateAction(const Element& pa, const std::string& path, const std::string& node, std::vector<ActionDef>& out) {
    const Element* a = OneChild(pa);
    const std::string apath = path + "/" + a->name;
    const bool walker = std::any_of(walkers_.begin(), walkers_.end(),
                                    [&](const auto& w) { return out_.entity_node[w.first] == node; });
    if (walker && !(a->name == "LongitudinalAction" && Child(*a, "SpeedAction"))) {
      Refuse(*a, apath, "a pedestrian's actions: LongitudinalAction/SpeedAction (it walks straight on at the new speed)");
      return;
    }
    ActionDef act;
    act.target = node;
    act.where = Where(*a);
    if (a->name == "LongitudinalAction") {
      const Element* sa = Child(*a, "SpeedAction");
      if (!sa) {
        Refuse(*OneChild(*a), apath + "/" + OneChild(*a)->name, "longitudinal actions: SpeedAction");
        return;
      }
      Cover(*a, apath, Status::kMapped, "a speed change");
      act.kind = ActionDef::Kind::kSpeed;
      act.name = "speed";
      const Element* dyn = Child(*sa, "SpeedActionDynamics");
      const Element* target = Child(*sa, "SpeedActionTarget");
      if (!dyn || !target) throw ConfigError(Where(*sa) + ": SpeedAction: expected SpeedActionDynamics and SpeedActionTarget");
      act.shape = ShapeName(Choice(*dyn, "dynamicsShape", {"linear", "cubic", "sinusoidal", "step"}));
      act.dimension = Choice(*dyn, "dynamicsDimension", {"rate", "time", "distance"});
      act.amount = act.shape == "step" ? 0.0 : Num(*dyn, "value");
      if (act.shape != "step" && act.amount <= 0)
        throw ConfigError(Where(*dyn) + ": SpeedActionDynamics.value: expected > 0, got " + std::to_string(act.amount));
      const Element* t = OneChild(*target);
      std::string what;
      if (t->name == "AbsoluteTargetSpeed") {
        act.speed_mps = Num(*t, "value");
        what = fmt::format("to {} m/s", act.speed_mps);
      } else if (t->name == "RelativeTargetSpeed") {
        const std::string ref = Attr(*t, "entityRef");
        act.relative_to = out_.entity_node.count(ref) ? NodeOf(*t, ref) : NodeOf(*t, ref);
        act.factor = Choice(*t, "speedTargetValueType", {"delta", "factor"}) == "factor";
        act.delta_mps = Num(*t, "value");
        if (Bool(*t, "continuous", false))
          Warn(*t, "RelativeTargetSpeed continuous = true: the target is taken once, when the action starts");
        what = fmt::format("relative to {} ({} {})", ref, act.factor ? "factor" : "delta", act.delta_mps);
      } else {
        Refuse(*t, apath + "/SpeedAction/SpeedActionTarget/" + t->name, "speed targets: Absolute, Relative");
        return;
      }
      Cover(*sa, apath + "/SpeedAction", Status::kMapped,
            fmt::format("speed {}, {} {}", what, act.shape,
                        act.dimension == "rate"   ? fmt::format("at {} m/s^2", act.amount)
                        : act.dimension == "time" ? fmt::format("over {} s", act.amount)
                                                  : fmt::format("over {} m", act.amount)));
      if (act.dimension == "rate" && act.shape != "linear" && act.shape != "step")
        Refuse(*dyn, apath + "/SpeedAction/SpeedActionDynamics", "a rate with a " + act.shape + " shape (rate is for linear)");
      out.push_back(act);
      return;
    }
    if (a->name == "LateralAction") {
      const Element* l = OneChild(*a);
      Cover(*a, apath, Status::kMapped, "a lateral motion");
      if (l->name == "LaneChangeAction") {
        act.kind = ActionDef::Kind::kChangeLane;
        act.name = "change_lane";
        act.offset_m = Num(*l, "targetLaneOffset", 0.0);
        const Element* dyn = Child(*l, "LaneChangeActionDynamics");
        const Element* target = Child(*l, "LaneChangeTarget");
        if (!dyn || !target) throw ConfigError(Where(*l) + ": LaneChangeAction: expected LaneChangeActionDynamics and LaneChangeTarget");
        act.shape = ShapeName(Choice(*dyn, "dynamicsShape", {"linear", "cubic", "sinusoidal", "step"}));
        const std::string dim = Choice(*dyn, "dynamicsDimension", {"rate", "time", "distance"});
        double duration = act.shape == "step" ? 0.0 : Num(*dyn, "value");
        if (dim == "distance") {
          // Over a distance: the time at the actor's start speed.
          double v = 0;
          for (const auto& [ent, n] : out_.entity_node)
            if (n == node) v = starts_[ent].speed_mps;
          if (v <= 0) {
            Refuse(*dyn, apath + "/LaneChangeAction/LaneChangeActionDynamics",
                   "a lane change over a distance by an entity with no start speed (give its duration: dynamicsDimension time)");
            return;
          }
          Warn(*dyn, fmt::format("lane change over {} m: taken as {} s at the start speed {} m/s", duration, duration / v, v));
          duration /= v;
        } else if (dim == "rate") {
          Refuse(*dyn, apath + "/LaneChangeAction/LaneChangeActionDynamics", "a lane change rate (give its duration: time)");
          return;
        }
        act.duration_s = duration;
        if (act.shape != "step" && act.duration_s <= 0)
          throw ConfigError(Where(*dyn) + ": LaneChangeActionDynamics.value: expected > 0, got " + std::to_string(duration));
        const Element* t = OneChild(*target);
        if (t->name == "RelativeTargetLane") {
          const std::string ref = Attr(*t, "entityRef");
          const std::string ref_node = NodeOf(*t, ref);
          act.relative_to = ref_node == node ? "self" : ref_node;
          act.direction = static_cast<int>(std::lround(Num(*t, "value")));
        } else if (t->name == "AbsoluteTargetLane") {
          act.lane = std::atoi(Attr(*t, "value").c_str());
          if (act.lane >= 0)
            Refuse(*t, apath + "/LaneChangeAction/LaneChangeTarget/AbsoluteTargetLane",
                   "lane " + std::to_string(act.lane) + ": road traffic drives the lanes right of the reference line");
        } else {
          Refuse(*t, apath + "/LaneChangeAction/LaneChangeTarget/" + t->name, "lane targets: Relative, Absolute");
          return;
        }
        Cover(*l, apath + "/LaneChangeAction", Status::kMapped,
              fmt::format("change_lane {} over {} s{}", act.shape, act.duration_s,
                          act.offset_m != 0 ? fmt::format(", {} m off the centre", act.offset_m) : std::string()));
        out.push_back(act);
        return;
      }
      if (l->name == "LaneOffsetAction") {
        act.kind = ActionDef::Kind::kLaneOffset;
        act.name = "lane_offset";
        if (Bool(*l, "continuous", false)) Warn(*l, "LaneOffsetAction continuous = true: the offset is held until changed");
        const Element* dyn = Child(*l, "LaneOffsetActionDynamics");
        const Element* target = Child(*l, "LaneOffsetTarget");
        if (!dyn || !target) throw ConfigError(Where(*l) + ": LaneOffsetAction: expected LaneOffsetActionDynamics and LaneOffsetTarget");
        act.shape = ShapeName(Choice(*dyn, "dynamicsShape", {"linear", "cubic", "sinusoidal", "step"}));
        const Element* t = OneChild(*target);
        if (t->name != "AbsoluteTargetLaneOffset") {
          Refuse(*t, apath + "/LaneOffsetAction/LaneOffsetTarget/" + t->name, "lane offset targets: AbsoluteTargetLaneOffset");
          return;
        }
        act.offset_m = Num(*t, "value");
        // The duration that keeps the peak lateral acceleration at maxLateralAcc for a move from the centre:
        // sinusoidal pi^2 d / (2 T^2), cubic 6 d / T^2, linear as cubic.
        const double a_max = Num(*dyn, "maxLateralAcc", 0.5);
        const double d = std::abs(act.offset_m);
        if (act.shape == "step" || d == 0) act.duration_s = 0;
        else if (act.shape == "sinusoidal") act.duration_s = M_PI * std::sqrt(d / (2 * std::max(a_max, 1e-3)));
        else act.duration_s = std::sqrt(6 * d / std::max(a_max, 1e-3));
        if (act.duration_s <= 0) act.shape = "step";
        Cover(*l, apath + "/LaneOffsetAction", Status::kMapped,
              fmt::format("lane_offset {} m {} over {:.3f} s (from maxLateralAcc {} m/s^2)", act.offset_m, act.shape,
                          act.duration_s, a_max));
        out.push_back(act);
        return;
      }
      Refuse(*l, apath + "/" + l->name, "lateral actions: LaneChangeAction, LaneOffsetAction");
      return;
    }
    if (a->name == "SynchronizeAction") {
      // The target reaches its position when the master reaches its own: a speed profile the server computes
      // at the firing from both distances along the road and the master's speed then.
      act.kind = ActionDef::Kind::kSynchronize;
      act.name = "synchronize";
      const std::string master = Attr(*a, "masterEntityRef");
      act.master = NodeOf(*a, master);
      const Element* master_pos = Child(*a, "TargetPositionMaster");
      const Element* own_pos = Child(*a, "TargetPosition");
      if (!master_pos || !own_pos)
        throw ConfigError(Where(*a) + ": SynchronizeAction: expected TargetPositionMaster and TargetPosition");
      Cover(*master_pos, apath + "/TargetPositionMaster", Status::kMapped, "the master's point");
      Cover(*own_pos, apath + "/TargetPosition", Status::kMapped, "the actor's point");
      const Vec3 pm = WorldPoint(*master_pos, apath + "/TargetPositionMaster");
      const Vec3 pt = WorldPoint(*own_pos, apath + "/TargetPosition");
      act.master_point = {pm.x(), pm.y()};
      act.point = {pt.x(), pt.y()};
      std::string final_what = "its speed on arrival free";
      if (const Element* fs = Child(*a, "FinalSpeed")) {
        const Element* f = OneChild(*fs);
        if (Child(*f, "SteadyState")) {
          Refuse(*Child(*f, "SteadyState"), apath + "/FinalSpeed/" + f->name + "/SteadyState",
                 "a steady state before the target (the speed changes all the way to it)");
          return;
        }
        act.final_speed = true;
        if (f->name == "AbsoluteSpeed") {
          act.speed_mps = Num(*f, "value");
          final_what = fmt::format("arriving at {} m/s", act.speed_mps);
        } else if (f->name == "RelativeSpeedToMaster") {
          act.relative_to = act.master;
          act.factor = Choice(*f, "speedTargetValueType", {"delta", "factor"}) == "factor";
          act.delta_mps = Num(*f, "value");
          final_what = fmt::format("arriving at the master's speed {} {}", act.factor ? "times" : "plus", act.delta_mps);
        } else {
          Refuse(*f, apath + "/FinalSpeed/" + f->name, "final speeds: AbsoluteSpeed, RelativeSpeedToMaster");
          return;
        }
        Cover(*fs, apath + "/FinalSpeed", Status::kMapped, final_what);
        Cover(*f, apath + "/FinalSpeed/" + f->name, Status::kMapped, final_what);
      }
      if (a->Find("targetTolerance") || a->Find("targetToleranceMaster"))
        Warn(*a, "SynchronizeAction tolerances: platoon aims at the points themselves");
      Cover(*a, apath, Status::kMapped,
            fmt::format("synchronize with {} at ({:.2f}, {:.2f}) / ({:.2f}, {:.2f}), {}", master, pt.x(), pt.y(), pm.x(),
                        pm.y(), final_what));
      out.push_back(act);
      return;
    }
    if (a->name == "RoutingAction") {
      const Element* r = OneChild(*a);
      if (r->name != "FollowTrajectoryAction") {
        Refuse(*r, apath + "/" + r->name, "routing actions: FollowTrajectoryAction (routes are not read)");
        return;
      }
      Cover(*a, apath, Status::kMapped, "a trajectory");
      FollowTrajectory(*r, apath + "/FollowTrajectoryAction", act, out);
      return;
    }
    if (a->name == "TeleportAction") {
      Refuse(*a, apath, "a TeleportAction during the run (only in Init)");
      return;
    }
    if (a->name == "ControllerAction" || a->name == "ActivateControllerAction" || a->name == "VisibilityAction") {
      Cover(*a, apath, Status::kIgnored, a->name == "VisibilityAction" ? "every vehicle is seen by every sensor and seat"
                                                                        : "the session decides who drives");
      MarkTree(*a, apath, Status::kIgnored);
      return;
    }
    Refuse(*a, apath, "private actions: LongitudinalAction/SpeedAction, LateralAction (LaneChange, LaneOffset), "
                      "SynchronizeAction, RoutingAction/FollowTrajectoryAction");
  }

  // A FollowTrajectoryAction on a polyline: the vertices' world points across the road, and their times
  // (TimeReference Timing) as times since the action starts.
  void FollowTrajectory(const Element& f, const std::string& path, ActionDef act, std::vector<ActionDef>& out) {
    act.kind = ActionDef::Kind::kFollowPath;
    act.name = "follow_path";
    if (Num(f, "initialDistanceOffset", 0.0) != 0) {
      Refuse(f, path, "an initialDistanceOffset other than 0 (the trajectory starts at its first vertex)");
      return;
    }
    const Element* traj = Child(f, "Trajectory");
    std::string tpath = path + "/Trajectory";
    if (const Element* ref = Child(f, "TrajectoryRef")) {
      Cover(*ref, path + "/TrajectoryRef", Status::kMapped, "the trajectory inline");
      traj = Child(*ref, "Trajectory");
      tpath = path + "/TrajectoryRef/Trajectory";
      if (!traj) {
        Refuse(*OneChild(*ref), path + "/TrajectoryRef/" + OneChild(*ref)->name, "trajectories from catalogs (give it inline)");
        return;
      }
    }
    if (const Element* c = Child(f, "CatalogReference")) {
      Refuse(*c, path + "/CatalogReference", "trajectories from catalogs (give it inline)");
      return;
    }
    if (!traj) throw ConfigError(Where(f) + ": FollowTrajectoryAction: expected a Trajectory or TrajectoryRef, got none");
    if (Bool(*traj, "closed", false)) {
      Refuse(*traj, tpath, "a closed trajectory (it is driven once, from its first vertex to its last)");
      return;
    }
    Attr(*traj, "name");
    if (const Element* pd = Child(*traj, "ParameterDeclarations"))
      if (!pd->children.empty()) {
        Refuse(*pd, tpath + "/ParameterDeclarations", "trajectory parameters (use the scenario's)");
        return;
      }
    const Element* shape = Child(*traj, "Shape");
    if (!shape) throw ConfigError(Where(*traj) + ": Trajectory: expected a Shape, got none");
    const Element* poly = OneChild(*shape);
    if (poly->name != "Polyline") {
      Refuse(*poly, tpath + "/Shape/" + poly->name, "trajectory shapes: Polyline");
      return;
    }
    // Timing: vertex time * scale + offset, relative to the action's start or absolute sim time.
    bool timed = false;
    double scale = 1, offset = 0;
    if (const Element* tr = Child(f, "TimeReference")) {
      const Element* k = OneChild(*tr);
      if (k->name == "Timing") {
        timed = true;
        act.absolute_times = Choice(*k, "domainAbsoluteRelative", {"absolute", "relative"}) == "absolute";
        scale = Num(*k, "scale");
        offset = Num(*k, "offset");
        if (!(scale > 0)) throw ConfigError(Where(*k) + ": Timing.scale: expected > 0, got " + fmt::format("{}", scale));
        Cover(*k, path + "/TimeReference/Timing", Status::kMapped,
              fmt::format("vertex times ({}, scale {}, offset {} s)", act.absolute_times ? "sim time" : "since the start", scale, offset));
      } else if (k->name == "None") {
        Cover(*k, path + "/TimeReference/None", Status::kMapped, "no times: the actor keeps its speed");
      } else {
        throw ConfigError(Where(*k) + ": TimeReference: expected Timing or None, got " + k->name);
      }
      Cover(*tr, path + "/TimeReference", Status::kMapped, timed ? "timed vertices" : "untimed");
    }
    if (const Element* m = Child(f, "TrajectoryFollowingMode")) {
      const std::string mode = Choice(*m, "followingMode", {"position", "follow"});
      Cover(*m, path + "/TrajectoryFollowingMode", Status::kMapped,
            mode == "position" ? "the position on the path" : "followed as a path (as position: road traffic has no steering controller)");
      if (mode == "follow") Warn(*m, "followingMode follow: the actor is moved along the path as with position");
    }
    for (const Element* v : Children(*poly, "Vertex")) {
      const Element* pos = Child(*v, "Position");
      if (!pos) throw ConfigError(Where(*v) + ": Vertex: expected a Position, got none");
      Cover(*pos, tpath + "/Shape/Polyline/Vertex/Position", Status::kMapped, "a point of the path");
      const Vec3 w = WorldPoint(*pos, tpath + "/Shape/Polyline/Vertex/Position");
      act.path_xy.push_back(w.x());
      act.path_xy.push_back(w.y());
      if (timed) {
        if (!v->Find("time")) throw ConfigError(Where(*v) + ": Vertex: expected attribute time (the TimeReference is Timing)");
        const double t = Num(*v, "time") * scale + offset;
        if (!act.times_s.empty() && !(t > act.times_s.back()))
          throw ConfigError(Where(*v) + fmt::format(": Vertex.time: expected a time after the last vertex's, got {} s", t));
        act.times_s.push_back(t);
      } else if (v->Find("time")) {
        Num(*v, "time");
      }
      Cover(*v, tpath + "/Shape/Polyline/Vertex", Status::kMapped, timed ? fmt::format("at {} s", act.times_s.back()) : "untimed");
    }
    if (act.path_xy.size() < 4) throw ConfigError(Where(*poly) + ": Polyline: expected at least 2 vertices, got " + std::to_string(act.path_xy.size() / 2));
    if (act.path_xy.size() / 2 > config::kMaxProfilePoints)
      throw ConfigError(Where(*poly) + ": Polyline: at most " + std::to_string(config::kMaxProfilePoints) + " vertices");
    if (!timed) act.times_s.clear();
    Cover(*poly, tpath + "/Shape/Polyline", Status::kMapped, fmt::format("{} vertices", act.path_xy.size() / 2));
    Cover(*shape, tpath + "/Shape", Status::kMapped, "a polyline");
    Cover(*traj, tpath, Status::kMapped, "the path");
    Cover(f, path, Status::kMapped,
          fmt::format("follow_path through {} points{}", act.path_xy.size() / 2, timed ? ", timed" : ", at the actor's speed"));
    out.push_back(act);
  }

  // --- conditions ---
  // A Trigger as OR of AND groups; a single condition's delay goes to *delay_s.
  Dnf Trigger(const Element& t, const std::string& path, double* delay_s) {
    Cover(t, path, Status::kMapped, "OR of its condition groups");
    Dnf out;
    const auto groups = Children(t, "ConditionGroup");
    size_t conditions = 0;
    for (const Element* g : groups) conditions += Children(*g, "Condition").size();
    for (const Element* g : groups) {
      Cover(*g, path + "/ConditionGroup", Status::kMapped, "AND of its conditions");
      Dnf group;
      bool first = true;
      for (const Element* c : Children(*g, "Condition")) {
        const double delay = Num(*c, "delay", 0.0);
        if (delay < 0) throw ConfigError(Where(*c) + ": Condition.delay: expected >= 0 s, got " + std::to_string(delay));
        if (delay > 0 && conditions != 1) {
          Refuse(*c, path + "/ConditionGroup/Condition",
                 "a delay on one condition of several (a delay is supported on a trigger's only condition)");
          continue;
        }
        if (delay > 0) *delay_s = delay;
        const Dnf one = Condition(*c, path + "/ConditionGroup/Condition");
        group = first ? one : Cross(group, one);
        first = false;
      }
      out.insert(out.end(), group.begin(), group.end());
    }
    return out;
  }

  void Rule(const Element& at, ConditionDef& c, const std::string& rule, double v) {
    if (rule == "greaterThan") c.above = v;
    else if (rule == "greaterOrEqual") c.above = std::nextafter(v, -std::numeric_limits<double>::infinity());
    else if (rule == "lessThan") c.below = v;
    else if (rule == "lessOrEqual") c.below = std::nextafter(v, std::numeric_limits<double>::infinity());
    else if (rule == "equalTo") c.equals = v;
    else if (rule == "notEqualTo") {
      c.equals = v;
      c.negate = !c.negate;
    } else {
      throw ConfigError(Where(at) + ": " + at.name + ".rule: expected greaterThan, lessThan, equalTo, greaterOrEqual, "
                                                     "lessOrEqual or notEqualTo, got \"" + rule + "\"");
    }
  }

  Dnf Condition(const Element& c, const std::string& path) {
    const std::string edge = Choice(c, "conditionEdge", {"rising", "falling", "risingOrFalling", "none"});
    const ConditionDef::Edge e = edge == "rising"    ? ConditionDef::Edge::kRising
                                 : edge == "falling" ? ConditionDef::Edge::kFalling
                                 : edge == "none"    ? ConditionDef::Edge::kNone
                                                     : ConditionDef::Edge::kRisingOrFalling;
    const Element* k = OneChild(c);
    Dnf out;
    if (k->name == "ByValueCondition") out = ByValue(*OneChild(*k), path + "/ByValueCondition");
    else if (k->name == "ByEntityCondition") out = ByEntity(*k, path + "/ByEntityCondition");
    else throw ConfigError(Where(*k) + ": Condition: expected ByValueCondition or ByEntityCondition, got " + k->name);
    Cover(c, path, Status::kMapped, "edge " + edge + (k->name == "ByValueCondition" ? "" : ""));
    Cover(*k, path + "/" + k->name, Status::kMapped, "its condition");
    for (auto& g : out)
      for (auto& x : g)
        if (x.edge == ConditionDef::Edge::kNone) x.edge = e;
    return out;
  }

  Dnf ByValue(const Element& v, const std::string& path) {
    const std::string at = path + "/" + v.name;
    ConditionDef c;
    if (v.name == "SimulationTimeCondition") {
      const std::string rule = Attr(v, "rule");
      c.kind = ConditionDef::Kind::kSimTime;
      c.sim_time_s = std::max(0.0, Num(v, "value"));
      // sim_time holds from its time on: greaterThan from 1 ns after it; lessThan is "not from that time on".
      if (rule == "greaterThan" || rule == "lessOrEqual") c.sim_time_s += 1e-9;
      if (rule == "lessThan" || rule == "lessOrEqual") c.negate = true;
      else if (rule != "greaterThan" && rule != "greaterOrEqual" && rule != "equalTo")
        Rule(v, c, rule, 0);  // refuses the unknown rule with its message
      Cover(v, at, Status::kMapped, fmt::format("sim_time {} {} s", rule, Num(v, "value")));
      return {{c}};
    }
    if (v.name == "ParameterCondition" || v.name == "VariableCondition") {
      c.kind = ConditionDef::Kind::kParameter;
      c.text = Attr(v, v.name == "ParameterCondition" ? "parameterRef" : "variableRef");
      const std::string value = Attr(v, "value"), rule = Attr(v, "rule");
      char* end = nullptr;
      const double x = std::strtod(value.c_str(), &end);
      if (!value.empty() && *end == '\0') {
        Rule(v, c, rule, x);
      } else if (rule == "equalTo" || rule == "notEqualTo") {
        c.equals_text = value;
        c.negate = rule == "notEqualTo";
      } else {
        throw ConfigError(Where(v) + ": " + v.name + ": a text value \"" + value + "\" compares with equalTo or notEqualTo, got " + rule);
      }
      Cover(v, at, Status::kMapped, "parameter " + c.text + " " + rule + " " + value);
      return {{c}};
    }
    if (v.name == "StoryboardElementStateCondition") {
      const std::string type = Choice(v, "storyboardElementType", {"story", "act", "maneuverGroup", "maneuver", "event", "action"});
      const std::string ref = Attr(v, "storyboardElementRef");
      const std::string state = Attr(v, "state");
      const auto it = elements_.find(type + ":" + ref);
      if (it == elements_.end())
        throw ConfigError(Where(v) + ": StoryboardElementStateCondition.storyboardElementRef: expected a " + type +
                          " of the storyboard, got \"" + ref + "\"");
      const ElementEvents& el = it->second;
      Dnf out;
      if (state == "startTransition" || state == "runningState" || state == "standbyState") {
        // Started: an act by its start event, the others when one of their events started (running: runs now).
        std::vector<std::string> which = el.started_event.empty() ? el.events : std::vector<std::string>{el.started_event};
        for (const auto& name : which) {
          ConditionDef s = EventState(name, state == "runningState" && el.started_event.empty() ? "running" : "started");
          if (state == "startTransition") s.edge = ConditionDef::Edge::kRising;
          out.push_back({s});
        }
        if (state == "standbyState") {
          // Not started: none of them has (one group of negations).
          std::vector<ConditionDef> none;
          for (auto& g : out) {
            g[0].negate = true;
            none.push_back(g[0]);
          }
          out = {none};
        }
      } else if (state == "endTransition" || state == "completeState") {
        // Ended: every event it holds has done its actions.
        std::vector<ConditionDef> all;
        for (const auto& name : el.events) all.push_back(EventState(name, "done"));
        if (all.empty()) all.push_back(EventState(el.started_event, "started"));
        if (state == "endTransition" && all.size() == 1) all[0].edge = ConditionDef::Edge::kRising;
        out.push_back(all);
      } else {
        Refuse(v, at, "element state " + state + " (supported: startTransition, runningState, standbyState, "
                      "endTransition, completeState)");
        return {};
      }
      Cover(v, at, Status::kMapped, type + " " + ref + " " + state);
      return out;
    }
    Refuse(v, at, "value conditions: SimulationTime, StoryboardElementState, Parameter, Variable");
    return {};
  }

  Dnf ByEntity(const Element& b, const std::string& path) {
    const Element* te = Child(b, "TriggeringEntities");
    const Element* ec = Child(b, "EntityCondition");
    if (!te || !ec) throw ConfigError(Where(b) + ": ByEntityCondition: expected TriggeringEntities and EntityCondition");
    const std::string rule = Choice(*te, "triggeringEntitiesRule", {"any", "all"});
    std::vector<std::string> nodes;
    for (const Element* r : Children(*te, "EntityRef")) nodes.push_back(NodeOf(*r, Attr(*r, "entityRef")));
    if (nodes.empty()) throw ConfigError(Where(*te) + ": TriggeringEntities: expected at least one EntityRef, got none");
    Cover(*te, path + "/TriggeringEntities", Status::kMapped, rule == "any" ? "one group per entity (OR)" : "all in one group (AND)");
    Cover(*ec, path + "/EntityCondition", Status::kMapped, "a quantity of each triggering entity");
    const Element* k = OneChild(*ec);
    const std::string at = path + "/EntityCondition/" + k->name;
    ConditionDef c;
    c.kind = ConditionDef::Kind::kQuantity;
    std::string why;
    auto other = [&](const std::string& attr) { c.other = NodeOf(*k, Attr(*k, attr)); };
    auto freespace_note = [&] {
      if (!Bool(*k, "freespace", true)) Warn(*k, k->name + " freespace = false: measured bumper to bumper");
    };
    if (k->name == "TimeHeadwayCondition") {
      c.quantity = config::Quantity::kTimeHeadway;
      other("entityRef");
      freespace_note();
      Rule(*k, c, Attr(*k, "rule"), Num(*k, "value"));
      why = "time_headway to " + c.other;
    } else if (k->name == "TimeToCollisionCondition") {
      c.quantity = config::Quantity::kTtc;
      const Element* t = Child(*k, "TimeToCollisionConditionTarget");
      const Element* r = t ? Child(*t, "EntityRef") : nullptr;
      if (!r) {
        Refuse(*k, at, "a time to collision with a position (name an EntityRef)");
        return {};
      }
      Cover(*t, at + "/TimeToCollisionConditionTarget", Status::kMapped, "the other vehicle");
      c.other = NodeOf(*r, Attr(*r, "entityRef"));
      freespace_note();
      Rule(*k, c, Attr(*k, "rule"), Num(*k, "value"));
      why = "ttc to " + c.other;
    } else if (k->name == "RelativeDistanceCondition") {
      c.quantity = config::Quantity::kDistance;
      other("entityRef");
      const std::string type = Choice(*k, "relativeDistanceType", {"longitudinal", "lateral", "cartesianDistance",
                                                                   "euclidianDistance", "inertial"});
      c.measure = type == "longitudinal" ? "longitudinal" : type == "lateral" ? "lateral" : "cartesian";
      c.freespace = Bool(*k, "freespace", false);
      Rule(*k, c, Attr(*k, "rule"), Num(*k, "value"));
      why = "distance (" + c.measure + (c.freespace ? ", freespace" : "") + ") to " + c.other;
    } else if (k->name == "ReachPositionCondition" || k->name == "DistanceCondition") {
      const Element* pos = Child(*k, "Position");
      if (!pos) throw ConfigError(Where(*k) + ": " + k->name + ": expected a Position, got none");
      Cover(*pos, at + "/Position", Status::kMapped, "the centre of the region");
      const Vec3 p = WorldPoint(*pos, at + "/Position");
      c.quantity = config::Quantity::kRegion;
      c.circle = true;
      c.center_m[0] = p.x();
      c.center_m[1] = p.y();
      if (k->name == "ReachPositionCondition") {
        c.radius_m = Num(*k, "tolerance");
      } else {
        const std::string r = Attr(*k, "rule");
        c.radius_m = Num(*k, "value");
        if (r == "greaterThan" || r == "greaterOrEqual") c.negate = true;
        else if (r != "lessThan" && r != "lessOrEqual") {
          Refuse(*k, at, "a DistanceCondition with rule " + r + " (lessThan or greaterThan)");
          return {};
        }
      }
      if (c.radius_m <= 0) throw ConfigError(Where(*k) + ": " + k->name + ": expected a tolerance or distance > 0 m");
      why = fmt::format("region: within {} m of ({:.2f}, {:.2f}){}", c.radius_m, p.x(), p.y(), c.negate ? ", negated" : "");
    } else if (k->name == "TraveledDistanceCondition") {
      c.quantity = config::Quantity::kTraveled;
      c.above = std::nextafter(Num(*k, "value"), -std::numeric_limits<double>::infinity());
      why = fmt::format("traveled >= {} m", Num(*k, "value"));
    } else if (k->name == "SpeedCondition") {
      c.quantity = config::Quantity::kSpeed;
      Rule(*k, c, Attr(*k, "rule"), Num(*k, "value"));
      why = "speed";
    } else if (k->name == "RelativeSpeedCondition") {
      c.quantity = config::Quantity::kRelativeSpeed;
      other("entityRef");
      Rule(*k, c, Attr(*k, "rule"), Num(*k, "value"));
      why = "relative_speed to " + c.other;
    } else if (k->name == "StandStillCondition") {
      c.quantity = config::Quantity::kStandstill;
      c.above = std::nextafter(Num(*k, "duration"), -std::numeric_limits<double>::infinity());
      why = fmt::format("standstill >= {} s", Num(*k, "duration"));
    } else if (k->name == "AccelerationCondition") {
      c.quantity = config::Quantity::kAcceleration;
      Rule(*k, c, Attr(*k, "rule"), Num(*k, "value"));
      why = "acceleration";
    } else {
      Refuse(*k, at, "entity conditions: TimeHeadway, TimeToCollision, RelativeDistance, ReachPosition, Distance, "
                     "TraveledDistance, Speed, RelativeSpeed, StandStill, Acceleration");
      return {};
    }
    // Along-route and coordinate-system attributes: measured as platoon measures (docs/SCENARIOS.md).
    Cover(*k, at, Status::kMapped, why);
    Dnf out;
    if (rule == "any") {
      for (const auto& n : nodes) {
        c.entity = n;
        out.push_back({c});
      }
    } else {
      std::vector<ConditionDef> all;
      for (const auto& n : nodes) {
        c.entity = n;
        all.push_back(c);
      }
      out.push_back(all);
    }
    return out;
  }

  std::string file_, base_dir_;
  OscOptions options_;
  OscMapping out_;
  std::string cur_file_;
  std::map<std::string, std::string> params_;
  std::string vehicle_catalog_dir_;
  std::set<std::string> entities_, node_names_, used_names_;
  struct Misc {
    Vec3 size_m = Vec3::Ones(), center_m = Vec3::Zero(), position_m = Vec3::Zero();
    double yaw_rad = 0.0;
    bool placed = false;
    std::string where;
  };
  std::map<std::string, Misc> misc_;   // MiscObjects by name
  struct Walker {
    Vec3 position_m = Vec3::Zero();
    double yaw_rad = 0.0, speed_mps = 0.0;
    bool placed = false;
    std::string where;
  };
  std::map<std::string, Walker> walkers_;  // Pedestrians by name
  std::string pedestrian_catalog_dir_;
  bool road_from_file_ = false;  // the session's road comes from an OpenDRIVE file (its ids are the file's)
  std::set<std::string> added_later_;  // entities an AddEntityAction brings in (absent until then)
  std::vector<std::string> order_;
  std::map<std::string, Start> starts_;
  std::map<std::string, std::string> node_where_;
  std::map<std::string, ElementEvents> elements_;
  std::map<const Element*, std::string> act_event_, event_name_;
  std::set<const Element*> seen_, covered_;
  std::vector<std::unique_ptr<Element>> catalog_docs_;
  std::unique_ptr<road::Road> road_;
};

}  // namespace osc_mapping_detail

const char* StatusName(CoverageItem::Status s) {
  switch (s) {
    case CoverageItem::Status::kMapped: return "mapped";
    case CoverageItem::Status::kIgnored: return "ignored";
    case CoverageItem::Status::kRefused: return "refused";
  }
  return "?";
}

bool IsOpenScenarioPath(const std::string& path) {
  if (path.size() < 5) return false;
  return osc_mapping_detail::Lower(path.substr(path.size() - 5)) == ".xosc";
}

OscMapping MapOpenScenario(const std::string& text, const std::string& source_name, const std::string& base_dir,
                           const OscOptions& options) {
  return osc_mapping_detail::Mapper(source_name, base_dir, options).Run(text);
}

OscMapping LoadOpenScenarioFile(const std::string& path, const OscOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config::ConfigError(path + ": cannot open the OpenSCENARIO file");
  std::stringstream ss;
  ss << in.rdbuf();
  const auto slash = path.rfind('/');
  return MapOpenScenario(ss.str(), path, slash == std::string::npos ? std::string(".") : path.substr(0, slash), options);
}

void ApplyScenarioTable(config::SessionDef& session, const config::Table& t) {
  std::string file = t.RequireString("file");
  if (!IsOpenScenarioPath(file)) t.Fail("file", "expected an OpenSCENARIO file (.xosc), got \"" + file + "\"");
  if (file.front() != '/') {
    const auto slash = session.file.rfind('/');
    if (slash != std::string::npos) file = session.file.substr(0, slash + 1) + file;
  }
  OscOptions options;
  // seats = ["Ego=driver"]: the entity a driver node drives.
  for (const std::string& s : t.GetStringArray("seats", {})) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
      t.Fail("seats", "expected \"<entity>=<driver node>\" entries, got \"" + s + "\"");
    const std::string node = s.substr(eq + 1);
    const config::NodeDef* n = session.FindNode(node);
    if (!n || n->role != protocol::Role::kDriver)
      t.Fail("seats", "\"" + node + "\" is not a driver node of this session (a seat must be declared before use)");
    options.seats[s.substr(0, eq)] = node;
  }
  // parameters = ["Name=value", ...]: the scenario's declared values replaced.
  for (const std::string& p : t.GetStringArray("parameters", {})) {
    const auto eq = p.find('=');
    if (eq == std::string::npos || eq == 0)
      t.Fail("parameters", "expected \"<parameter>=<value>\" entries, got \"" + p + "\"");
    options.parameters[p.substr(0, eq)] = p.substr(eq + 1);
    options.parameters_where = t.Where("parameters") + ": scenario.parameters";
  }
  t.RejectUnknownKeys();
  if (session.has_road) options.road = &session.road;
  OscMapping m;
  try {
    m = LoadOpenScenarioFile(file, options);
  } catch (const config::ConfigError& e) {
    throw config::ConfigError(t.Where("file") + ": scenario.file: " + e.what());
  }
  for (const auto& [entity, node] : options.seats)
    if (!m.entity_node.count(entity))
      t.Fail("seats", "\"" + entity + "\" is no entity of " + file);
  session.scenario_file = file;
  // The road: the session's [road], else the file's LogicFile, else the default generated road (the scenario
  // system needs one for lanes either way).
  if (!session.has_road) {
    session.has_road = true;
    session.road.file = m.road_file;
    session.road.where = t.Where("file") + ": scenario.file (RoadNetwork LogicFile)";
  }
  for (auto& n : m.nodes) {
    if (session.FindNode(n.name))
      t.Fail("file", "entity node \"" + n.name + "\" clashes with a node of the session (rename one)");
    session.nodes.push_back(std::move(n));
  }
  // Seats start where the scenario puts their entity.
  for (const auto& [entity, start] : m.starts) {
    for (auto& n : session.nodes)
      if (n.name == m.entity_node[entity]) {
        n.start_given = true;
        n.start_s_m = start.s_m;
        n.start_lane = start.lane;
        n.start_speed_mps = start.speed_mps;
      }
  }
  for (auto& e : m.events) {
    for (const auto& have : session.events)
      if (have.name == e.name) t.Fail("file", "scenario event \"" + e.name + "\" clashes with an [[event]] of the session");
    session.events.push_back(std::move(e));
  }
  if (session.events.size() > config::kMaxEvents)
    t.Fail("file", "more than " + std::to_string(config::kMaxEvents) + " events with the scenario's");
  session.scenario_params = m.params;
  for (const auto& b : m.boxes) {
    for (const auto& have : session.scene.boxes)
      if (have.id == b.id) t.Fail("file", fmt::format("scenario MiscObject box id {} clashes with a [[scene.box]] of the session", b.id));
    session.scene.boxes.push_back(b);
  }
}

std::string SessionTextFor(const std::string& xosc_path, bool lockstep, double end_s) {
  std::string stem = xosc_path.substr(xosc_path.rfind('/') == std::string::npos ? 0 : xosc_path.rfind('/') + 1);
  stem = stem.substr(0, stem.size() - 5);
  std::string text = "[session]\nname = \"" + osc_mapping_detail::Sanitize(stem) + "\"\n";
  if (lockstep) text += "mode = \"lockstep\"\n";
  if (end_s > 0) text += fmt::format("end_s = {}\n", end_s);
  std::string quoted;
  for (const char c : xosc_path) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  text += "\n[scenario]\nfile = \"" + quoted + "\"\n";
  return text;
}

}  // namespace platoon::scenario
