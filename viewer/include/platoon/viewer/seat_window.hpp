#pragma once
/// A driver seat's window (seed 004 §5.9 steering wheel, §5.11 drivers see each other): an SDL2 window
/// with OSG embedded that shows a SceneGraph from one eye point. What a participant sees is the view and,
/// when a scenario sends one, a message at the top centre; the debug text (speed, pedals, sim time, input
/// device) is off unless asked for (`[node] hud = true`, or Tab in the window). The own car (cockpit.hpp)
/// frames the view: bonnet, dashboard and A-pillars, the instrument cluster, and the mirrors, each a live
/// render-to-texture view of the scene. No panel, no camera manipulator: the eye moves with the vehicle.
/// Create, use and destroy on one thread (the seat's render thread): SDL and GL objects live there.

#include "platoon/geometry.hpp"
#include "platoon/viewer/cockpit.hpp"
#include "platoon/viewer/image.hpp"
#include "platoon/viewer/scene.hpp"
#include "platoon/viewer/screen_frustum.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace platoon::viewer {

/// One physical screen of a seat (docs/INPUTS.md, "Screens"): a window of its own that shows the world
/// through the screen's rectangle from the eye, with the off-axis frustum of screen_frustum.hpp.
struct SeatScreen {
  ScreenCorners corners;        ///< Visible image area in the vehicle frame, in m.
  int display = 0;              ///< SDL display index the window opens on (0: the first).
  bool fullscreen = false;      ///< Borderless fullscreen on `display` at the desktop's resolution.
  uint32_t width_px = 1280;     ///< Window width when not fullscreen, in px.
  uint32_t height_px = 720;     ///< Window height when not fullscreen, in px.
  std::optional<std::array<int, 2>> position_px;  ///< Window's top-left on the desktop, in px (unset: centred on `display`).
  bool main = false;            ///< Draws the own car, the mirrors and the texts too (none marked: the first screen).
  std::string name = "screen";  ///< Names the screen in errors, e.g. "seat.toml:12: node[0].screen[2]".
};

/// Settings of a seat window.
struct SeatWindowDef {
  std::string title = "platoon driver seat";  ///< Window title.
  uint32_t width_px = 1280;                   ///< Initial window width, in px.
  uint32_t height_px = 720;                   ///< Initial window height, in px.
  double hfov_deg = 70.0;                     ///< Horizontal field of view, in deg. Typical 60..100.
  bool vsync = false;                         ///< Swap with the display's refresh (blocks the render thread up to one refresh).
  bool hud = false;                           ///< Show the debug text from the start (Tab toggles it).
  bool cockpit = true;                        ///< Draw the own car: bonnet, dashboard, A-pillars, instruments.
  CockpitDef cockpit_def;                     ///< Looks of the own car and its dials.
  std::vector<MirrorDef> mirrors = DefaultMirrors();  ///< Mirrors drawn (empty: none); each renders the scene once more a frame.
  /// Screens, each a window with an off-axis frustum from the eye (empty: one window of width_px x height_px
  /// with the symmetric hfov_deg frustum). The window fields above then apply to none of them.
  std::vector<SeatScreen> screens;
};

/// Default seat window: 1280 x 720, 70 deg, no vsync (the seat paces its own frames), no debug text, the
/// own car with the interior and both side mirrors.
inline SeatWindowDef DefaultSeatWindowDef() { return SeatWindowDef{}; }

/// An open seat window drawing `scene` (which must outlive it).
class SeatWindow {
 public:
  /// Opens the window and its GL context; throws WindowError (viewer_app.hpp) naming SDL's reason, for
  /// example when there is no display.
  SeatWindow(const SeatWindowDef& def, SceneGraph& scene);
  ~SeatWindow();
  SeatWindow(const SeatWindow&) = delete;
  SeatWindow& operator=(const SeatWindow&) = delete;

  /// Called by PollEvents, on this thread, once per press of a seat key (SeatKeyName, seat_keys.hpp:
  /// "space", "return", "a".."z", "0".."9", "f1".."f12"; auto-repeats and other keys are not passed).
  using KeyCallback = std::function<void(const std::string& key)>;
  /// Sets the key callback (nullptr: keys are not passed on).
  void SetKeyCallback(KeyCallback on_key);
  /// Called by PollEvents, on this thread, once per press of an indicator key (IndicatorKeySide: -1 for
  /// ",", the left indicator; +1 for ".", the right one).
  using IndicatorCallback = std::function<void(int side)>;
  /// Sets the indicator callback (nullptr: the keys do nothing).
  void SetIndicatorCallback(IndicatorCallback on_indicator);
  /// Handles the window's pending events (resize, close, seat keys, Tab); false once the user closed the
  /// window or pressed Esc. Does not consume joystick state, so platoon::input::SdlInput keeps working.
  bool PollEvents();
  /// Whether the debug text is shown (SeatWindowDef::hud at first; each Tab press flips it).
  bool HudVisible() const;
  /// Draws the scene seen by a camera whose body frame (x forward, y left, z up) is at `eye_world`, the
  /// mirrors' views (from the vehicle pose that `eye_world` and SetCockpit's eye give), the own car and its
  /// instruments;
  /// `hud` as lines of text at the top left while HudVisible(); `message` (a scenario's seat message,
  /// "" for none) in a box of its own at the top centre, whatever the HUD; then swaps. With `capture`,
  /// the finished frame (what the participant is shown) is read back into it first.
  void Render(const Pose& eye_world, const std::vector<std::string>& hud, const std::string& message = {},
              Image* capture = nullptr);
  /// Render for a seat with several screens: draws every screen's window, and with `captures` reads each
  /// finished frame back into (*captures)[i], in SeatWindowDef::screens order (one image without screens).
  void RenderScreens(const Pose& eye_world, const std::vector<std::string>& hud, const std::string& message,
                     std::vector<Image>* captures);
  /// Number of windows: the screens, or 1 without screens.
  size_t ScreenCount() const;
  /// The frustum screen `i` was last drawn with (the eye from SetCockpit); the default frustum before the
  /// first Render or without screens.
  ScreenFrustum LastFrustum(size_t i) const;
  /// What the instruments show from the next Render on, and where the eye sits in the vehicle (which places
  /// the bonnet and the mirrors); until the first call, a car at rest with the default eye.
  void SetCockpit(const CockpitState& state);
  /// Where mirror `i` (SeatWindowDef::mirrors order) is drawn now: u0, v0, u1, v1 in px of the window.
  std::array<double, 4> MirrorRect(size_t i) const;
  /// "GL_RENDERER / GL_VERSION" of the window's context.
  std::string GlInfo() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace platoon::viewer
