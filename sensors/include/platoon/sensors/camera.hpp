#pragma once
/// Camera ground truth without rendering: pinhole projection of target boxes to 2D regions of interest
/// (pixel bounding boxes) with an occlusion ratio from rays cast against the Scene. Camera of seed 000
/// §2.3.3, parametrised in seed 000 §3 (sensor 23.76 mm x 13.365 mm, focal length 12 mm, "approximately
/// 90°" horizontal field of view).
/// A pure function of (targets, scene, camera pose, CameraDef). Equations: docs/CAMERA_OBJECTS.md.
///
/// Frames:
///  - camera body frame C (what `CameraDef::mounting` places on the vehicle and what `camera_world` gives
///    in the world): x forward along the optical axis, y left, z up, like every platoon sensor frame;
///  - optical frame O (OpenCV convention): x right, y down, z forward. O = R_OC * C with
///    x_O = -y_C, y_O = -z_C, z_O = x_C;
///  - image: u right, v down, in continuous pixel coordinates; the image covers [0, width] x [0, height]
///    and pixel (i, j) has its centre at (i + 0.5, j + 0.5).

#include "platoon/geometry.hpp"
#include "platoon/sensors/mounting.hpp"
#include "platoon/sensors/scene.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace platoon::sensors {

/// Read-only camera definition.
struct CameraDef {
  double sensor_width_mm = 23.76;    ///< Width of the image sensor, in mm (seed 000: 23.76).
  double sensor_height_mm = 13.365;  ///< Height of the image sensor, in mm (seed 000: 13.365).
  double focal_length_mm = 12.0;     ///< Focal length of the lens, in mm (seed 000: 12).
  uint32_t image_width_px = 1920;    ///< Horizontal resolution, in px. Typical 1920.
  uint32_t image_height_px = 1080;   ///< Vertical resolution, in px. Typical 1080 (16:9 like the sensor).
  double rate_hz = 20.0;             ///< Frame rate, in Hz. Typical 20.
  double near_clip_m = 0.05;         ///< Points closer than this along the optical axis are clipped, in m.
  Mounting mounting;                 ///< Camera body frame C on the vehicle (x forward). Typical (1.8, 0, 1.3).
  uint32_t occlusion_samples = 8;    ///< Occlusion rays per visible face and axis (k x k per face). Typical 8.
  /// Image the sensor host renders with each frame (seed 004 §4.3): "none" (ROIs only), "rgb8" (raw, top
  /// row first) or "png". Rendering needs an X display (or Xvfb); without one the host sends ROIs only.
  std::string render = "none";
  /// Monitor HIL (seed 004 §6.2): the sensor host also shows every rendered image 1:1 in a window that a
  /// physical camera films: "none", "window" (a window of the image's size) or "fullscreen" (borderless,
  /// the image centred on black). Needs render != "none". docs/CAMERA_OBJECTS.md, "Monitor HIL".
  std::string monitor = "none";
  int monitor_display = 0;     ///< Display (screen) the monitor window opens on, numbered from 0. Typical 0 or 1.
  bool monitor_check = false;  ///< Read every presented frame back and count those that differ from the image sent.
};

/// The seed-000 camera: 23.76 x 13.365 mm sensor, 12 mm lens (89.42 deg x 58.22 deg), 1920 x 1080 px,
/// 20 Hz, mounted behind the windscreen at (1.8, 0, 1.3) m looking forward.
CameraDef DefaultCameraDef();

/// Pinhole intrinsics in pixels (seed 000 camera): fx = f W_px / w, fy = f H_px / h, principal point at
/// the image centre.
struct CameraIntrinsics {
  double fx_px = 0.0;  ///< Focal length in horizontal pixels. 969.7 for the default camera.
  double fy_px = 0.0;  ///< Focal length in vertical pixels. 969.7 for the default camera.
  double cx_px = 0.0;  ///< Principal point u, in px. 960 for the default camera.
  double cy_px = 0.0;  ///< Principal point v, in px. 540 for the default camera.
};

/// Intrinsics from sensor size, focal length and resolution.
CameraIntrinsics Intrinsics(const CameraDef& def);
/// Horizontal field of view 2 atan(w / 2f), in rad. 1.5607 (89.42 deg) for the default camera.
double HorizontalFovRad(const CameraDef& def);
/// Vertical field of view 2 atan(h / 2f), in rad. 1.0162 (58.22 deg) for the default camera.
double VerticalFovRad(const CameraDef& def);

/// Point in the camera body frame C (x forward, y left, z up) to the optical frame O (x right, y down,
/// z forward).
Vec3 BodyToOptical(const Vec3& p_body_m);
/// Pinhole projection of a point in the optical frame (z > 0) to continuous pixel coordinates (u, v).
Eigen::Vector2d ProjectOptical(const CameraIntrinsics& k, const Vec3& p_optical_m);

/// A box-shaped object the camera may see.
struct CameraTarget {
  uint32_t entity_id = 0;       ///< World entity id; matches SurfaceTag::entity_id of its Scene geometry.
  uint32_t class_id = 0;        ///< Semantic class, caller-defined (copied to the RoiBox).
  Pose pose;                    ///< Box centre and orientation in the world.
  Vec3 size_m = Vec3(4.6, 1.8, 1.5);  ///< Full box lengths along the box's x, y, z, in m. Typical car.
  uint32_t detail = 0;          ///< Class detail (SurfaceTag::detail; signs: road::SignDetail), copied to the RoiBox.
};

/// Targets for the static boxes of `scene` (Scene::StaticBoxes: buildings, trees, guard rails, poles,
/// signs, [[scene.box]] entries) whose SurfaceTag::class_id is one of `classes`; entity and class ids are
/// the tags', in the order the boxes were added. Meshes (the ground) are never targets.
std::vector<CameraTarget> StaticTargets(const Scene& scene, const std::vector<uint32_t>& classes);

/// Ground-truth 2D bounding box of one target in one image.
struct RoiBox {
  uint32_t entity_id = 0;      ///< Target entity id.
  uint32_t class_id = 0;       ///< Target class, copied.
  double u_min_px = 0.0;       ///< Left edge, in px, within [0, width].
  double v_min_px = 0.0;       ///< Top edge, in px, within [0, height].
  double u_max_px = 0.0;       ///< Right edge, in px, within [0, width].
  double v_max_px = 0.0;       ///< Bottom edge, in px, within [0, height].
  double depth_m = 0.0;        ///< Depth of the box centre along the optical axis, in m.
  bool truncated = false;      ///< True if the box was cut by the image border or the near plane.
  double occlusion_ratio = 0.0;  ///< Fraction of the target's in-image area hidden by other entities, 0..1.
  /// Class detail, copied: for a sign road::SignDetail, its type (SignDetailType) and the number on it
  /// (SignDetailValue, e.g. 50 for a 50 km/h limit); 0 for other classes.
  uint32_t detail = 0;
};

/// 2D ground truth for `targets` seen by a camera whose body frame C sits at `camera_world` in the world
/// (use SensorPoseInWorld(vehicle, def.mounting)). One RoiBox per target that projects onto the image, in
/// input order; targets entirely behind the near plane or outside the image are left out. Boxes are the
/// pixel extent of the box corners (edges clipped at the near plane), clipped to the image. The occlusion
/// ratio casts rays from the camera to k x k points on each face turned towards the camera, keeps those
/// that land inside the image, weights each by its image area, and counts as hidden those whose first hit
/// is another entity. `occluders` may be null (ratio 0); it must be committed; the targets themselves may
/// be in it.
std::vector<RoiBox> GroundTruth(const std::vector<CameraTarget>& targets, const Scene* occluders,
                                const Pose& camera_world, const CameraDef& def);

}  // namespace platoon::sensors
