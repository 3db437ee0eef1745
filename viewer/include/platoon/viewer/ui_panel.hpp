#pragma once
/// The viewer's Dear ImGui panel (seed 004 §2.2 "main control user interface": the most relevant
/// controls next to the most relevant information): session state with start/pause/stop, the node
/// table, an entity list and inspector, live plots of the chosen entity's variables, and the camera
/// mode. Draws into the current ImGui frame; holds no network or scene state of its own.

#include "platoon/entity_id.hpp"
#include "platoon/protocol/messages.hpp"
#include "platoon/viewer/plot_buffer.hpp"
#include "platoon/viewer/world_client.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace platoon::viewer {

/// How the 3D view's camera moves.
enum class CameraMode : uint8_t { kFree, kChase, kTop };
/// "free", "chase" or "top".
const char* CameraModeName(CameraMode mode);
/// Parses a camera mode name; false when unknown.
bool ParseCameraMode(const std::string& name, CameraMode* out);

/// What the panel remembers between frames (owned by the render thread).
struct UiState {
  CameraMode camera = CameraMode::kFree;  ///< Active camera manipulator.
  uint64_t selected = 0;                  ///< Entity shown in the inspector, followed and plotted (0: none).
  std::array<bool, static_cast<size_t>(PlotVariable::kCount)> plotted{true, true};  ///< Curves overlaid in the plot.
  float plot_rate_hz = 20.0f;             ///< Plot sample rate, in Hz.
  int plot_seconds = 30;                  ///< Plot window, in s (buffer size = rate * seconds).
  bool show_stale_only = false;           ///< Entity list: only stale entities.
  float frame_ms = 0.0f;                  ///< Last frame time, for the header, in ms.
  bool show_cloud = true;                 ///< Draw the latest fused cloud of every fused stream.
  bool colour_by_source = false;          ///< Colour points by source index instead of intensity.
  float point_size_px = 2.0f;             ///< Point size, in px.
  bool show_radar = true;                 ///< Draw the latest radar objects of every radar stream.
  size_t points_drawn = 0;                ///< Points drawn in the last frame (shown in the panel).
  size_t radar_drawn = 0;                 ///< Radar markers drawn in the last frame.
  double seek_input_s = 0;                ///< Replay: the sim time typed into the seek field, in s.
  bool show_params = false;               ///< The "Parameters" window (param_panel.hpp) is open.
  /// The server's reason for refusing the last session button (a start of a running session, no operator
  /// token), shown under the buttons until the next one is pressed; "": none.
  std::string command_error;
  /// How the session file the server sent names the vehicles (config::SessionNaming); empty: node names only.
  std::vector<NodeNaming> session_naming;
};

/// What the user asked for in this frame.
struct UiActions {
  std::optional<protocol::SessionControl::Command> session;  ///< A session button was pressed.
  double seek_to_s = 0;                    ///< For kSeek: the target sim time, in s.
  double speed = 1.0;                      ///< For kSpeed: the new replay speed.
  bool camera_changed = false;             ///< UiState::camera changed.
  bool plot_config_changed = false;        ///< Plot rate or window changed (reconfigure the recorder).
};

/// The entity list's line for `e`: its readable name (EntityDisplayName over `session_naming`, then the
/// joined `nodes` of the world), kind, owner node, speed in m/s and STALE when it is.
std::string EntityListLabel(const protocol::EntityState& e, const std::vector<NodeNaming>& session_naming,
                            const std::vector<protocol::NodeInfo>& nodes);

/// Draws the panel for one frame. `entities` are the displayed entities (sim time snapshot.sim_time_ns).
UiActions DrawPanel(UiState& state, const WorldSnapshot& snapshot, const std::vector<protocol::EntityState>& entities,
                    const PlotRecorder& plots);

}  // namespace platoon::viewer
