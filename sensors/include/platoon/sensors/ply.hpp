#pragma once
/// PLY (binary_little_endian 1.0) export of point records, for tools that read PLY rather than PCD
/// (CloudCompare, MeshLab, Open3D, Blender). One vertex element whose properties are the point record's
/// fields in record order (platoon/point_record.hpp), so each row is the 36-byte record as it is:
///
///     x y z power snr t (float)  ring (ushort)  echo source (uchar)  entity (uint)  class (ushort)
///     intensity return_type (uchar)
///
/// power is the received power in W, intensity the 0..255 calibrated reflectivity (docs/LIDAR.md).
/// The acquisition pose goes in a comment line "comment viewpoint tx ty tz qw qx qy qz", as PCD's VIEWPOINT.

#include "platoon/geometry.hpp"
#include "platoon/point_record.hpp"

#include <span>
#include <string>

namespace platoon::sensors {

/// Complete PLY file contents (header and binary rows) for `points`.
std::string EncodePly(std::span<const PointRecord> points, const Pose& viewpoint = Pose{});

/// Writes EncodePly's contents to `path` atomically (a temporary file renamed over it). Throws
/// std::runtime_error naming the path and the errno text on failure.
void WritePly(const std::string& path, std::span<const PointRecord> points, const Pose& viewpoint = Pose{});

}  // namespace platoon::sensors
