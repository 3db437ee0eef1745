#pragma once
/// The interactive viewer: an SDL2 window with an OpenGL context in which OSG renders the scene
/// (osgViewer embedded in the window) and Dear ImGui draws the panel on top. Runs on the calling
/// (render) thread; the WorldClient's network thread feeds it copies. Seed 004 §2.2: each pass of the
/// loop processes the system events, then refreshes the display.

#include "platoon/viewer/calibration_board.hpp"
#include "platoon/viewer/scene.hpp"
#include "platoon/viewer/ui_panel.hpp"
#include "platoon/viewer/world_client.hpp"

#include <spdlog/logger.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace platoon::viewer {

/// Raised when the window or its GL context cannot be created.
class WindowError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Settings of one viewer run.
struct ViewerAppDef {
  std::string title = "platoon viewer";  ///< Window title.
  uint32_t width_px = 1600;              ///< Initial window width, in px.
  uint32_t height_px = 900;              ///< Initial window height, in px.
  double hfov_deg = 70.0;                ///< Horizontal field of view of the 3D view, in deg.
  CameraMode camera = CameraMode::kFree; ///< Initial camera mode.
  uint64_t follow = 0;                   ///< Entity selected at start (chase/top follow it); 0: the first one seen.
  std::string screenshot_path;           ///< When set: render `frames` frames, write this PNG, exit.
  int frames = 5;                        ///< Frames rendered before the screenshot. >= 1.
  double exit_after_s = 0.0;             ///< Exit after this many seconds of wall time; 0: run until closed.
  bool vsync = true;                     ///< Swap with the display's refresh (off for screenshots).
  bool has_home = false;                 ///< Start the free camera at home_eye_m looking at home_target_m.
  Vec3 home_eye_m = Vec3::Zero();        ///< Free camera's start position, in m (e.g. behind the road's start).
  Vec3 home_target_m = Vec3::Zero();     ///< Point the free camera looks at first, in m.
  float point_size_px = 2.0f;            ///< Initial point size of the fused cloud, in px.
  bool colour_by_source = false;         ///< Initially colour points by source index instead of intensity.
  std::vector<protocol::EntityState> boxes;  ///< The session's [[scene.box]] objects, drawn with the entities (SessionScene::boxes).
  std::vector<config::CalibrationBoardDef> calibration_boards;  ///< The session's calibration boards (SessionScene).
  std::vector<BoardCamera> board_cameras;  ///< Cameras holding boards, followed on their vehicles (SessionScene).
  /// Draw the road and scene of the session file the server's Welcome carries once joined (platoon-viewer
  /// sets it when given neither -c nor --road: a replay, or a live server, watched with --server only).
  bool scene_from_server = false;
};

/// Runs the viewer until the window is closed, Esc is pressed, `stop` becomes true (signals),
/// exit_after_s passes, or the screenshot is written. Returns 0, or 1 when the screenshot could not be
/// written (logged). Throws WindowError.
int RunViewerApp(const ViewerAppDef& def, SceneGraph& scene, WorldClient& client, spdlog::logger& log,
                 const std::atomic<bool>& stop);

}  // namespace platoon::viewer
