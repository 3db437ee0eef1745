#pragma once
/// Pinhole cameras for rendering, matching the camera sensor's model (sensors/camera.hpp,
/// docs/CAMERA_OBJECTS.md) pixel for pixel:
///  - camera body frame C: x forward along the optical axis, y left, z up (a platoon sensor frame);
///  - optical frame O: x right, y down, z forward (x_O = -y_C, y_O = -z_C, z_O = x_C);
///  - image: u right, v down, continuous pixel coordinates over [0, width] x [0, height];
///    pixel (i, j) has its centre at (i + 0.5, j + 0.5);
///  - projection: u = fx x_O / z_O + cx, v = fy y_O / z_O + cy.
/// OpenGL rasterises at pixel centres of window coordinates whose origin is the bottom-left corner, so
/// the projection matrix below maps (u, v) to window (u, height - v) and rendered row j (counted from
/// the top) samples exactly v = j + 0.5. Equations: viewer/README.md, "Cameras".

#include "platoon/geometry.hpp"

#include <osg/Matrixd>

#include <cstdint>
#include <string>

namespace platoon::viewer {

/// Intrinsics, image size and clip planes of a rendering camera.
struct PinholeCamera {
  double fx_px = 969.7;      ///< Focal length in horizontal pixels. 969.7 for the seed-000 camera at 1920 px.
  double fy_px = 969.7;      ///< Focal length in vertical pixels.
  double cx_px = 960.0;      ///< Principal point u, in px (image centre: width / 2).
  double cy_px = 540.0;      ///< Principal point v, in px (image centre: height / 2).
  uint32_t width_px = 1920;  ///< Image width, in px.
  uint32_t height_px = 1080; ///< Image height, in px.
  double near_m = 0.1;       ///< Near clip distance along the optical axis, in m. Typical 0.05-0.5.
  double far_m = 20000.0;    ///< Far clip distance along the optical axis, in m. Typical 1000-20000.
};

/// A camera of `width_px` x `height_px` with horizontal field of view `hfov_rad`, square pixels and the
/// principal point at the image centre.
PinholeCamera CameraFromFov(uint32_t width_px, uint32_t height_px, double hfov_rad);

/// Checks a PinholeCamera; returns an empty string when valid, else a message naming the bad field.
std::string ValidatePinholeCamera(const PinholeCamera& cam);

/// OpenGL projection matrix of the pinhole model (OSG row-vector convention): the frustum with
/// left = -n cx / fx, right = n (W - cx) / fx, top = n cy / fy, bottom = -n (H - cy) / fy.
osg::Matrixd ProjectionMatrix(const PinholeCamera& cam);

/// View matrix (world to OpenGL eye: x right, y up, z backwards) of a camera whose body frame C sits
/// at `camera_world` (position and body-to-world rotation).
osg::Matrixd ViewMatrix(const Pose& camera_world);

/// Pose of the camera body frame whose view matrix is `view` (inverse of ViewMatrix).
Pose CameraPoseFromView(const osg::Matrixd& view);

/// Pixel coordinates (u, v) of world point `p_world_m`; false when it is not in front of the camera
/// (z_O <= 0). For tools and tests; the renderer itself uses ProjectionMatrix.
bool ProjectPoint(const PinholeCamera& cam, const Pose& camera_world, const Vec3& p_world_m, Eigen::Vector2d* uv);

}  // namespace platoon::viewer
