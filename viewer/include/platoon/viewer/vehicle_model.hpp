#pragma once
/// How an entity's box is drawn: the low-poly model of its class (car, van, truck, bus, motorcycle,
/// bicycle, pedestrian; ShapeOf) as convex parts, wheels and lamps in the vehicle frame, scaled to the
/// box, and which colour an entity gets. Pure functions, no OSG (scene.cpp turns models into geometry).
///
/// Vehicle frame (geometry.hpp): origin at the rear-axle centre at ground level, x forward, y left,
/// z up. EntityState::box_size_m = (length L, width W, height H) is the entity's whole extent: the box
/// x in [-r, L - r], y in [-W/2, W/2], z in [0, H], with the rear overhang r = rear_overhang_fraction L.
/// Everything drawn for a vehicle stays inside that box, so the camera sensor's ROI of the box
/// (sensors::GroundTruth) encloses its pixels.

#include "platoon/geometry.hpp"
#include "platoon/protocol/messages.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace platoon::viewer {

/// Proportions of a drawn vehicle, as fractions of its box so that any size looks right.
struct VehicleLayout {
  double rear_overhang_fraction = 0.2;  ///< Rear face to rear axle, as a fraction of L: 0.2, as BoxCentreInBody (geometry.hpp) and the sensors assume.
  double wheelbase_fraction = 0.61;      ///< Rear to front axle, as a fraction of L. 0.61: 2.75 m of a 4.5 m car.
  double wheel_radius_fraction = 0.21;   ///< Wheel radius, as a fraction of H (capped at half the clearance rule). 0.21: 0.32 m.
  double max_wheel_radius_m = 0.55;      ///< Largest wheel radius, in m (a truck's 22.5 in wheel: 0.53).
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
/// Wheel radius for a box, in m: wheel_radius_fraction H, at most max_wheel_radius_m, H / 3, L / 4 and either overhang
/// (so two-wheelers' wheels stay inside the box).
double WheelRadius(const Vec3& box_size_m, const VehicleLayout& layout);
/// Whether an entity kind is drawn with wheels and lamps (cars, trucks, motorcycles, bicycles).
bool HasWheels(protocol::EntityKind kind);

/// The shape an entity is drawn as. protocol::EntityKind has no van or bus, so the box decides
/// (ShapeOf): a car (or unknown) box longer than bus_min_length_m is a bus, one higher than
/// van_min_height_m a van; a truck box longer than bus_min_length_m is a truck (cab and cargo box),
/// a shorter one a van.
enum class VehicleShape : uint8_t { kCar, kVan, kTruck, kBus, kMotorcycle, kBicycle, kPedestrian, kBlock };
/// Lower-case name of a shape ("car", "van", ...).
const char* ShapeName(VehicleShape shape);
/// Length above which a car box is drawn as a bus and a truck box as a truck, in m. 6.5.
inline constexpr double kBusMinLengthM = 6.5;
/// Height above which a car box (not longer than kBusMinLengthM) is drawn as a van, in m. 2.2.
inline constexpr double kVanMinHeightM = 2.2;
/// The shape entity `kind` with box `box_size_m` (L, W, H) is drawn as (the rule above).
VehicleShape ShapeOf(protocol::EntityKind kind, const Vec3& box_size_m);

/// What a part of a model is, which decides its colour: the body takes the entity's colour, lamps
/// take their light's state.
enum class PartRole : uint8_t {
  kBody,            ///< Paint: the entity's colour.
  kCargo,           ///< A truck's cargo box: the entity's colour lightened towards white.
  kGlass,           ///< Windows: dark blue-grey.
  kTrim,            ///< Bumpers, chassis, saddles, handlebars: dark grey.
  kTyre,            ///< Tyres: near black.
  kSkin,            ///< A person's face and hands.
  kClothes,         ///< A person's trousers and sleeves: dark blue.
  kHair,            ///< A person's hair or a rider's helmet: dark brown.
  kHeadlamp,        ///< Front lamps: white, bright with headlights on.
  kTailLamp,        ///< Rear lamps: red, dim with headlights on, bright when braking.
  kReverseLamp,     ///< Rear white lamps, lit when reversing.
  kIndicatorRight,  ///< Amber turn lamps on the right (y < 0).
  kIndicatorLeft,   ///< Amber turn lamps on the left (y > 0).
};
/// Whether a role is a lamp (drawn unlit in its light's colour).
bool IsLamp(PartRole role);

/// A convex hexahedron in the vehicle frame: corner k has the x, y, z side of bits 0, 1, 2 of k (as the
/// corners of a box, min for a clear bit), so a box is the special case; faces may slant.
struct Solid {
  std::array<Vec3, 8> corner_m{};  ///< Corners, in m.
  PartRole role = PartRole::kBody;  ///< What it is.
};
/// A box as a solid.
Solid BoxSolid(const LocalBox& box, PartRole role);

/// One wheel: centre in the vehicle frame, radius and tyre width, in m. It turns about the y axis.
struct WheelSpec {
  Vec3 centre_m = Vec3::Zero();  ///< Centre, in m (z = radius: touching the ground).
  double radius_m = 0.0;         ///< Radius, in m.
  double width_m = 0.0;          ///< Tyre width, in m.
};

/// A drawn model: parts (body, windows, lamps, rider) and wheels, all inside the entity box.
struct VehicleModel {
  VehicleShape shape = VehicleShape::kCar;  ///< Which shape.
  std::vector<Solid> parts;                 ///< Every part but the wheels.
  std::vector<WheelSpec> wheels;            ///< 4 (cars, vans, buses, trucks), 2 (two-wheelers) or none.
  size_t hull_parts = 0;                    ///< The first hull_parts parts are the body's silhouette (0: no far model).
};
/// The low-poly model of an entity of `kind` with box `box_size_m`, scaled to the box.
VehicleModel BuildVehicleModel(protocol::EntityKind kind, const Vec3& box_size_m, const VehicleLayout& layout);
/// The far model of `full` (drawn when it covers few pixels): its hull parts (1-3 solids) in its parts'
/// colours, one dark box per axle where the wheels are (z from 0 to the wheel radius) and all its lamps
/// flattened onto their outer end faces, no wheels; everything inside the entity box. Empty parts when full.hull_parts is 0 (two-wheelers,
/// pedestrians and blocks have no far model).
VehicleModel BuildFarVehicleModel(const VehicleModel& full);
/// Bounding box of the model's parts of `role`; an empty box at the origin if there are none.
LocalBox PartsBounds(const VehicleModel& model, PartRole role);

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
