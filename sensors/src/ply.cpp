#include "platoon/sensors/ply.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace platoon::sensors {

std::string EncodePly(std::span<const PointRecord> points, const Pose& viewpoint) {
  const Quat& q = viewpoint.orientation;
  std::string out = fmt::format(
      "ply\nformat binary_little_endian 1.0\ncomment platoon point records, point record layout {}\n"
      "comment viewpoint {} {} {} {} {} {} {}\nelement vertex {}\n",
      point_record::kLayout, viewpoint.position_m.x(), viewpoint.position_m.y(), viewpoint.position_m.z(), q.w(), q.x(),
      q.y(), q.z(), points.size());
  // Record order and sizes (point_record.hpp): the rows below are the records byte for byte.
  out +=
      "property float x\nproperty float y\nproperty float z\nproperty float power\nproperty float snr\n"
      "property float t\nproperty ushort ring\nproperty uchar echo\nproperty uchar source\nproperty uint entity\n"
      "property ushort class\nproperty uchar intensity\nproperty uchar return_type\nend_header\n";
  AppendPointRecords(points, out);
  return out;
}

void WritePly(const std::string& path, std::span<const PointRecord> points, const Pose& viewpoint) {
  const std::string tmp = path + ".tmp";
  const std::string data = EncodePly(points, viewpoint);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error("WritePly: cannot create '" + tmp + "': " + std::strerror(errno));
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
    f.flush();
    if (!f) {
      const int err = errno;
      std::remove(tmp.c_str());
      throw std::runtime_error("WritePly: cannot write '" + tmp + "': " + std::strerror(err));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw std::runtime_error("WritePly: '" + path + "': cannot rename '" + tmp + "' to it: " + std::strerror(err));
  }
}

}  // namespace platoon::sensors
