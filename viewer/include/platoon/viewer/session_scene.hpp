#pragma once
/// What the viewer draws of a session besides its entities: the [road] network (none when the session
/// has no [road]), the [scene]'s road environment, [[scene.box]] objects and calibration boards, and where the free camera
/// starts. Built from a session file the viewer was given (-c), or
/// from the one the server's Welcome carries (session::SessionClient::SessionFile) when it was given only
/// --server, e.g. for a replay, whose server serves the recorded file.

#include "platoon/config/session.hpp"
#include "platoon/geometry.hpp"
#include "platoon/protocol/messages.hpp"
#include "platoon/viewer/calibration_board.hpp"
#include "platoon/road/environment.hpp"
#include "platoon/road/road_network.hpp"
#include "platoon/road/signs.hpp"
#include "platoon/world/conditions.hpp"

#include <optional>
#include <string>
#include <vector>

namespace platoon::viewer {

/// The road, the environment and the camera's home of one session.
struct SessionScene {
  road::RoadNetwork roads;                    ///< The session's roads (road::SessionRoadNetwork); empty without [road].
  std::vector<road::EnvObject> environment;   ///< [scene] road_environment objects (road::SessionEnvironment).
  std::vector<road::PlacedSign> signs;         ///< Traffic signs ([signs], [[sign]]; road::SessionPlacedSigns).
  std::vector<protocol::EntityState> boxes;   ///< [[scene.box]] objects (SceneBoxEntities), drawn with the entities.
  /// [[scene.calibration_board]] entries (draw them with CalibrationBoards; a camera's boards need its pose).
  std::vector<config::CalibrationBoardDef> calibration_boards;
  std::vector<BoardCamera> board_cameras;      ///< The cameras that hold boards, to follow them (BoardCameras).
  bool has_home = false;                      ///< True when there is a road or a box to start the camera at.
  Vec3 home_eye_m = Vec3::Zero();             ///< Free camera's start: 25 m behind and 12 m above the road's start, in m.
  Vec3 home_target_m = Vec3::Zero();          ///< Point it looks at: 40 m along the first road, in m (the boxes' centre without a road).
  /// Light and weather to draw with (SceneGraph::SetConditions): the session's [light] and [weather]; none
  /// when the file sets neither, and the scene keeps its fixed daylight (GivenConditions).
  std::optional<world::WorldConditions> conditions;
};

/// The session's start conditions when its file sets [light] or [weather] to anything but the defaults;
/// nullopt otherwise (the renderers then keep their fixed daylight look until a live change arrives).
std::optional<world::WorldConditions> GivenConditions(const config::SessionDef& session);

/// The session's [[scene.box]] objects as static entities (kind staticObject, id, size, yaw), placed so
/// that their boxes stand where the file puts them: what the lidars hit and the cameras draw.
std::vector<protocol::EntityState> SceneBoxEntities(const config::SessionDef& session);

/// Just these roads, with the camera's home at the first one (the viewer's --road).
SessionScene SceneOfRoads(road::RoadNetwork roads);

/// The scene of a loaded session. Throws config::ConfigError when its road file does not load.
SessionScene SessionSceneOf(const config::SessionDef& session);

/// The scene of a session file's `text`; `path` is where the file was (a relative road file is found
/// beside it; "" = the working directory) and names it in messages. Throws config::ConfigError naming
/// the file, line and key when the text or its road file does not load here.
SessionScene SessionSceneFromText(const std::string& text, const std::string& path);

}  // namespace platoon::viewer
