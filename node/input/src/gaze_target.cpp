#include "platoon/input/gaze_target.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace platoon::input {

Vec3 GazeRayDirection(const GazeView& view, const GazePoint& p) {
  // The point on the image plane at unit distance: x right = -y body, y up = z body.
  const double right = view.left + p.x * (view.right - view.left);
  const double up = view.bottom + p.y * (view.top - view.bottom);
  return (view.camera * Vec3(1.0, -right, up)).normalized();
}

GazeView GazeViewOf(const Vec3& eye_m, const Quat& camera, double left_m, double right_m, double bottom_m, double top_m,
                    double near_m) {
  GazeView v;
  v.eye_m = eye_m;
  v.camera = camera;
  v.left = left_m / near_m;
  v.right = right_m / near_m;
  v.bottom = bottom_m / near_m;
  v.top = top_m / near_m;
  return v;
}

std::optional<double> RayBoxDistance(const Vec3& origin_m, const Vec3& ray, const GazeBox& box) {
  // In the box's frame the box is axis-aligned: intersect the three slabs.
  const Quat to_box = box.orientation.conjugate();
  const Vec3 o = to_box * (origin_m - box.centre_m);
  const Vec3 d = to_box * ray;
  double t_in = -std::numeric_limits<double>::infinity();
  double t_out = std::numeric_limits<double>::infinity();
  for (int k = 0; k < 3; ++k) {
    const double h = box.half_extents_m[k];
    if (std::abs(d[k]) < 1e-12) {
      if (o[k] < -h || o[k] > h) return std::nullopt;  // parallel to the slab and outside it
      continue;
    }
    double t0 = (-h - o[k]) / d[k], t1 = (h - o[k]) / d[k];
    if (t0 > t1) std::swap(t0, t1);
    t_in = std::max(t_in, t0);
    t_out = std::min(t_out, t1);
  }
  if (t_in > t_out || t_out < 0 || t_in < 0) return std::nullopt;  // missed, behind, or the origin inside
  return t_in;
}

GazeHit GazeTarget(const Vec3& eye_m, const Vec3& ray, std::span<const GazeBox> boxes, std::span<const GazeMirror> mirrors,
                   const GazePoint& p, double max_range_m) {
  GazeHit hit;
  // A mirror inset is drawn over the scene: a gaze on it looks into the mirror.
  for (const auto& m : mirrors) {
    if (p.x >= m.x0 && p.x <= m.x1 && p.y >= m.y0 && p.y <= m.y1) {
      hit.kind = GazeHit::Kind::kMirror;
      hit.mirror = m.name;
      return hit;
    }
  }
  // The nearest box the ray enters.
  double best = max_range_m;
  for (const auto& b : boxes) {
    const auto t = RayBoxDistance(eye_m, ray, b);
    if (t && *t <= best) {
      best = *t;
      hit.kind = GazeHit::Kind::kEntity;
      hit.entity_id = b.id;
      hit.distance_m = *t;
    }
  }
  return hit;
}

}  // namespace platoon::input
