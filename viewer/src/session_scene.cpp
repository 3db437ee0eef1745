#include "platoon/viewer/session_scene.hpp"

#include "platoon/road/session_road.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace platoon::viewer {

std::vector<protocol::EntityState> SceneBoxEntities(const config::SessionDef& session) {
  std::vector<protocol::EntityState> out;
  for (const auto& b : session.scene.boxes) {
    // The footprint centre is the box's centre; an entity's origin sits BoxCentreInBody behind it.
    protocol::EntityState e;
    e.id = b.id;
    e.kind = protocol::EntityKind::kStaticObject;
    e.box_size_m = b.size_m;
    e.kinematics.pose.orientation = Quat(Eigen::AngleAxisd(b.yaw_rad, Vec3::UnitZ()));
    const Vec3 centre_in_body(BoxCentreInBody(b.size_m).x(), 0, 0);
    e.kinematics.pose.position_m = b.position_m - e.kinematics.pose.orientation * centre_in_body;
    out.push_back(e);
  }
  return out;
}

SessionScene SceneOfRoads(road::RoadNetwork roads) {
  SessionScene out;
  out.roads = std::move(roads);
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

std::optional<world::WorldConditions> GivenConditions(const config::SessionDef& session) {
  world::WorldConditions defaults;
  world::UpdateDerived(defaults.light);
  if (session.conditions == defaults) return std::nullopt;
  return session.conditions;
}

SessionScene SessionSceneOf(const config::SessionDef& session) {
  // A session without [road] has none: nothing is drawn that its sensors and vehicles do not have.
  SessionScene out = SceneOfRoads(session.has_road ? road::SessionRoadNetwork(session.road) : road::RoadNetwork());
  out.environment = road::SessionEnvironment(session);
  out.signs = road::SessionPlacedSigns(session);
  out.boxes = SceneBoxEntities(session);
  out.calibration_boards = session.scene.calibration_boards;
  out.board_cameras = BoardCameras(session);
  out.conditions = GivenConditions(session);
  if (!out.has_home && !session.scene.boxes.empty()) {
    // South-west of and above the boxes' centre, looking at it.
    Vec3 centre = Vec3::Zero();
    for (const auto& b : session.scene.boxes) centre += b.position_m;
    centre /= static_cast<double>(session.scene.boxes.size());
    out.has_home = true;
    out.home_target_m = centre;
    out.home_eye_m = centre + Vec3(-50.0, -50.0, 35.0);
  }
  return out;
}

SessionScene SessionSceneFromText(const std::string& text, const std::string& path) {
  // The path stands in as the file's name, so that a relative road file resolves beside it.
  return SessionSceneOf(config::LoadSessionText(text, path.empty() ? std::string("session file from the server") : path));
}

}  // namespace platoon::viewer
