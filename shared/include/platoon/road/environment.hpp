#pragma once
/// Objects beside the road after seed 004 §5.2 (Environment Plug-In): buildings, trees, guard rails,
/// street lights and signs placed along a road from densities per 100 m (each side on its own) and
/// ranges of lateral distance to the road edge. Every object is an oriented box; no two overlap and
/// none touches the carriageway. Seeded and deterministic. Pure core: no rendering.

#include "platoon/geometry.hpp"
#include "platoon/road/road_network.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace platoon::road {

/// What an environment object is.
enum class ObjectKind { kBuilding, kTree, kGuardRail, kStreetLight, kSign };

/// Name of a kind: "building", "tree", "guard_rail", "street_light", "sign".
const char* ObjectKindName(ObjectKind k);

/// How one kind of object is placed.
struct ObjectKindDef {
  bool enabled = true;                  ///< Whether this kind is placed at all.
  double density_left_per_100m = 1.0;   ///< Mean count per 100 m of road on the left side (guard rails: segments per 100 m, evenly spaced).
  double density_right_per_100m = 1.0;  ///< Same on the right side.
  double lateral_min_m = 2.0;           ///< Least distance from the road edge to the object's near face, in m.
  double lateral_max_m = 10.0;          ///< Greatest distance from the road edge to the object's near face, in m.
  Vec3 size_min_m = Vec3(1, 1, 1);      ///< Smallest box: length along the road, width across, height, in m.
  Vec3 size_max_m = Vec3(1, 1, 1);      ///< Largest box, in m (trees: width = length).
};

/// All environment settings; kinds are placed in priority order guard rails, signs, street lights,
/// buildings, trees, so trees fill around buildings ("buildings embedded into trees").
struct EnvironmentDef {
  uint64_t seed = 1;                    ///< Random seed; same seed, road and settings: same objects.
  double clearance_m = 0.25;            ///< Least gap between two objects and between an object and the carriageway, in m.
  int attempts = 4;                     ///< Draws of lateral distance and size tried at one position before giving it up.
  ObjectKindDef buildings;              ///< Houses, halls.
  ObjectKindDef trees;                  ///< Trees (box = canopy footprint and height).
  ObjectKindDef guard_rails;            ///< Guard-rail segments along the edge.
  ObjectKindDef street_lights;          ///< Lamp posts.
  ObjectKindDef signs;                  ///< Traffic signs (plate across the road).
};

/// A rural scene (seed 004 §5.2): many trees, few buildings far from the road, guard rails on, no street lights.
EnvironmentDef DefaultEnvironmentDef();
/// An urban scene: buildings close and dense, street lights on, guard rails off, few trees.
EnvironmentDef UrbanEnvironmentDef();

/// Checks an EnvironmentDef; returns an empty string when valid, else a message naming the bad field.
std::string ValidateEnvironmentDef(const EnvironmentDef& def);

/// One placed object: an oriented box standing on the ground.
struct EnvObject {
  ObjectKind kind = ObjectKind::kTree;  ///< What it is.
  Vec3 position_m = Vec3::Zero();       ///< Centre of the box's footprint, at the road's height there, in m.
  double yaw_rad = 0.0;                 ///< Rotation about z of the box's length axis from +x, in rad.
  Vec3 size_m = Vec3(1, 1, 1);          ///< Length (along yaw), width, height, in m.
  double s_m = 0.0;                     ///< Road arc length it was placed at, in m.
  int side = 1;                         ///< +1 left of the road, -1 right.
};

/// Whether the footprints of two objects come closer than `clearance_m` (separating-axis test, 2D).
bool Overlap(const EnvObject& a, const EnvObject& b, double clearance_m = 0.0);

/// Places objects along `road`; asserts ValidateEnvironmentDef(def) is empty.
std::vector<EnvObject> GenerateEnvironment(const Road& road, const EnvironmentDef& def);

}  // namespace platoon::road
