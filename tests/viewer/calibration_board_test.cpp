// The calibration board of a session ([[scene.calibration_board]], viewer/src/calibration_board.cpp):
// its keys and their errors, and where its inner corners are in its own frame and in the world.
#include "platoon/viewer/calibration_board.hpp"

#include "platoon/config/session.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/sensors/sensor_config.hpp"
#include "platoon/viewer/session_scene.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

namespace calibration_board_test_detail {

// The message of the ConfigError that loading and validating `text` throws ("" when none).
std::string BoardError(const std::string& text) {
  try {
    platoon::config::ValidateSession(platoon::config::LoadSessionText(text, "board.toml"));
  } catch (const platoon::config::ConfigError& e) {
    return e.what();
  }
  return "";
}

const char* const kCameraNode =
    "[[node]]\nname = \"cams\"\nrole = \"sensor\"\nattach_to = \"ego\"\n"
    "[[node.sensor]]\nid = \"front\"\ntype = \"camera\"\n"
    "[[node]]\nname = \"ego\"\nrole = \"traffic\"\n";

}  // namespace calibration_board_test_detail

using calibration_board_test_detail::BoardError;
using calibration_board_test_detail::kCameraNode;

TEST_CASE("calibration board config: keys are read with their defaults and the session scene carries them") {
  const auto s = platoon::config::LoadSessionText(
      std::string("[[scene.calibration_board]]\ncamera = \"front\"\nposition_m = [3.5, 0.2, -0.1]\n"
                  "rpy_deg = [10, 0, 25]\nsquares = [8, 6]\nsquare_m = 0.08\n"
                  "[[scene.calibration_board]]\nposition_m = [10, 2, 1.5]\n") + kCameraNode,
      "board.toml");
  platoon::config::ValidateSession(s);
  REQUIRE(s.scene.calibration_boards.size() == 2);
  const auto& a = s.scene.calibration_boards[0];
  CHECK(a.camera == "front");
  CHECK((a.position_m - platoon::Vec3(3.5, 0.2, -0.1)).norm() < 1e-12);
  CHECK(a.rpy_rad.x() == doctest::Approx(10 * M_PI / 180));
  CHECK(a.rpy_rad.z() == doctest::Approx(25 * M_PI / 180));
  CHECK(a.columns == 8);
  CHECK(a.rows == 6);
  CHECK(a.square_m == doctest::Approx(0.08));
  const auto& b = s.scene.calibration_boards[1];
  CHECK(b.camera.empty());
  CHECK(b.rpy_rad.norm() == 0.0);
  CHECK(b.columns == 9);
  CHECK(b.rows == 7);
  CHECK(b.square_m > 0);
  CHECK(platoon::viewer::SessionSceneOf(s).calibration_boards.size() == 2);
}

TEST_CASE("calibration board config: a bad key is named with what was expected") {
  const std::string head = "[[scene.calibration_board]]\n";
  const std::string pos = "position_m = [3, 0, 0]\n";
  CHECK(BoardError(head + "camera = \"rear\"\n" + pos + kCameraNode).find("scene.calibration_board[0].camera: expected the id of a camera sensor (\"front\"), got \"rear\"") != std::string::npos);
  CHECK(BoardError(head + "camera = \"rear\"\n" + pos).find("the session has none") != std::string::npos);
  CHECK(BoardError(head + pos + "squares = [1, 7]\n").find("squares") != std::string::npos);
  CHECK(BoardError(head + pos + "squares = [9.5, 7]\n").find("whole numbers") != std::string::npos);
  CHECK(BoardError(head + pos + "squares = [9]\n").find("squares") != std::string::npos);
  CHECK(BoardError(head + pos + "square_m = 0\n").find("square_m") != std::string::npos);
  CHECK(BoardError(head + pos + "square_m = -0.1\n").find("square_m") != std::string::npos);
  CHECK(BoardError(head + "camera = \"front\"\n" + kCameraNode).find("position_m: is required") != std::string::npos);
  CHECK(BoardError(head + pos + "colour = \"red\"\n").find("colour") != std::string::npos);
  CHECK(BoardError(head + pos + "camera = \"\"\n").find("camera") != std::string::npos);
  // A camera's id that is not a camera (a lidar) is refused too.
  CHECK(BoardError(head + "camera = \"top\"\n" + pos +
                   "[[node]]\nname = \"l\"\nrole = \"sensor\"\nattach_to = \"ego\"\n"
                   "[[node.sensor]]\nid = \"top\"\ntype = \"lidar\"\n[[node]]\nname = \"ego\"\nrole = \"traffic\"\n")
            .find("camera") != std::string::npos);
}

TEST_CASE("calibration board geometry: inner corners run row by row from the top-left one seen from the front") {
  platoon::config::CalibrationBoardDef b;
  b.columns = 5;
  b.rows = 4;
  b.square_m = 0.2;
  const auto corners = platoon::viewer::BoardInnerCornersInBoard(b);
  REQUIRE(corners.size() == 4 * 3);
  // Seen from the front (from -x looking along +x), left is +y and up is +z.
  CHECK(corners[0].x() == 0.0);
  CHECK(corners[0].y() == doctest::Approx(0.3));   // 1.5 squares left of the centre
  CHECK(corners[0].z() == doctest::Approx(0.2));   // 1 square above
  CHECK(corners[1].y() < corners[0].y());          // the next is to the right
  CHECK(corners[4].z() < corners[0].z());          // the next row is lower
  CHECK(corners.back().y() == doctest::Approx(-0.3));
  CHECK(corners.back().z() == doctest::Approx(-0.2));
  const auto size = platoon::viewer::BoardOuterSize(b);
  CHECK(size.x() == doctest::Approx(7 * 0.2));
  CHECK(size.y() == doctest::Approx(6 * 0.2));
  CHECK(platoon::viewer::BoardSquareBlack(0, 0));
  CHECK_FALSE(platoon::viewer::BoardSquareBlack(1, 0));
  CHECK(platoon::viewer::BoardSquareBlack(1, 1));
}

TEST_CASE("calibration board geometry: a camera's board moves with the camera and a world board stays") {
  platoon::config::CalibrationBoardDef b;
  b.camera = "front";
  b.position_m = platoon::Vec3(3, 0.5, -0.2);
  b.rpy_rad = platoon::Vec3(0.1, -0.05, 0.4);
  const platoon::Pose cam{platoon::Vec3(10, -4, 1.3),
                          platoon::Quat(Eigen::AngleAxisd(1.1, platoon::Vec3::UnitZ()) *
                                        Eigen::AngleAxisd(0.05, platoon::Vec3::UnitY()))};
  const auto in_board = platoon::viewer::BoardInnerCornersInBoard(b);
  const auto in_world = platoon::viewer::BoardInnerCornersInWorld(b, cam);
  REQUIRE(in_world.size() == in_board.size());
  // Independently: yaw, then pitch, then roll as three matrices, then the camera's pose.
  const auto rx = [](double a) { return Eigen::Matrix3d{{1, 0, 0}, {0, std::cos(a), -std::sin(a)}, {0, std::sin(a), std::cos(a)}}; };
  const auto ry = [](double a) { return Eigen::Matrix3d{{std::cos(a), 0, std::sin(a)}, {0, 1, 0}, {-std::sin(a), 0, std::cos(a)}}; };
  const auto rz = [](double a) { return Eigen::Matrix3d{{std::cos(a), -std::sin(a), 0}, {std::sin(a), std::cos(a), 0}, {0, 0, 1}}; };
  const Eigen::Matrix3d r_cb = rz(0.4) * ry(-0.05) * rx(0.1);
  const Eigen::Matrix3d r_wc = cam.orientation.toRotationMatrix();
  for (size_t i = 0; i < in_board.size(); ++i) {
    const platoon::Vec3 want = cam.position_m + r_wc * (b.position_m + r_cb * in_board[i]);
    CHECK((in_world[i] - want).norm() < 1e-12);
  }
  // Every corner keeps its distance from the camera whatever the camera's pose.
  const auto elsewhere = platoon::viewer::BoardInnerCornersInWorld(b, platoon::Pose{});
  for (size_t i = 0; i < in_board.size(); ++i)
    CHECK((in_world[i] - cam.position_m).norm() == doctest::Approx(elsewhere[i].norm()));
  // A world board ignores the camera.
  b.camera.clear();
  const auto world = platoon::viewer::BoardInnerCornersInWorld(b, cam);
  CHECK((world[0] - (b.position_m + r_cb * in_board[0])).norm() < 1e-12);
}

TEST_CASE("calibration board drawing: world boards are shown at once and a camera's boards once that camera is placed") {
  platoon::config::CalibrationBoardDef world, cam;
  world.position_m = platoon::Vec3(5, 0, 1);
  cam.camera = "front";
  cam.position_m = platoon::Vec3(3, 0, 0);
  platoon::viewer::CalibrationBoards boards({world, cam});
  REQUIRE(boards.Count() == 2);
  CHECK(boards.Root()->getNumChildren() == 2);
  CHECK(boards.Shown(0));
  CHECK_FALSE(boards.Shown(1));
  boards.Place("rear", platoon::Pose{});
  CHECK_FALSE(boards.Shown(1));
  boards.Place("front", platoon::Pose{platoon::Vec3(1, 2, 3), platoon::Quat::Identity()});
  CHECK(boards.Shown(1));
  const auto* t = boards.Root()->getChild(1)->asTransform()->asMatrixTransform();
  REQUIRE(t != nullptr);
  CHECK(t->getMatrix().getTrans().x() == doctest::Approx(4.0));
  CHECK(t->getMatrix().getTrans().y() == doctest::Approx(2.0));
}

TEST_CASE("calibration board drawing: a camera's board follows the camera's vehicle and mounting in the viewer") {
  const auto s = platoon::config::LoadSessionText(
      "[[scene.calibration_board]]\ncamera = \"front\"\nposition_m = [3, 0.2, 0]\nrpy_deg = [5, 0, 20]\n"
      "[[node]]\nname = \"cams\"\nrole = \"sensor\"\nattach_to = \"ego:1\"\n"
      "[[node.sensor]]\nid = \"front\"\ntype = \"camera\"\nposition = [1.8, 0.3, 1.3]\nrpy_deg = [0, 4, -6]\n"
      "[[node.sensor]]\nid = \"side\"\ntype = \"camera\"\n"
      "[[node]]\nname = \"ego\"\nrole = \"traffic\"\n",
      "follow.toml");
  const auto scene = platoon::viewer::SessionSceneOf(s);
  REQUIRE(scene.board_cameras.size() == 1);  // "side" holds no board
  const auto& c = scene.board_cameras[0];
  CHECK(c.camera == "front");
  CHECK(c.vehicle_id == platoon::VehicleId("ego", 1));
  // The mounting the sensor host reads from the same table.
  const platoon::sensors::SensorSpec spec = platoon::sensors::ReadSensorSpec(s.nodes[0].sensors[0]);
  CHECK((c.mount.position_m - spec.mounting.position_m).norm() < 1e-12);
  CHECK(platoon::AngleBetween(c.mount.orientation, spec.mounting.orientation) < 1e-12);
  // Following: the board lands where the camera on the vehicle puts it.
  platoon::viewer::CalibrationBoards boards(scene.calibration_boards);
  platoon::protocol::EntityState car;
  car.id = c.vehicle_id;
  car.kinematics.pose = platoon::Pose{platoon::Vec3(20, -3, 0), platoon::Quat(Eigen::AngleAxisd(0.7, platoon::Vec3::UnitZ()))};
  boards.Follow(scene.board_cameras, {car});
  REQUIRE(boards.Shown(0));
  const platoon::Pose cam_world{car.kinematics.pose.position_m + car.kinematics.pose.orientation * spec.mounting.position_m,
                                car.kinematics.pose.orientation * spec.mounting.orientation};
  const platoon::Vec3 want = platoon::viewer::BoardPoseInWorld(scene.calibration_boards[0], cam_world).position_m;
  const osg::Vec3d got = boards.Root()->getChild(0)->asTransform()->asMatrixTransform()->getMatrix().getTrans();
  CHECK((platoon::Vec3(got.x(), got.y(), got.z()) - want).norm() < 1e-9);
}
