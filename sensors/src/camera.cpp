#include "platoon/sensors/camera.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <limits>

namespace platoon::sensors {

CameraDef DefaultCameraDef() {
  CameraDef def;
  def.mounting.position_m = Vec3(1.8, 0.0, 1.3);
  return def;
}

CameraIntrinsics Intrinsics(const CameraDef& def) {
  assert(def.sensor_width_mm > 0 && def.sensor_height_mm > 0 && def.focal_length_mm > 0);
  CameraIntrinsics k;
  k.fx_px = def.focal_length_mm * def.image_width_px / def.sensor_width_mm;
  k.fy_px = def.focal_length_mm * def.image_height_px / def.sensor_height_mm;
  k.cx_px = 0.5 * def.image_width_px;
  k.cy_px = 0.5 * def.image_height_px;
  return k;
}

double HorizontalFovRad(const CameraDef& def) {
  return 2.0 * std::atan(def.sensor_width_mm / (2.0 * def.focal_length_mm));
}

double VerticalFovRad(const CameraDef& def) {
  return 2.0 * std::atan(def.sensor_height_mm / (2.0 * def.focal_length_mm));
}

Vec3 BodyToOptical(const Vec3& p_body_m) { return Vec3(-p_body_m.y(), -p_body_m.z(), p_body_m.x()); }

Eigen::Vector2d ProjectOptical(const CameraIntrinsics& k, const Vec3& p) {
  return Eigen::Vector2d(k.fx_px * p.x() / p.z() + k.cx_px, k.fy_px * p.y() / p.z() + k.cy_px);
}

namespace {

// Corner i of a box has coordinate sign bit 0 -> x, bit 1 -> y, bit 2 -> z (0: -half, 1: +half).
Vec3 CornerLocal(const Vec3& half, int i) {
  return Vec3((i & 1) ? half.x() : -half.x(), (i & 2) ? half.y() : -half.y(), (i & 4) ? half.z() : -half.z());
}

// Fraction of the target's in-image area whose line of sight first meets another entity.
double OcclusionRatio(const CameraTarget& t, const Scene& scene, const Pose& cam, const CameraDef& def,
                      const CameraIntrinsics& k) {
  const Vec3 half = 0.5 * t.size_m;
  const Quat q_cw = cam.orientation.conjugate();
  const int n = static_cast<int>(std::max<uint32_t>(def.occlusion_samples, 1));
  double total = 0.0;
  double hidden = 0.0;
  for (int axis = 0; axis < 3; ++axis) {
    for (int sign = -1; sign <= 1; sign += 2) {
      // Face of the box: normal along +-axis; skip faces turned away from the camera.
      Vec3 n_local = Vec3::Zero();
      n_local[axis] = sign;
      const Vec3 n_world = t.pose.orientation * n_local;
      const Vec3 face_centre = t.pose.position_m + t.pose.orientation * (half[axis] * n_local);
      if (n_world.dot(cam.position_m - face_centre) <= 0.0) continue;
      const int a1 = (axis + 1) % 3;
      const int a2 = (axis + 2) % 3;
      const double cell_area = (2.0 * half[a1] / n) * (2.0 * half[a2] / n);
      const Vec3 n_optical = BodyToOptical(q_cw * n_world);
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
          // Cell centre on the face, then its image position and image-area weight.
          Vec3 local = half[axis] * n_local;
          local[a1] = -half[a1] + (i + 0.5) * 2.0 * half[a1] / n;
          local[a2] = -half[a2] + (j + 0.5) * 2.0 * half[a2] / n;
          const Vec3 p_world = t.pose.position_m + t.pose.orientation * local;
          const Vec3 p_opt = BodyToOptical(q_cw * (p_world - cam.position_m));
          if (p_opt.z() <= def.near_clip_m) continue;
          const Eigen::Vector2d uv = ProjectOptical(k, p_opt);
          if (uv.x() < 0.0 || uv.x() > def.image_width_px || uv.y() < 0.0 || uv.y() > def.image_height_px) {
            continue;
          }
          // Image area of a small surface patch dA: fx fy |n . p| / z^3 dA (the constant fx fy drops out).
          const double w = cell_area * std::abs(n_optical.dot(p_opt)) / (p_opt.z() * p_opt.z() * p_opt.z());
          total += w;
          // Line of sight: hidden if the first surface on the way belongs to another entity.
          const Vec3 d = p_world - cam.position_m;
          const double dist = d.norm();
          const Hit hit = scene.Intersect(cam.position_m, d / dist, dist * (1.0 + 1e-6) + 1e-4);
          if (hit.valid && hit.tag.entity_id != t.entity_id) hidden += w;
        }
      }
    }
  }
  return total > 0.0 ? hidden / total : 0.0;
}

}  // namespace

std::vector<CameraTarget> StaticTargets(const Scene& scene, const std::vector<uint32_t>& classes) {
  std::vector<CameraTarget> out;
  for (const StaticBox& b : scene.StaticBoxes()) {
    if (std::find(classes.begin(), classes.end(), b.tag.class_id) == classes.end()) continue;
    out.push_back(CameraTarget{b.tag.entity_id, b.tag.class_id, b.pose, 2.0 * b.half_extents_m, b.tag.detail});
  }
  return out;
}

std::vector<RoiBox> GroundTruth(const std::vector<CameraTarget>& targets, const Scene* occluders,
                                const Pose& camera_world, const CameraDef& def) {
  const CameraIntrinsics k = Intrinsics(def);
  const Quat q_cw = camera_world.orientation.conjugate();
  const double w_px = def.image_width_px;
  const double h_px = def.image_height_px;
  std::vector<RoiBox> out;
  out.reserve(targets.size());
  for (const CameraTarget& t : targets) {
    // Box corners in the optical frame.
    const Vec3 half = 0.5 * t.size_m;
    std::array<Vec3, 8> c;
    for (int i = 0; i < 8; ++i) {
      const Vec3 p_world = t.pose.position_m + t.pose.orientation * CornerLocal(half, i);
      c[i] = BodyToOptical(q_cw * (p_world - camera_world.position_m));
    }
    // Points to project: corners in front of the near plane plus the near-plane crossings of the 12 edges,
    // so a box reaching behind the camera keeps the correct extent of its visible part.
    const double zn = def.near_clip_m;
    std::array<Vec3, 20> pts;
    int np = 0;
    bool cut_by_near = false;
    for (int i = 0; i < 8; ++i) {
      if (c[i].z() > zn) {
        pts[np++] = c[i];
      } else {
        cut_by_near = true;
      }
      for (int bit = 1; bit < 8; bit <<= 1) {
        const int j = i | bit;
        if (j == i) continue;  // each edge once: from the corner with the bit clear
        const bool in_i = c[i].z() > zn;
        const bool in_j = c[j].z() > zn;
        if (in_i == in_j) continue;
        const double s = (zn - c[i].z()) / (c[j].z() - c[i].z());
        pts[np++] = c[i] + s * (c[j] - c[i]);
      }
    }
    if (np == 0) continue;  // entirely behind the camera
    // Pixel extent, then clipping to the image.
    double u0 = std::numeric_limits<double>::infinity(), v0 = u0, u1 = -u0, v1 = -u0;
    for (int i = 0; i < np; ++i) {
      const Eigen::Vector2d uv = ProjectOptical(k, pts[i]);
      u0 = std::min(u0, uv.x());
      u1 = std::max(u1, uv.x());
      v0 = std::min(v0, uv.y());
      v1 = std::max(v1, uv.y());
    }
    if (u1 <= 0.0 || v1 <= 0.0 || u0 >= w_px || v0 >= h_px) continue;  // outside the image
    RoiBox box;
    box.entity_id = t.entity_id;
    box.class_id = t.class_id;
    box.detail = t.detail;
    box.u_min_px = std::max(u0, 0.0);
    box.v_min_px = std::max(v0, 0.0);
    box.u_max_px = std::min(u1, w_px);
    box.v_max_px = std::min(v1, h_px);
    box.truncated = cut_by_near || u0 < 0.0 || v0 < 0.0 || u1 > w_px || v1 > h_px;
    box.depth_m = BodyToOptical(q_cw * (t.pose.position_m - camera_world.position_m)).z();
    if (occluders != nullptr) box.occlusion_ratio = OcclusionRatio(t, *occluders, camera_world, def, k);
    out.push_back(box);
  }
  return out;
}

}  // namespace platoon::sensors
