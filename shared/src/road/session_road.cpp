#include "platoon/road/session_road.hpp"

#include "platoon/road/endless_road.hpp"
#include "platoon/road/opendrive.hpp"
#include "platoon/road/road_file.hpp"
#include "platoon/road/road_generator.hpp"

#include <algorithm>

namespace platoon::road {

namespace {

RoadGeneratorDef SessionGeneratorDef(const config::RoadSessionDef& def) {
  RoadGeneratorDef gen = DefaultRoadGeneratorDef();
  gen.seed = def.seed;
  gen.layout.lane_widths_right_m.assign(static_cast<size_t>(def.lanes), def.lane_width_m);
  gen.layout.lane_widths_left_m.assign(static_cast<size_t>(def.oncoming_lanes), def.lane_width_m);
  gen.layout.speed_limit_mps = def.speed_limit_kmh / 3.6;
  gen.straight_probability = def.straight_share;
  gen.straight_length_min_m = def.straight_length_min_m;
  gen.straight_length_max_m = def.straight_length_max_m;
  gen.arc_length_min_m = def.curve_length_min_m;
  gen.arc_length_max_m = def.curve_length_max_m;
  gen.curvature_min_1pm = 1.0 / def.curve_radius_max_m;
  gen.curvature_max_1pm = 1.0 / def.curve_radius_min_m;
  gen.curvature_shape = def.curvature_shape;
  gen.left_turn_probability = def.left_turn_share;
  gen.transition_min_length_m = def.transition_min_length_m;
  return gen;
}

}  // namespace

EndlessRoadDef SessionEndlessRoadDef(const config::RoadSessionDef& def) {
  EndlessRoadDef e;
  e.generator = SessionGeneratorDef(def);
  e.ahead_m = def.ahead_m;
  e.behind_m = def.behind_m;
  return e;
}

RoadNetwork SessionRoadNetwork(const config::RoadSessionDef& def) {
  if (def.file.empty() && def.endless) {
    // The endless road's first chunks as one road of at least generate_length_m, for the processes that
    // draw or drive a fixed road: the same geometry as EndlessRoad's chunks (to rounding).
    const EndlessRoadDef e = SessionEndlessRoadDef(def);
    RoadDef road = e.generator.layout;
    road.sections.clear();
    double length = 0.0;
    for (int64_t k = 0; length < def.generate_length_m; ++k)
      for (const auto& sec : EndlessChunkSections(e, k)) {
        road.sections.push_back(sec);
        length += sec.length_m;
      }
    return RoadNetwork({road});
  }
  if (def.file.empty()) return RoadNetwork({GenerateRoad(SessionGeneratorDef(def), def.generate_length_m)});
  return LoadRoadFile(def.file);
}

std::vector<JunctionDef> SessionJunctions(const config::RoadSessionDef& def) {
  if (def.file.empty() || !IsOpenDrivePath(def.file)) return {};
  return LoadOpenDriveMapFile(def.file).junctions;
}

Road SessionRoad(const config::RoadSessionDef& def) {
  const RoadNetwork network = SessionRoadNetwork(def);
  if (network.Roads().empty()) throw config::ConfigError(def.file + ": the road file has no [[road]]");
  if (def.road_id == 0) return network.Roads().front();
  const Road* r = network.Find(def.road_id);
  if (!r) throw config::ConfigError(def.file + ": no road with id " + std::to_string(def.road_id) + " ([road] road_id)");
  return *r;
}

std::vector<EnvObject> SessionEnvironment(const config::SessionDef& session) {
  if (!session.scene.road_environment || !session.has_road) return {};
  EnvironmentDef env = session.scene.environment;  // the preset with [scene.<kind>] applied
  env.seed = session.road.seed;
  // Signs with meaning ([signs], [[sign]]) replace the generic plates.
  if (session.sign_generator.enabled || !session.signs.empty()) env.signs.enabled = false;
  return GenerateEnvironment(SessionRoad(session.road), env);
}

namespace {

// The signals of an OpenDRIVE road that are signs this model knows (SignFromOpenDrive; traffic lights are not),
// with ids from `first_id`.
std::vector<Sign> SignsOfSignals(const Road& road, uint32_t first_id) {
  std::vector<Sign> out;
  for (const auto& g : road.Def().signals) {
    auto sign = SignFromOpenDrive(g.type, g.subtype, g.has_value ? g.value : 0.0, g.unit, g.country, g.s_m, g.t_m,
                                  g.orientation);
    if (!sign) continue;
    sign->id = first_id + static_cast<uint32_t>(out.size());
    if (g.height_m > 0) sign->size_m = std::max(g.height_m, g.width_m);
    out.push_back(*sign);
  }
  return out;
}

bool OpenDriveRoad(const config::SessionDef& session) {
  return session.has_road && !session.road.file.empty() && IsOpenDrivePath(session.road.file);
}

}  // namespace

std::vector<Sign> SessionSigns(const config::SessionDef& session) {
  std::vector<Sign> out = session.signs;
  // The session road's OpenDRIVE signals that are signs.
  if (OpenDriveRoad(session)) {
    const auto mapped = SignsOfSignals(SessionRoad(session.road), static_cast<uint32_t>(out.size() + 1));
    out.insert(out.end(), mapped.begin(), mapped.end());
  }
  if (session.has_road && session.sign_generator.enabled) {
    const auto generated =
        GenerateSigns(SessionRoad(session.road), session.sign_generator, static_cast<uint32_t>(out.size() + 1));
    out.insert(out.end(), generated.begin(), generated.end());
  }
  std::stable_sort(out.begin(), out.end(), [](const Sign& a, const Sign& b) { return a.s_m < b.s_m; });
  return out;
}

std::vector<PlacedSign> SessionPlacedSigns(const config::SessionDef& session) {
  if (!session.has_road) return {};
  const auto signs = SessionSigns(session);
  std::vector<PlacedSign> out;
  if (!signs.empty()) out = PlaceSigns(SessionRoad(session.road), signs);
  // The other roads of an OpenDRIVE map: their signs stand along them too (drawn and seen by cameras; what road
  // traffic and the data write read along s is the session road's list).
  if (OpenDriveRoad(session)) {
    uint32_t next_id = 1;
    for (const auto& g : signs) next_id = std::max(next_id, g.id + 1);
    const RoadNetwork network = SessionRoadNetwork(session.road);
    const int driven = SessionRoad(session.road).Id();
    for (const Road& road : network.Roads()) {
      if (road.Id() == driven) continue;
      const auto own = SignsOfSignals(road, next_id);
      if (own.empty()) continue;
      next_id += static_cast<uint32_t>(own.size());
      const auto placed = PlaceSigns(road, own);
      out.insert(out.end(), placed.begin(), placed.end());
    }
  }
  return out;
}

}  // namespace platoon::road
