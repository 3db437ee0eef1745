#pragma once
/// How an entity's box is drawn: where body, wheels and lights sit in the vehicle frame, and which
/// colour an entity gets. Pure functions, no OSG.
///
/// Vehicle frame (geometry.hpp): origin at the rear-axle centre at ground level, x forward, y left,
/// z up. EntityState::box_size_m = (length L, width W, height H) is the entity's whole extent: the box
/// x in [-r, L - r], y in [-W/2, W/2], z in [0, H], with the rear overhang r = rear_overhang_fraction L.
/// Everything drawn for a vehicle stays inside that box, so the camera sensor's ROI of the box
/// (sensors::GroundTruth) encloses its pixels.

#include "platoon/geometry.hpp"
#include "platoon/protocol/messages.hpp"

#include <cstdint>

namespace platoon::viewer {

/// Proportions of a drawn vehicle, as fractions of its box so that any size looks right.
struct VehicleLayout {
  double rear_overhang_fraction = 0.2;  ///< Rear face to rear axle, as a fraction of L: 0.2, as BoxCentreInBody (geometry.hpp) and the sensors assume.
  double wheelbase_fraction = 0.61;      ///< Rear to front axle, as a fraction of L. 0.61: 2.75 m of a 4.5 m car.
  double wheel_radius_fraction = 0.21;   ///< Wheel radius, as a fraction of H (capped at half the clearance rule). 0.21: 0.32 m.
  double wheel_width_m = 0.22;           ///< Tyre width, in m (capped at W / 4).
  double wheel_inset_m = 0.05;           ///< The body's sides sit this far inside the box's sides, so wheels show, in m.
  double light_depth_m = 0.03;           ///< Lamps occupy this much of the box's length at each end, in m.
};

/// The default layout (a 4.5 m saloon: 0.85 m rear overhang, 2.75 m wheelbase, 0.32 m wheels).
VehicleLayout DefaultVehicleLayout();

/// An axis-aligned box in the vehicle frame: min and max corners, in m.
struct LocalBox {
  Vec3 min_m = Vec3::Zero();  ///< Smallest x, y, z, in m.
  Vec3 max_m = Vec3::Zero();  ///< Largest x, y, z, in m.
  /// Centre, in m.
  Vec3 Centre() const { return 0.5 * (min_m + max_m); }
  /// Edge lengths, in m.
  Vec3 Size() const { return max_m - min_m; }
};

/// The entity's whole box in its vehicle frame (see the file comment).
LocalBox EntityBox(const Vec3& box_size_m, const VehicleLayout& layout);
/// The painted body: the entity box less the lamps at both ends, the wheel inset at the sides, and the
/// clearance under it (half a wheel radius). Pedestrians and static objects: the whole entity box.
LocalBox BodyBox(const Vec3& box_size_m, protocol::EntityKind kind, const VehicleLayout& layout);
/// Wheel radius for a box, in m.
double WheelRadius(const Vec3& box_size_m, const VehicleLayout& layout);
/// Centre of wheel `i` (0 rear left, 1 rear right, 2 front left, 3 front right) in the vehicle frame, in m.
Vec3 WheelCentre(const Vec3& box_size_m, const VehicleLayout& layout, int i);
/// Whether an entity kind is drawn with wheels and lamps (cars, trucks, motorcycles, bicycles).
bool HasWheels(protocol::EntityKind kind);

/// World pose of the centre of a vehicle-frame box, for an entity at `entity_world` (rear-axle origin).
Pose BoxCentreInWorld(const Pose& entity_world, const LocalBox& box);

/// A colour, components in [0, 1].
struct Rgb {
  float r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

/// Deterministic body colour of an entity: a hue from a hash of its id, never close to the sky's blue,
/// the grass green or pure magenta (reserved for tests and highlights).
Rgb EntityColour(uint64_t entity_id);

}  // namespace platoon::viewer
