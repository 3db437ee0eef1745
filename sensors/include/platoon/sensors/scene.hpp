#pragma once
/// Ray-casting scene for the sensor models (lidar, later radar): static triangle meshes and oriented
/// boxes, plus dynamic boxes (vehicles) that are re-posed between queries. Backed by Embree 3; no Embree
/// type appears here (pimpl).
///
/// Thread safety: after Commit(), Intersect() and IntersectBatch() may be called concurrently from any
/// number of threads (Embree scenes are read-only during traversal). Add*(), SetDynamicPose() and
/// Commit() mutate the scene and must not run concurrently with each other or with any query.
///
/// Precision: Embree traverses in single precision; hit distances are exact to about 1e-7 relative
/// (10 um at 100 m), far below any lidar range resolution.

#include "platoon/geometry.hpp"

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <vector>

namespace platoon::sensors {

/// What a surface is: material for the sensor physics, entity and class for ground-truth labels.
struct SurfaceTag {
  uint32_t material_id = 0;  ///< Index into a sensor's material table (e.g. LidarDef::materials).
  uint32_t entity_id = 0;    ///< Id of the world entity (vehicle id, building id); 0 = none.
  uint32_t class_id = 0;     ///< Semantic class (ground, vehicle, building, ...), caller-defined.
  uint32_t detail = 0;       ///< Class detail, caller-defined: for signs road::SignDetail (type * 65536 + value); 0 none.
};

/// One ray to cast, in the world frame.
struct Ray {
  Vec3 origin_m = Vec3::Zero();  ///< Ray origin, in m.
  Vec3 direction = Vec3::UnitX();  ///< Direction; need not be unit length (distances are along the unit ray).
  double tmax_m = std::numeric_limits<double>::infinity();  ///< Longest distance searched, in m.
};

/// Result of casting one ray: the first surface along it.
struct Hit {
  bool valid = false;         ///< False if nothing was hit within tmax.
  double distance_m = 0.0;    ///< Distance from the origin to the hit along the unit direction, in m.
  Vec3 normal = Vec3::Zero(); ///< Unit geometric normal in the world frame, facing back towards the ray.
  SurfaceTag tag;             ///< Material, entity and class of the hit surface.
};

/// Up to 16 rays in single precision as a structure of arrays, the layout of one Embree packet (for
/// bulk casting: lidar frames). Directions must be unit length; lanes at and beyond `count` are ignored.
struct RayPacket16 {
  alignas(64) float org_x[16] = {};  ///< Origins, world frame, in m.
  alignas(64) float org_y[16] = {};
  alignas(64) float org_z[16] = {};
  alignas(64) float dir_x[16] = {};  ///< Unit directions, world frame.
  alignas(64) float dir_y[16] = {};
  alignas(64) float dir_z[16] = {};
  alignas(64) float tmax_m[16] = {};  ///< Longest distance searched, in m.
  int count = 0;                 ///< Rays in use, 0..16 (lanes 0..count-1).
};

/// Results of one RayPacket16, structure of arrays.
struct HitPacket16 {
  alignas(64) float distance_m[16];     ///< Distance to the first hit, in m; +inf where nothing was hit.
  alignas(64) float cos_incidence[16];  ///< |cos| of the angle between the ray and the surface normal, 0..1.
  SurfaceTag tag[16];                   ///< Material, entity and class of the hit surface (undefined on a miss).
};

/// Handle of a dynamic box, returned by Scene::AddDynamicBox().
using DynamicId = uint32_t;

/// A static oriented box as added by Scene::AddBox (kept for ground truth: camera ROIs of static objects).
struct StaticBox {
  Pose pose;                      ///< Box centre and orientation in the world.
  Vec3 half_extents_m = Vec3::Zero();  ///< Half extents, in m.
  SurfaceTag tag;                 ///< Its material, entity and class.
};

/// Embree-backed ray-casting scene. One RTCDevice per scene. Move-only.
class Scene {
 public:
  /// Creates an empty scene with its own Embree device.
  Scene();
  ~Scene();
  Scene(Scene&&) noexcept;
  Scene& operator=(Scene&&) noexcept;
  Scene(const Scene&) = delete;
  Scene& operator=(const Scene&) = delete;

  /// Adds a static triangle mesh, vertices in the world frame in m; triangles index `vertices_m`.
  void AddMesh(std::span<const Vec3> vertices_m, std::span<const std::array<uint32_t, 3>> triangles,
               const SurfaceTag& tag);
  /// Adds a static oriented box: centre and orientation in `pose`, half extents in m (e.g. a building).
  void AddBox(const Pose& pose, const Vec3& half_extents_m, const SurfaceTag& tag);
  /// Every box added by AddBox, in order.
  const std::vector<StaticBox>& StaticBoxes() const;
  /// Sets the detail of every static surface of entity `entity_id` and class `class_id` (a variable message
  /// sign's plate showing something else); the geometry is unchanged, so no Commit() is needed. Not while
  /// rays are cast. Returns how many surfaces changed.
  size_t SetStaticDetail(uint32_t entity_id, uint32_t class_id, uint32_t detail);
  /// Adds a dynamic box (e.g. a vehicle, half extents 2.3 x 0.9 x 0.75 m) at `pose` (box centre).
  DynamicId AddDynamicBox(const Vec3& half_extents_m, const SurfaceTag& tag, const Pose& pose);
  /// Moves a dynamic box to `pose` (box centre). Takes effect at the next Commit().
  void SetDynamicPose(DynamicId id, const Pose& pose);
  /// Current pose of a dynamic box (as last set).
  const Pose& DynamicPose(DynamicId id) const;
  /// Number of dynamic boxes.
  size_t DynamicCount() const;
  /// Builds or refits the acceleration structure; required after any Add*() or SetDynamicPose().
  void Commit();

  /// First hit along the ray from `origin_m` in direction `direction` within `tmax_m` metres.
  /// Precondition: Commit() was called after the last change.
  Hit Intersect(const Vec3& origin_m, const Vec3& direction, double tmax_m) const;
  /// Casts `rays` and writes one Hit per ray into `hits` (same size), as 16-ray Embree packets: about
  /// 2.5x the single-ray rate for lidar columns, with results identical to Intersect(). Same preconditions.
  void IntersectBatch(std::span<const Ray> rays, std::span<Hit> hits) const;
  /// Casts ray packets (one rtcIntersect16 each) and writes one HitPacket16 per packet; no per-ray
  /// normalisation or Hit assembly, for callers that need distance, incidence and tag only. Distances
  /// equal Intersect()'s. Same preconditions; may run concurrently like Intersect().
  void IntersectPackets(std::span<const RayPacket16> rays, std::span<HitPacket16> hits) const;
  /// The Embree scene (an RTCScene) as an opaque pointer, for benchmarks that cast bare Embree packets
  /// against the very same BVH. Not for sensor code.
  void* EmbreeSceneHandle() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace platoon::sensors
