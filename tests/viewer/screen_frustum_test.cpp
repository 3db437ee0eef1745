// Off-axis frustums of physical screens (viewer/src/screen_frustum.cpp): the view through a screen fixed in
// the vehicle, from an eye anywhere in front of it. Expected figures come from the screen's geometry.
#include "platoon/viewer/screen_frustum.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <random>

using namespace platoon;

namespace screen_frustum_test_detail {

// A w x h screen centred at `centre`, facing the eye along -x of a frame yawed by `yaw_rad` and tilted
// back by `tilt_rad` (rows along the frame's -y, columns along its z).
viewer::ScreenCorners SfScreen(const Vec3& centre, double w, double h, double yaw_rad, double tilt_rad) {
  const Quat q = Quat(Eigen::AngleAxisd(yaw_rad, Vec3::UnitZ()) * Eigen::AngleAxisd(tilt_rad, Vec3::UnitY()));
  const Vec3 right = q * Vec3(0, -1, 0), up = q * Vec3(0, 0, 1);
  viewer::ScreenCorners s;
  s.lower_left_m = centre - 0.5 * w * right - 0.5 * h * up;
  s.lower_right_m = centre + 0.5 * w * right - 0.5 * h * up;
  s.upper_left_m = centre - 0.5 * w * right + 0.5 * h * up;
  return s;
}

}  // namespace screen_frustum_test_detail
using screen_frustum_test_detail::SfScreen;

TEST_CASE("screens: a centred eye in front of a centred screen gives the symmetric frustum") {
  const double w = 0.60, h = 0.34, d = 0.75, n = 0.1;
  const Vec3 eye(0.2, 0.0, 1.15);
  const auto s = SfScreen(eye + Vec3(d, 0, 0), w, h, 0, 0);
  CHECK(viewer::ValidateScreenCorners(s).empty());
  CHECK(viewer::EyeDistanceToScreen(s, eye) == doctest::Approx(d));
  const auto f = viewer::OffAxisFrustum(s, eye, n);
  CHECK(f.distance_m == doctest::Approx(d));
  CHECK(f.left_m == doctest::Approx(-f.right_m));
  CHECK(f.bottom_m == doctest::Approx(-f.top_m));
  // The horizontal field of view the screen subtends: 2 atan(w / 2 / d).
  const double hfov = 2.0 * std::atan(0.5 * w / d), vfov = 2.0 * std::atan(0.5 * h / d);
  CHECK(2.0 * std::atan(f.right_m / n) == doctest::Approx(hfov));
  CHECK(2.0 * std::atan(f.top_m / n) == doctest::Approx(vfov));
  // Looking straight ahead: the camera's axes are the vehicle's.
  CHECK(f.orientation.angularDistance(Quat::Identity()) < 1e-12);
}

TEST_CASE("screens: a point on the screen plane projects to the pixel its position on the screen gives for any eye") {
  std::mt19937 rng(37);
  std::uniform_real_distribution<double> unit(0.0, 1.0), side(-0.4, 0.4);
  const uint32_t width = 1280, height = 720;
  for (int k = 0; k < 200; ++k) {
    const double yaw = (unit(rng) - 0.5) * 2.0, tilt = (unit(rng) - 0.5) * 0.6;
    const auto s = SfScreen(Vec3(1.0, 0.0, 1.2), 0.5 + unit(rng), 0.3 + 0.5 * unit(rng), yaw, tilt);
    REQUIRE(viewer::ValidateScreenCorners(s).empty());
    // An eye anywhere in a box in front of the screen (0.2 .. 0.8 m from its plane).
    const Vec3 normal = (s.lower_right_m - s.lower_left_m).cross(s.upper_left_m - s.lower_left_m).normalized();
    const Vec3 centre = 0.5 * (s.lower_right_m + s.upper_left_m);
    const Vec3 right = (s.lower_right_m - s.lower_left_m).normalized(), up = normal.cross(right);
    const Vec3 eye = centre + (0.2 + 0.6 * unit(rng)) * normal + side(rng) * right + side(rng) * up;
    REQUIRE(viewer::EyeDistanceToScreen(s, eye) > 0.0);
    const auto f = viewer::OffAxisFrustum(s, eye, 0.05 + 0.2 * unit(rng));
    // A point at fractions (a, b) of the screen's width and height: pixel (a W, (1 - b) H).
    const double a = unit(rng), b = unit(rng);
    const Vec3 p = s.lower_left_m + a * (s.lower_right_m - s.lower_left_m) + b * (s.upper_left_m - s.lower_left_m);
    const auto uv = viewer::FrustumPixel(f, width, height, eye, p);
    REQUIRE(uv.has_value());
    CHECK((*uv)[0] == doctest::Approx(a * width).epsilon(1e-9));
    CHECK((*uv)[1] == doctest::Approx((1.0 - b) * height).epsilon(1e-9));
    // The frustum's corners are the screen's corners.
    const auto ll = viewer::FrustumPixel(f, width, height, eye, s.lower_left_m);
    REQUIRE(ll.has_value());
    CHECK(std::abs((*ll)[0]) < 1e-6);
    CHECK(std::abs((*ll)[1] - height) < 1e-6);
  }
}

TEST_CASE("screens: a point beyond the screen projects where its ray through the physical screen meets the plane") {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const auto s = SfScreen(Vec3(0.9, 0.55, 1.1), 0.6, 0.34, 0.9, 0.1);  // a left screen, yawed 52 deg
  for (int k = 0; k < 100; ++k) {
    const Vec3 eye(0.1 * unit(rng), 0.1 * (unit(rng) - 0.5), 1.1 + 0.1 * (unit(rng) - 0.5));
    const auto f = viewer::OffAxisFrustum(s, eye, 0.1);
    // A point far out in the world, somewhere ahead-left of the eye.
    const Vec3 p = eye + (5.0 + 50.0 * unit(rng)) * Vec3(1.0 + unit(rng), 1.0 + 2.0 * unit(rng), unit(rng) - 0.5);
    const auto by_frustum = viewer::FrustumPixel(f, 800, 450, eye, p);
    // The same point by ray-plane intersection, computed here from the corners alone.
    const Vec3 e1 = s.lower_right_m - s.lower_left_m, e2 = s.upper_left_m - s.lower_left_m, nrm = e1.cross(e2).normalized();
    const double t = (s.lower_left_m - eye).dot(nrm) / (p - eye).dot(nrm);
    const Vec3 hit = eye + t * (p - eye) - s.lower_left_m;
    const double u = hit.dot(e1) / e1.squaredNorm() * 800, v = (1.0 - hit.dot(e2) / e2.squaredNorm()) * 450;
    REQUIRE(by_frustum.has_value());
    CHECK((*by_frustum)[0] == doctest::Approx(u).epsilon(1e-9));
    CHECK((*by_frustum)[1] == doctest::Approx(v).epsilon(1e-9));
    const auto by_ray = viewer::ScreenPixel(s, 800, 450, eye, p);
    REQUIRE(by_ray.has_value());
    CHECK((*by_ray)[0] == doctest::Approx(u).epsilon(1e-9));
    CHECK((*by_ray)[1] == doctest::Approx(v).epsilon(1e-9));
  }
  // Behind the eye: no pixel.
  const Vec3 eye(0, 0, 1.1);
  CHECK_FALSE(viewer::ScreenPixel(s, 800, 450, eye, eye - Vec3(3, 3, 0)).has_value());
  CHECK_FALSE(viewer::FrustumPixel(viewer::OffAxisFrustum(s, eye, 0.1), 800, 450, eye, eye - Vec3(3, 3, 0)).has_value());
}

TEST_CASE("screens: corners that are not a rectangle within 1 mm are refused and an eye behind the screen is told apart") {
  auto s = SfScreen(Vec3(1.0, 0.0, 1.2), 0.6, 0.34, 0.3, 0.0);
  const Vec3 along = (s.lower_right_m - s.lower_left_m).normalized();
  auto skew = s;
  skew.upper_left_m += 0.0005 * along;  // 0.5 mm: a measuring error
  CHECK(viewer::ValidateScreenCorners(skew).empty());
  skew.upper_left_m += 0.0015 * along;  // 2 mm: not a rectangle
  const std::string e = viewer::ValidateScreenCorners(skew);
  CHECK(e.find("rectangle") != std::string::npos);
  CHECK(e.find("2.0 mm") != std::string::npos);
  auto flat = s;
  flat.lower_right_m = flat.lower_left_m;
  CHECK(viewer::ValidateScreenCorners(flat).find("lower_right") != std::string::npos);
  // In front of the plane: positive distance; behind: negative.
  const Vec3 centre = 0.5 * (s.lower_right_m + s.upper_left_m);
  const Vec3 normal = (s.lower_right_m - s.lower_left_m).cross(s.upper_left_m - s.lower_left_m).normalized();
  CHECK(viewer::EyeDistanceToScreen(s, centre + 0.7 * normal) == doctest::Approx(0.7));
  CHECK(viewer::EyeDistanceToScreen(s, centre - 0.2 * normal) == doctest::Approx(-0.2));
}
