// The driver seat's window as a participant sees it (viewer/src/seat_window.cpp): no debug text unless
// asked for (Tab or SeatWindowDef::hud), a scenario message in its own box, and with the environment on
// every pixel below the horizon ground, road or object. The frames are read back from the window's own
// back buffer (SeatWindow::Render's capture), so this is the seat's projection and near/far, not the
// offscreen renderer's. Needs an X display: part of platoon_render_tests, which ctest runs under xvfb-run.
// The own car (viewer/src/cockpit.cpp): the mirrors show what is behind, the speedometer's needle points
// where SpeedometerNeedleAngleRad says, the indicator tell-tale blinks in the scene's phase.
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

// Pixels that differ between two frames inside rectangle r (u0, v0, u1, v1), one pixel in from its edges.
size_t SwChangedIn(const viewer::Image& a, const viewer::Image& b, const std::array<double, 4>& r) {
  size_t n = 0;
  for (uint32_t j = static_cast<uint32_t>(std::ceil(r[1])) + 1; j + 1 < r[3] && j < a.height; ++j)
    for (uint32_t i = static_cast<uint32_t>(std::ceil(r[0])) + 1; i + 1 < r[2] && i < a.width; ++i)
      if (a.At(i, j) != b.At(i, j)) ++n;
  return n;
}

// A car of the usual size at lane centre `lane`, `s` along `road`, driving along s.
protocol::EntityState SwCar(const road::Road& road, uint64_t id, double s, int lane) {
  protocol::EntityState e;
  e.id = id;
  e.kind = protocol::EntityKind::kCar;
  e.kinematics.pose.position_m = road.LaneCenter(s, lane);
  e.kinematics.pose.orientation = Quat(Eigen::AngleAxisd(road.Heading(s), Vec3::UnitZ()));
  e.lights.headlights = true;
  return e;
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

  // Ground, road or objects below the horizon (the seat's own projection: 70 deg across), never the sky;
  // the mirrors show the world behind, sky included, so their glass and frames are left out.
  auto in_mirror = [&](uint32_t i, uint32_t j) {
    for (size_t k = 0; k < def.mirrors.size(); ++k) {
      const auto r = window.MirrorRect(k);
      const double frame = 0.01 * def.height_px + 2.0;
      if (i + 0.5 >= r[0] - frame && i + 0.5 <= r[2] + frame && j + 0.5 >= r[1] - frame && j + 0.5 <= r[3] + frame) return true;
    }
    return false;
  };
  const double fy = 320.0 / std::tan(35.0 * M_PI / 180.0);
  const double v_horizon = 180.0;  // level eye: the horizon is the image's middle row
  const auto horizon = SwChroma(scene.SkyColour().r, scene.SkyColour().g, scene.SkyColour().b);
  size_t below = 0, sky_like = 0;
  for (uint32_t j = static_cast<uint32_t>(std::ceil(v_horizon + 2.0)); j < plain.height; ++j)
    for (uint32_t i = 0; i < plain.width; ++i) {
      if (in_mirror(i, j)) continue;
      const auto p = plain.At(i, j);
      ++below;
      if (SwChromaDistance(SwChroma(p[0], p[1], p[2]), horizon) < 0.02) ++sky_like;
    }
  MESSAGE(below << " pixels from 2 px (" << 1.2 / std::tan(2.0 / fy) << " m of ground) below the horizon outside the "
                << def.mirrors.size() << " mirrors, " << sky_like << " sky-coloured");
  CHECK(def.cockpit);
  CHECK(def.mirrors.size() == 3);
  CHECK(below > plain.width * (plain.height / 2 - 3) / 2);
  CHECK(sky_like == 0);
}

TEST_CASE("seat window: a car 20 m behind shows in the interior mirror and a car in the left lane behind in the left mirror") {
  const config::SessionDef session = config::LoadSessionText(
      "[road]\ngenerate_length_m = 3000\nseed = 5\nlanes = 2\n[scene]\nroad_environment = true\n", "mirrors.toml");
  const road::RoadNetwork roads = road::SessionRoadNetwork(session.road);
  const road::Road& road = roads.Roads().front();
  REQUIRE(road.LanesRight() >= 2);
  viewer::SceneGraph scene;
  scene.SetRoads(roads);
  scene.SetEnvironment(road::SessionEnvironment(session));
  viewer::SeatWindowDef def = viewer::DefaultSeatWindowDef();
  REQUIRE(def.mirrors.size() == 3);
  REQUIRE(def.mirrors[0].name == "interior");
  REQUIRE(def.mirrors[1].name == "left");
  REQUIRE(def.mirrors[2].name == "right");
  viewer::SeatWindow window(def, scene);
  REQUIRE(window.PollEvents());

  // The ego in the outer right lane (-2) at s = 900 m, the eye where the seat puts it by default.
  const double s = 900.0;
  viewer::CockpitState cockpit;
  cockpit.speed_mps = 87.0 / 3.6;
  cockpit.rpm = 2400.0;
  cockpit.gear = 5;
  cockpit.headlights = true;
  cockpit.sim_ns = 1'000'000'000;
  window.SetCockpit(cockpit);
  const Quat heading(Eigen::AngleAxisd(road.Heading(s), Vec3::UnitZ()));
  const Pose body{road.LaneCenter(s, -2), heading};
  const Pose eye{body.position_m + body.orientation * cockpit.eye_in_vehicle.position_m, body.orientation};
  // Lane -1 lies to the ego's left (its body y axis): the test's own check of which lane is "left".
  const Vec3 left_axis = heading * Vec3::UnitY();
  REQUIRE((road.LaneCenter(s, -1) - road.LaneCenter(s, -2)).dot(left_axis) > 2.0);

  auto frame = [&](const std::vector<protocol::EntityState>& others) {
    scene.Update(others, cockpit.sim_ns);
    viewer::Image img;
    window.Render(eye, {}, {});
    window.Render(eye, {}, {}, &img);
    return img;
  };
  const protocol::EntityState ahead = SwCar(road, 7, s + 45.0, -2);
  const viewer::Image empty = frame({ahead});
  // 20 m behind the ego's rear axle, same lane; then one 15 m behind in the left lane.
  const viewer::Image behind = frame({ahead, SwCar(road, 8, s - 20.0, -2)});
  const viewer::Image left_lane = frame({ahead, SwCar(road, 9, s - 15.0, -1)});
  const size_t behind_interior = SwChangedIn(empty, behind, window.MirrorRect(0));
  const size_t behind_left = SwChangedIn(empty, behind, window.MirrorRect(1));
  const size_t behind_right = SwChangedIn(empty, behind, window.MirrorRect(2));
  const size_t left_interior = SwChangedIn(empty, left_lane, window.MirrorRect(0));
  const size_t left_left = SwChangedIn(empty, left_lane, window.MirrorRect(1));
  const size_t left_right = SwChangedIn(empty, left_lane, window.MirrorRect(2));
  MESSAGE("car 20 m behind: " << behind_interior << " px changed in the interior mirror, " << behind_left << " left, "
                              << behind_right << " right");
  MESSAGE("car 15 m behind in the left lane: " << left_interior << " px changed in the interior mirror, " << left_left
                                               << " left, " << left_right << " right");
  CHECK(behind_interior > 150);
  CHECK(behind_left * 4 < behind_interior);
  CHECK(behind_right * 4 < behind_interior);
  CHECK(left_left > 150);
  CHECK(left_right == 0);
  // The mirrors only: nothing behind the eye shows through the windscreen (nothing changes outside the
  // mirrors' glass and its filtered edge).
  size_t outside = 0;
  for (uint32_t j = 0; j < empty.height; ++j)
    for (uint32_t i = 0; i < empty.width; ++i) {
      bool in = false;
      for (size_t k = 0; k < 3; ++k) {
        const auto m = window.MirrorRect(k);
        in = in || (i + 2.5 >= m[0] && i - 1.5 <= m[2] && j + 2.5 >= m[1] && j - 1.5 <= m[3]);
      }
      if (!in && empty.At(i, j) != behind.At(i, j)) ++outside;
    }
  CHECK(outside == 0);

  // The mirror swaps left and right: the car in the left lane shows in the interior mirror's left half.
  const auto r = window.MirrorRect(0);
  size_t left_half = 0, right_half = 0;
  for (uint32_t j = static_cast<uint32_t>(r[1]) + 1; j + 1 < r[3]; ++j)
    for (uint32_t i = static_cast<uint32_t>(r[0]) + 1; i + 1 < r[2]; ++i)
      if (empty.At(i, j) != left_lane.At(i, j)) ++(i + 0.5 < 0.5 * (r[0] + r[2]) ? left_half : right_half);
  MESSAGE("interior mirror, car in the left lane: " << left_half << " px changed in its left half, " << right_half << " in its right");
  CHECK(left_half > 4 * right_half);

  if (const char* dir = std::getenv("PLATOON_SCREENSHOT_DIR")) {
    const viewer::Image shot = frame({ahead, SwCar(road, 8, s - 20.0, -2), SwCar(road, 9, s - 15.0, -1)});
    CHECK(viewer::WritePng(shot, std::string(dir) + "/seat_view.png").empty());
  }
}

TEST_CASE("seat window: the speedometer needle points at the speed within 2 km/h") {
  viewer::SceneGraph scene;
  viewer::SeatWindowDef def = viewer::DefaultSeatWindowDef();
  def.mirrors.clear();
  viewer::SeatWindow window(def, scene);
  REQUIRE(window.PollEvents());
  const Pose eye{Vec3(0, 0, 1.2), Quat::Identity()};
  viewer::Image img;
  window.Render(eye, {}, {}, &img);
  const viewer::ClusterLayout dial = viewer::InstrumentClusterLayout(static_cast<int>(img.width), static_cast<int>(img.height));
  REQUIRE(dial.radius_px > 40.0);
  // 2 km/h of the dial's 270 degrees over 240 km/h.
  const double tolerance = 2.0 * (1.5 * M_PI) / def.cockpit_def.speed_max_kmh;
  for (const double kmh : {0.0, 50.0, 130.0, 201.0}) {
    viewer::CockpitState st;
    st.speed_mps = kmh / 3.6;
    window.SetCockpit(st);
    window.Render(eye, {}, {}, &img);
    // The needle's orange-red pixels between the hub and the tip; their mean direction from the dial's
    // centre is the needle's axis (the bar is symmetric about it).
    double su = 0, sv = 0;
    size_t n = 0;
    for (uint32_t j = 0; j < img.height; ++j)
      for (uint32_t i = 0; i < img.width; ++i) {
        const double du = i + 0.5 - dial.speedo_u, dv = j + 0.5 - dial.speedo_v;
        const double d = std::hypot(du, dv);
        if (d < 0.25 * dial.radius_px || d > 0.9 * dial.radius_px) continue;
        const auto p = img.At(i, j);
        if (p[0] >= 80 && p[0] > 2.5 * p[1] && p[0] > 3 * p[2]) {
          su += du / d, sv += -dv / d;
          ++n;
        }
      }
    const double measured = std::atan2(sv, su);
    const double expected = viewer::SpeedometerNeedleAngleRad(kmh);
    const double error = std::remainder(measured - expected, 2.0 * M_PI);
    MESSAGE(kmh << " km/h: " << n << " needle pixels, angle " << measured * 180 / M_PI << " deg, expected "
                << expected * 180 / M_PI << " deg (error " << error * 180 / M_PI << " deg, "
                << std::abs(error) / (1.5 * M_PI) * 240.0 << " km/h)");
    CHECK(n > 40);
    CHECK(std::abs(error) <= tolerance);
  }
  // The mapping itself: 0 at 225 deg, full scale at -45 deg, clamped outside.
  CHECK(viewer::SpeedometerNeedleAngleRad(0.0) == doctest::Approx(1.25 * M_PI));
  CHECK(viewer::SpeedometerNeedleAngleRad(120.0) == doctest::Approx(0.5 * M_PI));
  CHECK(viewer::SpeedometerNeedleAngleRad(240.0) == doctest::Approx(-0.25 * M_PI));
  CHECK(viewer::SpeedometerNeedleAngleRad(300.0) == doctest::Approx(-0.25 * M_PI));
  CHECK(viewer::SpeedometerNeedleAngleRad(-5.0) == doctest::Approx(1.25 * M_PI));
}

TEST_CASE("seat window: the left indicator tell-tale blinks in the scene's phase left of the cluster's middle") {
  viewer::SceneGraph scene;
  viewer::SeatWindowDef def = viewer::DefaultSeatWindowDef();
  def.mirrors.clear();
  def.width_px = 640;
  def.height_px = 360;
  viewer::SeatWindow window(def, scene);
  REQUIRE(window.PollEvents());
  const Pose eye{Vec3(0, 0, 1.2), Quat::Identity()};
  // A lit and a dark instant of the blink, as the scene has them.
  int64_t lit_ns = 5'000'000'000, dark_ns = lit_ns;
  while (!viewer::SceneGraph::IndicatorLit(lit_ns)) lit_ns += 10'000'000;
  while (viewer::SceneGraph::IndicatorLit(dark_ns)) dark_ns += 10'000'000;
  auto frame = [&](bool left, int64_t sim_ns) {
    viewer::CockpitState st;
    st.indicator_left = left;
    st.sim_ns = sim_ns;
    window.SetCockpit(st);
    viewer::Image img;
    window.Render(eye, {}, {}, &img);
    return img;
  };
  const viewer::Image off = frame(false, lit_ns), lit = frame(true, lit_ns), dark = frame(true, dark_ns);
  const SwDiff on = SwCompare(off, lit);
  const viewer::ClusterLayout l = viewer::InstrumentClusterLayout(640, 360);
  MESSAGE("left tell-tale lit: " << on.count << " px in u " << on.u0 << ".." << on.u1 << ", v " << on.v0 << ".." << on.v1);
  CHECK(on.count > 20);
  CHECK(on.u0 > l.speedo_u);
  CHECK(on.u1 < 0.5 * (l.speedo_u + l.rev_u));
  CHECK(on.v0 > l.panel_v0);
  CHECK(SwCompare(off, dark).count == 0);
}

TEST_CASE("seat window: comma and period work the own indicators and send no seat key") {
  viewer::SceneGraph scene;
  viewer::SeatWindowDef def = viewer::DefaultSeatWindowDef();
  def.width_px = 320;
  def.height_px = 180;
  viewer::SeatWindow window(def, scene);
  std::vector<int> sides;
  std::vector<std::string> keys;
  window.SetIndicatorCallback([&](int side) { sides.push_back(side); });
  window.SetKeyCallback([&](const std::string& key) { keys.push_back(key); });
  auto press = [](SDL_Keycode sym, bool repeat) {
    SDL_Event ev{};
    ev.type = SDL_KEYDOWN;
    ev.key.keysym.sym = sym;
    ev.key.repeat = repeat ? 1 : 0;
    REQUIRE(SDL_PushEvent(&ev) == 1);
  };
  press(SDLK_COMMA, false);
  press(SDLK_COMMA, true);  // a held key is one press
  press(SDLK_PERIOD, false);
  press(SDLK_a, false);
  REQUIRE(window.PollEvents());
  CHECK(sides == std::vector<int>{-1, 1});
  CHECK(keys == std::vector<std::string>{"a"});
}
