#pragma once
/// What a driver looks at (issue 43 item 5, docs/INPUTS.md "Eye tracker"): an eye tracker's gaze point on
/// the seat's main screen, as normalised image coordinates, becomes a ray from the eye through the view,
/// and the ray meets a vehicle's box, a mirror's inset, or nothing. Pure geometry: no clock, no socket.

#include "platoon/geometry.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace platoon::input {

/// The view of the main screen: an eye and an (off-axis) frustum, in the world.
struct GazeView {
  Vec3 eye_m = Vec3::Zero();            ///< The eye, world frame, m.
  Quat camera = Quat::Identity();       ///< Camera body (x forward into the screen, y left, z up) to world.
  double left = -0.7;                   ///< Near rectangle's left edge over its distance (glFrustum l / near), tangent.
  double right = 0.7;                   ///< Right edge over the distance, tangent.
  double bottom = -0.4;                 ///< Bottom edge over the distance, tangent.
  double top = 0.4;                     ///< Top edge over the distance, tangent.
};

/// A gaze point on the main screen's image: Pupil's norm_pos convention, x right and y up, (0, 0) the
/// image's lower-left corner and (1, 1) its upper-right.
struct GazePoint {
  double x = 0.5;  ///< 0 (left edge) .. 1 (right edge).
  double y = 0.5;  ///< 0 (bottom edge) .. 1 (top edge).
};

/// A world entity as a box.
struct GazeBox {
  uint64_t id = 0;                       ///< Entity id.
  Vec3 centre_m = Vec3::Zero();          ///< Box centre, world, m.
  Quat orientation = Quat::Identity();   ///< Box axes to world.
  Vec3 half_extents_m = Vec3(2.25, 0.9, 0.75);  ///< Half length, width, height, m.
};

/// A mirror inset on the main screen, a rectangle of the image in GazePoint coordinates.
struct GazeMirror {
  std::string name;        ///< "rear", "left", "right".
  double x0 = 0, y0 = 0;   ///< Lower-left corner, 0..1.
  double x1 = 0, y1 = 0;   ///< Upper-right corner, 0..1.
};

/// What the gaze meets.
struct GazeHit {
  enum class Kind : uint8_t { kNothing, kEntity, kMirror };
  Kind kind = Kind::kNothing;
  uint64_t entity_id = 0;      ///< kEntity: the box's id.
  std::string mirror;          ///< kMirror: the mirror's name.
  double distance_m = 0;       ///< kEntity: eye to the box along the ray, m.
};

/// The unit direction (world) of the ray from the eye through `p` on the view's image.
Vec3 GazeRayDirection(const GazeView& view, const GazePoint& p);

/// The view of an eye at `eye_m` (world) through a camera with body-to-world `camera` and a frustum whose
/// near rectangle (left, right, bottom, top) lies at `near_m` (the viewer's ScreenFrustum): tangents.
GazeView GazeViewOf(const Vec3& eye_m, const Quat& camera, double left_m, double right_m, double bottom_m, double top_m,
                    double near_m);

/// Where the gaze at `p` lands: a mirror when `p` is inside one of `mirrors` (they are drawn over the scene),
/// else the nearest of `boxes` that the ray from `eye_m` along `ray` (unit, world) meets within
/// `max_range_m`, else nothing. A box holding the eye (the own car) is never a target.
GazeHit GazeTarget(const Vec3& eye_m, const Vec3& ray, std::span<const GazeBox> boxes, std::span<const GazeMirror> mirrors,
                   const GazePoint& p, double max_range_m = 1000.0);

/// Distance along the unit `ray` from `origin_m` to where it enters `box`; nullopt when it misses it, or
/// when the origin is inside the box. Slab method in the box's frame.
std::optional<double> RayBoxDistance(const Vec3& origin_m, const Vec3& ray, const GazeBox& box);

}  // namespace platoon::input
