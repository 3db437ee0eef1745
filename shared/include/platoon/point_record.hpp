#pragma once
/// The point record of the point-cloud data streams (PointCloud, FusedCloud) and of binary PCD files,
/// defined once: a packed little-endian 36-byte record with no padding, member order = PCD FIELDS
/// order (docs/PROTOCOL.md "Data streams", docs/CLOUD_PROCESSING.md §5). Producers (sensor host,
/// fusion, PCD writer) and readers (fusion, viewer, PCD reader) go through the helpers below, which
/// copy bytes with memcpy (no aliasing or alignment assumptions) and store every field little-endian
/// whatever the host's byte order.

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace platoon {

/// One point of a (possibly fused) cloud. Coordinates are in whatever frame the producer states
/// (sensor frame for a raw scan, vehicle or world frame after fusion).
struct PointRecord {
  float x_m = 0;             ///< x coordinate, in m.
  float y_m = 0;             ///< y coordinate, in m.
  float z_m = 0;             ///< z coordinate, in m.
  float intensity_w = 0;     ///< Received optical power P_r of the echo, in W. Typical 1e-9..1e-5.
  float snr = 0;             ///< Signal-to-noise ratio P_r / P_n, dimensionless. Detected points are >= the threshold (~5).
  float time_offset_s = 0;   ///< Firing time after the scan start, in s. 0..0.1 for a 10 Hz scanner.
  uint16_t ring = 0;         ///< Channel (ring) index of the lidar that produced the point.
  uint8_t echo = 0;          ///< Echo index within its beam, 0 = nearest.
  uint8_t source = 0;        ///< Index of the lidar in a fused frame (0 for a single sensor).
  uint32_t entity_id = 0;    ///< Ground-truth entity of the surface hit (low 32 bits of the entity id); 0 = none.
  uint16_t class_id = 0;     ///< Ground-truth semantic class of that surface (sensors::SemanticClass).
  uint8_t reflectivity = 0;  ///< Calibrated reflectivity as lidar drivers report it, 0..255: 0-100 = diffuse reflectance in %, 101-255 retro-reflector (docs/LIDAR.md §7).
  uint8_t return_type = 0;   ///< Which echo of its beam (point_record::ReturnType); 0 = unknown (records of builds before the reflectivity field).
};

namespace point_record {

/// Layout generations of the record, for readers of older logs and files. Layout 1 (until 2026-11)
/// ended in a uint32 class_id at byte 32; layout 2 splits those 4 bytes into class_id (uint16),
/// reflectivity (uint8) and return_type (uint8). Class ids are < 65536, so a layout-1 record reads as
/// layout 2 with reflectivity 0 and return_type 0 (unknown): the same bytes, no conversion.
inline constexpr int kLayout = 2;

/// PointRecord::return_type: where the echo lies among its beam's echoes (nearest first).
enum class ReturnType : uint8_t {
  kUnknown = 0,       ///< Not recorded (a layout-1 record) or not from a lidar.
  kOnly = 1,          ///< The beam's only echo.
  kFirst = 2,         ///< Nearest of several echoes.
  kLast = 3,          ///< Farthest of several echoes.
  kIntermediate = 4,  ///< Between the first and the last.
};

/// Bytes of one record on the wire and in a binary PCD row, in bytes.
inline constexpr uint16_t kStride = 36;
/// Byte offsets of the fields inside a record.
inline constexpr size_t kOffsetX = 0, kOffsetY = 4, kOffsetZ = 8, kOffsetIntensity = 12, kOffsetSnr = 16,
                        kOffsetTime = 20, kOffsetRing = 24, kOffsetEcho = 26, kOffsetSource = 27,
                        kOffsetEntity = 28, kOffsetClass = 32, kOffsetReflectivity = 34,
                        kOffsetReturnType = 35;

/// Loads a little-endian value of type T from `p` (any alignment).
template <typename T>
T Load(const char* p) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::array<char, sizeof(T)> b;
  std::memcpy(b.data(), p, sizeof(T));
  if constexpr (std::endian::native == std::endian::big) std::reverse(b.begin(), b.end());
  return std::bit_cast<T>(b);
}

/// Stores `v` little-endian at `p` (any alignment).
template <typename T>
void Store(char* p, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  auto b = std::bit_cast<std::array<char, sizeof(T)>>(v);
  if constexpr (std::endian::native == std::endian::big) std::reverse(b.begin(), b.end());
  std::memcpy(p, b.data(), sizeof(T));
}

}  // namespace point_record

static_assert(sizeof(PointRecord) == point_record::kStride, "PointRecord is a packed 36-byte wire record");
static_assert(alignof(PointRecord) == 4);
static_assert(std::is_trivially_copyable_v<PointRecord>);
static_assert(std::is_standard_layout_v<PointRecord>);
static_assert(offsetof(PointRecord, ring) == point_record::kOffsetRing &&
                  offsetof(PointRecord, echo) == point_record::kOffsetEcho &&
                  offsetof(PointRecord, source) == point_record::kOffsetSource &&
                  offsetof(PointRecord, entity_id) == point_record::kOffsetEntity &&
                  offsetof(PointRecord, class_id) == point_record::kOffsetClass &&
                  offsetof(PointRecord, reflectivity) == point_record::kOffsetReflectivity &&
                  offsetof(PointRecord, return_type) == point_record::kOffsetReturnType,
              "PointRecord has no padding; member order matches the PCD FIELDS order");

/// Writes one record into the kStride bytes at `out`.
inline void WritePointRecord(const PointRecord& p, char* out) {
  using point_record::Store;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(out, &p, sizeof p);  // the struct is the wire layout on little-endian hosts
  } else {
    Store(out + point_record::kOffsetX, p.x_m);
    Store(out + point_record::kOffsetY, p.y_m);
    Store(out + point_record::kOffsetZ, p.z_m);
    Store(out + point_record::kOffsetIntensity, p.intensity_w);
    Store(out + point_record::kOffsetSnr, p.snr);
    Store(out + point_record::kOffsetTime, p.time_offset_s);
    Store(out + point_record::kOffsetRing, p.ring);
    Store(out + point_record::kOffsetEcho, p.echo);
    Store(out + point_record::kOffsetSource, p.source);
    Store(out + point_record::kOffsetEntity, p.entity_id);
    Store(out + point_record::kOffsetClass, p.class_id);
    Store(out + point_record::kOffsetReflectivity, p.reflectivity);
    Store(out + point_record::kOffsetReturnType, p.return_type);
  }
}

/// Reads one record from the kStride bytes at `in`.
inline PointRecord ReadPointRecord(const char* in) {
  using point_record::Load;
  PointRecord p;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(&p, in, sizeof p);
  } else {
    p.x_m = Load<float>(in + point_record::kOffsetX);
    p.y_m = Load<float>(in + point_record::kOffsetY);
    p.z_m = Load<float>(in + point_record::kOffsetZ);
    p.intensity_w = Load<float>(in + point_record::kOffsetIntensity);
    p.snr = Load<float>(in + point_record::kOffsetSnr);
    p.time_offset_s = Load<float>(in + point_record::kOffsetTime);
    p.ring = Load<uint16_t>(in + point_record::kOffsetRing);
    p.echo = Load<uint8_t>(in + point_record::kOffsetEcho);
    p.source = Load<uint8_t>(in + point_record::kOffsetSource);
    p.entity_id = Load<uint32_t>(in + point_record::kOffsetEntity);
    p.class_id = Load<uint16_t>(in + point_record::kOffsetClass);
    p.reflectivity = Load<uint8_t>(in + point_record::kOffsetReflectivity);
    p.return_type = Load<uint8_t>(in + point_record::kOffsetReturnType);
  }
  return p;
}

/// Appends `points` to `out` as packed records (points.size() * kStride bytes).
inline void AppendPointRecords(std::span<const PointRecord> points, std::string& out) {
  const size_t at = out.size();
  out.resize(at + points.size() * point_record::kStride);
  if constexpr (std::endian::native == std::endian::little) {
    if (!points.empty()) std::memcpy(out.data() + at, points.data(), points.size() * point_record::kStride);
  } else {
    for (size_t i = 0; i < points.size(); ++i) WritePointRecord(points[i], out.data() + at + i * point_record::kStride);
  }
}

/// `points` as a packed blob of records, the `points` field of PointCloud and FusedCloud.
inline std::string PackPointRecords(std::span<const PointRecord> points) {
  std::string out;
  AppendPointRecords(points, out);
  return out;
}

/// True when `blob` holds `count` records of `stride` bytes: stride >= kStride and the blob is at
/// least count * stride long (a larger stride means fields appended after the record's 36 bytes).
inline bool PointRecordsFit(std::string_view blob, uint32_t count, uint16_t stride) {
  return stride >= point_record::kStride && blob.size() >= static_cast<size_t>(count) * stride;
}

/// Reads `count` records of `stride` bytes each from `blob` into `out[0..count)`, skipping the extra
/// bytes of a stride above kStride. Returns false, writing nothing, unless PointRecordsFit.
inline bool ReadPointRecords(std::string_view blob, uint32_t count, uint16_t stride, PointRecord* out) {
  if (!PointRecordsFit(blob, count, stride)) return false;
  if (stride == point_record::kStride && std::endian::native == std::endian::little) {
    if (count) std::memcpy(out, blob.data(), static_cast<size_t>(count) * stride);
    return true;
  }
  for (uint32_t i = 0; i < count; ++i) out[i] = ReadPointRecord(blob.data() + static_cast<size_t>(i) * stride);
  return true;
}

/// Reads `count` records of `stride` bytes each from `blob` (see ReadPointRecords); empty unless
/// PointRecordsFit.
inline std::vector<PointRecord> UnpackPointRecords(std::string_view blob, uint32_t count, uint16_t stride) {
  std::vector<PointRecord> out;
  if (!PointRecordsFit(blob, count, stride)) return out;
  out.resize(count);
  ReadPointRecords(blob, count, stride, out.data());
  return out;
}

}  // namespace platoon
