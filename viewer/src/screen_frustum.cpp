#include "platoon/viewer/screen_frustum.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace platoon::viewer {

namespace screen_frustum_detail {

// The screen's orthonormal basis: right (lower_left -> lower_right), up, normal towards the viewer.
struct Basis {
  Vec3 right, up, normal;
  double width_m, height_m;
};

Basis ScreenBasis(const ScreenCorners& s) {
  Basis b;
  const Vec3 along = s.lower_right_m - s.lower_left_m;
  b.width_m = along.norm();
  b.right = along / b.width_m;
  // Up: the left edge with its component along the rows removed (exact for a valid rectangle).
  const Vec3 side = s.upper_left_m - s.lower_left_m;
  const Vec3 up = side - side.dot(b.right) * b.right;
  b.height_m = up.norm();
  b.up = up / b.height_m;
  b.normal = b.right.cross(b.up);
  return b;
}

}  // namespace screen_frustum_detail
using screen_frustum_detail::ScreenBasis;

std::string ValidateScreenCorners(const ScreenCorners& s, double tolerance_m) {
  const Vec3 along = s.lower_right_m - s.lower_left_m, side = s.upper_left_m - s.lower_left_m;
  if (!along.allFinite() || !side.allFinite()) return "expected finite corners";
  if (along.norm() < 0.01)
    return fmt::format("expected lower_right at least 0.01 m from lower_left, got {:.4f} m", along.norm());
  if (side.norm() < 0.01)
    return fmt::format("expected upper_left at least 0.01 m from lower_left, got {:.4f} m", side.norm());
  // How far upper_left lies off the perpendicular to the bottom edge through lower_left.
  const double off = std::abs(side.dot(along.normalized()));
  if (off > tolerance_m)
    return fmt::format("expected a rectangle: the left edge (lower_left -> upper_left) at right angles to the bottom edge "
                       "(lower_left -> lower_right) within {:g} mm, got {:.1f} mm off ({:.2f} deg)",
                       tolerance_m * 1e3, off * 1e3,
                       std::acos(std::clamp(side.normalized().dot(along.normalized()), -1.0, 1.0)) * 180.0 / M_PI);
  return {};
}

double EyeDistanceToScreen(const ScreenCorners& s, const Vec3& eye_m) {
  const auto b = ScreenBasis(s);
  return (eye_m - s.lower_left_m).dot(b.normal);
}

ScreenFrustum OffAxisFrustum(const ScreenCorners& s, const Vec3& eye_m, double near_m) {
  const auto b = ScreenBasis(s);
  ScreenFrustum f;
  f.near_m = near_m;
  // The eye's foot on the screen's plane, in screen coordinates from lower_left (m).
  const Vec3 to_eye = eye_m - s.lower_left_m;
  f.distance_m = to_eye.dot(b.normal);
  const double eu = to_eye.dot(b.right), ev = to_eye.dot(b.up);
  const double k = near_m / f.distance_m;
  f.left_m = (0.0 - eu) * k;
  f.right_m = (b.width_m - eu) * k;
  f.bottom_m = (0.0 - ev) * k;
  f.top_m = (b.height_m - ev) * k;
  // Camera body frame: x forward = -normal, y left = -right, z up = up.
  Eigen::Matrix3d r;
  r.col(0) = -b.normal;
  r.col(1) = -b.right;
  r.col(2) = b.up;
  f.orientation = Quat(r).normalized();
  return f;
}

std::optional<std::array<double, 2>> ScreenPixel(const ScreenCorners& s, uint32_t width_px, uint32_t height_px,
                                                 const Vec3& eye_m, const Vec3& point_m) {
  const auto b = ScreenBasis(s);
  const Vec3 ray = point_m - eye_m;
  const double towards = -ray.dot(b.normal);  // > 0: the point lies on the screen's side of the eye
  if (towards <= 0) return std::nullopt;
  const double t = (eye_m - s.lower_left_m).dot(b.normal) / towards;
  const Vec3 hit = eye_m + t * ray - s.lower_left_m;
  const double fu = hit.dot(b.right) / b.width_m, fv = hit.dot(b.up) / b.height_m;
  return std::array<double, 2>{fu * width_px, (1.0 - fv) * height_px};
}

std::optional<std::array<double, 2>> FrustumPixel(const ScreenFrustum& f, uint32_t width_px, uint32_t height_px,
                                                  const Vec3& eye_m, const Vec3& point_m) {
  const Vec3 c = f.orientation.conjugate() * (point_m - eye_m);  // camera body frame
  if (c.x() <= 0) return std::nullopt;
  // On the near plane: x right = -y_body, y up = z_body.
  const double xn = -c.y() * f.near_m / c.x(), yn = c.z() * f.near_m / c.x();
  return std::array<double, 2>{(xn - f.left_m) / (f.right_m - f.left_m) * width_px,
                               (f.top_m - yn) / (f.top_m - f.bottom_m) * height_px};
}

}  // namespace platoon::viewer
