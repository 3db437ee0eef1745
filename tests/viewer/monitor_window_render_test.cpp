// The monitor-HIL window (viewer/src/monitor_window.cpp) and the sensor host's monitor option
// (node/src/sensor_host.cpp, monitor = "window" | "fullscreen"): what the window shows, read back from its
// back buffer, equals the camera sensor's rendered frame pixel for pixel. Needs an X display: part of
// platoon_render_tests, which ctest runs under xvfb-run -s "-screen 0 1280x1024x24" (tests/CMakeLists.txt).
#include "../support/camera_context.hpp"
#include "platoon/node/camera_pinhole.hpp"
#include "platoon/config/session.hpp"
#include "platoon/node/sensor_host.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/sensors/camera.hpp"
#include "platoon/sensors/mounting.hpp"
#include "platoon/viewer/image.hpp"
#include "platoon/viewer/monitor_window.hpp"
#include "platoon/viewer/offscreen_renderer.hpp"
#include "platoon/viewer/pinhole_camera.hpp"
#include "platoon/viewer/scene.hpp"
#include "platoon/viewer/viewer_app.hpp"

#include <SDL.h>
#include <doctest/doctest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

using namespace platoon;

namespace monitor_window_render_test_detail {

constexpr double kMonitorDeg = 0.017453292519943295;

// A session with a generated road, its environment (buildings, trees, fog) and two cars: an image with
// many colours, so that a shifted, flipped, scaled or filtered copy cannot pass for the original.
const char* const kMonitorRoad = "[road]\ngenerate_length_m = 400\nseed = 5\nlanes = 2\n";

// The camera sensor of the tests: 640 x 360 px, the seed-000 optics, mounted off-centre, yawed and pitched.
sensors::CameraDef MonitorTestCamera() {
  sensors::CameraDef def = sensors::DefaultCameraDef();
  def.image_width_px = 640;
  def.image_height_px = 360;
  def.mounting.position_m = Vec3(1.8, 0.3, 1.3);
  def.mounting.orientation = Quat(Eigen::AngleAxisd(-4 * kMonitorDeg, Vec3::UnitZ()) *
                                  Eigen::AngleAxisd(3 * kMonitorDeg, Vec3::UnitY()));
  return def;
}


protocol::EntityState MonitorCar(uint64_t id, const Vec3& position, double yaw_rad) {
  protocol::EntityState e;
  e.id = id;
  e.kind = protocol::EntityKind::kCar;
  e.box_size_m = Vec3(4.6, 1.8, 1.5);
  e.kinematics.pose = Pose{position, Quat(Eigen::AngleAxisd(yaw_rad, Vec3::UnitZ()))};
  return e;
}

// Renders the scene through the test camera on a vehicle at (x_m, 0) heading along x, with a car ahead
// at `car_ahead_m`.
struct MonitorScene {
  config::SessionDef session = config::LoadSessionText(kMonitorRoad, "monitor.toml");
  viewer::SceneGraph scene;
  sensors::CameraDef def = MonitorTestCamera();
  viewer::OffscreenRenderer renderer{def.image_width_px, def.image_height_px};
  MonitorScene() {
    scene.SetRoads(road::SessionRoadNetwork(session.road));
    scene.SetEnvironment(road::SessionEnvironment(session));
    renderer.SetScene(scene.Root(), scene.SkyColour());
  }
  viewer::Image Render(double x_m, double car_ahead_m) {
    scene.Update({MonitorCar(11, Vec3(x_m + car_ahead_m, -1.5, 0), 0.2), MonitorCar(12, Vec3(x_m + 30, 2.0, 0), -0.1)});
    const Pose vehicle{Vec3(x_m, 0, 0), Quat::Identity()};
    return renderer.Render(sensors::SensorPoseInWorld(vehicle, def.mounting), node::SensorPinhole(def));
  }
};

size_t DistinctColours(const viewer::Image& img) {
  std::set<std::array<uint8_t, 3>> colours;
  for (uint32_t j = 0; j < img.height; ++j)
    for (uint32_t i = 0; i < img.width; ++i) colours.insert(img.At(i, j));
  return colours.size();
}

// Compares a captured frame with the image expected at window offset (ox, oy) (top-left, may be negative)
// and black elsewhere; counts the pixels of each kind that differ.
struct MonitorComparison {
  size_t image_px = 0, image_differing = 0, black_px = 0, black_differing = 0;
};
MonitorComparison CompareCapture(const viewer::Image& frame, const viewer::Image& image, int ox, int oy) {
  MonitorComparison c;
  for (uint32_t y = 0; y < frame.height; ++y)
    for (uint32_t x = 0; x < frame.width; ++x) {
      const int i = static_cast<int>(x) - ox, j = static_cast<int>(y) - oy;
      if (i >= 0 && j >= 0 && i < static_cast<int>(image.width) && j < static_cast<int>(image.height)) {
        ++c.image_px;
        if (frame.At(x, y) != image.At(static_cast<uint32_t>(i), static_cast<uint32_t>(j))) ++c.image_differing;
      } else {
        ++c.black_px;
        if (frame.At(x, y) != std::array<uint8_t, 3>{0, 0, 0}) ++c.black_differing;
      }
    }
  return c;
}

viewer::MonitorWindowDef WindowOf(uint32_t w, uint32_t h) {
  viewer::MonitorWindowDef def = viewer::DefaultMonitorWindowDef();
  def.width_px = w;
  def.height_px = h;
  def.vsync = false;  // Xvfb has no refresh to wait for
  return def;
}

}  // namespace monitor_window_render_test_detail

using namespace monitor_window_render_test_detail;

TEST_CASE("monitor window: the image origin centres the image and rounds towards minus infinity") {
  // (W - w) / 2 and (H - h) / 2, floored: worked by hand.
  CHECK(viewer::MonitorImageOrigin(640, 360, 640, 360).x_px == 0);
  CHECK(viewer::MonitorImageOrigin(800, 600, 640, 360).x_px == 80);
  CHECK(viewer::MonitorImageOrigin(800, 600, 640, 360).y_px == 120);
  CHECK(viewer::MonitorImageOrigin(801, 601, 640, 360).x_px == 80);   // 161 / 2 = 80.5
  CHECK(viewer::MonitorImageOrigin(801, 601, 640, 360).y_px == 120);  // 241 / 2 = 120.5
  CHECK(viewer::MonitorImageOrigin(639, 359, 640, 360).x_px == -1);   // -1 / 2 = -0.5
  CHECK(viewer::MonitorImageOrigin(320, 200, 640, 360).x_px == -160);
  CHECK(viewer::MonitorImageOrigin(320, 201, 640, 360).y_px == -80);  // -159 / 2 = -79.5
}

TEST_CASE("monitor window: a window of the image's size shows the camera's rendered frame pixel for pixel") {
  MonitorScene s;
  viewer::MonitorWindow window(WindowOf(s.def.image_width_px, s.def.image_height_px));
  MESSAGE("monitor GL: " << window.GlInfo() << ", renderer GL: " << s.renderer.GlInfo());
  REQUIRE(window.WidthPx() == s.def.image_width_px);
  REQUIRE(window.HeightPx() == s.def.image_height_px);
  // Two different frames in turn: each capture is the frame just presented, not the one before.
  const viewer::Image a = s.Render(0.0, 14.0), b = s.Render(6.0, 9.0);
  MESSAGE("distinct colours: " << DistinctColours(a) << " and " << DistinctColours(b));
  REQUIRE(DistinctColours(a) > 100);
  REQUIRE(a.rgb != b.rgb);
  // The render passes through the window's context after the renderer's, in both orders.
  for (const viewer::Image* img : {&a, &b, &a}) {
    viewer::Image shown;
    window.Present(*img, &shown);
    REQUIRE(shown.width == img->width);
    REQUIRE(shown.height == img->height);
    CHECK(shown.rgb == img->rgb);
    CHECK(viewer::MonitorDifferingPixels(shown, *img) == 0);
  }
  // Rendering again after presenting still works (the contexts do not step on each other).
  const viewer::Image a2 = s.Render(0.0, 14.0);
  CHECK(a2.rgb == a.rgb);
}

TEST_CASE("monitor window: a larger window shows the image 1:1 at its centred origin on black") {
  MonitorScene s;
  const viewer::Image img = s.Render(3.0, 12.0);
  const uint32_t W = 801, H = 601;  // odd margins: 161 and 241 px
  viewer::MonitorWindow window(WindowOf(W, H));
  REQUIRE(window.WidthPx() == W);
  REQUIRE(window.HeightPx() == H);
  viewer::Image shown;
  window.Present(img, &shown);
  REQUIRE(shown.width == W);
  REQUIRE(shown.height == H);
  // Documented offset: floor((801 - 640) / 2) = 80, floor((601 - 360) / 2) = 120.
  const MonitorComparison c = CompareCapture(shown, img, 80, 120);
  CHECK(c.image_px == size_t{img.width} * img.height);
  CHECK(c.image_differing == 0);
  CHECK(c.black_px == size_t{W} * H - size_t{img.width} * img.height);
  CHECK(c.black_differing == 0);
  // One pixel off in either direction would not match: the comparison can fail.
  CHECK(CompareCapture(shown, img, 81, 120).image_differing > 0);
  CHECK(CompareCapture(shown, img, 80, 119).image_differing > 0);
  CHECK(viewer::MonitorDifferingPixels(shown, img) == 0);
}

TEST_CASE("monitor window: a window smaller than the image shows the image's centre part 1:1") {
  MonitorScene s;
  const viewer::Image img = s.Render(1.0, 15.0);
  viewer::MonitorWindow window(WindowOf(321, 201));
  viewer::Image shown;
  window.Present(img, &shown);
  REQUIRE(shown.width == 321);
  REQUIRE(shown.height == 201);
  // floor((321 - 640) / 2) = -160, floor((201 - 360) / 2) = -80: every window pixel is an image pixel.
  const MonitorComparison c = CompareCapture(shown, img, -160, -80);
  CHECK(c.black_px == 0);
  CHECK(c.image_px == 321u * 201u);
  CHECK(c.image_differing == 0);
}

TEST_CASE("monitor window: fullscreen covers the display and centres the image") {
  MonitorScene s;
  const viewer::Image img = s.Render(2.0, 11.0);
  viewer::MonitorWindowDef def = WindowOf(img.width, img.height);
  def.fullscreen = true;
  viewer::MonitorWindow window(def);
  // The display's size as SDL reports it (Xvfb's -screen, 1280 x 1024 under ctest).
  SDL_DisplayMode mode;
  REQUIRE(SDL_GetDesktopDisplayMode(0, &mode) == 0);
  MESSAGE("display 0: " << mode.w << " x " << mode.h);
  viewer::Image shown;
  window.Present(img, &shown);
  REQUIRE(shown.width == static_cast<uint32_t>(mode.w));
  REQUIRE(shown.height == static_cast<uint32_t>(mode.h));
  const int ox = (mode.w - static_cast<int>(img.width)) / 2, oy = (mode.h - static_cast<int>(img.height)) / 2;
  REQUIRE(ox >= 0);
  REQUIRE(oy >= 0);
  const MonitorComparison c = CompareCapture(shown, img, ox, oy);
  CHECK(c.image_px == size_t{img.width} * img.height);
  CHECK(c.image_differing == 0);
  CHECK(c.black_differing == 0);
}

TEST_CASE("monitor window: a display that does not exist is named in the error") {
  viewer::MonitorWindowDef def = WindowOf(64, 48);
  def.display = 7;
  std::string error;
  try {
    viewer::MonitorWindow window(def);
  } catch (const viewer::WindowError& e) {
    error = e.what();
  }
  CHECK(error.find("monitor display 7 does not exist") != std::string::npos);
  // The failed window released SDL: a good one opens after it.
  CHECK_NOTHROW(viewer::MonitorWindow(WindowOf(64, 48)));
}

namespace monitor_window_render_test_detail {

// The value of a numeric member `"name":value` of a summary line, or -2 when absent.
double SummaryNumber(const std::string& line, const std::string& name) {
  const std::string key = "\"" + name + "\":";
  const size_t at = line.find(key);
  if (at == std::string::npos) return -2;
  return std::stod(line.substr(at + key.size()));
}

std::string MonitorConfigError(const std::string& camera_keys) {
  try {
    const auto s = config::LoadSessionText("[[node]]\nname = \"c\"\nrole = \"sensor\"\nattach_to = \"ego\"\n"
                                           "[[node.sensor]]\nid = \"f\"\ntype = \"camera\"\n" + camera_keys,
                                           "hil.toml");
    node::SensorHostModule host(s, s.nodes[0], std::make_shared<spdlog::logger>("hil", std::make_shared<spdlog::sinks::null_sink_mt>()));
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace monitor_window_render_test_detail

TEST_CASE("monitor config: monitor must be none window or fullscreen and needs a rendered image") {
  CHECK(MonitorConfigError("render = \"rgb8\"\nmonitor = \"window\"\n").empty());
  CHECK(MonitorConfigError("render = \"png\"\nmonitor = \"fullscreen\"\nmonitor_display = 1\n").empty());
  CHECK(MonitorConfigError("monitor = \"none\"\n").empty());
  // A value outside the list, at its line.
  const std::string bad = MonitorConfigError("render = \"rgb8\"\nmonitor = \"projector\"\n");
  CHECK(bad.find("hil.toml:9") == 0);
  CHECK(bad.find("monitor") != std::string::npos);
  CHECK(bad.find("projector") != std::string::npos);
  // A monitor without rendering: named, with what to set.
  const std::string unrendered = MonitorConfigError("monitor = \"window\"\n");
  CHECK(unrendered.find("hil.toml:8") == 0);
  CHECK(unrendered.find("render = \"rgb8\" or \"png\"") != std::string::npos);
  CHECK(unrendered.find("got render = \"none\"") != std::string::npos);
  // A negative display.
  const std::string display = MonitorConfigError("render = \"rgb8\"\nmonitor = \"window\"\nmonitor_display = -1\n");
  CHECK(display.find("hil.toml:10") == 0);
  CHECK(display.find("monitor_display") != std::string::npos);
}

TEST_CASE("monitor sensor host: every rendered frame is shown in the monitor window and reads back equal") {
  const config::SessionDef session = config::LoadSessionText(
      std::string(kMonitorRoad) +
          // A calibration board held 4 m ahead of the camera: the monitor must show it too.
          "[[scene.calibration_board]]\ncamera = \"front\"\nposition_m = [4, 0, 0]\nrpy_deg = [0, 0, 15]\n"
          "[[node]]\nname = \"hil\"\nrole = \"sensor\"\nattach_to = \"ego\"\n"
          "[[node.sensor]]\nid = \"front\"\ntype = \"camera\"\nimage_width_px = 640\nimage_height_px = 360\n"
          "rate_hz = 10\nposition = [1.8, 0.3, 1.3]\nrender = \"rgb8\"\nmonitor = \"window\"\nmonitor_check = true\n",
      "hil.toml");
  node::SensorHostModule host(session, session.nodes[0],
                              std::make_shared<spdlog::logger>("hil", std::make_shared<spdlog::sinks::null_sink_mt>()));
  testing::CameraContext context;
  context.remote = {testing::StandingCar(VehicleId("ego", 0), Vec3(0, 0, 0)),
                    testing::StandingCar(VehicleId("target", 0), Vec3(15, -1.5, 0), 0.2)};
  // Frames at 0.1 s .. 0.5 s, the target moving between them (the first step sets the phase).
  host.Step(node::StepInfo{500'000, 0}, context);
  for (int k = 1; k <= 5; ++k) {
    context.remote[1].state.kinematics.pose.position_m.x() = 15.0 + k;
    context.remote[1].displayed = context.remote[1].state.kinematics.pose;
    host.Step(node::StepInfo{k * 100'000'000 + 500'000, 0}, context);
  }
  REQUIRE(context.frames.size() == 5);
  for (const auto& f : context.frames) CHECK(f.encoding == "rgb8");
  CHECK((context.frames[0].image != context.frames[4].image));
  // The board is in every frame: pure black squares and pure white paper (nothing else in the scene is either).
  for (const auto& f : context.frames) {
    size_t black = 0, white = 0;
    for (size_t i = 0; i + 2 < f.image.size(); i += 3) {
      const auto r = static_cast<uint8_t>(f.image[i]), g = static_cast<uint8_t>(f.image[i + 1]),
                 b = static_cast<uint8_t>(f.image[i + 2]);
      black += r == 0 && g == 0 && b == 0;
      white += r == 255 && g == 255 && b == 255;
    }
    CHECK(black > 2000);
    CHECK(white > 2000);
  }

  std::vector<std::string> fields;
  host.Summarize(fields);
  REQUIRE(fields.size() == 1);
  MESSAGE(fields[0]);
  const std::string& line = fields[0];
  CHECK(line.find("\"monitor\":\"window\"") != std::string::npos);
  CHECK(line.find("\"monitor_open\":true") != std::string::npos);
  // As many frames shown as images rendered and sent; each read back equal to its image.
  CHECK(SummaryNumber(line, "images") == 5);
  CHECK(SummaryNumber(line, "monitor_frames") == 5);
  CHECK(SummaryNumber(line, "monitor_checked") == 5);
  CHECK(SummaryNumber(line, "monitor_mismatched") == 0);
  // The last frame shown is the last frame sent: the same sim time.
  CHECK(SummaryNumber(line, "monitor_last_stamp_ns") == static_cast<double>(context.frames.back().header.stamp_ns));
}

TEST_CASE("monitor sensor host: a monitor that cannot open is warned once and the camera renders and sends on") {
  const config::SessionDef session = config::LoadSessionText(
      "[[node]]\nname = \"hil\"\nrole = \"sensor\"\nattach_to = \"ego\"\n"
      "[[node.sensor]]\nid = \"front\"\ntype = \"camera\"\nimage_width_px = 160\nimage_height_px = 90\n"
      "rate_hz = 10\nrender = \"rgb8\"\nmonitor = \"fullscreen\"\nmonitor_display = 9\n",
      "hil.toml");
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100);
  node::SensorHostModule host(session, session.nodes[0], std::make_shared<spdlog::logger>("hil", sink));
  testing::CameraContext context;
  context.remote = {testing::StandingCar(VehicleId("ego", 0), Vec3(0, 0, 0))};
  for (int64_t t : {500'000, 100'500'000, 200'500'000, 300'500'000}) host.Step(node::StepInfo{t, 0}, context);
  REQUIRE(context.frames.size() == 3);
  for (const auto& f : context.frames) CHECK(f.image.size() == 160u * 90u * 3u);
  size_t warnings = 0;
  for (const auto& line : sink->last_formatted())
    if (line.find("camera 'front': cannot open the monitor window") != std::string::npos &&
        line.find("monitor display 9 does not exist") != std::string::npos)
      ++warnings;
  CHECK(warnings == 1);
  std::vector<std::string> fields;
  host.Summarize(fields);
  REQUIRE(fields.size() == 1);
  CHECK(fields[0].find("\"monitor_open\":false") != std::string::npos);
  CHECK(SummaryNumber(fields[0], "images") == 3);
  CHECK(SummaryNumber(fields[0], "monitor_frames") == 0);
}
