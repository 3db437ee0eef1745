// The driver seat's window as a participant sees it (viewer/src/seat_window.cpp): no debug text unless
// asked for (Tab or SeatWindowDef::hud), a scenario message in its own box, and with the environment on
// every pixel below the horizon ground, road or object. The frames are read back from the window's own
// back buffer (SeatWindow::Render's capture), so this is the seat's projection and near/far, not the
// offscreen renderer's. Needs an X display: part of platoon_render_tests, which ctest runs under xvfb-run.
// With PLATOON_SCREENSHOT_DIR set, the participant's frame is also written there as seat_view.png.
#include "platoon/config/session.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/viewer/image.hpp"
#include "platoon/viewer/scene.hpp"
#include "platoon/viewer/seat_window.hpp"

#include <SDL.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

using namespace platoon;

namespace {

// Chromaticity (r, g, b) / (r + g + b): unchanged by how brightly a surface is lit.
std::array<double, 3> SwChroma(double r, double g, double b) {
  const double s = std::max(r + g + b, 1e-9);
  return {r / s, g / s, b / s};
}
double SwChromaDistance(const std::array<double, 3>& a, const std::array<double, 3>& b) {
  return std::max({std::abs(a[0] - b[0]), std::abs(a[1] - b[1]), std::abs(a[2] - b[2])});
}

// The box around the pixels where two frames differ; empty (count 0) when they are the same.
struct SwDiff {
  uint32_t u0 = UINT32_MAX, v0 = UINT32_MAX, u1 = 0, v1 = 0;
  size_t count = 0;
};
SwDiff SwCompare(const viewer::Image& a, const viewer::Image& b) {
  REQUIRE(a.width == b.width);
  REQUIRE(a.height == b.height);
  SwDiff d;
  for (uint32_t j = 0; j < a.height; ++j)
    for (uint32_t i = 0; i < a.width; ++i)
      if (a.At(i, j) != b.At(i, j)) {
        d.u0 = std::min(d.u0, i), d.v0 = std::min(d.v0, j), d.u1 = std::max(d.u1, i), d.v1 = std::max(d.v1, j);
        ++d.count;
      }
  return d;
}

void SwPressTab() {
  SDL_Event ev{};
  ev.type = SDL_KEYDOWN;
  ev.key.keysym.sym = SDLK_TAB;
  ev.key.repeat = 0;
  REQUIRE(SDL_PushEvent(&ev) == 1);
}

}  // namespace

TEST_CASE("seat window: a participant sees no debug text unless asked, a scenario message in its own box, and ground below the horizon") {
  const config::SessionDef session = config::LoadSessionText(
      "[road]\ngenerate_length_m = 3000\nseed = 5\nlanes = 2\n[scene]\nroad_environment = true\n", "seat.toml");
  const road::RoadNetwork roads = road::SessionRoadNetwork(session.road);
  const road::Road& road = roads.Roads().front();
  viewer::SceneGraph scene;
  scene.SetRoads(roads);
  scene.SetEnvironment(road::SessionEnvironment(session));
  viewer::SeatWindowDef def = viewer::DefaultSeatWindowDef();
  CHECK_FALSE(def.hud);  // off by default
  def.width_px = 640;
  def.height_px = 360;
  viewer::SeatWindow window(def, scene);
  CHECK_FALSE(window.HudVisible());
  const std::vector<std::string> debug = {"87 km/h   sim 12.3 s", "steer +0.02  throttle 0.31  brake 0.00",
                                          "21 other vehicles", "keyboard (arrow keys)"};
  // The eye of a seat in the right lane, 1.2 m up, looking along the road.
  const double s = 900.0;
  Pose eye;
  eye.position_m = road.LaneCenter(s, -1) + Vec3(0, 0, 1.2);
  eye.orientation = Quat(Eigen::AngleAxisd(road.Heading(s), Vec3::UnitZ()));

  // Off: the debug lines change no pixel.
  viewer::Image plain, with_debug;
  REQUIRE(window.PollEvents());
  window.Render(eye, {}, {}, &plain);
  window.Render(eye, debug, {}, &with_debug);
  REQUIRE(plain.width == 640);
  REQUIRE(plain.height == 360);
  CHECK(SwCompare(plain, with_debug).count == 0);
  if (const char* dir = std::getenv("PLATOON_SCREENSHOT_DIR"))
    CHECK(viewer::WritePng(plain, std::string(dir) + "/seat_view.png").empty());

  // Tab: the debug text appears, at the top left only; Tab again hides it.
  SwPressTab();
  REQUIRE(window.PollEvents());
  CHECK(window.HudVisible());
  viewer::Image shown;
  window.Render(eye, debug, {});  // Dear ImGui sizes a new box in its first frame and shows it from the next
  window.Render(eye, debug, {}, &shown);
  const SwDiff hud = SwCompare(plain, shown);
  MESSAGE("debug text: " << hud.count << " pixels in u " << hud.u0 << ".." << hud.u1 << ", v " << hud.v0 << ".." << hud.v1);
  CHECK(hud.count > 500);
  CHECK(hud.u0 >= 5);
  CHECK(hud.u1 < 640 / 2);
  CHECK(hud.v1 < 360 / 3);
  SwPressTab();
  REQUIRE(window.PollEvents());
  CHECK_FALSE(window.HudVisible());

  // A scenario message shows with the debug text off, centred at the top.
  viewer::Image message;
  window.Render(eye, debug, "Please change to the left lane");
  window.Render(eye, debug, "Please change to the left lane", &message);
  const SwDiff box = SwCompare(plain, message);
  MESSAGE("message: " << box.count << " pixels in u " << box.u0 << ".." << box.u1 << ", v " << box.v0 << ".." << box.v1);
  CHECK(box.count > 500);
  CHECK(std::abs(0.5 * (box.u0 + box.u1) - 320.0) <= 2.0);
  CHECK(box.v0 >= 360 * 0.08 - 1);
  CHECK(box.v1 < 360 / 3);

  // Ground, road or objects below the horizon (the seat's own projection: 70 deg across), never the sky.
  const double fy = 320.0 / std::tan(35.0 * M_PI / 180.0);
  const double v_horizon = 180.0;  // level eye: the horizon is the image's middle row
  const auto horizon = SwChroma(scene.SkyColour().r, scene.SkyColour().g, scene.SkyColour().b);
  size_t below = 0, sky_like = 0;
  for (uint32_t j = static_cast<uint32_t>(std::ceil(v_horizon + 2.0)); j < plain.height; ++j)
    for (uint32_t i = 0; i < plain.width; ++i) {
      const auto p = plain.At(i, j);
      ++below;
      if (SwChromaDistance(SwChroma(p[0], p[1], p[2]), horizon) < 0.02) ++sky_like;
    }
  MESSAGE(below << " pixels from 2 px (" << 1.2 / std::tan(2.0 / fy) << " m of ground) below the horizon, " << sky_like
                << " sky-coloured");
  CHECK(sky_like == 0);
}
