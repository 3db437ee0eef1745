#include "platoon/log/foxglove.hpp"

#include "platoon/log/session_log.hpp"
#include "platoon/point_record.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>

namespace platoon::foxglove {
namespace {

// JSON numbers: mm for positions and sizes, 1e-6 for unit quaternions and colours. JSON has no NaN.
double Finite(double v) { return std::isfinite(v) ? v : 0.0; }

void AppendTime(std::string& out, int64_t ns) {
  const int64_t t = std::max<int64_t>(ns, 0);  // Foxglove times are unsigned; the countdown is logged at 0
  fmt::format_to(std::back_inserter(out), "{{\"sec\":{},\"nsec\":{}}}", t / 1'000'000'000, t % 1'000'000'000);
}

void AppendVec(std::string& out, const Vec3& v) {
  fmt::format_to(std::back_inserter(out), "{{\"x\":{:.3f},\"y\":{:.3f},\"z\":{:.3f}}}", Finite(v.x()), Finite(v.y()),
                 Finite(v.z()));
}

void AppendQuat(std::string& out, const Quat& q) {
  fmt::format_to(std::back_inserter(out), "{{\"x\":{:.6f},\"y\":{:.6f},\"z\":{:.6f},\"w\":{:.6f}}}", Finite(q.x()),
                 Finite(q.y()), Finite(q.z()), Finite(q.w()));
}

void AppendPose(std::string& out, const Vec3& position, const Quat& orientation) {
  out += "{\"position\":";
  AppendVec(out, position);
  out += ",\"orientation\":";
  AppendQuat(out, orientation);
  out += "}";
}

std::string_view KindName(protocol::EntityKind k) {
  constexpr std::array<std::string_view, 7> kNames = {"unknown", "car", "truck", "motorcycle", "bicycle", "pedestrian", "static"};
  const auto i = static_cast<size_t>(k);
  return i < kNames.size() ? kNames[i] : "unknown";
}

// HSV (h in degrees) to RGB.
Rgba Hsv(double h, double s, double v, double a) {
  h = std::fmod(std::fmod(h, 360.0) + 360.0, 360.0) / 60.0;
  const double c = v * s, x = c * (1 - std::abs(std::fmod(h, 2.0) - 1)), m = v - c;
  double r = 0, g = 0, b = 0;
  switch (static_cast<int>(h)) {
    case 0: r = c, g = x; break;
    case 1: r = x, g = c; break;
    case 2: g = c, b = x; break;
    case 3: g = x, b = c; break;
    case 4: r = x, b = c; break;
    default: r = c, b = x; break;
  }
  return Rgba{r + m, g + m, b + m, a};
}

}  // namespace

std::string_view SceneUpdateSchema() {
  static constexpr std::string_view kSchema = R"json({
  "title": "foxglove.SceneUpdate",
  "description": "Entities of a 3D scene to delete and to add or replace (platoon writes one cube per entity)",
  "type": "object",
  "$defs": {
    "time": {"type": "object", "properties": {"sec": {"type": "integer", "minimum": 0}, "nsec": {"type": "integer", "minimum": 0, "maximum": 999999999}}},
    "vector3": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}, "z": {"type": "number"}}},
    "quaternion": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}, "z": {"type": "number"}, "w": {"type": "number"}}},
    "pose": {"type": "object", "properties": {"position": {"$ref": "#/$defs/vector3"}, "orientation": {"$ref": "#/$defs/quaternion"}}},
    "color": {"type": "object", "properties": {"r": {"type": "number"}, "g": {"type": "number"}, "b": {"type": "number"}, "a": {"type": "number"}}}
  },
  "properties": {
    "deletions": {"type": "array", "items": {"type": "object", "properties": {
      "timestamp": {"$ref": "#/$defs/time"},
      "type": {"type": "integer", "description": "0: the entity with this id, 1: every entity of the topic"},
      "id": {"type": "string"}}}},
    "entities": {"type": "array", "items": {"type": "object", "properties": {
      "timestamp": {"$ref": "#/$defs/time"},
      "frame_id": {"type": "string"},
      "id": {"type": "string"},
      "lifetime": {"$ref": "#/$defs/time"},
      "frame_locked": {"type": "boolean"},
      "metadata": {"type": "array", "items": {"type": "object", "properties": {"key": {"type": "string"}, "value": {"type": "string"}}}},
      "cubes": {"type": "array", "items": {"type": "object", "properties": {
        "pose": {"$ref": "#/$defs/pose"}, "size": {"$ref": "#/$defs/vector3"}, "color": {"$ref": "#/$defs/color"}}}},
      "arrows": {"type": "array"}, "spheres": {"type": "array"}, "cylinders": {"type": "array"}, "lines": {"type": "array"},
      "triangles": {"type": "array"}, "texts": {"type": "array"}, "models": {"type": "array"}}}}
  }
})json";
  return kSchema;
}

std::string_view FrameTransformsSchema() {
  static constexpr std::string_view kSchema = R"json({
  "title": "foxglove.FrameTransforms",
  "description": "Transforms between frames: where each child frame is in its parent",
  "type": "object",
  "properties": {
    "transforms": {"type": "array", "items": {"type": "object", "properties": {
      "timestamp": {"type": "object", "properties": {"sec": {"type": "integer", "minimum": 0}, "nsec": {"type": "integer", "minimum": 0, "maximum": 999999999}}},
      "parent_frame_id": {"type": "string"},
      "child_frame_id": {"type": "string"},
      "translation": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}, "z": {"type": "number"}}},
      "rotation": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}, "z": {"type": "number"}, "w": {"type": "number"}}}}}}
  }
})json";
  return kSchema;
}

std::string_view PointCloudSchema() {
  static constexpr std::string_view kSchema = R"json({
  "title": "foxglove.PointCloud",
  "description": "Packed points with named fields (platoon: x, y, z, time float32; ring uint16; intensity, source uint8)",
  "type": "object",
  "properties": {
    "timestamp": {"type": "object", "properties": {"sec": {"type": "integer", "minimum": 0}, "nsec": {"type": "integer", "minimum": 0, "maximum": 999999999}}},
    "frame_id": {"type": "string"},
    "pose": {"type": "object", "properties": {
      "position": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}, "z": {"type": "number"}}},
      "orientation": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}, "z": {"type": "number"}, "w": {"type": "number"}}}}},
    "point_stride": {"type": "integer", "minimum": 0},
    "fields": {"type": "array", "items": {"type": "object", "properties": {
      "name": {"type": "string"}, "offset": {"type": "integer", "minimum": 0},
      "type": {"type": "integer", "description": "numeric type; 1: uint8, 3: uint16, 7: float32"}}}},
    "data": {"type": "string", "contentEncoding": "base64"}
  }
})json";
  return kSchema;
}

std::string VehicleFrame(uint64_t entity_id) { return "vehicle_" + std::to_string(entity_id); }

std::string CloudTopic(std::string_view stream_id) { return std::string(kCloudTopicPrefix) + std::string(stream_id); }

Rgba EntityColour(protocol::EntityKind kind, protocol::Role owner_role, uint32_t owner_node, bool stale) {
  const double alpha = stale ? 0.35 : 0.9;
  if (kind == protocol::EntityKind::kStaticObject) return Rgba{0.6, 0.6, 0.6, alpha};
  if (kind == protocol::EntityKind::kPedestrian) return Hsv(55, 0.85, 0.95, alpha);
  // A hue family per owner role, a shade per owner node (golden-angle steps within +-20 degrees).
  double hue = 120;
  if (owner_role == protocol::Role::kDriver) hue = 25;
  if (owner_role == protocol::Role::kTraffic) hue = 215;
  hue += std::fmod(owner_node * 137.508, 40.0) - 20.0;
  return Hsv(hue, stale ? 0.2 : 0.75, 0.9, alpha);
}

std::string SceneUpdateJson(std::span<const SceneEntity> entities, int64_t sim_ns) {
  std::string out;
  out.reserve(128 + entities.size() * 520);
  out += "{\"deletions\":[{\"timestamp\":";
  AppendTime(out, sim_ns);
  out += ",\"type\":1,\"id\":\"\"}],\"entities\":[";
  bool first = true;
  for (const auto& e : entities) {
    if (!first) out += ",";
    first = false;
    out += "{\"timestamp\":";
    AppendTime(out, sim_ns);
    fmt::format_to(std::back_inserter(out),
                   ",\"frame_id\":\"{}\",\"id\":\"entity/{}\",\"lifetime\":{{\"sec\":0,\"nsec\":0}},\"frame_locked\":true,"
                   "\"metadata\":[{{\"key\":\"kind\",\"value\":\"{}\"}},{{\"key\":\"owner\",\"value\":{}}},"
                   "{{\"key\":\"owner_node\",\"value\":\"{}\"}},{{\"key\":\"stale\",\"value\":\"{}\"}}],"
                   "\"arrows\":[],\"cubes\":[{{\"pose\":",
                   VehicleFrame(e.id), e.id, KindName(e.kind), session_log::JsonQuote(e.owner_name), e.owner_node,
                   e.stale ? "true" : "false");
    // In the body frame, whose origin is the rear-axle centre.
    AppendPose(out, BoxCentreInBody(e.box_size_m), Quat::Identity());
    out += ",\"size\":";
    AppendVec(out, e.box_size_m);
    const Rgba c = EntityColour(e.kind, e.owner_role, e.owner_node, e.stale);
    fmt::format_to(std::back_inserter(out),
                   ",\"color\":{{\"r\":{:.3f},\"g\":{:.3f},\"b\":{:.3f},\"a\":{:.3f}}}}}],\"spheres\":[],\"cylinders\":[],"
                   "\"lines\":[],\"triangles\":[],\"texts\":[],\"models\":[]}}",
                   c.r, c.g, c.b, c.a);
  }
  out += "]}";
  return out;
}

std::string FrameTransformsJson(std::span<const SceneEntity> entities, int64_t sim_ns) {
  std::string out;
  out.reserve(32 + entities.size() * 230);
  out += "{\"transforms\":[";
  bool first = true;
  for (const auto& e : entities) {
    if (!first) out += ",";
    first = false;
    out += "{\"timestamp\":";
    AppendTime(out, sim_ns);
    fmt::format_to(std::back_inserter(out), ",\"parent_frame_id\":\"{}\",\"child_frame_id\":\"{}\",\"translation\":",
                   kWorldFrame, VehicleFrame(e.id));
    AppendVec(out, e.pose.position_m);
    out += ",\"rotation\":";
    AppendQuat(out, e.pose.orientation.normalized());
    out += "}";
  }
  out += "]}";
  return out;
}

std::string PointCloudJson(const CloudView& cloud) {
  // Each record's x, y, z, time offset, ring, reflectivity and source, packed into kCloudStride bytes
  // (little-endian, as the records are).
  using namespace point_record;
  size_t count = cloud.point_count;
  if (!PointRecordsFit(cloud.points, cloud.point_count, cloud.point_stride)) count = 0;
  std::string packed(count * kCloudStride, '\0');
  for (size_t i = 0; i < count; ++i) {
    const char* in = cloud.points.data() + i * cloud.point_stride;
    char* out = packed.data() + i * kCloudStride;
    std::copy_n(in + kOffsetX, 12, out);                  // x, y, z
    std::copy_n(in + kOffsetTime, 4, out + 12);           // time (float32 s after the scan start)
    std::copy_n(in + kOffsetRing, 2, out + 16);           // ring (uint16)
    out[18] = in[kOffsetReflectivity];                    // intensity (uint8, 0..255)
    out[19] = in[kOffsetSource];                          // source (uint8)
  }
  std::string out;
  out.reserve(500 + packed.size() * 4 / 3);
  out += "{\"timestamp\":";
  AppendTime(out, cloud.stamp_ns);
  out += ",\"frame_id\":" + session_log::JsonQuote(cloud.frame_id) + ",\"pose\":";
  AppendPose(out, cloud.pose.position_m, cloud.pose.orientation.normalized());
  out += ",\"point_stride\":20,\"fields\":[{\"name\":\"x\",\"offset\":0,\"type\":7},{\"name\":\"y\",\"offset\":4,\"type\":7},"
         "{\"name\":\"z\",\"offset\":8,\"type\":7},{\"name\":\"time\",\"offset\":12,\"type\":7},"
         "{\"name\":\"ring\",\"offset\":16,\"type\":3},{\"name\":\"intensity\",\"offset\":18,\"type\":1},"
         "{\"name\":\"source\",\"offset\":19,\"type\":1}],\"data\":\"";
  out += Base64(packed);
  out += "\"}";
  return out;
}

std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  const auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(bytes[k])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += kAlphabet[v >> 6 & 63];
    out += kAlphabet[v & 63];
  }
  // The last one or two bytes, padded with '='.
  if (const size_t left = bytes.size() - i; left > 0) {
    const uint32_t v = byte(i) << 16 | (left == 2 ? byte(i + 1) << 8 : 0);
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += left == 2 ? kAlphabet[v >> 6 & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace platoon::foxglove
