#include "platoon/viewer/session_scene.hpp"

#include "platoon/road/session_road.hpp"

#include <algorithm>
#include <cmath>

namespace platoon::viewer {

SessionScene SessionSceneOf(const config::SessionDef& session) {
  SessionScene out;
  out.roads = road::SessionRoadNetwork(session.road);
  out.environment = road::SessionEnvironment(session);
  if (!out.roads.Roads().empty()) {
    // Behind and above the start of the first road, looking along it.
    const road::Road& r = out.roads.Roads().front();
    const double heading = r.Heading(0.0);
    out.has_home = true;
    out.home_target_m = r.PointAt(std::min(40.0, r.Length()), 0.0);
    out.home_eye_m = r.PointAt(0.0, 0.0) + Vec3(-25.0 * std::cos(heading), -25.0 * std::sin(heading), 12.0);
  }
  return out;
}

SessionScene SessionSceneFromText(const std::string& text, const std::string& path) {
  // The path stands in as the file's name, so that a relative road file resolves beside it.
  return SessionSceneOf(config::LoadSessionText(text, path.empty() ? std::string("session file from the server") : path));
}

}  // namespace platoon::viewer
