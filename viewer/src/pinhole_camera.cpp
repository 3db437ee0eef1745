#include "platoon/viewer/pinhole_camera.hpp"

#include <cmath>
#include <sstream>

namespace platoon::viewer {
namespace {

// Rotation from the camera body frame C (x forward, y left, z up) to the OpenGL eye frame E
// (x right, y up, z backwards): x_E = -y_C, y_E = z_C, z_E = -x_C.
Eigen::Matrix3d BodyToEye() {
  Eigen::Matrix3d r;
  r << 0, -1, 0,
       0, 0, 1,
      -1, 0, 0;
  return r;
}

}  // namespace

PinholeCamera CameraFromFov(uint32_t width_px, uint32_t height_px, double hfov_rad) {
  PinholeCamera cam;
  cam.width_px = width_px;
  cam.height_px = height_px;
  cam.fx_px = 0.5 * width_px / std::tan(0.5 * hfov_rad);
  cam.fy_px = cam.fx_px;
  cam.cx_px = 0.5 * width_px;
  cam.cy_px = 0.5 * height_px;
  return cam;
}

std::string ValidatePinholeCamera(const PinholeCamera& cam) {
  std::ostringstream os;
  if (!(cam.fx_px > 0) || !std::isfinite(cam.fx_px)) os << "fx_px must be > 0, got " << cam.fx_px;
  else if (!(cam.fy_px > 0) || !std::isfinite(cam.fy_px)) os << "fy_px must be > 0, got " << cam.fy_px;
  else if (cam.width_px == 0 || cam.width_px > 16384) os << "width_px must be in [1, 16384], got " << cam.width_px;
  else if (cam.height_px == 0 || cam.height_px > 16384) os << "height_px must be in [1, 16384], got " << cam.height_px;
  else if (!std::isfinite(cam.cx_px) || !std::isfinite(cam.cy_px)) os << "cx_px and cy_px must be finite";
  else if (!(cam.near_m > 0)) os << "near_m must be > 0, got " << cam.near_m;
  else if (!(cam.far_m > cam.near_m)) os << "far_m must be > near_m (" << cam.near_m << "), got " << cam.far_m;
  return os.str();
}

osg::Matrixd ProjectionMatrix(const PinholeCamera& cam) {
  const double n = cam.near_m;
  const double w = cam.width_px;
  const double h = cam.height_px;
  // Derivation (viewer/README.md): with x_ndc = 2u/W - 1 and y_ndc = 1 - 2v/H, the pinhole equations
  // give exactly glFrustum's matrix for these near-plane extents.
  const double left = -n * cam.cx_px / cam.fx_px;
  const double right = n * (w - cam.cx_px) / cam.fx_px;
  const double top = n * cam.cy_px / cam.fy_px;
  const double bottom = -n * (h - cam.cy_px) / cam.fy_px;
  return osg::Matrixd::frustum(left, right, bottom, top, n, cam.far_m);
}

osg::Matrixd ViewMatrix(const Pose& camera_world) {
  // World -> eye as a column-vector matrix M = [R_EC R_CW, -R_EC R_CW p; 0 1].
  const Eigen::Matrix3d r_cw = camera_world.orientation.normalized().toRotationMatrix().transpose();
  const Eigen::Matrix3d r = BodyToEye() * r_cw;
  const Vec3 t = -r * camera_world.position_m;
  // OSG multiplies row vectors from the left (v' = v M_osg), so M_osg is the transpose of M.
  osg::Matrixd m;
  for (int row = 0; row < 3; ++row) {
    for (int col = 0; col < 3; ++col) m(col, row) = r(row, col);
    m(3, row) = t(row);
    m(row, 3) = 0.0;
  }
  m(3, 3) = 1.0;
  return m;
}

Pose CameraPoseFromView(const osg::Matrixd& view) {
  Eigen::Matrix3d r;  // world -> eye
  Vec3 t;
  for (int row = 0; row < 3; ++row) {
    for (int col = 0; col < 3; ++col) r(row, col) = view(col, row);
    t(row) = view(3, row);
  }
  const Eigen::Matrix3d r_cw = BodyToEye().transpose() * r;
  Pose pose;
  pose.orientation = Quat(r_cw.transpose()).normalized();
  pose.position_m = -r.transpose() * t;
  return pose;
}

bool ProjectPoint(const PinholeCamera& cam, const Pose& camera_world, const Vec3& p_world_m, Eigen::Vector2d* uv) {
  const Vec3 c = camera_world.orientation.conjugate() * (p_world_m - camera_world.position_m);
  const Vec3 o(-c.y(), -c.z(), c.x());
  if (o.z() <= 0.0) return false;
  *uv = Eigen::Vector2d(cam.fx_px * o.x() / o.z() + cam.cx_px, cam.fy_px * o.y() / o.z() + cam.cy_px);
  return true;
}

}  // namespace platoon::viewer
