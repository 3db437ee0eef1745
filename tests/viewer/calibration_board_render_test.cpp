// The calibration board in a camera sensor's frames (node/src/sensor_host.cpp with
// viewer/src/calibration_board.cpp): the squares are black and white where the board's geometry puts them,
// and the frame is written as a PGM for board_check.py, which finds the corners with OpenCV (ctest
// "viewer: calibration board ..." sets PLATOON_BOARD_IMAGE). Needs an X display (xvfb-run).
#include "../support/camera_context.hpp"
#include "platoon/config/session.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/node/sensor_host.hpp"
#include "platoon/sensors/camera.hpp"
#include "platoon/sensors/sensor_config.hpp"
#include "platoon/viewer/calibration_board.hpp"
#include "platoon/viewer/image.hpp"
#include "platoon/viewer/offscreen_renderer.hpp"
#include "platoon/viewer/scene.hpp"
#include "platoon/viewer/session_scene.hpp"
#include "platoon/viewer/pinhole_camera.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

using namespace platoon;

namespace calibration_board_render_test_detail {

// One camera frame of the session file `path`'s sensor node "cams", its car standing at the origin.
viewer::Image RenderBoardFrame(const config::SessionDef& session) {
  node::SensorHostModule host(session, *session.FindNode("cams"),
                              std::make_shared<spdlog::logger>("board", std::make_shared<spdlog::sinks::null_sink_mt>()));
  testing::CameraContext context;
  context.remote = {testing::StandingCar(VehicleId("ego", 0), Vec3(0, 0, 0), 0.4)};
  host.Step(node::StepInfo{500'000, 0}, context);
  host.Step(node::StepInfo{100'500'000, 0}, context);
  REQUIRE(context.frames.size() == 1);
  const protocol::CameraFrame& f = context.frames[0];
  REQUIRE(f.encoding == "rgb8");
  viewer::Image img;
  img.width = f.width;
  img.height = f.height;
  img.rgb.assign(f.image.begin(), f.image.end());
  REQUIRE(img.rgb.size() == size_t{img.width} * img.height * 3);
  return img;
}

// Grey value of the pixel whose area holds continuous image point (u, v).
int GreyAt(const viewer::Image& img, double u, double v) {
  const auto i = static_cast<size_t>(std::floor(u)), j = static_cast<size_t>(std::floor(v));
  const size_t k = (j * img.width + i) * 3;
  return (img.rgb[k] + img.rgb[k + 1] + img.rgb[k + 2]) / 3;
}

}  // namespace calibration_board_render_test_detail

TEST_CASE("calibration board: a camera frame shows the board's squares black and white where its pose puts them") {
  using namespace calibration_board_render_test_detail;
  const char* env_session = std::getenv("PLATOON_BOARD_SESSION");
  const std::string path = env_session ? env_session : std::string(PLATOON_SOURCE_DIR) + "/tests/viewer/calibration_board.toml";
  const config::SessionDef session = config::LoadSession(path);
  config::ValidateSession(session);
  REQUIRE(session.scene.calibration_boards.size() == 1);
  const config::CalibrationBoardDef& board = session.scene.calibration_boards[0];
  const viewer::Image img = RenderBoardFrame(session);

  // The board is in the camera's frame: project with the camera at the origin of C.
  const sensors::SensorSpec spec = sensors::ReadSensorSpec(session.FindNode("cams")->sensors[0]);
  const auto k = sensors::Intrinsics(spec.camera);
  viewer::PinholeCamera cam;
  cam.fx_px = k.fx_px, cam.fy_px = k.fy_px, cam.cx_px = k.cx_px, cam.cy_px = k.cy_px;
  cam.width_px = img.width, cam.height_px = img.height;
  const Pose b = viewer::BoardPoseInWorld(board, Pose{});
  int checked = 0;
  for (int r = -1; r <= board.rows; ++r)
    for (int c = -1; c <= board.columns; ++c) {
      // Centre of square (c, r) in B; -1 and columns / rows are the white border.
      const Vec3 centre_b(0, (0.5 * board.columns - c - 0.5) * board.square_m, (0.5 * board.rows - r - 0.5) * board.square_m);
      Eigen::Vector2d uv;
      REQUIRE(viewer::ProjectPoint(cam, Pose{}, b.position_m + b.orientation * centre_b, &uv));
      REQUIRE(uv.x() >= 0);
      REQUIRE(uv.y() >= 0);
      REQUIRE(uv.x() < img.width);
      REQUIRE(uv.y() < img.height);
      const bool black = c >= 0 && r >= 0 && c < board.columns && r < board.rows && viewer::BoardSquareBlack(c, r);
      const int grey = GreyAt(img, uv.x(), uv.y());
      if (black) CHECK_MESSAGE(grey < 40, "square ", c, ",", r, " at ", uv.transpose(), " grey ", grey);
      else CHECK_MESSAGE(grey > 215, "square ", c, ",", r, " at ", uv.transpose(), " grey ", grey);
      ++checked;
    }
  CHECK(checked == (board.columns + 2) * (board.rows + 2));

  // For board_check.py: the frame as a binary PGM (grey = mean of R, G, B).
  if (const char* out = std::getenv("PLATOON_BOARD_IMAGE")) {
    std::ofstream f(out, std::ios::binary);
    REQUIRE(f.good());
    f << "P5\n" << img.width << " " << img.height << "\n255\n";
    for (size_t i = 0; i < size_t{img.width} * img.height; ++i)
      f.put(static_cast<char>((img.rgb[3 * i] + img.rgb[3 * i + 1] + img.rgb[3 * i + 2]) / 3));
    REQUIRE(f.good());
    MESSAGE("wrote ", std::string(out));
  }
  // For docs/img: the frame as PNG.
  if (const char* out = std::getenv("PLATOON_BOARD_PNG")) {
    std::string png;
    REQUIRE(viewer::EncodePng(img, &png).empty());
    std::ofstream(out, std::ios::binary) << png;
  }
}

TEST_CASE("calibration board: a world board is drawn where its pose puts it in the viewer's scene, lit or fogged or not") {
  using namespace calibration_board_render_test_detail;
  // The viewer's path: the session scene's boards added to a scene graph with an environment (sun and fog on).
  const config::SessionDef session = config::LoadSessionText(
      "[road]\ngenerate_length_m = 300\nseed = 3\nlanes = 2\n[scene]\nroad_environment = true\n"
      "[[scene.calibration_board]]\nposition_m = [12, 1.0, 1.6]\nrpy_deg = [0, 0, 200]\nsquares = [7, 5]\nsquare_m = 0.25\n",
      "world_board.toml");
  const viewer::SessionScene drawn = viewer::SessionSceneOf(session);
  REQUIRE(drawn.calibration_boards.size() == 1);
  viewer::SceneGraph scene;
  scene.SetRoads(drawn.roads);
  scene.SetEnvironment(drawn.environment);
  viewer::CalibrationBoards boards(drawn.calibration_boards);
  scene.Root()->addChild(boards.Root());
  viewer::PinholeCamera cam = viewer::CameraFromFov(800, 450, 60 * M_PI / 180);
  viewer::OffscreenRenderer renderer(cam.width_px, cam.height_px);
  renderer.SetScene(scene.Root(), scene.SkyColour());
  // A camera 1.5 m above the ground looking along the world's +x, slightly up.
  const Pose eye{Vec3(0, 0, 1.5), Quat(Eigen::AngleAxisd(-0.02, Vec3::UnitY()))};
  const viewer::Image img = renderer.Render(eye, cam);
  const config::CalibrationBoardDef& board = drawn.calibration_boards[0];
  const Pose b = viewer::BoardPoseInWorld(board, Pose{});
  for (int r = -1; r <= board.rows; ++r)
    for (int c = -1; c <= board.columns; ++c) {
      const Vec3 centre_b(0, (0.5 * board.columns - c - 0.5) * board.square_m, (0.5 * board.rows - r - 0.5) * board.square_m);
      Eigen::Vector2d uv;
      REQUIRE(viewer::ProjectPoint(cam, eye, b.position_m + b.orientation * centre_b, &uv));
      REQUIRE(uv.x() >= 0);
      REQUIRE(uv.y() >= 0);
      REQUIRE(uv.x() < img.width);
      REQUIRE(uv.y() < img.height);
      const bool black = c >= 0 && r >= 0 && c < board.columns && r < board.rows && viewer::BoardSquareBlack(c, r);
      const int grey = GreyAt(img, uv.x(), uv.y());
      if (black) CHECK_MESSAGE(grey < 40, "square ", c, ",", r, " grey ", grey);
      else CHECK_MESSAGE(grey > 215, "square ", c, ",", r, " grey ", grey);
    }
}
