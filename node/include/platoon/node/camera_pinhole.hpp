#pragma once
/// The rendering camera of a camera sensor: its intrinsics, image size and near clip as the sensor host
/// hands them to the off-screen renderer, so a rendered pixel and the sensor's projection agree.

#include "platoon/sensors/camera.hpp"
#include "platoon/viewer/pinhole_camera.hpp"

namespace platoon::node {

/// PinholeCamera of camera sensor `def`: fx, fy, cx, cy from sensors::Intrinsics, the image size, the near
/// clip (at least 0.01 m) and a 20 km far clip.
viewer::PinholeCamera SensorPinhole(const sensors::CameraDef& def);

}  // namespace platoon::node
