#pragma once
/// Off-axis frustums of physical screens (issue 37 item 3, "Screens"): a monitor or projection surface is
/// a rectangle fixed in the vehicle frame, given by three of its corners; the eye (moved by head tracking)
/// looks through it as through a window. The view through a screen is a generalized perspective
/// projection: the camera's axes are the screen's own (right, up, normal), the frustum's near rectangle
/// is the screen's rectangle scaled onto the near plane, so its left/right/bottom/top are asymmetric
/// whenever the eye is not in front of the screen's centre. Corners are the visible image area, so a
/// bezel between two screens is simply a part of the world that is not drawn. Pure functions, no OSG.

#include "platoon/geometry.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace platoon::viewer {

/// A screen's visible image area, as three corners in the vehicle frame (x forward, y left, z up; the
/// frame of the eye point), in m. Seen from the eye, lower_left -> lower_right runs along the image's
/// rows (u grows) and lower_left -> upper_left up its columns (v shrinks).
struct ScreenCorners {
  Vec3 lower_left_m = Vec3::Zero();   ///< Corner at pixel row height_px, column 0, in m.
  Vec3 lower_right_m = Vec3::Zero();  ///< Corner at pixel row height_px, column width_px, in m.
  Vec3 upper_left_m = Vec3::Zero();   ///< Corner at pixel row 0, column 0, in m.
};

/// The view of one eye through one screen.
struct ScreenFrustum {
  double left_m = 0;      ///< Near rectangle's left edge at distance near_m, in m (OpenGL glFrustum's l).
  double right_m = 0;     ///< Near rectangle's right edge, in m.
  double bottom_m = 0;    ///< Near rectangle's bottom edge, in m.
  double top_m = 0;       ///< Near rectangle's top edge, in m.
  double near_m = 0.1;    ///< Near plane distance from the eye, in m.
  double distance_m = 0;  ///< Eye to the screen's plane, along its normal, in m.
  /// Camera body frame (x forward into the screen, y left, z up along the screen) in the vehicle frame.
  Quat orientation = Quat::Identity();
};

/// Checks that the corners make a rectangle: edges of at least 1 cm, at right angles within
/// `tolerance_m` (how far upper_left may lie off the perpendicular through lower_left, in m). Empty when
/// valid, else what is wrong, with the figures.
std::string ValidateScreenCorners(const ScreenCorners& s, double tolerance_m = 1e-3);

/// Eye's distance in front of the screen's plane, in m (positive: on the side from which lower_left ->
/// lower_right runs to the right; zero or negative: at or behind the plane, where nothing can be seen).
double EyeDistanceToScreen(const ScreenCorners& s, const Vec3& eye_m);

/// The frustum of eye `eye_m` (vehicle frame, m) through screen `s` with near plane `near_m` (m). The eye
/// must be in front of the plane (EyeDistanceToScreen > 0) and the corners valid (ValidateScreenCorners).
ScreenFrustum OffAxisFrustum(const ScreenCorners& s, const Vec3& eye_m, double near_m);

/// Pixel (u right, v down, in px of a width_px x height_px image covering the screen; (0, 0) is the
/// upper-left corner of the image, not a pixel centre) where the line from `eye_m` to `point_m` meets the
/// screen's plane, both in the vehicle frame (m); nullopt when the point is not in front of the eye
/// (towards the screen). Geometry only: the answer a ray through the physical screen gives.
std::optional<std::array<double, 2>> ScreenPixel(const ScreenCorners& s, uint32_t width_px, uint32_t height_px,
                                                 const Vec3& eye_m, const Vec3& point_m);

/// Pixel (same convention as ScreenPixel) of `point_m` projected by frustum `f` of an eye at `eye_m`
/// onto a width_px x height_px viewport, as the renderer's projection matrix does it; nullopt when the
/// point is behind the eye's plane parallel to the screen.
std::optional<std::array<double, 2>> FrustumPixel(const ScreenFrustum& f, uint32_t width_px, uint32_t height_px,
                                                  const Vec3& eye_m, const Vec3& point_m);

}  // namespace platoon::viewer
