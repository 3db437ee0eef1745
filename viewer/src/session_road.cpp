#include "platoon/viewer/session_road.hpp"

#include "platoon/road/road_file.hpp"
#include "platoon/road/road_generator.hpp"

namespace platoon::viewer {

road::RoadNetwork SessionRoads(const config::RoadSessionDef& def) {
  if (def.file.empty()) {
    // Same settings as the road-traffic role (node/src/road_traffic_module.cpp, BuildSessionRoad).
    road::RoadGeneratorDef gen = road::DefaultRoadGeneratorDef();
    gen.seed = def.seed;
    gen.layout.lane_widths_right_m.assign(static_cast<size_t>(def.lanes), 3.5);
    gen.layout.speed_limit_mps = def.speed_limit_kmh / 3.6;
    return road::RoadNetwork({road::GenerateRoad(gen, def.generate_length_m)});
  }
  return road::LoadRoadFile(def.file);
}

}  // namespace platoon::viewer
