// Pinhole projection and view matrices of the viewer (viewer/src/pinhole_camera.cpp), without a GL context.
#include "platoon/viewer/pinhole_camera.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace platoon;
using namespace platoon::viewer;

namespace {

// Pixel coordinates through the OpenGL pipeline: view and projection matrices, perspective divide,
// viewport, then v measured from the top.
Eigen::Vector2d ThroughGl(const PinholeCamera& cam, const Pose& camera, const Vec3& p) {
  const osg::Vec4d clip = osg::Vec4d(p.x(), p.y(), p.z(), 1.0) * ViewMatrix(camera) * ProjectionMatrix(cam);
  const double x_ndc = clip.x() / clip.w(), y_ndc = clip.y() / clip.w();
  const double x_win = (x_ndc + 1.0) * 0.5 * cam.width_px;
  const double y_win = (y_ndc + 1.0) * 0.5 * cam.height_px;
  return Eigen::Vector2d(x_win, cam.height_px - y_win);
}

}  // namespace

TEST_CASE("pinhole camera: the GL matrices reproduce u = fx x/z + cx and v = fy y/z + cy for any pose") {
  PinholeCamera cam;
  cam.fx_px = 812.0;
  cam.fy_px = 790.0;
  cam.cx_px = 633.0;
  cam.cy_px = 351.5;
  cam.width_px = 1280;
  cam.height_px = 720;
  Pose camera;
  camera.position_m = Vec3(3.0, -2.0, 1.4);
  camera.orientation = Quat(Eigen::AngleAxisd(0.7, Vec3::UnitZ()) * Eigen::AngleAxisd(0.1, Vec3::UnitY()) *
                            Eigen::AngleAxisd(-0.05, Vec3::UnitX()));
  for (const Vec3& p : {Vec3(20, 15, 0), Vec3(8, 4, 3), Vec3(40, 30, -1), Vec3(5, 7, 1.4)}) {
    Eigen::Vector2d expected;
    REQUIRE(ProjectPoint(cam, camera, p, &expected));
    const Eigen::Vector2d gl = ThroughGl(cam, camera, p);
    CHECK(gl.x() == doctest::Approx(expected.x()).epsilon(1e-9));
    CHECK(gl.y() == doctest::Approx(expected.y()).epsilon(1e-9));
  }
}

TEST_CASE("pinhole camera: the optical axis hits the principal point and a point up and left lands up-left") {
  PinholeCamera cam = CameraFromFov(640, 480, 1.2);
  cam.cx_px = 300.0;
  Pose camera;
  Eigen::Vector2d uv;
  REQUIRE(ProjectPoint(cam, camera, Vec3(10, 0, 0), &uv));
  CHECK(uv.x() == doctest::Approx(300.0));
  CHECK(uv.y() == doctest::Approx(240.0));
  const Eigen::Vector2d gl = ThroughGl(cam, camera, Vec3(10, 1, 1));  // left (+y) and up (+z) in the body frame
  CHECK(gl.x() < 300.0);
  CHECK(gl.y() < 240.0);
  CHECK_FALSE(ProjectPoint(cam, camera, Vec3(-1, 0, 0), &uv));  // behind
}

TEST_CASE("pinhole camera: CameraPoseFromView inverts ViewMatrix and bad intrinsics are named") {
  Pose camera;
  camera.position_m = Vec3(-4.0, 9.0, 2.5);
  camera.orientation = Quat(Eigen::AngleAxisd(-2.1, Vec3::UnitZ()) * Eigen::AngleAxisd(0.3, Vec3::UnitY())).normalized();
  const Pose back = CameraPoseFromView(ViewMatrix(camera));
  CHECK((back.position_m - camera.position_m).norm() < 1e-9);
  CHECK(AngleBetween(back.orientation, camera.orientation) < 1e-9);

  PinholeCamera cam;
  CHECK(ValidatePinholeCamera(cam).empty());
  cam.fy_px = -1;
  CHECK(ValidatePinholeCamera(cam).find("fy_px") != std::string::npos);
  cam = PinholeCamera{};
  cam.far_m = cam.near_m;
  CHECK(ValidatePinholeCamera(cam).find("far_m") != std::string::npos);
}
