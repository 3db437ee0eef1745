// A seat with several screens (viewer/src/seat_window.cpp with SeatWindowDef::screens, the off-axis
// frustums of viewer/src/screen_frustum.cpp): three monitors side by side with a bezel gap between their
// image areas, each a window of its own. The frames are each window's own back buffer (RenderScreens'
// captures). Expected pixels come from the screens' physical corners and the eye alone (a ray through the
// physical screen), never from the renderer's matrices. Needs an X display: part of platoon_render_tests.
// With PLATOON_SCREENSHOT_DIR set, the three frames side by side (bezel gaps black) are written there as
// three_screens.png.
#include "platoon/config/session.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/viewer/image.hpp"
#include "platoon/viewer/scene.hpp"
#include "platoon/viewer/screen_frustum.hpp"
#include "platoon/viewer/seat_window.hpp"
#include "platoon/viewer/viewer_app.hpp"

#include <doctest/doctest.h>
#include <osg/Geode>
#include <osg/MatrixTransform>
#include <osg/ShapeDrawable>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

using namespace platoon;

namespace screens_render_test_detail {

constexpr uint32_t kScW = 640, kScH = 360;          // each window, px
constexpr double kScWidthM = 0.60, kScHeightM = 0.3375;  // each screen's image area (16:9), m
constexpr double kScGapM = 0.03;                     // bezel: image edge to image edge, m
constexpr double kScDistM = 0.70;                    // eye to the centre screen, m
constexpr double kScYawRad = 50.0 * M_PI / 180.0;    // the side screens turned towards the eye
const Vec3 kScEye(0.0, 0.0, 1.2);                    // eye in the vehicle frame, m

// Three screens: centre straight ahead of the eye, left and right turned about their inner edges by
// kScYawRad, the image areas kScGapM apart along the screens. Order: left, centre, right.
std::vector<viewer::ScreenCorners> ScThreeScreens(double gap_m = kScGapM) {
  const double z0 = kScEye.z() - 0.5 * kScHeightM, z1 = kScEye.z() + 0.5 * kScHeightM;
  const Vec3 up(0, 0, kScHeightM);
  viewer::ScreenCorners centre{Vec3(kScDistM, 0.5 * kScWidthM, z0), Vec3(kScDistM, -0.5 * kScWidthM, z0),
                               Vec3(kScDistM, 0.5 * kScWidthM, z1)};
  // Left: its rows run towards +x, -y (to its right, the centre screen).
  const Vec3 left_right(std::sin(kScYawRad), -std::cos(kScYawRad), 0);
  viewer::ScreenCorners left;
  left.lower_right_m = centre.lower_left_m - gap_m * left_right;
  left.lower_left_m = left.lower_right_m - kScWidthM * left_right;
  left.upper_left_m = left.lower_left_m + up;
  // Right: its rows run towards -x, -y.
  const Vec3 right_right(-std::sin(kScYawRad), -std::cos(kScYawRad), 0);
  viewer::ScreenCorners right;
  right.lower_left_m = centre.lower_right_m + gap_m * right_right;
  right.lower_right_m = right.lower_left_m + kScWidthM * right_right;
  right.upper_left_m = right.lower_left_m + up;
  return {left, centre, right};
}

viewer::SeatWindowDef ScDef(const std::vector<viewer::ScreenCorners>& corners, bool cockpit) {
  viewer::SeatWindowDef def = viewer::DefaultSeatWindowDef();
  def.cockpit = cockpit;
  if (!cockpit) def.mirrors.clear();
  // On the 1280 x 1024 Xvfb screen without overlapping: two side by side, the third below.
  const std::array<std::array<int, 2>, 3> at = {{{0, 0}, {640, 0}, {0, 400}}};
  for (size_t i = 0; i < corners.size(); ++i) {
    viewer::SeatScreen s;
    s.corners = corners[i];
    s.width_px = kScW;
    s.height_px = kScH;
    s.position_px = at[i % 3];
    s.main = corners.size() == 3 ? i == 1 : i == 0;
    s.name = "screen[" + std::to_string(i) + "]";
    def.screens.push_back(s);
  }
  return def;
}

// An unlit box of colour `rgb` at `centre` (world, m), sides `size` along the axes of `orientation`.
osg::ref_ptr<osg::Node> ScBox(const Vec3& centre, const Vec3& size, const Quat& orientation, const osg::Vec4& rgb) {
  auto* box = new osg::Box(osg::Vec3(0, 0, 0), static_cast<float>(size.x()), static_cast<float>(size.y()),
                           static_cast<float>(size.z()));
  box->setRotation(osg::Quat(orientation.x(), orientation.y(), orientation.z(), orientation.w()));
  auto* drawable = new osg::ShapeDrawable(box);
  drawable->setColor(rgb);
  osg::ref_ptr<osg::Geode> geode = new osg::Geode;
  geode->addDrawable(drawable);
  geode->getOrCreateStateSet()->setMode(GL_LIGHTING, osg::StateAttribute::OFF | osg::StateAttribute::OVERRIDE);
  osg::ref_ptr<osg::MatrixTransform> at = new osg::MatrixTransform(osg::Matrixd::translate(centre.x(), centre.y(), centre.z()));
  at->addChild(geode);
  return at;
}

bool ScMagenta(const std::array<uint8_t, 3>& c) { return c[0] > 150 && c[2] > 150 && c[1] < 90; }
bool ScYellow(const std::array<uint8_t, 3>& c) { return c[0] > 150 && c[1] > 150 && c[2] < 90; }

// The line's centre in each row: the mean of the pixel centres of one run of magenta pixels (2..30 px,
// not touching the image's left or right edge).
std::vector<std::array<double, 2>> ScLineSamples(const viewer::Image& img) {
  std::vector<std::array<double, 2>> out;
  for (uint32_t j = 0; j < img.height; ++j) {
    uint32_t first = UINT32_MAX, last = 0, n = 0;
    for (uint32_t i = 0; i < img.width; ++i)
      if (ScMagenta(img.At(i, j))) first = std::min(first, i), last = std::max(last, i), ++n;
    if (n >= 2 && n <= 30 && last - first + 1 == n && first > 0 && last + 1 < img.width)
      out.push_back({0.5 * (first + last) + 0.5, j + 0.5});
  }
  return out;
}

// Where pixel (u, v) of screen `s` lies in the vehicle frame (m).
Vec3 ScOnScreen(const viewer::ScreenCorners& s, double u, double v) {
  return s.lower_left_m + (u / kScW) * (s.lower_right_m - s.lower_left_m) + (1.0 - v / kScH) * (s.upper_left_m - s.lower_left_m);
}

// Largest distance (px) of `points` from the straight line fitted (total least squares) through `line`.
double ScWorstOffLine(const std::vector<std::array<double, 2>>& line, const std::vector<std::array<double, 2>>& points) {
  double mu = 0, mv = 0;
  for (const auto& p : line) mu += p[0], mv += p[1];
  mu /= static_cast<double>(line.size()), mv /= static_cast<double>(line.size());
  double suu = 0, suv = 0, svv = 0;
  for (const auto& p : line) suu += (p[0] - mu) * (p[0] - mu), suv += (p[0] - mu) * (p[1] - mv), svv += (p[1] - mv) * (p[1] - mv);
  const double angle = 0.5 * std::atan2(2.0 * suv, suu - svv);  // the line's direction
  const double nu = -std::sin(angle), nv = std::cos(angle);
  double worst = 0;
  for (const auto& p : points) worst = std::max(worst, std::abs((p[0] - mu) * nu + (p[1] - mv) * nv));
  return worst;
}

// The samples of screen `from` carried through the physical geometry (pixel -> point on that screen ->
// ray from the eye -> screen `to`) into screen `to`'s pixel frame.
std::vector<std::array<double, 2>> ScCarry(const std::vector<std::array<double, 2>>& samples, const viewer::ScreenCorners& from,
                                           const viewer::ScreenCorners& to, const Vec3& eye = kScEye) {
  std::vector<std::array<double, 2>> out;
  for (const auto& p : samples)
    if (const auto uv = viewer::ScreenPixel(to, kScW, kScH, eye, ScOnScreen(from, p[0], p[1]))) out.push_back(*uv);
  return out;
}

// Centroid (pixel centres) of the pixels that `is` picks; nullopt when none.
template <typename Pick>
std::optional<std::array<double, 2>> ScBlob(const viewer::Image& img, Pick is) {
  double su = 0, sv = 0;
  size_t n = 0;
  for (uint32_t j = 0; j < img.height; ++j)
    for (uint32_t i = 0; i < img.width; ++i)
      if (is(img.At(i, j))) su += i + 0.5, sv += j + 0.5, ++n;
  if (n == 0) return std::nullopt;
  return std::array<double, 2>{su / n, sv / n};
}

}  // namespace screens_render_test_detail
using namespace screens_render_test_detail;

TEST_CASE("screens: a straight pole across two adjacent screens is continuous within 1 px through the bezel gap") {
  viewer::SceneGraph scene;
  // The vehicle's frame is the world's here. A thin magenta pole ahead-left, leaning, seen across the
  // left and centre screens' common edge.
  const Vec3 a(10.0, 2.5, 0.0), b(10.0, 6.5, 3.0);
  const Vec3 dir = (b - a).normalized();
  const Quat along = Quat::FromTwoVectors(Vec3::UnitZ(), dir);
  scene.Root()->addChild(ScBox(0.5 * (a + b), Vec3(0.08, 0.08, (b - a).norm()), along, osg::Vec4(1, 0, 1, 1)));
  const auto corners = ScThreeScreens();
  viewer::SeatWindow window(ScDef(corners, false), scene);
  REQUIRE(window.ScreenCount() == 3);
  viewer::CockpitState cockpit;
  cockpit.eye_in_vehicle = Pose{kScEye, Quat::Identity()};
  window.SetCockpit(cockpit);
  std::vector<viewer::Image> frames;
  REQUIRE(window.PollEvents());
  window.RenderScreens(Pose{kScEye, Quat::Identity()}, {}, {}, &frames);
  REQUIRE(frames.size() == 3);
  for (const auto& f : frames) {
    REQUIRE(f.width == kScW);
    REQUIRE(f.height == kScH);
  }
  // The pole's rows, without those within 12 px of its ends (the end faces are no part of the line).
  const auto trim = [&](const std::vector<std::array<double, 2>>& samples, const viewer::ScreenCorners& c) {
    std::vector<std::array<double, 2>> out;
    for (const auto& p : samples) {
      bool near_end = false;
      for (const Vec3& end : {a, b})
        if (const auto uv = viewer::ScreenPixel(c, kScW, kScH, kScEye, end)) near_end = near_end || std::abs((*uv)[1] - p[1]) < 12.0;
      if (!near_end) out.push_back(p);
    }
    return out;
  };
  const auto left = trim(ScLineSamples(frames[0]), corners[0]), centre = trim(ScLineSamples(frames[1]), corners[1]);
  MESSAGE("pole: " << left.size() << " rows on the left screen, " << centre.size() << " on the centre one");
  REQUIRE(left.size() >= 40);
  REQUIRE(centre.size() >= 40);
  // It reaches the common edge on both: the left screen's right edge, the centre screen's left edge.
  double left_max_u = 0, centre_min_u = kScW;
  for (const auto& p : left) left_max_u = std::max(left_max_u, p[0]);
  for (const auto& p : centre) centre_min_u = std::min(centre_min_u, p[0]);
  CHECK(left_max_u > kScW - 20.0);
  CHECK(centre_min_u < 20.0);

  // The centre screen's pole carried into the left screen's pixel frame (beyond its right edge, through
  // the gap) lines up with the left screen's own pole, and the other way round.
  MESSAGE("straightness on each screen (worst distance from its own line): left " << ScWorstOffLine(left, left)
                                                                                   << " px, centre " << ScWorstOffLine(centre, centre) << " px");
  const double into_left = ScWorstOffLine(ScCarry(centre, corners[1], corners[0]), left);
  const double into_centre = ScWorstOffLine(ScCarry(left, corners[0], corners[1]), centre);
  // The same carried as if the screens had no bezel (image areas edge to edge): off by the gap.
  const auto no_bezel = ScThreeScreens(0.0);
  const double without = ScWorstOffLine(ScCarry(centre, no_bezel[1], no_bezel[0]), left);
  MESSAGE("worst distance from the line carried across: " << into_left << " px (left frame), " << into_centre
                                                           << " px (centre frame); ignoring the " << kScGapM * 1e3
                                                           << " mm bezel: " << without << " px");
  CHECK(into_left <= 1.0);
  CHECK(into_centre <= 1.0);
  CHECK(without > 3.0);  // the check can tell a missing bezel compensation

  // The tracked head 5 cm left, 3 cm forward and 2 cm up: every screen's frustum follows, and the pole
  // stays continuous across the gap as seen from the new eye (carried through the geometry from there).
  const Vec3 moved = kScEye + Vec3(0.03, 0.05, 0.02);
  cockpit.eye_in_vehicle = Pose{moved, Quat::Identity()};
  window.SetCockpit(cockpit);
  window.RenderScreens(Pose{moved, Quat::Identity()}, {}, {}, &frames);
  REQUIRE(frames.size() == 3);
  const auto trim_from = [&](const std::vector<std::array<double, 2>>& samples, const viewer::ScreenCorners& c) {
    std::vector<std::array<double, 2>> out;
    for (const auto& p : samples) {
      bool near_end = false;
      for (const Vec3& end : {a, b})
        if (const auto uv = viewer::ScreenPixel(c, kScW, kScH, moved, end)) near_end = near_end || std::abs((*uv)[1] - p[1]) < 12.0;
      if (!near_end) out.push_back(p);
    }
    return out;
  };
  const auto left2 = trim_from(ScLineSamples(frames[0]), corners[0]), centre2 = trim_from(ScLineSamples(frames[1]), corners[1]);
  MESSAGE("head moved: pole in " << left2.size() << " rows on the left screen, " << centre2.size() << " on the centre one");
  REQUIRE(left2.size() >= 20);
  REQUIRE(centre2.size() >= 20);
  const double moved_into_left = ScWorstOffLine(ScCarry(centre2, corners[1], corners[0], moved), left2);
  // And the view did change: the pole on the centre screen is off its line of the first frame.
  const double shift = ScWorstOffLine(centre, centre2);
  MESSAGE("head moved: " << moved_into_left << " px from the line carried from the new eye; the pole moved up to " << shift
                         << " px on the centre screen");
  CHECK(moved_into_left <= 1.0);
  CHECK(shift > 3.0);
}

TEST_CASE("screens: moving the tracked head 10 cm sideways moves near and far objects by what the geometry gives within 1 px") {
  viewer::SceneGraph scene;
  // The vehicle somewhere in the world, turned; a near magenta and a far yellow square facing it.
  const Pose body{Vec3(120.0, -40.0, 0.0), Quat(Eigen::AngleAxisd(0.6, Vec3::UnitZ()))};
  const Vec3 near_v(2.0, 0.25, 1.3), far_v(30.0, -1.5, 1.0);
  scene.Root()->addChild(ScBox(body.position_m + body.orientation * near_v, Vec3(0.002, 0.12, 0.12), body.orientation, osg::Vec4(1, 0, 1, 1)));
  scene.Root()->addChild(ScBox(body.position_m + body.orientation * far_v, Vec3(0.002, 1.0, 1.0), body.orientation, osg::Vec4(1, 1, 0, 1)));
  // One screen given by its corners: the centre monitor.
  const viewer::ScreenCorners screen = ScThreeScreens()[1];
  viewer::SeatWindow window(ScDef({screen}, false), scene);
  REQUIRE(window.ScreenCount() == 1);
  REQUIRE(window.PollEvents());
  struct Seen {
    std::array<double, 2> near, far;
  };
  const auto look = [&](const Vec3& eye_v) {
    viewer::CockpitState cockpit;
    cockpit.eye_in_vehicle = Pose{eye_v, Quat::Identity()};
    window.SetCockpit(cockpit);
    std::vector<viewer::Image> frames;
    window.RenderScreens(Pose{body.position_m + body.orientation * eye_v, body.orientation}, {}, {}, &frames);
    REQUIRE(frames.size() == 1);
    const auto n = ScBlob(frames[0], ScMagenta), f = ScBlob(frames[0], ScYellow);
    REQUIRE(n.has_value());
    REQUIRE(f.has_value());
    return Seen{*n, *f};
  };
  const Vec3 eye0 = kScEye, eye1 = kScEye + Vec3(0, 0.10, 0);  // the head 10 cm to the left
  const Seen before = look(eye0), after = look(eye1);
  // Expected: where the ray from the eye to each square's centre crosses the physical screen.
  const auto px = [&](const Vec3& eye, const Vec3& p) {
    const auto uv = viewer::ScreenPixel(screen, kScW, kScH, eye, p);
    REQUIRE(uv.has_value());
    return *uv;
  };
  const auto n0 = px(eye0, near_v), n1 = px(eye1, near_v), f0 = px(eye0, far_v), f1 = px(eye1, far_v);
  MESSAGE("near square: rendered u " << before.near[0] << " -> " << after.near[0] << ", geometry " << n0[0] << " -> " << n1[0]);
  MESSAGE("far square: rendered u " << before.far[0] << " -> " << after.far[0] << ", geometry " << f0[0] << " -> " << f1[0]);
  for (int k = 0; k < 2; ++k) {
    CHECK(std::abs(before.near[k] - n0[k]) <= 1.0);
    CHECK(std::abs(after.near[k] - n1[k]) <= 1.0);
    CHECK(std::abs(before.far[k] - f0[k]) <= 1.0);
    CHECK(std::abs(after.far[k] - f1[k]) <= 1.0);
  }
  // Parallax: against the far background the near square moves the other way, by what the geometry gives
  // (on the fixed screen a point on its plane stays, a point at infinity moves with the head).
  const double parallax = (after.near[0] - after.far[0]) - (before.near[0] - before.far[0]);
  const double expected = (n1[0] - f1[0]) - (n0[0] - f0[0]);
  MESSAGE("near against far: " << parallax << " px rendered, " << expected << " px by the geometry");
  CHECK(std::abs(expected) > 10.0);
  CHECK(std::abs(parallax - expected) <= 1.0);
  // The frustum followed the eye: asymmetric now, by the head's offset.
  const viewer::ScreenFrustum f = window.LastFrustum(0);
  CHECK(f.right_m + f.left_m == doctest::Approx(2.0 * 0.10 * f.near_m / kScDistM));
}

TEST_CASE("screens: three screens on a road show one world with the own car on the main screen") {
  const config::SessionDef session = config::LoadSessionText(
      "[road]\ngenerate_length_m = 3000\nseed = 5\nlanes = 2\n[scene]\nroad_environment = true\n", "screens.toml");
  const road::RoadNetwork roads = road::SessionRoadNetwork(session.road);
  const road::Road& road = roads.Roads().front();
  viewer::SceneGraph scene;
  scene.SetRoads(roads);
  scene.SetEnvironment(road::SessionEnvironment(session));
  // The screens measured around this seat's eye, 1.2 m ahead of the rear axle and 0.35 m left.
  const Vec3 eye_v(1.2, 0.35, 1.2);
  auto corners = ScThreeScreens();
  for (auto& c : corners)
    for (Vec3* p : {&c.lower_left_m, &c.lower_right_m, &c.upper_left_m}) *p += eye_v - kScEye;
  viewer::SeatWindowDef def = ScDef(corners, true);
  viewer::SeatWindow window(def, scene);
  REQUIRE(window.ScreenCount() == 3);
  const double s = 900.0;
  const Pose body{road.LaneCenter(s, -1), Quat(Eigen::AngleAxisd(road.Heading(s), Vec3::UnitZ()))};
  // Cars ahead in both lanes.
  std::vector<protocol::EntityState> cars;
  for (int k = 0; k < 3; ++k) {
    protocol::EntityState e;
    e.id = 10 + static_cast<uint64_t>(k);
    e.kind = protocol::EntityKind::kCar;
    const double sk = s + 14.0 + 9.0 * k;
    e.kinematics.pose.position_m = road.LaneCenter(sk, k == 1 ? -1 : 1);
    e.kinematics.pose.orientation = Quat(Eigen::AngleAxisd(road.Heading(sk), Vec3::UnitZ()));
    cars.push_back(e);
  }
  scene.Update(cars, 0);
  viewer::CockpitState cockpit;
  cockpit.eye_in_vehicle = Pose{eye_v, Quat::Identity()};
  window.SetCockpit(cockpit);
  REQUIRE(window.PollEvents());
  std::vector<viewer::Image> frames;
  window.RenderScreens(Pose{body.position_m + body.orientation * cockpit.eye_in_vehicle.position_m, body.orientation}, {}, {}, &frames);
  REQUIRE(frames.size() == 3);
  // Only the main screen carries the own car: the instrument cluster's dark panel at its bottom centre; the
  // side screens show the road there.
  const auto dark_bottom = [](const viewer::Image& img) {
    size_t dark = 0;
    for (uint32_t i = 0; i < img.width; ++i) {
      const auto c = img.At(i, img.height - 2);
      if (c[0] + c[1] + c[2] < 150) ++dark;
    }
    return dark;
  };
  MESSAGE("dark pixels in the bottom row: left " << dark_bottom(frames[0]) << ", centre " << dark_bottom(frames[1]) << ", right "
                                                 << dark_bottom(frames[2]));
  CHECK(dark_bottom(frames[1]) > 60);  // the instrument cluster's dark panel
  CHECK(dark_bottom(frames[0]) < 10);
  CHECK(dark_bottom(frames[2]) < 10);
  if (const char* dir = std::getenv("PLATOON_SCREENSHOT_DIR")) {
    // Side by side, the bezel gap in black at the screens' pixel size.
    const auto gap = static_cast<uint32_t>(std::lround(kScGapM / kScWidthM * kScW));
    viewer::Image pano;
    pano.width = 3 * kScW + 2 * gap;
    pano.height = kScH;
    pano.rgb.assign(size_t{pano.width} * pano.height * 3, 0);
    for (size_t k = 0; k < 3; ++k)
      for (uint32_t j = 0; j < kScH; ++j)
        std::copy_n(frames[k].rgb.data() + size_t{j} * kScW * 3, size_t{kScW} * 3,
                    pano.rgb.data() + (size_t{j} * pano.width + k * (kScW + gap)) * 3);
    CHECK(viewer::WritePng(pano, std::string(dir) + "/three_screens.png").empty());
  }
}

TEST_CASE("screens: a display that does not exist stops the seat window with an error naming the key") {
  viewer::SceneGraph scene;
  viewer::SeatWindowDef def = ScDef({ScThreeScreens()[1]}, false);
  def.screens[0].display = 7;  // Xvfb has one display
  def.screens[0].name = "seat.toml:30: node[1].screen[0]";
  std::string error;
  try {
    viewer::SeatWindow window(def, scene);
  } catch (const viewer::WindowError& e) {
    error = e.what();
  }
  MESSAGE(error);
  CHECK(error.find("node[1].screen[0].display") != std::string::npos);
  CHECK(error.find("display 7 does not exist") != std::string::npos);
  // Corners that are no rectangle are refused when the window opens too (SeatWindowDef made in code).
  def.screens[0].display = 0;
  def.screens[0].corners.upper_left_m += Vec3(0, 0.01, 0);
  error.clear();
  try {
    viewer::SeatWindow window(def, scene);
  } catch (const viewer::WindowError& e) {
    error = e.what();
  }
  CHECK(error.find("node[1].screen[0]: expected a rectangle") != std::string::npos);
}
