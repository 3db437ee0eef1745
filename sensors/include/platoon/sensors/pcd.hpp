#pragma once
/// PCD v0.7 (Point Cloud Library) export and import of CloudPoint clouds, readable by PCL
/// (pcl::io::loadPCDFile) and CloudCompare. One fixed field layout (docs/CLOUD_PROCESSING.md §6):
///
///     FIELDS x y z power snr t ring echo source entity class intensity return_type
///     SIZE   4 4 4 4     4   4 2    1    1      4      2     1         1
///     TYPE   F F F F     F   F U    U    U      U      U     U         U
///
/// where power is the received power in W and intensity the 0..255 calibrated reflectivity. The reader
/// also takes the layout of earlier builds (FIELDS x y z intensity snr t ring echo source entity class,
/// intensity = power, class uint32 < 65536), whose points read with reflectivity 0 and return_type 0.
/// Binary rows are 36 bytes, packed, little-endian, in FIELDS order; ASCII rows print floats in their
/// shortest round-trip form (at most 9 significant digits, like %.9g but locale-independent), so both
/// formats reproduce every float exactly. This file is an edge of the system (style §6): failures throw
/// std::runtime_error with a message naming the file (and line or field) a human can act on.

#include "platoon/geometry.hpp"
#include "platoon/sensors/point_cloud.hpp"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace platoon::sensors {

/// DATA section encoding of a PCD file.
enum class PcdFormat {
  kAscii,   ///< "DATA ascii": one text line per point, space-separated.
  kBinary,  ///< "DATA binary": packed 36-byte little-endian rows.
};

/// Complete PCD file contents (header and data) for `points`, as WritePcd writes them.
/// `viewpoint` is the acquisition pose written to VIEWPOINT (tx ty tz qw qx qy qz).
std::string EncodePcd(std::span<const CloudPoint> points, PcdFormat format, const Pose& viewpoint = Pose{});

/// Writes `points` as a PCD v0.7 file (WIDTH n, HEIGHT 1). Atomic: writes `path + ".tmp"`, flushes it
/// to disk and renames it over `path`, so a reader never sees a partial file. Throws std::runtime_error
/// naming the path and the errno text on failure (the temporary file is removed).
void WritePcd(const std::string& path, std::span<const CloudPoint> points, PcdFormat format,
              const Pose& viewpoint = Pose{});

/// Parses PCD contents in exactly the layout EncodePcd writes, or the earlier one (ascii or binary; comment lines and CRLF
/// line ends are accepted). `name` labels error messages ("<name>:<line>: ..."). If `viewpoint` is not
/// null it receives VIEWPOINT (identity when the header has none). Throws std::runtime_error for a wrong
/// or missing header entry, an unknown field, a malformed value, truncated or trailing data; never reads
/// out of bounds on arbitrary input.
std::vector<CloudPoint> ParsePcd(std::string_view contents, const std::string& name, Pose* viewpoint = nullptr);

/// Reads a file written by WritePcd (see ParsePcd). Throws std::runtime_error naming `path` if it
/// cannot be read or is malformed.
std::vector<CloudPoint> ReadPcd(const std::string& path, Pose* viewpoint = nullptr);

}  // namespace platoon::sensors
