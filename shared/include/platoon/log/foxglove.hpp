#pragma once
/// Foxglove channels of a session log: platoon's entities and clouds as JSON messages in Foxglove's
/// well-known schemas (foxglove.SceneUpdate, foxglove.FrameTransforms, foxglove.PointCloud), so that a
/// recording opens in Foxglove and shows the session. JSON encoding as Foxglove reads it: times as
/// {"sec","nsec"}, enums as numbers, byte arrays as base64 strings. Foxglove recognises a schema by its
/// name; the JSON schema texts here are platoon's own description of the fields written.
/// Frames: "world" (the session's world frame, z up) and "vehicle_<entity id>" (an entity's body frame,
/// origin at the rear-axle centre, x forward, y left). See docs/RECORDING.md, "Opening a log in Foxglove".

#include "platoon/geometry.hpp"
#include "platoon/protocol/messages.hpp"

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace platoon::foxglove {

inline constexpr std::string_view kSceneUpdate = "foxglove.SceneUpdate";
inline constexpr std::string_view kFrameTransforms = "foxglove.FrameTransforms";
inline constexpr std::string_view kPointCloud = "foxglove.PointCloud";
inline constexpr std::string_view kSceneTopic = "/foxglove/scene";
inline constexpr std::string_view kTfTopic = "/foxglove/tf";
inline constexpr std::string_view kCloudTopicPrefix = "/foxglove/cloud/";
/// The fixed frame every vehicle frame hangs from.
inline constexpr std::string_view kWorldFrame = "world";

/// JSON schemas of the three message types (the fields platoon writes).
std::string_view SceneUpdateSchema();
std::string_view FrameTransformsSchema();
std::string_view PointCloudSchema();

/// "vehicle_<id>": the body frame of entity `entity_id`.
std::string VehicleFrame(uint64_t entity_id);
/// "/foxglove/cloud/<stream id>".
std::string CloudTopic(std::string_view stream_id);

/// An RGBA colour, each channel in [0, 1].
struct Rgba {
  double r = 1, g = 1, b = 1, a = 1;
  bool operator==(const Rgba&) const = default;
};

/// The colour of an entity: vehicles by their owner's role (drivers orange, traffic blue, others green),
/// a shade per owner node; pedestrians yellow, static objects grey; stale entities (owner lost) pale.
Rgba EntityColour(protocol::EntityKind kind, protocol::Role owner_role, uint32_t owner_node, bool stale);

/// An entity as the scene shows it: what it looks like, who owns it, and where it is.
struct SceneEntity {
  uint64_t id = 0;
  protocol::EntityKind kind = protocol::EntityKind::kCar;
  Vec3 box_size_m = Vec3(4.5, 1.8, 1.5);          ///< Length, width, height, in m.
  uint32_t owner_node = 0;
  std::string owner_name;                         ///< From the node table; "" when unknown.
  protocol::Role owner_role = protocol::Role::kUnknown;
  bool stale = false;
  Pose pose;                                      ///< Body frame in the world at the transforms' time.
  /// Same look and owner (what a scene update shows; the pose is the transforms' business).
  bool SameLook(const SceneEntity& o) const {
    return id == o.id && kind == o.kind && box_size_m == o.box_size_m && owner_node == o.owner_node &&
           owner_name == o.owner_name && owner_role == o.owner_role && stale == o.stale;
  }
};

/// A foxglove.SceneUpdate that replaces the whole scene at `sim_ns`: one deletion of every earlier
/// entity (type ALL), then one entity per element, id "entity/<id>", in frame "vehicle_<id>" and
/// frame-locked, so it moves with the transforms, with one cube (the entity's box, its centre at
/// BoxCentreInBody) coloured by EntityColour and metadata (kind, owner, owner node, stale). Each
/// message is complete, so a player that seeks shows the right scene. Positions come from FrameTransformsJson.
std::string SceneUpdateJson(std::span<const SceneEntity> entities, int64_t sim_ns);

/// A foxglove.FrameTransforms at `sim_ns`: world -> vehicle_<id> at each element's pose.
std::string FrameTransformsJson(std::span<const SceneEntity> entities, int64_t sim_ns);

/// A cloud as Foxglove shows it.
struct CloudView {
  std::string frame_id;          ///< e.g. VehicleFrame(ego).
  Pose pose;                     ///< Origin of the points in that frame (a raw scan: the sensor mount).
  int64_t stamp_ns = 0;          ///< Sim time of the cloud.
  std::string_view points;       ///< Packed platoon point records (point_record.hpp).
  uint32_t point_count = 0;
  uint16_t point_stride = 0;     ///< Bytes per record (>= point_record::kStride).
};

/// Bytes per point of the clouds PointCloudJson writes.
inline constexpr size_t kCloudStride = 20;

/// A foxglove.PointCloud with kCloudStride-byte points (base64), little-endian like the records:
/// x, y, z (float32, m) at 0, 4, 8; time (float32, s after the scan start) at 12; ring (uint16) at 16;
/// intensity (uint8, the calibrated 0..255 reflectivity) at 18; source (uint8, lidar index in a fused
/// cloud) at 19. An empty or inconsistent cloud (blob shorter than count x stride, stride below
/// point_record::kStride) gives zero points.
std::string PointCloudJson(const CloudView& cloud);

/// Base64 (RFC 4648, with padding) of `bytes`.
std::string Base64(std::string_view bytes);

}  // namespace platoon::foxglove
